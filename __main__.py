"""The Pulumi program: stack config -> one GpuWorkload per workload spec.

Config is read once here and passed down as plain values (STYLE.md section 1).
Workloads are planned in order; each one placed on an on-prem pool takes its
GPUs from the pool, so a later workload bursts to the cloud once it is full.
"""

import pathlib

import pulumi

import gpusizer
from components import GpuWorkload

PROJECT = pathlib.Path(__file__).resolve().parent

config = pulumi.Config("gpusizer")
workloads = config.require_object("workloads")
pools = gpusizer.parse_pools(config.get_object("pools") or [])
kubeconfigs = config.get_secret_object("kubeconfigs") or {}
subnet_ids = config.get_object("subnetIds") or None
gcp_network = config.get("gcpNetwork") or "default"


def _spec(item):
    """A spec object from config, or a spec file path relative to the project."""
    if isinstance(item, str):
        return gpusizer.load_spec(PROJECT / item)
    return gpusizer.load_spec(item)


# Secret kubeconfigs arrive as one Output; split it per pool without creating resources in apply.
kube_by_pool = {p.name: pulumi.Output.secret(kubeconfigs).apply(lambda k, n=p.name: (k or {}).get(n)) for p in pools}

for item in workloads:
    spec = _spec(item)
    workload = GpuWorkload(spec.name, spec, pools=pools, kubeconfigs=kube_by_pool,
                           subnet_ids=subnet_ids, gcp_network=gcp_network)
    chosen = workload.plan.chosen
    if chosen.offer.provider == "onprem":
        pools = [p.allocate(chosen.gpu_count * chosen.replicas) if p.name == chosen.offer.instance_type else p
                 for p in pools]
    pulumi.export(spec.name, {
        "instance_type": workload.instance_type,
        "hourly_usd": workload.hourly_usd,
        "provider": chosen.offer.provider,
        "region": chosen.offer.region,
        "gpu": f"{chosen.gpu_count} x {chosen.offer.gpu}",
        "burst": workload.plan.burst,
        "decision": workload.decision,
    })
