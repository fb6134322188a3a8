"""gpusizer-gpu-budget: all GPU capacity in the stack at its most, priced from the catalog, never skipped.

Each GPU resource counts at the most nodes or pods it may run (its own
maximum, or the largest of the autoscalers targeting it, policies/scaling.py)
times its dearest admitted type. A type with no on-demand price is priced from
the best evidence (policies/model.price: catalog spot, a sibling's per-GPU
price); one with none at all, or an accelerator the pack cannot identify, is a
finding naming it: an unpriceable resource is not left out of the sum.
"""

from __future__ import annotations

from policies import model, scaling, sizing
from policies import resources as res
from policies import view as v


def hourly(r: sizing.StackResource, by_urn: dict[str, sizing.StackResource], scaled_max: float = 0.0) -> float | None:
    """$/hour of everything `r` may run: its most nodes/pods (or `scaled_max` when larger) x its dearest
    type (a template consumer's types come from the templates it launches). None when it launches no GPU.

    Raises:
        policies.view.Unknown: a field needed for the count or the types is unknown at preview.
        ValueError: a template not in this stack, or a GPU type with no price evidence (naming it).
    """
    if r.type in res.TEMPLATES or r.type not in res.KINDS:
        return None  # a template launches nothing by itself; its consumers count it
    g = res.GpuResource(r.type, r.props)
    found = g.shapes
    provider = g.provider
    if not found and g.templates():
        found = [s for t in model.templates(r, by_urn) for s in res.GpuResource(t.type, t.props).shapes]
    if not found:
        return None
    prices = []
    for s in found:
        usd, why = model.price(s, provider)
        if usd is None and provider != "onprem":
            raise ValueError(f"{why}; the budget cannot leave it out. To fix: a catalog type, or refresh the catalog")
        prices.append(usd or 0.0)
    return sizing.most_count(g, scaled_max) * max(prices)


def stack_budget(resources: list[sizing.StackResource], max_usd: float | None) -> list[tuple[str, str | None]]:
    """The sum over GPU resources of `hourly` against maxHourlyUsd; unknown ones at preview are left out
    of the sum and, when the rest is within the budget, the first is raised (judged again at `up`)."""
    if max_usd is None:
        return []
    by_urn = {r.urn: r for r in resources}
    total = 0.0
    found = sizing.Findings("gpusizer-gpu-budget")
    scaled, failed = scaling.maxima(resources)
    found.bounds(failed)
    purchases = set()  # how the priced resources buy: the hint suggests spot only where some buy on-demand
    for r in resources:
        try:
            cost = hourly(r, by_urn, scaled.get(r.urn, 0.0)) or 0.0
            total += cost
            if cost:
                purchases.add(_purchase(r, by_urn))
        except v.Unknown as exc:
            found.missing(exc)
        except Exception as exc:  # noqa: BLE001 - an unpriceable or malformed resource is a finding naming it
            found.add(f"gpusizer-gpu-budget cannot price {r.name or r.urn} ({type(exc).__name__}: {exc})", r.urn)
    if total > max_usd:
        cheaper = ("cheaper placements (spot, on-prem pools)" if "on-demand" in purchases or None in purchases else
                   "smaller or fewer GPU resources, or on-prem pools (these already buy spot; the budget counts "
                   "on-demand prices, which a spot price may reach)")
        found.add(f"GPU capacity in this stack costs ${total:,.2f}/h (catalog on-demand, every group at its maximum "
                  f"size, autoscalers at max replicas) > budget ${max_usd:,.2f}/h. To fix: {cheaper} or raise "
                  "gpusizer-gpu-budget.maxHourlyUsd", None)
    return found.result()


def _purchase(r: sizing.StackResource, by_urn: dict[str, sizing.StackResource]) -> str | None:
    """How `r` buys ("spot", "on-demand"), through the template it launches when it does not say; None: unknown."""
    try:
        found = res.GpuResource(r.type, r.props).purchase
        if found is None:
            found = next((res.GpuResource(t.type, t.props).purchase for t in model.templates(r, by_urn)), None)
        return found
    except (v.Unknown, ValueError):
        return None
