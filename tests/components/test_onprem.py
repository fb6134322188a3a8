"""On-prem path under Pulumi mocks: namespace, GPU quota, Deployment on the pool's nodes, kubeconfig."""

from __future__ import annotations

import pulumi
import pytest

import gpusizer
from components import GpuWorkload, GpuWorkloadArgs, tags
from tests.components.conftest import parent_type, run_program, secret_value

SPEC = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"batch_size": 4},
        "placement": {"providers": ["onprem"]}, "deploy": {"image": "vllm/vllm-openai:v0.6.3", "replicas": 2}}
NS = "kubernetes:core/v1:Namespace"
QUOTA = "kubernetes:core/v1:ResourceQuota"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def test_pool_choice_gets_quota_and_deployment(tiny_pools):
    plan = gpusizer.plan(SPEC, pools=tiny_pools)
    c = plan.chosen
    assert (c.offer.provider, c.offer.instance_type, c.replicas) == ("onprem", "rack-a", 2)

    def prog():  # Outputs belong to the run's event loop: made inside it
        kubeconfigs = {"rack-a": pulumi.Output.secret("apiVersion: v1")}
        w = GpuWorkload("chat", SPEC, args=GpuWorkloadArgs(pools=tiny_pools, kubeconfigs=kubeconfigs))
        pulumi.export("out", {"instance_type": w.instance_type, "hourly_usd": w.hourly_usd, **w.ids})

    mocks, _, resolved = run_program(prog)
    provider = mocks.one("pulumi:providers:kubernetes")
    assert secret_value(provider["kubeconfig"]) == "apiVersion: v1"  # stays a secret in the state
    ns = mocks.one(NS)
    assert ns["metadata"]["name"] == "chat"
    annotations = ns["metadata"]["annotations"]
    assert float(annotations[tags.K8S_REQUIRED]) == plan.required_gpu_memory_gib
    assert annotations[tags.K8S_WORKLOAD] == "chat" and annotations[tags.K8S_POOL] == "rack-a"
    quota = mocks.one(QUOTA)
    assert quota["metadata"]["namespace"] == "chat"
    assert quota["spec"]["hard"] == {"requests.nvidia.com/gpu": str(c.gpu_count * 2)}  # no limits. for extended
    dep = mocks.one(DEPLOYMENT)
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    (container,) = pod["containers"]
    assert container["image"] == "vllm/vllm-openai:v0.6.3"
    assert container["resources"] == {"requests": {"nvidia.com/gpu": str(c.offer.gpu_count)},
                                      "limits": {"nvidia.com/gpu": str(c.offer.gpu_count)}}
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    for meta in (dep["metadata"], dep["spec"]["template"]["metadata"]):
        assert float(meta["annotations"][tags.K8S_REQUIRED]) == plan.required_gpu_memory_gib
    ref = [r for r in mocks.resources if r.typ == "pulumi:providers:kubernetes"][0]
    assert all(r.provider == f"{ref.urn}::{ref.name}-id" for r in mocks.resources if r.typ.startswith("kubernetes:"))
    assert {parent_type(r) for r in mocks.resources if r.typ.startswith(("kubernetes:", "pulumi:providers"))} == {
        "gpusizer:onprem:GpuCapacity"}
    assert resolved["out"]["namespace"] == "chat" and resolved["out"]["instance_type"] == "rack-a"


def test_no_image_means_quota_only_and_ambient_kubeconfig(tiny_pools):
    spec = {**SPEC, "deploy": {}}
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs(pools=tiny_pools)))
    assert mocks.of_type(QUOTA)
    assert not mocks.of_type(DEPLOYMENT)
    assert not mocks.of_type("pulumi:providers:kubernetes")  # the default provider: ambient kubeconfig


def test_full_pool_bursts_to_the_cloud(tiny_pools):
    full = [p.allocate(p.free) for p in tiny_pools]
    spec = {**SPEC, "placement": {"providers": ["onprem", "aws"], "regions": ["fra-dc1", "us-east-1"]}}
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs(pools=full, aws_region="us-east-1")))
    assert not mocks.of_type(NS)
    assert mocks.of_type("aws:ec2/launchTemplate:LaunchTemplate")
    assert "rack-a" in gpusizer.plan(spec, pools=full).burst


def test_unknown_toleration_field_fails_before_anything_is_registered():
    pools = gpusizer.parse_pools([{"name": "rack-b", "location": "lab", "gpu": "L40S", "gpus_per_node": 4,
                                   "usd_per_gpu_hour": 0.4, "tolerations": [{"key": "gpu", "efect": "NoSchedule"}]}])
    errors = []

    def prog():
        try:
            GpuWorkload("chat", SPEC, args=GpuWorkloadArgs(pools=pools))
        except gpusizer.SpecError as e:
            errors.append(e)

    mocks, _, _ = run_program(prog)
    assert errors[0].field == "pools.rack-b.tolerations" and "efect" in str(errors[0])
    assert mocks.resources == []


@pytest.mark.parametrize("given, expected", [
    ({"key": "a", "operator": "Equal", "value": "b", "effect": "NoExecute", "tolerationSeconds": 30},
     {"key": "a", "operator": "Equal", "value": "b", "effect": "NoExecute", "tolerationSeconds": 30}),
    ({"operator": "Exists"}, {"operator": "Exists"}),  # tolerate every taint
])
def test_tolerations_keep_kubernetes_field_names(tiny_pools, given, expected):
    pools = [tiny_pools[0].model_copy(update={"tolerations": [given]})]
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", SPEC, args=GpuWorkloadArgs(pools=pools)))
    assert mocks.one(DEPLOYMENT)["spec"]["template"]["spec"]["tolerations"] == [expected]
