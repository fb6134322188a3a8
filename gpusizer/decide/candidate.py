"""The values the engine builds while judging: a Candidate (one offer at one purchase option and
node count) and, when it lost, its Rejection. A leaf of decide/: runs and judgement build these,
misses and decision read them."""

from __future__ import annotations

import dataclasses
from typing import Any

from gpusizer.base import cost as cost_mod
from gpusizer.base import limits
from gpusizer.catalog.offer import Offer
from gpusizer.estimate import jobcost
from gpusizer.estimate.fit import Fit


@dataclasses.dataclass(frozen=True, slots=True)
class Rejection:
    """Why a candidate lost: a stable code and a sentence with numbers.

    Attributes:
        code: the limit it failed first (gpusizer.base.limits.Limit; a str).
        detail: the sentence, with the numbers.
    """

    code: limits.Limit
    detail: str

    def __post_init__(self) -> None:
        # An unknown code is a bug: fail here. The ignore: Limit(value) looks a member up by value
        # (EnumType.__call__), but mypy checks it against the members' own __new__(value, group).
        object.__setattr__(self, "code", limits.Limit(self.code))  # type: ignore[call-arg]


BRIEF_KEYS = (
    "provider",
    "region",
    "zone",
    "instance_type",
    "gpu",
    "gpu_count",
    "nodes",
    "replicas",
    "purchase",
    "hourly_usd",
)
"""The fields that name a candidate's offer and price in a line (next_cheaper, a nearest miss): a subset of
Candidate.to_dict."""


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """One offer at one purchase option and node count, judged.

    `hourly_usd` here is everything the candidate runs for an hour (all nodes of
    all replicas): what ranking and placement.max_hourly_usd compare. The plan
    JSON and the reports show `cost` instead: `hourly_usd` per replica, the
    replica count and $/month (gpusizer.base.cost states the arithmetic).
    """

    offer: Offer
    purchase: str
    nodes: int
    hourly_usd: float | None
    fit: Fit | None
    rejection: Rejection | None
    usd_per_mtok: float | None = None

    @property
    def feasible(self) -> bool:
        return self.rejection is None

    @property
    def gpu_count(self) -> int:
        """GPUs of one replica (all its nodes)."""
        return self.offer.gpu_count * self.nodes

    @property
    def replicas(self) -> int:
        """Copies of the workload this candidate runs (deploy.replicas, or more to reach the throughput target)."""
        return self.fit.replicas if self.fit else 1

    @property
    def instances(self) -> int:
        """Nodes launched for all replicas: nodes per replica group x groups (a node may hold several replicas)."""
        return self.nodes * (self.fit.node_groups if self.fit else 1)

    @property
    def cost(self) -> cost_mod.Cost | None:
        """Per replica $/hour, replicas, $/month and, for training with a token count, the run's hours and $."""
        if self.hourly_usd is None:
            return None
        run_hours = self.fit.run_hours if self.fit else None
        if run_hours is not None:
            run_hours = jobcost.billed_hours(self.offer.provider, run_hours)
        cost = cost_mod.of(self.hourly_usd / self.replicas, self.replicas, run_hours)
        f = self.fit
        if run_hours is not None and f is not None and f.fixed is not None:
            # run_hours came from this fit, so it has its training hours and its run hours
            assert f.train_hours is not None and f.run_hours is not None, "a run has training hours"
            split = {
                "train_hours": round(f.train_hours, 4),
                **f.fixed.to_dict(),
                "billing_minimum_hours": round(run_hours - f.run_hours, 4),
            }
            cost = dataclasses.replace(cost, split=split)
        return cost

    def to_dict(self) -> dict[str, Any]:
        o, cost, rejection = self.offer, self.cost, self.rejection
        return {
            "provider": o.provider,
            "region": o.region,
            "zone": o.zone,
            "instance_type": o.instance_type,
            "gpu": o.gpu,
            "gpu_count": self.gpu_count,
            "gpu_fraction": o.gpu_fraction,
            "gpu_memory_gib": round(o.gpu_memory_gib, 2),
            "nodes": self.nodes,
            "replicas": self.replicas,
            "instances": self.instances,
            "purchase": self.purchase,
            "hourly_usd": None if cost is None else cost.hourly_usd,  # one replica (None when hourly_usd is)
            "usd_per_million_tokens": None if self.usd_per_mtok is None else round(self.usd_per_mtok, 4),
            "feasible": self.feasible,
            "reasons": [] if rejection is None else [rejection.detail],
            "reason_code": None if rejection is None else rejection.code.value,
            "source": o.source,
            "as_of": o.price_as_of(self.purchase),
        }
