"""AWS path under Pulumi mocks: types, key inputs, secure defaults, failover order, regions, outputs."""

from __future__ import annotations

import json

import pytest

import gpusizer
from components import AwsNetwork, GpuWorkload, GpuWorkloadArgs, InfeasibleWorkloadError, aws, tags
from gpusizer.catalog import Catalog
from tests.components.conftest import AMI_ID, parent_type, run_program
from tests.conftest import make_offer

CHAT = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"batch_size": 4},
        "placement": {"providers": ["aws"], "regions": ["us-east-1"]}}
HERE = GpuWorkloadArgs(aws_region="us-east-1")  # the stack's default provider is in us-east-1
LT = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
ASG = "aws:autoscaling/group:Group"


def _with(spec: dict, **sections) -> dict:
    out = dict(spec)
    for key, value in sections.items():
        out[key] = {**spec.get(key, {}), **value}
    return out


def test_single_instance_is_right_sized_and_secure():
    plan = gpusizer.plan(CHAT)
    c = plan.chosen
    mocks, exports, seen = run_program(lambda: _export(GpuWorkload("chat", CHAT, args=HERE)))
    lt, inst = mocks.one(LT), mocks.one(INSTANCE)
    assert lt["instanceType"] == inst["instanceType"] == c.offer.instance_type
    assert lt["imageId"] == AMI_ID
    for meta in (lt["metadataOptions"], inst["metadataOptions"]):
        assert (meta["httpTokens"], meta["httpPutResponseHopLimit"]) == ("required", 2)
    (mapping,) = lt["blockDeviceMappings"]
    assert mapping["deviceName"] == "/dev/sda1"  # the AMI's root device, so the root volume is resized
    assert mapping["ebs"] == {"volumeSize": plan.workload.disk_gib, "volumeType": "gp3", "encrypted": "true",
                              "deleteOnTermination": "true"}
    root = inst["rootBlockDevice"]
    assert (root["volumeSize"], root["volumeType"], root["encrypted"]) == (plan.workload.disk_gib, "gp3", True)
    assert not inst.get("instanceMarketOptions") and not lt.get("instanceMarketOptions")
    assert inst["subnetId"] == "subnet-a"  # the default VPC's subnets, in a stable (sorted) order
    # No inbound rule at all; egress open; SSM is the only way in.
    sg = mocks.one("aws:ec2/securityGroup:SecurityGroup")
    assert not sg.get("ingress")
    assert sg["egress"] == [{"protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": ["0.0.0.0/0"]}]
    assert sg["vpcId"] == "vpc-0default"
    role = mocks.one("aws:iam/role:Role")
    trust = json.loads(role["assumeRolePolicy"])["Statement"]
    assert [s["Principal"] for s in trust] == [{"Service": "ec2.amazonaws.com"}]
    assert mocks.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment")["policyArn"] == aws.SSM_POLICY
    assert not mocks.of_type("aws:iam/rolePolicy:RolePolicy")
    assert lt["iamInstanceProfile"]["arn"].endswith("chat-aws-profile")
    # Sizing tags (docs/contract.md section 3) on the template, what it launches, and the instance.
    for res_tags in [lt["tags"], inst["tags"], sg["tags"], *(t["tags"] for t in lt["tagSpecifications"])]:
        assert float(res_tags[tags.AWS_REQUIRED]) == plan.required_gpu_memory_gib  # decimal GiB
        assert res_tags[tags.AWS_WORKLOAD] == "chat"
        assert res_tags[tags.AWS_INSTANCE_TYPE] == c.offer.instance_type
    assert {t["resourceType"] for t in lt["tagSpecifications"]} == {"instance", "volume", "network-interface"}
    assert not mocks.of_type("pulumi:providers:aws")  # the choice is in the default provider's region
    assert seen["chat"] == {"instance_type": c.offer.instance_type, "hourly_usd": round(c.hourly_usd, 4),
                            "instance_id": "chat-aws-instance-id", "asg_name": None, "decision": seen["chat"]["decision"]}
    assert seen["chat"]["decision"]["choice"]["instance_type"] == c.offer.instance_type


def test_every_resource_is_parented_under_the_workload():
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", CHAT, args=HERE))
    by_type = {r.typ: parent_type(r) for r in mocks.resources}
    assert by_type.pop("gpusizer:index:GpuWorkload") == "pulumi:pulumi:Stack"
    assert by_type.pop("gpusizer:aws:GpuCapacity") == "gpusizer:index:GpuWorkload"
    assert set(by_type.values()) == {"gpusizer:aws:GpuCapacity"}


def test_spot_choice_uses_market_options():
    spec = _with(CHAT, placement={"purchase": "spot"})
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=HERE))
    for res in (mocks.one(INSTANCE), mocks.one(LT)):
        assert res["instanceMarketOptions"] == {"marketType": "spot", "spotOptions": {
            "instanceInterruptionBehavior": "terminate", "spotInstanceType": "one-time"}}
    assert mocks.one(INSTANCE)["tags"][tags.AWS_PURCHASE] == "spot"


def test_failover_group_lists_adequate_types_in_rank_order():
    spec = _with(CHAT, deploy={"capacity_failover": True, "failover_types": 3, "replicas": 2})
    plan = gpusizer.plan(spec)
    mocks, _, seen = run_program(lambda: _export(GpuWorkload("chat", spec, args=HERE)))
    asg = mocks.one(ASG)
    policy = asg["mixedInstancesPolicy"]
    overrides = [o["instanceType"] for o in policy["launchTemplate"]["overrides"]]
    assert overrides == [c.offer.instance_type for c in plan.failover(3)]
    assert len(set(overrides)) == 3 and overrides[0] == plan.chosen.offer.instance_type
    dist = policy["instancesDistribution"]
    assert dist["onDemandAllocationStrategy"] == "prioritized"  # launches in override (rank) order
    assert (dist["onDemandBaseCapacity"], dist["onDemandPercentageAboveBaseCapacity"]) == (2, 100)
    assert asg["desiredCapacity"] == asg["minSize"] == asg["maxSize"] == 2
    assert asg["vpcZoneIdentifiers"] == ["subnet-a", "subnet-b", "subnet-c"]  # every zone of the region
    group_tags = {t["key"]: t for t in asg["tags"]}
    assert float(group_tags[tags.AWS_REQUIRED]["value"]) == plan.required_gpu_memory_gib
    assert float(group_tags[tags.AWS_HOURLY_USD]["value"]) == pytest.approx(plan.chosen.hourly_usd, abs=1e-4)
    assert not any(t["propagateAtLaunch"] for t in asg["tags"])  # instances get per-node tags from the template
    assert not mocks.one(LT).get("instanceMarketOptions")  # a mixed-instances group rejects them
    assert not mocks.of_type(INSTANCE)
    assert seen["chat"]["asg_name"].startswith("chat-aws-asg")


def test_failover_never_falls_to_an_inadequate_type(tiny_catalog):
    # 8B bf16 with 4 x 8k of KV cache needs ~19 GiB: a 15 GiB T4 is cheapest and inadequate.
    spec = _with(CHAT, deploy={"capacity_failover": True, "failover_types": 10})
    plan = gpusizer.plan(spec, catalog=tiny_catalog)
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs(
        aws_region="us-east-1", catalog=tiny_catalog)))
    overrides = [o["instanceType"] for o in mocks.one(ASG)["mixedInstancesPolicy"]["launchTemplate"]["overrides"]]
    assert "g4dn.xlarge" not in overrides
    assert overrides == [c.offer.instance_type for c in plan.failover(10)]
    usable = {c.offer.instance_type: c.fit.usable_gib for c in plan.feasible}
    assert all(usable[t] >= plan.chosen.fit.need_gib for t in overrides)


def test_spot_failover_is_price_capacity_optimized():
    spec = _with(CHAT, placement={"purchase": "spot"}, deploy={"capacity_failover": True})
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=HERE))
    asg = mocks.one(ASG)
    dist = asg["mixedInstancesPolicy"]["instancesDistribution"]
    assert dist["spotAllocationStrategy"] == "price-capacity-optimized"
    assert (dist["onDemandBaseCapacity"], dist["onDemandPercentageAboveBaseCapacity"]) == (0, 0)
    assert asg["capacityRebalance"] is True


def test_replicas_without_failover_keep_to_the_chosen_type():
    spec = _with(CHAT, deploy={"replicas": 3})
    plan = gpusizer.plan(spec)
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=HERE))
    asg = mocks.one(ASG)
    assert [o["instanceType"] for o in asg["mixedInstancesPolicy"]["launchTemplate"]["overrides"]] == [
        plan.chosen.offer.instance_type]
    assert asg["desiredCapacity"] == 3


def test_choice_in_another_region_gets_a_regional_provider():
    spec = _with(CHAT, placement={"regions": ["us-east-2"]})
    plan = gpusizer.plan(spec)
    assert plan.chosen.offer.region == "us-east-2"
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=HERE))
    (provider,) = mocks.of_type("pulumi:providers:aws")
    assert provider.inputs["region"] == "us-east-2"
    ref = f"{provider.urn}::{provider.name}-id"
    aws_resources = [r for r in mocks.resources if r.typ.startswith("aws:")]
    assert aws_resources and all(r.provider == ref for r in aws_resources)
    assert {c.provider for c in mocks.calls} == {ref}  # the AMI and subnets are looked up in us-east-2
    if plan.chosen.offer.zone:  # priced per zone: the instance goes to that zone's subnet
        assert mocks.one(INSTANCE)["subnetId"] == f"subnet-{plan.chosen.offer.zone}"


def test_configured_network_replaces_the_default_vpc():
    spec = _with(CHAT, deploy={"replicas": 2})
    net = AwsNetwork(vpc_id="vpc-0abc", subnet_ids=["subnet-1", "subnet-2"])
    args = GpuWorkloadArgs(aws_region="us-east-1", aws_networks={"us-east-1": net})
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=args))
    assert mocks.one("aws:ec2/securityGroup:SecurityGroup")["vpcId"] == "vpc-0abc"
    assert mocks.one(ASG)["vpcZoneIdentifiers"] == ["subnet-1", "subnet-2"]
    assert not mocks.invoked("aws:ec2/getVpc:getVpc") and not mocks.invoked("aws:ec2/getSubnets:getSubnets")


def test_dlami_is_looked_up_by_owner_and_name_unless_overridden():
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", CHAT, args=HERE))
    (call,) = mocks.invoked("aws:ec2/getAmi:getAmi")
    assert call.args["owners"] == ["amazon"] and call.args["mostRecent"] is True
    assert {f["name"]: f["values"] for f in call.args["filters"]} == {
        "name": [aws.DLAMI_NAME], "architecture": ["x86_64"]}
    spec = _with(CHAT, deploy={"machine_image": "ami-0123456789abcdef0"})
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=HERE))
    (call,) = mocks.invoked("aws:ec2/getAmi:getAmi")
    assert call.args["filters"] == [{"name": "image-id", "values": ["ami-0123456789abcdef0"]}]
    spec = _with(CHAT, deploy={"machine_image": "resolve:ssm:/my/ami"})
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=HERE))
    assert mocks.one(LT)["imageId"] == "resolve:ssm:/my/ami" and not mocks.invoked("aws:ec2/getAmi:getAmi")


def test_multi_node_training_gets_efa_and_a_cluster_placement_group():
    catalog = Catalog((make_offer("p5.4xlarge", "H100", 1, 79.65, 6.88, fabric="efa", network_gbps=100),))
    spec = {"name": "train", "model": {"name": "llama-3.1-8b"}, "task": "training",
            "training": {"sequence_length": 2048}, "placement": {"providers": ["aws"]}}
    plan = gpusizer.plan(spec, catalog=catalog)
    assert plan.chosen.nodes > 1
    mocks, _, _ = run_program(lambda: GpuWorkload("train", spec, args=GpuWorkloadArgs(
        aws_region="us-east-1", catalog=catalog)))
    asg = mocks.one(ASG)
    assert asg["desiredCapacity"] == plan.chosen.nodes
    assert asg["placementGroup"].startswith("train-aws-pg")
    assert mocks.one("aws:ec2/placementGroup:PlacementGroup")["strategy"] == "cluster"
    assert len(asg["vpcZoneIdentifiers"]) == 1  # a cluster placement group lives in one zone
    (nic,) = mocks.one(LT)["networkInterfaces"]
    assert nic["interfaceType"] == "efa"
    (rule,) = mocks.one("aws:ec2/securityGroup:SecurityGroup")["ingress"]
    assert rule["self"] is True and not rule.get("cidrBlocks")  # only the group's own members


def test_invalid_spec_provisions_nothing_and_names_the_field():
    bad = _with(CHAT, inference={"batch_size": 0})
    errors = []

    def prog():
        try:
            GpuWorkload("chat", bad, args=HERE)
        except gpusizer.SpecError as e:
            errors.append(e)

    mocks, _, _ = run_program(prog)
    assert errors[0].field == "inference.batch_size"
    assert "inference.batch_size" in str(errors[0])
    assert mocks.resources == [] and mocks.calls == []


def test_infeasible_spec_provisions_nothing():
    spec = {**CHAT, "model": {"name": "llama-3.1-405b"}, "placement": {"providers": ["aws"], "max_hourly_usd": 1}}
    errors = []

    def prog():
        try:
            GpuWorkload("big", spec, args=HERE)
        except InfeasibleWorkloadError as e:
            errors.append(e)

    mocks, _, _ = run_program(prog)
    assert "no feasible offer" in str(errors[0]) and "To fix" in str(errors[0])
    assert errors[0].decision.chosen is None
    assert mocks.resources == []


def test_decision_output_is_the_plan_json_trimmed():
    _, _, seen = run_program(lambda: _export(GpuWorkload("chat", CHAT, args=HERE)))
    d = seen["chat"]["decision"]
    assert {"workload", "requirements", "choice", "candidates"} <= set(d)
    assert d["workload"] == "chat" and d["requirements"]["memory_gib"]["total"] > 0
    # The top 20 feasible ones, then the cheapest rejected one of each reason; every rejection counted.
    feasible = [c for c in d["candidates"] if c["feasible"]]
    rejected = [c for c in d["candidates"] if not c["feasible"]]
    assert len(feasible) == 20 and d["candidates"][:20] == feasible
    assert sorted(c["reason_code"] for c in rejected) == sorted(d["rejections_by_reason"])
    assert len(d["candidates"]) < sum(d["rejections_by_reason"].values()) < d["candidates_total"]
    assert json.dumps(d)  # serialisable into the stack state


def _export(w: GpuWorkload) -> None:
    import pulumi

    pulumi.export(w._name, {"instance_type": w.instance_type, "hourly_usd": w.hourly_usd, "decision": w.decision,
                            **{k: w.ids[k] for k in ("instance_id", "asg_name") if k in w.ids}})
