"""What the optimizer returns: the choice, every candidate with its reasons, and the plan JSON."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from gpusizer import autoscaling, cost as cost_mod, limits, providers, units
from gpusizer.catalog.offer import Offer
from gpusizer.estimate.fit import Fit
from gpusizer.estimate.workload import Workload

if TYPE_CHECKING:  # judgement builds Candidates: the type only, so the import runs one way
    from gpusizer.judgement import Judgement


# What can set a choice's size (Decision.sized_by): memory, a limit a cheaper shape failed, or the
# objective when a cheaper shape was adequate but cost more for the whole job or per token.
SIZED_BY = limits.SIZED_BY


@dataclasses.dataclass(frozen=True, slots=True)
class Rejection:
    """Why a candidate lost: a stable code and a sentence with numbers.

    Attributes:
        code: the limit it failed first (gpusizer.limits.Limit; a str).
        detail: the sentence, with the numbers.
    """

    code: limits.Limit
    detail: str

    def __post_init__(self):
        object.__setattr__(self, "code", limits.Limit(self.code))  # an unknown code is a bug: fail here


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """One offer at one purchase option and node count, judged.

    `hourly_usd` here is everything the candidate runs for an hour (all nodes of
    all replicas): what ranking and placement.max_hourly_usd compare. The plan
    JSON and the reports show `cost` instead: `hourly_usd` per replica, the
    replica count and $/month (gpusizer.cost states the arithmetic).
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
        run_hours = self.fit.train_hours if self.fit else None
        return cost_mod.of(self.hourly_usd / self.replicas, self.replicas, run_hours)

    def to_dict(self) -> dict:
        o = self.offer
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
            "hourly_usd": None if self.hourly_usd is None else self.cost.hourly_usd,  # one replica
            "usd_per_million_tokens": None if self.usd_per_mtok is None else round(self.usd_per_mtok, 4),
            "feasible": self.feasible,
            "reasons": [] if self.feasible else [self.rejection.detail],
            "reason_code": None if self.feasible else self.rejection.code.value,
            "source": o.source,
            "as_of": o.price_as_of(self.purchase),
        }


@dataclasses.dataclass(frozen=True)
class Decision:
    """The cheapest adequate candidate and the explanation of every other.

    Candidates other than the choice are built only when read
    (gpusizer.judgement): the top N, the nearest rejection per reason, or
    all of them (`candidates`); counts come from the judged runs.

    Attributes:
        workload: the resolved spec and its requirements.
        objective: "hourly" ($/hour) or "per-token" ($ per million tokens).
        chosen: the winner, or None when nothing is feasible.
        judged: every candidate, judged (gpusizer.judgement.Judgement).
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
        return None if self.chosen is None else self.judged.next_cheaper(self.chosen.hourly_usd)

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
        """Every rejection counted by its code (gpusizer.limits.Limit value): most frequent first, ties by
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
        if self.judged.any_feasible_cheaper(c.hourly_usd):
            return limits.PER_TOKEN_COST if self.workload.spec.task == "inference" else limits.PER_JOB_COST
        lost = self.judged.cheaper_codes(c.hourly_usd)
        return next((code.value for code in limits.SIZED_BY_TARGET if code in lost), limits.Limit.MEMORY.value)

    def failover(self, n: int) -> list[Candidate]:
        """The choice and up to n-1 next-ranked adequate instance types in the same place.

        Same provider, region, purchase option and node count, distinct instance
        types, in rank order: the override list of an Auto Scaling group or
        fleet, so a capacity error on one type falls to the next adequate one,
        never to an inadequate one.
        """
        c = self.chosen
        if c is None:
            return []
        out: list[Candidate] = []
        for other in self.ranked():
            same_place = (other.offer.provider, other.offer.region, other.purchase, other.nodes) == (
                c.offer.provider, c.offer.region, c.purchase, c.nodes)
            if same_place and other.offer.instance_type not in {x.offer.instance_type for x in out}:
                out.append(other)
            if len(out) == n:
                break
        return out

    def failover_candidates(self) -> list[Candidate]:
        """failover() as the spec asks: deploy.failover_types types with deploy.capacity_failover, else the choice alone."""
        deploy = self.workload.spec.deploy
        return self.failover(deploy.failover_types if deploy.capacity_failover else 1)

    def margin(self) -> dict:
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
            out["deadline_hours"] = round(self.workload.spec.train.deadline_hours - f.train_hours, 1)
        return out

    def requirements(self) -> dict:
        return requirements_dict(self.workload)

    @property
    def autoscaling(self) -> autoscaling.Range | None:
        """The choice's replica bounds and $/month at min, max and expected (gpusizer.autoscaling), if the spec scales."""
        a = self.workload.spec.deploy.autoscaling
        if a is None or self.chosen is None:
            return None
        c = self.chosen
        per_node = c.fit.replicas_per_node if c.fit else 1
        return autoscaling.price(a, c.hourly_usd / c.instances, c.replicas, per_node, c.nodes)

    def choice_dict(self) -> dict | None:
        """The plan JSON's `choice`: the chosen candidate with its cost, performance, sharding,
        calibration and autoscaling; None when nothing is feasible. Reads no other candidate."""
        if self.chosen is None:
            return None
        chosen = self.chosen.to_dict()
        for k in ("feasible", "reasons", "reason_code"):
            chosen.pop(k)
        f = self.chosen.fit
        chosen.update(self.chosen.cost.to_dict())
        chosen["performance"] = _performance(f)
        chosen["sharding"] = f.sharding if f else None
        cal = self.workload.calibration
        chosen["calibration"] = cal.describe(self.chosen.offer.gpu) if cal else None
        scaled = self.autoscaling
        chosen["autoscaling"] = scaled.to_dict() if scaled else None
        return chosen

    def to_dict(self, top: int | None = None) -> dict:
        """The plan JSON of docs/contract.md section 2 (plus explanation fields).

        Args:
            top: None lists every candidate; N lists the top N feasible ones and the nearest
                rejected one per reason (`rejections_by_reason` and `candidates_total` count them all).
        """
        from gpusizer import misses  # misses reads Decision: imported here, not at module load
        chosen = self.choice_dict()
        return {
            "workload": self.workload.spec.name,
            "model": self.workload.model.key,
            "task": self.workload.spec.task,
            "objective": self.objective,
            "spec": self.workload.spec.model_dump(mode="json", exclude_none=True),
            "requirements": self.requirements(),
            "choice": chosen,
            "margin": self.margin(),
            "next_cheaper": None
            if self.next_cheaper is None
            else {**_brief(self.next_cheaper), "lacked": self.next_cheaper.rejection.detail},
            "burst": self.burst,
            "sized_by": self.sized_by if self.chosen else None,
            "notes": list(self.notes),
            "nearest_misses": [m.to_dict() for m in misses.nearest(self)],
            "rejections_by_reason": self.rejections_by_reason,
            "candidates_total": self.candidate_count,
            "candidates": [c.to_dict() for c in (self.candidates if top is None else self.trimmed(top))],
        }


def _brief(c: Candidate) -> dict:
    d = c.to_dict()
    keys = ("provider", "region", "zone", "instance_type", "gpu", "gpu_count", "nodes", "replicas", "purchase", "hourly_usd")
    return {k: d[k] for k in keys}


def _performance(f: Fit | None) -> dict:
    if f is None:
        return {}
    out = {"gpu_memory_needed_gib_per_gpu": round(f.need_gib, 2), "gpu_memory_usable_gib_per_gpu": round(f.usable_gib, 2)}
    if f.speed:
        out.update(
            ttft_ms=round(f.speed.ttft_ms, 1),
            tpot_ms=round(f.speed.tpot_ms, 2),
            tokens_per_second=round(f.speed.tokens_per_second, 1),
            bound=f.speed.bound,
            allreduce_ms_per_token=round(f.speed.allreduce_ms, 3),
            pipeline_ms_per_token=round(f.speed.pipeline_ms, 3),
            link=f.speed.link or None,
        )
    if f.speed:
        out.update(
            tensor_parallel=f.tensor_parallel, pipeline_stages=f.pipeline_stages, replicas_per_node=f.replicas_per_node
        )
    if f.precision_note:
        out["precision_fallback"] = f.precision_note
    if f.train_hours is not None:
        out["train_hours"] = round(f.train_hours, 2)
    return out


def requirements_dict(w: Workload) -> dict:
    """The requirements block shared by the plan and estimate JSON."""
    b = w.breakdown
    out = {
        "memory_gib": b.to_gib(),
        "weights_precision": "nf4" if w.spec.method == "qlora" else w.spec.precision,
        "host": {
            "vcpus_per_gpu": w.min_vcpus(1),
            "ram_gib_one_gpu_node": round(w.min_ram_gib(1), 1),  # scales as 1 / GPUs per node
            "disk_gib": w.disk_gib,
        },
    }
    if w.spec.task == "inference" and w.model.kind != "llm":
        # Encoders, vision and diffusion models: no KV cache, no token targets (issue 10).
        out["batch_size"] = w.spec.serving.batch_size
        out["targets"] = {"min_replicas": w.spec.deploy.replicas}
    elif w.spec.task == "inference":
        inf = w.spec.serving
        t = w.targets
        out["kv_cache_precision"] = w.kv_precision
        out["kv_cache_gib_per_sequence"] = round(units.gib(b.kv_cache / inf.batch_size), 3)
        out["targets"] = {
            "tokens_per_second": t.tokens_per_second,
            "ttft_ms": t.ttft_ms,
            "tpot_ms": t.tpot_ms,
            "min_replicas": w.spec.deploy.replicas,
        }
    elif w.training_flops:
        out["training_flops"] = w.training_flops
        out["deadline_hours"] = w.spec.train.deadline_hours
    return out
