"""What the optimizer returns: the choice and every candidate with its reasons, read lazily.

The plan JSON is rendered from it by gpusizer.render.plan_json."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from gpusizer.base import limits, providers, units
from gpusizer.decide import scaling
from gpusizer.decide.candidate import Candidate
from gpusizer.estimate.workload import Workload

if TYPE_CHECKING:  # judgement is built by optimize and handed in: the type only
    from gpusizer.decide.judgement import Judgement


# What can set a choice's size (Decision.sized_by): memory, a limit a cheaper shape failed, or the
# objective when a cheaper shape was adequate but cost more for the whole job or per token.
SIZED_BY = limits.SIZED_BY


FAILOVER_MAX_PRICE_RATIO = 2.0
"""The dearest failover type as a multiple of the choice's on-demand $/hour: the policy pack's default
maxRatio (gpusizer-no-overprovisioning, policies/rules.py; tests/policies hold the two equal)."""


def _price_within(price: float | None, choice: float | None) -> bool:
    return price is None or choice is None or price <= FAILOVER_MAX_PRICE_RATIO * choice


@dataclasses.dataclass(frozen=True)
class Decision:
    """The cheapest adequate candidate and the explanation of every other.

    Candidates other than the choice are built only when read
    (gpusizer.decide.judgement): the top N, the nearest rejection per reason, or
    all of them (`candidates`); counts come from the judged runs.

    Attributes:
        workload: the resolved spec and its requirements.
        objective: "hourly" ($/hour) or "per-token" ($ per million tokens).
        chosen: the winner, or None when nothing is feasible.
        judged: every candidate, judged (gpusizer.decide.judgement.Judgement).
        next_cheaper: the rejected candidate closest below the choice in $/hour,
            i.e. what a reviewer asks about first ("why not that one?").
        burst: set when an on-prem pool was full and the choice went to a cloud.
        notes: provenance of the prices used (their ages) and warnings.
    """

    workload: Workload
    objective: str
    chosen: Candidate | None
    judged: Judgement = dataclasses.field(repr=False)
    notes: tuple[str, ...] = ()

    @functools.cached_property
    def next_cheaper(self) -> Candidate | None:
        """The rejected candidate closest below the choice in $/hour that lost on a size, host, capacity
        or budget limit: what a reviewer asks about first ("why not that one?")."""
        return None if self.chosen is None else self.judged.next_cheaper(_hourly(self.chosen))

    @functools.cached_property
    def burst(self) -> str | None:
        """Set when an on-prem pool was full and the choice went to a cloud."""
        c = self.chosen
        if c is None or providers.get(c.offer.provider).owned or not self.judged.counts.get(limits.Limit.CAPACITY):
            return None
        full = self.judged.full_pools()
        if not full:
            return None
        return f"on-prem pool(s) {', '.join(full)} full: bursting to {c.offer.provider} {c.offer.region}"

    @functools.cached_property
    def candidates(self) -> tuple[Candidate, ...]:
        """Every candidate: feasible ones in rank order, then rejected ones by price (built on first read)."""
        return self.judged.everything()

    @property
    def feasible(self) -> list[Candidate]:
        """Every feasible candidate in rank order (all built; `ranked()` builds as it goes)."""
        return list(self.judged.ranked())

    def ranked(self) -> Iterator[Candidate]:
        """The feasible candidates in rank order, built as the caller reads them."""
        return self.judged.ranked()

    @property
    def feasible_count(self) -> int:
        return self.judged.feasible_count

    @property
    def candidate_count(self) -> int:
        """How many candidates were judged (offers x purchase options), feasible or not."""
        return self.judged.total

    @functools.cached_property
    def rejections_by_reason(self) -> dict[str, int]:
        """Every rejection counted by its code (gpusizer.base.limits.Limit value): most frequent first, ties by
        their cheapest candidate."""
        return self.judged.reasons()

    def nearest_rejected(self) -> list[Candidate]:
        """Per reason, the cheapest rejected candidate, in price order: what a reviewer checks first."""
        return list(self.judged.nearest_rejected.values())

    def trimmed(self, top: int) -> list[Candidate]:
        """The top `top` feasible candidates in rank order, then the nearest rejected one per reason."""
        return self.judged.top(top) + self.nearest_rejected()

    @property
    def required_gpu_memory_gib(self) -> float:
        """Total GPU memory the workload needs (requirements.memory_gib.total): the sizing tag's value."""
        return round(units.gib(self.workload.breakdown.total), 2)

    @functools.cached_property
    def sized_by(self) -> str:
        """What set the size of the choice, one of SIZED_BY.

        Looks at every candidate cheaper per hour than the choice:
        - one of them is feasible: the choice won on the objective, not on
          fit, so the label is "per-token-cost" (serving, $ per million
          tokens) or "per-job-cost" (training with a token count, $ per run);
        - none is feasible: the first limit, in the order deadline,
          throughput, tpot, ttft, interconnect, precision, that some cheaper
          shape failed while it held the memory, so "deadline" only when a
          cheaper shape would miss the deadline; else "memory".

        The policy pack reads this (as a tag) to know whether GPU memory
        alone can judge over-provisioning, and exempts a non-memory label
        only when it re-derives the same decision from the recorded spec.

        >>> SIZED_BY
        ('memory', 'deadline', 'throughput', 'tpot', 'ttft', 'interconnect', 'precision', 'per-job-cost', 'per-token-cost')
        """
        c = self.chosen
        if c is None:
            return limits.Limit.MEMORY.value
        # Only the cheapest candidate of each judged run decides this: no candidate is built.
        if self.judged.any_feasible_cheaper(_hourly(c)):
            return limits.PER_TOKEN_COST if self.workload.spec.task == "inference" else limits.PER_JOB_COST
        lost = self.judged.cheaper_codes(_hourly(c))
        return next((code.value for code in limits.SIZED_BY_TARGET if code in lost), limits.Limit.MEMORY.value)

    def failover(self, n: int) -> list[Candidate]:
        """The choice and up to n-1 next-ranked adequate instance types in the same place.

        Same provider, region, purchase option and node count, distinct instance
        types, in rank order: the override list of an Auto Scaling group or
        fleet, so a capacity error on one type falls to the next adequate one,
        never to an inadequate one. A type priced above FAILOVER_MAX_PRICE_RATIO x the choice's (on-demand,
        per instance) is left out: the policy gate exempts a failover type only within its maxRatio of the
        decision's price, so a dearer one would fail the gate the component's own group must pass.
        """
        c = self.chosen
        if c is None:
            return []
        out: list[Candidate] = []
        for other in self.ranked():
            same_place = (other.offer.provider, other.offer.region, other.purchase, other.nodes) == (
                c.offer.provider,
                c.offer.region,
                c.purchase,
                c.nodes,
            )
            within = _price_within(other.offer.on_demand_usd, c.offer.on_demand_usd)
            if same_place and within and other.offer.instance_type not in {x.offer.instance_type for x in out}:
                out.append(other)
            if len(out) == n:
                break
        return out

    def failover_candidates(self) -> list[Candidate]:
        """failover() as the spec asks: deploy.failover_types types with deploy.capacity_failover, else the choice alone."""
        deploy = self.workload.spec.deploy
        return self.failover(deploy.failover_types if deploy.capacity_failover else 1)

    def margin(self) -> dict[str, float]:
        """How much room the choice has: memory per GPU and each target."""
        if self.chosen is None or self.chosen.fit is None:
            return {}
        f = self.chosen.fit
        out = {
            "memory_gib_per_gpu": round(f.usable_gib - f.need_gib, 2),
            "memory_utilization": round(f.need_gib / f.usable_gib, 3),
        }
        t = self.workload.targets if self.workload.spec.task == "inference" else None
        if f.speed and t:
            if t.ttft_ms:
                out["ttft_ms"] = round(t.ttft_ms - f.speed.ttft_ms, 1)
            if t.tpot_ms:
                out["tpot_ms"] = round(t.tpot_ms - f.speed.tpot_ms, 2)
            if t.tokens_per_second:
                out["tokens_per_second"] = round(f.speed.tokens_per_second * f.replicas - t.tokens_per_second, 1)
        if f.train_hours and self.workload.spec.train.deadline_hours:
            out["deadline_hours"] = round(self.workload.spec.train.deadline_hours - f.run_hours, 1)
        return out

    @property
    def autoscaling(self) -> scaling.Range | None:
        """The choice's replica bounds and $/month at min, max and expected (gpusizer.decide.scaling), if the spec scales."""
        a = self.workload.spec.deploy.autoscaling
        if a is None or self.chosen is None:
            return None
        c = self.chosen
        per_node = c.fit.replicas_per_node if c.fit else 1
        return scaling.price(a, _hourly(c) / c.instances, c.replicas, per_node, c.nodes)


def _hourly(chosen: Candidate) -> float:
    """The choice's $/hour: it is feasible, and a feasible candidate is priced (an unpriced one is rejected)."""
    assert chosen.hourly_usd is not None, "the choice is feasible, so priced"
    return chosen.hourly_usd
