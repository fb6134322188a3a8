"""On-prem path under Pulumi mocks: namespace, GPU quota, Deployment on the pool's nodes."""

from __future__ import annotations

import gpusizer
from components import GpuWorkload
from gpusizer import metadata
from tests.components.conftest import run_program

POOL = {"name": "rack-a", "location": "fra-dc1", "gpu": "L40S", "gpus_per_node": 8, "usd_per_gpu_hour": 0.4,
        "node_selector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
SPEC = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"batch_size": 4},
        "placement": {"providers": ["onprem"]}, "deploy": {"image": "vllm/vllm-openai:v0.6.3", "replicas": 2}}


def test_pool_choice_gets_quota_and_deployment():
    pools = gpusizer.parse_pools([POOL])
    plan = gpusizer.plan(SPEC, pools=pools)
    mocks, _ = run_program(lambda: GpuWorkload("chat", SPEC, pools=pools, kubeconfigs={"rack-a": "kubeconfig-yaml"}).instance_type)
    assert mocks.one("pulumi:providers:kubernetes")["kubeconfig"] == "kubeconfig-yaml"
    ns = mocks.one("kubernetes:core/v1:Namespace")
    assert ns["metadata"]["annotations"][metadata.K8S_REQUIRED] == f"{plan.required_gpu_memory_gib:.2f}"
    quota = mocks.one("kubernetes:core/v1:ResourceQuota")
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == str(plan.chosen.gpu_count * 2)
    dep = mocks.one("kubernetes:apps/v1:Deployment")
    pod = dep["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == POOL["node_selector"]
    assert pod["tolerations"] == POOL["tolerations"]
    limits = pod["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == str(plan.chosen.gpu_count)
    assert dep["spec"]["replicas"] == 2
    assert dep["metadata"]["annotations"][metadata.K8S_WORKLOAD] == "chat"


def test_no_image_means_quota_only():
    spec = {**SPEC, "deploy": {}}
    pools = gpusizer.parse_pools([POOL])
    mocks, _ = run_program(lambda: GpuWorkload("chat", spec, pools=pools).instance_type)
    assert mocks.of_type("kubernetes:core/v1:ResourceQuota")
    assert not mocks.of_type("kubernetes:apps/v1:Deployment")
