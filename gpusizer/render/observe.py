"""`gpusizer observe` rendered: the observe document (gpusizer.measure.observe.run) as JSON, a table or markdown."""

from __future__ import annotations

import json

from gpusizer.render import table


def render(doc: dict, fmt: str) -> str:
    """The observe document as "json", a terminal "table" or "markdown" (the same facts)."""
    if fmt == "json":
        return json.dumps(doc, indent=2)
    head = (
        "workload",
        "GPU",
        "samples",
        "peak GiB/GPU",
        "p95 GiB/GPU",
        "util mean/p95",
        "action",
        "re-planned choice",
        "saved $/month",
    )
    rows = [_row(r) for r in doc["workloads"]]
    reasons = [f"{r['workload']}: {r['recommendation']['reason']}" for r in doc["workloads"]]
    title = f"Observed usage ({doc['window']}, {doc['prometheus']})"
    if fmt == "markdown":
        return "\n".join([f"### {title}", "", *table.markdown(head, rows), ""] + [f"- {x}" for x in reasons])
    return "\n".join([title, *table.text(head, rows), ""] + reasons)


def _row(r: dict) -> tuple[str, ...]:
    o, rec = r["observed"] or {}, r["recommendation"]
    c = rec.get("choice")
    pct = lambda k: "-" if o.get(k) is None else f"{o[k]:.0%}"  # noqa: E731
    util = (
        "-"
        if o.get("mean_gpu_utilization") is None and o.get("p95_gpu_utilization") is None
        else f"{pct('mean_gpu_utilization')} / {pct('p95_gpu_utilization')}"
    )
    choice = (
        "-"
        if not c
        else f"{c['gpu_count']} x {c['gpu']} {c['instance_type']} ({c['provider']} {c.get('zone') or c['region']})"
    )
    saved = "-" if rec.get("monthly_savings_usd") is None else f"{rec['monthly_savings_usd']:,.2f}"
    gpus = "-" if not r["gpus"] else f"{r['gpus']} x {r['gpu']}"
    mem = lambda k: "-" if o.get(k) is None else f"{o[k]:.2f}"  # noqa: E731
    return (
        r["workload"],
        gpus,
        str(r["samples"]),
        mem("peak_gpu_memory_gib"),
        mem("p95_gpu_memory_gib"),
        util,
        rec["action"],
        choice,
        saved,
    )
