"""One place a workload can run: a cloud instance type in a region/zone, or an on-prem pool."""

from __future__ import annotations

import dataclasses

from gpusizer.base import errors, providers

PURCHASES = ("on-demand", "spot")

# Columns stored in data/catalog/<provider>.csv, in this order. Pinned so a
# snapshot built by an older script is detected rather than misread.
CATALOG_FIELDS = (
    "provider",
    "region",
    "zone",
    "instance_type",
    "gpu",
    "gpu_count",
    "gpu_fraction",
    "gpu_memory_gib",
    "vcpus",
    "ram_gib",
    "nvlink",
    "fabric",
    "network_gbps",
    "local_nvme_gib",
    "on_demand_usd",
    "spot_usd",
    "opt_in",
    "source",
    "as_of",
    "spot_as_of",
)


@dataclasses.dataclass(frozen=True, slots=True)
class Offer:
    """A GPU shape with its prices at one location.

    Attributes:
        provider: a key of gpusizer.base.providers.REGISTRY (gpusizer.base.providers.NAMES).
        region: cloud region, or the pool's location.
        zone: availability zone when the price or offering is per zone, else None.
        instance_type: the cloud type (g6.xlarge, a2-highgpu-1g) or the pool name.
        gpu: canonical GPU name (see gpusizer.facts.hardware).
        gpu_count: GPUs per node (1 for a fractional GPU).
        gpu_fraction: share of one GPU a fractional type gets (g6f.large: 1/8); 1.0 otherwise.
        gpu_memory_gib: memory per GPU (or per fraction) as the provider/driver reports it, GiB.
        vcpus, ram_gib: host CPU count and RAM (GiB) per node.
        nvlink: GPUs in the node talk over NVLink/NVSwitch rather than PCIe only.
        fabric: multi-node GPU fabric ("efa", "gpudirect-tcpx", "rdma"), or None.
        network_gbps: node network bandwidth, Gbit/s.
        local_nvme_gib: local instance-store NVMe, GiB (0 if none).
        on_demand_usd, spot_usd: $/hour per node; None when not sold that way.
        opt_in: a Local Zone or opt-in region, excluded unless the spec allows it.
        source, as_of: where the price and shape came from, and the date (ISO) of the shape and the
            on-demand price.
        spot_as_of: the date of the spot price where its source is another (us-east-1's spot
            estimate is older than its price list), else None: as_of dates it too.
        max_nodes: how many nodes can be had (on-prem: free GPUs // GPUs per node; cloud: None).
        note: free text shown in reports (an on-prem pool's cost derivation).
    """

    provider: str
    region: str
    zone: str | None
    instance_type: str
    gpu: str
    gpu_count: int
    gpu_memory_gib: float
    vcpus: int
    ram_gib: float
    on_demand_usd: float | None
    spot_usd: float | None
    source: str
    as_of: str
    gpu_fraction: float = 1.0
    nvlink: bool = False
    fabric: str | None = None
    network_gbps: float = 0.0
    local_nvme_gib: float = 0.0
    opt_in: bool = False
    max_nodes: int | None = None
    gpus_free: int | None = None
    note: str = ""
    spot_as_of: str | None = None

    def __post_init__(self):
        if self.provider not in providers.NAMES:
            raise errors.CatalogError(f"{self.instance_type}: unknown provider {self.provider!r}")
        if self.gpu_count < 1 or not 0 < self.gpu_fraction <= 1:
            raise errors.CatalogError(f"{self.instance_type}: GPU count must be >= 1 and fraction in (0, 1]")
        if self.gpu_fraction < 1 and self.gpu_count != 1:
            raise errors.CatalogError(f"{self.instance_type}: a fractional GPU offer has exactly one GPU")
        if self.gpu_memory_gib <= 0:
            raise errors.CatalogError(f"{self.instance_type}: GPU memory must be positive")
        for price in (self.on_demand_usd, self.spot_usd):
            # A $0 cloud GPU is a data error seen in peers' catalogs; owned capacity may be free.
            if price is not None and (price < 0 or (price == 0 and not providers.get(self.provider).owned)):
                raise errors.CatalogError(f"{self.instance_type} in {self.region}: price {price} is not a real price")
        if not self.as_of or not self.source:
            raise errors.CatalogError(f"{self.instance_type}: every offer needs a source and an as-of date")

    @property
    def total_gpu_memory_gib(self) -> float:
        return self.gpu_count * self.gpu_memory_gib

    def price_as_of(self, purchase: str) -> str:
        """The date of the price `purchase` ("on-demand" or "spot") pays.

        >>> o = Offer("aws", "us-east-1", None, "g6.xlarge", "L4", 1, 22.35, 4, 16, 0.8, 0.3, "t", "2026-07-20",
        ...           spot_as_of="2025-06-28")
        >>> o.price_as_of("on-demand"), o.price_as_of("spot")
        ('2026-07-20', '2025-06-28')
        """
        return (self.spot_as_of or self.as_of) if purchase == "spot" else self.as_of

    @property
    def oldest_as_of(self) -> str:
        """The oldest date of any figure in the offer."""
        return min(self.as_of, self.spot_as_of or self.as_of)

    def price(self, purchase: str) -> float | None:
        """$/hour per node for "on-demand" or "spot", None where not sold that way."""
        return self.on_demand_usd if purchase == "on-demand" else self.spot_usd
