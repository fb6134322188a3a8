"""AWS path under Pulumi mocks: types, key inputs, secure defaults, failover order, regions, outputs."""

from __future__ import annotations

import json

import pytest

import gpusizer
from gpusizer.catalog import Catalog
from gpusizer.components import AwsNetwork, GpuWorkload, GpuWorkloadArgs, InfeasibleWorkloadError, aws, tags
from gpusizer.facts import images
from tests.components.conftest import AMI_ID, AMI_SNAPSHOT_GIB, Mocks, parent_type, run_program
from tests.conftest import make_offer

CHAT = {
    "name": "chat",
    "model": {"name": "llama-3.1-8b"},
    "inference": {"batch_size": 4},
    "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
}
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
    assert mapping["ebs"] == {
        "volumeSize": plan.workload.disk_gib,
        "volumeType": "gp3",
        "encrypted": "true",
        "deleteOnTermination": "true",
    }
    root = inst["rootBlockDevice"]
    assert (root["volumeSize"], root["volumeType"], root["encrypted"]) == (plan.workload.disk_gib, "gp3", True)
    assert not inst.get("instanceMarketOptions") and not lt.get("instanceMarketOptions")
    assert inst["subnetId"] == "subnet-a"  # the default VPC's subnets, in a stable (sorted) order
    # Inbound: only the server port, only from the load balancer's group; egress open; SSM for shells.
    (sg,) = [r.inputs for r in mocks.of_type("aws:ec2/securityGroup:SecurityGroup") if r.name == "chat-aws-sg"]
    (lb_sg,) = [r for r in mocks.of_type("aws:ec2/securityGroup:SecurityGroup") if r.name == "chat-aws-lb-sg"]
    assert sg["ingress"] == [
        {"protocol": "tcp", "fromPort": 8000, "toPort": 8000, "securityGroups": ["chat-aws-lb-sg-id"]}
    ]
    assert lb_sg.inputs["ingress"] == [
        {"protocol": "tcp", "fromPort": 8000, "toPort": 8000, "cidrBlocks": ["172.31.0.0/16"]}
    ]
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
    assert seen["chat"] == {
        "instance_type": c.offer.instance_type,
        "hourly_usd": round(c.hourly_usd, 4),
        "instance_id": "chat-aws-instance-id",
        "asg_name": None,
        "decision": seen["chat"]["decision"],
        "endpoint": "http://chat-aws-nlb-0123456789.elb.us-east-1.amazonaws.com:8000",
    }
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
        assert res["instanceMarketOptions"] == {
            "marketType": "spot",
            "spotOptions": {"instanceInterruptionBehavior": "terminate", "spotInstanceType": "one-time"},
        }
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
    mocks, _, _ = run_program(
        lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs(aws_region="us-east-1", catalog=tiny_catalog))
    )
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
        plan.chosen.offer.instance_type
    ]
    assert asg["desiredCapacity"] == 3


def test_choice_in_another_region_gets_a_regional_provider():
    spec = _with(CHAT, placement={"regions": ["us-east-2"]})
    plan = gpusizer.plan(spec)
    assert plan.chosen.offer.region == "us-east-2"
    zone = plan.chosen.offer.zone or "use2-az1"
    here = Mocks(subnet_zones={"subnet-use2-x": "use2-az9", f"subnet-{zone}": zone})
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=HERE), mocks=here)
    (provider,) = mocks.of_type("pulumi:providers:aws")
    assert provider.inputs["region"] == "us-east-2"
    ref = f"{provider.urn}::{provider.name}-id"
    aws_resources = [r for r in mocks.resources if r.typ.startswith("aws:")]
    assert aws_resources and all(r.provider == ref for r in aws_resources)
    assert {c.provider for c in mocks.calls} == {ref}  # the AMI, offerings and subnets are looked up in us-east-2
    assert mocks.one(INSTANCE)["subnetId"] == f"subnet-{zone}"  # the zone that was priced


def test_configured_network_replaces_the_default_vpc():
    spec = _with(CHAT, deploy={"replicas": 2})
    net = AwsNetwork(vpc_id="vpc-0abc", subnet_ids=["subnet-1", "subnet-2"])
    args = GpuWorkloadArgs(aws_region="us-east-1", aws_networks={"us-east-1": net})
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=args))
    assert {r.inputs["vpcId"] for r in mocks.of_type("aws:ec2/securityGroup:SecurityGroup")} == {"vpc-0abc"}
    assert mocks.one(ASG)["vpcZoneIdentifiers"] == ["subnet-1", "subnet-2"]
    # The VPC is read only by its id (its CIDR, for the load balancer's rule), never as the default VPC.
    assert [c.args for c in mocks.invoked("aws:ec2/getVpc:getVpc")] == [{"id": "vpc-0abc"}]
    (call,) = mocks.invoked("aws:ec2/getSubnets:getSubnets")  # only to keep the zones that offer the type
    assert {"name": "subnet-id", "values": ["subnet-1", "subnet-2"]} in call.args["filters"]


def test_dlami_is_looked_up_by_owner_and_name_unless_overridden():
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", CHAT, args=HERE))
    (call,) = mocks.invoked("aws:ec2/getAmi:getAmi")
    assert call.args["owners"] == ["amazon"] and call.args["mostRecent"] is True
    row = images.default_for("aws", gpusizer.plan(CHAT).chosen.offer.instance_type)
    assert {f["name"]: f["values"] for f in call.args["filters"]} == {"name": [row.name], "architecture": ["x86_64"]}
    assert call.args["owners"] == [row.owner] and "PyTorch 2.9" in row.name  # framework pinned in the name
    spec = _with(CHAT, deploy={"machine_image": "ami-0123456789abcdef0"})
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=HERE))
    (call,) = mocks.invoked("aws:ec2/getAmi:getAmi")
    assert call.args["filters"] == [{"name": "image-id", "values": ["ami-0123456789abcdef0"]}]
    spec = _with(CHAT, deploy={"machine_image": "resolve:ssm:/my/ami"})
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=HERE))
    assert mocks.one(LT)["imageId"] == "resolve:ssm:/my/ami" and not mocks.invoked("aws:ec2/getAmi:getAmi")


def test_multi_node_training_gets_efa_and_a_cluster_placement_group():
    catalog = Catalog((make_offer("p5.4xlarge", "H100", 1, 79.65, 6.88, fabric="efa", network_gbps=100),))
    spec = {
        "name": "train",
        "model": {"name": "llama-3.1-8b"},
        "task": "training",
        "training": {"sequence_length": 2048},
        "placement": {"providers": ["aws"]},
    }
    plan = gpusizer.plan(spec, catalog=catalog)
    assert plan.chosen.nodes > 1
    mocks, _, _ = run_program(
        lambda: GpuWorkload("train", spec, args=GpuWorkloadArgs(aws_region="us-east-1", catalog=catalog))
    )
    asg = mocks.one(ASG)
    assert asg["desiredCapacity"] == plan.chosen.nodes
    assert asg["placementGroup"].startswith("train-aws-pg")
    assert mocks.one("aws:ec2/placementGroup:PlacementGroup")["strategy"] == "cluster"
    assert len(asg["vpcZoneIdentifiers"]) == 1  # a cluster placement group lives in one zone
    (nic,) = mocks.one(LT)["networkInterfaces"]
    assert nic["interfaceType"] == "efa"
    (rule,) = mocks.one("aws:ec2/securityGroup:SecurityGroup")["ingress"]
    assert rule["self"] is True and not rule.get("cidrBlocks")  # only the group's own members


P5 = make_offer("p5.48xlarge", "H100", 8, 79.65, 55.04, fabric="efa", network_gbps=3200, nvlink=True)
PRETRAIN = {
    "name": "pretrain",
    "model": {"name": "llama-3.1-70b"},
    "task": "training",
    "training": {"sequence_length": 4096},
    "placement": {"providers": ["aws"]},
}


def test_instance_and_every_group_subnet_lie_in_the_zone_that_offers_the_type():
    # Three zones with a subnet each; EC2 offers the chosen type in one of them only.
    plan = gpusizer.plan(CHAT)
    itype = plan.chosen.offer.instance_type
    assert plan.chosen.offer.zone is None  # us-east-1 on-demand rows carry no zone
    offered = {itype: ["use1-az4"]}
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", CHAT, args=HERE), mocks=Mocks(offerings=offered))
    assert mocks.one(INSTANCE)["subnetId"] == "subnet-c"  # use1-az4's subnet, not the first one
    group = _with(CHAT, deploy={"replicas": 3})
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", group, args=HERE), mocks=Mocks(offerings=offered))
    assert mocks.one(ASG)["vpcZoneIdentifiers"] == ["subnet-c"]
    (call,) = mocks.invoked("aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings")
    assert call.args["locationType"] == "availability-zone-id"


def test_no_zone_offering_the_type_fails_before_launch():
    with pytest.raises(Exception) as e:
        run_program(lambda: GpuWorkload("chat", CHAT, args=HERE), mocks=Mocks(offerings={}))
    assert "does not offer" in str(e.value) and "To fix" in str(e.value)


def test_failover_overrides_keep_to_types_offered_in_every_zone_of_the_group():
    spec = _with(CHAT, deploy={"capacity_failover": True, "failover_types": 3, "replicas": 2})
    ranked = [c.offer.instance_type for c in gpusizer.plan(spec).failover(3)]
    # The second-ranked type is missing from one of the chosen type's zones: it cannot be an override.
    offered = {ranked[0]: ["use1-az1", "use1-az2"], ranked[1]: ["use1-az1"], ranked[2]: ["use1-az1", "use1-az2"]}
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=HERE), mocks=Mocks(offerings=offered))
    asg = mocks.one(ASG)
    assert [o["instanceType"] for o in asg["mixedInstancesPolicy"]["launchTemplate"]["overrides"]] == [
        ranked[0],
        ranked[2],
    ]
    assert asg["vpcZoneIdentifiers"] == ["subnet-a", "subnet-b"]  # no subnet in a zone without the type
    assert asg["waitForCapacityTimeout"] == "30m"  # no capacity fails `up` instead of reporting 0 instances


def test_multi_node_p5_48xlarge_gets_one_efa_interface_per_network_card():
    catalog = Catalog((P5,))
    plan = gpusizer.plan(PRETRAIN, catalog=catalog)
    assert plan.chosen.nodes > 1
    mocks, _, _ = run_program(
        lambda: GpuWorkload("pretrain", PRETRAIN, args=GpuWorkloadArgs(aws_region="us-east-1", catalog=catalog))
    )
    nics = mocks.one(LT)["networkInterfaces"]
    # AWS: P5 has 32 network cards; one interface each, EFA-with-ENA primary and efa-only on the rest.
    assert len(nics) == 32
    assert sorted(n["networkCardIndex"] for n in nics) == list(range(32))
    assert (nics[0]["deviceIndex"], nics[0]["interfaceType"]) == (0, "efa")
    assert {(n["deviceIndex"], n["interfaceType"]) for n in nics[1:]} == {(1, "efa-only")}
    assert not any(n.get("associatePublicIpAddress") == "true" for n in nics)  # impossible with several
    # So the nodes go to a private subnet in the placement group's zone, with a NAT gateway for SSM.
    subnet = mocks.one("aws:ec2/subnet:Subnet")
    assert subnet["availabilityZoneId"] == "use1-az1" and subnet["vpcId"] == "vpc-0default"
    assert mocks.one(ASG)["vpcZoneIdentifiers"] == ["pretrain-aws-private-id"]
    assert mocks.one("aws:ec2/natGateway:NatGateway")["subnetId"] == "subnet-a"  # the public default subnet
    route = mocks.one("aws:ec2/route:Route")
    assert (route["destinationCidrBlock"], route["natGatewayId"]) == ("0.0.0.0/0", "pretrain-aws-nat-id")


@pytest.mark.parametrize("egress, endpoints, nat", [("endpoints", 4, 0), ("none", 0, 0)])
def test_private_egress_is_configurable(egress, endpoints, nat):
    catalog = Catalog((P5,))
    mocks, _, _ = run_program(
        lambda: GpuWorkload(
            "pretrain", PRETRAIN, args=GpuWorkloadArgs(aws_region="us-east-1", catalog=catalog, aws_egress=egress)
        )
    )
    found = mocks.of_type("aws:ec2/vpcEndpoint:VpcEndpoint")
    assert len(found) == endpoints and len(mocks.of_type("aws:ec2/natGateway:NatGateway")) == nat
    if endpoints:
        assert {e.inputs["serviceName"] for e in found} == {
            "com.amazonaws.us-east-1.ssm",
            "com.amazonaws.us-east-1.ssmmessages",
            "com.amazonaws.us-east-1.ec2messages",
            "com.amazonaws.us-east-1.s3",
        }


def test_efa_overrides_need_efa_and_as_many_network_cards():
    catalog = Catalog(
        (
            P5,
            make_offer("p5e.48xlarge", "H200", 8, 140.0, 60.0, fabric="efa", nvlink=True),
            make_offer("p5en.48xlarge", "H200", 8, 140.0, 61.0, fabric="efa", nvlink=True),
            make_offer("p4d.24xlarge", "A100-40GB", 8, 39.5, 58.0, fabric="efa", nvlink=True),
        )
    )
    spec = _with(PRETRAIN, deploy={"capacity_failover": True, "failover_types": 4})
    plan = gpusizer.plan(spec, catalog=catalog)
    mocks, _, _ = run_program(
        lambda: GpuWorkload("pretrain", spec, args=GpuWorkloadArgs(aws_region="us-east-1", catalog=catalog))
    )
    overrides = [o["instanceType"] for o in mocks.one(ASG)["mixedInstancesPolicy"]["launchTemplate"]["overrides"]]
    # p5en has 16 network cards, p4d 4: the 32-interface template cannot launch them.
    assert overrides[0] == plan.chosen.offer.instance_type
    assert set(overrides) <= {"p5.48xlarge", "p5e.48xlarge"}
    assert not {"p5en.48xlarge", "p4d.24xlarge"} & set(overrides)


def test_root_disk_is_never_smaller_than_the_images_snapshot():
    spec = _with(CHAT, deploy={"disk_gib": 30})
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=HERE))
    assert mocks.one(LT)["blockDeviceMappings"][0]["ebs"]["volumeSize"] == AMI_SNAPSHOT_GIB


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

    pulumi.export(
        w._name,
        {
            "instance_type": w.instance_type,
            "hourly_usd": w.hourly_usd,
            "decision": w.decision,
            **{k: w.ids[k] for k in ("instance_id", "asg_name", "endpoint") if k in w.ids},
        },
    )


@pytest.mark.parametrize(
    "setting, value, key",
    [
        ("aws_egress", "public", "gpusizer:awsEgress"),
        ("aws_private_cidr", "172.31.240.1/20", "gpusizer:awsPrivateCidr"),  # host bits set
        ("aws_private_cidr", "172.31.240.0/29", "gpusizer:awsPrivateCidr"),  # smaller than EC2's /28
        ("aws_private_cidr", "fd00::/64", "gpusizer:awsPrivateCidr"),
        ("aws_region", "yes", "aws:region"),  # YAML 1.1's boolean, as the stack file may hold it
        ("aws_region", '["us-east-1"]', "aws:region"),  # a list, as Pulumi config passes it (JSON text)
        ("aws_region", "us-east1", "aws:region"),  # GCP's spelling
    ],
)
def test_an_invalid_setting_fails_before_anything_is_registered(setting, value, key):
    # A choice outside the default provider's region: the component would register a regional
    # provider first, so a check inside it would leave that (and the GpuWorkload) registered.
    spec = _with(CHAT, placement={"regions": ["us-east-2"]})
    assert gpusizer.plan(spec).chosen.offer.region == "us-east-2"
    mocks = Mocks()
    with pytest.raises(ValueError) as e:
        run_program(
            lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs(**{"aws_region": "us-east-1", setting: value})),
            mocks=mocks,
        )
    assert key in str(e.value) and repr(value) in str(e.value) and "To fix" in str(e.value)
    if setting == "aws_egress":
        assert "nat, endpoints, none" in str(e.value)
    assert mocks.resources == []


def test_component_args_refuse_an_invalid_egress_when_made():
    plan = gpusizer.plan(CHAT)
    with pytest.raises(ValueError, match="gpusizer:awsEgress 'public'.*nat, endpoints, none"):
        aws.AwsGpuCapacityArgs(plan, egress="public")
    assert aws.AwsGpuCapacityArgs(plan, egress="endpoints").egress == "endpoints"


def test_region_patterns_are_botocores_partitions():
    """REGION_PATTERNS copies each partition's regionRegex from botocore's endpoints model: still the same?"""
    import botocore.loaders  # the [dev] extra's boto3 brings it

    partitions = botocore.loaders.create_loader().load_data("endpoints")["partitions"]
    assert set(aws.REGION_PATTERNS) == {p["regionRegex"] for p in partitions}
    for region in (
        "us-east-1",
        "eu-central-2",
        "ap-southeast-4",
        "il-central-1",
        "mx-central-1",
        "us-gov-west-1",
        "cn-northwest-1",
    ):
        aws.check_settings("nat", aws.aws_network.PRIVATE_CIDR, region)
