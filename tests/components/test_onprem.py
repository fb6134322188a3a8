"""On-prem path under Pulumi mocks: namespace, GPU quota, Deployment on the pool's nodes, kubeconfig."""

from __future__ import annotations

import pulumi
import pytest

import gpusizer
from gpusizer.components import GpuWorkload, GpuWorkloadArgs, tags
from tests.components.conftest import parent_type, run_program, secret_value

SPEC = {
    "name": "chat",
    "model": {"name": "llama-3.1-8b"},
    "inference": {"batch_size": 4},
    "placement": {"providers": ["onprem"]},
    "deploy": {"image": "vllm/vllm-openai:v0.11.0", "replicas": 2},
}
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
    assert ns["metadata"]["name"] == "chat-dev"  # the stack name: two stacks can share the cluster
    annotations = ns["metadata"]["annotations"]
    assert float(annotations[tags.K8S_REQUIRED]) == plan.required_gpu_memory_gib
    assert annotations[tags.K8S_WORKLOAD] == "chat" and annotations[tags.K8S_POOL] == "rack-a"
    quota = mocks.one(QUOTA)
    assert quota["metadata"]["namespace"] == "chat-dev"
    assert quota["spec"]["hard"] == {"requests.nvidia.com/gpu": str(c.gpu_count * 2)}  # no limits. for extended
    dep = mocks.one(DEPLOYMENT)
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    (container,) = pod["containers"]
    assert container["image"] == "vllm/vllm-openai:v0.11.0"
    # Llama 3.1 8B in bf16: 8.03e9 x 2 B = 16.06 GB = 14.96 GiB of weights, one GPU per pod.
    # cpu: the engine's 2-vCPU floor; memory: the shard held while loading (14.96 GiB) + 4 GiB for the
    # server = 18.96 -> 19 GiB; ephemeral storage: 2 GiB of logs + the emptyDir cache, 14.96 x 1.1 -> 17 GiB.
    assert c.offer.gpu_count == 1
    assert container["resources"] == {
        "requests": {"nvidia.com/gpu": "1", "cpu": "2", "memory": "19Gi", "ephemeral-storage": "19Gi"},
        "limits": {"nvidia.com/gpu": "1", "memory": "19Gi"},
    }
    assert pod["volumes"] == [{"name": "model-cache", "emptyDir": {"sizeLimit": "17Gi"}}]
    assert container["volumeMounts"] == [{"name": "model-cache", "mountPath": "/root/.cache/huggingface"}]
    # Startup: 16.06 GB at 0.1 GB/s = 161 s + 600 s of engine start = 761 s, probed every 10 s -> 77 tries.
    assert container["startupProbe"] == {
        "httpGet": {"path": "/health", "port": "http"},
        "periodSeconds": 10,
        "failureThreshold": 77,
    }
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    for meta in (dep["metadata"], dep["spec"]["template"]["metadata"]):
        assert float(meta["annotations"][tags.K8S_REQUIRED]) == plan.required_gpu_memory_gib
    ref = [r for r in mocks.resources if r.typ == "pulumi:providers:kubernetes"][0]
    assert all(r.provider == f"{ref.urn}::{ref.name}-id" for r in mocks.resources if r.typ.startswith("kubernetes:"))
    assert {parent_type(r) for r in mocks.resources if r.typ.startswith(("kubernetes:", "pulumi:providers"))} == {
        "gpusizer:onprem:GpuCapacity"
    }
    assert resolved["out"]["namespace"] == "chat-dev" and resolved["out"]["instance_type"] == "rack-a"


def test_no_image_means_quota_only_and_ambient_kubeconfig(tiny_pools):
    spec = {**SPEC, "deploy": {}}
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs(pools=tiny_pools)))
    assert mocks.of_type(QUOTA)
    assert not mocks.of_type(DEPLOYMENT)
    assert not mocks.of_type("pulumi:providers:kubernetes")  # the default provider: ambient kubeconfig


def test_full_pool_bursts_to_the_cloud(tiny_pools):
    full = [p.allocate(p.free) for p in tiny_pools]
    spec = {**SPEC, "placement": {"providers": ["onprem", "aws"], "regions": ["fra-dc1", "us-east-1"]}}
    mocks, _, _ = run_program(
        lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs(pools=full, aws_region="us-east-1"))
    )
    assert not mocks.of_type(NS)
    assert mocks.of_type("aws:ec2/launchTemplate:LaunchTemplate")
    assert "rack-a" in gpusizer.plan(spec, pools=full).burst


def test_unknown_toleration_field_fails_before_anything_is_registered():
    pools = gpusizer.parse_pools(
        [
            {
                "name": "rack-b",
                "location": "lab",
                "gpu": "L40S",
                "gpus_per_node": 4,
                "usd_per_gpu_hour": 0.4,
                "tolerations": [{"key": "gpu", "efect": "NoSchedule"}],
            }
        ]
    )
    errors = []

    def prog():
        try:
            GpuWorkload("chat", SPEC, args=GpuWorkloadArgs(pools=pools))
        except gpusizer.SpecError as e:
            errors.append(e)

    mocks, _, _ = run_program(prog)
    assert errors[0].field == "pools.rack-b.tolerations" and "efect" in str(errors[0])
    assert mocks.resources == []


@pytest.mark.parametrize(
    "given, expected",
    [
        (
            {"key": "a", "operator": "Equal", "value": "b", "effect": "NoExecute", "tolerationSeconds": 30},
            {"key": "a", "operator": "Equal", "value": "b", "effect": "NoExecute", "tolerationSeconds": 30},
        ),
        ({"operator": "Exists"}, {"operator": "Exists"}),  # tolerate every taint
    ],
)
def test_tolerations_keep_kubernetes_field_names(tiny_pools, given, expected):
    pools = [tiny_pools[0].model_copy(update={"tolerations": [given]})]
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", SPEC, args=GpuWorkloadArgs(pools=pools)))
    assert mocks.one(DEPLOYMENT)["spec"]["template"]["spec"]["tolerations"] == [expected]


SERVICE = "kubernetes:core/v1:Service"
SECRET = "kubernetes:core/v1:Secret"
SERVE_70B = {
    **SPEC,
    "name": "big",
    "model": {"name": "llama-3.1-70b"},
    "inference": {"batch_size": 4, "context_length": 6144},
    "sizing": {"memory_headroom": 0.88},
    "deploy": {"image": "vllm/vllm-openai:v0.11.0"},
}


def _flag(args, flag):
    return args[args.index(flag) + 1]


@pytest.mark.parametrize("spec", [SPEC, SERVE_70B], ids=["8b", "70b"])
def test_serving_pods_run_vllm_for_the_sized_model_and_layout(tiny_pools, spec):
    plan = gpusizer.plan(spec, pools=tiny_pools)
    c = plan.chosen
    mocks, _, _ = run_program(lambda: GpuWorkload(spec["name"], spec, args=GpuWorkloadArgs(pools=tiny_pools)))
    dep = mocks.one(DEPLOYMENT)
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    # Registry ids (data/models): Llama 3.1 8B and 70B on the Hugging Face hub.
    expected_id = {"llama-3.1-8b": "meta-llama/Llama-3.1-8B", "llama-3.1-70b": "meta-llama/Llama-3.1-70B"}
    assert _flag(args, "--model") == expected_id[spec["model"]["name"]]
    assert _flag(args, "--tensor-parallel-size") == str(c.fit.tensor_parallel)
    assert container["resources"]["limits"]["nvidia.com/gpu"] == str(c.offer.gpu_count)  # one node's GPUs
    assert "--pipeline-parallel-size" not in args and "--data-parallel-size" not in args  # one replica per node
    assert _flag(args, "--max-model-len") == str(spec["inference"].get("context_length", 4096))
    assert float(_flag(args, "--gpu-memory-utilization")) == spec.get("sizing", {}).get("memory_headroom", 0.90)
    assert dep["spec"]["replicas"] == c.instances == c.replicas
    probe = container["readinessProbe"]["httpGet"]
    assert probe["path"] == "/health" and probe["port"] == "http"
    assert container["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    svc = mocks.one(SERVICE)
    assert svc["spec"]["type"] == "ClusterIP" and svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
    assert svc["metadata"]["namespace"] == mocks.one(NS)["metadata"]["name"]
    assert "env" not in container and not mocks.of_type(SECRET)  # no token configured: no Secret


def test_seventy_b_spans_four_gpus_and_gets_shared_memory(tiny_pools):
    # 70B bf16 weights alone are ~131 GiB; an L40S has 48 GB (44.7 GiB): more than two, so TP 4 of the 8.
    mocks, _, _ = run_program(lambda: GpuWorkload("big", SERVE_70B, args=GpuWorkloadArgs(pools=tiny_pools)))
    pod = mocks.one(DEPLOYMENT)["spec"]["template"]["spec"]
    assert _flag(pod["containers"][0]["args"], "--tensor-parallel-size") == "4"
    # 70.55e9 params x 2 B = 141.1 GB = 131.4 GiB of weights; the cache holds them x 1.1 -> 145 GiB.
    assert pod["volumes"] == [
        {"name": "model-cache", "emptyDir": {"sizeLimit": "145Gi"}},
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}},
    ]
    requests = pod["containers"][0]["resources"]["requests"]
    # Memory: four workers each hold a quarter of the weights (32.85 GiB) = 131.4 + 4 server + 2 shm -> 138 GiB.
    assert requests["memory"] == "138Gi"


def test_pool_storage_class_gives_each_pod_a_sized_cache_volume(tiny_pools):
    pools = [p.model_copy(update={"cache_storage_class": "fast-nvme"}) for p in tiny_pools]
    mocks, _, _ = run_program(lambda: GpuWorkload("big", SERVE_70B, args=GpuWorkloadArgs(pools=pools)))
    pod = mocks.one(DEPLOYMENT)["spec"]["template"]["spec"]
    (cache,) = [v for v in pod["volumes"] if v["name"] == "model-cache"]
    claim = cache["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert claim == {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "fast-nvme",
        "resources": {"requests": {"storage": "145Gi"}},
    }
    # The weights are on the volume, not the node's disk: ephemeral storage is the logs only.
    assert pod["containers"][0]["resources"]["requests"]["ephemeral-storage"] == "2Gi"


def test_min_zero_on_a_signal_only_pods_emit_is_refused(tiny_pools):
    scaling = {
        "min_replicas": 0,
        "max_replicas": 2,
        "metric": "queue_depth",
        "target": 5,
        "query": 'sum(vllm:num_requests_waiting{model_name="x"})',
    }
    spec = {**SPEC, "deploy": {**SPEC["deploy"], "replicas": 1, "autoscaling": scaling}}
    errors = []

    def prog():
        try:
            GpuWorkload("chat", spec, args=GpuWorkloadArgs(pools=tiny_pools))
        except gpusizer.SpecError as e:
            errors.append(e)

    mocks, _, _ = run_program(prog)
    assert errors and errors[0].field == "deploy.autoscaling.min_replicas" and "0 -> 1" in str(errors[0])
    assert mocks.resources == []


def test_hf_token_lives_only_in_a_secret(tiny_pools):
    def prog():
        w = GpuWorkload(
            "chat", SPEC, args=GpuWorkloadArgs(pools=tiny_pools, hf_token=pulumi.Output.secret("hf_s3cr3t"))
        )
        pulumi.export("out", w.ids)

    mocks, _, resolved = run_program(prog)
    secret = mocks.one(SECRET)
    assert secret_value(secret["stringData"]) == {"token": "hf_s3cr3t"}  # a secret in the state
    (container,) = mocks.one(DEPLOYMENT)["spec"]["template"]["spec"]["containers"]
    assert container["env"] == [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": secret["metadata"]["name"], "key": "token"}}}
    ]
    assert "hf_s3cr3t" not in repr(resolved) and "hf_s3cr3t" not in repr(mocks.one(DEPLOYMENT))


def test_two_stacks_get_different_namespaces(tiny_pools):
    found = set()
    for stack in ("dev", "prod"):
        mocks, _, _ = run_program(
            lambda: GpuWorkload("chat", SPEC, args=GpuWorkloadArgs(pools=tiny_pools)), stack=stack
        )
        found.add(mocks.one(NS)["metadata"]["name"])
    assert found == {"chat-dev", "chat-prod"}


def test_training_deployment_keeps_the_image_command(tiny_pools):
    spec = {**SPEC, "task": "finetune", "inference": None, "deploy": {"image": "ghcr.io/acme/trainer:1"}}
    spec = {k: v for k, v in spec.items() if v is not None}
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs(pools=tiny_pools)))
    (container,) = mocks.one(DEPLOYMENT)["spec"]["template"]["spec"]["containers"]
    assert "args" not in container and "readinessProbe" not in container
    assert not mocks.of_type(SERVICE)


def test_explicit_architecture_cannot_be_served_and_registers_nothing(tiny_pools):
    spec = {**SPEC, "model": {"params_b": 8, "layers": 32, "hidden_size": 4096, "attention_heads": 32, "kv_heads": 8}}
    errors = []

    def prog():
        try:
            GpuWorkload("chat", spec, args=GpuWorkloadArgs(pools=tiny_pools))
        except gpusizer.SpecError as e:
            errors.append(e)

    mocks, _, _ = run_program(prog)
    assert errors and errors[0].field == "model" and "To fix" in str(errors[0])
    assert mocks.resources == []


@pytest.mark.parametrize(
    "tp, per_node, stages, flags",
    [
        (4, 2, 1, {"--tensor-parallel-size": "4", "--data-parallel-size": "2"}),  # 2 x TP4 on an 8-GPU node
        (8, 1, 2, {"--tensor-parallel-size": "8", "--pipeline-parallel-size": "2"}),  # one replica over 2 nodes
    ],
)
def test_vllm_args_follow_every_axis_of_the_layout(tiny_pools, tp, per_node, stages, flags):
    import dataclasses

    from gpusizer.components import serving

    d = gpusizer.plan(SPEC, pools=tiny_pools)
    fit = d.chosen.fit._replace(tensor_parallel=tp, replicas_per_node=per_node, pipeline_stages=stages)
    args = serving.vllm_args(dataclasses.replace(d, chosen=dataclasses.replace(d.chosen, fit=fit)))
    assert {k: _flag(args, k) for k in flags} == flags
    absent = {"--data-parallel-size", "--pipeline-parallel-size"} - set(flags)
    assert not absent & set(args)
