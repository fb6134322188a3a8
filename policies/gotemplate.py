"""The part of Helm's template language that charts commonly use, rendered without Helm.

The offline preview has no Helm, and a `helm.v3.Release` sends the pack no
children even in a real preview, so a local chart's templates are rendered
here to judge what they make with the precise models. The subset is the one
most charts' workloads are written in:

- actions `{{ }}` with whitespace trimming (`{{-`, `-}}`) and comments;
- `.Values`, `.Release`, `.Chart`, `.Template`, `.Capabilities` (a recent
  cluster) fields, `.Files.Get`, `.`, `$` and variables (`$x := ...`,
  `range $k, $v := ...`);
- `if` / `else if` / `else`, `with`, `range` (over a list, a mapping in key
  order, or a count), `define`, `include`, `template` and `tpl`;
- pipelines and parenthesised calls of the functions in `_FUNCTIONS`
  (toYaml, nindent, indent, quote, default, printf, eq, and, not, ...).

Anything else (`.Files` other than Get, loop control, a function not listed)
raises Unrenderable: the caller then falls back to
reading the chart's text for evidence (policies/charts.py), which fails
closed. Semantics follow Go's text/template and Helm's engine: a missing
value renders as nothing (Helm replaces "<no value>"), toYaml drops its
trailing newline (helm.sh/helm/v3 pkg/engine/funcs.go, read 2026-11-26).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import yaml


class Unrenderable(Exception):
    """A template uses something this subset does not render."""


ACTION = re.compile(r"\{\{(-?)(.*?)(-?)\}\}", re.S)  # a template action, with its whitespace trimming marks
# Bounds on what one render may do, so a chart written to exhaust the pack ends as "not rendered" (read for
# evidence instead): as many characters out as charts.MAX_BYTES lets in, and includes far deeper than charts nest.
MAX_OUTPUT = 4_000_000  # characters rendered per chart or subchart
MAX_DEPTH = 40  # nested includes


@dataclasses.dataclass
class _Node:
    kind: str  # text, action, if, with, range
    value: str = ""  # text, or the pipeline
    body: list = dataclasses.field(default_factory=list)
    branches: list = dataclasses.field(default_factory=list)  # if: [(pipeline, body)], else as (None, body)


def _lex(source: str) -> list[tuple[str, str]]:
    """("text", s) and ("action", s) pieces, with Go's whitespace trimming applied."""
    out: list[tuple[str, str]] = []
    pos = 0
    trim_next = False
    for m in ACTION.finditer(source):
        text = source[pos : m.start()]
        if trim_next:
            text = text.lstrip()
        if m.group(1):
            text = text.rstrip()
        out.append(("text", text))
        inner = m.group(2).strip()
        if not (inner.startswith("/*") and inner.endswith("*/")):
            out.append(("action", inner))
        trim_next = bool(m.group(3))
        pos = m.end()
    tail = source[pos:]
    out.append(("text", tail.lstrip() if trim_next else tail))
    return out


def parse(source: str, defines: dict[str, list]) -> list:
    """The template's tree; `define` blocks are added to `defines` by name."""
    pieces = _lex(source)
    pos = 0

    def block(stop: tuple[str, ...]) -> tuple[list, str]:
        nonlocal pos
        nodes: list = []
        while pos < len(pieces):
            kind, s = pieces[pos]
            pos += 1
            if kind == "text":
                if s:
                    nodes.append(_Node("text", s))
                continue
            word = s.split(None, 1)[0] if s else ""
            if word in stop or (word == "else" and "else" in stop):
                return nodes, s
            if word in ("if", "with", "range"):
                node = _Node(word)
                cond: str | None = s[len(word) :].strip()
                while True:
                    body, end = block(("else", "end"))
                    node.branches.append((cond, body))
                    if end.split(None, 1)[0] == "end":
                        break
                    rest = end[len("else") :].strip()
                    if rest.startswith("if ") and word == "if":
                        cond = rest[3:].strip()
                    elif rest:
                        raise Unrenderable(f"{{{{ {end} }}}}")
                    else:
                        cond = None
                nodes.append(node)
            elif word == "define":
                name = _string(s[len("define") :].strip())
                body, _ = block(("end",))
                defines[name] = body
            elif word in ("end", "else"):
                raise Unrenderable(f"an unmatched {{{{ {s} }}}}")
            elif word in ("block", "break", "continue"):
                raise Unrenderable(f"{{{{ {s} }}}} (blocks and loop control are not rendered)")
            else:
                nodes.append(_Node("action", s))
        if stop:
            raise Unrenderable("a block without its end")
        return nodes, ""

    tree, _ = block(())
    return tree


def _string(token: str) -> str:
    token = token.strip()
    if len(token) >= 2 and token[0] == token[-1] == '"':
        return json.loads(token)
    if len(token) >= 2 and token[0] == token[-1] == "`":
        return token[1:-1]
    raise Unrenderable(f"not a string: {token}")


def _split(text: str, sep: str) -> list[str]:
    """`text` split at top-level `sep` (outside quotes and parentheses)."""
    parts, depth, cur, quote = [], 0, [], ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            cur.append(c)
            if c == "\\" and quote == '"' and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif c == quote:
                quote = ""
        elif c in '"`':
            quote = c
            cur.append(c)
        elif c == "(":
            depth += 1
            cur.append(c)
        elif c == ")":
            depth -= 1
            cur.append(c)
        elif depth == 0 and (text.startswith(sep, i) if sep != " " else c.isspace()):
            parts.append("".join(cur))
            cur = []
            i += len(sep) - 1 if sep != " " else 0
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()] if sep == " " else [p.strip() for p in parts]


def _truthy(x) -> bool:
    return not (x is None or x is False or x == 0 or (isinstance(x, (str, list, dict, tuple)) and len(x) == 0))


def _text(x) -> str:
    if x is None:
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e21:
        return str(int(x))
    if isinstance(x, (dict, list)):
        raise Unrenderable("a mapping or list printed without toYaml")
    return str(x)


def _to_yaml(x) -> str:
    return "" if x is None else yaml.safe_dump(x, default_flow_style=False, sort_keys=True).rstrip("\n")


def _indent(n, s) -> str:
    pad = " " * int(n)
    return "\n".join(pad + line for line in _text(s).split("\n"))


def _printf(fmt, *args) -> str:
    verbs = iter(args)

    def one(m: re.Match) -> str:
        verb = m.group(0)
        if verb == "%%":
            return "%"
        x = next(verbs, None)
        if verb[-1] == "q":
            return json.dumps(_text(x))
        if verb[-1] == "d":
            return str(int(x))  # type: ignore[arg-type]
        return _text(x)

    return re.sub(r"%%|%[-+ #0-9.]*[svdq]", one, str(fmt))


def _trunc(n, s) -> str:
    n, s = int(n), _text(s)
    return s[:n] if n >= 0 else s[n:]


_FUNCTIONS: dict[str, Callable] = {
    "toYaml": _to_yaml,
    "toJson": lambda x: json.dumps(x, separators=(",", ":")),
    "nindent": lambda n, s: "\n" + _indent(n, s),
    "indent": _indent,
    "quote": lambda *xs: " ".join(json.dumps(_text(x)) for x in xs),
    "squote": lambda *xs: " ".join(f"'{_text(x)}'" for x in xs),
    "default": lambda d, *x: x[0] if x and _truthy(x[0]) else d,
    "int": lambda x: int(float(x or 0)),
    "int64": lambda x: int(float(x or 0)),
    "float64": lambda x: float(x or 0),
    "toString": _text,
    "lower": lambda s: _text(s).lower(),
    "upper": lambda s: _text(s).upper(),
    "trim": lambda s: _text(s).strip(),
    "trunc": _trunc,
    "trimSuffix": lambda suf, s: _text(s).removesuffix(suf),
    "trimPrefix": lambda pre, s: _text(s).removeprefix(pre),
    "replace": lambda old, new, s: _text(s).replace(old, new),
    "printf": _printf,
    "print": lambda *xs: "".join(_text(x) for x in xs),
    "not": lambda x: not _truthy(x),
    "and": lambda *xs: next((x for x in xs if not _truthy(x)), xs[-1]),
    "or": lambda *xs: next((x for x in xs if _truthy(x)), xs[-1]),
    "eq": lambda a, *bs: any(a == b for b in bs),
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "gt": lambda a, b: a > b,
    "le": lambda a, b: a <= b,
    "ge": lambda a, b: a >= b,
    "empty": lambda x: not _truthy(x),
    "hasKey": lambda m, k: isinstance(m, Mapping) and k in m,
    "required": lambda msg, x: x if _truthy(x) else (_ for _ in ()).throw(Unrenderable(f"required: {msg}")),
    "len": lambda x: len(x or ()),
}


_ASSIGNED = re.compile(r"^\$(\w+)\s*:?=\s*(.+)$", re.S)
_RANGE_VARS = re.compile(r"^\$(\w+)\s*(?:,\s*\$(\w+)\s*)?:=\s*(.+)$", re.S)
KUBE_VERSION = "v1.31.0"  # what `.Capabilities.KubeVersion` answers: a recent Kubernetes (charts gate on it)


def _semver(version) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", str(version).split("-")[0])[:3]) or (0,)


def _merged_under(dst: dict, src) -> dict:
    """Sprig's `merge`: `src` fills what `dst` lacks, mappings merged deeply, `dst` winning (Sprig docs, "Dictionaries
    and Dict Functions": merge, which uses mergo without overwrite; read 2026-11-26)."""
    out = dict(dst)
    for k, x in (src or {}).items():
        if isinstance(out.get(k), dict) and isinstance(x, Mapping):
            out[k] = _merged_under(out[k], x)
        elif k not in out:
            out[k] = x
    return out


def _go_replacement(repl: str) -> str:
    """Go's regexp replacement (`$1`, `${1}`, `${name}`) as Python's `re.sub` reads one (`\\g<1>`)."""
    repl = repl.replace("\\", "\\\\")
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: f"\\g<{m.group(1) or m.group(2)}>", repl)


def _semver_compare(constraint, version) -> bool:
    """Masterminds semver for the one-clause constraints charts use (`>=1.19-0`, `<1.22`)."""
    m = re.fullmatch(r"\s*(>=|<=|>|<|=|==|!=|\^|~)?\s*v?([\d.]+)(?:-[\w.]+)?\s*", str(constraint))
    if not m:
        raise Unrenderable(f"semverCompare {constraint!r}")
    op, want, have = m.group(1) or "=", _semver(m.group(2)), _semver(version)
    return {
        ">=": have >= want,
        "<=": have <= want,
        ">": have > want,
        "<": have < want,
        "=": have == want,
        "==": have == want,
        "!=": have != want,
        "^": have >= want and have[:1] == want[:1],
        "~": have >= want and have[:2] == want[:2],
    }[op]


def _index(container, *keys):
    for k in keys:
        container = (
            container.get(k)
            if isinstance(container, Mapping)
            else (container[int(k)] if isinstance(container, list) and int(k) < len(container) else None)
        )
    return container


def _dict(*pairs):
    return {str(pairs[i]): pairs[i + 1] for i in range(0, len(pairs) - 1, 2)}


_FUNCTIONS.update(
    {
        "contains": lambda sub, s: _text(sub) in _text(s),
        "hasPrefix": lambda pre, s: _text(s).startswith(_text(pre)),
        "hasSuffix": lambda suf, s: _text(s).endswith(_text(suf)),
        "index": _index,
        "ternary": lambda a, b, cond: a if _truthy(cond) else b,
        "list": lambda *xs: list(xs),
        "dict": _dict,
        "sha256sum": lambda s: hashlib.sha256(_text(s).encode()).hexdigest(),
        "b64enc": lambda s: base64.b64encode(_text(s).encode()).decode(),
        "semverCompare": _semver_compare,
        "kindIs": lambda kind, x: (
            {"map": dict, "slice": list, "string": str, "bool": bool}.get(kind, type(None)) is type(x)
        ),
        "coalesce": lambda *xs: next((x for x in xs if _truthy(x)), None),
        "join": lambda sep, xs: _text(sep).join(_text(x) for x in (xs or [])),
        "splitList": lambda sep, s: _text(s).split(_text(sep)),
        "keys": lambda m: sorted(m) if isinstance(m, Mapping) else [],
        "merge": lambda dst, *srcs: functools.reduce(_merged_under, srcs, dict(dst or {})),
        "toYamlPretty": _to_yaml,
        "regexReplaceAll": lambda pat, s, repl: re.sub(pat, _go_replacement(_text(repl)), _text(s)),
        "regexMatch": lambda pat, s: re.search(pat, _text(s)) is not None,
        "add": lambda *xs: sum(int(x) for x in xs),
        "sub": lambda a, b: int(a) - int(b),
        "mul": lambda *xs: math.prod(int(x) for x in xs),
        "max": lambda *xs: max(int(x) for x in xs),
        "min": lambda *xs: min(int(x) for x in xs),
        "nospace": lambda s: re.sub(r"\s+", "", _text(s)),
        "title": lambda s: _text(s).title(),
        "lookup": lambda *_: {},  # Helm answers nothing from the cluster during `helm template` and a dry run
    }
)


class Renderer:
    """Renders a chart's templates with one set of values (`files`: the chart's files, for `.Files.Get`)."""

    def __init__(self, root: dict, defines: dict[str, list], files: Mapping[str, str] | None = None):
        self.root = root
        self.defines = defines
        self.files = files or {}
        self.size = 0

    def render(self, tree: list, dot, depth: int = 0, scope: dict | None = None) -> str:
        if depth > MAX_DEPTH:
            raise Unrenderable("includes nested too deep")
        scope = dict(scope) if scope is not None else {"": self.root}  # "" is `$`; a block's variables end with it
        out: list[str] = []
        for node in tree:
            if node.kind == "text":
                out.append(node.value)
            elif node.kind == "action":
                assigned = _ASSIGNED.match(node.value)
                word = node.value.split(None, 1)[0]
                if assigned:
                    scope[assigned.group(1)] = self.pipeline(assigned.group(2), dot, depth, scope)
                    out.append("")
                elif word == "template":
                    name, *arg = _split(node.value[len("template") :], " ")
                    value = self.value(" ".join(arg), dot, depth, scope) if arg else None
                    out.append(self.include(_string(name), value, depth))
                else:
                    out.append(_text(self.pipeline(node.value, dot, depth, scope)))
            else:
                out.append(self.branch(node, dot, depth, scope))
            self.size += len(out[-1])
            if self.size > MAX_OUTPUT:
                raise Unrenderable("renders more than the pack reads")
        return "".join(out)

    def branch(self, node: _Node, dot, depth: int, scope: dict) -> str:
        for cond, body in node.branches:
            if cond is None:
                return self.render(body, dot, depth, scope)
            inner = dict(scope)
            names: tuple = ()
            bound = _RANGE_VARS.match(cond) if node.kind in ("range", "with", "if") else None
            if bound:
                names, cond = tuple(n for n in bound.group(1, 2) if n), bound.group(3)
            value = self.pipeline(cond, dot, depth, inner)
            if not _truthy(value):
                continue
            if node.kind != "range":
                if names:
                    inner[names[-1]] = value
                return self.render(body, value if node.kind == "with" else dot, depth, inner)
            if isinstance(value, Mapping):
                items = [(k, value[k]) for k in sorted(value)]  # Go visits a map's keys in sorted order
            elif isinstance(value, list):
                items = list(enumerate(value))
            elif isinstance(value, int) and not isinstance(value, bool):
                items = [(i, i) for i in range(value)]
            else:
                raise Unrenderable("range over something not a list or mapping")
            out = []
            for k, x in items:
                if len(names) == 2:
                    inner[names[0]], inner[names[1]] = k, x
                elif names:
                    inner[names[0]] = x
                out.append(self.render(body, x, depth, inner))
            return "".join(out)
        return ""

    def include(self, name: str, dot, depth: int) -> str:
        if name not in self.defines:
            raise Unrenderable(f"include of {name!r}, defined nowhere in the chart")
        return self.render(self.defines[name], dot, depth + 1, {"": dot})  # `$` in a template is its data

    def pipeline(self, text: str, dot, depth: int, scope: dict | None = None):
        scope = scope if scope is not None else {"": self.root}
        value: Any = None
        first = True
        for command in _split(text, "|"):
            words = _split(command, " ")
            if not words:
                raise Unrenderable(f"an empty command in {text!r}")
            head, args = words[0], words[1:]
            vals = [self.value(a, dot, depth, scope) for a in args] + ([] if first else [value])
            if head == "include":
                value = self.include(str(vals[0]), vals[1] if len(vals) > 1 else None, depth)
            elif head == "tpl":  # a values string rendered as a template of this chart
                value = self.render(
                    parse(_text(vals[0]), dict(self.defines)), vals[1] if len(vals) > 1 else dot, depth + 1
                )
            elif head.endswith(".Files.Get") or head == ".Files.Get":
                value = self.files.get(str(vals[0]).lstrip("./"), "")
            elif head.endswith("APIVersions.Has"):
                value = True  # a recent cluster serves the APIs charts ask about
            elif head in _FUNCTIONS:
                try:
                    value = _FUNCTIONS[head](*vals)
                except Unrenderable:
                    raise
                except Exception as exc:  # noqa: BLE001 - a call the subset cannot evaluate: not rendered
                    raise Unrenderable(f"{head}: {exc}") from None
            elif not args and first:
                value = self.value(head, dot, depth, scope)
            else:
                raise Unrenderable(f"{head!r} is not a function this renderer knows")
            first = False
        return value

    def value(self, token: str, dot, depth: int = 0, scope: dict | None = None):
        scope = scope if scope is not None else {"": self.root}
        if token.startswith("(") and token.endswith(")"):
            return self.pipeline(token[1:-1], dot, depth, scope)
        if token[:1] in '"`':
            return _string(token)
        if token in ("true", "false"):
            return token == "true"
        if token == "nil":
            return None
        if re.fullmatch(r"-?\d+", token):
            return int(token)
        if re.fullmatch(r"-?\d*\.\d+", token):
            return float(token)
        if token == ".":
            return dot
        if token.startswith("$"):
            name, _, path = token[1:].partition(".")
            if name not in scope:
                raise Unrenderable(f"${name} is not set")
            return field(scope[name], path) if path else scope[name]
        if token.startswith("."):
            return field(dot, token[1:])
        raise Unrenderable(f"{token!r} is not a value this renderer knows")


def field(base, path: str):
    x = base
    for part in path.split("."):
        if part == "Files" and isinstance(x, Mapping) and "Values" in x:
            raise Unrenderable(".Files other than .Files.Get is not rendered offline")
        if not isinstance(x, Mapping):
            return None  # Helm: a missing value renders as nothing
        x = x.get(part)
    return x
