"""Output that cannot be written (`gpusizer COMMAND > /dev/full`) exits 120 with one message, never an internal
error (issue 24): every command and every format that prints, in-process (main(argv) with a stdout that fails)
and run as the command (its stdout on /dev/full)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys

import pytest
import yaml

import gpusizer
from gpusizer import cli
from tests.conftest import REPO
from tests.measure import dcgm_openmetrics as om
from tests.measure import fake_prometheus as fake

SPEC = REPO / "stacks/examples/chat-8b.yaml"
TRAINING = REPO / "tests/data/calibration/training-h100x8-llama31-8b.json"
POOL = {"name": "rack", "location": "dc1", "gpu": "L40S", "gpus_per_node": 4, "nodes": 2, "usd_per_gpu_hour": 0.9}
MESSAGE = "gpusizer: error: cannot write the output: [Errno 28] No space left on device"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("outputs")
    plan = root / "plan.json"
    plan.write_text(json.dumps(gpusizer.document(gpusizer.plan(str(SPEC)))))
    pools = root / "pools.yaml"
    pools.write_text(yaml.safe_dump({"pools": [POOL]}))
    observed = root / "chat-oversized.yaml"
    observed.write_text(yaml.safe_dump(om.SPECS["chat-oversized"]))
    return {"plan": plan, "pools": pools, "observed": observed, "out": root / "cal.yaml"}


def _commands(files, url="URL"):
    """(id, argv) of every command and format that writes to stdout."""
    out = []
    for fmt in ("table", "json", "markdown"):
        out += [
            (f"plan-{fmt}", ["plan", SPEC, "--format", fmt]),
            (f"estimate-{fmt}", ["estimate", SPEC, "--format", fmt]),
            (f"diff-{fmt}", ["diff", files["plan"], files["plan"], "--format", fmt]),
            (f"tco-{fmt}", ["tco", SPEC, "--pools", files["pools"], "--format", fmt]),
            (
                f"observe-{fmt}",
                ["observe", "--prometheus", url, "--end", "2026-11-23T12:00:00Z", "--format", fmt, files["observed"]],
            ),
        ]
    for fmt in ("table", "json"):
        out += [
            (f"models-{fmt}", ["models", "--format", fmt]),
            (f"catalog-list-{fmt}", ["catalog", "list", "--format", fmt]),
        ]
    out += [
        ("schema", ["schema"]),
        ("schema-output", ["schema", "--output", "plan"]),
        ("calibrate", ["calibrate", TRAINING]),
        ("calibrate-out", ["calibrate", TRAINING, "--out", files["out"]]),
    ]
    return out


NAMES = [name for name, _ in _commands({"plan": "", "pools": "", "observed": "", "out": ""})]


@pytest.mark.parametrize("name", NAMES)
def test_in_process_a_full_disk_exits_120_with_one_message(name, files, monkeypatch, capfd):
    with fake.serve(fake.dcgm_answer()) as url:
        argv = dict(_commands(files, url))[name]
        full = open("/dev/full", "w")  # noqa: SIM115 - closed below, its buffer discarded
        monkeypatch.setattr(sys, "stdout", full)
        try:
            code = cli.main([str(a) for a in argv])
        finally:
            monkeypatch.undo()
            with contextlib.suppress(OSError):
                full.close()
    err = capfd.readouterr().err
    assert code == 120, err
    assert err.count("cannot write the output") == 1 and MESSAGE in err and "internal error" not in err


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_as_the_command_a_full_disk_exits_120_with_one_message(name, files):
    with fake.serve(fake.dcgm_answer()) as url, open("/dev/full", "w") as full:
        argv = dict(_commands(files, url))[name]
        r = subprocess.run(
            [sys.executable, "-m", "gpusizer.cli", *map(str, argv)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            timeout=120,
        )
    assert r.returncode == 120, r.stderr
    assert r.stderr.strip() == MESSAGE, r.stderr
