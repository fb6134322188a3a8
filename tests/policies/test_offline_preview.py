"""`gpusizer preview`: bundled stacks pass; a hand-written over-provisioned stack fails clearly."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

HERE = REPO / "tests/policies/overprovisioned"

# Each test starts a Python process that imports Pulumi and runs a whole program: 3-10 s apiece.
pytestmark = pytest.mark.slow


def preview(*args):
    return subprocess.run([sys.executable, "-m", "gpusizer.cli", "preview", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)


@pytest.mark.parametrize("stack", ["dev", "gcp", "hybrid"])
def test_bundled_stacks_pass(stack):
    r = preview("--stack", stack)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 mandatory violation(s): preview passed" in r.stdout


def test_hand_written_overprovisioned_instance_fails_with_a_clear_message():
    r = preview("--stack", "overprovisioned", "--stacks-dir", HERE, "--program", HERE / "program.py", "--format", "markdown")
    assert r.returncode == 1
    assert "| mandatory | gpusizer-no-overprovisioning | `big-box` |" in r.stdout
    assert "637 GiB for a 20 GiB requirement" in r.stdout and "g6.xlarge" in r.stdout
    assert "Traceback" not in r.stderr


def test_unknown_stack_exits_2_naming_the_choices():
    r = preview("--stack", "nope")
    assert r.returncode == 2
    assert "--stack" in r.stderr and "dev" in r.stderr
