"""What the stack rules share: the StackResource record, the Findings collector, and memory judged from
the pack's catalog (over and under the requirement).

Prices are the catalog's on-demand $/hour per node, never a tag. A resource
that may launch several types (an Auto Scaling group, a fleet, attribute-based
selection) is judged by each type it admits. The budget is policies/budget.py.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from gpusizer.base import limits, providers
from gpusizer.contract import audit
from gpusizer.estimate.fit import apart
from gpusizer.policies import resources as res
from gpusizer.policies import view as v

# What `sized-by` may name besides memory: a size memory alone cannot call excessive, if re-derived.
EXEMPT = limits.NOT_BY_MEMORY
WORKLOAD = "gpusizer:index:GpuWorkload"  # the component that records its spec as inputs (policies/verify.py)


@dataclasses.dataclass(frozen=True)
class StackResource:
    """A resource as a stack rule sees it: type, properties, URN, and its links in the stack."""

    type: str
    props: v.View
    urn: str
    name: str = ""
    parent: str | None = None
    dependencies: tuple[str, ...] = ()


class Findings:
    """A stack rule's findings over one stack: (message, URN) pairs, and the first field unknown at preview.

    `judge(r, fn)` keeps the messages fn() returns for resource `r`; a field unknown at preview
    (gpusizer.policies.view.Unknown) leaves the resource out and is remembered; a malformed field (ValueError)
    is a message naming the resource. `result()` is the findings, or, when there are none and some
    field was unknown, raises it: the pack reports it as advisory, judged again at `pulumi up`.
    """

    def __init__(self, rule: str):
        self.rule = rule
        self.out: list[tuple[str, str | None]] = []
        self.unknown: v.Unknown | None = None

    def add(self, message: str, urn: str | None) -> None:
        self.out.append((message, urn))

    def missing(self, exc: v.Unknown) -> None:
        self.unknown = self.unknown or exc

    def judge(self, r: StackResource, fn: Callable[[], list[str]]) -> None:
        try:
            self.out += [(m, r.urn) for m in fn()]
        except v.Unknown as exc:
            self.missing(exc)
        except ValueError as exc:
            self.add(f"{self.rule} could not judge {r.name or r.urn}: {exc}. To fix: correct the resource", r.urn)
        except Exception as exc:  # noqa: BLE001 - a crash names the resource; the other resources' findings stand
            self.add(
                f"{self.rule} could not judge {r.name or r.urn} ({type(exc).__name__}: {exc}). To fix: correct "
                "the resource",
                r.urn,
            )

    def bounds(self, failed: list[tuple[str, Exception]]) -> None:
        """The bounds scaling.maxima could not read: unknown ones remembered, malformed ones reported."""
        for urn, exc in failed:
            if isinstance(exc, v.Unknown):
                self.missing(exc)
            else:
                self.add(
                    f"{self.rule} cannot read the bound of {urn}: {exc}. To fix: set it (an autoscaler's "
                    "maximum; the name and namespace of what it targets)",
                    urn,
                )

    def result(self) -> list[tuple[str, str | None]]:
        if self.unknown is not None and not self.out:
            raise self.unknown
        return self.out


def _gpus(offer) -> str:
    """An offer's GPUs as a reader counts them: `1 x L4`, or the share of one for a fractional GPU (g6f.large is
    1/8 of an L4: `0.125 x L4`)."""
    share = offer.gpu_count * offer.gpu_fraction
    return f"{share:g} x {offer.gpu}" + (" (a fraction of one GPU)" if share < 1 else "")


def over_memory(r: res.GpuResource, max_ratio: float, need: float | None = None) -> list[str]:
    """GPU memory above max_ratio x the requirement while a cheaper adequate catalog offer exists
    (memory alone: whatever the resource says set its size). The requirement is `need` when given
    (re-derived from a GpuWorkload), else the resource's tag, label or annotation."""
    need = r.required_gib if need is None else need
    if need is None:
        return []
    for s in r.shapes:
        if s.capacity is None:
            continue
        ratio = s.capacity.total_gib / need
        if ratio <= max_ratio:
            dearer = _over_host(s, need, max_ratio, r.provider) or _over_price(
                s, need, max_ratio, r.provider, _region(r)
            )
            if dearer:
                return dearer
            continue
        cheaper = audit.cheaper_adequate(need, s.hourly_usd, None if providers.get(r.provider).owned else r.provider)
        if cheaper is None:
            continue
        shown = f"{ratio:.0f}" if round(ratio) > max_ratio else f"{ratio:.2f}"  # never "(2x, limit 2x)"
        return [
            f"{s.capacity.label} = {s.capacity.total_gib:,.0f} GiB for a {need:g} GiB requirement ({shown}x, "
            f"limit {max_ratio:g}x); {cheaper.instance_type} ({_gpus(cheaper)}, "
            f"{cheaper.provider} {cheaper.region}) at ${cheaper.on_demand_usd:.2f}/h fits. "
            "To fix: size with gpusizer (gpusizer.components.GpuWorkload) or pick the cheaper offer"
        ]
    return []


def _over_host(s, need: float, max_ratio: float, provider: str) -> list[str]:
    """Adequate GPU memory on a host priced above max_ratio x the same GPUs on the cheapest host of the same
    cloud (gr6.8xlarge's one L4 at about 3x g6.xlarge's): the memory fits, the host is what is oversized.
    Price what you provision: a host sized for CPU or RAM needs is a GpuWorkload decision (which weighs host
    needs), not a bare requirement tag, which says GPU memory only."""
    if s.hourly_usd is None or s.capacity is None or s.by_attributes or providers.get(provider).owned:
        return []
    same = [  # the same GPUs on another host of the same cloud: only the host differs
        (o.on_demand_usd, t, o)
        for t, o in audit.types_of(provider).items()
        if o.gpu == s.capacity.gpu and o.gpu_count * o.gpu_fraction == s.capacity.count and o.on_demand_usd
    ]
    if not same:
        return []
    usd, t, o = min(same)
    if s.hourly_usd <= max_ratio * usd:
        return []
    return [
        f"{s.label} ({s.capacity.label}) at ${s.hourly_usd:.2f}/h is {s.hourly_usd / usd:.1f}x {t} at "
        f"${usd:.2f}/h, the same GPUs on a smaller host (limit {max_ratio:g}x; a {need:g} GiB requirement): "
        "its GPU memory fits, its host is oversized. To fix: the smaller host, or size with gpusizer "
        "(gpusizer.components.GpuWorkload), which weighs CPU and RAM needs"
    ]


def _region(r: res.GpuResource) -> str | None:
    """The region a resource names literally (GCP `zone` me-west1-b or `region`, AWS `availabilityZone`
    us-east-1a), or None: a resource pinned to a region for data residency is compared within it."""
    for key in ("region", "zone", "availabilityZone", "location"):
        try:
            value = r.props.text(key)
        except (v.Unknown, ValueError):
            continue
        if not value:
            continue
        if re.fullmatch(r"[a-z]+-[a-z]+\d+-[a-z]", value):  # a GCP zone
            return value.rsplit("-", 1)[0]
        if re.fullmatch(r"[a-z]{2}-[a-z]+-\d[a-z]", value):  # an AWS availability zone
            return value[:-1]
        if re.fullmatch(r"[a-z]{2}-[a-z]+-?\d", value):  # a region of either
            return value
    return None


def _over_price(s, need: float, max_ratio: float, provider: str, region: str | None = None) -> list[str]:
    """Adequate GPU memory priced above max_ratio**2 x the cheapest adequate offer of the same cloud: another
    GPU is what is oversized (one A100 40GB for 20 GiB on GCP, at about 5x one L4). A bare requirement says
    GPU memory only, so a faster GPU may cost up to max_ratio more for speed it does not state, and max_ratio
    again as the memory rule allows (8 x H100 for 500 GiB, about 2x 8 x A100 80GB, passes). A GpuWorkload's
    decision, which weighs speed targets, is judged against its re-plan instead."""
    if s.hourly_usd is None or s.capacity is None or s.by_attributes or providers.get(provider).owned:
        return []
    limit = max_ratio * max_ratio
    o = audit.cheaper_adequate(need, s.hourly_usd / limit, provider, region)
    if o is None or o.provider != provider:
        return []
    return [
        f"{s.label} ({s.capacity.label}) at ${s.hourly_usd:.2f}/h is {s.hourly_usd / o.on_demand_usd:.1f}x "
        f"{o.instance_type} ({o.gpu_count} x {o.gpu}, {o.region}) at ${o.on_demand_usd:.2f}/h, which also holds "
        f"a {need:g} GiB requirement (limit {limit:g}x: maxRatio for the memory, and again for speed a bare "
        "requirement does not state). To fix: the cheaper offer, or size with gpusizer "
        "(gpusizer.components.GpuWorkload), which weighs speed targets"
    ]


def under_memory(r: res.GpuResource) -> list[str]:
    """Usable GPU memory of one node below the requirement (its tag, label or annotation)."""
    need = r.required_gib
    if need is None:
        return []
    out = []
    for cap in r.capacities:
        if cap.total_gib * audit.HEADROOM < need:
            usable, needed = apart(cap.total_gib * audit.HEADROOM, need)  # never "20.0 usable < 20.0 required"
            out.append(
                f"{cap.label} = {usable} GiB usable < {needed} GiB required: the workload will not fit "
                "(out of memory or offload). To fix: use the type `gpusizer plan` chooses"
            )
    return out


def most_count(g: res.GpuResource, scaled_max: float) -> float:
    """The most nodes or pods a resource runs: its own most, or its autoscalers' maximum when larger.
    An autoscaled group may leave its size to the autoscaler (GCP targetSize is then computed, unknown
    at preview): the autoscalers' maximum is its count."""
    try:
        own = g.count
    except v.Unknown:
        if scaled_max:
            return scaled_max
        raise
    return max(own, scaled_max)
