"""The Pulumi program: stack config -> one GpuWorkload per workload spec.

Config is read once here and passed down as plain values (STYLE.md section 1):

    gpusizer:workloads    list of workload specs: objects in the spec format (docs/contract.md
                          section 1) or paths of spec YAML files relative to this directory
    gpusizer:pools        on-prem pools (README, "On-prem pools"), plus node_selector/tolerations
    gpusizer:kubeconfigs  pool name -> kubeconfig, a secret (pulumi config set --secret --path)
    gpusizer:kubeconfig   one kubeconfig (a secret) for pools not named in kubeconfigs
    gpusizer:hfToken      Hugging Face token (a secret) for on-prem serving pods (a Kubernetes Secret)
    gpusizer:awsNetworks  region -> {vpcId, subnetIds}; default: the region's default VPC
    gpusizer:awsEgress    nat | endpoints | none: egress of the private subnet that multi-card EFA
                          instances get in a default VPC (default nat)
    gpusizer:awsPrivateCidr  CIDR of that private subnet (default 172.31.240.0/20)
    gpusizer:gcpNetwork   GCP VPC network (default "default")
    gpusizer:gcpSubnetworks  region -> subnetwork of gcpNetwork (required for a custom-mode VPC)
    gpusizer:gcpCloudNat  a Cloud Router + NAT per GCP region the stack uses (default true)
    gpusizer:gcpReservations  zone -> Compute Engine reservation consumed there
    gpusizer:gcpSecureBoot  Shielded VM Secure Boot on GCP (default false)
    aws:region            the default AWS provider's region; choices elsewhere get a regional provider

Pulumi.yaml declares the scalar keys with their defaults (the same as here) and
lists the others in a comment; tests/components/test_project_config.py keeps
the three in step.

Every spec is validated, every workload planned and every provider setting it
uses checked before the first resource is registered, so a bad spec, an
infeasible one or a bad setting provisions nothing; the error names the
workload and the field, or the config key. Workloads are planned in order, and
one placed on an on-prem pool takes its GPUs from it, so once the pool is full
the next workload bursts to the cloud. Each workload's decision is exported
under its name.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pulumi

import gpusizer
import gpusizer.render.plan_json
import gpusizer.render.report
import gpusizer.reuse
from gpusizer import components

PROJECT = pathlib.Path(__file__).resolve().parent


def _fail(where: str, exc: Exception) -> pulumi.RunError:
    """A RunError (Pulumi prints it without a traceback) naming the config key and, for specs, the field."""
    field = getattr(exc, "field", "")
    return pulumi.RunError(f"stack config {where}{f' (field {field})' if field else ''}: {exc}")


def _specs(items: Any) -> list[gpusizer.WorkloadSpec]:
    if not isinstance(items, list) or not items:
        raise pulumi.RunError(
            "stack config gpusizer:workloads must be a non-empty list of workload specs "
            "(objects, or paths of spec files such as stacks/examples/chat-8b.yaml)"
        )
    specs = []
    for i, item in enumerate(items):
        where = f"gpusizer:workloads[{i}]" + (f" ({item})" if isinstance(item, str) else "")
        try:
            specs.append(gpusizer.load_spec(PROJECT / item if isinstance(item, str) else item))
        except gpusizer.SizingError as exc:
            raise _fail(where, exc) from None
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise pulumi.RunError(
            f"stack config gpusizer:workloads: duplicate workload name(s) {', '.join(dupes)}. "
            "To fix: give each workload its own name (it names its resources)"
        )
    return specs


def _warn_if_plain(key: str, given: Any, setting: str | None = None) -> None:
    """Warn when gpusizer:<key> is set without --secret: it still works, but the stack file holds it readable.

    `setting` is what the fix's `pulumi config set --secret` names (default: the key itself).
    """
    if given and not pulumi.runtime.is_config_secret(f"gpusizer:{key}"):
        pulumi.log.warn(
            f"gpusizer:{key} is stored in plain text. "
            f"To fix: pulumi config set --secret {setting or f'gpusizer:{key}'} ..."
        )


def _kubeconfigs(config: pulumi.Config, pools: list[gpusizer.Pool]) -> dict[str, pulumi.Output[str]]:
    """Pool name -> kubeconfig, each wrapped as a secret at once (only the pool names stay plain)."""
    per_pool = config.get_object("kubeconfigs") or {}
    if not isinstance(per_pool, dict) or not all(isinstance(v, str) for v in per_pool.values()):
        raise pulumi.RunError("stack config gpusizer:kubeconfigs must map pool names to kubeconfig text")
    unknown = sorted(set(per_pool) - {p.name for p in pools})
    if unknown:
        raise pulumi.RunError(
            f"stack config gpusizer:kubeconfigs names unknown pool(s) {', '.join(unknown)}. "
            f"To fix: use one of {', '.join(p.name for p in pools) or '(no pools configured)'}"
        )
    shared = config.get("kubeconfig")
    _warn_if_plain("kubeconfigs", per_pool, "--path 'gpusizer:kubeconfigs.<pool>'")
    _warn_if_plain("kubeconfig", shared)
    found = {p.name: per_pool.get(p.name, shared) for p in pools}
    return {name: pulumi.Output.secret(text) for name, text in found.items() if text}


def _aws_networks(raw: Any) -> dict[str, components.AwsNetwork]:
    if raw is None:
        return {}
    try:
        networks = {}
        for region, net in dict(raw).items():
            if not isinstance(net["subnetIds"], list) or not all(isinstance(s, str) for s in net["subnetIds"]):
                raise TypeError("subnetIds is not a list of ids")  # a string would be split into letters
            networks[region] = components.AwsNetwork(vpc_id=str(net["vpcId"]), subnet_ids=list(net["subnetIds"]))
        return networks
    except (KeyError, TypeError, ValueError):
        raise pulumi.RunError(
            "stack config gpusizer:awsNetworks must map regions to {vpcId: vpc-..., subnetIds: [subnet-..., ...]}"
        ) from None


def _str_map(raw: Any, key: str, what: str, value: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise pulumi.RunError(f"stack config gpusizer:{key} must map each {what} to a {value} name")
    return dict(raw)


def _summary(d: gpusizer.Decision) -> str:
    """One line for `pulumi preview`: the choice, its price and what the next cheaper offer lacked."""
    c = d.chosen
    where = c.offer.zone or c.offer.region
    line = (
        f"{c.offer.provider} {where} {c.offer.instance_type}: {c.gpu_count} x {c.offer.gpu}, "
        f"{gpusizer.render.report.bought_as(d)}, "
        f"{gpusizer.render.report.cost_text(c.cost)} for {d.required_gpu_memory_gib:g} GiB of GPU memory (sized by {d.sized_by})"
    )
    if d.next_cheaper is not None:
        line += f"; next cheaper {d.next_cheaper.offer.instance_type} lacked: {d.next_cheaper.rejection.detail}"
    if d.burst:
        line += f"; {d.burst}"
    return line


def main() -> None:
    config = pulumi.Config("gpusizer")
    specs = _specs(config.require_object("workloads"))
    try:
        pools = gpusizer.parse_pools(config.get_object("pools") or [])
    except gpusizer.SizingError as exc:
        raise _fail("gpusizer:pools", exc) from None
    kubeconfigs = _kubeconfigs(config, pools)
    hf_token = config.get_secret("hfToken")  # an Output marked secret, plain in config or not
    _warn_if_plain("hfToken", config.get("hfToken"))
    # Defaults are GpuWorkloadArgs's, declared again in Pulumi.yaml; the settings are
    # checked by the providers' components (gpusizer.components.aws.check), before anything is registered.
    defaults = components.GpuWorkloadArgs()
    aws_networks = _aws_networks(config.get_object("awsNetworks"))
    aws_region = pulumi.Config("aws").get("region")
    aws_egress = config.get("awsEgress") or defaults.aws_egress
    aws_private_cidr = config.get("awsPrivateCidr") or defaults.aws_private_cidr
    gcp_network = config.get("gcpNetwork") or defaults.gcp_network
    gcp_secure_boot = config.get_bool("gcpSecureBoot", defaults.gcp_secure_boot)
    gcp_subnetworks = _str_map(config.get_object("gcpSubnetworks"), "gcpSubnetworks", "region", "subnetwork")
    gcp_reservations = _str_map(config.get_object("gcpReservations"), "gcpReservations", "zone", "reservation")
    gcp_cloud_nat = config.get_bool("gcpCloudNat", defaults.gcp_cloud_nat)

    # Plan and check everything first (plain values): nothing is registered unless every workload has a
    # choice its provider can take. In turn: a workload on an on-prem pool takes its GPUs, later ones see
    # what is left (gpusizer.reuse).
    nat_regions: set[str] = set()  # one Cloud NAT per GCP region: two on one network would clash
    workloads = []
    for i, (spec, (decision, pools_then)) in enumerate(zip(specs, gpusizer.reuse.in_order(specs, pools))):
        if decision.chosen is None:
            raise pulumi.RunError(
                f"stack config gpusizer:workloads[{i}]: {components.workload.infeasible_message(decision)}"
            )
        c = decision.chosen
        nat = gcp_cloud_nat and c.offer.provider == "gcp" and c.offer.region not in nat_regions
        if nat:
            nat_regions.add(c.offer.region)
        args = components.GpuWorkloadArgs(
            pools=pools_then,
            kubeconfigs=kubeconfigs,
            hf_token=hf_token,
            aws_region=aws_region,
            aws_networks=aws_networks,
            aws_egress=aws_egress,
            aws_private_cidr=aws_private_cidr,
            gcp_network=gcp_network,
            gcp_secure_boot=gcp_secure_boot,
            gcp_subnetworks=gcp_subnetworks,
            gcp_cloud_nat=nat,
            gcp_reservations=gcp_reservations,
            decision=decision,
        )
        # Every workload's provider checks, before the first is created (GpuWorkload checks its own only).
        try:
            components.workload.check(decision, args)
        except gpusizer.SpecError as exc:  # the spec or pool: name the workload and the field
            raise _fail(f"gpusizer:workloads[{i}]", exc) from None
        except ValueError as exc:  # a setting: the message names its key
            raise pulumi.RunError(f"stack config {exc}") from None
        workloads.append((spec, decision, args))

    for spec, decision, args in workloads:
        c = decision.chosen
        workload = components.GpuWorkload(spec.name, spec, args=args)
        pulumi.export(
            spec.name,
            {
                "summary": _summary(decision),
                "provider": c.offer.provider,
                "region": c.offer.region,
                "zone": c.offer.zone,
                "instance_type": workload.instance_type,
                "gpu": f"{c.gpu_count} x {c.offer.gpu}",
                "purchase": c.purchase,
                "consumption": gpusizer.render.plan_json.consumption_model(decision),
                "nodes": c.nodes,
                "replicas": c.replicas,
                "required_gpu_memory_gib": decision.required_gpu_memory_gib,
                "hourly_usd": workload.hourly_usd,
                "monthly_usd": workload.monthly_usd,
                "burst": decision.burst,
                **{k: v for k, v in workload.ids.items() if v is not None},
                "decision": workload.decision,
            },
        )


main()
