"""On-prem (hybrid): a namespace with a GPU quota, and the workload, on the pool's Kubernetes cluster."""

from __future__ import annotations

import dataclasses

import pulumi
import pulumi_kubernetes as k8s

from gpusizer import metadata
from gpusizer.catalog.onprem import Pool
from gpusizer.decision import Decision

GPU_RESOURCE = "nvidia.com/gpu"  # NVIDIA device plugin resource name


@dataclasses.dataclass
class OnPremGpuCapacityArgs:
    decision: Decision
    """The engine's decision; its choice must be this pool."""
    pool: Pool
    """The pool (node selector, tolerations)."""
    kubeconfig: pulumi.Input[str] | None = None
    """The pool cluster's kubeconfig, as a Pulumi secret; None uses the ambient kubeconfig."""


class OnPremGpuCapacity(pulumi.ComponentResource):
    """A namespace whose ResourceQuota caps requests.nvidia.com/gpu at the chosen count and,
    when the spec names a container image, a Deployment requesting those GPUs on the pool's nodes."""

    namespace: pulumi.Output[str]

    def __init__(self, name: str, args: OnPremGpuCapacityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpusizer:onprem:GpuCapacity", name, {}, opts)
        d = args.decision
        c = d.chosen
        spec = d.workload.spec
        provider = k8s.Provider(
            f"{name}-cluster", kubeconfig=args.kubeconfig, opts=pulumi.ResourceOptions(parent=self)
        ) if args.kubeconfig is not None else None
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        annotations = metadata.k8s_annotations(spec.name, d.required_gpu_memory_gib, d.sized_by)
        gpus = c.gpu_count * c.replicas
        ns = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=spec.name, annotations=annotations,
                                                labels={"app.kubernetes.io/managed-by": "gpusizer"}),
            opts=child,
        )
        k8s.core.v1.ResourceQuota(
            f"{name}-quota",
            metadata=k8s.meta.v1.ObjectMetaArgs(namespace=ns.metadata.name, name="gpu", annotations=annotations),
            spec=k8s.core.v1.ResourceQuotaSpecArgs(hard={f"requests.{GPU_RESOURCE}": str(gpus), f"limits.{GPU_RESOURCE}": str(gpus)}),
            opts=child,
        )
        if spec.deploy.image:
            labels = {"app": spec.name}
            k8s.apps.v1.Deployment(
                f"{name}-deploy",
                metadata=k8s.meta.v1.ObjectMetaArgs(namespace=ns.metadata.name, name=spec.name, annotations=annotations),
                spec=k8s.apps.v1.DeploymentSpecArgs(
                    replicas=c.replicas,
                    selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
                    template=k8s.core.v1.PodTemplateSpecArgs(
                        metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels, annotations=annotations),
                        spec=k8s.core.v1.PodSpecArgs(
                            node_selector=args.pool.node_selector or None,
                            tolerations=[k8s.core.v1.TolerationArgs(**t) for t in args.pool.tolerations] or None,
                            containers=[k8s.core.v1.ContainerArgs(
                                name="workload",
                                image=spec.deploy.image,
                                resources=k8s.core.v1.ResourceRequirementsArgs(
                                    requests={GPU_RESOURCE: str(c.gpu_count)},
                                    limits={GPU_RESOURCE: str(c.gpu_count)},
                                ),
                                security_context=k8s.core.v1.SecurityContextArgs(
                                    allow_privilege_escalation=False, run_as_non_root=True
                                ),
                            )],
                        ),
                    ),
                ),
                opts=child,
            )
        self.namespace = ns.metadata.name
        self.register_outputs({"namespace": self.namespace})
