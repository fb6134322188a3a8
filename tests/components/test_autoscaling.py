"""deploy.autoscaling under Pulumi mocks: KEDA/HPA and quota on pools, ASG bounds and policy, GCP Autoscaler."""

from __future__ import annotations

import pytest

import gpusizer
from gpusizer.components import GpuWorkload, GpuWorkloadArgs, scaling, tags
from tests.components.conftest import run_program

QUERY = 'sum(rate(nginx_ingress_controller_requests{service="chat"}[2m]))'
QUEUE = {
    "min_replicas": 0,
    "max_replicas": 4,
    "metric": "queue_depth",
    "query": QUERY,
    "target": 10,
    "scale_to_zero_after": "15m",
}
BASE = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"batch_size": 4}}
ONPREM = {
    **BASE,
    "placement": {"providers": ["onprem"]},
    "deploy": {"image": "vllm/vllm-openai:v0.11.0", "autoscaling": QUEUE},
}
AWS = {**BASE, "placement": {"providers": ["aws"], "regions": ["us-east-1"]}, "deploy": {"autoscaling": QUEUE}}
GCP = {**BASE, "placement": {"providers": ["gcp"], "regions": ["us-central1"]}, "deploy": {"autoscaling": QUEUE}}
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
HPA = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"


def _program(spec, pools=()):
    return lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs(pools=pools))


def test_pool_queue_depth_registers_keda_scaled_object_and_quota_for_max(tiny_pools):
    plan = gpusizer.plan(ONPREM, pools=tiny_pools)
    gpus = plan.chosen.offer.gpu_count
    mocks, _, _ = run_program(_program(ONPREM, tiny_pools))
    so = mocks.one(SCALED_OBJECT)
    assert so["apiVersion"] == "keda.sh/v1alpha1" and so["kind"] == "ScaledObject"
    spec = so["spec"]
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (0, 4)
    assert spec["cooldownPeriod"] == 15 * 60
    assert spec["scaleTargetRef"]["name"] == "chat"
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "prometheus"
    assert trigger["metadata"]["query"] == QUERY and trigger["metadata"]["threshold"] == "10"
    meta = so["metadata"]
    assert meta["namespace"] == "chat-dev"  # the namespace carries the stack name
    assert meta["annotations"][scaling.K8S_MAX_REPLICAS] == "4"
    assert float(meta["annotations"][tags.K8S_REQUIRED]) == plan.required_gpu_memory_gib
    assert mocks.one("kubernetes:core/v1:ResourceQuota")["spec"]["hard"] == {"requests.nvidia.com/gpu": str(4 * gpus)}
    assert mocks.one("kubernetes:apps/v1:Deployment")["spec"]["replicas"] == 0  # KEDA owns it from min
    assert not mocks.of_type(HPA)


def test_pool_gpu_utilization_registers_hpa_on_dcgm(tiny_pools):
    spec = {
        **ONPREM,
        "deploy": {"autoscaling": {"min_replicas": 1, "max_replicas": 3, "metric": "gpu_utilization", "target": 70}},
    }
    mocks, _, _ = run_program(_program(spec, tiny_pools))
    hpa = mocks.one(HPA)
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 3)
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "Pods" and metric["pods"]["metric"]["name"] == "DCGM_FI_DEV_GPU_UTIL"
    assert metric["pods"]["target"] == {"type": "AverageValue", "averageValue": "70"}
    assert hpa["metadata"]["annotations"][scaling.K8S_MAX_REPLICAS] == "3"
    assert not mocks.of_type(SCALED_OBJECT)


def test_aws_group_gets_min_max_and_target_tracking_policy():
    mocks, _, _ = run_program(_program(AWS))
    asg = mocks.one("aws:autoscaling/group:Group")
    assert (asg["minSize"], asg["maxSize"]) == (0, 4)
    assert "desiredCapacity" not in asg
    assert "warmPool" not in asg
    group_tags = {t["key"]: t["value"] for t in asg["tags"]}
    assert group_tags[scaling.AWS_MAX_REPLICAS] == "4"
    policy = mocks.one("aws:autoscaling/policy:Policy")
    assert policy["policyType"] == "TargetTrackingScaling"
    tracking = policy["targetTrackingConfiguration"]
    assert tracking["targetValue"] == 10
    ids = [m["id"] for m in tracking["customizedMetricSpecification"]["metrics"]]
    assert ids == ["m1", "m2", "e1"]
    # A new instance's metric joins the group's once its server could be up: the same load time the group's
    # health checks wait for (a cloud-engineer review: without it, loading instances at ~0% GPU scale it back in).
    assert policy["estimatedInstanceWarmup"] == asg["healthCheckGracePeriod"] > 300


def test_aws_schedule_registers_start_and_end_actions():
    spec = {
        **AWS,
        "deploy": {
            "autoscaling": {
                "min_replicas": 0,
                "metric": "schedule",
                "schedule": [
                    {"start": "0 8 * * 1-5", "end": "0 20 * * 1-5", "replicas": 2, "timezone": "Europe/Berlin"}
                ],
            }
        },
    }
    mocks, _, _ = run_program(_program(spec))
    actions = sorted(
        (r.inputs for r in mocks.of_type("aws:autoscaling/schedule:Schedule")), key=lambda a: a["recurrence"]
    )
    assert [(a["recurrence"], a["desiredCapacity"], a["minSize"]) for a in actions] == [
        ("0 20 * * 1-5", 0, 0),
        ("0 8 * * 1-5", 2, 2),
    ]
    assert {a["timeZone"] for a in actions} == {"Europe/Berlin"}
    assert not mocks.of_type("aws:autoscaling/policy:Policy")


def test_gcp_group_gets_autoscaler_min_zero_max_four():
    mocks, _, _ = run_program(_program(GCP))
    mig = mocks.one("gcp:compute/instanceGroupManager:InstanceGroupManager")
    assert "targetSize" not in mig
    auto = mocks.one("gcp:compute/autoscaler:Autoscaler")
    policy = auto["autoscalingPolicy"]
    assert (policy["minReplicas"], policy["maxReplicas"]) == (0, 4)
    (metric,) = policy["metrics"]
    assert metric["singleInstanceAssignment"] == 10
    assert f"{scaling.GCP_MAX_REPLICAS}=4" in auto["description"]
    assert f"{tags.GCP_REQUIRED}=" in auto["description"]
    # The autoscaler ignores a new VM's metric for the load time, as autohealing waits for it (was 60 s).
    assert policy["cooldownPeriod"] == mig["autoHealingPolicies"]["initialDelaySec"] > 300


@pytest.mark.parametrize("metric, extra", [("gpu_utilization", {"min_replicas": 1, "target": 60})])
def test_gcp_gpu_utilization_scales_on_the_ops_agent_metric(metric, extra):
    spec = {**GCP, "deploy": {"autoscaling": {"metric": metric, "max_replicas": 2, **extra}}}
    mocks, _, _ = run_program(_program(spec))
    (m,) = mocks.one("gcp:compute/autoscaler:Autoscaler")["autoscalingPolicy"]["metrics"]
    assert (m["name"], m["target"], m["type"]) == (scaling.GCP_GPU_METRIC, 60, "GAUGE")
