"""GCP refresh with the Google clients replaced by fakes that answer like the real APIs."""

from __future__ import annotations

import datetime
import sys
import types

import pytest

from gpusizer.catalog import Catalog, cache
from gpusizer.catalog import refresh as refresh_mod
from gpusizer.catalog.refresh import gcp

NOW = datetime.datetime(2026, 11, 23, 10, 0, tzinfo=datetime.UTC)
NS = types.SimpleNamespace


def sku(description, group, usage, usd, regions=("us-central1",)):
    units, nanos = int(usd), round((usd - int(usd)) * 1e9)
    rate = NS(unit_price=NS(units=units, nanos=nanos))
    return NS(
        description=description,
        category=NS(resource_group=group, usage_type=usage),
        service_regions=list(regions),
        pricing_info=[NS(pricing_expression=NS(tiered_rates=[rate]))],
    )


SKUS = [
    sku("Nvidia L4 GPU running in Americas", "GPU", "OnDemand", 0.56),
    sku("Spot Preemptible Nvidia L4 GPU running in Americas", "GPU", "Preemptible", 0.22),
    sku("G2 Instance Core running in Americas", "CPU", "OnDemand", 0.025),
    sku("G2 Instance Ram running in Americas", "RAM", "OnDemand", 0.003),
    sku("Spot Preemptible G2 Instance Core running in Americas", "CPU", "Preemptible", 0.01),
    sku("Spot Preemptible G2 Instance Ram running in Americas", "RAM", "Preemptible", 0.001),
    sku("Nvidia Tesla T4 GPU running in Americas", "GPU", "OnDemand", 0.35),
    sku("N1 Predefined Instance Core running in Americas", "N1Standard", "OnDemand", 0.0316),
    sku("N1 Predefined Instance Ram running in Americas", "N1Standard", "OnDemand", 0.0042),
]
MACHINES = [
    (
        "zones/us-central1-a",
        NS(
            machine_types=[
                NS(
                    name="g2-standard-4",
                    guest_cpus=4,
                    memory_mb=16384,
                    accelerators=[NS(guest_accelerator_type="nvidia-l4", guest_accelerator_count=1)],
                ),
                NS(name="n1-standard-8", guest_cpus=8, memory_mb=30720, accelerators=[]),
                NS(name="e2-medium", guest_cpus=2, memory_mb=4096, accelerators=[]),
            ]
        ),
    ),
    ("zones/europe-west4-a", NS(machine_types=[])),
]


class FakeBilling:
    def list_skus(self, parent):
        assert parent == gcp.COMPUTE_SERVICE
        return iter(SKUS)


class FakeCompute:
    def __init__(self, fail=False):
        self.fail = fail

    def aggregated_list(self, project):
        if self.fail:
            raise RuntimeError("403 Compute Engine API has not been used in project p\nmore detail")
        assert project == "my-project"
        return iter(MACHINES)


@pytest.fixture
def fake_google(monkeypatch):
    """Install fake google.cloud.billing_v1 / compute_v1 modules, as the [gcp] extra would provide."""
    google = types.ModuleType("google")
    cloud = types.ModuleType("google.cloud")
    billing_v1 = types.ModuleType("google.cloud.billing_v1")
    compute_v1 = types.ModuleType("google.cloud.compute_v1")
    billing_v1.CloudCatalogClient = FakeBilling
    compute_v1.MachineTypesClient = FakeCompute
    cloud.billing_v1, cloud.compute_v1, google.cloud = billing_v1, compute_v1, cloud
    for name, mod in {
        "google": google,
        "google.cloud": cloud,
        "google.cloud.billing_v1": billing_v1,
        "google.cloud.compute_v1": compute_v1,
    }.items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")


def test_price_is_cores_plus_ram_plus_gpus_in_the_region(fake_google):
    errors = refresh_mod.refresh("gcp", ["us-central1"], NOW)
    assert errors == []
    offers = {(o.instance_type, o.zone): o for o in cache.read()[0]["gcp"].offers}
    g2 = offers[("g2-standard-4", "us-central1-a")]
    assert g2.on_demand_usd == pytest.approx(4 * 0.025 + 16 * 0.003 + 0.56)
    assert g2.spot_usd == pytest.approx(4 * 0.01 + 16 * 0.001 + 0.22)
    assert (g2.gpu, g2.gpu_count, g2.as_of) == ("L4", 1, "2026-11-23")
    n1 = offers[("n1-standard-8+nvidia-tesla-t4x2", "us-central1-a")]
    assert n1.on_demand_usd == pytest.approx(8 * 0.0316 + 30 * 0.0042 + 2 * 0.35)
    assert n1.spot_usd is None  # no spot SKU for T4 or N1 here
    # Regions not refreshed keep the snapshot's offers and dates.
    assert any(o.region == "europe-west4" and o.as_of == "2026-05-20" for o in offers.values())
    assert any("gcp: refreshed cache" in n for n in Catalog.load(today=NOW.date()).notes)


def test_api_failure_is_one_line_and_keeps_previous(fake_google, monkeypatch):
    monkeypatch.setattr(sys.modules["google.cloud.compute_v1"], "MachineTypesClient", lambda: FakeCompute(fail=True))
    errors = refresh_mod.refresh("gcp", ["us-central1"], NOW)
    assert len(errors) == 1 and "\n" not in errors[0]
    assert "gcp: not refreshed (RuntimeError: 403" in errors[0]
    assert "gcp" not in cache.read()[0]


def test_without_the_extra_it_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.cloud.billing_v1", None)
    errors = refresh_mod.refresh("gcp", ["us-central1"], NOW)
    assert errors and "not installed" in errors[0]
