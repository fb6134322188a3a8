"""The one entry point the CLI, the components and the policies call: spec -> Decision."""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Iterable, Mapping
from typing import Any

from gpusizer import errors, hardware, optimize, registry, spec as spec_mod
from gpusizer.catalog import Catalog
from gpusizer.decision import Decision, requirements_dict
from gpusizer.estimate import calibration as calibration_mod, fit as fit_mod, workload as workload_mod


def load_spec(source: str | os.PathLike | Mapping[str, Any] | spec_mod.WorkloadSpec) -> spec_mod.WorkloadSpec:
    """Read and validate a spec from a YAML path or a mapping, resolving its model.

    Raises:
        SpecError: naming the field and the fix (unknown model included).
    """
    return _load(source).spec


def _load(source) -> workload_mod.Workload:
    """Validate `source` and resolve it into a Workload (the model looked up once)."""
    if isinstance(source, (str, os.PathLike)):
        path = pathlib.Path(source)
        spec = spec_mod.parse_spec(spec_mod.read_spec_file(path), base_dir=path.parent)
    else:
        spec = spec_mod.parse_spec(dict(source) if isinstance(source, Mapping) else source)
    return workload(spec)


def model_of(ref: spec_mod.ModelRef) -> registry.ModelArch:
    """The architecture a spec's `model` names."""
    if ref.name is not None:
        return registry.lookup(ref.name)
    if ref.hf_config is not None:
        return registry.from_hf_config(ref.hf_config)
    return registry.from_architecture(
        params_b=ref.params_b,
        active_params_b=ref.active_params_b,
        layers=ref.layers,
        hidden_size=ref.hidden_size,
        attention_heads=ref.attention_heads,
        kv_heads=ref.kv_heads,
        head_dim=ref.head_dim,
    )


def workload(spec: spec_mod.WorkloadSpec) -> workload_mod.Workload:
    """Resolve the model and compute the GPU-independent requirements."""
    model = model_of(spec.model)
    spec = _default_lengths(spec, model)
    length, field = (
        (spec.serving.context_length, "inference.context_length")
        if spec.task == "inference"
        else (spec.train.sequence_length, "training.sequence_length")
    )
    if model.kind == "llm" and model.max_context and length > model.max_context:
        raise errors.SpecError(
            f"{field}: {length} tokens exceeds {model.display_name}'s trained context of {model.max_context}. "
            f"To fix: use at most {model.max_context}",
            field,
        )
    t = spec.serving.targets
    if model.kind != "llm" and (t.tokens_per_second or t.ttft_ms or t.tpot_ms):
        raise errors.SpecError(
            f"inference.targets: token targets apply to language models; {model.display_name} is a {model.kind} model. "
            "To fix: remove the targets (size by memory and batch_size)",
            "inference.targets",
        )
    for gpu in spec.placement.gpus or ():
        if gpu not in hardware.load_gpus():
            raise errors.SpecError(
                f"placement.gpus: unknown GPU {gpu!r}. To fix: use canonical names: {', '.join(hardware.load_gpus())}",
                "placement.gpus",
            )
    w = workload_mod.resolve(spec, model)
    cal = calibration_mod.for_spec(spec.sizing.calibration)
    return dataclasses.replace(w, calibration=cal) if cal else w


def _default_lengths(spec: spec_mod.WorkloadSpec, model: registry.ModelArch) -> spec_mod.WorkloadSpec:
    """Cap a defaulted context/sequence length (4096) at the model's trained context (Falcon: 2048)."""
    if not model.max_context:
        return spec
    if spec.task == "inference":
        section, field = spec.serving, "context_length"
    else:
        section, field = spec.train, "sequence_length"
    if field in section.model_fields_set or getattr(section, field) <= model.max_context:
        return spec
    fixed = section.model_copy(update={field: model.max_context})
    return spec.model_copy(update={"inference" if spec.task == "inference" else "training": fixed})


def plan(
    spec: spec_mod.WorkloadSpec | Mapping[str, Any] | str | os.PathLike,
    catalog: Catalog | None = None,
    pools: Iterable = (),
) -> Decision:
    """Size `spec` and choose the cheapest adequate offer in `catalog` (default: the packaged snapshot).

    Args:
        spec: a WorkloadSpec, a mapping in the spec format, or a YAML path.
        catalog: offers to choose from; default Catalog.load().
        pools: on-prem pools (gpusizer.catalog.onprem.Pool) competing with the clouds.
    """
    w = _load(spec)
    catalog = (catalog or Catalog.load()).with_pools(pools)
    return optimize.choose(w, catalog.offers, catalog.quotas, catalog.notes)


@dataclasses.dataclass(frozen=True)
class Estimate:
    """Requirements of a workload and, per GPU model, the fewest GPUs that run it."""

    workload: workload_mod.Workload
    per_gpu: tuple[dict, ...]

    def to_dict(self) -> dict:
        return {
            "workload": self.workload.spec.name,
            "model": self.workload.model.key,
            "task": self.workload.spec.task,
            "requirements": requirements_dict(self.workload),
            "calibration": self.workload.calibration.to_dict() | {"file": self.workload.calibration.path}
            if self.workload.calibration else None,
            "per_gpu": list(self.per_gpu),
        }


def estimate(spec, catalog: Catalog | None = None) -> Estimate:
    """Requirements, and the minimum count of each GPU model that satisfies them.

    The GPU shapes tried are the ones the catalog sells (GPU memory as the
    provider reports it, GPUs per node, NVLink, fabric), so "2 x L4" means a
    node that exists. Training may span nodes; serving stays on one node.
    Fractional GPUs are left to `plan`.
    """
    w = _load(spec)
    offers = (catalog or Catalog.load()).offers
    shapes: dict[str, set[fit_mod.Shape]] = {name: set() for name in hardware.load_gpus()}
    for o in offers:
        if o.gpu_fraction == 1 and o.gpu in shapes:
            shapes[o.gpu].add(fit_mod.Shape(o.gpu, o.gpu_memory_gib, o.gpu_count, 1.0, o.nvlink, o.fabric is not None))
    rows = []
    for name, gpu in hardware.load_gpus().items():
        node_shapes = shapes[name] or {
            fit_mod.Shape(name, gpu.memory_gib, c, 1.0, gpu.nvlink_gbs > 0, False) for c in (1, 2, 4, 8)
        }
        rows.append(_min_count(w, name, node_shapes))
    return Estimate(w, tuple(rows))


def _min_count(w: workload_mod.Workload, gpu: str, node_shapes: set[fit_mod.Shape]) -> dict:
    node_counts = (1,) if w.spec.task == "inference" else optimize.TRAINING_NODES
    tried = sorted(
        (dataclasses.replace(s, nodes=n) for s in node_shapes for n in node_counts if n == 1 or s.fabric),
        key=lambda s: (s.total_gpus, -s.gpu_memory_gib, not s.nvlink),
    )
    last_failure = None
    for shape in tried:
        f = fit_mod.fit(w, shape)
        if f.ok:
            limiting = last_failure.code if last_failure else _tightest(w, f)
            return {"gpu": gpu, "min_count": shape.total_gpus, "limiting": limiting, "nodes": shape.nodes}
        last_failure = f
    return {
        "gpu": gpu,
        "min_count": None,
        "limiting": last_failure.code if last_failure else "memory",
        "detail": last_failure.detail if last_failure else "not offered",
    }


def _tightest(w: workload_mod.Workload, f: fit_mod.Fit) -> str:
    """The requirement with the least room at a fitting shape: memory unless a target is closer."""
    ratios = {"memory": f.need_gib / f.usable_gib}
    t = w.targets if w.spec.task == "inference" else None
    if f.speed and t:
        if t.ttft_ms:
            ratios["ttft"] = f.speed.ttft_ms / t.ttft_ms
        if t.tpot_ms:
            ratios["tpot"] = f.speed.tpot_ms / t.tpot_ms
        if t.tokens_per_second:
            ratios["throughput"] = t.tokens_per_second / f.speed.tokens_per_second
    if f.train_hours and w.spec.train.deadline_hours:
        ratios["deadline"] = f.train_hours / w.spec.train.deadline_hours
    return max(ratios, key=ratios.get)

