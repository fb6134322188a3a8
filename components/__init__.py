"""Pulumi components that provision a gpusizer Decision (docs/contract.md section 4).

`GpuWorkload(name, spec, opts)` sizes a workload spec with the engine and
provisions the choice through one of the provider components below.
"""

from gpusizer.components.aws import AwsGpuCapacity, AwsGpuCapacityArgs, AwsNetwork
from gpusizer.components.gcp import GcpGpuCapacity, GcpGpuCapacityArgs
from gpusizer.components.onprem import OnPremGpuCapacity, OnPremGpuCapacityArgs
from gpusizer.components.workload import GpuWorkload, GpuWorkloadArgs, InfeasibleWorkloadError, decision_summary

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
