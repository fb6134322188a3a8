"""The part of Helm's template language that charts commonly use, rendered without Helm.

The offline preview has no Helm, and a `helm.v3.Release` sends the pack no
children even in a real preview, so a local chart's templates are rendered
here to judge what they make with the precise models. The subset is the one
most charts' workloads are written in:

- actions `{{ }}` with whitespace trimming (`{{-`, `-}}`) and comments;
- `.Values`, `.Release`, `.Chart`, `.Template` fields, `.` and `$`;
- `if` / `else if` / `else`, `with`, `range` (over a list or a mapping, no
  variables), `define`, `include` and `template`;
- pipelines and parenthesised calls of the functions in `_FUNCTIONS`
  (toYaml, nindent, indent, quote, default, printf, eq, and, not, ...).

Anything else (variables, `tpl`, `lookup`, `.Files`, `.Capabilities`, a
function not listed) raises Unrenderable: the caller then falls back to
reading the chart's text for evidence (policies/charts.py), which fails
closed. Semantics follow Go's text/template and Helm's engine: a missing
value renders as nothing (Helm replaces "<no value>"), toYaml drops its
trailing newline (helm.sh/helm/v3 pkg/engine/funcs.go, read 2026-11-26).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping

import yaml


class Unrenderable(Exception):
    """A template uses something this subset does not render."""


_TOKEN = re.compile(r"\{\{(-?)(.*?)(-?)\}\}", re.S)
MAX_OUTPUT = 4_000_000  # characters rendered per chart
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
    for m in _TOKEN.finditer(source):
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
                cond = s[len(word) :].strip()
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
            elif word in ("block", "break", "continue") or ":=" in s or re.search(r"(?<![\w.])\$\w", s):
                raise Unrenderable(f"{{{{ {s} }}}} (variables and blocks are not rendered)")
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


class Renderer:
    """Renders a chart's templates with one set of values."""

    def __init__(self, root: dict, defines: dict[str, list]):
        self.root = root
        self.defines = defines
        self.size = 0

    def render(self, tree: list, dot, depth: int = 0) -> str:
        if depth > MAX_DEPTH:
            raise Unrenderable("includes nested too deep")
        out: list[str] = []
        for node in tree:
            if node.kind == "text":
                out.append(node.value)
            elif node.kind == "action":
                word = node.value.split(None, 1)[0]
                if word == "template":
                    name, *arg = _split(node.value[len("template") :], " ")
                    out.append(self.include(_string(name), self.value(" ".join(arg), dot) if arg else None, depth))
                else:
                    out.append(_text(self.pipeline(node.value, dot, depth)))
            else:
                out.append(self.branch(node, dot, depth))
            self.size += len(out[-1])
            if self.size > MAX_OUTPUT:
                raise Unrenderable("renders more than the pack reads")
        return "".join(out)

    def branch(self, node: _Node, dot, depth: int) -> str:
        for cond, body in node.branches:
            if cond is None:
                return self.render(body, dot, depth)
            value = self.pipeline(cond, dot, depth)
            if not _truthy(value):
                continue
            if node.kind == "if":
                return self.render(body, dot, depth)
            if node.kind == "with":
                return self.render(body, value, depth)
            items = list(value.values()) if isinstance(value, Mapping) else value
            if not isinstance(items, list):
                raise Unrenderable("range over something not a list or mapping")
            return "".join(self.render(body, x, depth) for x in items)
        return ""

    def include(self, name: str, dot, depth: int) -> str:
        if name not in self.defines:
            raise Unrenderable(f"include of {name!r}, defined nowhere in the chart")
        return self.render(self.defines[name], dot, depth + 1)

    def pipeline(self, text: str, dot, depth: int):
        value, first = None, True
        for command in _split(text, "|"):
            words = _split(command, " ")
            if not words:
                raise Unrenderable(f"an empty command in {text!r}")
            head, args = words[0], words[1:]
            if head == "include":
                vals = [self.value(a, dot, depth) for a in args] + ([] if first else [value])
                value = self.include(str(vals[0]), vals[1] if len(vals) > 1 else None, depth)
            elif head in _FUNCTIONS:
                vals = [self.value(a, dot, depth) for a in args] + ([] if first else [value])
                try:
                    value = _FUNCTIONS[head](*vals)
                except Unrenderable:
                    raise
                except Exception as exc:  # noqa: BLE001 - a call the subset cannot evaluate: not rendered
                    raise Unrenderable(f"{head}: {exc}") from None
            elif not args and first:
                value = self.value(head, dot, depth)
            else:
                raise Unrenderable(f"{head!r} is not a function this renderer knows")
            first = False
        return value

    def value(self, token: str, dot, depth: int = 0):
        if token.startswith("(") and token.endswith(")"):
            return self.pipeline(token[1:-1], dot, depth)
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
        if token == "$":
            return self.root
        if token.startswith("$."):
            return _field(self.root, token[2:])
        if token.startswith("."):
            return _field(dot, token[1:])
        raise Unrenderable(f"{token!r} is not a value this renderer knows")


def _field(base, path: str):
    x = base
    for part in path.split("."):
        if part in ("Files", "Capabilities") and x is not None and "Values" in (x if isinstance(x, Mapping) else {}):
            raise Unrenderable(f".{part} is not rendered offline")
        if not isinstance(x, Mapping):
            return None  # Helm: a missing value renders as nothing
        x = x.get(part)
    return x
