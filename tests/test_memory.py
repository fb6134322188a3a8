"""Memory estimates against published architecture figures, and the classic fit questions."""

from __future__ import annotations

import pytest
import yaml

import gpusizer
from gpusizer.estimate import fit, memory, workload
from gpusizer.facts import registry
from tests.conftest import DATA

REFERENCE = yaml.safe_load((DATA / "reference/models.yaml").read_text())["models"]
LLMS = [m for m in REFERENCE if "kv_bytes_per_token_16bit" in m]


def _model(ref_name: str) -> registry.ModelArch:
    return registry.lookup(ref_name)


@pytest.mark.parametrize("ref", LLMS, ids=lambda m: m["name"])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_weights_match_reference_within_1_percent(ref, precision):
    got = memory.weight_bytes(_model(ref["name"]), precision) / 1e9
    assert got == pytest.approx(ref["weights_gb"][precision], rel=0.01)


@pytest.mark.parametrize("ref", LLMS, ids=lambda m: m["name"])
@pytest.mark.parametrize("kv, key", [("bf16", "kv_bytes_per_token_16bit"), ("fp8", "kv_bytes_per_token_fp8")])
def test_kv_cache_per_token_matches_reference_within_1_percent(ref, kv, key):
    m = _model(ref["name"])
    if m.sliding_window and m.local_layers:
        # The reference counts every layer at full context; compare below the window.
        per_token = memory.kv_bytes_per_sequence(m, m.sliding_window, kv) / m.sliding_window
    else:
        per_token = memory.kv_bytes_per_sequence(m, 1, kv)
    assert per_token == pytest.approx(ref[key], rel=0.01)


def test_quantized_weights_keep_embeddings_16_bit_like_published_checkpoints():
    m = _model("llama-3.1-8b")
    # neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8 safetensors: 9.08 GB (HF file listing, 2024-07).
    assert memory.weight_bytes(m, "fp8") / 1e9 == pytest.approx(9.08, rel=0.02)
    # int4 (AWQ, group 128) is about a third of bf16, never below half a byte per parameter.
    int4 = memory.weight_bytes(m, "int4")
    assert 0.5 * m.params < int4 < 0.4 * memory.weight_bytes(m, "bf16") + 0.5e9 * 2


def test_sliding_window_caps_the_cache():
    m = _model("mistral-7b-v0.1")
    assert memory.kv_bytes_per_sequence(m, 32768, "bf16") == memory.kv_bytes_per_sequence(m, 4096, "bf16")


def test_mla_cache_is_latent_sized():
    m = _model("deepseek-v3")
    # 61 layers x (512 + 64) x 2 bytes per token (DeepSeek-V2 paper, section 2.1.4).
    assert memory.kv_bytes_per_sequence(m, 1, "bf16") == 61 * 576 * 2


def _shape_fits(spec: dict, gpu: str, mem_gib: float, count: int = 1, nvlink: bool = False) -> fit.Fit:
    s = gpusizer.load_spec(spec)
    w = workload.resolve(s, registry.lookup(s.model.name))
    return fit.fit(w, fit.Shape(gpu, mem_gib, count, nvlink=nvlink))


L4_GIB = 22.35  # AWS DescribeInstanceTypes: 22888 MiB


def test_7b_fp16_fits_one_l4_at_4k_context():
    f = _shape_fits(
        {"name": "a", "model": {"name": "llama-2-7b"}, "precision": "fp16", "inference": {"context_length": 4096}},
        "L4",
        L4_GIB,
    )
    assert f.ok, f.detail
    assert 14 < f.need_gib < f.usable_gib


def test_13b_fp16_does_not_fit_one_l4():
    f = _shape_fits(
        {"name": "a", "model": {"name": "llama-2-13b"}, "precision": "fp16", "inference": {"context_length": 4096}},
        "L4",
        L4_GIB,
    )
    assert f.code == "memory"
    assert f.need_gib > 24
    assert "GiB usable" in f.detail and "needed" in f.detail


def test_llama_3_1_70b_bf16_needs_two_h100():
    e = gpusizer.estimate({"name": "big", "model": {"name": "llama-3.1-70b"}, "precision": "bf16"})
    h100 = next(r for r in e.per_gpu if r["gpu"] == "H100")
    assert h100["min_count"] == 2
    one = _shape_fits({"name": "big", "model": {"name": "llama-3.1-70b"}}, "H100", 79.65)
    assert one.code == "memory"


def test_training_needs_about_16_bytes_per_parameter_with_adam():
    s = gpusizer.load_spec(
        {"name": "t", "model": {"name": "llama-3.1-8b"}, "task": "training", "training": {"sequence_length": 2048}}
    )
    w = workload.resolve(s, registry.lookup("llama-3.1-8b"))
    states = w.breakdown.weights + w.breakdown.gradients + w.breakdown.optimizer_states
    assert states / w.model.params == pytest.approx(16.0)  # ZeRO paper: 2 + 2 + 12


def test_zero3_divides_all_states():
    s = gpusizer.load_spec({"name": "t", "model": {"name": "llama-3.1-8b"}, "task": "training"})
    w = workload.resolve(s, registry.lookup("llama-3.1-8b"))
    b = w.breakdown
    one = memory.per_gpu_training_bytes(b, 1, "none")
    eight = memory.per_gpu_training_bytes(b, 8, "zero3")
    # Llama 3.1 8B: 8,030,261,248 parameters (HF safetensors) x 16 bytes of weights, gradients and Adam
    # states (ZeRO paper, Rajbhandari et al. 2020, section 3.1) = 128.5e9 B, one eighth each under ZeRO-3;
    # activations are per GPU and not sharded.
    assert one - b.activations == pytest.approx(8_030_261_248 * 16, rel=0.001)
    assert eight - b.activations == pytest.approx(8_030_261_248 * 16 / 8, rel=0.001)


def test_qlora_fits_where_full_finetune_does_not():
    base = {"name": "ft", "model": {"name": "llama-3.1-8b"}, "task": "finetune"}
    full = _shape_fits({**base, "finetune_method": "full"}, "L4", L4_GIB)
    qlora = _shape_fits({**base, "finetune_method": "qlora", "training": {"sequence_length": 1024}}, "L4", L4_GIB)
    assert full.code == "memory"
    assert qlora.ok, qlora.detail


def test_activation_checkpointing_saves_memory():
    m = registry.lookup("llama-3.1-8b")
    assert memory.training_activation_bytes(m, 4096, 1, True) < memory.training_activation_bytes(m, 4096, 1, False) / 5
