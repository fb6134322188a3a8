"""Golden decisions: a reviewed JSON summary of the plan of every example spec in stacks/examples/.

Regenerate them (after a deliberate change to sizing, ranking or the catalog) with the one command

    .venv/bin/python -m tests.golden_decisions

then review `git diff tests/golden/` as you would any other change: each file
shows the choice, what sized it, the top three adequate offers and the three
rejected offers nearest below the choice in $/hour, with the reason each lost. tests/test_golden_decisions.py
fails, naming this command, when a plan no longer matches its file.
"""

from __future__ import annotations

import json
import pathlib

import gpusizer
from gpusizer.base import limits
from gpusizer.catalog import Catalog
from tests.conftest import EXAMPLE_SPECS, REPO

GOLDEN = REPO / "tests" / "golden"
COMMAND = ".venv/bin/python -m tests.golden_decisions"
TOP = 3
_OFFER_KEYS = (
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
    "usd_per_million_tokens",
)


def examples() -> list[pathlib.Path]:
    return list(EXAMPLE_SPECS)


def golden_path(example: pathlib.Path) -> pathlib.Path:
    return GOLDEN / f"{example.stem}.json"


def _brief(candidate: dict) -> dict:
    return {k: candidate[k] for k in _OFFER_KEYS}


def summary(decision: gpusizer.Decision) -> dict:
    """What a reviewer checks in a decision, with nothing that changes by date or machine.

    The top adequate offers and the cheapest rejected ones are distinct by
    (provider, instance type, purchase), so a type sold in twenty zones counts once.
    """
    d = gpusizer.document(decision)
    top, seen = [], set()
    for c in d["candidates"]:
        key = (c["provider"], c["instance_type"], c["purchase"])
        if c["feasible"] and key not in seen and len(top) < TOP:
            seen.add(key)
            top.append(_brief(c))
    # The rejected offers a reviewer asks about: the dearest ones still cheaper than the choice
    # (all of them, cheapest first, when nothing is feasible), one per type and reason.
    ceiling = d["choice"]["hourly_usd"] if d["choice"] else float("inf")
    lost = [
        c
        for c in d["candidates"]
        if not c["feasible"]
        and c["reason_code"] not in limits.PLACEMENT
        and c["hourly_usd"] is not None
        and c["hourly_usd"] < ceiling
    ]
    if d["choice"]:
        lost.reverse()  # rejected candidates come cheapest first: nearest below the choice first
    rejected, seen = [], set()
    for c in lost:
        key = (c["provider"], c["instance_type"], c["purchase"], c["reason_code"])
        if key not in seen and len(rejected) < TOP:
            seen.add(key)
            rejected.append({**_brief(c), "reason_code": c["reason_code"], "reason": c["reasons"][0]})
    return {
        "workload": d["workload"],
        "objective": d["objective"],
        "requirements_gib": d["requirements"]["memory_gib"]["total"],
        "choice": None if d["choice"] is None else _brief(d["choice"]),
        "sized_by": d["sized_by"],
        "top": top,
        "nearest_rejected": rejected,
    }


def plan(example: pathlib.Path) -> dict:
    """The summary of `example` planned against the packaged snapshot (never a local refresh cache)."""
    return summary(gpusizer.plan(example, catalog=Catalog.load(use_cache=False)))


def render(data: dict) -> str:
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


def main() -> int:
    GOLDEN.mkdir(exist_ok=True)
    for example in examples():
        golden_path(example).write_text(render(plan(example)), encoding="utf-8")
        print(f"wrote {golden_path(example).relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
