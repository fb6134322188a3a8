"""Every candidate of a decision, judged per run and built into a decision.Candidate only when asked for.

The optimizer (gpusizer.decide.optimize) splits the offers of each class and
purchase option (gpusizer.catalog.index) into runs (gpusizer.decide.runs.Segment):
offers in price order that share one verdict, a rejection code or feasible.
From run sizes this module counts every rejection by reason; from the
segments' price order it yields the feasible candidates in rank order (a
k-way merge, so the top N cost N steps), the rejected candidates of a reason
in price order, the next cheaper rejection below a price, and, on request,
every candidate (the --all JSON).

Orders (a full tie-break each, so nothing depends on input order):
- rank_key, of feasible candidates: the objective ($/hour or $ per million
  tokens), $/hour, fewer GPUs, provider (registry order), region, zone,
  instance type, purchase;
- price_key, of rejected ones: $/hour (none last), then the same tie-breaks.
Within a run both follow the index's (price, region, zone, type) order:
the node count, replicas and objective factor are the class's.
"""

from __future__ import annotations

import bisect
import collections
import functools
import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence

from gpusizer.base import limits, providers
from gpusizer.catalog.index import OFFER, Entry, OfferClass
from gpusizer.catalog.offer import Offer
from gpusizer.decide.candidate import Candidate
from gpusizer.decide.runs import Group, PriceKey, Probe, RankKey, Segment
from gpusizer.estimate import fit as fit_mod
from gpusizer.facts import hardware

# A run's k-way merge item in Judgement._merge: (key, tie, group, run, entry, the run's other entries).
_Merging = tuple[object, int, Group, Segment, Entry, Iterator[Entry]]

Limit = limits.Limit


def rank_key(c: Candidate) -> tuple[float | None, float | None, int, int, str, str, str, str]:
    """The rank order of feasible candidates (module docstring)."""
    metric = c.usd_per_mtok if c.usd_per_mtok is not None else c.hourly_usd
    o = c.offer
    return (
        metric,
        c.hourly_usd,
        c.gpu_count,
        providers.NAMES.index(o.provider),
        o.region,
        o.zone or "",
        o.instance_type,
        c.purchase,
    )


def price_key(c: Candidate) -> tuple[float, int, int, str, str, str, str]:
    """The order of rejected candidates: cheapest first, unpriced last (module docstring)."""
    o = c.offer
    price = c.hourly_usd if c.hourly_usd is not None else math.inf
    return (price, c.gpu_count, providers.NAMES.index(o.provider), o.region, o.zone or "", o.instance_type, c.purchase)


def _precision_bars(g: Group) -> bool:
    """The group's GPU cannot run the spec's precision (nor its allowed fallback), whatever the size."""
    gpu = hardware.load_gpus().get(g.offer.gpu)
    return gpu is not None and bool(g.w.memo(("precision", gpu.name), lambda: fit_mod.precision_problem(g.w, gpu))[0])


class Judgement:
    """Every candidate of one decision: classes judged as they are needed, candidates built as they are read.

    Branch and bound: the classes wait in order of a lower bound on the
    ranking metric of every feasible candidate they hold (`pending`, (bound,
    class), from gpusizer.decide.optimize). No candidate of a waiting class can rank
    before its bound, so the top N judge only the classes whose bound reaches
    the N-th metric. Without bounds (`pending` None: the metric has none), and
    for anything that reads every candidate (counts, reasons, next cheaper,
    burst), every class is judged first.

    Attributes:
        objective: "hourly" or "per-token".
        groups: the classes judged so far (Group), each with its segments.
    """

    def __init__(
        self,
        objective: str,
        judge: Callable[[OfferClass], list[Group]],
        classes: Sequence[OfferClass],
        pending: Sequence[tuple[float, OfferClass]] | None,
    ):
        self.objective = objective
        self.groups: list[Group] = []
        self._judge, self._next = judge, 0
        self._bounded = pending is not None
        self._pending = pending if pending is not None else [(0.0, c) for c in classes]
        self._ranked: list[Candidate] = []
        # A k-way merge of the feasible runs: (key, tie, group, segment, position). A Candidate is built
        # only when popped, so the top N cost N pops plus one key per run. Keys are unique (a full
        # tie-break); `tie` keeps the tuples from ever comparing groups.
        self._heap: list[tuple[RankKey, int, Group, Segment, int]] = []
        self._ties = itertools.count()

    def _judge_next(self) -> None:
        _, cls = self._pending[self._next]
        self._next += 1
        for g in self._judge(cls):
            self.groups.append(g)
            for s in g.segments:
                if s.code is None:
                    heapq.heappush(self._heap, (g.rank_key(s.entries[s.lo]), next(self._ties), g, s, s.lo))

    def _safe(self) -> None:
        """Judge waiting classes until none could hold a candidate ranked before the heap's first."""
        pending = self._pending
        while self._next < len(pending) and (
            not self._bounded or not self._heap or pending[self._next][0] <= self._heap[0][0][0]
        ):
            self._judge_next()

    @functools.cached_property
    def _by_code(self) -> dict[Limit | None, list[tuple[Group, Segment]]]:
        """Every run by its verdict (None: feasible), every class judged first."""
        while self._next < len(self._pending):
            self._judge_next()
        out: dict[Limit | None, list[tuple[Group, Segment]]] = {}
        for g in self.groups:
            for s in g.segments:
                out.setdefault(s.code, []).append((g, s))
        return out

    def _segments(self, keep: Callable[[Limit | None], bool]) -> Iterator[tuple[Group, Segment]]:
        """The runs whose verdict `keep` selects, every class judged first."""
        return (gs for code, runs in self._by_code.items() if keep(code) for gs in runs)

    @functools.cached_property
    def counts(self) -> collections.Counter[Limit]:
        """Rejections by reason over every candidate."""
        return collections.Counter({code: sum(s.n for _, s in runs) for code, runs in self._by_code.items() if code})

    @functools.cached_property
    def feasible_count(self) -> int:
        return sum(s.n for _, s in self._by_code.get(None, ()))

    @functools.cached_property
    def total(self) -> int:
        """Every candidate: offers x purchase options judged."""
        return sum(s.n for _, s in self._segments(lambda code: True))

    def top(self, n: int) -> list[Candidate]:
        """The first `n` feasible candidates in rank order (built once, shared by every caller)."""
        heap = self._heap
        while len(self._ranked) < n:
            self._safe()
            if not heap:
                break
            _, tie, g, s, pos = heap[0]
            self._ranked.append(g.candidate(s.entries[pos], s))
            if pos + 1 < s.hi:
                heapq.heapreplace(heap, (g.rank_key(s.entries[pos + 1]), tie, g, s, pos + 1))
            else:
                heapq.heappop(heap)
        return self._ranked[:n]

    def ranked(self) -> Iterator[Candidate]:
        """Every feasible candidate in rank order, built as the caller goes."""
        for i in itertools.count():
            got = self.top(i + 1)
            if len(got) <= i:
                return
            yield got[i]

    def rejected(
        self, code: Limit | None = None, nearness: Callable[[Probe], float] | None = None
    ) -> Iterator[Candidate]:
        """Rejected candidates (of `code`, or all) in price_key order, or by (nearness(probe), price_key),
        built lazily.

        `nearness` reads a Probe (a candidate's fit and $/hour) and must not decrease along a run's price
        order (gpusizer.decide.misses' shortfall ratios do not: a class's fit is one value, a budget's ratio grows
        with the price), so merging the runs is exact.
        """
        runs: Iterable[tuple[Group, Segment]] = (
            self._segments(lambda c: c is not None) if code is None else self._by_code.get(code, ())
        )
        if nearness is None:
            return self._merge(runs, lambda g, s, e: g.price_key(e, s))
        return self._merge(runs, lambda g, s, e: (nearness(g.probe(e, s)), g.price_key(e, s)))

    def _merge(
        self,
        runs: Iterable[tuple[Group, Segment]],
        key: Callable[[Group, Segment, Entry], PriceKey | tuple[float, PriceKey]],
    ) -> Iterator[Candidate]:
        """The candidates of `runs` in `key` order (key(group, run, entry), not decreasing along a run),
        each built when it is reached."""
        heap: list[_Merging] = []
        for tie, (g, s) in enumerate(runs):
            it = iter(s)
            e = next(it, None)
            if e is not None:
                heap.append((key(g, s, e), tie, g, s, e, it))
        heapq.heapify(heap)
        while heap:
            _, tie, g, s, e, it = heap[0]
            yield g.candidate(e, s)
            e = next(it, None)
            if e is None:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, (key(g, s, e), tie, g, s, e, it))

    @functools.cached_property
    def nearest_rejected(self) -> dict[Limit, Candidate]:
        """Per reason, the cheapest rejected candidate (first in price_key order), reasons in that order too."""
        best: dict[Limit, tuple[PriceKey, Group, Segment, Entry]] = {}
        for g, s in self._segments(lambda code: code is not None):
            code = s.code
            assert code is not None  # the runs selected above are rejected ones
            e = next(iter(s))
            k = g.price_key(e, s)
            if code not in best or k < best[code][0]:
                best[code] = (k, g, s, e)
        return {code: g.candidate(e, s) for code, (_, g, s, e) in sorted(best.items(), key=lambda kv: kv[1][0])}

    def reasons(self) -> dict[str, int]:
        """Rejection counts by reason: most frequent first, ties by their cheapest candidate (price_key)."""
        first = list(self.nearest_rejected)  # in price order: a stable sort keeps it among equal counts
        order = sorted(first, key=lambda code: -self.counts[code])
        return {code.value: self.counts[code] for code in order}

    def _sized(self) -> Iterator[tuple[Group, Segment]]:
        """Priced segments rejected on a size, host, capacity or budget limit (at the class's nodes and
        replicas). None has exclusions: those cut only placement segments (gpusizer.decide.optimize)."""
        return (
            (g, s)
            for g, s in self._segments(lambda code: code is not None and code not in limits.PLACEMENT)
            if s.priced
        )

    def next_cheaper(self, hourly: float) -> Candidate | None:
        """The rejected candidate closest below `hourly` that lost on a size, host, capacity or budget limit;
        of equal prices the first in price_key order. Only offers the spec's placement allows (providers, regions,
        GPUs, purchase, opt-in: those are excluded from _sized) on a GPU that can run the spec's precision: a
        P4 rejected for memory could not run bf16 at any size, so it says nothing about the choice."""
        best: tuple[tuple[float, PriceKey], Group, Segment, int] | None = None
        for g, s in self._sized():
            find = g.hourly_of
            i = bisect.bisect_left(s.entries, hourly, s.lo, s.hi, key=find) - 1
            if i < s.lo:
                continue
            top = find(s.entries[i])
            j = bisect.bisect_left(s.entries, top, s.lo, s.hi, key=find)
            k = (-top, g.price_key(s.entries[j], s))
            if (best is None or k < best[0]) and not _precision_bars(g):  # judged only where it would change best
                best = (k, g, s, j)
        if best is None:
            return None
        _, g, s, j = best
        return g.candidate(s.entries[j], s)

    def cheaper_codes(self, hourly: float) -> set[Limit]:
        """Reasons that rejected a priced candidate cheaper than `hourly` (size, host, capacity)."""
        # _sized() yields rejected runs only: the `is not None` test changes nothing but the type.
        return {s.code for g, s in self._sized() if s.code is not None and g.hourly_of(s.entries[s.lo]) < hourly}

    def any_feasible_cheaper(self, hourly: float) -> bool:
        """Some feasible candidate costs less per hour than `hourly` (the choice ranked first on another metric)."""
        return any(g.hourly_of(s.entries[s.lo]) < hourly for g, s in self._by_code.get(None, ()))

    def full_pools(self) -> list[str]:
        """Names of owned pools rejected for capacity, sorted."""
        return sorted(
            {
                e[OFFER].instance_type
                for g, s in self._by_code.get(Limit.CAPACITY, ())
                if providers.get(g.offer.provider).owned
                for e in s
            }
        )

    def cheapest_per_gpu(self) -> dict[str, Candidate]:
        """Per GPU model, the feasible candidate with the lowest $/hour (of equal ones, the first in rank order)."""
        best: dict[str, tuple[tuple[float, RankKey], Group, Segment, Entry]] = {}
        for g, s in self._by_code.get(None, ()):
            e = s.entries[s.lo]
            k = (g.hourly_of(e), g.rank_key(e))
            if g.offer.gpu not in best or k < best[g.offer.gpu][0]:
                best[g.offer.gpu] = (k, g, s, e)
        return {gpu: g.candidate(e, s) for gpu, (_, g, s, e) in best.items()}

    def offers(self) -> Iterator[Offer]:
        """Every offer judged (once per purchase option), without building candidates."""
        return (e[OFFER] for _, s in self._segments(lambda code: True) for e in s)

    def everything(self) -> tuple[Candidate, ...]:
        """Every candidate: the feasible in rank order, then the rejected in price order."""
        return tuple(self.ranked()) + tuple(self.rejected())
