"""Build the embedded catalog snapshot from dated public sources, offline and reproducibly.

    python -m gpusizer.catalog.builder --sources data/catalog-sources --out gpusizer/data/catalog

Each provider module (aws, gcp) exposes ``build(sources) -> Built``; the
shared pricing rules live here so both providers apply them the same way.
"""

from __future__ import annotations

import csv
import dataclasses
import pathlib

from gpusizer.catalog.offer import Offer


@dataclasses.dataclass
class Built:
    """One provider's offers and the account of how they were made.

    Attributes:
        offers: the offers, in any order (the writer sorts them).
        sources: one line per input file: name, upstream, date.
        rules: one line per rule applied, for SOURCES.md.
        notes: what was left out or adjusted, and why.
    """

    offers: list[Offer]
    sources: list[str]
    rules: list[str]
    notes: list[str]


def read_csv(path: pathlib.Path) -> list[dict[str, str]]:
    """Rows of a CSV file, skipping "#" comment lines (provenance headers of the hand transcriptions)."""
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def price(text: str | None) -> float | None:
    """A $/hour cell: None when empty, zero or negative (a $0 cloud GPU is a data error, never an offer)."""
    if text is None or text.strip() == "":
        return None
    value = float(text)
    return value if value > 0 else None


def spot_offer(on_demand: float | None, spot: float | None) -> float | None:
    """The spot price worth offering: None when absent, or when it is not below on-demand.

    Spot at or above on-demand in a zone means no spot capacity there (AWS
    shows the on-demand price) or an inconsistent row (GCP): either way there is
    no spot saving to offer.
    """
    if spot is None or spot <= 0:
        return None
    if on_demand is not None and spot >= on_demand:
        return None
    return spot
