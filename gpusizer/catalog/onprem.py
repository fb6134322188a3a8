"""On-prem GPU pools (hybrid): declared in config, priced at an honest amortized $/GPU-hour.

Peers price on-prem capacity at $0 so it always wins; gpusizer derives a
price from what the hardware costs to own and run, or takes the one a
finance team gives, and shows the derivation in every report.
"""

import datetime
import pathlib
from typing import Any, Self

import pydantic

from gpusizer import spec
from gpusizer.base import errors, fields, inputs, units
from gpusizer.catalog.offer import Offer
from gpusizer.facts import hardware

_NODE_COUNTS = (1, 2, 4, 8, 16)
# A pool's node network with a fabric and no network_gbps: one 400 Gbit/s NIC per node (InfiniBand NDR and
# ConnectX-7's port rate, NVIDIA ConnectX-7 product brief); the planner's estimate assumes the same.
DEFAULT_FABRIC_GBPS = 400.0


class Pool(pydantic.BaseModel):
    """A Kubernetes (or SSH/Slurm) GPU pool on premises.

    Give either `usd_per_gpu_hour`, or the cost of ownership: capex per node,
    lifetime, power, $/kWh, PUE, utilization (and optionally yearly opex).
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str = pydantic.Field(
        pattern=r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$",
        max_length=63,
        description="Pool name ([a-z0-9-]): the offer's instance type in reports.",
    )
    location: fields.Label = pydantic.Field(description="Site name; placement.regions may name it.")
    gpu: fields.Label = pydantic.Field(description="GPU model (a name or alias `gpusizer catalog list --gpu` accepts).")
    # DGX-2 / HGX-2 hold 16 GPUs, the most in one node (NVIDIA DGX-2 datasheet, 2018)
    gpus_per_node: fields.count(16) = pydantic.Field(description="GPUs in one node (1-16).")
    nodes: fields.PoolNodes = pydantic.Field(1, description="Nodes in the pool.")
    gpus_free: fields.count(fields.MAX_NODES * 16, lower=0) | None = pydantic.Field(
        None, description="Default: every GPU of every node."
    )
    usd_per_gpu_hour: fields.UsdPerGpuHour | None = pydantic.Field(
        None, description="A rate finance gives, $/GPU-hour; else give capex_usd_per_node and power_kw_per_node."
    )
    capex_usd_per_node: fields.CapexUsd | None = pydantic.Field(
        None, description="Purchase price of one node, USD (with power_kw_per_node), amortized over lifetime_years."
    )
    lifetime_years: fields.LifetimeYears = pydantic.Field(4.0, description="Years the capex is spread over.")
    power_kw_per_node: fields.PowerKw | None = pydantic.Field(None, description="Power draw of one node at load, kW.")
    usd_per_kwh: fields.UsdPerKwh = pydantic.Field(0.12, description="Electricity price, USD per kWh.")
    pue: fields.Pue = pydantic.Field(1.4, description="Data-centre power usage effectiveness.")
    utilization: fields.Utilization = pydantic.Field(0.7, description="Share of hours the GPUs do paid work.")
    opex_usd_per_node_year: fields.OpexUsd = pydantic.Field(
        0.0, description="Yearly running cost of one node besides power (support, space, staff), USD."
    )
    vcpus_per_node: fields.Vcpus = pydantic.Field(64, description="Host vCPUs per node (a share goes with each GPU).")
    ram_gib_per_node: fields.RamGib = pydantic.Field(512, description="Host RAM per node, GiB.")
    nvlink: fields.StrictBool | None = pydantic.Field(
        None,
        description="GPUs in a node talk over NVLink/NVSwitch. Default: from the GPU model (gpus.yaml "
        "nvlink_gbs): true for SXM/HGX boards (V100, A100, H100, H200, B200) with 2+ GPUs per node, false for "
        "PCIe cards (T4, L4, A10G, L40S ...). Set false for PCIe H100/A100 cards.",
    )
    fabric: fields.Label | None = pydantic.Field(
        None,
        description="Multi-node GPU fabric (rdma, efa ...); null: none. Default: rdma for a pool of 2+ "
        "nodes of SXM/HGX boards (DGX/HGX systems ship one InfiniBand/RoCE NIC per GPU), else none.",
    )
    network_gbps: fields.positive_float(fields.MAX_NETWORK_GBPS) | None = pydantic.Field(
        None,
        description="Node network bandwidth between nodes, Gbit/s. Default: 400 with a fabric (one 400G "
        "NIC, the common InfiniBand NDR port rate), else 0.",
    )
    node_selector: dict[str, str] = pydantic.Field(
        default_factory=dict,
        description="Kubernetes node labels the pods need; with deploy.image it must name "
        "the GPU model (nvidia.com/gpu.product), or the policy gate cannot verify the pods.",
    )
    tolerations: list[dict[str, Any]] = pydantic.Field(
        default_factory=list,
        description="Kubernetes tolerations the pods get (key, operator, value, effect, tolerationSeconds).",
    )
    cache_storage_class: fields.Label | None = pydantic.Field(
        None,
        description="StorageClass of each serving pod's model cache (a generic ephemeral volume sized for "
        "the weights); default: an emptyDir on the node's disk with that size limit.",
    )
    as_of: datetime.date = pydantic.Field(
        default_factory=datetime.date.today, description="Date of the prices (default: today)."
    )

    @pydantic.field_validator("gpu")
    @classmethod
    def _known_gpu(cls, v: str) -> str:
        choices = hardware.ambiguous(v)
        if choices:
            raise ValueError(
                f"{inputs.quote(v)} names {len(choices)} GPUs, {' and '.join(choices)}, which differ in "
                f"memory; use {' or '.join(choices)}"
            )
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
    def has_nvlink(self) -> bool:
        """`nvlink` as given, else from the GPU model: an NVLink (SXM/HGX) part with 2+ GPUs per node."""
        if self.nvlink is not None:
            return self.nvlink
        return hardware.load_gpus()[self.gpu].nvlink_gbs > 0 and self.gpus_per_node > 1

    @property
    def fabric_name(self) -> str | None:
        """`fabric` as given (null: none), else rdma for 2+ nodes of NVLink (HGX/DGX) boards, else None.

        NVIDIA's DGX A100/H100 reference systems carry one ConnectX InfiniBand/RoCE NIC per GPU (DGX H100
        datasheet: 8 x ConnectX-7 400 Gb/s), as HGX servers built to that design do."""
        if "fabric" in self.model_fields_set:
            return self.fabric
        return "rdma" if self.nodes > 1 and hardware.load_gpus()[self.gpu].nvlink_gbs > 0 else None

    @property
    def network(self) -> float:
        """`network_gbps` as given, else DEFAULT_FABRIC_GBPS with a fabric, else 0."""
        if self.network_gbps is not None:
            return self.network_gbps
        return DEFAULT_FABRIC_GBPS if self.fabric_name else 0.0

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
                nvlink=self.has_nvlink and count > 1,
                fabric=self.fabric_name,
                network_gbps=self.network,
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


def json_schema() -> dict:
    """JSON Schema of a pools file (`gpusizer schema --pools`): a mapping with a `pools:` list of Pool, every
    field with its default and description."""
    pool = Pool.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpusizer pools file",
        "type": "object",
        "properties": {"pools": {"type": "array", "items": {"$ref": "#/$defs/Pool"}}},
        "required": ["pools"],
        "$defs": {**pool.pop("$defs", {}), "Pool": pool},
    }
