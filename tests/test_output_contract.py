"""The versioned output contract: every document the CLI writes carries `version` and holds to its model;
`gpusizer diff` refuses a document it cannot read by naming the field, and a version it does not know."""

from __future__ import annotations

import json

import jsonschema
import pytest

import gpusizer
from gpusizer.contract import OUTPUT_VERSION, output
from tests import conftest
from tests.conftest import REPO

CHAT = REPO / "stacks/examples/chat-8b.yaml"


def _json(*args):
    r = conftest.cli(*args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def plan_doc():
    return _json("plan", CHAT, "--format", "json", "--all")


def test_plan_and_estimate_json_carry_the_version_and_hold_to_their_models(plan_doc):
    assert plan_doc["version"] == OUTPUT_VERSION
    output.Plan.model_validate(plan_doc)
    jsonschema.validate(plan_doc, output.json_schema("plan"))  # the schema `gpusizer schema --output plan` prints
    est = _json("estimate", CHAT, "--format", "json")
    assert est["version"] == OUTPUT_VERSION
    output.Estimate.model_validate(est)


def test_diff_json_carries_the_version_and_holds_to_its_model(tmp_path, plan_doc):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(plan_doc))
    doc = _json("diff", path, path, "--format", "json")
    assert doc["version"] == OUTPUT_VERSION
    output.Diff.model_validate(doc)
    jsonschema.validate(doc, output.json_schema("diff"))


@pytest.mark.parametrize("kind", ["plan", "estimate", "preview", "diff"])
def test_schema_output_prints_each_documents_json_schema(kind):
    schema = _json("schema", "--output", kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "version" in schema["properties"]


def test_an_unversioned_document_from_before_the_contract_is_read_as_version_0(tmp_path, plan_doc):
    old = {k: v for k, v in plan_doc.items() if k != "version"}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    new = tmp_path / "new.json"
    new.write_text(json.dumps(plan_doc))
    r = conftest.cli("diff", path, new)
    assert r.returncode == 0, r.stderr
    assert "unchanged" in r.stdout


@pytest.mark.parametrize("version", ["2", 1, "1.0", None])
def test_diff_refuses_a_version_it_does_not_know(tmp_path, plan_doc, version):
    path = tmp_path / "future.json"
    path.write_text(json.dumps({**plan_doc, "version": version}))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(plan_doc))
    r = conftest.cli("diff", good, path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("gpusizer: error: HEAD: version") and "To fix" in r.stderr


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d["choice"].pop("hourly_usd"), "choice.hourly_usd"),
        (lambda d: d["choice"].update(hourly_usd="cheap"), "choice.hourly_usd"),
        (lambda d: d["choice"].update(replicas=0), "choice.replicas"),
        (lambda d: d["choice"].update(replicas=1.5), "choice.replicas"),
        (lambda d: d["choice"].update(provider=None), "choice.provider"),
        (lambda d: d.update(candidates=[{"provider": "aws"}]), "candidates.0"),
        (lambda d: d.update(workload=7), "workload"),
        (lambda d: d["choice"].update(monthly_usd=-1.0), "choice.monthly_usd"),
    ],
)
def test_diff_names_the_field_of_a_wrong_plan(tmp_path, plan_doc, mutate, field):
    bad = json.loads(json.dumps(plan_doc))
    mutate(bad)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(plan_doc))
    r = conftest.cli("diff", path, good)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert r.stderr.startswith("gpusizer: error: BASE:") and field in r.stderr, r.stderr


def test_a_pull_request_comment_is_cut_below_githubs_limit_with_a_link(tmp_path, tiny_catalog):
    # 300 workloads x ~250 characters of markdown each: well past 65,536 characters.
    plan = gpusizer.document(
        gpusizer.plan({"name": "w", "model": {"name": "llama-3.1-8b"}}, catalog=tiny_catalog), top=1
    )
    doc = {"version": OUTPUT_VERSION, "workloads": {f"w{i:03}": {**plan, "workload": f"w{i:03}"} for i in range(300)}}
    base = tmp_path / "b.json"
    base.write_text(json.dumps(doc))
    full = conftest.cli("diff", base, base, "--format", "markdown")
    assert len(full.stdout) > 65_536
    r = conftest.cli(
        "diff",
        base,
        base,
        "--format",
        "markdown",
        "--max-chars",
        "50000",
        "--full-report",
        "https://github.example/run/7",
    )
    assert r.returncode == 0
    body = r.stdout.rstrip("\n")
    assert len(body) <= 50_000 and full.stdout.startswith(body.rsplit("\n\n_Truncated", 1)[0])
    assert body.endswith(
        f"of {len(full.stdout.rstrip(chr(10))):,} characters shown. The full report: https://github.example/run/7_"
    )
