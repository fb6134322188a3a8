"""Sizing metadata keys on provisioned GPU resources (docs/contract.md section 3).

Both the Pulumi components (which write them) and the policy pack (which
reads them) import these names from the engine, so they cannot drift apart.
"""

from __future__ import annotations

import math

AWS_REQUIRED = "gpusizer:required-gpu-memory-gib"
AWS_WORKLOAD = "gpusizer:workload"
AWS_SIZED_BY = "gpusizer:sized-by"  # what set the size: one of gpusizer.decision.SIZED_BY
AWS_HOURLY_USD = "gpusizer:hourly-usd"  # $/h of one node of the tagged resource; the cost policies read it
GCP_REQUIRED = "gpusizer-required-gpu-memory-gib"
GCP_WORKLOAD = "gpusizer-workload"
GCP_SIZED_BY = "gpusizer-sized-by"
K8S_REQUIRED = "gpusizer.io/required-gpu-memory-gib"
K8S_WORKLOAD = "gpusizer.io/workload"
K8S_SIZED_BY = "gpusizer.io/sized-by"


def aws_tags(workload: str, required_gib: float, sized_by: str, **extra: str) -> dict[str, str]:
    """AWS tags: the requirement as a decimal string, the workload name, what set the size."""
    return {AWS_REQUIRED: f"{required_gib:.2f}", AWS_WORKLOAD: workload, AWS_SIZED_BY: sized_by, **extra}


def gcp_labels(workload: str, required_gib: float, sized_by: str) -> dict[str, str]:
    """GCP labels: values must be lower-case [a-z0-9_-], so the requirement is rounded up to an integer."""
    return {GCP_REQUIRED: str(math.ceil(required_gib)), GCP_WORKLOAD: workload, GCP_SIZED_BY: sized_by}


def k8s_annotations(workload: str, required_gib: float, sized_by: str) -> dict[str, str]:
    return {K8S_REQUIRED: f"{required_gib:.2f}", K8S_WORKLOAD: workload, K8S_SIZED_BY: sized_by}
