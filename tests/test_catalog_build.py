"""The embedded snapshot: reproducible from the dated sources, and each pricing rule holds."""

from __future__ import annotations

import collections

import pytest

from gpusizer import hardware
from gpusizer.catalog import Catalog, store
from gpusizer.catalog.build import __main__ as build_main, aws, gcp
from tests.conftest import REPO, SHARED

SOURCES = SHARED / "data/catalog-sources"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("catalog")
    return out, build_main.build(SOURCES, out)


def test_snapshot_is_reproducible_byte_for_byte(built):
    out, _ = built
    for name in ("aws.csv", "gcp.csv", "SOURCES.md"):
        assert (out / name).read_text() == (REPO / "gpusizer/data/catalog" / name).read_text(), name


def test_packaged_snapshot_loads_and_every_gpu_is_known():
    offers = Catalog.load().offers
    by_provider = collections.Counter(o.provider for o in offers)
    assert by_provider["aws"] > 200 and by_provider["gcp"] > 500
    assert {o.gpu for o in offers} <= set(hardware.load_gpus())
    assert all(o.source and o.as_of for o in offers)


def test_every_aws_nvidia_family_is_present(built):
    types = {o.instance_type.split(".")[0] for o in built[1]["aws"]}
    assert {"g4dn", "g5", "g6", "g6e", "gr6", "g6f", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200"} <= types


def test_gcp_price_is_host_plus_gpus_in_the_same_zone(built):
    offers = {(o.instance_type, o.zone): o for o in built[1]["gcp"]}
    # us-central1-a, gcp-vms-2026-05-20.csv: g2-standard-48 host 1.7615 + 4 x L4 row 2.24016
    assert offers[("g2-standard-48", "us-central1-a")].on_demand_usd == pytest.approx(1.7615 + 2.24016)
    # N1 + attached T4 x2 on n1-standard-8: host 0.38 + T4 x2 row 0.7
    n1 = offers[("n1-standard-8+nvidia-tesla-t4x2", "us-central1-a")]
    assert (n1.gpu, n1.gpu_count, n1.on_demand_usd) == ("T4", 2, pytest.approx(1.08))


def test_spot_at_or_above_on_demand_is_no_spot_offer(built):
    for o in built[1]["aws"] + built[1]["gcp"]:
        assert o.spot_usd is None or o.on_demand_usd is None or o.spot_usd < o.on_demand_usd
    # The A100-80GB row in us-central1-a has spot 1.964 >= on-demand 1.8462: neither is trusted.
    ultra = [o for o in built[1]["gcp"] if o.instance_type.startswith("a2-ultragpu")]
    assert ultra and not any(o.zone == "us-central1-a" for o in ultra)
    assert any(o.zone == "asia-southeast1-c" and o.spot_usd for o in ultra)  # a consistent row survives
    # p5.48xlarge in use1-az1: spot == on-demand (55.04) in the source, so no spot there.
    p5 = next(o for o in built[1]["aws"] if o.instance_type == "p5.48xlarge" and o.zone == "use1-az1")
    assert p5.spot_usd is None


def test_local_zones_and_opt_in_regions_are_marked(built):
    aws_offers = built[1]["aws"]
    assert any(o.opt_in and o.zone == "use1-atl2-az1" for o in aws_offers)
    assert all(o.opt_in for o in aws_offers if o.region == "af-south-1")
    assert not any(o.opt_in for o in aws_offers if o.zone == "use1-az2")


def test_types_without_on_demand_are_spot_only(built):
    p5e = [o for o in built[1]["aws"] if o.instance_type == "p5e.48xlarge"]
    assert p5e and all(o.on_demand_usd is None and o.spot_usd for o in p5e)


def test_fractional_gpus_carry_their_real_memory(built):
    g6f = {o.instance_type: o for o in built[1]["aws"] if o.instance_type.startswith("g6f")}
    assert g6f["g6f.large"].gpu_fraction == pytest.approx(0.125, rel=0.01)
    assert g6f["g6f.large"].gpu_memory_gib < 3
    assert g6f["g6f.4xlarge"].gpu_memory_gib == pytest.approx(22.35 / 2, rel=0.02)


def test_gpu_memory_is_what_the_driver_shows():
    offers = {o.instance_type: o for o in Catalog.load().offers}
    assert offers["g6.xlarge"].gpu_memory_gib == pytest.approx(22.35)  # 22888 MiB
    assert offers["p5.48xlarge"].gpu_memory_gib == pytest.approx(79.65)  # 81559 MiB, not 80
    assert offers["g6e.xlarge"].gpu_memory_gib == pytest.approx(44.70)  # 45776 MiB


def test_suspicious_gcp_h100_on_demand_is_cross_checked(built):
    a3 = next(o for o in built[1]["gcp"] if o.instance_type == "a3-highgpu-8g" and o.zone == "us-central1-a")
    mega = next(o for o in built[1]["gcp"] if o.instance_type == "a3-megagpu-8g" and o.zone == "us-central1-a")
    assert a3.on_demand_usd == pytest.approx(mega.on_demand_usd)


def test_no_zero_prices_and_a_bad_row_is_refused(tmp_path):
    for o in Catalog.load().offers:
        assert (o.on_demand_usd or 1) > 0 and (o.spot_usd or 1) > 0
    good = (REPO / "gpusizer/data/catalog/aws.csv").read_text().splitlines()
    bad = tmp_path / "aws.csv"
    bad.write_text("\n".join([good[0], good[1].replace(",0.698,", ",0,")]) + "\n")
    from gpusizer import errors

    with pytest.raises(errors.CatalogError) as e:
        store.load_offers(bad)
    assert "line 2" in str(e.value)


def test_builders_document_their_rules():
    assert "Spot at or above on-demand" in aws.__doc__
    assert "host's price plus" in gcp.__doc__
