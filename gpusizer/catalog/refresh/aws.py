"""Refresh AWS GPU offers from AWS's own APIs (boto3, imported only here, only when refreshing).

Per region: EC2 DescribeInstanceTypes (GpuInfo, vCPU, memory, EFA, NVMe),
DescribeInstanceTypeOfferings by zone id, DescribeSpotPriceHistory (latest
price per zone), the Price List API GetProducts (Linux, shared tenancy, no
pre-installed software, capacity status Used; served from us-east-1), and
Service Quotas for the on-demand and spot G/VT and P vCPU quotas.

Whatever fails (no credentials, throttling beyond the retries, a timeout, a
partial page) is reported in one line and the region keeps its previous
offers; nothing half-fetched is written.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable

from gpusizer.base import units
from gpusizer.catalog import builder
from gpusizer.catalog.builder import aws as build_aws
from gpusizer.catalog.offer import Offer
from gpusizer.facts import hardware

# Service Quotas codes for EC2 vCPU limits (AWS docs, "Amazon EC2 service quotas"):
QUOTAS = {
    ("on-demand", "G"): "L-DB2E81BA",  # Running On-Demand G and VT instances
    ("on-demand", "P"): "L-417A185B",  # Running On-Demand P instances
    ("spot", "G"): "L-3819A6DF",  # All G and VT Spot Instance Requests
    ("spot", "P"): "L-7212CCBC",  # All P Spot Instance Requests
}
# botocore's adaptive retry mode retries throttling and transient errors with exponential
# backoff and rate-limits the client after a throttle (boto3 guide "Retries", modes "standard"
# and "adaptive"; default 3 attempts). Every request, each page of a paginated listing
# included, gets up to this many attempts in all, the first one counted.
RETRIES = {"mode": "adaptive", "total_max_attempts": 10}
PRICING_REGION = "us-east-1"
# Server-side filters of DescribeInstanceTypes (EC2 API Reference, DescribeInstanceTypes,
# filters "instance-type" with wildcards and "processor-info.supported-architecture"):
# NVIDIA GPU types are the G and P families; this lists ~60 types instead of ~1,400.
GPU_FAMILIES = [
    {"Name": "instance-type", "Values": ["g*", "p*"]},
    {"Name": "processor-info.supported-architecture", "Values": ["x86_64"]},
]


def _client(session, service: str, region: str):
    from botocore.config import Config

    return session.client(
        service, region_name=region, config=Config(retries=RETRIES, connect_timeout=10, read_timeout=30)
    )


def _one_line(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"{type(exc).__name__}: {text}"


def gpu_types(ec2) -> dict[str, dict]:
    """NVIDIA x86_64 GPU instance types in the client's region, as shape fields for an Offer."""
    shapes = {}
    for page in ec2.get_paginator("describe_instance_types").paginate(Filters=GPU_FAMILIES):
        for it in page["InstanceTypes"]:
            gpus = (it.get("GpuInfo") or {}).get("Gpus") or []
            if not gpus or gpus[0].get("Manufacturer") != "NVIDIA":
                continue
            if "x86_64" not in it.get("ProcessorInfo", {}).get("SupportedArchitectures", []):
                continue
            g = gpus[0]
            mem_gib = g["MemoryInfo"]["SizeInMiB"] / units.MIB_PER_GIB
            gpu = build_aws.canonical_gpu(g["Name"], mem_gib)
            if gpu is None:
                continue
            count = int(g.get("Count") or 0)
            whole = hardware.load_gpus()[gpu].memory_gib
            fraction = 1.0
            if count == 0:  # fractional (g6f): a partition of one GPU, with its real memory
                count, fraction = 1, round(min(1.0, mem_gib / whole), 4)
            net = it.get("NetworkInfo", {})
            shapes[it["InstanceType"]] = dict(
                gpu=gpu,
                gpu_count=count,
                gpu_fraction=fraction,
                gpu_memory_gib=build_aws.memory_gib(gpu, g["MemoryInfo"]["SizeInMiB"])
                if fraction == 1
                else round(mem_gib, 2),
                vcpus=int(it["VCpuInfo"]["DefaultVCpus"]),
                ram_gib=it["MemoryInfo"]["SizeInMiB"] / units.MIB_PER_GIB,
                # DescribeInstanceTypes does not say NVLink; AWS's 8-GPU P types have NVSwitch, and the
                # GPU table says which parts have NVLink at all (L4/L40S/A10G never do).
                nvlink=count >= 8 and hardware.load_gpus()[gpu].nvlink_gbs > 0,
                fabric="efa" if net.get("EfaSupported") else None,
                network_gbps=build_aws.network_gbps(str(net.get("NetworkPerformance", ""))) or 0.0,
                local_nvme_gib=round(
                    it.get("InstanceStorageInfo", {}).get("TotalSizeInGB", 0) * units.GB / units.GIB, 1
                ),
            )
    return shapes


def zones_of(ec2, types: Iterable[str]) -> dict[str, list[str]]:
    """Zone ids where each type is offered."""
    out: dict[str, list[str]] = {}
    types = list(types)
    for i in range(0, len(types), 100):
        pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
            LocationType="availability-zone-id", Filters=[{"Name": "instance-type", "Values": types[i : i + 100]}]
        )
        for page in pages:
            for o in page["InstanceTypeOfferings"]:
                out.setdefault(o["InstanceType"], []).append(o["Location"])
    return out


def zone_ids(ec2) -> tuple[dict[str, str], set[str]]:
    """Zone name -> zone id (spot prices come by name, offerings by id), and the ids of Local/Wavelength zones."""
    zones = ec2.describe_availability_zones(AllAvailabilityZones=True)["AvailabilityZones"]
    names = {z["ZoneName"]: z["ZoneId"] for z in zones}
    local = {z["ZoneId"] for z in zones if z.get("ZoneType", "availability-zone") != "availability-zone"}
    return names, local


def spot_prices(
    ec2, types: Iterable[str], now: datetime.datetime, names: dict[str, str]
) -> dict[tuple[str, str], float]:
    """Latest Linux spot price per (type, zone id)."""
    latest: dict[tuple[str, str], tuple[datetime.datetime, float]] = {}
    pages = ec2.get_paginator("describe_spot_price_history").paginate(
        InstanceTypes=list(types), ProductDescriptions=["Linux/UNIX"], StartTime=now
    )
    for page in pages:
        for p in page["SpotPriceHistory"]:
            key = (p["InstanceType"], names.get(p["AvailabilityZone"], p["AvailabilityZone"]))
            stamp = p["Timestamp"]
            if key not in latest or stamp > latest[key][0]:
                latest[key] = (stamp, float(p["SpotPrice"]))
    return {k: v for k, (_, v) in latest.items()}


def on_demand_prices(pricing, region: str) -> dict[str, float]:
    """On-demand Linux $/hour per instance type in `region` from the Price List API."""
    filters = [
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
        {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
        {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
        {"Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA"},
        {"Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used"},
    ]
    prices: dict[str, float] = {}
    for page in pricing.get_paginator("get_products").paginate(ServiceCode="AmazonEC2", Filters=filters):
        for item in page["PriceList"]:
            doc = json.loads(item) if isinstance(item, str) else item
            itype = doc["product"]["attributes"].get("instanceType")
            for term in doc.get("terms", {}).get("OnDemand", {}).values():
                for dim in term["priceDimensions"].values():
                    usd = float(dim["pricePerUnit"].get("USD", 0))
                    if itype and usd > 0:
                        prices[itype] = usd
    return prices


def quotas(sq, region: str) -> dict[tuple[str, str, str, str], float]:
    out = {}
    for (purchase, klass), code in QUOTAS.items():
        value = sq.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"]
        out[("aws", region, purchase, klass)] = float(value)
    return out


def refresh(regions: list[str], previous: list[Offer], now: datetime.datetime, session=None):
    """(offers, quotas, errors): refreshed regions replace their previous offers; failed ones,
    and regions not asked for, keep them.

    Args:
        regions: regions to refresh.
        previous: the provider's current offers (the fallback for whatever fails).
        now: the refresh time (offers get its date).
        session: a boto3 Session; default: one from the environment.
    """
    if session is None:
        try:
            import boto3
        except ImportError:
            return previous, {}, ["aws: boto3 is not installed (pip install 'gpusizer[aws]'); kept the previous offers"]
        session = boto3.Session()
    as_of = now.date().isoformat()
    offers: list[Offer] = [o for o in previous if o.region not in regions]
    all_quotas: dict = {}
    errors: list[str] = []
    pricing = _client(session, "pricing", PRICING_REGION)
    for region in regions:
        kept = [o for o in previous if o.region == region]
        try:
            ec2 = _client(session, "ec2", region)
            shapes = gpu_types(ec2)
            names, local = zone_ids(ec2)
            zones = zones_of(ec2, shapes) if shapes else {}
            spot = spot_prices(ec2, shapes, now, names) if shapes else {}
        except Exception as exc:  # one line per failure; the region keeps its last good offers
            errors.append(f"aws {region}: EC2 not refreshed ({_one_line(exc)}); kept {len(kept)} previous offers")
            offers += kept
            continue
        try:
            od = on_demand_prices(pricing, region)
        except Exception as exc:
            errors.append(f"aws {region}: prices not refreshed ({_one_line(exc)}); kept {len(kept)} previous offers")
            offers += kept
            continue
        try:
            sq = _client(session, "service-quotas", region)
            all_quotas.update(quotas(sq, region))
        except Exception as exc:
            errors.append(f"aws {region}: quotas not read ({_one_line(exc)}); offers are not quota-checked there")
        fresh = _offers(region, shapes, zones, spot, od, as_of, local)
        refreshed = {o.instance_type for o in fresh}
        offers += fresh + [o for o in kept if o.instance_type not in refreshed]
    return offers, all_quotas, errors


def _offers(region, shapes, zones, spot, od, as_of, local: set[str]) -> list[Offer]:
    out = []
    src = "AWS APIs: EC2 DescribeInstanceTypes/Offerings/SpotPriceHistory, Price List GetProducts"
    for itype, shape in sorted(shapes.items()):
        price = od.get(itype)
        for zone in sorted(zones.get(itype, [])) or [None]:
            s = builder.spot_offer(price, spot.get((itype, zone)) if zone else None)
            if price is None and s is None:
                continue
            out.append(
                Offer(
                    provider="aws",
                    region=region,
                    zone=zone,
                    instance_type=itype,
                    on_demand_usd=price,
                    spot_usd=s,
                    source=src,
                    as_of=as_of,
                    opt_in=zone in local or build_aws.is_opt_in(region, zone),
                    **shape,
                )
            )
    return out
