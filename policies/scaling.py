"""Autoscalers in a stack: the most nodes or pods each lets its target run, and bounds the capacity cannot hold.

The budget (policies/sizing.py) counts a GPU resource at the largest of its own
maximum and the maximum of every autoscaler that targets it, so a Deployment
at 0 replicas under a KEDA ScaledObject of 4 counts 4. An autoscaler targets
a resource it depends on (a GCP Autoscaler's `target` is the group's id), or,
on Kubernetes, the workload named by its `scaleTargetRef` in its namespace.

Whatever else sets how much a resource runs counts the same way: scheduled
actions and warm pools (classic and aws-native), predictive scaling allowed
past the maximum (unbounded: a finding), workload and HPA patches, objects that
run a workload by reference (an Argo Rollout's `workloadRef`), and any command
in any resource that names a group or workload of the stack and sets a size
(`commanded`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable

from gpusizer.policies import evidence, k8s, manifests, shell, templates
from gpusizer.policies import resources as res
from gpusizer.policies import view as v

KEDA_SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
# Every served HPA version carries spec.maxReplicas (required): autoscaling/v1, v2beta1, v2beta2 and v2
# (Kubernetes API reference, HorizontalPodAutoscalerSpec, v1.29-v1.31, read 2026-11-25).
K8S_HPAS = tuple(
    f"kubernetes:autoscaling/{version}:HorizontalPodAutoscaler" for version in ("v1", "v2beta1", "v2beta2", "v2")
)
# A namespaced object that names none is created in the provider's namespace, "default" unless the
# provider sets another (Pulumi Kubernetes provider, `namespace` setting): both sides read it alike.
DEFAULT_NAMESPACE = "default"
GCP_AUTOSCALER = "gcp:compute/autoscaler:Autoscaler"
GCP_REGION_AUTOSCALER = "gcp:compute/regionAutoscaler:RegionAutoscaler"
# KEDA's maxReplicaCount when unset: 100 (KEDA docs, "ScaledObject specification", maxReplicaCount
# "Default: 100", v2.16, read 2026-11-23).
KEDA_DEFAULT_MAX = 100.0


def _required(*path: str, default: float | None = None) -> Callable[[v.View], float]:
    def read(p: v.View) -> float:
        n = p.number(*path)
        if n is None:
            if default is None:
                raise ValueError(f"{'.'.join(path)} is missing")
            return default
        return n

    return read


AWS_SCHEDULE = "aws:autoscaling/schedule:Schedule"


def _schedule(p: v.View) -> float:
    """A scheduled action's largest size: maxSize, else desiredCapacity (either may be omitted; -1 keeps)."""
    sizes = [n for n in (p.number("maxSize"), p.number("desiredCapacity"), p.number("minSize")) if n is not None]
    return max(sizes, default=0.0)


AWS_NATIVE_SCHEDULE = "aws-native:autoscaling:ScheduledAction"
AWS_NATIVE_WARM_POOL = "aws-native:autoscaling:WarmPool"
AWS_POLICY = "aws:autoscaling/policy:Policy"


def _predictive(p: v.View) -> float:
    """A scaling policy's own bound on the group: none, except predictive scaling allowed past maxSize.
    With maxCapacityBreachBehavior IncreaseMaxCapacity the group's maximum becomes the forecast plus
    maxCapacityBuffer percent, and the forecast has no bound (AWS PredictiveScalingConfiguration,
    MaxCapacityBreachBehavior and MaxCapacityBuffer, read 2026-11-26)."""
    if (p.text("policyType") or "").lower() != "predictivescaling":
        return 0.0
    if (p.text("predictiveScalingConfiguration", "maxCapacityBreachBehavior") or "").lower() == "increasemaxcapacity":
        raise ValueError(
            "predictive scaling with maxCapacityBreachBehavior IncreaseMaxCapacity lets the group grow past "
            "maxSize with the forecast, which has no bound: use HonorMaxCapacity"
        )
    return 0.0


# Literal target references: autoscaler type -> the field that names its target by name or URL.
# A Dynamic Workload Scheduler resize request adds `resizeBy` VMs to its managed instance group at once
# (Compute Engine API, instanceGroupManagerResizeRequests: resizeBy; read 2026-11-26): counted as the group's
# size while it runs (a lower bound: the group's own target size comes on top).
GCP_RESIZE_REQUEST = "gcp:compute/resizeRequest:ResizeRequest"
TARGET_FIELD = {
    GCP_RESIZE_REQUEST: "instanceGroupManager",
    GCP_AUTOSCALER: "target",
    GCP_REGION_AUTOSCALER: "target",
    AWS_SCHEDULE: "autoscalingGroupName",
    AWS_NATIVE_SCHEDULE: "autoScalingGroupName",
    AWS_NATIVE_WARM_POOL: "autoScalingGroupName",
    AWS_POLICY: "autoscalingGroupName",
}


def _warm_pool(p: v.View) -> float:
    """A warm pool resource's instances: MaxGroupPreparedCapacity (when set) plus MinSize, on top of the group
    (AWS PutWarmPool; the group's own warmPool field is counted in resources._asg_count)."""
    prepared = p.number("maxGroupPreparedCapacity")
    return max(prepared or 0.0, 0.0) + max(p.number("minSize") or 0.0, 0.0)


MAXIMUM: dict[str, Callable[[v.View], float]] = {
    AWS_SCHEDULE: _schedule,
    AWS_NATIVE_WARM_POOL: _warm_pool,
    **{f"{hpa}Patch": _required("spec", "maxReplicas", default=0.0) for hpa in K8S_HPAS},
    AWS_NATIVE_SCHEDULE: _schedule,
    AWS_POLICY: _predictive,
    **{f"kubernetes:{kind}Patch": _required("spec", "replicas", default=0.0) for kind in k8s.SCALABLE},
    "kubernetes:batch/v1:JobPatch": _required("spec", "parallelism", default=0.0),
    KEDA_SCALED_OBJECT: _required("spec", "maxReplicaCount", default=KEDA_DEFAULT_MAX),
    **{hpa: _required("spec", "maxReplicas") for hpa in K8S_HPAS},
    GCP_AUTOSCALER: _required("autoscalingPolicy", "maxReplicas"),
    GCP_REGION_AUTOSCALER: _required("autoscalingPolicy", "maxReplicas"),
    GCP_RESIZE_REQUEST: _required("resizeBy"),
}
"""Autoscaler type -> its maximum replicas (nodes or pods of its target)."""


def _patched(r, stack: list):
    """The object a Kubernetes patch patches: the one of its kind, name and namespace in the stack, or None."""
    kind = r.type.removesuffix("Patch")
    try:
        key = (_namespace(r.props), r.props.text("metadata", "name"))
    except v.Unknown:
        return None
    for x in stack:
        if x.type == kind:
            try:
                if (_namespace(x.props), x.props.text("metadata", "name")) == key:
                    return x
            except v.Unknown:
                continue
    return None


def _launches_gpu(r, stack: list) -> bool:
    """Whether a covered resource may launch a GPU: its own types, or an in-stack template it depends on (a
    shape unknown at preview counts: fail closed)."""
    by_urn = {x.urn: x for x in stack}
    d = r.props.data if isinstance(r.props.data, dict) else {}
    mip = d.get("mixedInstancesPolicy") if isinstance(d.get("mixedInstancesPolicy"), dict) else {}
    specs = [d.get("launchTemplate"), (mip.get("launchTemplate") or {}).get("launchTemplateSpecification")]
    refs = {
        str(x).strip().lower()
        for spec in specs
        if isinstance(spec, dict)
        for k, x in spec.items()
        if k in ("id", "name", "launchTemplateId", "launchTemplateName") and isinstance(x, str)
    }
    named = [t for t in stack if t.type in res.TEMPLATES and templates.names(t) & refs]
    linked = [by_urn[u] for u in r.dependencies if u in by_urn and by_urn[u].type in res.TEMPLATES]
    for x in [r, *linked, *named]:
        try:
            if res.gpu_resource(x.type, x.props) is not None:
                return True
        except (v.Unknown, ValueError):
            return True
    return False


ANY_NAMESPACE = "*"  # a workload whose namespace is computed at preview: matched by name and kind alone


def _namespace(p: v.View) -> str:
    return p.text("metadata", "namespace") or DEFAULT_NAMESPACE


def maxima(stack: list) -> tuple[dict[str, float], list[tuple[str, Exception]]]:
    """(URN of a GPU resource -> the largest maximum among the autoscalers that target it, and the
    autoscalers that could not be read: (URN, gpusizer.policies.view.Unknown for a maximum or target reference
    unknown at preview, or ValueError for a missing maximum)). One unreadable autoscaler leaves the
    others' maxima in place.

    Args:
        stack: gpusizer.policies.sizing.StackResource records.
    """
    gpu = {r.urn: r for r in stack if r.type in res.KINDS and r.type not in res.TEMPLATES}
    by_name = {}
    failed: list[tuple[str, Exception]] = []
    named = any(
        r.type in MAXIMUM
        and r.type.startswith("kubernetes:")
        and not (r.type.endswith("Patch") and r.props.has("spec", "template"))  # a workload, not a scaler
        for r in stack
    )
    for r in gpu.values() if named else ():  # a Kubernetes autoscaler names its target: index them by name
        if r.type.startswith("kubernetes:"):
            try:  # a DeploymentPatch scales as a Deployment
                name, kind = r.props.text("metadata", "name"), k8s.kind(r.type).lower()
                try:
                    space = _namespace(r.props)
                except v.Unknown:  # a namespace computed at preview: any autoscaler of its name and kind may scale it
                    space = ANY_NAMESPACE
                key = (space, name, kind)
                by_name[key] = [*by_name.get(key, []), r.urn]
            except (v.Unknown, ValueError) as exc:  # no autoscaler can be matched to it (until `up`)
                failed.append((r.urn, exc))
    out: dict[str, float] = {}
    for r in stack:
        read = MAXIMUM.get(r.type)
        if read is None:
            continue
        try:
            targets = [d for d in r.dependencies if d in gpu]
            field = TARGET_FIELD.get(r.type)
            try:
                ref = r.props.get(field) if field else None
            except v.Unknown:  # an output reference: the dependency links name the target
                ref = None
            if isinstance(ref, str) and ref.strip():  # a literal name or URL: resolved by value
                targets += [t.urn for t in templates.named(ref, list(gpu.values()))]
            if r.type.endswith("HorizontalPodAutoscalerPatch"):  # it raises the bound of the HPA it patches
                hpa = _patched(r, stack)
                ref = hpa.props.at("spec", "scaleTargetRef") if hpa is not None else None
                if ref is not None:
                    key = (_namespace(hpa.props), ref.text("name"), (ref.text("kind") or "deployment").lower())
                    targets += by_name.get(key, [])
            elif r.type.endswith("Patch"):  # a patch scales the workload of its own name and kind
                try:
                    key = (_namespace(r.props), r.props.text("metadata", "name"), k8s.kind(r.type).lower())
                except v.Unknown:
                    if r.props.has("spec", "template"):
                        continue  # it carries its own pods: judged as a workload itself
                    raise
                targets += [u for u in by_name.get(key, []) if u != r.urn]
            elif r.type.startswith("kubernetes:"):
                ref = r.props.at("spec", "scaleTargetRef")
                kind = (ref.text("kind") or "deployment").lower()
                try:
                    name = ref.text("name")
                    targets += by_name.get((_namespace(r.props), name, kind), [])
                    targets += by_name.get((ANY_NAMESPACE, name, kind), [])
                except v.Unknown:
                    if not targets:  # no link names its target: it counts for every workload it could scale
                        targets += [u for (_, _, k), us in by_name.items() if k == kind for u in us]
            if not targets:
                continue  # it scales no GPU resource of this stack
            try:
                top = read(r.props)
            except ValueError:
                if not any(_launches_gpu(gpu[u], stack) for u in targets):
                    continue  # an unbounded scaler of a group that launches no GPU is not the gate's to judge
                raise
        except (v.Unknown, ValueError) as exc:
            failed.append((r.urn, exc))
            continue
        for urn in targets:
            out[urn] = max(out.get(urn, 0.0), top)
    for urn, top in commanded(stack, gpu):
        out[urn] = max(out.get(urn, 0.0), top)
    for urn, top in referring(stack, by_name if named else _k8s_names(gpu)):
        out[urn] = max(out.get(urn, 0.0), top)
    return out, failed


def referring(stack: list, by_name: dict) -> list[tuple[str, float]]:
    """(URN, replicas) for workloads another Kubernetes object runs by reference (`spec.workloadRef`: an Argo
    Rollout runs the Deployment's pods at its own replicas; `spec.scaleTargetRef` of a scaler this pack does
    not list), at the largest count it names."""
    out: list[tuple[str, float]] = []
    for r in stack:
        if not r.type.startswith("kubernetes:") or r.type in MAXIMUM:
            continue
        for field in ("workloadRef", "scaleTargetRef"):
            try:
                ref = r.props.at("spec", field)
                if not ref.has("name"):
                    continue
                key = (_namespace(r.props), ref.text("name"), (ref.text("kind") or "deployment").lower())
                sizes = [r.props.number("spec", k) for k in ("replicas", "maxReplicas", "maxReplicaCount")]
            except (v.Unknown, ValueError):
                continue
            top = max([n for n in sizes if n is not None] + [0.0])
            out += [(u, top) for u in by_name.get(key, [])] if top else []
    return out


def _k8s_names(gpu: dict) -> dict:
    out: dict = {}
    for r in gpu.values():
        if r.type.startswith("kubernetes:"):
            try:
                key = (_namespace(r.props), r.props.text("metadata", "name"), k8s.kind(r.type).lower())
            except (v.Unknown, ValueError):
                continue
            out[key] = [*out.get(key, []), r.urn]
    return out


# Commands that resize capacity (a Command resource, user data, a script a job runs, an SDK call in code): any
# command that names a group or workload of the stack and sets a size (`aws autoscaling update-auto-scaling-group
# --max-size`, `put-scheduled-update-group-action`, `aws eks update-nodegroup-config --scaling-config maxSize=`,
# `kubectl scale --replicas`, `kubectl patch -p '{"spec":{"replicas":200}}'`, `kubectl autoscale --max`,
# `gcloud ... resize --size` / `set-autoscaling --max-num-replicas`, boto3 `update_auto_scaling_group(MaxSize=)`, an
# Automation runbook's input `{"MaxSize": ["200"]}`: its parameters are lists of strings; eksctl `scale nodegroup
# --nodes`, a Job's `parallelism`, a DWS resize request's `--resize-by`).
_SIZE_SET = re.compile(
    r"(?:max[-_]?size|max[-_]?num[-_]?replicas|max[-_]?replicas|--max|replicas|desired[-_]?capacity|desired[-_]?size"
    r"|num[-_]?nodes|max[-_]?nodes|total[-_]?max[-_]?nodes|--size|min[-_]?size|--nodes(?:-max|-min)?|parallelism"
    r"|resize[-_]?by)[\"']?\s*[:=]?\s*\[?\s*[\"']?(\d+)"
    r"|\"path\"\s*:\s*\"/spec/replicas\"\s*,\s*\"value\"\s*:\s*\"?(\d+)",  # a JSON patch of the replicas
    re.I,
)


def _texts(value, out: list[str], budget: list[int]) -> None:
    """The strings in `value` that set a size, and a container's command and args joined into the one command
    line the runtime runs (`command: [kubectl, scale, --replicas=80, deploy, llm]`)."""
    if budget[0] <= 0:
        return
    budget[0] -= 1
    if isinstance(value, str):
        if not v.is_unknown(value) and _SIZE_SET.search(_arithmetic(value.lower())):
            out.append(value)
    elif isinstance(value, dict):
        argv = [x for k in ("command", "args") for x in (value.get(k) if isinstance(value.get(k), list) else [])]
        if len(argv) > 1 and all(isinstance(x, str) for x in argv):
            _texts(" ".join(argv), out, budget)
        for x in value.values():
            _texts(x, out, budget)
    elif isinstance(value, list):
        for x in value:
            _texts(x, out, budget)


def _component_names(r, by_urn: dict) -> set[str]:
    """The names of the component (a Helm release or chart) whose manifests rendered `r`, if any."""
    parent = by_urn.get(r.parent or "") if manifests.EXPANDED in r.urn else None
    if parent is None:
        return set()
    try:
        given = parent.props.text("name")
    except (v.Unknown, ValueError):
        given = None
    return {n.lower() for n in (given, parent.name) if n}


def _workload_names(r) -> set[str]:
    names = set(templates.names(r))
    try:
        name = r.props.text("metadata", "name")
    except (v.Unknown, ValueError):
        name = None
    return {n for n in names | ({name.lower()} if name else set()) if n}


# Where a command names what it resizes: after a flag or a verb that takes a group, pool or workload. A name this
# short (`l4`, `gp`) is matched only there; a longer one anywhere as a word.
_TARGET = (
    r"(?:--node-?pool|--nodegroup(?:-name)?|--auto-scaling-group-name|--name|node-pools\s+(?:update|resize)"
    r"|managed\s+resize|(?:deployment|statefulset|replicaset|job)s?[/\s]"
    r"|[\"']?(?:auto_?scaling_?group_?name|node_?pool_?name|nodegroup_?name)[\"']?\s*[:=]\s*\[?\s*[\"']?)[=\s]*"
)


def _names(segment: str, name: str) -> bool:
    """Whether a command segment names `name` (a group, pool or workload of the stack)."""
    word = re.escape(name) + r"(?![\w-])"
    if len(name) < 3:
        return bool(re.search(_TARGET + word, segment))
    return bool(re.search(r"(?<![\w-])" + word, segment))


_ARITHMETIC = re.compile(r"\$\(\(\s*(\d+)\s*([*+])\s*(\d+)\s*\)\)")
# A number a program reads from its environment with a default (`int(os.environ.get("PEAK", "64"))`): the default.
_ENV_NUMBER = re.compile(r"int\(\s*os\.(?:environ\.get|getenv)\(\s*[\"']\w+[\"']\s*,\s*[\"']?(\d+)[\"']?\s*\)\s*\)")


_HCL_DEFAULT = re.compile(r"variable\s+\"(\w+)\"\s*\{[^}]*?\bdefault\s*=\s*(\d+)")


def _arithmetic(text: str) -> str:
    """Sizes as the shell or the program computes them: a variable set to a number substituted where it is used
    (`N=8 ... $((N*8))`, Python's `TARGET = 64 ... MaxSize=TARGET`), `$(( 40 * 5 ))` expanded (products and sums
    of two numbers), an environment read's default number, a Terraform variable's default (`var.peak`)."""
    text = _ENV_NUMBER.sub(r"\1", text)
    for name, value in _HCL_DEFAULT.findall(text):  # Terraform: `max_size = var.peak` with the variable's default
        text = re.sub(r"\bvar\." + re.escape(name) + r"\b", value, text)
    for _ in range(2):  # variables, then arithmetic over them, then variables set from arithmetic
        for name, value in re.findall(r"(?<![\w.$])([a-z_]\w*)\s?=\s?(\d+)\b", text):
            text = re.sub(r"\$\{?" + name + r"\b\}?", value, text)  # the shell's $N, ${N}
            text = re.sub(r"(?<=\(\()\s*" + name + r"\b|\b" + name + r"(?=\s*\)\))", value, text)  # $((N*8))
            text = re.sub(r"(?<==)" + name + r"\b", value, text)  # Python's keyword argument MaxSize=TARGET
        text = _ARITHMETIC.sub(lambda m: str(int(m[1]) * int(m[3]) if m[2] == "*" else int(m[1]) + int(m[3])), text)
    return text


def _segments(text: str) -> list[str]:
    """What one resize may say at once: each shell command or SDK call of `text`, and each mapping of a
    YAML or JSON document it holds (an Automation step's `inputs: {AutoScalingGroupName: gpu, MaxSize: 64}`)."""
    text = _arithmetic(text.lower())
    out = shell.commands(shell.calls_joined(text, blocks=True))
    stack: list = evidence.documents(text)
    while stack and len(out) < 5_000:  # a runbook's steps number in tens: more is not a resize document
        x = stack.pop()
        if isinstance(x, dict):
            out.append(json.dumps(x, default=str))
            stack += [y for y in x.values() if isinstance(y, (dict, list))]
        elif isinstance(x, list):
            stack += [y for y in x if isinstance(y, (dict, list))]
    return out


_COPIED = re.compile(r"create\s+job\s+([\w.-]+)\s+--from[= ](?:cronjobs?|cj)[./]([\w.-]+)")


def commanded(stack: list, gpu: dict) -> list[tuple[str, float]]:
    """(URN, size) for each GPU group or workload of the stack that a command in another resource resizes: a
    command naming it and setting a size (`_SIZE_SET`); the largest size it sets counts. A workload a chart or
    manifest component renders is named by the component's name too (`helm upgrade llm --set replicas=80`)."""
    out: list[tuple[str, float]] = []
    by_urn = {r.urn: r for r in stack}
    named = {u: _workload_names(g) | _component_names(g, by_urn) for u, g in gpu.items()}
    for r in stack:
        texts: list[str] = []
        data = v.raw(r.props.data)
        _texts([data, evidence.code_of(data, manifests.base())], texts, [50_000])
        for text in texts:
            # `kubectl create job now --from=cronjob/train` runs the CronJob's pods under a new name: a resize
            # of `now` (`kubectl patch job now -p '{"spec":{"parallelism":64}}'`) resizes `train`'s pods
            copies = _COPIED.findall(text.lower())
            names_here = {u: names | {new for new, old in copies if old in names} for u, names in named.items()}
            for segment in _segments(text):
                sizes = [float(a or b) for a, b in _SIZE_SET.findall(segment)]
                if not sizes:
                    continue
                out += [
                    (u, max(sizes))
                    for u, names in names_here.items()
                    if u != r.urn and any(_names(segment, n) for n in names)
                ]
    return out


def _percent(count: float, pct) -> float:
    return float(math.ceil(count * float(pct) / 100)) if pct else 0.0


def _asg_refresh(p: v.View, count: float) -> float:
    """An instance refresh launches new instances before it stops old ones, up to maxHealthyPercentage of the
    desired capacity (100 to 200; 100 by default: none above it) (EC2 Auto Scaling API, RefreshPreferences,
    read 2026-11-26)."""
    pct = p.number("instanceRefresh", "preferences", "maxHealthyPercentage")
    return _percent(count, (pct or 100) - 100)


def _gke_upgrade(p: v.View, count: float) -> float:
    """A node pool upgrade adds nodes: a blue-green upgrade builds a whole new pool beside the old one; a surge
    upgrade adds maxSurge nodes at a time (GKE docs, "Node pool upgrade strategies", read 2026-11-26). Counted
    as the pool's upgradeSettings say."""
    if (p.text("upgradeSettings", "strategy") or "") == "blue_green":
        return count
    return max(p.number("upgradeSettings", "maxSurge") or 0.0, 0.0)


def _mig_update(p: v.View, count: float) -> float:
    """A managed instance group's proactive update creates up to maxSurge instances above its target size
    (Compute Engine API, InstanceGroupManagerUpdatePolicy: maxSurge fixed or percent, read 2026-11-26)."""
    fixed = p.number("updatePolicy", "maxSurgeFixed")
    return max(fixed, 0.0) if fixed else _percent(count, p.number("updatePolicy", "maxSurgePercent"))


_PEAKS: dict[str, Callable[[v.View, float], float]] = {
    "aws:autoscaling/group:Group": _asg_refresh,
    "gcp:container/nodePool:NodePool": _gke_upgrade,
    "gcp:compute/instanceGroupManager:InstanceGroupManager": _mig_update,
    "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager": _mig_update,
}


def surge(resource_type: str, p: v.View, count: float) -> float:
    """Nodes or pods an update runs above `count` at its peak: a rolling update's maxSurge (k8s.surge), an
    instance refresh, a node pool upgrade, a managed instance group's update. The budget counts the peak."""
    read = _PEAKS.get(resource_type)
    try:
        return read(p, count) if read else k8s.surge(resource_type, p, count)
    except v.Unknown:  # an update policy not given is computed by the provider: none is configured to surge
        return 0.0
