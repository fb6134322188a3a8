"""One class of offers at one purchase option, judged: its runs, and each offer's Candidate built on demand.

gpusizer.decide.optimize cuts a class's offers (gpusizer.catalog.index) into runs
(Segment): offers in price order sharing one verdict. A Group holds a class's
sizing verdict at one purchase option (nodes, fit, replicas) and its runs,
and writes the Candidate of any offer in them, with the sentence of its
limit, only when gpusizer.decide.judgement asks for it.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import typing
from collections.abc import Iterator, Sequence

from gpusizer.base import limits
from gpusizer.catalog.index import OFFER, PRICE, REGION, TYPE, ZONE, Entry, OfferClass
from gpusizer.catalog.offer import Offer
from gpusizer.decide.candidate import Candidate, Rejection
from gpusizer.estimate import fit as fit_mod
from gpusizer.estimate.workload import Workload

Limit = limits.Limit

RankKey = tuple[float, float, int, int, str, str, str, str]
"""(metric, $/hour, GPUs, provider rank, region, zone, instance type, purchase): gpusizer.decide.judgement.rank_key."""
PriceKey = tuple[float, int, int, str, str, str, str]
"""($/hour or infinity, GPUs, provider rank, region, zone, instance type, purchase): judgement.price_key."""


class Probe(typing.NamedTuple):
    """The fields of a Candidate that gpusizer.decide.misses' shortfall measures read."""

    fit: fit_mod.Fit | None
    hourly_usd: float | None


@dataclasses.dataclass(slots=True)
class Segment:
    """A run of one class's offers at one purchase option sharing one verdict.

    Attributes:
        entries: the index's list the run is cut from (gpusizer.catalog.index.Entry).
        lo, hi: the run is entries[lo:hi], in price order.
        code: the rejection of every offer in the run, or None (feasible).
        priced: False for offers not sold at this purchase option (no $/hour).
        exclude: regions or zones whose offers belong to other segments, or None.
        n: offers in the run (not excluded).
        quota: the vCPU quota behind a "quota" code.
        unsized: its candidates were not sized (placement, or not sold this way): one node, no fit.
    """

    entries: Sequence[Entry]
    lo: int
    hi: int
    code: Limit | None
    priced: bool
    exclude: frozenset[str] | None = None
    n: int = 0
    quota: float | None = None
    unsized: bool = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        # Its candidates were not sized: excluded by placement or not sold this way (one node, no fit;
        # an unsupported machine image is judged after the fit).
        self.unsized = not self.priced or self.code in limits.PLACEMENT and self.code is not Limit.IMAGE

    def __iter__(self) -> Iterator[Entry]:
        run = itertools.islice(self.entries, self.lo, self.hi)
        if self.exclude is None:
            return run
        x = self.exclude
        return (e for e in run if e[REGION] not in x and e[ZONE] not in x)


class Group:
    """One class at one purchase option: its sizing verdict and its segments."""

    __slots__ = (
        "w",
        "offer",
        "purchase",
        "objective",
        "segments",
        "nodes",
        "fit",
        "lacks_fabric",
        "launched",
        "per_mtok_factor",
        "provider_rank",
    )

    def __init__(self, w: Workload, cls: OfferClass, purchase: str, objective: str):
        self.w, self.offer, self.purchase, self.objective = w, cls.sample, purchase, objective
        self.segments: list[Segment] = []
        self.nodes, self.lacks_fabric, self.launched = 1, False, 1
        self.fit: fit_mod.Fit | None = None  # set by size_with before any sized segment is added
        self.per_mtok_factor: float | None = None
        self.provider_rank = cls.provider_rank

    def size_with(self, nodes: int, f: fit_mod.Fit, lacks_fabric: bool) -> None:
        """Set the class's node count and fit: every candidate launches nodes x f.node_groups instances."""
        self.nodes, self.fit, self.lacks_fabric, self.launched = nodes, f, lacks_fabric, nodes * f.node_groups
        self.per_mtok_factor = _per_mtok_factor(self.w, f, self.objective) if f.ok else None

    def add(
        self,
        entries: Sequence[Entry],
        code: Limit | None,
        priced: bool = True,
        *,
        lo: int = 0,
        hi: int | None = None,
        exclude: frozenset[str] | None = None,
        n: int | None = None,
        quota: float | None = None,
    ) -> None:
        """Add the run entries[lo:hi] (less `exclude`, `n` offers) with one verdict; empty runs are dropped."""
        if hi is None:
            hi = len(entries)
        if n is None:
            n = hi - lo
        if n > 0:
            self.segments.append(Segment(entries, lo, hi, code, priced, exclude, n, quota))

    def hourly_of(self, e: Entry) -> float:
        """$/hour of every instance the candidate of entry `e` launches."""
        return e[PRICE] * self.launched

    def hourly_in(self, e: Entry, seg: Segment) -> float | None:
        """The $/hour of entry `e`'s candidate in `seg`: its node's price when unsized (none when not sold
        this way), else every instance it launches."""
        if not seg.priced:
            return None
        return e[PRICE] if seg.unsized else e[PRICE] * self.launched

    def candidate(self, e: Entry, seg: Segment) -> Candidate:
        """The decision.Candidate of entry `e` in `seg`, its detail written for that offer."""
        o, p, code = e[OFFER], self.purchase, seg.code
        hourly = self.hourly_in(e, seg)
        if seg.unsized:
            # Unsized runs are placement verdicts or offers not sold this way: Group.add always gives them a code.
            assert code is not None, "an unsized run carries its rejection code"
            return Candidate(o, p, 1, hourly, None, Rejection(code, self._placement_detail(o, code)))
        f = self.fit
        # A sized run is priced (an unpriced one is unsized) and added after size_with set the fit.
        assert f is not None and hourly is not None, "a sized run is priced and its class sized"
        if not f.ok:
            if self.lacks_fabric:
                f = f._replace(detail=f"{f.detail}; more nodes need EFA/GPUDirect, which {o.instance_type} lacks")
            # The ignore: Limit(value) is a lookup by value; mypy checks it against the members' __new__.
            return Candidate(o, p, self.nodes, hourly, f, Rejection(Limit(f.code), f.detail))  # type: ignore[call-arg]
        rej = None if code is None else Rejection(code, self._limit_detail(o, code, hourly, seg))
        per_mtok = None if self.per_mtok_factor is None else hourly * self.per_mtok_factor
        return Candidate(o, p, self.nodes, hourly, f, rej, per_mtok)

    def _placement_detail(self, o: Offer, code: Limit) -> str:
        p = self.w.spec.placement
        if code is Limit.PROVIDER:
            return f"{o.provider} is not in placement.providers {p.providers}"
        if code is Limit.REGION:
            return f"{o.region} is not in placement.regions"
        if code is Limit.GPU:
            return f"{o.gpu} is not in placement.gpus {p.gpus}"
        if code is Limit.OPT_IN:
            return f"{o.zone or o.region} is a Local Zone or opt-in region; set placement.allow_opt_in to use it"
        return f"{o.instance_type} is not sold as {self.purchase} in {o.zone or o.region}"

    def _limit_detail(self, o: Offer, code: Limit, hourly: float, seg: Segment) -> str:
        from gpusizer.facts import images

        w, launched = self.w, self.launched
        if code is Limit.IMAGE:
            return (
                f"{o.instance_type} cannot be provisioned: {images.unsupported(o.provider, o.instance_type)}. "
                "To fix: set deploy.machine_image to an image with a suitable driver"
            )
        if code is Limit.HOST_VCPU:
            gpus = o.gpu_count * o.gpu_fraction
            return f"{o.instance_type}: {o.vcpus} vCPUs < {w.min_vcpus(gpus)} needed for {gpus:g} GPU(s)"
        if code is Limit.HOST_RAM:
            return (
                f"{o.instance_type}: {o.ram_gib:g} GiB host RAM < {w.min_ram_gib(o.gpu_count):.1f} GiB "
                "to hold a GPU's share of the weights"
            )
        if code in limits.CAPACITY:
            return capacity_detail(o, code, launched, self.purchase, seg.quota)
        cap = w.spec.placement.max_hourly_usd
        return f"${hourly:,.2f}/h > placement.max_hourly_usd ${cap:,.2f}/h"

    def rank_key(self, e: Entry) -> RankKey:
        """rank_key of entry `e` as a feasible candidate, without building it."""
        hourly = e[PRICE] * self.launched
        metric = hourly if self.per_mtok_factor is None else hourly * self.per_mtok_factor
        return (
            metric,
            hourly,
            self.offer.gpu_count * self.nodes,
            self.provider_rank,
            e[REGION],
            e[ZONE],
            e[TYPE],
            self.purchase,
        )

    def price_key(self, e: Entry, seg: Segment) -> PriceKey:
        """price_key of entry `e` rejected in `seg`, without building it."""
        hourly = self.hourly_in(e, seg)
        nodes = 1 if seg.unsized else self.nodes
        return (
            math.inf if hourly is None else hourly,
            self.offer.gpu_count * nodes,
            self.provider_rank,
            e[REGION],
            e[ZONE],
            e[TYPE],
            self.purchase,
        )

    def probe(self, e: Entry, seg: Segment) -> Probe:
        """What a shortfall measure reads of entry `e`'s candidate (its fit and $/hour), without building it."""
        return Probe(None if seg.unsized else self.fit, self.hourly_in(e, seg))


def capacity_detail(o: Offer, code: Limit, instances: int, purchase: str, quota: float | None) -> str:
    """The sentence of a "capacity" (pool free GPUs) or "quota" (vCPU quota) rejection at `instances` nodes."""
    if code is Limit.CAPACITY:
        return f"pool {o.instance_type} is full: needs {o.gpu_count * instances} GPU(s), {o.gpus_free} free"
    return (
        f"{o.instance_type} x{instances} needs {o.vcpus * instances} vCPUs; {purchase} quota in {o.region} is {quota:g}"
    )


def _per_mtok_factor(w: Workload, f: fit_mod.Fit, objective: str) -> float | None:
    """$ per million tokens per $/hour of a fitting class, or None when ranked by $/hour.

    Serving: at the target rate when there is one (what the workload will
    really serve), else at full capacity (batch work that fills the GPUs).
    Training: over the run's hours and tokens.
    """
    if objective != "per-token":
        return None
    if w.spec.task == "inference":
        rate = w.targets.tokens_per_second or (f.tokens_per_second or 0) * f.replicas
        return per_mtok_at_rate(rate) if rate else None
    if f.run_hours is None:
        return None
    tokens = w.spec.train.tokens
    assert tokens is not None, "a fit has run_hours only for training with a token count"
    return per_mtok_of_run(f.run_hours, tokens)


def per_mtok_at_rate(tokens_per_second: float) -> float:
    """$ per million tokens per $/hour, serving `tokens_per_second`."""
    return 1e6 / (tokens_per_second * 3600)


def per_mtok_of_run(hours: float, tokens: float) -> float:
    """$ per million tokens per $/hour, training on `tokens` in `hours`."""
    return hours / tokens * 1e6
