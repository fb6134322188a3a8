"""The one entry point the CLI, the components and the policies call: spec -> Decision."""

from __future__ import annotations

import dataclasses
import math
import os
import pathlib
from collections.abc import Iterable, Mapping
from typing import Any

from gpusizer import spec as spec_mod
from gpusizer.base import errors, inputs, providers
from gpusizer.catalog import Catalog
from gpusizer.decide import mismatch, optimize
from gpusizer.decide.decision import Decision
from gpusizer.estimate import calibration as calibration_mod
from gpusizer.estimate import fit as fit_mod
from gpusizer.estimate import workload as workload_mod
from gpusizer.facts import hardware, registry


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
        spec = spec_mod.parse_spec(inputs.read_yaml(path, "spec file"), base_dir=path.parent)
    else:
        spec = spec_mod.parse_spec(dict(source) if isinstance(source, Mapping) else source)
    return workload(spec)


def model_of(ref: spec_mod.ModelRef) -> registry.ModelArch:
    """The architecture a spec's `model` names."""
    return _resolved_model(ref)[0]


def _resolved_model(ref: spec_mod.ModelRef) -> tuple[registry.ModelArch, registry.Resolution | None]:
    """The architecture a spec's `model` names, and for a registry name how it matched (else None)."""
    if ref.hf_id is not None:
        from gpusizer.facts import hub  # huggingface_hub is an optional extra

        return hub.model_from_hub(ref.hf_id), None
    if ref.name is not None:
        try:
            return registry.resolve(ref.name)
        except errors.UnknownModelError as unknown:
            if "/" not in ref.name:
                raise
            from gpusizer.facts import hub

            try:
                return hub.model_from_hub(ref.name), None  # an HF id no registry entry matches
            except errors.SpecError as exc:
                raise errors.UnknownModelError(f"{unknown} (As a Hugging Face id: {exc})", "model.name") from None
    if ref.hf_config is not None:
        return registry.from_hf_config(ref.hf_config), None
    return registry.from_architecture(
        params_b=ref.params_b,
        active_params_b=ref.active_params_b,
        layers=ref.layers,
        hidden_size=ref.hidden_size,
        attention_heads=ref.attention_heads,
        kv_heads=ref.kv_heads,
        head_dim=ref.head_dim,
    ), None


def workload(spec: spec_mod.WorkloadSpec) -> workload_mod.Workload:
    """Resolve the model and compute the GPU-independent requirements."""
    model, resolution = _resolved_model(spec.model)
    spec = _default_lengths(spec, model)
    length, field = (
        (spec.serving.context_length, "inference.context_length")
        if spec.task == "inference"
        else (spec.train.sequence_length, "training.sequence_length")
    )
    limit = registry.context_limit(model, spec.model.rope_scaling and spec.model.rope_scaling.factor)
    if model.kind == "llm" and limit and length > limit:
        named = f"{model.display_name} ({model.hf_id})" if model.hf_id else model.display_name
        loose = (
            f" (model.name {resolution.requested!r} leaves out a version or variant and resolved to {model.key}; "
            "`gpusizer models` lists the others)"
            if resolution is not None and resolution.loose
            else ""
        )
        if spec.model.rope_scaling:
            raise errors.SpecError(
                f"{field}: {length} tokens exceeds {named}'s trained context of {model.max_context} x "
                f"model.rope_scaling.factor {spec.model.rope_scaling.factor:g} = {limit}. "
                f"To fix: use at most {limit}, or raise model.rope_scaling.factor",
                field,
            )
        raise errors.SpecError(
            f"{field}: {length} tokens exceeds {named}'s trained context of {model.max_context}{loose}. "
            f"To fix: use at most {model.max_context}, name a model trained for longer contexts, or opt into "
            f"RoPE scaling with model.rope_scaling: {{type: yarn, factor: {math.ceil(length / model.max_context)}}}",
            field,
        )
    t = spec.serving.targets
    if model.kind != "llm" and (t.tokens_per_second or t.ttft_ms or t.tpot_ms):
        raise errors.SpecError(
            f"inference.targets: token targets apply to language models; {model.display_name} is a {model.kind} model. "
            "To fix: remove the targets (size by memory and batch_size)",
            "inference.targets",
        )
    if spec.placement.gpus:
        gpus = [
            known_name("placement.gpus", g, hardware.load_gpus(), lambda n: hardware.user_gpu(n, "placement.gpus"))
            for g in spec.placement.gpus
        ]
        spec = spec.model_copy(update={"placement": spec.placement.model_copy(update={"gpus": gpus})})
    w = dataclasses.replace(workload_mod.resolve(spec, model), resolution=resolution)
    cal = calibration_mod.for_spec(spec.sizing.calibration)
    return dataclasses.replace(w, calibration=cal) if cal else w


def known_name(field: str, given: str, known, canonical=None, also: str = "") -> str:
    """The known spelling of `given` (case-insensitive; `canonical` may map aliases), else a SpecError
    naming `field`, the nearest known names and `also` (another fix)."""
    found = canonical(given) if canonical else None
    by_lower = {k.lower(): k for k in known}
    found = found or by_lower.get(given.lower())
    if found:
        return found
    import difflib  # only for the error message

    near = difflib.get_close_matches(given.lower(), list(by_lower), n=5, cutoff=0.5)
    hint = ", ".join(by_lower[n] for n in near) if near else ", ".join(sorted(known)[:12])
    raise errors.SpecError(
        f"{field}: unknown {'GPU' if field.rstrip('s').endswith('gpu') else 'region or zone'} {given!r}. "
        f"To fix: use one of the known names{' nearest' if near else ''}: {hint}{also}",
        field,
    )


def _with_known_regions(w: workload_mod.Workload, catalog: Catalog) -> workload_mod.Workload:
    """Check placement.regions against the catalog's regions, zones and pool locations (case-insensitive).

    A name the catalog does not know is an input error, unless on-prem is
    allowed and no pool was given (it may name a pool's location: a spec a
    stack plans with its pools is planned here without them). When no name
    is known at all, nothing could run: that is an input error too.
    """
    p = w.spec.placement
    if not p.regions:
        return w
    known = catalog.places
    owned = set(providers.OWNED)
    pools_pending = bool(owned & set(p.providers or providers.NAMES)) and not owned & set(catalog.provider_names)
    lowered = {k.lower() for k in known}
    if pools_pending and not any(r.lower() in lowered for r in p.regions):  # nothing could run: raises
        known_name(
            "placement.regions",
            p.regions[0],
            known,
            also="; or, for an on-prem location, give the pools (--pools FILE)",
        )
    regions = []
    for r in p.regions:
        if pools_pending and r.lower() not in lowered:
            regions.append(r)
            continue
        hint = "" if r.lower() in lowered else _zone_hint(r, catalog)  # the hint scans the offers: only on failure
        regions.append(known_name("placement.regions", r, known, also=hint))
    spec = w.spec.model_copy(update={"placement": p.model_copy(update={"regions": regions})})
    return dataclasses.replace(w, spec=spec)


def _zone_hint(given: str, catalog: Catalog) -> str:
    """For a zone name the catalog does not use ("us-east-1a": AWS account-specific zone names), the zones it
    knows in that region: AWS offers are per zone ID (use1-az1), the same in every account."""
    region = given.rstrip("abcdefghijklmnopqrstuvwxyz").rstrip("-")
    zones = sorted({o.zone for o in catalog.offers if o.zone and o.region.lower() == region.lower()})
    if region.lower() == given.lower() or not any(o.region.lower() == region.lower() for o in catalog.offers):
        return ""
    listed = f"its zones in the catalog: {', '.join(zones[:8])}" if zones else "the catalog prices it per region"
    aws = any(o.provider == "aws" and o.region.lower() == region.lower() for o in catalog.offers)
    ids = f" (AWS zone IDs, the same in every account, unlike zone names such as {given})" if aws and zones else ""
    return f". {given!r} looks like a zone of {region}; {listed}{ids}. To fix: name the region {region}" + (
        " or one of those zones" if zones else ""
    )


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
    catalog = (catalog or Catalog.load()).with_pools(pools)
    w = _with_known_regions(_load(spec), catalog)
    notes = mismatch.check(w.spec.placement, catalog)
    return optimize.choose(w, catalog, notes=tuple(catalog.notes) + notes if notes else None)


@dataclasses.dataclass(frozen=True)
class Estimate:
    """Requirements of a workload and, per GPU model, the fewest GPUs that run it.

    Rendered by gpusizer.render (its JSON: gpusizer.render.plan_json.estimate).
    """

    workload: workload_mod.Workload
    per_gpu: tuple[dict, ...]


def estimate(spec, catalog: Catalog | None = None) -> Estimate:
    """Requirements, and per GPU model the fewest GPUs that satisfy them and the cheapest offer that does.

    `min_count` is independent of what the catalog sells (docs/contract.md
    section 2): layouts of c in {1, 2, 4, 8} GPUs on one node (NVLink where
    the GPU has it, else PCIe) and of 2..64 nodes of 1, 2, 4 or 8 GPUs over a fabric
    (pipeline stages when serving, data parallel when training), each times
    the replicas a throughput target takes; the fewest GPUs in all wins.
    `smallest_offer` is the cheapest feasible candidate of that GPU when the
    spec is planned against `catalog` (placement, purchase, host and quotas
    included), with `limiting: catalog-shape` when it holds more GPUs than
    `min_count` because that is the smallest shape sold.
    """
    cat = catalog or Catalog.load()
    w = _with_known_regions(_load(spec), cat)
    mismatch.check(w.spec.placement, cat)
    cheapest = optimize.choose(w, cat, notes=()).judged.cheapest_per_gpu()
    network = {}
    for o in cat.offers:
        if o.fabric is not None:
            network[o.gpu] = max(network.get(o.gpu, 0.0), o.network_gbps)
    rows = []
    for name, gpu in hardware.load_gpus().items():
        row = _min_count(w, gpu, network.get(name, DEFAULT_FABRIC_GBPS))
        row["smallest_offer"] = _offer_row(cheapest.get(name), row)
        rows.append(row)
    return Estimate(w, tuple(rows))


# Node network assumed for a GPU the catalog sells with no fabric (min_count only):
# 400 Gbit/s, one 400G NIC per node (unverified: the common InfiniBand NDR / EFA v2 port rate).
DEFAULT_FABRIC_GBPS = 400.0


def _layouts(w: workload_mod.Workload, gpu: hardware.GpuSpec, network_gbps: float) -> list[fit_mod.Shape]:
    nvlink = gpu.nvlink_gbs > 0
    one_node = [fit_mod.Shape(gpu.name, gpu.memory_gib, c, 1.0, nvlink and c > 1) for c in fit_mod.TP_DEGREES]
    # Nodes of c GPUs each (c in 1, 2, 4, 8), not the catalog's node size: min_count is the physical
    # minimum (pipeline stages x GPUs per stage), whatever shapes are sold.
    multi = [
        fit_mod.Shape(gpu.name, gpu.memory_gib, c, 1.0, nvlink and c > 1, True, n, network_gbps)
        for n in optimize.TRAINING_NODES[1:]
        for c in fit_mod.TP_DEGREES
    ]
    return one_node + multi


def _min_count(w: workload_mod.Workload, gpu: hardware.GpuSpec, network_gbps: float) -> dict:
    """The fewest GPUs of `gpu` over every valid layout, and what stopped fewer (or all) from working."""
    fits = []
    for shape in _layouts(w, gpu, network_gbps):
        f = fit_mod.fit(w, shape)
        gpus = shape.total_gpus * (f.node_groups if f.ok else 1)
        fits.append((gpus, shape.nodes, shape, f))
    fits.sort(key=lambda x: (x[0], x[1]))
    last_failure = None
    for gpus, nodes, shape, f in fits:
        if f.ok:
            row = {
                "gpu": gpu.name,
                "min_count": gpus,
                "limiting": last_failure.code if last_failure else _tightest(w, f),
                "nodes": nodes * f.node_groups if shape.nodes > 1 else math.ceil(gpus / 8),
                "tensor_parallel": f.tensor_parallel if w.spec.task == "inference" else None,
                "pipeline_stages": f.pipeline_stages if w.spec.task == "inference" else None,
                "replicas": f.replicas,
            }
            if f.speed is not None:  # the smallest layout's speed (docs/contract.md section 2)
                row["speed"] = {
                    "ttft_ms": round(f.speed.ttft_ms, 1),
                    "tpot_ms": round(f.speed.tpot_ms, 2),
                    "tokens_per_second": round(f.speed.tokens_per_second, 1),
                    "concurrency": f.speed.concurrency,
                    "max_concurrency": f.speed.max_concurrency or None,
                }
            if f.train_hours is not None:
                row["speed"] = {"train_hours": round(f.train_hours, 2), "run_hours": round(f.run_hours, 2)}
            return row
        last_failure = f
    failures = [f for _, _, _, f in fits]
    # The smallest layout that failed on something other than size says most (a precision or a
    # target); else the largest that ran out of memory; else the largest.
    why = next((f for f in failures if f.code not in ("memory", "interconnect")), None)
    why = why or next((f for f in reversed(failures) if f.code == "memory"), failures[-1])
    return {"gpu": gpu.name, "min_count": None, "limiting": why.code, "detail": why.detail}


def _offer_row(c, row: dict) -> dict | None:
    """The contract's smallest_offer: instance type, GPUs launched in all, $/hour; limiting when the shape sets it."""
    if c is None:
        return None
    gpus = c.gpu_count * (c.fit.node_groups if c.fit else 1)
    shape_bound = row["min_count"] is not None and gpus * c.offer.gpu_fraction > row["min_count"]
    return {
        "instance_type": c.offer.instance_type,
        "gpu_count": gpus,
        "hourly_usd": round(c.hourly_usd, 4),
        "provider": c.offer.provider,
        "region": c.offer.region,
        "purchase": c.purchase,
        "limiting": "catalog-shape" if shape_bound else row["limiting"],
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
        ratios["deadline"] = f.run_hours / w.spec.train.deadline_hours
    return max(ratios, key=ratios.get)
