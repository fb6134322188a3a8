"""Kubernetes workloads: the GPUs a pod asks for, the model its node selection names, how many pods run.

GPUs are the NVIDIA device plugin's extended resources: `nvidia.com/gpu`
(whole GPUs) and `nvidia.com/mig-<g>g.<mem>gb` (MIG slices, mixed strategy).
A pod's GPUs are the larger of the sum over its containers and the largest
init container, as for any resource (Kubernetes docs, "Init Containers:
Resource sharing within containers"). The model comes from a node selector
or a required node-affinity term on a GPU product label (NVIDIA GPU feature
discovery `nvidia.com/gpu.product`, GKE `cloud.google.com/gke-accelerator`);
without one the GPUs cannot be verified.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable

from gpusizer.base import units
from gpusizer.contract import audit, metadata
from gpusizer.facts import hardware
from gpusizer.policies import evidence, shapes
from gpusizer.policies import view as v

GPU_RESOURCE = "nvidia.com/gpu"
UNKNOWN_COUNT = "<unknown at preview>"  # requested(): some GPU count is unknown; the rest is a lower bound
MIG_PREFIX = "nvidia.com/mig-"
# A MIG profile names its slice: "<compute slices>g.<memory>gb" (NVIDIA MIG User Guide, "Supported
# MIG Profiles"). The memory figure is the profile's nominal GB (1e9 bytes); the usable slice is a
# little smaller on some GPUs (unverified per GPU), so the pack reads the name as an upper bound.
_MIG = re.compile(r"^(?P<g>\d+)g\.(?P<gb>\d+)gb(\+me)?$")
GPU_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator")

# Workload kind -> path to its pod template (metadata + spec); Patch types carry the same shape.
_TEMPLATE = ("spec", "template")
_KINDS = {
    "apps/v1:Deployment": _TEMPLATE,
    "apps/v1:StatefulSet": _TEMPLATE,
    "apps/v1:ReplicaSet": _TEMPLATE,
    "apps/v1:DaemonSet": _TEMPLATE,
    "batch/v1:Job": _TEMPLATE,
    "batch/v1:CronJob": ("spec", "jobTemplate", "spec", "template"),
    "core/v1:Pod": (),
    "core/v1:ReplicationController": _TEMPLATE,
}
POD_SPECS = {f"kubernetes:{k}{patch}": path for k, path in _KINDS.items() for patch in ("", "Patch")}
SCALABLE = ("apps/v1:Deployment", "apps/v1:StatefulSet", "apps/v1:ReplicaSet", "core/v1:ReplicationController")
"""Kinds whose spec.replicas sets their pod count (a patch of one scales the object it patches)."""
# Pods a workload runs: replicas (Deployment, StatefulSet, ReplicaSet; Kubernetes default 1), a Job's
# parallelism (default 1); a DaemonSet runs one per matching node, unknown here, so 1 is a lower bound.
_COUNTS = {
    "Deployment": ("spec", "replicas"),
    "ReplicationController": ("spec", "replicas"),
    "StatefulSet": ("spec", "replicas"),
    "ReplicaSet": ("spec", "replicas"),
    "Job": ("spec", "parallelism"),
    "CronJob": ("spec", "jobTemplate", "spec", "parallelism"),
}


def kind(resource_type: str) -> str:
    """The workload kind a Pulumi type creates or patches: "kubernetes:apps/v1:DeploymentPatch" -> "Deployment"."""
    return resource_type.rsplit(":", 1)[-1].removesuffix("Patch")


def unbounded(resource_type: str, p: v.View) -> str | None:
    """Why a workload's pod count has no bound in its own spec, or None: a DaemonSet runs a pod on every
    matching node; a CronJob's concurrencyPolicy defaults to Allow, so runs overlap (Kubernetes docs,
    "DaemonSet" and "CronJob": concurrencyPolicy, read 2026-11-25)."""
    if kind(resource_type) == "DaemonSet":
        return "a DaemonSet runs a pod on every matching node"
    if kind(resource_type) == "CronJob" and (p.text("spec", "concurrencyPolicy") or "allow") == "allow":
        return "a CronJob whose concurrencyPolicy allows overlapping runs starts Jobs while others run"
    return None


# A rolling update runs up to maxSurge pods above the desired count while old pods drain: an absolute number,
# or a percentage of the desired count rounded up; 25% when not given; none under the Recreate strategy.
# Kubernetes docs, "Deployments" > Max Surge (read 2026-11-26); Argo Rollouts' canary keeps the same field and
# default (argoproj.github.io/argo-rollouts, "Canary" > maxSurge, read 2026-11-26).
DEFAULT_SURGE = "25%"
_SURGING = ("Deployment", "Rollout")


def surge(resource_type: str, p: v.View, pods: float) -> float:
    """Extra pods a rolling update of `pods` desired runs at its peak (maxSurge), 0 for other kinds."""
    if kind(resource_type) not in _SURGING or pods <= 0:
        return 0.0
    spec = p.at("spec", "strategy")
    if kind(resource_type) == "Deployment" and (spec.text("type") or "rollingupdate") == "recreate":
        return 0.0
    if kind(resource_type) == "Rollout" and spec.get("blueGreen") is not None:
        # blue-green runs the whole preview stack beside the active one until it is promoted
        # (argoproj.github.io/argo-rollouts, "BlueGreen Deployment Strategy", read 2026-11-26)
        preview = spec.number("blueGreen", "previewReplicaCount")
        return float(pods if preview is None else preview)
    paths = [("rollingUpdate", "maxSurge"), ("canary", "maxSurge")]
    given = next((spec.get(*k) for k in paths if spec.get(*k) is not None), DEFAULT_SURGE)
    text = str(given).strip()
    if text.endswith("%"):
        return float(math.ceil(pods * float(text[:-1]) / 100))
    return max(0.0, float(text))


def _pod(p: v.View, path: tuple[str, ...]) -> v.View:
    return p.at(*path, "spec")


def _gpus(container: v.View) -> dict[str, float]:
    """Accelerator resource name -> count for one container (limits, else requests: they must be equal when
    both set). Every accelerator resource name counts (policies/evidence.is_resource_name): one the pack
    cannot size (amd.com/gpu, google.com/tpu, aws.amazon.com/neuron, nvidia.com/gpu.shared) becomes an
    unknown shape, never nothing."""
    out: dict[str, float] = {}
    for part in ("limits", "requests"):
        for name in container.mapping("resources", part) or {}:
            key = str(name).strip().lower()
            if evidence.is_resource_name(key):
                try:
                    n = _quantity(container, part, name)
                except v.Unknown:  # at least one GPU under this name: what is known is a lower bound
                    out[UNKNOWN_COUNT] = 0.0
                    out[key] = max(out.get(key, 0.0), 1.0)
                    continue
                if n is None or n < 0:
                    raise ValueError(f"{container.path}.resources.{part}.{name} must be a non-negative number")
                out[key] = max(out.get(key, 0.0), n)
    return out


def _quantity(container: v.View, part: str, name) -> float | None:
    """A resource quantity as Kubernetes reads it: a number, or a string with a decimal suffix ("8000m" is
    8; k, M, G: powers of 1000; Ki, Mi, Gi: of 1024), resource.Quantity in apimachinery."""
    raw = container.get("resources", part, name)
    if isinstance(raw, str):
        text = raw.strip()
        for suffix, factor in _QUANTITY_SUFFIXES:
            if text.endswith(suffix) and text[: -len(suffix)]:
                try:
                    return float(text[: -len(suffix)]) * factor
                except ValueError:
                    break
    return container.number("resources", part, name)


_QUANTITY_SUFFIXES = (
    ("Ki", 1024.0),
    ("Mi", 1024.0**2),
    ("Gi", 1024.0**3),
    ("m", 1e-3),
    ("k", 1e3),
    ("M", 1e6),
    ("G", 1e9),
)


def requested(pod: v.View) -> dict[str, float]:
    """GPU resource name -> GPUs one pod holds, as the scheduler reckons a pod's request: its app
    containers plus every sidecar (an init container with restartPolicy Always runs beside them),
    or, if more, an ordinary init container plus the sidecars started before it (Kubernetes docs,
    "Sidecar containers" and "Resource sharing within containers", v1.29+, read 2026-11-25)."""
    sidecars: dict[str, float] = {}
    inits: dict[str, float] = {}
    for c in pod.each("initContainers"):
        gpus = _gpus(c)
        if c.text("restartPolicy") == "always":
            for k, n in gpus.items():
                sidecars[k] = sidecars.get(k, 0.0) + n
        else:
            for k in set(gpus) | set(sidecars):
                inits[k] = max(inits.get(k, 0.0), gpus.get(k, 0.0) + sidecars.get(k, 0.0))
    held = dict(sidecars)
    for c in pod.each("containers"):
        for k, n in _gpus(c).items():
            held[k] = held.get(k, 0.0) + n
    for k, n in inits.items():
        held[k] = max(held.get(k, 0.0), n)
    known = {k: n for k, n in held.items() if n > 0 and k != UNKNOWN_COUNT}
    return known | ({UNKNOWN_COUNT: 0.0} if UNKNOWN_COUNT in held else {})


def _model_of(key: str, value: str) -> str | None:
    """The GPU a node label value names: a product label, or an instance type label naming a GPU type."""
    key = key.strip().lower()
    if key in GPU_LABELS or key.endswith(("gpu-name", "gpu.product")):
        return value
    if key in evidence.INSTANCE_LABELS:
        cap = shapes.capacity_of_any(evidence.normal(value))
        if cap is not None:
            return cap.gpu
        return "" if evidence.accelerated_type(value, loose=True) else None
    return None


def _selected(pod: v.View) -> list[str] | None:
    """GPU models a nodeSelector pins (None: it pins none).

    Raises:
        gpusizer.policies.view.Unknown: a GPU label's value is unknown at preview.
    """
    for k in pod.mapping("nodeSelector"):
        if _model_of(str(k), "x") is None and str(k).strip().lower() not in evidence.INSTANCE_LABELS:
            continue
        val = pod.text("nodeSelector", k)
        if isinstance(val, str):
            m = _model_of(str(k), val)
            if m is not None:
                return [m]
    return None


def models(pod: v.View) -> list[str]:
    """GPU models the pod may land on, as the scheduler reads its node selection: a nodeSelector on a GPU
    product or GPU instance type label pins one; required node-affinity terms are ORed, so every term must
    pin a model with `In` (a term that pins none, or uses NotIn, Exists, DoesNotExist, Gt or Lt on such a
    label, lets the pod land on any GPU: "" stands for "unknown", judged as unverifiable). A nodeSelector
    and required affinity must both hold. Empty: no pin."""
    pinned = _selected(pod)
    required = pod.at("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    terms = required.each("nodeSelectorTerms")
    if pinned is not None:
        chosen = [m for m in pinned if m] or [""]
        # A nodeSelector and node affinity must both hold: when every required term names other GPUs than
        # the selector's, no node honestly labelled satisfies both, so the shape is unverifiable.
        named = [_term_models(t) for t in terms]
        want = {audit.gpu_from_label(m) or m for m in chosen}
        if (
            chosen != [""]
            and named
            and all(n and "" not in n and not {audit.gpu_from_label(m) or m for m in n} & want for n in named)
        ):
            return [""]
        return chosen
    out: list[str] = []
    for term in terms:
        named = _term_models(term)
        out += named if named else [""]
    return out


def _term_models(term: v.View) -> list[str] | None:
    """GPU models one required node-selector term pins with `In` ("" for a value naming no known model), or
    None when it pins none."""
    named: list[str] | None = None
    excluded: set[str] = set()
    for e in term.each("matchExpressions") + term.each("matchFields"):
        key = str(e.get("key") or "")
        op = (e.text("operator") or "").lower()
        k = key.strip().lower()
        if k not in GPU_LABELS and k not in evidence.INSTANCE_LABELS and not evidence.gpu_label(k):
            continue
        if op == "in":
            vals = [_model_of(key, x.text() or "") for x in e.each("values")]
            named = [m or "" for m in vals] if named is None else [m for m in named if m in vals] or [""]
        elif op == "notin":
            out = {_model_of(key, x.text() or "") for x in e.each("values")} - {None, ""}
            excluded |= {audit.gpu_from_label(m) or m for m in out}
        # Exists, DoesNotExist, Gt, Lt on a GPU label (and NotIn alone) leave the model open
    if named is not None and excluded:  # expressions in one term are ANDed: In [L4, H100] NotIn [H100] is L4
        named = [m for m in named if not m or (audit.gpu_from_label(m) or m) not in excluded] or [""]
    return named


def shapes_of(pod: v.View) -> list[shapes.Shape]:
    """One shape per GPU model the pod may land on; an unknown shape when the model is not named or known."""
    gpus = requested(pod)
    at_least = gpus.pop(UNKNOWN_COUNT, None) is not None
    if not gpus:
        return []
    if at_least:  # some counts unknown at preview: the known ones are a lower bound, judged as such
        return [
            dataclasses.replace(
                x,
                label=f"at least {x.label} (other GPU counts unknown until `up`)",
                capacity=x.capacity and dataclasses.replace(x.capacity, label=f"at least {x.capacity.label}"),
            )
            for x in shapes_of_known(pod, gpus)
        ]
    return shapes_of_known(pod, gpus)


# A node whose GPUs are MIG slices under the single strategy: GPU feature discovery names the product with the
# slice (`NVIDIA-A100-SXM4-80GB-MIG-1g.10gb`) and `nvidia.com/gpu: 1` is one slice (NVIDIA GPU Operator docs, "MIG
# Support in Kubernetes", single strategy); GKE names the partition (`cloud.google.com/gke-gpu-partition-size`,
# GKE docs "Running multi-instance GPUs"). Read 2026-11-26.
_MIG_IN_PRODUCT = re.compile(r"-MIG-(\d+g\.\d+gb)$", re.I)
GKE_PARTITION = "cloud.google.com/gke-gpu-partition-size"


def _slice(pod: v.View, label: str) -> str | None:
    """The MIG profile one `nvidia.com/gpu` is on this node selection, or None (a whole GPU)."""
    m = _MIG_IN_PRODUCT.search(label or "")
    if m:
        return m.group(1).lower()
    size = (pod.mapping("nodeSelector") or {}).get(GKE_PARTITION)
    return size.strip().lower() if isinstance(size, str) and _MIG.match(size.strip().lower()) else None


def shapes_of_known(pod: v.View, gpus: dict[str, float]) -> list[shapes.Shape]:
    out = []
    labels = models(pod) or [""]
    for label in labels:
        gpu = audit.gpu_from_label(label) if label else None
        profile = _slice(pod, label) if GPU_RESOURCE in gpus else None
        # each nvidia.com/gpu on a sliced node is a MIG slice of that profile: sized as the mixed strategy's name is
        these = {f"{MIG_PREFIX}{profile}" if k == GPU_RESOURCE else k: n for k, n in gpus.items()} if profile else gpus
        if len(these) > 1:  # one pod's GPUs under several resource names are one shape on one node
            out.append(_one_shape(these, gpu, label))
            continue
        for key, n in these.items():
            if key == GPU_RESOURCE:
                cap = audit.capacity_of_accelerator(gpu, n) if gpu else None
                what = f"{n:g} x {gpu or label or 'GPU of no named model (no nvidia.com/gpu.product node selector)'}"
                out.append(shapes.Shape(what, cap, None))
                continue
            m = _MIG.match(key.removeprefix(MIG_PREFIX))
            if m is None:
                out.append(shapes.Shape(f"{n:g} x {key}", None, None))
                continue
            gib = int(m["gb"]) * units.GB / units.GIB
            name = f"{gpu or 'GPU'} MIG {key.removeprefix(MIG_PREFIX)}"
            out.append(
                shapes.Shape(f"{n:g} x {name}", audit.GpuCapacity(gpu or "MIG", n, gib, f"{n:g} x {name}"), None)
            )
    return out


def _one_shape(gpus: dict[str, float], gpu: str | None, label: str) -> shapes.Shape:
    """A pod holding GPUs under several resource names (whole GPUs and MIG slices): one shape whose memory
    is the sum; any name the pack cannot size makes it unknown."""
    total, parts = 0.0, []
    for key, n in gpus.items():
        parts.append(f"{n:g} x {key}")
        m = _MIG.match(key.removeprefix(MIG_PREFIX)) if key.startswith(MIG_PREFIX) else None
        if key == GPU_RESOURCE and gpu:
            total += n * hardware.load_gpus()[gpu].memory_gib
        elif m is not None:
            total += n * int(m["gb"]) * units.GB / units.GIB
        else:
            return shapes.Shape(" + ".join(parts) + f" ({label or 'no GPU model label'})", None, None)
    what = " + ".join(parts) + f" of {gpu or 'GPU'}"
    return shapes.Shape(what, audit.GpuCapacity(gpu or "GPU", 1.0, total, what), None)


def shape_reader(path: tuple[str, ...]) -> Callable[[v.View], list[shapes.Shape]]:
    return lambda p: shapes_of(_pod(p, path))


def annotations(path: tuple[str, ...]) -> Callable[[v.View], dict]:
    """The workload's annotations, then its pod template's (which win: they are what the pod carries)."""

    def read(p: v.View) -> dict:
        out = p.mapping("metadata", "annotations")
        if path:
            out.update(p.mapping(*path, "metadata", "annotations"))
        return {
            k: val
            for k, val in out.items()
            if k in (metadata.K8S_REQUIRED, metadata.K8S_SIZED_BY, metadata.K8S_WORKLOAD)
        }

    return read


def count(resource_type: str) -> Callable[[v.View], float]:
    path = _COUNTS.get(kind(resource_type))

    def read(p: v.View) -> float:
        n = p.number(*path) if path else None
        if n is not None and n < 0:
            raise ValueError(f"{'.'.join(path)} must not be negative")
        return 1.0 if n is None else n

    return read
