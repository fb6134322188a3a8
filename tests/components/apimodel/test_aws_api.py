"""AWS: what the components register, checked against botocore's models and replayed on a moto server."""

from __future__ import annotations

import copy

import botocore.exceptions
import pytest

import gpusizer
from gpusizer.catalog import Catalog
from gpusizer.components import GpuWorkload, GpuWorkloadArgs
from tests.components.apimodel import aws_api, moto_replay
from tests.components.conftest import Mocks, Registered, run_program
from tests.components.training import P5, PRETRAIN
from tests.conftest import make_offer

HERE = GpuWorkloadArgs(aws_region="us-east-1")
CHAT = {
    "name": "chat",
    "model": {"name": "llama-3.1-8b"},
    "inference": {"batch_size": 4},
    "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
}
TRAIN = {
    "name": "train",
    "model": {"name": "llama-3.1-8b"},
    "task": "training",
    "training": {"sequence_length": 2048},
    "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
}
# One H100 per node forces several nodes, so the choice is an EFA cluster (p5.4xlarge: 1 network card).
P5_SMALL = Catalog((make_offer("p5.4xlarge", "H100", 1, 79.65, 6.88, fabric="efa", network_gbps=100),))
# p5.48xlarge: 32 network cards, so 32 EFA interfaces and a private subnet.
SCENARIOS = {
    "single-instance": (CHAT, HERE),
    "spot-instance": ({**CHAT, "placement": {**CHAT["placement"], "purchase": "spot"}}, HERE),
    "failover-group": ({**CHAT, "deploy": {"capacity_failover": True, "replicas": 2}}, HERE),
    "spot-failover-group": (
        {**CHAT, "placement": {**CHAT["placement"], "purchase": "spot"}, "deploy": {"capacity_failover": True}},
        HERE,
    ),
    "other-region": ({**CHAT, "placement": {"providers": ["aws"], "regions": ["us-east-2"]}}, HERE),
    "multi-node-efa": (TRAIN, GpuWorkloadArgs(aws_region="us-east-1", catalog=P5_SMALL)),
    "multi-card-efa-nat": (PRETRAIN, GpuWorkloadArgs(aws_region="us-east-1", catalog=P5)),
    "multi-card-efa-endpoints": (PRETRAIN, GpuWorkloadArgs(aws_region="us-east-1", catalog=P5, aws_egress="endpoints")),
    "capacity-block": (
        {**PRETRAIN, "deploy": {"capacity_reservation": "cr-0123456789abcdef0", "capacity_block": True}},
        GpuWorkloadArgs(aws_region="us-east-1", catalog=P5),
    ),
    "odcr-group": (
        {
            **PRETRAIN,
            "deploy": {"capacity_reservation": "arn:aws:resource-groups:us-east-1:123456789012:group/p5-odcrs"},
        },
        GpuWorkloadArgs(aws_region="us-east-1", catalog=P5),
    ),
    "serving-gpu-scaling-with-token": (
        {
            **CHAT,
            "deploy": {
                "autoscaling": {"min_replicas": 1, "max_replicas": 3, "metric": "gpu_utilization", "target": 70}
            },
        },
        GpuWorkloadArgs(aws_region="us-east-1", hf_token="hf_x"),
    ),
    "serving-expose-none": ({**CHAT, "deploy": {"expose": "none"}}, HERE),
}


def _registered(spec, args, mocks=None):
    mocks, _, _ = run_program(lambda: GpuWorkload(spec["name"], spec, args=args), mocks=mocks)
    return mocks


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_registered_aws_resource_is_a_valid_api_request(scenario):
    spec, args = SCENARIOS[scenario]
    # us-east-2's zones for the regional choice; us-east-1's (the default mocks') otherwise.
    mocks = (
        Mocks(subnet_zones={"subnet-e1": "use2-az1", "subnet-e3": "use2-az3"}) if scenario == "other-region" else None
    )
    found = aws_api.requests(_registered(spec, args, mocks).resources)
    ops = {req.operation for _, req in found}
    assert {"CreateRole", "CreateInstanceProfile", "CreateSecurityGroup", "CreateLaunchTemplate"} <= ops
    (lt,) = [req for _, req in found if req.operation == "CreateLaunchTemplate"]
    data = lt.params["LaunchTemplateData"]
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    assert data["BlockDeviceMappings"][0]["Ebs"]["Encrypted"] is True  # "true" became the API's boolean
    assert ("RunInstances" in ops) != ("CreateAutoScalingGroup" in ops)


def _broken_launch_template(change):
    mocks = _registered(CHAT, HERE)
    (lt,) = [r for r in mocks.resources if r.typ == "aws:ec2/launchTemplate:LaunchTemplate"]
    inputs = copy.deepcopy(lt.inputs)
    change(inputs)
    return [Registered(lt.typ, lt.name, inputs, None)]


@pytest.mark.parametrize(
    "change, error",
    [
        # A misspelt field: EC2 has no such member.
        (lambda i: i["metadataOptions"].update(httpTokenz="required"), aws_api.ApiModelError),
        # An enum value EC2 does not know.
        (lambda i: i["metadataOptions"].update(httpTokens="mandatory"), aws_api.ApiModelError),
        (lambda i: i["blockDeviceMappings"][0]["ebs"].update(volumeType="gp9"), aws_api.ApiModelError),
        # EFA interface types are interface | efa | efa-only.
        (
            lambda i: i.update(networkInterfaces=[{"deviceIndex": 0, "interfaceType": "efa-plus"}]),
            aws_api.ApiModelError,
        ),
        # A wrong type: the hop limit is an integer.
        (
            lambda i: i["metadataOptions"].update(httpPutResponseHopLimit="two"),
            botocore.exceptions.ParamValidationError,
        ),
    ],
)
def test_api_model_rejects_a_broken_launch_template(change, error):
    with pytest.raises(error):
        aws_api.requests(_broken_launch_template(change))


def test_api_model_rejects_an_untranslated_resource_type():
    with pytest.raises(aws_api.ApiModelError) as e:
        aws_api.requests([Registered("aws:ec2/spotFleetRequest:SpotFleetRequest", "x", {}, None)])
    assert "no API translation" in str(e.value)


@pytest.fixture(scope="module")
def moto_endpoint():
    import moto.server

    with pytest.MonkeyPatch.context() as patch:
        # AWS managed policies (AmazonSSMManagedInstanceCore) exist in moto's IAM only when asked for.
        patch.setenv("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
        server = moto.server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            # Backends other tests built in this process lack the managed policies: start afresh.
            moto_replay.reset(f"http://127.0.0.1:{server._server.server_port}")
            yield f"http://127.0.0.1:{server._server.server_port}"
        finally:
            server.stop()


@pytest.fixture(scope="module")
def moto_ec2(moto_endpoint):
    # One moto state for the module (its EC2 set-up takes ~10 s); each test replays its own names.
    ec2 = moto_replay.clients(moto_endpoint)["ec2"]
    moto_replay.register_dlami(ec2)
    return ec2


@pytest.mark.slow
def test_moto_runs_the_chosen_type_for_a_single_instance(moto_endpoint, moto_ec2):
    plan = gpusizer.plan(CHAT)
    mocks = _registered(CHAT, HERE, moto_replay.MotoMocks(moto_ec2))
    done = moto_replay.replay(mocks.resources, moto_endpoint)
    (inst,) = done.instances
    assert inst["InstanceType"] == plan.chosen.offer.instance_type
    assert inst["MetadataOptions"]["HttpTokens"] == "required"
    (template,) = done.templates.values()
    assert template["InstanceType"] == plan.chosen.offer.instance_type
    assert template["IamInstanceProfile"]["Arn"].endswith(":instance-profile/chat-aws-profile-1234567")
    assert template["BlockDeviceMappings"][0]["Ebs"]["Encrypted"] is True


@pytest.mark.slow
def test_moto_accepts_the_failover_group_with_its_mixed_instances_policy(moto_endpoint, moto_ec2):
    spec = {**SCENARIOS["failover-group"][0], "name": "chatgroup"}
    plan = gpusizer.plan(spec)
    mocks = _registered(spec, HERE, moto_replay.MotoMocks(moto_ec2))
    done = moto_replay.replay(mocks.resources, moto_endpoint)
    (group,) = done.groups
    policy = group["MixedInstancesPolicy"]
    assert [o["InstanceType"] for o in policy["LaunchTemplate"]["Overrides"]] == [
        c.offer.instance_type for c in plan.failover(3)
    ]
    assert policy["InstancesDistribution"]["OnDemandAllocationStrategy"] == "prioritized"
    assert group["DesiredCapacity"] == len(group["Instances"]) == 2
    assert {i["InstanceType"] for i in group["Instances"]} <= {
        o["InstanceType"] for o in policy["LaunchTemplate"]["Overrides"]
    }
    # Serving: the group sits behind the target group that checks GET /health, and uses its health.
    elbv2 = moto_replay.clients(moto_endpoint)["elbv2"]
    (arn,) = group["TargetGroupARNs"]
    (tg,) = elbv2.describe_target_groups(TargetGroupArns=[arn])["TargetGroups"]
    assert (tg["HealthCheckProtocol"], tg["HealthCheckPath"], tg["Port"]) == ("HTTP", "/health", 8000)
    assert group["HealthCheckType"] == "ELB"
    (lb,) = elbv2.describe_load_balancers(LoadBalancerArns=tg["LoadBalancerArns"])["LoadBalancers"]
    assert (lb["Type"], lb["Scheme"]) == ("network", "internal")


@pytest.mark.slow
def test_moto_launches_the_efa_cluster_in_its_private_subnet(moto_endpoint, moto_ec2):
    plan = gpusizer.plan(PRETRAIN, catalog=P5)
    mocks = _registered(PRETRAIN, SCENARIOS["multi-card-efa-nat"][1], moto_replay.MotoMocks(moto_ec2))
    done = moto_replay.replay(mocks.resources, moto_endpoint)
    (group,) = done.groups
    assert group["PlacementGroup"].startswith("pretrain-aws-pg")
    (subnet_id,) = group["VPCZoneIdentifier"].split(",")
    (subnet,) = moto_ec2.describe_subnets(SubnetIds=[subnet_id])["Subnets"]
    assert subnet["CidrBlock"] == "172.31.240.0/20"  # the private subnet, not a default one
    offered = {
        o["Location"]
        for o in moto_ec2.describe_instance_type_offerings(
            LocationType="availability-zone-id", Filters=[{"Name": "instance-type", "Values": ["p5.48xlarge"]}]
        )["InstanceTypeOfferings"]
    }
    assert subnet["AvailabilityZoneId"] in offered
    (template,) = done.templates.values()
    assert len(template["NetworkInterfaces"]) == 32
    assert len(group["Instances"]) == group["DesiredCapacity"] == plan.chosen.nodes
    routes = moto_ec2.describe_route_tables(Filters=[{"Name": "association.subnet-id", "Values": [subnet_id]}])
    (table,) = routes["RouteTables"]
    assert any(r.get("NatGatewayId") and r["DestinationCidrBlock"] == "0.0.0.0/0" for r in table["Routes"])
