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


def rows(
    offers: Iterable[Offer],
    provider: str | None = None,
    region: str | None = None,
    gpu: str | None = None,
    min_gpu_memory_gib: float | None = None,
    purchase: str | None = None,
) -> list[dict]:
    """One row per offer and purchase option it is sold at, filtered, cheapest first."""
    out = []
    for o in offers:
        if (provider and o.provider != provider) or (region and region not in (o.region, o.zone)):
            continue
        if (gpu and o.gpu != gpu) or (min_gpu_memory_gib and o.gpu_memory_gib < min_gpu_memory_gib):
            continue
        for p in (purchase,) if purchase else PURCHASES:
            price = o.price(p)
            if price is None:
                continue
            row = {
                "provider": o.provider,
                "region": o.region,
                "zone": o.zone,
                "instance_type": o.instance_type,
                "gpu": o.gpu,
                "gpu_count": o.gpu_count,
                "gpu_fraction": o.gpu_fraction,
                "gpu_memory_gib": round(o.gpu_memory_gib, 2),
                "vcpus": o.vcpus,
                "ram_gib": o.ram_gib,
                "network_gbps": o.network_gbps,
                "nvlink": o.nvlink,
                "fabric": o.fabric,
                "opt_in": o.opt_in,
                "purchase": p,
                "hourly_usd": price,
                "source": o.source,
                "as_of": o.price_as_of(p),
            }
            if o.note:
                row["note"] = o.note
            out.append(row)
    out.sort(
        key=lambda r: (
            r["hourly_usd"],
            r["provider"],
            r["region"],
            r["zone"] or "",
            r["instance_type"],
            r["gpu_count"],
            r["purchase"],
        )
    )
    return out


def why_empty(
    offers: Iterable[Offer], provider: str | None, region: str | None, gpu: str | None, purchase: str | None
) -> str:
    """Why known filter values list no offer: the filter that empties the list, and where else to look."""
    offers = list(offers)
    if region:
        sellers = sorted({o.provider for o in offers if region in (o.region, o.zone)})
        if provider and provider not in sellers:
            return f"{region} is a {'/'.join(s.upper() for s in sellers)} location, not {provider}'s. To fix: drop --provider or use --provider {sellers[0]}"
        if gpu:
            there = sorted({o.gpu for o in offers if region in (o.region, o.zone)})
            where = sorted({o.region for o in offers if o.gpu == gpu and (not provider or o.provider == provider)})
            if gpu not in there:
                return (
                    f"{gpu} is not sold in {region} (GPUs there: {', '.join(there)}); it is sold in "
                    f"{', '.join(where[:8]) or 'no region'}{' ...' if len(where) > 8 else ''}"
                )
    if purchase:
        return f"no offer matches these filters at {purchase} prices. To fix: drop --purchase or --min-gpu-memory-gib"
    return "no offer matches these filters together. To fix: drop one of them"
