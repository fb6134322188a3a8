"""`gpusizer calibrate` under hostile result files: every count whole and finite, every measurement finite
and positive, each refusal naming the file and the field (issue 24); `--out` problems exit 2."""

from __future__ import annotations

import json
import math

import pytest

import gpusizer
from gpusizer.measure import calibrate
from tests import conftest
from tests.conftest import REPO

CAL = REPO / "tests/data/calibration"
VLLM = json.loads((CAL / "vllm-serving-l40s-llama31-8b.json").read_text())
TRAINING = json.loads((CAL / "training-h100x8-llama31-8b.json").read_text())
# Values a file can carry: JSON numbers Python reads as inf (1e999), fractions, booleans, and the strings
# vLLM's --metadata writes ("NaN" and "inf" parse as floats).
HOSTILE_COUNTS = [
    "1e999",
    "-1e999",
    "0.5",
    '"0.5"',
    "5e-324",
    "true",
    '"NaN"',
    '"nan"',
    '"inf"',
    '"-inf"',
    "1e20",
    "[]",
    "{}",
    '""',
    "0",
    "-3",
]
HOSTILE_MEASUREMENTS = ["1e999", '"NaN"', '"nan"', '"inf"', "true", "[]", "{}", '""', "0", "-1", '"-0.0"']


def _file(tmp_path, doc: dict, key: str, raw: str):
    path = tmp_path / "result.json"
    path.write_text(json.dumps({**doc, key: "__X__"}).replace('"__X__"', raw))
    return path


def _refused(path, key: str):
    with pytest.raises(gpusizer.SpecError) as e:
        calibrate.fit_file(path)
    assert "result.json" in str(e.value) and repr(key) in str(e.value) and "To fix" in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "key", ["completed", "tensor_parallel_size", "max_concurrency", "total_input_tokens", "total_output_tokens"]
)
@pytest.mark.parametrize("raw", HOSTILE_COUNTS)
def test_serving_counts_must_be_whole_and_finite(tmp_path, key, raw):
    _refused(_file(tmp_path, VLLM, key, raw), key)


@pytest.mark.parametrize("key", ["mean_ttft_ms", "mean_tpot_ms"])
@pytest.mark.parametrize("raw", HOSTILE_MEASUREMENTS)
def test_serving_measurements_must_be_finite_and_positive(tmp_path, key, raw):
    _refused(_file(tmp_path, VLLM, key, raw), key)


@pytest.mark.parametrize(
    "key, raw",
    [(k, r) for k in ("gpu_count",) for r in HOSTILE_COUNTS]
    + [(k, r) for k in ("tokens_per_second", "peak_memory_gib") for r in HOSTILE_MEASUREMENTS]
    + [("activation_checkpointing", r) for r in ('"maybe"', "0.5", "[]", "null")]
    + [("model", r) for r in ("[]", "1", '""')]
    + [("precision", r) for r in ("[]", "7")],
)
def test_training_fields_are_refused_by_name(tmp_path, key, raw):
    _refused(_file(tmp_path, TRAINING, key, raw), key)


def test_whole_counts_written_as_strings_or_integral_floats_are_read(tmp_path):
    """vLLM's --metadata writes "tensor_parallel_size": "1"; 200.0 is a whole count."""
    base = calibrate.fit_file(CAL / "vllm-serving-l40s-llama31-8b.json")
    rows = calibrate.fit_file(_file(tmp_path, VLLM, "completed", "200.0"))
    assert [r[:3] for r in rows] == [r[:3] for r in base]


def test_a_run_under_1_percent_of_peak_is_refused_not_fitted_as_zero(tmp_path):
    # 0.5 tokens/s on 8 x H100 is MFU ~3e-6: a corrupt or mislabeled file, not a factor to size with.
    _refused(_file(tmp_path, TRAINING, "tokens_per_second", "0.5"), "tokens_per_second")


def test_every_fitted_factor_is_finite_and_in_range(tmp_path):
    for doc, key, raw in [
        (VLLM, "mean_ttft_ms", "0.5"),
        (VLLM, "mean_tpot_ms", "1e308"),
        (TRAINING, "tokens_per_second", "1e20"),
    ]:
        for _gpu, factor, value, _ in calibrate.fit_file(_file(tmp_path, doc, key, raw)):
            assert math.isfinite(value) and 0.01 <= value <= 1.0, (key, raw, factor, value)


@pytest.mark.parametrize("out", ["missing-dir/cal.yaml", ".", "/dev/full"])
def test_out_problems_exit_2_naming_the_path(tmp_path, out):
    target = out if out.startswith("/") else str(tmp_path / out)
    r = conftest.cli("calibrate", CAL / "training-h100x8-llama31-8b.json", "--out", target)
    assert r.returncode == 2, r.stderr
    assert "--out" in r.stderr and "To fix" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "missing-dir").exists()
