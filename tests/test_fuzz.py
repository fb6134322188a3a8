"""Property-based fuzzing (Hypothesis) of every input: specs, pools, hf_config files, raw YAML text, stack
config, plan/preview/diff documents, calibrate result files and Prometheus answers.

The only outcomes allowed are a result whose JSON is valid (no NaN or Infinity) or a SpecError (an input
the user can fix, exit 2); anything else escaping is a bug (docs/contract.md section 5). Values mix the
hostile (booleans, NaN, .inf, 1e308, 5e-324, huge integers, wrong types) with plausible ones on a log scale,
so the estimators and the optimizer see extreme but valid inputs too. Hypothesis shrinks a failure to a
minimal input. Every test runs a fixed budget of examples, derandomized (the same examples on every run,
no example database), so CI time is bounded and a failure reproduces: the whole file runs in well under
60 s on the 2-core CI machine (measured: see the lead's report for the figure).
"""

from __future__ import annotations

import collections
import copy
import json
import math

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import gpusizer
from gpusizer.base import inputs
from gpusizer.catalog import Catalog
from gpusizer.facts import registry
from gpusizer.render import report
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

HOSTILE = [
    True,
    False,
    None,
    0,
    -1,
    1,
    2,
    17,
    0.5,
    -0.0,
    1e-308,
    5e-324,
    1e308,
    1e12,
    10**20,
    2**63,
    float("inf"),
    float("-inf"),
    float("nan"),
    "8",
    "2.0e9",
    "abc",
    "",
    "x" * 300,
    [],
    [3],
    {},
    {"a": 1},
]


def budget(examples: int):
    """A fixed, derandomized example budget (no database, no deadline: CI machines are slow and shared)."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )


hostile = (
    st.sampled_from(HOSTILE)
    | st.floats()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.text(max_size=12)
    | st.lists(st.integers(-2, 10), max_size=3)
)
# A valid-looking number on a log scale from 1e-3 to 1e9, sometimes whole.
plausible = st.floats(min_value=-3, max_value=9).flatmap(lambda e: st.sampled_from([10**e, int(10**e)]))


SPEC_PATHS = [
    "model.params_b",
    "model.active_params_b",
    "model.layers",
    "model.hidden_size",
    "model.attention_heads",
    "model.kv_heads",
    "model.head_dim",
    "inference.context_length",
    "inference.batch_size",
    "inference.prompt_tokens",
    "inference.targets.tokens_per_second",
    "inference.targets.ttft_ms",
    "inference.targets.tpot_ms",
    "inference.output_tokens",
    "inference.output_tokens.mean",
    "inference.targets.requests_per_second",
    "inference.targets.p95.ttft_ms",
    "inference.layout.tensor_parallel",
    "model.quantization.scheme",
    "model.quantization.group_size",
    "training.sequence_length",
    "training.micro_batch_size",
    "training.tokens",
    "training.deadline_hours",
    "training.lora_rank",
    "training.activation_checkpointing",
    "growth",
    "placement.max_hourly_usd",
    "placement.allow_opt_in",
    "sizing.memory_headroom",
    "deploy.replicas",
    "deploy.failover_types",
    "deploy.disk_gib",
    "precision",
    "name",
]

BASES = [
    {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"batch_size": 4, "targets": {}}},
    {
        "name": "arch",
        "model": {"params_b": 7.0, "layers": 32, "hidden_size": 4096, "attention_heads": 32, "kv_heads": 8},
        "inference": {"targets": {"tokens_per_second": 500}},
    },
    {
        "name": "train",
        "model": {"name": "llama-3.1-8b"},
        "task": "training",
        "training": {"tokens": 1e9, "deadline_hours": 24},
    },
    {
        "name": "tune",
        "model": {"name": "llama-3.1-8b"},
        "task": "finetune",
        "finetune_method": "qlora",
        "precision": "int4",
        "training": {"sequence_length": 2048},
    },
]


def _paths_for(base: dict) -> list[str]:
    """The paths a base spec can take without changing its kind (its task, its way of naming the model)."""
    wrong = (
        "training." if base.get("task", "inference") == "inference" else "inference.",
        "model." if "name" in base["model"] else "model.name",
    )
    return [p for p in SPEC_PATHS if not p.startswith(wrong)]


def _set(doc: dict, path: str, value) -> None:
    *parents, leaf = path.split(".")
    for key in parents:
        if not isinstance(doc.get(key), dict):
            doc[key] = {}
        doc = doc[key]
    doc[leaf] = value


def _no_constant(token):
    raise AssertionError(f"{token} in JSON output")


def _check_outcome(run) -> str:
    """Run `run()`; a SpecError or a Decision with valid JSON passes, anything else fails (Hypothesis shrinks it)."""
    try:
        decision = run()
    except gpusizer.SpecError as exc:
        assert len(str(exc)) < 4000, f"a {len(str(exc))}-character message"
        return "invalid"
    json.loads(report.render(decision, "json"), parse_constant=_no_constant)
    report.render(decision, "markdown")
    return "decided" if decision.chosen is not None else "infeasible"


def _get(doc: dict, path: str):
    for key in path.split("."):
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def edits(paths: list[str]):
    """One or two (path, value) replacements: a log-scale number (twice as likely) or a hostile value."""
    return st.lists(st.tuples(st.sampled_from(paths), st.one_of(plausible, plausible, hostile)), min_size=1, max_size=2)


def _edited(base: dict, changes) -> dict:
    doc = copy.deepcopy(base)
    for path, value in changes:
        _set(doc, path, value)
    return doc


@st.composite
def specs(draw):
    base = draw(st.sampled_from(BASES))
    return _edited(base, draw(edits(_paths_for(base))))


@pytest.mark.slow
def test_fuzzed_specs_give_a_decision_or_a_spec_error():
    outcomes = collections.Counter()

    @budget(400)
    @given(specs())
    def check(spec):
        outcomes[_check_outcome(lambda: gpusizer.plan(spec, catalog=CATALOG))] += 1

    check()
    # The mix must exercise both sides, or the fuzzing proves nothing (357 invalid, 43 planned when measured).
    assert outcomes["invalid"] > 50 and outcomes["decided"] + outcomes["infeasible"] >= 15, outcomes


POOL = {"name": "rack", "location": "dc1", "gpu": "L40S", "gpus_per_node": 4, "nodes": 2, "usd_per_gpu_hour": 0.9}
POOL_COST = {
    "name": "own",
    "location": "dc2",
    "gpu": "H100",
    "gpus_per_node": 8,
    "capex_usd_per_node": 300000,
    "power_kw_per_node": 10.2,
}
POOL_PATHS = [
    "gpus_per_node",
    "nodes",
    "gpus_free",
    "usd_per_gpu_hour",
    "capex_usd_per_node",
    "lifetime_years",
    "power_kw_per_node",
    "usd_per_kwh",
    "pue",
    "utilization",
    "opex_usd_per_node_year",
    "vcpus_per_node",
    "ram_gib_per_node",
    "nvlink",
    "location",
    "gpu",
    "fabric",
]


def test_fuzzed_pools_give_a_decision_or_a_spec_error():
    spec = gpusizer.load_spec(BASES[0])
    outcomes = collections.Counter()

    @budget(300)
    @given(st.sampled_from([POOL, POOL_COST]), edits(POOL_PATHS))
    def check(base, changes):
        pool = _edited(base, changes)
        outcomes[_check_outcome(lambda: gpusizer.plan(spec, catalog=CATALOG, pools=gpusizer.parse_pools([pool])))] += 1

    check()
    assert outcomes["invalid"] > 50 and outcomes["decided"] >= 10, outcomes


HF_KEYS = [
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "intermediate_size",
    "num_local_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "tie_word_embeddings",
    "max_position_embeddings",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "sliding_window",
    "sliding_window_pattern",
    "use_sliding_window",
    "first_k_dense_replace",
    "n_routed_experts",
    "text_config",
]


def test_fuzzed_hf_configs_give_a_decision_or_a_spec_error(tmp_path):
    bases = [
        json.loads((HF / f).read_text())
        for f in ("hf_config_llama31_8b.json", "hf_config_mixtral.json", "hf_config_deepseek_v3.json")
    ]
    path = tmp_path / "config.json"
    spec = {"name": "hf", "model": {"hf_config": str(path)}, "inference": {"context_length": 2048}}
    outcomes = collections.Counter()

    @budget(150)
    @given(st.sampled_from(bases), edits(HF_KEYS))
    def check(base, changes):
        # json.dumps writes NaN/Infinity, which the reader must refuse as invalid JSON.
        path.write_text(json.dumps(_edited(base, changes)))
        outcomes[_check_outcome(lambda: gpusizer.plan(spec, catalog=CATALOG))] += 1

    check()
    assert outcomes["invalid"] > 20 and outcomes["decided"] + outcomes["infeasible"] >= 5, (
        outcomes
    )  # 135 / 15 when measured


SPEC_TEXT = """\
name: chat
model: &m {name: llama-3.1-8b}
inference:
  context_length: 8192
  batch_size: 16
  targets: {tokens_per_second: 2000, ttft_ms: 500}
placement: {providers: [aws, gcp], purchase: on-demand}
"""


YAML_ALPHABET = "&*[]{}:,-!|>'\"#%@`?\n\t \\x0.1e9~"


@st.composite
def yaml_texts(draw):
    text = list(SPEC_TEXT)
    for _ in range(draw(st.integers(1, 8))):
        i = draw(st.integers(0, len(text) - 1))
        op = draw(st.sampled_from(["replace", "insert", "delete"]))
        if op == "replace":
            text[i] = draw(st.sampled_from(YAML_ALPHABET))
        elif op == "insert":
            text.insert(i, draw(st.sampled_from(YAML_ALPHABET)) * draw(st.integers(1, 200)))
        elif len(text) > 1:
            del text[i]
    return "".join(text)


def test_fuzzed_yaml_text_parses_or_is_a_spec_error():
    outcomes = collections.Counter()

    @budget(300)
    @given(yaml_texts())
    @example(SPEC_TEXT)  # unchanged, it plans: a parser that refused everything fails here
    def check(text):
        outcomes[_check_outcome(lambda: gpusizer.plan(inputs.load_yaml(text, "fuzzed spec"), catalog=CATALOG))] += 1

    check()
    # Both sides are hit (most mutations break the text; how many still plan varies with Hypothesis' choices).
    assert outcomes["invalid"] >= 100 and outcomes["decided"] + outcomes["infeasible"] >= 1, outcomes


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


# --- stack config (a stack file's gpusizer:workloads and gpusizer:pools, as `gpusizer preview` reads them) ---


@st.composite
def stack_files(draw):
    items = draw(
        st.lists(
            st.one_of(specs(), st.sampled_from(["stacks/examples/chat-8b.yaml", "missing.yaml", ""]), hostile),
            min_size=0,
            max_size=3,
        )
    )
    config = {"aws:region": draw(st.sampled_from(["us-east-1", 5, None])), "gpusizer:workloads": items}
    if draw(st.booleans()):
        config["gpusizer:pools"] = [_edited(POOL, draw(edits(POOL_PATHS)))]
    return {"config": draw(st.sampled_from([config, {**config, 7: "x"}, [config], None, {"gpusizer:workloads": {}}]))}


def test_fuzzed_stack_config_gives_decisions_or_a_spec_error(tmp_path):
    offline = pytest.importorskip("gpusizer.policies.offline")  # needs the [pulumi] extra (in dev)
    from gpusizer import reuse

    path = tmp_path / "Pulumi.fuzz.yaml"
    outcomes = collections.Counter()

    @budget(120)
    @given(stack_files())
    def check(doc):
        path.write_text(json.dumps(doc, allow_nan=True))  # JSON is YAML; NaN tokens must be refused
        try:
            config, _ = offline._stack_config(path)
            items = config.get("gpusizer:workloads")
            if not isinstance(items, list):
                outcomes["no workloads"] += 1
                return
            loaded = [gpusizer.load_spec(REPO / item if isinstance(item, str) else item) for item in items]
            pools = gpusizer.parse_pools(config.get("gpusizer:pools") or [])
            for decision, _ in reuse.in_order(loaded, pools, CATALOG):
                json.loads(report.render(decision, "json"), parse_constant=_no_constant)
            outcomes["planned"] += 1
        except gpusizer.SpecError as exc:
            assert len(str(exc)) < 4000
            outcomes["invalid"] += 1

    check()
    assert outcomes["invalid"] > 20 and outcomes["planned"] >= 2, outcomes


# --- plan / preview / diff documents (`gpusizer diff`) ---


def _document_paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _document_paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            yield from _document_paths(v, prefix + (i,))


@pytest.fixture(scope="module")
def plan_documents():
    chat = gpusizer.document(gpusizer.plan(BASES[0], catalog=CATALOG))
    train = gpusizer.document(gpusizer.plan(BASES[2], catalog=CATALOG))
    return [
        chat,
        train,
        {
            "version": "1",
            "workloads": {"chat": chat, "train": train},
            "policy": {"resources": 3, "mandatory": 0, "passed": True, "findings": []},
        },
    ]


@st.composite
def mutated_documents(draw, bases):
    doc = copy.deepcopy(draw(st.sampled_from(bases)))
    paths = [p for p in _document_paths(doc) if p]
    for path in draw(st.lists(st.sampled_from(paths), min_size=1, max_size=3)):
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            if isinstance(parent, dict) and draw(st.booleans()) and draw(st.booleans()):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = draw(hostile | st.just({}) | st.just(None))
        except (KeyError, IndexError, TypeError):
            pass
    return doc


@pytest.mark.slow
def test_fuzzed_plan_and_preview_documents_diff_or_are_refused(plan_documents, tmp_path):
    from gpusizer import diff
    from gpusizer.render import diff as diff_view

    base, head = tmp_path / "base.json", tmp_path / "head.json"
    outcomes = collections.Counter()

    @budget(400)
    @given(st.sampled_from(plan_documents), mutated_documents(plan_documents), st.booleans())
    def check(good, bad, swap):
        base.write_text(json.dumps(good))
        head.write_text(json.dumps(bad))  # NaN/Infinity tokens included: the reader must refuse them
        first, second = (head, base) if swap else (base, head)
        try:
            (b, bp), (h, hp) = diff.load(first, "BASE"), diff.load(second, "HEAD")
        except gpusizer.SpecError as exc:
            assert str(exc).startswith(("BASE", "HEAD")) and "\n" not in str(exc).split(":", 1)[0]
            outcomes["invalid"] += 1
            return
        changes = diff.compare(b, h)
        json.loads(diff_view.render(changes, "json", (bp, hp)), parse_constant=_no_constant)
        diff_view.render(changes, "table", (bp, hp))
        diff_view.render(changes, "markdown", (bp, hp))
        outcomes["compared"] += 1

    check()
    assert outcomes["invalid"] > 50 and outcomes["compared"] > 20, outcomes


def test_fuzzed_diff_json_is_read_by_its_own_model(plan_documents):
    """What `gpusizer diff --format json` writes validates as the diff document it promises."""
    from gpusizer import diff
    from gpusizer.contract import output
    from gpusizer.render import diff as diff_view

    plans = {d["workload"]: d for d in plan_documents if "workload" in d}

    @budget(100)
    @given(mutated_documents(list(plans.values())))
    def check(bad):
        try:
            output.read(bad, "HEAD")
        except gpusizer.SpecError:
            return
        doc = json.loads(diff_view.render(diff.compare(plans, {bad["workload"]: bad}), "json", (None, None)))
        output.Diff.model_validate(doc)

    check()


# --- calibrate result files ---

CALIBRATION = REPO / "tests/data/calibration"
SERVING_KEYS = [
    "completed",
    "tensor_parallel_size",
    "max_concurrency",
    "total_input_tokens",
    "total_output_tokens",
    "mean_ttft_ms",
    "mean_tpot_ms",
    "gpu",
    "precision",
    "model_id",
]
TRAINING_KEYS = [
    "gpu_count",
    "tokens_per_second",
    "peak_memory_gib",
    "activation_checkpointing",
    "method",
    "model",
    "precision",
    "gpu",
]
# What --metadata writes (strings) next to what a corrupt file holds.
calibrate_values = hostile | st.sampled_from(["NaN", "nan", "inf", "-inf", "1", "0.5", "8", "1e999", "L40S", "true"])


@pytest.mark.slow
def test_fuzzed_calibrate_inputs_fit_finite_factors_or_are_refused(tmp_path):
    from gpusizer.measure import calibrate

    serving = json.loads((CALIBRATION / "vllm-serving-l40s-llama31-8b.json").read_text())
    training = json.loads((CALIBRATION / "training-h100x8-llama31-8b.json").read_text())
    path = tmp_path / "result.json"
    outcomes = collections.Counter()

    @budget(300)
    @given(
        st.sampled_from([(serving, SERVING_KEYS), (training, TRAINING_KEYS)]).flatmap(
            lambda b: st.tuples(st.just(b[0]), st.lists(st.tuples(st.sampled_from(b[1]), calibrate_values), max_size=3))
        )
    )
    def check(case):
        base, changes = case
        path.write_text(json.dumps({**base, **dict(changes)}))
        try:
            rows = calibrate.fit_file(path)
        except gpusizer.SpecError as exc:
            assert "result.json" in str(exc) or "RESULT" in str(exc) or "spec" in str(exc).lower(), str(exc)
            outcomes["invalid"] += 1
            return
        for _gpu, factor, value, _source in rows:
            assert math.isfinite(value) and 0.01 <= value <= 1.0, (factor, value)
        outcomes["fitted"] += 1

    check()
    assert outcomes["invalid"] > 50 and outcomes["fitted"] >= 5, outcomes  # 287 / 13 when measured


# --- Prometheus answers (`gpusizer observe`) ---

prom_values = (
    st.sampled_from(["NaN", "+Inf", "-Inf", "1e308", "-5", "0", "12288", "45776", "20", "abc", "", "1e-300"])
    | st.floats().map(repr)
    | hostile
)
prom_times = st.sampled_from([1.7e9, 0, -1, 1e308, 1e20]) | hostile


@st.composite
def prometheus_bodies(draw):
    """One answer: mostly a vector or matrix of the right shape with hostile leaves, sometimes a wrong shape."""
    labels = draw(
        st.dictionaries(
            st.sampled_from(["UUID", "Hostname", "modelName", "gpu", "instance_type", 5]),
            st.sampled_from(["NVIDIA L40S", "GPU-1", "node-1", "g6e.xlarge", "x" * 300]) | hostile,
            max_size=4,
        )
    )
    element = {"metric": labels, "value": [draw(prom_times), draw(prom_values)]}
    if draw(st.booleans()):
        element["values"] = draw(st.lists(st.tuples(prom_times, prom_values).map(list), max_size=5))
    if not draw(st.integers(0, 5)):
        element = draw(hostile)
    result = draw(st.lists(st.just(element), max_size=2))
    doc = {"status": "success", "data": {"resultType": "vector", "result": result}}
    if not draw(st.integers(0, 7)):
        doc = draw(
            st.sampled_from(
                [{"status": "success", "data": {"result": draw(hostile)}}, {"status": "error"}, draw(hostile)]
            )
        )
    return json.dumps(doc, allow_nan=True).encode()


@pytest.mark.slow
def test_fuzzed_prometheus_answers_give_a_report_or_one_clear_error(monkeypatch):
    from gpusizer import planner
    from gpusizer.base.errors import SizingError
    from gpusizer.measure import dcgm, observe, prometheus

    workload = planner.workload(planner.load_spec(BASES[0]))
    end = prometheus.parse_time("2026-11-23T12:00:00Z")
    client = prometheus.Client("http://127.0.0.1:9")
    outcomes = collections.Counter()

    @budget(300)
    @given(st.lists(prometheus_bodies(), min_size=1, max_size=12))
    def check(bodies):
        answers = iter(bodies * 20)
        monkeypatch.setattr(client, "_request", lambda path: (200, "OK", next(answers)))
        try:
            obs = dcgm.observe(client, "chat", 7 * 86400, end)
            row = observe.report(workload, obs, CATALOG, "7d")
        except SizingError as exc:  # PrometheusError or SpecError: the CLI's one-line exit 2
            assert "\n" not in str(exc) and len(str(exc)) < 1000, str(exc)
            outcomes["refused"] += 1
            return
        json.dumps(row, allow_nan=False)
        for key in ("peak_gpu_memory_gib", "p95_gpu_memory_gib", "mean_gpu_utilization", "p95_gpu_utilization"):
            value = (row["observed"] or {}).get(key)
            assert value is None or (math.isfinite(value) and value >= 0), (key, value)
        outcomes[row["recommendation"]["action"]] += 1

    check()
    assert outcomes["refused"] > 30 and sum(outcomes.values()) - outcomes["refused"] >= 10, outcomes
