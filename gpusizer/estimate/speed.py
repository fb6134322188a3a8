"""Speed of a workload on a GPU shape: a roofline with documented efficiency factors.

Serving: a load model of continuous batching with chunked prefill (inference_speed):
each step reads the (active) weights and every sequence's KV cache, and computes the
decoding tokens plus the prefill of arriving requests, with a per-step floor that grows
with the tensor-parallel degree; queueing at a request rate (queue_wait_seconds) is an
M/G/c approximation. Training: model FLOPs (6N + attention) at the GPU's MFU, recompute
as time, pipeline bubble, exposed communication and goodput (training_time).
Efficiency factors per GPU and weight format: data/efficiency.yaml.
"""

from __future__ import annotations

import math
import typing

from gpusizer.base import units
from gpusizer.estimate import comm, efficiency, memory
from gpusizer.facts import hardware, registry


class InferenceSpeed(typing.NamedTuple):
    """Estimated serving speed of one model replica at a concurrency (a tuple: cheap to build).

    tpot_ms: one decode step with `concurrency` sequences decoding and the prefill of
        arriving requests in the same step (continuous batching, chunked prefill).
    ttft_ms: time to first token at that load (the prompt's chunks share steps with
        the decoding sequences); ttft_idle_ms: the same prompt on an idle replica.
    e2e_ms: ttft_ms + (output tokens - 1) x tpot_ms, before any queueing.
    """

    tpot_ms: float
    ttft_ms: float
    tokens_per_second: float
    bound: str  # "memory-bandwidth" or "compute"
    allreduce_ms: float = 0.0  # tensor-parallel all-reduce time per step (in tpot_ms)
    pipeline_ms: float = 0.0  # pipeline hops between nodes per step (in tpot_ms)
    link: str = ""  # the link the all-reduces cross ("PCIe Gen4 x16 31.5 GB/s")
    concurrency: int = 1
    ttft_idle_ms: float = 0.0
    e2e_ms: float = 0.0
    overhead_ms: float = 0.0  # fixed per-step floor (in tpot_ms)
    max_concurrency: int = 0  # sequences the replica's free memory holds at peak context (0: not computed)
    output_tokens: float = 1.0  # mean output tokens per request the figures assume

    @property
    def requests_per_second(self) -> float:
        """Requests one replica completes per second at this concurrency."""
        return self.concurrency / (self.e2e_ms / 1e3) if self.e2e_ms else 0.0


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
    touched = 1 - (1 - share) ** max(1, batch)
    return (dense_params + experts_params * touched) / model.params


# Per-step floor, seconds (kernel launches, scheduling, sampling and the synchronisation of
# tensor-parallel ranks), beyond the bytes and FLOPs:
# - STEP_FIXED_S: scheduler, sampler and detokeniser of one engine step with CUDA graphs.
#   vLLM V1 moved these off the GPU's critical path but a step still costs ~0.3-1 ms of host
#   work (vLLM blog "vLLM V1", 2025-01-27); we take 0.5 ms.
# - LAYER_LAUNCH_S: launches per transformer layer (about 10 kernels, ~1 us each under CUDA
#   graphs): 10 us per layer (unverified, fitted with the next one).
# - LAYER_TP_SYNC_S: per layer and per doubling of the tensor-parallel degree, the wait for
#   the slowest rank plus small-message all-reduce latency beyond comm.ALLREDUCE_LATENCY_S.
#   Fitted to NVIDIA NeMo Framework's Llama 2 7B inference table (128 in / 20 out, batch 1,
#   TP 1 vs TP 8 on A100 and H100: 234 -> 136.5 ms and 153.8 -> 97.6 ms, so 8x the GPUs
#   buys 1.6-1.7x, docs.nvidia.com/nemo-framework/user-guide/latest/performance/llama.html,
#   read 2026-11-26): 25 us.
STEP_FIXED_S = 0.5e-3
LAYER_LAUNCH_S = 10e-6
LAYER_TP_SYNC_S = 25e-6
# Fraction of the shorter of (memory time, compute time) hidden under the longer one in a
# mixed decode + prefill step: kernels are either bandwidth- or compute-bound and run one
# after another, so the overlap is partial (fitted to TensorRT-LLM perf-overview v1.0
# Llama 3.1 8B / 3.3 70B rows, 2025): 0.5.
OVERLAP = 0.5
# vLLM's default max_num_seqs (engine arguments, 2025): the most sequences one step decodes.
MAX_NUM_SEQS = 256


def step_overhead_seconds(layers: int, tp: int) -> float:
    """The fixed floor of one forward step: STEP_FIXED_S + layers x (launch + sync x log2(tp)).

    >>> round(step_overhead_seconds(32, 1) * 1e3, 2), round(step_overhead_seconds(32, 8) * 1e3, 2)
    (0.82, 3.22)
    """
    return STEP_FIXED_S + layers * (LAYER_LAUNCH_S + LAYER_TP_SYNC_S * math.log2(max(1, tp)))


def attention_dim(model: registry.ModelArch) -> int:
    return model.attention_heads * model.head_dim


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
    mbu: float | None = None,
    mfu: float | None = None,
    output: float | None = None,
    weight_format: str = "",
    ttft_prompt: int | None = None,
    weights: float | None = None,
) -> InferenceSpeed:
    """Speed of one replica (`gpus` tensor-parallel GPUs x `stages` pipeline stages) at `batch` concurrent requests.

    The load model (docs/sizing.md section 2): continuous batching with chunked
    prefill. In steady state each decode step carries `batch` decoding sequences
    and, for every output token, prompt/output tokens of arriving requests'
    prefill. One step =

        overhead(layers, tp) + max(M, F) + (1 - OVERLAP) x min(M, F) + all-reduces + pipeline hops

    M = (weights read + KV of every sequence at its mean length) / (HBM x MBU);
    F = (2 x active params + attention) x tokens in the step / (peak x MFU).
    Time per output token is that step; tokens/s = batch / step. Time to first
    token under load: the prompt in chunks of memory.PREFILL_CHUNK_TOKENS less
    the decoding sequences, each chunk one step beside them.

    Args:
        gpus: tensor-parallel GPUs per stage; a fractional GPU (g6f) passes its share.
        context: peak tokens per sequence (prompt + output; memory).
        prompt: mean prompt tokens.
        batch: concurrent requests (sequences decoding at once).
        output: mean output tokens; default context - prompt (at least 1).
        stages: pipeline stages, one per node; fabric_gbps: node network, Gbit/s.
        mbu, mfu: achieved fractions of peak bandwidth and FLOPS; default the GPU's row of
            data/efficiency.yaml for `weight_format` (calibration passes its own).
        weight_format: key of efficiency.yaml weight_formats ("" = from `precision`).
        ttft_prompt: the prompt time to first token is measured on (default `prompt`).
        weights: weight bytes (default memory.weight_bytes at `precision`).
    """
    fmt = weight_format or _format_of(precision)
    mbu = efficiency.decode_mbu(gpu.name, fmt) if mbu is None else mbu
    mfu = efficiency.inference_mfu(gpu.name) if mfu is None else mfu
    out = max(1.0, float(output) if output else float(max(1, context - prompt)))
    bw = gpus * gpu.hbm_bw_gbs * units.GB * mbu
    flops = gpus * gpu.peak_tflops(precision) * units.TERA * mfu
    tp = int(gpus) if gpus >= 1 else 1
    link = comm.link_of(gpu, nvlink)
    llm = model.kind == "llm"
    overhead = step_overhead_seconds(model.layers, tp) if llm else STEP_FIXED_S
    weights_all = memory.weight_bytes(model, precision) if weights is None else weights
    kv_token = memory.kv_bytes_per_sequence(model, 1, kv_precision) if llm else 0.0
    d_attn = attention_dim(model)

    def step(decoding: int, prefill: float, decode_ctx: float) -> tuple[float, float, float, float, float]:
        tokens = decoding + prefill
        weights = weights_all * expert_read_fraction(model, max(1, math.ceil(tokens)))
        kv = decoding * kv_token * decode_ctx + prefill * kv_token * 0.5  # a chunk reads its own prompt's KV
        mem_s = (weights + kv) / bw
        attn = 4 * model.layers * d_attn * (decoding * decode_ctx + prefill * (ttft_prompt or prompt) / 2)
        compute_s = (2 * model.active_params * tokens + attn) / flops
        n = max(1, math.ceil(tokens))
        tp_s = comm.tensor_parallel_seconds(model.layers, n, model.hidden_size, tp, link) if llm else 0.0
        pp_s = comm.pipeline_seconds(stages, n, model.hidden_size, fabric_gbps)
        core = max(mem_s, compute_s) + (1 - OVERLAP) * min(mem_s, compute_s)
        return overhead + core + tp_s + pp_s, mem_s, compute_s, tp_s, pp_s

    c = max(1, batch)
    mean_ctx = prompt + out / 2
    arriving = c * prompt / out  # prefill tokens per step in steady state
    step_s, mem_s, compute_s, tp_s, pp_s = step(c, arriving, mean_ctx)
    first = ttft_prompt or prompt
    chunk_budget = max(memory.PREFILL_CHUNK_TOKENS - (c - 1), 512)
    chunk = min(first, chunk_budget)
    chunks = math.ceil(first / chunk)
    ttft_idle = chunks * step(0, chunk, 0)[0]
    ttft = chunks * step(c - 1, chunk, mean_ctx)[0] if c > 1 else ttft_idle
    e2e = ttft + (out - 1) * step_s
    return InferenceSpeed(
        tpot_ms=step_s * 1e3,
        ttft_ms=ttft * 1e3,
        tokens_per_second=c / step_s,
        bound="memory-bandwidth" if mem_s >= compute_s else "compute",
        allreduce_ms=tp_s * 1e3,
        pipeline_ms=pp_s * 1e3,
        link=link.label if tp > 1 else "",
        concurrency=c,
        ttft_idle_ms=ttft_idle * 1e3,
        e2e_ms=e2e * 1e3,
        overhead_ms=overhead * 1e3,
        output_tokens=out,
    )


def _format_of(precision: str) -> str:
    """The weight-format key of a plain precision (int4 = AWQ/GPTQ through Marlin, vLLM's default)."""
    return {"fp8": "fp8", "int8": "int8", "int4": "awq", "fp4": "nvfp4", "nf4": "nf4"}.get(precision, "16bit")


def erlang_c(servers: int, load: float) -> float:
    """Probability that an arrival waits in an M/M/c queue with `servers` and offered load a = lambda/mu.

    Erlang C, computed through the Erlang B recursion (stable for large c).

    >>> round(erlang_c(2, 1.0), 4)
    0.3333
    """
    if load >= servers:
        return 1.0
    b = 1.0
    for k in range(1, servers + 1):
        b = load * b / (k + load * b)
    rho = load / servers
    return b / (1 - rho + rho * b)


# Squared coefficient of variation of a request's service time (Allen-Cunneen's G/G/c
# correction multiplies the M/M/c wait by (ca^2 + cs^2) / 2). Poisson arrivals (ca^2 = 1);
# chat output lengths are roughly exponential (cs^2 = 1): the M/M/c wait.
SERVICE_CV2 = 1.0


def queue_wait_seconds(s: InferenceSpeed, rate: float, percentile: float) -> float:
    """Wait before service at `percentile` (0-1) for Poisson arrivals at `rate` req/s on one replica.

    M/G/c approximation (documented in docs/sizing.md): the replica is c =
    s.concurrency servers, each holding one request for s.e2e_ms; P(wait > t) =
    C(c, a) x exp(-(c mu - lambda) t) (Erlang C, exponential tail), scaled by
    Allen-Cunneen's (1 + SERVICE_CV2) / 2. Infinite when the rate exceeds capacity.
    """
    service = s.e2e_ms / 1e3
    if service <= 0 or rate <= 0:
        return 0.0
    mu = 1 / service
    c = s.concurrency
    if rate >= c * mu:
        return math.inf
    wait_p = erlang_c(c, rate / mu)
    if wait_p <= 1 - percentile:
        return 0.0
    return math.log(wait_p / (1 - percentile)) / (c * mu - rate) * (1 + SERVICE_CV2) / 2


def training_flops(
    model: registry.ModelArch, tokens: float, method: str, checkpointing: bool = False, seq: int = 0
) -> float:
    """Model FLOPs to train on `tokens` tokens (recompute is time, not FLOPs: see training_seconds).

    Full training: 6*N per token (2N forward, 4N backward; Kaplan et al. 2020)
    plus attention, 12 x layers x seq x attention dim (PaLM, arXiv:2204.02311,
    appendix B: 6N + 12LHQT). LoRA/QLoRA skip the frozen weights' gradients: 4*N
    and 2/3 of the attention term. N is the active parameter count (MoE).
    `checkpointing` is accepted for callers and ignored: published MFU counts
    model FLOPs, so adding the recomputed forward here would charge it twice.
    """
    del checkpointing
    share = 1.0 if method == "full" else 2 / 3
    attn = 12 * model.layers * seq * attention_dim(model) if model.kind == "llm" else 0.0
    return (6.0 * model.active_params + attn) * share * tokens


# Time cost of full activation checkpointing over the same run without it. In theory one more
# forward pass (+33% FLOPs, Korthikanti et al. 2022, arXiv:2205.05198 section 4), but the memory
# it frees buys larger micro-batches: mosaicml/llm-foundry's benchmark table (H100 80GB BF16,
# scripts/train/benchmarking/README.md, read 2026-11-26) shows 7B at 46.4% MFU without and
# 40.4-42.8% with checkpointing: 1.15.
RECOMPUTE_TIME = 1.15
# Micro-batches per pipeline flush, per stage (Megatron-LM guidance m >= 4 x stages; Narayanan
# et al. 2021, arXiv:2104.04473 section 2.2): the 1F1B bubble is (p - 1) / (m + p - 1).
MICROBATCHES_PER_STAGE = 4
# Tokens per optimizer step when the spec does not say (Llama 2/3 pre-training used 4M-token
# batches; fine-tuning recipes use far fewer): 1M, for the data-parallel gradient all-reduce.
STEP_TOKENS = 1_000_000
# Fraction of the gradient all-reduce hidden under the backward pass (PyTorch DDP/FSDP bucketed
# overlap, Li et al. 2020, "PyTorch Distributed", VLDB, section 5): 0.7.
GRAD_OVERLAP = 0.7
# Interruptions per GPU-hour: 419 unexpected interruptions in 54 days on 16,384 H100s (Llama 3
# paper, arXiv:2407.21783 section 3.3.4): 1.97e-5. Each loses half a checkpoint interval plus
# a restart (RESTART_H); checkpoints every CHECKPOINT_INTERVAL_H cost their write time.
FAILURES_PER_GPU_HOUR = 419 / (54 * 24 * 16384)
RESTART_H = 10 / 60
CHECKPOINT_INTERVAL_H = 1.0


# Parameter-efficient fine-tuning (Hugging Face Trainer + PEFT, the common LoRA/QLoRA stack), fitted to the
# Qwen README's single-A100-80GB profile (github.com/QwenLM/Qwen README.md "Profiling of Memory and Speed",
# batch 1 x gradient accumulation 8, flash attention 2, read 2026-11-26): seconds per iteration grow
# linearly in sequence length with the same slope for LoRA and Q-LoRA (7B: 0.29 ms/token = 0.75 of the
# A100's full-training MFU on LoRA's FLOPs), plus a fixed cost per micro-batch: ~0.1 s for LoRA (trainer
# and adapter bookkeeping) and, for Q-LoRA, ~0.035 s more per billion parameters (bitsandbytes
# dequantises every NF4 weight in each forward, recomputed forward and backward: 7B +0.2 s, 14B +0.46 s).
PEFT_MFU_FACTOR = 0.75
PEFT_MICROBATCH_S = 0.1
QLORA_DEQUANT_S_PER_BPARAM = 0.035


class TrainingTime(typing.NamedTuple):
    """Hours of a training run and what they are made of."""

    hours: float
    compute_hours: float  # FLOPs at MFU, with recompute
    bubble: float  # pipeline bubble fraction
    comm_hours: float  # exposed tensor-parallel and gradient communication
    goodput: float  # fraction of wall time that trains (restarts, checkpoints)


def training_time(
    flops: float,
    gpu: hardware.GpuSpec,
    gpus: float,
    precision: str,
    mfu: float | None = None,
    *,
    model: registry.ModelArch | None = None,
    checkpointing: bool = False,
    tp: int = 1,
    pp: int = 1,
    cp: int = 1,
    nvlink: bool = False,
    nodes: int = 1,
    network_gbps: float = 0.0,
    tokens: float = 0.0,
    seq: int = 4096,
    micro_batch: int = 1,
    trainable_params: float = 0.0,
    checkpoint_bytes: float = 0.0,
    method: str = "full",
) -> TrainingTime:
    """Wall-clock of training `flops` model FLOPs on `gpus` GPUs (tp x pp x data parallel).

    compute = flops x (RECOMPUTE_TIME if checkpointing) / (gpus x peak x MFU);
    / (1 - bubble) for pipeline stages; + tensor-parallel all-reduces (4 per layer
    per micro-batch, forward and backward, Megatron-LM) over the node's link; +
    the exposed part of the data-parallel gradient all-reduce per STEP_TOKENS
    (over the fabric between nodes); / goodput (interruptions and checkpoints).
    """
    compute = "bf16" if precision in ("int4", "int8", "fp4") else precision  # QLoRA computes in 16-bit
    mfu = efficiency.training_mfu(gpu.name) if mfu is None else mfu
    peft = method in ("lora", "qlora")
    rate = gpus * gpu.peak_tflops(compute) * units.TERA * mfu * (PEFT_MFU_FACTOR if peft else 1.0)
    compute_s = flops * (RECOMPUTE_TIME if checkpointing else 1.0) / rate
    if peft and tokens and model is not None:
        per_micro = PEFT_MICROBATCH_S + (QLORA_DEQUANT_S_PER_BPARAM * model.params / 1e9 if method == "qlora" else 0.0)
        compute_s += per_micro * tokens / (seq * micro_batch * max(1.0, gpus))
    m = MICROBATCHES_PER_STAGE * pp
    bubble = (pp - 1) / (m + pp - 1) if pp > 1 else 0.0
    comm_s = 0.0
    if model is not None and model.kind == "llm" and tokens:
        dp = max(1, int(gpus) // max(1, tp * pp * cp))
        if cp > 1:
            # Ring attention passes each rank's K and V chunk around the cp ranks: (cp - 1) chunks of
            # seq/cp tokens x 2 x kv_heads x head_dim x 2 B per layer, forward and twice backward,
            # over the node's link, the part not hidden under the attention compute exposed
            # (Liu et al. 2023, "Ring Attention", arXiv:2310.01889; Megatron-LM context parallelism).
            link = comm.link_of(gpu, nvlink)
            chunk = seq / cp * micro_batch * 2 * model.kv_heads * model.head_dim * 2
            per_micro = 3 * model.layers / pp * (cp - 1) * chunk / (link.gbs * 1e9 * comm.LINK_EFFICIENCY[link.kind])
            comm_s += (1 - GRAD_OVERLAP) * per_micro * tokens / (seq * micro_batch * dp)
        if tp > 1:
            link = comm.link_of(gpu, nvlink)
            micro_tokens = seq * micro_batch
            per_micro = 4 * model.layers / pp * comm.allreduce_seconds(micro_tokens * model.hidden_size * 2, tp, link)
            comm_s += per_micro * tokens / (micro_tokens * dp)
        if dp > 1 and trainable_params:
            grad_bytes = 2 * trainable_params / (tp * pp)  # context-parallel ranks also hold their own copy
            if nodes > 1:
                # hierarchical: reduce-scatter in the node, then each GPU's 1/g shard crosses the node's network
                bw = (network_gbps or DEFAULT_FABRIC_GBPS) / 8 * 1e9 * comm.FABRIC_EFFICIENCY
            else:
                bw = comm.link_of(gpu, nvlink).gbs * 1e9 * comm.LINK_EFFICIENCY[comm.link_of(gpu, nvlink).kind]
            sync = 2 * (dp - 1) / dp * grad_bytes / bw
            steps = tokens / max(STEP_TOKENS, seq * micro_batch * dp)
            step_compute = compute_s / max(steps, 1e-9)
            comm_s += max(0.0, sync - GRAD_OVERLAP * step_compute) * steps
    busy_h = (compute_s / (1 - bubble) + comm_s) / 3600
    lost = FAILURES_PER_GPU_HOUR * gpus * (CHECKPOINT_INTERVAL_H / 2 + RESTART_H)
    write_h = checkpoint_bytes / (CHECKPOINT_WRITE_GBS * 1e9 * max(1, nodes)) / 3600
    goodput = 1 / (1 + lost + write_h / CHECKPOINT_INTERVAL_H) if busy_h > CHECKPOINT_INTERVAL_H else 1.0
    return TrainingTime(busy_h / goodput, compute_s / 3600, bubble, comm_s / 3600, goodput)


# Node network assumed when an offer with a fabric states none: 400 Gbit/s (one NDR/EFA v2 port; unverified).
DEFAULT_FABRIC_GBPS = 400.0
# Checkpoint write rate per node, GB/s: a local NVMe or network volume at ~1 GB/s (AWS EBS gp3
# tops out at 1 GB/s per volume, AWS EBS docs 2025).
CHECKPOINT_WRITE_GBS = 1.0


def training_hours(flops: float, gpu: hardware.GpuSpec, gpus: float, precision: str, mfu: float | None = None) -> float:
    """Hours for `flops` on `gpus` GPUs at `mfu` (the GPU's efficiency row unless calibrated), no parallelism costs."""
    return training_time(flops, gpu, gpus, precision, mfu).hours
