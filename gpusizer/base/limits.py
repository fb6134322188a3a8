"""The one list of rejection codes: every limit a candidate can fail, with its group.

The optimizer judges limits in the order they are declared here and keeps the
first one a candidate fails; reports, the decision, components and the policy
pack read the groups below instead of keeping their own lists.

Groups:
    placement: the spec's own choice excluded the offer (provider, region, GPU
        model, opt-in zone, purchase option); says nothing about fit.
    size: the workload's needs set how big the choice must be (memory,
        interconnect, latency and throughput targets, training deadline).
    host: the node's vCPUs or RAM are short for its GPUs.
    capacity: a full on-prem pool or a cloud vCPU quota.
    budget: placement.max_hourly_usd.

>>> Limit("opt-in").group is Group.PLACEMENT, Limit.TTFT in SIZE
(True, True)
>>> sorted(str(m) for m in PLACEMENT)
['gpu', 'image', 'opt-in', 'provider', 'purchase', 'region']
"""

from __future__ import annotations

import enum


class Group(enum.StrEnum):
    """What kind of limit a rejection code is."""

    PLACEMENT = "placement"
    SIZE = "size"
    HOST = "host"
    CAPACITY = "capacity"
    BUDGET = "budget"


class Limit(enum.StrEnum):
    """A rejection code (``Rejection.code``, ``reason_code`` in the plan JSON), in judging order.

    Members compare and hash equal to their string values, so the JSON and
    resource tags keep plain strings ("host-vcpu").
    """

    group: Group

    def __new__(cls, value: str, group: Group) -> Limit:
        member = str.__new__(cls, value)
        member._value_ = value
        member.group = group
        return member

    PROVIDER = "provider", Group.PLACEMENT
    REGION = "region", Group.PLACEMENT
    GPU = "gpu", Group.PLACEMENT
    OPT_IN = "opt-in", Group.PLACEMENT
    IMAGE = "image", Group.PLACEMENT  # no supported machine image for the family (data/images.yaml)
    PURCHASE = "purchase", Group.PLACEMENT
    MEMORY = "memory", Group.SIZE
    INTERCONNECT = "interconnect", Group.SIZE
    # The GPU cannot compute the spec's precision (bf16 before Ampere, fp8 before Ada/Hopper).
    PRECISION = "precision", Group.SIZE
    TTFT = "ttft", Group.SIZE
    TPOT = "tpot", Group.SIZE
    THROUGHPUT = "throughput", Group.SIZE
    DEADLINE = "deadline", Group.SIZE
    HOST_VCPU = "host-vcpu", Group.HOST
    HOST_RAM = "host-ram", Group.HOST
    CAPACITY = "capacity", Group.CAPACITY
    QUOTA = "quota", Group.CAPACITY
    BUDGET = "budget", Group.BUDGET


def _group(g: Group) -> frozenset[Limit]:
    return frozenset(m for m in Limit if m.group is g)


PLACEMENT = _group(Group.PLACEMENT)
"""Excluded by the spec's placement: not shown as a "why not" and not a fit failure."""
SIZE = _group(Group.SIZE)
"""Limits that set the size of the choice."""
HOST = _group(Group.HOST)
CAPACITY = _group(Group.CAPACITY)
BUDGET = _group(Group.BUDGET)

SIZED_BY_TARGET = (Limit.DEADLINE, Limit.THROUGHPUT, Limit.TPOT, Limit.TTFT, Limit.INTERCONNECT, Limit.PRECISION)
"""The size limits other than memory, in the order `Decision.sized_by` names them when
cheaper candidates lost on several: the one furthest from a memory-only sizing first."""

PER_JOB_COST = "per-job-cost"
"""`sized_by` (not a rejection code): a cheaper shape was adequate, the choice costs less per training run."""
PER_TOKEN_COST = "per-token-cost"
"""`sized_by` (not a rejection code): a cheaper shape was adequate, the choice costs less per million tokens."""

SIZED_BY = (Limit.MEMORY.value, *(c.value for c in SIZED_BY_TARGET), PER_JOB_COST, PER_TOKEN_COST)
"""Every value `Decision.sized_by` (and the sized-by tag) can take."""

NOT_BY_MEMORY = frozenset(SIZED_BY) - {Limit.MEMORY.value}
"""`sized_by` values for which GPU memory alone cannot call a choice over-provisioned."""
