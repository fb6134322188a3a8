"""A one-node training run downloads its weights and data at its node's network rate (estimate.jobcost), in the plan.

The optimizer fits one-node shapes without their fabric (no hops); the network rate must stay for training, or
every one-node run is timed at the 10 Gbit/s fallback whatever the instance has.
"""

from __future__ import annotations

import pytest

import gpusizer
from gpusizer.catalog import Catalog
from tests.conftest import make_offer

LORA = {
    "name": "lora",
    "model": {"name": "llama-3.1-8b"},
    "task": "finetune",
    "finetune_method": "lora",
    "training": {"sequence_length": 4096, "tokens": 1e8},
}


def test_a_one_node_run_downloads_at_its_instances_network_rate():
    offers = (
        make_offer("fast.h100", "H100", 1, 79.65, 4.0, network_gbps=100.0),
        make_offer("slow.h100", "H100", 1, 79.65, 4.0, network_gbps=0.0),
    )  # 0: unknown, 10 Gbit/s
    d = gpusizer.plan(LORA, catalog=Catalog(offers))
    fixed = {c.offer.instance_type: c.fit.fixed for c in d.candidates if c.purchase == "on-demand"}
    # 100 Gbit/s x 0.8 = 10 GB/s, capped at 1.25 GB/s; the fallback 10 Gbit/s x 0.8 / 8 = 1.0 GB/s: 1.25x faster.
    assert fixed["slow.h100"].weights_download / fixed["fast.h100"].weights_download == pytest.approx(1.25)
    assert fixed["slow.h100"].dataset_download / fixed["fast.h100"].dataset_download == pytest.approx(1.25)
    assert d.chosen.offer.instance_type == "fast.h100"  # same price, shorter run, cheaper per token
