"""`gpusizer catalog refresh`: fetch live prices, shapes and quotas; keep the last good data on failure.

Cloud SDKs are imported here lazily, never on the plan path.
"""

from __future__ import annotations

import datetime

from gpusizer.base import providers, redact
from gpusizer.catalog import Catalog, cache


def refresh(
    provider: str, regions: list[str] | None = None, now: datetime.datetime | None = None, session=None
) -> list[str]:
    """Refresh one provider into the cache; returns one line per thing that could not be refreshed.

    The provider's refresher module (gpusizer.base.providers) does the fetching and
    imports its SDK itself, reporting a missing SDK as one line.

    The previous data (cache if fresher, else the snapshot) is the fallback for
    anything that fails, so the cache is always complete and never half-written.

    Raises:
        OSError: the cache could not be written (full disk, read-only, permissions, a lock
            held too long); the previous cache is intact.
    """
    now = now or datetime.datetime.now(datetime.UTC)
    refresher = providers.get(provider).module("refresher")
    # The lock is held from reading the previous offers to the switch: a concurrent refresh (another
    # region, another process) waits, then builds on this one's result instead of overwriting it.
    with cache.transaction() as tx:
        previous = [o for o in Catalog.load().offers if o.provider == provider]
        regions = regions or sorted({o.region for o in previous})
        offers, quotas, errors = refresher.refresh(regions, previous, now, session=session)
        errors = [redact.redact(e) for e in errors]
        if not quotas and not any(o.as_of == now.date().isoformat() for o in offers):
            return errors  # nothing was refreshed: leave the cache (and the snapshot) as they are
        tx.write(cache.CachedProvider(provider, tuple(offers), now, quotas, tuple(errors)))
    return errors
