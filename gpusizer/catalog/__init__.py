"""Offers: the embedded dated snapshot, on-prem pools, and (optionally) a refreshed cache."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Mapping

from gpusizer.catalog.offer import Offer

# Prices older than this are called out loudly in every report (days).
STALE_AFTER_DAYS = 90


@dataclasses.dataclass(frozen=True)
class Catalog:
    """The offers a decision may choose from, with where and when they came from.

    Attributes:
        offers: cloud offers (and on-prem pool offers once `with_pools` is applied).
        notes: provenance and warnings shown with every decision.
        quotas: vCPU quotas by (provider, region, purchase, family or "*").
    """

    offers: tuple[Offer, ...]
    notes: tuple[str, ...] = ()
    quotas: Mapping[tuple[str, str, str, str], float] = dataclasses.field(default_factory=dict)

    @classmethod
    def load(cls, path=None, today: datetime.date | None = None) -> Catalog:
        """The packaged snapshot, or the offers in `path` (a directory of CSVs or one CSV)."""
        from gpusizer.catalog import store

        offers = tuple(store.load_offers(path))
        return cls(offers, age_notes(offers, today or datetime.date.today()))

    def with_pools(self, pools: Iterable) -> Catalog:
        """This catalog plus the offers of on-prem pools (gpusizer.catalog.onprem.Pool)."""
        extra = tuple(o for p in pools for o in p.to_offers())
        return dataclasses.replace(self, offers=self.offers + extra)


def age_notes(offers: Iterable[Offer], today: datetime.date) -> tuple[str, ...]:
    """One line per provider: the oldest and newest as-of date, with a loud warning when stale."""
    spans: dict[str, list[str]] = {}
    for o in offers:
        if o.provider == "onprem":
            continue
        span = spans.setdefault(o.provider, [o.as_of, o.as_of])
        span[0] = min(span[0], o.as_of)
        span[1] = max(span[1], o.as_of)
    notes = []
    for provider, (oldest, newest) in sorted(spans.items()):
        age = (today - datetime.date.fromisoformat(oldest)).days
        line = f"{provider} prices as of {oldest}..{newest} ({age} days old at most)"
        if age > STALE_AFTER_DAYS:
            line = f"WARNING: {line}, older than {STALE_AFTER_DAYS} days: run `gpusizer catalog refresh`"
        notes.append(line)
    return tuple(notes)
