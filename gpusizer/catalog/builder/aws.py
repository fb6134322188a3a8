"""AWS GPU offers from the dated snapshots in data/catalog-sources.

The rules are in RULES (copied into SOURCES.md); each has a test in
tests/test_catalog_build.py.
"""

from __future__ import annotations

import json
import math
import pathlib
import re

from gpusizer.base import units
from gpusizer.catalog.builder import Built, price, read_csv, spot_offer
from gpusizer.catalog.offer import Offer
from gpusizer.facts import hardware

INSTANCES = "aws-gpu-instances-us-east-1.csv"
ON_DEMAND = "aws-ondemand-prices-us-east-1-2026-07-20.csv"
PER_ZONE = "aws-gpu-per-zone-subset.csv"
P_FAMILY = "aws-p-family-per-zone-extract.csv"
NETWORK = "aws-network-bandwidth-megabits.csv"
SPOT_ADVISOR = "aws-spot-advisor-2025-06-28.json"

# Dates (data/README.md). The v8 per-zone subset is undated and the
# v9 p-family extract says only "2026": each gets the oldest date it could
# have, so the engine's staleness warning errs on the loud side. The subset
# holds p5.4xlarge, sold only since 2025, so it is no older than that; it is
# stamped with the oldest dated AWS source we hold, the Spot Advisor snapshot.
AS_OF = {ON_DEMAND: "2026-07-20", SPOT_ADVISOR: "2025-06-28", PER_ZONE: "2025-06-28", P_FAMILY: "2026-01-01"}
SOURCES = [
    f"{INSTANCES}: GPU types in us-east-1 (DescribeInstanceTypes as shipped in moto, Spot Advisor buckets)",
    f"{ON_DEMAND}: On-Demand Linux $/h, us-east-1, 2026-07-20 (AWS Price List API via Karpenter)",
    f"{SPOT_ADVISOR}: savings vs on-demand per region/type, 2025-06-28 (Spot Advisor via alexei-led/spotinfo)",
    f"{PER_ZONE}: per-zone on-demand/spot, SkyPilot catalog v8 rows, undated -> stamped {AS_OF[PER_ZONE]}",
    f'{P_FAMILY}: per-zone p5/p5e/p5en/p6 prices, SkyPilot catalog v9 rows, "2026" -> stamped {AS_OF[P_FAMILY]}',
    f"{NETWORK}: network bandwidth per type (Karpenter, from DescribeInstanceTypes), for types with no text",
]

RULES = [
    "NVIDIA GPUs on x86 only: AMD (g4ad), Habana (dl1), Graviton T4g (g5g) and Grace (p6e) types are skipped; "
    "types whose GPU has no row in gpus.yaml are left out and listed below.",
    "GPU memory per GPU is what DescribeInstanceTypes reports (L4/A10G 22888 MiB = 22.35 GiB, L40S 45776 MiB "
    "= 44.70 GiB), capped at what nvidia-smi shows (gpus.yaml memory_gib): H100 81920 MiB reported, 81559 shown.",
    "Fractional types (g6f, gr6f report GPU count 0) get count 1, gpu_fraction = partition / whole GPU "
    "(snapped to 1/2^k) and the partition's memory.",
    "us-east-1: one regional offer per type from the instance list, on-demand from the 2026-07-20 price file, "
    "spot = the Spot Advisor estimate (on-demand x (1 - savings)), else the lowest per-AZ spot snapshot.",
    "Other regions and us-east-1 Local Zones: one offer per zone from the SkyPilot-format per-zone files "
    "(the v9 p-family extract wins over the v8 subset for the same type and zone); zone = AZ id as given.",
    "Spot at or above on-demand in a zone means no spot capacity there: no spot price.",
    "No on-demand price (p5e) -> spot-only offer; neither price -> left out (listed below).",
    "Local Zones (ids like use1-bos1-az1) and opt-in regions (AWS docs 'Regions that require opt-in', "
    "recalled from memory) are marked opt_in.",
    "fabric = efa wherever EFA is supported; nvlink from the nvlink column; network from the text "
    "('Up to 10 Gigabit' -> 10, '4x 100 Gigabit' -> 400), else the megabits table; NVMe GB -> GiB.",
]

# AWS docs, "Regions that require opt-in" (list recalled from memory, not re-read here).
OPT_IN_REGIONS = frozenset(
    {
        "af-south-1",
        "ap-east-1",
        "ap-south-2",
        "ap-southeast-3",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-7",
        "ca-west-1",
        "eu-south-1",
        "eu-south-2",
        "eu-central-2",
        "il-central-1",
        "me-south-1",
        "me-central-1",
        "mx-central-1",
    }
)
# Local and Wavelength Zones carry a location between region and AZ: the id
# use1-bos1-az1 (vs use1-az1), the name us-east-1-bos-1a (vs us-east-1a).
_LOCAL_ZONE_ID = re.compile(r"^[a-z]+\d+-[a-z]+\d*(-[a-z]+\d*)*-az\d+$")
_LOCAL_ZONE_NAME = re.compile(r"^[a-z]+-[a-z]+-\d+-[a-z0-9-]+-\d+[a-z]$")

# A GPU variant whose nominal memory differs from the gpus.yaml row: nvidia-smi
# MiB per (canonical GPU, AWS-reported GiB). p3dn's V100-SXM2-32GB shows 32510 MiB.
_VARIANT_DRIVER_MIB = {("V100", 32): 32510}
# GPU types the us-east-1 list lacks but the price file prices (AWS EC2 P3 page;
# recalled, not re-read): type -> (GPUs, vCPUs, RAM GiB, network text, NVLink).
_P3 = {
    "p3.2xlarge": (1, 8, 61.0, "Up to 10 Gigabit", False),
    "p3.8xlarge": (4, 32, 244.0, "10 Gigabit", True),
    "p3.16xlarge": (8, 64, 488.0, "25 Gigabit", True),
}
# Families whose types carry GPUs; used only to list what the snapshot leaves out.
_GPU_FAMILY = re.compile(r"^(p\d[a-z]*|g\d[a-z]*|gr\d[a-z]*|dl\d[a-z]*)(-[a-z0-9]+)?\.")


def is_opt_in(region: str, zone: str | None) -> bool:
    """True for an opt-in region or a Local/Wavelength Zone (by id or by name).

    >>> is_opt_in("us-east-1", "use1-bos1-az1"), is_opt_in("us-east-1", "us-east-1-bos-1a")
    (True, True)
    >>> is_opt_in("us-east-1", "use1-az1"), is_opt_in("us-east-1", "us-east-1a"), is_opt_in("af-south-1", None)
    (False, False, True)
    """
    if region in OPT_IN_REGIONS:
        return True
    return bool(zone) and bool(_LOCAL_ZONE_ID.match(zone) or _LOCAL_ZONE_NAME.match(zone))


def network_gbps(text: str) -> float | None:
    """Gbit/s from DescribeInstanceTypes text; None when there is none.

    >>> network_gbps("Up to 10 Gigabit"), network_gbps("3200 Gigabit"), network_gbps("4x 100 Gigabit")
    (10.0, 3200.0, 400.0)
    """
    m = re.search(r"(\d+)\s*x\s*(\d+(?:\.\d+)?)", text)
    if m:
        return int(m.group(1)) * float(m.group(2))
    m = re.search(r"(\d+(?:\.\d+)?)\s*Gigabit", text)
    return float(m.group(1)) if m else None


def _reported_mib(sources: pathlib.Path) -> dict[tuple[str, int], int]:
    """Exact per-GPU MiB from the GpuInfo column of the per-zone subset, keyed by (name, rounded GiB)."""
    table = {}
    for r in read_csv(sources / PER_ZONE):
        m = re.search(r"'Name': '([^']+)'.*'SizeInMiB': (\d+)", r["GpuInfo"])
        if m:
            table[(m.group(1), round(int(m.group(2)) / units.MIB_PER_GIB))] = int(m.group(2))
    return table


def canonical_gpu(name: str, gib: float) -> str | None:
    """Canonical GPU for an AWS GpuInfo name and its per-GPU GiB (AWS calls both A100 sizes "A100")."""
    if name == "A100":  # AWS names both p4d (40 GB) and p4de (80 GB) parts "A100"
        return "A100-80GB" if gib > 60 else "A100-40GB"
    return hardware.canonical_gpu(name)


def memory_gib(gpu: str, reported_mib: float) -> float:
    """Per-GPU GiB for an offer: the AWS figure, capped at what nvidia-smi shows for that part.

    >>> memory_gib("L4", 22888), memory_gib("H100", 81920), memory_gib("V100", 32768)
    (22.35, 79.65, 31.75)
    """
    nominal = round(reported_mib / units.MIB_PER_GIB)
    driver_mib = _VARIANT_DRIVER_MIB.get((gpu, nominal), hardware.load_gpus()[gpu].memory_gib * units.MIB_PER_GIB)
    return round(min(reported_mib, driver_mib) / units.MIB_PER_GIB, 2)


def _shapes(sources: pathlib.Path, notes: list[str]) -> dict[str, dict]:
    """Per-type facts (everything but price and place) for every NVIDIA x86 type, plus spot estimates."""
    exact = _reported_mib(sources)
    megabits = {r["instance_type"]: float(r["network_bandwidth_megabits"]) for r in read_csv(sources / NETWORK)}
    shapes: dict[str, dict] = {}
    for r in read_csv(sources / INSTANCES):
        itype, gib = r["instance"], float(r["gpu_mem_gib"])
        if r["mfr"] != "NVIDIA" or r["gpu"] == "T4g":
            continue  # AMD, Habana; T4g runs on Graviton (arm64) hosts
        gpu = canonical_gpu(r["gpu"], gib)
        if gpu is None:
            notes.append(f"{itype}: GPU {r['gpu']!r} has no row in gpus.yaml; left out")
            continue
        whole_mib = exact.get((r["gpu"], round(gib)), gib * units.MIB_PER_GIB)
        count, fraction, per_gpu_mib = int(r["count"]), 1.0, whole_mib
        if count == 0:  # fractional: partition memory / the whole L4's, snapped to 1/2^k
            whole_mib = next(v for (name, _), v in exact.items() if name == r["gpu"])
            fraction = 2.0 ** round(math.log2(gib * units.MIB_PER_GIB / whole_mib))
            count, per_gpu_mib = 1, whole_mib * fraction
        net = network_gbps(r["net"])
        shapes[itype] = dict(
            gpu=gpu,
            gpu_count=count,
            gpu_fraction=fraction,
            gpu_memory_gib=round(per_gpu_mib / units.MIB_PER_GIB, 2) if fraction < 1 else memory_gib(gpu, per_gpu_mib),
            vcpus=int(r["vcpu"]),
            ram_gib=float(r["ram_gib"]),
            nvlink=r["nvlink"] == "True",
            fabric="efa" if r["efa"] == "True" else None,
            network_gbps=net if net is not None else megabits[itype] / 1000,
            local_nvme_gib=round(float(r["nvme_gb"] or 0) * units.GB / units.GIB, 1),
            spot_est=price(r["spot_est"]),
            spot_snap=price(r["spot_snap"]),
            shape_src=INSTANCES,
        )
    advisor = json.loads((sources / SPOT_ADVISOR).read_text())["spot_advisor"]["us-east-1"]["Linux"]
    on_demand = _on_demand(sources)
    for itype, (count, vcpus, ram, net, nvlink) in _P3.items():
        saving = advisor.get(itype, {}).get("s")
        shapes[itype] = dict(
            gpu="V100",
            gpu_count=count,
            gpu_fraction=1.0,
            gpu_memory_gib=memory_gib("V100", 16384),
            vcpus=vcpus,
            ram_gib=ram,
            nvlink=nvlink,
            fabric=None,
            network_gbps=network_gbps(net),
            local_nvme_gib=0.0,
            spot_snap=None,
            shape_src="AWS EC2 P3 page",
            spot_est=round(on_demand[itype] * (1 - saving / 100), 4) if saving is not None else None,
        )
    # p5e.48xlarge: 8 x H200 on the same host as p5en (AWS EC2 P5 page); the
    # us-east-1 list lacks it, the p-family extract prices it in other regions.
    if "p5en.48xlarge" in shapes:
        shapes["p5e.48xlarge"] = dict(
            shapes["p5en.48xlarge"],
            network_gbps=megabits["p5e.48xlarge"] / 1000,
            spot_est=None,
            spot_snap=None,
            shape_src="p5en.48xlarge shape",
        )
    return shapes


def _on_demand(sources: pathlib.Path) -> dict[str, float]:
    return {r["instance_type"]: float(r["on_demand_usd_per_hour"]) for r in read_csv(sources / ON_DEMAND)}


def _offer(
    itype: str,
    shape: dict,
    region: str,
    zone: str | None,
    od,
    spot,
    source: str,
    as_of: str,
    spot_as_of: str | None = None,
) -> Offer:
    fields = {k: v for k, v in shape.items() if k not in ("spot_est", "spot_snap", "shape_src")}
    return Offer(
        provider="aws",
        region=region,
        zone=zone,
        instance_type=itype,
        on_demand_usd=od,
        spot_usd=spot,
        source=source,
        as_of=as_of,
        spot_as_of=spot_as_of,
        opt_in=is_opt_in(region, zone),
        **fields,
    )


def _us_east_1(shapes: dict[str, dict], on_demand: dict[str, float], notes: list[str]) -> list[Offer]:
    offers = []
    for itype, shape in shapes.items():
        od = on_demand.get(itype)
        if shape["spot_est"] is not None:
            spot, spot_src, spot_date = (
                shape["spot_est"],
                f"spot = Spot Advisor estimate {AS_OF[SPOT_ADVISOR]}",
                AS_OF[SPOT_ADVISOR],
            )
        else:
            spot, spot_src, spot_date = (
                shape["spot_snap"],
                f"spot = lowest per-AZ snapshot in {P_FAMILY}",
                AS_OF[P_FAMILY],
            )
        spot = spot_offer(od, spot)
        if od is None and spot is None:
            notes.append(f"{itype}: no on-demand or spot price in us-east-1; no regional offer")
            continue
        source = f"{shape['shape_src']} + {ON_DEMAND}" + (f"; {spot_src}" if spot is not None else "; no spot")
        offers.append(
            _offer(
                itype,
                shape,
                "us-east-1",
                None,
                od,
                spot,
                source,
                AS_OF[ON_DEMAND],
                spot_date if spot is not None else None,
            )
        )
    return offers


def _per_zone(sources: pathlib.Path, shapes: dict[str, dict], notes: list[str]) -> list[Offer]:
    rows: dict[tuple[str, str], tuple[str, dict]] = {}
    for fname in (PER_ZONE, P_FAMILY):  # later file wins: the v9 extract is newer than the v8 subset
        for r in read_csv(sources / fname):
            rows[(r["InstanceType"], r["AvailabilityZone"])] = (fname, r)
    offers = []
    for (itype, zone), (fname, r) in sorted(rows.items()):
        region = r["Region"]
        if region == "us-east-1" and not is_opt_in(region, zone):
            continue  # us-east-1's own AZs are covered by its regional offer
        if itype not in shapes:
            notes.append(f"{itype} in {zone} ({fname}): no shape (GPU not in gpus.yaml or not NVIDIA x86); left out")
            continue
        od = price(r["Price"])
        spot = spot_offer(od, price(r["SpotPrice"]))
        if od is None and spot is None:
            notes.append(f"{itype} in {zone}: no on-demand price and no usable spot price; left out")
            continue
        kind = "SkyPilot catalog v9" if fname == P_FAMILY else "SkyPilot catalog v8"
        source = f"{fname} ({kind} rows per zone)" + ("; spot only" if od is None else "")
        offers.append(_offer(itype, shapes[itype], region, zone, od, spot, source, AS_OF[fname]))
    return offers


def _left_out_families(sources: pathlib.Path, on_demand: dict[str, float], shapes: dict[str, dict]) -> list[str]:
    listed = {r["instance"] for r in read_csv(sources / INSTANCES)}
    missing: dict[str, int] = {}
    for itype in on_demand:
        m = _GPU_FAMILY.match(itype)
        if m and itype not in shapes and itype not in listed:
            missing[m.group(0).rstrip(".")] = missing.get(m.group(0).rstrip("."), 0) + 1
    return [
        f"{fam}.* ({n} types) priced in {ON_DEMAND} but absent from {INSTANCES}: no GPU facts; left out"
        for fam, n in sorted(missing.items())
    ]


def build(sources: pathlib.Path) -> Built:
    """AWS offers from `sources` (the catalog-sources directory)."""
    notes: list[str] = []
    shapes = _shapes(sources, notes)
    on_demand = _on_demand(sources)
    offers = _us_east_1(shapes, on_demand, notes) + _per_zone(sources, shapes, notes)
    notes += _left_out_families(sources, on_demand, shapes)
    notes.append(f"p3.2xlarge/8xlarge/16xlarge: shapes from the AWS EC2 P3 page (recalled), prices from {ON_DEMAND}")
    notes.append("p5e.48xlarge: shape of p5en.48xlarge (same 8 x H200 host), network from the megabits file")
    return Built(offers, SOURCES, RULES, notes)
