"""Offers: the embedded dated snapshot, a refreshed cache when fresher, and on-prem pools."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import os
import pathlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from gpusizer.base import providers
from gpusizer.catalog.offer import Offer

if TYPE_CHECKING:
    from gpusizer.catalog.index import OfferIndex

# Prices older than this many days are called out loudly in every report.
# Override with GPUSIZER_MAX_PRICE_AGE_DAYS or Catalog.load(max_age_days=...).
STALE_AFTER_DAYS = 90
MAX_AGE_DAYS = 36_500  # a century; a larger bound is a typo


CLOCK_SKEW_HOURS = 5 / 60
"""A refresh time this far ahead of this machine's clock is flagged (gpusizer.catalog.cache.CLOCK_SKEW)."""


@dataclasses.dataclass(frozen=True)
class Catalog:
    """The offers a decision may choose from, with where and when they came from.

    Attributes:
        offers: cloud offers (and on-prem pool offers once `with_pools` is applied).
        notes: provenance and warnings shown with every decision.
        quotas: vCPU quotas by (provider, region, purchase, quota class) from a refresh.
    """

    offers: tuple[Offer, ...]
    notes: tuple[str, ...] = ()
    quotas: Mapping[tuple[str, str, str, str], float] = dataclasses.field(default_factory=dict)

    @classmethod
    def load(
        cls,
        path=None,
        today: datetime.date | None = None,
        *,
        use_cache: bool = True,
        max_age_days: int | None = None,
    ) -> Catalog:
        """The freshest offers per provider: the refreshed cache or the packaged snapshot.

        Args:
            path: a directory of CSVs or one CSV to use instead (no cache, no snapshot).
            today: the date ages are measured against (default: today).
            use_cache: consult the `gpusizer catalog refresh` cache.
            max_age_days: stale bound (default GPUSIZER_MAX_PRICE_AGE_DAYS or 90).
        """
        from gpusizer.catalog import paths, store

        today = today or datetime.date.today()
        bound = max_age_days if max_age_days is not None else stale_bound()
        if path is not None:
            offers = tuple(store.load_offers(path))
            return cls(offers, (f"offers from {path}",) + age_notes(offers, today, bound))
        snapshot = tuple(store.load_offers())
        use_cache = use_cache and paths.cache_enabled()
        cached, problems = ({}, []) if not use_cache or paths.cache_missing() else _read_cache()
        offers: list[Offer] = []
        notes: list[str] = [f"WARNING: {p}" for p in problems]
        quotas: dict = {}
        for provider in sorted({o.provider for o in snapshot} | set(cached)):
            snap = [o for o in snapshot if o.provider == provider]
            entry = cached.get(provider)
            newest_snap = max((o.as_of for o in snap), default="")
            if entry and entry.fetched_at.date().isoformat() >= newest_snap:
                offers += entry.offers
                quotas.update(entry.quotas)
                hours = (datetime.datetime.now(datetime.UTC) - entry.fetched_at).total_seconds() / 3600
                age = (
                    f"{hours:.0f} h old"
                    if hours > -CLOCK_SKEW_HOURS
                    else (
                        f"WARNING: {-hours:.1f} h ahead of this machine's clock: a host with a clock ahead refreshed it; "
                        "prices kept. To fix: sync the clocks (NTP)"
                    )
                )
                notes.append(
                    f"{provider}: refreshed cache fetched {entry.fetched_at:%Y-%m-%d %H:%MZ} ({age})"
                    + (f"; not refreshed then: {'; '.join(entry.errors)}" if entry.errors else "")
                )
                notes += age_notes(entry.offers, today, bound)
            else:
                offers += snap
                notes += age_notes(snap, today, bound, label="embedded snapshot")
        return cls(tuple(offers), tuple(notes), quotas)

    @functools.cached_property
    def places(self) -> frozenset[str]:
        """Every region and zone the offers name (what placement.regions may name), computed once."""
        return frozenset({o.region for o in self.offers} | {o.zone for o in self.offers if o.zone})

    @functools.cached_property
    def sellers(self) -> dict[str, frozenset[str]]:
        """Every region and zone (lower-case) -> the providers whose offers name it, computed once."""
        found: dict[str, set[str]] = {}
        for o in self.offers:
            for place in (o.region, o.zone):
                if place:
                    found.setdefault(place.lower(), set()).add(o.provider)
        return {k: frozenset(v) for k, v in found.items()}

    @functools.cached_property
    def stock(self) -> dict[str, dict[str, frozenset[str]]]:
        """provider -> region or zone (lower-case) -> the GPU models offered there, computed once."""
        found: dict[str, dict[str, set[str]]] = {}
        for o in self.offers:
            places = found.setdefault(o.provider, {})
            for place in (o.region, o.zone):
                if place:
                    places.setdefault(place.lower(), set()).add(o.gpu)
        return {p: {k: frozenset(v) for k, v in places.items()} for p, places in found.items()}

    @functools.cached_property
    def zones(self) -> frozenset[str]:
        """Every zone the offers name, lower-case, computed once."""
        return frozenset(o.zone.lower() for o in self.offers if o.zone)

    @functools.cached_property
    def provider_names(self) -> frozenset[str]:
        """The providers the offers come from, computed once."""
        return frozenset(o.provider for o in self.offers)

    @functools.cached_property
    def index(self) -> OfferIndex:
        """The offers grouped into classes and sorted by price (gpusizer.catalog.index), built on first use."""
        from gpusizer.catalog.index import OfferIndex

        return OfferIndex.build(self.offers)

    def with_pools(self, pools: Iterable) -> Catalog:
        """This catalog plus the offers of on-prem pools (gpusizer.catalog.onprem.Pool).

        Pools are immutable, so the result (its offers and index) is kept per
        pool set, by identity: planning many workloads against the same pools
        converts and indexes them once. The last few pool sets are kept.
        """
        pools = tuple(pools)
        if not pools:
            return self
        key = tuple(map(id, pools))
        memo = self.__dict__.setdefault("_with_pools", {})
        found = memo.get(key)
        if found is not None:  # the memo holds those very pools, so no other object has their ids
            return found[1]
        from gpusizer.catalog.index import OfferIndex

        extra = tuple(o for p in pools for o in p.to_offers())
        combined = dataclasses.replace(self, offers=self.offers + extra)
        combined.__dict__["index"] = self.index + OfferIndex.build(extra, start=len(self.offers))
        if len(memo) >= 4:
            memo.clear()
        memo[key] = (pools, combined)  # the pools are held, so their ids stay theirs
        return combined


def _read_cache() -> tuple[dict, list[str]]:
    """gpusizer.catalog.cache.read(): the cache module is imported only where a cache directory exists."""
    from gpusizer.catalog import cache

    return cache.read()


_LOADED: dict[tuple, Catalog] = {}


def load_catalog(path: str | os.PathLike | None = None) -> Catalog:
    """The catalog `gpusizer.plan` and `gpusizer.estimate` use, loaded once and reused.

    Pass the result as `catalog=` to plan many workloads against one catalog
    without re-reading and re-parsing its CSVs for every decision.

    Args:
        path: None for the freshest of the refresh cache and the packaged
            snapshot (Catalog.load()); a directory of CSVs or one CSV otherwise.

    Returns:
        The same Catalog object while the source files (names and mtimes),
        today's date and GPUSIZER_MAX_PRICE_AGE_DAYS are unchanged; a fresh one otherwise.

    Raises:
        CatalogError: a catalog file is missing or malformed (names file and line).

    >>> import gpusizer
    >>> catalog = gpusizer.load_catalog()
    >>> catalog is gpusizer.load_catalog()
    True
    """
    from gpusizer.catalog import paths

    where = pathlib.Path(paths.cache_dir() if path is None else path)
    try:
        stamp = tuple(sorted((f.name, f.stat().st_mtime_ns) for f in (where.iterdir() if where.is_dir() else [where])))
    except OSError:
        stamp = ()
    key = (
        None if path is None else str(path),
        str(where),
        stamp,
        datetime.date.today(),
        os.environ.get("GPUSIZER_MAX_PRICE_AGE_DAYS"),
        paths.cache_enabled(),
    )
    found = _LOADED.get(key)
    if found is None:
        if len(_LOADED) >= 8:
            _LOADED.clear()
        found = _LOADED[key] = Catalog.load(path)
    return found


def stale_bound() -> int:
    """Days after which a price is called stale.

    GPUSIZER_MAX_PRICE_AGE_DAYS as a whole number of days in [0, MAX_AGE_DAYS]; STALE_AFTER_DAYS when unset.

    Raises:
        SpecError: naming the variable, the value (quoted, at most 80 characters) and the fix.
    """
    from gpusizer.base import errors, inputs

    raw = os.environ.get("GPUSIZER_MAX_PRICE_AGE_DAYS", "").strip()
    if not raw:
        return STALE_AFTER_DAYS
    if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_AGE_DAYS:
        raise errors.SpecError(
            f"GPUSIZER_MAX_PRICE_AGE_DAYS: {inputs.quote(raw)} is not a whole number of days from 0 to {MAX_AGE_DAYS}. "
            f"To fix: set it to e.g. {STALE_AFTER_DAYS}, or unset it",
            "GPUSIZER_MAX_PRICE_AGE_DAYS",
        )
    return int(raw)


def age_notes(
    offers: Iterable[Offer], today: datetime.date, bound: int = STALE_AFTER_DAYS, label: str = "prices"
) -> tuple[str, ...]:
    """One line per provider: the oldest and newest as-of date, with a loud warning past `bound` days."""
    dates: dict[str, set[str]] = {}
    for o in offers:
        if not providers.get(o.provider).owned:  # owned: configured, not a dated price list
            dates.setdefault(o.provider, set()).update(o.price_as_of(p) for p in ("on-demand", "spot"))
    notes = []
    for provider, (oldest, newest) in sorted((p, (min(d), max(d))) for p, d in dates.items()):
        age = (today - datetime.date.fromisoformat(oldest[:10])).days
        line = f"{provider} {label} as of {oldest}..{newest} ({age} days old at most)"
        if age > bound:
            line = f"WARNING: {line}, older than {bound} days: run `gpusizer catalog refresh`"
        notes.append(line)
    return tuple(notes)
