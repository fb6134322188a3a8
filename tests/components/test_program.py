"""The whole Pulumi program under mocks, for every stack file in stacks/."""

from __future__ import annotations

import runpy

import pytest
import yaml

from tests.components.conftest import resolve, run_program
from tests.conftest import REPO

STACKS = sorted((REPO / "stacks").glob("Pulumi.*.yaml"))


def _run(stack_file):
    config = yaml.safe_load(stack_file.read_text())["config"]
    stack = stack_file.name.split(".")[1]
    # The program returns nothing; runpy returns its globals, which must not become an Output.
    return run_program(lambda: runpy.run_path(str(REPO / "__main__.py"), run_name="__main__") and None, config, stack=stack)


@pytest.mark.parametrize("stack_file", STACKS, ids=lambda p: p.name)
def test_every_stack_runs_and_exports_each_decision(stack_file):
    mocks, exports = _run(stack_file)
    workloads = yaml.safe_load(stack_file.read_text())["config"]["gpusizer:workloads"]
    assert len(exports) == len(workloads)
    for name, out in exports.items():
        assert out["provider"] in ("aws", "gcp", "onprem")
        assert resolve(out["instance_type"])
    assert mocks.resources


def test_hybrid_stack_fills_the_pool_then_bursts():
    _, exports = _run(REPO / "stacks/Pulumi.hybrid.yaml")
    first, second = exports["support-chat"], exports["summarizer"]
    assert first["provider"] == "onprem" and first["burst"] is None
    assert second["provider"] == "aws"
    assert "rack-a" in second["burst"] and "full" in second["burst"]


def test_stacks_exist_for_each_provider_path():
    assert {p.name for p in STACKS} >= {"Pulumi.dev.yaml", "Pulumi.gcp.yaml", "Pulumi.hybrid.yaml"}
