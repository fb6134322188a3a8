"""The examples in other languages use the package as its schema says, and what they declare constructs.

examples/yaml/Pulumi.yaml is checked as Pulumi YAML: runtime and package, every
resource type a token of the schema, every property a schema property of the
right type (enum values among the enum's, plain properties given no
`${...}` expression), the function and its arguments, and every output
expression naming an output the resource or function has. Then its
GpuWorkload is constructed and its plan invoked through the plugin.
examples/typescript/index.ts cannot be compiled here (that needs the SDK that
`pulumi package add` generates); the object literals it passes are read and
checked against the same schema.
"""

from __future__ import annotations

import re

import grpc
import pytest
import yaml

from tests.conftest import REPO
from tests.provider.conftest import plain

YAML_PROGRAM = REPO / "examples/yaml/Pulumi.yaml"
TS_PROGRAM = REPO / "examples/typescript/index.ts"
EXPRESSION = re.compile(r"\$\{([A-Za-z0-9_-]+)\.([A-Za-z0-9_]+)\}")


def check_value(schema: dict, prop: dict, value, path: str, errors: list[str]) -> None:
    if isinstance(value, str) and "${" in value:
        if prop.get("plain"):
            errors.append(f"{path}: a plain property (known when the program runs) given an expression")
        return
    ref = prop.get("$ref")
    if ref:
        t = schema["types"][ref.removeprefix("#/types/")]
        if "enum" in t:
            allowed = [e["value"] for e in t["enum"]]
            if value not in allowed:
                errors.append(f"{path}: {value!r} is not one of {allowed}")
            return
        check_object(schema, t["properties"], t.get("required", []), value, path, errors)
        return
    kind = prop["type"]
    ok = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }[kind]
    if not ok:
        errors.append(f"{path}: {value!r} is not of type {kind}")
    elif kind == "array":
        for i, v in enumerate(value):
            check_value(schema, prop["items"], v, f"{path}[{i}]", errors)
    elif kind == "object":
        for k, v in value.items():
            check_value(schema, prop.get("additionalProperties", {"type": "string"}), v, f"{path}.{k}", errors)


def check_object(schema: dict, props: dict, required: list, value, path: str, errors: list[str]) -> None:
    if not isinstance(value, dict):
        errors.append(f"{path}: {value!r} is not an object")
        return
    errors += [f"{path}.{k}: required, missing" for k in required if k not in value]
    for k, v in value.items():
        if k not in props:
            errors.append(f"{path}.{k}: no such property (have: {', '.join(sorted(props))})")
        else:
            check_value(schema, props[k], v, f"{path}.{k}", errors)


def check_program(schema: dict, program: dict) -> list[str]:
    """Where a Pulumi YAML program disagrees with the gpusizer schema."""
    errors: list[str] = []
    if program.get("runtime") != "yaml":
        errors.append("runtime: not yaml")
    package = (YAML_PROGRAM.parent / str(program.get("packages", {}).get(schema["name"]))).resolve()
    if not (package / "PulumiPlugin.yaml").exists():
        errors.append(f"packages.{schema['name']}: {package} holds no PulumiPlugin.yaml")
    outputs_of = {}
    for name, res in (program.get("resources") or {}).items():
        typ = res.get("type", "")
        if not typ.startswith(f"{schema['name']}:"):
            continue
        if typ not in schema["resources"]:
            errors.append(f"resources.{name}.type: {typ} is not in the schema")
            continue
        spec = schema["resources"][typ]
        check_object(
            schema,
            spec["inputProperties"],
            spec.get("requiredInputs", []),
            res.get("properties", {}),
            f"resources.{name}.properties",
            errors,
        )
        outputs_of[name] = spec["properties"]
    for name, var in (program.get("variables") or {}).items():
        call = var.get("fn::invoke") if isinstance(var, dict) else None
        if not call or not str(call.get("function", "")).startswith(f"{schema['name']}:"):
            continue
        fn = schema["functions"].get(call["function"])
        if fn is None:
            errors.append(f"variables.{name}: function {call['function']} is not in the schema")
            continue
        check_object(
            schema,
            fn["inputs"]["properties"],
            fn["inputs"].get("required", []),
            call.get("arguments", {}),
            f"variables.{name}.arguments",
            errors,
        )
        outputs_of[name] = fn["outputs"]["properties"]
    for key, expr in (program.get("outputs") or {}).items():
        for name, prop in EXPRESSION.findall(str(expr)):
            if name in outputs_of and prop not in outputs_of[name]:
                errors.append(f"outputs.{key}: {name} has no output {prop}")
    return errors


def _program() -> dict:
    return yaml.safe_load(YAML_PROGRAM.read_text())


def test_the_yaml_example_is_a_valid_program_for_the_schema(package_schema):
    program = _program()
    assert check_program(package_schema, program) == []
    types = {r["type"] for r in program["resources"].values()}
    assert "gpusizer:index:GpuWorkload" in types
    assert any(
        "fn::invoke" in v and v["fn::invoke"]["function"] == "gpusizer:index:plan"
        for v in program["variables"].values()
    )


@pytest.mark.parametrize(
    "edit, found",
    [
        (lambda p: p["resources"]["chat"]["properties"]["spec"]["inference"].update(batch_size=4), "no such property"),
        (
            lambda p: p["resources"]["chat"]["properties"]["spec"]["inference"].update(batchSize="4"),
            "not of type integer",
        ),
        (lambda p: p["resources"]["chat"]["properties"]["spec"]["placement"].update(purchase="cheap"), "is not one of"),
        (lambda p: p["resources"]["chat"]["properties"]["spec"].update(name="${other.name}"), "plain property"),
        (lambda p: p["resources"]["chat"].update(type="gpusizer:index:GpuWorkloads"), "not in the schema"),
        (lambda p: p["outputs"].update(x="${chat.instance_type}"), "has no output"),
        (lambda p: p["resources"]["chat"]["properties"].pop("spec"), "required, missing"),
    ],
    ids=["unknown", "type", "enum", "plain", "token", "output", "required"],
)
def test_the_program_check_catches_what_pulumi_would_refuse(package_schema, edit, found):
    program = _program()
    edit(program)
    errors = check_program(package_schema, program)
    assert any(found in e for e in errors), errors


@pytest.mark.slow  # the component in the plugin's process (~2 s)
def test_the_yaml_example_constructs_and_plans(plugin):
    program = _program()
    monitor, response = plugin.construct(
        "chat", program["resources"]["chat"]["properties"], config={"aws:region": "us-east-1"}
    )
    assert not isinstance(response, grpc.RpcError), response.details()
    state = plain(response.state)
    assert state["provider"] == "aws" and state["asgName"]  # capacity failover: an Auto Scaling group
    assert any(r.typ == "aws:autoscaling/group:Group" for r in monitor.registered)
    plan = plain(getattr(plugin.invoke(program["variables"]["bigPlan"]["fn::invoke"]["arguments"]), "return"))
    assert plan["feasible"] is True and plan["provider"] == "aws"


def _literal(source: str, start: str):
    """The object literal that follows `start` in TypeScript source, read as YAML flow style."""
    at = source.index(start) + len(start)
    at = source.index("{", at)
    depth, end = 0, at
    for end, ch in enumerate(source[at:], at):  # noqa: B007 - `end` is read after the loop
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth == 0:
            break
    text = re.sub(r"//[^\n]*", "", source[at : end + 1])
    text = re.sub(r",(\s*[}\]])", r"\1", text)  # trailing commas
    return yaml.safe_load(text)


def test_the_typescript_example_passes_schema_properties(package_schema):
    source = TS_PROGRAM.read_text()
    assert 'import * as gpusizer from "@pulumi/gpusizer";' in source
    component = package_schema["resources"]["gpusizer:index:GpuWorkload"]
    errors: list[str] = []
    args = _literal(source, 'new gpusizer.GpuWorkload("ts-chat",')
    check_object(package_schema, component["inputProperties"], component["requiredInputs"], args, "ts-chat", errors)
    spec = _literal(source, "const bigSpec =")
    workload_spec = package_schema["types"]["gpusizer:index:WorkloadSpec"]
    check_object(package_schema, workload_spec["properties"], workload_spec["required"], spec, "bigSpec", errors)
    assert errors == []
    plan = package_schema["functions"]["gpusizer:index:plan"]["outputs"]["properties"]
    used = set(re.findall(r"\bplan\.(\w+)", source))
    assert used and used <= set(plan)
    outputs = component["properties"]
    assert set(re.findall(r"\bchat\.(\w+)", source)) <= set(outputs)
