"""Write an OpenMetrics file of NVIDIA DCGM exporter samples for a few workloads (tests of `gpusizer observe`).

Run as a script: ``python -m tests.measure.dcgm_openmetrics OUT.om`` (then
``promtool tsdb create-blocks-from openmetrics OUT.om DATA_DIR``). Series carry
the exporter's labels (gpu, UUID, device, modelName, Hostname; DCGM exporter
"Metrics" docs) plus the relabeled ``gpusizer_workload`` and, for one workload,
an ``instance_type`` label as EC2 service discovery relabeling gives it
(docs/observe.md). Memory in MiB and utilization in %, one sample every
5 minutes, as the exporter reports them. Values are deterministic (seeded).

Total memory per GPU is what AWS reports for the instance's GPU
(gpusizer/data/catalog/aws.csv: L40S 44.7 GiB = 45776 MiB, L4 22.35 GiB = 22886 MiB).
"""

from __future__ import annotations

import datetime
import hashlib
import pathlib
import random
import sys

END = datetime.datetime(2026, 11, 20, tzinfo=datetime.UTC)
"""End of the observed week (the tests pass it as --end)."""
WINDOW_S = 7 * 86400
STEP_S = 300
SAMPLES_PER_GPU = WINDOW_S // STEP_S  # 2016 five-minute samples in 7 days
MIB = {"L40S": 45776, "L4": 22886}
MODEL_NAME = {"L40S": "NVIDIA L40S", "L4": "NVIDIA L4"}

# name -> GPU, GPUs, host, instance_type label, memory profile (MiB: base, peak), utilization % (mean), days of data, PROF metrics
WORKLOADS = {
    # Acceptance: peaks at 12 GiB per GPU on an L40S (g6e.xlarge) at ~20% utilization -> downsize.
    "chat-oversized": dict(
        gpu="L40S",
        gpus=1,
        host="ip-10-0-1-10",
        instance_type="g6e.xlarge",
        base_mib=10240,
        peak_mib=12288,
        util=20,
        days=7,
        prof=True,
    ),
    # Acceptance: peaks at 96% of an L4's memory -> upsize.
    "chat-full": dict(
        gpu="L4",
        gpus=1,
        host="ip-10-0-1-11",
        instance_type=None,
        base_mib=21000,
        peak_mib=22000,
        util=60,
        days=7,
        prof=False,
    ),
    # 78% of an L4's memory held at ~10% utilization, nothing cheaper fits -> investigate.
    "batch-idle": dict(
        gpu="L4",
        gpus=1,
        host="ip-10-0-1-12",
        instance_type=None,
        base_mib=17000,
        peak_mib=17920,
        util=10,
        days=7,
        prof=False,
    ),
    # Only the last 2 of 7 days -> partial (not re-planned, exit 3).
    "chat-new": dict(
        gpu="L4",
        gpus=1,
        host="ip-10-0-1-13",
        instance_type=None,
        base_mib=9000,
        peak_mib=10000,
        util=30,
        days=2,
        prof=False,
    ),
    # A label value that needs PromQL escaping (never a spec name; the client's selector is checked with it).
    'odd"name\\x': dict(
        gpu="L4",
        gpus=1,
        host="ip-10-0-1-14",
        instance_type=None,
        base_mib=1000,
        peak_mib=2000,
        util=5,
        days=1,
        prof=False,
    ),
}

SPECS = {
    "chat-oversized": {
        "name": "chat-oversized",
        "model": {"name": "llama-3.1-8b"},
        "precision": "fp8",
        "inference": {"context_length": 8192, "batch_size": 8},
        "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
    },
    "chat-full": {
        "name": "chat-full",
        "model": {"name": "llama-3.1-8b"},
        "precision": "bf16",
        "inference": {"context_length": 4096, "batch_size": 4},
        "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
    },
    "batch-idle": {
        "name": "batch-idle",
        "model": {"name": "qwen2.5-7b"},
        "precision": "bf16",
        "inference": {"context_length": 4096, "batch_size": 4},
        "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
    },
    "chat-new": {
        "name": "chat-new",
        "model": {"name": "llama-3.2-3b"},
        "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
    },
    "never-deployed": {
        "name": "never-deployed",
        "model": {"name": "llama-3.2-1b"},
        "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
    },
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _series(name: str, w: dict, index: int) -> dict[str, str]:
    labels = {
        "gpu": str(index),
        "UUID": "GPU-" + hashlib.sha1(f"{name}/{index}".encode()).hexdigest()[:12],
        "device": f"nvidia{index}",
        "modelName": MODEL_NAME[w["gpu"]],
        "Hostname": w["host"],
        "gpusizer_workload": name,
    }
    if w["instance_type"]:
        labels["instance_type"] = w["instance_type"]
    return labels


def samples(name: str, w: dict) -> dict[str, list[tuple[dict, float, float]]]:
    """Per metric, (labels, timestamp, value) rows: memory between base and peak (the peak reached once), utilization around its mean."""
    rng = random.Random(name)
    n = int(w["days"] * 86400 // STEP_S)
    start = END.timestamp() - n * STEP_S
    out: dict[str, list] = {
        m: []
        for m in (
            "DCGM_FI_DEV_FB_USED",
            "DCGM_FI_DEV_FB_FREE",
            "DCGM_FI_DEV_GPU_UTIL",
            "DCGM_FI_PROF_SM_ACTIVE",
            "DCGM_FI_PROF_PCIE_RX_BYTES",
        )
    }
    for g in range(w["gpus"]):
        labels = _series(name, w, g)
        peak_at = rng.randrange(n)
        for i in range(n):
            t = start + (i + 1) * STEP_S
            used = (
                w["peak_mib"]
                if i == peak_at
                else rng.uniform(w["base_mib"], w["base_mib"] + 0.8 * (w["peak_mib"] - w["base_mib"]))
            )
            util = min(100.0, max(0.0, rng.gauss(w["util"], 3)))
            out["DCGM_FI_DEV_FB_USED"].append((labels, t, round(used)))
            out["DCGM_FI_DEV_FB_FREE"].append((labels, t, MIB[w["gpu"]] - round(used)))
            out["DCGM_FI_DEV_GPU_UTIL"].append((labels, t, round(util)))
            if w["prof"]:
                out["DCGM_FI_PROF_SM_ACTIVE"].append((labels, t, round(util / 100 * 0.9, 3)))
                out["DCGM_FI_PROF_PCIE_RX_BYTES"].append((labels, t, 2.0e8))
    return out


def write(path: pathlib.Path) -> pathlib.Path:
    """Write every workload's samples as one OpenMetrics exposition (metric families grouped, `# EOF` last)."""
    families: dict[str, list] = {}
    for name, w in WORKLOADS.items():
        for metric, rows in samples(name, w).items():
            families.setdefault(metric, []).extend(rows)
    lines = []
    for metric, rows in families.items():
        if not rows:
            continue
        lines.append(f"# TYPE {metric} gauge")
        for labels, t, value in rows:
            text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            lines.append(f"{metric}{{{text}}} {value} {t:.0f}")
    lines.append("# EOF")
    path.write_text("\n".join(lines) + "\n")
    return path


if __name__ == "__main__":
    write(pathlib.Path(sys.argv[1]))
