"""Judge provisioned GPU capacity against its requirement: what a resource holds, and a cheaper offer that fits.

Pure functions over the catalog, used by the policy pack (which imports the
engine, never the components). No Pulumi imports.
"""

from __future__ import annotations

import dataclasses
import functools
import re

from gpusizer import spec
from gpusizer.base import providers
from gpusizer.catalog import Catalog
from gpusizer.catalog.offer import Offer
from gpusizer.facts import hardware

# The same headroom the engine sizes with (spec.Sizing.memory_headroom default).
HEADROOM = spec.Sizing.model_fields["memory_headroom"].default


@dataclasses.dataclass(frozen=True, slots=True)
class GpuCapacity:
    """What one node of a resource provides: `count` GPUs of `gpu` with `gib_per_gpu` each."""

    gpu: str
    count: float
    gib_per_gpu: float
    label: str

    @property
    def total_gib(self) -> float:
        return self.count * self.gib_per_gpu


@functools.cache
def _offers() -> tuple[Offer, ...]:
    return Catalog.load().offers


@functools.cache
def _by_type() -> dict[tuple[str, str], Offer]:
    index: dict[tuple[str, str], Offer] = {}
    for o in _offers():
        index.setdefault((o.provider, o.instance_type), o)
    return index


@functools.cache
def _cheapest_price(provider: str, instance_type: str) -> float | None:
    prices = [
        o.on_demand_usd
        for o in _offers()
        if o.provider == provider and o.instance_type == instance_type and o.on_demand_usd is not None
    ]
    return min(prices, default=None)


@functools.cache
def types_of(provider: str) -> dict[str, Offer]:
    """Instance/machine type -> one catalog offer of it (shapes are the same in every region); built once
    per provider, as _by_type is: callers read it, never change it."""
    return {t: o for (p, t), o in _by_type().items() if p == provider}


def capacity_of_type(provider: str, instance_type: str) -> GpuCapacity | None:
    """GPUs of a cloud instance/machine type known to the catalog, or None (not a GPU type)."""
    o = _by_type().get((provider, instance_type))
    if o is None:
        return None
    count = o.gpu_count * o.gpu_fraction
    # An offer's gpu_memory_gib is per GPU, or per fraction for a fractional type (g6f.large: 1/8 of an L4's
    # 22.35 GiB = 2.79 GiB; gpusizer.catalog.offer.Offer): per whole GPU it is that over the fraction.
    return GpuCapacity(o.gpu, count, o.gpu_memory_gib / o.gpu_fraction, f"{instance_type}: {count:g} x {o.gpu}")


def capacity_of_accelerator(name: str, count: float, host: str = "") -> GpuCapacity | None:
    """GPUs attached by accelerator type (GCP N1 guest accelerators, Kubernetes GPU product labels)."""
    gpu = gpu_from_label(name)
    if gpu is None:
        return None
    spec_ = hardware.load_gpus()[gpu]
    label = f"{host + ': ' if host else ''}{count:g} x {gpu}"
    return GpuCapacity(gpu, count, spec_.memory_gib, label)


def gpu_from_label(value: str) -> str | None:
    """Canonical GPU from a provider or node label: nvidia-tesla-t4, NVIDIA-L40S, NVIDIA-H100-80GB-HBM3."""
    value = value.strip()
    bare = re.sub(r"^(nvidia[-_ ]?)", "", value, flags=re.I)
    parts = bare.split("-")
    for cand in [value, bare] + ["-".join(parts[:n]) for n in range(len(parts), 0, -1)]:
        gpu = hardware.canonical_gpu(cand) or hardware.canonical_gpu(f"nvidia-{cand}")
        if gpu:
            if gpu == "A100-40GB" and "80" in bare:
                return "A100-80GB"
            return gpu
    return None


def price_of(provider: str, instance_type: str) -> float | None:
    """The lowest on-demand $/hour of a type in the catalog (any region)."""
    return _cheapest_price(provider, instance_type)


def cheaper_adequate(
    required_gib: float, price_now: float | None, provider: str | None = None, region: str | None = None
) -> Offer | None:
    """The cheapest single-node on-demand offer whose usable GPU memory covers `required_gib`.

    Usable = GPUs x GiB per GPU x HEADROOM, the engine's default. Only offers
    cheaper than `price_now` count (and only in `region` when given: data
    residency); the same provider is preferred, then any.
    Memory-only: the policy knows the requirement tag, not the spec.
    """
    best: dict[bool, Offer] = {}
    for o in _offers():
        if o.on_demand_usd is None or o.opt_in or providers.get(o.provider).owned:
            continue
        if region is not None and o.region != region:
            continue
        if price_now is not None and o.on_demand_usd >= price_now:
            continue
        if o.total_gpu_memory_gib * HEADROOM < required_gib:  # per fraction already for a fractional type
            continue
        same = provider is None or o.provider == provider
        cur = best.get(same)
        if cur is None or (o.on_demand_usd, o.instance_type) < (cur.on_demand_usd, cur.instance_type):
            best[same] = o
    return best.get(True) or best.get(False)
