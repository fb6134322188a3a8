"""Precision against the GPU: bf16 needs Ampere+, fp8 compute Ada/Hopper/Blackwell, unless the spec allows a named fallback."""

from __future__ import annotations

import pytest

import gpusizer
from gpusizer.catalog import Catalog
from tests.conftest import make_offer

# NVIDIA datasheets: T4 (Turing) and V100 (Volta) list no bf16 tensor rate; A100 (Ampere) lists no fp8.
OLD_AND_NEW = Catalog(
    (
        make_offer("g4dn.2xlarge", "T4", 1, 15.0, 0.75),
        make_offer("p3.2xlarge", "V100", 1, 15.78, 3.06),
        make_offer("a2-highgpu-1g", "A100-40GB", 1, 39.59, 3.67, provider="gcp", region="us-central1"),
        make_offer("g6e.xlarge", "L40S", 1, 44.7, 1.861),
    )
)
SMALL = {"name": "small", "model": {"name": "qwen2.5-0.5b"}, "inference": {"context_length": 2048, "batch_size": 1}}


@pytest.mark.parametrize("precision, never_on", [("bf16", {"T4", "V100"}), ("fp8", {"T4", "V100", "A100-40GB"})])
def test_precision_is_never_placed_on_a_gpu_without_it(precision, never_on):
    d = gpusizer.plan({**SMALL, "precision": precision}, catalog=OLD_AND_NEW)
    for c in d.candidates:
        if c.offer.gpu in never_on:
            assert c.rejection is not None and c.rejection.code == "precision"
            assert f"no {precision}" in c.rejection.detail
    assert d.chosen.offer.gpu not in never_on


def test_an_explicit_fallback_is_allowed_and_named():
    spec = {**SMALL, "precision": "bf16", "sizing": {"precision_fallback": True}}
    d = gpusizer.plan(spec, catalog=OLD_AND_NEW)
    assert d.chosen.offer.gpu == "T4"  # the cheapest, now allowed
    assert "bf16 runs as fp16" in gpusizer.document(d)["choice"]["performance"]["precision_fallback"]


def test_fp8_fallback_on_ampere_is_weight_only():
    spec = {
        **SMALL,
        "precision": "fp8",
        "sizing": {"precision_fallback": True},
        "placement": {"gpus": ["A100-40GB", "T4"]},
    }
    d = gpusizer.plan(spec, catalog=OLD_AND_NEW)
    assert d.chosen.offer.gpu == "A100-40GB"
    assert "weight-only fp8" in d.chosen.fit.precision_note
    t4 = [c for c in d.candidates if c.offer.gpu == "T4"][0]
    assert t4.rejection.code == "precision"  # no fp8 kernels before Ampere, even with the fallback


@pytest.mark.parametrize("precision, kv", [("fp8", "bf16"), ("bf16", "bf16"), ("fp16", "fp16"), ("int4", "fp16")])
def test_kv_cache_stays_16_bit_unless_set(precision, kv):
    # vLLM kv_cache_dtype "auto" = the model's activation dtype; an fp8 cache is an explicit choice.
    e = gpusizer.document(gpusizer.estimate({**SMALL, "precision": precision}))
    assert e["requirements"]["kv_cache_precision"] == kv


def test_master_weights_none_drops_the_fp32_copy():
    # Full fine-tune of Llama-3.1-8B (8.03e9 params) with 8-bit AdamW:
    # fp32 master: 2 (weights) + 2 (grads) + 2 (states) + 4 (master) = 10 B/param;
    # none: 6 B/param -> 4 x 8.03e9 B = 29.9 GiB less.
    base = {
        "name": "ft",
        "model": {"name": "llama-3.1-8b"},
        "task": "finetune",
        "finetune_method": "full",
        "training": {"optimizer": "adamw-8bit"},
    }
    with_master = gpusizer.document(gpusizer.estimate(base))["requirements"]["memory_gib"]["optimizer_states"]
    none = gpusizer.estimate({**base, "training": {"optimizer": "adamw-8bit", "master_weights": "none"}})
    saved = with_master - gpusizer.document(none)["requirements"]["memory_gib"]["optimizer_states"]
    assert saved == pytest.approx(4 * 8.03e9 / 2**30, rel=0.01)
