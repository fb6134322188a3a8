"""The planner agrees with a brute-force oracle on generated specs, catalogs, pools and quotas.

The oracle is the rules of gpusizer/decide/optimize.py's docstring written the slow,
obvious way: every offer x purchase option x node count is judged on its own
(the sizing verdict from `fit.fit(w, shape)`, so it tracks fit.py's layouts,
replicas per node and node groups), nothing is cached, and the feasible ones
are ranked with the documented key. Node counts: one node for fractional GPUs
and non-LLM serving; otherwise the fewest of TRAINING_NODES (up to the offer's
max_nodes) that fits, where LLM serving adds nodes only while memory is short.
A candidate launches nodes x Fit.node_groups instances and is priced for all.
The planner must agree on the choice, the rank order of every feasible
candidate, every candidate's rejection code, node count and price, and the
rejection counts.
"""

from __future__ import annotations

import collections
import math
import random

import pytest

import gpusizer
from gpusizer import planner as plan_mod
from gpusizer.base import providers
from gpusizer.catalog import Catalog
from gpusizer.catalog.onprem import Pool
from gpusizer.decide import optimize
from gpusizer.estimate import fit as fit_mod
from gpusizer.facts import hardware, images
from tests.conftest import make_offer

PLACEMENT_CODES = ("provider", "region", "gpu", "opt-in", "purchase")

# (GPU, GiB per GPU as reported, GPUs per node, NVLink, fabric): shapes the real catalog sells, plus
# PCIe multi-GPU nodes and fabric-less big nodes so interconnect limits come up.
SHAPES = [
    ("T4", 15.0, 1, False, None),
    ("T4", 15.0, 4, False, None),
    ("L4", 22.35, 1, False, None),
    ("L4", 22.35, 4, False, None),
    ("L4", 22.35, 8, False, None),
    ("A10G", 22.35, 1, False, None),
    ("A10G", 22.35, 4, False, None),
    ("L40S", 44.7, 1, False, None),
    ("L40S", 44.7, 8, False, "efa"),
    ("A100-40GB", 40.0, 8, True, "efa"),
    ("A100-80GB", 80.0, 8, True, None),
    ("H100", 79.65, 1, False, None),
    ("H100", 79.65, 2, True, None),
    ("H100", 79.65, 8, True, "efa"),
    ("H200", 139.8, 8, True, "efa"),
]
MODELS = ["llama-3.2-1b", "llama-3.1-8b", "qwen2.5-7b", "gemma-2-9b", "llama-2-13b", "mixtral-8x7b", "llama-3.1-70b"]
PRICES = [0.3, 0.5, 0.8, 1.0, 2.0, 4.0, 12.0, 30.0, 60.0]  # repeated prices force tie-breaks


def _offers(rng: random.Random) -> list:
    offers = []
    for i in range(rng.randint(3, 14)):
        gpu, mem, count, nvlink, fabric = rng.choice(SHAPES)
        price = rng.choice(PRICES) * count
        spot = rng.choice([None, round(price * 0.3, 4), round(price * 0.7, 4)])
        on_demand = None if spot is not None and rng.random() < 0.1 else price  # a spot-only offer now and then
        provider = rng.choice(["aws", "gcp"])
        zone = rng.choice([None, None, "z-a", "z-b"])
        offers.append(
            make_offer(
                f"{_family(gpu) if provider == 'aws' else 'n'}{i}.{gpu.lower()}",
                gpu,
                count,
                mem,
                price,
                on_demand_usd=on_demand,
                spot_usd=spot,
                provider=provider,
                region=rng.choice(["r1", "r2"]),
                zone=zone,
                nvlink=nvlink,
                fabric=fabric,
                vcpus=rng.choice([2, 4, 16, 96, 192]),
                ram_gib=rng.choice([8.0, 32.0, 512.0, 2048.0]),
                opt_in=zone is not None and rng.random() < 0.2,
            )
        )
    if rng.random() < 0.2:  # a fractional GPU (g6f-like: 1/8 of an L4)
        offers.append(make_offer("f.l4-eighth", "L4", 1, 22.35 / 8, 0.2, gpu_fraction=0.125, vcpus=4, ram_gib=16.0))
    return offers


def _family(gpu: str) -> str:
    """AWS-like type names: P instances for A100/H100/H200, G for the rest (their vCPU quota classes)."""
    return "p" if gpu[0] in "AH" and gpu != "A10G" else "g"


def _pools(rng: random.Random) -> list[Pool]:
    pools = []
    for i in range(rng.choice([0, 0, 1, 2])):
        gpu, _, count, nvlink, fabric = rng.choice([s for s in SHAPES if s[2] in (1, 4, 8)])
        nodes = rng.choice([1, 2, 4])
        pools.append(
            Pool(
                name=f"rack-{i}",
                location=rng.choice(["dc1", "dc2"]),
                gpu=gpu,
                gpus_per_node=count,
                nodes=nodes,
                gpus_free=rng.randint(0, count * nodes),
                nvlink=nvlink,
                fabric=fabric,
                usd_per_gpu_hour=rng.choice([0.4, 1.5, 3.0]),
                as_of="2026-11-01",
            )
        )
    return pools


def _quotas(rng: random.Random) -> dict:
    if rng.random() < 0.6:
        return {}
    return {
        ("aws", rng.choice(["r1", "r2"]), rng.choice(["on-demand", "spot"]), rng.choice(["G", "P"])): float(
            rng.choice([8, 64, 400])
        )
        for _ in range(rng.randint(1, 3))
    }


def _spec(rng: random.Random) -> dict:
    task = rng.choice(["inference", "inference", "finetune", "training"])
    spec = {"name": "oracle", "model": {"name": rng.choice(MODELS)}, "task": task}
    if task == "inference":
        targets = {}
        if rng.random() < 0.4:
            targets["tokens_per_second"] = rng.choice([50, 400, 300000])
        if rng.random() < 0.2:
            targets["tpot_ms"] = rng.choice([15, 60])
        if rng.random() < 0.15:
            targets["ttft_ms"] = rng.choice([200, 2000])
        spec["precision"] = rng.choice(["bf16", "fp8", "int4"])
        spec["inference"] = {
            "context_length": rng.choice([2048, 4096]),
            "batch_size": rng.choice([1, 8, 32]),
            "targets": targets,
        }
        if rng.random() < 0.3:
            spec["deploy"] = {"replicas": rng.choice([2, 3])}
        if rng.random() < 0.2:
            spec["growth"] = 2.0
    else:
        if task == "finetune":
            spec["finetune_method"] = rng.choice(["full", "lora", "qlora"])
        training = {"sequence_length": rng.choice([2048, 4096])}
        if rng.random() < 0.6:
            training["tokens"] = rng.choice([1e8, 2e9, 5e10])
            if rng.random() < 0.5:
                training["deadline_hours"] = rng.choice([2, 24, 200])
        spec["training"] = training
    placement = {"purchase": rng.choice(["on-demand", "spot", "any"])}
    if rng.random() < 0.25:
        placement["providers"] = rng.sample(["aws", "gcp", "onprem"], rng.choice([1, 2]))
    if rng.random() < 0.25:
        placement["regions"] = rng.choice([["r1"], ["r1"], ["z-a"], ["r2", "z-b"]])  # a region, a zone, both
    if rng.random() < 0.15:
        placement["gpus"] = rng.sample(["T4", "L4", "A10G", "L40S", "H100", "A100-80GB"], 3)
    if rng.random() < 0.3:
        placement["max_hourly_usd"] = rng.choice([1.0, 5.0, 40.0, 200.0])
    if rng.random() < 0.2:
        placement["allow_opt_in"] = True
    spec["placement"] = placement
    if rng.random() < 0.1:
        spec["sizing"] = {"objective": rng.choice(["hourly", "per-token"])}
    return spec


# ---------------------------------------------------------------- the oracle ---


def _objective(w) -> str:
    s = w.spec
    if s.sizing.objective != "auto":
        return s.sizing.objective
    rate = w.targets.tokens_per_second if s.task == "inference" else s.train.tokens
    return "per-token" if rate else "hourly"


def _placement_code(s, o) -> str | None:
    p = s.placement
    if p.providers is not None and o.provider not in p.providers:
        return "provider"
    if p.regions is not None and o.region not in p.regions and o.zone not in p.regions and o.provider != "onprem":
        return "region"
    if p.gpus is not None and o.gpu not in p.gpus:
        return "gpu"
    if o.opt_in and not p.allow_opt_in:
        return "opt-in"
    return None


def _sizing(w, o) -> tuple[int, fit_mod.Fit]:
    """Every node count the planner may use, each judged by fit.fit; the fewest that fits, else the failure shown."""
    serving = w.spec.task == "inference"
    if o.gpu_fraction < 1 or (serving and w.model.kind != "llm"):
        counts = [1]
    else:
        counts = [n for n in optimize.TRAINING_NODES if n <= (o.max_nodes or optimize.TRAINING_NODES[-1])]
    verdicts = [(n, fit_mod.fit(w, fit_mod.shape_of(o, n))) for n in counts]
    for i, (n, f) in enumerate(verdicts):
        if f.ok:
            return n, f
        if f.code == "interconnect" and i > 0:
            return verdicts[i - 1]  # more nodes need a fabric: the limit shown is the one before
        if serving and f.code != "memory":
            return n, f  # serving adds pipeline stages only for memory
    return verdicts[-1]


def _judge(w, o, purchase: str, quotas: dict) -> dict:
    """One candidate, judged from scratch: its code (None when feasible), nodes, $/hour and $/Mtok."""
    s = w.spec
    price = o.on_demand_usd if purchase == "on-demand" else o.spot_usd
    # Whether the GPU can run the spec's precision at any size (or its allowed fallback): "next cheaper" names
    # only offers that could (a P4 rejected for memory could not run bf16 on any count).
    runs = not fit_mod.precision_problem(w, hardware.load_gpus()[o.gpu])[0]
    out = {"code": _placement_code(s, o), "nodes": 1, "hourly": price, "per_mtok": None, "runs_precision": runs}
    if out["code"]:
        return out
    if price is None:
        return {**out, "code": "purchase"}
    nodes, f = _sizing(w, o)
    hourly = price * nodes * f.node_groups
    out.update(nodes=nodes, hourly=hourly)
    if not f.ok:
        return {**out, "code": f.code}
    quota = quotas.get((o.provider, o.region, purchase, o.instance_type[:1].upper() if o.provider == "aws" else ""))
    launched = nodes * f.node_groups
    if not s.deploy.machine_image and images.unsupported(o.provider, o.instance_type):
        code = "image"  # a family with no supported machine image (data/images.yaml), judged after fit
    elif o.vcpus < w.min_vcpus(o.gpu_count * o.gpu_fraction):
        code = "host-vcpu"
    elif o.ram_gib < w.min_ram_gib(o.gpu_count):
        code = "host-ram"
    elif o.gpus_free is not None and o.gpu_count * launched > o.gpus_free:
        code = "capacity"
    elif quota is not None and o.vcpus * launched > quota:
        code = "quota"
    elif s.placement.max_hourly_usd is not None and hourly > s.placement.max_hourly_usd:
        code = "budget"
    else:
        code = None
    out["code"] = code
    if code is None and _objective(w) == "per-token":
        if s.task == "inference":
            rate = w.targets.tokens_per_second or (f.tokens_per_second or 0) * f.replicas
            out["per_mtok"] = hourly / (rate * 3600) * 1e6 if rate else None
        elif f.run_hours is not None:  # training plus the run's fixed time (estimate.jobcost)
            out["per_mtok"] = hourly * f.run_hours / s.train.tokens * 1e6
    return out


def _key(o, purchase: str) -> tuple:
    return (o.provider, o.region, o.zone, o.instance_type, o.gpu_count, purchase)


def oracle(spec: dict, offers: list, quotas: dict) -> dict:
    """Brute force over every offer x purchase option; feasible ones sorted by the documented rank key."""
    w = plan_mod.workload(gpusizer.load_spec(spec))
    wanted = w.spec.placement.purchase
    judged = {}
    for o in offers:
        purchases = (
            ("on-demand",) if o.provider == "onprem" else ("on-demand", "spot") if wanted == "any" else (wanted,)
        )
        for purchase in purchases:
            judged[_key(o, purchase)] = _judge(w, o, purchase, quotas)

    def rank(k):
        v = judged[k]
        metric = v["per_mtok"] if v["per_mtok"] is not None else v["hourly"]
        provider, region, zone, instance_type, count, purchase = k
        return (
            metric,
            v["hourly"],
            count * v["nodes"],
            providers.NAMES.index(provider),
            region,
            zone or "",
            instance_type,
            purchase,
        )

    def by_price(k):
        v = judged[k]
        provider, region, zone, instance_type, count, purchase = k
        price = v["hourly"] if v["hourly"] is not None else math.inf
        return (price, count * v["nodes"], providers.NAMES.index(provider), region, zone or "", instance_type, purchase)

    ranked = sorted((k for k, v in judged.items() if v["code"] is None), key=rank)
    rejected = sorted((k for k, v in judged.items() if v["code"]), key=by_price)
    nearest = {}
    for k in rejected:  # cheapest first, so the first of each reason is its nearest
        nearest.setdefault(judged[k]["code"], k)
    next_cheaper = None
    if ranked:
        # The closest cheaper rejection on a sizing, host, capacity or budget limit, on a GPU that can run the
        # spec's precision; of equal prices, the first.
        chosen = judged[ranked[0]]["hourly"]
        cheaper = [
            k
            for k in rejected
            if judged[k]["code"] not in PLACEMENT_CODES and judged[k]["hourly"] < chosen and judged[k]["runs_precision"]
        ]
        next_cheaper = max(cheaper, key=lambda k: judged[k]["hourly"], default=None)
    return {
        "judged": judged,
        "ranked": ranked,
        "nearest": nearest,
        "next_cheaper": next_cheaper,
        "counts": collections.Counter(v["code"] for v in judged.values() if v["code"]),
    }


def _case(seed: int):
    rng = random.Random(seed)
    spec, offers, pools, quotas = _spec(rng), _offers(rng), _pools(rng), _quotas(rng)
    p = spec["placement"]
    if "regions" in p:  # name only places the catalog sells in (an unknown one is an input error)
        known = {o.region for o in offers} | {o.zone for o in offers if o.zone}
        p["regions"] = [r for r in p["regions"] if r in known] or [offers[0].region]
    return spec, offers, pools, quotas


@pytest.mark.parametrize("seed", range(120))
def test_planner_agrees_with_brute_force_oracle(seed):
    spec, offers, pools, quotas = _case(seed)
    d = gpusizer.plan(spec, catalog=Catalog(tuple(offers), quotas=quotas), pools=pools)
    pool_offers = [o for p in pools for o in p.to_offers()]
    want = oracle(spec, offers + pool_offers, quotas)

    got = {_key(c.offer, c.purchase): c for c in d.candidates}
    assert set(got) == set(want["judged"])  # every offer x purchase option is accounted for
    for k, v in want["judged"].items():
        c = got[k]
        assert (c.rejection.code if c.rejection else None, c.nodes) == (v["code"], v["nodes"]), k
        assert c.hourly_usd == pytest.approx(v["hourly"]), k
        if v["code"] is None:
            assert c.usd_per_mtok == pytest.approx(v["per_mtok"]), k
    assert [_key(c.offer, c.purchase) for c in d.feasible] == want["ranked"]
    chosen = None if d.chosen is None else _key(d.chosen.offer, d.chosen.purchase)
    assert chosen == (want["ranked"][0] if want["ranked"] else None)
    assert collections.Counter(c.rejection.code for c in d.candidates if not c.feasible) == want["counts"]
    assert d.rejections_by_reason == dict(want["counts"])
    assert {c.rejection.code: _key(c.offer, c.purchase) for c in d.nearest_rejected()} == want["nearest"]
    nxt = None if d.next_cheaper is None else _key(d.next_cheaper.offer, d.next_cheaper.purchase)
    assert nxt == want["next_cheaper"]


@pytest.mark.parametrize("seed", range(0, 120, 7))
def test_trimmed_plan_json_is_the_top_feasible_and_nearest_rejected_of_the_full_one(seed):
    spec, offers, pools, quotas = _case(seed)
    d = gpusizer.plan(spec, catalog=Catalog(tuple(offers), quotas=quotas), pools=pools)
    full, top2 = gpusizer.document(d), gpusizer.document(d, top=2)
    assert full["rejections_by_reason"] == top2["rejections_by_reason"]
    assert full["candidates_total"] == top2["candidates_total"] == len(full["candidates"])
    assert sum(full["rejections_by_reason"].values()) == sum(not c["feasible"] for c in full["candidates"])
    feasible = [c for c in full["candidates"] if c["feasible"]]
    firsts = {}
    for c in full["candidates"]:
        if not c["feasible"]:
            firsts.setdefault(c["reason_code"], c)
    assert top2["candidates"] == feasible[:2] + sorted(firsts.values(), key=full["candidates"].index)


def test_oracle_cases_cover_every_rejection_code_and_multi_node():
    """The generated cases exercise what the oracle is there to check (else agreement proves little)."""
    codes: collections.Counter = collections.Counter()
    multi_node = replicas = 0
    for seed in range(120):
        spec, offers, pools, quotas = _case(seed)
        want = oracle(spec, offers + [o for p in pools for o in p.to_offers()], quotas)
        codes.update(want["counts"])
        multi_node += any(v["nodes"] > 1 and v["code"] is None for v in want["judged"].values())
        replicas += spec.get("deploy", {}).get("replicas", 1) > 1 and bool(want["ranked"])
    every = {
        "provider",
        "region",
        "gpu",
        "opt-in",
        "purchase",
        "memory",
        "interconnect",
        "ttft",
        "tpot",
        "throughput",
        "deadline",
        "precision",
        "image",
        "host-vcpu",
        "host-ram",
        "capacity",
        "quota",
        "budget",
    }
    assert every <= set(codes), every - set(codes)
    assert multi_node and replicas
    zones = {o.zone for seed in range(120) for o in _case(seed)[1] if o.zone}
    assert any(set(_case(seed)[0]["placement"].get("regions", ())) & zones for seed in range(120))  # a zone filter
