"""Rejection codes are one enum with groups, and every reader treats a code by its group."""

from __future__ import annotations

import json

import pytest

import gpusizer
from gpusizer.base import limits
from gpusizer.catalog import Catalog
from gpusizer.decide.candidate import Rejection
from gpusizer.render import report
from tests.conftest import make_offer

CHAT_8B = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"context_length": 4096, "batch_size": 4}}


def test_every_code_has_exactly_one_group_and_the_groups_cover_them_all():
    groups = [limits.PLACEMENT, limits.SIZE, limits.HOST, limits.CAPACITY, limits.BUDGET]
    assert sum(len(g) for g in groups) == len(limits.Limit)
    assert frozenset().union(*groups) == frozenset(limits.Limit)


def test_sized_by_names_every_size_limit_but_memory():
    assert set(limits.SIZED_BY_TARGET) == limits.SIZE - {limits.Limit.MEMORY}
    assert limits.NOT_BY_MEMORY == {
        "deadline",
        "throughput",
        "tpot",
        "ttft",
        "interconnect",
        "precision",
        "per-job-cost",
        "per-token-cost",
    }


def test_an_unknown_code_is_refused_where_a_rejection_is_made():
    with pytest.raises(ValueError):
        Rejection("too-pricey", "no such limit")


def test_codes_stay_plain_strings_in_the_plan_json(tiny_catalog):
    d = gpusizer.plan(CHAT_8B, catalog=tiny_catalog)
    codes = {c["reason_code"] for c in json.loads(json.dumps(gpusizer.document(d)))["candidates"]} - {None}
    assert codes and all(type(c) is str for c in codes) and "memory" in codes


def test_placement_rejections_stay_out_of_the_why_not_rows():
    # The spot-only offer is excluded by the spec's purchase option (a placement limit): the table
    # counts it but does not list it as a loser, as for providers, regions, GPUs and opt-in zones.
    offers = (
        make_offer("g6.xlarge", "L4", 1, 22.35, 0.8),
        make_offer("g6.2xlarge", "L4", 1, 22.35, 0.9, on_demand_usd=None, spot_usd=0.3),
        make_offer("g4dn.xlarge", "T4", 1, 15.0, 0.5),
    )
    d = gpusizer.plan({**CHAT_8B, "precision": "fp16"}, catalog=Catalog(offers))  # fp16: a T4 runs it (if larger)
    codes = {c.offer.instance_type: c.rejection.code for c in d.candidates if not c.feasible}
    assert codes == {"g6.2xlarge": "purchase", "g4dn.xlarge": "memory"}
    table = report.render(d, "table")
    assert "g4dn.xlarge" in table and "g6.2xlarge" not in table
    assert "purchase 1" in table and "memory 1" in table  # still counted by reason
    assert d.next_cheaper.offer.instance_type == "g4dn.xlarge"
