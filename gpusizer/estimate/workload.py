"""A spec resolved against its model: the shape-independent requirements, computed once."""

from __future__ import annotations

import dataclasses
import functools
import math

from gpusizer import spec as spec_mod
from gpusizer.base import units
from gpusizer.estimate import calibration as calibration_mod
from gpusizer.estimate import efficiency, memory, speed
from gpusizer.facts import hardware, registry

# Host balance (gpusizer defaults, 2026-11; the right-sizing method's "coupled
# limits"). Serving: 2 vCPUs per GPU for the API server, tokenizer and
# scheduler (vLLM runs one process per GPU plus the front end); the smallest
# cloud GPU shapes give 4 (g6.xlarge, g2-standard-4). Training: 4 vCPUs per
# GPU for data-loader workers (PyTorch DataLoader guidance: workers per GPU).
VCPUS_PER_GPU = {"inference": 2, "training": 4, "finetune": 4}
# Root disk: the OS, CUDA and framework images of a Deep Learning AMI/VM take
# about 75 GiB (AWS DLAMI GPU images ship a 75 GiB root volume, 2025); we add
# 25 GiB of margin and the model files (weights; training also keeps two
# checkpoints of weights + optimizer states).
BASE_DISK_GIB = 100
# Runtimes that allocate on demand (PyTorch's caching allocator: diffusers, timm, training loops) reserve
# nothing up front beyond the CUDA context (counted in memory.overhead_bytes); the margin left is for the
# allocator's fragmentation, which PyTorch's "CUDA semantics" notes address with expandable_segments:
# 5% (unverified: no published fragmentation figure for these workloads was found).
ON_DEMAND_HEADROOM = 0.95


@dataclasses.dataclass(frozen=True, slots=True)
class EffectiveTargets:
    tokens_per_second: float | None
    ttft_ms: float | None
    tpot_ms: float | None
    requests_per_second: float | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class Workload:
    """A validated spec, its model, and everything about it that does not depend on the GPU."""

    spec: spec_mod.WorkloadSpec
    model: registry.ModelArch
    breakdown: memory.MemoryBreakdown
    kv_precision: str | None
    training_flops: float | None
    calibration: calibration_mod.Calibration | None = None
    resolution: registry.Resolution | None = None  # how a registry name matched (None: hf_id, hf_config, explicit)
    # Per-layout speeds and per-GPU verdicts (memo()); a replace() that changes what they read passes _memo={}.
    _memo: dict = dataclasses.field(default_factory=dict, repr=False)

    @functools.cached_property
    def targets(self) -> EffectiveTargets:
        """Serving targets with growth applied (latency targets are not scaled); computed once."""
        t = self.spec.serving.targets
        tps = t.tokens_per_second * self.spec.growth if t.tokens_per_second else None
        rps = t.requests_per_second * self.spec.growth if t.requests_per_second else None
        if rps and self.spec.task == "inference":
            by_rate = rps * self.lengths[1]
            tps = max(tps or 0.0, by_rate)
        return EffectiveTargets(tps, t.ttft_ms, t.tpot_ms, rps)

    def memo(self, key: tuple, compute):
        """`compute()` once per `key` for this workload (a GPU-dependent verdict that no shape changes)."""
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = compute()
        return found

    @property
    def memory_headroom(self) -> float:
        """Share of GPU memory the workload may use: sizing.memory_headroom when the spec sets it, else the
        runtime's: 0.90 for LLM serving (vLLM reserves gpu_memory_utilization, default 0.9, up front),
        ON_DEMAND_HEADROOM for runtimes that allocate on demand (diffusers, timm, PyTorch training)."""
        sizing = self.spec.sizing
        if "memory_headroom" in sizing.model_fields_set:
            return sizing.memory_headroom
        if self.spec.task == "inference" and self.model.kind == "llm":
            return sizing.memory_headroom
        return ON_DEMAND_HEADROOM

    @property
    def weight_format(self) -> str:
        """The efficiency table's weight-format key: the quantization scheme's kernels, else the precision's."""
        q = self.spec.model.quantization
        if q is not None:
            return {"w8a8-int8": "int8", "fp8-block": "fp8"}.get(q.scheme, q.scheme)
        if self.spec.method == "qlora":
            return "nf4"
        return speed._format_of(self.spec.precision)

    @functools.cached_property
    def lengths(self) -> tuple[int, float, int]:
        """(mean prompt, mean output, prompt for time to first token) of a request.

        prompt_tokens given: that prompt, output_tokens' mean or the rest of context_length (half the
        context when prompt_tokens fills it).
        Not given: TTFT on context_length tokens (the worst case, as before output_tokens
        existed); speed with output_tokens' mean and the rest as prompt, else half and half.
        """
        inf = self.spec.serving
        ctx = inf.context_length
        if inf.prompt_tokens:
            # No room left for output (prompt_tokens = context_length): half the context, as below.
            out = inf.output_mean or (ctx - inf.prompt_tokens if ctx > inf.prompt_tokens else max(1, ctx // 2))
            return inf.prompt_tokens, float(out), inf.prompt_tokens
        if inf.output_mean:
            return max(1, ctx - inf.output_max), float(inf.output_mean), ctx
        return max(1, ctx // 2), float(max(1, ctx - ctx // 2)), ctx

    @property
    def weights_gib(self) -> float:
        return units.gib(self.breakdown.weights)

    def efficiency(self, gpu: str) -> tuple[float, float, float]:
        """(decode MBU, inference MFU, training MFU) on `gpu`: the calibration's where it has them, else the defaults."""
        fmt = self.weight_format
        if self.calibration is None or gpu not in self.calibration.gpus:
            return efficiency.decode_mbu(gpu, fmt), efficiency.inference_mfu(gpu), efficiency.training_mfu(gpu)
        mbu, mfu, train = self.calibration.efficiency(gpu)
        if "decode_mbu" not in self.calibration.gpus[gpu]:
            mbu *= efficiency.format_factor(fmt)
        return mbu, mfu, train

    def serving_speed(
        self,
        gpu: hardware.GpuSpec,
        gpus: float,
        nvlink: bool,
        stages: int = 1,
        network_gbps: float = 0.0,
        concurrency: int | None = None,
    ) -> speed.InferenceSpeed:
        """Serving speed of one replica on `gpus` tensor-parallel GPUs x `stages` nodes at `concurrency`
        requests (default batch_size), memoised per layout."""
        inf = self.spec.serving
        c = concurrency or inf.batch_size
        key = (gpu.name, gpus, nvlink, stages, network_gbps if stages > 1 else 0.0, c)
        if key not in self._memo:
            mbu, mfu, _ = self.efficiency(gpu.name)
            prompt, out, first = self.lengths
            self._memo[key] = speed.inference_speed(
                self.model,
                gpu,
                gpus,
                nvlink,
                self.spec.precision,
                self.kv_precision,
                inf.context_length,
                prompt,
                c,
                stages=stages,
                fabric_gbps=network_gbps,
                mbu=mbu,
                mfu=mfu,
                output=out,
                weight_format=self.weight_format,
                ttft_prompt=first,
                weights=self.breakdown.weights,
            )
        return self._memo[key]

    def min_vcpus(self, gpus: float) -> int:
        return max(2, math.ceil(VCPUS_PER_GPU[self.spec.task] * gpus))

    def min_ram_gib(self, gpus_per_node: int = 1) -> float:
        """Host RAM per node: one GPU's share of the weights, which each worker streams through host memory.

        vLLM and PyTorch load safetensors shards by memory-mapping them; a
        tensor-parallel worker keeps its own shard resident while it copies it
        to the GPU. A node with less RAM than that swaps or fails to load.
        """
        return self.weights_gib / max(1, gpus_per_node)

    @property
    def disk_gib(self) -> int:
        """Root disk per node: base image + model files (+ two checkpoints when training)."""
        if self.spec.deploy.disk_gib:
            return self.spec.deploy.disk_gib
        files = self.breakdown.weights
        if self.spec.task != "inference":
            files += 2 * (self.breakdown.weights + self.breakdown.optimizer_states)
        return BASE_DISK_GIB + memory.ceil_gib(files)


def default_kv_precision(precision: str) -> str:
    """The KV cache is kept in 16-bit unless the spec sets kv_cache_precision.

    vLLM's default kv_cache_dtype "auto" stores the cache in the model's
    activation dtype (vLLM engine arguments, --kv-cache-dtype, 2025): bf16 for
    bf16 and FP8 checkpoints (FP8 checkpoints keep bf16 activations), fp16 for
    fp16 and for AWQ/GPTQ int8/int4 checkpoints, fp32 only for fp32 weights.
    An fp8 cache is an explicit choice (kv_cache_precision: fp8).
    """
    return {"fp32": "fp32", "fp16": "fp16", "int8": "fp16", "int4": "fp16"}.get(precision, "bf16")


def resolve(spec: spec_mod.WorkloadSpec, model: registry.ModelArch) -> Workload:
    """Compute the shape-independent requirements of `spec` running `model`."""
    if spec.task == "inference":
        inf = spec.serving
        kv_p = inf.kv_cache_precision or default_kv_precision(spec.precision)
        q = spec.model.quantization
        b = memory.MemoryBreakdown(
            weights=memory.weight_bytes(model, spec.precision, q.scheme if q else None, q.group_size if q else None),
            kv_cache=memory.kv_bytes_per_sequence(model, inf.context_length, kv_p) * inf.batch_size,
            activations=memory.inference_activation_bytes(model, inf.context_length, inf.batch_size),
            gradients=0.0,
            optimizer_states=0.0,
            overhead=memory.overhead_bytes("inference", 1),
        )
        return Workload(spec, model, b, kv_p, None)
    t = spec.train
    weights, grads, opt = memory.training_state_bytes(
        model, spec.precision, spec.method, t.optimizer, t.lora_rank, t.master_weights
    )
    b = memory.MemoryBreakdown(
        weights=weights,
        kv_cache=0.0,
        activations=memory.training_activation_bytes(
            model, t.sequence_length, t.micro_batch_size, t.activation_checkpointing
        ),
        gradients=grads,
        optimizer_states=opt,
        overhead=memory.overhead_bytes(spec.task, 1),
    )
    flops = speed.training_flops(model, t.tokens, spec.method, seq=t.sequence_length) if t.tokens else None
    return Workload(spec, model, b, None, flops)
