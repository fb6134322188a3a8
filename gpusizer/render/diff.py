"""`gpusizer diff` rendered: the changes (gpusizer.diff.compare) as JSON, a terminal table or markdown for a pull-request comment, cut below GitHub's comment limit when asked."""

from __future__ import annotations

import json

from gpusizer import diff
from gpusizer.base import cost
from gpusizer.contract import OUTPUT_VERSION
from gpusizer.render import rows, table


def render(changes: list[diff.Change], fmt: str, policy: tuple[dict | None, dict | None] = (None, None)) -> str:
    """Render the changes: a terminal table, markdown (one table per workload) or JSON (docs/contract.md section 6)."""
    if fmt == "json":
        (b, h), (rb, rh) = diff.totals(changes)
        out = {
            "version": OUTPUT_VERSION,
            "workloads": [c.to_dict() for c in changes],
            "monthly_delta_usd": round(h - b, cost.USD_DECIMALS),
            "run_delta_usd": round(rh - rb, cost.USD_DECIMALS),
            "not_counted": [c.workload for c in changes if c.infeasible],
        }
        if any(policy):
            out["policy"] = {"base": policy[0], "head": policy[1]}
        return json.dumps(out, indent=2)
    md = fmt == "markdown"
    out = ["### gpusizer diff: base -> head", ""] if md else []
    for c in changes:
        out += _workload_md(c) if md else _workload_text(c)
    (b, h), (rb, rh) = diff.totals(changes)
    total = f"Total: {rows.money(b)}/month -> {rows.money(h)}/month ({_signed(h - b)}/month)"
    if rb or rh:
        total += f"; training runs, once: {rows.money(rb)} -> {rows.money(rh)} ({_signed(rh - rb)})"
    left_out = [c.workload for c in changes if c.infeasible]
    if left_out:
        total += f"; not counted, nothing feasible on one side: {', '.join(left_out)}"
    out.append(f"**{total}**" if md else total)
    for side, p in zip(("base", "head"), policy):
        if p:
            out.append(f"{'- ' if md else ''}policy ({side}): {p.get('mandatory', 0)} mandatory violation(s)")
    return "\n".join(out)


GITHUB_COMMENT_MAX_CHARS = 65_536
"""GitHub refuses a comment body past this many characters ("Body is too long (maximum is 65536
characters)", the REST API's 422 answer for issue comments)."""


def truncated(text: str, max_chars: int, full: str | None = None) -> str:
    r"""`text` cut at a line boundary so that it and the note saying so fit in `max_chars` characters.

    >>> truncated("a\nbb\nccc", 200)
    'a\nbb\nccc'
    >>> cut = truncated("line one\nline two\nline three" * 10, 120, "https://example.com/run/1")
    >>> print(cut)
    line one
    line two
    <BLANKLINE>
    _Truncated: 17 of 280 characters shown. The full report: https://example.com/run/1_
    >>> len(cut) <= 120
    True
    """
    if len(text) <= max_chars:
        return text
    note = f"\n\n_Truncated: {{shown:,}} of {len(text):,} characters shown." + (
        f" The full report: {full}_" if full else "_"
    )
    room = max(0, max_chars - len(note.format(shown=len(text))))
    cut = text.rfind("\n", 0, room + 1)
    kept = text[: cut if cut > 0 else room]
    return kept + note.format(shown=len(kept))


def _signed(x: float) -> str:
    return ("+" if x > 0 else "-" if x < 0 else "±") + f"${abs(x):,.2f}"


def _headline(c: diff.Change) -> str:
    """ "chat: $587.65/month -> $235.06/month (-$352.59/month)"; a training run in $ per run."""

    def side(k: cost.Cost | None, plan: dict | None) -> str:
        if k is None:
            return "none feasible" if plan is not None else "-"
        return f"{rows.money(k.total_usd)} per run" if k.total_usd is not None else f"{rows.money(k.monthly_usd)}/month"

    if c.infeasible:
        return (
            f"{c.workload}: {side(c.costs[0], c.base_plan)} -> {side(c.costs[1], c.head_plan)} "
            "(not in the totals: nothing feasible on one side)"
        )
    (b, h), (rb, rh) = c.totals()
    deltas = [f"{_signed(h - b)}/month"] if b or h or not c.is_run else []
    deltas += [f"{_signed(rh - rb)} per run"] if c.is_run else []
    return f"{c.workload}: {side(c.costs[0], c.base_plan)} -> {side(c.costs[1], c.head_plan)} ({', '.join(deltas)})"


_FIELDS = ("choice", "GPUs", "purchase", "replicas", "$/h each", "$/month", "$/run", "ranked by")


def _cells(choice: dict | None, plan: dict | None) -> list[str]:
    if plan is None:
        return ["(absent)"] + [""] * (len(_FIELDS) - 1)
    if choice is None:
        return ["none feasible"] + [""] * (len(_FIELDS) - 2) + [_objective(plan)]
    k = cost.from_choice(choice)
    where = f"{choice['region']}/{choice['zone']}" if choice.get("zone") else choice["region"]
    nodes = f" on {choice['nodes']} nodes" if choice.get("nodes", 1) > 1 else ""
    run = "-" if k.total_usd is None else f"{rows.money(k.total_usd)} ({k.run_hours:,.2f} h)"
    return [
        f"{choice['provider']} {where} {choice['instance_type']}",
        f"{choice['gpu_count']} x {choice['gpu']}{nodes}",
        choice["purchase"],
        str(k.replicas),
        rows.money(k.hourly_usd),
        rows.money(k.monthly_usd),
        run,
        _objective(plan),
    ]


def _objective(plan: dict) -> str:
    return cost.objective_text(plan.get("objective", ""), plan.get("task", "inference"))


def _workload_text(c: diff.Change) -> list[str]:
    out = [_headline(c)]
    base, head = _cells(c.base, c.base_plan), _cells(c.head, c.head_plan)
    width = max(len(f) for f in _FIELDS)
    bw = max(len(x) for x in base + ["base"])
    out.append(f"  {'':<{width}}  {'base':<{bw}}  head")
    for f, x, y in zip(_FIELDS, base, head):
        mark = "" if x == y else "  *"
        out.append(f"  {f:<{width}}  {x:<{bw}}  {y}{mark}".rstrip())
    out += [f"  why: {w}" for w in c.why] or ["  why: unchanged"]
    return out + [""]


def _workload_md(c: diff.Change) -> list[str]:
    cells = [
        (f, x, y if x == y or not y else f"**{y}**")  # an empty changed cell stays empty ("****" renders as text)
        for f, x, y in zip(_FIELDS, _cells(c.base, c.base_plan), _cells(c.head, c.head_plan))
    ]
    out = [f"#### {_headline(c)}", "", *table.markdown(("", "base", "head"), cells)]
    out += ["", *(f"- why: {w}" for w in c.why or ("unchanged",)), ""]
    return out
