"""`gpusizer tco` rendered: the TCO document (gpusizer.tco.compare) as JSON, a table, markdown or a PNG chart."""

from __future__ import annotations

import json

from gpusizer.base.errors import SizingError
from gpusizer.render import table


def render(doc: dict, fmt: str) -> str:
    """The TCO document as "json", a terminal "table" or "markdown" (the same facts)."""
    if fmt == "json":
        return json.dumps(doc, indent=2)
    pool = doc["pool"]
    head = (
        "option",
        "where",
        "offer",
        "$/month",
        f"total {doc['months']} mo",
        "break-even month",
        "break-even utilization",
    )
    rows = []
    for c in doc["cloud"]:
        be = doc["break_even"][c["purchase"]]
        month = "never" if be["month"] is None else str(be["month"])
        util = f"{be['utilization']:.0%}" + (" (never)" if be["utilization"] > 1 else "")
        rows.append(
            (
                f"cloud {c['purchase']}",
                f"{c['provider']} {c['zone'] or c['region']}",
                f"{c['instance_type']} ({c['gpu_count']} x {c['gpu']}{', ' + str(c['replicas']) + ' replicas' if c['replicas'] > 1 else ''})",
                f"{c['monthly_usd']:,.0f}",
                f"{doc['series'][c['purchase']][-1]:,.0f}",
                month,
                util,
            )
        )
    rows.append(
        (
            f"pool {pool['name']}",
            pool["location"],
            f"{pool['gpus']} x {pool['gpu']}" + (f" ({pool['nodes']:g} of a node)" if pool["nodes"] else ""),
            f"{pool['monthly_usd']:,.0f}",
            f"{doc['series']['pool'][-1]:,.0f}",
            "-",
            "-",
        )
    )
    notes = [
        f"utilization {doc['utilization']:.0%}: the cloud bills only the busy hours; pool: {pool['basis']}",
        f"break-even: the first month the pool's cumulative cost is at or below the cloud's; "
        f"utilization: the share of hours at which the two cost the same over {doc['months']} months",
        doc["commitments"],
    ]
    title = f"TCO of {doc['workload']} over {doc['months']} months (cumulative USD)"
    if fmt == "markdown":
        return "\n".join([f"### {title}", "", *table.markdown(head, rows), ""] + [f"- {n}" for n in notes])
    return "\n".join([title, *table.text(head, rows), ""] + notes)


def chart(doc: dict, path: str) -> str:
    """Draw the cumulative costs and break-even points as a PNG at `path` (needs the [chart] extra).

    Raises:
        SizingError: matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SizingError("--format png needs matplotlib. To fix: pip install 'gpusizer[chart]'") from None
    months = doc["series"]["month"]
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    for c in doc["cloud"]:
        p = c["purchase"]
        ax.plot(months, doc["series"][p], label=f"cloud {p}: {c['instance_type']} ({c['provider']} {c['region']})")
        be = doc["break_even"][p]["month"]
        if be is not None:
            ax.scatter([be], [doc["series"]["pool"][be]], zorder=3)
            ax.annotate(
                f"break-even vs {p}: month {be}",
                (be, doc["series"]["pool"][be]),
                textcoords="offset points",
                xytext=(8, -14),
                fontsize=9,
            )
    pool = doc["pool"]
    ax.plot(
        months,
        doc["series"]["pool"],
        color="black",
        linewidth=2.2,
        label=f"pool {pool['name']}: {pool['gpus']} x {pool['gpu']}",
    )
    ax.set_title(f"{doc['workload']}: cumulative cost, cloud vs on-prem (utilization {doc['utilization']:.0%})")
    ax.set_xlabel("month")
    ax.set_ylabel("cumulative cost (USD)")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"${v:,.0f}"))
    ax.set_xlim(0, months[-1])
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=9)
    fig.text(0.01, 0.01, doc["commitments"], fontsize=7, color="gray")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, format="png")  # exactly `path`: no extension added, none guessed
    plt.close(fig)
    return path
