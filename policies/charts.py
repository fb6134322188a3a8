"""GPU evidence in a local Helm chart: what a Helm Release or Chart renders from a chart directory or archive.

The offline preview cannot run Helm, so it reads what a chart would render
from: its default `values.yaml` (walked like any values), its templates
(Go templates: their `{{ ... }}` actions are removed and what remains is read
as YAML when it parses, else scanned as text for accelerator requests and
types), and its subcharts under `charts/`. A real `pulumi preview` also sends
the rendered children, which are judged like any other resource.
"""

from __future__ import annotations

import io
import pathlib
import re
import tarfile

import yaml

from gpusizer.policies import evidence, gotemplate

MAX_FILES = 400  # files read per chart, subcharts included
MAX_BYTES = 4_000_000  # bytes read per chart
# A mapping key that a template action builds (`{{ printf "%s/%s" .Values.v .Values.k }}: 8`,
# `{{ .Values.vendor }}.com/gpu: 1`), and the blocks where such a key asks for devices or nodes.
_BUILT_KEY = re.compile(r"^(?P<indent>\s*(?:-\s+)?)(?P<key>(?:[^\s:#{][^:]*?)?\{\{.*?\}\}[^:]*?)\s*:(?:\s|$)")
_KEY = re.compile(r"^(?P<indent>\s*(?:-\s+)?)(?P<key>[\w.-]+)\s*:(?:\s|$)")
_ASKING_BLOCKS = frozenset({"limits", "requests", "resources", "nodeselector", "claims", "devices", "overhead"})


def built_keys(text: str) -> list[str]:
    """Keys a template action builds inside a block that asks for devices or nodes (resources, limits,
    requests, nodeSelector, DRA claims): what Helm renders there cannot be read without Helm, so each is
    evidence to judge (or allow)."""
    out = []
    parents: list[tuple[int, str]] = []  # (indent, key) of the enclosing blocks
    for line in text.splitlines():
        m = _BUILT_KEY.match(line) or _KEY.match(line)
        if not m:
            continue
        indent = len(m.group("indent"))  # a list item's keys sit after its dash
        while parents and parents[-1][0] >= indent:
            parents.pop()
        key = m.group("key")
        if "{{" in key and any(k.lower() in _ASKING_BLOCKS for _, k in parents):
            out.append(f"{'.'.join(k for _, k in parents)}.{key.strip()} (a key a template action builds)")
        parents.append((indent, key))
    return out


def _files(root: pathlib.Path) -> list[tuple[str, str]]:
    """(path inside the chart, text) of its values and templates, subcharts included, within the limits."""
    out: list[tuple[str, str]] = []
    size = 0
    if root.is_file() and root.name.endswith((".tgz", ".tar.gz")):
        with tarfile.open(root, "r:gz") as tar:
            for member in tar:
                if not member.isfile() or len(out) >= MAX_FILES or size + member.size > MAX_BYTES:
                    continue
                data = tar.extractfile(member)
                if data is not None:
                    size += member.size
                    out.append((member.name, io.TextIOWrapper(data, errors="replace").read()))
        return out
    for path in sorted(root.rglob("*"))[: MAX_FILES * 4]:
        if path.is_file() and len(out) < MAX_FILES:
            size += path.stat().st_size
            if size > MAX_BYTES:
                break
            name = str(path.relative_to(root))
            if name.startswith("charts/") and name.endswith((".tgz", ".tar.gz")) and name.count("/") == 1:
                # a dependency packaged by `helm dependency build`: its chart folder, as Helm unpacks it
                out += [(f"charts/{n}", t) for n, t in _files(path) if "/" in n]
                continue
            out.append((name, path.read_text(errors="replace")))
    return out


def _wanted(name: str) -> bool:
    """What the fallback reads for evidence: values, every file under templates/ (Helm renders each one not
    named `_*` or NOTES.txt as manifests, whatever its extension) and crds/ (installed as they are). Rendering
    reads every file of the chart (`.Files.Get`)."""
    parts = pathlib.PurePosixPath(name).parts
    return parts[-1] in ("values.yaml", "values.yml") or "templates" in parts or "crds" in parts


def is_local(chart: str, base: pathlib.Path | None) -> pathlib.Path | None:
    """The chart's local directory (holding Chart.yaml) or archive, or None (a repository chart name)."""
    try:
        p = evidence.located(chart, base)
        if (p.is_dir() and (p / "Chart.yaml").is_file()) or (p.is_file() and p.name.endswith((".tgz", ".tar.gz"))):
            return p
    except (OSError, ValueError):
        return None
    return None


def missing(chart: str, base: pathlib.Path | None) -> bool:
    """Whether `chart` is written as a local path (`./charts/llm`, `../llm`, `/srv/llm`, an archive) that the
    pack cannot find: a path relative to the program, read by a pack that runs elsewhere."""
    local = chart.startswith(("./", "../", "/")) or chart.endswith((".tgz", ".tar.gz"))
    return local and "://" not in chart and is_local(chart, base) is None


def evidence_of(chart: str, base: pathlib.Path | None) -> list[evidence.Evidence]:
    """GPU evidence in a local chart's values and templates (none for a chart that is not local)."""
    root = is_local(chart, base)
    if root is None:
        return []
    try:
        files = _files(root)
    except (OSError, tarfile.TarError, ValueError) as exc:
        return [evidence.Evidence(chart, "accelerator", f"a local chart gpusizer cannot read ({type(exc).__name__})")]
    out: list[evidence.Evidence] = []
    for name, text in files:
        if not _wanted(name):
            continue  # the chart's metadata and other files (read for rendering only: .Files.Get)
        where = f"{chart}:{name}"
        docs = evidence.documents(gotemplate.ACTION.sub("", text))
        out += [e for d in docs for e in evidence.extract(d, where)]
        if pathlib.PurePosixPath(name).name not in ("values.yaml", "values.yml"):  # a template: its text too, for
            # requests whose count a template action fills (`nvidia.com/gpu: {{ .Values.gpus }}`)
            out += [evidence.Evidence(where, "mention", t) for t in evidence.in_text(text)]
            out += [evidence.Evidence(where, "resource", r) for r in evidence.requests_in_text(text)]
            out += [evidence.Evidence(where, "accelerator", k) for k in built_keys(text)]
    return list(dict.fromkeys(out))  # a request the parsed documents and the text both show, once


def _merged(base, over):
    """Helm's values coalescing: mappings merged key by key, anything else replaced, and a key set to null
    deleted (helm.sh, "Values Files": deleting a default key; read 2026-11-26)."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = {**base, **{k: _merged(base.get(k), x) for k, x in over.items() if x is not None}}
        return {k: x for k, x in out.items() if not (k in over and over[k] is None)}
    return over if over is not None else base


def rendered(chart: str, base: pathlib.Path | None, values: list, release: str, namespace: str) -> list[dict] | None:
    """The manifests a local chart renders with `values` (mappings in increasing precedence over the chart's
    values.yaml) for a release, subcharts under charts/ included, rendered by policies/gotemplate.py; None when
    the chart is not local or uses what that subset does not render (the caller then reads its text instead)."""
    root = is_local(chart, base)
    if root is None:
        return None
    try:
        files = _files(root)
    except (OSError, tarfile.TarError, ValueError):
        return None
    top = {pathlib.PurePosixPath(n).parts[0] for n, _ in files if root.is_file()}  # an archive's chart folder
    rel = {(n.split("/", 1)[1] if root.is_file() and "/" in n else n): t for n, t in files if not n.endswith("/")}
    if len(top) > 1:
        return None
    release_info = {"Name": release, "Namespace": namespace, "Service": "Helm", "IsInstall": True, "Revision": 1}
    try:
        charts = _charts(rel, values, 0)
        defines: dict[str, list] = {}  # one namespace of named templates across a chart and its subcharts
        parsed = []
        for meta, merged, own in charts:
            name = str(meta.get("name", "chart"))
            trees = {  # NOTES.txt is shown to the user, never applied: not parsed (it often uses variables)
                n: gotemplate.parse(t, defines)
                for n, t in sorted(own.items())
                if n.startswith("templates/") and pathlib.PurePosixPath(n).name != "NOTES.txt"
            }
            defines.update({f"{name}/{n}": tree for n, tree in trees.items()})  # a file is a template by name
            parsed.append((meta, merged, own, name, trees))
        out: list[dict] = []
        for meta, merged, own, name, trees in parsed:
            context = {
                "Values": merged,
                "Release": release_info,
                "Chart": {k[:1].upper() + k[1:]: x for k, x in meta.items()},
                "Capabilities": _CAPABILITIES,
            }
            renderer = gotemplate.Renderer(context, defines, files=own)
            out += [  # crds/ files are installed as they are, never templated
                d
                for n, t in sorted(own.items())
                if n.startswith("crds/")
                for d in yaml.safe_load_all(t)
                if isinstance(d, dict)
            ]
            for file, tree in trees.items():
                if pathlib.PurePosixPath(file).name.startswith("_"):
                    continue  # partials and helpers render nothing themselves
                context["Template"] = {"Name": f"{name}/{file}", "BasePath": f"{name}/templates"}
                docs = list(yaml.safe_load_all(renderer.render(tree, context)))
                if any(d is not None and not isinstance(d, dict) for d in docs):
                    return None  # a rendered file that is not manifests: read the chart's text instead
                out += [d for d in docs if isinstance(d, dict)]
        return out
    except (gotemplate.Unrenderable, yaml.YAMLError, RecursionError, TypeError, ValueError, AttributeError):
        return None


_CAPABILITIES = {
    "KubeVersion": {
        "Version": gotemplate.KUBE_VERSION,
        "GitVersion": gotemplate.KUBE_VERSION,
        "Major": gotemplate.KUBE_VERSION[1:].split(".")[0],
        "Minor": gotemplate.KUBE_VERSION.split(".")[1],
    },
    "APIVersions": {},
}


class _GoYAML(yaml.SafeLoader):
    """YAML as Helm reads a chart's values (go-yaml v2, YAML 1.1): `y`, `Y`, `n`, `N` are booleans too, besides
    yes/no/on/off (go-yaml resolve.go's table), so `single: n` is false to a template, not the string "n"."""

    def construct_yaml_bool(self, node):
        value = self.construct_scalar(node)
        return {"y": True, "n": False}.get(value.lower(), self.bool_values.get(value.lower()))


_GoYAML.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))
_GoYAML.add_constructor("tag:yaml.org,2002:bool", _GoYAML.construct_yaml_bool)


def _json_keys(value):
    """Keys as sigs.k8s.io/yaml leaves them on the way to JSON: a key go-yaml read as a boolean (`n:`, `on:`)
    is the string "false" or "true", so `.Values.n` finds nothing, as in Helm (helm/helm issues #11054,
    #13153 and #32504, read 2026-11-26: `size: {x: 1, y: 2}` renders as `map[true:2 x:1]`)."""
    if isinstance(value, dict):
        return {(str(k).lower() if isinstance(k, bool) else k): _json_keys(x) for k, x in value.items()}
    if isinstance(value, list):
        return [_json_keys(x) for x in value]
    return value


def _enabled(dep: dict, values: dict) -> bool:
    """Whether Helm renders a dependency (helm.sh, "Tags and Condition Resolution", read 2026-11-26): the first
    of its `condition` paths set in the values decides; else its `tags`, any true enables it, all of those set
    false disable it; else it is enabled."""
    condition = dep.get("condition")
    for path in condition.split(",") if isinstance(condition, str) else []:
        value = gotemplate.field(values, path.strip())
        if isinstance(value, bool):
            return value
    given = values.get("tags")
    tags: dict = given if isinstance(given, dict) else {}
    set_ = [tags[t] for t in dep.get("tags") or [] if isinstance(t, str) and isinstance(tags.get(t), bool)]
    return any(set_) or not set_


def _charts(rel: dict[str, str], values: list, depth: int) -> list[tuple[dict, dict, dict[str, str]]]:
    """(Chart.yaml, coalesced values, its own files) of a chart and each subchart it enables, as Helm scopes
    values: a subchart reads its own values.yaml under the parent's `<name>:` values and the parent's `global`
    (helm.sh, "Subcharts and Global Values"; a dependency's `condition` turns it off; read 2026-11-26).

    Raises:
        gotemplate.Unrenderable: a dependency not vendored as a folder under charts/ (an archive, or not
            fetched), or subcharts nested too deep.
    """
    if depth > 5:  # deeper than charts nest (a subchart's subchart's ...): not rendered
        raise gotemplate.Unrenderable("subcharts nested too deep")
    meta = yaml.safe_load(rel.get("Chart.yaml", "")) or {}
    if not isinstance(meta, dict):
        raise gotemplate.Unrenderable("Chart.yaml is not a mapping")
    merged = _json_keys(yaml.load(rel.get("values.yaml", rel.get("values.yml", "")), Loader=_GoYAML) or {})
    for v in values:
        merged = _merged(merged, v if isinstance(v, dict) else {})
    own = {n: t for n, t in rel.items() if not n.startswith("charts/")}
    out = [(meta, merged, own)]
    folders = sorted({n.split("/")[1] for n in rel if n.startswith("charts/") and n.count("/") >= 2})
    if any(n.startswith("charts/") and n.endswith((".tgz", ".tar.gz")) for n in rel):
        raise gotemplate.Unrenderable("a subchart archived under charts/")
    deps = {str(d.get("name")): d for d in meta.get("dependencies") or [] if isinstance(d, dict)}
    missing = [n for n in deps if n not in folders]
    if missing:
        raise gotemplate.Unrenderable(f"dependencies not vendored under charts/: {', '.join(missing)}")
    for folder in folders:
        dep = deps.get(folder, {})
        key = str(dep.get("alias") or folder)
        if not _enabled(dep, merged):
            continue
        sub = {n.split("/", 2)[2]: t for n, t in rel.items() if n.startswith(f"charts/{folder}/") and n.count("/") >= 2}
        scoped_values = merged.get(key)
        given: dict = scoped_values if isinstance(scoped_values, dict) else {}
        scoped = {**given, "global": merged.get("global") or {}}
        out += _charts(sub, [scoped], depth + 1)
    return out
