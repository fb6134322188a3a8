"""Why nothing (or only something dearer) fits: per limit, the nearest miss and the best value any offer reached.

A reviewer of an infeasible plan asks "how far off are we, and on what?".
For every rejection reason, the candidate that came closest to the limit is
the nearest miss: the smallest shortfall ratio (what it reached / what was
needed, oriented so that 1.0 would pass), ties to the cheaper one. Reasons
without a measured value (host shape, capacity, quotas, placement) fall back
to the cheapest candidate rejected for them, with its sentence.

Example line: "best TTFT: 412 ms on 8 x H100 p5.48xlarge; target 5 ms".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from gpusizer.base import limits
from gpusizer.decide.candidate import BRIEF_KEYS, Candidate, Rejection
from gpusizer.decide.runs import Probe
from gpusizer.estimate import fit as fit_mod
from gpusizer.estimate.workload import Workload

if TYPE_CHECKING:  # the judged offers are handed in: the type only
    from gpusizer.decide.judgement import Judgement

PLACEMENT = limits.PLACEMENT
"""Reasons that say where and how the spec allows an offer (or how it is sold), not how close it came: left out of the losers' rows."""


@dataclasses.dataclass(frozen=True, slots=True)
class Miss:
    """The nearest miss for one rejection reason.

    Attributes:
        code: the rejection reason (Rejection.code).
        count: candidates rejected for it.
        candidate: the one that came closest (cheapest when there is no measure).
        ratio: shortfall ratio (> 1; smaller is nearer), or None without a measure.
        best: what the nearest reached ("412 ms"), or None.
        target: what the spec asked ("5 ms"), or None.
    """

    code: str
    count: int
    candidate: Candidate
    ratio: float | None
    best: str | None
    target: str | None

    @property
    def _rejection(self) -> Rejection:
        r = self.candidate.rejection
        assert r is not None, "a miss is a rejected candidate"
        return r

    def line(self) -> str:
        """One sentence for every format: what was reached, on which offer, against what."""
        on = offer_label(self.candidate)
        if self.best is None:
            return f"{self.code} ({self.count}): nearest {on}: {self._rejection.detail}"
        return f"best {_LABELS[self.code]}: {self.best} on {on}; {self.target} ({self.count} rejected)"

    def to_dict(self) -> dict[str, Any]:
        c = self.candidate
        return {
            "reason": self.code,
            "count": self.count,
            "best": self.best,
            "target": self.target,
            # A ratio can overflow (a 1e-308 budget): JSON has no infinity, so it is left out then.
            "shortfall_ratio": None if self.ratio is None or not math.isfinite(self.ratio) else round(self.ratio, 3),
            "offer": {k: v for k, v in c.to_dict().items() if k in BRIEF_KEYS},
            "detail": self._rejection.detail,
            "line": self.line(),
        }


def offer_label(c: Candidate) -> str:
    """ "8 x H100 p5.48xlarge", "2 x p5.48xlarge (16 x H100)" for multi-node, "1/8 x L4 g6f.large" for a fraction."""
    o = c.offer
    if o.gpu_fraction < 1:
        return f"1/{round(1 / o.gpu_fraction)} x {o.gpu} {o.instance_type}"
    if c.nodes > 1:
        return f"{c.nodes} x {o.instance_type} ({c.gpu_count} x {o.gpu})"
    return f"{c.gpu_count} x {o.gpu} {o.instance_type}"


class Reached(Protocol):
    """What a shortfall measure reads of a candidate: a Candidate, or the Probe of one not built yet."""

    @property
    def fit(self) -> fit_mod.Fit | None: ...

    @property
    def hourly_usd(self) -> float | None: ...


Measure = tuple[float, str, str]
"""(shortfall ratio, what was reached, the target), both as shown."""


_LABELS = {
    "memory": "memory fit",
    "ttft": "TTFT",
    "tpot": "TPOT",
    "throughput": "throughput",
    "deadline": "training time",
    "budget": "price",
}


def _memory(w: Workload, c: Reached) -> Measure | None:
    f = c.fit
    if f is None or not f.usable_gib or not f.need_gib:
        return None
    return f.need_gib / f.usable_gib, f"{f.usable_gib:.1f} GiB usable per GPU", f"needs {f.need_gib:.1f} GiB per GPU"


def _ttft(w: Workload, c: Reached) -> Measure | None:
    return _latency(c, "ttft_ms", w.targets.ttft_ms, ",.0f")


def _tpot(w: Workload, c: Reached) -> Measure | None:
    return _latency(c, "tpot_ms", w.targets.tpot_ms, ",.1f")


def _latency(c: Reached, field: str, target: float | None, fmt: str) -> Measure | None:
    """A latency target's measure: the candidate's `field` of its speed against `target` (ms)."""
    s = c.fit.speed if c.fit else None
    if not (s and target):
        return None
    reached = getattr(s, field)
    return reached / target, f"{reached:{fmt}} ms", f"target {target:{fmt}} ms"


def _throughput(w: Workload, c: Reached) -> Measure | None:
    t = w.targets.tokens_per_second
    s = c.fit.speed if c.fit else None
    if not (s and t and s.tokens_per_second):
        return None
    most = s.tokens_per_second * fit_mod.MAX_REPLICAS
    return (
        t / most,
        f"{s.tokens_per_second:,.0f} tokens/s per replica ({most:,.0f} with {fit_mod.MAX_REPLICAS} replicas)",
        f"target {t:,.0f} tokens/s",
    )


def _deadline(w: Workload, c: Reached) -> Measure | None:
    deadline = w.spec.train.deadline_hours
    hours = c.fit.run_hours if c.fit else None
    if not (hours and deadline):
        return None
    return hours / deadline, f"{hours:,.1f} h", f"deadline {deadline:,.1f} h"


def _budget(w: Workload, c: Reached) -> Measure | None:
    cap = w.spec.placement.max_hourly_usd
    if not cap or c.hourly_usd is None:
        return None
    return c.hourly_usd / cap, f"${c.hourly_usd:,.2f}/h", f"ceiling ${cap:,.2f}/h (placement.max_hourly_usd)"


_MEASURES: dict[str, Callable[[Workload, Reached], Measure | None]] = {
    "memory": _memory,
    "ttft": _ttft,
    "tpot": _tpot,
    "throughput": _throughput,
    "deadline": _deadline,
    "budget": _budget,
}
"""How close a rejected candidate came, per reason: (ratio, reached, target) or None."""


def shortfall(w: Workload, c: Candidate | Probe, code: str | None = None) -> float | None:
    """How far `c` missed its limit (`code`, default its rejection's; > 1, smaller is nearer), or None when
    the reason has no measure. The measures read only `c.fit` and `c.hourly_usd` (a Probe is given its code)."""
    if code is None:
        assert isinstance(c, Candidate) and c.rejection is not None, "without a code, a rejected Candidate"
        code = c.rejection.code
    measure = _MEASURES.get(code)
    m = measure(w, c) if measure else None
    return None if m is None else m[0]


def nearness(w: Workload, c: Candidate | Probe, code: str | None = None) -> float:
    """shortfall, infinite for a reason without a measure: the order of the nearest misses (then price)."""
    r = shortfall(w, c, code)
    return float("inf") if r is None else r


def by_reason(w: Workload, judged: Judgement) -> dict[str, Iterator[Candidate]]:
    """Rejected candidates per reason, nearest first (shortfall ratio, then price), reasons by count.

    Each reason's candidates come lazily, merged from the judged runs
    (gpusizer.decide.judgement): within a run the ratio is one value (a class's fit)
    or grows with the price (budget), so the merge is exact and reading the
    first few costs a few steps, however many offers the catalog holds.
    """

    def near(code: str) -> Callable[[Probe], float]:
        return lambda probe: nearness(w, probe, code)

    # The ignore: Limit(value) is a lookup by value; mypy checks it against the members' __new__(value, group).
    return {
        code: judged.rejected(limits.Limit(code), near(code))  # type: ignore[call-arg]
        for code in judged.reasons()
    }


def nearest(w: Workload, judged: Judgement, include_placement: bool = False) -> list[Miss]:
    """The nearest miss of every rejection reason, reasons by count (most first)."""
    out = []
    counts = judged.reasons()
    for code, cs in by_reason(w, judged).items():
        if code in PLACEMENT and not include_placement:
            continue
        c = next(cs)
        measure = _MEASURES.get(code)
        m = measure(w, c) if measure else None
        ratio, best, target = m if m else (None, None, None)
        out.append(Miss(code, counts[code], c, ratio, best, target))
    return out
