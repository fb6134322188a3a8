"""GpuWorkload: size a workload spec with the engine once, then provision the choice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi

import gpusizer
from components.aws import AwsGpuCapacity, AwsGpuCapacityArgs
from components.gcp import GcpGpuCapacity, GcpGpuCapacityArgs
from components.onprem import OnPremGpuCapacity, OnPremGpuCapacityArgs

# Candidates kept in the `decision` output: enough for a reviewer, small enough for the state file.
DECISION_CANDIDATES = 20


class GpuWorkload(pulumi.ComponentResource):
    """Right-sized GPU capacity for one workload spec (CONTRACT.md section 4).

    The engine runs once, at construction, on plain values, so `pulumi
    preview` shows exactly what `pulumi up` creates. An invalid spec raises
    gpusizer.SpecError (naming the field) and an infeasible one raises
    gpusizer.SizingError listing why the cheapest offers lost, both before any
    resource is registered.

    Args:
        name: the Pulumi resource name.
        spec: a WorkloadSpec or a mapping in the spec format.
        opts: resource options.
        catalog: offers to choose from (default: the freshest packaged/cached catalog).
        pools: on-prem pools competing with the clouds.
        kubeconfigs: pool name -> kubeconfig (a Pulumi secret) for on-prem choices.
        subnet_ids, vpc_id: AWS network placement (default VPC when unset).
        gcp_network: GCP VPC network name.
    """

    instance_type: pulumi.Output[str]
    hourly_usd: pulumi.Output[float]
    decision: pulumi.Output[dict]

    def __init__(
        self,
        name: str,
        spec: gpusizer.WorkloadSpec | Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        *,
        catalog: gpusizer.Catalog | None = None,
        pools: Sequence[gpusizer.Pool] = (),
        kubeconfigs: Mapping[str, pulumi.Input[str]] | None = None,
        subnet_ids: list[str] | None = None,
        vpc_id: str | None = None,
        gcp_network: str = "default",
    ):
        plan = gpusizer.plan(spec, catalog=catalog, pools=pools)  # raises SpecError before anything exists
        if plan.chosen is None:
            raise gpusizer.SizingError(_infeasible_message(plan))
        super().__init__("gpusizer:index:GpuWorkload", name, {}, opts)
        self.plan = plan
        c = plan.chosen
        child = pulumi.ResourceOptions(parent=self)
        outputs: dict[str, Any] = {}
        if c.offer.provider == "aws":
            cap = AwsGpuCapacity(f"{name}-aws", AwsGpuCapacityArgs(plan, subnet_ids, vpc_id), child)
            outputs.update(instance_id=cap.instance_id, asg_name=cap.asg_name, launch_template_id=cap.launch_template_id)
        elif c.offer.provider == "gcp":
            cap = GcpGpuCapacity(f"{name}-gcp", GcpGpuCapacityArgs(plan, gcp_network), child)
            outputs.update(instance_id=cap.instance_id, group_id=cap.group_id)
        else:
            pool = next(p for p in pools if p.name == c.offer.instance_type)
            kubeconfig = (kubeconfigs or {}).get(pool.name)
            cap = OnPremGpuCapacity(f"{name}-onprem", OnPremGpuCapacityArgs(plan, pool, kubeconfig), child)
            outputs.update(namespace=cap.namespace)
        self.instance_type = pulumi.Output.from_input(c.offer.instance_type)
        self.hourly_usd = pulumi.Output.from_input(round(c.hourly_usd, 4))
        self.decision = pulumi.Output.from_input(decision_summary(plan))
        self.register_outputs({"instance_type": self.instance_type, "hourly_usd": self.hourly_usd,
                               "decision": self.decision, **outputs})


def decision_summary(plan: gpusizer.Decision) -> dict:
    """The plan JSON with the candidate list cut to the top DECISION_CANDIDATES (and a count)."""
    d = plan.to_dict()
    d["candidates_total"] = len(d["candidates"])
    d["candidates"] = d["candidates"][:DECISION_CANDIDATES]
    return d


def _infeasible_message(plan: gpusizer.Decision) -> str:
    lost = [c for c in plan.candidates if c.rejection.code not in ("provider", "region", "gpu", "opt-in", "purchase")]
    shown = "; ".join(f"{c.offer.instance_type}: {c.rejection.detail}" for c in lost[:5])
    return (f"workload {plan.workload.spec.name}: no feasible offer among {len(plan.candidates)} candidates. "
            f"Cheapest rejections: {shown or 'all excluded by placement'}. "
            "To fix: relax placement (providers, regions, purchase, max_hourly_usd) or the targets")
