"""AWS offers from the dated public snapshots in ../shared/data/catalog-sources.

Rules (each tested in tests/test_catalog_build.py):
- NVIDIA x86 GPU types only; GPU names mapped to canonical ones (p4d "A100"
  40 GB -> A100-40GB, p4de 80 GB -> A100-80GB); types whose GPU has no row
  in gpus.yaml (g7e RTX PRO 6000) are left out and listed in SOURCES.md.
- GPU memory: what DescribeInstanceTypes reports (L4/A10G 22888 MiB = 22.35
  GiB), never more than the driver shows (gpus.yaml memory_gib): H100 80 GiB
  reported, 79.65 GiB usable. A variant far from the table's memory (p3dn's
  32 GB V100) keeps the reported figure.
- Fractional GPUs (g6f, gr6f report count 0) get their partition memory and
  gpu_fraction = partition / whole GPU.
- Where per-zone rows exist (the SkyPilot-format subsets), one offer per
  zone with that zone's spot price; elsewhere (us-east-1 only) one regional
  offer with the Spot Advisor estimate.
- Spot at or above on-demand means no spot capacity there: no spot offer.
- Types with no on-demand price (p5e) are offered as spot only.
- Local Zones and opt-in regions are marked opt_in.
"""

from __future__ import annotations

import csv
import pathlib
import re

from gpusizer import hardware
from gpusizer.catalog.offer import Offer

INSTANCES = "aws-gpu-instances-us-east-1.csv"
ON_DEMAND = "aws-ondemand-prices-us-east-1-2026-07-20.csv"
PER_ZONE = "aws-gpu-per-zone-subset.csv"
P_FAMILY = "aws-p-family-per-zone-extract.csv"
NETWORK = "aws-network-bandwidth-megabits.csv"

# Dates of the sources (../shared/data/README.md). The SkyPilot per-zone
# subset is undated; it was transcribed in 2026 from catalog v8, so it gets
# the conservative date of the oldest dated AWS price we hold (the Spot
# Advisor snapshot), which makes its age warnings err on the loud side.
AS_OF = {INSTANCES: "2026-07-20", PER_ZONE: "2025-06-28", P_FAMILY: "2026-07-20", "spot-advisor": "2025-06-28"}

# Regions that must be enabled before use (AWS docs, "Regions that require
# opt-in"; list as of 2026 from memory, not re-read here).
OPT_IN_REGIONS = frozenset({
    "af-south-1", "ap-east-1", "ap-south-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5",
    "ap-southeast-7", "ca-west-1", "eu-south-1", "eu-south-2", "eu-central-2", "il-central-1",
    "me-south-1", "me-central-1", "mx-central-1",
})
# A Local Zone id carries a location between the region code and the AZ
# number: use1-atl2-az1 (vs use1-az1).
_LOCAL_ZONE = re.compile(r"^[a-z]+\d-[a-z]+\d*-az\d+$")

_GPU_NAMES = {"A100": None}  # resolved by memory below


def _canonical(name: str, mem_gib: float) -> str | None:
    if name == "A100":
        return "A100-80GB" if mem_gib > 60 else "A100-40GB"
    return hardware.canonical_gpu(name)


def _usable(gpu: str, reported_gib: float) -> float:
    table = hardware.load_gpus()[gpu].memory_gib
    if abs(reported_gib - table) / table < 0.1:
        return round(min(reported_gib, table), 2)
    return reported_gib


def _network_gbps(text: str) -> float:
    m = re.search(r"(\d+)x\s*(\d+)", text)
    if m:
        return float(int(m.group(1)) * int(m.group(2)))
    m = re.search(r"(\d+(?:\.\d+)?)", text)
    return float(m.group(1)) if m else 0.0


def _read(path: pathlib.Path) -> list[dict]:
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines))


def _spot(on_demand: float | None, spot: float | None) -> float | None:
    if spot is None or spot <= 0:
        return None
    if on_demand is not None and spot >= on_demand:
        return None
    return spot


def _num(text: str | None) -> float | None:
    return float(text) if text not in (None, "") else None


def build(sources: pathlib.Path) -> tuple[list[Offer], list[str]]:
    """AWS offers, and notes on what was left out and why."""
    notes: list[str] = []
    on_demand = {r["instance_type"]: float(r["on_demand_usd_per_hour"]) for r in _read(sources / ON_DEMAND)}
    shapes = {}
    for r in _read(sources / INSTANCES):
        if r["mfr"] != "NVIDIA" or r["gpu"] == "T4g":
            continue  # AMD, Habana, and Graviton (arm64) T4g are out of scope
        mem = float(r["gpu_mem_gib"])
        gpu = _canonical(r["gpu"], mem)
        if gpu is None:
            notes.append(f"{r['instance']}: GPU {r['gpu']!r} has no row in gpus.yaml; left out")
            continue
        whole = hardware.load_gpus()[gpu].memory_gib
        count = int(r["count"])
        reported = 22888 / 1024 if gpu in ("L4", "A10G") else 45776 / 1024 if gpu == "L40S" else mem
        fraction = 1.0
        if count == 0:  # fractional: the partition's memory out of the whole GPU's
            count, fraction = 1, round(mem / 22.4, 4)
            reported = round(22888 / 1024 * fraction, 2)
        shapes[r["instance"]] = dict(
            gpu=gpu,
            gpu_count=count,
            gpu_fraction=fraction,
            gpu_memory_gib=_usable(gpu, reported) if fraction == 1 else min(reported, whole * fraction),
            vcpus=int(r["vcpu"]),
            ram_gib=float(r["ram_gib"]),
            nvlink=r["nvlink"] == "True",
            fabric="efa" if r["efa"] == "True" and count >= 8 else None,
            network_gbps=_network_gbps(r["net"]),
            local_nvme_gib=round(float(r["nvme_gb"] or 0) * 1e9 / 2**30, 1),
            spot_est=_num(r["spot_est"]),
        )
    offers: list[Offer] = []
    zoned: set[tuple[str, str]] = set()
    for fname in (PER_ZONE, P_FAMILY):
        for r in _read(sources / fname):
            itype = r["InstanceType"]
            shape = shapes.get(itype) or _p5e_shape(itype, shapes)
            if shape is None:
                continue
            od = _num(r["Price"])
            region, zone = r["Region"], r["AvailabilityZone"]
            zoned.add((itype, region))
            offers.append(_offer(itype, shape, region, zone, od, _spot(od, _num(r["SpotPrice"])),
                                 f"{fname} (SkyPilot catalog rows, per zone)", AS_OF[fname]))
    for itype, shape in shapes.items():
        if (itype, "us-east-1") in zoned:
            continue
        od = on_demand.get(itype)
        spot = _spot(od, shape["spot_est"])
        if od is None and spot is None:
            notes.append(f"{itype}: no on-demand or spot price in us-east-1; left out")
            continue
        src = f"{ON_DEMAND} (AWS Price List via Karpenter)"
        if spot is not None:
            src += "; spot = on-demand x (1 - Spot Advisor savings), 2025-06-28"
        offers.append(_offer(itype, shape, "us-east-1", None, od, spot, src, AS_OF[INSTANCES]))
    return offers, notes


def _p5e_shape(itype: str, shapes: dict) -> dict | None:
    """p5e.48xlarge: 8 x H200 on the p5 host (AWS EC2 P5 page); absent from the us-east-1 type list."""
    if itype != "p5e.48xlarge" or "p5en.48xlarge" not in shapes:
        return None
    return dict(shapes["p5en.48xlarge"], network_gbps=3200.0)


def _offer(itype, shape, region, zone, od, spot, source, as_of) -> Offer:
    fields = {k: v for k, v in shape.items() if k != "spot_est"}
    opt_in = region in OPT_IN_REGIONS or bool(zone and _LOCAL_ZONE.match(zone))
    return Offer(provider="aws", region=region, zone=zone, instance_type=itype, on_demand_usd=od, spot_usd=spot,
                 source=source, as_of=as_of, opt_in=opt_in, **fields)
