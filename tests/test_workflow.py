"""The copyable PR workflow: valid for GitHub Actions, costs base vs head, one comment, and still gates on the pack."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO

WORKFLOW = REPO / ".github/workflows/gpusizer-preview.yml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


@pytest.fixture(scope="module")
def steps(workflow) -> list[dict]:
    return workflow["jobs"]["preview"]["steps"]


def _index(steps, pattern: str) -> int:
    """Position of the first step whose `run` matches `pattern` (regex)."""
    return next(i for i, s in enumerate(steps) if re.search(pattern, s.get("run", "")))


def test_validates_against_github_actions_workflow_schema():
    # SchemaStore's github-workflow schema, vendored by check-jsonschema (read offline).
    r = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_runs_on_pull_requests_with_least_privilege_for_one_comment(workflow):
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as true
    assert "pull_request" in on and "pull_request_target" not in on  # never run PR code with a write token of the base
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write", "id-token": "write"}


def test_actions_used_are_pinned_to_a_major_version(steps):
    uses = [s["uses"] for s in steps if "uses" in s]
    assert {u.split("@")[0] for u in uses} == {
        "actions/checkout",
        "actions/setup-python",
        "actions/upload-artifact",
        "aws-actions/configure-aws-credentials",
        "pulumi/actions",
    }
    assert all(re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+", u) for u in uses)
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0  # the base commit is needed too


def test_previews_base_and_head_of_the_stack_under_review_and_diffs_them(workflow, steps):
    env = workflow["jobs"]["preview"]["env"]
    assert env["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    base = steps[_index(steps, r'worktree add "\$RUNNER_TEMP/base" "\$BASE_SHA"')]["run"]
    assert 'gpusizer preview --stack "$STACK" --format json > "$RUNNER_TEMP/base.json"' in base
    head = steps[_index(steps, r'gpusizer preview --stack "\$STACK" --format json > "\$RUNNER_TEMP/head.json"')]["run"]
    assert "stacks/examples" not in head + base  # the stack, not the example specs
    diff = _index(steps, r'gpusizer diff "\$RUNNER_TEMP/base.json" "\$RUNNER_TEMP/head.json" --format markdown')
    assert diff > _index(steps, "head.json")


def test_policy_pack_gets_its_own_venv_before_the_real_pulumi_preview(steps):
    venv = _index(steps, r"python -m venv venv && venv/bin/pip install -r requirements.txt")
    assert steps[venv]["working-directory"] == "policies"  # requirements.txt installs `-e ..` relative to it
    gate = _index(steps, r"pulumi preview --stack \"\$STACK\" --policy-pack policies")
    assert venv < gate
    assert steps[gate]["id"] == "gate" and steps[gate]["continue-on-error"] is True
    assert "set -o pipefail" in steps[gate]["run"]  # tee must not hide pulumi's exit code


def test_one_comment_found_by_a_hidden_marker_is_edited_in_place(steps):
    i = _index(steps, "<!-- gpusizer-preview -->")
    comment = steps[i]
    assert comment["if"] == "always()"
    run = comment["run"]
    assert 'startswith(\\"$marker\\")' in run
    assert re.search(r"gh api --method PATCH \"repos/\$GITHUB_REPOSITORY/issues/comments/\$id\"", run)
    assert "gh pr comment" not in run  # a new comment on every push is what this replaces


def test_a_mandatory_violation_still_fails_the_job_after_commenting(steps):
    last = steps[-1]
    assert last["if"] == "steps.gate.outcome == 'failure'"
    assert "exit 1" in last["run"]
    assert _index(steps, "<!-- gpusizer-preview -->") < len(steps) - 1
