"""`gpusizer observe` against a real Prometheus holding a week of DCGM samples (tests/measure/conftest.py)."""

from __future__ import annotations

import json

import pytest
import yaml

from gpusizer import planner
from gpusizer.estimate import fit as fit_mod
from gpusizer.measure import dcgm, observe, prometheus
from tests import conftest
from tests.measure import dcgm_openmetrics as om

END = om.END.isoformat().replace("+00:00", "Z")
# g6e.xlarge on demand in us-east-1 (gpusizer/data/catalog/aws.csv, AWS price list 2026-07-20).
G6E_XLARGE_USD = 1.861
HEADROOM = planner.load_spec(om.SPECS["chat-oversized"]).sizing.memory_headroom


run = conftest.cli


@pytest.fixture
def specs(tmp_path):
    out = {}
    for name, spec in om.SPECS.items():
        out[name] = tmp_path / f"{name}.yaml"
        out[name].write_text(yaml.safe_dump(spec))
    return out


def observe_json(url, *paths):
    r = run("observe", "--prometheus", url, "--window", "7d", "--end", END, "--format", "json", *paths)
    assert "Traceback" not in r.stderr, r.stderr
    return r, json.loads(r.stdout) if r.stdout else None


@pytest.mark.slow
def test_12_gib_peak_on_l40s_at_20_percent_downsizes_with_savings(prometheus_url, specs):
    r, doc = observe_json(prometheus_url, specs["chat-oversized"])
    assert r.returncode == 0, r.stderr
    row = doc["workloads"][0]
    assert (row["workload"], row["gpu"], row["gpus"], row["samples"]) == (
        "chat-oversized",
        "L40S",
        1,
        om.SAMPLES_PER_GPU,
    )
    assert row["observed"]["peak_gpu_memory_gib"] == 12.0  # 12288 MiB
    assert 0.18 <= row["observed"]["mean_gpu_utilization"] <= 0.22
    assert row["current"]["instance_type"] == "g6e.xlarge" and row["current"]["hourly_usd"] == G6E_XLARGE_USD
    rec = row["recommendation"]
    assert rec["action"] == "downsize", rec
    c = rec["choice"]
    assert c["hourly_usd"] < G6E_XLARGE_USD
    assert c["gpu_memory_gib"] * HEADROOM >= 12.0  # the measured peak fits with the spec's (default) headroom
    assert rec["monthly_savings_usd"] == pytest.approx((G6E_XLARGE_USD - c["hourly_usd"]) * 730, abs=0.01)
    assert row["observed"]["sm_active"] == pytest.approx(0.18, abs=0.01)  # PROF metrics reported when present


@pytest.mark.slow
def test_peak_within_5_percent_of_full_upsizes(prometheus_url, specs):
    r, doc = observe_json(prometheus_url, specs["chat-full"], specs["batch-idle"])
    assert r.returncode == 0, r.stderr
    full, idle = doc["workloads"]
    # 22000 of 22886 MiB = 96.1%: within 5% of full, above the default headroom.
    assert full["recommendation"]["action"] == "upsize", full["recommendation"]
    assert full["recommendation"]["choice"]["gpu_memory_gib"] * HEADROOM >= 22000 / 1024
    # 17920 of 22886 MiB = 78% held at ~10% utilization, and no cheaper GPU holds 17.5 GiB.
    assert idle["recommendation"]["action"] == "investigate", idle["recommendation"]


@pytest.mark.slow
def test_partial_window_and_missing_workload_exit_3_with_one_line_each(prometheus_url, specs):
    r, doc = observe_json(prometheus_url, specs["chat-new"], specs["never-deployed"])
    assert r.returncode == 3
    new, missing = doc["workloads"]
    assert new["recommendation"]["action"] == "keep" and new["recommendation"]["partial"]
    assert 0.27 <= new["observed"]["coverage"] <= 0.30  # 2 of 7 days
    assert missing["recommendation"]["action"] == "no-data" and missing["samples"] == 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("gpusizer: chat-new:") and "never-deployed" in lines[1]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_table_and_markdown_show_the_same_facts_as_json(prometheus_url, specs, fmt):
    _, doc = observe_json(prometheus_url, specs["chat-oversized"])
    r = run("observe", "--prometheus", prometheus_url, "--end", END, "--format", fmt, specs["chat-oversized"])
    assert r.returncode == 0, r.stderr
    rec = doc["workloads"][0]["recommendation"]
    for fact in ("downsize", "12.00", "20% / ", f"{rec['monthly_savings_usd']:,.2f}", rec["choice"]["instance_type"]):
        assert fact in r.stdout


@pytest.mark.slow
def test_label_values_are_escaped_in_promql(prometheus_url):
    client = prometheus.Client(prometheus_url)
    expr = "count_over_time(" + prometheus.selector(dcgm.FB_USED, gpusizer_workload='odd"name\\x') + "[1d])"
    result = client.query(expr, om.END)
    assert [int(float(s["value"][1])) for s in result] == [288]  # one day of 5-minute samples


@pytest.mark.slow
def test_http_error_and_unreachable_prometheus_exit_2_in_one_line(prometheus_url, specs):
    for url in (prometheus_url + "/no-such-prefix", "http://127.0.0.1:9"):
        r = run("observe", "--prometheus", url, "--end", END, specs["chat-oversized"])
        assert r.returncode == 2
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "HTTP 404" in run("observe", "--prometheus", prometheus_url + "/x", specs["chat-oversized"]).stderr


def test_bad_window_is_invalid_input():
    with pytest.raises(prometheus.errors.SpecError) as e:
        prometheus.parse_duration("7 days")
    assert "--window" in str(e.value) and "To fix" in str(e.value)


def test_measured_workload_needs_exactly_the_measured_peak_on_the_observed_gpus():
    w = planner.workload(planner.load_spec(om.SPECS["chat-oversized"]))
    obs = dcgm.Observation("chat-oversized", 2016, gpus=1, hosts=1, gpu="L40S")
    for peak in (12.0, 30.0):
        f = fit_mod.fit(observe.measured_workload(w, obs, peak), fit_mod.Shape("L40S", 44.7, 1))
        assert f.need_gib == pytest.approx(peak)
