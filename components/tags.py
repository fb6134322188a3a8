"""Sizing metadata on every GPU resource the components create (docs/contract.md section 3).

The contract keys are defined once, in `gpusizer.contract.metadata`, because the policy
pack reads what the components write; this module re-exports them for the
components, adds the descriptive keys only the components write, and builds
the tag/label/annotation maps from a Decision.

>>> AWS_REQUIRED, GCP_REQUIRED, K8S_REQUIRED
('gpusizer:required-gpu-memory-gib', 'gpusizer-required-gpu-memory-gib', 'gpusizer.io/required-gpu-memory-gib')
"""

from __future__ import annotations

import re

from gpusizer.contract import metadata
from gpusizer.decide.decision import Decision

# Contract keys (docs/contract.md section 3), defined in the engine.
AWS_REQUIRED = metadata.AWS_REQUIRED
AWS_WORKLOAD = metadata.AWS_WORKLOAD
AWS_SIZED_BY = metadata.AWS_SIZED_BY
GCP_REQUIRED = metadata.GCP_REQUIRED
GCP_WORKLOAD = metadata.GCP_WORKLOAD
GCP_SIZED_BY = metadata.GCP_SIZED_BY
K8S_REQUIRED = metadata.K8S_REQUIRED
K8S_WORKLOAD = metadata.K8S_WORKLOAD
K8S_SIZED_BY = metadata.K8S_SIZED_BY

# Descriptive keys: what was chosen, for reviewers and cost reports.
AWS_GPU = "gpusizer:gpu"  # "1x L4"
AWS_INSTANCE_TYPE = "gpusizer:instance-type"
AWS_PURCHASE = "gpusizer:purchase"  # on-demand | spot
AWS_CONSUMPTION = "gpusizer:consumption"  # gpusizer.catalog.consumption.MODELS: on-demand, capacity-block, ...
AWS_HOURLY_USD = metadata.AWS_HOURLY_USD
GCP_GPU = "gpusizer-gpu"  # "l4"
GCP_GPU_COUNT = "gpusizer-gpu-count"
GCP_PURCHASE = "gpusizer-purchase"
K8S_GPU = "gpusizer.io/gpu"
K8S_POOL = "gpusizer.io/pool"

# GCP label values: at most 63 characters of lower-case letters, digits, '_' and '-'.
_GCP_VALUE = re.compile(r"[^a-z0-9_-]")


def node_hourly_usd(d: Decision) -> float:
    """$/hour of one node of the choice (the decision prices all nodes of all replicas)."""
    c = d.chosen
    return c.hourly_usd / c.instances


def aws_tags(d: Decision, hourly_usd: float | None = None) -> dict[str, str]:
    """Tags for an AWS resource provisioning the choice of `d`.

    Args:
        d: the decision (its choice is an AWS offer).
        hourly_usd: $/hour of what this resource runs; default one node's price.
    """
    c = d.chosen
    return metadata.aws_tags(
        d.workload.spec.name,
        d.required_gpu_memory_gib,
        d.sized_by,
        **{
            AWS_GPU: f"{c.offer.gpu_count}x {c.offer.gpu}",
            AWS_INSTANCE_TYPE: c.offer.instance_type,
            AWS_PURCHASE: c.purchase,
            AWS_HOURLY_USD: f"{node_hourly_usd(d) if hourly_usd is None else hourly_usd:.4f}",
        },
    )


def gcp_labels(d: Decision) -> dict[str, str]:
    """Labels for a GCP VM or instance template; the requirement as metadata.gcp_gib writes it ("20_15")."""
    c = d.chosen
    return {
        **metadata.gcp_labels(d.workload.spec.name, d.required_gpu_memory_gib, d.sized_by),
        GCP_GPU: _GCP_VALUE.sub("-", c.offer.gpu.lower())[:63],
        GCP_GPU_COUNT: str(c.offer.gpu_count),
        GCP_PURCHASE: c.purchase,
    }


def k8s_annotations(d: Decision) -> dict[str, str]:
    """Annotations for the namespace, quota, Deployment and its pods on an on-prem pool."""
    c = d.chosen
    return {
        **metadata.k8s_annotations(d.workload.spec.name, d.required_gpu_memory_gib, d.sized_by),
        K8S_GPU: f"{c.offer.gpu_count}x {c.offer.gpu}",
        K8S_POOL: c.offer.instance_type,
    }
