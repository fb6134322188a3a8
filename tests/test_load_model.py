"""Issue 29: serving under load, queueing, spec additions, job fixed costs, speed in every output."""

import math

import pytest

import gpusizer
from gpusizer import planner
from gpusizer.estimate import fit as fit_mod
from gpusizer.estimate import speed
from gpusizer.facts import hardware


def test_queue_wait_matches_mm1_by_hand():
    # One server (concurrency 1), service 1 s, Poisson arrivals at 0.5/s: M/M/1 with rho = 0.5.
    # P(W > t) = rho x exp(-(mu - lambda) t), so the p95 wait is ln(0.5 / 0.05) / 0.5 = 4.605 s
    # (Allen-Cunneen factor (1 + 1) / 2 = 1 with exponential service).
    s = speed.InferenceSpeed(tpot_ms=10, ttft_ms=10, tokens_per_second=100, bound="", concurrency=1, e2e_ms=1000)
    assert speed.queue_wait_seconds(s, 0.5, 0.95) == pytest.approx(math.log(10) / 0.5, rel=1e-9)
    assert speed.queue_wait_seconds(s, 0.5, 0.40) == 0.0  # half the arrivals wait: the p40 does not
    assert speed.queue_wait_seconds(s, 1.0, 0.5) == math.inf  # at capacity the queue grows without bound


def _speed(c, prompt=1000, out=200):
    w = planner.workload(
        gpusizer.load_spec(
            {
                "name": "x",
                "model": {"name": "llama-3.1-8b"},
                "inference": {"prompt_tokens": prompt, "output_tokens": out, "batch_size": c},
            }
        )
    )
    return w.serving_speed(hardware.load_gpus()["H100"], 1, False)


def test_load_raises_ttft_and_tpot_and_throughput():
    one, fifty = _speed(1), _speed(50)
    assert fifty.ttft_ms > one.ttft_ms and fifty.tpot_ms > one.tpot_ms
    assert one.tokens_per_second < fifty.tokens_per_second < 50 * one.tokens_per_second
    # Arriving prompts are charged: a prompt 10x the output costs throughput at the same concurrency.
    assert _speed(50, prompt=2000, out=200).tokens_per_second < _speed(50, prompt=200, out=200).tokens_per_second


def test_tensor_parallel_floor_keeps_small_models_from_scaling_linearly():
    gpu = hardware.load_gpus()["H100"]
    w = planner.workload(
        gpusizer.load_spec(
            {"name": "x", "model": {"name": "llama-2-7b"}, "inference": {"prompt_tokens": 128, "output_tokens": 20}}
        )
    )
    tp1, tp8 = w.serving_speed(gpu, 1, True), w.serving_speed(gpu, 8, True)
    # NeMo's Llama 2 7B table: TP8 is 1.6x faster than TP1 at batch 1, nowhere near 8x.
    assert 1.2 < tp1.tpot_ms / tp8.tpot_ms < 3


@pytest.mark.parametrize(
    "inference, words",
    [
        ({"targets": {"p95": {"ttft_ms": 500}}}, "requests_per_second"),
        ({"context_length": 1000, "prompt_tokens": 900, "output_tokens": 200}, "exceed context_length"),
        ({"output_tokens": {"mean": 300, "max": 100}}, "below its mean"),
    ],
)
def test_bad_serving_fields_name_the_fix(inference, words):
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.load_spec({"name": "x", "model": {"name": "llama-3.1-8b"}, "inference": inference})
    assert words in str(e.value) and "To fix" in str(e.value)


def test_quantization_sets_precision_and_refuses_a_contradiction():
    s = gpusizer.load_spec({"name": "x", "model": {"name": "llama-3.1-8b", "quantization": {"scheme": "awq"}}})
    assert s.precision == "int4"
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.load_spec(
            {"name": "x", "model": {"name": "llama-3.1-8b", "quantization": {"scheme": "nvfp4"}}, "precision": "fp8"}
        )
    assert "precision: fp4" in str(e.value)


def test_context_length_follows_prompt_and_output_max():
    s = gpusizer.load_spec(
        {
            "name": "x",
            "model": {"name": "llama-3.1-8b"},
            "inference": {"prompt_tokens": 1000, "output_tokens": {"mean": 200, "max": 800}},
        }
    )
    assert s.serving.context_length == 1800


def test_fp4_runs_only_on_blackwell():
    d = gpusizer.document(
        gpusizer.plan({"name": "x", "model": {"name": "llama-3.3-70b", "quantization": {"scheme": "nvfp4"}}})
    )
    assert d["choice"]["gpu"] == "B200"
    assert any("FP4" in c["reasons"][0] for c in d["candidates"] if c["reason_code"] == "precision")


def test_percentile_targets_add_replicas_as_the_rate_grows():
    def replicas(rate):
        spec = {
            "name": "x",
            "model": {"name": "llama-3.1-8b"},
            "placement": {"gpus": ["L4"]},
            "inference": {
                "prompt_tokens": 500,
                "output_tokens": 200,
                "targets": {"requests_per_second": rate, "p95": {"ttft_ms": 3000}},
            },
        }
        return gpusizer.plan(spec).chosen.replicas

    assert replicas(40) > replicas(2) >= 1


def test_pinned_layout_is_the_layout_used():
    d = gpusizer.plan(
        {
            "name": "x",
            "model": {"name": "llama-3.1-70b"},
            "placement": {"gpus": ["H100"]},
            "inference": {"layout": {"tensor_parallel": 8}},
        }
    )
    assert d.chosen.fit.tensor_parallel == 8


def test_every_sized_candidate_reports_its_speed():
    d = gpusizer.document(gpusizer.plan({"name": "x", "model": {"name": "llama-3.1-8b"}}))
    sized = [c for c in d["candidates"] if c["performance"]]
    assert len(sized) > 10 and all("tpot_ms" in c["performance"] for c in sized if c["feasible"])


def test_short_qlora_picks_one_gpu_and_prices_the_fixed_time():
    # Issue 29: a QLoRA of Llama-3.1-8B on 50M tokens used to pick 8 x B200 spot for a 5-minute run.
    spec = {
        "name": "q",
        "model": {"name": "llama-3.1-8b"},
        "task": "finetune",
        "finetune_method": "qlora",
        "precision": "int4",
        "training": {"tokens": 5e7},
        "placement": {"purchase": "spot"},
    }
    c = gpusizer.document(gpusizer.plan(spec))["choice"]
    assert c["gpu_count"] == 1
    split = c["run_split"]
    assert split["boot_hours"] > 0 and split["image_pull_hours"] > 0 and split["weights_download_hours"] > 0
    assert sum(split.values()) == pytest.approx(c["run_hours"], abs=1e-3)
    assert c["total_usd"] == pytest.approx(c["hourly_usd"] * c["run_hours"], abs=0.01)


def test_min_count_is_the_physical_minimum_and_estimate_reports_speed():
    rows = {r["gpu"]: r for r in gpusizer.estimate({"name": "f", "model": {"name": "flux.1-dev"}}).per_gpu}
    # Was 16 (2 pipeline stages x the catalog's 8-GPU node): one 40 GB A100 runs FLUX.1-dev.
    assert rows["A100-40GB"]["min_count"] == 1
    # FLUX.1-dev in bf16 is 33.8 GB (31.5 GiB) in all, 23.8 GB (22.2 GiB) of it the transformer: at 85% of
    # 39.4 GiB (33.5 GiB) it fits only with the text encoders and VAE offloaded (diffusers), + 3 GiB
    # activations + 1.5 GiB overhead = 26.7 GiB, never by splitting it across nodes.
    spec = {
        "name": "f",
        "model": {"name": "flux.1-dev"},
        "placement": {"gpus": ["A100-40GB"]},
        "sizing": {"memory_headroom": 0.85},
    }
    choice = gpusizer.document(gpusizer.plan(spec))["choice"]
    assert choice["gpu_count"] == 1 and choice["nodes"] == 1 and "offloaded" in choice["performance"]["placement"]
    assert choice["performance"]["gpu_memory_needed_gib_per_gpu"] == pytest.approx(26.7, abs=0.1)
    rows = {r["gpu"]: r for r in gpusizer.estimate({"name": "c", "model": {"name": "llama-3.1-8b"}}).per_gpu}
    assert rows["L4"]["speed"]["tpot_ms"] > rows["H100"]["speed"]["tpot_ms"] > 0


def test_training_uses_tensor_parallelism_when_zero_cannot_hold_it():
    spec = {
        "name": "t",
        "model": {"name": "llama-3.1-70b"},
        "task": "training",
        "training": {"sequence_length": 8192, "micro_batch_size": 2, "activation_checkpointing": False},
    }
    w = planner.workload(gpusizer.load_spec(spec))
    f = fit_mod.fit(w, fit_mod.Shape("H100", 79.65, 8, 1.0, True, True, 8, 400.0))
    assert f.ok and f.tensor_parallel > 1


def test_context_parallelism_splits_activations_and_is_tried_for_long_sequences():
    from gpusizer.estimate import memory

    b = memory.MemoryBreakdown(
        weights=8.0, kv_cache=0.0, activations=100.0, gradients=8.0, optimizer_states=32.0, overhead=0.0
    )
    # 8 GPUs, no ZeRO: the states stay whole; 4-way context parallel holds a quarter of each sequence's activations.
    assert memory.per_gpu_training_bytes(b, 8, "none", cp=4) == 8 + 8 + 32 + 25
    assert memory.per_gpu_training_bytes(b, 8, "none", tp=2, cp=4) == (8 + 8 + 32) / 2 + 100 / 8
    shape = fit_mod.Shape("H100", 79.65, 8, 1.0, True)
    spec = {"name": "t", "model": {"name": "llama-3.1-8b"}, "task": "training", "training": {"sequence_length": 32768}}
    long = planner.workload(planner.load_spec(spec))
    short = planner.workload(planner.load_spec({**spec, "training": {"sequence_length": 4096}}))
    assert all(c == 1 for _, _, c in fit_mod._training_layouts(short, shape))
    assert (1, 1, 8) in fit_mod._training_layouts(long, shape)
    assert fit_mod.fit(long, shape).ok


def test_output_tokens_as_a_number_is_its_mean_and_bad_values_name_the_field():
    s = gpusizer.load_spec({"name": "x", "model": {"name": "llama-3.1-8b"}, "inference": {"output_tokens": 300}})
    assert s.serving.output_mean == 300 and s.serving.output_max == 300
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.load_spec({"name": "x", "model": {"name": "llama-3.1-8b"}, "inference": {"output_tokens": 0}})
    assert str(e.value).count("inference.output_tokens.mean") == 1 and "function" not in str(e.value)
