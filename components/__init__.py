"""Pulumi components that provision a gpusizer Decision (CONTRACT.md section 4)."""

from components.aws import AwsGpuCapacity, AwsGpuCapacityArgs
from components.gcp import GcpGpuCapacity, GcpGpuCapacityArgs
from components.onprem import OnPremGpuCapacity, OnPremGpuCapacityArgs
from components.workload import GpuWorkload, decision_summary

__all__ = [
    "AwsGpuCapacity",
    "AwsGpuCapacityArgs",
    "GcpGpuCapacity",
    "GcpGpuCapacityArgs",
    "GpuWorkload",
    "OnPremGpuCapacity",
    "OnPremGpuCapacityArgs",
    "decision_summary",
]
