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
"""

from __future__ import annotations

import dataclasses
import datetime

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

    def sel(metric: str) -> str:
        return prometheus.selector(metric, **{LABEL: workload})

    def scalar(expr: str) -> float | None:
        result = client.query(expr, end)
        return float(result[0]["value"][1]) if result else None

    series = client.query(f"count_over_time({sel(FB_USED)}{w})", end)
    samples = sum(int(float(s["value"][1])) for s in series)
    if not samples:
        return Observation(workload, 0)
    labels = [s["metric"] for s in series]
    gpus = {m.get("UUID") or (m.get("Hostname", ""), m.get("gpu", "")) for m in labels}
    hosts = {m.get("Hostname", "") for m in labels}
    names = sorted({m["modelName"] for m in labels if m.get("modelName")})
    model_name = names[0] if names else None
    used, free, util = sel(FB_USED), sel(FB_FREE), sel(GPU_UTIL)
    mean_util = scalar(f"avg(avg_over_time({util}{w}))")
    p95_util = scalar(f"max(quantile_over_time(0.95, {util}{w}))")
    prof = {}
    for key, metric in PROF_MEANS.items():
        value = scalar(f"avg(avg_over_time({sel(metric)}{w}))")
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
        peak_mib=scalar(f"max(max_over_time({used}{w}))"),
        p95_mib=scalar(f"max(quantile_over_time(0.95, {used}{w}))"),
        total_mib=scalar(f"max(last_over_time({used}{w}) + last_over_time({free}{w}))"),
        mean_util=None if mean_util is None else mean_util / 100,
        p95_util=None if p95_util is None else p95_util / 100,
        coverage=coverage,
        first=first,
        last=last,
        prof=prof,
    )


def _coverage(client: prometheus.Client, used: str, window_s: float, end: datetime.datetime):
    step = window_s / COVERAGE_STEPS
    start = end - datetime.timedelta(seconds=window_s - step)
    result = client.query_range(f"count(last_over_time({used}[{max(1, int(step))}s]))", start, end, step)
    points = [float(t) for t, _ in result[0]["values"]] if result else []
    if not points:
        return 0.0, None, None
    utc = datetime.timezone.utc
    return (
        min(1.0, len(points) / COVERAGE_STEPS),
        datetime.datetime.fromtimestamp(points[0] - step, utc),
        datetime.datetime.fromtimestamp(points[-1], utc),
    )
