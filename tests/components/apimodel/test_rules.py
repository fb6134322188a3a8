"""Rules, not just names: realistic mistakes fed through the API-model layers must each fail.

Each case takes what a component really registers, makes one mistake a person
or a refactor could make, and expects the layer to refuse it. The unchanged
registrations pass (test_aws_api, test_gcp_api, test_k8s_api scenarios).
"""

from __future__ import annotations

import copy

import botocore.exceptions
import pytest

from gpusizer.components import GpuWorkload, GpuWorkloadArgs
from tests.components.apimodel import aws_api, gcp_api, k8s_api
from tests.components.apimodel.aws_api import ApiModelError
from tests.components.conftest import Registered, run_program
from tests.components.training import GCP_PRETRAIN, P5, PRETRAIN, ULTRA

AWS_CHAT = {
    "name": "chat",
    "model": {"name": "llama-3.1-8b"},
    "inference": {"batch_size": 4},
    "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
}
AWS = {
    "group": (
        {**AWS_CHAT, "deploy": {"replicas": 2, "capacity_failover": True}},
        GpuWorkloadArgs(aws_region="us-east-1", hf_token="hf_x"),
    ),
    "scaled": (
        {
            **AWS_CHAT,
            "deploy": {
                "autoscaling": {"min_replicas": 1, "max_replicas": 3, "metric": "gpu_utilization", "target": 70}
            },
        },
        GpuWorkloadArgs(aws_region="us-east-1"),
    ),
    "efa": (PRETRAIN, GpuWorkloadArgs(aws_region="us-east-1", catalog=P5)),
    "block": (
        {**PRETRAIN, "deploy": {"capacity_reservation": "cr-0123456789abcdef0", "capacity_block": True}},
        GpuWorkloadArgs(aws_region="us-east-1", catalog=P5),
    ),
}
LT, ASG, SG = (
    "aws:ec2/launchTemplate:LaunchTemplate",
    "aws:autoscaling/group:Group",
    "aws:ec2/securityGroup:SecurityGroup",
)
TG, POLICY = "aws:lb/targetGroup:TargetGroup", "aws:autoscaling/policy:Policy"


def _dist(i):
    return i["mixedInstancesPolicy"]["instancesDistribution"]


AWS_MISTAKES = [
    ("group", ASG, "min above max", lambda i: i.update(minSize=3, maxSize=2)),
    ("group", ASG, "desired above max", lambda i: i.update(desiredCapacity=5)),
    ("group", ASG, "misspelt on-demand strategy", lambda i: _dist(i).update(onDemandAllocationStrategy="prioritised")),
    ("group", ASG, "misspelt spot strategy", lambda i: _dist(i).update(spotAllocationStrategy="capacity-optimised")),
    ("group", ASG, "ELB health check without a target group", lambda i: i.pop("targetGroupArns")),
    ("group", ASG, "lower-case health check type", lambda i: i.update(healthCheckType="elb")),
    (
        "group",
        ASG,
        "override type that does not exist",
        lambda i: i["mixedInstancesPolicy"]["launchTemplate"]["overrides"].append({"instanceType": "g6.xlarg"}),
    ),
    ("group", LT, "instance type that does not exist", lambda i: i.update(instanceType="g6.xlarg")),
    (
        "group",
        LT,
        "root volume beyond gp3's 16 TiB",
        lambda i: i["blockDeviceMappings"][0]["ebs"].update(volumeSize=20000),
    ),
    ("group", TG, "health path without a slash", lambda i: i["healthCheck"].update(path="health")),
    ("group", TG, "healthy threshold of 1", lambda i: i["healthCheck"].update(healthyThreshold=1)),
    ("group", TG, "health interval of 400 s", lambda i: i["healthCheck"].update(interval=400)),
    (
        "group",
        "aws:iam/rolePolicy:RolePolicy",
        "statement without a resource",
        lambda i: i.update(policy=i["policy"].replace('"Resource"', '"Resources"')),
    ),
    (
        "group",
        "aws:secretsmanager/secret:Secret",
        "recovery window of 3 days",
        lambda i: i.update(recoveryWindowInDays=3),
    ),
    (
        "group",
        "aws:lb/listener:Listener",
        "forward to no target group",
        lambda i: i["defaultActions"][0].update(targetGroupArn=""),
    ),
    ("scaled", POLICY, "target of 0 %", lambda i: i["targetTrackingConfiguration"].update(targetValue=0)),
    (
        "efa",
        LT,
        "33 interfaces on p5 (32 network cards)",
        lambda i: i["networkInterfaces"].append({**i["networkInterfaces"][-1], "networkCardIndex": 32}),
    ),
    (
        "efa",
        LT,
        "two interfaces on one card and device",
        lambda i: i["networkInterfaces"].append(dict(i["networkInterfaces"][-1])),
    ),
    (
        "efa",
        SG,
        "EFA group without self egress",
        lambda i: i.update(egress=[e for e in i["egress"] if not e.get("self")]),
    ),
    ("efa", SG, "EFA group without self ingress", lambda i: i.update(ingress=[])),
    ("block", LT, "capacity block without its reservation", lambda i: i.pop("capacityReservationSpecification")),
    (
        "group",
        LT,
        "user data beyond 16 KB",
        lambda i: i.update(userData=__import__("base64").b64encode(b"#cloud-config\n" + b"#" * 17000).decode()),
    ),
]


@pytest.fixture(scope="module")
def aws_registered():
    return {
        k: run_program(lambda s=spec, a=args: GpuWorkload(s["name"], s, args=a))[0].resources
        for k, (spec, args) in AWS.items()
    }


def _mutated(resources, typ, change, name=None):
    out = []
    done = False
    for r in resources:
        if r.typ == typ and not done and (name is None or r.name.endswith(name)):
            inputs = copy.deepcopy(r.inputs)
            change(inputs)
            r = Registered(r.typ, r.name, inputs, r.provider)
            done = True
        out.append(r)
    assert done, typ
    return out


@pytest.mark.parametrize("scenario, typ, mistake, change", AWS_MISTAKES, ids=[m[2] for m in AWS_MISTAKES])
def test_aws_layer_refuses(aws_registered, scenario, typ, mistake, change):
    resources = aws_registered[scenario]
    aws_api.requests(resources)  # as registered: accepted
    name = "-sg" if typ == SG else None
    with pytest.raises((ApiModelError, botocore.exceptions.ParamValidationError)):
        aws_api.requests(_mutated(resources, typ, change, name))


QWEN = {
    "name": "qwen",
    "model": {"name": "qwen2.5-7b"},
    "inference": {"batch_size": 2},
    "placement": {"providers": ["gcp"], "regions": ["us-central1"]},
}
TUNE = {
    "name": "tune",
    "model": {"name": "llama-3.1-8b"},
    "task": "finetune",
    "training": {"sequence_length": 2048},
    "placement": {"providers": ["gcp"], "regions": ["us-central1"]},
}
GCP = {
    "vm": (QWEN, GpuWorkloadArgs()),
    "spot": ({**QWEN, "placement": {**QWEN["placement"], "purchase": "spot"}}, GpuWorkloadArgs()),
    "scaled": (
        {
            **QWEN,
            "deploy": {
                "autoscaling": {"min_replicas": 1, "max_replicas": 3, "metric": "gpu_utilization", "target": 70}
            },
        },
        GpuWorkloadArgs(),
    ),
    "flex-vm": (TUNE, GpuWorkloadArgs(catalog=ULTRA)),
    "roce": (GCP_PRETRAIN, GpuWorkloadArgs(catalog=ULTRA)),
    "bound": (GCP_PRETRAIN, GpuWorkloadArgs(catalog=ULTRA, gcp_reservations={"us-central1-b": "ultra-res"})),
}
VM, TEMPLATE = "gcp:compute/instance:Instance", "gcp:compute/instanceTemplate:InstanceTemplate"


def _sched(i):
    return i["scheduling"]


GCP_MISTAKES = [
    ("vm", VM, "MIGRATE on a GPU VM", lambda i: _sched(i).update(onHostMaintenance="MIGRATE")),
    ("vm", VM, "a machine type GCP does not sell", lambda i: i.update(machineType="g2-standard-5")),
    ("vm", VM, "5 GB boot disk", lambda i: i["bootDisk"]["initializeParams"].update(size=5)),
    (
        "vm",
        "gcp:compute/regionHealthCheck:RegionHealthCheck",
        "health path without a slash",
        lambda i: i["httpHealthCheck"].update(requestPath="health"),
    ),
    (
        "vm",
        "gcp:compute/regionBackendService:RegionBackendService",
        "internal backend on HTTP",
        lambda i: i.update(protocol="HTTP"),
    ),
    ("spot", VM, "spot VM that restarts", lambda i: _sched(i).update(automaticRestart=True)),
    (
        "scaled",
        "gcp:compute/autoscaler:Autoscaler",
        "min above max",
        lambda i: i["autoscalingPolicy"].update(minReplicas=5, maxReplicas=3),
    ),
    ("flex-vm", VM, "flex-start without a max run duration", lambda i: _sched(i).pop("maxRunDuration")),
    (
        "flex-vm",
        VM,
        "flex-start that stops instead of deleting",
        lambda i: _sched(i).update(instanceTerminationAction="STOP"),
    ),
    (
        "flex-vm",
        VM,
        "flex-start consuming a reservation",
        lambda i: i.update(
            reservationAffinity={
                "type": "SPECIFIC_RESERVATION",
                "specificReservation": {"key": "compute.googleapis.com/reservation-name", "values": ["res"]},
            }
        ),
    ),
    ("flex-vm", VM, "a run of 8 days", lambda i: _sched(i).update(maxRunDuration={"seconds": 8 * 24 * 3600})),
    (
        "roce",
        "gcp:compute/resizeRequest:ResizeRequest",
        "resize request without a run duration",
        lambda i: i.pop("requestedRunDuration"),
    ),
    (
        "roce",
        TEMPLATE,
        "11 NICs on a3-ultragpu-8g",
        lambda i: i["networkInterfaces"].append(dict(i["networkInterfaces"][0])),
    ),
    (
        "roce",
        TEMPLATE,
        "an MRDMA NIC on a regular network",
        lambda i: i["networkInterfaces"][-1].update(network=i["networkInterfaces"][1]["network"]),
    ),
    ("bound", TEMPLATE, "reservation-bound without a reservation", lambda i: i.pop("reservationAffinity")),
    (
        "bound",
        TEMPLATE,
        "reservation-bound without a termination action",
        lambda i: _sched(i).pop("instanceTerminationAction"),
    ),
    ("bound", TEMPLATE, "reservation-bound on a type that cannot be", lambda i: i.update(machineType="a3-highgpu-8g")),
]


@pytest.fixture(scope="module")
def gcp_registered():
    return {
        k: run_program(lambda s=spec, a=args: GpuWorkload(s["name"], s, args=a))[0].resources
        for k, (spec, args) in GCP.items()
    }


def _roce_firewall(resources):
    """A firewall rule on the RoCE network: what A3 Ultra / A4 networks refuse."""
    (roce,) = [r for r in resources if r.typ == "gcp:compute/network:Network" and r.inputs.get("networkProfile")]
    rule = Registered(
        "gcp:compute/firewall:Firewall",
        "pretrain-gcp-rdma-fw",
        {
            "name": "pretrain-rdma-internal",
            "network": f"{roce.name}-id",
            "direction": "INGRESS",
            "sourceRanges": ["192.168.0.0/16"],
            "allows": [{"protocol": "all"}],
        },
        None,
    )
    return [*resources, rule]


@pytest.mark.slow  # compute_v1 takes ~5 s to import on a cold machine
@pytest.mark.parametrize("scenario, typ, mistake, change", GCP_MISTAKES, ids=[m[2] for m in GCP_MISTAKES])
def test_gcp_layer_refuses(gcp_registered, scenario, typ, mistake, change):
    resources = gcp_registered[scenario]
    gcp_api.messages(resources)
    with pytest.raises(ApiModelError):
        gcp_api.messages(_mutated(resources, typ, change))


@pytest.mark.slow
def test_gcp_layer_refuses_a_firewall_on_the_roce_network(gcp_registered):
    with pytest.raises(ApiModelError, match="RoCE"):
        gcp_api.messages(_roce_firewall(gcp_registered["roce"]))


K8S_SPEC = {
    "name": "chat",
    "model": {"name": "llama-3.1-8b"},
    "inference": {"batch_size": 4},
    "placement": {"providers": ["onprem"]},
    "deploy": {"image": "vllm/vllm-openai:v0.11.0"},
}
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def _pod(i):
    return i["spec"]["template"]["spec"]


def _container(i):
    return _pod(i)["containers"][0]


K8S_MISTAKES = [
    (
        DEPLOYMENT,
        "selector that does not match the template",
        lambda i: i["spec"]["selector"]["matchLabels"].update({"app.kubernetes.io/name": "chat-v2"}),
    ),
    (
        DEPLOYMENT,
        "a volumeMount with no volume",
        lambda i: _container(i)["volumeMounts"].append({"name": "weights", "mountPath": "/weights"}),
    ),
    (DEPLOYMENT, "two volumes of one name", lambda i: _pod(i)["volumes"].append(dict(_pod(i)["volumes"][0]))),
    (DEPLOYMENT, "memory limit below the request", lambda i: _container(i)["resources"]["limits"].update(memory="8Gi")),
    (
        DEPLOYMENT,
        "GPU limit above the request",
        lambda i: _container(i)["resources"]["limits"].update({"nvidia.com/gpu": "2"}),
    ),
    (
        DEPLOYMENT,
        "probe on a port the container does not name",
        lambda i: _container(i)["startupProbe"]["httpGet"].update(port="web"),
    ),
    (
        "kubernetes:core/v1:Service",
        "selector that selects no pod",
        lambda i: i["spec"]["selector"].update({"app.kubernetes.io/name": "chat-svc"}),
    ),
]


@pytest.fixture
def k8s_registered(tiny_pools):
    return run_program(lambda: GpuWorkload("chat", K8S_SPEC, args=GpuWorkloadArgs(pools=tiny_pools)))[0].resources


@pytest.mark.parametrize("typ, mistake, change", K8S_MISTAKES, ids=[m[1] for m in K8S_MISTAKES])
def test_kubernetes_layer_refuses(k8s_registered, typ, mistake, change):
    k8s_api.manifests(k8s_registered)
    with pytest.raises(ApiModelError):
        k8s_api.manifests(_mutated(k8s_registered, typ, change))


def test_hpa_min_above_max_is_refused(tiny_pools):
    spec = {
        **K8S_SPEC,
        "deploy": {
            **K8S_SPEC["deploy"],
            "autoscaling": {"min_replicas": 1, "max_replicas": 3, "metric": "gpu_utilization", "target": 70},
        },
    }
    resources = run_program(lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs(pools=tiny_pools)))[0].resources
    k8s_api.manifests(resources)
    broken = _mutated(
        resources, "kubernetes:autoscaling/v2:HorizontalPodAutoscaler", lambda i: i["spec"].update(minReplicas=4)
    )
    with pytest.raises(ApiModelError, match="minReplicas 4 > maxReplicas"):
        k8s_api.manifests(broken)
