"""Sizing metadata keys on provisioned GPU resources (docs/contract.md section 3).

Both the Pulumi components (which write them) and the policy pack (which
reads them) import these names from the engine, so they cannot drift apart.
"""

from __future__ import annotations

import re

AWS_REQUIRED = "gpusizer:required-gpu-memory-gib"
AWS_WORKLOAD = "gpusizer:workload"
AWS_SIZED_BY = "gpusizer:sized-by"  # what set the size: one of gpusizer.decide.decision.SIZED_BY
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
    """GCP labels: values must be lower-case [a-z0-9_-], so the requirement is written by gcp_gib."""
    return {GCP_REQUIRED: gcp_gib(required_gib), GCP_WORKLOAD: workload, GCP_SIZED_BY: sized_by}


def gcp_gib(required_gib: float) -> str:
    """A requirement as a GCP label value: two decimals as the AWS tag has them, "_" for the point
    (label values allow no "."; Google Cloud, "Labels: requirements", 2025).

    Whole GiB rounded up, as labels held it before 2026-11, made a 20.15 GiB workload look
    too big for the 20.2 GiB an L4 leaves it, and the gate blocked the planner's own choice.

    >>> gcp_gib(20.15), gcp_gib(80)
    ('20_15', '80_00')
    """
    return f"{required_gib:.2f}".replace(".", "_")


_GCP_GIB = re.compile(r"([0-9]{1,9})(?:_([0-9]{1,2}))?")


def parse_gcp_gib(value: object) -> float:
    """The requirement a GCP label holds: "20_15" (gcp_gib), or a whole number (labels written
    before 2026-11, rounded up). Anything else raises ValueError: Python's float() would read
    "20_15" as 2015 (PEP 515 digit separators).

    >>> parse_gcp_gib("20_15"), parse_gcp_gib("21"), parse_gcp_gib("0_5")
    (20.15, 21.0, 0.5)
    """
    m = _GCP_GIB.fullmatch(value.strip()) if isinstance(value, str) else None
    if m is None:
        raise ValueError(f"{GCP_REQUIRED} must be GiB as digits with an optional _ and two decimals (got {value!r})")
    return float(f"{m[1]}.{m[2] or 0}")


def k8s_annotations(workload: str, required_gib: float, sized_by: str) -> dict[str, str]:
    return {K8S_REQUIRED: f"{required_gib:.2f}", K8S_WORKLOAD: workload, K8S_SIZED_BY: sized_by}
