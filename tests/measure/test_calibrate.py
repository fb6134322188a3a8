"""`gpusizer calibrate`: efficiency factors fitted from runs, used by later plans and named by them."""

from __future__ import annotations

import json
import pathlib

import pytest
import yaml

import gpusizer
from gpusizer.estimate import calibration
from tests import conftest
from tests.conftest import REPO

CAL = REPO / "tests/data/calibration"
VLLM = CAL / "vllm-serving-l40s-llama31-8b.json"
TRAINING = CAL / "training-h100x8-llama31-8b.json"


run = conftest.cli


def calibrate(tmp_path, *results) -> str:
    out = tmp_path / "calibration.yaml"
    r = run("calibrate", *results, "--out", out)
    assert r.returncode == 0, r.stderr
    return str(out)


def _write(tmp_path, spec: dict):
    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump(spec))
    return p


def same_shape(**sizing) -> dict:
    """The vLLM run's shape as a spec: 8 concurrent sequences of 1024 prompt + 128 output tokens on an L40S."""
    return {
        "name": "chat",
        "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
        "inference": {"context_length": 1152, "prompt_tokens": 1024, "batch_size": 8},
        "placement": {"providers": ["aws"], "gpus": ["L40S"]},
        "sizing": sizing,
    }


def test_vllm_calibration_moves_predicted_tokens_per_second_towards_the_measured(tmp_path):
    measured = json.loads(VLLM.read_text())["output_throughput"]
    path = calibrate(tmp_path, VLLM)
    before = gpusizer.document(gpusizer.plan(same_shape()))
    after = gpusizer.document(gpusizer.plan(same_shape(calibration=path)))
    tps_before = before["choice"]["performance"]["tokens_per_second"]
    tps_after = after["choice"]["performance"]["tokens_per_second"]
    # The per-GPU defaults (data/efficiency.yaml) already land within 5% of this run; calibrating fits
    # TTFT and TPOT on their own, which moves tokens/s and keeps it within 5%.
    assert tps_after != tps_before
    assert abs(tps_before - measured) / measured < 0.05
    assert abs(tps_after - measured) / measured < 0.05  # within 5% once calibrated
    # The plan says which figures are calibrated and from what.
    assert after["choice"]["calibration"]["file"] == path
    assert set(after["choice"]["calibration"]["factors"]) == {"decode_mbu", "inference_mfu"}
    assert any(VLLM.name in line for line in after["choice"]["calibration"]["from"])
    table = run("plan", _write(tmp_path, same_shape(calibration=path))).stdout
    assert f"calibrated from {path}: L40S" in table
    assert before["choice"]["calibration"] is None


def test_environment_variable_calibrates_specs_without_their_own(tmp_path, monkeypatch):
    path = calibrate(tmp_path, VLLM)
    monkeypatch.setenv(calibration.ENV, path)
    assert gpusizer.document(gpusizer.plan(same_shape()))["choice"]["calibration"]["file"] == path


def test_training_run_mfu_is_model_flops_times_tokens_per_second_over_peak(tmp_path):
    # Hand-derived: (6 x 8,030,261,248 params + 12 x 32 layers x 4096 tokens x 4096 attention dim
    # (PaLM appendix B); no recompute) x 65,000 tokens/s / (8 x 989.4 TFLOPS bf16 dense, H100 SXM
    # datasheet) = 54,624,018,432 x 65,000 / 7.9152e15 = 0.44858.
    path = calibrate(tmp_path, TRAINING)
    doc = yaml.safe_load(pathlib.Path(path).read_text())
    assert doc["gpus"]["H100"]["training_mfu"] == pytest.approx(0.44858, abs=1e-4)
    spec = {
        "name": "pretrain",
        "model": {"name": "llama-3.1-8b"},
        "task": "training",
        "training": {"tokens": 1e9, "activation_checkpointing": False},
        "placement": {"gpus": ["H100"]},
    }
    hours = gpusizer.document(gpusizer.plan(spec))["choice"]["performance"]["train_hours"]
    calibrated = gpusizer.document(gpusizer.plan({**spec, "sizing": {"calibration": path}}))["choice"]["performance"][
        "train_hours"
    ]
    from gpusizer.estimate import efficiency

    default = efficiency.training_mfu("H100")  # data/efficiency.yaml
    assert calibrated == pytest.approx(hours * default / 0.44858, rel=2e-3)  # hours scale as 1 / MFU


def test_vllm_result_without_its_gpu_exits_2_saying_how_to_add_it(tmp_path):
    doc = json.loads(VLLM.read_text())
    del doc["gpu"]
    bad = tmp_path / "no-gpu.json"
    bad.write_text(json.dumps(doc))
    r = run("calibrate", bad)
    assert r.returncode == 2
    assert "--metadata gpu=" in r.stderr and "Traceback" not in r.stderr
    assert run("calibrate", bad, "--gpu", "L40S").returncode == 0


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("gpus: {L40S: {decode_mbu: 1.7}}", "L40S.decode_mbu"),  # a fraction of peak cannot exceed 1
        ("gpus: {X9000: {decode_mbu: 0.5}}", "unknown GPU"),
        ("[1, 2]", "not a calibration file"),
    ],
)
def test_bad_calibration_file_is_a_spec_error(tmp_path, content, fragment):
    f = tmp_path / "cal.yaml"
    f.write_text(content)
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.plan(same_shape(calibration=str(f)))
    assert fragment in str(e.value) and e.value.field == "sizing.calibration"


def test_unrecognised_result_file_exits_2(tmp_path):
    f = tmp_path / "x.json"
    f.write_text('{"hello": 1}')
    r = run("calibrate", f)
    assert r.returncode == 2 and "benchmark_serving.py" in r.stderr


def test_a_detailed_vllm_result_over_1_mib_is_read(tmp_path):
    """--save-detailed keeps per-request arrays (one inter-token latency per output token): past the spec cap."""
    from gpusizer.measure import calibrate as calibrate_mod

    doc = json.loads(VLLM.read_text())
    n = doc["completed"]
    per_request = (2 << 20) // (n * len("0.0123456789012345, ")) + 1  # ~2 MiB of latencies in all
    doc["itls"] = [[0.0123456789012345] * per_request for _ in range(n)]
    big = tmp_path / "detailed.json"
    big.write_text(json.dumps(doc))
    assert 1 << 20 < big.stat().st_size < 3 << 20
    want = [(g, k, v, line.replace(VLLM.name, big.name)) for g, k, v, line in calibrate_mod.fit_file(VLLM)]
    assert calibrate_mod.fit_file(big) == want


@pytest.mark.parametrize(
    "content, words",
    [
        ('{"model_id": "m", "model_id": "n"}', "duplicate key"),
        ('{"model_id": "m", "mean_tpot_ms": Infinity}', "not valid JSON"),
        (b"\xff\xfe{}", "UTF-8"),
    ],
)
def test_result_files_go_through_the_input_boundary(tmp_path, content, words):
    from gpusizer.measure import calibrate as calibrate_mod

    f = tmp_path / "r.json"
    f.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(gpusizer.SpecError) as e:
        calibrate_mod.fit_file(f)
    assert words in str(e.value) and "r.json" in str(e.value)


def test_result_file_that_is_dev_zero_exits_2():
    r = run("calibrate", "/dev/zero")
    assert r.returncode == 2 and "is not a regular file" in r.stderr and "Traceback" not in r.stderr
