"""On-prem (hybrid): a namespace with a GPU quota, and the workload, on the pool's Kubernetes cluster."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpusizer.base import errors
from gpusizer.catalog.onprem import Pool
from gpusizer.components import names, scaling, serving
from gpusizer.components import tags as tagging
from gpusizer.decide.decision import Decision

GPU_RESOURCE = "nvidia.com/gpu"  # the NVIDIA device plugin's extended resource
# Serving pods' requests beyond the GPUs (so the pod is not BestEffort and the node keeps room for
# the load): the engine's host minimums (Workload.min_vcpus, min_ram_gib: each worker's shard of the
# weights resident while it is copied to the GPU) plus SERVER_RAM_GIB for the server process, and
# /dev/shm; ephemeral storage for the logs and, with an emptyDir cache, the weights.
SERVER_RAM_GIB = 4
# /dev/shm for tensor-parallel workers: a memory-backed emptyDir with a size limit (vLLM docs, "Using
# Kubernetes": `medium: Memory`, `sizeLimit: 2Gi`); it counts against the pod's memory, so it is requested.
SHM_GIB = 2
LOG_GIB = 2
# Cache room over the weights' size: tokenizer, config and the download's partial files.
CACHE_MARGIN = 1.1
# Kubernetes probes every 10 s (the API's default periodSeconds; "Configure Liveness, Readiness and Startup
# Probes", read 2026-11-26). Readiness drops after 3 misses (the default failureThreshold), liveness restarts
# after 6 (a minute: longer than a slow answer while the engine compiles a batch); the startup probe allows
# the model's load time (serving.load_seconds).
PROBE_PERIOD = 10
# The SDK subpackages provision() uses (gpusizer.base.providers.Provider.component says why).
SDK_MODULES = (
    "pulumi_kubernetes.core.v1",
    "pulumi_kubernetes.apps.v1",
    "pulumi_kubernetes.meta.v1",
    "pulumi_kubernetes.autoscaling.v2",
    "pulumi_kubernetes.apiextensions",
)
# Kubernetes toleration fields as written in pool YAML (camelCase) -> the SDK's argument names.
_TOLERATION_FIELDS = {
    "key": "key",
    "operator": "operator",
    "value": "value",
    "effect": "effect",
    "tolerationSeconds": "toleration_seconds",
    "toleration_seconds": "toleration_seconds",
}


@dataclasses.dataclass
class OnPremGpuCapacityArgs:
    decision: Decision
    """The engine's decision; its choice must be this pool."""
    pool: Pool
    """The pool (node selector, tolerations)."""
    kubeconfig: pulumi.Input[str] | None = None
    """The pool cluster's kubeconfig, as a Pulumi secret; None uses the ambient kubeconfig/context."""
    hf_token: pulumi.Input[str] | None = None
    """Hugging Face token for gated weights, as a Pulumi secret; stored in a Kubernetes Secret."""
    stack: str | None = None
    """Stack name in the namespace (default: the running stack), so two stacks share a cluster."""
    prometheus_url: str = scaling.DEFAULT_PROMETHEUS
    """Prometheus that KEDA queries for a query metric (deploy.autoscaling)."""


class OnPremGpuCapacity(pulumi.ComponentResource):
    """GPU capacity on an on-prem Kubernetes pool.

    A namespace `<workload>-<stack>` whose ResourceQuota caps
    requests.nvidia.com/gpu at the GPUs chosen for it (max replicas' when
    autoscaled, with a KEDA ScaledObject or an HPA: components/scaling.py),
    and, when the spec names a container image, a Deployment of one pod per
    node launched (Candidate.instances), each requesting one node's GPUs on the
    pool's nodes (its node selector and tolerations). Serving (task
    inference): the image is taken to be vLLM's OpenAI server, started with
    gpusizer.components.serving.vllm_args (the node's replicas as data-parallel ranks
    of the replica's tensor-parallel size), a readiness probe on /health,
    HF_TOKEN from a Secret when a token is given, and a ClusterIP Service in
    front. Training: the image's own command. Everything carries the sizing
    annotations.
    """

    namespace: pulumi.Output[str]
    deployment_name: pulumi.Output[str] | None
    service_name: pulumi.Output[str] | None

    def __init__(self, name: str, args: OnPremGpuCapacityArgs, opts: pulumi.ResourceOptions | None = None):
        d = args.decision
        c = d.chosen
        if c is None or c.offer.provider != "onprem" or c.offer.instance_type != args.pool.name:
            raise ValueError(f"OnPremGpuCapacity needs a decision whose choice is pool {args.pool.name}")
        tolerations = [pod_toleration(t, args.pool.name) for t in args.pool.tolerations]  # before anything exists
        super().__init__("gpusizer:onprem:GpuCapacity", name, {}, opts)
        spec = d.workload.spec
        provider = None
        if args.kubeconfig is not None:
            provider = k8s.Provider(
                f"{name}-cluster",
                kubeconfig=pulumi.Output.secret(args.kubeconfig),
                opts=pulumi.ResourceOptions(parent=self),
            )
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        annotations = tagging.k8s_annotations(d)
        labels = {"app.kubernetes.io/name": spec.name, "app.kubernetes.io/managed-by": "gpusizer"}
        stack = args.stack or pulumi.get_stack()
        pods = most = c.instances  # one pod per node; a multi-node choice is one pod per node
        scaled = d.autoscaling is not None
        if scaled:  # the quota covers max replicas; the Deployment starts at min and the scaler owns it
            pods, most = scaling.bounds(d)
        ns = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=names.per_stack(spec.name, stack), annotations=annotations, labels=labels
            ),
            opts=child,
        )
        gpus = str(most * c.offer.gpu_count)
        k8s.core.v1.ResourceQuota(
            f"{name}-quota",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                namespace=ns.metadata.name, name="gpu", annotations=annotations, labels=labels
            ),
            # Extended resources take only the requests. prefix in a quota (Kubernetes docs, "Resource
            # Quotas": "quota items prefixed with requests. are allowed"); requests == limits for GPUs.
            spec=k8s.core.v1.ResourceQuotaSpecArgs(hard={f"requests.{GPU_RESOURCE}": gpus}),
            opts=child,
        )
        self.deployment_name = None
        self.service_name = None
        if spec.deploy.image:
            self.deployment_name, self.service_name = _workload(
                name, d, args, ns.metadata.name, pods, scaled, tolerations, annotations, labels, child
            )
        if scaled:  # the workload's Deployment (deploy.image), or the user's of the same name in the namespace
            scaling.k8s_scaler(name, d, ns.metadata.name, spec.name, args.prometheus_url, child)
        self.namespace = ns.metadata.name
        self.register_outputs(
            {"namespace": self.namespace, "deployment_name": self.deployment_name, "service_name": self.service_name}
        )


def _workload(
    name: str,
    d: Decision,
    args: OnPremGpuCapacityArgs,
    namespace: pulumi.Output[str],
    pods: int,
    scaled: bool,
    tolerations: list,
    annotations: dict,
    labels: dict,
    child: pulumi.ResourceOptions,
):
    """The Deployment (and, for serving, its Secret and Service); returns (deployment, service) names."""
    spec = d.workload.spec
    c = d.chosen
    serve = spec.task == "inference"
    meta = dict(namespace=namespace, annotations=annotations, labels=labels)
    env, volumes, mounts, ports, probe = None, None, None, None, None
    gpus_per_pod, container_args = c.offer.gpu_count, None
    requests = {GPU_RESOURCE: str(gpus_per_pod)}
    limits = {GPU_RESOURCE: str(gpus_per_pod)}
    startup = liveness = None
    if serve:
        container_args = serving.vllm_args(d)
        ports = [k8s.core.v1.ContainerPortArgs(name="http", container_port=serving.PORT, protocol="TCP")]
        health = k8s.core.v1.HTTPGetActionArgs(path=serving.HEALTH_PATH, port="http")
        # Startup: the weights download and load (serving.load_seconds); then readiness and liveness.
        startup = k8s.core.v1.ProbeArgs(
            http_get=health,
            period_seconds=PROBE_PERIOD,
            failure_threshold=math.ceil(serving.load_seconds(d) / PROBE_PERIOD),
        )
        probe = k8s.core.v1.ProbeArgs(http_get=health, period_seconds=PROBE_PERIOD, failure_threshold=3)
        liveness = k8s.core.v1.ProbeArgs(http_get=health, period_seconds=PROBE_PERIOD, failure_threshold=6)
        volumes, mounts, cache_on_node = _cache_volume(d, args.pool)
        shm = SHM_GIB if gpus_per_pod > 1 else 0
        if shm:  # tensor-parallel workers share tensors through /dev/shm (vLLM docs, Kubernetes)
            volumes.append(
                k8s.core.v1.VolumeArgs(
                    name="shm", empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs(medium="Memory", size_limit=f"{shm}Gi")
                )
            )
            mounts.append(k8s.core.v1.VolumeMountArgs(name="shm", mount_path="/dev/shm"))
        memory = math.ceil(d.workload.min_ram_gib(gpus_per_pod) * gpus_per_pod + SERVER_RAM_GIB + shm)
        disk = LOG_GIB + (cache_gib(d) if cache_on_node else 0)
        requests.update(
            {"cpu": str(d.workload.min_vcpus(gpus_per_pod)), "memory": f"{memory}Gi", "ephemeral-storage": f"{disk}Gi"}
        )
        limits["memory"] = f"{memory}Gi"
        if args.hf_token is not None:
            secret = k8s.core.v1.Secret(
                f"{name}-hf-token",
                metadata=k8s.meta.v1.ObjectMetaArgs(name="hf-token", **meta),
                type="Opaque",
                string_data={"token": pulumi.Output.secret(args.hf_token)},
                opts=child,
            )
            env = [
                k8s.core.v1.EnvVarArgs(
                    name=serving.HF_TOKEN_ENV,
                    value_from=k8s.core.v1.EnvVarSourceArgs(
                        secret_key_ref=k8s.core.v1.SecretKeySelectorArgs(name=secret.metadata.name, key="token")
                    ),
                )
            ]
    selector = {"app.kubernetes.io/name": spec.name}
    deployment = k8s.apps.v1.Deployment(
        f"{name}-deploy",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=spec.name, **meta),
        spec=k8s.apps.v1.DeploymentSpecArgs(
            replicas=pods,
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=selector),
            # GPUs are quota-capped: a surge pod could never schedule, so replace in place.
            strategy=k8s.apps.v1.DeploymentStrategyArgs(type="Recreate"),
            template=k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels, annotations=annotations),
                spec=k8s.core.v1.PodSpecArgs(
                    node_selector=dict(args.pool.node_selector) or None,
                    tolerations=tolerations or None,
                    automount_service_account_token=False,
                    volumes=volumes or None,
                    containers=[
                        k8s.core.v1.ContainerArgs(
                            name="workload",
                            image=spec.deploy.image,
                            args=container_args,
                            env=env,
                            ports=ports,
                            readiness_probe=probe,
                            startup_probe=startup,
                            liveness_probe=liveness,
                            volume_mounts=mounts or None,
                            resources=k8s.core.v1.ResourceRequirementsArgs(requests=requests, limits=limits),
                            security_context=k8s.core.v1.SecurityContextArgs(
                                allow_privilege_escalation=False,
                                capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"]),
                            ),
                        )
                    ],
                ),
            ),
        ),
        opts=pulumi.ResourceOptions.merge(
            child, pulumi.ResourceOptions(ignore_changes=["spec.replicas"] if scaled else None)
        ),
    )
    if not serve:
        return deployment.metadata.name, None
    service = k8s.core.v1.Service(
        f"{name}-svc",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=names.rfc1035(spec.name), **meta),
        spec=k8s.core.v1.ServiceSpecArgs(
            type="ClusterIP",  # in-cluster only: no open inbound
            selector=selector,
            ports=[k8s.core.v1.ServicePortArgs(name="http", port=serving.PORT, target_port="http", protocol="TCP")],
        ),
        opts=child,
    )
    return deployment.metadata.name, service.metadata.name


def cache_gib(d: Decision) -> int:
    """GiB of the model cache: the weights' size plus CACHE_MARGIN."""
    return math.ceil(d.workload.weights_gib * CACHE_MARGIN)


def _cache_volume(d: Decision, pool: Pool) -> tuple[list, list, bool]:
    """The model cache at Hugging Face's cache path: a generic ephemeral volume of the pool's
    cache_storage_class (a PVC per pod, Kubernetes docs "Ephemeral Volumes"), else an emptyDir on
    the node's disk with a size limit. Returns (volumes, mounts, whether it uses the node's disk)."""
    size = f"{cache_gib(d)}Gi"
    if pool.cache_storage_class:
        source = dict(
            ephemeral=k8s.core.v1.EphemeralVolumeSourceArgs(
                volume_claim_template=k8s.core.v1.PersistentVolumeClaimTemplateArgs(
                    spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                        access_modes=["ReadWriteOnce"],
                        storage_class_name=pool.cache_storage_class,
                        resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests={"storage": size}),
                    )
                )
            )
        )
    else:
        source = dict(empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs(size_limit=size))
    return (
        [k8s.core.v1.VolumeArgs(name="model-cache", **source)],
        [k8s.core.v1.VolumeMountArgs(name="model-cache", mount_path=serving.HF_CACHE)],
        not pool.cache_storage_class,
    )


def pod_toleration(t: Mapping[str, Any], pool: str) -> k8s.core.v1.TolerationArgs:
    """A pool's toleration (Kubernetes field names) as the SDK's TolerationArgs.

    Raises:
        SpecError: a field Kubernetes tolerations do not have, naming the pool.
    """
    unknown = sorted(set(t) - set(_TOLERATION_FIELDS))
    if unknown:
        raise errors.SpecError(
            f"pool {pool}: toleration field(s) {', '.join(unknown)} unknown. "
            "To fix: use key, operator, value, effect, tolerationSeconds",
            field=f"pools.{pool}.tolerations",
        )
    return k8s.core.v1.TolerationArgs(**{_TOLERATION_FIELDS[k]: v for k, v in t.items()})


# Node labels that name a node's GPU model (NVIDIA GPU Feature Discovery; GKE), as the policy pack reads them
# (policies/k8s.py GPU_LABELS, which tests/components/test_onprem.py holds equal to these).
GPU_MODEL_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator")


def _pool(plan: Decision, args) -> Pool:
    return next(p for p in args.pools if p.name == plan.chosen.offer.instance_type)


def check(plan: Decision, args) -> None:
    """Validate the chosen pool's tolerations before anything is registered.

    Raises:
        gpusizer.SpecError: a toleration the Kubernetes API would refuse, naming the pool.
    """
    pool = _pool(plan, args)
    for t in pool.tolerations:
        pod_toleration(t, pool.name)
    spec = plan.workload.spec
    if spec.deploy.image and spec.task == "inference":
        if plan.chosen.fit.pipeline_stages > 1:
            raise errors.SpecError(
                f"deploy.image: the choice spans {plan.chosen.nodes} nodes of pool {pool.name}; a Deployment runs "
                "one vLLM server per pod, and multi-node serving needs a Ray or LeaderWorkerSet cluster, which this "
                "component does not create. To fix: use a pool with enough GPUs per node, or drop deploy.image",
                field="deploy.image",
            )
        serving.vllm_args(plan)  # a model without weights to load, or an image without the flags, fails here
        if spec.model.rope_scaling is not None:
            raise errors.SpecError(
                "model.rope_scaling: the Deployment runs vLLM with --max-model-len above the model's trained context, "
                "which vLLM refuses unless the model's config carries the scaling; this component does not pass it "
                "(vLLM's flag changed across versions: --rope-scaling, then --hf-overrides rope_parameters). "
                "To fix: drop deploy.image (the GPUs are still reserved; start vLLM with the scaling yourself), or "
                "serve at most the trained context without model.rope_scaling",
                field="model.rope_scaling",
            )
    if spec.deploy.image and not set(pool.node_selector) & set(GPU_MODEL_LABELS):
        raise errors.SpecError(
            f"pools.{pool.name}.node_selector: deploy.image runs pods that request nvidia.com/gpu on pool "
            f"{pool.name}, which has no node_selector naming its GPU model ({' or '.join(GPU_MODEL_LABELS)}): the "
            f"pods could land on any GPU node, and the policy gate (gpusizer-sized-gpu-capacity) refuses GPU pods "
            f"whose model it cannot verify. To fix: give pool {pool.name} node_selector: "
            f"{{nvidia.com/gpu.product: <its nodes' label>}} (`kubectl get nodes -L nvidia.com/gpu.product` shows "
            f"it, e.g. NVIDIA-L40S), or drop deploy.image to reserve the GPUs only",
            field=f"pools.{pool.name}.node_selector",
        )
    scaling.check_signal(plan)


def provision(name: str, plan: Decision, args, opts: pulumi.ResourceOptions) -> dict[str, object]:
    """Provision an on-prem choice for GpuWorkload; returns the outputs it exports.

    Args:
        name: the child's resource name.
        plan: the decision, its choice an on-prem pool.
        args: the workload's GpuWorkloadArgs (pools, kubeconfigs by pool name).
        opts: options for the child (its parent).
    """
    pool = _pool(plan, args)
    cap = OnPremGpuCapacity(
        name,
        OnPremGpuCapacityArgs(
            plan, pool, args.kubeconfigs.get(pool.name), hf_token=args.hf_token, prometheus_url=args.prometheus_url
        ),
        opts,
    )
    return {"namespace": cap.namespace, "deployment_name": cap.deployment_name, "service_name": cap.service_name}
