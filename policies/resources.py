"""Read GPU facts out of resource properties (camelCase wire names), per covered resource type."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from gpusizer import audit, metadata

AWS_INSTANCE = "aws:ec2/instance:Instance"
AWS_LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
AWS_ASG = "aws:autoscaling/group:Group"
AWS_FLEET = "aws:ec2/fleet:Fleet"
GCP_INSTANCE = "gcp:compute/instance:Instance"
GCP_TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
K8S_WORKLOADS = {
    "kubernetes:apps/v1:Deployment": "template",
    "kubernetes:apps/v1:StatefulSet": "template",
    "kubernetes:batch/v1:Job": "template",
    "kubernetes:core/v1:Pod": None,
}
COVERED = {AWS_INSTANCE, AWS_LAUNCH_TEMPLATE, AWS_ASG, AWS_FLEET, GCP_INSTANCE, GCP_TEMPLATE, *K8S_WORKLOADS}
GPU_RESOURCE = "nvidia.com/gpu"
# Node labels that name the GPU model (NVIDIA GPU feature discovery; GKE).
GPU_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator")


@dataclasses.dataclass(frozen=True)
class GpuResource:
    """A resource that provisions GPUs, as the policies see it.

    Attributes:
        capacities: one per instance type it may launch (an ASG/fleet lists several).
        required_gib: the requirement from the sizing tag/label/annotation, or None.
        sized_by: what set the size, per the components' metadata, or None.
        purchase: "spot", "on-demand" or None when unknown.
        hourly_usd: the tagged price, else the catalog's on-demand price of the first type.
        unknown_gpu: GPUs were requested but the model could not be identified.
    """

    provider: str
    capacities: tuple[audit.GpuCapacity, ...]
    required_gib: float | None
    sized_by: str | None
    purchase: str | None
    hourly_usd: float | None
    unknown_gpu: str = ""


def _get(d: Any, *path, default=None):
    for key in path:
        if not isinstance(d, Mapping) or key not in d:
            return default
        d = d[key]
    return d


def _aws_tags(props: Mapping) -> dict[str, str]:
    tags = props.get("tags") or {}
    if isinstance(tags, list):  # Auto Scaling groups: [{key, value, propagateAtLaunch}] (props are plain())
        tags = {t.get("key"): t.get("value") for t in tags if isinstance(t, Mapping)}
    return dict(tags)


def _required(value) -> float | None:
    if value in (None, ""):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"sizing requirement {value!r} is not a number") from None


def gpu_resource(resource_type: str, props: Mapping) -> GpuResource | None:
    """GPU facts of a covered resource, or None when it provisions no GPU.

    Raises:
        ValueError: the resource is malformed (the policy reports it as a message).
    """
    if resource_type in (AWS_INSTANCE, AWS_LAUNCH_TEMPLATE, AWS_ASG, AWS_FLEET):
        return _aws(resource_type, props)
    if resource_type in (GCP_INSTANCE, GCP_TEMPLATE):
        return _gcp(props)
    if resource_type in K8S_WORKLOADS:
        return _k8s(resource_type, props)
    return None


def _aws(resource_type: str, props: Mapping) -> GpuResource | None:
    if resource_type == AWS_ASG:
        overrides = _get(props, "mixedInstancesPolicy", "launchTemplate", "overrides", default=[]) or []
        types = [o.get("instanceType") for o in overrides if isinstance(o, Mapping) and o.get("instanceType")]
    elif resource_type == AWS_FLEET:
        types = [o.get("instanceType") for cfg in props.get("launchTemplateConfigs") or []
                 for o in (cfg.get("overrides") or []) if o.get("instanceType")]
    else:
        types = [props["instanceType"]] if props.get("instanceType") else []
    caps = tuple(c for c in (audit.capacity_of_type("aws", t) for t in types) if c)
    if not caps:
        return None
    tags = _aws_tags(props)
    market = _get(props, "instanceMarketOptions", "marketType")
    if resource_type == AWS_ASG:
        pct = _get(props, "mixedInstancesPolicy", "instancesDistribution", "onDemandPercentageAboveBaseCapacity")
        market = "spot" if pct == 0 else None
    price = tags.get(metadata.AWS_HOURLY_USD)
    return GpuResource(
        "aws", caps, _required(tags.get(metadata.AWS_REQUIRED)), tags.get(metadata.AWS_SIZED_BY),
        "spot" if market == "spot" else ("on-demand" if resource_type == AWS_INSTANCE else None),
        float(price) if price else audit.price_of("aws", types[0]),
    )


def _gcp(props: Mapping) -> GpuResource | None:
    machine = (props.get("machineType") or "").rsplit("/", 1)[-1]
    accels = props.get("guestAccelerators") or []
    caps: list[audit.GpuCapacity] = []
    unknown = ""
    for a in accels:
        kind = str(a.get("type", "")).rsplit("/", 1)[-1]
        cap = audit.capacity_of_accelerator(kind, float(a.get("count", 1)), machine)
        if cap:
            caps.append(cap)
        else:
            unknown = kind
    type_cap = audit.capacity_of_type("gcp", machine)
    if type_cap:
        caps.append(type_cap)
    if not caps and not unknown:
        return None
    labels = props.get("labels") or {}
    sched = props.get("scheduling") or {}
    spot = sched.get("provisioningModel") == "SPOT" or sched.get("preemptible") is True
    price = audit.price_of("gcp", machine) if type_cap else None
    if accels and caps and not type_cap:  # N1 + attached GPUs: the catalog names them host+accelerator
        a = accels[0]
        price = audit.price_of("gcp", f"{machine}+{str(a.get('type')).rsplit('/', 1)[-1]}x{int(a.get('count', 1))}")
    return GpuResource("gcp", tuple(caps), _required(labels.get(metadata.GCP_REQUIRED)),
                       labels.get(metadata.GCP_SIZED_BY), "spot" if spot else "on-demand", price, unknown)


def _k8s(resource_type: str, props: Mapping) -> GpuResource | None:
    meta = props.get("metadata") or {}
    spec = props.get("spec") or {}
    pod_meta = meta
    if K8S_WORKLOADS[resource_type] == "template":
        pod_meta = _get(spec, "template", "metadata", default={}) or {}
        spec = _get(spec, "template", "spec", default={}) or {}
    count = 0.0
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        res = c.get("resources") or {}
        n = _get(res, "limits", GPU_RESOURCE) or _get(res, "requests", GPU_RESOURCE)
        if n is not None:
            count += float(n)
    if count == 0:
        return None
    selector = spec.get("nodeSelector") or {}
    label = next((selector[k] for k in GPU_LABELS if k in selector), "")
    cap = audit.capacity_of_accelerator(label, count) if label else None
    annotations = {**(meta.get("annotations") or {}), **(pod_meta.get("annotations") or {})}
    return GpuResource(
        "onprem", (cap,) if cap else (), _required(annotations.get(metadata.K8S_REQUIRED)),
        annotations.get(metadata.K8S_SIZED_BY), None, None, unknown_gpu=label or f"{count:g} GPU(s), no GPU model label",
    )
