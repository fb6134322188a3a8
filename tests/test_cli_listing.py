"""`catalog list` columns and pools, the pools hint, the price-age line and --debug anywhere."""

from __future__ import annotations

import json

import pytest
import yaml

import gpusizer
from gpusizer.render import price_age, report
from tests import conftest
from tests.conftest import REPO, make_offer

CHAT = REPO / "stacks/examples/chat-8b.yaml"  # placement.providers [aws, gcp]
POOLS = yaml.safe_load((REPO / "stacks/Pulumi.hybrid.yaml").read_text())["config"]["gpusizer:pools"]


_cli = conftest.cli


@pytest.fixture
def pools_file(tmp_path):
    path = tmp_path / "pools.yaml"
    path.write_text(yaml.safe_dump(POOLS))
    return path


def test_catalog_json_rows_carry_the_host_shape_and_the_opt_in_mark():
    r = _cli("catalog", "list", "--gpu", "L4", "--format", "json")
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    for row in listed:
        assert {"gpu_memory_gib", "vcpus", "ram_gib", "opt_in", "network_gbps"} <= set(row)
    # g6.xlarge: 4 vCPUs, 16 GiB RAM, one L4 of 22.35 GiB (AWS EC2 instance types; the catalog's source rows).
    g6 = next(row for row in listed if row["instance_type"] == "g6.xlarge")
    assert (g6["vcpus"], g6["ram_gib"], g6["gpu_memory_gib"]) == (4, 16.0, 22.35)
    assert any(row["opt_in"] for row in listed) and not all(row["opt_in"] for row in listed)


def test_catalog_table_marks_opt_in_rows():
    r = _cli("catalog", "list", "--gpu", "L4")
    header, *body = r.stdout.splitlines()
    for col in ("GiB/GPU", "vCPUs", "RAM GiB", "net Gb/s", "opt-in"):
        assert col in header
    opt_in_at = header.index("opt-in")
    assert any(line[opt_in_at : opt_in_at + 3] == "yes" for line in body)


def test_catalog_lists_pools_at_their_amortized_price(pools_file):
    r = _cli("catalog", "list", "--provider", "onprem", "--pools", pools_file, "--format", "json")
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    # rack-a: ($90,000 / 4 y / 8760 h + 4 kW x 1.4 x $0.15/kWh) / (8 GPUs x 0.7) = $0.6087 per GPU-hour.
    per_gpu = (90000 / 4 / 8760 + 4 * 1.4 * 0.15) / (8 * 0.7)
    assert sorted(row["gpu_count"] for row in listed) == [1, 2, 4, 8]
    for row in listed:
        assert row["hourly_usd"] == pytest.approx(per_gpu * row["gpu_count"], abs=1e-4)
        assert "/GPU-h" in row["note"]


def test_onprem_listing_without_pools_says_how_to_list_them():
    r = _cli("catalog", "list", "--provider", "onprem")
    assert r.returncode == 0 and "--pools FILE" in r.stderr


def test_pools_with_a_spec_that_leaves_out_onprem_get_a_hint(pools_file):
    r = _cli("plan", CHAT, "--pools", pools_file, "--format", "json")
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)  # the hint goes to stderr, the JSON stays clean
    assert "leaves out onprem" in r.stderr and "placement.providers" in r.stderr


def test_price_age_is_one_line_naming_the_chosen_offers_date(tiny_catalog, monkeypatch):
    monkeypatch.delenv(price_age.QUIET_ENV, raising=False)
    old = gpusizer.Catalog(
        (make_offer("g6.xlarge", "L4", 1, 22.35, 0.805, as_of="2020-01-01"),),
        notes=("aws prices as of 2020-01-01..2020-01-01 (9999 days old at most)", "offers from my.csv"),
    )
    d = gpusizer.plan({"name": "c", "model": {"name": "llama-3.1-8b"}}, catalog=old)
    lines = [line for line in report.render(d, "table").splitlines() if line.startswith("Prices:")]
    assert lines[0] == "Prices: offers from my.csv"  # other notes stay
    assert len(lines) == 2 and "the chosen offer's price is as of 2020-01-01" in lines[1]
    assert lines[1].startswith("Prices: WARNING:") and "--quiet-age" in lines[1]


def test_acknowledged_age_is_quiet_by_flag_or_environment(tiny_catalog, monkeypatch):
    d = gpusizer.plan({"name": "c", "model": {"name": "llama-3.1-8b"}}, catalog=tiny_catalog)
    monkeypatch.delenv(price_age.QUIET_ENV, raising=False)
    assert "chosen offer's price" in report.render(d, "markdown")
    assert "chosen offer's price" not in report.render(d, "markdown", quiet_age=True)
    monkeypatch.setenv(price_age.QUIET_ENV, "1")
    assert "chosen offer's price" not in report.render(d, "table")


@pytest.mark.parametrize(
    "argv",
    [
        ("--debug", "plan", "MISSING.yaml"),
        ("plan", "--debug", "MISSING.yaml"),
        ("plan", "MISSING.yaml", "--debug"),
        ("catalog", "list", "--gpu", "nope", "--debug"),
    ],
)
def test_debug_is_accepted_anywhere(argv):
    r = _cli(*argv)
    assert r.returncode == 2  # an input error, not "unrecognized arguments" (argparse's usage error is also 2)
    assert "unrecognized arguments" not in r.stderr and "gpusizer: error:" in r.stderr
