"""`gpusizer observe` against hostile Prometheus answers, URLs, windows and ends (issue 24), on a local fake
server (tests/measure/fake_prometheus.py): Prometheus value semantics, a capped answer, a total deadline per
request, and every problem a one-line exit 2 (or a finding in the report), never a traceback."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from gpusizer import cli
from gpusizer.measure import dcgm, prometheus
from tests import peak
from tests.measure import dcgm_openmetrics as om
from tests.measure import fake_prometheus as fake

END = "2026-11-23T12:00:00Z"
PEAK = f"max(max_over_time({dcgm.FB_USED}"
UTIL = f"avg(avg_over_time({dcgm.GPU_UTIL}"


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "chat-oversized.yaml"
    path.write_text(yaml.safe_dump(om.SPECS["chat-oversized"]))
    return path


def observe(capsys, url, spec, *extra):
    code = cli.main(["observe", "--prometheus", url, "--end", END, "--format", "json", *extra, str(spec)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


def test_the_fake_server_gives_a_normal_downsize(capsys, spec):
    with fake.serve(fake.dcgm_answer()) as url:
        code, out, err = observe(capsys, url, spec)
    row = json.loads(out)["workloads"][0]
    assert code == 0, err
    assert row["observed"]["peak_gpu_memory_gib"] == 12.0 and row["recommendation"]["action"] == "downsize"
    assert "findings" not in row["observed"]


def test_nan_is_no_sample(capsys, spec):
    """avg_over_time over no utilization samples is NaN in Prometheus: the statistic is absent, not 0 or NaN."""
    with fake.serve(fake.dcgm_answer({UTIL: "NaN"})) as url:
        code, out, err = observe(capsys, url, spec)
    row = json.loads(out)["workloads"][0]
    assert code == 0 and row["observed"]["mean_gpu_utilization"] is None
    assert row["observed"]["p95_gpu_utilization"] == 0.35 and "findings" not in row["observed"]


@pytest.mark.parametrize(
    "value, words", [("+Inf", "+Inf"), ("-Inf", "-Inf"), ("-5", "negative"), ("1e308", "not a reading")]
)
def test_infinite_negative_or_impossible_peak_memory_is_a_finding_not_data(capsys, spec, value, words):
    with fake.serve(fake.dcgm_answer({PEAK: value})) as url:
        code, out, err = observe(capsys, url, spec)
    row = json.loads(out, parse_constant=pytest.fail)["workloads"][0]
    assert code == 3  # no usable peak: no-data, one line on stderr
    assert row["recommendation"]["action"] == "no-data"
    assert any(words in f for f in row["observed"]["findings"]) and words in row["recommendation"]["reason"]
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["+Inf", "-1", "250", "1e308"])
def test_bad_utilization_is_a_finding_and_the_rest_is_used(capsys, spec, value):
    with fake.serve(fake.dcgm_answer({UTIL: value})) as url:
        code, out, err = observe(capsys, url, spec)
    row = json.loads(out, parse_constant=pytest.fail)["workloads"][0]
    assert code == 0 and row["observed"]["mean_gpu_utilization"] is None
    assert row["observed"]["peak_gpu_memory_gib"] == 12.0 and len(row["observed"]["findings"]) == 1


@pytest.mark.parametrize(
    "values",
    [
        {f"value:{PEAK[:20]}": ["x"]},
        {f"value:{PEAK[:20]}": "12288"},
        {f"value:{PEAK[:20]}": [1, 12288]},
        {f"value:{PEAK[:20]}": [True, "1"]},
        {PEAK: "twelve"},
        {PEAK: ""},
        {"count_over_time": "abc"},
    ],
)
def test_a_malformed_value_exits_2_in_one_line(capsys, spec, values):
    with fake.serve(fake.dcgm_answer(values)) as url:
        code, out, err = observe(capsys, url, spec)
    assert code == 2 and "malformed answer" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "doc",
    [
        {"status": "success", "data": {"result": {"a": 1}}},
        {"status": "success", "data": {"result": [1, 2]}},
        {"status": "success", "data": []},
        {"status": "error", "errorType": "bad_data", "error": "parse error"},
        [],
        {"status": "success", "data": {"result": [{"metric": "x", "value": [1, "5"]}]}},
    ],
)
def test_malformed_documents_exit_2(capsys, spec, doc):
    with fake.serve(lambda r: fake.send_json(r, doc)) as url:
        code, out, err = observe(capsys, url, spec)
    # a metric that is not an object only loses its labels; every other shape is refused
    assert code in (2, 3) and len(err.strip().splitlines()) >= 1


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1",
        "http://host:99999",
        "http://host:abc",
        "ftp://host",
        "http://",
        "localhost:9090",
        "http://host:9090/?x=1",
        "http://host:9090/#f",
        "http://ho st",
        "http://host\n:9090",
        "",
        "http://:9090",
    ],
)
def test_url_errors_exit_2_with_a_fix(capsys, spec, url):
    code, out, err = observe(capsys, url, spec)
    assert code == 2 and "--prometheus" in err and "To fix" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "args",
    [
        ("--window", "99999999999y"),
        ("--window", "0s"),
        ("--window", "1ms"),
        ("--window", "7 days"),
        ("--window", "9" * 5000 + "d"),
        ("--end", "0001-01-01T00:00:00Z"),
        ("--end", "9999-12-31T23:59:59+00:00"),
        ("--end", "0001-01-01T00:00:00+14:00"),
        ("--end", "yesterday"),
        ("--timeout", "0"),
        ("--timeout", "nan"),
        ("--timeout", "1e9"),
    ],
)
def test_window_end_and_timeout_errors_exit_2_with_a_fix(capsys, spec, args):
    code = cli.main(["observe", "--prometheus", "http://127.0.0.1:9", *args, str(spec)])
    err = capsys.readouterr().err
    assert code == 2 and args[0] in err and "To fix" in err and "Traceback" not in err, err


def test_a_trickling_server_is_cut_off_at_the_total_deadline(capsys, spec):
    """One byte every 0.4 s would pass any per-read timeout; the deadline is for the whole request."""

    def trickle(request):
        for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n":
            request.wfile.write(bytes([byte]))
            request.wfile.flush()
            time.sleep(0.4)

    with fake.serve(trickle) as url:
        start = time.monotonic()
        code, out, err = observe(capsys, url, spec, "--timeout", "2")
        took = time.monotonic() - start
    assert code == 2 and "within 2 s" in err and took < 5, (took, err)


@pytest.fixture
def measured():
    return peak.run


HUGE = 512 * 1000 * 1000  # the 512 MB answer of the adversarial pass


def _huge(declared: bool):
    def answer(request):
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        if declared:
            request.send_header("Content-Length", str(HUGE))
        else:
            request.send_header("Connection", "close")
        request.end_headers()
        request.wfile.write(b'{"status": "success", "data": {"resultType": "vector", "result": [')
        chunk = b'{"metric": {}, "value": [1, "1"]},' * 2000
        sent = 0
        while sent < HUGE:
            request.wfile.write(chunk)
            sent += len(chunk)
        request.wfile.write(b"]}}")

    return answer


@pytest.mark.slow
@pytest.mark.parametrize("declared", [True, False])
def test_a_512_mb_answer_is_refused_under_300_mib(measured, spec, declared):
    with fake.serve(_huge(declared)) as url:
        code, err, peak_mib, took = measured(["observe", "--prometheus", url, "--end", END, spec])
    assert code == 2 and "more than 16 MiB" in err and "Traceback" not in err, err
    assert peak_mib < 300, peak_mib
    assert took < 20


@pytest.mark.slow
def test_one_byte_every_5_s_ends_within_20_s_as_the_command(measured, spec):
    def trickle(request):
        for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b" " * 100:
            request.wfile.write(bytes([byte]))
            request.wfile.flush()
            time.sleep(5)

    with fake.serve(trickle) as url:
        code, err, peak_mib, took = measured(["observe", "--prometheus", url, "--end", END, spec], timeout=40)
    assert code == 2 and f"within {prometheus.TIMEOUT_S:g} s" in err, err
    assert took < 20, took
