"""GPU hardware facts: one row per canonical GPU model, read from data/gpus.yaml.

Every figure carries its source and date in that file. Memory is what the
driver reports (nvidia-smi MiB / 1024 = GiB), not the marketing GB: an
"80 GB" H100 shows 81559 MiB = 79.65 GiB.
"""

from __future__ import annotations

import dataclasses
import functools

from gpusizer.base import errors, packaged

PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "fp4")


@dataclasses.dataclass(frozen=True, slots=True)
class GpuSpec:
    """Facts about one GPU model.

    Attributes:
        name: canonical name (T4, L4, A10G, L40S, A100-40GB, A100-80GB, H100, ...).
        memory_gib: memory as the driver reports it, GiB.
        memory_gb: vendor nominal capacity, decimal GB (for display only).
        hbm_bw_gbs: peak memory bandwidth, GB/s (1e9 B/s).
        tflops: dense peak tensor throughput per precision, TFLOPS (TOPS for
            integers); a precision the GPU cannot run natively is absent.
        nvlink_gbs: GPU-to-GPU bandwidth per GPU, GB/s; 0 means PCIe only.
        pcie_gen, pcie_lanes: host interface generation and width.
        tdp_w: board power, W.
        source: where the numbers come from; as_of: when they were read.
    """

    name: str
    vendor: str
    arch: str
    memory_gib: float
    memory_gb: float
    hbm_bw_gbs: float
    tflops: dict[str, float]
    nvlink_gbs: float
    pcie_gen: int
    tdp_w: float
    source: str
    as_of: str
    aliases: tuple[str, ...] = ()
    pcie_lanes: int = 16

    def __post_init__(self):
        if self.memory_gib <= 0 or self.hbm_bw_gbs <= 0:
            raise errors.CatalogError(f"GPU {self.name}: memory and bandwidth must be positive")
        if "fp16" not in self.tflops and "fp32" not in self.tflops:
            raise errors.CatalogError(f"GPU {self.name}: needs at least an fp16 or fp32 TFLOPS figure")

    @property
    def pcie_gbs(self) -> float:
        """Per-direction PCIe bandwidth, GB/s: GT/s x lanes x 128/130 / 8.

        Raw rates 8/16/32 GT/s for Gen3/4/5 with 128b/130b line coding (PCI-SIG
        PCI Express Base Specification 3.0, 4.0, 5.0): Gen4 x16 = 31.5 GB/s.

        >>> round(load_gpus()["L4"].pcie_gbs, 1)
        31.5
        """
        return PCIE_GT_S[self.pcie_gen] * self.pcie_lanes * 128 / 130 / 8

    def runs(self, precision: str) -> bool:
        """Whether the GPU computes `precision` natively (its datasheet lists a tensor rate for it).

        bf16 needs Ampere or newer (Turing, Volta and Pascal have no bf16);
        fp8 needs Ada, Hopper or Blackwell tensor cores. Weight-only int8/int4
        kernels and fp16/fp32 run everywhere here.
        """
        if precision in ("bf16", "fp8", "fp4"):
            return precision in self.tflops
        return True

    def peak_tflops(self, precision: str) -> float:
        """Dense peak for `precision`, falling back to the next wider native format.

        A GPU without native fp8 (Ampere) runs fp8/int4 weight-only kernels at
        its fp16 tensor rate; T4 runs bf16 models in fp16.
        """
        for p in _FALLBACK[precision]:
            if p in self.tflops:
                return self.tflops[p]
        raise errors.CatalogError(f"GPU {self.name} has no usable TFLOPS figure for {precision}")


# PCIe raw signalling rate per lane, GT/s, by generation (PCI-SIG Base Specifications).
PCIE_GT_S = {3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}

# Compute format actually used for each weight precision, in order of preference.
_FALLBACK = {
    "fp32": ("tf32", "fp32"),
    "tf32": ("tf32", "fp32"),
    "bf16": ("bf16", "fp16", "fp32"),
    "fp16": ("fp16", "bf16", "fp32"),
    "fp8": ("fp8", "fp16", "bf16", "fp32"),
    # Weight-only int8/int4 (GPTQ/AWQ/Marlin) dequantize to 16-bit for the matmul.
    "int8": ("fp16", "bf16", "fp32"),
    "int4": ("fp16", "bf16", "fp32"),
    # FP4 (NVFP4/MXFP4) tensor cores are Blackwell's; elsewhere there is no fp4 rate (precision_problem).
    "fp4": ("fp4", "fp8", "fp16", "bf16", "fp32"),
}


@functools.cache
def load_gpus() -> dict[str, GpuSpec]:
    """The packaged GPU table, keyed by canonical name."""
    doc = packaged.load("data/gpus.yaml")
    table = {}
    for name, row in doc["gpus"].items():
        table[name] = GpuSpec(
            name=name,
            vendor=row["vendor"],
            arch=row["arch"],
            memory_gib=float(row["memory_gib"]),
            memory_gb=float(row["memory_gb"]),
            hbm_bw_gbs=float(row["hbm_bw_gbs"]),
            tflops={k: float(v) for k, v in row["tflops"].items() if v is not None},
            nvlink_gbs=float(row.get("nvlink_gbs") or 0),
            pcie_gen=int(row["pcie_gen"]),
            tdp_w=float(row["tdp_w"]),
            pcie_lanes=int(row.get("pcie_lanes", 16)),
            source=row["source"],
            as_of=str(row["as_of"]),
            aliases=tuple(row.get("aliases", ())),
        )
    return table


def ambiguous(name: str) -> tuple[str, ...]:
    """The GPUs a name a person typed may mean when it means more than one ("A100": the 40 and 80 GB parts;
    data/gpus.yaml `ambiguous`), else ()."""
    table = packaged.load("data/gpus.yaml").get("ambiguous") or {}
    wanted = _norm(name)
    return next((tuple(gpus) for key, gpus in table.items() if _norm(key) == wanted), ())


def user_gpu(name: str, field: str) -> str | None:
    """canonical_gpu for a name a person typed in `field`: None when unknown.

    Raises:
        SpecError: the name means more than one GPU (`ambiguous`), naming `field` and the choices.
    """
    choices = ambiguous(name)
    if choices:
        raise errors.SpecError(
            f"{field}: {name!r} names {len(choices)} GPUs, {' and '.join(choices)}, which differ "
            f"in memory. To fix: use {' or '.join(choices)}" + (" (or list both)" if field.endswith("gpus") else ""),
            field,
        )
    return canonical_gpu(name)


def canonical_gpu(name: str) -> str | None:
    """Canonical GPU name for a user or provider spelling ("nvidia-l4", "a100 80gb"), or None."""
    wanted = _norm(name)
    for gpu in load_gpus().values():
        if wanted == _norm(gpu.name) or wanted in {_norm(a) for a in gpu.aliases}:
            return gpu.name
    return None


def _norm(s: str) -> str:
    return "".join(ch for ch in s.lower() if ch.isalnum())
