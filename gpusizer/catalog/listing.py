"""`gpusizer catalog list`: the offers with the shape a reader filters on, and on-prem pools at their amortized price.

Rows carry the plan JSON's candidate fields plus `gpu_memory_gib` (per GPU,
as the driver reports it), `vcpus`, `ram_gib`, `network_gbps`, `opt_in`
(a Local Zone or opt-in region, which `plan` skips unless
placement.allow_opt_in), `source` and `as_of`; a pool row also carries its
cost derivation (`note`). Sorted by price with a full tie-break key.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpusizer.catalog.offer import PURCHASES, Offer


def rows(offers: Iterable[Offer], provider: str | None = None, region: str | None = None, gpu: str | None = None,
         min_gpu_memory_gib: float | None = None, purchase: str | None = None) -> list[dict]:
    """One row per offer and purchase option it is sold at, filtered, cheapest first."""
    out = []
    for o in offers:
        if (provider and o.provider != provider) or (region and o.region != region):
            continue
        if (gpu and o.gpu != gpu) or (min_gpu_memory_gib and o.gpu_memory_gib < min_gpu_memory_gib):
            continue
        for p in (purchase,) if purchase else PURCHASES:
            price = o.price(p)
            if price is None:
                continue
            row = {
                "provider": o.provider, "region": o.region, "zone": o.zone, "instance_type": o.instance_type,
                "gpu": o.gpu, "gpu_count": o.gpu_count, "gpu_fraction": o.gpu_fraction,
                "gpu_memory_gib": round(o.gpu_memory_gib, 2), "vcpus": o.vcpus, "ram_gib": o.ram_gib,
                "network_gbps": o.network_gbps, "nvlink": o.nvlink, "fabric": o.fabric, "opt_in": o.opt_in,
                "purchase": p, "hourly_usd": price, "source": o.source, "as_of": o.price_as_of(p),
            }
            if o.note:
                row["note"] = o.note
            out.append(row)
    out.sort(key=lambda r: (r["hourly_usd"], r["provider"], r["region"], r["zone"] or "", r["instance_type"],
                            r["gpu_count"], r["purchase"]))
    return out
