"""`gpusizer catalog list` rendered: the listing rows (gpusizer.catalog.listing) as JSON or a table."""

from __future__ import annotations

import json

from gpusizer.base import providers
from gpusizer.render import table


def render(listed: list[dict], fmt: str) -> str:
    """JSON (the rows), or a table whose `opt-in` column marks Local Zone / opt-in offers with "yes"."""
    if fmt == "json":
        return json.dumps(listed, indent=2, allow_nan=False)
    cols = (
        "provider",
        "where",
        "instance type",
        "GPUs",
        "GiB/GPU",
        "vCPUs",
        "RAM GiB",
        "net Gb/s",
        "opt-in",
        "purchase",
        "$/h",
        "as of",
    )
    body = []
    for r in listed:
        gpus = (
            f"{r['gpu_count']} x {r['gpu']}"
            if r["gpu_fraction"] == 1
            else f"1/{round(1 / r['gpu_fraction'])} x {r['gpu']}"
        )
        where = f"{r['region']}/{r['zone']}" if r["zone"] else r["region"]
        body.append(
            (
                r["provider"],
                where,
                r["instance_type"],
                gpus,
                f"{r['gpu_memory_gib']:.1f}",
                str(r["vcpus"]),
                f"{r['ram_gib']:g}",
                f"{r['network_gbps']:g}" if r["network_gbps"] else "-",
                "yes" if r["opt_in"] else "",
                r["purchase"],
                f"{r['hourly_usd']:.4f}",
                r["as_of"],
            )
        )
    lines = table.text(cols, body)
    pools = sorted(
        {(r["instance_type"], r["note"]) for r in listed if r["provider"] in providers.OWNED and r.get("note")}
    )
    lines += [f"pool {name}: {note}" for name, note in pools]
    lines.append(f"{len(listed)} offers")
    return "\n".join(lines)
