"""Step 2 of the pack's one pass: the GPU-resource model of a stack.

`StackModel(stack)` turns the resources the engine sends into what the rules judge:

1. Provider-side components (Kubernetes `yaml` ConfigGroup / ConfigFile,
   Helm, Kustomize) render their children inside the provider, so an offline
   preview never sees them: policies/manifests.py expands their manifests into
   child resources, judged like any other resource. A real `pulumi preview`
   sends the rendered children too.
2. Every resource's evidence (policies/evidence.py) is set against its model:
   - a type with a precise model (policies/resources.KINDS; the autoscalers of
     policies/scaling.py; gpusizer's own components, judged through their
     children; Kubernetes quotas, which hold no capacity) is judged by it, and
     strong evidence the model does not account for (a GPU resource name, an
     accelerated type, a GPU node selection the model reads no GPU from) is a
     finding: the model would miss what the cloud provisions;
   - any other type with evidence is a finding, unless the pack config
     (`gpusizer-gpu-evidence.allow`, owned by the platform team) allows that
     type or name, with a reason.
3. Templates a resource names by literal name, id or URL are resolved by value
   (policies/templates.py); one named by a value that no template in the
   stack has is a finding, not a pass. References unknown at preview follow
   the engine's dependency links.
4. Prices (`price`): the catalog's on-demand $/hour, else the best evidence
   (the catalog's spot price, a sibling type's per-GPU price times the GPUs),
   each with where it came from; a GPU shape with none is a finding.

A failure while modelling one resource (an overflow, a malformed value) is a
finding that names the resource (`Model.problems`); the rest of the stack is
still modelled and judged.
"""

from __future__ import annotations

import fnmatch
import functools
import math
import re
from collections.abc import Callable, Iterable

from gpusizer.contract import audit
from gpusizer.policies import charts, evidence, manifests, scaling, shapes, sizing
from gpusizer.policies import resources as res
from gpusizer.policies import templates as templates_mod
from gpusizer.policies import view as v

# gpusizer's own components: each records what it sizes; its children are the resources judged.
OWN_COMPONENTS = frozenset(
    {sizing.WORKLOAD, "gpusizer:aws:GpuCapacity", "gpusizer:gcp:GpuCapacity", "gpusizer:onprem:GpuCapacity"}
)
# Kubernetes objects that hold no capacity though they may name GPUs (a quota caps them, a range bounds them; a
# range's defaults hand GPUs out, which _read_model reports).
NO_CAPACITY = frozenset(
    {
        "kubernetes:core/v1:ResourceQuota",
        "kubernetes:core/v1:LimitRange",
        "kubernetes:core/v1:ResourceQuotaPatch",
        "kubernetes:core/v1:LimitRangePatch",
    }
)
# Resources that record, restrict or watch capacity and launch none: data a program reads (ConfigMaps,
# Secrets, objects), permissions and guards (IAM, SCPs, quotas), budgets, alarms, dashboards and rules. A type,
# an accelerator name or a GPU word in them asks for nothing; a GPU request with a count they hold (a pod
# template a controller reads from a ConfigMap) still counts. Matched as type-token prefixes.
RECORDS = (
    "kubernetes:core/v1:ConfigMap",
    "kubernetes:core/v1:Secret",
    "kubernetes:monitoring.coreos.com/",
    "aws:iam/",
    "aws:organizations/",
    # CloudWatch alarms and dashboards watch; its event rules' targets (aws:cloudwatch/eventTarget) start work
    # with the input they carry (a Lambda, a Batch job, a SageMaker pipeline), so they are not records
    "aws:cloudwatch/metricAlarm",
    "aws:cloudwatch/compositeAlarm",
    "aws:cloudwatch/dashboard",
    "aws:cloudwatch/logGroup",
    "aws:cloudwatch/logMetricFilter",
    "aws:cloudwatch/eventRule",  # a rule's event pattern filters events; its targets (above) start work
    "aws:dynamodb/tableItem",  # an item is data a program reads, as a stored object is
    "aws:budgets/",
    "aws:costexplorer/",
    "aws:servicequotas/",
    "aws:s3/bucketObject",
    "aws:ssm/parameter",
    "gcp:monitoring/",
    "gcp:cloudquotas/",
    "gcp:cloudquota/",  # (the Pulumi module's name: gcp.cloudquota.SQuotaPreference)
    "gcp:billing/",
    "gcp:storage/bucketObject",
    "gcp:firestore/document",
    "grafana:",  # dashboards, alert rules, data sources: they watch
    "datadog:",
    "gcp:projects/iam",
    # organization policies and Azure policies restrict what may be launched (a custom constraint denying a3)
    "gcp:orgpolicy/",
    "gcp:organizations/policy",
    "gcp:folder/organizationPolicy",
    "gcp:projects/organizationPolicy",
    "azure-native:authorization:Policy",
    "azure:policy/",
    "gcp:organizations/iam",
    "aws-native:iam:",
    "aws-native:cloudwatch:alarm",
    "aws-native:cloudwatch:compositeAlarm",
    "aws-native:cloudwatch:dashboard",
)


# a script, code or infrastructure-as-code file a record holds (`data.run.sh`, a bucket object's code archive
# `source.path<index.py>`, a Terraform or Packer file `main.tf`, `gpu.pkr.hcl`): what it asks for is launched
_SCRIPT = re.compile(rf"\.(?:{'|'.join(evidence.CODE_EXTENSIONS)})(?:$|[.<>\[])")


def records(resource_type: str) -> bool:
    """Whether the type records, restricts or watches capacity and launches none (`RECORDS`); a DRA DeviceClass
    of any API version defines which devices claims may get, and allocates none; a Kueue ClusterQueue or
    LocalQueue is a quota, as a ResourceQuota is, and a ResourceFlavor maps quota to node labels that Kueue adds
    to the pods it admits (those pods, and their GPU requests, are judged themselves)."""
    return resource_type.startswith(RECORDS) or resource_type.endswith(
        (":DeviceClass", ":ClusterQueue", ":LocalQueue", ":ResourceFlavor")
    )


def precise(resource_type: str) -> bool:
    """Whether the pack has a precise model for the type."""
    return (
        resource_type in res.KINDS
        or resource_type in scaling.MAXIMUM
        or resource_type in OWN_COMPONENTS
        or resource_type in NO_CAPACITY
        or resource_type in manifests.MANIFESTS
    )


class Model:
    """One resource as the rules judge it; every fact is read on first use (an unknown at preview blinds only
    the rule that reads it, policies/view.py).

    Attributes:
        resource: the resource (type, props, URN, links).
        stack: the StackModel it belongs to (its links resolved there).
        evidence: what in it can put an accelerator under it (policies/evidence.py).
        facts: the GPU fact reader of its type (policies/resources.GpuResource) when the type has a precise
            GPU model, else None.
        gpu: `facts` when it launches a GPU shape of its own, else None.
        problems: (kind, message) findings from modelling it: "evidence" (no precise model for its evidence,
            or evidence its model does not account for: the pack config may allow these) or "crash".
        template_refs: the templates it names by literal value (evidence of kind "template"), resolved at stack
            scope (`launched_templates`): a resource rule sees no other resource.
    """

    def __init__(self, resource: sizing.StackResource, stack: StackModel | None = None):
        self.resource = resource
        self.stack = stack
        self.evidence: list[evidence.Evidence] = []
        self.facts: res.GpuResource | None = (
            res.GpuResource(resource.type, resource.props) if resource.type in res.KINDS else None
        )
        self.gpu: res.GpuResource | None = None
        self.problems: list[tuple[str, str]] = []
        self.template_refs: list[evidence.Evidence] = []

    @property
    def label(self) -> str:
        return self.resource.name or self.resource.urn

    @property
    def urn(self) -> str:
        return self.resource.urn

    @functools.cached_property
    def templates(self) -> list[sizing.StackResource]:
        """The in-stack templates it launches (`templates`). Raises ValueError for a literal it cannot resolve."""
        return templates_mod.templates(self.resource, self.stack.by_urn if self.stack else {})

    @property
    def scaled_max(self) -> float:
        """The largest maximum among the autoscalers (and scheduled actions) that target it."""
        return self.stack.scaled.get(self.urn, 0.0) if self.stack else 0.0

    def most_count(self) -> float:
        """The most nodes or pods it runs: its own most, or its autoscalers' maximum when larger."""
        return sizing.most_count(self.facts, self.scaled_max)

    @functools.cached_property
    def workload(self) -> sizing.StackResource | None:
        """The nearest GpuWorkload above it in the parent chain (the engine's links, never names)."""
        return ancestor(self.resource, self.stack.by_urn if self.stack else {})

    def launched(self) -> list[shapes.Shape]:
        """The shapes it launches: its own (and those of the templates its overrides name instead of a type),
        else those of the in-stack templates it launches."""
        try:
            own = self.facts.shapes
        except v.Unknown:  # its own types computed: the in-stack templates it names still say what it launches
            if not self.facts.templates() or not self.templates:
                raise
            return [x for t in self.templates for x in res.GpuResource(t.type, t.props).shapes]
        if own or not self.facts.templates() or self.facts.typed():
            return own + [x for t in self.override_templates() for x in res.GpuResource(t.type, t.props).shapes]
        return [x for t in self.templates for x in res.GpuResource(t.type, t.props).shapes]

    def override_templates(self) -> list[sizing.StackResource]:
        """The in-stack templates that mixed-instances overrides name in place of a type (an override's own
        launchTemplateSpecification: AWS LaunchTemplateOverrides). Raises ValueError for one not in the stack."""
        d = self.resource.props.data if isinstance(self.resource.props.data, dict) else {}
        mip = d.get("mixedInstancesPolicy")
        lt = mip.get("launchTemplate") if isinstance(mip, dict) else None
        overrides = lt.get("overrides") if isinstance(lt, dict) else None
        specs = [
            o["launchTemplateSpecification"]
            for o in overrides or []
            if isinstance(o, dict)
            and not o.get("instanceType")
            and isinstance(o.get("launchTemplateSpecification"), dict)
        ]
        if not specs:
            return []
        probe = sizing.StackResource(self.resource.type, v.View({"launchTemplate": specs[0]}), self.urn, self.label)
        out = templates_mod.templates(probe, self.stack.by_urn if self.stack else {})
        for spec in specs[1:]:
            probe = sizing.StackResource(self.resource.type, v.View({"launchTemplate": spec}), self.urn, self.label)
            out += [t for t in templates_mod.templates(probe, self.stack.by_urn if self.stack else {}) if t not in out]
        return out

    def purchase(self) -> str | None:
        """How it buys ("spot", "on-demand"), through the template it launches when it does not say; None: unknown."""
        try:
            found = self.facts.purchase if self.facts else None
            if found is None:
                found = next((res.GpuResource(t.type, t.props).purchase for t in self.templates), None)
            return found
        except (v.Unknown, ValueError):
            return None

    def hourly(self, at_least: bool = False) -> float | None:
        """$/hour of everything it may run: most_count() (plus a rolling update's surge) x its dearest
        launched shape, priced from the best
        evidence (`price`). None when it launches no GPU (a template launches nothing by itself). `at_least`:
        with a count unknown at preview, one node or pod (or its autoscalers' maximum): a lower bound.

        Raises:
            gpusizer.policies.view.Unknown: a field the count or the types need is unknown at preview.
            ValueError: a template not in this stack, or a GPU shape with no price evidence (naming it).
        """
        if self.facts is None or self.resource.type in res.TEMPLATES:
            return None
        found = self.launched()
        if not found:
            return None
        prices = []
        for x in found:
            usd, why = price(x, self.facts.provider)
            if usd is None and self.facts.provider != "onprem":
                raise ValueError(
                    f"{why}; the budget cannot leave it out. To fix: a catalog type, or refresh the catalog"
                )
            prices.append(usd or 0.0)
        try:
            count = self.most_count()
        except v.Unknown:
            if not at_least:
                raise
            count = max(1.0, self.scaled_max, *self._known_floor())
        # a rolling update runs its surge above that while old pods drain: the budget counts the peak (the
        # comparison with a decision does not: the surge is transient)
        return (count + scaling.surge(self.resource.type, self.resource.props, count)) * max(prices)

    def _known_floor(self) -> list[float]:
        """Counts below its maximum that are known at preview (a group's minimum or desired size, a node
        pool's minimum or initial count): each is a lower bound of what it runs."""
        out = []
        for path in _FLOOR_PATHS:
            try:
                n = self.resource.props.number(*path)
            except (v.Unknown, ValueError):
                continue
            if n is not None and n > 0 and math.isfinite(n):
                out.append(n)
        return out


_FLOOR_PATHS = (
    ("minSize",),
    ("desiredCapacity",),
    ("scalingConfig", "minSize"),
    ("scalingConfig", "desiredSize"),
    ("autoscaling", "minNodeCount"),
    ("autoscaling", "totalMinNodeCount"),
    ("initialNodeCount",),
    ("nodeCount",),
    ("targetSize",),
    ("spec", "replicas"),
)


def ancestor(r: sizing.StackResource, by_urn: dict[str, sizing.StackResource]) -> sizing.StackResource | None:
    """The nearest GpuWorkload above `r` in the parent chain, or None."""
    seen = set()
    cur = by_urn.get(r.parent or "")
    while cur is not None and cur.urn not in seen:
        if cur.type == sizing.WORKLOAD:
            return cur
        seen.add(cur.urn)
        cur = by_urn.get(cur.parent or "")
    return None


class StackModel:
    """Every resource of a stack modelled once (step 2), with the links the rules read: the resources by URN
    and the autoscalers' maxima per target. Stack rules read this, never the raw resources.

    Attributes:
        resources: the stack's resources (expanded with its components' manifests when built by `of_stack`).
        models: one Model per resource, in order.
        scaled: URN -> the largest maximum of the autoscalers targeting it.
        failed: autoscalers whose bound could not be read (URN, exception).
    """

    def __init__(self, resources: Iterable[sizing.StackResource]):
        self.resources = list(resources)
        self.by_urn = {r.urn: r for r in self.resources}
        self.scaled, self.failed = scaling.maxima(self.resources)
        self.models = [model_of(r, self) for r in self.resources]
        self._by_urn = {m.urn: m for m in self.models}

    def of(self, urn: str) -> Model | None:
        return self._by_urn.get(urn)

    def __iter__(self):
        return iter(self.models)


def of_stack(stack) -> StackModel:
    """`stack` as a StackModel (a StackModel is returned as it is; a list of resources is modelled)."""
    return stack if isinstance(stack, StackModel) else StackModel(stack)


def allowed(r: sizing.StackResource, allow: Iterable) -> object | None:
    """The pack config's allow entry that covers the resource (its type and/or name), or None."""
    for a in allow:
        if (a.type is None or fnmatch.fnmatchcase(r.type, a.type)) and (a.name is None or a.name in (r.name, r.urn)):
            return a
    return None


def _seen(ev: list[evidence.Evidence], n: int = 3) -> str:
    shown = "; ".join(str(e) for e in ev[:n])
    return shown + (f" (and {len(ev) - n} more)" if len(ev) > n else "")


def _ways(r: sizing.StackResource) -> str:
    return (
        f"To fix: model it (a precise model of {r.type} in policies/resources.py), or have the platform team "
        f"allow it in the pack config: gpusizer-gpu-evidence.allow: [{{type: {r.type!r}, name: {r.name!r}, "
        "reason: ...}]"
    )


def model_of(r: sizing.StackResource, stack: StackModel | None = None) -> Model:
    """The model of one resource (never raises: a crash is a problem naming the resource)."""
    m = Model(r, stack)
    try:
        _read_model(m)
    except v.Unknown:
        pass  # judged again at `up`
    except Exception as exc:  # noqa: BLE001 - a crash while modelling is a finding, never a dropped one
        m.problems.append(
            (
                "crash",
                f"{m.label} ({r.type}): gpusizer could not model it ({type(exc).__name__}: "
                f"{exc}), so it cannot be shown to hold no unsized GPU. To fix: correct the "
                "resource",
            )
        )
    return m


def _read_model(m: Model) -> None:
    r = m.resource
    if r.type in OWN_COMPONENTS:
        return  # judged through its recorded spec and its children
    data = r.props.data
    if r.type in manifests.MANIFESTS and isinstance(data, dict):  # manifests are expanded into children: judge the rest
        manifests.component_manifests(r, manifests.base())  # one that cannot be read is a problem naming the component
        data = {k: x for k, x in data.items() if k not in manifests.MANIFESTS[r.type]}
    chart = manifests.rendered_chart(r, manifests.base()) if r.type in manifests.RENDERED else None
    if chart is not None and isinstance(data, dict):  # a local chart rendered into children: judge the rest
        data = {k: x for k, x in data.items() if k not in manifests.CHART_INPUTS}
    seen = evidence.extract(data, local_files=True, base=manifests.base())
    if records(r.type):  # names in what records, restricts or watches capacity ask for none; a request still does,
        # and so does a command in a script it holds (a ConfigMap mounted into a job that runs it, an object
        # stored under a script's name that user data fetches and runs), and so does a document a tool
        # launches from (evidence.launcher)
        named = data.get("key") or data.get("name") if isinstance(data, dict) else None
        script = isinstance(named, str) and bool(_SCRIPT.search(named))
        seen = [
            e
            for e in seen
            if (e.kind == "resource" and ": " in e.what)
            or (e.kind in ("mention", "resource") and (script or _SCRIPT.search(e.path)))  # what a script asks
            or f"<{evidence.LAUNCHER}" in e.path  # a document a tool launches from (a NodePool, a Ray config)
        ]
    if (
        r.type in manifests.RENDERED and chart is None
    ):  # values files given as paths or file assets, local charts: read the ones that are local
        given = r.props.data if isinstance(r.props.data, dict) else {}
        seen += [
            e for where, d in manifests.values_files(given.get("valueYamlFiles")) for e in evidence.extract(d, where)
        ]
        named = manifests.strings([given.get("chart"), given.get("path")])
        seen += [e for c in named for e in charts.evidence_of(c, manifests.base())]
        if r.type in manifests.CHILDLESS:  # Pulumi sends no children of it: a chart the pack cannot render is unseen
            seen += [
                evidence.Evidence(
                    "chart",
                    "accelerator",
                    f"{c} (a local chart the pack cannot find: give its absolute path, os.path.abspath, so the "
                    "pack can render it)"
                    if charts.missing(c, manifests.base())
                    else f"{c} (a local chart the pack cannot render: it uses what policies/gotemplate.py does not "
                    "render, or subcharts or dependencies; no preview sends a Release's children)",
                )
                for c in named
                if charts.missing(c, manifests.base()) or charts.is_local(c, manifests.base()) is not None
            ]
    if r.type.startswith("kubernetes:core/v1:LimitRange"):  # a range caps GPUs; its defaults hand them out
        defaulted = [e for e in seen if e.kind == "resource" and re.search(r"\.default(?:Request)?\.", e.path)]
        if defaulted:
            m.problems.append(
                (
                    "evidence",
                    f"{m.label} ({r.type}): it gives GPUs by default to every container of its namespace that asks "
                    f"for none ({_seen(defaulted)}), which no workload's model counts. {_ways(r)}",
                )
            )
    m.template_refs = [e for e in seen if e.kind == "template"]
    m.evidence = seen = [e for e in seen if e.kind != "template"]
    if m.facts is not None:
        try:
            own = {x.label for x in m.facts.shapes}
            m.gpu = m.facts if own else None
        except v.Unknown:
            own = None  # its types are computed: judged at `up`; what its text asks for is judged now
        asked = [e for e in seen if e.kind == "mention" and e.what not in (own or set())]
        if asked:  # a command or script in it asks for accelerated capacity its model does not count
            m.problems.append(
                (
                    "evidence",
                    f"{m.label} ({r.type}): its text asks for accelerated capacity the model of this type does "
                    f"not count: {_seen(asked)}. The cloud may provision it. {_ways(r)}",
                )
            )
        if own is None:
            return
        # A cloud resource's model reads its types from the fields the cloud launches from; an accelerated type
        # elsewhere in it (a MIG's instanceFlexibilityPolicy, a new field) may be launched too, unread.
        shown = " ".join(own).lower()
        # (a GPU named beside a type that holds it is that type's, read: GKE's accelerator block on an
        # a3-highgpu-8g pool names its H100s, as gcloud's `--accelerator type=nvidia-h100-80gb` does)
        held = {x.capacity.gpu for x in m.facts.shapes if x.capacity is not None}
        unread = [
            e
            for e in seen
            if e.kind == "type"
            and not r.type.startswith("kubernetes:")
            and evidence.normal(e.what.split()[0]) not in shown
            and audit.gpu_from_label(e.what.split()[0]) not in held
            and "instancerequirements" not in e.path.lower()  # attribute selection: the model reads it
        ]
        if unread:
            m.problems.append(
                (
                    "evidence",
                    f"{m.label} ({r.type}): accelerated types its model does not read (it reads "
                    f"{', '.join(sorted(own)) or 'its types from a template'}): {_seen(unread)}. The cloud may "
                    f"launch them. {_ways(r)}",
                )
            )
        # A node selection provisions GPU nodes through an autoscaler (Karpenter, GKE auto-provisioning) for a
        # pod that waits for one; a DaemonSet's pods never make nodes, they follow the nodes that exist.
        daemon = r.type.endswith(("DaemonSet", "DaemonSetPatch"))
        kinds = ("type", "resource") if daemon else ("type", "resource", "selector")
        strong = [
            e
            for e in seen
            # a DaemonSet sees the GPUs of nodes that exist (the nvidia runtime, NVIDIA_VISIBLE_DEVICES): that
            # exposes them to a monitoring agent, it makes no capacity; only a GPU request would count. Its node
            # selection, by label or by type, picks nodes that exist
            if not (daemon and (_exposes_only(e) or "affinity" in e.path.lower() or "nodeselector" in e.path.lower()))
            and e.kind in kinds
            or (e.kind == "accelerator" and evidence.normal(e.what).startswith(("nvidia-", "amd-", "tpu")))
        ]
        if m.gpu is None and strong and (m.facts.typed() or not _through_template(m.facts)):
            m.problems.append(
                (
                    "evidence",
                    f"{m.label} ({r.type}): GPU evidence the model of this type reads no GPU "
                    f"from: {_seen(strong)}. The cloud may provision it. {_ways(r)}",
                )
            )
        return
    if (precise(r.type) and r.type not in manifests.MANIFESTS) or not seen:
        return
    what = (
        "its inputs (the offline preview cannot render its children; a real preview also judges them)"
        if r.type in manifests.RENDERED
        else "it"
    )
    m.problems.append(
        (
            "evidence",
            f"{m.label} ({r.type}): GPU evidence in {what}: {_seen(seen)}. gpusizer has no "
            "precise model of this type, so it cannot verify the GPUs' size, count or price. "
            f"{_ways(r)}",
        )
    )


def launched_templates(m: Model, allowed: Callable[[str], bool]) -> list[str]:
    """What the templates a resource of a type with no precise model names hold, resolved by value (a stack
    rule: a resource rule sees no other resource): for each reference, the GPU evidence of the in-stack
    template it names, or that it names a template outside the stack (unless `allowed`). Empty: none, or
    only CPU templates. A type with a precise model resolves its own templates itself (`Model.templates`);
    the ones a command in its text launches from (user data running `run-instances --launch-template`) are
    resolved here too."""
    refs = [e for e in m.template_refs if m.facts is None or e.path.endswith(evidence.COMMANDED)]
    if not refs:
        return []
    pool = [
        t
        for t in (m.stack.resources if m.stack else [])
        if t.type in res.TEMPLATES
        or any(w in t.type.lower() for w in ("template", "launchconfiguration", "endpointconfiguration"))
    ]
    out: list[str] = []
    for ref in dict.fromkeys(e.what for e in refs):
        found = [t for t in templates_mod.named(ref, pool) if t is not m.resource]
        if not found and not allowed(ref):
            out.append(
                f"{m.label} ({m.resource.type}) launches from a template that is not in this stack ({ref!r}), so "
                "the pack cannot verify its GPUs. To fix: keep the template in this stack, or, for one the "
                "platform team has reviewed, allow it: gpusizer-no-overprovisioning.allowTemplates: "
                f"[{{template: {ref!r}, reason: ...}}]"
            )
        for t in found:
            modelled = m.stack.of(t.urn) if m.stack else None  # the template's evidence, extracted once
            seen = modelled.evidence if modelled is not None else []
            if seen and not allowed(ref):
                out.append(
                    f"{m.label} ({m.resource.type}) launches template {t.name!r}, which holds GPU evidence "
                    f"({_seen(seen)}); gpusizer has no precise model of {m.resource.type}, so it cannot count "
                    "or price what it launches. To fix: launch the template from a resource gpusizer models (an "
                    "instance, an Auto Scaling group), or, once reviewed, allow it: "
                    f"gpusizer-no-overprovisioning.allowTemplates: [{{template: {ref!r}, reason: ...}}]"
                )
    return out


def _exposes_only(e: evidence.Evidence) -> bool:
    """Evidence that exposes a node's GPUs to a container without requesting any (the nvidia runtime class,
    NVIDIA_VISIBLE_DEVICES and its kin)."""
    return e.path.endswith("runtimeClassName") or e.what.split()[0].strip().lower() in evidence.VISIBLE


def _through_template(g: res.GpuResource) -> bool:
    """A resource whose types come from a template (its evidence is the template's, judged there)."""
    try:
        return g.templates()
    except (v.Unknown, KeyError):
        return True


# --- prices ---------------------------------------------------------------------------------------------------


@functools.cache
def _per_gpu(gpu: str) -> float | None:
    """The lowest on-demand $/hour per GPU of any catalog offer of `gpu` (a sibling's price)."""
    prices = [
        o.on_demand_usd / (o.gpu_count * o.gpu_fraction)
        for o in audit._offers()
        if o.gpu == gpu
        and o.on_demand_usd is not None
        and o.gpu_count * o.gpu_fraction > 0
        and not o.instance_type.startswith("onprem")
    ]
    return min(prices, default=None)


def price(shape: shapes.Shape, provider: str) -> tuple[float | None, str]:
    """(an on-demand $/hour of one node, where it came from): the catalog's on-demand price; else its spot
    price (a lower bound); else a sibling's per-GPU on-demand price x its GPUs; else (None, why)."""
    if shape.hourly_usd is not None:
        return shape.hourly_usd, "catalog on-demand"
    o = audit.types_of(provider).get(shape.label) if provider in ("aws", "gcp") else None
    if o is not None:
        spots = [
            x.spot_usd
            for x in audit._offers()
            if x.provider == provider and x.instance_type == shape.label and x.spot_usd is not None
        ]
        if spots:
            return min(spots), "catalog spot (no on-demand price: a lower bound)"
    cap = shape.capacity
    if cap is not None:
        each = _per_gpu(cap.gpu)
        if each is not None and math.isfinite(cap.count):
            return each * cap.count, f"{cap.count:g} x the cheapest on-demand {cap.gpu} per GPU in the catalog"
    return None, f"{shape.label} has no price in the catalog"
