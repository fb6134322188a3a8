"""Measure this machine's GPU and write a calibration file for gpusizer (issue 29).

Run: .venv/bin/python benchmarks/validate_gpu.py [--out calibration.yaml] [--dry-run]

- memory bandwidth: a large device-to-device copy (torch), bytes moved / time, over the GPU's
  peak (data/gpus.yaml) = the decode_mbu the speed model uses;
- matmul: bf16 GEMMs of 8192^3, FLOPs / time over dense peak = inference_mfu;
- vLLM (when installed): a short offline generate of a small model; its tokens/s is reported.
Writes a calibration file in `gpusizer calibrate`'s format (sizing.calibration / GPUSIZER_CALIBRATION).
--dry-run (or no GPU / no torch) runs the same code path with synthetic timings, so CI exercises
the file it writes without a GPU; a dry-run file says so in its sources.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from gpusizer.estimate import calibration  # noqa: E402
from gpusizer.facts import hardware  # noqa: E402


def gpu_name(device: str) -> str | None:
    """The canonical GPU of a CUDA device name: the longest known name or alias it starts with.

    >>> gpu_name("NVIDIA H100 80GB HBM3"), gpu_name("NVIDIA L40S"), gpu_name("NVIDIA A100-SXM4-40GB")
    ('H100', 'L40S', 'A100-40GB')
    """
    norm = lambda x: "".join(ch for ch in x.lower() if ch.isalnum())  # noqa: E731
    found = hardware.canonical_gpu(device.replace("NVIDIA ", ""))
    if found:
        return found
    d = norm(device.replace("NVIDIA", ""))
    best = None
    for g in hardware.load_gpus().values():
        for n in (g.name, *g.aliases):
            k = norm(n)
            if k and (d.startswith(k) or (k.startswith("a100") and d.startswith("a100") and k[4:] in d)):
                if best is None or len(k) > best[0]:
                    best = (len(k), g.name)
    return best[1] if best else None


def measure(dry: bool) -> tuple[str, dict[str, float], list[str]]:
    """(canonical GPU, {factor: value}, source lines)."""
    torch = None
    if not dry:
        try:
            import torch  # noqa: F811

            dry = not torch.cuda.is_available()
        except ImportError:
            dry = True
    if dry:
        gpu = hardware.load_gpus()["L4"]
        bw_gbs, tflops = gpu.hbm_bw_gbs * 0.8, gpu.peak_tflops("bf16") * 0.5
        return (
            gpu.name,
            _factors(gpu, bw_gbs, tflops),
            ["dry run: synthetic timings (80% bandwidth, 50% matmul), not a measurement"],
        )
    name = gpu_name(torch.cuda.get_device_name(0))
    if name is None:
        raise SystemExit(f"unknown GPU {torch.cuda.get_device_name(0)!r}: not in gpusizer/data/gpus.yaml")
    gpu = hardware.load_gpus()[name]
    n = 1 << 30  # 1 GiB
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    t = time.perf_counter()
    reps = 20
    for _ in range(reps):
        b.copy_(a)
    torch.cuda.synchronize()
    bw_gbs = 2 * n * reps / (time.perf_counter() - t) / 1e9  # a copy reads and writes
    m = 8192
    x = torch.randn(m, m, dtype=torch.bfloat16, device="cuda")
    y = torch.randn(m, m, dtype=torch.bfloat16, device="cuda")
    for _ in range(3):
        x @ y
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(10):
        x @ y
    torch.cuda.synchronize()
    tflops = 2 * m**3 * 10 / (time.perf_counter() - t) / 1e12
    sources = [
        f"validate_gpu.py on {torch.cuda.get_device_name(0)}: copy {bw_gbs:,.0f} GB/s, bf16 GEMM {tflops:,.0f} TFLOPS"
    ]
    try:
        import vllm  # noqa: F401

        sources.append(_vllm_line())
    except ImportError:
        sources.append("vLLM not installed: no serving benchmark")
    return name, _factors(gpu, bw_gbs, tflops), sources


def _vllm_line() -> str:
    from vllm import LLM, SamplingParams

    llm = LLM(model="Qwen/Qwen2.5-0.5B-Instruct", max_model_len=2048)
    t = time.perf_counter()
    out = llm.generate(["Hello"] * 64, SamplingParams(max_tokens=128, ignore_eos=True))
    tokens = sum(len(o.outputs[0].token_ids) for o in out)
    return f"vLLM Qwen2.5-0.5B, 64 x 128 tokens: {tokens / (time.perf_counter() - t):,.0f} tokens/s"


def _factors(gpu: hardware.GpuSpec, bw_gbs: float, tflops: float) -> dict[str, float]:
    return {
        "decode_mbu": round(min(1.0, bw_gbs / gpu.hbm_bw_gbs), 4),
        "inference_mfu": round(min(1.0, tflops / gpu.peak_tflops("bf16")), 4),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="calibration.yaml")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    gpu, factors, sources = measure(args.dry_run)
    cal = calibration.Calibration(args.out, {gpu: factors}, {gpu: tuple(sources)})
    pathlib.Path(args.out).write_text(yaml.safe_dump(cal.to_dict(), sort_keys=False, width=200))
    calibration.load(args.out)  # what it wrote reads back as a calibration
    print(f"{gpu}: {factors}; wrote {args.out}")
    for line in sources:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
