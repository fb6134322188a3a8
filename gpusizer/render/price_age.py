"""How old the prices behind a decision are: said once, on the chosen offer's own date, and quiet when acknowledged.

The catalog keeps one provenance line per provider (`catalog.age_notes`, in
the plan JSON's `notes`). Table and markdown reports replace those with one
line about the price that matters, the chosen offer's (or, when nothing was
chosen, the oldest price judged), loud past the stale bound. A user who
cannot refresh (no credentials) acknowledges the snapshot with `--quiet-age`
or `GPUSIZER_QUIET_AGE=1`, and the line goes; other notes (cache problems,
a `--catalog` path) stay.
"""

from __future__ import annotations

import datetime
import os
import re

from gpusizer import catalog
from gpusizer.base import providers
from gpusizer.decide.decision import Decision

QUIET_ENV = "GPUSIZER_QUIET_AGE"
"""Set to 1/true/yes to acknowledge old prices (the same as --quiet-age)."""

_AGE_NOTE = re.compile(r"^(WARNING: )?\S+ .* as of \S+\.\.\S+ \(\d+ days old at most\)")


def acknowledged(flag: bool = False) -> bool:
    """Whether the user has acknowledged the snapshot's age: `--quiet-age` or GPUSIZER_QUIET_AGE."""
    return flag or os.environ.get(QUIET_ENV, "").strip().lower() in ("1", "true", "yes")


def is_age_note(line: str) -> bool:
    """Whether `line` is one of catalog.age_notes' per-provider lines.

    >>> from gpusizer.catalog import offer
    >>> o = offer.Offer("aws", "us-east-1", None, "g6.xlarge", "L4", 1, 22.35, 4, 16, 0.8, None, "test", "2025-06-28")
    >>> [is_age_note(n) for n in catalog.age_notes([o], datetime.date(2026, 11, 23))]
    [True]
    >>> is_age_note("offers from my.csv")
    False
    """
    return bool(_AGE_NOTE.match(line))


def line(d: Decision, today: datetime.date | None = None) -> str:
    """One line: the chosen offer's price date and age, a WARNING past the stale bound."""
    today = today or datetime.date.today()
    bound = catalog.stale_bound()
    if d.chosen:
        dated = [] if d.chosen.offer.provider in providers.OWNED else [d.chosen.offer.price_as_of(d.chosen.purchase)]
    else:
        dated = [o.oldest_as_of for o in d.judged.offers() if o.provider not in providers.OWNED]
    if not dated:
        return "prices: on-prem pools only, priced from their declared costs"
    oldest = min(dated)
    age = (today - datetime.date.fromisoformat(oldest[:10])).days
    what = "the chosen offer's price is" if d.chosen else "the prices judged are"
    text = f"{what} as of {oldest} ({age} days old)"
    if age <= bound:
        return text
    return (
        f"WARNING: {text}, older than {bound} days: run `gpusizer catalog refresh`, "
        f"or acknowledge with --quiet-age or {QUIET_ENV}=1"
    )


def notes(d: Decision, quiet: bool = False) -> list[str]:
    """The decision's notes for a human report: the per-provider age lines replaced by `line` (none when quiet)."""
    kept = [n for n in d.notes if not is_age_note(n)]
    return kept if acknowledged(quiet) else kept + [line(d)]
