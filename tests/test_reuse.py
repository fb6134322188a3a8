"""gpusizer.reuse: inside a scope each distinct (spec, pools, catalog) is planned once; outside, every time."""

from __future__ import annotations

import pytest

import gpusizer
from gpusizer import planner, reuse
from gpusizer.base import memo
from tests.conftest import make_offer

SPEC = {"name": "chat", "model": {"name": "llama-3.1-8b"}}
POOLS = [{"name": "rack-a", "location": "fra-dc1", "gpu": "L40S", "gpus_per_node": 8, "usd_per_gpu_hour": 0.4}]


@pytest.fixture
def counted(monkeypatch):
    """Count the plans gpusizer.planner.plan makes (what reuse.plan calls)."""
    calls = []
    real = planner.plan

    def plan(*args, **kw):
        calls.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(planner, "plan", plan)
    return calls


def test_a_scope_plans_an_equal_spec_once_and_returns_that_decision(counted):
    with memo.scope():
        first = reuse.plan(SPEC)
        assert reuse.plan(gpusizer.load_spec(SPEC)) is first  # a mapping and the validated spec share a key
        assert reuse.plan(dict(SPEC, name="other")) is not first
    assert len(counted) == 2
    assert gpusizer.document(first) == gpusizer.document(gpusizer.plan(SPEC, catalog=gpusizer.load_catalog()))


def test_outside_a_scope_every_call_plans_again_on_the_loaded_catalog(counted):
    a, b = reuse.plan(SPEC), reuse.plan(SPEC)
    assert a is not b and gpusizer.document(a) == gpusizer.document(b)
    assert len(counted) == 2


def test_other_pools_or_another_catalog_object_are_planned_again(counted):
    tiny_pools = gpusizer.parse_pools(POOLS)
    other = gpusizer.Catalog((make_offer("g6.xlarge", "L4", 1, 22.35, 0.8),))
    with memo.scope():
        plain = reuse.plan(SPEC)
        assert reuse.plan(SPEC, pools=tiny_pools) is not plain
        assert reuse.plan(SPEC, catalog=other).chosen.offer.instance_type == "g6.xlarge"
        assert reuse.plan(SPEC, pools=list(tiny_pools)) is reuse.plan(SPEC, pools=tuple(tiny_pools))
    assert len(counted) == 3


def test_nested_scopes_share_the_outer_memo_which_ends_with_it(counted):
    with memo.scope():
        first = reuse.plan(SPEC)
        with memo.scope():
            assert reuse.plan(SPEC) is first
        assert reuse.plan(SPEC) is first
    assert reuse.plan(SPEC) is not first
    assert len(counted) == 2


def test_an_invalid_spec_raises_every_time_inside_a_scope(counted):
    with memo.scope():
        for _ in range(2):
            with pytest.raises(gpusizer.SpecError, match="name"):
                reuse.plan({"model": {"name": "llama-3.1-8b"}})


def test_a_hub_lookup_is_made_once_per_scope_its_failure_included(monkeypatch, tmp_path):
    """A preview validates a spec in the program, in GpuWorkload and in the pack: an unreachable Hub
    (each lookup waiting out its retries) is asked once per scope, and fails the same way each time."""
    hub = pytest.importorskip("huggingface_hub")
    asked = []

    def download(repo_id, filename, **kw):
        asked.append(repo_id)
        raise hub.errors.LocalEntryNotFoundError("offline")

    monkeypatch.setattr(hub, "hf_hub_download", download)
    spec = {"name": "chat", "model": {"hf_id": "acme/unreachable"}}
    with memo.scope():
        for _ in range(3):
            with pytest.raises(gpusizer.SpecError, match="model.hf_id: config.json of acme/unreachable is unavailable"):
                gpusizer.load_spec(spec)
    assert asked == ["acme/unreachable"]
    with pytest.raises(gpusizer.SpecError):  # outside a scope: asked again
        gpusizer.load_spec(spec)
    assert len(asked) == 2


def test_in_order_gives_a_pool_to_the_first_workload_and_bursts_the_next():
    """Two serving workloads of 2 replicas x 1 L40S each and a pool with 2 free GPUs at $0.40/GPU-h
    (cheaper than any cloud L40S): the first takes both GPUs, the second sees 0 free and goes to AWS."""
    pool = gpusizer.parse_pools([{**POOLS[0], "nodes": 1, "gpus_free": 2}])
    spec = {
        "model": {"name": "llama-3.1-8b"},
        "inference": {"batch_size": 4},
        "deploy": {"replicas": 2},
        "placement": {"providers": ["onprem", "aws"]},
    }
    specs = [gpusizer.load_spec({**spec, "name": name}) for name in ("first", "second")]
    with memo.scope():
        (first, first_pools), (second, second_pools) = reuse.in_order(specs, pool)
    assert [p.free for p in first_pools] == [2] and [p.free for p in second_pools] == [0]
    assert (first.chosen.offer.provider, first.chosen.gpu_count, first.chosen.replicas) == ("onprem", 1, 2)
    assert second.chosen.offer.provider == "aws"


def test_a_remembered_failure_is_raised_again_with_a_fresh_traceback():
    """The one exception object is raised on each call: its traceback must not grow with every raise."""

    def fail():
        raise gpusizer.SpecError("model.hf_id: unreachable", "model.hf_id")

    depths = []
    with memo.scope():
        for _ in range(4):
            with pytest.raises(gpusizer.SpecError) as caught:
                memo.remembered(("hub", "x"), fail, gpusizer.SpecError)
            depths.append(_depth(caught.value.__traceback__))
    assert len(set(depths)) == 1 and caught.value.field == "model.hf_id"


def _depth(tb) -> int:
    n = 0
    while tb is not None:
        n, tb = n + 1, tb.tb_next
    return n
