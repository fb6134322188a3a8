"""benchmarks/validate_gpu.py in dry mode (no GPU here): it writes a calibration file gpusizer reads."""

import subprocess
import sys

import gpusizer
from gpusizer.estimate import calibration
from tests.golden_decisions import REPO


def test_dry_run_writes_a_calibration_that_plans_read(tmp_path):
    out = tmp_path / "cal.yaml"
    r = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "validate_gpu.py"), "--dry-run", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    cal = calibration.load(out)
    assert cal.gpus["L4"]["decode_mbu"] == 0.8 and "dry run" in cal.sources["L4"][0]
    spec = {
        "name": "c",
        "model": {"name": "llama-3.1-8b"},
        "placement": {"gpus": ["L4"]},
        "sizing": {"calibration": str(out)},
    }
    assert gpusizer.document(gpusizer.plan(spec))["choice"]["calibration"]["factors"]["decode_mbu"] == 0.8


def test_cuda_device_names_map_to_canonical_gpus():
    import importlib.util

    spec = importlib.util.spec_from_file_location("validate_gpu", REPO / "benchmarks" / "validate_gpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    names = {
        "NVIDIA H100 80GB HBM3": "H100",
        "NVIDIA L40S": "L40S",
        "NVIDIA L4": "L4",
        "NVIDIA A10G": "A10G",
        "NVIDIA A100-SXM4-40GB": "A100-40GB",
        "NVIDIA A100-SXM4-80GB": "A100-80GB",
        "Tesla T4": "T4",
    }
    assert {k: mod.gpu_name(k) for k in names} == names
