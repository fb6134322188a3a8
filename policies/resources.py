"""GPU facts of each covered resource type, read field by field (camelCase wire names).

One `Kind` per type token says where that type declares each fact: the types
it may launch, its sizing metadata, its purchase option, how many nodes or
pods it runs, and the template it takes the rest from. `GpuResource` reads a
fact only when a rule asks for it, so an unknown value elsewhere in the
resource never blinds a rule (policies/view.py).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

from gpusizer.contract import audit, metadata
from gpusizer.policies import k8s, shapes
from gpusizer.policies import view as v

AWS_INSTANCE = "aws:ec2/instance:Instance"
AWS_SPOT_INSTANCE = "aws:ec2/spotInstanceRequest:SpotInstanceRequest"
AWS_LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
AWS_LAUNCH_CONFIG = "aws:ec2/launchConfiguration:LaunchConfiguration"
AWS_ASG = "aws:autoscaling/group:Group"
AWS_FLEET = "aws:ec2/fleet:Fleet"
AWS_SPOT_FLEET = "aws:ec2/spotFleetRequest:SpotFleetRequest"
AWS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
AWS_BATCH = "aws:batch/computeEnvironment:ComputeEnvironment"
GCP_INSTANCE = "gcp:compute/instance:Instance"
GCP_TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
GCP_REGION_TEMPLATE = "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate"
GCP_FROM_TEMPLATE = "gcp:compute/instanceFromTemplate:InstanceFromTemplate"
GCP_NODE_POOL = "gcp:container/nodePool:NodePool"
GCP_MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
GCP_REGION_MIG = "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager"


@dataclasses.dataclass(frozen=True)
class Kind:
    """Where one resource type declares each GPU fact.

    Attributes:
        provider: "aws", "gcp" or "onprem" (Kubernetes).
        shapes: the types it may launch (empty: they come from its template).
        metadata: the path of its tags / labels / annotations.
        purchase: "spot", "on-demand", or None when its consumer decides (a template).
        count: nodes or pods it runs at most; 0 for a template (its consumer counts).
        template: paths naming the template it launches from, if any.
        host: it describes a host (IMDS, disks), judged by the host rules.
    """

    provider: str
    shapes: Callable[[v.View], list[shapes.Shape]]
    metadata: Callable[[v.View], dict]
    purchase: Callable[[v.View], str | None]
    count: Callable[[v.View], float]
    template: tuple[tuple[str, ...], ...] = ()
    host: bool = False


def _aws_types(views: list[v.View]) -> list[shapes.Shape]:
    """Shapes of override-like entries: `instanceType`, or `instanceRequirements` (attribute-based)."""
    out: list[shapes.Shape] = []
    for x in views:
        t = x.text("instanceType")
        if t:
            s = shapes.aws(t)
            out += [s] if s else []
        elif x.has("instanceRequirements"):
            out += shapes.requirements(x.at("instanceRequirements")) or []
    return out


def _instance_like(p: v.View) -> list[shapes.Shape]:
    return _aws_types([p])


def _overrides(*path: str) -> Callable[[v.View], list[shapes.Shape]]:
    return lambda p: _aws_types(p.each(*path))


def _fleet(p: v.View, others: bool = False) -> list[shapes.Shape]:
    """The overrides' types. A launch template config without overrides launches its template's type: when
    the resource names types elsewhere (other configs' overrides, `others`), that type is not among them and
    is unverifiable here; when it names none, the resource is judged through its templates."""
    configs = p.each("launchTemplateConfigs")
    out = _aws_types([o for c in configs for o in c.each("overrides")])
    if out or others:
        out += [
            shapes.Shape(f"{c.path} (its launch template's type)", None, None)
            for c in configs
            if not c.each("overrides")
        ]
    return out


def _spot_fleet(p: v.View) -> list[shapes.Shape]:
    own = _aws_types(p.each("launchSpecifications"))
    return own + _fleet(p, others=bool(own))


def _type_list(*path: str) -> Callable[[v.View], list[shapes.Shape]]:
    """A list of types or (AWS Batch) family names; 'optimal' and 'default_*' pick CPU families."""

    def read(p: v.View) -> list[shapes.Shape]:
        out: list[shapes.Shape] = []
        for x in p.each(*path):
            t = x.text()
            if not t or t == "optimal" or t.startswith("default_"):
                continue
            found = [shapes.aws(t)] if "." in t else shapes.aws_family_shapes(t)
            out += [s for s in found or [] if s]
        return out

    return read


def _gcp(node: tuple[str, ...] = ()) -> Callable[[v.View], list[shapes.Shape]]:
    def read(p: v.View) -> list[shapes.Shape]:
        try:
            m = shapes.machine(p.text(*node, "machineType") or "")
        except v.Unknown:
            if not p.each(*node, "guestAccelerators"):
                raise
            m = ""  # the accelerators known at preview are the GPUs, whatever machine carries them
        if audit.capacity_of_type("gcp", m) is not None:
            # Built-in GPUs (A2, A3, A4, G2): the machine type says what it holds; guestAccelerators must match
            # it or GCE refuses the VM, and the provider computes them when not given (unknown at a preview).
            return [shapes.gcp(m, [])]
        accels = []
        for a in p.each(*node, "guestAccelerators"):
            kind = shapes.machine(a.text("type") or "")
            try:
                count = a.number("count")
            except v.Unknown:
                count = None  # computed at preview: at least one (the known type is still judged)
            accels.append((kind, 1.0 if count is None else count))
        if not m and not accels:
            return []
        s = shapes.gcp(m, accels)
        return [s] if s else []

    return read


def _tags(p: v.View) -> dict:
    return p.mapping("tags")


def _template_tags(p: v.View) -> dict:
    """A launch template's tags and the tags it gives the instances it launches (`tagSpecifications` of
    resourceType `instance`, EC2 API LaunchTemplateTagSpecificationRequest): those instances carry the
    requirement, so either says it."""
    out: dict = {}
    for spec in p.each("tagSpecifications"):
        if (spec.text("resourceType") or "instance") == "instance":
            out.update(spec.mapping("tags"))
    return {**out, **p.mapping("tags")}


def _tags_at(*path: str) -> Callable[[v.View], dict]:
    def read(p: v.View) -> dict:
        try:
            top = p.mapping("tags")
        except v.Unknown:  # the resource's own tags computed (not given): the nested ones still say
            top = {}
        return {**top, **p.mapping(*path)}

    return read


def _labels(*node: str) -> Callable[[v.View], dict]:
    return lambda p: p.mapping(*node, "labels") if node else p.mapping("labels")


def _market(*path: str, default: str | None) -> Callable[[v.View], str | None]:
    def read(p: v.View) -> str | None:
        market = p.text(*path)
        return "spot" if market == "spot" else ("on-demand" if market else default)

    return read


def _asg_purchase(p: v.View) -> str | None:
    """Spot only when the group buys no on-demand at all (base 0 and 0% above it)."""
    try:
        given = p.has("mixedInstancesPolicy") and p.get("mixedInstancesPolicy") is not None
    except v.Unknown:  # computed at a first preview: not given
        given = False
    dist = p.at("mixedInstancesPolicy", "instancesDistribution")
    if not given:
        return "on-demand"  # the template's market options decide; the group cannot be shown spot here
    base = dist.number("onDemandBaseCapacity") or 0  # AWS default 0
    pct = dist.number("onDemandPercentageAboveBaseCapacity")
    return "spot" if base == 0 and pct == 0 else "on-demand"  # AWS default 100%


def _fleet_purchase(p: v.View) -> str | None:
    spec = p.at("targetCapacitySpecification")
    kind = spec.text("defaultTargetCapacityType")
    return "spot" if kind == "spot" and not spec.number("onDemandTargetCapacity") else "on-demand"


def _spot_fleet_purchase(p: v.View) -> str | None:
    return "on-demand" if p.number("onDemandTargetCapacity") else "spot"


def _gcp_purchase(*node: str) -> Callable[[v.View], str | None]:
    def read(p: v.View) -> str | None:
        if node:  # GKE node config: spot / preemptible booleans
            return "spot" if p.get(*node, "spot") is True or p.get(*node, "preemptible") is True else "on-demand"
        model = p.text("scheduling", "provisioningModel")
        return "spot" if model == "spot" or p.get("scheduling", "preemptible") is True else "on-demand"

    return read


def _nodes(*paths: tuple[str, ...], default: float = 1.0) -> Callable[[v.View], float]:
    """The first count set among paths (a group's maximum before its desired size)."""

    def read(p: v.View) -> float:
        for path in paths:
            n = p.number(*path)
            if n is not None:
                if n < 0:
                    raise ValueError(f"{'.'.join(path)} {n:g} must not be negative")
                return n
        return default

    return read


# A regional GKE cluster's node pools span three zones of its region unless nodeLocations names them
# (GKE docs, "Regional clusters": "by default, GKE replicates each node pool across three zones").
GKE_DEFAULT_ZONES = 3


def _gke_nodes(p: v.View) -> float:
    """The most nodes a GKE node pool runs: totalMaxNodeCount, else the per-zone count (maxNodeCount,
    nodeCount or initialNodeCount, all per zone: pulumi-gcp container.NodePool) x its zones."""
    if p.number("autoscaling", "totalMaxNodeCount") is not None:
        return _nodes(("autoscaling", "totalMaxNodeCount"))(p)
    try:
        per_zone = _nodes(("autoscaling", "maxNodeCount"), ("nodeCount",), ("initialNodeCount",))(p)
    except v.Unknown:  # nodeCount is computed when not given: the pool is created at initialNodeCount
        per_zone = _nodes(("autoscaling", "maxNodeCount"), ("initialNodeCount",))(p)
    return per_zone * _gke_zones(p)


def _gke_zones(p: v.View) -> int:
    """The zones a node pool spans: nodeLocations when known, else one for a zonal location and three
    for a regional one or an unknown one (nodeLocations and location are computed when not given)."""
    try:
        zones = len(p.each("nodeLocations"))
    except v.Unknown:
        zones = 0
    if zones:
        return zones
    try:
        location = p.text("location")
    except v.Unknown:
        return GKE_DEFAULT_ZONES
    return 1 if location and location.count("-") == 2 else GKE_DEFAULT_ZONES  # "us-central1-a" is a zone


def _asg_count(p: v.View) -> float:
    """The most instances a group holds: maxSize (else desired, min) in capacity units over the smallest
    override weight below 1 (AWS "instance weighting": maxSize counts units), and its warm pool. A warm
    pool holds MaxGroupPreparedCapacity minus the desired capacity (unset: the group's maximum minus the
    desired capacity), at least its MinSize (AWS PutWarmPool, MaxGroupPreparedCapacity and MinSize, read
    2026-11-26): with the group at its maximum, max(maxSize, MaxGroupPreparedCapacity) + MinSize in all."""
    units_ = _nodes(("maxSize",), ("desiredCapacity",), ("minSize",))(p)
    try:
        overrides = p.each("mixedInstancesPolicy", "launchTemplate", "overrides")
    except v.Unknown:  # an output unknown at a first preview was not given (the provider computes it)
        overrides = []
    weights = [o.number("weightedCapacity") for o in overrides]
    least = min([w for w in weights if w is not None and w > 0] + [1.0])
    n = math.ceil(units_ / least)
    try:  # an output unknown at a first preview was not given (the provider computes it): no warm pool
        pool = p.get("warmPool")
    except v.Unknown:
        pool = None
    if pool is not None:
        prepared = p.number("warmPool", "maxGroupPreparedCapacity")
        floor = p.number("warmPool", "minSize")
        n = max(n, prepared if prepared is not None and prepared >= 0 else 0) + max(floor or 0, 0)
    return n


def _zero(p: v.View) -> float:
    return 0.0


def _one(p: v.View) -> float:
    return 1.0


def _batch_count(p: v.View) -> float:
    """maxvCpus over the smallest admitted type's vCPUs: the most instances the environment may run."""
    vcpus = p.number("computeResources", "maxVcpus") or 0
    sizes = [s.vcpus for s in _type_list("computeResources", "instanceTypes")(p) if s.vcpus]
    return math.ceil(vcpus / min(sizes)) if sizes else 1.0


def _least_weight(p: v.View) -> float:
    """The smallest weightedCapacity among a fleet's overrides, 1 where one names none (AWS EC2 User
    Guide, "EC2 Fleet instance weighting": the units one instance of the type provides), capped at 1,
    so the count never falls below the units (a weight under 1 means more instances than units)."""
    weights = [o.number("weightedCapacity") for c in p.each("launchTemplateConfigs") for o in c.each("overrides")]
    weights += [x.number("weightedCapacity") for x in p.each("launchSpecifications")]  # Spot Fleet specifications
    positive = [w for w in weights if w is not None and w > 0]
    return min(positive + [1.0])


def _fleet_count(p: v.View) -> float:
    """Total target capacity in instances: units over the smallest weight below 1 (a weight of 0.01 runs
    100 instances per unit); in vCPUs or MiB, over the smallest type's vCPUs."""
    spec = p.at("targetCapacitySpecification")
    total = spec.number("totalTargetCapacity") or 0
    unit = spec.text("targetCapacityUnitType")
    if unit in (None, "units"):
        return math.ceil(total / _least_weight(p))
    sizes = [s.vcpus for s in _fleet(p) if s.vcpus]
    return math.ceil(total / min(sizes)) if sizes and unit == "vcpu" else total


def _none(p: v.View) -> None:
    return None


def _spot(p: v.View) -> str:
    return "spot"


_LT_PATHS = (("launchTemplate",),)
KINDS: dict[str, Kind] = {
    AWS_INSTANCE: Kind(
        "aws",
        _instance_like,
        _tags,
        _market("instanceMarketOptions", "marketType", default="on-demand"),
        _one,
        _LT_PATHS,
        host=True,
    ),
    AWS_SPOT_INSTANCE: Kind("aws", _instance_like, _tags, _spot, _one, _LT_PATHS, host=True),
    AWS_LAUNCH_TEMPLATE: Kind(
        "aws",
        _instance_like,
        _template_tags,
        _market("instanceMarketOptions", "marketType", default=None),
        _zero,
        host=True,
    ),
    AWS_LAUNCH_CONFIG: Kind(
        "aws", _instance_like, _tags, lambda p: "spot" if p.has("spotPrice") else None, _zero, host=True
    ),
    AWS_ASG: Kind(
        "aws",
        _overrides("mixedInstancesPolicy", "launchTemplate", "overrides"),
        _tags,
        _asg_purchase,
        _asg_count,
        (
            ("launchTemplate",),
            ("mixedInstancesPolicy", "launchTemplate", "launchTemplateSpecification"),
            ("launchConfiguration",),
        ),
    ),
    AWS_FLEET: Kind("aws", _fleet, _tags, _fleet_purchase, _fleet_count, (("launchTemplateConfigs",),)),
    AWS_SPOT_FLEET: Kind(
        "aws",
        _spot_fleet,
        _tags,
        _spot_fleet_purchase,
        lambda p: math.ceil(_nodes(("targetCapacity",))(p) / _least_weight(p)),
        (("launchTemplateConfigs",),),
        host=True,
    ),
    AWS_NODE_GROUP: Kind(
        "aws",
        _type_list("instanceTypes"),
        _tags,
        lambda p: "spot" if p.text("capacityType") == "spot" else "on-demand",
        _nodes(("scalingConfig", "maxSize"), ("scalingConfig", "desiredSize")),
        _LT_PATHS,
        host=True,
    ),
    AWS_BATCH: Kind(
        "aws",
        _type_list("computeResources", "instanceTypes"),
        _tags_at("computeResources", "tags"),
        lambda p: "spot" if p.text("computeResources", "type") in ("spot", "fargate_spot") else "on-demand",
        _batch_count,
        (("computeResources", "launchTemplate"),),
    ),
    GCP_INSTANCE: Kind("gcp", _gcp(), _labels(), _gcp_purchase(), _one),
    GCP_FROM_TEMPLATE: Kind("gcp", _gcp(), _labels(), _gcp_purchase(), _one, (("sourceInstanceTemplate",),)),
    GCP_TEMPLATE: Kind("gcp", _gcp(), _labels(), _gcp_purchase(), _zero),
    GCP_REGION_TEMPLATE: Kind("gcp", _gcp(), _labels(), _gcp_purchase(), _zero),
    GCP_NODE_POOL: Kind(
        "gcp",
        _gcp(("nodeConfig",)),
        lambda p: {**p.mapping("nodeConfig", "resourceLabels"), **p.mapping("nodeConfig", "labels")},
        _gcp_purchase("nodeConfig"),
        _gke_nodes,
    ),
    GCP_MIG: Kind(
        "gcp", lambda p: [], _labels(), _none, _nodes(("targetSize",)), (("versions",), ("instanceTemplate",))
    ),
    GCP_REGION_MIG: Kind(
        "gcp", lambda p: [], _labels(), _none, _nodes(("targetSize",)), (("versions",), ("instanceTemplate",))
    ),
    # pulumi-eks components (their inputs; a real preview also sends the node groups they create)
    "eks:index:ManagedNodeGroup": Kind(
        "aws",
        _type_list("instanceTypes"),
        _tags,
        lambda p: "spot" if p.text("capacityType") == "spot" else "on-demand",
        _nodes(("scalingConfig", "maxSize"), ("scalingConfig", "desiredSize")),
        _LT_PATHS,
    ),
    **{
        t: Kind(
            "aws",
            lambda p: _aws_types([p, p.at("nodeGroupOptions")]),
            _tags,
            lambda p: "spot" if p.has("spotPrice") else "on-demand",
            _nodes(("maxSize",), ("nodeGroupOptions", "maxSize"), ("desiredCapacity",), default=2.0),
        )
        for t in ("eks:index:NodeGroup", "eks:index:NodeGroupV2", "eks:index:Cluster")
    },
    **{
        t: Kind("onprem", k8s.shape_reader(pod), k8s.annotations(pod), _none, k8s.count(t))
        for t, pod in k8s.POD_SPECS.items()
    },
}
_OWN_TYPES = (
    ("instanceType",),
    ("instanceTypes",),
    ("machineType",),
    ("computeResources", "instanceTypes"),
    ("instanceRequirements",),
)
GROUPS = frozenset({AWS_ASG, AWS_FLEET, AWS_SPOT_FLEET, AWS_NODE_GROUP, AWS_LAUNCH_TEMPLATE})
"""Types that launch a ranked list of types (a template counts: its group's overrides rank after it)."""
TEMPLATES = frozenset({AWS_LAUNCH_TEMPLATE, AWS_LAUNCH_CONFIG, GCP_TEMPLATE, GCP_REGION_TEMPLATE})


@dataclasses.dataclass(frozen=True)
class Sizing:
    """Where a provider's resources carry their sizing (tag, label or annotation keys) and how the
    requirement's value reads as GiB (ValueError when it is not in that provider's form)."""

    required: str
    sized_by: str
    gib: Callable[[object], float]


SIZING: dict[str, Sizing] = {
    "aws": Sizing(metadata.AWS_REQUIRED, metadata.AWS_SIZED_BY, lambda value: v.finite(value, metadata.AWS_REQUIRED)),
    "gcp": Sizing(metadata.GCP_REQUIRED, metadata.GCP_SIZED_BY, metadata.parse_gcp_gib),  # "20_15": labels hold no "."
    "onprem": Sizing(
        metadata.K8S_REQUIRED, metadata.K8S_SIZED_BY, lambda value: v.finite(value, metadata.K8S_REQUIRED)
    ),
}
"""Provider (a key of gpusizer.base.providers.REGISTRY) -> its sizing keys and requirement reader."""


class GpuResource:
    """A covered resource as the rules see it; each fact is read on first use, and only its fields.

    Raises (from any property):
        gpusizer.policies.view.Unknown: a field the fact needs is unknown at preview.
        ValueError: a malformed field (the rule reports it).
    """

    def __init__(self, resource_type: str, props: v.View):
        self.type = resource_type
        self.kind = KINDS[resource_type]
        self.props = props
        self.provider = self.kind.provider

    @functools.cached_property
    def shapes(self) -> list[shapes.Shape]:
        return self.kind.shapes(self.props)

    @property
    def capacities(self):
        return [s.capacity for s in self.shapes if s.capacity is not None]

    @property
    def unknown(self) -> list[shapes.Shape]:
        """Shapes of accelerator types the pack cannot verify."""
        return [s for s in self.shapes if s.capacity is None]

    @property
    def label(self) -> str:
        return ", ".join(dict.fromkeys(s.label for s in self.shapes)) or self.type

    @functools.cached_property
    def _metadata(self) -> dict:
        return self.kind.metadata(self.props)

    @functools.cached_property
    def required_gib(self) -> float | None:
        """The sizing requirement: a positive finite number, else None (the resource counts as unsized).

        A value that is no number, zero, negative, infinite or so small it
        rounds to zero (1e-400) would make any GPU look adequate or exempt.
        """
        keys = SIZING[self.provider]
        value = self._metadata.get(keys.required)
        if v.is_unknown(value):
            raise v.Unknown(f"{keys.required} (tag/label/annotation)")
        try:
            gib = keys.gib(value)
        except ValueError:
            return None
        return gib if gib > 0 else None

    @property
    def raw_requirement(self):
        return self._metadata.get(SIZING[self.provider].required)

    @functools.cached_property
    def sized_by(self) -> str | None:
        value = self._metadata.get(SIZING[self.provider].sized_by)
        return value.strip().lower() if isinstance(value, str) and not v.is_unknown(value) else None

    @functools.cached_property
    def purchase(self) -> str | None:
        return self.kind.purchase(self.props)

    @functools.cached_property
    def count(self) -> float:
        return self.kind.count(self.props)

    def templates(self) -> bool:
        """Whether it names a template its types (or the rest of its host) come from."""
        return any(self.props.has(*path) for path in self.kind.template)

    def typed(self) -> bool:
        """Whether it names its own types, which win over any template's (an instance's instanceType, a
        group's overrides, a node group's instanceTypes, a GCP machineType): known and non-empty."""
        p = self.props
        for path in _OWN_TYPES:
            try:
                value = p.get(*path)
            except v.Unknown:
                continue
            if isinstance(value, str) and value.strip() or isinstance(value, (list, dict)) and value:
                return True
        try:
            overrides = p.each("mixedInstancesPolicy", "launchTemplate", "overrides") + [
                o for c in p.each("launchTemplateConfigs") for o in c.each("overrides")
            ]
        except (v.Unknown, ValueError):
            return False
        return bool(overrides) and all(o.has("instanceType") or o.has("instanceRequirements") for o in overrides)


def gpu_resource(resource_type: str, props: v.View) -> GpuResource | None:
    """The resource as a GpuResource when its type is covered and it may launch a GPU, else None.

    Reads the type fields only. A template consumer that names no type of its
    own (an ASG over a launch template) is covered through the template.
    """
    kind = KINDS.get(resource_type)
    if kind is None:
        return None
    r = GpuResource(resource_type, props)
    return r if r.shapes else None
