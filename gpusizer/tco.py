"""`gpusizer tco`: cumulative cost of a workload on the cheapest cloud offer vs on an owned pool, month by month.

Algorithm:
1. Plan the spec against the clouds only, once per purchase option the
   catalog sells (on-demand, spot): the cheapest adequate offer of each.
   1- and 3-year commitments (AWS Savings Plans / Reserved Instances, GCP
   committed-use discounts) are compared only when the catalog has their
   prices; today's catalog has none, and the result says so.
2. Plan it against the pools only: the pool and the GPUs it would take. The
   workload owns its share of the pool's nodes, s = GPUs / GPUs per node (the
   rest of a node serves other work), of the capex, power and opex.
3. With u the utilization (the share of hours the workload does paid work,
   the pool's `utilization` unless given; the cloud bills only those hours, as
   instances stop when idle; u = 1 for a service that runs around the clock):
   cloud(m) = u x monthly (hourly x replicas x 730 h, gpusizer.base.cost) x m;
   pool(m)  = s x capex x purchases(m) + m x s x (kW x PUE x $/kWh x 730 h
              + opex / 12), purchases(m) = max(1, ceil(m / lifetime months))
   (bought at month 0 and again at the end of each lifetime; power at
   nameplate around the clock, as gpusizer.catalog.onprem prices a pool; no
   resale value). A pool priced at a rate instead costs
   rate x GPUs x 730 h x u x m.
4. Break-even month: the first month m in 1..months with pool(m) <= cloud(m).
   Break-even utilization: the u at which the cloud's cost over the horizon
   equals the pool's, pool(months) / (hourly x 730 h x months); above 1 the
   pool cannot pay for itself within the horizon.
"""

from __future__ import annotations

import dataclasses
import math

from gpusizer import planner
from gpusizer import spec as spec_mod
from gpusizer.base import cost, fields, providers
from gpusizer.base.errors import SizingError
from gpusizer.catalog import Catalog
from gpusizer.catalog.offer import PURCHASES

COMMITMENTS_NOTE = (
    "the catalog has no 1-/3-year commitment prices (AWS Savings Plans / Reserved Instances, "
    "GCP committed-use discounts); commitments are not compared"
)


class NoOfferError(SizingError):
    """No cloud offer or no pool can run the workload; the CLI exits 3."""


@dataclasses.dataclass(frozen=True)
class CostLine:
    """A cost over time: `upfront` at month 0 (repeated every `renew_months`) plus `monthly` each month."""

    label: str
    upfront_usd: float
    monthly_usd: float
    renew_months: int | None = None

    def cumulative(self, month: int) -> float:
        """Total paid by the end of `month` (month 0: the upfront payment only)."""
        purchases = 1 if not self.renew_months else max(1, math.ceil(month / self.renew_months))
        return (self.upfront_usd * purchases if self.upfront_usd else 0.0) + self.monthly_usd * month


def break_even_month(cloud: CostLine, pool: CostLine, months: int) -> int | None:
    """The first month in 1..months at which the pool has cost no more than the cloud, or None.

    >>> break_even_month(CostLine("cloud", 0, 1000), CostLine("pool", 10000, 200), 36)
    13
    """
    return next((m for m in range(1, months + 1) if pool.cumulative(m) <= cloud.cumulative(m)), None)


def break_even_utilization(cloud_full_monthly: float, pool: CostLine, months: int) -> float:
    """The utilization at which the cloud (billed per busy hour) costs what the pool does over `months`.

    >>> round(break_even_utilization(1000, CostLine("pool", 10000, 200), 36), 4)
    0.4778
    """
    return pool.cumulative(months) / (cloud_full_monthly * months)


def compare(spec, pools, catalog: Catalog | None = None, months: int = 36, utilization: float | None = None) -> dict:
    """The TCO document (module docstring) for `spec` and `pools`.

    Raises:
        SpecError: invalid spec or pools.
        NoOfferError: no cloud offer or no pool runs the workload.
    """
    longest = 12 * int(fields.MAX_LIFETIME_YEARS)  # the longest lifetime a pool may declare; the table goes by month
    if not 1 <= months <= longest:
        raise spec_mod.errors.SpecError(
            f"--months: {months} is not a whole number >= 1 and <= {longest}. To fix: e.g. --months 36", "--months"
        )
    if utilization is not None and not 0 < utilization <= 1:
        raise spec_mod.errors.SpecError(
            f"--utilization: {utilization} is not in (0, 1]. To fix: e.g. 0.6", "--utilization"
        )
    s = planner.load_spec(spec)
    if not pools:
        raise spec_mod.errors.SpecError(
            "--pools: no pool declared. To fix: list at least one pool (README, On-prem pools)", "--pools"
        )
    catalog = catalog or Catalog.load()
    clouds = [p for p in (s.placement.providers or providers.NAMES) if p not in providers.OWNED]
    cloud = {}
    for purchase in PURCHASES:
        d = planner.plan(_placed(s, providers=clouds, purchase=purchase), catalog=catalog)
        if d.chosen is not None:
            cloud[purchase] = d.chosen
    if not cloud:
        raise NoOfferError(
            f"{s.name}: no cloud offer in {', '.join(clouds) or 'no provider'} runs it; nothing to compare"
        )
    d = planner.plan(_placed(s, providers=list(providers.OWNED), purchase="on-demand"), catalog=catalog, pools=pools)
    if d.chosen is None:
        lost = "; ".join(sorted({c.rejection.detail for c in d.candidates if c.offer.provider in providers.OWNED})[:3])
        raise NoOfferError(f"{s.name}: no pool can run it ({lost})")
    pool = next(p for p in pools if p.name == d.chosen.offer.instance_type)
    gpus = d.chosen.gpu_count * d.chosen.replicas
    u = utilization or pool.utilization
    pool_line, pool_info = _pool_line(pool, gpus, u)
    lines = {p: CostLine(p, 0.0, c.cost.monthly_usd * u) for p, c in cloud.items()}
    out = {
        "workload": s.name,
        "months": months,
        "utilization": u,
        "cloud": [
            {
                "purchase": p,
                "provider": c.offer.provider,
                "region": c.offer.region,
                "zone": c.offer.zone,
                "instance_type": c.offer.instance_type,
                "gpu": c.offer.gpu,
                "gpu_count": c.gpu_count,
                "replicas": c.replicas,
                "hourly_usd": c.cost.hourly_usd,
                "monthly_usd": round(lines[p].monthly_usd, 2),
                "source": c.offer.source,
                "as_of": c.offer.price_as_of(c.purchase),
            }
            for p, c in cloud.items()
        ],
        "commitments": COMMITMENTS_NOTE,
        "pool": pool_info,
        "break_even": {
            p: {
                "month": break_even_month(lines[p], pool_line, months),
                "utilization": round(break_even_utilization(c.cost.monthly_usd, pool_line, months), 4),
            }
            for p, c in cloud.items()
        },
        "series": {
            "month": list(range(months + 1)),
            **{p: [round(line.cumulative(m), 2) for m in range(months + 1)] for p, line in lines.items()},
            "pool": [round(pool_line.cumulative(m), 2) for m in range(months + 1)],
        },
    }
    return out


def _placed(s: spec_mod.WorkloadSpec, **update) -> spec_mod.WorkloadSpec:
    return s.model_copy(update={"placement": s.placement.model_copy(update=update)})


def _pool_line(pool, gpus: int, utilization: float) -> tuple[CostLine, dict]:
    info = {"name": pool.name, "location": pool.location, "gpu": pool.gpu, "gpus": gpus}
    if pool.capex_usd_per_node is None:
        monthly = pool.usd_per_gpu_hour * gpus * cost.HOURS_PER_MONTH * utilization
        info.update(
            basis=f"${pool.usd_per_gpu_hour:.2f}/GPU-h as configured, {gpus} GPUs x 730 h x {utilization:.0%}",
            capex_usd=0.0,
            monthly_usd=round(monthly, 2),
            nodes=None,
            lifetime_months=None,
        )
        return CostLine("pool", 0.0, monthly), info
    share = gpus / pool.gpus_per_node
    power = share * pool.power_kw_per_node * pool.pue * pool.usd_per_kwh * cost.HOURS_PER_MONTH
    opex = share * pool.opex_usd_per_node_year / 12
    lifetime = round(pool.lifetime_years * 12)
    info.update(
        nodes=round(share, 4),
        capex_usd=round(share * pool.capex_usd_per_node, 2),
        monthly_usd=round(power + opex, 2),
        power_usd_per_month=round(power, 2),
        opex_usd_per_month=round(opex, 2),
        lifetime_months=lifetime,
        basis=(
            f"{gpus}/{pool.gpus_per_node} of a ${pool.capex_usd_per_node:,.0f} node at month 0 (again every {lifetime} months)"
            f" + its share of {pool.power_kw_per_node:g} kW x PUE {pool.pue:g} x ${pool.usd_per_kwh:g}/kWh x 730 h"
            f" and ${pool.opex_usd_per_node_year:,.0f}/node-year"
        ),
    )
    return CostLine("pool", share * pool.capex_usd_per_node, power + opex, lifetime), info
