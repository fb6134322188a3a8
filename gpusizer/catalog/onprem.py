"""On-prem GPU pools (hybrid): declared in config, priced at an honest amortized $/GPU-hour.

Peers price on-prem capacity at $0 so it always wins; gpusizer derives a
price from what the hardware costs to own and run, or takes the one a
finance team gives, and shows the derivation in every report.
"""

import datetime
import pathlib
from typing import Any, Self

import pydantic

from gpusizer.base import errors, fields, inputs, units
from gpusizer.facts import hardware
from gpusizer import spec
from gpusizer.catalog.offer import Offer

_NODE_COUNTS = (1, 2, 4, 8, 16)


class Pool(pydantic.BaseModel):
    """A Kubernetes (or SSH/Slurm) GPU pool on premises.

    Give either `usd_per_gpu_hour`, or the cost of ownership: capex per node,
    lifetime, power, $/kWh, PUE, utilization (and optionally yearly opex).
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str = pydantic.Field(pattern=r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$", max_length=63)
    location: fields.Label
    gpu: fields.Label
    gpus_per_node: fields.count(16)  # DGX-2 / HGX-2 hold 16 GPUs, the most in one node (NVIDIA DGX-2 datasheet, 2018)
    nodes: fields.PoolNodes = 1
    gpus_free: fields.count(fields.MAX_NODES * 16, lower=0) | None = pydantic.Field(None, description="Default: every GPU of every node.")
    usd_per_gpu_hour: fields.UsdPerGpuHour | None = None
    capex_usd_per_node: fields.CapexUsd | None = None
    lifetime_years: fields.LifetimeYears = 4.0
    power_kw_per_node: fields.PowerKw | None = None
    usd_per_kwh: fields.UsdPerKwh = 0.12
    pue: fields.Pue = pydantic.Field(1.4, description="Data-centre power usage effectiveness.")
    utilization: fields.Utilization = pydantic.Field(0.7, description="Share of hours the GPUs do paid work.")
    opex_usd_per_node_year: fields.OpexUsd = 0.0
    vcpus_per_node: fields.Vcpus = 64
    ram_gib_per_node: fields.RamGib = 512
    nvlink: fields.StrictBool = False
    fabric: fields.Label | None = None
    node_selector: dict[str, str] = pydantic.Field(default_factory=dict)
    tolerations: list[dict[str, Any]] = pydantic.Field(default_factory=list)
    cache_storage_class: fields.Label | None = pydantic.Field(
        None, description="StorageClass of each serving pod's model cache (a generic ephemeral volume sized for "
        "the weights); default: an emptyDir on the node's disk with that size limit.")
    as_of: datetime.date = pydantic.Field(default_factory=datetime.date.today)

    @pydantic.field_validator("gpu")
    @classmethod
    def _known_gpu(cls, v: str) -> str:
        name = hardware.canonical_gpu(v)
        if name is None:
            raise ValueError(f"unknown GPU {inputs.quote(v)}; use one of {', '.join(hardware.load_gpus())}")
        return name

    @pydantic.model_validator(mode="after")
    def _priced(self) -> Self:
        if (self.usd_per_gpu_hour is None) == (self.capex_usd_per_node is None):
            raise ValueError("give either usd_per_gpu_hour or capex_usd_per_node (with power_kw_per_node)")
        if self.capex_usd_per_node is not None and self.power_kw_per_node is None:
            raise ValueError("capex_usd_per_node needs power_kw_per_node")
        if self.gpus_free is not None and self.gpus_free > self.total_gpus:
            raise ValueError(f"gpus_free {self.gpus_free} exceeds the pool's {self.total_gpus} GPUs")
        return self

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def free(self) -> int:
        return self.total_gpus if self.gpus_free is None else self.gpus_free

    def gpu_hour_usd(self) -> tuple[float, str]:
        """Amortized $ per GPU-hour and how it was derived.

        ((capex / lifetime + opex) / 8760 h + kW x PUE x $/kWh) / (GPUs per node x utilization):
        a node's yearly cost spread over the hours its GPUs do paid work.
        """
        if self.usd_per_gpu_hour is not None:
            return self.usd_per_gpu_hour, f"${self.usd_per_gpu_hour:.2f}/GPU-h as configured"
        own = (self.capex_usd_per_node / self.lifetime_years + self.opex_usd_per_node_year) / units.HOURS_PER_YEAR
        power = self.power_kw_per_node * self.pue * self.usd_per_kwh
        per_gpu = (own + power) / (self.gpus_per_node * self.utilization)
        how = (
            f"${per_gpu:.2f}/GPU-h = (${self.capex_usd_per_node:,.0f} / {self.lifetime_years:g} y"
            f" + ${self.opex_usd_per_node_year:,.0f}/y) / 8760 h + {self.power_kw_per_node:g} kW x PUE {self.pue:g}"
            f" x ${self.usd_per_kwh:g}/kWh, over {self.gpus_per_node} GPUs at {self.utilization:.0%} utilization"
        )
        return per_gpu, how

    def allocate(self, gpus: int) -> Self:
        """The pool after `gpus` of its free GPUs are taken (hybrid stacks plan workloads in turn)."""
        return self.model_copy(update={"gpus_free": max(0, self.free - gpus)})

    def to_offers(self) -> list[Offer]:
        """One offer per GPU count that fits a node (1, 2, 4, 8 ... up to gpus_per_node).

        Only whole-node offers span nodes (training); capacity is the pool's free GPUs.
        """
        gpu = hardware.load_gpus()[self.gpu]
        rate, how = self.gpu_hour_usd()
        counts = sorted({c for c in _NODE_COUNTS if c < self.gpus_per_node} | {self.gpus_per_node})
        return [
            Offer(
                provider="onprem",
                region=self.location,
                zone=None,
                instance_type=self.name,
                gpu=self.gpu,
                gpu_count=count,
                gpu_memory_gib=gpu.memory_gib,
                vcpus=self.vcpus_per_node * count // self.gpus_per_node,
                ram_gib=self.ram_gib_per_node * count / self.gpus_per_node,
                on_demand_usd=round(rate * count, 4),
                spot_usd=None,
                source=f"on-prem pool {self.name} ({how})",
                as_of=self.as_of.isoformat(),
                nvlink=self.nvlink,
                fabric=self.fabric,
                max_nodes=self.nodes if count == self.gpus_per_node else 1,
                gpus_free=self.free,
                note=how,
            )
            for count in counts
        ]


def parse_pools(data: Any) -> list[Pool]:
    """Validate a list of pool mappings (or a mapping with a `pools:` list)."""
    if isinstance(data, dict) and "pools" in data:
        data = data["pools"]
    if data is None:
        return []
    if not isinstance(data, list):
        raise errors.SpecError("pools: must be a list of pool mappings. To fix: start each with '- name: ...'", "pools")
    pools = []
    for i, item in enumerate(data):
        try:
            pools.append(Pool.model_validate(item))
        except pydantic.ValidationError as exc:
            raise spec.errors_for(exc, Pool, prefix=f"pools.{i}", what="pool declaration") from None
    names = [p.name for p in pools]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise errors.SpecError(f"pools: duplicate pool name(s) {', '.join(sorted(dupes))}. To fix: rename", "pools")
    return pools


def load_pools(path: str | pathlib.Path) -> list[Pool]:
    """Read pools from a YAML file (a list, or a mapping with `pools:`); errors name the pools file."""
    data = inputs.read_yaml(path, "pools file", "--pools")  # its errors name the pools file already
    try:
        return parse_pools(data)
    except errors.SpecError as exc:
        raise errors.SpecError(f"pools file {inputs.quote(str(path))}: {exc}", exc.field) from None
