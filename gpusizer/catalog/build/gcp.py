"""GCP offers from the SkyPilot-format snapshot (gcp-vms-2026-05-20.csv).

The snapshot lists host machine types and GPUs as separate rows; GPU rows
have an empty InstanceType and are priced for their count. A GPU machine's
price in a zone is the host's price plus the price of its GPUs in the same
zone (the "forgotten GPU line" peers' users report). Rules:
- G2 (L4), A2 high/mega (A100 40GB), A2 ultra (A100 80GB), A3 high/edge
  (H100), A3 mega (H100, GPUDirect-TCPXO), A3 ultra (H200), A4 (B200) come
  with a fixed GPU count (GCP "GPU machine types" docs).
- N1 takes attached T4/V100/P100/P4 in the counts GCP allows; each count is
  paired with n1-standard-(4 x count) (4 vCPUs per GPU, within GCP's N1
  per-GPU vCPU limits) and named "n1-standard-8+nvidia-tesla-t4x2".
- Spot is offered only when both host and GPU spot prices exist and their
  sum is below on-demand. A host or GPU row whose spot price is at or above
  its own on-demand price is inconsistent: that machine is not offered in
  that zone at all (its on-demand price is not trusted either).
- The snapshot's H100 on-demand rows are about half the H100-MEGA rate while
  their spot rows match it: the H100 on-demand rows are not list prices.
  a3-highgpu/edgegpu on-demand GPU cost is therefore taken at the H100-MEGA
  per-GPU rate of the same zone (same H100 SXM GPU), and offers where no
  MEGA rate exists in the region keep spot only.
"""

from __future__ import annotations

import csv
import pathlib
import re

from gpusizer import hardware
from gpusizer.catalog.offer import Offer

SOURCE = "gcp-vms-2026-05-20.csv"
AS_OF = "2026-05-20"

# machine-type prefix -> (GPU row name, canonical GPU, NVLink, fabric)
_FAMILIES = (
    (r"^g2-standard-(\d+)$", "L4", "L4", False, None),
    (r"^a2-highgpu-(\d+)g$", "A100", "A100-40GB", True, None),
    (r"^a2-megagpu-(\d+)g$", "A100", "A100-40GB", True, None),
    (r"^a2-ultragpu-(\d+)g$", "A100-80GB", "A100-80GB", True, None),
    (r"^a3-highgpu-(\d+)g$", "H100", "H100", True, "gpudirect-tcpx"),
    (r"^a3-edgegpu-(\d+)g$", "H100", "H100", True, None),
    (r"^a3-megagpu-(\d+)g$", "H100-MEGA", "H100", True, "gpudirect-tcpxo"),
    (r"^a3-ultragpu-(\d+)g$", "H200", "H200", True, "rdma"),
    (r"^a4-highgpu-(\d+)g$", "B200", "B200", True, "rdma"),
)
# G2: GPUs per machine type (GCP docs, G2 machine series).
_G2_GPUS = {4: 1, 8: 1, 12: 1, 16: 1, 32: 1, 24: 2, 48: 4, 96: 8}
# N1 attachable GPUs and their allowed counts (GCP docs, "GPUs on N1").
N1_COUNTS = {"T4": (1, 2, 4), "V100": (1, 2, 4, 8), "P100": (1, 2, 4), "P4": (1, 2, 4)}
_ACCELERATOR_TYPE = {"T4": "nvidia-tesla-t4", "V100": "nvidia-tesla-v100", "P100": "nvidia-tesla-p100", "P4": "nvidia-tesla-p4"}


def _num(text: str) -> float | None:
    return float(text) if text not in ("", None) else None


def build(sources: pathlib.Path) -> tuple[list[Offer], list[str]]:
    """GCP offers per zone, and notes on what was left out."""
    hosts: dict[tuple[str, str], dict] = {}
    gpu_rows: dict[tuple[str, int, str], tuple[float | None, float | None]] = {}
    zone_region: dict[str, str] = {}
    with (sources / SOURCE).open() as f:
        for r in csv.DictReader(f):
            zone_region[r["AvailabilityZone"]] = r["Region"]
            if r["InstanceType"]:
                hosts[(r["InstanceType"], r["AvailabilityZone"])] = r
            elif r["AcceleratorName"] and not r["AcceleratorName"].startswith("tpu"):
                key = (r["AcceleratorName"], int(float(r["AcceleratorCount"])), r["AvailabilityZone"])
                gpu_rows[key] = (_num(r["Price"]), _num(r["SpotPrice"]))
    offers: list[Offer] = []
    notes: list[str] = []
    for (itype, zone), host in sorted(hosts.items()):
        for pattern, row_name, gpu, nvlink, fabric in _FAMILIES:
            m = re.match(pattern, itype)
            if m:
                n = int(m.group(1))
                count = _G2_GPUS.get(n) if row_name == "L4" else n
                if count:
                    offers += _machine(itype, host, zone, zone_region[zone], row_name, gpu, count, nvlink, fabric, gpu_rows)
                break
    for (itype, zone), host in sorted(hosts.items()):
        m = re.match(r"^n1-standard-(\d+)$", itype)
        if not m:
            continue
        for gpu, counts in N1_COUNTS.items():
            for count in counts:
                if int(m.group(1)) == 4 * count:
                    offers += _machine(f"{itype}+{_ACCELERATOR_TYPE[gpu]}x{count}", host, zone, zone_region[zone],
                                       gpu, gpu, count, gpu == "V100" and count == 8, None, gpu_rows)
    return offers, notes


def _machine(itype, host, zone, region, row_name, gpu, count, nvlink, fabric, gpu_rows) -> list[Offer]:
    row = gpu_rows.get((row_name, count, zone))
    if row is None:
        return []  # this GPU is not sold in this zone
    gpu_od, gpu_spot = row
    host_od, host_spot = _num(host["Price"]), _num(host["SpotPrice"])
    # A component whose spot price is at or above its on-demand price is a data
    # error (A100-80GB rows in us-central1 and europe-west4 do this, at under
    # half the on-demand rate of the same GPU in other regions): neither of its
    # prices is trusted, so the machine is not offered there.
    if any(s is not None and o is not None and s >= o for s, o in ((gpu_spot, gpu_od), (host_spot, host_od))):
        return []
    if row_name == "H100":
        mega = gpu_rows.get(("H100-MEGA", 8, zone))
        gpu_od = mega[0] / 8 * count if mega and mega[0] else None
    od = round(host_od + gpu_od, 5) if host_od and gpu_od else None
    spot = round(host_spot + gpu_spot, 5) if host_spot and gpu_spot else None
    if spot is not None and od is not None and spot >= od:
        spot = None
    if od is None and spot is None:
        return []
    src = f"{SOURCE} (SkyPilot-format catalog via anycloud-sh/catalog): host + {count} x {row_name} in {zone}"
    if row_name == "H100":
        src += "; on-demand GPU at the H100-MEGA rate (see gcp.py)"
    table = hardware.load_gpus()[gpu]
    return [Offer(
        provider="gcp", region=region, zone=zone, instance_type=itype, gpu=gpu, gpu_count=count,
        gpu_memory_gib=table.memory_gib, vcpus=int(float(host["vCPUs"])), ram_gib=float(host["MemoryGiB"]),
        on_demand_usd=od, spot_usd=spot, source=src, as_of=AS_OF, nvlink=nvlink, fabric=fabric,
    )]
