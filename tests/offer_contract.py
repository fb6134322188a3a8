"""The offer contract every provider's data passes (in the style of gpuhunt's OffersIntegrityTests).

A provider's test class subclasses :class:`OfferContract`, names its provider
and returns its offers from `offers()`; pytest then runs every check below on
them. tests/test_providers.py fails when a registered provider has no such
class. The figures are published ones, not the code's: per-GPU memory is
bounded by the vendor's datasheet capacity.
"""

from __future__ import annotations

import collections
import datetime
import re

from gpusizer.catalog.offer import Offer
from gpusizer.facts import hardware

# Datasheet memory per GPU (smallest, largest variant sold). NVIDIA's "GB" of GPU memory is
# binary-sized (H100 80 GB = 81,920 MiB as nvidia-smi shows), so it bounds the GiB the driver
# reports; drivers reserve a little, hence the 0.9 floor below.
DATASHEET_GB = {
    "T4": (16, 16),  # NVIDIA T4 datasheet: 16 GB GDDR6
    "L4": (24, 24),  # NVIDIA L4 datasheet: 24 GB GDDR6
    "A10G": (24, 24),  # AWS EC2 G5 page: 24 GB per A10G
    "L40S": (48, 48),  # NVIDIA L40S datasheet: 48 GB GDDR6
    "A100-40GB": (40, 40),  # NVIDIA A100 datasheet: 40 GB HBM2
    "A100-80GB": (80, 80),  # NVIDIA A100 datasheet: 80 GB HBM2e
    "H100": (80, 80),  # NVIDIA H100 SXM datasheet: 80 GB HBM3
    "H200": (141, 141),  # NVIDIA H200 datasheet: 141 GB HBM3e
    "B200": (180, 180),  # NVIDIA DGX B200: 1,440 GB over 8 GPUs
    "V100": (16, 32),  # NVIDIA V100 datasheet: 16 or 32 GB HBM2
    "P100": (16, 16),  # NVIDIA P100 PCIe datasheet: 16 GB (GCP's part)
    "P4": (8, 8),  # NVIDIA P4 datasheet: 8 GB GDDR5
}
DRIVER_FLOOR = 0.9
OLDEST = datetime.date(2024, 1, 1)  # no source we hold is older than this


class OfferContract:
    """Checks every provider's offers must pass. Subclasses set `provider` and define `offers()`."""

    provider: str = ""
    region_pattern = r".+"
    """What the provider's region names look like."""

    def offers(self) -> list[Offer]:
        raise NotImplementedError

    def test_offers_exist_and_belong_to_the_provider(self):
        offers = self.offers()
        assert offers, f"{self.provider}: no offers"
        assert {o.provider for o in offers} == {self.provider}

    def test_gpus_are_canonical_names_with_datasheet_memory(self):
        known = hardware.load_gpus()
        for o in self.offers():
            assert o.gpu in known and o.gpu in DATASHEET_GB, f"{o.instance_type}: GPU {o.gpu!r}"
            low, high = DATASHEET_GB[o.gpu]
            whole = o.gpu_memory_gib / o.gpu_fraction
            assert DRIVER_FLOOR * low <= whole <= high, f"{o.instance_type}: {o.gpu_memory_gib} GiB per {o.gpu}"

    def test_prices_are_real_and_spot_undercuts_on_demand(self):
        for o in self.offers():
            assert o.on_demand_usd is not None or o.spot_usd is not None, o.instance_type
            if o.on_demand_usd is not None and o.spot_usd is not None:
                assert o.spot_usd < o.on_demand_usd, f"{o.instance_type} in {o.zone or o.region}: spot >= on-demand"

    def test_every_offer_is_sourced_and_dated(self):
        today = datetime.date.today()
        for o in self.offers():
            assert o.source.strip(), o.instance_type
            assert OLDEST <= datetime.date.fromisoformat(o.as_of) <= today, f"{o.instance_type}: as_of {o.as_of}"

    def test_hosts_have_cpus_and_ram_for_their_gpus(self):
        for o in self.offers():
            assert o.vcpus >= 1 and o.ram_gib > 0, o.instance_type
            assert o.vcpus >= o.gpu_count, f"{o.instance_type}: {o.vcpus} vCPUs for {o.gpu_count} GPUs"

    def test_nvlink_only_on_parts_that_have_it(self):
        gpus = hardware.load_gpus()
        for o in self.offers():
            if o.nvlink:
                assert gpus[o.gpu].nvlink_gbs > 0 and o.gpu_count >= 2, o.instance_type

    def test_regions_are_named_like_the_providers(self):
        for o in self.offers():
            assert re.fullmatch(self.region_pattern, o.region), f"{o.instance_type}: region {o.region!r}"

    def test_one_offer_per_place_and_type(self):
        keys = collections.Counter((o.region, o.zone, o.instance_type, o.gpu_count) for o in self.offers())
        dupes = [k for k, n in keys.items() if n > 1]
        assert not dupes, dupes[:3]
