"""Models by Hugging Face id, read from a fake local Hugging Face cache (never the network)."""

from __future__ import annotations

import json
import pathlib
import struct

import pytest

import gpusizer
from gpusizer import cli
from gpusizer.facts import registry

REPO = "acme/tiny-llama"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
# A 2-layer Llama-style model: hidden 64, 4 heads (2 KV heads, head_dim 16), FFN 128, vocab 1000, untied.
CONFIG = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "vocab_size": 1000,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": False,
}


def _tensors() -> dict[str, tuple[str, list[int]]]:
    """Every tensor of the model above with its dtype and shape, as a checkpoint stores them."""
    t = {
        "model.embed_tokens.weight": ("BF16", [1000, 64]),
        "lm_head.weight": ("BF16", [1000, 64]),
        "model.norm.weight": ("F32", [64]),
    }
    for i in range(2):
        p = f"model.layers.{i}."
        t.update(
            {
                p + "self_attn.q_proj.weight": ("BF16", [64, 64]),
                p + "self_attn.k_proj.weight": ("BF16", [32, 64]),
                p + "self_attn.v_proj.weight": ("BF16", [32, 64]),
                p + "self_attn.o_proj.weight": ("BF16", [64, 64]),
                p + "mlp.gate_proj.weight": ("BF16", [128, 64]),
                p + "mlp.up_proj.weight": ("BF16", [128, 64]),
                p + "mlp.down_proj.weight": ("BF16", [64, 128]),
                p + "input_layernorm.weight": ("F32", [64]),
                p + "post_attention_layernorm.weight": ("F32", [64]),
            }
        )
    return t


# Hand count: embeddings 2 x 64,000 = 128,000; per layer q 4,096 + k 2,048 + v 2,048 + o 4,096 +
# MLP 3 x 8,192 = 36,864 in BF16, norms 128 in F32; final norm 64 F32.
BF16_PARAMS = 128_000 + 2 * 36_864
F32_PARAMS = 2 * 128 + 64


def _write_safetensors(path: pathlib.Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    """The safetensors format: u64 little-endian header length, JSON header, then the raw bytes."""
    size = {"BF16": 2, "F32": 4}
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        n = size[dtype] * shape[0] * (shape[1] if len(shape) > 1 else 1)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + bytes(offset))


def _fake_cache(root: pathlib.Path, with_weights: bool) -> pathlib.Path:
    repo = root / f"models--{REPO.replace('/', '--')}"
    snap = repo / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    (snap / "config.json").write_text(json.dumps(CONFIG))
    if with_weights:
        tensors = list(_tensors().items())
        shards = {
            "model-00001-of-00002.safetensors": dict(tensors[:8]),
            "model-00002-of-00002.safetensors": dict(tensors[8:]),
        }
        for name, part in shards.items():
            _write_safetensors(snap / name, part)
        index = {"metadata": {"total_size": 0}, "weight_map": {t: f for f, part in shards.items() for t in part}}
        (snap / "model.safetensors.index.json").write_text(json.dumps(index))
    return root


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    def make(with_weights: bool = True):
        root = _fake_cache(tmp_path / "hub", with_weights)
        monkeypatch.setenv("HF_HUB_CACHE", str(root))
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        return root

    return make


SPEC = {"name": "tiny", "inference": {"context_length": 1024}}


def test_hf_id_reads_exact_parameters_from_cached_safetensors_headers(hf_cache):
    hf_cache()
    w = gpusizer.estimate({**SPEC, "model": {"hf_id": REPO}}).workload
    assert w.model.params == BF16_PARAMS + F32_PARAMS
    assert w.model.display_name == REPO
    assert "BF16" in w.model.source and "local cache" in w.model.source


def test_config_count_stands_when_the_weights_are_not_cached(hf_cache):
    hf_cache(with_weights=False)
    m = gpusizer.estimate({**SPEC, "model": {"hf_id": REPO}}).workload.model
    # The architecture count (count_params: embeddings, attention, MLP, norms) matches the tensors above.
    assert m.params == BF16_PARAMS + 2 * 128 + 64
    assert "config.json only" in m.source


def test_an_hf_id_in_model_name_is_read_when_no_registry_entry_matches(hf_cache):
    hf_cache()
    d = gpusizer.plan({**SPEC, "model": {"name": REPO}})
    assert gpusizer.document(d)["model"] == REPO.lower()
    assert d.workload.model.display_name == REPO


def test_offline_without_the_model_in_cache_is_an_input_error(hf_cache, tmp_path, capsys):
    hf_cache()
    path = tmp_path / "spec.yaml"
    path.write_text("name: x\nmodel: {hf_id: acme/not-cached}\n")
    assert cli.main(["estimate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "model.hf_id" in err and "HF_HUB_OFFLINE" in err and "Traceback" not in err


def test_bad_hf_id_is_rejected_at_the_spec():
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.load_spec({"name": "x", "model": {"hf_id": "no-slash"}})
    assert e.value.field == "model.hf_id" and "organisation/name" in str(e.value)


def test_a_config_file_shows_its_own_name(tmp_path):
    cfg = tmp_path / "mistral-nemo.json"
    cfg.write_text(json.dumps(CONFIG))
    m = gpusizer.estimate({**SPEC, "model": {"hf_config": str(cfg)}}).workload.model
    assert m.display_name == "mistral-nemo"


def test_unknown_name_without_a_near_match_lists_the_registry():
    with pytest.raises(gpusizer.SpecError) as e:
        registry.lookup("zzzzzz")
    assert "llama-3.1-8b" in str(e.value) and "gpusizer models" in str(e.value)


def test_models_command_lists_every_registry_entry(capsys):
    assert cli.main(["models", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} == set(registry.load_models())
