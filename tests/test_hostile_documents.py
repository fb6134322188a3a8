"""Documents at the input caps, built to cost the most memory once parsed (issue 24: no peak over 300 MiB):
`gpusizer diff` reads two, `gpusizer calibrate` one. Each is refused or read, never a traceback, and the
command's peak resident memory stays under 300 MiB (tests/peak.py)."""

from __future__ import annotations

import json

import pytest

from gpusizer import diff
from gpusizer.base import inputs
from tests import peak

LIMIT_MIB = 300


def _strings(path, total_bytes: int, count: int):
    """A plan-shaped document of `count` equal strings filling `total_bytes`: the costliest parse per byte
    (a string object per value) that passes the value cap."""
    size = total_bytes // count - 3
    path.write_text('{"workload": "x", "choice": null, "notes": [' + ",".join([f'"{"a" * size}"'] * count) + "]}")
    assert path.stat().st_size <= total_bytes
    return path


@pytest.mark.slow
def test_diff_of_two_documents_at_the_caps_stays_under_300_mib(tmp_path):
    path = _strings(tmp_path / "plan.json", diff.MAX_DOCUMENT_BYTES - 64, inputs.MAX_JSON_VALUES - 10)
    code, err, peak_mib, took = peak.run(["diff", path, path, "--format", "json"])
    assert code == 0 and "Traceback" not in err, err
    assert peak_mib < LIMIT_MIB, peak_mib


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["strings", "floats", "objects"])
def test_calibrate_of_a_document_at_the_cap_stays_under_300_mib(tmp_path, kind):
    path = tmp_path / "result.json"
    if kind == "strings":
        _strings(path, inputs.MAX_RESULT_BYTES - 64, inputs.MAX_JSON_VALUES - 10)
    elif kind == "floats":
        path.write_text(json.dumps({"model_id": "m", "mean_tpot_ms": 20, "itls": [0.0123456789012345] * 1_000_000}))
    else:  # one more object than the cap allows: refused before parsing
        path.write_text("[" + ",".join(["{}"] * (inputs.MAX_JSON_CONTAINERS + 1)) + "]")
    code, err, peak_mib, took = peak.run(["calibrate", path])
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) <= 3, err
    assert peak_mib < LIMIT_MIB, peak_mib


@pytest.mark.slow
def test_a_million_bad_list_items_cost_one_error(tmp_path):
    """pydantic.FailFast on the contract's lists: the first bad item is reported, the rest are not validated."""
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"workload": "x", "choice": None, "notes": [1.5] * 1_000_000}))
    with pytest.raises(inputs.errors.SpecError) as e:
        diff.load(path, "BASE")
    assert "notes" in str(e.value) and len(str(e.value)) < 1000


def test_too_many_workloads_are_refused_before_any_is_validated(tmp_path):
    from gpusizer.contract import output

    path = tmp_path / "preview.json"
    path.write_text(json.dumps({"workloads": {str(i): {} for i in range(output.MAX_WORKLOADS + 1)}}))
    with pytest.raises(inputs.errors.SpecError) as e:
        diff.load(path, "HEAD")
    assert "split the stack" in str(e.value)


def test_costs_that_would_overflow_when_added_are_refused(tmp_path, tiny_catalog):
    """Two workloads at 1e308 $/h each would total inf, and the JSON report would say Infinity."""
    import gpusizer

    plan = gpusizer.document(gpusizer.plan({"name": "a", "model": {"name": "llama-3.1-8b"}}, catalog=tiny_catalog))
    for key in ("hourly_usd", "monthly_usd"):
        plan["choice"][key] = 1e308
    path = tmp_path / "preview.json"
    path.write_text(json.dumps({"workloads": {"a": plan, "b": {**plan, "workload": "b"}}}))
    with pytest.raises(inputs.errors.SpecError) as e:
        diff.load(path, "HEAD")
    assert "hourly_usd" in str(e.value) and "To fix" in str(e.value)


@pytest.mark.parametrize("value", ["nan", "inf", "1e999", "-1", "x"])
def test_catalog_list_memory_filter_is_a_finite_number(value, capsys):
    """nan compared false with every offer, so `--min-gpu-memory-gib nan` listed them all."""
    from gpusizer import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["catalog", "list", "--min-gpu-memory-gib", value])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--min-gpu-memory-gib" in err and "to fix" in err
