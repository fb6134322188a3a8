"""`gpusizer diff`: base and head choices, $/month and the delta, and why the choice moved."""

from __future__ import annotations

import json

import pytest

import gpusizer
from gpusizer import diff
from gpusizer.catalog import Catalog
from gpusizer.render import diff as diff_view
from tests import conftest
from tests.conftest import make_offer

CHAT_8B = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"context_length": 4096, "batch_size": 4}}


_cli = conftest.cli


def _write(path, doc):
    path.write_text(json.dumps(doc))
    return path


def _plan(spec, catalog):
    return gpusizer.document(gpusizer.plan(spec, catalog=catalog))


def test_purchase_change_shows_both_choices_and_the_monthly_delta(tmp_path, tiny_catalog):
    base = _write(tmp_path / "base.json", _plan(CHAT_8B, tiny_catalog))
    head = _write(tmp_path / "head.json", _plan({**CHAT_8B, "placement": {"purchase": "spot"}}, tiny_catalog))
    r = _cli("diff", base, head)
    assert r.returncode == 0, r.stderr
    # g6.xlarge $0.805/h on demand, spot $0.322/h (tiny catalog): 730 h -> $587.65 and $235.06, delta -$352.59.
    assert "chat: $587.65/month -> $235.06/month (-$352.59/month)" in r.stdout
    assert "on-demand" in r.stdout and "spot" in r.stdout
    assert "spec change: placement.purchase on-demand -> spot" in r.stdout


def test_json_follows_the_contract(tmp_path, tiny_catalog):
    base = _write(tmp_path / "base.json", _plan(CHAT_8B, tiny_catalog))
    head = _write(tmp_path / "head.json", _plan({**CHAT_8B, "placement": {"purchase": "spot"}}, tiny_catalog))
    r = _cli("diff", base, head, "--format", "json")
    assert r.returncode == 0, r.stderr
    (w,) = json.loads(r.stdout)["workloads"]
    assert {"workload", "base", "head", "monthly_delta_usd", "why"} <= set(w)
    assert (w["base"]["purchase"], w["head"]["purchase"]) == ("on-demand", "spot")
    assert w["monthly_delta_usd"] == -352.59


def test_markdown_renders_one_table_per_workload(tmp_path, tiny_catalog):
    doc = {
        "workloads": {"chat": _plan(CHAT_8B, tiny_catalog), "other": _plan({**CHAT_8B, "name": "other"}, tiny_catalog)},
        "policy": {"resources": 2, "mandatory": 0, "passed": True},
    }
    path = _write(tmp_path / "p.json", doc)
    r = _cli("diff", path, path, "--format", "markdown")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("| | base | head |") == 2
    assert r.stdout.count("- why: unchanged") == 2


def test_a_repriced_offer_is_named_as_a_price_change(tmp_path, tiny_catalog):
    dearer = Catalog(
        tuple(
            make_offer("g6.xlarge", "L4", 1, 22.35, 0.95) if o.instance_type == "g6.xlarge" else o
            for o in tiny_catalog.offers
        )
    )
    changes = diff.compare({"chat": _plan(CHAT_8B, tiny_catalog)}, {"chat": _plan(CHAT_8B, dearer)})
    (c,) = changes
    assert any(w.startswith("price change: aws us-east-1 g6.xlarge on-demand $0.805/h -> $0.95/h") for w in c.why)
    assert c.monthly_delta_usd == round((0.95 - 0.805) * 730, 2)


def test_a_cheaper_new_offer_that_wins_is_named_as_new(tiny_catalog):
    more = Catalog(tiny_catalog.offers + (make_offer("g7.xlarge", "L4", 1, 22.35, 0.5),))
    (c,) = diff.compare({"chat": _plan(CHAT_8B, tiny_catalog)}, {"chat": _plan(CHAT_8B, more)})
    assert c.head["instance_type"] == "g7.xlarge"
    assert "new offer: aws us-east-1 g7.xlarge on-demand (as of 2026-11-01)" in c.why


def test_added_and_removed_workloads_count_their_whole_month(tiny_catalog):
    plan = _plan(CHAT_8B, tiny_catalog)
    (added,) = diff.compare({}, {"chat": plan})
    (removed,) = diff.compare({"chat": plan}, {})
    assert (added.base, added.why, added.monthly_delta_usd) == (None, ("workload added",), 587.65)
    assert (removed.head, removed.why, removed.monthly_delta_usd) == (None, ("workload removed",), -587.65)


@pytest.mark.parametrize("content", ["not json", "{}", '{"workloads": {"a": 1}}'])
def test_input_that_is_not_a_plan_exits_2_naming_the_side(tmp_path, tiny_catalog, content):
    good = _write(tmp_path / "good.json", _plan(CHAT_8B, tiny_catalog))
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    r = _cli("diff", good, bad)
    assert r.returncode == 2
    assert r.stderr.startswith("gpusizer: error: HEAD:") and "Traceback" not in r.stderr


def test_plan_json_over_the_spec_cap_is_read(tmp_path, tiny_catalog):
    """Plan/preview JSON is machine-written and can pass 1 MiB; it gets inputs.MAX_RESULT_BYTES instead."""
    plan = _plan(CHAT_8B, tiny_catalog)
    big = {**plan, "candidates": plan["candidates"] * (2 * (1 << 20) // len(json.dumps(plan["candidates"])) + 1)}
    path = _write(tmp_path / "big.json", big)
    assert path.stat().st_size > 2 * (1 << 20)
    plans, policy = diff.load(path, "BASE")
    assert plans["chat"]["choice"] == plan["choice"] and policy is None


@pytest.mark.parametrize(
    "content, words",
    [
        (None, "is not a regular file"),  # /dev/zero
        ('{"workload": "a", "workload": "b"}', "duplicate key"),
        ('{"workload": "a", "choice": NaN}', "not valid JSON"),
    ],
)
def test_diff_inputs_go_through_the_input_boundary_naming_the_side(tmp_path, content, words):
    path = "/dev/zero"
    if content is not None:
        path = tmp_path / "head.json"
        path.write_text(content)
    with pytest.raises(gpusizer.SpecError) as e:
        diff.load(path, "HEAD")
    assert str(e.value).startswith("HEAD: ") and words in str(e.value) and e.value.field == "HEAD"
    assert "To fix" in str(e.value)


def test_diff_input_over_the_result_cap_is_refused(tmp_path, tiny_catalog, monkeypatch):
    path = _write(tmp_path / "plan.json", _plan(CHAT_8B, tiny_catalog))
    monkeypatch.setattr(diff, "MAX_DOCUMENT_BYTES", path.stat().st_size - 1)
    with pytest.raises(gpusizer.SpecError) as e:
        diff.load(path, "BASE")
    assert str(e.value).startswith("BASE: ") and "-byte limit" in str(e.value)


def test_markdown_of_an_added_workload_leaves_the_empty_base_cells_empty(tiny_catalog):
    changes = diff.compare({}, {"chat": _plan(CHAT_8B, tiny_catalog)})
    rows = [line for line in diff_view.render(changes, "markdown").splitlines() if line.startswith("| ")]
    assert "****" not in "\n".join(rows)
    assert rows[1].startswith("| choice | (absent) | **aws us-east-1 g6.xlarge")
    removed = diff_view.render(diff.compare({"chat": _plan(CHAT_8B, tiny_catalog)}, {}), "markdown")
    assert "****" not in removed and "| GPUs | 1 x L4 | |" in removed


def test_a_training_run_is_totalled_once_not_as_a_month_of_hours(tiny_catalog):
    # A run of hours costs hourly x replicas x run hours once; adding it as hourly x 730 to the monthly
    # total overstated a 0.4 h fine-tune as thousands of dollars a month.
    train = {
        "name": "ft",
        "model": {"name": "llama-3.2-1b"},
        "task": "training",
        "training": {"tokens": 1e8, "sequence_length": 2048},
    }
    base = {"chat": _plan(CHAT_8B, tiny_catalog)}
    head = {"chat": _plan(CHAT_8B, tiny_catalog), "ft": _plan(train, tiny_catalog)}
    choice = head["ft"]["choice"]
    run = choice["hourly_usd"] * choice["replicas"] * choice["run_hours"]  # the contract's total_usd, by hand
    doc = json.loads(diff_view.render(diff.compare(base, head), "json"))
    assert doc["monthly_delta_usd"] == 0 and doc["run_delta_usd"] == pytest.approx(run, abs=0.01)
    # Each workload's monthly delta adds up to the total: the run's is $0/month, not hourly x 730.
    assert {w["workload"]: w["monthly_delta_usd"] for w in doc["workloads"]}["ft"] == 0
    assert sum(w["monthly_delta_usd"] for w in doc["workloads"]) == doc["monthly_delta_usd"]
    text = diff_view.render(diff.compare(base, head), "table")
    assert "ft: - -> $" in text and "per run" in text
    assert "Total: $587.65/month -> $587.65/month (±$0.00/month); training runs, once: $0 -> $" in text


def test_a_workload_with_nothing_feasible_on_a_side_is_no_saving(tmp_path, tiny_catalog):
    # A change that breaks a workload (nothing feasible in head) has no price to compare: it is named, and
    # left out of the totals rather than counted as $0 (which read as saving its whole cost).
    base = _write(tmp_path / "base.json", _plan(CHAT_8B, tiny_catalog))
    broken = {**CHAT_8B, "inference": {"context_length": 4096, "batch_size": 4, "targets": {"ttft_ms": 0.01}}}
    head_doc = _plan(broken, tiny_catalog)
    assert head_doc["choice"] is None
    head = _write(tmp_path / "head.json", head_doc)
    r = _cli("diff", base, head)
    assert r.returncode == 0, r.stderr
    assert "chat: $587.65/month -> none feasible (not in the totals" in r.stdout
    assert "Total: $0/month -> $0/month" in r.stdout and "not counted, nothing feasible on one side: chat" in r.stdout
    doc = json.loads(_cli("diff", base, head, "--format", "json").stdout)
    assert doc["monthly_delta_usd"] == 0 and doc["not_counted"] == ["chat"]
