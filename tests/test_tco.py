"""`gpusizer tco`: cumulative cloud vs pool cost, break-even month and utilization, checked by hand."""

from __future__ import annotations

import json

import pytest
import yaml

import gpusizer
from gpusizer import tco
from tests import conftest

SPEC = {
    "name": "chat",
    "model": {"name": "llama-3.1-8b"},
    "inference": {"context_length": 4096, "batch_size": 4},
    "placement": {"providers": ["aws"], "regions": ["us-east-1"], "gpus": ["L40S"]},
}
RACK = {
    "name": "rack-a",
    "location": "fra-dc1",
    "gpu": "L40S",
    "gpus_per_node": 8,
    "nodes": 2,
    "capex_usd_per_node": 90000,
    "lifetime_years": 4,
    "power_kw_per_node": 4.0,
    "usd_per_kwh": 0.15,
    "pue": 1.4,
    "utilization": 0.6,
}


def compare(catalog, months=36, **pool):
    return tco.compare(SPEC, gpusizer.parse_pools([{**RACK, **pool}]), catalog, months)


def test_break_even_month_and_utilization_match_hand_arithmetic(tiny_catalog):
    doc = compare(tiny_catalog)
    # Cloud on demand: g6e.xlarge $1.861/h x 730 h x 60% busy = $815.118/month.
    on_demand = next(c for c in doc["cloud"] if c["purchase"] == "on-demand")
    assert on_demand["instance_type"] == "g6e.xlarge" and on_demand["monthly_usd"] == pytest.approx(815.12, abs=0.01)
    # Pool: 1/8 of a $90,000 node = $11,250 up front; power 4 kW / 8 x 1.4 x $0.15 x 730 h = $76.65/month.
    assert doc["pool"]["capex_usd"] == pytest.approx(11250)
    assert doc["pool"]["monthly_usd"] == pytest.approx(76.65)
    assert doc["series"]["pool"][36] == pytest.approx(11250 + 36 * 76.65)  # 14,009.40
    # 11,250 + 76.65 m <= 815.118 m  =>  m >= 15.23  =>  month 16.
    assert doc["break_even"]["on-demand"]["month"] == 16
    # 14,009.40 / ($1.861 x 730 h x 36 months = 48,907.08) = 0.2864.
    assert doc["break_even"]["on-demand"]["utilization"] == pytest.approx(0.2864, abs=1e-4)
    # Spot $0.7444/h (the fixture's 40%): $326.05/month; 11,250 / (326.05 - 76.65) = 45.1 months > 36: never.
    assert doc["break_even"]["spot"]["month"] is None
    assert doc["break_even"]["spot"]["utilization"] == pytest.approx(14009.40 / (0.7444 * 730 * 36), abs=1e-4)
    assert "no 1-/3-year commitment prices" in doc["commitments"]


def test_hardware_is_bought_again_at_the_end_of_its_lifetime(tiny_catalog):
    series = compare(tiny_catalog, lifetime_years=1)["series"]["pool"]
    assert series[12] == pytest.approx(11250 + 12 * 76.65)  # 12,169.80: still the first purchase
    assert series[13] == pytest.approx(2 * 11250 + 13 * 76.65)  # 23,496.45: the second one from month 13


def test_rate_priced_pool_costs_its_rate_for_the_busy_hours(tiny_catalog):
    pool = {k: v for k, v in RACK.items() if k not in ("capex_usd_per_node", "power_kw_per_node", "lifetime_years")}
    doc = tco.compare(SPEC, gpusizer.parse_pools([{**pool, "usd_per_gpu_hour": 0.95}]), tiny_catalog, 36)
    assert doc["pool"]["monthly_usd"] == pytest.approx(0.95 * 730 * 0.6)  # $416.10 < $815.12: cheaper from month 1
    assert doc["break_even"]["on-demand"]["month"] == 1


run = conftest.cli


@pytest.fixture
def files(tmp_path):
    spec, pools = tmp_path / "spec.yaml", tmp_path / "pools.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    pools.write_text(yaml.safe_dump({"pools": [RACK]}))
    return spec, pools


@pytest.mark.slow  # plans the spec against the whole packaged catalog in a subprocess (~1.4 s)
def test_table_gives_the_break_even_month_from_the_packaged_catalog(files):
    spec, pools = files
    r = run("tco", spec, "--pools", pools, "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # g6e.xlarge in us-east-1: $1.861 on demand (aws.csv, 2026-07-20 price list) -> month 16 as above.
    assert doc["break_even"]["on-demand"]["month"] == 16
    table = run("tco", spec, "--pools", pools).stdout
    assert "break-even month" in table and " 16 " in table and "commitment" in table
    assert "| cloud on-demand |" in run("tco", spec, "--pools", pools, "--format", "markdown").stdout


@pytest.mark.slow
def test_png_chart_is_written(files, tmp_path):
    spec, pools = files
    out = tmp_path / "tco.png"
    r = run("tco", spec, "--pools", pools, "--format", "png", "--out", out)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 20_000


def test_no_pool_that_runs_it_exits_3(files, tmp_path):
    spec, _ = files
    pools = tmp_path / "t4.yaml"
    pools.write_text(yaml.safe_dump({"pools": [{**RACK, "gpu": "T4"}]}))
    r = run("tco", spec, "--pools", pools)
    assert r.returncode == 3 and "no pool can run it" in r.stderr and "Traceback" not in r.stderr


def test_bad_months_exits_2(files):
    spec, pools = files
    r = run("tco", spec, "--pools", pools, "--months", "0")
    assert r.returncode == 2 and "--months" in r.stderr


@pytest.mark.parametrize(
    "fmt, out, why",
    [
        ("png", "{tmp}", "is a directory"),
        ("png", "{tmp}/chart.txt", "is not a .png file"),
        ("png", "{tmp}/missing/chart.png", "No such file or directory"),
        ("table", "{tmp}", "Is a directory"),
        ("json", "{tmp}/missing/tco.json", "No such file or directory"),
    ],
)
def test_an_out_path_that_cannot_be_written_exits_2_naming_it(files, tmp_path, fmt, out, why):
    spec, pools = files
    r = run("tco", spec, "--pools", pools, "--format", fmt, "--out", out.format(tmp=tmp_path))
    assert r.returncode == 2 and r.stderr.startswith("gpusizer: error: --out:") and why in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and list(tmp_path.glob("*.png")) == []
