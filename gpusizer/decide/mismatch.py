"""Contradictions between a spec's placement and the catalog, named before anything is judged.

A region no allowed provider sells in (`providers: [aws]` with `regions: [us-central1]`), or GPU models
not sold where the spec allows, would otherwise leave every offer rejected "by placement" with nothing
a person can act on. `check` names each one: an error (exit 2) when it leaves nothing to judge or a
name can never match, a note when other parts of the placement still run.
"""

from __future__ import annotations

from gpusizer.base import errors, providers

_SHOWN = 6  # places listed per hint


def check(placement, offers) -> tuple[str, ...]:
    """Raise SpecError for a region that only disallowed providers sell in, or for placement.gpus of which
    none is sold where the spec allows; return notes for listed GPUs some of which are not sold there.

    Args:
        placement: the spec's validated Placement (regions already in the catalog's spelling).
        offers: the catalog's offers (pools included).
    """
    if not placement.regions and not placement.gpus:
        return ()
    allowed = set(placement.providers or providers.NAMES)
    sellers: dict[str, set[str]] = {}
    zones = set()
    for o in offers:
        sellers.setdefault(o.region.lower(), set()).add(o.provider)
        if o.zone:
            sellers.setdefault(o.zone.lower(), set()).add(o.provider)
            zones.add(o.zone.lower())
    problems = []
    for region in placement.regions or ():
        by = sellers.get(region.lower())
        if by and not by & allowed:
            clouds = " and ".join(sorted(p.upper() for p in by if not providers.get(p).owned))
            what = (f"{'an' if clouds[0] in 'AEIOU' else 'a'} {clouds} {'zone' if region.lower() in zones else 'region'}"
                    if clouds else "an on-prem pool location")
            problems.append(
                f"{region} is {what}, but placement.providers is [{', '.join(sorted(allowed))}]. "
                f"To fix: add {' or '.join(sorted(by))} to placement.providers, or name a region of "
                f"{', '.join(sorted(allowed))} ({_places(offers, allowed, None)})")
    if problems:
        raise errors.SpecError("placement.regions: " + "\n  ".join(problems), "placement.regions")
    if not placement.gpus:
        return ()
    wanted = {r.lower() for r in placement.regions or ()}
    inside = [o for o in offers if o.provider in allowed
              and (not wanted or o.region.lower() in wanted or (o.zone or "").lower() in wanted)]
    sold = {o.gpu for o in inside}
    missing = [g for g in placement.gpus if g not in sold]
    if not missing:
        return ()
    where = "placement.regions" if placement.regions else "placement.providers"
    lines = [f"{g} is not sold in {where} [{', '.join(placement.regions or sorted(allowed))}]; it is sold in "
             f"{_places(offers, allowed, g) or 'no region of ' + ', '.join(sorted(allowed))}" for g in missing]
    if len(missing) == len(placement.gpus):
        others = ", ".join(sorted(sold)[:12]) or "none"
        raise errors.SpecError(
            "placement.gpus: " + "\n  ".join(lines) + f"\n  GPUs sold there: {others}. To fix: add a region where one "
            "of placement.gpus is sold, or list a GPU sold there", "placement.gpus")
    return tuple(f"placement.gpus: {line}" for line in lines)


def _places(offers, allowed: set[str], gpu: str | None) -> str:
    """Up to _SHOWN regions of the allowed providers (selling `gpu`, when given), with a count of the rest."""
    regions = sorted({o.region for o in offers if o.provider in allowed and (gpu is None or o.gpu == gpu)})
    more = f", +{len(regions) - _SHOWN} more" if len(regions) > _SHOWN else ""
    return ", ".join(regions[:_SHOWN]) + more
