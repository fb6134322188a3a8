"""Odd values in a stack file and --program: read as JSON carries them, or refused with exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

import gpusizer
from gpusizer.policies import offline
from tests.conftest import REPO

HYBRID = (REPO / "stacks/Pulumi.hybrid.yaml").read_text()


@pytest.mark.slow
def test_a_pool_dated_as_of_a_plain_date_previews(tmp_path):
    """`as_of: 2026-11-01` (unquoted) on a pool: a date in YAML 1.1, text here; the pool model parses it."""
    text = HYBRID.replace("      utilization: 0.7\n", "      utilization: 0.7\n      as_of: 2026-11-01\n")
    assert text != HYBRID
    (tmp_path / "Pulumi.hybrid.yaml").write_text(text)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpusizer.cli",
            "preview",
            "--stack",
            "hybrid",
            "--stacks-dir",
            str(tmp_path),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert '"as_of": "2026-11-01"' in r.stdout  # the pool's offers, in the support-chat decision


@pytest.mark.parametrize(
    "value, kind", [("!!timestamp 2026-01-01", "date"), ("!!binary aGVsbG8=", "bytes"), ("!!set {a: null}", "set")]
)
def test_a_value_json_cannot_carry_is_refused_naming_the_key(tmp_path, value, kind):
    (tmp_path / "Pulumi.x.yaml").write_text(
        f"config:\n  gpusizer:gcpNetwork: {value}\n  gpusizer:workloads: [{{name: a, model: {{name: llama-3.1-8b}}}}]\n"
    )
    with pytest.raises(
        gpusizer.SpecError,
        match=f"config gpusizer:gcpNetwork holds a {kind} value, which JSON "
        "cannot carry. To fix: write it as plain text",
    ):
        offline.preview("x", tmp_path, REPO / "__main__.py", parallel=False)


def test_a_config_key_that_is_not_a_name_is_refused(tmp_path):
    (tmp_path / "Pulumi.x.yaml").write_text("config:\n  1: {secure: abc}\n")
    with pytest.raises(gpusizer.SpecError, match="config key 1 is not a name. To fix: write keys as namespace:name"):
        offline.preview("x", tmp_path, REPO / "__main__.py", parallel=False)


@pytest.mark.parametrize(
    "value, place, what",
    [
        ("{subnets: {8: a}}", "gpusizer:gcpNetwork.subnets", "key 8, not text"),
        ("[1, .nan]", r"gpusizer:gcpNetwork\[1\]", "the number nan"),
    ],
)
def test_a_nested_value_json_would_change_is_refused_naming_its_place(tmp_path, value, place, what):
    (tmp_path / "Pulumi.x.yaml").write_text(f"config:\n  gpusizer:gcpNetwork: {value}\n")
    with pytest.raises(gpusizer.SpecError, match=f"config {place} holds {what}.*which JSON cannot carry"):
        offline.preview("x", tmp_path, REPO / "__main__.py", parallel=False)


def test_a_nan_value_is_not_taken_for_a_secret():
    plain, secret_keys = offline._without_ciphertext(
        {"gpusizer:gcpSecureBoot": float("nan"), "gpusizer:hfToken": {"secure": "v1:abc"}}
    )
    assert secret_keys == ["gpusizer:hfToken"]


@pytest.mark.parametrize(
    "program, message",
    [
        ("missing.py", "cannot read Pulumi program"),
        ("bad.py", "invalid Python at line 1"),
        (".", "is not a regular file"),
    ],
)
def test_a_program_that_cannot_run_is_an_input_error(tmp_path, program, message):
    (tmp_path / "bad.py").write_text("x = (\n")
    with pytest.raises(gpusizer.SpecError, match=message):
        offline._program(str(tmp_path / program))


@pytest.mark.slow
@pytest.mark.parametrize(
    "config",
    [
        "config: {}\n",
        "config:\n  gpusizer:gcpCloudNat: 'yes'\n  gpusizer:workloads: [{name: a, model: {name: llama-3.1-8b}}]\n",
    ],
)
def test_pulumi_config_errors_exit_2_from_the_forked_run_too(tmp_path, config):
    """Pulumi's ConfigMissingError / ConfigTypeError do not unpickle; the forked first preview sends their RunError."""
    (tmp_path / "Pulumi.x.yaml").write_text(config)
    r = subprocess.run(
        [sys.executable, "-m", "gpusizer.cli", "preview", "--stack", "x", "--stacks-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert "internal error" not in r.stderr and "gpusizer: error: stack x: " in r.stderr


def test_a_program_that_raises_is_reported_as_its_error_not_ours(tmp_path):
    import argparse

    (tmp_path / "raise.py").write_text('raise ValueError("boom in my program")\n')
    args = argparse.Namespace(
        stack="dev",
        stacks_dir=None,
        program=str(tmp_path / "raise.py"),
        policy_config=None,
        serial=True,
        format="table",
        debug=False,
    )
    with pytest.raises(gpusizer.SpecError, match="raised ValueError: boom in my program. To fix: correct the program"):
        offline.run(args)
    with pytest.raises(ValueError, match="boom"):  # --debug: the program's own exception, for its traceback
        offline.run(argparse.Namespace(**{**vars(args), "debug": True}))
