"""Provider-side components' manifests, read as the provider would render them offline.

Kubernetes `yaml` ConfigGroup / ConfigFile and Kustomize render their children
inside the provider, so an offline preview never sees them: their manifests
(inline `yaml` and `objs`, local files, directories built as kustomize builds
them: local resources and bases, `replicas`) are expanded into child resources
typed as the Kubernetes provider types them (`apps/v1` Deployment ->
`kubernetes:apps/v1:Deployment`). Helm values files given as paths or assets
are read here too, and a Helm component's local chart is rendered with its
values (policies/charts.rendered) into children the same way. Relative paths
are read from `base()`: the program's
directory in the offline preview (`based`), as the Pulumi CLI runs a program.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import json
import pathlib

from gpusizer.policies import charts, evidence, sizing
from gpusizer.policies import view as v

# Provider-side components whose children the provider renders (pulumi-kubernetes 4.x).
MANIFESTS = {  # type -> input fields that hold manifests (strings of YAML/JSON, or objects)
    "kubernetes:yaml:ConfigGroup": ("yaml", "objs", "files"),
    "kubernetes:yaml/v2:ConfigGroup": ("yaml", "objs", "files"),
    "kubernetes:yaml:ConfigFile": ("file",),
    "kubernetes:yaml/v2:ConfigFile": ("file",),
    "kubernetes:kustomize:Directory": ("directory",),
    "kubernetes:kustomize/v2:Directory": ("directory",),
}
RENDERED = frozenset(
    {"kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v3:Chart", "kubernetes:helm.sh/v4:Chart", *MANIFESTS}
)
"""Provider-side components: the offline preview judges their inputs; a real preview also their children."""
CHILDLESS = frozenset({"kubernetes:helm.sh/v3:Release"})
"""Provider-side components whose children a real preview never sends (Helm installs them itself)."""
CHART_INPUTS = ("chart", "path", "values", "valueYamlFiles")  # what a rendered chart's children carry
EXPANDED = "$manifest"  # marks a child expanded from a component's manifests (in its URN)
_MAX_FILE = 2_000_000


# Where relative paths in a resource's inputs (a ConfigFile's file, a local chart) are read from: the program's
# directory, as the Pulumi CLI runs a program from its project directory (`based`), else the working directory.
_BASE: contextvars.ContextVar[pathlib.Path | None] = contextvars.ContextVar("gpusizer_policy_base", default=None)


def base() -> pathlib.Path:
    """The directory relative paths in resource inputs are read from."""
    return _BASE.get() or pathlib.Path.cwd()


@contextlib.contextmanager
def based(directory: pathlib.Path):
    """Within it, relative paths in resource inputs are read from `directory` (the offline preview: the
    program's directory)."""
    token = _BASE.set(directory)
    try:
        yield
    finally:
        _BASE.reset(token)


def kubernetes_type(doc: dict) -> str | None:
    """The Pulumi type token of a Kubernetes manifest: apps/v1 Deployment -> kubernetes:apps/v1:Deployment."""
    api, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api, str) or not isinstance(kind, str) or not api or not kind:
        return None
    return f"kubernetes:{api if '/' in api else 'core/' + api}:{kind}"


def _manifests(value, base: pathlib.Path | None) -> list[dict]:
    """Manifest documents in a component input: objects, YAML/JSON strings, or readable local files."""
    out: list[dict] = []
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, dict):
            out += flattened(item)
        elif isinstance(item, str) and not v.is_unknown(item):
            if len(item) > evidence.MAX_DOCUMENT:  # the pack reads no more: what it cannot read, it cannot pass
                raise ValueError(
                    f"a manifest of {len(item):,} characters, more than the {evidence.MAX_DOCUMENT:,} the pack reads"
                )
            docs = evidence.documents(item)
            if not docs and "\n" not in item:
                docs = read_files(item, base)
            for d in docs:
                out += (
                    flattened(d) if isinstance(d, dict) else [x for e in d if isinstance(e, dict) for x in flattened(e)]
                )
    return out


def flattened(doc: dict) -> list[dict]:
    """A List kind (`kind: List`, `items:`) as its items; anything else as itself."""
    if isinstance(doc.get("items"), list) and str(doc.get("kind", "")).endswith("List"):
        return [x for i in doc["items"] if isinstance(i, dict) for x in flattened(i)]
    return [doc]


_SEEN: contextvars.ContextVar[set] = contextvars.ContextVar("gpusizer_files_read", default=set())  # noqa: B039


def read_files(name: str, base: pathlib.Path | None, depth: int = 0) -> list:
    """Documents of a local file, of each file a glob matches, or of each YAML file in a local directory
    (kustomize: its resources)."""
    try:
        name = name.removeprefix("file://")  # a file URL names a local file
        p = evidence.located(name, base)
        if any(c in name for c in "*?["):
            root = pathlib.Path(p.anchor) if p.is_absolute() else (base or pathlib.Path.cwd())
            pattern = str(p.relative_to(p.anchor)) if p.is_absolute() else name
            files = sorted(x for x in root.glob(pattern) if x.is_file())[:200]
        else:
            files = sorted(p.glob("*.y*ml"))[:200] if p.is_dir() else [p] if p.is_file() else []
        out = []
        files = list(dict.fromkeys(f.resolve() for f in files))
        seen = _SEEN.get() if depth else set()
        token = _SEEN.set(seen) if not depth else None
        for f in files:
            if f in seen:
                continue  # a file a kustomization lists beside the directory's own glob: read once
            seen.add(f)
            if f.stat().st_size <= _MAX_FILE:
                docs = evidence.documents(f.read_text(errors="replace"))
                if f.name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
                    # a Kustomization or a Component (kind Component: its resources and patches join the
                    # kustomization that lists it); JSON 6902 patches given as files are read into the patch
                    docs = [
                        {**d, "kind": "Kustomization", "_dir": str(f.parent)} if isinstance(d, dict) else d
                        for d in docs
                    ]
                    if depth < 5:  # its local resources and bases (an overlay's ../base): what kustomize builds
                        out += [
                            x
                            for d in docs
                            if isinstance(d, dict)
                            for ref in _kustomized_refs(d)
                            if isinstance(ref, str)
                            and "://" not in ref
                            and (f.parent / ref).resolve() != f.parent.resolve()
                            for x in read_files(str((f.parent / ref).resolve()), None, depth + 1)
                        ]
                out += docs
        if token is not None:
            _SEEN.reset(token)
        return _kustomized(out)
    except (OSError, ValueError):
        return []


def _kustomized_refs(d: dict) -> list:
    """What a kustomization builds from: its resources, bases and components, and the files its patches
    are in (a strategic-merge patch is judged as the partial manifest it is)."""
    refs = [*(d.get("resources") or []), *(d.get("bases") or []), *(d.get("components") or [])]
    refs += list(d.get("patchesStrategicMerge") or [])
    refs += [p.get("path") for key in ("patches", "patchesJson6902") for p in d.get(key) or [] if isinstance(p, dict)]
    return [r for r in refs if isinstance(r, str)]


def _json6902(docs: list, kustomizations: list) -> list:
    """Documents with a kustomization's JSON 6902 patches applied to the objects they target (kustomize:
    `patches: [{target: {kind, name}, patch: <ops> | path: <file>}]` and `patchesJson6902`; RFC 6902 `add` and
    `replace`, RFC 6901 pointers with `~1` for `/`), as kustomize builds them."""
    for k in kustomizations:
        for entry in [*(k.get("patches") or []), *(k.get("patchesJson6902") or [])]:
            if not isinstance(entry, dict) or not isinstance(entry.get("target"), dict):
                continue
            ops = entry.get("patch")
            if isinstance(entry.get("path"), str) and isinstance(k.get("_dir"), str):
                try:
                    ops = (pathlib.Path(k["_dir"]) / entry["path"]).read_text(errors="replace")[:_MAX_FILE]
                except OSError:
                    continue
            parsed = evidence.documents(ops) if isinstance(ops, str) else []
            if not parsed:
                continue
            target = entry["target"]
            for d in docs:
                if not isinstance(d, dict):
                    continue
                given = d.get("metadata")
                meta: dict = given if isinstance(given, dict) else {}
                if not all(
                    target.get(f) in (None, x) for f, x in (("kind", d.get("kind")), ("name", meta.get("name")))
                ):
                    continue
                if isinstance(parsed[0], list):
                    for op in parsed[0]:
                        _apply(d, op)
                elif isinstance(parsed[0], dict):  # an inline strategic-merge patch, merged into each target
                    _merge(d, {k: x for k, x in parsed[0].items() if k not in ("apiVersion", "kind", "metadata")})
    return docs


def _merge(into: dict, patch: dict) -> None:
    """A strategic merge as kustomize applies one to a workload: mappings merged key by key, lists of named
    items (containers) merged by name, anything else replaced."""
    for k, x in patch.items():
        have = into.get(k)
        if isinstance(have, dict) and isinstance(x, dict):
            _merge(have, x)
        elif isinstance(have, list) and isinstance(x, list) and all(isinstance(i, dict) and "name" in i for i in x):
            for item in x:
                same = next((h for h in have if isinstance(h, dict) and h.get("name") == item["name"]), None)
                if same is None:
                    have.append(copy.deepcopy(item))
                else:
                    _merge(same, item)
        else:
            into[k] = copy.deepcopy(x)


def _apply(doc: dict, op) -> None:
    """One RFC 6902 `add` or `replace` on `doc` (other operations remove or move, and add no capacity)."""
    if not isinstance(op, dict) or op.get("op") not in ("add", "replace") or not isinstance(op.get("path"), str):
        return
    parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
    node: object = doc
    for part in parts[:-1]:
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.setdefault(part, {})
        else:
            return
    last = parts[-1] if parts else ""
    if isinstance(node, dict):
        node[last] = copy.deepcopy(op.get("value"))
    elif isinstance(node, list):
        if last == "-":
            node.append(copy.deepcopy(op.get("value")))
        elif last.isdigit() and int(last) <= len(node):
            node.insert(int(last), copy.deepcopy(op.get("value")))


def _kustomized(docs: list) -> list:
    """Documents with a Kustomization's `replicas` overrides and JSON 6902 patches applied (kustomize:
    `replicas: [{name, count}]` sets spec.replicas of the named workloads), so they are counted as kustomize
    renders them."""
    # (a JSON 6902 patch file, a list of operations, is applied below, not judged as a manifest)
    docs = [d for d in docs if not (isinstance(d, list) and d and all(isinstance(x, dict) and "op" in x for x in d))]
    kustomizations = [d for d in docs if isinstance(d, dict) and d.get("kind") == "Kustomization"]
    docs = (
        _json6902([d for d in docs if not (isinstance(d, dict) and d.get("kind") == "Kustomization")], kustomizations)
        + kustomizations
    )
    counts = {
        r["name"]: r["count"]
        for d in docs
        if isinstance(d, dict) and d.get("kind") == "Kustomization" and isinstance(d.get("replicas"), list)
        for r in d["replicas"]
        if isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(r.get("count"), int)
    }
    if not counts:
        return docs
    out = []
    for d in docs:
        name = (
            (d.get("metadata") or {}).get("name")
            if isinstance(d, dict) and isinstance(d.get("metadata"), dict)
            else None
        )
        if name in counts and isinstance(d.get("spec"), dict):
            d = {**d, "spec": {**d["spec"], "replicas": counts[name]}}
        out.append(d)
    return out


def component_manifests(r: sizing.StackResource, base: pathlib.Path | None) -> list[dict]:
    """The manifest documents a provider-side component's inputs hold (inline, or in local files)."""
    data = r.props.data if isinstance(r.props.data, dict) else {}
    return [d for f in MANIFESTS.get(r.type, ()) for d in _manifests(data.get(f), base)]


def expand(stack: list[sizing.StackResource], base: pathlib.Path | None = None) -> list[sizing.StackResource]:
    """The stack plus the children of its provider-side manifest components, typed as the provider types them.
    A child a real preview already sent (same type and name, parented to the component) is not added again:
    counted twice, it would double the budget."""
    out = list(stack)
    sent = {(x.parent, x.type, _name(x.props.data)) for x in stack if x.parent}
    for r in stack:
        if r.type not in RENDERED:
            continue
        try:
            docs = component_manifests(r, base) if r.type in MANIFESTS else rendered_chart(r, base) or []
        except Exception:  # noqa: BLE001 - the component's model reports it (_read), naming the component
            continue
        for i, doc in enumerate(docs):
            typ = kubernetes_type(doc) or "kubernetes:unknown:Manifest"
            name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
            label = f"{r.name or r.urn}/{doc.get('kind', 'manifest')}/{name or i}"
            if name is not None and (r.urn, typ, name) in sent:
                continue
            out.append(sizing.StackResource(typ, v.View(doc), f"{r.urn}{EXPANDED}[{i}]::{label}", label, r.urn))
    return out


def _name(data) -> str | None:
    meta = data.get("metadata") if isinstance(data, dict) else None
    return meta.get("name") if isinstance(meta, dict) and isinstance(meta.get("name"), str) else None


def rendered_chart(r: sizing.StackResource, base: pathlib.Path | None) -> list[dict] | None:
    """The manifests a Helm component's local chart renders with its values (policies/charts.rendered), or
    None: not a local chart, or one the pack cannot render (its inputs are then read for evidence). Rendered
    once per component and inputs: the stack's expansion and the component's own model both ask."""
    if r.type not in RENDERED or r.type in MANIFESTS:
        return None
    key = (r.urn, json.dumps(r.props.data, sort_keys=True, default=str), str(base))
    if key not in _RENDERED:
        _RENDERED[key] = _render(r, base)
        while len(_RENDERED) > 64:  # a bound on what a long-lived pack process keeps
            _RENDERED.pop(next(iter(_RENDERED)))
    return copy.deepcopy(_RENDERED[key])


_RENDERED: dict[tuple[str, str, str], list[dict] | None] = {}


def _render(r: sizing.StackResource, base: pathlib.Path | None) -> list[dict] | None:
    data = r.props.data if isinstance(r.props.data, dict) else {}
    named = strings([data.get("chart"), data.get("path")])
    if r.type not in RENDERED or r.type in MANIFESTS or not named:
        return None
    values = [d for _, d in values_files(data.get("valueYamlFiles"))] + [data.get("values")]
    name = data.get("name") if isinstance(data.get("name"), str) and not v.is_unknown(data["name"]) else r.name
    namespace = data.get("namespace") if isinstance(data.get("namespace"), str) else "default"
    return charts.rendered(named[0], base, values, name or "release", namespace)


def values_files(value) -> list[tuple[str, object]]:
    """(where, document) of each values file a Helm component names: a path, or an asset as the engine sends
    it (a FileAsset's `path`, a StringAsset's `text`; as objects from the policy SDK or as mappings)."""
    out: list[tuple[str, object]] = []
    for item in value if isinstance(value, list) else [value]:
        text = item.get("text") if isinstance(item, dict) else getattr(item, "text", None)
        path = (
            item
            if isinstance(item, str)
            else item.get("path")
            if isinstance(item, dict)
            else getattr(item, "path", None)
        )
        if isinstance(text, str) and not v.is_unknown(text):
            out += [("valueYamlFiles (text)", d) for d in evidence.documents(text)]
        elif isinstance(path, str) and not v.is_unknown(path):
            out += [(path, d) for d in read_files(path, base())]
    return out


def strings(value) -> list[str]:
    """Every string in a value (an asset arrives as a mapping with its `path`)."""
    if isinstance(value, str):
        return [] if v.is_unknown(value) else [value]
    if isinstance(value, dict):
        return [x for k, val in value.items() if k in ("path", "file", "text") for x in strings(val)]
    if isinstance(value, list):
        return [x for val in value for x in strings(val)]
    return []
