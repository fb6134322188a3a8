"""`gpusizer calibrate`: fit per-GPU efficiency factors (MBU, MFU) from measured runs.

Inputs, recognised by their fields:

* vLLM ``benchmarks/benchmark_serving.py --save-result`` JSON (vLLM
  repository, benchmarks/benchmark_serving.py, read 2026-11-23 at commit
  0049e29c): ``model_id``, ``max_concurrency``, ``completed``,
  ``total_input_tokens``, ``total_output_tokens``, ``output_throughput``
  (tokens/s), ``mean_ttft_ms``, ``mean_tpot_ms``, and the ``--metadata KEY=VALUE``
  pairs it copies to the top level. The file does not record the hardware, so
  the GPU comes from metadata ``gpu=L40S`` and ``tensor_parallel_size=N`` (or
  ``--gpu`` / ``--gpu-count``), the weights' precision from ``precision=``
  (default bf16).
* gpusizer's training-run format: ``{"format": "gpusizer-training-run/v1",
  "gpu": "H100", "gpu_count": 8, "model": "llama-3.1-8b", "precision": "bf16",
  "tokens_per_second": 95000, "peak_memory_gib": 61.2}`` plus optional
  ``method`` (full | lora | qlora) and ``activation_checkpointing`` (default true).

Algorithm. A serving run becomes the spec shape it measured: batch =
``max_concurrency`` (else every completed request at once), prompt = mean
input tokens, context = mean input + mean output tokens. The speed model's
TTFT falls as MFU rises and its TPOT as MBU rises (monotonic), so each factor is
the value in [0.01, 1] at which the model reproduces the measurement, found by
bisection: MFU from ``mean_ttft_ms`` first (TTFT under load includes queueing,
so this is a lower bound; prefer a ``--max-concurrency 1`` run), then MBU
from ``mean_tpot_ms``. A measurement the model cannot reach even at 100% of
peak clamps to 1 and says so. A training run's MFU is model FLOPs per token
(gpusizer.estimate.speed.training_flops: 6N + attention at ``sequence_length``, default 4096;
times speed.RECOMPUTE_TIME when checkpointing, which the model charges as time)
x tokens/s over GPUs x dense peak. Several runs of one GPU average.
"""

from __future__ import annotations

import math
import pathlib
import statistics

from gpusizer import planner
from gpusizer.base import errors, inputs, units
from gpusizer.estimate import calibration, efficiency, speed
from gpusizer.facts import hardware

TRAINING_FORMAT = "gpusizer-training-run/v1"
_LOW, _HIGH = 0.01, 1.0


def fit_file(
    path: str | pathlib.Path, gpu: str | None = None, gpu_count: int | None = None
) -> list[tuple[str, str, float, str]]:
    """Fitted (gpu, factor, value, source line) rows from one result file.

    Raises:
        SpecError: unreadable file, unknown format, or a field missing or wrong (named).
    """
    p = pathlib.Path(path)
    doc = inputs.read_json(p, "result file", "RESULT.json", max_bytes=inputs.MAX_RESULT_BYTES)
    try:
        if isinstance(doc, dict) and doc.get("format") == TRAINING_FORMAT:
            return [_fit_training(p.name, doc)]
        if isinstance(doc, dict) and "mean_tpot_ms" in doc and "model_id" in doc:
            return _fit_serving(p.name, doc, gpu, gpu_count)
    except errors.SpecError as exc:  # the run's shape as a spec (model, context) refused: say which file
        if str(exc).startswith(f"{p.name}: "):
            raise
        raise errors.SpecError(f"{p.name}: {exc}", exc.field) from None
    raise errors.SpecError(
        f"{p}: neither a vLLM benchmark_serving.py result (model_id, mean_tpot_ms, ...) nor a "
        f'"format": "{TRAINING_FORMAT}" training run. To fix: pass one of those'
    )


def fit(paths, gpu: str | None = None, gpu_count: int | None = None, out: str = "-") -> calibration.Calibration:
    """A Calibration from every file in `paths`: the mean of each GPU's fitted factors."""
    values: dict[str, dict[str, list[float]]] = {}
    sources: dict[str, list[str]] = {}
    for path in paths:
        for g, factor, value, source in fit_file(path, gpu, gpu_count):
            values.setdefault(g, {}).setdefault(factor, []).append(value)
            sources.setdefault(g, []).append(source)
    gpus = {g: {k: round(statistics.fmean(v), 4) for k, v in f.items()} for g, f in values.items()}
    return calibration.Calibration(out, gpus, {g: tuple(s) for g, s in sources.items()})


# Bounds a real run stays within (a guard against corrupt files, not a model limit): counts are whole
# numbers of requests, tokens or GPUs; measurements finite and positive.
MAX_GPUS = 65_536
MAX_COUNT = 10**15
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def _number(value) -> float | None:
    """`value` as a finite float, or None: numbers (not booleans) and numeric strings (vLLM's --metadata writes strings)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _hint(key: str) -> str:
    return " (add it with --metadata KEY=VALUE or the matching flag)" if key in ("gpu", "tensor_parallel_size") else ""


def _count(name: str, doc: dict, key: str, required: bool = True, most: int = MAX_COUNT) -> int | None:
    """A whole number from 1 to `most` (requests, tokens, GPUs); SpecError naming the file and field otherwise."""
    value = doc.get(key)
    if value is None and not required:
        return None
    number = _number(value)
    if number is None or number < 1 or number > most or not number.is_integer():
        raise errors.SpecError(
            f"{name}: field {key!r} = {inputs.quote(value)}. To fix: a whole number from 1 to "
            f"{most:,} is needed{_hint(key)}",
            key,
        )
    return int(number)


def _measure(name: str, doc: dict, key: str, required: bool = True) -> float | None:
    """A finite positive measurement (ms, tokens/s, GiB); SpecError naming the file and field otherwise (NaN included)."""
    value = doc.get(key)
    if value is None and not required:
        return None
    number = _number(value)
    if number is None or number <= 0:
        raise errors.SpecError(
            f"{name}: field {key!r} = {inputs.quote(value)}. To fix: a finite positive number is needed{_hint(key)}",
            key,
        )
    return number


def _flag(name: str, doc: dict, key: str, default: bool) -> bool:
    """A true/false field (JSON boolean, or the strings --metadata writes)."""
    value = doc.get(key, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise errors.SpecError(f"{name}: field {key!r} = {inputs.quote(value)}. To fix: true or false", key)


def _text(name: str, doc: dict, key: str, default: str | None = None) -> str:
    value = doc.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise errors.SpecError(f"{name}: field {key!r} = {inputs.quote(value)}. To fix: a non-empty string", key)
    return value


def _gpu(name: str, raw) -> str:
    gpu = hardware.canonical_gpu(str(raw)) if raw else None
    if gpu is None:
        raise errors.SpecError(
            f"{name}: GPU {raw!r} unknown or missing. To fix: benchmark with --metadata gpu=L40S "
            f"or pass --gpu; one of {', '.join(hardware.load_gpus())}"
        )
    return gpu


def _fit_serving(
    name: str, doc: dict, gpu_flag: str | None, count_flag: int | None
) -> list[tuple[str, str, float, str]]:
    gpu = _gpu(name, doc.get("gpu") or gpu_flag)
    tp_raw = doc.get("tensor_parallel_size")
    tp = _count(
        name,
        {"tensor_parallel_size": count_flag or 1 if tp_raw is None else tp_raw},
        "tensor_parallel_size",
        most=MAX_GPUS,
    )
    completed = _count(name, doc, "completed")
    prompt = max(1, round(_count(name, doc, "total_input_tokens") / completed))
    output = max(1, round(_count(name, doc, "total_output_tokens") / completed))
    batch = _count(name, doc, "max_concurrency", required=False) or completed
    ttft, tpot = _measure(name, doc, "mean_ttft_ms"), _measure(name, doc, "mean_tpot_ms")
    spec = {
        "name": "calibration",
        "model": {"name": _text(name, doc, "model_id")},
        "precision": _text(name, doc, "precision", "bf16"),
        "inference": {"context_length": prompt + output, "prompt_tokens": prompt, "batch_size": batch},
    }
    w = planner.workload(planner.load_spec(spec))
    g = hardware.load_gpus()[gpu]

    def run(mbu: float, mfu: float) -> speed.InferenceSpeed:
        inf = w.spec.serving
        return speed.inference_speed(
            w.model,
            g,
            tp,
            g.nvlink_gbs > 0,
            w.spec.precision,
            w.kv_precision,
            inf.context_length,
            prompt,
            batch,
            mbu=mbu,
            mfu=mfu,
            output=output,
        )

    d_mbu, d_mfu = efficiency.decode_mbu(gpu), efficiency.inference_mfu(gpu)
    mfu, mfu_note = _solve(lambda x: run(d_mbu, x).ttft_idle_ms if batch == 1 else run(d_mbu, x).ttft_ms, ttft)
    mbu, mbu_note = _solve(lambda x: run(x, mfu or d_mfu).tpot_ms, tpot)
    before = run(d_mbu, d_mfu)
    shape = f"{name}: {w.model.key} {w.spec.precision} on {tp} x {gpu}, batch {batch}, {prompt}+{output} tokens"
    rows = []
    if mfu is not None:
        rows.append(
            (
                gpu,
                "inference_mfu",
                mfu,
                f"{shape}: TTFT {ttft:.1f} ms measured vs {before.ttft_ms:.1f} ms at default MFU{mfu_note}",
            )
        )
    if mbu is not None:
        rows.append(
            (
                gpu,
                "decode_mbu",
                mbu,
                f"{shape}: TPOT {tpot:.2f} ms measured vs {before.tpot_ms:.2f} ms at default MBU{mbu_note}",
            )
        )
    if not rows:
        raise errors.SpecError(
            f"{name}: TTFT {ttft:.1f} ms and TPOT {tpot:.2f} ms are slower than the speed model at "
            f"{_LOW:.0%} of peak; nothing to fit. To fix: check gpu/tensor_parallel_size/precision metadata"
        )
    return rows


def _solve(model_ms, measured_ms: float) -> tuple[float | None, str]:
    """The factor in [_LOW, _HIGH] at which `model_ms(factor)` (non-increasing) equals `measured_ms`.

    None when no factor in the range reproduces a slower measurement (another
    bound dominates: the factor cannot be read from this run).
    """
    fast, slow = model_ms(_HIGH), model_ms(_LOW)
    if fast >= measured_ms:
        return _HIGH, "; as fast as or faster than the model allows at 100% of peak: clamped to 1"
    if slow < measured_ms:
        return None, ""
    lo, hi = _LOW, _HIGH
    for _ in range(60):
        mid = (lo + hi) / 2
        if model_ms(mid) > measured_ms:
            lo = mid
        else:
            hi = mid
    return round((lo + hi) / 2, 4), ""


def _fit_training(name: str, doc: dict) -> tuple[str, str, float, str]:
    gpu = _gpu(name, doc.get("gpu"))
    count = _count(name, doc, "gpu_count", most=MAX_GPUS)
    tps = _measure(name, doc, "tokens_per_second")
    peak_memory = _measure(name, doc, "peak_memory_gib", required=False)
    method = _text(name, doc, "method", "full")
    task = "training" if method == "full" else "finetune"
    spec = {
        "name": "calibration",
        "model": {"name": _text(name, doc, "model")},
        "task": task,
        "precision": _text(name, doc, "precision", "bf16"),
        "training": {"activation_checkpointing": _flag(name, doc, "activation_checkpointing", True)},
    }
    if task == "finetune":
        spec["finetune_method"] = method
    w = planner.workload(planner.load_spec(spec))
    ckpt = w.spec.train.activation_checkpointing
    seq = int(doc.get("sequence_length") or w.spec.train.sequence_length)
    # The speed model charges recompute as time (speed.RECOMPUTE_TIME), so the factor is fitted without it.
    flops_per_token = speed.training_flops(w.model, 1.0, w.spec.method, seq=seq) * (
        speed.RECOMPUTE_TIME if ckpt else 1.0
    )
    compute = "bf16" if w.spec.precision in ("int4", "int8") else w.spec.precision
    peak = count * hardware.load_gpus()[gpu].peak_tflops(compute) * units.TERA
    mfu = flops_per_token * tps / peak
    if mfu < _LOW:
        raise errors.SpecError(
            f"{name}: field 'tokens_per_second' = {tps:g} on {count} x {gpu} is MFU {mfu:.2g}, under {_LOW:.0%} of peak: "
            "not a plausible run. To fix: check tokens_per_second (whole job, per second), "
            "gpu_count and model",
            "tokens_per_second",
        )
    mfu = min(1.0, mfu)
    memory = "" if peak_memory is None else f", peak memory {peak_memory:g} GiB"
    source = (
        f"{name}: {w.model.key} {w.spec.method} {w.spec.precision} on {count} x {gpu}: {tps:,.0f} tokens/s "
        f"= MFU {mfu:.3f} (default {efficiency.training_mfu(gpu)}){memory}"
    )
    return gpu, "training_mfu", round(mfu, 4), source
