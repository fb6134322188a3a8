"""Training fixtures the component tests share: a 70B pretraining spec and one-offer catalogs of the two
RDMA fabrics (an EFA p5.48xlarge, a GPUDirect-RDMA a3-ultragpu-8g). The offers are test stand-ins: their
GPUs and memory are the packaged catalog's (8 x H100 at 79.65 GiB, 8 x H200 at 140 GiB); their prices only
make each the one offer a pretraining spec can choose, and no test reads them as published figures."""

from __future__ import annotations

from gpusizer.catalog import Catalog
from tests.conftest import make_offer

P5_OFFER = make_offer("p5.48xlarge", "H100", 8, 79.65, 55.04, fabric="efa", network_gbps=3200, nvlink=True)
P5 = Catalog((P5_OFFER,))
ULTRA = Catalog(
    (
        make_offer(
            "a3-ultragpu-8g",
            "H200",
            8,
            140.0,
            80.0,
            provider="gcp",
            region="us-central1",
            zone="us-central1-b",
            fabric="rdma",
            network_gbps=3600,
            nvlink=True,
        ),
    )
)
PRETRAIN = {
    "name": "pretrain",
    "model": {"name": "llama-3.1-70b"},
    "task": "training",
    "training": {"sequence_length": 4096},
    "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
}
GCP_PRETRAIN = {**PRETRAIN, "placement": {"providers": ["gcp"]}}
