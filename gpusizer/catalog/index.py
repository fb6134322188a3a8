"""Offers grouped into classes that every limit except place, price, pool capacity and quota judges alike.

A decision judges classes, not offers (gpusizer.decide.optimize). The 1,174 offers
of the packaged catalog fall into about 130 classes (55 GPU shapes times host
sizes, fabrics and image support); a many-region catalog a hundred times
larger holds the same classes, so a decision costs about the same on both.
An index is built once per catalog (Catalog.index) and once per pool set
(Catalog.with_pools), and only read afterwards.

Within a class and purchase option the offers are sorted once by (price,
region, zone, instance type). With the class's node count and replicas fixed
that is the optimizer's rank order (gpusizer.decide.judgement.rank_key), so a budget
is a bisection and the cheapest feasible offer is the first one in an allowed
place. Region filters read the per-region and per-zone lists.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Final

from gpusizer.base import providers
from gpusizer.catalog.offer import PURCHASES, Offer
from gpusizer.estimate import fit as fit_mod
from gpusizer.facts import images

Entry = tuple[float, str, str, str, int, Offer]
"""(price, region, zone or "", instance type, position in the input, offer): sorts without comparing offers."""

# Final, so a type checker reads e[PRICE] as the float and e[OFFER] as the Offer (4 is the position).
PRICE: Final = 0
REGION: Final = 1
ZONE: Final = 2
TYPE: Final = 3
OFFER: Final = 5


def class_key(o: Offer, image_ok: bool) -> tuple:
    """What every limit but place, price, pool capacity and quota reads: provider, GPU model and shape
    (gpusizer.estimate.fit.shape_of), host, node limit, opt-in, machine-image support and quota class."""
    return (
        o.provider,
        o.gpu,
        o.opt_in,
        o.gpu_fraction,
        o.gpu_count,
        o.gpu_memory_gib,
        o.nvlink,
        o.fabric is not None,
        o.network_gbps,
        o.vcpus,
        o.ram_gib,
        o.max_nodes,
        image_ok,
        providers.get(o.provider).quota_class(o.instance_type),
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Priced:
    """The offers of one class at one purchase option.

    Attributes:
        entries: offers sold this way, sorted by (price, region, zone, instance type).
        missing: offers not sold this way (price 0.0 in the entry), sorted by (region, zone, instance type).
    """

    entries: Sequence[Entry]
    missing: Sequence[Entry]
    _places: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def by_place(self, field: int) -> dict[str, tuple[Sequence[Entry], Sequence[Entry]]]:
        """The two lists per region (field REGION) or zone (ZONE), in the same orders, for region filters.

        Grouped on first use and kept: only a spec that names regions reads them (a third of an index
        build when grouped for every class up front).
        """
        found = self._places.get(field)
        if found is None:
            found = self._places[field] = _split(self.entries, self.missing, field)
        return found


@dataclasses.dataclass(frozen=True, slots=True)
class OfferClass:
    """Offers alike in everything the sizing, image and host limits read.

    Attributes:
        sample: one of its offers, standing for the shape and host of all (details name each offer).
        size: how many offers it holds.
        priced: per purchase option ("on-demand", "spot"), its offers sorted by price.
        image_ok: the family has a supported machine image (gpusizer.facts.images), or is owned.
        pooled: its offers carry free GPUs (on-prem pools): capacity is judged per offer.
        shape: the sizing shape of one node (gpusizer.estimate.fit.shape_of).
        key: class_key, what the class's offers share.
        owned: the provider owns its capacity (gpusizer.base.providers): no regions, one amortized rate.
        provider_rank: the provider's place in the registry (a rank tie-break).
        quota_class: the vCPU quota class its offers count against.
        splits: pooled offers split by free GPUs, per (purchase, GPUs needed, run): kept for the next
            decision (gpusizer.decide.optimize); the run itself is held, so its id stays its own.
    """

    sample: Offer
    size: int
    priced: dict[str, Priced]
    image_ok: bool
    pooled: bool
    shape: fit_mod.Shape
    key: tuple
    owned: bool
    provider_rank: int
    quota_class: str
    splits: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class OfferIndex:
    """Classes of offers, in first-seen order."""

    classes: tuple[OfferClass, ...]
    _orders: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, offers: Iterable[Offer], start: int = 0) -> OfferIndex:
        """Group `offers` by class_key and sort each class per purchase option (O(n log n), once).

        `start` numbers the offers (the last tie-break) after those of another index they join.
        """
        groups: dict[tuple, tuple[bool, list[tuple[int, Offer]]]] = {}
        image_ok: dict[tuple[str, str], bool] = {}
        for i, o in enumerate(offers, start):
            t = (o.provider, o.instance_type)
            ok = image_ok.get(t)
            if ok is None:
                ok = image_ok[t] = images.unsupported(*t) is None
            groups.setdefault(class_key(o, ok), (ok, []))[1].append((i, o))
        return cls(tuple(_class(members, key, ok) for key, (ok, members) in groups.items()))

    def __add__(self, other: OfferIndex) -> OfferIndex:
        return OfferIndex(self.classes + other.classes)

    def by_floor(self, purchases: tuple[str, ...]) -> tuple[tuple[float, OfferClass], ...]:
        """(floor, class) in order of floor: the lowest $/hour per node of the class at `purchases`
        (owned classes: on-demand, their one rate); infinite when none is sold that way. Kept per purchase set."""
        found = self._orders.get(purchases)
        if found is None:

            def floor(c: OfferClass) -> float:
                firsts = [
                    c.priced[p].entries[0][PRICE]
                    for p in (("on-demand",) if c.owned else purchases)
                    if c.priced[p].entries
                ]
                return min(firsts, default=float("inf"))

            found = self._orders[purchases] = tuple(sorted(((floor(c), c) for c in self.classes), key=lambda x: x[0]))
        return found


def _split(entries: Sequence[Entry], lacking: Sequence[Entry], field: int) -> dict[str, tuple[tuple, tuple]]:
    out: dict[str, tuple[list, list]] = {}
    for e in entries:
        if e[field]:
            out.setdefault(e[field], ([], []))[0].append(e)
    for e in lacking:
        if e[field]:
            out.setdefault(e[field], ([], []))[1].append(e)
    return {k: (tuple(a), tuple(b)) for k, (a, b) in out.items()}


def _class(members: list[tuple[int, Offer]], key: tuple, image_ok: bool) -> OfferClass:
    priced = {}
    for purchase in PURCHASES:
        have: list[Entry] = []
        lack: list[Entry] = []
        for i, o in members:
            price = o.price(purchase)
            (lack if price is None else have).append((price or 0.0, o.region, o.zone or "", o.instance_type, i, o))
        have.sort(key=lambda e: e[:5])
        lack.sort(key=lambda e: e[1:5])
        priced[purchase] = Priced(tuple(have), tuple(lack))
    o = members[0][1]
    registered = providers.get(o.provider)
    return OfferClass(
        o,
        len(members),
        priced,
        image_ok,
        o.gpus_free is not None,
        fit_mod.shape_of(o),
        key,
        registered.owned,
        providers.NAMES.index(o.provider),
        registered.quota_class(o.instance_type),
    )
