"""What reviewers read from a decision is built lazily, and equals what the full candidate list gives.

The plan JSON's nearest misses, the table's rows (offers alike but for the
zone collapsed) and the trimmed candidates are read from merged streams of
judged runs (gpusizer.decide.judgement) that stop after the first few. The
references here sort and group the whole materialized candidate list, the
slow, obvious way.
"""

from __future__ import annotations

import math

import pytest

import gpusizer
from gpusizer.base import providers
from gpusizer.catalog import Catalog
from gpusizer.decide import misses
from gpusizer.render import price_age, rows
from tests import test_optimizer_oracle as oracle

# Real catalog specs whose decisions have zones to collapse, several reasons and a budget.
REAL = [
    {"name": "chat", "model": {"name": "llama-3.1-8b"}, "placement": {"purchase": "any"}},
    {
        "name": "tight",
        "model": {"name": "llama-3.1-70b"},
        "inference": {"targets": {"tpot_ms": 30}},
        "placement": {"max_hourly_usd": 60},
    },
    {"name": "east", "model": {"name": "qwen2.5-7b"}, "placement": {"regions": ["us-east-1", "europe-west4-a"]}},
    {
        "name": "ft",
        "model": {"name": "llama-3.1-8b"},
        "task": "finetune",
        "finetune_method": "full",
        "training": {"tokens": 2e9, "deadline_hours": 3},
    },
    {"name": "none", "model": {"name": "llama-3.1-405b"}, "placement": {"max_hourly_usd": 5}},
]


def _reference_collapse(cs) -> list[list]:
    groups: dict[tuple, list] = {}
    for c in cs:
        groups.setdefault(rows._alike_key(c), []).append(c)
    return list(groups.values())


def _price_key(c) -> tuple:
    o = c.offer
    price = c.hourly_usd if c.hourly_usd is not None else math.inf
    return (price, c.gpu_count, providers.NAMES.index(o.provider), o.region, o.zone or "", o.instance_type, c.purchase)


def _reference_by_reason(d) -> dict[str, list]:
    out: dict[str, list] = {}
    for c in sorted((c for c in d.candidates if not c.feasible), key=_price_key):
        out.setdefault(c.rejection.code.value, []).append(c)
    return {code: sorted(cs, key=lambda c: misses.nearness(d.workload, c)) for code, cs in out.items()}


def _decisions():
    for seed in [*range(0, 120, 3), 116]:  # 116: a fine-tune bursting from full pools to the cloud
        spec, offers, pools, quotas = oracle._case(seed)
        yield gpusizer.plan(spec, catalog=Catalog(tuple(offers), quotas=quotas), pools=pools)
    catalog = gpusizer.load_catalog()
    for spec in REAL:
        yield gpusizer.plan(spec, catalog=catalog)


@pytest.fixture(scope="module")
def decisions():
    return list(_decisions())


def test_nearest_misses_equal_the_sorted_full_list(decisions):
    for d in decisions:
        want = _reference_by_reason(d)
        got = misses.nearest(d.workload, d.judged, include_placement=True)
        assert [m.code for m in got] == [c for c in d.rejections_by_reason]
        for m in got:
            assert m.count == len(want[m.code])
            assert m.candidate == want[m.code][0]


@pytest.mark.parametrize("top", [1, 3, 10])
def test_table_rows_equal_grouping_the_full_list(decisions, top):
    for d in decisions:
        key = lambda c: (c.usd_per_mtok if c.usd_per_mtok is not None else c.hourly_usd, c.hourly_usd)  # noqa: E731
        assert rows.collapse(d.ranked(), top, key) == _reference_collapse(d.feasible)[:top]
        for code, cs in misses.by_reason(d.workload, d.judged).items():
            near = lambda c, d=d: (misses.nearness(d.workload, c), _price_key(c)[0])  # noqa: E731
            assert rows.collapse(cs, 2, near) == _reference_collapse(_reference_by_reason(d)[code])[:2], code


def test_real_catalog_cases_collapse_zones_and_name_several_reasons(decisions):
    """The real-catalog decisions exercise what the lazy views must get right (else agreement proves little)."""
    real = decisions[-len(REAL) :]
    assert any(len(g) > 1 for d in real for g in _reference_collapse(d.feasible))
    assert all(len(d.rejections_by_reason) >= 3 for d in real)
    assert real[-1].chosen is None and "budget" in real[-1].rejections_by_reason


def test_price_age_of_an_infeasible_plan_reads_the_oldest_offer(decisions):
    d = decisions[-1]
    oldest = min(c.offer.as_of for c in d.candidates if c.offer.provider != "onprem")
    assert f"as of {oldest} " in price_age.line(d)


def test_the_top_candidates_read_first_equal_the_fully_judged_ranking():
    """Branch and bound: a fresh decision's top N, read before anything that judges every class, are the
    first N of the ranking every class judged gives."""
    cases = [oracle._case(seed) for seed in range(0, 120, 2)]
    for spec, offers, pools, quotas in cases:
        catalog = Catalog(tuple(offers), quotas=quotas)
        fresh = gpusizer.plan(spec, catalog=catalog, pools=pools)
        first = fresh.judged.top(4)
        full = gpusizer.plan(spec, catalog=catalog, pools=pools)
        assert full.candidate_count == len(full.candidates)  # every class judged before the ranking is read
        assert first == full.feasible[:4]
    catalog = gpusizer.load_catalog()
    for spec in REAL:
        first = gpusizer.plan(spec, catalog=catalog).judged.top(6)
        full = gpusizer.plan(spec, catalog=catalog)
        assert full.candidate_count == len(full.candidates)
        assert first == full.feasible[:6]


def test_branch_and_bound_judges_only_the_classes_that_could_win():
    """Ranked by $/hour, the choice of an 8B chat model needs the cheap classes only; the counts judge all."""
    catalog = gpusizer.load_catalog()
    d = gpusizer.plan({"name": "chat", "model": {"name": "llama-3.1-8b"}}, catalog=catalog)
    judged_first = len({id(g.offer) for g in d.judged.groups})
    assert d.objective == "hourly" and judged_first < len(catalog.index.classes) / 2
    assert sum(d.rejections_by_reason.values()) + d.feasible_count == d.candidate_count
    assert len({id(g.offer) for g in d.judged.groups}) == len(catalog.index.classes)


def test_aggregates_equal_their_definitions_over_the_full_list(decisions):
    """sized_by, burst, the feasible count and the cheapest per GPU read run summaries; here they are
    recomputed from every candidate as their docstrings define them."""
    from gpusizer.base import limits

    for d in decisions:
        feasible = [c for c in d.candidates if c.feasible]
        assert d.feasible_count == len(feasible)
        cheapest = {}
        for c in feasible:
            if c.offer.gpu not in cheapest or c.hourly_usd < cheapest[c.offer.gpu].hourly_usd:
                cheapest[c.offer.gpu] = c
        assert d.judged.cheapest_per_gpu() == cheapest
        c = d.chosen
        if c is None:
            continue
        cheaper = [x for x in d.candidates if x is not c and x.hourly_usd is not None and x.hourly_usd < c.hourly_usd]
        if any(x.feasible for x in cheaper):
            want = limits.PER_TOKEN_COST if d.workload.spec.task == "inference" else limits.PER_JOB_COST
        else:
            lost = {x.rejection.code for x in cheaper}
            want = next((code.value for code in limits.SIZED_BY_TARGET if code in lost), "memory")
        assert d.sized_by == want
        full = sorted(
            {
                x.offer.instance_type
                for x in d.candidates
                if not x.feasible and x.rejection.code == "capacity" and x.offer.provider == "onprem"
            }
        )
        owned = c.offer.provider == "onprem"
        assert (d.burst is not None) == (bool(full) and not owned)
        if d.burst:
            assert ", ".join(full) in d.burst
    assert any(d.chosen and d.burst for d in decisions)  # the cases exercise a burst and several sized_by values
    assert len({d.sized_by for d in decisions if d.chosen}) >= 3
