"""Speed of a workload on a GPU shape: a roofline with documented efficiency factors.

Decode is memory-bandwidth bound at small batches: every output step reads
the (active) weights once and each sequence's KV cache once, so
time per output token = bytes read / (GPUs x bandwidth x MBU), unless the
FLOPs at that batch take longer at the achievable fraction of peak.
Prefill is compute bound. Training time is 6 x N x tokens over
GPUs x peak x MFU (Kaplan et al. 2020, arXiv:2001.08361, section 2.1).
"""

from __future__ import annotations

import typing

from gpusizer.facts import hardware, registry
from gpusizer.base import units
from gpusizer.estimate import comm, memory

# Achieved fraction of peak HBM bandwidth while decoding ("model bandwidth
# utilization"). Databricks, "LLM Inference Performance Engineering: Best
# Practices" (2023-10-12) reports MBU of about 55-60% for 7-70B models on
# A100/H100 with tensor parallelism; we take 0.6.
DECODE_MBU = 0.6
# Achieved fraction of peak tensor FLOPS in prefill and batched decode matmuls.
# Large-prompt prefill reaches 50-70% MFU in vLLM/TensorRT-LLM; we take 0.5.
INFERENCE_MFU = 0.5
# Training MFU: Llama 3 pre-training reached 38-43% BF16 MFU on H100
# (Llama Team, "The Llama 3 Herd of Models", arXiv:2407.21783, Table 4); 0.4.
TRAINING_MFU = 0.4


class InferenceSpeed(typing.NamedTuple):
    """Estimated serving speed of one model replica (a tuple: cheap to build)."""

    tpot_ms: float
    ttft_ms: float
    tokens_per_second: float
    bound: str  # "memory-bandwidth" or "compute"
    allreduce_ms: float = 0.0  # tensor-parallel all-reduce time per output token (in tpot_ms)
    pipeline_ms: float = 0.0  # pipeline hops between nodes per output token (in tpot_ms)
    link: str = ""  # the link the all-reduces cross ("PCIe Gen4 x16 31.5 GB/s")


def expert_read_fraction(model: registry.ModelArch, batch: int) -> float:
    """Fraction of all weights one decode step reads.

    A dense model reads everything. An MoE with E experts and top-k routing
    reads the shared part D and, with uniformly random routing, each expert
    with probability 1 - (1 - k/E)^batch. With total = D + X and
    active = D + X*k/E: X = (total - active) / (1 - k/E).
    """
    share = model.experts_per_token / model.experts if model.is_moe else 1.0
    if share >= 1:  # dense, or top-k over every expert (a legal config): everything is read
        return 1.0
    experts_params = (model.params - model.active_params) / (1 - share)
    dense_params = model.params - experts_params
    touched = 1 - (1 - share) ** batch
    return (dense_params + experts_params * touched) / model.params


def inference_speed(
    model: registry.ModelArch,
    gpu: hardware.GpuSpec,
    gpus: float,
    nvlink: bool,
    precision: str,
    kv_precision: str,
    context: int,
    prompt: int,
    batch: int,
    stages: int = 1,
    fabric_gbps: float = 0.0,
    mbu: float = DECODE_MBU,
    mfu: float = INFERENCE_MFU,
) -> InferenceSpeed:
    """Decode and prefill speed of one replica: `gpus` tensor-parallel GPUs x `stages` pipeline stages.

    Decode step = max(bytes read / (tp x HBM GB/s x MBU), FLOPs / (tp x peak x
    MFU)) + tensor-parallel all-reduces + pipeline hops. With pipeline
    stages on separate nodes each stage reads 1/stages of the weights and KV
    on its own tp GPUs, and a token visits the stages in turn, so the step is
    as long as on one tp group holding everything, plus the hops. The
    throughput gain of interleaving micro-batches across stages is not
    counted (a conservative estimate: tokens/s = batch / step).
    All-reduces: comm.tensor_parallel_seconds over the node's link (PCIe or
    NVLink), `batch` tokens per decode step, `prompt` tokens in prefill.

    Args:
        gpus: tensor-parallel GPUs per stage; a fractional GPU (g6f) passes its share.
        context: tokens held per sequence at the end of generation (the KV read
            per step is taken at this, the worst case).
        prompt: prompt tokens for time to first token.
        stages: pipeline stages, one per node.
        fabric_gbps: node network bandwidth between stages, Gbit/s.
        mbu, mfu: achieved fractions of peak bandwidth and FLOPS (calibration overrides them).
    """
    bw = gpus * gpu.hbm_bw_gbs * units.GB * mbu
    flops = gpus * gpu.peak_tflops(precision) * units.TERA * mfu
    weights = memory.weight_bytes(model, precision) * expert_read_fraction(model, batch)
    kv = memory.kv_bytes_per_sequence(model, context, kv_precision) * batch
    mem_s = (weights + kv) / bw
    compute_s = 2 * model.active_params * batch / flops
    tp = int(gpus) if gpus >= 1 else 1
    link = comm.link_of(gpu, nvlink)
    llm = model.kind == "llm"
    tp_s = comm.tensor_parallel_seconds(model.layers, batch, model.hidden_size, tp, link) if llm else 0.0
    pp_s = comm.pipeline_seconds(stages, batch, model.hidden_size, fabric_gbps)
    step_s = max(mem_s, compute_s) + tp_s + pp_s
    attn_flops = 2 * model.layers * prompt * prompt * model.attention_heads * model.head_dim
    prefill_flops = 2 * model.active_params * prompt + attn_flops
    prefill_comm = comm.tensor_parallel_seconds(model.layers, prompt, model.hidden_size, tp, link) if llm else 0.0
    prefill_comm += comm.pipeline_seconds(stages, prompt, model.hidden_size, fabric_gbps)
    ttft_s = max(prefill_flops / flops, memory.weight_bytes(model, precision) / bw) + prefill_comm
    return InferenceSpeed(
        tpot_ms=step_s * 1e3,
        ttft_ms=ttft_s * 1e3,
        tokens_per_second=batch / step_s,
        bound="memory-bandwidth" if mem_s >= compute_s else "compute",
        allreduce_ms=tp_s * 1e3,
        pipeline_ms=pp_s * 1e3,
        link=link.label if tp > 1 else "",
    )


def training_flops(model: registry.ModelArch, tokens: float, method: str, checkpointing: bool) -> float:
    """Hardware FLOPs to train on `tokens` tokens.

    Full training: 6*N per token (2N forward, 4N backward; Kaplan et al.
    2020). LoRA/QLoRA skip the frozen weights' gradients: 4*N. Activation
    checkpointing recomputes the forward pass: +2*N (Korthikanti et al. 2022).
    N is the active parameter count (MoE).
    """
    per_token = 6.0 if method == "full" else 4.0
    if checkpointing:
        per_token += 2.0
    return per_token * model.active_params * tokens


def training_hours(flops: float, gpu: hardware.GpuSpec, gpus: float, precision: str, mfu: float = TRAINING_MFU) -> float:
    """Wall-clock hours for `flops` on `gpus` GPUs at `mfu` (TRAINING_MFU unless calibrated) of dense peak."""
    compute = "bf16" if precision in ("int4", "int8") else precision  # QLoRA computes in 16-bit
    return flops / (gpus * gpu.peak_tflops(compute) * units.TERA * mfu) / 3600
