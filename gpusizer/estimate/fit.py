"""Does a GPU shape run a workload? Memory, precision, interconnect and targets, with the first failed limit.

A *shape* is what the sizing depends on: the GPU model and its reported
memory, GPUs per node, a fractional share, NVLink, fabric, network and node
count. Many offers share a shape (one per region/zone/purchase), so the
optimizer evaluates each shape once.

Serving layouts (model, don't forbid): a node of n GPUs runs n/t replicas of
tensor parallel degree t in {1, 2, 4, 8} (t divides n); several nodes run one
replica as pipeline stages, tensor parallel inside each node. Tensor
parallelism over PCIe is allowed; its all-reduce time (estimate.comm) is
part of the speed the targets judge.
"""

from __future__ import annotations

import math
import typing

from gpusizer.base import fields, units
from gpusizer.facts import hardware
from gpusizer.estimate import memory, speed
from gpusizer.estimate.workload import Workload

# Most node groups the engine will spread a throughput target over before calling the GPU too slow.
MAX_REPLICAS = fields.MAX_REPLICAS
# Tensor-parallel degrees vLLM/TensorRT-LLM deployments use within a node.
TP_DEGREES = (1, 2, 4, 8)


class Shape(typing.NamedTuple):
    """What the sizing of an offer depends on (a tuple: cheap to build, hash and compare; optimize builds
    thousands per decision)."""

    gpu: str
    gpu_memory_gib: float
    gpu_count: int
    gpu_fraction: float = 1.0
    nvlink: bool = False
    fabric: bool = False
    nodes: int = 1
    network_gbps: float = 0.0

    @property
    def total_gpus(self) -> int:
        return self.gpu_count * self.nodes

    @property
    def label(self) -> str:
        if self.gpu_fraction < 1:
            return f"{self.gpu} x1/{round(1 / self.gpu_fraction)}"
        nodes = f" ({self.nodes} nodes)" if self.nodes > 1 else ""
        return f"{self.gpu} x{self.total_gpus}{nodes}"


def shape_of(offer, nodes: int = 1) -> Shape:
    """The sizing shape of a catalog offer (gpusizer.catalog.offer.Offer) on `nodes` nodes."""
    return Shape(
        offer.gpu, offer.gpu_memory_gib, offer.gpu_count, offer.gpu_fraction, offer.nvlink,
        offer.fabric is not None, nodes, offer.network_gbps,
    )


class Fit(typing.NamedTuple):
    """How a shape fares. `code` and `detail` name the first failed limit, or are empty.

    Immutable, and a tuple so that building one is cheap (a decision builds one per shape and node count).

    Attributes:
        code: "memory", "precision", "interconnect", "ttft", "tpot", "throughput", "deadline" or "".
        detail: the limit with numbers ("A10G x1: 21.3 GiB usable < 27.4 GiB needed").
        need_gib: GiB needed per GPU; usable_gib: GiB usable per GPU.
        sharding: ZeRO stage used (training), else None.
        speed: serving speed of one replica (inference, when memory fits).
        replicas: model copies needed to serve the throughput target (at least deploy.replicas).
        train_hours: estimated training time (training with a token count).
        tensor_parallel: GPUs per tensor-parallel group (serving).
        pipeline_stages: pipeline stages of one replica, one per node (serving).
        replicas_per_node: replicas one node runs side by side (serving, one-node replicas).
        precision_note: the precision fallback used on this GPU, if any (the spec allowed it).
    """

    code: str
    detail: str
    need_gib: float
    usable_gib: float
    sharding: str | None = None
    speed: speed.InferenceSpeed | None = None
    train_hours: float | None = None
    replicas: int = 1
    tensor_parallel: int = 1
    pipeline_stages: int = 1
    replicas_per_node: int = 1
    precision_note: str = ""

    @property
    def ok(self) -> bool:
        return not self.code

    @property
    def tokens_per_second(self) -> float | None:
        return self.speed.tokens_per_second if self.speed else None

    @property
    def node_groups(self) -> int:
        """Copies of the shape to launch for all replicas: the price multiplier of one shape."""
        return math.ceil(self.replicas / self.replicas_per_node)


def fit(w: Workload, shape: Shape) -> Fit:
    """Evaluate `shape` against every sizing limit of `w`, in a fixed order.

    Order: memory, interconnect, precision support, then targets (ttft,
    tpot, throughput) or the training deadline. The first failure is the
    reason given.
    """
    gpu = hardware.load_gpus()[shape.gpu]
    usable = shape.gpu_memory_gib * w.spec.sizing.memory_headroom
    if w.spec.task == "inference":
        f = _fit_inference(w, shape, gpu, usable)
    else:
        f = _fit_training(w, shape, gpu, usable)
    if f.code in ("memory", "interconnect"):
        return f  # no precision fallback would make these fit
    problem, note = w.memo(("precision", gpu.name), lambda: precision_problem(w, gpu))
    if problem:
        return Fit("precision", f"{shape.label}: {problem}", f.need_gib, usable)
    return f._replace(precision_note=note) if note else f


def precision_problem(w: Workload, gpu: hardware.GpuSpec) -> tuple[str, str]:
    """(why `gpu` cannot run the spec's precision, the fallback note when the spec allows one).

    bf16 needs Ampere or newer; without it the fallback runs in fp16 (same
    bytes; fp16's narrower range can overflow on some checkpoints). fp8
    compute needs Ada, Hopper or Blackwell tensor cores; without them the
    fallback is weight-only FP8 (vLLM's FP8 Marlin W8A16 kernels, Ampere and
    newer: vLLM docs "FP8 W8A8", 2025), computing in 16-bit; a bf16 KV
    cache becomes fp16. A spec opts in with
    `sizing.precision_fallback: true`; the note names what runs instead.
    """
    p = w.spec.precision
    wanted = [p] if p in ("bf16", "fp8") else []
    if w.kv_precision == "bf16" and p != "bf16":
        wanted.append("bf16")  # an fp8 KV cache is storage only (vLLM fp8_e5m2 runs on Ampere), not checked
    missing = [x for x in wanted if not gpu.runs(x)]
    if not missing:
        return "", ""
    fallbacks = []
    for x in missing:
        if x == "fp8" and not gpu.runs("bf16"):
            return f"{gpu.name} ({gpu.arch}) has no fp8 and no weight-only fp8 kernels (need Ampere or newer)", ""
        fallbacks.append(f"{x} runs as {'fp16' if x == 'bf16' else 'weight-only fp8 (16-bit compute)'}")
    reason = f"{gpu.name} ({gpu.arch}) has no {' or '.join(missing)} tensor cores"
    if not w.spec.sizing.precision_fallback:
        return f"{reason}. To allow a fallback, set sizing.precision_fallback: true", ""
    return "", f"{reason}: {', '.join(fallbacks)}"


def apart(a: float, b: float) -> tuple[str, str]:
    """`a` and `b` with one decimal, or as many more (up to 4) as it takes to show them unequal:
    "14.2 < 14.2" reads as a contradiction where "14.17 < 14.21" does not.

    >>> apart(14.17, 14.21)
    ('14.17', '14.21')
    >>> apart(1500.0, 48.0)
    ('1,500.0', '48.0')
    """
    for digits in range(1, 5):
        x, y = f"{a:,.{digits}f}", f"{b:,.{digits}f}"
        if x != y:
            break
    return x, y


def _memory_fail(shape: Shape, usable: float, need: float, extra: str = "") -> Fit:
    shown_usable, shown_need = apart(usable, need)
    return Fit(
        "memory",
        f"{shape.label}: {shown_usable} GiB usable per GPU < {shown_need} GiB needed{extra}",
        need,
        usable,
    )


def _fit_inference(w: Workload, shape: Shape, gpu: hardware.GpuSpec, usable: float) -> Fit:
    """The best serving layout on `shape` (ranked by _layout_key).

    One node: tensor parallel over all its GPUs; with a throughput target,
    also every degree t in TP_DEGREES that divides the node's GPU count, n/t
    replicas per node (without one, packing replicas would only hold more
    GPU memory per node than one replica needs). Several nodes: one replica,
    tensor parallel over each node's GPUs, one pipeline stage per node, which
    needs a fabric (EFA/GPUDirect). When no layout passes, the failure of the
    widest layout (the most memory per replica) is the reason given.
    """
    if shape.nodes > 1 and not shape.fabric:
        return Fit("interconnect", f"{shape.label}: pipeline stages across nodes need EFA/GPUDirect; none here", 0.0, usable)
    n = shape.gpu_count
    packs = w.targets.tokens_per_second and shape.nodes == 1 and shape.gpu_fraction == 1
    degrees = [t for t in TP_DEGREES if t <= n and n % t == 0] if packs else [n]
    if w.model.kind != "llm":
        degrees = [1]  # encoders, ViTs and diffusion pipelines run one copy per GPU (data parallel)
    best: Fit | None = None
    widest: Fit | None = None
    for t in degrees:
        f = _layout(w, shape, gpu, usable, t)
        widest = f
        if f.ok and (best is None or _layout_key(w, f) < _layout_key(w, best)):
            best = f
    return best or widest


def _layout_key(w: Workload, f: Fit) -> tuple:
    """Rank passing layouts: fewest node groups; then, with a throughput target, the most
    tokens/s per node (headroom); without one, the shortest TPOT (latency)."""
    if f.speed is None:
        return (f.node_groups, -f.replicas_per_node)
    if w.targets.tokens_per_second:
        return (f.node_groups, -f.speed.tokens_per_second * f.replicas_per_node)
    return (f.node_groups, f.speed.tpot_ms)


def _layout(w: Workload, shape: Shape, gpu: hardware.GpuSpec, usable: float, tp: int) -> Fit:
    """One serving layout: `tp` GPUs per stage, shape.nodes stages, shape.gpu_count // tp replicas per node."""
    m = w.model
    stages = shape.nodes
    per_node = shape.gpu_count // tp if stages == 1 else 1
    layout = dict(tensor_parallel=tp, pipeline_stages=stages, replicas_per_node=per_node)
    need = w.memo(("serving-gib", tp, stages), lambda: units.gib(
        memory.per_gpu_inference_bytes(m, w.breakdown, tp, stages) + memory.overhead_bytes("inference", tp * stages)))
    if need > usable:
        return _memory_fail(shape._replace(gpu_count=tp) if per_node > 1 else shape, usable, need)
    problem = tensor_parallel_problem(w, tp, stages)
    if problem:
        return Fit("interconnect", f"{_label(shape, per_node, tp)}: {problem}", need, usable, **layout)
    base = w.spec.deploy.replicas
    if m.kind != "llm":
        return Fit("", "", need, usable, replicas=base, **layout)  # images, not tokens: sized by memory at the batch
    s = w.serving_speed(gpu, tp * shape.gpu_fraction, shape.nvlink, stages, shape.network_gbps)
    targets = w.targets
    if targets.ttft_ms and s.ttft_ms > targets.ttft_ms:
        return Fit("ttft", f"{_label(shape, per_node, tp)}: TTFT {s.ttft_ms:.0f} ms > {targets.ttft_ms:.0f} ms "
                   f"target{_comm_note(s)}", need, usable, speed=s, **layout)
    if targets.tpot_ms and s.tpot_ms > targets.tpot_ms:
        return Fit("tpot", f"{_label(shape, per_node, tp)}: TPOT {s.tpot_ms:.1f} ms > {targets.tpot_ms:.1f} ms "
                   f"target{_comm_note(s)}", need, usable, speed=s, **layout)
    tps = w.targets.tokens_per_second
    replicas = max(base, math.ceil(tps / s.tokens_per_second)) if tps else base
    groups = math.ceil(replicas / per_node)
    if groups > MAX_REPLICAS:
        return Fit(
            "throughput",
            f"{_label(shape, per_node, tp)}: {s.tokens_per_second:,.0f} tokens/s per replica; {tps:,.0f} tokens/s would take "
            f"{replicas} replicas on {groups} x {shape.label} (more than {MAX_REPLICAS})",
            need,
            usable,
            speed=s,
            **layout,
        )
    return Fit("", "", need, usable, speed=s, replicas=replicas, **layout)


def _label(shape: Shape, per_node: int, tp: int) -> str:
    """The layout as a detail names it: "L4 x4", or "L4 x4 as 2 x TP2" when a node runs several replicas."""
    return shape.label if per_node == 1 else f"{shape.label} as {per_node} x TP{tp}"


def _comm_note(s: speed.InferenceSpeed) -> str:
    parts = []
    if s.allreduce_ms:
        parts.append(f"all-reduce {s.allreduce_ms:.1f} ms over {s.link}")
    if s.pipeline_ms:
        parts.append(f"pipeline hops {s.pipeline_ms:.2f} ms")
    return f" (incl. {', '.join(parts)})" if parts else ""


def tensor_parallel_problem(w: Workload, tp: int, stages: int = 1) -> str:
    """Why a tensor-parallel degree `tp` x `stages` pipeline stages cannot split the model, or "".

    Megatron-style TP splits attention heads, so the degree must divide the
    attention heads; KV heads must divide by it, or it by them (vLLM then
    replicates KV heads). Pipeline stages split the layers, so there can be
    no more stages than layers. The link is not a rule: its all-reduce time
    is in the speed estimate (estimate.comm).
    """
    m = w.model
    if m.kind != "llm":
        return ""
    if stages > m.layers:
        return f"{stages} pipeline stages exceed {m.layers} layers"
    if tp == 1:
        return ""
    if m.attention_heads % tp:
        return f"tensor parallel {tp} does not divide {m.attention_heads} attention heads"
    if not m.is_mla and m.kv_heads % tp and tp % m.kv_heads:
        return f"tensor parallel {tp} and {m.kv_heads} KV heads do not divide each other"
    return ""


def _fit_training(w: Workload, shape: Shape, gpu: hardware.GpuSpec, usable: float) -> Fit:
    n = shape.total_gpus
    levels = memory.SHARDING_LEVELS if w.spec.train.sharding == "auto" else (w.spec.train.sharding,)
    if n == 1:
        levels = ("none",)
    needs = w.memo(("training-gib", n), lambda: [
        (level, units.gib(memory.per_gpu_training_bytes(w.breakdown, n, level) + memory.overhead_bytes(w.spec.task, n)))
        for level in levels])
    chosen, need = next(((level, need) for level, need in needs if need <= usable), (None, needs[-1][1]))
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
            shown_hours, shown_deadline = apart(hours, deadline)
            return Fit(
                "deadline",
                f"{shape.label}: {shown_hours} h to train > {shown_deadline} h deadline",
                need,
                usable,
                chosen,
                train_hours=hours,
            )
    return Fit("", "", need, usable, chosen, train_hours=hours)
