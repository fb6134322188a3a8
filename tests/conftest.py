"""Shared fixtures: a tiny hand-built catalog, and paths to the repo and its reference data."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from gpusizer.catalog import Catalog
from gpusizer.catalog.offer import Offer

REPO = pathlib.Path(__file__).resolve().parents[1]
DATA = REPO / "data"
# The example workload specs: every YAML in stacks/examples/ but the example pools file (a pools list, not a spec).
EXAMPLE_POOLS = REPO / "stacks/examples/pools.yaml"
EXAMPLE_SPECS = sorted(p for p in (REPO / "stacks/examples").glob("*.yaml") if p != EXAMPLE_POOLS)
"""Reference facts and the dated catalog sources, with their provenance (data/README.md)."""


def require_tools(*names: str, install: str) -> list[str]:
    """The paths of real tools a test runs (Debian's cloud-init, prometheus). Where one is missing the test is
    skipped, except under .ci/run, which installs them and sets GPUSIZER_REQUIRE_TOOLS=1: there a missing tool
    fails, so a test that checks behaviour against the real tool can never skip itself into green."""
    found = [shutil.which(n) for n in names]
    missing = [n for n, f in zip(names, found, strict=True) if not f]
    if missing:
        why = f"{', '.join(missing)} not installed ({install}; .ci/run does this)"
        if os.environ.get("GPUSIZER_REQUIRE_TOOLS") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return [f for f in found if f]


def cli(*args, env=None) -> subprocess.CompletedProcess:
    """`gpusizer ARGS` in a fresh process from the repository root (exit code, stdout, stderr as text)."""
    return subprocess.run(
        [sys.executable, "-m", "gpusizer.cli", *map(str, args)], capture_output=True, text=True, cwd=REPO, env=env
    )


def make_offer(instance_type: str, gpu: str, count: int, mem: float, price: float, **kw) -> Offer:
    """An offer with sensible host figures; keyword arguments override any field."""
    fields = dict(
        provider="aws",
        region="us-east-1",
        zone=None,
        instance_type=instance_type,
        gpu=gpu,
        gpu_count=count,
        gpu_memory_gib=mem,
        vcpus=8 * count,
        ram_gib=64.0 * count,
        on_demand_usd=price,
        spot_usd=round(price * 0.4, 4),
        source="test",
        as_of="2026-11-01",
        nvlink=count > 2,
    )
    fields.update(kw)
    return Offer(**fields)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Every test sees an empty catalog cache of its own, never the user's ~/.cache/gpusizer."""
    monkeypatch.setenv("GPUSIZER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def tiny_catalog() -> Catalog:
    """Six shapes across two providers, priced like the real ones (2026 list prices, rounded)."""
    return Catalog(
        (
            make_offer("g4dn.xlarge", "T4", 1, 15.0, 0.526),
            make_offer("g6.xlarge", "L4", 1, 22.35, 0.805),
            make_offer("g5.xlarge", "A10G", 1, 22.35, 1.006),
            make_offer("g6e.xlarge", "L40S", 1, 44.7, 1.861),
            make_offer("p4d.24xlarge", "A100-40GB", 8, 40.0, 21.96, fabric="efa"),
            make_offer("p5.48xlarge", "H100", 8, 79.65, 55.04, fabric="efa"),
            make_offer("a3-highgpu-2g", "H100", 2, 79.65, 22.0, provider="gcp", region="us-central1", nvlink=True),
            make_offer("a3-highgpu-1g", "H100", 1, 79.65, 11.0, provider="gcp", region="us-central1"),
        )
    )
