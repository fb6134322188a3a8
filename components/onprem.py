"""On-prem (hybrid): a namespace with a GPU quota, and the workload, on the pool's Kubernetes cluster."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import scaling
from components import tags as tagging
from gpusizer import errors
from gpusizer.catalog.onprem import Pool
from gpusizer.decision import Decision

GPU_RESOURCE = "nvidia.com/gpu"  # the NVIDIA device plugin's extended resource
# Kubernetes toleration fields as written in pool YAML (camelCase) -> the SDK's argument names.
_TOLERATION_FIELDS = {"key": "key", "operator": "operator", "value": "value", "effect": "effect",
                      "tolerationSeconds": "toleration_seconds", "toleration_seconds": "toleration_seconds"}


@dataclasses.dataclass
class OnPremGpuCapacityArgs:
    decision: Decision
    """The engine's decision; its choice must be this pool."""
    pool: Pool
    """The pool (node selector, tolerations)."""
    kubeconfig: pulumi.Input[str] | None = None
    """The pool cluster's kubeconfig, as a Pulumi secret; None uses the ambient kubeconfig/context."""
    prometheus_url: str = scaling.DEFAULT_PROMETHEUS
    """Prometheus that KEDA queries for a query metric (deploy.autoscaling)."""


class OnPremGpuCapacity(pulumi.ComponentResource):
    """GPU capacity on an on-prem Kubernetes pool.

    A namespace named after the workload whose ResourceQuota caps
    requests.nvidia.com/gpu at the GPUs chosen for it (max replicas' when
    autoscaled, with a KEDA ScaledObject or an HPA: components/scaling.py), and, when
    the spec names a container image, a Deployment of one pod per node launched (Candidate.instances),
    each requesting one node's share of GPUs on the pool's nodes (its node
    selector and tolerations). Everything carries the sizing annotations.
    """

    namespace: pulumi.Output[str]
    deployment_name: pulumi.Output[str] | None

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
            provider = k8s.Provider(f"{name}-cluster", kubeconfig=pulumi.Output.secret(args.kubeconfig),
                                    opts=pulumi.ResourceOptions(parent=self))
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        annotations = tagging.k8s_annotations(d)
        labels = {"app.kubernetes.io/name": spec.name, "app.kubernetes.io/managed-by": "gpusizer"}
        pods = c.instances
        gpus_per_pod = c.offer.gpu_count  # a pod lives on one node; a multi-node choice is one pod per node
        scaled = d.autoscaling is not None
        most = pods
        if scaled:  # the quota covers max replicas; the Deployment starts at min and the scaler owns it
            pods, most = scaling.bounds(d)
        ns = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=spec.name, annotations=annotations, labels=labels),
            opts=child,
        )
        gpus = str(most * gpus_per_pod)
        k8s.core.v1.ResourceQuota(
            f"{name}-quota",
            metadata=k8s.meta.v1.ObjectMetaArgs(namespace=ns.metadata.name, name="gpu", annotations=annotations,
                                                labels=labels),
            # Extended resources take only the requests. prefix in a quota (Kubernetes docs, "Resource
            # Quotas": "quota items prefixed with requests. are allowed"); requests == limits for GPUs.
            spec=k8s.core.v1.ResourceQuotaSpecArgs(hard={f"requests.{GPU_RESOURCE}": gpus}),
            opts=child,
        )
        self.deployment_name = None
        if spec.deploy.image:
            selector = {"app.kubernetes.io/name": spec.name}
            deployment = k8s.apps.v1.Deployment(
                f"{name}-deploy",
                metadata=k8s.meta.v1.ObjectMetaArgs(namespace=ns.metadata.name, name=spec.name,
                                                    annotations=annotations, labels=labels),
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
                            containers=[k8s.core.v1.ContainerArgs(
                                name="workload",
                                image=spec.deploy.image,
                                resources=k8s.core.v1.ResourceRequirementsArgs(
                                    requests={GPU_RESOURCE: str(gpus_per_pod)},
                                    limits={GPU_RESOURCE: str(gpus_per_pod)},
                                ),
                                security_context=k8s.core.v1.SecurityContextArgs(
                                    allow_privilege_escalation=False,
                                    capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"]),
                                ),
                            )],
                        ),
                    ),
                ),
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                    ignore_changes=["spec.replicas"] if scaled else None)),
            )
            self.deployment_name = deployment.metadata.name
        if scaled:  # the workload's Deployment (deploy.image), or the user's of the same name in the namespace
            scaling.k8s_scaler(name, d, ns.metadata.name, spec.name, args.prometheus_url, child)
        self.namespace = ns.metadata.name
        self.register_outputs({"namespace": self.namespace, "deployment_name": self.deployment_name})


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


def provision(name: str, plan: Decision, args, opts: pulumi.ResourceOptions) -> dict[str, object]:
    """Provision an on-prem choice for GpuWorkload; returns the outputs it exports.

    Args:
        name: the child's resource name.
        plan: the decision, its choice an on-prem pool.
        args: the workload's GpuWorkloadArgs (pools, kubeconfigs by pool name).
        opts: options for the child (its parent).
    """
    pool = _pool(plan, args)
    cap = OnPremGpuCapacity(name, OnPremGpuCapacityArgs(plan, pool, args.kubeconfigs.get(pool.name),
                                                        args.prometheus_url), opts)
    return {"namespace": cap.namespace, "deployment_name": cap.deployment_name}
