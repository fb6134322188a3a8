"""Seeded fuzzing of every input: specs, pools, hf_config files and raw YAML text.

The only outcomes allowed are a Decision whose JSON is valid (no NaN or
Infinity) or a SpecError; anything else escaping the public API is a bug
(docs/contract.md section 5). Values mix the hostile (booleans, NaN, .inf,
1e308, 5e-324, huge integers, wrong types) with plausible ones drawn on a log
scale, so the estimators and the optimizer see extreme but valid specs too.
Each test is seeded, so a failure reproduces; the seed is in the message.
"""

from __future__ import annotations

import copy
import json
import math
import collections
import random

import pytest

import gpusizer
from gpusizer.base import inputs
from gpusizer.facts import registry
from gpusizer.render import report
from gpusizer.catalog import Catalog
from tests.conftest import REPO, make_offer

HF = REPO / "tests/data"

CATALOG = Catalog(
    (
        make_offer("g6.xlarge", "L4", 1, 22.35, 0.805),
        make_offer("g6.12xlarge", "L4", 4, 22.35, 4.6),
        make_offer("p5.48xlarge", "H100", 8, 79.65, 55.04, fabric="efa"),
        make_offer("a3-highgpu-1g", "H100", 1, 79.65, 11.0, provider="gcp", region="us-central1"),
    )
)

HOSTILE = [True, False, None, 0, -1, 1, 2, 17, 0.5, -0.0, 1e-308, 5e-324, 1e308, 1e12, 10**20, 2**63,
           float("inf"), float("-inf"), float("nan"), "8", "2.0e9", "abc", "", "x" * 300, [], [3], {}, {"a": 1}]

SPEC_PATHS = [
    "model.params_b", "model.active_params_b", "model.layers", "model.hidden_size", "model.attention_heads",
    "model.kv_heads", "model.head_dim", "inference.context_length", "inference.batch_size",
    "inference.prompt_tokens", "inference.targets.tokens_per_second", "inference.targets.ttft_ms",
    "inference.targets.tpot_ms", "inference.output_tokens", "inference.output_tokens.mean",
    "inference.targets.requests_per_second", "inference.targets.p95.ttft_ms", "inference.layout.tensor_parallel",
    "model.quantization.scheme", "model.quantization.group_size", "training.sequence_length", "training.micro_batch_size", "training.tokens",
    "training.deadline_hours", "training.lora_rank", "training.activation_checkpointing", "growth",
    "placement.max_hourly_usd", "placement.allow_opt_in", "sizing.memory_headroom", "deploy.replicas",
    "deploy.failover_types", "deploy.disk_gib", "precision", "name",
]

BASES = [
    {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"batch_size": 4, "targets": {}}},
    {"name": "arch", "model": {"params_b": 7.0, "layers": 32, "hidden_size": 4096, "attention_heads": 32,
                               "kv_heads": 8}, "inference": {"targets": {"tokens_per_second": 500}}},
    {"name": "train", "model": {"name": "llama-3.1-8b"}, "task": "training",
     "training": {"tokens": 1e9, "deadline_hours": 24}},
    {"name": "tune", "model": {"name": "llama-3.1-8b"}, "task": "finetune", "finetune_method": "qlora",
     "precision": "int4", "training": {"sequence_length": 2048}},
]


def _paths_for(base: dict) -> list[str]:
    """The paths a base spec can take without changing its kind (its task, its way of naming the model)."""
    wrong = ("training." if base.get("task", "inference") == "inference" else "inference.",
             "model." if "name" in base["model"] else "model.name")
    return [p for p in SPEC_PATHS if not p.startswith(wrong)]


def _plausible(rng: random.Random):
    """A valid-looking number on a log scale from 1e-3 to 1e9, sometimes whole."""
    x = 10 ** rng.uniform(-3, 9)
    return int(x) if rng.random() < 0.5 else x


def _set(doc: dict, path: str, value) -> None:
    *parents, leaf = path.split(".")
    for key in parents:
        if not isinstance(doc.get(key), dict):
            doc[key] = {}
        doc = doc[key]
    doc[leaf] = value


def _no_constant(token):
    raise AssertionError(f"{token} in JSON output")


def _check_outcome(run, seed: int) -> str:
    """Run `run()`; a SpecError or a Decision with valid JSON passes, anything else fails with the seed."""
    try:
        decision = run()
    except gpusizer.SpecError as exc:
        assert len(str(exc)) < 4000, f"seed {seed}: a {len(str(exc))}-character message"
        return "invalid"
    except Exception as exc:  # noqa: BLE001 - the assertion is that nothing else escapes
        pytest.fail(f"seed {seed}: {type(exc).__name__}: {exc}"[:500])
    json.loads(report.render(decision, "json"), parse_constant=_no_constant)
    report.render(decision, "markdown")
    return "decided" if decision.chosen is not None else "infeasible"


def _get(doc: dict, path: str):
    for key in path.split("."):
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def _mutated(rng: random.Random, base: dict, paths: list[str]) -> dict:
    """`base` with one or two fields replaced: a hostile value, a log-scale number, or the old one scaled."""
    doc = copy.deepcopy(base)
    for _ in range(rng.randint(1, 2)):
        path = rng.choice(paths)
        old, pick = _get(doc, path), rng.random()
        if pick < 0.4:
            value = rng.choice(HOSTILE)
        elif pick < 0.7 and isinstance(old, (int, float)) and not isinstance(old, bool):
            value = type(old)(old * rng.choice((0.25, 0.5, 2, 4, 1000)))
        else:
            value = _plausible(rng)
        _set(doc, path, value)
    return doc


@pytest.mark.slow
def test_fuzzed_specs_give_a_decision_or_a_spec_error():
    rng = random.Random(15)
    outcomes = {"invalid": 0, "decided": 0, "infeasible": 0}
    for seed in range(2500):
        base = rng.choice(BASES)
        spec = _mutated(rng, base, _paths_for(base))
        outcomes[_check_outcome(lambda: gpusizer.plan(spec, catalog=CATALOG), seed)] += 1
    # The mix must exercise both sides, or the fuzzing proves nothing.
    assert outcomes["invalid"] > 500 and outcomes["decided"] + outcomes["infeasible"] > 200, outcomes


POOL = {"name": "rack", "location": "dc1", "gpu": "L40S", "gpus_per_node": 4, "nodes": 2, "usd_per_gpu_hour": 0.9}
POOL_COST = {"name": "own", "location": "dc2", "gpu": "H100", "gpus_per_node": 8, "capex_usd_per_node": 300000,
             "power_kw_per_node": 10.2}
POOL_PATHS = ["gpus_per_node", "nodes", "gpus_free", "usd_per_gpu_hour", "capex_usd_per_node", "lifetime_years",
              "power_kw_per_node", "usd_per_kwh", "pue", "utilization", "opex_usd_per_node_year", "vcpus_per_node",
              "ram_gib_per_node", "nvlink", "location", "gpu", "fabric"]


def test_fuzzed_pools_give_a_decision_or_a_spec_error():
    rng = random.Random(1515)
    spec = gpusizer.load_spec(BASES[0])
    outcomes = {"invalid": 0, "decided": 0, "infeasible": 0}
    for seed in range(1500):
        pool = _mutated(rng, rng.choice([POOL, POOL_COST]), POOL_PATHS)
        outcomes[_check_outcome(lambda: gpusizer.plan(spec, catalog=CATALOG, pools=gpusizer.parse_pools([pool])),
                                seed)] += 1
    assert outcomes["invalid"] > 300 and outcomes["decided"] > 150, outcomes


HF_KEYS = ["num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
           "vocab_size", "intermediate_size", "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
           "tie_word_embeddings", "max_position_embeddings", "kv_lora_rank", "qk_rope_head_dim", "sliding_window",
           "sliding_window_pattern", "use_sliding_window", "first_k_dense_replace", "n_routed_experts", "text_config"]


@pytest.mark.slow
def test_fuzzed_hf_configs_give_a_decision_or_a_spec_error(tmp_path):
    rng = random.Random(151515)
    bases = [json.loads((HF / f).read_text()) for f in
             ("hf_config_llama31_8b.json", "hf_config_mixtral.json", "hf_config_deepseek_v3.json")]
    outcomes = {"invalid": 0, "decided": 0, "infeasible": 0}
    path = tmp_path / "config.json"
    spec = {"name": "hf", "model": {"hf_config": str(path)}, "inference": {"context_length": 2048}}
    for seed in range(500):
        cfg = _mutated(rng, rng.choice(bases), HF_KEYS)
        # json.dumps writes NaN/Infinity, which the reader must refuse as invalid JSON.
        path.write_text(json.dumps(cfg))
        outcomes[_check_outcome(lambda: gpusizer.plan(spec, catalog=CATALOG), seed)] += 1
    assert outcomes["invalid"] > 100 and outcomes["decided"] + outcomes["infeasible"] > 50, outcomes


SPEC_TEXT = """\
name: chat
model: &m {name: llama-3.1-8b}
inference:
  context_length: 8192
  batch_size: 16
  targets: {tokens_per_second: 2000, ttft_ms: 500}
placement: {providers: [aws, gcp], purchase: on-demand}
"""


def test_fuzzed_yaml_text_parses_or_is_a_spec_error():
    rng = random.Random(15151515)
    alphabet = "&*[]{}:,-!|>'\"#%@`?\n\t \\x0.1e9~"
    outcomes: collections.Counter = collections.Counter()
    for seed in range(1500):
        text = list(SPEC_TEXT)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(text))
            op = rng.random()
            if op < 0.4:
                text[i] = rng.choice(alphabet)
            elif op < 0.7:
                text.insert(i, rng.choice(alphabet) * rng.randint(1, 200))
            else:
                del text[i]
        outcome = _check_outcome(
            lambda: gpusizer.plan(inputs.load_yaml("".join(text), "fuzzed spec"), catalog=CATALOG), seed)
        assert outcome in ("invalid", "decided", "infeasible")
        outcomes[outcome] += 1
    # Both sides are hit (this seed: 1,486 invalid, 14 decided): a parser that refused everything would fail.
    assert outcomes["invalid"] >= 1000 and outcomes["decided"] + outcomes["infeasible"] >= 5, outcomes


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e308, 1e-308, 5e-324])
def test_json_output_is_finite_for_extreme_inputs(value):
    spec = {**BASES[0], "growth": value}
    try:
        decision = gpusizer.plan(spec, catalog=CATALOG)
    except gpusizer.SpecError as exc:
        assert "growth" in str(exc)
        return
    doc = json.loads(report.render(decision, "json"), parse_constant=_no_constant)
    assert all(math.isfinite(c["hourly_usd"]) for c in doc["candidates"])


def test_registry_parser_is_importable_for_hub_configs():
    """t10's model.hf_id calls registry.parse_hf_config on a config fetched from the Hub."""
    cfg = json.loads((HF / "hf_config_llama31_8b.json").read_text())
    m = registry.parse_hf_config(cfg, "meta-llama/Llama-3.1-8B-Instruct")
    assert m.params / 1e9 == pytest.approx(8.03, rel=0.01)  # published: 8.03B (model card)
