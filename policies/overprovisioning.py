"""gpusizer-no-overprovisioning: one stack rule over every GPU resource in the stack.

For each GPU resource:
1. Its requirement is the re-planned one of the GpuWorkload above it (found
   through the parent links the engine sends) when that GpuWorkload's spec
   re-plans to a choice, else its tag, label or annotation (a GpuWorkload
   whose spec does not re-plan exempts nothing: no worse than none).
2. A resource that matches its GpuWorkload's re-planned decision
   (policies/verify.mismatch: types, GPUs, requirement, sized-by label,
   purchase, count) passes. Any other resource with memory above maxRatio x
   its requirement while a cheaper adequate offer exists
   (policies/sizing.over_memory) is a violation, and the message says why a
   label naming a target, a deadline or cost did not hold.
3. Everything under one GpuWorkload (its resources, and groups launching its
   templates, each at the larger of its own size and its autoscalers'
   maxima) may run no more nodes or pods together than that decision.
4. Pods that pin an instance type buy its nodes whole (policies/packing.py):
   one node holding over maxRatio x the GPUs the stack's pods ask of it is
   a violation.

Reads the stack's model (policies/model.py). A group or instance that names
no type of its own is judged through the templates it launches (named by
literal value, else by the dependency links: Model.templates), at its own
count and purchase, under its own parent,
and counts toward the GpuWorkload that owns the template too; one whose
template is not in the stack cannot be verified, which is a violation (fail
closed: keep the template in the stack, or name the types on the group).

A resource whose fields are unknown at preview is left out; when nothing else
violates the rule, the first such field is raised (the pack reports it as
advisory, judged again at `pulumi up`). A GpuWorkload whose recorded spec is
unknown exempts nothing.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable

from gpusizer.policies import evidence, k8s, model, need, packing, sizing, templates, verify
from gpusizer.policies import resources as res
from gpusizer.policies import view as v


class _Judge:
    """The rule's state over one stack: nodes run per GpuWorkload; each resource's messages go to a
    sizing.Findings."""

    def __init__(self, stack: model.StackModel, max_ratio: float, cfg=None):
        self.cfg = cfg
        self.stack = stack
        self.by_urn = stack.by_urn
        self.max_ratio = max_ratio
        self.runs: dict[str, float] = {}  # GpuWorkload URN -> nodes or pods the resources under it may run
        self.unbounded: dict[str, str] = {}  # GpuWorkload URN -> why a resource under it has no bound

    def allows_template(self, ref: str) -> bool:
        """Whether the pack config allows a template outside the stack (`allowTemplates`, by id, name or URL;
        `*` matches any run of characters; case-blind; a URL also by its last segment)."""
        entries = getattr(self.cfg, "allow_templates", None) or []
        names = {ref.strip().lower(), evidence.normal(ref.split("?")[0])}
        return any(fnmatch.fnmatchcase(n, a.template.strip().lower()) for a in entries for n in names)

    def resource(self, m: model.Model) -> list[str]:
        r, g = m.resource, m.facts
        named = g.templates()  # it names a template its types (or the rest of its host) come from
        try:
            shapes = g.shapes
        except v.Unknown:
            if not named:
                raise  # named as unknown (advisory at preview), judged again at `up`
            shapes = None  # a type the provider copies from its in-stack template: judged through that
        if shapes and r.type in res.TEMPLATES:  # launches nothing itself: its consumers' count and purchase
            return self.judge(r, g, lambda: 0.0, None)
        if shapes:
            extra = m.override_templates()  # overrides that name a template in place of a type
            out = self.judge(r, g, m.most_count, _bought(g))
            return out + (self.through_templates(r, g, extra, lambda: 0.0) if extra else [])
        if not named or (shapes is not None and g.typed()):
            return []  # its own types (not GPUs) win over any template's
        # by literal value, else the dependency links; one outside the stack only where the config allows it
        launched = templates.templates(r, self.by_urn, self.allows_template)
        if not launched and any(self.allows_template(ref) for ref, _ in templates.literal_refs(r)):
            return []  # every template it names lives elsewhere, reviewed by the platform team
        if not launched:
            if shapes is None:
                g.shapes  # noqa: B018 - raises the unknown type again: judged at `up`
            return [
                f"{r.name or r.urn} launches from a template that is not in this stack, so the pack cannot verify "
                "its GPUs. To fix: keep the launch or instance template in this stack, or name the instance "
                "types on the resource"
            ]
        return self.through_templates(r, g, launched, m.most_count)

    def through_templates(
        self,
        r: sizing.StackResource,
        g: res.GpuResource,
        launched: list[sizing.StackResource],
        count: Callable[[], float],
    ) -> list[str]:
        """`r` judged through the in-stack templates it launches: the group runs count() nodes once, whichever
        template launches each; each is judged at that count, bought as the template says, or as the group
        does where the template sets no market. The count is read only where a GpuWorkload checks it."""
        gpu_templates = [(t, tg) for t in launched if (tg := self.stack.of(t.urn).facts) is not None and tg.shapes]
        out = []
        for i, (_, tg) in enumerate(gpu_templates):
            out += self.judge(r, tg, count if i == 0 else (lambda: 0.0), _bought(tg, g))
        mine = self.stack.of(r.urn).workload
        owners = {o.urn for t, _ in gpu_templates if (o := self.stack.of(t.urn).workload) is not None and o is not mine}
        for owner in owners:  # a group elsewhere launching a GpuWorkload's template runs that workload's capacity
            self.runs[owner] = self.runs.get(owner, 0.0) + count()
        return out

    def judge(
        self,
        r: sizing.StackResource,
        g: res.GpuResource,
        count: Callable[[], float],
        purchase: Callable[[], str | None] | None,
    ) -> list[str]:
        """Memory and the exemption for `r` running `g`'s shapes on count() nodes or pods (0: a template),
        bought as purchase() says (None: a template buys nothing itself). The count is read only under a
        GpuWorkload, where it is checked, and the purchase only for a spot decision: elsewhere an unknown
        blinds nothing.

        Under a GpuWorkload, a resource that matches the re-planned decision (verify.mismatch) passes
        whatever its sized-by: the engine's per-GPU fit chose it, which a total-memory ratio cannot
        second-guess (on-prem pods have no catalog price to compare; the failover types rank after
        the choice). Anything else is judged on memory against the re-planned requirement.
        """
        workload = self.stack.of(r.urn).workload
        d, refused = verify.planned(workload, self.cfg)
        need = d.required_gpu_memory_gib if d is not None and d.chosen is not None else None
        n = count() if workload is not None else None
        if n and (why_unbounded := k8s.unbounded(r.type, r.props)):
            n = math.inf
            self.unbounded[workload.urn] = f"{r.name or r.urn}: {why_unbounded}"
        if n:
            self.runs[workload.urn] = self.runs.get(workload.urn, 0.0) + n
        found = sizing.over_memory(g, self.max_ratio, need)
        if not found:
            return []
        why = refused or verify.mismatch(
            g, d, n or None, purchase, self.max_ratio
        )  # read only when memory would flag it
        if why is None:
            return []
        tagged = g.required_gib
        if need is not None and not verify.same_requirement(tagged, need):
            found = [
                f"{m} (the requirement re-planned from its GpuWorkload; its own says {g.raw_requirement!r})"
                for m in found
            ]
        if g.sized_by in sizing.EXEMPT:
            return [f"{m} The label sized-by {g.sized_by!r} is not re-derived: {why}." for m in found]
        if workload is not None:
            return [f"{m} It is not its GpuWorkload's decision: {why}." for m in found]
        return found

    def counted(self, findings: sizing.Findings) -> None:
        """Each GpuWorkload's resources together against the most nodes its decision runs."""
        for urn, total in self.runs.items():
            d, _ = verify.planned(self.by_urn[urn], self.cfg)
            most = None if d is None or d.chosen is None else verify.most_instances(d)
            if most is None or total <= most:
                continue
            w = self.by_urn[urn]
            runs = f"{total:g} nodes or pods" if math.isfinite(total) else f"without bound ({self.unbounded[urn]})"
            findings.add(
                f"{w.name or urn}: the GPU resources under it may run {runs} together (each at its largest "
                f"size or autoscaler maximum), its re-planned decision {most}: capacity beyond the decision "
                "is not sized. To fix: provision through the GpuWorkload alone, or raise deploy.replicas or "
                "deploy.autoscaling in its spec",
                urn,
            )


def _calibration(w: sizing.StackResource, cfg) -> list[str]:
    _, why = need.calibration_problem(w, cfg)
    if why is None:
        return []
    return [
        f"{w.name or w.urn}: {why}, so its resources are judged against the decision without it. To fix: "
        "trust the file (gpusizer-no-overprovisioning.trustedCalibrations: [{sha256: ..., reason: ...}]) or "
        "drop sizing.calibration"
    ]


def _bought(*resources: res.GpuResource) -> Callable[[], str]:
    """How the first of `resources` that sets a purchase option buys (a template's market options, else
    its group's), on-demand when none does. A market option unknown at a first preview was not given
    (the provider computes it on create): it sets none."""

    def read() -> str:
        for g in resources:
            try:
                bought = g.purchase
            except v.Unknown:
                bought = None
            if bought is not None:
                return bought
        return "on-demand"

    return read


def check(stack, max_ratio: float, cfg=None) -> list[tuple[str, str | None]]:
    """(message, URN) pairs of gpusizer-no-overprovisioning over the stack's model (module docstring).

    Raises:
        gpusizer.policies.view.Unknown: only when a field is unknown at preview and nothing else is in violation.
    """
    sm = model.of_stack(stack)
    judge = _Judge(sm, max_ratio, cfg)
    findings = sizing.Findings("gpusizer-no-overprovisioning")
    for w in sm.resources:  # the need, not the author's pins; a calibration that moves the decision must be trusted
        if w.type == sizing.WORKLOAD:
            findings.judge(w, lambda w=w: need.pin_findings(w, max_ratio, cfg) + _calibration(w, cfg))
    findings.bounds(sm.failed)  # a count that cannot be read cannot be shown to fit its GpuWorkload's decision
    for m in sm:
        if m.facts is not None:
            findings.judge(m.resource, lambda m=m: judge.resource(m))
        if m.template_refs:  # templates launched by a type with no precise model, or by a command in any text
            findings.judge(m.resource, lambda m=m: model.launched_templates(m, judge.allows_template))
    judge.counted(findings)
    for message, urn in packing.findings(sm, max_ratio):  # pods that pin a type buy its nodes whole
        findings.add(message, urn)
    return findings.result()
