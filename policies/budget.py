"""gpusizer-gpu-budget: all GPU capacity in the stack at its most, priced from the model, never skipped.

Reads only the model (policies/model.py): each resource counts at the most
nodes or pods it may run (its own maximum, or the largest of the autoscalers
and scheduled actions targeting it) times its dearest launched shape, priced
from the catalog's on-demand price or the best evidence (Model.hourly). A GPU
shape with no price evidence, or a template that cannot be resolved, is a
finding naming the resource: an unpriceable resource is not left out of the sum.
"""

from __future__ import annotations

from gpusizer.policies import k8s, model, sizing
from gpusizer.policies import view as v


def stack_budget(stack, max_usd: float | None) -> list[tuple[str, str | None]]:
    """The sum over GPU resources of Model.hourly against maxHourlyUsd; unknown ones at preview are left
    out of the sum and, when the rest is within the budget, the first is raised (judged again at `up`)."""
    if max_usd is None:
        return []
    sm = model.of_stack(stack)
    total = floor = 0.0  # floor: the least that resources whose count is unknown at preview cost
    found = sizing.Findings("gpusizer-gpu-budget")
    found.bounds(sm.failed)
    purchases = set()  # how the priced resources buy: the hint suggests spot only where some buy on-demand
    for m in sm:
        unmodelled = [why for kind, why in m.problems if kind == "evidence"]
        if unmodelled:  # GPU evidence without a precise model (allowed or not): it cannot be priced, never skipped
            found.add(
                f"gpusizer-gpu-budget cannot price {m.label}: it carries GPU evidence that no precise model "
                "reads, so its GPUs' count and price are unknown. To fix: model it, or remove it",
                m.urn,
            )
            continue
        why = k8s.unbounded(m.resource.type, m.resource.props) if m.gpu is not None else None
        if why:  # no count bounds it: a budget cannot hold it, so it fails closed
            found.add(
                f"gpusizer-gpu-budget cannot bound {m.label}: {why}, so what it may run has no limit. To fix: "
                "concurrencyPolicy Forbid or Replace for a CronJob; a Deployment rather than a GPU DaemonSet",
                m.urn,
            )
            continue
        try:
            cost = m.hourly() or 0.0
            total += cost
            if cost:
                purchases.add(m.purchase())
        except v.Unknown as exc:
            try:  # its shape and price known, only its count computed: the least it costs is known
                least = m.hourly(at_least=True) or 0.0
            except Exception:  # noqa: BLE001 - its shape or price is unknown too: judged at `up`
                found.missing(exc)
                continue
            floor += least
            if least:  # a budget fails closed: what it may run at most is unknown until it exists
                found.add(
                    f"gpusizer-gpu-budget cannot bound {m.label} at preview: {exc} (at least ${least:,.2f}/h). "
                    "To fix: write its maximum as a literal",
                    m.urn,
                )
        except Exception as exc:  # noqa: BLE001 - an unpriceable or malformed resource is a finding naming it
            found.add(f"gpusizer-gpu-budget cannot price {m.label} ({type(exc).__name__}: {exc})", m.urn)
    if floor and total + floor > max_usd:
        found.add(
            f"GPU capacity in this stack costs at least ${total + floor:,.2f}/h (catalog on-demand; where a count "
            f"is unknown at preview, one node or pod) > budget ${max_usd:,.2f}/h. To fix: smaller or fewer GPU "
            "resources, or raise gpusizer-gpu-budget.maxHourlyUsd",
            None,
        )
    elif total > max_usd:
        cheaper = (
            "cheaper placements (spot, on-prem pools)"
            if "on-demand" in purchases or None in purchases
            else "smaller or fewer GPU resources, or on-prem pools (these already buy spot; the budget counts "
            "on-demand prices, which a spot price may reach)"
        )
        found.add(
            f"GPU capacity in this stack costs ${total:,.2f}/h (catalog on-demand, every group at its maximum "
            f"size, autoscalers at max replicas, rolling updates at their surge) > budget ${max_usd:,.2f}/h. To fix: "
            f"{cheaper} or raise "
            "gpusizer-gpu-budget.maxHourlyUsd",
            None,
        )
    return found.result()


def hourly(r: sizing.StackResource, by_urn: dict[str, sizing.StackResource]) -> float | None:
    """Model.hourly of `r` in the stack `by_urn` (`r` added when absent): $/hour of everything it may run."""
    stack = list(by_urn.values()) if r.urn in by_urn else [*by_urn.values(), r]
    return model.StackModel(stack).of(r.urn).hourly()
