"""Does a GPU shape run a workload? Memory, interconnect and targets, with the first failed limit.

A *shape* is what the sizing depends on: the GPU model and its reported
memory, GPUs per node, a fractional share, NVLink, fabric, and node count.
Many offers share a shape (one per region/zone/purchase), so the optimizer
evaluates each shape once.
"""

from __future__ import annotations

import dataclasses
import math

from gpusizer import fields, hardware, units
from gpusizer.estimate import memory, speed
from gpusizer.estimate.workload import Workload

# Most replicas the engine will spread a throughput target over before calling the GPU too slow.
MAX_REPLICAS = fields.MAX_REPLICAS


@dataclasses.dataclass(frozen=True, slots=True)
class Shape:
    gpu: str
    gpu_memory_gib: float
    gpu_count: int
    gpu_fraction: float = 1.0
    nvlink: bool = False
    fabric: bool = False
    nodes: int = 1

    @property
    def total_gpus(self) -> int:
        return self.gpu_count * self.nodes

    @property
    def label(self) -> str:
        if self.gpu_fraction < 1:
            return f"{self.gpu} x1/{round(1 / self.gpu_fraction)}"
        nodes = f" ({self.nodes} nodes)" if self.nodes > 1 else ""
        return f"{self.gpu} x{self.total_gpus}{nodes}"


@dataclasses.dataclass(frozen=True, slots=True)
class Fit:
    """How a shape fares. `code` and `detail` name the first failed limit, or are empty.

    Attributes:
        code: "memory", "interconnect", "ttft", "tpot", "throughput", "deadline" or "".
        detail: the limit with numbers ("A10G x1: 21.3 GiB usable < 27.4 GiB needed").
        need_gib: GiB needed per GPU; usable_gib: GiB usable per GPU.
        sharding: ZeRO stage used (training), else None.
        speed: serving speed of one replica (inference, when memory fits).
        replicas: copies needed to serve the throughput target (at least deploy.replicas).
        train_hours: estimated training time (training with a token count).
    """

    code: str
    detail: str
    need_gib: float
    usable_gib: float
    sharding: str | None = None
    speed: speed.InferenceSpeed | None = None
    train_hours: float | None = None
    replicas: int = 1

    @property
    def ok(self) -> bool:
        return not self.code

    @property
    def tokens_per_second(self) -> float | None:
        return self.speed.tokens_per_second if self.speed else None


def fit(w: Workload, shape: Shape) -> Fit:
    """Evaluate `shape` against every sizing limit of `w`, in a fixed order.

    Order: memory, interconnect, then targets (ttft, tpot, throughput) or
    the training deadline. The first failure is the reason given.
    """
    gpu = hardware.load_gpus()[shape.gpu]
    usable = shape.gpu_memory_gib * w.spec.sizing.memory_headroom
    if w.spec.task == "inference":
        return _fit_inference(w, shape, gpu, usable)
    return _fit_training(w, shape, gpu, usable)


def _memory_fail(shape: Shape, usable: float, need: float, extra: str = "") -> Fit:
    return Fit(
        "memory",
        f"{shape.label}: {usable:.1f} GiB usable per GPU < {need:.1f} GiB needed{extra}",
        need,
        usable,
    )


def _fit_inference(w: Workload, shape: Shape, gpu: hardware.GpuSpec, usable: float) -> Fit:
    m = w.model
    n = shape.gpu_count
    if shape.nodes > 1:
        return Fit("interconnect", f"{shape.label}: serving spans one node per replica", 0.0, usable)
    need = units.gib(memory.per_gpu_inference_bytes(m, w.breakdown, n) + memory.overhead_bytes("inference", n))
    if need > usable:
        return _memory_fail(shape, usable, need)
    problem = tensor_parallel_problem(w, shape)
    if problem:
        return Fit("interconnect", f"{shape.label}: {problem}", need, usable)
    base = w.spec.deploy.replicas
    if m.kind != "llm":
        return Fit("", "", need, usable, replicas=base)  # images, not tokens: sized by memory at the batch
    s = w.serving_speed(gpu, n * shape.gpu_fraction, shape.nvlink)
    targets = w.targets
    if targets.ttft_ms and s.ttft_ms > targets.ttft_ms:
        return Fit("ttft", f"{shape.label}: TTFT {s.ttft_ms:.0f} ms > {targets.ttft_ms:.0f} ms target", need, usable, speed=s)
    if targets.tpot_ms and s.tpot_ms > targets.tpot_ms:
        return Fit("tpot", f"{shape.label}: TPOT {s.tpot_ms:.1f} ms > {targets.tpot_ms:.1f} ms target", need, usable, speed=s)
    tps = w.targets.tokens_per_second
    replicas = max(base, math.ceil(tps / s.tokens_per_second)) if tps else base
    if replicas > MAX_REPLICAS:
        return Fit(
            "throughput",
            f"{shape.label}: {s.tokens_per_second:,.0f} tokens/s per replica; {tps:,.0f} tokens/s would take "
            f"{replicas} replicas (more than {MAX_REPLICAS})",
            need,
            usable,
            speed=s,
        )
    return Fit("", "", need, usable, speed=s, replicas=replicas)


def tensor_parallel_problem(w: Workload, shape: Shape) -> str:
    """Why tensor parallelism over the node's GPUs cannot work, or "".

    Megatron-style TP splits attention heads, so the degree must divide the
    attention heads; KV heads must divide by it, or it by them (vLLM then
    replicates KV heads). Beyond 2 GPUs the per-layer all-reduces need
    NVLink/NVSwitch; PCIe-only nodes are rejected (right-sizing method,
    "Interconnect": TP needs the highest bandwidth).
    """
    n = shape.gpu_count
    m = w.model
    if n == 1 or m.kind != "llm":
        return ""
    if m.attention_heads % n:
        return f"tensor parallel {n} does not divide {m.attention_heads} attention heads"
    if not m.is_mla and m.kv_heads % n and n % m.kv_heads:
        return f"tensor parallel {n} and {m.kv_heads} KV heads do not divide each other"
    if n > 2 and not shape.nvlink:
        return f"tensor parallel {n} needs NVLink; this node has PCIe only"
    return ""


def _fit_training(w: Workload, shape: Shape, gpu: hardware.GpuSpec, usable: float) -> Fit:
    n = shape.total_gpus
    overhead = memory.overhead_bytes(w.spec.task, n)
    levels = memory.SHARDING_LEVELS if w.spec.train.sharding == "auto" else (w.spec.train.sharding,)
    if n == 1:
        levels = ("none",)
    need = 0.0
    chosen = None
    for level in levels:
        need = units.gib(memory.per_gpu_training_bytes(w.breakdown, n, level) + overhead)
        if need <= usable:
            chosen = level
            break
    if chosen is None:
        extra = f" even with {levels[-1]}" if n > 1 else ""
        return _memory_fail(shape, usable, need, extra)
    if shape.nodes > 1 and not shape.fabric:
        return Fit("interconnect", f"{shape.label}: multi-node training needs EFA/GPUDirect; none here", need, usable, chosen)
    hours = None
    if w.training_flops:
        hours = speed.training_hours(w.training_flops, gpu, n * shape.gpu_fraction, w.spec.precision, mfu=w.efficiency(gpu.name)[2])
        deadline = w.spec.train.deadline_hours
        if deadline and hours > deadline:
            return Fit(
                "deadline",
                f"{shape.label}: {hours:,.1f} h to train > {deadline:,.1f} h deadline",
                need,
                usable,
                chosen,
                train_hours=hours,
            )
    return Fit("", "", need, usable, chosen, train_hours=hours)
