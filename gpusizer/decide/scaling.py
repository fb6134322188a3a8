"""What an autoscaled choice costs: its replica bounds, the nodes they launch and their $/month.

The engine still ranks offers per replica; autoscaling only bounds how many
replicas run. `max_replicas` defaults to the replicas the throughput target x
growth needs (the choice's replica count), so the bound the components
provision, the policy pack's budget and the report's "$/month at max" all
agree with the sizing.

Pricing (:func:`price`), by the nodes each replica count launches (whole node
groups: :func:`instances`) at the choice's $/hour per node, 730 h a month
(gpusizer.base.cost); with one replica per node that is the choice's per-replica `hourly_usd`:

- `monthly_usd_min`: `min_replicas` all month (0 when the workload scales to zero);
- `monthly_usd_max`: `max_replicas` all month: the ceiling the budget policy uses;
- `monthly_usd_expected`: for `schedule`, the hours of each window per week (its cron day
  fields read as cron reads them: gpusizer.autoscaling.days_per_week) at its replica count
  and `min_replicas` the rest of the week; for a metric, the replicas the spec's target load
  needs (the choice's replica count, clamped to [min, max]) all month: the autoscaler holds
  the metric at `target` and the load is the throughput target x growth around the clock.
  The JSON states which assumption applied (`expected_assumption`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from gpusizer import autoscaling
from gpusizer.base import cost as cost_mod

# Minutes in a week, and weeks in the 730-hour month of gpusizer.base.cost.
_WEEK_MINUTES = 7 * 24 * 60


def instances(replicas: int, replicas_per_node: int = 1, nodes: int = 1) -> int:
    """Nodes launched for `replicas`: whole node groups of `nodes`, each running `replicas_per_node`.

    >>> instances(0), instances(4), instances(5, replicas_per_node=2), instances(3, nodes=2)
    (0, 4, 3, 6)
    """
    return math.ceil(replicas / replicas_per_node) * nodes


@dataclasses.dataclass(frozen=True, slots=True)
class Range:
    """Replica bounds, the nodes (instances, pods) they launch, and their $/month (see the module docstring)."""

    min_replicas: int
    max_replicas: int
    min_instances: int
    max_instances: int
    metric: str
    target: float | None
    monthly_usd_min: float
    monthly_usd_max: float
    monthly_usd_expected: float
    expected_assumption: str
    sized_replicas: int
    """Replicas the throughput target x growth needs; above max_replicas, the target is not met at max."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def max_replicas(a: autoscaling.Autoscaling, sized_replicas: int) -> int:
    """The provisioned maximum: the spec's, else the replicas the sizing needs (at least min and every window)."""
    # Annotated: the spec's bounded counts (gpusizer.base.fields.count) are ints a type checker reads as Any.
    most: int | None = a.max_replicas
    if most is not None:
        return most
    least: int = a.min_replicas
    windows: list[int] = [w.replicas for w in a.schedule or ()]
    return max([sized_replicas, least, *windows])


def price(
    a: autoscaling.Autoscaling,
    instance_hourly_usd: float,
    sized_replicas: int,
    replicas_per_node: int = 1,
    nodes: int = 1,
) -> Range:
    """The $/month range of an autoscaled choice, priced by the nodes each replica count launches.

    Args:
        a: the spec's deploy.autoscaling.
        instance_hourly_usd: $/hour of one node (instance, pool node) of the choice.
        sized_replicas: replicas the throughput target x growth needs (the choice's replica count).
        replicas_per_node: replicas one node runs side by side (1 unless the fit packs them).
        nodes: nodes one replica spans.
    """
    top = max_replicas(a, sized_replicas)

    def units(n: int) -> int:
        return instances(n, replicas_per_node, nodes)

    if a.metric == "schedule":
        assert a.schedule is not None, "Autoscaling refuses metric: schedule without windows"
        weekly = sum(w.minutes * autoscaling.days_per_week(w.start) * units(w.replicas) for w in a.schedule)
        idle = _WEEK_MINUTES - sum(w.minutes * autoscaling.days_per_week(w.start) for w in a.schedule)
        mean = (weekly + max(idle, 0) * units(a.min_replicas)) / _WEEK_MINUTES
        why = "each window's replicas for its hours per week, min_replicas the rest of the week"
    else:
        held = min(max(sized_replicas, a.min_replicas), top)
        mean = units(held)
        why = (
            "the autoscaler holds the metric at target and the load is the throughput target x growth "
            f"all month: {held} replica(s)"
        )
    hourly = round(instance_hourly_usd, cost_mod.HOURLY_DECIMALS)
    return Range(
        a.min_replicas,
        top,
        units(a.min_replicas),
        units(top),
        a.metric,
        a.target,
        cost_mod.monthly_usd(hourly, units(a.min_replicas)),
        cost_mod.monthly_usd(hourly, units(top)),
        round(hourly * mean * cost_mod.HOURS_PER_MONTH, cost_mod.USD_DECIMALS),
        why,
        sized_replicas,
    )
