"""Refresh GCP GPU offers from Google's APIs (optional extra: `pip install 'gpusizer[gcp]'`).

Prices: the Cloud Billing Catalog API lists Compute Engine SKUs (service
6F81-5844-456A): per region, a GPU SKU ("Nvidia L4 GPU running in Americas"),
and per machine family a vCPU SKU ("G2 Instance Core running in ...") and a
RAM SKU ("G2 Instance Ram running in ...", per GiB-hour), each on-demand and
"Spot Preemptible". Shapes: the Compute API's machine types per zone (vCPUs,
memory, attached accelerators). A machine's price = vCPUs x core rate + GiB x
RAM rate + GPUs x GPU rate, in its region; N1 gets attached T4/V100/P100/P4 in
the counts GCP allows, named like the snapshot ("n1-standard-8+nvidia-tesla-t4x2").
Google's libraries are imported here only; a refresh without them says so in
one line and keeps the previous offers.
"""

from __future__ import annotations

import datetime
import os
import re

from gpusizer.base import units
from gpusizer.catalog import builder, consumption
from gpusizer.catalog.builder import gcp as build_gcp
from gpusizer.catalog.offer import Offer
from gpusizer.facts import hardware

COMPUTE_SERVICE = "services/6F81-5844-456A"
_NANOS_PER_UNIT = 10**9  # google.type.Money: `nanos` are 10^-9 of a unit
_GPU_SKU = re.compile(r"^(?P<spot>Spot Preemptible )?Nvidia (?P<gpu>.+?) GPU running in", re.I)
_HOST_SKU = re.compile(
    r"^(?P<spot>Spot Preemptible )?(?P<family>[A-Z]\d+)( Predefined)? Instance (?P<kind>Core|Ram) running in", re.I
)
_GPU_FAMILIES = ("g2", "a2", "a3", "a4", "n1")


def _usd(sku) -> float:
    rate = sku.pricing_info[0].pricing_expression.tiered_rates[-1].unit_price
    return rate.units + rate.nanos / _NANOS_PER_UNIT


def sku_rates(skus) -> dict[tuple, float]:
    """Rates keyed by (region, "gpu", canonical GPU, purchase) or (region, family, "core"|"ram", purchase)."""
    rates: dict[tuple, float] = {}
    for sku in skus:
        purchase = "spot" if sku.category.usage_type == "Preemptible" else "on-demand"
        m = _GPU_SKU.match(sku.description)
        key = None
        if m and sku.category.resource_group == "GPU":
            gpu = hardware.canonical_gpu(m["gpu"]) or hardware.canonical_gpu(f"nvidia-{m['gpu']}")
            if gpu == "A100-40GB" and "80" in m["gpu"]:
                gpu = "A100-80GB"
            key = ("gpu", gpu) if gpu else None
        else:
            m = _HOST_SKU.match(sku.description)
            if m and m["family"].lower() in _GPU_FAMILIES:
                key = (m["family"].lower(), m["kind"].lower())
        if key is None:
            continue
        usd = _usd(sku)
        if usd <= 0:
            continue
        for region in sku.service_regions:
            rates[(region, *key, purchase)] = usd
    return rates


def _machine_offers(zone: str, region: str, mt, rates, as_of: str) -> list[Offer]:
    family = mt.name.split("-")[0]
    if family not in _GPU_FAMILIES:
        return []
    ram_gib = mt.memory_mb / units.MIB_PER_GIB
    shapes = []
    if family == "n1":
        for gpu, limits in build_gcp.N1_MAX_VCPUS.items():
            for count in limits:
                if mt.guest_cpus == build_gcp.N1_VCPUS_PER_GPU * count and mt.name.startswith("n1-standard-"):
                    accel = build_gcp.ACCELERATOR_TYPE[gpu]
                    shapes.append((f"{mt.name}+{accel}x{count}", gpu, count))
    else:
        for a in mt.accelerators:
            gpu = hardware.canonical_gpu(a.guest_accelerator_type)
            if gpu:
                shapes.append((mt.name, gpu, a.guest_accelerator_count))
    out = []
    for itype, gpu, count in shapes:
        prices = {}
        for purchase in ("on-demand", "spot"):
            parts = [
                rates.get((region, family, "core", purchase)),
                rates.get((region, family, "ram", purchase)),
                rates.get((region, "gpu", gpu, purchase)),
            ]
            if all(p is not None for p in parts):
                prices[purchase] = round(mt.guest_cpus * parts[0] + ram_gib * parts[1] + count * parts[2], 5)
        od, spot = prices.get("on-demand"), builder.spot_offer(prices.get("on-demand"), prices.get("spot"))
        if not consumption.sold_on_demand("gcp", itype):  # the billing catalog's rate is no VM's price
            od = None
        if od is None and spot is None:
            continue
        out.append(
            Offer(
                provider="gcp",
                region=region,
                zone=zone,
                instance_type=itype,
                gpu=gpu,
                gpu_count=count,
                gpu_memory_gib=hardware.load_gpus()[gpu].memory_gib,
                vcpus=mt.guest_cpus,
                ram_gib=round(ram_gib, 2),
                on_demand_usd=od,
                spot_usd=spot,
                as_of=as_of,
                nvlink=family in ("a2", "a3", "a4") or (gpu == "V100" and count == 8),
                source="GCP APIs: Cloud Billing catalog SKUs (vCPU + RAM + GPU), Compute machine types",
            )
        )
    return out


def refresh(
    regions, previous, now: datetime.datetime, session=None, billing=None, compute=None, project: str | None = None
):
    """(offers, quotas, errors) for GCP; regions that fail or are not asked for keep their previous offers.

    Args:
        regions, previous, now: as every refresher takes them (gpusizer.base.providers.Provider.refresher).
        session: unused: Google's clients find their credentials themselves (kept for the shared signature).
        billing, compute: a CloudCatalogClient and a MachineTypesClient; default: new ones.
        project: the project machine types are listed in; default: $GOOGLE_CLOUD_PROJECT.
    """
    try:
        if billing is None or compute is None:
            from google.cloud import billing_v1, compute_v1

            billing, compute = billing_v1.CloudCatalogClient(), compute_v1.MachineTypesClient()
    except ImportError:
        return (
            previous,
            {},
            [
                "gcp: google-cloud-billing/google-cloud-compute not installed "
                "(pip install 'gpusizer[gcp]'); kept the previous offers"
            ],
        )
    project = project or os.environ.get("GOOGLE_CLOUD_PROJECT")
    if not project:
        return previous, {}, ["gcp: no project (set GOOGLE_CLOUD_PROJECT); kept the previous offers"]
    try:
        rates = sku_rates(billing.list_skus(parent=COMPUTE_SERVICE))
        by_zone = list(compute.aggregated_list(project=project))
    except Exception as exc:  # one line; everything keeps its previous offers
        line = str(exc).splitlines()[0] if str(exc) else ""
        return previous, {}, [f"gcp: not refreshed ({type(exc).__name__}: {line}); kept the previous offers"]
    as_of = now.date().isoformat()
    fresh: list[Offer] = []
    for scope, listing in by_zone:
        zone = scope.split("/")[-1]
        region = zone.rsplit("-", 1)[0]
        if region in regions:
            for mt in listing.machine_types:
                fresh += _machine_offers(zone, region, mt, rates, as_of)
    done = {o.region for o in fresh}
    errors = [f"gcp {r}: no GPU machine priced; kept the previous offers" for r in regions if r not in done]
    return fresh + [o for o in previous if o.region not in done], {}, errors
