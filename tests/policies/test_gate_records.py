"""Controls the gate must pass: resources that name, watch or measure GPUs and launch none, read as their
clouds read them (the false positives a cloud engineer's hunt found), each beside the blocked case that
shows the rule still judges what does launch. Over gRPC, as the engine sends them."""

from __future__ import annotations

import json

import pytest

from tests.policies import cases
from tests.policies.test_gate import SECURE, R, mandatory

ROLE = "arn:aws:iam::123456789012:role/r"

GREEN = {
    # `output*` keys hold "tpu" inside a word: no TPU field (Athena's result location)
    "athena-output-location": R(
        "aws:athena/workgroup:Workgroup",
        "wg",
        {"name": "wg", "configuration": {"resultConfiguration": {"outputLocation": "s3://acme-athena/"}}},
    ),
    "step-functions-output-path": R(
        "aws:sfn/stateMachine:StateMachine",
        "sm",
        {
            "roleArn": ROLE,
            "definition": json.dumps(
                {"StartAt": "P", "States": {"P": {"Type": "Pass", "OutputPath": "$.result", "End": True}}}
            ),
        },
    ),
    # an alert on p5 launches: the rule's pattern filters CloudTrail events, it launches nothing
    "event-rule-on-gpu-launches": R(
        "aws:cloudwatch/eventRule:EventRule",
        "alert",
        {
            "eventPattern": json.dumps(
                {
                    "source": ["aws.ec2"],
                    "detail-type": ["AWS API Call via CloudTrail"],
                    "detail": {"eventName": ["RunInstances"], "requestParameters": {"instanceType": ["p5.48xlarge"]}},
                }
            )
        },
    ),
    # a Grafana dashboard whose query names a type
    "grafana-dashboard": R(
        "grafana:index/dashboard:Dashboard",
        "d",
        {
            "configJson": json.dumps(
                {"panels": [{"targets": [{"expr": 'avg(DCGM_FI_DEV_GPU_UTIL{instance_type="p5.48xlarge"})'}]}]}
            )
        },
    ),
    # a catalog row kept in DynamoDB: data a program reads
    "dynamodb-item": R(
        "aws:dynamodb/tableItem:TableItem",
        "row",
        {
            "tableName": "gpus",
            "hashKey": "id",
            "item": json.dumps({"id": {"S": "p5"}, "instanceType": {"S": "p5.48xlarge"}, "gpus": {"N": "8"}}),
        },
    ),
    # a reaper's utilisation threshold: it measures GPUs, asks for none
    "lambda-gpu-utilisation-threshold": R(
        "aws:lambda/function:Function",
        "reaper",
        {
            "role": ROLE,
            "runtime": "python3.12",
            "handler": "index.handler",
            "environment": {"variables": {"IDLE_GPU_UTIL_PCT": "5", "LOOKBACK_MINUTES": "30"}},
        },
    ),
    # kube-prometheus-stack's values import a DCGM dashboard into a folder named gpu
    "dashboards-folder-named-gpu": R(
        "kubernetes:helm.sh/v3:Release",
        "kps",
        {
            "chart": "kube-prometheus-stack",
            "repositoryOpts": {"repo": "https://prometheus-community.github.io/helm-charts"},
            "values": {"grafana": {"dashboards": {"gpu": {"nvidia-dcgm": {"gnetId": 12239, "revision": 2}}}}},
        },
    ),
    # the NVIDIA device plugin's time-slicing config in its chart values: it shares a node's GPUs
    "device-plugin-time-slicing-values": R(
        "kubernetes:helm.sh/v3:Release",
        "ndp",
        {
            "chart": "nvidia-device-plugin",
            "repositoryOpts": {"repo": "https://nvidia.github.io/k8s-device-plugin"},
            "values": {
                "config": {
                    "map": {
                        "default": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                        "    - name: nvidia.com/gpu\n      replicas: 4\n"
                    }
                }
            },
        },
    ),
    # an ICMP rule from anywhere opens no port (GCP's own default-allow-icmp)
    "gcp-icmp-from-anywhere": R(
        "gcp:compute/firewall:Firewall",
        "icmp",
        {"network": "default", "direction": "INGRESS", "sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "icmp"}]},
    ),
}


@pytest.mark.parametrize("case", sorted(GREEN))
def test_what_names_watches_or_measures_gpus_passes(pack_stub, case):
    assert mandatory(pack_stub, [GREEN[case]]) == [], case


def test_the_gpu_ami_type_of_a_right_sized_node_group_passes(pack_stub):
    """EKS's AL2_x86_64_GPU and AL2023_x86_64_NVIDIA AMI types pick the image GPU nodes boot; the group's
    instance types are what it launches (one L4: 22.35 GiB as the catalog lists g6.xlarge's, EC2 DescribeInstanceTypes;
    0.90 of it holds the 18 GiB needed)."""
    for ami in ("AL2_x86_64_GPU", "AL2023_x86_64_NVIDIA"):
        ng = R(
            "aws:eks/nodeGroup:NodeGroup",
            "l4",
            {
                "clusterName": "c",
                "nodeRoleArn": ROLE,
                "subnetIds": ["subnet-1"],
                "amiType": ami,
                "instanceTypes": ["g6.xlarge"],
                "scalingConfig": {"minSize": 1, "maxSize": 2, "desiredSize": 1},
                "launchTemplate": {"name": "l4-lt", "version": "$Latest"},
                "tags": {cases.REQ: "18"},
            },
        )
        lt = R(
            "aws:ec2/launchTemplate:LaunchTemplate",
            "l4-lt",
            {"name": "l4-lt", "metadataOptions": {"httpTokens": "required"}},
        )
        assert mandatory(pack_stub, [lt, ng]) == [], ami


def test_a_gcp_rule_opening_tcp_to_the_world_is_still_ssh(pack_stub):
    rule = R(
        "gcp:compute/firewall:Firewall",
        "all-tcp",
        {"network": "default", "sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "tcp"}]},
    )
    assert any("SSH (port 22)" in m for _, m in mandatory(pack_stub, [rule]))


def test_a_gpu_launch_configuration_is_refused_with_the_way_to_size_it(pack_stub):
    """CreateLaunchConfiguration has no Tags (EC2 Auto Scaling API): a launch configuration cannot carry the
    requirement, so a GPU one is refused with the fix (a tagged launch template)."""
    lc = R(
        "aws:ec2/launchConfiguration:LaunchConfiguration",
        "l4-lc",
        {"name": "l4-lc", "imageId": "ami-1", "instanceType": "g4dn.xlarge", **SECURE},
    )
    (found,) = [m for p, m in mandatory(pack_stub, [lc]) if p == "gpusizer-sized-gpu-capacity"]
    assert "cannot carry a sizing requirement" in found and "launch template" in found


def test_a_gpu_field_outside_a_measuring_folder_still_counts(pack_stub):
    """The same chart values with the GPU count where a chart reads resources, not under dashboards."""
    rel = R(
        "kubernetes:helm.sh/v3:Release",
        "x",
        {
            "chart": "some-llm",
            "repositoryOpts": {"repo": "https://charts.example.com"},
            "values": {"gpu": {"count": 8}},
        },
    )
    assert any(p == "gpusizer-gpu-evidence" for p, _ in mandatory(pack_stub, [rel]))


def test_an_event_target_that_starts_gpu_work_still_counts(pack_stub):
    """The blocked twin of the event-rule control: a rule's target runs an ECS task with 8 GPUs per container."""
    target = R(
        "aws:cloudwatch/eventTarget:EventTarget",
        "t",
        {
            "rule": "nightly",
            "arn": "arn:aws:ecs:us-east-1:123456789012:cluster/gpu",
            "roleArn": ROLE,
            "ecsTarget": {
                "taskDefinitionArn": "arn:aws:ecs:us-east-1:123456789012:task-definition/ft:1",
                "taskCount": 16,
            },
            "input": json.dumps(
                {"containerOverrides": [{"name": "ft", "resourceRequirements": [{"type": "GPU", "value": "8"}]}]}
            ),
        },
    )
    assert any(p == "gpusizer-gpu-evidence" for p, _ in mandatory(pack_stub, [target]))
