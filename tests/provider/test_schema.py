"""The schema the provider serves over gRPC: valid for Pulumi, complete, and the same as what Construct takes."""

from __future__ import annotations

import json
import pathlib
import typing

import jsonschema
import pytest
from google.protobuf import empty_pb2

import gpusizer
from gpusizer import spec as spec_mod
from gpusizer.components import onprem, workload
from provider import outputs, schema
from provider.names import camel_case

METASCHEMA = json.loads((pathlib.Path(__file__).parent / "metaschema" / "pulumi.json").read_text())
TOKEN = "gpusizer:index:GpuWorkload"


def _validator():
    return jsonschema.Draft202012Validator(METASCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


@pytest.mark.slow  # starts the plugin
def test_the_plugin_prints_a_port_and_serves_its_version(plugin):
    assert plugin.port.isdigit()
    info = plugin.stub.GetPluginInfo(empty_pb2.Empty(), timeout=30)
    assert info.version == gpusizer_version() != ""


def gpusizer_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("gpusizer")


@pytest.mark.slow  # starts the plugin
def test_the_schema_served_over_grpc_is_a_valid_pulumi_package_schema(served_schema):
    errors = sorted(_validator().iter_errors(served_schema), key=lambda e: list(e.path))
    assert errors == [], [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    assert "gpusizer:index:GpuWorkload" in served_schema["resources"]


def test_the_schema_is_a_valid_pulumi_package_schema(package_schema):
    errors = sorted(_validator().iter_errors(package_schema), key=lambda e: list(e.path))
    assert errors == [], [f"{list(e.path)}: {e.message}" for e in errors[:5]]


@pytest.mark.parametrize("breakage", ["bad token", "bad property type", "enum without values"])
def test_the_metaschema_catches_a_broken_schema(package_schema, breakage):
    broken = json.loads(json.dumps(package_schema))
    if breakage == "bad token":
        broken["resources"]["GpuWorkload"] = broken["resources"].pop(TOKEN)
    elif breakage == "bad property type":
        broken["resources"][TOKEN]["properties"]["gpuCount"]["type"] = "int"
    else:
        del broken["types"]["gpusizer:index:WorkloadSpecTask"]["enum"]
    assert list(_validator().iter_errors(broken))


def test_the_component_token_inputs_and_outputs(package_schema):
    resource = package_schema["resources"][TOKEN]
    assert resource["isComponent"] is True
    assert resource["requiredInputs"] == ["spec"]
    inputs = resource["inputProperties"]
    assert inputs["spec"] == {**inputs["spec"], "$ref": "#/types/gpusizer:index:WorkloadSpec", "plain": True}
    assert set(inputs) == {"spec", "pools", "catalog", "stack", "deploy", "kubeconfigs", "hfToken"}
    assert inputs["kubeconfigs"]["secret"] and inputs["hfToken"]["secret"]
    assert not inputs["kubeconfigs"].get("plain") and not inputs["hfToken"].get("plain")
    props = resource["properties"]
    expected = {
        "provider": "string",
        "region": "string",
        "instanceType": "string",
        "gpu": "string",
        "gpuCount": "integer",
        "replicas": "integer",
        "hourlyUsd": "number",
        "monthlyUsd": "number",
        "endpoint": "string",
        "decisionJson": "string",
    }
    assert {k: props[k]["type"] for k in expected} == expected
    assert set(resource["required"]) >= set(expected) - {"endpoint"} and "endpoint" not in resource["required"]


def _walk(node, path=()):
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _walk(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, (*path, i))


def test_no_property_is_untyped_and_every_reference_resolves(package_schema):
    for path, node in _walk(package_schema):
        ref = node.get("$ref")
        if isinstance(ref, str):
            assert not ref.startswith("pulumi.json#/Any"), path
            assert ref.removeprefix("#/types/") in package_schema["types"], (path, ref)
    for name, t in package_schema["types"].items():
        for key, prop in t.get("properties", {}).items():
            # A union (Pulumi's oneOf) is typed when each of its members is.
            for member in prop.get("oneOf", [prop]):
                assert "type" in member or "$ref" in member, (name, key)
                if member.get("type") == "object":
                    assert "additionalProperties" in member, (name, key)  # a map of a known type, not any object


def test_a_union_field_is_a_pulumi_union_and_takes_each_of_its_forms(package_schema):
    # A field of two forms (as the speed branch's output_tokens was: a number, or mean and max) is Pulumi's union
    # type, each member typed; a value is mapped back by its wire shape. A model of the test's own, so the check
    # holds whichever spec fields are unions now.
    import pydantic

    class Length(pydantic.BaseModel):
        """Mean and max."""

        mean: int
        max: int | None = None

    class Section(pydantic.BaseModel):
        """A section with a two-form field."""

        tokens: int | Length | None = pydantic.Field(None, description="A number, or mean and max.")

    types = schema.Types()
    section = types.model(Section)
    prop = types.types["Section"]["properties"]["tokens"]
    assert prop["oneOf"] == [{"type": "integer"}, {"$ref": schema.ref("Length")}]
    broken = json.loads(json.dumps(package_schema))
    broken["types"].update({f"gpusizer:index:{k}": v for k, v in types.types.items()})
    errors = list(_validator().iter_errors(broken))
    assert errors == [], [e.message for e in errors[:3]]
    assert types.to_python(section, {"tokens": 256.0}, "s") == {"tokens": 256}
    assert types.to_python(section, {"tokens": {"mean": 256.0, "max": 1024.0}}, "s") == {
        "tokens": {"mean": 256, "max": 1024}
    }
    with pytest.raises(schema.PropertyError, match=r"s\.tokens\.p50"):
        types.to_python(section, {"tokens": {"p50": 256.0}}, "s")

    class Ambiguous(pydantic.BaseModel):
        """Two members a value cannot be told apart in."""

        size: int | float | None = None

    with pytest.raises(schema.UntypedField, match="Ambiguous.size"):
        schema.Types().model(Ambiguous)


def test_every_component_input_and_output_is_described(package_schema):
    resource = package_schema["resources"][TOKEN]
    for group in ("inputProperties", "properties"):
        assert all(p.get("description") for p in resource[group].values()), group
    assert all(t.get("description") for t in package_schema["types"].values())


def _models(model) -> dict[str, type]:
    """Every pydantic model reachable from `model`, by class name."""
    import pydantic

    found = {model.__name__: model}
    for f in model.model_fields.values():
        for arg in [f.annotation, *typing.get_args(f.annotation)]:
            for inner in [arg, *typing.get_args(arg)]:
                if isinstance(inner, type) and issubclass(inner, pydantic.BaseModel) and inner.__name__ not in found:
                    found.update(_models(inner))
    return found


@pytest.mark.parametrize("model", [spec_mod.WorkloadSpec, gpusizer.Pool], ids=lambda m: m.__name__)
def test_every_field_of_the_spec_and_pool_models_is_a_schema_property(package_schema, model):
    for name, cls in _models(model).items():
        t = package_schema["types"][f"gpusizer:index:{name}"]
        assert set(t["properties"]) == {camel_case(f) for f in cls.model_fields}, name
        required = {camel_case(f) for f, info in cls.model_fields.items() if info.is_required()}
        assert set(t["required"]) == required, name


def _literal_values(annotation) -> list:
    for arg in [annotation, *typing.get_args(annotation)]:
        if typing.get_origin(arg) is typing.Literal:
            return list(typing.get_args(arg))
        inner = _literal_values(arg) if typing.get_args(arg) and arg is not annotation else []
        if inner:
            return inner
    return []


def test_every_literal_choice_of_the_spec_is_an_enum_with_the_same_values(package_schema):
    types = package_schema["types"]
    seen = 0
    for name, cls in _models(spec_mod.WorkloadSpec).items():
        for field, info in cls.model_fields.items():
            values = _literal_values(info.annotation)
            if not values:
                continue
            prop = types[f"gpusizer:index:{name}"]["properties"][camel_case(field)]
            ref = (prop.get("items") or prop)["$ref"]
            enum = types[ref.removeprefix("#/types/")]
            assert [e["value"] for e in enum["enum"]] == values, (name, field)
            seen += 1
    assert seen >= 10  # task, precision, purchase, providers, objective, optimizer, sharding, ...


def test_placement_providers_are_the_provider_registry(package_schema):
    from gpusizer.base import providers

    enum = package_schema["types"]["gpusizer:index:PlacementProviders"]["enum"]
    assert [e["value"] for e in enum] == list(providers.NAMES)


def test_stack_settings_are_gpuworkloadargs_less_what_has_its_own_input(package_schema):
    import dataclasses

    fields = {f.name for f in dataclasses.fields(workload.GpuWorkloadArgs)}
    stack = package_schema["types"]["gpusizer:index:StackSettings"]["properties"]
    assert set(stack) == {camel_case(f) for f in fields - set(schema.NOT_SETTINGS)}
    assert {camel_case(f) for f in schema.SECRETS} <= set(package_schema["resources"][TOKEN]["inputProperties"])
    # The Python program's stack config keys that take these settings have the same names.
    project = json.dumps(
        json.loads(
            json.dumps(
                __import__("yaml").safe_load((pathlib.Path(workload.__file__).parents[1] / "Pulumi.yaml").read_text())
            )
        )
    )
    for key in ("awsEgress", "awsPrivateCidr", "gcpNetwork", "gcpCloudNat", "gcpSecureBoot"):
        assert key in stack and f"gpusizer:{key}" in project


def test_tolerations_take_the_fields_the_onprem_component_accepts(package_schema):
    toleration = package_schema["types"]["gpusizer:index:Toleration"]["properties"]
    accepted = {k for k in onprem._TOLERATION_FIELDS if "_" not in k}  # Kubernetes' camelCase spellings
    assert set(toleration) == accepted


def test_the_plan_function(package_schema):
    fn = package_schema["functions"]["gpusizer:index:plan"]
    assert fn["inputs"]["required"] == ["spec"]
    assert fn["inputs"]["properties"]["spec"]["$ref"] == "#/types/gpusizer:index:WorkloadSpec"
    assert set(fn["outputs"]["required"]) == {"feasible", "decisionJson"}
    assert {f.name for f in outputs.FIELDS} <= set(fn["outputs"]["properties"])


@pytest.mark.slow  # starts the plugin
def test_the_schema_served_is_the_one_built_here(served_schema, package_schema):
    assert served_schema == package_schema


@pytest.mark.slow  # a subprocess
def test_camel_case_is_the_sdk_rule_in_a_fresh_process():
    # pulumi.provider is not imported in the test process (its google.rpc.Status clashes with googleapis').
    import subprocess
    import sys

    names = ["context_length", "hf_id", "gpus", "aws_private_cidr", "toleration_seconds", "max_hourly_usd"]
    sdk = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pulumi.provider.experimental.util import camel_case;"
            " print(' '.join(camel_case(n) for n in sys.argv[1:]))",
            *names,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert (
        [camel_case(n) for n in names]
        == sdk
        == ["contextLength", "hfId", "gpus", "awsPrivateCidr", "tolerationSeconds", "maxHourlyUsd"]
    )
