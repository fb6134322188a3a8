"""Date-like values in a stack file: read as the text written, as JSON carries them to the program."""

from __future__ import annotations

import subprocess
import sys

import pytest

import gpusizer
from policies import offline
from tests.conftest import REPO

HYBRID = (REPO / "stacks/Pulumi.hybrid.yaml").read_text()


@pytest.mark.slow
def test_a_pool_dated_as_of_a_plain_date_previews(tmp_path):
    """`as_of: 2026-11-01` (unquoted) on a pool: a date in YAML 1.1, text here; the pool model parses it."""
    text = HYBRID.replace("      utilization: 0.7\n", "      utilization: 0.7\n      as_of: 2026-11-01\n")
    assert text != HYBRID
    (tmp_path / "Pulumi.hybrid.yaml").write_text(text)
    r = subprocess.run([sys.executable, "-m", "gpusizer.cli", "preview", "--stack", "hybrid", "--stacks-dir",
                        str(tmp_path), "--format", "json"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert '"as_of": "2026-11-01"' in r.stdout  # the pool's offers, in the support-chat decision


@pytest.mark.parametrize("value, kind", [("!!timestamp 2026-01-01", "date"), ("!!binary aGVsbG8=", "bytes"),
                                         ("!!set {a: null}", "set")])
def test_a_value_json_cannot_carry_is_refused_naming_the_key(tmp_path, value, kind):
    (tmp_path / "Pulumi.x.yaml").write_text(
        f"config:\n  gpusizer:gcpNetwork: {value}\n  gpusizer:workloads: [{{name: a, model: {{name: llama-3.1-8b}}}}]\n")
    with pytest.raises(gpusizer.SpecError, match=f"config gpusizer:gcpNetwork holds a {kind} value, which JSON "
                                                 "cannot carry. To fix: write it as plain text"):
        offline.preview("x", tmp_path, REPO / "__main__.py", parallel=False)
