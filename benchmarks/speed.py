"""Speed benchmark: decisions per second on the full embedded catalog, and CLI cold start.

Run: .venv/bin/python benchmarks/speed.py [--repeat N]

Prints, for a fixed set of 16 specs (serving, fine-tuning, training; AWS,
GCP, spot, targets), the time per decision with the catalog already loaded,
the one-off catalog load, and the median wall time of `gpusizer plan` in a
fresh process (what a CI step or a Pulumi program pays). Peers measured on
this kind of machine (docs/peers.md): SkyPilot 16 picks in 10.6 s
(`import sky` 2.1 s); gpuhunt 20 queries in 0.40 s.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import gpusizer  # noqa: E402
from gpusizer.catalog import Catalog  # noqa: E402

SPECS = [
    {"name": "chat-8b", "model": {"name": "llama-3.1-8b"}, "inference": {"context_length": 8192, "batch_size": 8}},
    {"name": "chat-8b-tps", "model": {"name": "llama-3.1-8b"},
     "inference": {"batch_size": 32, "targets": {"tokens_per_second": 1500, "tpot_ms": 40}}},
    {"name": "chat-8b-spot", "model": {"name": "llama-3.1-8b"}, "placement": {"purchase": "spot"}},
    {"name": "serve-70b", "model": {"name": "llama-3.1-70b"}, "inference": {"batch_size": 16}},
    {"name": "serve-70b-int4", "model": {"name": "llama-3.1-70b"}, "precision": "int4"},
    {"name": "serve-405b-fp8", "model": {"name": "llama-3.1-405b"}, "precision": "fp8"},
    {"name": "mixtral", "model": {"name": "mixtral-8x7b"}, "placement": {"purchase": "any"}},
    {"name": "deepseek", "model": {"name": "deepseek-v3"}, "precision": "fp8"},
    {"name": "qwen-7b-gcp", "model": {"name": "qwen2.5-7b"}, "placement": {"providers": ["gcp"]}},
    {"name": "gemma-27b", "model": {"name": "gemma-2-27b"}, "inference": {"context_length": 8192}},
    {"name": "mistral-east", "model": {"name": "mistral-7b-v0.1"}, "placement": {"regions": ["us-east-1", "us-central1"]}},
    {"name": "sdxl", "model": {"name": "sdxl-1.0-base"}, "precision": "fp16", "inference": {"batch_size": 4}},
    {"name": "lora-8b", "model": {"name": "llama-3.1-8b"}, "task": "finetune", "finetune_method": "lora"},
    {"name": "qlora-70b", "model": {"name": "llama-3.1-70b"}, "task": "finetune", "finetune_method": "qlora"},
    {"name": "full-ft-8b", "model": {"name": "llama-3.1-8b"}, "task": "finetune", "finetune_method": "full"},
    {"name": "pretrain-1b", "model": {"name": "llama-3.2-1b"}, "task": "training",
     "training": {"tokens": 2e10, "deadline_hours": 48}},
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    t0 = time.perf_counter()
    catalog = Catalog.load()
    load_s = time.perf_counter() - t0
    print(f"catalog: {len(catalog.offers)} offers, loaded in {load_s * 1e3:.0f} ms (cached after the first load)")

    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        for spec in SPECS:
            gpusizer.plan(spec, catalog=catalog)
        times.append(time.perf_counter() - t0)
    best = min(times)
    print(f"decisions: {len(SPECS)} specs in {best:.3f} s (best of {args.repeat}) = "
          f"{len(SPECS) / best:.1f} decisions/s, {best / len(SPECS) * 1e3:.1f} ms each")

    cold = []
    example = REPO / "stacks/examples/chat-8b.yaml"
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gpusizer.cli", "plan", str(example), "--format", "json"],
                       check=True, capture_output=True, cwd=REPO)
        cold.append(time.perf_counter() - t0)
    print(f"CLI cold start + one plan: median {statistics.median(cold):.2f} s (min {min(cold):.2f} s) over 5 runs")


if __name__ == "__main__":
    main()
