"""AWS path under Pulumi mocks: types, key inputs, secure defaults, failover order, outputs."""

from __future__ import annotations

import json

import gpusizer
from components import GpuWorkload
from gpusizer import metadata
from tests.components.conftest import run_program

CHAT = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"batch_size": 4},
        "placement": {"providers": ["aws"], "regions": ["us-east-1"]}}


def _outputs(w: GpuWorkload):
    return pulumi_all(w.instance_type, w.hourly_usd, w.decision)


def pulumi_all(*outs):
    import pulumi

    return pulumi.Output.all(*outs)


def test_single_instance_is_right_sized_and_secure():
    plan = gpusizer.plan(CHAT)
    seen = {}

    def prog():
        w = GpuWorkload("chat", CHAT)
        return _outputs(w).apply(lambda v: seen.update(instance_type=v[0], hourly=v[1], decision=v[2]))

    mocks, _ = run_program(prog)
    lt = mocks.one("aws:ec2/launchTemplate:LaunchTemplate")
    inst = mocks.one("aws:ec2/instance:Instance")
    assert lt["instanceType"] == inst["instanceType"] == plan.chosen.offer.instance_type
    assert lt["metadataOptions"]["httpTokens"] == inst["metadataOptions"]["httpTokens"] == "required"
    ebs = lt["blockDeviceMappings"][0]["ebs"]
    assert (ebs["volumeType"], ebs["encrypted"], ebs["volumeSize"]) == ("gp3", "true", plan.workload.disk_gib)
    assert inst["rootBlockDevice"]["encrypted"] is True
    assert lt["imageId"] == "ami-0dlami00000000001"
    sg = mocks.one("aws:ec2/securityGroup:SecurityGroup")
    assert not sg.get("ingress")  # no inbound rule at all
    policy = mocks.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment")["policyArn"]
    assert policy.endswith("AmazonSSMManagedInstanceCore")
    for res in (lt, inst):
        assert res["tags"][metadata.AWS_REQUIRED] == f"{plan.required_gpu_memory_gib:.2f}"
        assert res["tags"][metadata.AWS_WORKLOAD] == "chat"
    assert {t["resourceType"] for t in lt["tagSpecifications"]} == {"instance", "volume"}
    assert "instanceMarketOptions" not in inst or not inst["instanceMarketOptions"]
    assert seen["instance_type"] == plan.chosen.offer.instance_type
    assert seen["decision"]["choice"]["instance_type"] == plan.chosen.offer.instance_type
    assert seen["hourly"] == round(plan.chosen.hourly_usd, 4)


def test_spot_choice_uses_market_options():
    spec = {**CHAT, "placement": {**CHAT["placement"], "purchase": "spot"}}
    mocks, _ = run_program(lambda: GpuWorkload("chat", spec).instance_type)
    inst = mocks.one("aws:ec2/instance:Instance")
    assert inst["instanceMarketOptions"]["marketType"] == "spot"


def test_failover_group_lists_adequate_types_in_rank_order():
    spec = {**CHAT, "deploy": {"capacity_failover": True, "failover_types": 3, "replicas": 2}}
    plan = gpusizer.plan(spec)
    mocks, _ = run_program(lambda: GpuWorkload("chat", spec).instance_type)
    asg = mocks.one("aws:autoscaling/group:Group")
    policy = asg["mixedInstancesPolicy"]
    overrides = [o["instanceType"] for o in policy["launchTemplate"]["overrides"]]
    assert overrides == [c.offer.instance_type for c in plan.failover(3)]
    assert len(overrides) == 3 and overrides[0] == plan.chosen.offer.instance_type
    assert policy["instancesDistribution"]["onDemandAllocationStrategy"] == "prioritized"
    assert asg["desiredCapacity"] == asg["minSize"] == asg["maxSize"] == 2
    assert asg["vpcZoneIdentifiers"] == ["subnet-a", "subnet-b"]
    tags = {t["key"]: t["value"] for t in asg["tags"]}
    assert tags[metadata.AWS_REQUIRED] == f"{plan.required_gpu_memory_gib:.2f}"
    assert not mocks.of_type("aws:ec2/instance:Instance")


def test_spot_failover_is_price_capacity_optimized():
    spec = {**CHAT, "placement": {**CHAT["placement"], "purchase": "spot"}, "deploy": {"capacity_failover": True}}
    mocks, _ = run_program(lambda: GpuWorkload("chat", spec).instance_type)
    dist = mocks.one("aws:autoscaling/group:Group")["mixedInstancesPolicy"]["instancesDistribution"]
    assert dist["spotAllocationStrategy"] == "price-capacity-optimized"
    assert dist["onDemandPercentageAboveBaseCapacity"] == 0


def test_invalid_spec_provisions_nothing_and_names_the_field():
    bad = {**CHAT, "inference": {"batch_size": 0}}
    errors = []

    def prog():
        try:
            GpuWorkload("chat", bad)
        except gpusizer.SpecError as e:
            errors.append(e)

    mocks, _ = run_program(prog)
    assert errors and errors[0].field == "inference.batch_size"
    assert [r.typ for r in mocks.resources] == []


def test_infeasible_spec_provisions_nothing():
    spec = {**CHAT, "model": {"name": "llama-3.1-405b"}, "placement": {"providers": ["aws"], "max_hourly_usd": 1}}
    errors = []

    def prog():
        try:
            GpuWorkload("big", spec)
        except gpusizer.SizingError as e:
            errors.append(str(e))

    mocks, _ = run_program(prog)
    assert errors and "no feasible offer" in errors[0]
    assert mocks.resources == []


def test_decision_output_is_the_plan_json():
    seen = {}
    run_program(lambda: GpuWorkload("chat", CHAT).decision.apply(seen.update))
    assert seen["workload"] == "chat"
    assert json.dumps(seen)  # serialisable into the stack state
    assert len(seen["candidates"]) <= 20 and seen["candidates_total"] >= len(seen["candidates"])
