"""Decisions reused within a scope: each distinct (spec, pools, catalog) is planned once.

`gpusizer preview` runs the Pulumi program twice in one process (as a first
preview, then as an update), and the policy pack re-plans every GpuWorkload's
recorded spec to verify an exemption: three plans of each spec. Inside
a scope (gpusizer.base.memo.scope), :func:`plan` returns the Decision made the first time for the
same validated spec, the same pools and the same Catalog object; outside a
scope it plans every time. Either way the default catalog is
gpusizer.load_catalog(), loaded once while its files are unchanged, rather
than read again for each plan.

Models read by Hugging Face id are looked up once per scope too
(gpusizer.base.memo.remembered, used by gpusizer.facts.hub): a preview validates a spec in the
program, in GpuWorkload and again in the policy pack, and each lookup may
reach the Hub (or, unreachable, wait out its retries).

Algorithm: the key is (the spec's JSON, each pool's JSON, both with sorted
keys, the id of the catalog, and the calibration the spec uses: its file
and the sha256 of its bytes, gpusizer.estimate.calibration.fingerprint); the
memo holds the catalog too, so its id cannot be reused while the scope
lives. A calibration file rewritten inside a scope is another key, so a
program cannot plan with one file and leave the policy pack another.
Decisions are frozen; the other GPUSIZER_* variables a plan reads are
promised not to change inside a scope, as they do not during one preview.

>>> from gpusizer.base.memo import scope
>>> with scope():
...     first = plan({"name": "chat", "model": {"name": "llama-3.1-8b"}})
...     first is plan({"name": "chat", "model": {"name": "llama-3.1-8b"}})
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence

from gpusizer.base import memo
from gpusizer.estimate import calibration


def _json(model) -> str:
    """A pydantic model's JSON with sorted keys: a pool's tolerations read back from stack config
    may list their keys in another order, and mean the same."""
    return json.dumps(model.model_dump(mode="json"), sort_keys=True)


def plan(spec, catalog=None, pools: Iterable = ()):
    """gpusizer.plan(spec, catalog, pools), the catalog defaulting to gpusizer.load_catalog(); memoized in a scope.

    Raises:
        SpecError, SizingError: as gpusizer.plan (a failure is not memoized).
    """
    from gpusizer import planner
    from gpusizer import spec as spec_mod
    from gpusizer.catalog import load_catalog

    catalog = catalog if catalog is not None else load_catalog()
    pools = tuple(pools)
    if not memo.active():
        return planner.plan(spec, catalog=catalog, pools=pools)
    if not isinstance(spec, spec_mod.WorkloadSpec):
        spec = planner.load_spec(spec)
    cal = calibration.fingerprint(spec.sizing.calibration)  # the file's bytes, not only its name
    key = ("plan", _json(spec), tuple(_json(p) for p in pools), id(catalog), cal)
    return memo.remembered(key, lambda: (planner.plan(spec, catalog=catalog, pools=pools), catalog))[
        0
    ]  # failures: not kept


def in_order(specs: Sequence, pools: Iterable = (), catalog=None) -> Iterator[tuple]:
    """Plan a stack's workloads in turn, as :func:`plan` does each: yields (decision, the pools it was
    planned against). A workload placed on an owned pool (gpusizer.base.providers.OWNED) takes its GPUs
    from it, so later workloads see what is left and, once the pool is full, burst to the cloud.
    The caller stops at an infeasible decision (chosen is None) or goes on with the pools unchanged.

    __main__.py plans its stack with it; `gpusizer preview` does too, before it forks its two phases
    (policies/offline.py), so both inherit the decisions.
    """
    from gpusizer.base import providers

    pools = list(pools)
    for spec in specs:
        decision = plan(spec, catalog, pools)
        yield decision, pools
        c = decision.chosen
        if c is not None and c.offer.provider in providers.OWNED:
            pools = [p.allocate(c.gpu_count * c.replicas) if p.name == c.offer.instance_type else p for p in pools]
