"""Parallel layouts: tensor parallel over PCIe priced by its all-reduces, replicas per node, pipeline stages across nodes."""

from __future__ import annotations

import pytest

import gpusizer
from gpusizer.catalog import Catalog
from gpusizer.estimate import comm
from gpusizer.facts import hardware
from tests.conftest import make_offer

LLAMA_70B = {
    "name": "assistant-70b",
    "model": {"name": "meta-llama/Llama-3.3-70B-Instruct"},
    "precision": "bf16",
    "inference": {"context_length": 8192, "batch_size": 4},
    "placement": {"providers": ["aws"], "regions": ["us-east-1"], "purchase": "on-demand"},
}
# g5.48xlarge (8 x A10G) on-demand in us-east-1, AWS Price List 2026-07-20 (data/catalog-sources).
G5_48XLARGE_USD = 16.288


@pytest.mark.parametrize(
    "gpu, gbs",
    [
        ("T4", 15.75),  # PCIe 3.0 x16: 8 GT/s x 16 x 128/130 / 8 = 15.75 GB/s per direction
        ("L4", 31.5),  # PCIe 4.0 x16: 31.5 GB/s (PCI-SIG; NVIDIA L4 datasheet "PCIe Gen4 x16")
        ("H100", 63.0),  # PCIe 5.0 x16: 63 GB/s
    ],
)
def test_pcie_bandwidth_matches_the_published_per_generation_rate(gpu, gbs):
    assert hardware.load_gpus()[gpu].pcie_gbs == pytest.approx(gbs, rel=0.01)


def test_nvlink_link_is_half_the_bidirectional_datasheet_figure():
    # H100 SXM: NVLink 4, 900 GB/s total per GPU = 450 GB/s each way (NVIDIA H100 datasheet).
    link = comm.link_of(hardware.load_gpus()["H100"], nvlink=True)
    assert (link.kind, link.gbs) == ("nvlink", 450)


def test_ring_allreduce_time_is_latency_plus_two_n_minus_one_over_n_bytes():
    # Hand-derived: 1 MiB over 4 GPUs on NVLink 300 GB/s at 0.8 efficiency:
    # 10 us + 2 * 3/4 * 1048576 B / 240e9 B/s = 10 + 6.55 = 16.55 us.
    link = comm.Link("nvlink", 300, "")
    assert comm.allreduce_seconds(1 << 20, 4, link) == pytest.approx(16.55e-6, rel=1e-3)
    assert comm.allreduce_seconds(1 << 20, 1, link) == 0.0


def test_decode_all_reduces_are_two_per_layer():
    # Llama-3.3-70B: 80 layers, hidden 8192. Batch 4 over 8 GPUs on PCIe Gen4:
    # 2 x 80 x (30 us + 1.75 x 65536 B / 15.75e9 B/s) = 160 x 37.28 us = 5.97 ms.
    link = comm.link_of(hardware.load_gpus()["A10G"], nvlink=False)
    assert comm.tensor_parallel_seconds(80, 4, 8192, 8, link) == pytest.approx(5.97e-3, rel=0.01)


def test_70b_on_pcie_gpus_is_feasible_and_no_dearer_than_g5_48xlarge():
    d = gpusizer.plan({**LLAMA_70B, "placement": {**LLAMA_70B["placement"], "gpus": ["L40S", "L4", "A10G"]}})
    assert d.chosen is not None
    assert d.chosen.hourly_usd <= G5_48XLARGE_USD
    perf = gpusizer.document(d)["choice"]["performance"]
    assert perf["allreduce_ms_per_token"] > 0 or perf["pipeline_stages"] > 1
    # g6e.12xlarge (4 x L40S, $10.49/h, the example) is an adequate PCIe TP-4 shape.
    g6e = [c for c in d.feasible if c.offer.instance_type == "g6e.12xlarge"]
    assert g6e and g6e[0].fit.tensor_parallel == 4 and g6e[0].fit.speed.link.startswith("PCIe Gen4")


def test_70b_without_a_gpu_restriction_is_no_dearer_either():
    d = gpusizer.plan(LLAMA_70B)
    assert d.chosen.hourly_usd <= G5_48XLARGE_USD


def test_tight_tpot_target_rejects_pcie_shapes_on_speed_with_numbers():
    spec = {**LLAMA_70B, "inference": {**LLAMA_70B["inference"], "targets": {"tpot_ms": 25}}}
    d = gpusizer.plan(spec)
    by_type = {c.offer.instance_type: c for c in d.candidates}
    for pcie in ("g6e.12xlarge", "g5.48xlarge", "g6.48xlarge"):
        c = by_type[pcie]
        assert c.rejection.code == "tpot", c.rejection
        assert "all-reduce" in c.rejection.detail and "PCIe Gen4 x16" in c.rejection.detail
    assert d.chosen.offer.nvlink


def test_throughput_target_runs_several_replicas_on_one_node():
    # 8B bf16 fits one L4 (with little room for KV) or two; a rate that needs several replicas runs them side by
    # side on one 8 x L4 node, at the degree that serves the most tokens/s per node (TP2 holds far more sequences).
    offers = (make_offer("g6.48xlarge", "L4", 8, 22.35, 13.35, nvlink=False, vcpus=192, ram_gib=768.0),)
    spec = {
        "name": "chat",
        "model": {"name": "llama-3.1-8b"},
        "inference": {"context_length": 4096, "batch_size": 4, "targets": {"tokens_per_second": 250}},
    }
    d = gpusizer.plan(spec, catalog=Catalog(offers))
    c = d.chosen
    assert c is not None
    assert c.fit.replicas_per_node == 8 // c.fit.tensor_parallel > 1
    assert c.instances == 1 and c.hourly_usd == pytest.approx(13.35)
    assert c.fit.speed.tokens_per_second * c.replicas >= 250


def test_next_cheaper_no_longer_blames_nvlink():
    spec = {
        "name": "chat",
        "model": {"name": "llama-3.1-8b"},
        "inference": {"context_length": 4096, "batch_size": 8, "targets": {"tokens_per_second": 2000}},
    }
    d = gpusizer.plan(spec)
    assert not any("needs NVLink" in (c.rejection.detail if c.rejection else "") for c in d.candidates)


def test_405b_on_h100_spans_two_nodes_as_pipeline_stages():
    # 405B bf16 = 811 GB of weights: more than 8 x 79.65 GiB; TP 8 in a node x 2 pipeline stages over EFA.
    spec = {
        "name": "big",
        "model": {"name": "llama-3.1-405b"},
        "precision": "bf16",
        "inference": {"context_length": 8192, "batch_size": 4},
        "placement": {"providers": ["aws"], "regions": ["us-east-1"], "gpus": ["H100"]},
    }
    d = gpusizer.plan(spec)
    c = d.chosen
    assert c is not None and c.nodes == 2
    assert (c.fit.tensor_parallel, c.fit.pipeline_stages) == (8, 2)
    assert gpusizer.document(d)["choice"]["performance"]["pipeline_stages"] == 2


def test_multi_node_serving_needs_a_fabric():
    offers = (make_offer("g6.48xlarge", "L4", 8, 22.35, 13.35, vcpus=192, ram_gib=768.0),)
    d = gpusizer.plan({"name": "big", "model": {"name": "llama-3.1-405b"}}, catalog=Catalog(offers))
    assert d.chosen is None
    assert "EFA/GPUDirect" in d.candidates[0].rejection.detail
