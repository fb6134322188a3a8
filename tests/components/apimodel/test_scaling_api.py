"""Autoscaling resources against their API schemas: KEDA CRD, Kubernetes HPA, compute_v1 Autoscaler, botocore."""

from __future__ import annotations

import copy

import botocore.exceptions
import pytest

from gpusizer.components import GpuWorkload, GpuWorkloadArgs
from tests.components.apimodel import aws_api, gcp_api, k8s_api, keda_api
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
GPU = {"min_replicas": 1, "max_replicas": 3, "metric": "gpu_utilization", "target": 70}
WINDOWS = {
    "min_replicas": 0,
    "metric": "schedule",
    "schedule": [{"start": "0 8 * * 1-5", "end": "0 20 * * 1-5", "replicas": 2, "timezone": "Europe/Berlin"}],
}
BASE = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"batch_size": 4}}
HPA = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"
AUTOSCALER = "gcp:compute/autoscaler:Autoscaler"


def _registered(provider: str, scaling: dict, pools=(), region=None):
    placement = {"providers": [provider], **({"regions": [region]} if region else {})}
    spec = {**BASE, "placement": placement, "deploy": {"autoscaling": scaling}}
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs(pools=pools)))
    return mocks


@pytest.mark.parametrize("scaling", [QUEUE, WINDOWS])
def test_scaled_object_matches_the_keda_crd_schema(tiny_pools, scaling):
    (so,) = _registered("onprem", scaling, tiny_pools).of_type(keda_api.TYPE)
    body = keda_api.scaled_object(so.name, so.inputs)
    assert body["spec"]["triggers"]


@pytest.mark.parametrize(
    "path, value, words",
    [
        (("spec", "triggers", 0, "metadata", "threshold"), 10, "is not of type 'string'"),
        (("spec", "maxReplicaCount"), "four", "is not of type 'integer'"),
        (("spec", "scaleTargetRef"), {"kind": "Deployment"}, "'name' is a required property"),
    ],
)
def test_keda_schema_refuses_a_broken_scaled_object(tiny_pools, path, value, words):
    (so,) = _registered("onprem", QUEUE, tiny_pools).of_type(keda_api.TYPE)
    broken = copy.deepcopy(so.inputs)
    at = broken
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    with pytest.raises(keda_api.ApiModelError, match=words):
        keda_api.scaled_object(so.name, broken)


def test_hpa_matches_the_kubernetes_openapi_model(tiny_pools):
    (hpa,) = _registered("onprem", GPU, tiny_pools).of_type(HPA)
    obj = k8s_api.manifest(hpa.typ, hpa.name, hpa.inputs)
    assert obj.spec.max_replicas == 3 and obj.spec.metrics[0].pods.metric.name == "DCGM_FI_DEV_GPU_UTIL"
    broken = copy.deepcopy(hpa.inputs)
    broken["spec"]["metrics"][0]["pods"]["target"]["averageValeu"] = "70"
    with pytest.raises(k8s_api.ApiModelError):
        k8s_api.manifest(hpa.typ, hpa.name, broken)


@pytest.mark.slow  # the first compute_v1 import costs ~5 s here
@pytest.mark.parametrize("scaling", [QUEUE, GPU, WINDOWS])
def test_gcp_autoscaler_matches_compute_v1(scaling):
    (auto,) = _registered("gcp", scaling, region="us-central1").of_type(AUTOSCALER)
    msg = gcp_api.autoscaler(auto.name, auto.inputs)
    assert msg.autoscaling_policy.max_num_replicas >= 1
    broken = copy.deepcopy(auto.inputs)
    broken["autoscalingPolicy"]["maxReplica"] = 4
    with pytest.raises(gcp_api.ApiModelError):
        gcp_api.autoscaler(auto.name, broken)


@pytest.mark.parametrize(
    "scaling, typ",
    [
        (QUEUE, "aws:autoscaling/policy:Policy"),
        (GPU, "aws:autoscaling/policy:Policy"),
        (WINDOWS, "aws:autoscaling/schedule:Schedule"),
    ],
)
def test_asg_scaling_requests_pass_botocore_validation(scaling, typ):
    mocks = _registered("aws", scaling, region="us-east-1")
    assert [r for r, _ in aws_api.requests(mocks.resources) if r.typ == typ]  # every AWS request validated


def test_botocore_refuses_a_broken_scaling_policy():
    mocks = _registered("aws", QUEUE, region="us-east-1")
    (policy,) = mocks.of_type("aws:autoscaling/policy:Policy")
    broken = copy.deepcopy(policy.inputs)
    broken["targetTrackingConfiguration"]["targetValue"] = "ten"
    with pytest.raises(botocore.exceptions.ParamValidationError):
        aws_api.validate(aws_api.scaling_policy(policy.name, broken))
    del broken["targetTrackingConfiguration"]["targetValue"]
    broken["policyType"] = "TargetTracking"
    with pytest.raises((aws_api.ApiModelError, botocore.exceptions.ParamValidationError)):
        aws_api.validate(aws_api.scaling_policy(policy.name, broken))


def test_keda_crd_refuses_unknown_fields(tiny_pools):
    # The vendored CRD with strict field validation: a misspelt field fails, at any depth.
    (so,) = _registered("onprem", QUEUE, tiny_pools).of_type(keda_api.TYPE)
    for change in (
        lambda s: s.update(minReplicas=0),
        lambda s: s["scaleTargetRef"].update(nmae="chat"),
        lambda s: s["triggers"][0].update(metadatas={}),
    ):
        broken = copy.deepcopy(so.inputs)
        change(broken["spec"])
        with pytest.raises(keda_api.ApiModelError, match="Additional properties are not allowed"):
            keda_api.scaled_object(so.name, broken)


def test_keda_rules_min_not_above_max(tiny_pools):
    (so,) = _registered("onprem", QUEUE, tiny_pools).of_type(keda_api.TYPE)
    broken = copy.deepcopy(so.inputs)
    broken["spec"].update(minReplicaCount=5, maxReplicaCount=2)
    with pytest.raises(keda_api.ApiModelError, match="minReplicaCount 5 > maxReplicaCount 2"):
        keda_api.scaled_object(so.name, broken)


SCALED_JOB = {  # a queue-driven batch job as KEDA's docs write one ("ScaledJob specification")
    "apiVersion": "keda.sh/v1alpha1",
    "kind": "ScaledJob",
    "metadata": {"name": "embed", "namespace": "batch"},
    "spec": {
        "jobTargetRef": {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 2,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "embed",
                            "image": "example/embed:1.0",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}},
                        }
                    ],
                }
            },
        },
        "pollingInterval": 30,
        "maxReplicaCount": 4,
        "successfulJobsHistoryLimit": 3,
        "scalingStrategy": {"strategy": "default"},
        "triggers": [
            {
                "type": "prometheus",
                "metadata": {"serverAddress": "http://prometheus:9090", "query": "sum(queue_length)", "threshold": "5"},
            }
        ],
    },
}


def test_scaled_job_matches_its_crd_and_its_job_spec():
    assert keda_api.scaled_job("embed", SCALED_JOB)["spec"]["maxReplicaCount"] == 4
    for change, words in (
        (lambda s: s.update(maxReplicas=4), "Additional properties"),
        (lambda s: s["triggers"][0]["metadata"].update(threshold=5), "is not of type 'string'"),
        (lambda s: s["jobTargetRef"].update(paralelism=1), "jobTargetRef"),
        (lambda s: s.pop("jobTargetRef"), "'jobTargetRef' is a required property"),
    ):
        broken = copy.deepcopy(SCALED_JOB)
        change(broken["spec"])
        with pytest.raises(keda_api.ApiModelError, match=words):
            keda_api.scaled_job("embed", broken)
