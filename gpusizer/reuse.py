"""Decisions reused within a scope: each distinct (spec, pools, catalog) is planned once.

`gpusizer preview` runs the Pulumi program twice in one process (as a first
preview, then as an update), and the policy pack re-plans every GpuWorkload's
recorded spec to verify an exemption: three plans of each spec. Inside
:func:`scope`, :func:`plan` returns the Decision made the first time for the
same validated spec, the same pools and the same Catalog object; outside a
scope it plans every time. Either way the default catalog is
gpusizer.load_catalog(), loaded once while its files are unchanged, rather
than read again for each plan.

Algorithm: the key is (the spec's JSON, each pool's JSON, both with sorted
keys, and the id of the catalog); the memo holds the catalog too, so its id
cannot be reused while the scope lives. Decisions are frozen, and planning
is a function of these inputs plus the files and environment it reads (a
calibration file, GPUSIZER_* variables): a scope promises those do not
change inside it, as they do not during one preview.

>>> with scope():
...     first = plan({"name": "chat", "model": {"name": "llama-3.1-8b"}})
...     first is plan({"name": "chat", "model": {"name": "llama-3.1-8b"}})
True
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator

_MEMO: dict[tuple, tuple] | None = None


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """Reuse decisions until the block ends (nested scopes share the outermost one's memo)."""
    global _MEMO
    if _MEMO is not None:
        yield
        return
    _MEMO = {}
    try:
        yield
    finally:
        _MEMO = None


def _json(model) -> str:
    """A pydantic model's JSON with sorted keys: a pool's tolerations read back from stack config
    may list their keys in another order, and mean the same."""
    return json.dumps(model.model_dump(mode="json"), sort_keys=True)


def plan(spec, catalog=None, pools: Iterable = ()):
    """gpusizer.plan(spec, catalog, pools), the catalog defaulting to gpusizer.load_catalog(); memoized in a scope.

    Raises:
        SpecError, SizingError: as gpusizer.plan (a failure is not memoized).
    """
    import gpusizer

    catalog = catalog if catalog is not None else gpusizer.load_catalog()
    pools = tuple(pools)
    if _MEMO is None:
        return gpusizer.plan(spec, catalog=catalog, pools=pools)
    if not isinstance(spec, gpusizer.WorkloadSpec):
        spec = gpusizer.load_spec(spec)
    key = (_json(spec), tuple(_json(p) for p in pools), id(catalog))
    found = _MEMO.get(key)
    if found is None:
        found = _MEMO[key] = (gpusizer.plan(spec, catalog=catalog, pools=pools), catalog)
    return found[0]
