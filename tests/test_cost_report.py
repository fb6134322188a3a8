"""What reviewers read: $/month and $/run of the choice, the ranking objective, nearest misses, collapsed rows."""

from __future__ import annotations

import json
import re

import gpusizer
from gpusizer.base import cost
from gpusizer.catalog import Catalog
from gpusizer.render import report
from tests import conftest
from tests.conftest import REPO, make_offer

CHAT_8B = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"context_length": 4096, "batch_size": 4}}


_cli = conftest.cli


def test_monthly_usd_is_hourly_per_replica_times_replicas_times_730_hours(tiny_catalog):
    # g6.xlarge lists at $0.805/h (tiny catalog); two replicas all month: 0.805 x 2 x 730 = $1,175.30.
    d = gpusizer.plan({**CHAT_8B, "deploy": {"replicas": 2}}, catalog=tiny_catalog)
    choice = gpusizer.document(d)["choice"]
    assert (choice["instance_type"], choice["replicas"]) == ("g6.xlarge", 2)
    assert choice["hourly_usd"] == 0.805  # one replica, not both
    assert choice["monthly_usd"] == 1175.30
    assert "run_hours" not in choice and "total_usd" not in choice  # serving has no run length


def test_monthly_usd_agrees_to_the_cent_with_the_shown_hourly_price():
    # A price with more decimals than the JSON shows: the month is computed from the shown figure.
    c = cost.of(1.23456789 * 3, 3)
    assert c.hourly_usd == 3.7037
    assert abs(c.monthly_usd - c.hourly_usd * c.replicas * 730) < 0.005


def test_training_plan_carries_run_hours_and_the_cost_of_the_run():
    r = _cli("plan", REPO / "stacks/examples/lora-8b.yaml", "--format", "json")
    assert r.returncode == 0, r.stderr
    choice = json.loads(r.stdout)["choice"]
    assert 0 < choice["run_hours"] <= 24  # the spec's deadline
    assert choice["total_usd"] > 0
    assert abs(choice["total_usd"] - choice["hourly_usd"] * choice["replicas"] * choice["run_hours"]) < 0.01


def test_training_is_ranked_by_the_cost_of_the_whole_run():
    d = gpusizer.plan(REPO / "stacks/examples/lora-8b.yaml")
    assert d.objective == "per-token"
    run_costs = [c.cost.total_usd for c in d.feasible]
    # The choice is (one of) the cheapest runs, though not the cheapest per hour.
    assert d.chosen.cost.total_usd == min(run_costs)
    assert min(c.cost.hourly_usd for c in d.feasible) < d.chosen.cost.hourly_usd


def test_every_report_names_the_objective_and_the_replica_count(tiny_catalog):
    d = gpusizer.plan({**CHAT_8B, "deploy": {"replicas": 2}}, catalog=tiny_catalog)
    for fmt in ("table", "markdown"):
        text = report.render(d, fmt)
        assert "ranked by: $/hour of all replicas" in text
        assert "2 replicas x $0.81/h = $1.61/h, $1,175.30/month" in text


def _ttft_catalog() -> Catalog:
    # The cheapest offer is the slowest; the dearest is the fastest (the nearest miss on TTFT).
    return Catalog(
        (
            make_offer("g6.xlarge", "L4", 1, 22.35, 0.805),
            make_offer("g6e.xlarge", "L40S", 1, 44.7, 1.861),
            make_offer("p5.48xlarge", "H100", 8, 79.65, 55.04, fabric="efa"),
        )
    )


def test_impossible_ttft_names_the_best_ttft_reached_and_the_offer_in_every_format():
    spec = {**CHAT_8B, "inference": {"context_length": 4096, "batch_size": 4, "targets": {"ttft_ms": 1}}}
    d = gpusizer.plan(spec, catalog=_ttft_catalog())
    assert d.chosen is None
    ttfts = {c.offer.instance_type: c.fit.speed.ttft_ms for c in d.candidates if c.rejection.code == "ttft"}
    fastest = min(ttfts, key=ttfts.get)
    assert fastest == "p5.48xlarge"  # 8 x H100 prefills fastest: more FLOPs than any other shape here
    best = f"best TTFT: {ttfts[fastest]:,.0f} ms on 8 x H100 p5.48xlarge; target 1 ms"
    for fmt in ("table", "markdown"):
        assert best in report.render(d, fmt)
    miss = next(m for m in gpusizer.document(d)["nearest_misses"] if m["reason"] == "ttft")
    assert miss["offer"]["instance_type"] == "p5.48xlarge" and miss["line"].startswith(best)


def test_losers_rows_are_the_nearest_misses_not_the_cheapest(tiny_catalog):
    spec = {**CHAT_8B, "inference": {"context_length": 4096, "batch_size": 4, "targets": {"ttft_ms": 1}}}
    d = gpusizer.plan(spec, catalog=_ttft_catalog())
    ttft_rows = [line for line in report.render(d, "table", top=1).splitlines() if line.startswith("x ttft")]
    assert len(ttft_rows) == 1 and "p5.48xlarge" in ttft_rows[0]


def test_offers_alike_but_for_the_zone_collapse_into_one_row_with_count_and_zones():
    offers = [
        make_offer("g6.xlarge", "L4", 1, 22.35, 0.805, region="us-east-2", zone=z) for z in ("use2-az3", "use2-az1")
    ]
    offers.append(make_offer("g6.xlarge", "L4", 1, 22.35, 0.9, region="us-east-2", zone="use2-az2"))  # dearer: own row
    d = gpusizer.plan(CHAT_8B, catalog=Catalog(tuple(offers)))
    lines = report.render(d, "table").splitlines()
    rows = [line for line in lines if line.startswith(("CHOSEN", "#"))]
    assert len(rows) == 2
    assert re.search(r"^CHOSEN\s+2\s+aws\s+us-east-2/\{use2-az1,use2-az3\}\s+g6\.xlarge", rows[0])
    assert re.search(r"^#2\s+1\s+aws\s+us-east-2/use2-az2\s", rows[1])


def test_markdown_has_every_column_the_table_has(tiny_catalog):
    d = gpusizer.plan(
        {**CHAT_8B, "inference": {"context_length": 4096, "batch_size": 4, "targets": {"tokens_per_second": 100}}},
        catalog=tiny_catalog,
    )
    table = report.render(d, "table").splitlines()
    header = next(line for line in table if line.lstrip().startswith("n  provider"))
    md_header = next(line for line in report.render(d, "markdown").splitlines() if line.startswith("| | n |"))
    md_cols = [c.strip() for c in md_header.strip("|").split("|")][1:]
    assert md_cols == re.split(r"\s{2,}", header.strip())
    assert "$/Mtok" in md_cols and "$/month" in md_cols


def test_next_cheaper_names_nodes_times_type_with_the_price_of_all_nodes():
    # Qwen2.5-32B full training needs 2 nodes of 8 x A100-40GB (2 x $21.96/h = $43.92/h) and misses a 24 h
    # deadline there (about 24.7 h; at most 2 nodes to be had), while one 8 x H100 node ($55.04/h, about 23.3 h) makes it.
    offers = (
        make_offer("p4d.24xlarge", "A100-40GB", 8, 40.0, 21.96, fabric="efa", max_nodes=2),
        make_offer("p5.48xlarge", "H100", 8, 79.65, 55.04, fabric="efa"),
    )
    spec = {
        "name": "t",
        "model": {"name": "qwen2.5-32b"},
        "task": "training",
        "training": {"sequence_length": 4096, "tokens": 1e9, "deadline_hours": 24},
    }
    d = gpusizer.plan(spec, catalog=Catalog(offers))
    assert d.chosen.offer.instance_type == "p5.48xlarge"
    assert (d.next_cheaper.offer.instance_type, d.next_cheaper.nodes) == ("p4d.24xlarge", 2)
    line = next(line for line in report.render(d, "table").splitlines() if "next cheaper" in line)
    assert "2 x p4d.24xlarge (16 x A100-40GB) ($43.92/h" in line
