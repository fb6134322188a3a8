"""Values a deploy engine computes when it deploys, read as it computes them: CloudFormation intrinsic functions
and dynamic references, Step Functions intrinsics, and the `{{ Parameter }}` references of SSM documents.

A document a resource holds (a CloudFormation template, a state machine's definition, an Automation document)
may give an instance type as an expression rather than a literal: `!Sub '${Fam}.48xlarge'`,
`{"Fn::Join": [".", [{"Fn::FindInMap": ...}, ...]]}`, `"InstanceType.$": "States.Format('{}.{}', 'p5', '48xlarge')"`,
`InstanceType: 'p5.{{ Size }}'`. `resolved` evaluates what can be read from the document itself and the
resource's own parameters, as the engine would, into the value or the list of values it can take (every
branch of an `Fn::If`, every key of a mapping chosen by a value unknown before deployment). A type field whose
value stays unreadable (a dynamic reference `{{resolve:ssm:...}}`, a parameter of an SSM parameter type,
`Fn::GetAtt`, `Fn::ImportValue`, a JSONPath read from a state's input) is returned as `opened`: the evidence
walk reports it, so the gate fails closed on a type it cannot read, rather than passing it.

Sources (read 2026-11-26): AWS CloudFormation User Guide, "Intrinsic function reference" and "Get values
stored in other services using dynamic references"; "Specify existing resources at runtime with CloudFormation-
supplied parameter types" (AWS::SSM::Parameter::Value<String>); AWS Step Functions Developer Guide,
"Intrinsic functions" (States.Format) and "Using JSONPath paths" (a field name ending in `.$`); AWS Systems
Manager User Guide, "Syntax for runbook content" (`{{ Parameter }}` with `default`); Step Functions Developer
Guide, "Transforming data with JSONata" (`{% ... %}` expressions, evaluated when the state runs).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping

# A type field: the instance, machine or accelerator type an engine launches (a `.$` suffix is a Step Functions
# path or intrinsic for that field).
TYPE_FIELD = re.compile(r"^(?:instance_?types?|machine_?type|accelerator_?type|node_?type|instance_?class)$", re.I)
# Values one expression is expanded into (every branch and mapping key): a template's mapping has a row per
# environment or region (tens); past it the expression is judged unreadable, as a type computed when deployed.
MOST = 32
# (Nesting bounds: intrinsics nest a few deep in real templates and a document a few tens; deeper is a crafted
# input, judged unreadable rather than walked.)
_CALL_DEPTH = 20
_DOC_DEPTH = 60
SHOWN = 60  # characters of an unreadable expression shown in the finding (its reason follows it)
_OPEN = object()  # an expression whose value is known only when deployed
_FN = re.compile(r"^(?:Ref|Condition|Fn::[A-Za-z]+)$")
_DYNAMIC = re.compile(r"\{\{resolve:[^}]*\}\}")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_.:-]+)\s*\}\}")
_SUB = re.compile(r"\$\{([^}!][^}]*)\}")
_FORMAT = re.compile(r"^\s*States\.Format\((.*)\)\s*$", re.S)
_ARG = re.compile(r"\s*(?:'((?:[^'\\]|\\.)*)'|(-?\d+(?:\.\d+)?))\s*(?:,|$)")


# What a text holding a deploy-time expression shows: an intrinsic's name (long form, or a short-form tag), a
# `{{ }}` reference, a Step Functions `.$` field, a JSONata `{% %}` expression, a CloudFormation template (whose
# declarations `resolved` drops).
_MARKS = re.compile(r"Fn::|\bRef\b|\bResources\b|!(?:[A-Z][A-Za-z]+|Ref)\b|\{\{|\.\$|\{%|\bCondition\b")


def may_compute(text: str) -> bool:
    """Whether a document's text may hold an expression `resolved` evaluates (a cheap test before the walk)."""
    return bool(_MARKS.search(text))


def intrinsic(value) -> str | None:
    """The function name of a CloudFormation intrinsic (`{"Fn::Join": [...]}`, `{"Ref": "X"}`), or None."""
    if isinstance(value, Mapping) and len(value) == 1:
        (k,) = value
        return k if isinstance(k, str) and _FN.match(k) else None
    return None


class _Template:
    def __init__(self, doc: Mapping, given: Mapping[str, str]):
        def section(name: str) -> Mapping:
            x = next((doc[k] for k in doc if isinstance(k, str) and k.lower() == name), None)
            return x if isinstance(x, Mapping) else {}

        self.params = section("parameters")
        self.mappings = section("mappings")
        self.given = given

    def parameter(self, name: str) -> list:
        """The values a template parameter takes: the resource's own, else the template's default, else the
        values it allows; a parameter of an SSM type holds a parameter's name, its value read when deployed."""
        p = self.params.get(name)
        if not isinstance(p, Mapping):
            return [self.given[name]] if name in self.given else [_OPEN]
        kind = str(p.get("Type", p.get("type", "")))
        if kind.startswith("AWS::SSM::Parameter::Value"):
            return [_OPEN]
        if name in self.given:
            return [self.given[name]]
        for k in ("Default", "default"):
            if isinstance(p.get(k), (str, int, float)):
                return [str(p[k])]
        allowed = p.get("AllowedValues", p.get("allowedValues"))
        if isinstance(allowed, list) and allowed:
            return [str(x) for x in allowed[:MOST]]
        return [_OPEN]

    def values(self, x, depth: int = 0) -> list:
        """Every value `x` may take when deployed (`_OPEN` for one unknown until then)."""
        if depth > _CALL_DEPTH:
            return [_OPEN]
        fn = intrinsic(x)
        if fn is None:
            if isinstance(x, str):
                return [self.text(x)]
            return [x]
        arg = x[fn]
        try:
            out = self._call(fn, arg, depth + 1)
        except (TypeError, ValueError, IndexError, KeyError):
            out = [_OPEN]
        return out if len(out) <= MOST else [_OPEN]

    def text(self, s: str):
        """A literal string as the engine reads it: a dynamic reference is resolved only when deployed, and a
        `{{ Parameter }}` reference (SSM documents) takes the parameter's value."""
        if _DYNAMIC.search(s):
            return _OPEN
        if "{{" not in s:
            return s
        out = s
        for name in _PLACEHOLDER.findall(s):
            v = self.parameter(name)
            if len(v) != 1 or v[0] is _OPEN:
                return _OPEN
            out = re.sub(r"\{\{\s*" + re.escape(name) + r"\s*\}\}", str(v[0]).replace("\\", r"\\"), out)
        return out

    def _scalars(self, x, depth: int) -> list:
        return [self.values(i, depth) for i in x] if isinstance(x, list) else [self.values(x, depth)]

    def _call(self, fn: str, arg, depth: int) -> list:
        if fn == "Ref":
            return self.parameter(arg) if isinstance(arg, str) else [_OPEN]
        if fn == "Fn::FindInMap":
            name, top, second = (self.values(a, depth) for a in arg[:3])
            out = []
            for n, t, s in itertools.product(name, top, second):
                table = self.mappings.get(n) if n is not _OPEN else None
                if not isinstance(table, Mapping):
                    return [_OPEN]
                rows = list(table.values()) if t is _OPEN else [table.get(t)]
                for row in rows:
                    if not isinstance(row, Mapping):
                        continue
                    cells = list(row.values()) if s is _OPEN else [row.get(s)]
                    out += [c for c in cells if c is not None]
            return out or [_OPEN]
        if fn == "Fn::Join":
            sep, parts = arg
            items = self.values(parts, depth)
            out = []
            for item in items:
                lists = self._scalars(item, depth) if isinstance(item, list) else [[_OPEN]]
                for combo in itertools.islice(itertools.product(*lists), MOST + 1):
                    out.append(_OPEN if _OPEN in combo else str(sep).join(map(str, combo)))
            return out
        if fn == "Fn::Sub":
            body, local = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1] if len(arg) > 1 else {})
            names = _SUB.findall(str(body))
            choices = [
                self.values(local[n], depth) if isinstance(local, Mapping) and n in local else self.parameter(n)
                for n in names
            ]
            out = []
            for combo in itertools.islice(itertools.product(*choices), MOST + 1):
                if _OPEN in combo:
                    out.append(_OPEN)
                    continue
                text = str(body)
                for n, val in zip(names, combo, strict=True):
                    text = text.replace("${" + n + "}", str(val))
                out.append(self.text(text))
            return out
        if fn == "Fn::Select":
            index, items = arg
            out = []
            for i, lst in itertools.product(self.values(index, depth), self.values(items, depth)):
                if i is _OPEN or not isinstance(lst, list):
                    out.append(_OPEN)
                    continue
                out += self.values(lst[int(i)], depth)
            return out
        if fn == "Fn::If":
            return [v for branch in arg[1:3] for v in self.values(branch, depth)]
        if fn == "Fn::Split":
            sep, s = arg
            return [v.split(str(sep)) if isinstance(v, str) else _OPEN for v in self.values(s, depth)]
        if fn == "Fn::Base64":
            return self.values(arg, depth)
        return [_OPEN]  # Fn::GetAtt, Fn::ImportValue, Fn::GetAZs, Fn::Cidr, conditions: known when deployed


def _step_functions(s: str):
    """A Step Functions value for a `.$` field: `States.Format` of literal arguments, computed; anything else
    (a path into the state's input, another intrinsic, a format of a path) is known only when it runs."""
    m = _FORMAT.match(s)
    if not m:
        return _OPEN
    rest, args = m.group(1), []
    while rest.strip():
        a = _ARG.match(rest)
        if not a:
            return _OPEN
        args.append(a.group(1) if a.group(1) is not None else a.group(2))
        rest = rest[a.end() :]
    if not args or args[0].count("{}") != len(args) - 1:
        return _OPEN
    pieces = args[0].split("{}")
    return "".join(p + a for p, a in zip(pieces, [*args[1:], ""], strict=True))


def resolved(doc, given: Mapping[str, str] | None = None) -> tuple[object, list[tuple[str, str]]]:
    """`doc` with its deploy-time expressions evaluated, and the (path, expression) of each type field whose
    value cannot be read before deployment. An expression that takes several values becomes their list.
    `given`: the resource's own parameter values (a CloudFormation stack's `parameters`)."""
    if not isinstance(doc, Mapping):
        return doc, []
    t = _Template(doc, {str(k): str(x) for k, x in (given or {}).items() if isinstance(x, (str, int, float))})
    opened: list[tuple[str, str]] = []

    def walk(x, path: str, depth: int):
        if depth > _DOC_DEPTH:
            return x
        if intrinsic(x) is not None:
            vals = t.values(x)
            known = [v for v in vals if v is not _OPEN]
            if len(known) < len(vals) and TYPE_FIELD.match(path.rsplit(".", 1)[-1].removesuffix(".$")):
                opened.append((path, str(x)[:SHOWN]))
            return known[0] if len(known) == 1 else known
        if isinstance(x, Mapping):
            out = {}
            for k, val in x.items():
                key = str(k)
                here = f"{path}.{key}" if path else key
                if key.endswith(".$") and isinstance(val, str):
                    base = key.removesuffix(".$")
                    v = _step_functions(val)
                    if v is _OPEN:
                        if TYPE_FIELD.match(base):
                            opened.append((here, val[:SHOWN]))
                        out[k] = val
                    else:
                        out[base] = v
                    continue
                out[k] = walk(val, here, depth + 1)
            return out
        if isinstance(x, list):
            return [walk(val, f"{path}[{i}]", depth + 1) for i, val in enumerate(x)]
        if isinstance(x, str) and x.strip().startswith("{%") and x.strip().endswith("%}"):
            if TYPE_FIELD.match(path.rsplit(".", 1)[-1]):  # a JSONata expression (Step Functions): known when run
                opened.append((path, x[:SHOWN]))
            return x
        if isinstance(x, str) and ("{{" in x):
            v = t.text(x)
            if v is _OPEN:
                if TYPE_FIELD.match(path.rsplit(".", 1)[-1]):
                    opened.append((path, x[:SHOWN]))
                return x
            return v
        return x

    out = walk(doc, "", 0)
    if cfn_template(doc) and isinstance(out, dict):
        # what a template launches is in its Resources, with the expressions above evaluated into them: its
        # parameter declarations (allowed values, defaults), mappings and conditions launch nothing of their own
        out = {k: x for k, x in out.items() if str(k).lower() not in _DECLARATIONS}
    return out, opened


_DECLARATIONS = frozenset({"parameters", "mappings", "conditions", "outputs", "metadata", "rules"})


def cfn_template(doc: Mapping) -> bool:
    """Whether a document is a CloudFormation template: its `Resources` map names to typed resources."""
    res = next((doc[k] for k in doc if isinstance(k, str) and k.lower() == "resources"), None)
    return isinstance(res, Mapping) and any(
        isinstance(r, Mapping) and isinstance(r.get("Type"), str) and "::" in r["Type"] for r in res.values()
    )
