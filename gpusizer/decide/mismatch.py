"""Contradictions between a spec's placement and the catalog, named before anything is judged.

A region no allowed provider sells in (`providers: [aws]` with `regions: [us-central1]`), or GPU models
not sold where the spec allows, would otherwise leave every offer rejected "by placement" with nothing
a person can act on. `check` names each one: an error (exit 2) when the regions contradict the
providers, else a plan note (shown with the choice, or with "none feasible").
"""

from __future__ import annotations

from collections.abc import Sequence

from gpusizer import spec
from gpusizer.base import errors, providers
from gpusizer.catalog import Catalog
from gpusizer.catalog.offer import Offer

_SHOWN = 6  # places listed per hint


def check(placement: spec.Placement, catalog: Catalog) -> tuple[str, ...]:
    """Raise SpecError when every region named is sold in only by disallowed providers (a spec that contradicts
    itself); return a note for each such region when others run, and for each of placement.gpus not sold where
    the spec allows (what stock is sold where is the catalog's, so a plan with none left exits 3 and explains).

    Args:
        placement: the spec's validated Placement (regions already in the catalog's spelling).
        catalog: the gpusizer.catalog.Catalog planned against (pools included).
    """
    if not placement.regions and not placement.gpus:
        return ()
    allowed = set(placement.providers or providers.NAMES)
    offers, sellers, zones = catalog.offers, catalog.sellers, catalog.zones
    problems = []
    for region in placement.regions or ():
        by = sellers.get(region.lower())
        if by and not by & allowed:
            clouds = " and ".join(sorted(p.upper() for p in by if not providers.get(p).owned))
            what = (
                f"{'an' if clouds[0] in 'AEIOU' else 'a'} {clouds} {'zone' if region.lower() in zones else 'region'}"
                if clouds
                else "an on-prem pool location"
            )
            problems.append(
                f"{region} is {what}, but placement.providers is [{', '.join(sorted(allowed))}]. "
                f"To fix: add {' or '.join(sorted(by))} to placement.providers, or name a region of "
                f"{', '.join(sorted(allowed))} ({_places(offers, allowed, None)})"
            )
    notes: tuple[str, ...] = ()
    # On-prem allowed: pools run wherever placement.regions say, and a spec a stack plans with its pools may be
    # planned here without them (a region may name a pool's location): no contradiction to raise.
    pools = any(providers.get(p).owned for p in allowed)
    if problems:
        usable = [r for r in placement.regions or () if sellers.get(r.lower(), allowed) & allowed]
        if not usable and not pools:  # nothing could run (pools run wherever regions say): a contradiction
            raise errors.SpecError("placement.regions: " + "\n  ".join(problems), "placement.regions")
        notes = tuple(f"placement.regions: {p}" for p in problems)  # the other regions still run
    if not placement.gpus:
        return notes
    wanted = {r.lower() for r in placement.regions or ()}
    sold: set[str] = set()
    for provider in allowed:
        places = catalog.stock.get(provider, {})
        everywhere = not wanted or providers.get(provider).owned  # pools run wherever regions say
        for place, gpus in places.items():
            if everywhere or place in wanted:
                sold |= gpus
    missing = [g for g in placement.gpus if g not in sold]
    if not missing:
        return notes
    where = "placement.regions" if placement.regions else "placement.providers"
    lines = [
        f"{g} is not sold in {where} [{', '.join(placement.regions or sorted(allowed))}]; it is sold in "
        f"{_places(offers, allowed, g) or 'no region of ' + ', '.join(sorted(allowed))}"
        for g in missing
    ]
    if len(missing) == len(placement.gpus):  # nothing can run: say what is sold there (exit 3, the plan explains)
        lines[-1] += (
            f". GPUs sold there: {', '.join(sorted(sold)[:12]) or 'none'}. To fix: add a region where one "
            "of placement.gpus is sold, or list a GPU sold there"
        )
    return notes + tuple(f"placement.gpus: {line}" for line in lines)


def _places(offers: Sequence[Offer], allowed: set[str], gpu: str | None) -> str:
    """Up to _SHOWN regions of the allowed providers (selling `gpu`, when given), with a count of the rest."""
    regions = sorted({o.region for o in offers if o.provider in allowed and (gpu is None or o.gpu == gpu)})
    more = f", +{len(regions) - _SHOWN} more" if len(regions) > _SHOWN else ""
    return ", ".join(regions[:_SHOWN]) + more
