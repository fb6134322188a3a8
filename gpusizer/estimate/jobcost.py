"""The fixed time of a training or fine-tuning run: what a short job pays besides training.

Every run boots its nodes, pulls the container image, downloads the weights
and the dataset at the instance's network bandwidth, and writes its final
checkpoint; the provider bills at least its minimum. All of it goes into the
run's hours (gpusizer.base.cost: run_hours, total_usd) and the plan JSON shows
the split. A 5-minute job on 8 GPUs pays these minutes on every GPU, so short
jobs come out cheaper on one GPU.
"""

from __future__ import annotations

import typing

# Instance launch to a running container host with the GPU driver loaded: 4 minutes
# (unverified: AWS documents no figure; Deep Learning AMI GPU instances are commonly ready in
# 3-5 min, of which the NVIDIA driver and fabric manager take ~1 min on 8-GPU nodes).
BOOT_H = 4 / 60
# Serving/training container images (vllm/vllm-openai, PyTorch CUDA images) are 8-10 GB
# compressed (Docker Hub tags, 2025); pulled and unpacked at ~150 MB/s from a regional
# registry (ECR/Artifact Registry; unpacking is the bottleneck, unverified): 10 GB / 0.15 GB/s.
IMAGE_GB = 10.0
IMAGE_PULL_GBS = 0.15
# Weights and data come from object storage or the Hugging Face Hub at the instance's network
# rate x 0.8, capped at 1.25 GB/s (10 Gbit/s, a single S3/Hub stream set; unverified).
DOWNLOAD_EFFICIENCY = 0.8
DOWNLOAD_CAP_GBS = 1.25
# Raw text per token: about 4 bytes (OpenAI tokenizer guidance, "1 token ~ 4 characters" in English).
DATASET_BYTES_PER_TOKEN = 4.0
# Final checkpoint written to a network volume/object store at 1 GB/s per node (AWS EBS gp3 max
# throughput per volume, 1,000 MiB/s, EBS docs 2025).
CHECKPOINT_GBS = 1.0
# Billing minimum per provider, hours: AWS and GCP bill Linux instances per second with a
# 60-second minimum (AWS EC2 On-Demand pricing page, "per-second billing ... minimum of 60
# seconds"; GCP Compute Engine pricing, "1-minute minimum"); owned capacity (the providers
# registry's owned flag) bills nothing per run.
CLOUD_BILLING_MINIMUM_H = 60 / 3600


class FixedTime(typing.NamedTuple):
    """Hours a run spends besides training, by part."""

    boot: float
    image_pull: float
    weights_download: float
    dataset_download: float
    checkpoint_write: float

    @property
    def total(self) -> float:
        return sum(self)

    def to_dict(self) -> dict:
        return {k + "_hours": round(v, 4) for k, v in self._asdict().items()}


def fixed_time(
    network_gbps: float, weight_bytes: float, dataset_tokens: float, checkpoint_bytes: float, nodes: int = 1
) -> FixedTime:
    """The fixed hours of one run on nodes with `network_gbps` each (0: unknown, taken as 10 Gbit/s).

    >>> round(fixed_time(25.0, 16e9, 5e7, 0.2e9).total * 60, 1)  # 8B weights, 50M tokens, on a 25 Gbit/s node
    5.3
    """
    rate = min((network_gbps or 10.0) / 8 * DOWNLOAD_EFFICIENCY, DOWNLOAD_CAP_GBS) * 1e9
    return FixedTime(
        boot=BOOT_H,
        image_pull=IMAGE_GB / IMAGE_PULL_GBS / 3600,
        weights_download=weight_bytes / rate / 3600,
        dataset_download=dataset_tokens * DATASET_BYTES_PER_TOKEN / (rate * max(1, nodes)) / 3600,
        checkpoint_write=checkpoint_bytes / (CHECKPOINT_GBS * 1e9 * max(1, nodes)) / 3600,
    )


def billed_hours(provider: str, hours: float) -> float:
    """`hours` raised to the provider's billing minimum."""
    from gpusizer.base import providers

    return hours if provider in providers.OWNED else max(hours, CLOUD_BILLING_MINIMUM_H)
