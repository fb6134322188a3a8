"""estimate's per_gpu: the physical minimum of GPUs (any valid layout), and the cheapest catalog offer apart."""

from __future__ import annotations

import gpusizer
from gpusizer.catalog import Catalog
from tests import conftest
from tests.conftest import make_offer

# The contract's acceptance case: an 8B bf16 chat spec.
CHAT_8B = {
    "name": "chat",
    "model": {"name": "llama-3.1-8b"},
    "precision": "bf16",
    "inference": {"context_length": 4096, "batch_size": 4},
}


def _row(e, gpu):
    return next(r for r in gpusizer.document(e)["per_gpu"] if r["gpu"] == gpu)


def test_h200_needs_one_gpu_though_the_catalog_sells_eight():
    h200 = _row(gpusizer.estimate(CHAT_8B), "H200")
    assert h200["min_count"] == 1
    offer = h200["smallest_offer"]
    assert offer is not None and offer["gpu_count"] == 8  # p5en.48xlarge / a3-ultragpu-8g: 8 GPUs is the smallest sold
    assert offer["limiting"] == "catalog-shape"
    assert {"instance_type", "gpu_count", "hourly_usd"} <= set(offer)


def test_min_count_does_not_depend_on_the_shapes_sold():
    # Llama-3.1-70B bf16: 141 GB of weights = 131.4 GiB; one H100 holds 79.65 x 0.90 = 71.7 GiB, two suffice.
    only_8x = Catalog((make_offer("p5.48xlarge", "H100", 8, 79.65, 55.04, fabric="efa"),))
    h100 = _row(gpusizer.estimate({"name": "big", "model": {"name": "llama-3.1-70b"}}, catalog=only_8x), "H100")
    assert h100["min_count"] == 2
    assert h100["smallest_offer"]["gpu_count"] == 8 and h100["smallest_offer"]["limiting"] == "catalog-shape"


def test_gpu_without_an_adequate_offer_has_a_null_smallest_offer():
    only_l4 = Catalog((make_offer("g6.xlarge", "L4", 1, 22.35, 0.805),))
    e = gpusizer.estimate(CHAT_8B, catalog=only_l4)
    assert _row(e, "H100")["min_count"] == 1
    assert _row(e, "H100")["smallest_offer"] is None
    assert _row(e, "L4")["smallest_offer"]["instance_type"] == "g6.xlarge"


def test_throughput_target_counts_every_replica_in_min_count():
    spec = {**CHAT_8B, "inference": {**CHAT_8B["inference"], "targets": {"tokens_per_second": 2000}}}
    h100 = _row(gpusizer.estimate(spec), "H100")
    assert h100["min_count"] >= h100["replicas"] >= 1
    assert h100["min_count"] == h100["replicas"] * h100["tensor_parallel"]


def test_bf16_gpu_without_bf16_has_no_count_and_says_why():
    t4 = _row(gpusizer.estimate(CHAT_8B), "T4")
    assert t4["min_count"] is None and t4["limiting"] == "precision"


SDXL = {
    "name": "img",
    "model": {"name": "stabilityai/stable-diffusion-xl-base-1.0"},
    "precision": "fp16",
    "inference": {"batch_size": 4},
}


def test_diffusion_model_is_reported_without_kv_cache_or_token_targets():
    from gpusizer.render import report

    req = gpusizer.document(gpusizer.estimate(SDXL))["requirements"]
    assert "kv_cache_precision" not in req and "kv_cache_gib_per_sequence" not in req
    assert "tokens_per_second" not in req["targets"]
    text = report.render(gpusizer.plan(SDXL))
    assert "context" not in text.splitlines()[0] and "TPOT" not in text


def test_image_model_is_not_split_across_gpus():
    # SDXL fp16 at batch 4 needs ~16 GiB on one GPU (6.5 weights + 8 activations + 1.5 overhead);
    # four 15 GiB T4s hold 60 GiB in all but 13.5 GiB each: no tensor parallel for a diffusion pipeline.
    four_t4 = Catalog((make_offer("g4dn.12xlarge", "T4", 4, 15.0, 3.9, nvlink=False),))
    d = gpusizer.plan(SDXL, catalog=four_t4)
    assert d.chosen is None
    assert d.candidates[0].rejection.code == "memory"


def test_estimate_exits_3_when_no_gpu_model_runs_it(tmp_path):
    # README, exit codes: 3 is "valid input but nothing feasible", for estimate as for plan.
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "name: e\nmodel: {name: llama-3.1-8b}\ninference: {context_length: 4096, batch_size: 1, "
        "targets: {ttft_ms: 0.01}}\n"
    )  # 10 us to first token: no GPU reaches it
    r = conftest.cli("estimate", spec)
    assert r.returncode == 3 and "Traceback" not in r.stderr
    assert conftest.cli("estimate", conftest.REPO / "stacks/examples/chat-8b.yaml").returncode == 0
