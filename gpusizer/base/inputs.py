"""The input boundary: every file a user hands gpusizer is read and parsed here, under one set of limits.

Specs, pool files, Hugging Face config.json files, stack files and policy
configs all come through :func:`read_text` and then :func:`load_yaml` or
:func:`load_json`, so a hostile or broken file gets the same treatment
everywhere (issue 15):

- only regular files are read (``/dev/zero``, a FIFO or a directory is
  refused before a byte is read; FIFOs are opened non-blocking so a FIFO with
  no writer cannot hang us), and at most :data:`MAX_INPUT_BYTES`;
- the bytes must be UTF-8 (a leading BOM is allowed); a bad byte is reported
  with its line and column;
- YAML is parsed by libyaml (``yaml.CSafeLoader``) where PyYAML was built with
  it, else by the pure-Python ``SafeLoader``; a first pass over the parser's
  events (streaming, no recursion) refuses nesting deeper than
  :data:`MAX_DEPTH`, more than :data:`MAX_ALIASES` aliases, a recursive alias,
  and documents whose aliases would expand past :data:`MAX_NODES` nodes (the
  "billion laughs" bomb); only then are the nodes composed and constructed,
  by a loader that refuses duplicate mapping keys and reads a date-like plain
  scalar (``as_of: 2026-11-01``) as its text, as YAML 1.2 and JSON do;
- JSON refuses NaN/Infinity, duplicate keys and the same nesting depth, and
  :func:`not_json` finds what JSON could not carry of a YAML document;
- every message quotes at most :data:`QUOTE_CHARS` characters of a value
  (:func:`quote`) and passes through :func:`gpusizer.base.redact.redact`.

Every failure is a :class:`gpusizer.base.errors.SpecError` naming the file and,
where it has one, the field the file came from (``model.hf_config``,
``--pools``).
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import reprlib
import stat
import sys
from typing import Any, NamedTuple, NoReturn

import yaml

from gpusizer.base import errors, redact

# 1 MiB. Real inputs are far smaller: a spec or pool file is a few hundred
# bytes; Hugging Face config.json files are a few KB (Llama-3.1-8B-Instruct's
# is 855 bytes, DeepSeek-V3's 1.7 KB: huggingface.co, 2026-11, unverified);
# a stack file holding kubeconfigs tens of KB. Bounding the input bounds the
# time (libyaml parses 1 MiB in tens of ms) and the memory of everything after.
MAX_INPUT_BYTES = 1 << 20
# 32 MiB. Machine-written JSON read back: `gpusizer diff`'s plan/preview JSON (one
# plan is up to ~780 KB with the full catalog's candidates, measured here; a preview
# holds one per workload) and vLLM benchmark_serving.py --save-result files, which
# with --save-detailed keep per-request arrays, "itls" holding one float per output
# token (vLLM repository, benchmarks/benchmark_serving.py, read 2026-11-23). At about
# 21 bytes per float in JSON (hand-derived: repr of a float plus ", "), 1,000 prompts x
# 1,000 output tokens is ~21 MB; calibrate reads only the summary fields, so larger
# sweeps are saved without --save-detailed. The cap with MAX_JSON_VALUES keeps a hostile
# document under 300 MiB of peak memory (issue 24; measured in tests/test_hostile_documents.py).
MAX_RESULT_BYTES = 32 << 20
# Values in one JSON document, counted before parsing (commas, brackets and braces: an upper bound).
# Parsed, a value costs 30-90 bytes (a float 32 with its pointer, a short string up to ~90, an empty
# object 64 + its pointer; CPython 3.11, sys.getsizeof), so a million keep a MAX_RESULT_BYTES document
# well under 300 MiB of peak memory with its text, while the largest one above (1,000 prompts x 1,000
# output tokens: a million latencies) still reads. Containers are capped apart (objects cost most).
MAX_JSON_VALUES = 1_050_000
MAX_JSON_CONTAINERS = 250_000
# Specs nest 4 levels, pools with tolerations 4, stack files with inline
# kubeconfigs about 8. 64 leaves room and stays far from Python's recursion
# limit (1000 frames; the constructor uses about 3 per level).
MAX_DEPTH = 64
# Anchors/aliases are rare in these files (a shared `placement:` block);
# 100 aliases is generous, while an alias bomb needs a handful per level.
MAX_ALIASES = 100
# Nodes after expanding aliases: 1 MiB of plain YAML holds at most ~500k
# scalars, so this bound only bites when aliases multiply a document.
MAX_NODES = 1_000_000
# Characters of a user's value quoted back in an error message.
QUOTE_CHARS = 80

_reprs = reprlib.Repr()
_reprs.maxlevel, _reprs.maxdict, _reprs.maxlist, _reprs.maxtuple, _reprs.maxset = 2, 4, 4, 4, 4
_reprs.maxstring = _reprs.maxother = _reprs.maxlong = QUOTE_CHARS


def quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)`` cut to about `limit` characters, credentials redacted.

    Bounded in time and output whatever `value` is (a shared-reference YAML
    bomb, a 50 MB string): reprlib visits at most a few elements per level.

    >>> quote("x" * 500)[-5:]
    "...x'"
    >>> len(quote(list(range(10**6)))) < 40
    True
    """
    text = redact.redact(_reprs.repr(value))
    return text if len(text) <= limit + 5 else text[:limit] + "..."


def _line(event: yaml.Event) -> int | str:
    """The 1-based line an event starts on (libyaml events always carry a mark)."""
    return "?" if event.start_mark is None else event.start_mark.line + 1


def _fail(message: str, field: str) -> errors.SpecError:
    return errors.SpecError(redact.redact(message), field)


def read_text(
    path: str | os.PathLike[str], what: str = "spec file", field: str = "", max_bytes: int = MAX_INPUT_BYTES
) -> str:
    """The text of a regular file of at most `max_bytes`, decoded as strict UTF-8.

    Args:
        path: the file.
        what: what to call it in messages ("spec file", "pools file --pools").
        field: the SpecError's field (the spec key or option the path came from).
        max_bytes: the size cap (MAX_INPUT_BYTES; catalog CSVs get a larger one).

    Raises:
        SpecError: the file is missing, unreadable, not a regular file, too
            large or not UTF-8; the message names the file and the fix.
    """
    p = pathlib.Path(path)
    name = quote(str(p))
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        reason = getattr(exc, "strerror", None) or str(exc)
        raise _fail(f"cannot read {what} {name}: {reason}. To fix: check the path", field) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _fail(f"{what} {name} is not a regular file. To fix: give the path of a file", field)
        if info.st_size > max_bytes:
            raise _fail(
                f"{what} {name} is {info.st_size:,} bytes, over the {max_bytes:,}-byte limit. "
                "To fix: give the intended file",
                field,
            )
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise _fail(f"cannot read {what} {name}: {exc.strerror}. To fix: check the path", field) from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # grew while we read it
        raise _fail(f"{what} {name} is over the {max_bytes:,}-byte limit", field)
    return decode(data, f"{what} {name}", field)


def decode(data: bytes, name: str, field: str = "") -> str:
    """`data` as strict UTF-8 (a leading BOM dropped); a bad byte is named with its line and column."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise _fail(
            f"{name} is not UTF-8: byte 0x{data[exc.start]:02x} at line {line}, column {column}. "
            "To fix: save the file as UTF-8",
            field,
        ) from None


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """A safe loader that refuses a key given twice in one mapping (YAML 1.2, section 3.2.1.1) and
    reads a date-like plain scalar (``as_of: 2026-11-01``) as the text written, not a date: YAML
    1.2's core schema has no timestamp type (section 10.3.2), JSON has none either (and carries
    stack config to a Pulumi program), and the fields that hold dates parse them from text."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key: SafeConstructor reports it below
                    continue
                if duplicate:
                    mark = key_node.start_mark
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {quote(key)} (line {mark.line + 1}): the later value would silently win",
                        mark,
                    )
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)  # PyYAML is untyped here
        return mapping


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> int:
    """YAML's int, or a YAML error with its place where int() refuses a number past
    sys.get_int_max_str_digits() (4,300 digits by default) with a bare ValueError."""
    try:
        value: int = loader.construct_yaml_int(node)  # PyYAML is untyped here
        return value
    except ValueError:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"a number of more than {sys.get_int_max_str_digits():,} digits. To fix: give a realistic value",
            node.start_mark,
        ) from None


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _check_events(text: str, name: str, field: str) -> None:
    """Bound depth, aliases and expanded size in one streaming pass over the parser's events.

    Each open collection accumulates the expanded size of its children; an
    anchored node's size is recorded when it closes, and an alias adds the
    size of its anchor, so a bomb is measured without ever being built.
    """
    sizes: list[int] = []  # expanded size of each open collection
    anchors_open: list[str | None] = []
    anchor_size: dict[str, int] = {}
    aliases = total = 0  # total: nodes of the document so far, aliases expanded
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if len(sizes) >= MAX_DEPTH:
                raise _fail(
                    f"{name}: nesting deeper than {MAX_DEPTH} levels (line {_line(event)}). "
                    "To fix: flatten the document",
                    field,
                )
            sizes.append(1)
            anchors_open.append(event.anchor)
            total += 1
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            size, anchor = sizes.pop(), anchors_open.pop()
            if anchor is not None:
                anchor_size[anchor] = size
            if sizes:
                sizes[-1] += size
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            if isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise _fail(f"{name}: more than {MAX_ALIASES} aliases. To fix: write the values out", field)
                if event.anchor not in anchor_size:
                    raise _fail(
                        f"{name}: alias *{quote(event.anchor)} refers to an unknown or enclosing anchor "
                        f"(line {_line(event)}). To fix: remove the alias",
                        field,
                    )
                size = anchor_size[event.anchor]
            else:
                size = 1
                if event.anchor is not None:
                    anchor_size[event.anchor] = 1
            total += size
            if sizes:
                sizes[-1] += size
        if total > MAX_NODES:
            raise _fail(
                f"{name}: expands to more than {MAX_NODES:,} values (aliases multiplying a document). "
                "To fix: write the values out",
                field,
            )


def load_yaml(text: str, name: str, field: str = "") -> Any:
    """Parse one YAML document within the limits above (a JSON document is YAML too).

    Args:
        text: the document.
        name: what to call it in messages (e.g. "spec file 'chat.yaml'").
        field: the SpecError's field.

    Raises:
        SpecError: invalid YAML (with line and column), a duplicate key, or a
            limit exceeded; the message quotes at most QUOTE_CHARS of a value.
    """
    try:
        _check_events(text, name, field)
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise _fail(f"{name} is not valid YAML{where}: {problem[:200]}", field) from None
    except RecursionError:  # unreachable within MAX_DEPTH; kept so no input can escape as a bug
        raise _fail(f"{name}: nested too deeply. To fix: flatten the document", field) from None


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {quote(key)}: the later value would silently win")
        out[key] = value
    return out


def _no_constant(token: str) -> NoReturn:
    raise ValueError(f"{token} is not a number JSON allows")


def depth(value: Any) -> int:
    """Nesting depth of plain data (dicts and lists), walked without recursion; 0 for a scalar."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:
                stack += [(c, level + 1) for c in children]
    return deepest


class Misfit(NamedTuple):
    """A value JSON cannot carry exactly (:func:`not_json`): where it is, what it is, and the fix in YAML."""

    place: str
    what: str
    fix: str


def not_json(value: Any, where: str) -> Misfit | None:
    """The first place in `value` (a path below `where`) that JSON would refuse or change, or None:
    a key that is not text (JSON writes it as text), a non-finite number, or a value of another type
    (a date, bytes or a set, from an explicit YAML tag)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return Misfit(where, f"key {k!r}, not text (JSON would make it {str(k)!r})", "quote it")
            found = not_json(v, f"{where}.{k}")
            if found:
                return found
        return None
    if isinstance(value, list):
        return next(filter(None, (not_json(v, f"{where}[{i}]") for i, v in enumerate(value))), None)
    if isinstance(value, float) and not math.isfinite(value):
        return Misfit(where, f"the number {value!r}", "give a finite number")
    if value is None or isinstance(value, (str, bool, int, float)):
        return None
    return Misfit(where, f"a {type(value).__name__} value", "quote it")


def load_json(text: str, name: str, field: str = "") -> Any:
    """Parse JSON strictly: no NaN/Infinity, no duplicate keys, at most MAX_DEPTH levels.

    Raises:
        SpecError: naming `name`, the line, and what is wrong.
    """
    if len(text) > MAX_JSON_CONTAINERS:  # a cheap count (C-level scans) before any object is built
        containers = text.count("{") + text.count("[")
        if containers > MAX_JSON_CONTAINERS or containers + text.count(",") > MAX_JSON_VALUES:
            raise _fail(
                f"{name}: more than {MAX_JSON_VALUES:,} values or {MAX_JSON_CONTAINERS:,} objects and lists. "
                "To fix: split it, or write it without per-item detail",
                field,
            )
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise _fail(f"{name} is not valid JSON ({exc.msg}, line {exc.lineno}, column {exc.colno})", field) from None
    except ValueError as exc:
        raise _fail(f"{name} is not valid JSON: {exc}", field) from None
    except RecursionError:
        raise _fail(f"{name}: nesting deeper than {MAX_DEPTH} levels. To fix: flatten the document", field) from None
    if depth(doc) > MAX_DEPTH:
        raise _fail(f"{name}: nesting deeper than {MAX_DEPTH} levels. To fix: flatten the document", field)
    return doc


def read_yaml(path: str | os.PathLike[str], what: str = "spec file", field: str = "") -> Any:
    """:func:`read_text` then :func:`load_yaml`, both naming `what` and the path."""
    text = read_text(path, what, field)
    return load_yaml(text, f"{what} {quote(str(path))}", field)


def read_json(path: str | os.PathLike[str], what: str, field: str = "", max_bytes: int = MAX_INPUT_BYTES) -> Any:
    """:func:`read_text` (capped at `max_bytes`) then :func:`load_json`, both naming `what` and the path."""
    text = read_text(path, what, field, max_bytes)
    return load_json(text, f"{what} {quote(str(path))}", field)
