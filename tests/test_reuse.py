"""gpusizer.reuse: inside a scope each distinct (spec, pools, catalog) is planned once; outside, every time."""

from __future__ import annotations

import pytest

import gpusizer
from gpusizer import reuse

from tests.conftest import make_offer

SPEC = {"name": "chat", "model": {"name": "llama-3.1-8b"}}
POOLS = [{"name": "rack-a", "location": "fra-dc1", "gpu": "L40S", "gpus_per_node": 8, "usd_per_gpu_hour": 0.4}]


@pytest.fixture
def counted(monkeypatch):
    """Count the plans gpusizer.plan makes."""
    calls = []
    real = gpusizer.plan

    def plan(*args, **kw):
        calls.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(gpusizer, "plan", plan)
    return calls


def test_a_scope_plans_an_equal_spec_once_and_returns_that_decision(counted):
    with reuse.scope():
        first = reuse.plan(SPEC)
        assert reuse.plan(gpusizer.load_spec(SPEC)) is first  # a mapping and the validated spec share a key
        assert reuse.plan(dict(SPEC, name="other")) is not first
    assert len(counted) == 2
    assert first.to_dict() == gpusizer.plan(SPEC, catalog=gpusizer.load_catalog()).to_dict()


def test_outside_a_scope_every_call_plans_again_on_the_loaded_catalog(counted):
    a, b = reuse.plan(SPEC), reuse.plan(SPEC)
    assert a is not b and a.to_dict() == b.to_dict()
    assert len(counted) == 2


def test_other_pools_or_another_catalog_object_are_planned_again(counted):
    tiny_pools = gpusizer.parse_pools(POOLS)
    other = gpusizer.Catalog((make_offer("g6.xlarge", "L4", 1, 22.35, 0.8),))
    with reuse.scope():
        plain = reuse.plan(SPEC)
        assert reuse.plan(SPEC, pools=tiny_pools) is not plain
        assert reuse.plan(SPEC, catalog=other).chosen.offer.instance_type == "g6.xlarge"
        assert reuse.plan(SPEC, pools=list(tiny_pools)) is reuse.plan(SPEC, pools=tuple(tiny_pools))
    assert len(counted) == 3


def test_nested_scopes_share_the_outer_memo_which_ends_with_it(counted):
    with reuse.scope():
        first = reuse.plan(SPEC)
        with reuse.scope():
            assert reuse.plan(SPEC) is first
        assert reuse.plan(SPEC) is first
    assert reuse.plan(SPEC) is not first
    assert len(counted) == 2


def test_an_invalid_spec_raises_every_time_inside_a_scope(counted):
    with reuse.scope():
        for _ in range(2):
            with pytest.raises(gpusizer.SpecError, match="name"):
                reuse.plan({"model": {"name": "llama-3.1-8b"}})
