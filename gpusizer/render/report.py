"""Render a Decision or an Estimate as a terminal table, markdown (for a PR comment) or JSON.

Rendering only reads; all numbers come from the decision. Candidates are
listed cheapest first with a CHOSEN mark; rejected offers are collapsed to
one row per (provider, instance type, purchase, reason) so a 5,000-offer
catalog stays readable, and every reason is counted.
"""

from __future__ import annotations

import json

from gpusizer.base import cost as cost_mod
from gpusizer.catalog import consumption
from gpusizer.decide import misses
from gpusizer.decide.candidate import Candidate
from gpusizer.decide.decision import Decision
from gpusizer.planner import Estimate
from gpusizer.render import plan_json, price_age, rows, table

FORMATS = ("table", "markdown", "json")
PLACEMENT_NOTE = "placement."  # notes of gpusizer.decide.mismatch: shown with the choice, not with the prices


def render(obj: Decision | Estimate, fmt: str = "table", top: int | None = 8, quiet_age: bool = False) -> str:
    """Render a Decision or an Estimate in `fmt` ("table", "markdown" or "json").

    `top` bounds the candidates listed: the top feasible ones and (json) the nearest
    rejected one per reason, or (table, markdown) the rejected rows. None lists every candidate.

    `quiet_age` (or GPUSIZER_QUIET_AGE) acknowledges old prices: table and
    markdown then leave out the price-age line (gpusizer.render.price_age); JSON keeps every note.
    """
    if isinstance(obj, Estimate):
        if fmt == "json":
            return json.dumps(
                plan_json.estimate(obj), indent=2, allow_nan=False
            )  # NaN/Infinity is not JSON: a bug if reached
        return _estimate_text(obj, markdown=fmt == "markdown")
    if fmt == "json":
        return json.dumps(plan_json.plan(obj, top=top), indent=2, allow_nan=False)
    top = obj.candidate_count if top is None else top
    return _plan_markdown(obj, top, quiet_age) if fmt == "markdown" else _plan_table(obj, top, quiet_age)


_money = rows.money
_shape = rows.shape


def _memory_line(d: Decision | Estimate) -> str:
    m = d.workload.breakdown.to_gib()
    parts = [f"{k.replace('_', ' ')} {v:.1f}" for k, v in m.items() if k != "total" and v]
    return f"{m['total']:.1f} GiB = " + " + ".join(parts)


def _targets_line(d: Decision | Estimate) -> str | None:
    w = d.workload
    if w.spec.task != "inference":
        t = w.spec.train
        if not t.tokens:
            return None
        deadline = f" within {t.deadline_hours:g} h" if t.deadline_hours else ""
        return f"{t.tokens:.3g} tokens{deadline} ({w.training_flops:.3g} FLOPs)"
    t = w.targets
    parts = []
    if t.tokens_per_second:
        parts.append(
            f"{t.tokens_per_second:,.0f} tokens/s (growth x{w.spec.growth:g}, at least {w.spec.deploy.replicas} replica(s))"
        )
    if t.ttft_ms:
        parts.append(f"TTFT <= {t.ttft_ms:g} ms")
    if t.tpot_ms:
        parts.append(f"TPOT <= {t.tpot_ms:g} ms")
    if t.requests_per_second:
        pct = [
            f"p{q * 100:g} "
            + ", ".join(f"{k.removesuffix('_ms')} <= {v:g} ms" for k, v in pt.model_dump(exclude_none=True).items())
            for q, pt in w.spec.serving.targets.percentiles()
        ]
        parts.append(f"{t.requests_per_second:g} requests/s" + (f" ({'; '.join(pct)})" if pct else ""))
    return ", ".join(parts) or None


def model_line(w) -> str:
    """What the spec's model resolved to, in one line: "llama-3.1-8b (Llama-3.1-8B, meta-llama/Llama-3.1-8B),
    context limit 131,072 tokens; model.name 'x' ..." (plan_json.resolved_model in words)."""
    r = plan_json.resolved_model(w)
    ids = ", ".join(x for x in (r["display_name"], r["hf_id"]) if x)
    line = f"{r['name']} ({ids})"
    if r["context_limit"]:
        line += f", context limit {r['context_limit']:,} tokens"
        if r["rope_scaling"]:
            line += (
                f" (trained {r['max_context']:,} x RoPE {r['rope_scaling']['type']} {r['rope_scaling']['factor']:g})"
            )
    if r["matched_by"] in ("name", "loose-alias") and r["requested"] != r["name"]:
        line += f"; from model.name {r['requested']!r}"
        if r["registry_hf_id"] and r["registry_hf_id"] != r["hf_id"]:
            line += f", sized by the registry entry of {r['registry_hf_id']} (same architecture)"
        line += ", a loose alias: name a version to choose another" if r["matched_by"] == "loose-alias" else ""
    return line


def _header(d: Decision | Estimate) -> list[tuple[str, str]]:
    w = d.workload
    s = w.spec
    what = f"{w.model.display_name}, {s.task}{' (' + s.method + ')' if s.task == 'finetune' else ''}, {s.precision}"
    if s.task == "inference" and w.model.kind == "encoder":
        what += f", sequence {s.serving.context_length} x batch {s.serving.batch_size}"
    elif s.task == "inference" and w.model.kind != "llm":
        what += f", batch {s.serving.batch_size} ({w.model.kind}: no KV cache, no token targets)"
    elif s.task == "inference":
        what += f", context {s.serving.context_length} x batch {s.serving.batch_size}"
    else:
        what += f", sequence {s.train.sequence_length} x micro-batch {s.train.micro_batch_size}"
    rows = [("workload", f"{s.name}: {what}"), ("model", model_line(w)), ("GPU memory", _memory_line(d))]
    targets = _targets_line(d)
    if targets:
        rows.append(("targets", targets))
    rows.append(
        (
            "host",
            f">= {w.min_vcpus(1)} vCPU per GPU; RAM >= one GPU's share of the weights "
            f"({w.min_ram_gib(1):.1f} GiB on a 1-GPU node); {w.disk_gib} GiB disk per node",
        )
    )
    rows += [("speed", line) for line in (w.calibration.notes() if w.calibration else ())]
    return rows


def _performance(c: Candidate) -> str:
    f = c.fit
    if f is None:
        return ""
    parts = [f"{f.need_gib:.1f}/{f.usable_gib:.1f} GiB per GPU"]
    if f.speed:
        parts.append(
            f"TTFT {f.speed.ttft_ms:,.0f} ms, TPOT {f.speed.tpot_ms:.1f} ms, {f.speed.tokens_per_second:,.0f} tok/s"
            f" at {f.speed.concurrency} concurrent"
        )
        if f.tensor_parallel > 1 or f.pipeline_stages > 1 or f.replicas_per_node > 1:
            parts.append(_layout(f))
        if f.speed.allreduce_ms:
            parts.append(f"all-reduce {f.speed.allreduce_ms:.2f} ms/token over {f.speed.link}")
        if f.speed.pipeline_ms:
            parts.append(f"pipeline hops {f.speed.pipeline_ms:.2f} ms/token")
    if f.precision_note:
        parts.append(f"precision fallback: {f.precision_note}")
    if f.placement_note:
        parts.append(f.placement_note)
    if f.train_hours is not None:
        parts.append(f"{f.train_hours:,.1f} h")
    if f.sharding and f.sharding != "none":
        parts.append(f.sharding)
    return ", ".join(parts)


def _layout(f) -> str:
    """The serving layout in words: "TP 4 x PP 2", "8 replicas of TP 1 per node"."""
    layout = f"TP {f.tensor_parallel}" + (
        f" x PP {f.pipeline_stages} (one stage per node)" if f.pipeline_stages > 1 else ""
    )
    return f"{f.replicas_per_node} replicas of {layout} per node" if f.replicas_per_node > 1 else layout


def cost_text(cost: cost_mod.Cost) -> str:
    """ "2 replicas x $1.86/h = $3.72/h, $2,717.06/month; run 0.37 h, $4.24 in total"."""
    each = f"{_money(cost.hourly_usd)}/h"
    out = (
        f"{cost.replicas} replicas x {each} = {_money(cost.hourly_usd * cost.replicas)}/h"
        if cost.replicas > 1
        else each
    )
    out += f", {_money(cost.monthly_usd)}/month"
    if cost.run_hours is not None:
        out += f"; run {cost.run_hours:,.2f} h, {_money(cost.total_usd)} in total"
    return out


def scaling_text(r: dict) -> str:
    """A plan JSON's choice.autoscaling in words: "0-4 replicas on queue_depth (target 10): $0/month at min, ..."."""
    on = r["metric"] if r.get("target") is None else f"{r['metric']} (target {r['target']:g})"
    text = (
        f"{r['min_replicas']}-{r['max_replicas']} replicas on {on}: {_money(r['monthly_usd_min'])}/month at min, "
        f"{_money(r['monthly_usd_max'])}/month at max, expected {_money(r['monthly_usd_expected'])}/month "
        f"({r['expected_assumption']}); the budget policy counts max"
    )
    if r.get("sized_replicas", 0) > r["max_replicas"]:
        text += f"; max is below the {r['sized_replicas']} replicas the throughput target needs"
    return text


def bought_as(d: Decision) -> str:
    """The purchase, and the consumption model where it differs (flex-start, a reservation, a Capacity Block)."""
    bought = plan_json.consumption_model(d)
    text = d.chosen.purchase if bought == d.chosen.purchase else f"{d.chosen.purchase} as {bought}"
    if bought == "capacity-block":
        o = d.chosen.offer
        rate = consumption.capacity_block_usd(o.instance_type, o.region)
        text += (
            f" (published block rate {_money(rate)}/h per instance, {consumption.CAPACITY_BLOCK_AS_OF})"
            if rate
            else " (no published block rate for this type and region: the price shown is on-demand)"
        )
    return text


def _choice_lines(d: Decision) -> list[str]:
    c = d.chosen
    ranked = f"ranked by: {cost_mod.objective_text(d.objective, d.workload.spec.task)}"
    placement = [f"  {n}" for n in d.notes if n.startswith(PLACEMENT_NOTE)]  # gpusizer.decide.mismatch
    if c is None:
        lines = ["CHOICE: none feasible - every offer was rejected. Exit code 3.", f"  {ranked}", *placement]
        near = [f"    {m.line()}" for m in misses.nearest(d.workload, d.judged)]
        return lines + (["  nearest misses:", *near] if near else [])
    per_mtok = "" if c.usd_per_mtok is None else f"; {_money(c.usd_per_mtok)} per million tokens"
    lines = [
        f"CHOICE: {c.offer.provider} {rows.where(c)} {c.offer.instance_type}: {_shape(c)}, {bought_as(d)}",
        f"  cost: {cost_text(c.cost)}{per_mtok} (price as of {c.offer.price_as_of(c.purchase)})",
        f"  {ranked}",
        f"  performance: {_performance(c)}",
        "  margin: " + ", ".join(f"{k} {v:g}" for k, v in d.margin().items()),
    ]
    scaled = d.autoscaling
    if scaled is not None:
        lines.append(f"  autoscaling: {scaling_text(scaled.to_dict())}")
    if c.offer.note:
        lines.append(f"  cost basis: {c.offer.note}")
    if d.next_cheaper is not None:
        n = d.next_cheaper
        nodes = f" for {n.nodes} nodes" if n.nodes > 1 else ""
        lines.append(
            f"  next cheaper: {n.offer.provider} {rows.where(n)} {misses.offer_label(n)} "
            f"({cost_text(n.cost)}{nodes}) lacked: {n.rejection.detail}"
        )
    if d.burst:
        lines.append(f"  BURST: {d.burst}")
    return lines + placement


def _reason_counts(d: Decision) -> str:
    return ", ".join(f"{code} {n}" for code, n in d.rejections_by_reason.items())


def _plan_table(d: Decision, top: int, quiet_age: bool) -> str:
    out = [f"{k:<11} {v}" for k, v in _header(d)]
    out += ["", *_choice_lines(d), ""]
    cols, body = rows.table(d, top)
    out.append(
        f"Candidates ({d.feasible_count} feasible of {d.candidate_count}; the cheapest, "
        "then the nearest misses per reason; n = offers alike but for the zone):"
    )
    out += table.text(cols, body)
    out += ["", f"Rejections by reason: {_reason_counts(d) or 'none'}"]
    out += [f"Prices: {n}" for n in price_age.notes(d, quiet_age) if not n.startswith(PLACEMENT_NOTE)]
    return "\n".join(out)


def _md_line(line: str) -> str:
    """A choice line as markdown: the CHOICE in bold, indented lines as (nested) list items."""
    if line.startswith("CHOICE"):
        return f"**{line}**"
    return f"{'  ' if line.startswith('    ') else ''}- {line.strip()}"


def _plan_markdown(d: Decision, top: int, quiet_age: bool) -> str:
    out = [f"### gpusizer plan: `{d.workload.spec.name}`", ""]
    out += [f"- **{k}**: {v}" for k, v in _header(d)]
    out += ["", *(_md_line(line) for line in _choice_lines(d)), ""]
    cols, body = rows.table(d, top, markdown=True)
    out += table.markdown(cols, body)
    out += ["", f"Rejections by reason: {_reason_counts(d) or 'none'}", ""]
    out += [f"> {n}" for n in price_age.notes(d, quiet_age) if not n.startswith(PLACEMENT_NOTE)]
    return "\n".join(out)


def _estimate_text(e: Estimate, markdown: bool) -> str:
    rows = []
    for r in e.per_gpu:
        o = r.get("smallest_offer")
        offer = (
            "-"
            if o is None
            else f"{o['instance_type']} ({o['gpu_count']} GPU{'' if o['gpu_count'] == 1 else 's'}, {_money(o['hourly_usd'])}/h, {o['limiting']})"
        )
        layout = ""
        if r["min_count"] is not None and r.get("tensor_parallel"):
            layout = f"TP {r['tensor_parallel']}" + (
                f" x PP {r['pipeline_stages']}" if r["pipeline_stages"] > 1 else ""
            )
            layout += f" x {r['replicas']} replicas" if r["replicas"] > 1 else ""
        sp = r.get("speed") or {}
        speed = (
            f"TPOT {sp['tpot_ms']:.1f} ms, {sp['tokens_per_second']:,.0f} tok/s"
            if "tpot_ms" in sp
            else f"{sp['run_hours']:,.2f} h"
            if "run_hours" in sp
            else ""
        )
        rows.append(
            (r["gpu"], "-" if r["min_count"] is None else str(r["min_count"]), r["limiting"], layout, speed, offer)
        )
    head = ("GPU", "min count", "limiting", "layout", "speed", "smallest offer")
    if markdown:
        out = [f"### gpusizer estimate: `{e.workload.spec.name}`", ""]
        out += [f"- **{k}**: {v}" for k, v in _header(e)]
        return "\n".join(out + [""] + table.markdown(head, rows))
    out = [f"{k:<11} {v}" for k, v in _header(e)]
    return "\n".join(out + [""] + table.text(head, rows, right=(1,)))
