"""benchmarks/validate_gpu.py in dry mode (no GPU here): it writes a calibration file gpusizer reads."""

import subprocess
import sys

import gpusizer
from gpusizer.estimate import calibration

from tests.golden_decisions import REPO


def test_dry_run_writes_a_calibration_that_plans_read(tmp_path):
    out = tmp_path / "cal.yaml"
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "validate_gpu.py"), "--dry-run", "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    cal = calibration.load(out)
    assert cal.gpus["L4"]["decode_mbu"] == 0.8 and "dry run" in cal.sources["L4"][0]
    spec = {"name": "c", "model": {"name": "llama-3.1-8b"}, "placement": {"gpus": ["L4"]},
            "sizing": {"calibration": str(out)}}
    assert gpusizer.document(gpusizer.plan(spec))["choice"]["calibration"]["factors"]["decode_mbu"] == 0.8
