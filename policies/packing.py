"""Node packing: pods that pin an instance type buy whole nodes of it.

A pod that selects a node by instance type (`node.kubernetes.io/instance-type:
g6.48xlarge`, or required node affinity `In` such types) makes an autoscaler
(Karpenter, the cluster autoscaler, GKE auto-provisioning) buy that type
whole: eight L4s for a pod of one. The pod's own shape (one L4) fits its
requirement; the node it lands on does not. So the GPUs the stack's pods
may ask of a pinned type at most are set against one node of the smallest
type they admit: when one node holds more than maxRatio x what all of them
ask, the idle GPUs are over-provisioning. Selecting the GPU model instead
(`nvidia.com/gpu.product`) leaves the node's size to the node pool, which is
judged on its own.
"""

from __future__ import annotations

import re

from gpusizer.contract import audit
from gpusizer.policies import evidence, k8s, model, shapes
from gpusizer.policies import view as v

_TYPE_LABEL = "instance-type"  # node.kubernetes.io/, beta.kubernetes.io/, eks.amazonaws.com/ ...


def _type_labels() -> tuple[str, ...]:
    return tuple(k for k in evidence.INSTANCE_LABELS if k.endswith(_TYPE_LABEL))


def pinned_types(pod: v.View) -> set[str] | None:
    """Instance types the pod may land on, when its node selection admits only named types (a nodeSelector
    on an instance-type label, or required affinity whose every term names types with `In`); else None."""
    labels = _type_labels()
    selector = {str(k).strip().lower(): val for k, val in (pod.mapping("nodeSelector") or {}).items()}
    for k, val in selector.items():
        if k in labels and isinstance(val, str):
            return {evidence.normal(val)}
    size = selector.get("karpenter.k8s.aws/instance-size")
    if isinstance(size, str) and size.strip():  # a size with a family or GPU name picks the types Karpenter may buy
        family, gpu = (
            selector.get("karpenter.k8s.aws/instance-family"),
            selector.get("karpenter.k8s.aws/instance-gpu-name"),
        )
        found = {
            t
            for t, o in audit.types_of("aws").items()
            if t.endswith("." + size.strip().lower())
            and (not isinstance(family, str) or t.split(".")[0] == family.strip().lower())
            and (not isinstance(gpu, str) or _named_gpu((o.gpu or "").lower(), gpu.strip().lower()))
        }
        if found and (isinstance(family, str) or isinstance(gpu, str)):
            return found
    terms = pod.at("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution").each(
        "nodeSelectorTerms"
    )
    out: set[str] = set()
    for term in terms:
        named = [
            {evidence.normal(str(x)) for x in (e.get("values") or [])}
            for e in term.each("matchExpressions")
            if str(e.get("key") or "").strip().lower() in labels and str(e.get("operator") or "").lower() == "in"
        ]
        if not named:
            return None  # a term that names no type lets the pod land elsewhere
        out |= set.intersection(*named)
    return out or None


_COUNT_LABELS = (
    "nvidia.com/gpu.count",
    "karpenter.k8s.aws/instance-gpu-count",
    "cloud.google.com/gke-accelerator-count",
)


def pinned_count(pod: v.View) -> float | None:
    """GPUs a node must hold for the pod to land there, when a nodeSelector names it (GPU feature
    discovery's `nvidia.com/gpu.count: "8"`, Karpenter's instance-gpu-count): the node an autoscaler buys."""
    for k, val in (pod.mapping("nodeSelector") or {}).items():
        if str(k).strip().lower() in _COUNT_LABELS:
            try:
                return float(str(val).strip())
            except ValueError:
                return None
    return None


def _one_per_node(pod: v.View) -> bool:
    """Whether required pod anti-affinity on the host keeps its pods one to a node: each node then holds one
    pod's GPUs, however many pods there are (Kubernetes docs, "Assigning Pods to Nodes": inter-pod
    anti-affinity with topologyKey kubernetes.io/hostname, read 2026-11-26)."""
    terms = pod.at("affinity", "podAntiAffinity").each("requiredDuringSchedulingIgnoredDuringExecution")
    return any((t.text("topologyKey") or "") == "kubernetes.io/hostname" for t in terms)


def _named_gpu(gpu: str, name: str) -> bool:
    """Whether Karpenter's GPU name (`l4`, `a100`) is this catalog GPU (L4; A100-40GB and A100-80GB, not L40S)."""
    return gpu == name or gpu.startswith(name + "-")


def _gpus_per_node(t: str) -> float | None:
    cap = shapes.capacity_of_any(t)
    return cap.count if cap is not None else None


def _labelled(t: str) -> float | None:
    m = re.fullmatch(r"nodes of ([\d.]+) GPUs", t)
    return float(m.group(1)) if m else None


def findings(sm: model.StackModel, max_ratio: float) -> list[tuple[str, str]]:
    """(message, URN) for each workload whose pinned instance type holds over max_ratio x the GPUs that all
    the stack's pods pinning it ask for at most."""
    pinned: list[tuple[model.Model, frozenset[str], float, bool]] = []  # (model, types, GPUs asked, one a node)
    for m in sm:
        path = k8s.POD_SPECS.get(m.resource.type)
        if path is None or m.facts is None:
            continue
        try:
            pod = m.resource.props.at(*path, "spec")
            types = pinned_types(pod)
            count = pinned_count(pod)
            if not types and count:
                types = {f"nodes of {count:g} GPUs"}
            per_pod = sum(n for k, n in k8s.requested(pod).items() if k != k8s.UNKNOWN_COUNT)
            asked = per_pod * m.most_count()
        except (v.Unknown, ValueError, KeyError):
            continue  # judged at `up`, or a malformed field the other rules report
        if types and per_pod > 0:
            alone = _one_per_node(pod)
            pinned.append((m, frozenset(types), per_pod if alone else asked, alone))
    out = []
    for m, kinds, asked, alone in pinned:
        sizes = [_gpus_per_node(t) or _labelled(t) for t in kinds]
        if not sizes or any(n is None for n in sizes):
            continue  # a type that holds no GPU the catalog knows: nothing to compare
        node = min(n for n in sizes if n is not None)
        # pods kept one to a node use one pod's GPUs of each; others share the nodes with every pod pinning them
        used = asked if alone else sum(a for _m, other, a, _one in pinned if other & kinds)
        if node > max_ratio * used:
            shown = ", ".join(sorted(kinds))
            out.append(
                (
                    f"{m.label}: its pods pin {shown} ({node:g} GPUs a node) and the stack's pods that may land "
                    f"there ask for {used:g} GPU(s) at most: an autoscaler buys the whole node, so "
                    f"{node - used:g} of {node:g} GPUs stay idle (limit {max_ratio:g}x). To fix: select the GPU "
                    "model (nvidia.com/gpu.product) and let the node pool size the node, or pin a smaller type",
                    m.urn,
                )
            )
    return out
