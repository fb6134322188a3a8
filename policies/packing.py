"""Node packing: pods that pin an instance type buy whole nodes of it.

A pod that selects a node by instance type (`node.kubernetes.io/instance-type:
g6.48xlarge`, or required node affinity `In` such types), or by labels only
large hosts carry (a GPU count `Gt 4`, Karpenter's `instance-cpu Gt 150` or
`instance-size 48xlarge` beside a GPU name), makes an autoscaler (Karpenter,
the cluster autoscaler, GKE auto-provisioning) buy such a type whole: eight
L4s for a pod of one. Every term of the selection is evaluated over the
catalog's types (`admitted`). The pod's own shape (one L4) fits its
requirement; the node it lands on does not. So the GPUs the stack's pods
may ask of a pinned type at most are set against one node of the smallest
type they admit: when one node holds more than maxRatio x what all of them
ask, the idle GPUs are over-provisioning. Selecting the GPU model instead
(`nvidia.com/gpu.product`) leaves the node's size to the node pool, which is
judged on its own.
"""

from __future__ import annotations

from gpusizer.contract import audit
from gpusizer.policies import evidence, k8s, model, shapes
from gpusizer.policies import view as v

_TYPE_LABEL = "instance-type"  # node.kubernetes.io/, beta.kubernetes.io/, eks.amazonaws.com/ ...


def _type_labels() -> tuple[str, ...]:
    return tuple(k for k in evidence.INSTANCE_LABELS if k.endswith(_TYPE_LABEL))


_COUNT_LABELS = (
    "nvidia.com/gpu.count",
    "karpenter.k8s.aws/instance-gpu-count",
    "cloud.google.com/gke-accelerator-count",
)
_GPU_NAME_LABELS = ("karpenter.k8s.aws/instance-gpu-name",)
_PRODUCT_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator")


def _attribute(key: str, t: str, o) -> object:
    """The value a node of catalog type `t` (offer `o`) carries for a well-known label, or None: Kubernetes'
    and EKS's instance type, Karpenter's instance family, size, GPU name and count, vCPUs and memory (MiB), GPU
    feature discovery's GPU count and product, GKE's accelerator and its count (Karpenter docs, "NodePools:
    Well-Known Labels"; NVIDIA GPU feature discovery; GKE docs "About GPUs", read 2026-11-26)."""
    if key in _type_labels():
        return t
    if key == "karpenter.k8s.aws/instance-family":
        return t.split(".")[0] if "." in t else None
    if key == "karpenter.k8s.aws/instance-size":
        return t.split(".")[1] if "." in t else None
    if key in _COUNT_LABELS:
        return o.gpu_count * o.gpu_fraction
    if key == "karpenter.k8s.aws/instance-cpu":
        return o.vcpus
    if key == "karpenter.k8s.aws/instance-memory":
        return o.ram_gib * 1024  # MiB
    if key in _GPU_NAME_LABELS:
        return (o.gpu or "").lower()
    if key in _PRODUCT_LABELS:
        return o.gpu
    return None


def _holds(key: str, op: str, values: list[str], have: object) -> bool:
    """Whether a node whose label `key` is `have` meets one requirement (`In`, `NotIn`, `Gt`, `Lt`, `Exists`)."""
    if op == "exists":
        return have is not None
    if op in ("gt", "lt"):
        try:
            bound = float(values[0])
        except (IndexError, ValueError):
            return True  # an unreadable bound does not narrow the nodes
        return isinstance(have, (int, float)) and (have > bound if op == "gt" else have < bound)
    if key in _GPU_NAME_LABELS:
        match = any(_named_gpu(str(have), x.strip().lower()) for x in values)
    elif key in _PRODUCT_LABELS:
        match = any(audit.gpu_from_label(x) == have for x in values)
    elif isinstance(have, (int, float)):
        match = any(_number(x) == have for x in values)
    else:
        match = any(evidence.normal(x) == have for x in values)
    return match if op == "in" else not match if op == "notin" else True


def _number(x: str) -> float | None:
    try:
        return float(x)
    except ValueError:
        return None


_KNOWN = frozenset(
    (
        *_type_labels(),
        *_COUNT_LABELS,
        *_GPU_NAME_LABELS,
        *_PRODUCT_LABELS,
        "karpenter.k8s.aws/instance-family",
        "karpenter.k8s.aws/instance-size",
        "karpenter.k8s.aws/instance-cpu",
        "karpenter.k8s.aws/instance-memory",
    )
)  # the labels _attribute reads


def _requirements(pod: v.View) -> list[list[tuple[str, str, list[str]]]] | None:
    """The pod's node selection as ORed terms of ANDed (label, operator, values): its nodeSelector added to each
    required node-affinity term (Kubernetes docs, "Assigning Pods to Nodes"). Only the labels this module
    reads; None when some term names none of them (the pod may land on any node the pool offers)."""
    selector = [
        (str(k).strip().lower(), "in", [str(x)])
        for k, x in (pod.mapping("nodeSelector") or {}).items()
        if str(k).strip().lower() in _KNOWN
    ]
    terms = pod.at("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution").each(
        "nodeSelectorTerms"
    )
    out = []
    for term in terms or [None]:
        reqs = list(selector)
        for e in term.each("matchExpressions") if term is not None else []:
            key = str(e.get("key") or "").strip().lower()
            if key in _KNOWN:
                values = e.get("values") or []
                reqs.append((key, str(e.get("operator") or "").strip().lower(), [str(x) for x in values]))
        if not reqs:
            return None
        out.append(reqs)
    return out


def admitted(pod: v.View) -> set[str] | None:
    """The catalog types (AWS and GCP) a pod's node selection admits, or None when it leaves the node to the
    pool (no term reads a label of a type's shape). A selection by GPU model alone admits the model's smallest
    host too, so it buys nothing idle; one by size, count, vCPUs or memory may admit only large hosts."""
    terms = _requirements(pod)
    if terms is None:
        return None
    out: set[str] = set()
    for provider in ("aws", "gcp"):
        for t, o in audit.types_of(provider).items():
            if any(all(_holds(k, op, vals, _attribute(k, t, o)) for k, op, vals in reqs) for reqs in terms):
                out.add(t)
    return out or None


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
            types = admitted(pod)
            per_pod = sum(n for k, n in k8s.requested(pod).items() if k != k8s.UNKNOWN_COUNT)
            asked = per_pod * m.most_count()
        except (v.Unknown, ValueError, KeyError):
            continue  # judged at `up`, or a malformed field the other rules report
        if types and per_pod > 0:
            alone = _one_per_node(pod)
            pinned.append((m, frozenset(types), per_pod if alone else asked, alone))
    out = []
    for m, kinds, asked, alone in pinned:
        sizes = [_gpus_per_node(t) for t in kinds]
        if not sizes or any(n is None or n <= 0 for n in sizes):
            continue  # a type that holds no GPU the catalog knows (a CPU type it admits): nothing to compare
        node = min(n for n in sizes if n is not None)
        # pods kept one to a node use one pod's GPUs of each; others share the nodes with every pod pinning them
        used = asked if alone else sum(a for _m, other, a, _one in pinned if other & kinds)
        if node > max_ratio * used:
            shown = ", ".join(sorted(kinds)[:6]) + (f" (and {len(kinds) - 6} more)" if len(kinds) > 6 else "")
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
