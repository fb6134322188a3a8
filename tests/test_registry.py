"""The model registry: reference figures, the spellings users type, and offline HF configs."""

from __future__ import annotations

import re

import pytest
import yaml

import gpusizer
from gpusizer.facts import registry
from tests.conftest import DATA, REPO

REFERENCE = [m for m in yaml.safe_load((DATA / "reference/models.yaml").read_text())["models"] if "params_derived" in m]
DATA = REPO / "tests/data"


@pytest.mark.parametrize("ref", REFERENCE, ids=lambda m: m["name"])
def test_reference_models_resolve_with_their_parameter_counts(ref):
    m = registry.lookup(ref["name"])
    assert m.params == pytest.approx(ref["params_derived"], rel=0.001)
    if "active_params_derived" in ref:
        assert m.active_params == pytest.approx(ref["active_params_derived"], rel=0.001)


@pytest.mark.parametrize(
    "spelling",
    [
        "llama-3.1-8b",
        "Llama-3.1-8B",
        "LLAMA3.1-8B",
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Meta-Llama-3.1-8B-Instruct",
        "Meta-Llama-3.1-8B",
        "llama_3.1_8b",
    ],
)
def test_spellings_resolve_to_one_key(spelling):
    assert registry.lookup(spelling).key == "llama-3.1-8b"


@pytest.mark.parametrize(
    "name, published_b",
    [
        ("qwen3-30b-a3b", 30.5),  # Qwen3 model card: 30.5B total, 3.3B active
        ("qwen3-235b-a22b", 235.0),
        ("mixtral-8x22b", 141.0),  # Mistral: 141B total, 39B active
        ("llama-3.2-1b", 1.24),  # HF safetensors: 1.24B
        ("llama-3.2-3b", 3.21),
        ("phi-4", 14.7),
        ("mistral-nemo-12b", 12.2),
    ],
)
def test_derived_parameter_counts_match_published(name, published_b):
    assert registry.lookup(name).params / 1e9 == pytest.approx(published_b, rel=0.02)


def test_unknown_model_suggests_the_nearest():
    with pytest.raises(gpusizer.UnknownModelError) as e:
        registry.lookup("llama-3.1-7b")
    assert e.value.field == "model.name"
    assert "llama-3.1-8b" in str(e.value) or "llama-3.1-70b" in str(e.value)
    assert "hf_config" in str(e.value)


@pytest.mark.parametrize(
    "config, key, published_b, active_b",
    [
        ("hf_config_llama31_8b.json", "llama-3.1-8b", 8.03, 8.03),
        ("hf_config_mixtral.json", "mixtral-8x7b", 46.7, 12.9),
        ("hf_config_deepseek_v3.json", "deepseek-v3", 671.0, 37.5),
    ],
)
def test_hf_config_is_read_offline(config, key, published_b, active_b):
    m = registry.from_hf_config(DATA / config)
    assert m.params / 1e9 == pytest.approx(published_b, rel=0.01)
    assert m.active_params / 1e9 == pytest.approx(active_b, rel=0.02)
    assert m.is_mla == (key == "deepseek-v3")


def test_hf_config_in_a_spec_is_relative_to_the_spec(tmp_path):
    (tmp_path / "cfg.json").write_text((DATA / "hf_config_llama31_8b.json").read_text())
    (tmp_path / "spec.yaml").write_text("name: x\nmodel: {hf_config: cfg.json}\n")
    d = gpusizer.estimate(tmp_path / "spec.yaml")
    assert d.workload.model.params == pytest.approx(8.03e9, rel=0.01)


@pytest.mark.parametrize(
    "content, words", [("{not json", "not valid JSON"), ('{"hidden_size": 1}', "num_hidden_layers")]
)
def test_bad_hf_config_names_the_field(tmp_path, content, words):
    p = tmp_path / "config.json"
    p.write_text(content)
    with pytest.raises(gpusizer.SpecError) as e:
        registry.from_hf_config(p)
    assert e.value.field == "model.hf_config"
    assert words in str(e.value)


ENTRIES = yaml.safe_load((REPO / "gpusizer/data/models.yaml").read_text())["models"]


@pytest.mark.parametrize("key", sorted(ENTRIES))
def test_every_entry_cites_a_source_a_clone_can_follow(key):
    source = ENTRIES[key]["source"]
    assert "../" not in source  # nothing outside the repository
    local = [p for p in re.findall(r"\b(data/[\w./-]+\.\w+)", source)]
    assert all((REPO / p).is_file() for p in local), local


# The published total (the entry's `params`) against the count its architecture gives: a typo in
# layers, widths or vocabulary shows up as a mismatch. Multi-head latent attention (DeepSeek) is not
# what count_params models, so those are left to the reference table above.
PUBLISHED = sorted(k for k, e in ENTRIES.items() if "params" in e and e["kind"] == "llm" and "kv_lora_rank" not in e)


@pytest.mark.parametrize("key", PUBLISHED)
def test_published_parameter_counts_agree_with_the_architecture(key):
    e = ENTRIES[key]
    total, active = registry.entry_params(e)
    assert total == pytest.approx(e["params"], rel=0.005)  # biases, ignored by the count, are < 0.1%
    assert active == pytest.approx(e["active_params"], rel=0.005)
