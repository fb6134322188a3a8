"""Each offer is priced in the consumption model it is provisioned as, and the plan names that model."""

from __future__ import annotations

import gpusizer
from gpusizer.catalog import consumption
from gpusizer.render import report

H200 = {
    "name": "ultra",
    "model": {"name": "llama-3.1-70b"},
    "task": "training",
    "training": {"sequence_length": 4096},
    "placement": {"providers": ["gcp"], "gpus": ["H200", "B200"], "purchase": "on-demand"},
}


def test_gcp_types_not_sold_on_demand_are_never_chosen_at_an_on_demand_price():
    # A3 Ultra (H200) and A4 (B200) are sold as reservations, flex-start or spot (GCP consumption options):
    # an on-demand plan finds no offer, and says why, instead of ranking them at a list price.
    d = gpusizer.plan(H200)
    assert d.chosen is None
    ultra = [c for c in d.candidates if c.offer.provider == "gcp" and c.offer.gpu in ("H200", "B200")]
    assert ultra and {c.rejection.code for c in ultra} == {"purchase"}
    spot = gpusizer.plan({**H200, "placement": {**H200["placement"], "purchase": "spot"}})
    assert spot.chosen is not None and gpusizer.document(spot)["choice"]["consumption"] == "spot"


def test_plan_names_the_consumption_model_of_a_reservation():
    spec = {
        "name": "p5",
        "model": {"name": "llama-3.1-70b"},
        "task": "training",
        "training": {"sequence_length": 4096},
        "placement": {"providers": ["aws"], "regions": ["us-east-1"], "gpus": ["H100"], "purchase": "on-demand"},
        "deploy": {"capacity_reservation": "cr-0123456789abcdef0"},
    }
    d = gpusizer.plan(spec)
    assert gpusizer.document(d)["choice"]["consumption"] == "capacity-reservation"
    assert "on-demand as capacity-reservation" in report.render(d, "table")
    block = gpusizer.plan({**spec, "deploy": {**spec["deploy"], "capacity_block": True}})
    choice = gpusizer.document(block)["choice"]
    assert choice["consumption"] == "capacity-block"
    if block.chosen.offer.instance_type == "p5.48xlarge":
        # The published Capacity Block rate, $39.33 per p5.48xlarge-hour in us-east-1 (rates until 2025-01-01),
        # for each node of a replica; the on-demand list price (~$55) is not what a block costs.
        assert choice["capacity_block_hourly_usd"] == round(39.33 * block.chosen.nodes, 4)
        assert "published block rate $39.33/h per instance" in report.render(block, "table")
    plain = gpusizer.plan({**spec, "deploy": {}})
    assert gpusizer.document(plain)["choice"]["consumption"] == "on-demand"


def test_registry_matches_gcps_consumption_table():
    # GCP docs, consumption options: A4 / A3 Ultra reservation, flex-start, spot; a3-highgpu-1g/2g/4g spot, flex-start.
    for itype in ("a4-highgpu-8g", "a3-ultragpu-8g", "a3-highgpu-1g", "a3-highgpu-2g", "a3-highgpu-4g"):
        assert not consumption.sold_on_demand("gcp", itype)
    for itype in ("a3-highgpu-8g", "a3-megagpu-8g", "g2-standard-4", "a2-ultragpu-1g"):
        assert consumption.sold_on_demand("gcp", itype)
    assert consumption.reservation_bound("gcp", "a4-highgpu-8g") and not consumption.reservation_bound(
        "gcp", "a3-highgpu-2g"
    )
    assert consumption.model("gcp", "a3-highgpu-2g", "on-demand") == "flex-start"
