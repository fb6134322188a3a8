"""The workload spec: strict, defaulted, and every bad input named with its fix."""

from __future__ import annotations

import jsonschema
import pytest
import yaml

import gpusizer
from gpusizer import spec as spec_mod
from tests.conftest import EXAMPLE_SPECS

BASE = {"name": "chat", "model": {"name": "llama-3.1-8b"}}


def test_defaults_are_documented_values():
    s = gpusizer.load_spec(BASE)
    assert (s.task, s.precision, s.growth) == ("inference", "bf16", 1.0)
    assert (s.serving.context_length, s.serving.batch_size) == (4096, 1)
    assert s.placement.purchase == "on-demand"
    assert s.sizing.memory_headroom == 0.90  # vLLM's default gpu_memory_utilization


@pytest.mark.parametrize(
    "patch, field, words",
    [
        # unknown top-level field: named, with the allowed ones listed
        ({"colour": "red"}, "colour", "allowed here"),
        # unknown nested field
        ({"inference": {"batchsize": 4}}, "inference.batchsize", "batch_size"),
        # wrong type
        ({"inference": {"batch_size": "many"}}, "inference.batch_size", "whole number"),
        # impossible value
        ({"inference": {"batch_size": 0}}, "inference.batch_size", "larger value"),
        # enum
        ({"precision": "fp6"}, "precision", "'int4'"),
        # resource-name rules
        ({"name": "Chat_Bot"}, "name", "lower-case"),
        # sections must match the task
        ({"task": "training", "inference": {"batch_size": 2}}, "(top level)", "training:"),
        ({"finetune_method": "lora"}, "(top level)", "finetune"),
        # int4 weights cannot be trained
        ({"task": "training", "precision": "int4"}, "(top level)", "qlora"),
        # deadline without tokens
        ({"task": "training", "training": {"deadline_hours": 3}}, "training", "tokens"),
        # negative growth
        ({"growth": -1}, "growth", "larger value"),
        # providers from the one registry
        ({"placement": {"providers": ["azure"]}}, "placement.providers.0", "'aws'"),
    ],
)
def test_bad_input_names_field_and_fix(patch, field, words):
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.load_spec({**BASE, **patch})
    assert e.value.field == field
    assert field in str(e.value)
    assert words in str(e.value)
    assert "To fix: " in str(e.value)


def test_unknown_model_is_a_spec_error_with_suggestions():
    with pytest.raises(gpusizer.UnknownModelError) as e:
        gpusizer.load_spec({**BASE, "model": {"name": "llama-3.1-8x"}})
    assert e.value.field == "model.name"
    assert "llama-3.1-8b" in str(e.value)


def test_model_needs_exactly_one_way():
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.load_spec({**BASE, "model": {"name": "llama-3.1-8b", "params_b": 8}})
    assert "exactly one" in str(e.value)


def test_context_beyond_model_is_rejected():
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.load_spec({**BASE, "inference": {"context_length": 1_000_000}})
    assert e.value.field == "inference.context_length"
    assert "131072" in str(e.value)


def test_explicit_architecture_is_sized_from_its_own_figures():
    arch = {"params_b": 7.0, "layers": 32, "hidden_size": 4096, "attention_heads": 32, "kv_heads": 8}
    req = gpusizer.document(gpusizer.estimate({**BASE, "model": arch}))["requirements"]
    # Weights: 7.0e9 parameters x 2 bytes (bf16) = 14.0e9 B = 13.04 GiB.
    assert req["memory_gib"]["weights"] == pytest.approx(13.04, abs=0.01)
    # KV cache: 2 (K and V) x 32 layers x 8 KV heads x 128 (4096 / 32) x 2 bytes = 128 KiB per token;
    # at the default 4,096-token context that is 0.5 GiB per sequence.
    assert req["kv_cache_gib_per_sequence"] == pytest.approx(0.5, abs=0.001)


def test_yaml_errors_name_the_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\nmodel: [unclosed\n")
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.load_spec(p)
    assert "line" in str(e.value)


def test_spec_must_be_a_mapping(tmp_path):
    p = tmp_path / "list.yaml"
    p.write_text("- a\n- b\n")
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.load_spec(p)
    assert "mapping" in str(e.value)


def test_bad_input_can_be_caught_as_a_value_error():
    # docs/contract.md section 5: every error raised on purpose is a ValueError.
    with pytest.raises(ValueError) as e:
        gpusizer.load_spec({**BASE, "precision": "fp6"})
    assert isinstance(e.value, gpusizer.SizingError)


EXAMPLES = EXAMPLE_SPECS


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_schema_editors_use_accepts_every_example_spec(path):
    jsonschema.validate(yaml.safe_load(path.read_text()), spec_mod.json_schema())


@pytest.mark.parametrize(
    "patch",
    [
        {"colour": "red"},  # unknown top-level field
        {"inference": {"batchsize": 4}},  # misspelled nested field
        {"placement": {"providers": ["azure"]}},  # unregistered provider
        {"precision": "fp6"},  # not a precision
        {"inference": {"batch_size": -4}},  # below a bound (minimum, not an unknown "ge" key)
        {"growth": 5000},  # above a bound (fields.MAX_GROWTH)
        {"inference": {"targets": {"ttft_ms": 0}}},  # an exclusive lower bound
    ],
)
def test_the_schema_rejects_what_the_spec_rejects(patch):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**BASE, **patch}, spec_mod.json_schema())
    with pytest.raises(gpusizer.SpecError):
        gpusizer.load_spec({**BASE, **patch})


def test_an_empty_document_is_named_as_one():
    with pytest.raises(gpusizer.SpecError, match="got an empty document"):
        gpusizer.load_spec(None)


@pytest.mark.parametrize("field", ["regions", "providers", "gpus"])
def test_an_empty_placement_list_is_refused_naming_the_field(field):
    # An empty list would allow nothing: every offer rejected "by placement", exit 3 with nothing to act on.
    with pytest.raises(gpusizer.SpecError) as err:
        gpusizer.load_spec({**BASE, "placement": {field: []}})
    assert f"placement.{field}" in str(err.value) and "leave the field out" in str(err.value)
