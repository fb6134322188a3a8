"""GpuWorkload: size a workload spec with the engine once, then provision the choice."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi

import gpusizer
from gpusizer import reuse
from gpusizer.base import limits, providers
from gpusizer.components import aws, scaling
from gpusizer.estimate import calibration
from gpusizer.render import plan_json

# Candidates kept in the `decision` output: enough for a reviewer, small enough for the state file
# (the full list runs to ~2,000 offers, ~1 MB of JSON).
DECISION_CANDIDATES = 20


class InfeasibleWorkloadError(gpusizer.SizingError):
    """A valid spec that no offer satisfies. Raised before any resource exists.

    Attributes:
        decision: the engine's decision, every candidate with its reason.
    """

    def __init__(self, message: str, decision: gpusizer.Decision):
        super().__init__(message)
        self.decision = decision


@dataclasses.dataclass
class GpuWorkloadArgs:
    """Where a workload may go and how to reach it; plain values read from stack config once."""

    pools: Sequence[gpusizer.Pool] = ()
    """On-prem pools competing with the clouds (already reduced by earlier workloads)."""
    kubeconfigs: Mapping[str, pulumi.Input[str]] = dataclasses.field(default_factory=dict)
    """Pool name -> kubeconfig (a Pulumi secret); a pool without one uses the ambient kubeconfig."""
    hf_token: pulumi.Input[str] | None = None
    """Hugging Face token (a Pulumi secret) for on-prem serving pods: a Kubernetes Secret, HF_TOKEN."""
    aws_region: str | None = None
    """Region of the stack's default AWS provider (aws:region)."""
    aws_networks: Mapping[str, aws.AwsNetwork] = dataclasses.field(default_factory=dict)
    """Region -> VPC and subnets; a region without one uses its default VPC."""
    prometheus_url: str = scaling.DEFAULT_PROMETHEUS
    """Prometheus that KEDA queries for deploy.autoscaling's query metrics on on-prem pools."""
    aws_egress: str = aws.aws_network.DEFAULT_EGRESS
    """Default VPC, instances with one EFA interface per network card (no public IP possible):
    "nat" (a private subnet + NAT gateway), "endpoints" (private subnet + SSM VPC endpoints) or "none"."""
    aws_private_cidr: str = aws.aws_network.PRIVATE_CIDR
    """CIDR of that private subnet in the default VPC."""
    gcp_network: str = "default"
    """GCP VPC network for GPU VMs."""
    gcp_secure_boot: bool = False
    """Shielded VM Secure Boot on GCP (needs an image whose NVIDIA modules are signed)."""
    gcp_subnetworks: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Region -> subnetwork of gcp_network (required for a custom-mode VPC)."""
    gcp_cloud_nat: bool = True
    """Create a Cloud Router + NAT in the chosen GCP region (one per region and stack: a program
    with several GCP workloads in one region turns it on for the first only)."""
    gcp_reservations: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Zone -> Compute Engine reservation to consume there."""
    catalog: gpusizer.Catalog | None = None
    """Offers to choose from; default: the freshest packaged or cached catalog."""
    decision: gpusizer.Decision | None = None
    """A decision already made for this spec (a program that plans every workload before creating
    any); the engine is not run again."""


class GpuWorkload(pulumi.ComponentResource):
    """Right-sized GPU capacity for one workload spec (docs/contract.md section 4).

    The engine runs once, at construction, on plain values, so `pulumi
    preview` shows exactly what `pulumi up` creates. Then one child component
    provisions the choice: the `component` module of the chosen provider in
    gpusizer.base.providers (AwsGpuCapacity, GcpGpuCapacity or OnPremGpuCapacity).

    Args:
        name: the Pulumi resource name.
        spec: a WorkloadSpec or a mapping in the spec format.
        opts: resource options.
        args: pools, networks, catalog (GpuWorkloadArgs); default: clouds only, default networks.

    Raises:
        gpusizer.SpecError: the spec is invalid; `.field` names the field. Nothing is registered.
        InfeasibleWorkloadError: no offer is adequate; the message lists why the cheapest lost.
            Nothing is registered.
        ValueError: a setting in `args` the chosen provider needs is invalid (check); the message
            names its stack config key. Nothing is registered.
    """

    instance_type: pulumi.Output[str]
    """The chosen instance/machine type, or the on-prem pool's name."""
    hourly_usd: pulumi.Output[float]
    """$/hour of one replica (all its nodes): the plan JSON's choice.hourly_usd (gpusizer.base.cost)."""
    monthly_usd: pulumi.Output[float]
    """$/month of every replica: hourly_usd x replicas x 730 h (choice.monthly_usd)."""
    decision: pulumi.Output[dict]
    """The plan JSON (docs/contract.md section 2), candidates trimmed to the top DECISION_CANDIDATES."""
    plan: gpusizer.Decision
    """The engine's decision as a plain value."""

    def __init__(
        self,
        name: str,
        spec: gpusizer.WorkloadSpec | Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        args: GpuWorkloadArgs | None = None,
    ):
        args = args or GpuWorkloadArgs()
        spec = gpusizer.load_spec(spec)  # SpecError naming the field, before anything is registered
        plan = args.decision or reuse.plan(spec, catalog=args.catalog, pools=args.pools)
        if plan.workload.spec != spec:
            raise ValueError(f"GpuWorkload {name}: args.decision was made for another spec")
        if plan.chosen is None:
            raise InfeasibleWorkloadError(infeasible_message(plan), plan)
        c = plan.chosen
        check(plan, args)  # e.g. a bad on-prem toleration or awsEgress fails here, before anything is registered
        component = providers.get(c.offer.provider).module("component")
        # The spec and the pools it was planned against, as the component's inputs and again as outputs (stack
        # policies see a resource's outputs): the policy pack re-plans them to verify a size set by a
        # target, a deadline or cost (policies/verify.py).
        recorded = recorded_inputs(spec, args.pools)
        super().__init__("gpusizer:index:GpuWorkload", name, recorded, opts)
        self.plan = plan
        ids: dict[str, Any] = component.provision(
            f"{name}-{c.offer.provider}", plan, args, pulumi.ResourceOptions(parent=self)
        )
        self.ids = ids
        self.instance_type = pulumi.Output.from_input(c.offer.instance_type)
        self.hourly_usd = pulumi.Output.from_input(c.cost.hourly_usd)
        self.monthly_usd = pulumi.Output.from_input(c.cost.monthly_usd)
        self.decision = known(decision_summary(plan))
        self.register_outputs(
            {
                "instance_type": self.instance_type,
                "hourly_usd": self.hourly_usd,
                "monthly_usd": self.monthly_usd,
                "decision": self.decision,
                **recorded,
                **ids,
            }
        )


def check(plan: gpusizer.Decision, args: GpuWorkloadArgs) -> None:
    """Validate what the chosen provider's component needs, before anything is registered: the
    `check` of its `component` module in gpusizer.base.providers. GpuWorkload calls it; a program creating
    several workloads calls it for each one first, so a bad setting for the last leaves the first
    unregistered too (__main__.py).

    Raises:
        gpusizer.SpecError: the spec or pool cannot be provisioned there (`.field` names the field).
        ValueError: a setting in `args` is invalid; the message names its stack config key.
    """
    providers.get(plan.chosen.offer.provider).module("component").check(plan, args)


def known(value: Any) -> pulumi.Output:
    """A known, non-secret Output holding a plain value (no Outputs inside), made in one step.

    `pulumi.Output.from_input` lifts every element of a nested dict or list into an
    Output of its own (about 630 for a plan JSON), which made a 50-workload preview
    spend half its time there; returning the value from an `apply` on a known
    Output wraps it whole, with the same value, known and secret flags.
    """
    return pulumi.Output.from_input(True).apply(lambda _: value)


def recorded_inputs(spec: gpusizer.WorkloadSpec, pools) -> dict:
    """{"spec": the spec as JSON, "pools": the pools as JSON}: plain values, nothing secret. The calibration
    the decision used (the spec's `sizing.calibration`, else $GPUSIZER_CALIBRATION) is recorded as the spec's
    `sizing.calibration`, as an absolute path: the policy pack judges that file (it never reads its own
    environment) and runs in a directory of its own, where a path relative to the program names nothing."""
    data = spec.model_dump(mode="json")
    used = calibration.chosen(spec.sizing.calibration)
    if used:
        data["sizing"] = {**(data.get("sizing") or {}), "calibration": str(pathlib.Path(used).resolve())}
    return {"spec": data, "pools": [p.model_dump(mode="json") for p in pools]}


def decision_summary(plan: gpusizer.Decision) -> dict:
    """The plan JSON trimmed as `gpusizer plan --top DECISION_CANDIDATES` trims it: the top feasible
    candidates and the nearest rejected one per reason (`rejections_by_reason` and `candidates_total` count all)."""
    return plan_json.plan(plan, top=DECISION_CANDIDATES)


def infeasible_message(plan: gpusizer.Decision) -> str:
    """What lost and why, for a decision with no choice: the cheapest offers that were judged on fit."""
    # Offers excluded by the spec's own placement say nothing about why the workload does not fit.
    judged = [c for c in plan.candidates if c.rejection.code not in limits.PLACEMENT]
    shown = "; ".join(f"{c.offer.instance_type}: {c.rejection.detail}" for c in judged[:5])
    return (
        f"workload {plan.workload.spec.name}: no feasible offer among {len(plan.candidates)} candidates. "
        f"Cheapest rejections: {shown or 'every offer excluded by placement'}. "
        "To fix: relax placement (providers, regions, purchase, max_hourly_usd, gpus) or the targets"
    )
