"""GCP GPU offers from the SkyPilot-v8-layout snapshot gcp-vms-2026-05-20.csv.

The snapshot lists host machine types and GPUs as separate rows per zone; a
GPU row has an empty InstanceType and is priced for its AcceleratorCount. The
rules are in RULES (copied into SOURCES.md); each has a test in
tests/test_catalog_build.py.
"""

from __future__ import annotations

import collections
import dataclasses
import pathlib
import re

from gpusizer.base import units
from gpusizer.catalog import consumption
from gpusizer.catalog.builder import Built, read_csv, spot_offer
from gpusizer.catalog.offer import Offer
from gpusizer.facts import hardware

SOURCE = "gcp-vms-2026-05-20.csv"
AS_OF = "2026-05-20"
SOURCES = [
    f"{SOURCE}: every GCP machine type and GPU per zone, on-demand and spot $/h, {AS_OF} "
    "(SkyPilot catalog v8 layout, republished by anycloud-sh/catalog)"
]

# Per-GPU on-demand prices of one GPU model vary by region in small steps (the
# largest in this snapshot: L4 0.78 -> 0.90, x1.14). A step of TIER_GAP or more
# splits off a second, cheaper tier (x1.40 to x2.2 here) that is not an
# on-demand list price: see RULES and the cross-check notes in SOURCES.md.
TIER_GAP = 1.3

RULES = [
    "A GPU machine's price in a zone = host machine row + the GPU row for its GPU count in the same zone "
    "(a host priced exactly 0, as a4-highgpu-8g is, has its price inside the GPU row).",
    "Fixed-GPU families (GCP 'GPU machine types' docs): G2 -> L4 (g2-standard-4..32: 1, -24: 2, -48: 4, -96: 8), "
    "A2 high/mega -> A100-40GB, A2 ultra -> A100-80GB, A3 high/edge/mega -> H100, A3 ultra -> H200, A4 -> B200.",
    "N1 + attached T4 (1, 2, 4), V100 (1, 2, 4, 8), P100 (1, 2, 4), P4 (1, 2, 4): each count on n1-standard-(4 x "
    "count), within GCP's documented N1 vCPU limit per GPU count; named like n1-standard-8+nvidia-tesla-t4x2.",
    "NVLink: A2, A3, A4 with 2+ GPUs, and N1 with 8 V100; G2 and other N1 shapes are PCIe only.",
    "Fabric: a3-highgpu-8g and a3-edgegpu-8g gpudirect-tcpx, a3-megagpu-8g gpudirect-tcpxo, a3-ultragpu-8g and "
    "a4-highgpu-8g rdma; none elsewhere (no multi-node GPU fabric).",
    f"Discounted tier: per GPU model (H100 and H100-MEGA pooled: same GPU), if sorted per-GPU on-demand prices "
    f"jump by x{TIER_GAP} or more, the prices below the jump are not list prices; those machines get no "
    "on-demand price (spot only where spot is usable).",
    "Not sold on demand (gpusizer/catalog/consumption.py: a4-highgpu, a3-ultragpu, a3-highgpu-1g/2g/4g; GCP "
    "consumption options table): no on-demand price, whatever the snapshot lists; spot where usable. Their "
    "flex-start (Dynamic Workload Scheduler) and reservation rates are not in the snapshot, so neither is offered.",
    "Spot: only when host and GPU spot both exist, neither is at or above its own on-demand row, and the sum "
    "is below the machine's on-demand price (or below the raw row sum where on-demand was not trusted).",
    "Network: GCP per-machine-type egress bandwidth (docs, recalled; medium confidence); N1 2 Gbps per vCPU, "
    "10 to 32. Local SSD is not recorded (0). GPU memory: gpus.yaml driver figure, capped at GpuInfo MiB.",
]

# (pattern, GPU row name, canonical GPU, fabric for 8 GPUs). A2/A3/A4 GPUs sit
# on an NVSwitch baseboard; G2's L4s are PCIe cards.
_FAMILIES = (
    (r"^g2-standard-(\d+)$", "L4", "L4", None),
    (r"^a2-highgpu-(\d+)g$", "A100", "A100-40GB", None),
    (r"^a2-megagpu-(\d+)g$", "A100", "A100-40GB", None),
    (r"^a2-ultragpu-(\d+)g$", "A100-80GB", "A100-80GB", None),
    (r"^a3-highgpu-(\d+)g$", "H100", "H100", "gpudirect-tcpx"),
    # GCP's GPUDirect-TCPX docs list A3 Edge beside A3 High (recalled).
    (r"^a3-edgegpu-(\d+)g(-nolssd)?$", "H100", "H100", "gpudirect-tcpx"),
    (r"^a3-megagpu-(\d+)g$", "H100-MEGA", "H100", "gpudirect-tcpxo"),
    (r"^a3-ultragpu-(\d+)g(-nolssd)?$", "H200", "H200", "rdma"),
    (r"^a4-highgpu-(\d+)g$", "B200", "B200", "rdma"),
)
# G2: L4s per machine type (GCP docs, G2 machine series).
_G2_GPUS = {4: 1, 8: 1, 12: 1, 16: 1, 32: 1, 24: 2, 48: 4, 96: 8}
# N1: allowed GPU counts -> max vCPUs of the N1 host (GCP docs, "GPU machine
# types", N1 table; recalled, not re-read). 4 vCPUs per GPU stays within all of them.
N1_MAX_VCPUS = {
    "T4": {1: 48, 2: 48, 4: 96},
    "V100": {1: 12, 2: 24, 4: 48, 8: 96},
    "P100": {1: 16, 2: 32, 4: 64},
    "P4": {1: 24, 2: 48, 4: 96},
}
N1_VCPUS_PER_GPU = 4
ACCELERATOR_TYPE = {
    "T4": "nvidia-tesla-t4",
    "V100": "nvidia-tesla-v100",
    "P100": "nvidia-tesla-p100",
    "P4": "nvidia-tesla-p4",
}
# Max egress bandwidth per machine type, Gbit/s (GCP machine-series docs, recalled).
_NETWORK_GBPS = {
    "g2-standard-4": 10,
    "g2-standard-8": 16,
    "g2-standard-12": 16,
    "g2-standard-16": 32,
    "g2-standard-24": 32,
    "g2-standard-32": 32,
    "g2-standard-48": 50,
    "g2-standard-96": 100,
    "a2-highgpu-1g": 24,
    "a2-highgpu-2g": 32,
    "a2-highgpu-4g": 50,
    "a2-highgpu-8g": 100,
    "a2-megagpu-16g": 100,
    "a2-ultragpu-1g": 24,
    "a2-ultragpu-2g": 32,
    "a2-ultragpu-4g": 50,
    "a2-ultragpu-8g": 100,
    "a3-highgpu-1g": 25,
    "a3-highgpu-2g": 50,
    "a3-highgpu-4g": 100,
    "a3-highgpu-8g": 1000,
    "a3-edgegpu-8g": 800,
    "a3-edgegpu-8g-nolssd": 800,
    "a3-megagpu-8g": 1800,
    "a3-ultragpu-8g": 3600,
    "a3-ultragpu-8g-nolssd": 3600,
    "a4-highgpu-8g": 3600,
}


@dataclasses.dataclass(frozen=True)
class _Row:
    od: float | None
    spot: float | None
    mib: int | None = None


def _num(text: str) -> float | None:
    return float(text) if text.strip() else None


def _canonical_row(row_name: str) -> str:
    return "H100" if row_name == "H100-MEGA" else hardware.canonical_gpu(row_name) or row_name


def discounted_tiers(gpu_rows: dict[tuple[str, int, str], _Row]) -> dict[str, tuple[float, float]]:
    """Per canonical GPU with a second price tier: (highest discounted, lowest list) per-GPU on-demand."""
    prices: dict[str, set[float]] = collections.defaultdict(set)
    for (name, count, _), row in gpu_rows.items():
        if row.od:
            prices[_canonical_row(name)].add(round(row.od / count, 4))
    tiers = {}
    for gpu, values in prices.items():
        v = sorted(values)
        steps = [(v[i + 1] / v[i], v[i], v[i + 1]) for i in range(len(v) - 1)]
        if steps and max(steps)[0] >= TIER_GAP:
            _, low, high = max(steps)
            tiers[gpu] = (low, high)
    return tiers


def _read(sources: pathlib.Path):
    hosts: dict[tuple[str, str], dict] = {}
    gpu_rows: dict[tuple[str, int, str], _Row] = {}
    for r in read_csv(sources / SOURCE):
        zone = r["AvailabilityZone"]
        if r["InstanceType"]:
            hosts[(r["InstanceType"], zone)] = r
        elif r["AcceleratorName"] and not r["AcceleratorName"].startswith("tpu"):
            m = re.search(r"'SizeInMiB': (\d+)", r["GpuInfo"])
            gpu_rows[(r["AcceleratorName"], int(float(r["AcceleratorCount"])), zone)] = _Row(
                _num(r["Price"]), _num(r["SpotPrice"]), int(m.group(1)) if m else None
            )
    return hosts, gpu_rows


def _machines(hosts: dict[tuple[str, str], dict]):
    """(instance type, host row, zone, GPU row name, GPU, count, fabric) for every GPU machine."""
    for (itype, zone), host in sorted(hosts.items()):
        for pattern, row_name, gpu, fabric in _FAMILIES:
            m = re.match(pattern, itype)
            if m:
                n = int(m.group(1))
                count = _G2_GPUS.get(n) if row_name == "L4" else n
                if count:
                    yield itype, host, zone, row_name, gpu, count, fabric if count == 8 else None
                break
        m = re.match(r"^n1-standard-(\d+)$", itype)
        if m and int(m.group(1)) % N1_VCPUS_PER_GPU == 0:
            count = int(m.group(1)) // N1_VCPUS_PER_GPU
            for gpu, limits in N1_MAX_VCPUS.items():
                if count in limits and int(m.group(1)) <= limits[count]:
                    yield f"{itype}+{ACCELERATOR_TYPE[gpu]}x{count}", host, zone, gpu, gpu, count, None


def _offer(itype, host, zone, row_name, gpu, count, fabric, row: _Row, tiers, tally) -> Offer | None:
    host_od, host_spot = _num(host["Price"]), _num(host["SpotPrice"])
    gpu_od, gpu_spot = row.od, row.spot
    # A component whose own spot is at or above its own on-demand is inconsistent: no spot from it.
    if gpu_spot is not None and gpu_od is not None and gpu_spot >= gpu_od:
        gpu_spot = None
    if host_spot is not None and host_od is not None and host_spot >= host_od > 0:
        host_spot = None
    raw_od = host_od + gpu_od if host_od is not None and gpu_od is not None else None
    discounted = gpu_od is not None and gpu in tiers and round(gpu_od / count, 4) < tiers[gpu][1]
    od = None if discounted else raw_od
    listed_only = not consumption.sold_on_demand("gcp", itype)
    if listed_only:
        od = None
    spot = host_spot + gpu_spot if host_spot is not None and gpu_spot is not None else None
    spot = spot_offer(od if od is not None else raw_od, spot)
    if od is not None and od <= 0:
        od = None
    if od is None and spot is None:
        tally[
            "dropped: no trustworthy price" + (" (discounted on-demand tier, no usable spot)" if discounted else "")
        ] += 1
        return None
    if discounted:
        tally["spot only: on-demand GPU row is in the discounted tier"] += 1
    elif listed_only:
        tally["spot only: not sold on demand"] += 1
    src = f"{SOURCE} (SkyPilot v8 layout via anycloud-sh/catalog): host + {count} x {row_name} rows in zone"
    if discounted:
        src += "; GPU on-demand row in discounted tier: spot only"
    elif listed_only:
        src += "; not sold on demand: spot only"
    spec = hardware.load_gpus()[gpu]
    memory = min(spec.memory_gib, row.mib / units.MIB_PER_GIB) if row.mib else spec.memory_gib
    vcpus = int(float(host["vCPUs"]))
    network = _NETWORK_GBPS.get(itype.split("+")[0], min(32, max(10, 2 * vcpus)) if itype.startswith("n1-") else 0)
    return Offer(
        provider="gcp",
        region=host["Region"],
        zone=zone,
        instance_type=itype,
        gpu=gpu,
        gpu_count=count,
        gpu_memory_gib=round(memory, 2),
        vcpus=vcpus,
        ram_gib=float(host["MemoryGiB"]),
        on_demand_usd=round(od, 6) if od is not None else None,
        spot_usd=round(spot, 6) if spot is not None else None,
        source=src,
        as_of=AS_OF,
        nvlink=_nvlink(itype, gpu, count),
        fabric=fabric,
        network_gbps=float(network),
    )


def _nvlink(itype: str, gpu: str, count: int) -> bool:
    if itype.startswith(("a2-", "a3-", "a4-")):
        return count > 1
    return itype.startswith("n1-") and gpu == "V100" and count == 8


def _h100_cross_check(gpu_rows: dict[tuple[str, int, str], _Row]) -> str:
    """One line comparing H100 (a3-highgpu) and H100-MEGA per-GPU on-demand, one zone per region."""
    seen, pairs = set(), []
    for (name, count, zone), row in sorted(gpu_rows.items()):
        mega = gpu_rows.get(("H100-MEGA", 8, zone))
        region = zone.rsplit("-", 1)[0]
        if name == "H100" and count == 8 and mega and row.od and mega.od and region not in seen:
            seen.add(region)
            pairs.append(f"{region} {row.od / 8:.2f} vs {mega.od / 8:.2f}")
    return (
        "H100 cross-check, $/GPU-h on-demand, a3-highgpu (H100) vs a3-megagpu (H100-MEGA) GPU rows: "
        + "; ".join(pairs)
        + ". The same GPU differs by x2 or more within one region, either way round, "
        "while list prices of one GPU differ across regions by at most x1.4; H100 is 9.80 in us-east4 and "
        "MEGA 10.34 in us-central1. So the 4.20 (H100) and 4.42 (MEGA) rows are a second, discounted tier "
        "(40-45% of list: the size of a committed-use or flex-start rate; which one is not identified), "
        "not on-demand. They are not replaced by the MEGA rate of the same zone, because MEGA has the same "
        "defect in other zones (europe-west1: H100 10.79, MEGA 4.42); those machines are offered spot only."
    )


def build(sources: pathlib.Path) -> Built:
    """GCP offers per zone from `sources` (the catalog-sources directory)."""
    hosts, gpu_rows = _read(sources)
    tiers = discounted_tiers(gpu_rows)
    tally: collections.Counter = collections.Counter()
    offers = []
    for itype, host, zone, row_name, gpu, count, fabric in _machines(hosts):
        row = gpu_rows.get((row_name, count, zone))
        if row is None:
            continue  # that GPU is not sold in this zone
        offer = _offer(itype, host, zone, row_name, gpu, count, fabric, row, tiers, tally)
        if offer is not None:
            offers.append(offer)
    notes = [
        f"{gpu}: on-demand GPU rows at or below {low:.4f} $/GPU-h treated as a discounted tier "
        f"(next price up, the list tier, starts at {high:.4f})"
        for gpu, (low, high) in sorted(tiers.items())
    ]
    notes.append(_h100_cross_check(gpu_rows))
    notes += [f"{what}: {n} machine/zone pairs" for what, n in sorted(tally.items())]
    notes.append("TPUs and CPU-only machine types are not offers; GPU rows with no host type in their zone are unused")
    return Built(offers, SOURCES, RULES, notes)
