"""The over-provisioning rule's two edges, each of which a subtle bug would move: its exemption (no cheaper
adequate offer exists, so the resource is the right buy whatever its ratio) and its ratio boundary
(exactly maxRatio passes, a hair above fails). Figures come from the packaged catalog's rows, read here
independently of the rule (AWS on-demand, us-east-1, as of the snapshot)."""

from __future__ import annotations

import pytest

from gpusizer.catalog import Catalog
from gpusizer.contract import audit
from gpusizer.policies import resources, sizing, view

HEADROOM = (
    0.9  # the engine's default share of driver-reported memory a workload may use (README, sizing.memory_headroom)
)


def _instance(instance_type: str, required_gib: float) -> resources.GpuResource:
    props = {"instanceType": instance_type, "tags": {"gpusizer:required-gpu-memory-gib": f"{required_gib:.2f}"}}
    return resources.GpuResource("aws:ec2/instance:Instance", view.View(view.raw(props)))


@pytest.fixture(scope="module")
def on_demand():
    """Every on-demand cloud offer of the packaged catalog as (price, type, total GiB, provider)."""
    return sorted(
        (o.on_demand_usd, o.instance_type, o.total_gpu_memory_gib, o.provider)
        for o in Catalog.load().offers
        if o.on_demand_usd is not None and not o.opt_in and o.provider in ("aws", "gcp")
    )


def test_the_cheapest_adequate_type_is_exempt_however_oversized(on_demand):
    # A 2 GiB requirement: the cheapest offer whose usable memory holds it is what a reviewer would buy.
    need = 2.0
    price, cheapest, total, provider = next(row for row in on_demand if row[2] * HEADROOM >= need)
    assert provider == "aws" and total / need > 1.2  # well above any sensible maxRatio below
    assert sizing.over_memory(_instance(cheapest, need), 1.2) == []
    # One step dearer and as oversized: flagged, naming the cheaper offer.
    dearer = next(row for row in on_demand if row[0] > price and row[3] == "aws" and row[2] / need > 1.2)
    found = sizing.over_memory(_instance(dearer[1], need), 1.2)
    assert len(found) == 1 and f"{cheapest} (" in found[0]


def test_a_fractional_gpu_type_holds_its_share_of_the_gpu():
    # g6f.large: 1/8 of an L4 (AWS G6f announcement, 2025): 22.35 GiB / 8 = 2.79 GiB, not 1/8 of that again.
    cap = audit.capacity_of_type("aws", "g6f.large")
    assert cap is not None and cap.total_gib == pytest.approx(22.35 / 8, abs=0.01)


def test_exactly_max_ratio_passes_and_a_hair_above_fails():
    g = _instance("p5.48xlarge", 1.0)
    total = g.shapes[0].capacity.total_gib  # 8 x H100 80 GB as the driver reports them
    assert total == pytest.approx(8 * 79.65, abs=0.1)  # 81,559 MiB each (nvidia-smi on H100 SXM5 80GB)
    at = round(total / 2, 2)
    assert audit.cheaper_adequate(at, g.shapes[0].hourly_usd, "aws") is not None  # the exemption cannot apply
    assert sizing.over_memory(_instance("p5.48xlarge", at), total / at) == []  # ratio == maxRatio: passes
    found = sizing.over_memory(_instance("p5.48xlarge", at), total / at - 1e-3)
    assert len(found) == 1 and "limit" in found[0]


def _gcp_vm(machine_type: str, required_gib: float) -> resources.GpuResource:
    props = {"machineType": machine_type, "labels": {"gpusizer-required-gpu-memory-gib": f"{required_gib:g}"}}
    return resources.GpuResource("gcp:compute/instance:Instance", view.View(view.raw(props)))


def test_another_gpu_priced_over_max_ratio_squared_is_over_provisioned(on_demand):
    """One A100 40GB holds 20 GiB within 2x its memory (39.59 GiB: the a2-highgpu-1g rows of
    gpusizer/data/catalog/gcp.csv), but GCP sells an adequate L4 host for a
    fifth of its price: priced against the catalog's cheapest GCP offer with 20 GiB usable, found here."""
    g = _gcp_vm("a2-highgpu-1g", 20)
    price = g.shapes[0].hourly_usd
    fits = [row for row in on_demand if row[3] == "gcp" and row[2] * HEADROOM >= 20]
    cheapest = min(fits)
    assert price > 4 * cheapest[0]  # over maxRatio 2, squared
    (found,) = sizing.over_memory(g, 2)
    assert cheapest[1] in found and "limit 4x" in found


def test_a_faster_gpu_within_max_ratio_squared_of_the_price_passes(on_demand):
    """8 x H100 for 500 GiB: 8 x A100 80GB (p4de.24xlarge) also holds it at about half the price, which a
    speed the bare requirement does not state may justify (gpusizer/data/catalog/aws.csv, us-east-1: p5.48xlarge
    $55.04/h, p4de.24xlarge $27.44705/h: 2.005x, over maxRatio 2 and under 2 squared)."""
    g = _instance("p5.48xlarge", 500)
    p4de = next(row for row in on_demand if row[1] == "p4de.24xlarge")
    assert 2 < g.shapes[0].hourly_usd / p4de[0] < 4  # over maxRatio, under its square: the speed allowance
    assert sizing.over_memory(g, 2) == []
