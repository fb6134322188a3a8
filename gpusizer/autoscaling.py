"""The spec's `deploy.autoscaling` (docs/contract.md section 8): replica bounds, the metric, schedule windows.

The model only: what an autoscaled choice costs is gpusizer.decide.scaling, and how often a
window's cron day fields recur is :func:`days_per_week` (croniter reads the fields).
"""

import functools
import re
from typing import Annotated, Literal, Self

import pydantic

from gpusizer.base import fields

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
Query = Annotated[
    str,
    pydantic.Field(min_length=1, max_length=1024),
    _matching(r"^[^\x00-\x1f\x7f`]+$", "give the query on one line, without backticks"),
]
MAX_TARGET = 1e9  # a queue of a billion requests, or a billion requests/s: past any real target


def seconds(duration: str) -> int:
    """Seconds in a DURATION_PATTERN string.

    >>> seconds("15m"), seconds("300s"), seconds("2h")
    (900, 300, 7200)
    """
    return int(duration[:-1]) * _SECONDS[duration[-1]]


class Window(fields.Strict):
    """A scheduled window: `replicas` run from `start` to `end` (5-field cron, same day fields)."""

    start: Cron = pydantic.Field(description="5-field cron, minute and hour plain numbers, e.g. '0 8 * * 1-5'.")
    end: Cron = pydantic.Field(description="Same day fields as start, a later time that day, e.g. '0 20 * * 1-5'.")
    replicas: fields.Replicas = pydantic.Field(description="Replicas during the window.")
    timezone: fields.Label = pydantic.Field("UTC", description="IANA time zone, e.g. Europe/Berlin.")

    @pydantic.model_validator(mode="after")
    def _same_day(self) -> Self:
        if self.start.split()[2:] != self.end.split()[2:]:
            raise ValueError(
                "start and end must have the same day fields (a window within one day). "
                "To fix: repeat start's last three fields in end"
            )
        if self.minutes <= 0:
            raise ValueError("end must be later the same day than start. To fix: split a window over midnight in two")
        days_per_week(self.start)  # croniter reads the day fields (one it cannot read raises here)
        return self

    @property
    def minutes(self) -> int:
        """Length of the window in minutes."""
        (m0, h0), (m1, h1) = (map(int, c.split()[:2]) for c in (self.start, self.end))
        return (h1 * 60 + m1) - (h0 * 60 + m0)


class Autoscaling(fields.Strict):
    """deploy.autoscaling: replicas between min and max, scaled on `metric` (docs/contract.md section 8)."""

    min_replicas: fields.count(fields.MAX_REPLICAS, lower=0) = pydantic.Field(
        1, description="Fewest replicas; 0 scales an idle workload to zero and releases its GPUs."
    )
    max_replicas: fields.Replicas | None = pydantic.Field(
        None, description="Most replicas; default: what the throughput target x growth needs."
    )
    metric: Metric = pydantic.Field(description="gpu_utilization | queue_depth | requests_per_second | schedule.")
    query: Query | None = pydantic.Field(None, description="PromQL for queue_depth / requests_per_second.")
    target: fields.positive_float(MAX_TARGET) | None = pydantic.Field(
        None, description="Per-replica target: % GPU utilization (1-100), queued requests, or requests/s."
    )
    scale_to_zero_after: Duration | None = pydantic.Field(
        None, description="Idle time before scaling to zero, e.g. 15m; only with min_replicas: 0."
    )
    schedule: list[Window] | None = pydantic.Field(None, description="metric: schedule: the windows.", max_length=50)

    @pydantic.model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.max_replicas is not None and self.min_replicas > self.max_replicas:
            raise ValueError(
                f"min_replicas ({self.min_replicas}) exceeds max_replicas ({self.max_replicas}). "
                "To fix: lower min_replicas or raise max_replicas"
            )
        if self.scale_to_zero_after is not None and self.min_replicas != 0:
            raise ValueError(
                "scale_to_zero_after applies only with min_replicas: 0. "
                "To fix: set min_replicas: 0 or remove scale_to_zero_after"
            )
        if self.metric in QUERY_METRICS and self.query is None:
            raise ValueError(
                f"metric: {self.metric} needs query (PromQL). To fix: add query, "
                "e.g. 'sum(vllm:num_requests_waiting{model_name=\"x\"})'"
            )
        if self.metric not in QUERY_METRICS and self.query is not None:
            raise ValueError(
                f"query applies only to queue_depth and requests_per_second, not {self.metric}. To fix: remove query"
            )
        if self.metric == "schedule":
            if not self.schedule:
                raise ValueError(
                    "metric: schedule needs schedule (a list of windows). To fix: add "
                    "schedule: [{start: '0 8 * * 1-5', end: '0 20 * * 1-5', replicas: 2}]"
                )
            if self.target is not None:
                raise ValueError("target does not apply to metric: schedule. To fix: remove target")
            big = [
                w.replicas for w in self.schedule if self.max_replicas is not None and w.replicas > self.max_replicas
            ]
            if big:
                raise ValueError(
                    f"a window's replicas ({big[0]}) exceed max_replicas ({self.max_replicas}). "
                    "To fix: raise max_replicas or lower the window's replicas"
                )
        else:
            if self.schedule is not None:
                raise ValueError(f"schedule applies only to metric: schedule, not {self.metric}. To fix: remove it")
            if self.target is None:
                raise ValueError(
                    f"metric: {self.metric} needs target. To fix: add target "
                    "(% GPU utilization, queued requests or requests/s per replica)"
                )
            if self.metric == "gpu_utilization" and self.min_replicas == 0:
                raise ValueError(
                    "gpu_utilization cannot scale up from zero: no replica reports GPU utilization. "
                    "To fix: min_replicas: 1, or scale on queue_depth (a query) to scale to zero"
                )
            if self.metric == "gpu_utilization" and self.target > 100:
                raise ValueError("target for gpu_utilization is a percentage. To fix: give 1-100, e.g. 70")
        return self


# 28 years from a leap year: 10,227 days, exactly 1,461 weeks (the Julian calendar's cycle; the Gregorian
# century rule first differs in 2100), so a day-of-week field counts whole weeks and a day of month
# or a month averages over every weekday it falls on.
_CYCLE_YEARS = 28
_CYCLE_START = 2024


@functools.cache
def _cycle() -> tuple[tuple[int, int, bool, int], ...]:
    """(month, day, last day of its month, cron day of week 0-6 with Sunday 0) for each day of the cycle."""
    import datetime

    day, end = datetime.date(_CYCLE_START, 1, 1), datetime.date(_CYCLE_START + _CYCLE_YEARS, 1, 1)
    one = datetime.timedelta(days=1)
    out = []
    while day < end:
        nxt = day + one
        out.append((day.month, day.day, nxt.month != day.month, day.isoweekday() % 7))
        day = nxt
    return tuple(out)


def days_per_week(cron: str) -> float:
    """How many days a week, on average, a 5-field cron's day fields (day of month, month, day of week) match.

    The fields are read as cron reads them (croniter; AWS scheduled actions and KEDA's cron scaler
    likewise): when both day of month and day of week are restricted a day matching either runs
    (Vixie cron, crontab(5): "if both fields are restricted ... the command will be run when either
    field matches the current time"); `L` is the month's last day. Averaged over 28 years.

    >>> days_per_week("0 8 * * 1-5"), days_per_week("0 8 * * *"), days_per_week("0 8 * * 0,7")
    (5.0, 7.0, 1.0)
    >>> round(days_per_week("0 8 1,15 * *"), 3)  # 24 days a year: 24 / (365.25 / 7)
    0.46
    >>> round(days_per_week("0 8 1 * mon"), 3)  # the 1st or a Monday: (12 + 52.18 - 12/7) / (365.25 / 7)
    1.197
    """
    from croniter import croniter  # only specs with schedule windows need it

    try:
        _, _, dom, months, dow = croniter(cron).expanded
    except (ValueError, KeyError) as exc:  # croniter's CroniterError is a ValueError
        raise ValueError(f"{cron!r}: {exc}. To fix: day fields as cron reads them, e.g. '0 8 * * 1-5'") from None
    any_dom, any_dow, any_month = dom == ["*"], dow == ["*"], months == ["*"]
    dom_set, month_set = set(dom), set(months)
    dow_set = {x % 7 for x in dow if isinstance(x, int)}
    either = not (any_dom or any_dow)  # both restricted: a day matching either runs
    days = 0
    for month, day, last, weekday in _cycle():
        if not any_month and month not in month_set:
            continue
        in_dom = any_dom or day in dom_set or (last and "l" in dom_set)
        in_dow = any_dow or weekday in dow_set
        days += (in_dom or in_dow) if either else (in_dom and in_dow)
    return days * 7 / len(_cycle())
