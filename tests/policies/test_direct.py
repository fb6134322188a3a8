"""The policies called directly, as plain functions."""

from __future__ import annotations

import pytest

from gpusizer.policies import hosts, rules, sizing, view
from tests.policies import cases

OVER = "gpusizer-no-overprovisioning"


def _stack_rule(name, typ, props, config=None, parent=None, stack=()):
    """A stack rule's messages for one resource, with `stack` beside it."""
    r = sizing.StackResource(typ, view.View(view.raw(props)), f"urn:pulumi:ci::p::{typ}::r", "r", parent)
    return [m for m, _ in rules.check_stack(name, [*stack, r], config)]


def over(typ, props, config=None, parent=None, stack=()):
    """gpusizer-no-overprovisioning's messages for one resource (a stack rule: it sees `stack` beside it)."""
    return _stack_rule(OVER, typ, props, config, parent, stack)


def test_h100_for_20_gib_names_a_cheaper_offer():
    (msg,) = over(*cases.H100_FOR_20)
    assert "p5.48xlarge: 8 x H100 = 637 GiB for a 20 GiB requirement (32x" in msg
    assert "g6.xlarge" in msg and "$0.80/h fits" in msg


def test_l4_for_18_gib_passes_every_policy():
    for rule in rules.RULES:
        if rule.scope == "resource":
            assert rules.check_resource(rule.name, *cases.L4_FOR_18) == [], rule.name


def test_untagged_gpu_instance_is_flagged():
    (msg,) = rules.check_resource("gpusizer-sized-gpu-capacity", *cases.UNTAGGED_GPU)
    assert "g5.xlarge" in msg and "gpusizer:required-gpu-memory-gib" in msg


def test_non_gpu_instance_is_ignored():
    assert rules.check_resource("gpusizer-sized-gpu-capacity", *cases.NON_GPU) == []
    assert over(*cases.NON_GPU) == []
    assert _stack_rule("gpusizer-no-underprovisioning", *cases.NON_GPU) == []


@pytest.mark.parametrize("case", sorted(cases.OVER))
def test_each_covered_type_is_judged(case):
    typ, props = cases.OVER[case]
    msgs = over(typ, props)
    assert len(msgs) == 1 and "GiB requirement" in msgs[0], msgs
    assert rules.check_resource("gpusizer-sized-gpu-capacity", typ, props) == []


def test_under_provisioning_is_flagged():
    typ, props = cases.L4_FOR_18
    msgs = _stack_rule("gpusizer-no-underprovisioning", typ, {**props, "tags": {cases.REQ: "30"}})
    assert msgs and "< 30.0 GiB required" in msgs[0]  # one decimal at least, as the engine's fit messages (apart)


def test_a_sized_by_label_never_exempts_by_itself():
    # Neither the label nor a URN that names a GpuWorkload in its type chain exempts: only a GpuWorkload that
    # the engine names as an ancestor (parent links) and whose recorded spec re-plans to this resource.
    typ, props = cases.H100_FOR_20
    tags = {**props["tags"], "gpusizer:sized-by": "throughput"}
    urn = f"urn:pulumi:dev::gpusizer::gpusizer:index:GpuWorkload$gpusizer:aws:GpuCapacity${typ}::chat"
    r = sizing.StackResource(typ, view.View(view.raw({**props, "tags": tags})), urn, "chat")
    (msg,) = [m for m, _ in rules.check_stack(OVER, [r])]
    assert "637 GiB for a 20 GiB requirement" in msg and "no GpuWorkload above it records a spec" in msg
    fake = sizing.StackResource(
        sizing.WORKLOAD, view.View({}), "urn:pulumi:dev::gpusizer::gpusizer:index:GpuWorkload::w"
    )
    (msg,) = over(typ, {**props, "tags": tags}, parent=fake.urn, stack=[fake])
    assert "not re-derived" in msg and "records no spec" in msg


def test_ratio_is_configurable():
    typ, props = cases.OVER["gcp-template"]  # 8 x V100 = 126 GiB for 5 GiB
    assert over(typ, props, {"maxRatio": 100}) == []
    (msg,) = over(typ, props, {"maxRatio": 10})
    # 8 x 15.78 GiB (V100 16 GB as the driver shows it) = 126 GiB; 126 / 5 = 25x, over the 10x limit.
    assert "8 x V100 = 126 GiB for a 5 GiB requirement (25x, limit 10x)" in msg


def test_allowed_gpus_and_spot_only():
    typ, props = cases.H100_FOR_20
    (msg,) = rules.check_resource("gpusizer-allowed-gpus", typ, props, {"allowed": ["L4", "A10G"]})
    assert "H100 is not allowed" in msg
    msgs = rules.check_resource("gpusizer-allowed-gpus", *cases.L4_FOR_18, {"spotOnly": True})
    assert msgs and "spot" in msgs[0]


def test_cost_ceiling_and_stack_budget():
    typ, props = cases.H100_FOR_20
    assert "ceiling" in rules.check_resource("gpusizer-cost-ceiling", typ, props, {"maxHourlyUsd": 10})[0]
    assert rules.check_resource("gpusizer-cost-ceiling", typ, props) == []  # off by default
    resources = [
        sizing.StackResource(t, view.View(p), f"urn:{i}")
        for i, (t, p) in enumerate([cases.H100_FOR_20, cases.L4_FOR_18])
    ]
    ((msg, _),) = rules.check_stack("gpusizer-gpu-budget", resources, {"maxHourlyUsd": 50})
    assert "budget $50.00/h" in msg
    assert rules.check_stack("gpusizer-gpu-budget", resources, {"maxHourlyUsd": 100}) == []


@pytest.mark.parametrize(
    "typ, props, words",
    [
        (
            "aws:ec2/instance:Instance",
            {"instanceType": "g6.xlarge", "metadataOptions": {"httpTokens": "optional"}},
            "IMDSv2",
        ),
        ("aws:ec2/launchTemplate:LaunchTemplate", {"instanceType": "g6.xlarge"}, "IMDSv2"),
    ],
)
def test_imdsv2_required_with_remediation(typ, props, words):
    (msg,) = rules.check_resource("gpusizer-require-imdsv2", typ, props)
    assert words in msg
    assert hosts.remediate_imdsv2(typ, props)["metadataOptions"]["httpTokens"] == "required"


SSH_OPEN = "SSH (port 22) open to the internet (0.0.0.0/0)"


@pytest.mark.parametrize(
    "typ, props, words",
    [
        (
            "aws:ec2/securityGroup:SecurityGroup",
            {"ingress": [{"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["0.0.0.0/0"]}]},
            SSH_OPEN,
        ),
        # Ports 0-65535 include 22.
        (
            "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
            {"cidrIpv4": "0.0.0.0/0", "fromPort": 0, "toPort": 65535, "ipProtocol": "tcp"},
            SSH_OPEN,
        ),
        (
            "gcp:compute/firewall:Firewall",
            {"sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "tcp", "ports": ["22"]}]},
            SSH_OPEN,
        ),
        (
            "aws:ec2/instance:Instance",
            {"instanceType": "g6.xlarge", "rootBlockDevice": {"encrypted": False}},
            "unencrypted EBS volume",
        ),
    ],
)
def test_insecure_hosts_are_flagged(typ, props, words):
    (msg,) = rules.check_resource("gpusizer-secure-gpu-hosts", typ, props)
    assert words in msg and "To fix:" in msg


def test_ssh_from_a_private_range_is_fine():
    props = {"ingress": [{"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["10.0.0.0/8"]}]}
    assert rules.check_resource("gpusizer-secure-gpu-hosts", "aws:ec2/securityGroup:SecurityGroup", props) == []


@pytest.mark.parametrize("config", [{"maxRatio": "two"}, {"maxRatoi": 2}])  # malformed; an unknown key
def test_malformed_config_is_a_message_not_a_crash(config):
    (msg,) = over("aws:ec2/instance:Instance", {"instanceType": "g6.xlarge", "tags": {cases.REQ: "18"}}, config)
    assert msg.startswith("gpusizer-no-overprovisioning config:") and ("maxRatio" in msg or "maxRatoi" in msg)


@pytest.mark.parametrize(
    "props, nodes",
    [
        (
            {
                "location": "us-central1",
                "nodeLocations": ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"],
                "nodeCount": 1,
            },
            4,
        ),  # per zone x the zones named
        ({"location": "us-central1", "autoscaling": {"maxNodeCount": 2}}, 6),  # a regional pool: three zones by default
        ({"location": "us-central1-a", "nodeCount": 2}, 2),  # a zonal pool
        ({"location": "us-central1", "autoscaling": {"totalMaxNodeCount": 5, "maxNodeCount": 9}}, 5),  # a total limit
    ],
)
def test_a_gke_node_pool_counts_nodes_per_zone_times_its_zones(props, nodes):
    # pulumi-gcp container.NodePool: nodeCount, initialNodeCount and autoscaling.maxNodeCount are per zone.
    from gpusizer.policies import resources

    pool = {"nodeConfig": {"machineType": "g2-standard-4"}, **props}
    assert resources.GpuResource("gcp:container/nodePool:NodePool", view.View(view.raw(pool))).count == nodes


@pytest.mark.parametrize(
    "props, nodes",
    [
        (
            {
                "nodeLocations": ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"],
                "location": cases.U,
                "autoscaling": {"maxNodeCount": 1},
            },
            4,
        ),  # the zones it names, whatever the location
        (
            {"location": "us-central1-a", "initialNodeCount": 50, "nodeCount": cases.U},
            50,
        ),  # created at initialNodeCount
        ({"nodeCount": 2}, 6),  # location computed: as many zones as a regional pool
    ],
)
def test_a_gke_node_pool_with_computed_fields_is_counted_not_left_unknown(props, nodes):
    from gpusizer.policies import resources

    pool = {"nodeConfig": {"machineType": "g2-standard-4"}, **props}
    assert resources.GpuResource("gcp:container/nodePool:NodePool", view.View(view.raw(pool))).count == nodes


@pytest.mark.parametrize(
    "typ, props, instances",
    [
        (
            "aws:ec2/fleet:Fleet",
            {
                "targetCapacitySpecification": {"totalTargetCapacity": 1},
                "launchTemplateConfigs": [{"overrides": [{"instanceType": "g6.xlarge", "weightedCapacity": 0.01}]}],
            },
            100,
        ),  # 1 unit / 0.01 per instance
        (
            "aws:ec2/fleet:Fleet",
            {
                "targetCapacitySpecification": {"totalTargetCapacity": 4},
                "launchTemplateConfigs": [{"overrides": [{"instanceType": "g6.xlarge", "weightedCapacity": 2}]}],
            },
            4,
        ),  # weights above 1: units, at most
        (
            "aws:ec2/spotFleetRequest:SpotFleetRequest",
            {
                "targetCapacity": 2,
                "launchTemplateConfigs": [{"overrides": [{"instanceType": "g6.xlarge", "weightedCapacity": 0.5}]}],
            },
            4,
        ),
    ],
)
def test_a_fleet_weighted_below_one_runs_more_instances_than_units(typ, props, instances):
    from gpusizer.policies import resources

    assert resources.GpuResource(typ, view.View(view.raw(props))).count == instances
