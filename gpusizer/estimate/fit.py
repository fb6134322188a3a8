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
from gpusizer.estimate import jobcost, memory, speed
from gpusizer.estimate.workload import Workload
from gpusizer.facts import hardware

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
        offer.gpu,
        offer.gpu_memory_gib,
        offer.gpu_count,
        offer.gpu_fraction,
        offer.nvlink,
        offer.fabric is not None,
        nodes,
        offer.network_gbps,
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
    fixed: jobcost.FixedTime | None = None
    placement_note: str = ""  # how a diffusion pipeline's components are placed (offload), else ""
    context_parallel: int = 1  # training: ranks one sequence is split over (ring attention)  # a training run's boot, pulls, downloads, checkpoint (estimate.jobcost)

    @property
    def run_hours(self) -> float | None:
        """A training run's wall-clock: training plus the fixed time, or None."""
        if self.train_hours is None:
            return None
        return self.train_hours + (self.fixed.total if self.fixed else 0.0)

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
    usable = shape.gpu_memory_gib * w.memory_headroom
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


# Architectures older than Turing (compute capability < 7.5): no AWQ/GPTQ/INT8 kernels in vLLM
# (vLLM quantization hardware support table, docs.vllm.ai "Supported Hardware", 2025).
_PRE_TURING = ("Pascal", "Volta")


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
    q = w.spec.model.quantization
    if q is not None and q.scheme not in ("fp8", "fp8-block", "nvfp4", "mxfp4") and gpu.arch in _PRE_TURING:
        return f"{gpu.name} ({gpu.arch}) has no kernels for {q.scheme} weights (vLLM needs compute capability 7.5+)", ""
    if p == "fp4" and not gpu.runs("fp4"):
        return f"{gpu.name} ({gpu.arch}) has no FP4 tensor cores (NVFP4/MXFP4 need Blackwell)", ""
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
    if shape.nodes > 1 and w.model.kind != "llm":
        return Fit(
            "interconnect",
            f"{shape.label}: {w.model.kind} models are not split into pipeline stages across "
            "nodes; their components share one GPU or are offloaded to CPU",
            0.0,
            usable,
        )
    if shape.nodes > 1 and not shape.fabric:
        return Fit(
            "interconnect", f"{shape.label}: pipeline stages across nodes need EFA/GPUDirect; none here", 0.0, usable
        )
    n = shape.gpu_count
    packs = w.targets.tokens_per_second and shape.nodes == 1 and shape.gpu_fraction == 1
    degrees = [t for t in TP_DEGREES if t <= n and n % t == 0] if packs else [n]
    if w.model.kind != "llm":
        degrees = [1]  # encoders, ViTs and diffusion pipelines run one copy per GPU (data parallel)
    pin = _pinned(w)
    if pin.pipeline_stages and shape.nodes != pin.pipeline_stages:
        return Fit(
            "interconnect",
            f"{shape.label}: inference.layout pins {pin.pipeline_stages} pipeline stage(s) (nodes)",
            0.0,
            usable,
        )
    if pin.tensor_parallel:
        if shape.gpu_count % pin.tensor_parallel or (shape.nodes > 1 and shape.gpu_count != pin.tensor_parallel):
            return Fit(
                "interconnect",
                f"{shape.label}: inference.layout pins tensor parallel {pin.tensor_parallel}, "
                "which this shape cannot run",
                0.0,
                usable,
            )
        degrees = [pin.tensor_parallel]
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
    need = w.memo(
        ("serving-gib", tp, stages),
        lambda: units.gib(
            memory.per_gpu_inference_bytes(m, w.breakdown, tp, stages) + memory.overhead_bytes("inference", tp * stages)
        ),
    )
    note = ""
    if need > usable and m.kind == "diffusion" and m.denoiser_params:
        # Diffusion pipelines keep the denoiser resident and load the text encoders and VAE only when they
        # run (diffusers enable_model_cpu_offload: one component on the GPU at a time; diffusers "Reduce
        # memory usage" docs, 2025): the GPU holds the denoiser, the activations and the overhead.
        offload = units.gib(
            memory.weight_bytes(m, w.spec.precision) * m.denoiser_params / m.params
            + w.breakdown.activations
            + memory.overhead_bytes("inference", 1)
        )
        if offload <= usable:
            need, note = (
                offload,
                (
                    "text encoders and VAE offloaded to CPU between uses (diffusers "
                    "enable_model_cpu_offload): slower first step per prompt"
                ),
            )
    if need > usable:
        return _memory_fail(shape._replace(gpu_count=tp) if per_node > 1 else shape, usable, need)
    problem = tensor_parallel_problem(w, tp, stages)
    if problem:
        return Fit("interconnect", f"{_label(shape, per_node, tp)}: {problem}", need, usable, **layout)
    base = max(w.spec.deploy.replicas, _pinned(w).data_parallel or 1)
    if m.kind != "llm":  # images, not tokens: sized by memory at the batch
        return Fit("", "", need, usable, replicas=base, placement_note=note, **layout)
    max_c = _max_concurrency(w, tp, stages, usable - need)
    speed_at = lambda c: w.serving_speed(gpu, tp * shape.gpu_fraction, shape.nvlink, stages, shape.network_gbps, c)  # noqa: E731
    batch = w.spec.serving.batch_size
    s = speed_at(batch)._replace(max_concurrency=max_c)
    targets = w.targets
    label = _label(shape, per_node, tp)
    tps = targets.tokens_per_second
    if not tps:
        problem = _latency_problem(w, s, base)
        if problem:
            code, text = problem
            return Fit(code, f"{label}: {text}{_comm_note(s)}", need, usable, speed=s, **layout)
        return Fit("", "", need, usable, speed=s, replicas=base, **layout)
    # A throughput target: the concurrency (batch_size up to what memory holds) that needs the fewest
    # replicas while every latency target holds at it.
    best, first_problem = None, None
    for c in _concurrencies(batch, max_c):
        sc = speed_at(c)._replace(max_concurrency=max_c)
        replicas = max(base, math.ceil(tps / sc.tokens_per_second))
        problem = _latency_problem(w, sc, replicas)
        while problem and problem[0] == "queue" and replicas < MAX_REPLICAS * per_node:
            replicas += max(1, replicas // 8)
            problem = _latency_problem(w, sc, replicas)
        if problem:
            first_problem = first_problem or (sc, problem)
            continue
        if best is None or replicas < best[1]:
            best = (sc, replicas)
    if best is None:
        sc, (code, text) = first_problem
        code = "ttft" if code == "queue" else code
        return Fit(code, f"{label}: {text}{_comm_note(sc)}", need, usable, speed=sc, **layout)
    s, replicas = best
    groups = math.ceil(replicas / per_node)
    if groups > MAX_REPLICAS:
        return Fit(
            "throughput",
            f"{label}: {s.tokens_per_second:,.0f} tokens/s per replica at {s.concurrency} concurrent requests; "
            f"{tps:,.0f} tokens/s would take {replicas} replicas on {groups} x {shape.label} (more than {MAX_REPLICAS})",
            need,
            usable,
            speed=s,
            **layout,
        )
    return Fit("", "", need, usable, speed=s, replicas=replicas, **layout)


def _pinned(w: Workload):
    from gpusizer import spec as spec_mod

    return w.spec.serving.layout or spec_mod.ServingLayout()


def _concurrencies(batch: int, max_c: int) -> list[int]:
    """batch_size, then powers of two up to the most sequences memory holds (capped at speed.MAX_NUM_SEQS)."""
    top = max(batch, min(max_c, speed.MAX_NUM_SEQS))
    out = [batch]
    c = 1
    while c < top:
        c *= 2
        if batch < c < top:
            out.append(c)
    if top > batch:
        out.append(top)
    return out


def _max_concurrency(w: Workload, tp: int, stages: int, free_gib: float) -> int:
    """Sequences one replica holds: batch_size plus what the free memory per GPU takes at peak context."""
    m, b = w.model, w.breakdown
    batch = w.spec.serving.batch_size
    per_seq = b.kv_cache / batch / stages
    if not m.is_mla:
        per_seq /= min(tp, m.kv_heads)
    if per_seq <= 0:
        return batch
    return batch + max(0, int(free_gib * units.GIB / per_seq))


def _latency_problem(w: Workload, s: speed.InferenceSpeed, replicas: int) -> tuple[str, str] | None:
    """The first latency target `s` misses with `replicas` replicas sharing the request rate, or None.

    Codes: ttft / tpot (the mean targets at this concurrency), queue (a percentile target: more
    replicas may meet it)."""
    t = w.targets
    if t.ttft_ms and s.ttft_ms > t.ttft_ms:
        return "ttft", f"TTFT {s.ttft_ms:.0f} ms > {t.ttft_ms:.0f} ms target at {s.concurrency} concurrent requests"
    if t.tpot_ms and s.tpot_ms > t.tpot_ms:
        return "tpot", f"TPOT {s.tpot_ms:.1f} ms > {t.tpot_ms:.1f} ms target at {s.concurrency} concurrent requests"
    rps = t.requests_per_second
    for q, pt in w.spec.serving.targets.percentiles():
        if pt.tpot_ms and s.tpot_ms > pt.tpot_ms:
            return "tpot", f"p{q * 100:g} TPOT {s.tpot_ms:.1f} ms > {pt.tpot_ms:.1f} ms target"
        wait = speed.queue_wait_seconds(s, rps / replicas, q) * 1e3
        for name, value, target in (("TTFT", s.ttft_ms + wait, pt.ttft_ms), ("end-to-end", s.e2e_ms + wait, pt.e2e_ms)):
            if target and value > target:
                shown = "unbounded (the rate exceeds capacity)" if wait == float("inf") else f"{value:,.0f} ms"
                return "queue", (
                    f"p{q * 100:g} {name} {shown} > {target:,.0f} ms target at {rps / replicas:.2f} "
                    f"requests/s per replica, {s.concurrency} concurrent"
                )
    return None


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


# Sequence length from which training also tries context parallelism (long-context recipes: Llama 3
# used it from 8k-token sequences upward in its long-context stage, arXiv:2407.21783 section 3.3.2).
CP_MIN_SEQUENCE = 8192


def _training_layouts(w: Workload, shape: Shape) -> list[tuple[int, int, int]]:
    """(tensor parallel, pipeline stages, context parallel) to try, least model parallelism first: data parallel
    alone, then tensor parallel inside a node (degrees dividing the attention heads), then context parallel inside
    a node for long sequences, then one pipeline stage per node."""
    m = w.model
    out = [(1, 1, 1)]
    if m.kind != "llm" or shape.gpu_fraction < 1:
        return out
    n = shape.gpu_count
    tps = [t for t in TP_DEGREES[1:] if t <= n and n % t == 0 and not m.attention_heads % t]
    out += [(t, 1, 1) for t in tps]
    if w.spec.train.sequence_length >= CP_MIN_SEQUENCE:
        out += [(t, 1, c) for t in [1, *tps] for c in TP_DEGREES[1:] if t * c <= n and n % (t * c) == 0]
    if shape.nodes > 1 and shape.nodes <= m.layers:
        out += [(t, shape.nodes, 1) for t in [1, *tps]]
    return out


def _fit_training(w: Workload, shape: Shape, gpu: hardware.GpuSpec, usable: float) -> Fit:
    n = shape.total_gpus
    levels = memory.SHARDING_LEVELS if w.spec.train.sharding == "auto" else (w.spec.train.sharding,)
    if n == 1:
        levels = ("none",)
    chosen = need = None
    tp = pp = cp = 1
    last_need = 0.0
    for tp_, pp_, cp_ in _training_layouts(w, shape):
        needs = w.memo(
            ("training-gib", n, tp_, pp_, cp_),
            lambda tp_=tp_, pp_=pp_, cp_=cp_: [
                (
                    level,
                    units.gib(
                        memory.per_gpu_training_bytes(w.breakdown, n, level, tp_, pp_, cp_)
                        + memory.overhead_bytes(w.spec.task, n)
                    ),
                )
                for level in levels
            ],
        )
        found = next(((level, nd) for level, nd in needs if nd <= usable), None)
        last_need = needs[-1][1] if tp_ == pp_ == cp_ == 1 else min(last_need, needs[-1][1])
        if found:
            (chosen, need), tp, pp, cp = found, tp_, pp_, cp_
            break
    if chosen is None:
        extra = (
            f" even with {levels[-1]}" + (" and model parallelism" if len(_training_layouts(w, shape)) > 1 else "")
            if n > 1
            else ""
        )
        return _memory_fail(shape, usable, last_need, extra)
    if shape.nodes > 1 and not shape.fabric:
        return Fit(
            "interconnect", f"{shape.label}: multi-node training needs EFA/GPUDirect; none here", need, usable, chosen
        )
    hours = None
    if w.training_flops:
        t = w.spec.train
        trainable = memory.lora_params(w.model, t.lora_rank) if w.spec.method in ("lora", "qlora") else w.model.params
        ckpt_bytes = w.breakdown.weights + (w.breakdown.optimizer_states if w.spec.method == "full" else 0.0)
        hours = speed.training_time(
            w.training_flops,
            gpu,
            n * shape.gpu_fraction,
            w.spec.precision,
            mfu=w.efficiency(gpu.name)[2],
            model=w.model,
            checkpointing=t.activation_checkpointing,
            tp=tp,
            pp=pp,
            cp=cp,
            nvlink=shape.nvlink,
            nodes=shape.nodes,
            network_gbps=shape.network_gbps,
            tokens=t.tokens,
            seq=t.sequence_length,
            micro_batch=t.micro_batch_size,
            trainable_params=trainable,
            checkpoint_bytes=ckpt_bytes,
            method=w.spec.method,
        ).hours
        source = memory.weight_bytes(w.model, "bf16") if w.spec.method == "qlora" else w.breakdown.weights
        final = w.breakdown.gradients if w.spec.method in ("lora", "qlora") else ckpt_bytes  # adapters: their fp32 size
        fixed = jobcost.fixed_time(shape.network_gbps, source, t.tokens, final, shape.nodes)
        deadline = w.spec.train.deadline_hours
        code = detail = ""
        if deadline and hours + fixed.total > deadline:
            shown_hours, shown_deadline = apart(hours + fixed.total, deadline)
            code = "deadline"
            detail = (
                f"{shape.label}: {shown_hours} h to run ({fixed.total * 60:.0f} min of it boot, pulls, downloads "
                f"and checkpoint) > {shown_deadline} h deadline"
            )
        return Fit(
            code,
            detail,
            need,
            usable,
            chosen,
            train_hours=hours,
            tensor_parallel=tp,
            pipeline_stages=pp,
            fixed=fixed,
            context_parallel=cp,
        )
    return Fit("", "", need, usable, chosen, train_hours=hours, tensor_parallel=tp, pipeline_stages=pp)
