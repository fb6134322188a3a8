"""The optimizer: cheapest adequate wins, every rejection explained, and a brute-force oracle agrees."""

from __future__ import annotations

import math
import random

import pytest

import gpusizer
from gpusizer import planner as plan_mod
from gpusizer.base.providers import NAMES as PROVIDERS
from gpusizer.catalog import Catalog
from gpusizer.decide import optimize
from gpusizer.estimate import fit as fit_mod
from tests.conftest import make_offer

CHAT_8B = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"context_length": 4096, "batch_size": 4}}


def test_cheapest_adequate_offer_wins(tiny_catalog):
    d = gpusizer.plan(CHAT_8B, catalog=tiny_catalog)
    assert d.chosen.offer.instance_type == "g6.xlarge"
    # A T4 (Turing) cannot run bf16 at any size, so it is no "next cheaper" for the bf16 spec ...
    assert d.next_cheaper is None or d.next_cheaper.offer.gpu != "T4"
    # ... but in fp16 it is cheaper and only too small, and the plan says so with numbers.
    d = gpusizer.plan({**CHAT_8B, "precision": "fp16"}, catalog=tiny_catalog)
    assert d.chosen.offer.instance_type == "g6.xlarge"
    assert d.next_cheaper.offer.instance_type == "g4dn.xlarge"
    assert d.next_cheaper.rejection.code == "memory"
    assert "GiB usable per GPU <" in d.next_cheaper.rejection.detail


def test_every_rejection_carries_a_reason(tiny_catalog):
    d = gpusizer.plan({**CHAT_8B, "placement": {"providers": ["aws"], "max_hourly_usd": 10}}, catalog=tiny_catalog)
    rejected = [c for c in d.candidates if not c.feasible]
    assert rejected
    for c in rejected:
        assert c.rejection.code and c.rejection.detail
    codes = {c.rejection.code for c in rejected}
    assert {"provider", "budget", "memory"} <= codes


def test_spot_is_chosen_when_allowed_and_cheaper(tiny_catalog):
    d = gpusizer.plan({**CHAT_8B, "placement": {"purchase": "any"}}, catalog=tiny_catalog)
    assert (d.chosen.offer.instance_type, d.chosen.purchase) == ("g6.xlarge", "spot")


def test_throughput_target_ranks_by_cost_per_token(tiny_catalog):
    # A big batch at a high rate: the per-token objective may prefer a faster GPU.
    spec = {**CHAT_8B, "inference": {"context_length": 2048, "batch_size": 32, "targets": {"tokens_per_second": 300}}}
    d = gpusizer.plan(spec, catalog=tiny_catalog)
    assert d.objective == "per-token"
    feasible = d.feasible
    assert [c.usd_per_mtok for c in feasible] == sorted(c.usd_per_mtok for c in feasible)


def test_infeasible_spec_has_no_choice_and_explains_all(tiny_catalog):
    d = gpusizer.plan(
        {"name": "huge", "model": {"name": "llama-3.1-405b"}, "placement": {"providers": ["gcp"]}}, catalog=tiny_catalog
    )
    assert d.chosen is None
    assert gpusizer.document(d)["choice"] is None
    assert all(c["reasons"] for c in gpusizer.document(d)["candidates"])


def test_tensor_parallel_over_pcie_is_priced_not_forbidden():
    # 70B int4 on 4 x L4 over PCIe: vLLM runs this (TP 4 without NVLink); the plan charges its all-reduces.
    offers = (make_offer("g6.12xlarge", "L4", 4, 22.35, 4.6, nvlink=False),)
    d = gpusizer.plan({"name": "m", "model": {"name": "llama-3.1-70b"}, "precision": "int4"}, catalog=Catalog(offers))
    assert d.chosen is not None
    perf = gpusizer.document(d)["choice"]["performance"]
    assert perf["tensor_parallel"] == 4
    assert perf["link"].startswith("PCIe Gen4 x16")
    # 80 layers x 2 all-reduces x at least the 30 us PCIe latency each.
    assert perf["allreduce_ms_per_token"] >= 80 * 2 * 0.030


def test_multi_node_training_needs_a_fabric():
    spec = {
        "name": "pt",
        "model": {"name": "llama-3.1-70b"},
        "task": "training",
        "training": {"sequence_length": 4096, "tokens": 1e9},
    }
    with_efa = make_offer("p5.48xlarge", "H100", 8, 79.65, 55.0, fabric="efa")
    without = make_offer("p5-noefa", "H100", 8, 79.65, 50.0, fabric=None)
    d = gpusizer.plan(spec, catalog=Catalog((with_efa, without)))
    assert d.chosen.offer.instance_type == "p5.48xlarge"
    assert d.chosen.nodes > 1
    lost = next(c for c in d.candidates if c.offer.instance_type == "p5-noefa")
    assert "EFA" in lost.rejection.detail


def test_deadline_adds_nodes():
    # Llama 3.2 1B (1.24e9 parameters) on 2e10 tokens needs at least 6 x 1.24e9 x 2e10 = 1.49e20 FLOPs
    # (Kaplan et al. 2020, C = 6ND). One 8 x H100 node at its full dense BF16 peak (989.4 TFLOPS per
    # GPU, NVIDIA H100 SXM datasheet) takes 1.49e20 / 7.92e15 = 18,800 s = 5.2 h: over the 4 h deadline
    # at any efficiency, so the choice must span nodes.
    spec = {
        "name": "pt",
        "model": {"name": "llama-3.2-1b"},
        "task": "training",
        "training": {"sequence_length": 2048, "tokens": 2e10, "deadline_hours": 4},
    }
    d = gpusizer.plan(spec, catalog=Catalog((make_offer("p5.48xlarge", "H100", 8, 79.65, 55.0, fabric="efa"),)))
    assert d.chosen is not None
    assert d.chosen.nodes >= 2
    assert d.chosen.fit.train_hours <= 4
    # The next smaller node count the optimizer tries misses the deadline.
    smaller = max(n for n in optimize.TRAINING_NODES if n < d.chosen.nodes)
    fewer = fit_mod.Shape("H100", 79.65, 8, nvlink=True, fabric=True, nodes=smaller)
    assert fit_mod.fit(d.workload, fewer).code == "deadline"


def test_opt_in_zones_are_excluded_unless_allowed():
    offers = (
        make_offer("g6.xlarge", "L4", 1, 22.35, 0.5, zone="use1-bos1-az1", opt_in=True),
        make_offer("g6.xlarge", "L4", 1, 22.35, 0.8),
    )
    d = gpusizer.plan(CHAT_8B, catalog=Catalog(offers))
    assert d.chosen.hourly_usd == 0.8
    d2 = gpusizer.plan({**CHAT_8B, "placement": {"allow_opt_in": True}}, catalog=Catalog(offers))
    assert d2.chosen.hourly_usd == 0.5


def test_failover_lists_adequate_types_in_rank_order(tiny_catalog):
    d = gpusizer.plan(CHAT_8B, catalog=tiny_catalog)
    types = [c.offer.instance_type for c in d.failover(3)]
    # g6e.xlarge ($1.861/h) is adequate but over 2x g6.xlarge ($0.805/h): past the gate's default maxRatio.
    assert types == ["g6.xlarge", "g5.xlarge"]
    assert "g4dn.xlarge" not in types  # never an inadequate one


def test_ranking_is_independent_of_input_order(tiny_catalog):
    rng = random.Random(7)
    offers = list(tiny_catalog.offers)
    first = gpusizer.document(gpusizer.plan(CHAT_8B, catalog=tiny_catalog))
    rng.shuffle(offers)
    again = gpusizer.document(gpusizer.plan(CHAT_8B, catalog=Catalog(tuple(offers))))
    assert first == again


# ---------------------------------------------------------------- oracle ---

SHAPES = [
    ("T4", 15.0, 1),
    ("L4", 22.35, 1),
    ("L4", 22.35, 4),
    ("A10G", 22.35, 1),
    ("L40S", 44.7, 1),
    ("L40S", 44.7, 4),
    ("A100-80GB", 80.0, 8),
    ("H100", 79.65, 1),
    ("H100", 79.65, 2),
    ("H100", 79.65, 8),
]
MODELS = ["llama-3.1-8b", "mistral-7b-v0.1", "qwen2.5-7b", "llama-2-13b", "gemma-2-9b", "llama-3.1-70b"]


def _random_case(rng: random.Random):
    offers = []
    for i in range(rng.randint(2, 9)):
        gpu, mem, count = rng.choice(SHAPES)
        price = rng.choice([0.5, 0.8, 1.0, 2.0, 4.0, 12.0, 30.0])  # repeated prices force tie-breaks
        spot = rng.choice([None, round(price * 0.3, 4), round(price * 0.7, 4)])
        offers.append(
            make_offer(
                f"t{i}.{gpu.lower()}",
                gpu,
                count,
                mem,
                price,
                spot_usd=spot,
                provider=rng.choice(["aws", "gcp"]),
                region="r1" if i == 0 else rng.choice(["r1", "r2"]),
                nvlink=rng.random() < 0.5,
                vcpus=rng.choice([2, 4, 16, 96]),
                ram_gib=rng.choice([8.0, 32.0, 512.0]),
            )
        )
    targets = {}
    if rng.random() < 0.5:
        targets["tokens_per_second"] = rng.choice([50, 200, 1000])
    if rng.random() < 0.3:
        targets["tpot_ms"] = rng.choice([20, 60])
    spec = {
        "name": "oracle",
        "model": {"name": rng.choice(MODELS)},
        "precision": rng.choice(["bf16", "fp8", "int4"]),
        "inference": {
            "context_length": rng.choice([2048, 4096]),
            "batch_size": rng.choice([1, 8, 32]),
            "targets": targets,
        },
        "placement": {
            "purchase": rng.choice(["on-demand", "spot", "any"]),
            **({"providers": [rng.choice(["aws", "gcp"])]} if rng.random() < 0.3 else {}),
            **({"regions": ["r1"]} if rng.random() < 0.3 else {}),
            **({"max_hourly_usd": rng.choice([1.0, 5.0])} if rng.random() < 0.3 else {}),
        },
    }
    return spec, offers


def _oracle(spec, offers):
    """Brute force: judge every (offer, purchase) independently, take the minimum by the documented key."""
    s = gpusizer.load_spec(spec)
    w = plan_mod.workload(s)
    per_token = bool(w.targets.tokens_per_second)
    best = None
    for o in offers:
        purchases = ["on-demand", "spot"] if s.placement.purchase == "any" else [s.placement.purchase]
        for purchase in purchases:
            price = o.on_demand_usd if purchase == "on-demand" else o.spot_usd
            if price is None:
                continue
            if s.placement.providers and o.provider not in s.placement.providers:
                continue
            if s.placement.regions and o.region not in s.placement.regions and o.zone not in s.placement.regions:
                continue
            f = fit_mod.fit(w, fit_mod.Shape(o.gpu, o.gpu_memory_gib, o.gpu_count, 1.0, o.nvlink, o.fabric is not None))
            if not f.ok or o.vcpus < w.min_vcpus(o.gpu_count) or o.ram_gib < w.min_ram_gib(o.gpu_count):
                continue
            target = w.targets.tokens_per_second
            # Copies to serve the target, packed f.replicas_per_node to a node (the fit's layout).
            replicas = math.ceil(target / f.speed.tokens_per_second) if target else 1
            total = price * math.ceil(replicas / f.replicas_per_node)
            if s.placement.max_hourly_usd is not None and total > s.placement.max_hourly_usd:
                continue
            metric = total / (target * 3600) * 1e6 if per_token else total
            key = (metric, total, o.gpu_count, PROVIDERS.index(o.provider), o.region, "", o.instance_type, purchase)
            if best is None or key < best[0]:
                best = (key, o.instance_type, purchase)
    return None if best is None else best[1:]


@pytest.mark.parametrize("seed", range(150))
def test_optimizer_agrees_with_brute_force_oracle(seed):
    spec, offers = _random_case(random.Random(seed))
    d = gpusizer.plan(spec, catalog=Catalog(tuple(offers)))
    got = None if d.chosen is None else (d.chosen.offer.instance_type, d.chosen.purchase)
    assert got == _oracle(spec, offers)


def test_objective_of_respects_explicit_choice():
    s = gpusizer.load_spec(
        {**CHAT_8B, "sizing": {"objective": "hourly"}, "inference": {"targets": {"tokens_per_second": 100}}}
    )
    assert optimize.objective_of(plan_mod.workload(s)) == "hourly"


def test_throughput_target_counts_the_replicas_it_takes(tiny_catalog):
    # A faster GPU can be cheaper per token: a slow one needs more replicas to reach the target.
    spec = {**CHAT_8B, "inference": {"context_length": 2048, "batch_size": 16, "targets": {"tokens_per_second": 1500}}}
    d = gpusizer.plan(spec, catalog=tiny_catalog)
    for c in d.feasible:
        assert c.replicas * c.fit.speed.tokens_per_second >= 1500
        assert c.hourly_usd == pytest.approx(c.offer.on_demand_usd * math.ceil(c.replicas / c.fit.replicas_per_node))
    # $5.40/h serving 1,500 tokens/s = 5.4 million tokens/h: $1.00 per million tokens per replica.
    one = Catalog((make_offer("g6e.xlarge", "L40S", 1, 44.7, 5.40),))
    c = gpusizer.plan(spec, catalog=one).chosen
    assert c.usd_per_mtok == pytest.approx(1.00 * c.replicas)
    assert d.chosen.hourly_usd == min(c.hourly_usd for c in d.feasible)
    assert gpusizer.document(d)["choice"]["replicas"] == d.chosen.replicas
