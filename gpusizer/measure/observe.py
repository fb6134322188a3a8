"""`gpusizer observe`: measured usage per workload, re-planned, with an action (docs/contract.md section 7).

Algorithm, per workload spec:
1. Measure it (gpusizer.measure.dcgm.observe): samples, GPUs, model, peak and
   p95 memory per GPU, mean and p95 utilization, coverage of the window.
2. No samples: ``no-data``. Samples covering less than MIN_COVERAGE of the
   window: ``keep`` with the reason (too little to re-plan on; exit 3).
3. Re-plan the spec with the measured peak as its memory requirement: the
   estimate's breakdown is rescaled so that, on the GPUs observed, each GPU
   needs exactly the measured peak (weights stay what the checkpoint holds
   unless the peak is below them); the spec's ``sizing.memory_headroom``
   then applies as in any plan.
4. Decide, first match wins:
   ``upsize``: peak memory at or above the headroom fraction of the GPU's
   memory (it is full; the measurement is a floor), or p95 utilization at or
   above SATURATED_UTIL (compute-bound: queueing);
   ``downsize``: the re-plan costs at least MIN_SAVING less per month than
   the offer running now;
   ``investigate``: mean utilization below LOW_UTIL with peak memory at or
   above HIGH_MEMORY of the GPU (memory held, compute idle: a data, CPU or
   I/O bottleneck);
   ``keep`` otherwise.
The offer running now is the catalog's offer of the observed instance type
(an ``instance_type`` label, docs/observe.md), else the cheapest offer with the
observed GPU model and GPUs per host; one node per host observed.
"""

from __future__ import annotations

import dataclasses
import datetime

from gpusizer.base import cost, providers, units
from gpusizer.catalog import Catalog
from gpusizer.decide import optimize
from gpusizer.estimate import fit as fit_mod
from gpusizer.estimate import memory
from gpusizer.estimate.workload import Workload
from gpusizer.facts import hardware
from gpusizer.measure import dcgm
from gpusizer.render import plan_json

# Thresholds (gpusizer defaults, 2026-11; the right-sizing method's "measure, don't assume").
MIN_COVERAGE = 0.9  # share of the window with data before a re-plan is trusted
SATURATED_UTIL = 0.95  # p95 GPU utilization at which requests queue (the GPU is busy 95% of the time)
LOW_UTIL = 0.30  # mean GPU utilization below which the GPU mostly waits
HIGH_MEMORY = 0.70  # share of GPU memory that counts as "high" for `investigate`
MIN_SAVING = 0.05  # a re-plan must save at least this share of the monthly cost to recommend a move


@dataclasses.dataclass(frozen=True)
class Current:
    """The offer a workload runs on now, as far as the measurements and the catalog tell."""

    instance_type: str
    provider: str
    region: str
    hourly_usd: float
    nodes: int
    basis: str

    @property
    def monthly_usd(self) -> float:
        return cost.monthly_usd(self.hourly_usd, self.nodes)

    def to_dict(self) -> dict:
        return {
            "provider": self.provider,
            "region": self.region,
            "instance_type": self.instance_type,
            "nodes": self.nodes,
            "hourly_usd": round(self.hourly_usd, 4),
            "monthly_usd": round(self.monthly_usd, 2),
            "basis": self.basis,
        }


def report(w: Workload, obs: dcgm.Observation, catalog: Catalog, window: str) -> dict:
    """The contract's per-workload object: observed, estimate, recommendation."""
    out = {
        "workload": w.spec.name,
        "samples": obs.samples,
        "gpu": obs.gpu or obs.model_name,
        "gpus": obs.gpus,
        "estimate": {"memory_gib_total": round(units.gib(w.breakdown.total), 2)},
    }
    found = "" if not obs.findings else "; findings: " + "; ".join(obs.findings)
    if not obs.samples or obs.peak_mib is None:
        out["observed"] = None if not obs.findings else {"findings": list(obs.findings)}
        missing = (
            f'no {dcgm.FB_USED} series with {dcgm.LABEL}="{w.spec.name}" in the {window} window'
            if not obs.samples
            else f"{obs.samples} samples but no usable peak memory in the {window} window"
        )
        out["recommendation"] = {
            "action": "no-data",
            "choice": None,
            "monthly_savings_usd": None,
            "reason": f"{missing}{found}. To fix: check the exporter's relabeling (docs/observe.md) or widen --window",
        }
        return out
    total_gib = _gpu_total_gib(obs)
    out["observed"] = {
        "peak_gpu_memory_gib": _gib(obs.peak_mib),
        "p95_gpu_memory_gib": _gib(obs.p95_mib),
        "gpu_memory_total_gib": None if total_gib is None else round(total_gib, 2),
        "mean_gpu_utilization": _round(obs.mean_util),
        "p95_gpu_utilization": _round(obs.p95_util),
        "hosts": obs.hosts,
        "model_name": obs.model_name,
        "coverage": round(obs.coverage, 3),
        "from": None if obs.first is None else obs.first.isoformat(timespec="seconds"),
        "to": None if obs.last is None else obs.last.isoformat(timespec="seconds"),
        **{k: round(v, 3) for k, v in obs.prof.items()},
    }
    if obs.findings:
        out["observed"]["findings"] = list(obs.findings)
    current = current_offer(obs, catalog, w)
    out["current"] = None if current is None else current.to_dict()
    out["recommendation"] = recommend(w, obs, catalog, current, total_gib)
    out["recommendation"]["reason"] += found
    return out


def recommend(
    w: Workload, obs: dcgm.Observation, catalog: Catalog, current: Current | None, total_gib: float | None
) -> dict:
    """Action, re-planned choice, savings and reason for a workload with samples (module docstring, 2-4)."""
    peak = obs.peak_mib / units.MIB_PER_GIB
    if obs.coverage < MIN_COVERAGE:
        span = "" if obs.first is None else f" ({obs.first:%Y-%m-%d %H:%M} to {obs.last:%Y-%m-%d %H:%M} UTC)"
        return {
            "action": "keep",
            "choice": None,
            "monthly_savings_usd": None,
            "partial": True,
            "reason": f"measurements cover {obs.coverage:.0%} of the window{span}; not re-planned. "
            "To fix: narrow --window to the period with data, or wait for a full window",
        }
    decision = optimize.choose(measured_workload(w, obs, peak), catalog)
    choice = plan_json.choice(decision)
    new_monthly = None if decision.chosen is None else decision.chosen.cost.monthly_usd
    savings = None if new_monthly is None or current is None else round(current.monthly_usd - new_monthly, 2)
    if choice is not None:
        choice["monthly_usd"] = round(new_monthly, 2)
    headroom = w.memory_headroom
    used = peak / total_gib if total_gib else None
    util = (
        "no utilization data"
        if obs.mean_util is None
        else f"mean utilization {obs.mean_util:.0%}" + ("" if obs.p95_util is None else f", p95 {obs.p95_util:.0%}")
    )
    where = f"{obs.gpus} x {obs.gpu or obs.model_name}"
    to = (
        "nothing feasible" if choice is None else f"{choice['gpu_count']} x {choice['gpu']} ({choice['instance_type']})"
    )
    base = {"choice": choice, "monthly_savings_usd": savings, "measured_requirement_gib_per_gpu": round(peak, 2)}
    if used is not None and used >= headroom:
        return {
            "action": "upsize",
            **base,
            "reason": f"peak {peak:.1f} GiB is {used:.0%} of {total_gib:.1f} GiB per GPU "
            f"on {where} (at or above the {headroom:.0%} headroom): memory is full; re-planned: {to}",
        }
    if obs.p95_util is not None and obs.p95_util >= SATURATED_UTIL:
        return {
            "action": "upsize",
            **base,
            "reason": f"p95 utilization {obs.p95_util:.0%} on {where}: the GPU is "
            f"saturated and requests queue; add replicas or a faster GPU (memory re-plan: {to})",
        }
    if savings is not None and current is not None and savings >= MIN_SAVING * current.monthly_usd:
        return {
            "action": "downsize",
            **base,
            "reason": f"peak {peak:.1f} GiB per GPU on {where} ({util}) fits {to}, "
            f"${savings:,.2f}/month less than {current.instance_type}",
        }
    if used is not None and obs.mean_util is not None and obs.mean_util < LOW_UTIL and used >= HIGH_MEMORY:
        return {
            "action": "investigate",
            **base,
            "reason": f"{util} with {used:.0%} of GPU memory held on {where}: "
            "likely data-loading, CPU or I/O bound; profile before resizing",
        }
    reason = f"peak {peak:.1f} GiB per GPU on {where} ({util})"
    if current is None:
        reason += "; the offer running now is not in the catalog, so no saving can be priced"
    else:
        reason += f"; no adequate offer is {MIN_SAVING:.0%} cheaper than {current.instance_type}"
    return {"action": "keep", **base, "reason": reason}


def measured_workload(w: Workload, obs: dcgm.Observation, peak_gib: float) -> Workload:
    """`w` with a memory breakdown that needs `peak_gib` per GPU on the GPUs observed.

    Per-GPU memory is linear in the breakdown (gpusizer.estimate.memory), so
    the non-weight components are scaled by one factor k solving
    per_gpu(weights) + k x per_gpu(rest) + overhead(n) = peak; when the peak
    is below the weights' share, every component is scaled instead.
    """
    n = obs.gpus_per_host if w.spec.task == "inference" else obs.gpus
    target = peak_gib * units.GIB - memory.overhead_bytes(w.spec.task, n)
    b = w.breakdown
    zero = dataclasses.replace(b, weights=0.0, kv_cache=0.0, activations=0.0, gradients=0.0, optimizer_states=0.0)
    weights_only = dataclasses.replace(zero, weights=b.weights)
    rest = dataclasses.replace(b, weights=0.0)
    fixed, dynamic = _per_gpu(w, weights_only, n, obs), _per_gpu(w, rest, n, obs)
    if target >= fixed and dynamic > 0:
        k = (target - fixed) / dynamic
        keep_weights = True
    else:
        k = max(target, 0.0) / max(fixed + dynamic, 1.0)
        keep_weights = False
    scaled = memory.MemoryBreakdown(
        weights=b.weights if keep_weights else b.weights * k,
        kv_cache=b.kv_cache * k,
        activations=b.activations * k,
        gradients=b.gradients * k,
        optimizer_states=b.optimizer_states * k,
        overhead=b.overhead,
    )
    return dataclasses.replace(w, breakdown=scaled, _memo={})


def _per_gpu(w: Workload, b: memory.MemoryBreakdown, n: int, obs: dcgm.Observation) -> float:
    if w.spec.task == "inference":
        return memory.per_gpu_inference_bytes(w.model, b, n)
    level = "none" if n == 1 else w.spec.train.sharding
    if level == "auto" and obs.gpu in hardware.load_gpus():
        gpu = hardware.load_gpus()[obs.gpu]
        level = fit_mod.fit(w, fit_mod.Shape(obs.gpu, gpu.memory_gib, n)).sharding or "zero3"
    elif level == "auto":
        level = "zero3"
    return memory.per_gpu_training_bytes(b, n, level)


def current_offer(obs: dcgm.Observation, catalog: Catalog, w: Workload) -> Current | None:
    """The catalog offer the workload runs on now (module docstring), or None when none matches."""
    purchase = "spot" if w.spec.placement.purchase == "spot" else "on-demand"
    if obs.instance_types:
        offers = [o for o in catalog.offers if o.instance_type in obs.instance_types]
        basis = f"instance_type label {', '.join(obs.instance_types)}"
    else:
        offers = [
            o for o in catalog.offers if o.gpu == obs.gpu and o.gpu_count == obs.gpus_per_host and o.gpu_fraction == 1
        ]
        basis = f"cheapest catalog offer with {obs.gpus_per_host} x {obs.gpu} (no instance_type label)"
    if w.spec.placement.providers is not None:
        offers = [o for o in offers if o.provider in w.spec.placement.providers]
    if w.spec.placement.regions is not None:
        offers = [o for o in offers if o.region in w.spec.placement.regions or providers.get(o.provider).owned]
    priced = [(o.price(purchase), o) for o in offers if o.price(purchase) is not None]
    if not priced:
        return None
    price, o = min(priced, key=lambda p: (p[0], p[1].provider, p[1].region, p[1].instance_type))
    return Current(o.instance_type, o.provider, o.region, price, max(1, obs.hosts), f"{basis}, {purchase}")


def _gpu_total_gib(obs: dcgm.Observation) -> float | None:
    if obs.total_mib:
        return obs.total_mib / units.MIB_PER_GIB
    return hardware.load_gpus()[obs.gpu].memory_gib if obs.gpu in hardware.load_gpus() else None


def _gib(mib: float | None) -> float | None:
    return None if mib is None else round(mib / units.MIB_PER_GIB, 2)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def window_label(window_s: float, end: datetime.datetime) -> str:
    """ "7d ending 2026-11-23 12:00 UTC"-style text for reports."""
    days = window_s / 86400
    size = f"{days:g}d" if days >= 1 else f"{window_s / 3600:g}h"
    return f"{size} ending {end.astimezone(datetime.UTC):%Y-%m-%d %H:%M} UTC"


def run(specs: list, client, window_s: float, end: datetime.datetime, catalog: Catalog) -> dict:
    """Observe and recommend for each spec (YAML paths or mappings); the contract's JSON document.

    Raises:
        SpecError: a spec is invalid (before Prometheus is asked anything).
        PrometheusError: Prometheus unreachable or refusing a query.
    """
    from gpusizer import planner

    workloads = [planner.workload(planner.load_spec(s)) for s in specs]
    window = window_label(window_s, end)
    rows = [report(w, dcgm.observe(client, w.spec.name, window_s, end), catalog, window) for w in workloads]
    return {"prometheus": client.url, "window": window, "workloads": rows}


def complete(doc: dict) -> list[str]:
    """One line per workload whose data was missing or partial (empty: every workload had data)."""
    lines = []
    for row in doc["workloads"]:
        rec = row["recommendation"]
        if rec["action"] == "no-data" or rec.get("partial"):
            lines.append(f"{row['workload']}: {rec['reason']}")
    return lines
