"""The speed model against published measurements (tests/data/published_speed.yaml).

Run `.venv/bin/python -m tests.published_speed` for the table: each case's prediction, the
published figure, log2(predicted/published) and whether it is in its band.
"""

from __future__ import annotations

import math
import pathlib
import statistics

import yaml

from gpusizer import planner
from gpusizer.estimate import fit as fit_mod
from gpusizer.facts import hardware

DATA = pathlib.Path(__file__).resolve().parent / "data" / "published_speed.yaml"


def cases() -> list[dict]:
    return yaml.safe_load(DATA.read_text())["cases"]


def _model(case: dict) -> dict:
    if "arch" in case:
        a = case["arch"]
        return {k: a[k] for k in ("params_b", "layers", "hidden_size", "attention_heads")}
    return {"name": case["model"]}


def predict(case: dict) -> float:
    gpu = hardware.load_gpus()[case["gpu"]]
    if case["metric"] == "train_tps_per_gpu":
        tokens = 1e9
        spec = {
            "name": "case",
            "model": _model(case),
            "task": "training",
            "training": {
                "sequence_length": case["seq"],
                "tokens": tokens,
                "micro_batch_size": 1,
                "activation_checkpointing": case["ckpt"],
            },
        }
        if case.get("method"):
            spec.update(
                task="finetune",
                finetune_method=case["method"],
                precision="int4" if case["method"] == "qlora" else "bf16",
            )
        w = planner.workload(planner.load_spec(spec))
        nodes = case.get("nodes", 1)
        per_node = case["gpus"] // nodes
        shape = fit_mod.Shape(gpu.name, gpu.memory_gib, per_node, 1.0, gpu.nvlink_gbs > 0, nodes > 1, nodes, 400.0)
        f = fit_mod.fit(w, shape)
        assert f.train_hours, f"{case['id']}: {f.code} {f.detail}"
        return tokens / (f.train_hours * 3600) / case["gpus"]
    inference = {
        "prompt_tokens": case["prompt"],
        "output_tokens": case["output"],
        "context_length": case["prompt"] + case["output"],
        "layout": {"tensor_parallel": case["tp"]},
    }
    if case.get("kv"):
        inference["kv_cache_precision"] = case["kv"]
    concurrency = case["concurrency"]
    inference["batch_size"] = 1 if concurrency == "max" else concurrency
    model = _model(case)
    spec = {"name": "case", "model": model, "inference": inference}
    if case.get("quantization"):
        model["quantization"] = {"scheme": case["quantization"]}
    else:
        spec["precision"] = case["precision"]
    w = planner.workload(planner.load_spec(spec))
    shape = fit_mod.Shape(gpu.name, gpu.memory_gib, case["tp"], 1.0, gpu.nvlink_gbs > 0 and case["tp"] > 1)
    f = fit_mod.fit(w, shape)
    assert f.speed is not None, f"{case['id']}: {f.code} {f.detail}"
    s = f.speed
    if concurrency == "max":
        c = max(1, min(s.max_concurrency, case.get("cap", 256)))
        s = w.serving_speed(gpu, case["tp"], shape.nvlink, concurrency=c)
    return {"tps": s.tokens_per_second, "tpot_ms": s.tpot_ms, "e2e_ms": s.e2e_ms}[case["metric"]]


def score() -> list[tuple[dict, float, float, bool]]:
    """(case, predicted, log2 ratio, in band) for every case."""
    out = []
    for case in cases():
        p = predict(case)
        ratio = p / case["published"]
        lo, hi = case["band"]
        out.append((case, p, math.log2(ratio), lo <= ratio <= hi))
    return out


def summary(rows) -> tuple[float, float]:
    """(share in band, median |log2 ratio|)."""
    return sum(r[3] for r in rows) / len(rows), statistics.median(abs(r[2]) for r in rows)


if __name__ == "__main__":
    rows = score()
    for case, p, l2, ok in rows:
        print(
            f"{case['id']:<34} {p:>10.1f} {case['published']:>10.1f} {l2:+.2f} {'ok' if ok else 'OUT'}"
            f"{' (fitted)' if case.get('fitted') else ''}"
        )
    share, med = summary(rows)
    held = [r for r in rows if not r[0].get("fitted")]
    hs, hm = summary(held)
    print(f"all {len(rows)}: {share:.0%} in band, median |log2| {med:.2f}; held out {len(held)}: {hs:.0%}, {hm:.2f}")
