"""The candidate rows a reviewer reads, one list for the table and markdown alike.

Rows:
- the cheapest feasible candidates (rank order), offers identical but for the
  zone collapsed into one row with their count and zones;
- then, per rejection reason (most frequent first), the nearest misses
  (gpusizer.decide.misses: smallest shortfall, then price), collapsed the same way.
  Placement reasons (provider, region, GPU, opt-in) say where the spec allows
  an offer, not how close it came, and are only counted.

`top` bounds the feasible rows, and the rejected rows in all (at least one per
reason).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gpusizer.decide import judgement, misses
from gpusizer.decide.candidate import Candidate
from gpusizer.decide.decision import Decision

# Zones listed in a collapsed row before "+N more".
_ZONES_SHOWN = 3


def money(x: float | None) -> str:
    """$1,234.56; sub-dime amounts keep 4 decimals ($0.0212); $0 for nothing; "-" for none."""
    return "-" if x is None else "$0" if x == 0 else f"${x:,.2f}" if x >= 0.1 else f"${x:.4f}"


def shape(c: Candidate) -> str:
    """GPUs of one replica: "8 x H100 (79.7 GiB)", "... on 2 nodes", "1/8 x L4 (2.8 GiB)"."""
    o = c.offer
    if o.gpu_fraction < 1:
        return f"1/{round(1 / o.gpu_fraction)} x {o.gpu} ({o.gpu_memory_gib:.1f} GiB)"
    nodes = f" on {c.nodes} nodes" if c.nodes > 1 else ""
    if c.fit is not None and c.fit.replicas_per_node > 1:
        nodes += f", {c.fit.replicas_per_node} replicas per node"
    return f"{c.gpu_count} x {o.gpu} ({o.gpu_memory_gib:.1f} GiB){nodes}"


def where(c: Candidate) -> str:
    """ "region/zone", or the region when the offer is regional (an on-prem pool: its location)."""
    o = c.offer
    return f"{o.region}/{o.zone}" if o.zone else o.region


def where_group(cs: list[Candidate]) -> str:
    """Where a collapsed row's offers are: "us-east-2/{use2-az1,use2-az3}", or "+N more"."""
    if len(cs) == 1:
        return where(cs[0])
    zones = sorted({c.offer.zone or "" for c in cs})
    shown = ",".join(zones[:_ZONES_SHOWN]) + (
        f",+{len(zones) - _ZONES_SHOWN} more" if len(zones) > _ZONES_SHOWN else ""
    )
    return f"{cs[0].offer.region}/{{{shown}}}"


def _alike_key(c: Candidate) -> tuple:
    """Everything a reader compares, except the zone."""
    o = c.offer
    reason = c.rejection.detail if c.rejection else ""
    return (
        o.provider,
        o.region,
        o.instance_type,
        c.purchase,
        c.nodes,
        c.replicas,
        c.hourly_usd,
        c.usd_per_mtok,
        reason,
    )


def collapse(cs: Iterable[Candidate], n: int, primary: Callable[[Candidate], tuple]) -> list[list[Candidate]]:
    """The first `n` groups of candidates identical but for the zone, in first-seen order.

    `cs` comes sorted by a key that starts with `primary` (e.g. $/Mtok and
    $/hour). Candidates alike but for the zone share their primary key, so
    once one passes the largest primary key of the first n groups, none
    later can join them: the scan stops there, reading a few candidates of
    a lazily merged stream (gpusizer.decide.judgement) rather than all of them.
    """
    groups: dict[tuple, list[Candidate]] = {}
    bound = None
    for c in cs:
        k = _alike_key(c)
        if k in groups:
            groups[k].append(c)
        elif len(groups) < n:
            groups[k] = [c]
        else:
            if bound is None:
                bound = max(primary(g[0]) for g in groups.values())
            if primary(c) > bound:
                break
    return list(groups.values())


def _columns(d: Decision) -> tuple[str, ...]:
    """Cost columns fit the task: $/month for serving, the run's hours and $ for training with a token count."""
    run = d.workload.spec.task != "inference" and bool(d.workload.spec.train.tokens)
    cost = ("$/h each", "run h", "$/run") if run else ("$/h each", "$/month")
    return ("", "n", "provider", "where", "instance type", "GPUs", "replicas", "purchase", *cost, "$/Mtok", "why not")


def _cells(d: Decision, mark: str, group: list[Candidate], run: bool, markdown: bool) -> tuple:
    c = group[0]
    cost = c.cost
    itype = f"`{c.offer.instance_type}`" if markdown else c.offer.instance_type
    if cost is None:
        money_cells = ("-", "-", "-") if run else ("-", "-")
    elif run:
        hours = "-" if cost.run_hours is None else f"{cost.run_hours:,.2f}"
        money_cells = (money(cost.hourly_usd), hours, money(cost.total_usd))
    else:
        money_cells = (money(cost.hourly_usd), money(cost.monthly_usd))
    why = c.rejection.detail if c.rejection else ""
    return (
        mark,
        len(group),
        c.offer.provider,
        where_group(group),
        itype,
        shape(c),
        c.replicas,
        c.purchase,
        *money_cells,
        money(c.usd_per_mtok),
        why,
    )


def table(d: Decision, top: int, markdown: bool = False) -> tuple[tuple[str, ...], list[tuple]]:
    """(column names, rows) of the candidates a reviewer reads (see the module docstring)."""
    cols = _columns(d)
    run = "run h" in cols
    body = []
    for i, group in enumerate(collapse(d.ranked(), top, lambda c: judgement.rank_key(c)[:2])):
        mark = "CHOSEN" if group[0] is d.chosen else f"#{i + 1}"
        body.append(_cells(d, f"**{mark}**" if markdown and mark == "CHOSEN" else mark, group, run, markdown))
    reasons = {code: cs for code, cs in misses.by_reason(d.workload, d.judged).items() if code not in misses.PLACEMENT}
    per_reason = max(1, top // len(reasons)) if reasons else 0
    for code, cs in reasons.items():
        near = lambda c: (misses.nearness(d.workload, c), judgement.price_key(c)[0])  # noqa: E731
        for group in collapse(cs, per_reason, near):
            body.append(_cells(d, f"x {code}", group, run, markdown))
    return cols, body
