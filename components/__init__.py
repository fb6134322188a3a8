"""Pulumi components that provision a gpusizer Decision (docs/contract.md section 4).

`GpuWorkload(name, spec, opts)` sizes a workload spec with the engine and
provisions the choice through one of the provider components below.
"""

from components.aws import AwsGpuCapacity, AwsGpuCapacityArgs, AwsNetwork
from components.gcp import GcpGpuCapacity, GcpGpuCapacityArgs
from components.onprem import OnPremGpuCapacity, OnPremGpuCapacityArgs
from components.workload import GpuWorkload, GpuWorkloadArgs, InfeasibleWorkloadError, decision_summary

__all__ = [
    "AwsGpuCapacity",
    "AwsGpuCapacityArgs",
    "AwsNetwork",
    "GcpGpuCapacity",
    "GcpGpuCapacityArgs",
    "GpuWorkload",
    "GpuWorkloadArgs",
    "InfeasibleWorkloadError",
    "OnPremGpuCapacity",
    "OnPremGpuCapacityArgs",
    "decision_summary",
]
