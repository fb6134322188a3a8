"""On-prem pools: honest amortized prices, capacity, and bursting to the cloud when full."""

from __future__ import annotations

import pytest

import gpusizer
from gpusizer.catalog.onprem import Pool

POOL = {
    "name": "rack-a",
    "location": "fra-dc1",
    "gpu": "L40S",
    "gpus_per_node": 8,
    "nodes": 1,
    "capex_usd_per_node": 90000,
    "lifetime_years": 4,
    "power_kw_per_node": 4.0,
    "usd_per_kwh": 0.15,
    "pue": 1.4,
    "utilization": 0.6,
}
CHAT = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"batch_size": 4}}


def test_amortized_price_follows_the_documented_formula():
    pool = Pool.model_validate(POOL)
    rate, how = pool.gpu_hour_usd()
    # By hand: $90,000 / 4 y = $22,500/y = $2.5685/h of ownership; 4.0 kW x PUE 1.4 x $0.15/kWh
    # = $0.84/h of power; $3.4085/h per node over 8 GPUs busy 60% of hours = $0.7101 per GPU-hour.
    assert rate == pytest.approx(0.7101, abs=0.0001)
    assert "8760 h" in how and "utilization" in how


def test_pool_must_be_priced_one_way():
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.parse_pools([{**POOL, "usd_per_gpu_hour": 1.0}])
    assert e.value.field.startswith("pools.0")
    assert "either" in str(e.value)


def test_unknown_pool_gpu_is_named():
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.parse_pools([{**POOL, "gpu": "RTX-9999"}])
    assert e.value.field == "pools.0.gpu"


def test_pool_with_room_wins_on_price(tiny_catalog):
    pools = gpusizer.parse_pools([{**POOL, "usd_per_gpu_hour": 0.3, "capex_usd_per_node": None}])
    d = gpusizer.plan(CHAT, catalog=tiny_catalog, pools=pools)
    assert d.chosen.offer.provider == "onprem"
    assert d.chosen.gpu_count == 1
    assert gpusizer.document(d)["choice"]["instance_type"] == "rack-a"
    assert gpusizer.document(d)["choice"]["region"] == "fra-dc1"
    assert d.burst is None


def test_full_pool_bursts_to_cloud_and_says_so(tiny_catalog):
    pools = gpusizer.parse_pools([{**POOL, "usd_per_gpu_hour": 0.3, "capex_usd_per_node": None, "gpus_free": 0}])
    d = gpusizer.plan(CHAT, catalog=tiny_catalog, pools=pools)
    assert d.chosen.offer.provider == "aws"
    assert "rack-a" in d.burst and "full" in d.burst
    lost = next(c for c in d.candidates if c.offer.provider == "onprem")
    assert lost.rejection.code == "capacity"


def test_allocate_fills_the_pool():
    pool = Pool.model_validate({**POOL, "gpus_free": 3})
    assert pool.allocate(2).free == 1
    assert pool.allocate(5).free == 0


def test_pool_capacity_counts_every_replica(tiny_catalog):
    # One L40S per replica, three replicas, two GPUs free: the pool cannot take it.
    pools = gpusizer.parse_pools([{**POOL, "usd_per_gpu_hour": 0.3, "capex_usd_per_node": None, "gpus_free": 2}])
    d = gpusizer.plan({**CHAT, "deploy": {"replicas": 3}}, catalog=tiny_catalog, pools=pools)
    assert d.chosen.offer.provider == "aws"
    lost = next(c for c in d.candidates if c.offer.provider == "onprem" and c.gpu_count == 1)
    assert lost.rejection.code == "capacity" and "needs 3 GPU(s), 2 free" in lost.rejection.detail
