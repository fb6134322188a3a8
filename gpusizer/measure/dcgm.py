"""What a workload's GPUs did over a window, read from NVIDIA DCGM exporter series in Prometheus.

Metric names and units are the exporter's defaults (NVIDIA dcgm-exporter,
etc/default-counters.csv, and DCGM field reference, read 2026-11-23):
``DCGM_FI_DEV_FB_USED`` / ``DCGM_FI_DEV_FB_FREE`` framebuffer used / free in
MiB, ``DCGM_FI_DEV_GPU_UTIL`` GPU utilization in %, and, when profiling
metrics are enabled, ``DCGM_FI_PROF_SM_ACTIVE`` and ``DCGM_FI_PROF_DRAM_ACTIVE``
(ratios 0-1) and ``DCGM_FI_PROF_PCIE_RX_BYTES`` / ``TX_BYTES`` (bytes/s). Each
series carries ``gpu``, ``UUID``, ``modelName`` and ``Hostname`` labels; the
workload label ``gpusizer_workload`` is put there by relabeling
(docs/observe.md).

Algorithm: every statistic is one PromQL aggregation over the window, so
Prometheus returns a handful of numbers, not raw samples. Per GPU over time
(``max_over_time``, ``quantile_over_time(0.95, ...)``), then across GPUs the
busiest one (``max``) for peaks and p95s and the mean (``avg``) for means.
Coverage: a range query of ``count(last_over_time(FB_USED[step]))`` at 240
steps over the window; the share of steps with data.

Values follow Prometheus' semantics (HTTP API, "Expression query result
formats"; values are strings so that NaN and Inf survive JSON): ``NaN`` is no
sample (the statistic is absent); ``+Inf``/``-Inf``, a negative memory or
utilization, a utilization over 100% or a memory beyond any GPU are not data:
each becomes a finding (one line in the report) and the statistic is absent.
An answer of the wrong shape is a PrometheusError (exit 2).
"""

from __future__ import annotations

import dataclasses
import datetime
import math

from gpusizer.facts import hardware
from gpusizer.measure import prometheus

LABEL = "gpusizer_workload"
"""The label that joins DCGM series to a workload spec's name."""

FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
# Optional profiling metrics (DCGM "profiling" field group; off on some GPUs and in the default
# exporter config of older releases): mean over the window, reported when present.
PROF_MEANS = {
    "sm_active": "DCGM_FI_PROF_SM_ACTIVE",
    "dram_active": "DCGM_FI_PROF_DRAM_ACTIVE",
    "pcie_rx_bytes_per_s": "DCGM_FI_PROF_PCIE_RX_BYTES",
    "pcie_tx_bytes_per_s": "DCGM_FI_PROF_PCIE_TX_BYTES",
}
COVERAGE_STEPS = 240
MAX_GPU_MIB = 16 * 1024 * 1024  # 16 TiB: more memory than any GPU has; a larger reading is not data
MAX_COUNT = 1e12
MAX_LABEL_CHARS = 200
# What each statistic may be: (unit, lowest, highest).
_RANGES = {
    "MiB": (0.0, MAX_GPU_MIB),
    "%": (0.0, 100.0),
    "ratio": (0.0, 1.0),
    "bytes/s": (0.0, 1e15),
    "samples": (0.0, MAX_COUNT),
}


@dataclasses.dataclass(frozen=True, slots=True)
class Observation:
    """One workload's measured GPU usage over a window.

    Attributes:
        workload: the `gpusizer_workload` label value.
        samples: memory samples over all its GPUs (0: no data).
        gpus: distinct GPUs seen (by UUID, else host and index).
        hosts: distinct hosts (the `Hostname` label) those GPUs were in.
        model_name: the `modelName` label ("NVIDIA L40S"); gpu: its canonical name or None.
        instance_types: values of an `instance_type` label, when relabeling put one there.
        peak_mib / p95_mib: per-GPU memory used, the busiest GPU's max and 95th percentile over time.
        total_mib: memory of one GPU (used + free), or None without FB_FREE.
        mean_util / p95_util: GPU utilization as a fraction (0-1).
        coverage: share of the window with data (0-1); first/last: when data starts and ends.
        prof: means of the profiling metrics that were present.
        findings: values Prometheus returned that are not data (±Inf, negative, out of range), one line each.
    """

    workload: str
    samples: int
    gpus: int = 0
    hosts: int = 0
    model_name: str | None = None
    gpu: str | None = None
    instance_types: tuple[str, ...] = ()
    peak_mib: float | None = None
    p95_mib: float | None = None
    total_mib: float | None = None
    mean_util: float | None = None
    p95_util: float | None = None
    coverage: float = 0.0
    first: datetime.datetime | None = None
    last: datetime.datetime | None = None
    prof: dict = dataclasses.field(default_factory=dict)
    findings: tuple[str, ...] = ()

    @property
    def gpus_per_host(self) -> int:
        return max(1, round(self.gpus / max(1, self.hosts)))


def canonical_model(model_name: str) -> str | None:
    """The canonical GPU for a DCGM/nvidia-smi `modelName` ("NVIDIA L40S", "NVIDIA A100-SXM4-80GB").

    >>> canonical_model("NVIDIA L40S"), canonical_model("NVIDIA A100-SXM4-80GB"), canonical_model("Tesla T4")
    ('L40S', 'A100-80GB', 'T4')
    """
    for candidate in (model_name, model_name.removeprefix("NVIDIA "), model_name.removeprefix("Tesla ")):
        gpu = hardware.canonical_gpu(candidate)
        if gpu:
            return gpu
    return None


def observe(client: prometheus.Client, workload: str, window_s: float, end: datetime.datetime) -> Observation:
    """Measure `workload` over the `window_s` seconds before `end` (see the module docstring).

    Raises:
        PrometheusError: Prometheus unreachable or refusing a query.
    """
    w = f"[{int(window_s)}s]"
    findings: list[str] = []

    def sel(metric: str) -> str:
        return prometheus.selector(metric, **{LABEL: workload})

    def scalar(expr: str, unit: str) -> float | None:
        result = client.query(expr, end)
        if not result:
            return None
        return _checked(result[0].get("value"), expr, unit, findings)

    series = client.query(f"count_over_time({sel(FB_USED)}{w})", end)
    counts = [
        (_labels(s.get("metric")), _checked(s.get("value"), f"count_over_time({FB_USED})", "samples", findings))
        for s in series
    ]
    counts = [(m, c) for m, c in counts if c]
    samples = int(sum(round(c) for _, c in counts))
    if not samples:
        return Observation(workload, 0, findings=tuple(findings))
    labels = [m for m, _ in counts]
    gpus = {m.get("UUID") or (m.get("Hostname", ""), m.get("gpu", "")) for m in labels}
    hosts = {m.get("Hostname", "") for m in labels}
    names = sorted({m["modelName"] for m in labels if m.get("modelName")})
    model_name = names[0] if names else None
    used, free, util = sel(FB_USED), sel(FB_FREE), sel(GPU_UTIL)
    mean_util = scalar(f"avg(avg_over_time({util}{w}))", "%")
    p95_util = scalar(f"max(quantile_over_time(0.95, {util}{w}))", "%")
    prof = {}
    for key, metric in PROF_MEANS.items():
        value = scalar(f"avg(avg_over_time({sel(metric)}{w}))", "bytes/s" if key.endswith("_per_s") else "ratio")
        if value is not None:
            prof[key] = value
    coverage, first, last = _coverage(client, used, window_s, end)
    return Observation(
        workload=workload,
        samples=samples,
        gpus=len(gpus),
        hosts=len(hosts),
        model_name=model_name,
        gpu=canonical_model(model_name) if model_name else None,
        instance_types=tuple(sorted({m["instance_type"] for m in labels if m.get("instance_type")})),
        peak_mib=scalar(f"max(max_over_time({used}{w}))", "MiB"),
        p95_mib=scalar(f"max(quantile_over_time(0.95, {used}{w}))", "MiB"),
        total_mib=scalar(f"max(last_over_time({used}{w}) + last_over_time({free}{w}))", "MiB") or None,
        mean_util=None if mean_util is None else mean_util / 100,
        p95_util=None if p95_util is None else p95_util / 100,
        coverage=coverage,
        first=first,
        last=last,
        prof=prof,
        findings=tuple(findings),
    )


def _labels(metric) -> dict[str, str]:
    """A series' labels: string names and values only, each value cut to MAX_LABEL_CHARS."""
    if not isinstance(metric, dict):
        return {}
    return {k: v[:MAX_LABEL_CHARS] for k, v in metric.items() if isinstance(k, str) and isinstance(v, str)}


def _checked(value, expr: str, unit: str, findings: list[str]) -> float | None:
    """A statistic's number, or None: NaN is no sample; ±Inf and values outside the unit's range are findings."""
    number = prometheus.sample(value, expr)
    if number is None:
        return None
    low, high = _RANGES[unit]
    if not math.isfinite(number):
        findings.append(
            f"{expr} is {'+' if number > 0 else '-'}Inf: an exporter or rule wrote an infinite value; not used"
        )
        return None
    if number < low:
        findings.append(f"{expr} is {number:g} {unit}: negative, refused; not used")
        return None
    if number > high:
        findings.append(f"{expr} is {number:g} {unit}, above {high:g}: not a reading; not used")
        return None
    return number


def _coverage(client: prometheus.Client, used: str, window_s: float, end: datetime.datetime):
    step = window_s / COVERAGE_STEPS
    start = end - datetime.timedelta(seconds=window_s - step)
    expr = f"count(last_over_time({used}[{max(1, int(step))}s]))"
    result = client.query_range(expr, start, end, step)
    values = result[0].get("values") if result else []
    if not isinstance(values, list):
        raise prometheus.PrometheusError(f"malformed answer: {expr} values is not a list. To fix: check --prometheus")
    low, high = start.timestamp() - step, end.timestamp() + step
    points = []
    for i, value in enumerate(values):
        if prometheus.sample(value, f"{expr} values[{i}]") is None:  # NaN: no sample at that step
            continue
        if not low <= value[0] <= high:
            raise prometheus.PrometheusError(
                f"malformed answer: {expr} has a point at {value[0]!r}, outside the "
                "window asked for. To fix: check --prometheus"
            )
        points.append(float(value[0]))
    if not points:
        return 0.0, None, None
    utc = datetime.UTC
    return (
        min(1.0, len(set(points)) / COVERAGE_STEPS),
        datetime.datetime.fromtimestamp(min(points) - step, utc),
        datetime.datetime.fromtimestamp(max(points), utc),
    )
