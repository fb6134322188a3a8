"""`gpusizer preview`: bundled stacks pass; a hand-written over-provisioned stack fails clearly."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys

import pytest
import yaml

from gpusizer.contract import OUTPUT_VERSION, output
from gpusizer.policies import analyzer, mocks, view
from tests.conftest import REPO

HERE = REPO / "tests/policies/overprovisioned"

# Each test starts a Python process that imports Pulumi and runs a whole program: 3-10 s apiece.
pytestmark = pytest.mark.slow


def preview(*args):
    return subprocess.run(
        [sys.executable, "-m", "gpusizer.cli", "preview", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )


@pytest.mark.slow
@pytest.mark.parametrize("stack", ["dev", "gcp", "hybrid"])
def test_bundled_stacks_pass(stack):
    r = preview("--stack", stack)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 mandatory violation(s): preview passed" in r.stdout


def test_hand_written_overprovisioned_instance_fails_with_a_clear_message():
    r = preview(
        "--stack", "overprovisioned", "--stacks-dir", HERE, "--program", HERE / "program.py", "--format", "markdown"
    )
    assert r.returncode == 1
    assert "| mandatory | gpusizer-no-overprovisioning | `big-box` |" in r.stdout
    assert "637 GiB for a 20 GiB requirement" in r.stdout and "g6.xlarge" in r.stdout
    assert "Traceback" not in r.stderr


def test_unknown_stack_exits_2_naming_the_choices():
    r = preview("--stack", "nope")
    assert r.returncode == 2
    assert "--stack" in r.stderr and "dev" in r.stderr


def test_json_document_holds_each_workloads_plan_for_diff():
    r = preview("--stack", "hybrid", "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["version"] == OUTPUT_VERSION and doc["workloads"]["support-chat"]["version"] == OUTPUT_VERSION
    output.Preview.model_validate(doc)  # the output contract's model of a preview document
    assert set(doc["workloads"]) == {"support-chat", "summarizer"}
    assert doc["policy"]["mandatory"] == 0 and doc["policy"]["passed"] is True
    chat = doc["workloads"]["support-chat"]["choice"]
    assert chat["replicas"] == 2  # stacks/Pulumi.hybrid.yaml: deploy.replicas 2
    assert abs(chat["monthly_usd"] - chat["hourly_usd"] * 2 * 730) < 0.01


def test_text_shows_the_replica_count_and_the_month():
    r = preview("--stack", "hybrid")
    line = next(line for line in r.stdout.splitlines() if "support-chat:" in line)
    assert "2 replicas x $0.61/h = $1.22/h" in line and "/month" in line and "ranked by" in line


def test_overprovisioned_instance_fails_at_the_first_preview_too():
    r = preview("--stack", "overprovisioned", "--stacks-dir", HERE, "--program", HERE / "program.py")
    (line,) = [x for x in r.stdout.splitlines() if "gpusizer-no-overprovisioning on big-box" in x]
    assert line.strip().startswith("[mandatory] gpusizer")  # seen at preview and up alike, no "(at up only)"


@pytest.mark.slow
def test_spot_only_stack_passes_when_the_choice_is_spot(tmp_path):
    # The dev stack's group buys spot through its InstancesDistribution (0% on-demand); its launch template
    # carries no market type, which must not read as on-demand.
    cfg = tmp_path / "spot.json"
    cfg.write_text(
        json.dumps({"gpusizer-allowed-gpus": {"enforcementLevel": "mandatory", "allowed": [], "spotOnly": True}})
    )
    r = preview("--stack", "dev", "--policy-config", cfg)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 mandatory violation(s): preview passed" in r.stdout


@pytest.mark.slow
def test_a_first_preview_sends_unknown_ids_and_the_right_sized_stack_still_passes():
    config = yaml.safe_load((REPO / "stacks/Pulumi.dev.yaml").read_text())["config"]
    recorder, _ = mocks.run_program(
        lambda: runpy.run_path(str(REPO / "__main__.py"), run_name="__main__") and None, config, preview=True
    )
    lt = next(r for r in recorder.resources if r.typ == "aws:ec2/launchTemplate:LaunchTemplate")
    assert analyzer.wire(lt.inputs)["iamInstanceProfile"]["arn"] == view.STRING  # the profile does not exist yet
    resources = analyzer.recorded(recorder.resources)
    assert analyzer.analyze(resources, "dev") == []


def test_a_preview_plans_each_workload_once_across_both_runs_and_the_pack(monkeypatch):
    from gpusizer import planner
    from gpusizer.policies import offline

    calls = []
    real = planner.plan  # what gpusizer.plan and gpusizer.reuse.plan both call
    monkeypatch.setattr(planner, "plan", lambda *a, **kw: calls.append(a) or real(*a, **kw))
    exports, _, findings = offline.preview("hybrid", REPO / "stacks", REPO / "__main__.py", parallel=False)
    assert not [f for f in findings if f.level == "mandatory"]
    # Without reuse: twice per workload (preview, up), plus the pack's re-plans. Each distinct spec is planned
    # once: the workload's own, and (for a workload with placement pins) the same spec without them, which the
    # pack compares it with (issue 23: the need, not the pins).
    specs = [
        a[0].model_dump_json() if hasattr(a[0], "model_dump_json") else json.dumps(a[0], sort_keys=True) for a in calls
    ]
    assert len(exports) == 2 and len(specs) == len(set(specs)) <= 2 * len(exports)


def test_the_phases_run_at_once_or_in_turn_with_the_same_result():
    from gpusizer.policies import offline

    def run(parallel):
        exports, resources, findings = offline.preview("overprovisioned", HERE, HERE / "program.py", parallel=parallel)
        return sorted(exports), [(r.typ, r.name, r.urn) for r in resources], findings

    at_once, in_turn = run(True), run(False)
    assert at_once == in_turn
    (finding,) = at_once[2]
    assert finding.policy == "gpusizer-no-overprovisioning" and finding.phases == ("preview", "up")


def test_a_forked_phase_that_fails_fails_the_preview_with_its_message(tmp_path):
    program = tmp_path / "program.py"
    program.write_text("import pulumi\nraise pulumi.RunError('no such network: vpc-123')\n")
    for serial in ((), ("--serial",)):
        r = preview("--stack", "hybrid", "--program", program, *serial)
        assert r.returncode == 2 and "no such network: vpc-123" in r.stderr and "Traceback" not in r.stderr


def test_a_misspelt_policy_in_the_config_exits_2_instead_of_passing(tmp_path):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"gpusizer-alowed-gpus": {"enforcementLevel": "mandatory", "allowed": ["L4"]}}))
    r = preview("--stack", "dev", "--policy-config", cfg)
    assert r.returncode == 2 and "gpusizer-allowed-gpus" in r.stderr and "Traceback" not in r.stderr
