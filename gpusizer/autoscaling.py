"""Dynamic allocation: the spec's `deploy.autoscaling` (docs/contract.md section 8) and its price range.

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
- `monthly_usd_expected`: for `schedule`, the hours of each window per week at its
  replica count and `min_replicas` the rest of the week; for a metric, the
  replicas the spec's target load needs (the choice's replica count, clamped to
  [min, max]) all month: the autoscaler holds the metric at `target` and the
  load is the throughput target x growth around the clock. The JSON states
  which assumption applied (`expected_assumption`).
"""

import dataclasses
import math
import re
from typing import Annotated, Literal, Self

import pydantic

from gpusizer.base import cost as cost_mod, fields

# The metric names of docs/contract.md section 8 and what each scales on.
METRICS = {
    "gpu_utilization": "DCGM_FI_DEV_GPU_UTIL, % of time a kernel ran (NVIDIA DCGM exporter), averaged over the pods",
    "queue_depth": "a Prometheus query for requests waiting, e.g. vLLM's vllm:num_requests_waiting",
    "requests_per_second": "a Prometheus query for requests per second, e.g. sum(rate(vllm:request_success_total[1m]))",
    "schedule": "cron windows, each with the replicas it needs",
}
Metric = Literal[tuple(METRICS)]
QUERY_METRICS = ("queue_depth", "requests_per_second")
"""Metrics read from a Prometheus query given in the spec (`query`)."""

# The DCGM exporter's GPU utilization gauge, 0-100 (NVIDIA dcgm-exporter default-counters.csv,
# "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %)", read 2026-11-23).
DCGM_GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"



def _matching(pattern: str, fix: str):
    """A validator: the string must match `pattern`, else a ValueError saying `fix`."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.match(value):
            raise ValueError(f"{value[:60]!r} is not valid. To fix: {fix}")
        return value
    return pydantic.AfterValidator(check)


# A duration as KEDA/HPA users write it: whole seconds, minutes or hours ("300s", "15m", "1h").
DURATION_PATTERN = r"^[1-9][0-9]{0,5}[smh]$"
_SECONDS = {"s": 1, "m": 60, "h": 3600}
Duration = Annotated[str, _matching(DURATION_PATTERN, "give whole seconds, minutes or hours, e.g. 300s, 15m, 1h")]
# A cron field of the 5-field form both AWS scheduled actions (Recurrence, "Unix cron syntax format")
# and KEDA's cron scaler (robfig/cron standard parser) read; minute and hour must be plain numbers
# so a window's length is known (GCP scaling schedules take a duration, not an end).
_CRON_DAYS = r"(\*|[0-9A-Za-z]+([-,/][0-9A-Za-z]+)*)(/[0-9]+)?"
CRON_PATTERN = rf"^([0-5]?[0-9]) ([01]?[0-9]|2[0-3]) {_CRON_DAYS} {_CRON_DAYS} {_CRON_DAYS}$"
Cron = Annotated[str, _matching(CRON_PATTERN, "give 5 cron fields with a plain minute and hour, e.g. '0 8 * * 1-5'")]
# One line of PromQL: no control characters (it goes into manifests and reports), at most 1,024 characters.
Query = Annotated[str, pydantic.Field(min_length=1, max_length=1024),
                  _matching(r"^[^\x00-\x1f\x7f`]+$", "give the query on one line, without backticks")]
MAX_TARGET = 1e9  # a queue of a billion requests, or a billion requests/s: past any real target


def seconds(duration: str) -> int:
    """Seconds in a DURATION_PATTERN string.

    >>> seconds("15m"), seconds("300s"), seconds("2h")
    (900, 300, 7200)
    """
    return int(duration[:-1]) * _SECONDS[duration[-1]]


class Window(fields.Strict):
    """A scheduled window: `replicas` run from `start` to `end` (5-field cron, same day fields)."""

    start: Cron = pydantic.Field(
        description="5-field cron, minute and hour plain numbers, e.g. '0 8 * * 1-5'.")
    end: Cron = pydantic.Field(
        description="Same day fields as start, a later time that day, e.g. '0 20 * * 1-5'.")
    replicas: fields.Replicas = pydantic.Field(description="Replicas during the window.")
    timezone: fields.Label = pydantic.Field("UTC", description="IANA time zone, e.g. Europe/Berlin.")

    @pydantic.model_validator(mode="after")
    def _same_day(self) -> Self:
        if self.start.split()[2:] != self.end.split()[2:]:
            raise ValueError("start and end must have the same day fields (a window within one day). "
                             "To fix: repeat start's last three fields in end")
        if self.minutes <= 0:
            raise ValueError("end must be later the same day than start. To fix: split a window over midnight in two")
        _days_per_week(self)  # the day-of-week field names days (a name it does not know raises here)
        return self

    @property
    def minutes(self) -> int:
        """Length of the window in minutes."""
        (m0, h0), (m1, h1) = (map(int, c.split()[:2]) for c in (self.start, self.end))
        return (h1 * 60 + m1) - (h0 * 60 + m0)


class Autoscaling(fields.Strict):
    """deploy.autoscaling: replicas between min and max, scaled on `metric` (docs/contract.md section 8)."""

    min_replicas: fields.count(fields.MAX_REPLICAS, lower=0) = pydantic.Field(
        1, description="Fewest replicas; 0 scales an idle workload to zero and releases its GPUs.")
    max_replicas: fields.Replicas | None = pydantic.Field(
        None, description="Most replicas; default: what the throughput target x growth needs.")
    metric: Metric = pydantic.Field(description="gpu_utilization | queue_depth | requests_per_second | schedule.")
    query: Query | None = pydantic.Field(None, description="PromQL for queue_depth / requests_per_second.")
    target: fields.positive_float(MAX_TARGET) | None = pydantic.Field(
        None, description="Per-replica target: % GPU utilization (1-100), queued requests, or requests/s.")
    scale_to_zero_after: Duration | None = pydantic.Field(
        None, description="Idle time before scaling to zero, e.g. 15m; only with min_replicas: 0.")
    schedule: list[Window] | None = pydantic.Field(None, description="metric: schedule: the windows.", max_length=50)

    @pydantic.model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.max_replicas is not None and self.min_replicas > self.max_replicas:
            raise ValueError(f"min_replicas ({self.min_replicas}) exceeds max_replicas ({self.max_replicas}). "
                             "To fix: lower min_replicas or raise max_replicas")
        if self.scale_to_zero_after is not None and self.min_replicas != 0:
            raise ValueError("scale_to_zero_after applies only with min_replicas: 0. "
                             "To fix: set min_replicas: 0 or remove scale_to_zero_after")
        if self.metric in QUERY_METRICS and self.query is None:
            raise ValueError(f"metric: {self.metric} needs query (PromQL). To fix: add query, "
                             "e.g. 'sum(vllm:num_requests_waiting{model_name=\"x\"})'")
        if self.metric not in QUERY_METRICS and self.query is not None:
            raise ValueError(f"query applies only to queue_depth and requests_per_second, not {self.metric}. "
                             "To fix: remove query")
        if self.metric == "schedule":
            if not self.schedule:
                raise ValueError("metric: schedule needs schedule (a list of windows). To fix: add "
                                 "schedule: [{start: '0 8 * * 1-5', end: '0 20 * * 1-5', replicas: 2}]")
            if self.target is not None:
                raise ValueError("target does not apply to metric: schedule. To fix: remove target")
            big = [w.replicas for w in self.schedule if self.max_replicas is not None and w.replicas > self.max_replicas]
            if big:
                raise ValueError(f"a window's replicas ({big[0]}) exceed max_replicas ({self.max_replicas}). "
                                 "To fix: raise max_replicas or lower the window's replicas")
        else:
            if self.schedule is not None:
                raise ValueError(f"schedule applies only to metric: schedule, not {self.metric}. To fix: remove it")
            if self.target is None:
                raise ValueError(f"metric: {self.metric} needs target. To fix: add target "
                                 "(% GPU utilization, queued requests or requests/s per replica)")
            if self.metric == "gpu_utilization" and self.min_replicas == 0:
                raise ValueError("gpu_utilization cannot scale up from zero: no replica reports GPU utilization. "
                                 "To fix: min_replicas: 1, or scale on queue_depth (a query) to scale to zero")
            if self.metric == "gpu_utilization" and self.target > 100:
                raise ValueError("target for gpu_utilization is a percentage. To fix: give 1-100, e.g. 70")
        return self


# Minutes in a week, and weeks in the 730-hour month of gpusizer.base.cost.
_WEEK_MINUTES = 7 * 24 * 60
_DAY_NAMES = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}


def _days_per_week(window: Window) -> int:
    """Days of the week a window's day-of-week field names (day-of-month/month taken as every day)."""
    field = window.start.split()[4]
    if field == "*":
        return 7
    days: set[int] = set()
    for part in field.split(","):
        step = 1
        if "/" in part:
            part, step_s = part.split("/")
            step = int(step_s)
        ends = ["0", "6"] if part == "*" else part.split("-")
        lo, hi = _day(ends[0]), _day(ends[-1])
        days.update(range(lo, (hi if hi >= lo else hi + 7) + 1, step))
    return len({d % 7 for d in days})


def _day(name: str) -> int:
    """A cron day of week, 0-7 or sun..sat (0 and 7 are Sunday)."""
    if name.isdigit():
        return int(name) % 7
    if name.lower()[:3] in _DAY_NAMES and name.isalpha():
        return _DAY_NAMES[name.lower()[:3]]
    raise ValueError(f"{name!r} is not a day of the week. To fix: 0-7 or sun, mon, tue, wed, thu, fri, sat")


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

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def max_replicas(a: Autoscaling, sized_replicas: int) -> int:
    """The provisioned maximum: the spec's, else the replicas the sizing needs (at least min and every window)."""
    if a.max_replicas is not None:
        return a.max_replicas
    windows = [w.replicas for w in a.schedule or ()]
    return max([sized_replicas, a.min_replicas, *windows])


def price(a: Autoscaling, instance_hourly_usd: float, sized_replicas: int, replicas_per_node: int = 1,
          nodes: int = 1) -> Range:
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
        weekly = sum(w.minutes * _days_per_week(w) * units(w.replicas) for w in a.schedule)
        idle = _WEEK_MINUTES - sum(w.minutes * _days_per_week(w) for w in a.schedule)
        mean = (weekly + max(idle, 0) * units(a.min_replicas)) / _WEEK_MINUTES
        why = "each window's replicas for its hours per week, min_replicas the rest of the week"
    else:
        held = min(max(sized_replicas, a.min_replicas), top)
        mean = units(held)
        why = ("the autoscaler holds the metric at target and the load is the throughput target x growth "
               f"all month: {held} replica(s)")
    hourly = round(instance_hourly_usd, cost_mod.HOURLY_DECIMALS)
    return Range(
        a.min_replicas, top, units(a.min_replicas), units(top), a.metric, a.target,
        cost_mod.monthly_usd(hourly, units(a.min_replicas)),
        cost_mod.monthly_usd(hourly, units(top)),
        round(hourly * mean * cost_mod.HOURS_PER_MONTH, cost_mod.USD_DECIMALS),
        why,
        sized_replicas,
    )
