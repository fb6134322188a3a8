"""How a cloud sells a GPU machine: the consumption model an offer is priced in and provisioned as.

One registry for the machine types not sold as plain on-demand VMs, read by the
catalog builder and refresher (no on-demand list price for them), the plan (the
`consumption` it names) and the GCP component (the provisioning model it sets).

GCP (docs, "Accelerator-optimized machine family", consumption options table, and
AI Hypercomputer "Consumption options", read 2026-11): A4 and A3 Ultra are sold
through reservations, flex-start (Dynamic Workload Scheduler) and spot, not as
on-demand VMs; a3-highgpu-1g/2g/4g through spot and flex-start only (the
Cloud Billing catalog still lists an on-demand-equivalent rate for them, which
no VM is billed at). Only A4 and A3 Ultra VMs can be RESERVATION_BOUND.

AWS: an On-Demand Capacity Reservation is billed at the on-demand rate
("capacity-reservation"); an EC2 Capacity Block for ML is prepaid at the
block's own rate ("capacity-block"): CAPACITY_BLOCK_RATES where published.
"""

from __future__ import annotations

GCP_NOT_ON_DEMAND = ("a4-highgpu-", "a3-ultragpu-", "a3-highgpu-1g", "a3-highgpu-2g", "a3-highgpu-4g")
GCP_RESERVATION_BOUND = ("a4-highgpu-", "a3-ultragpu-")
# EC2 Capacity Blocks for ML, effective instance hourly rate of the reservation fee, USD, by (type, Region)
# (aws.amazon.com/ec2/capacityblocks/pricing, "current reservation rates", scheduled to be updated on
# 2025-01-01; read 2026-11-26 from a copy of that page). The H200 row names no type in that copy: it is
# p5e.48xlarge, the H200 type the EC2 User Guide ("Capacity Blocks for ML") lists in US East (Ohio).
# AWS updates these rates with supply and demand, and a block is charged at the rate when bought: the
# quote from DescribeCapacityBlockOfferings is the price; these are what was published.
CAPACITY_BLOCK_AS_OF = "2024-12"
CAPACITY_BLOCK_SOURCE = "aws.amazon.com/ec2/capacityblocks/pricing (rates until 2025-01-01)"
CAPACITY_BLOCK_RATES = {
    ("p5.48xlarge", "us-east-1"): 39.33,
    ("p5.48xlarge", "us-east-2"): 39.33,
    ("p5e.48xlarge", "us-east-2"): 43.26,
    ("p4d.24xlarge", "us-east-2"): 14.75,
    ("p4d.24xlarge", "us-west-2"): 14.75,
}
MODELS = ("on-demand", "spot", "flex-start", "reservation", "capacity-reservation", "capacity-block")


def sold_on_demand(provider: str, instance_type: str) -> bool:
    """Whether the type is sold as a plain on-demand VM.

    >>> sold_on_demand("gcp", "a3-ultragpu-8g"), sold_on_demand("gcp", "a3-highgpu-8g"), sold_on_demand("aws", "p5.48xlarge")
    (False, True, True)
    """
    return not (provider == "gcp" and instance_type.startswith(GCP_NOT_ON_DEMAND))


def reservation_bound(provider: str, instance_type: str) -> bool:
    """Whether a VM of the type can be bound to a reservation's lifetime (GCP RESERVATION_BOUND)."""
    return provider == "gcp" and instance_type.startswith(GCP_RESERVATION_BOUND)


def model(
    provider: str, instance_type: str, purchase: str, reservation: bool = False, capacity_block: bool = False
) -> str:
    """The consumption model of a choice: what the capacity is bought as.

    >>> model("gcp", "a4-highgpu-8g", "on-demand"), model("gcp", "a4-highgpu-8g", "on-demand", reservation=True)
    ('flex-start', 'reservation')
    >>> model("aws", "p5.48xlarge", "on-demand", reservation=True, capacity_block=True)
    'capacity-block'
    """
    if purchase == "spot":
        return "spot"
    if provider == "aws" and reservation:
        return "capacity-block" if capacity_block else "capacity-reservation"
    if provider == "gcp" and reservation:
        return "reservation"
    return "on-demand" if sold_on_demand(provider, instance_type) else "flex-start"


def capacity_block_usd(instance_type: str, region: str) -> float | None:
    """The published Capacity Block rate of one instance for an hour, or None where none was published.

    >>> capacity_block_usd("p5.48xlarge", "us-east-1"), capacity_block_usd("p5.48xlarge", "eu-west-1")
    (39.33, None)
    """
    return CAPACITY_BLOCK_RATES.get((instance_type, region))
