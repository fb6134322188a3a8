"""Memory rules checked against published figures and hand derivations, not against the code's own formulas:
each would let a subtle sizing bug through if it were missing (a ZeRO stage that stops sharding one kind
of state, a KV cache split over more GPUs than it has heads)."""

from __future__ import annotations

import pytest

from gpusizer.estimate import memory
from gpusizer.facts import registry

# Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models"
# (arXiv:1910.02054), Figure 1: a 7.5B-parameter model on Nd = 64 data-parallel GPUs with mixed-precision
# Adam (K = 12): baseline 120 GB per GPU, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB (GB = 1e9 bytes).
PSI = 7.5e9
ZERO_FIGURE_1 = {"none": 120.0, "zero1": 31.4, "zero2": 16.6, "zero3": 1.9}


@pytest.fixture(scope="module")
def seven_and_a_half_b():
    return registry.from_architecture(params_b=7.5, layers=32, hidden_size=4096, attention_heads=32)


@pytest.mark.parametrize("stage, published_gb", ZERO_FIGURE_1.items())
def test_zero_stages_hold_the_papers_per_gpu_figures(seven_and_a_half_b, stage, published_gb):
    weights, grads, states = memory.training_state_bytes(seven_and_a_half_b, "bf16", "full", "adamw", lora_rank=16)
    # The paper's accounting first: 2 + 2 + K bytes per parameter, K = 12 (fp32 master, momentum, variance).
    assert (weights / PSI, grads / PSI, states / PSI) == (2.0, 2.0, 12.0)
    b = memory.MemoryBreakdown(weights, 0.0, 0.0, grads, states, 0.0)
    per_gpu_gb = memory.per_gpu_training_bytes(b, 64, stage) / 1e9
    assert per_gpu_gb == pytest.approx(published_gb, abs=0.05)


def test_each_zero_stage_shards_exactly_one_more_kind_of_state(seven_and_a_half_b):
    # Hand-derived from the paper's section 5: stage 1 partitions optimizer states, 2 also gradients,
    # 3 also parameters; 8 GPUs: each stage saves (N - 1) / N of the state it starts to shard.
    weights, grads, states = memory.training_state_bytes(seven_and_a_half_b, "bf16", "full", "adamw", lora_rank=16)
    b = memory.MemoryBreakdown(weights, 0.0, 0.0, grads, states, 0.0)
    at = {s: memory.per_gpu_training_bytes(b, 8, s) for s in memory.SHARDING_LEVELS}
    assert at["none"] - at["zero1"] == pytest.approx(states * 7 / 8)
    assert at["zero1"] - at["zero2"] == pytest.approx(grads * 7 / 8)
    assert at["zero2"] - at["zero3"] == pytest.approx(weights * 7 / 8)


# Qwen2.5-1.5B (config.json): 28 layers, 2 KV heads of 128 dims. A bf16 KV cache holds 2 (K and V) x 2 heads
# x 128 x 2 B = 1,024 B per token per layer: 28,672 B per token. With tensor parallelism past the KV head
# count, vLLM replicates KV heads so each GPU holds one head (vLLM model_executor/models/qwen2.py,
# `num_kv_heads = max(1, total_num_kv_heads // tp_size)`): 14,336 B per token per GPU at TP 2, 4 or 8.
@pytest.mark.parametrize("tp, per_gpu_bytes_per_token", [(1, 28_672), (2, 14_336), (4, 14_336), (8, 14_336)])
def test_kv_cache_per_gpu_replicates_gqa_heads_past_the_kv_head_count(tp, per_gpu_bytes_per_token):
    model = registry.lookup("qwen2.5-1.5b")
    assert (model.layers, model.kv_heads, model.head_dim) == (28, 2, 128)
    tokens = 10_000
    kv = memory.kv_bytes_per_sequence(model, tokens, "bf16")
    assert kv == 28_672 * tokens
    b = memory.MemoryBreakdown(0.0, kv, 0.0, 0.0, 0.0, 0.0)
    assert memory.per_gpu_inference_bytes(model, b, tp) == per_gpu_bytes_per_token * tokens
