"""Write gpusizer/data/catalog/{aws,gcp}.csv and SOURCES.md from ../shared/data/catalog-sources."""

from __future__ import annotations

import argparse
import pathlib

from gpusizer.catalog import store
from gpusizer.catalog.build import aws, gcp


def sort_key(o):
    return (o.provider, o.region, o.zone or "", o.instance_type)


def build(sources: pathlib.Path, out: pathlib.Path) -> dict[str, list]:
    """Build every provider's offers and write them to `out`; returns offers per provider."""
    out.mkdir(parents=True, exist_ok=True)
    result = {}
    summary = ["# Embedded catalog snapshot", "", "Built by `python -m gpusizer.catalog.build` from ../shared/data/catalog-sources.", ""]
    for name, module in (("aws", aws), ("gcp", gcp)):
        offers, notes = module.build(sources)
        offers.sort(key=sort_key)
        (out / f"{name}.csv").write_text(store.format_offers(offers))
        result[name] = offers
        dates = sorted({o.as_of for o in offers})
        summary += [
            f"## {name}",
            f"- offers: {len(offers)} ({sum(o.on_demand_usd is not None for o in offers)} on-demand, "
            f"{sum(o.spot_usd is not None for o in offers)} spot)",
            f"- instance types: {len({o.instance_type for o in offers})}",
            f"- regions: {len({o.region for o in offers})}; zones: {len({o.zone for o in offers if o.zone})}",
            f"- GPUs: {', '.join(sorted({o.gpu for o in offers}))}",
            f"- as-of dates: {', '.join(dates)}",
            f"- sources: {module.__doc__.splitlines()[0]}",
            *(f"- left out: {n}" for n in notes),
            "",
        ]
    (out / "SOURCES.md").write_text("\n".join(summary))
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sources", type=pathlib.Path, default=pathlib.Path("../shared/data/catalog-sources"))
    ap.add_argument("--out", type=pathlib.Path, default=pathlib.Path("gpusizer/data/catalog"))
    args = ap.parse_args()
    for name, offers in build(args.sources, args.out).items():
        print(f"{name}: {len(offers)} offers")


if __name__ == "__main__":
    main()
