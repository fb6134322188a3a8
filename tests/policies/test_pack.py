"""The pack's shape: policies as data, config from one model each, the private analyzer behind a version check."""

from __future__ import annotations

import importlib.metadata

import pytest

from gpusizer.base import errors
from gpusizer.contract import audit
from gpusizer.policies import analyzer, budget, pack, rules, sizing, view


def test_every_rule_is_one_sdk_policy_with_its_schema_and_level():
    built = {p.name: p for p in pack.policies()}
    assert list(built) == [r.name for r in rules.RULES]
    for r in rules.RULES:
        assert built[r.name].enforcement_level.value == r.level
        schema = built[r.name].config_schema
        assert (schema.properties if schema else {}) == r.schema()


def test_config_defaults_come_from_the_model():
    assert rules.BY_NAME["gpusizer-no-overprovisioning"].settings(None).max_ratio == 2.0
    assert rules.BY_NAME["gpusizer-allowed-gpus"].settings({"allowed": ["l4", "nvidia-a10g"]}).allowed == ["L4", "A10G"]


@pytest.mark.parametrize(
    "name, config, words",
    [
        ("gpusizer-no-overprovisioning", {"maxRatio": 0.5}, "maxRatio"),
        ("gpusizer-no-overprovisioning", {"maxRatio": "2"}, "maxRatio"),
        ("gpusizer-allowed-gpus", {"allowed": ["Z9000"]}, "unknown GPU 'Z9000'"),
        ("gpusizer-allowed-gpus", {"spotOnly": "yes"}, "spotOnly"),
        ("gpusizer-cost-ceiling", {"maxHourlyUsd": -1}, "maxHourlyUsd"),
        ("gpusizer-gpu-budget", {"maxHourlyUSD": 5}, "maxHourlyUSD"),
    ],
)
def test_bad_config_names_the_policy_and_the_key(name, config, words):
    with pytest.raises(ValueError) as e:
        rules.BY_NAME[name].settings(config)
    assert name in str(e.value) and words in str(e.value)


def test_the_private_analyzer_is_refused_on_an_unchecked_pulumi_policy(monkeypatch):
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda d: "1.22.0" if d == "pulumi-policy" else real(d))
    with pytest.raises(errors.SizingError) as e:
        analyzer.servicer()
    assert "pulumi-policy 1.22.0" in str(e.value) and "To fix" in str(e.value)


def test_budget_counts_a_managed_instance_group_at_its_target_size():
    tmpl = "urn:pulumi:s::p::gcp:compute/instanceTemplate:InstanceTemplate::t"
    mig = "urn:pulumi:s::p::gcp:compute/instanceGroupManager:InstanceGroupManager::g"
    stack = [
        sizing.StackResource(
            "gcp:compute/instanceTemplate:InstanceTemplate", view.View({"machineType": "g2-standard-4"}), tmpl
        ),
        sizing.StackResource(
            "gcp:compute/instanceGroupManager:InstanceGroupManager",
            view.View({"targetSize": 3, "versions": [{"instanceTemplate": view.STRING}]}),
            mig,
            dependencies=(tmpl,),
        ),
    ]
    by_urn = {r.urn: r for r in stack}
    one = budget.hourly(
        sizing.StackResource("gcp:compute/instance:Instance", view.View({"machineType": "g2-standard-4"}), "urn:i"), {}
    )
    assert budget.hourly(stack[1], by_urn) == pytest.approx(3 * one)
    assert budget.hourly(stack[0], by_urn) is None


def test_every_gpu_family_in_the_reference_data_is_an_accelerator_family():
    # DescribeInstanceTypes GPU rows (data/catalog-sources) and GCP GPU machines: a family missing from
    # policies/accelerator_families.yaml would read as "not a GPU" once the catalog lacks one of its types.
    import csv

    from gpusizer.policies import shapes
    from tests.conftest import DATA

    with open(DATA / "catalog-sources/aws-gpu-instances-us-east-1.csv") as f:
        aws = {shapes.aws_family(row["instance"]) for row in csv.DictReader(f)}
    # GCP's source lists GPUs as rows of their own; the engine's catalog names the machines that carry them.
    gcp = {shapes.gcp_family(t) for t in audit.types_of("gcp") if "+" not in t}
    assert aws and gcp
    assert aws <= shapes.families()["aws"], aws - shapes.families()["aws"]
    assert gcp <= shapes.families()["gcp"], gcp - shapes.families()["gcp"]


@pytest.mark.parametrize(
    "config, words",
    [
        ({"gpusizer-alowed-gpus": {"enforcementLevel": "mandatory"}}, "did you mean 'gpusizer-allowed-gpus'"),
        ({"gpusizer-allowed-gpus": {"enforcementLevel": "mandatry"}}, "enforcementLevel 'mandatry': use one of"),
        ({"gpusizer-cost-ceiling": {"maxHourlyUsd": "five"}}, "maxHourlyUsd"),
        ([{"gpusizer-cost-ceiling": {}}], "must be a JSON object"),
    ],
)
def test_a_policy_config_the_pack_would_misread_is_refused_before_any_run(config, words):
    # A misspelt policy name configured nothing: the policy stayed at its default and the gate passed.
    with pytest.raises(errors.SpecError, match="--policy-config") as info:
        rules.validate_config(config)
    assert words in str(info.value)


def test_a_valid_policy_config_passes_validation():
    rules.validate_config(
        {
            "gpusizer-allowed-gpus": "mandatory",
            "gpusizer-no-overprovisioning": {"maxRatio": 3},
            "gpusizer-gpu-budget": {"enforcementLevel": "disabled"},
        }
    )


def test_the_config_levels_are_the_engines():
    from pulumi.runtime.proto import analyzer_pb2

    assert set(rules.LEVELS) == {k.lower() for k in analyzer_pb2.EnforcementLevel.keys()}


def test_all_sets_every_policys_level_and_a_policys_own_wins():
    rules.validate_config({"all": "advisory", "gpusizer-gpu-budget": {"maxHourlyUsd": 1}})
    found = analyzer.analyze(
        [
            (
                "aws:ec2/instance:Instance",
                "r",
                {"instanceType": "p5.48xlarge", "tags": {"gpusizer:required-gpu-memory-gib": "20"}},
            )
        ],
        "test",
        {"all": "advisory", "gpusizer-secure-gpu-hosts": "mandatory"},
    )
    levels = {f.policy: f.level for f in found}
    assert levels["gpusizer-no-overprovisioning"] == "advisory" and levels["gpusizer-require-imdsv2"] == "advisory"
    assert levels["gpusizer-secure-gpu-hosts"] == "mandatory"
    with pytest.raises(errors.SpecError, match="all: give an enforcementLevel alone"):
        rules.validate_config({"all": {"enforcementLevel": "advisory", "maxRatio": 3}})
