"""GPU-to-GPU communication cost: tensor-parallel all-reduce inside a node, pipeline hops across nodes.

Tensor parallelism is modelled on any link, not forbidden: the cost of each
all-reduce over the node's real link (NVLink/NVSwitch, or PCIe at the GPU's
generation and lane count) is added to the step time, and the targets decide.

Ring all-reduce of S bytes over n GPUs moves 2(n-1)/n x S bytes through each
GPU's link (Patarasuk and Yuan 2009, "Bandwidth optimal all-reduce
algorithms for clusters of workstations", J. Parallel Distrib. Comput. 69(2);
NCCL's nccl-tests PERFORMANCE.md defines busbw = algbw x 2(n-1)/n for the
same reason), so one all-reduce takes

    t = latency + 2(n-1)/n x S / (link GB/s per direction x efficiency).

Megatron-LM tensor parallelism all-reduces the activations twice per
transformer layer in the forward pass, after attention and after the MLP
(Shoeybi et al. 2019, arXiv:1909.08053, section 3, Figure 3).
"""

from __future__ import annotations

import dataclasses

from gpusizer.facts import hardware

# Achieved fraction of a link's per-direction bandwidth in NCCL ring all-reduce
# (nccl-tests "busbw" / link rate).
# NVLink: NVIDIA's nccl-tests on 8 x A100 SXM report ~230 GB/s busbw of 300 GB/s
#   per direction (0.77); an 8 x H200 run reports 475 GB/s of 450 with NVLS
#   (NVIDIA/nccl-tests issue #272, 2024-11-27). We take 0.8.
# PCIe: ring all-reduce between PCIe-only GPUs reaches well under the link rate
#   (NVIDIA/nccl issue #1530, "Ring all-reduce shows poor bandwidth utilization
#   on PCIe-connected GPUs", 2024-12; issue #74, 8 x A40); we take 0.5
#   (unverified: no published figure for AWS g5/g6/g6e topologies was found).
# Both are named, overridable inputs (calibration may replace them per GPU).
LINK_EFFICIENCY = {"nvlink": 0.8, "pcie": 0.5}

# Latency of one small all-reduce, seconds: nccl-tests all_reduce_perf on
# 8 KiB-1 MiB messages shows ~10 us over NVLink/NVSwitch and ~30 us over PCIe
# (NVIDIA nccl-tests issue #74 and #1530 tables: 8-byte all-reduce 40-45 us on
# 8 PCIe GPUs; unverified for NVLink below 10 us with NVLS).
ALLREDUCE_LATENCY_S = {"nvlink": 10e-6, "pcie": 30e-6}

# One pipeline hop between nodes (send the activations of the tokens in
# flight to the next stage) over EFA/GPUDirect RDMA: ~20 us one-way for small
# messages (unverified; AWS publishes no figure; libfabric fi_pingpong runs on
# EFA report 15-20 us), and the node's network bandwidth at 0.8 efficiency.
FABRIC_LATENCY_S = 20e-6
FABRIC_EFFICIENCY = 0.8
# Bytes per activation element exchanged (bf16/fp16 activations, also with
# fp8/int weights: vLLM and TensorRT-LLM communicate in 16-bit).
ACTIVATION_BYTES = 2


@dataclasses.dataclass(frozen=True, slots=True)
class Link:
    """The path tensor-parallel traffic takes between the GPUs of a node.

    Attributes:
        kind: "nvlink" or "pcie".
        gbs: per-direction bandwidth per GPU, GB/s (nominal).
        label: for reports ("NVLink 450 GB/s", "PCIe Gen4 x16 31.5 GB/s").
    """

    kind: str
    gbs: float
    label: str


def link_of(gpu: hardware.GpuSpec, nvlink: bool) -> Link:
    """The node's GPU-to-GPU link: NVLink when the node has it, else the GPU's PCIe link.

    NVLink figures in data/gpus.yaml are bidirectional per GPU (H100: 900 GB/s,
    450 per direction); PCIe is per direction (hardware.GpuSpec.pcie_gbs).

    >>> link_of(hardware.load_gpus()["L40S"], nvlink=False).label
    'PCIe Gen4 x16 31.5 GB/s'
    """
    key = (nvlink and bool(gpu.nvlink_gbs), gpu.nvlink_gbs, gpu.pcie_gbs, gpu.pcie_gen, gpu.pcie_lanes)
    found = _LINKS.get(key)
    if found is None:
        if key[0]:
            per_dir = gpu.nvlink_gbs / 2
            found = Link("nvlink", per_dir, f"NVLink {per_dir:g} GB/s")
        else:
            found = Link("pcie", gpu.pcie_gbs, f"PCIe Gen{gpu.pcie_gen} x{gpu.pcie_lanes} {gpu.pcie_gbs:.1f} GB/s")
        _LINKS[key] = found
    return found


_LINKS: dict[tuple, Link] = {}
"""link_of's results by every figure they read (a handful of GPU models: never evicted)."""


def allreduce_seconds(nbytes: float, gpus: int, link: Link) -> float:
    """Time of one ring all-reduce of `nbytes` over `gpus` GPUs on `link` (0 for one GPU).

    t = latency + 2(n-1)/n x bytes / (GB/s x efficiency). Hand check: 64 KiB
    (batch 4 x hidden 8192 x 2 B) over 8 GPUs on PCIe Gen4 x16:
    30 us + 1.75 x 65536 / (31.5e9 x 0.5) = 30 + 7.3 = 37.3 us.

    >>> pcie = Link("pcie", 31.5, "")
    >>> round(allreduce_seconds(4 * 8192 * 2, 8, pcie) * 1e6, 1)
    37.3
    """
    if gpus <= 1:
        return 0.0
    wire = 2 * (gpus - 1) / gpus * nbytes
    return ALLREDUCE_LATENCY_S[link.kind] + wire / (link.gbs * 1e9 * LINK_EFFICIENCY[link.kind])


def tensor_parallel_seconds(layers: int, tokens: int, hidden: int, gpus: int, link: Link) -> float:
    """All-reduce time of one forward pass over `tokens` tokens: 2 per layer (Megatron-LM)."""
    return 2 * layers * allreduce_seconds(tokens * hidden * ACTIVATION_BYTES, gpus, link)


def pipeline_seconds(stages: int, tokens: int, hidden: int, fabric_gbps: float) -> float:
    """Time one forward pass spends between `stages` pipeline stages on different nodes.

    Each of the stages - 1 hops sends tokens x hidden activations in 16-bit
    over the fabric: latency + bytes / (Gbit/s / 8 x efficiency).
    """
    if stages <= 1:
        return 0.0
    nbytes = tokens * hidden * ACTIVATION_BYTES
    bw = max(fabric_gbps, 1.0) / 8 * 1e9 * FABRIC_EFFICIENCY
    return (stages - 1) * (FABRIC_LATENCY_S + nbytes / bw)
