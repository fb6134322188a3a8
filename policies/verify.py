"""Re-deriving a GpuWorkload's decision, never taking a resource's word (policies/overprovisioning.py reads it).

A GpuWorkload records the spec it sized (and the on-prem pools it saw) as its
component inputs and outputs (stack policies get a resource's outputs: pulumi
stepGenerator.AnalyzeResources). A GPU resource under it (by the parent links
the engine sends) is the workload's decision, and so exempt from the memory
ratio, only when the engine, re-planning that recorded spec with the pack's
own catalog, makes a decision the resource matches (`mismatch` is None):
- the same sized-by label and requirement (GCP labels round it up to whole GiB);
- every type it may launch is the choice or, on AWS, one of the ranked
  failover types (Decision.failover), and holds the chosen GPUs;
- it buys no on-demand capacity where the choice is spot;
- it runs no more nodes or pods than the choice's replicas x nodes (autoscaled: max replicas' nodes).
Anything else is judged on memory alone, as a hand-written label is.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable

import gpusizer
from gpusizer import reuse
from gpusizer.catalog import Catalog
from gpusizer.decide import optimize
from gpusizer.estimate import calibration
from gpusizer.policies import model, need, sizing
from gpusizer.policies import resources as res
from gpusizer.policies import view as v


@functools.lru_cache(maxsize=64)
def _replan(recorded: str, cal: tuple[str, str] | None = None) -> gpusizer.Decision:
    """The decision for a recorded spec and pools (JSON); `cal`, the fingerprint of the calibration file it
    names, keys the cache (a file rewritten between two plans is another calibration)."""
    data = json.loads(recorded)
    spec = gpusizer.load_spec(data["spec"])
    with calibration.recorded_only():  # the calibration the spec records, never the pack's environment
        return reuse.plan(spec, pools=gpusizer.parse_pools(data.get("pools") or []))


def decision(workload: sizing.StackResource, cfg=None) -> gpusizer.Decision:
    """The engine's decision for a GpuWorkload's recorded spec and pools.

    Raises:
        gpusizer.policies.view.Unknown: the recorded spec is unknown (it never is for GpuWorkload: plain values).
        gpusizer.SizingError: the recorded spec or pools do not validate.
    """
    recorded = {"spec": need.spec_of(workload) or workload.props.get("spec"), "pools": workload.props.get("pools")}
    if isinstance(recorded["spec"], dict):
        plain, _ = need.calibration_problem(workload, cfg)  # a calibration that does not count is dropped
        recorded["spec"] = plain or recorded["spec"]
    if recorded["spec"] is None:
        raise gpusizer.SpecError("the GpuWorkload records no spec", "spec")
    named = ((recorded["spec"] or {}).get("sizing") or {}).get("calibration")
    return _replan(json.dumps(recorded, sort_keys=True), calibration.fingerprint(named) if named else None)


def planned(workload: sizing.StackResource | None, cfg=None) -> tuple[gpusizer.Decision | None, str | None]:
    """(the GpuWorkload's re-planned decision, None), or (None, why there is none to go by)."""
    if workload is None:
        return None, "no GpuWorkload above it records a spec"
    try:
        return decision(workload, cfg), None
    except v.Unknown:
        return None, "its GpuWorkload's recorded spec is unknown at preview"
    except gpusizer.SizingError as exc:
        return None, f"its GpuWorkload's recorded spec does not re-plan ({exc})"


ancestor = model.ancestor  # the nearest GpuWorkload above a resource (policies/model.py)


def most_instances(d: gpusizer.Decision) -> int:
    """The most nodes the decision runs: replicas x nodes, autoscaled at max replicas."""
    c = d.chosen
    return d.autoscaling.max_instances if d.autoscaling else c.replicas * c.nodes


def mismatch(
    g: res.GpuResource,
    d: gpusizer.Decision,
    count: float | None,
    purchase: Callable[[], str | None] | None,
    max_ratio: float = 2.0,
) -> str | None:
    """Why the resource does not match the decision, or None when it does. `count`: the nodes or pods it
    runs (None: its own count); `purchase`: how it buys, read only for a spot decision (None: it buys
    nothing by itself, as a template, whose consumers are compared)."""
    c = d.chosen
    if c is None:
        return "its spec re-plans to no feasible offer"
    if g.sized_by != d.sized_by:
        return f"re-planning its spec gives sized-by {d.sized_by!r}"
    need = d.required_gpu_memory_gib
    given = g.required_gib
    if not same_requirement(given, need):
        return f"its requirement {given} GiB differs from the re-planned {need:g} GiB"
    types = {x.offer.instance_type for x in d.failover_candidates()}
    gpus = (c.offer.gpu, c.offer.gpu_count * c.offer.gpu_fraction)
    group = g.type in res.GROUPS and len(g.shapes) > 1
    first = g.shapes[0].label if g.shapes else None
    for s in g.shapes:
        if s.capacity is not None and s.label == c.offer.instance_type:
            continue
        if g.provider == "aws" and group and first == c.offer.instance_type and s.label in types:
            # A failover type: only on a group whose first choice is the decision, and within maxRatio of its price
            limit = max_ratio * (c.offer.on_demand_usd or 0.0)
            if s.capacity is not None and s.hourly_usd is not None and s.hourly_usd <= limit:
                continue
            return f"{s.label} costs more than {max_ratio:g}x the decision's {c.offer.instance_type}"
        if g.provider == "aws":
            if s.capacity is None or s.label not in types:
                return f"{s.label} is not among the re-planned types ({', '.join(sorted(types))})"
            return (
                f"{s.label} is a failover type, exempt only on a group whose first choice is the decision "
                f"({c.offer.instance_type})"
            )
        if s.capacity is None or (s.capacity.gpu, s.capacity.count) != gpus:
            return f"{s.label} is not the re-planned choice ({c.offer.instance_type}: {gpus[1]:g} x {gpus[0]})"
    if c.purchase == "spot" and purchase is not None and purchase() == "on-demand":
        return "it buys on-demand capacity, the decision spot"
    count = g.count if count is None else count
    if count > most_instances(d):
        return f"it runs up to {count:g}, the decision {most_instances(d)}"
    return None


def underprovisioned(stack) -> list[tuple[str, str | None]]:
    """gpusizer-no-underprovisioning: each GPU resource whose one node's usable memory is below its
    requirement (sizing.under_memory), unless it matches its GpuWorkload's re-planned decision: a
    replica the engine spreads over nodes (pipeline stages) holds a share of the requirement on each,
    and the engine's per-GPU fit, not one node's total, says it holds. A field unknown at preview
    leaves the resource out; with no other finding, the first is raised (advisory, judged at `up`).
    """
    sm = model.of_stack(stack)

    def judge(m: model.Model) -> list[str]:
        g = m.facts if m.facts.shapes else None  # a type unknown at preview raises here: judged at `up`
        found = sizing.under_memory(g) if g is not None else []
        d, _ = planned(m.workload) if found else (None, None)
        if d is not None and mismatch(g, d, None, None) is None:  # with no decision the node alone is judged
            return []
        return found

    findings = sizing.Findings("gpusizer-no-underprovisioning")
    for m in sm:
        if m.facts is not None:
            findings.judge(m.resource, lambda m=m: judge(m))
    return findings.result()


def bounds_within_capacity(stack: list, catalog: Catalog | None = None) -> list[tuple[str, str | None]]:
    """Each GpuWorkload whose recorded spec autoscales: its maximum must fit the chosen pool's free GPUs
    and the catalog's vCPU quota (gpusizer.decide.optimize.scaling_capacity), re-planned from the record.

    Args:
        stack: gpusizer.policies.sizing.StackResource records.
        catalog: offers and quotas; default the packaged or cached catalog (what the pack re-plans with).
    """
    out = []
    for r in model.of_stack(stack).resources:
        if r.type != sizing.WORKLOAD:
            continue
        try:
            d = decision(r)
        except v.Unknown:
            continue
        except gpusizer.SizingError as exc:
            out.append(
                (
                    f"{r.name or r.urn}: its recorded spec does not re-plan, so its autoscaling bound cannot be "
                    f"checked ({exc}). To fix: correct the GpuWorkload's spec",
                    r.urn,
                )
            )
            continue
        if d.chosen is None or d.autoscaling is None:
            continue
        quotas = (catalog or gpusizer.load_catalog()).quotas
        why = optimize.scaling_capacity(d, quotas)
        if why:
            out.append(
                (
                    f"{d.workload.spec.name}: autoscaling bound exceeds capacity: {why}. To fix: lower "
                    "deploy.autoscaling.max_replicas, free GPUs in the pool, or raise the quota",
                    r.urn,
                )
            )
    return out


def same_requirement(given: float | None, need: float) -> bool:
    """Whether a resource's requirement tag (`given` GiB) states the re-planned `need`: the same decimal,
    or `need` rounded up to a whole GiB (GCP labels written before 2026-11: docs/contract.md section 3).
    The 1e-6 absorbs the float error of the decimal's round trip through text."""
    return given is not None and need - 1e-6 <= given <= math.ceil(need) + 1e-6
