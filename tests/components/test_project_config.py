"""Pulumi.yaml, __main__.py's docstring and what __main__.py reads name the same config keys and defaults.

Pulumi.yaml declares the scalar settings with their defaults and lists the other
keys in a comment; __main__.py's docstring lists every key. Each key read is
found in __main__.py's source (every `config.<get...|require...>("key")`), so a
key added to the program and to neither file, or left in a file after the
program stops reading it, fails here.
"""

from __future__ import annotations

import ast
import dataclasses
import re

import pytest
import yaml

from gpusizer import components
from tests.components.conftest import REPO, run_stack

PROGRAM = REPO / "__main__.py"
PROJECT = REPO / "Pulumi.yaml"
# Pulumi's typed project config: the types a declared key may have.
PROJECT_TYPES = {"string", "integer", "boolean", "array"}
# A line of a key list (Pulumi.yaml's comment, __main__.py's docstring): the key, then what it holds.
_KEY_LINE = re.compile(r"^(?:#)?\s+(?P<key>[a-z]\w*:[a-zA-Z]\w*)\s")


def _reads() -> set[str]:
    """ "ns:key" for every config read in __main__.py; fails on a read this test cannot name."""
    tree = ast.parse(PROGRAM.read_text())
    bags: dict[str, str] = {}  # variable -> namespace, from `name = pulumi.Config("ns")`
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _namespace(node.value):
            for target in node.targets:
                assert isinstance(target, ast.Name)
                assert bags.setdefault(target.id, _namespace(node.value)) == _namespace(node.value)
    # A function taking the bag as a parameter (`config: pulumi.Config`) reads through the same name.
    params = {
        a.arg
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef)
        for a in n.args.args
        if a.annotation is not None and ast.unparse(a.annotation) == "pulumi.Config"
    }
    assert params <= set(bags), f"config parameters {params - set(bags)} have no bag of the same name"
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if ast.unparse(node.func) == "pulumi.runtime.get_config":  # a raw read: "ns:key"
            (arg,) = node.args
            assert isinstance(arg, ast.Constant), f"__main__.py line {node.lineno}: a key that is not a literal"
            found.add(arg.value)
            continue
        if not (isinstance(node.func, ast.Attribute) and node.func.attr.startswith(("get", "require"))):
            continue
        receiver = node.func.value
        namespace = _namespace(receiver) or (bags.get(receiver.id) if isinstance(receiver, ast.Name) else None)
        if namespace is None:  # not a config bag (a dict's get, ...)
            continue
        (arg, *_) = node.args
        assert isinstance(arg, ast.Constant) and isinstance(arg.value, str), (
            f"__main__.py line {node.lineno}: a config key that is not a literal cannot be checked"
        )
        found.add(f"{namespace}:{arg.value}")
    return found


def _namespace(node: ast.AST) -> str | None:
    """ "ns" for `pulumi.Config("ns")` (the project's name for `pulumi.Config()`), else None."""
    if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "pulumi.Config"):
        return None
    if not node.args and not node.keywords:
        return yaml.safe_load(PROJECT.read_text())["name"]
    (arg,) = node.args or [k.value for k in node.keywords]
    assert isinstance(arg, ast.Constant), f"__main__.py line {node.lineno}: a config namespace that is not a literal"
    return arg.value


def _project() -> tuple[dict, set[str]]:
    """(declared keys -> their schema, the keys listed in the comment above `config:`)."""
    text = PROJECT.read_text()
    declared = yaml.safe_load(text).get("config") or {}
    comment = text[: text.index("\nconfig:")]
    listed = {m["key"] for line in comment.splitlines() if (m := _KEY_LINE.match(line))}
    return declared, listed


def _docstring() -> dict[str, str]:
    """Key -> its text (continuation lines included) in __main__.py's docstring."""
    entries: dict[str, str] = {}
    key = None
    for line in ast.get_docstring(ast.parse(PROGRAM.read_text())).splitlines():
        m = _KEY_LINE.match(line)
        if m:
            key = m["key"]
            entries[key] = line
        elif key and line.startswith(" " * 10) and line.strip():
            entries[key] += " " + line.strip()
        else:
            key = None
    return entries


def test_the_program_reads_the_keys_this_test_expects_to_find():
    # The finder itself: it sees reads through `config`, through pulumi.Config("aws") and in helpers.
    assert {
        "gpusizer:workloads",
        "gpusizer:kubeconfigs",
        "gpusizer:hfToken",
        "gpusizer:awsEgress",
        "gpusizer:gcpCloudNat",
        "aws:region",
    } <= _reads()


def test_every_key_read_is_declared_or_listed_in_pulumi_yaml_and_nothing_else():
    declared, listed = _project()
    assert not set(declared) & listed, "a key both declared and listed"
    assert set(declared) | listed == _reads()


def test_the_programs_docstring_lists_every_key_read():
    assert set(_docstring()) == _reads()


def test_declared_keys_are_typed_and_have_defaults():
    declared, _ = _project()
    for key, schema in declared.items():
        assert schema.get("type") in PROJECT_TYPES, key
        assert "default" in schema, f"{key}: without a default it becomes required on every stack"
        assert schema.get("description"), key


def test_the_docstring_states_the_declared_defaults():
    declared, _ = _project()
    docs = _docstring()
    for key, schema in declared.items():
        default = schema["default"]
        shown = str(default).lower() if isinstance(default, bool) else str(default)
        m = re.search(r"\(default (?P<value>[^)]*)\)", docs[key])
        assert m and m["value"].strip('"') == shown, f"{key}: docstring {docs[key]!r}, Pulumi.yaml {shown}"


@pytest.mark.slow  # runs the whole program twice (~1 s)
def test_declared_defaults_are_what_the_program_uses_without_them(monkeypatch):
    # `pulumi up` passes Pulumi.yaml's defaults; `gpusizer preview` and a stack run without the CLI
    # do not: the program must then behave the same.
    declared, _ = _project()
    seen = []
    real = components.GpuWorkload
    monkeypatch.setattr(
        components, "GpuWorkload", lambda name, spec, args: seen.append(args) or real(name, spec, args=args)
    )
    stack = REPO / "stacks/Pulumi.gcp.yaml"
    assert not set(declared) & set(yaml.safe_load(stack.read_text())["config"])
    run_stack(stack)
    unset = [dataclasses.replace(a, decision=None) for a in seen]
    seen.clear()
    given = {
        k: str(s["default"]).lower() if isinstance(s["default"], bool) else s["default"] for k, s in declared.items()
    }
    run_stack(stack, given)
    assert unset and [dataclasses.replace(a, decision=None) for a in seen] == unset
