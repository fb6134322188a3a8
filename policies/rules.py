"""The policies as plain functions: (resource type, props, config) -> violation messages.

Each message says what is forbidden, with the numbers, and how to fix it.
Config defaults are coded here (DEFAULTS) because the Python policy SDK does
not apply a schema's defaults (docs/pulumi-offline.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpusizer import audit, limits
from policies import resources as res

# Policy name -> default config. Enforcement levels are in pack.py.
DEFAULTS: dict[str, dict[str, Any]] = {
    "gpusizer-no-overprovisioning": {"maxRatio": 2.0},
    "gpusizer-sized-gpu-capacity": {},
    "gpusizer-no-underprovisioning": {},
    "gpusizer-cost-ceiling": {"maxHourlyUsd": None},
    "gpusizer-gpu-budget": {"maxHourlyUsd": None},
    "gpusizer-allowed-gpus": {"allowed": [], "spotOnly": False},
    "gpusizer-require-imdsv2": {},
    "gpusizer-secure-gpu-hosts": {},
}



def effective(name: str, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """Defaults overlaid with the user's config for policy `name`, type-checked.

    Raises:
        ValueError: a config value of the wrong type (reported as a policy message).
    """
    cfg = dict(DEFAULTS[name])
    for key, value in (given or {}).items():
        if key == "enforcementLevel":
            continue
        if key not in cfg:
            raise ValueError(f"unknown config key {key!r} for {name}; known: {', '.join(cfg) or 'none'}")
        if key in ("maxRatio", "maxHourlyUsd") and value is not None and not isinstance(value, (int, float)):
            raise ValueError(f"{name}.{key} must be a number (got {value!r})")
        if key == "allowed" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise ValueError(f"{name}.allowed must be a list of GPU names (got {value!r})")
        if key == "spotOnly" and not isinstance(value, bool):
            raise ValueError(f"{name}.spotOnly must be true or false (got {value!r})")
        cfg[key] = value
    return cfg


def no_overprovisioning(r: res.GpuResource, cfg: Mapping) -> list[str]:
    if r.required_gib is None or r.required_gib <= 0 or r.sized_by in limits.NOT_BY_MEMORY:
        return []
    out = []
    for cap in r.capacities:
        ratio = cap.total_gib / r.required_gib
        if ratio <= cfg["maxRatio"]:
            continue
        cheaper = audit.cheaper_adequate(r.required_gib, r.hourly_usd, r.provider if r.provider != "onprem" else None)
        if cheaper is None:
            continue
        out.append(
            f"{cap.label} = {cap.total_gib:,.0f} GiB for a {r.required_gib:g} GiB requirement ({ratio:.0f}x, "
            f"limit {cfg['maxRatio']:g}x); {cheaper.instance_type} ({cheaper.gpu_count} x {cheaper.gpu}, "
            f"{cheaper.provider} {cheaper.region}) at ${cheaper.on_demand_usd:.2f}/h fits. "
            "To fix: size with gpusizer (components.GpuWorkload) or pick the cheaper offer"
        )
        break
    return out


def sized_gpu_capacity(r: res.GpuResource, cfg: Mapping) -> list[str]:
    if r.required_gib is not None:
        return []
    what = r.capacities[0].label if r.capacities else r.unknown_gpu
    return [f"{what}: GPU capacity without a sizing requirement (tag gpusizer:required-gpu-memory-gib, label "
            "gpusizer-required-gpu-memory-gib or annotation gpusizer.io/required-gpu-memory-gib). "
            "To fix: provision it with components.GpuWorkload, or tag it with `gpusizer estimate`'s total"]


def no_underprovisioning(r: res.GpuResource, cfg: Mapping) -> list[str]:
    if r.required_gib is None:
        return []
    out = []
    for cap in r.capacities:
        usable = cap.total_gib * audit.HEADROOM
        if usable < r.required_gib:
            out.append(f"{cap.label} = {usable:.1f} GiB usable < {r.required_gib:g} GiB required: the workload "
                       "will not fit (out of memory or offload). To fix: use the type `gpusizer plan` chooses")
    if r.required_gib and not r.capacities and r.unknown_gpu:
        out.append(f"GPU model of {r.unknown_gpu!r} is unknown: cannot check {r.required_gib:g} GiB fits. "
                   "To fix: add a node selector nvidia.com/gpu.product naming the GPU")
    return out


def cost_ceiling(r: res.GpuResource, cfg: Mapping) -> list[str]:
    cap = cfg["maxHourlyUsd"]
    if cap is None or r.hourly_usd is None or r.hourly_usd <= cap:
        return []
    return [f"{r.capacities[0].label} costs ${r.hourly_usd:,.2f}/h > ${cap:,.2f}/h ceiling. "
            "To fix: a cheaper adequate type, spot, or raise gpusizer-cost-ceiling.maxHourlyUsd"]


def allowed_gpus(r: res.GpuResource, cfg: Mapping) -> list[str]:
    out = []
    allowed = cfg["allowed"]
    for cap in r.capacities:
        if allowed and cap.gpu not in allowed:
            out.append(f"{cap.label}: {cap.gpu} is not allowed in this stack (allowed: {', '.join(allowed)}). "
                       "To fix: placement.gpus in the spec, or change gpusizer-allowed-gpus.allowed")
    if cfg["spotOnly"] and r.provider != "onprem" and r.purchase != "spot":
        out.append(f"{r.capacities[0].label}: this stack allows spot GPU capacity only. "
                   "To fix: placement.purchase: spot")
    return out


def _gpu_host(resource_type: str, props: Mapping) -> bool:
    """An AWS instance or launch template of a GPU type (a template without a type may feed a GPU group)."""
    if resource_type not in (res.AWS_INSTANCE, res.AWS_LAUNCH_TEMPLATE):
        return False
    itype = props.get("instanceType")
    if not itype:
        return resource_type == res.AWS_LAUNCH_TEMPLATE
    return audit.capacity_of_type("aws", itype) is not None


def require_imdsv2(resource_type: str, props: Mapping) -> list[str]:
    """IMDSv2 (session tokens) on GPU instances and launch templates."""
    if not _gpu_host(resource_type, props):
        return []
    if resource_type == res.AWS_INSTANCE and props.get("launchTemplate") and not props.get("metadataOptions"):
        return []  # the launch template is judged on its own
    tokens = (props.get("metadataOptions") or {}).get("httpTokens")
    if tokens == "required":
        return []
    return ["IMDSv2 is not required (metadataOptions.httpTokens is "
            f"{tokens or 'unset'}): instance credentials can be stolen through SSRF. "
            "To fix: metadata_options={'http_tokens': 'required'} (or enforce this policy as remediate)"]


def remediate_imdsv2(resource_type: str, props: Mapping) -> dict | None:
    """The remediation: the same props with httpTokens required."""
    if require_imdsv2(resource_type, props) == [] or resource_type not in (res.AWS_INSTANCE, res.AWS_LAUNCH_TEMPLATE):
        return None
    fixed = dict(props)
    fixed["metadataOptions"] = {**(props.get("metadataOptions") or {}), "httpTokens": "required"}
    return fixed


def secure_gpu_hosts(resource_type: str, props: Mapping) -> list[str]:
    """Encrypted disks on AWS GPU hosts; no SSH (22) open to the internet anywhere."""
    out = []
    if not _gpu_host(resource_type, props):
        return _open_ssh(resource_type, props)
    if resource_type == res.AWS_INSTANCE:
        disks = [props.get("rootBlockDevice") or {}] + list(props.get("ebsBlockDevices") or [])
        if not props.get("launchTemplate") and any(d.get("encrypted") is not True for d in disks if d is not None):
            out.append("unencrypted EBS volume on a GPU host. To fix: encrypted=True on every block device")
    if resource_type == res.AWS_LAUNCH_TEMPLATE:
        for m in props.get("blockDeviceMappings") or []:
            ebs = m.get("ebs") or {}
            if ebs and str(ebs.get("encrypted")).lower() != "true":
                out.append(f"launch template volume {m.get('deviceName', '?')} is not encrypted. To fix: ebs.encrypted='true'")
    out += _open_ssh(resource_type, props)
    return out


_WORLD = {"0.0.0.0/0", "::/0"}


def _covers_22(from_port, to_port, protocol) -> bool:
    if str(protocol) in ("-1", "all"):
        return True
    try:
        return int(from_port) <= 22 <= int(to_port)
    except (TypeError, ValueError):
        return False


def _open_ssh(resource_type: str, props: Mapping) -> list[str]:
    msg = "SSH (port 22) open to the internet ({}). To fix: no inbound rule; use SSM Session Manager or IAP"
    if resource_type == "aws:ec2/securityGroup:SecurityGroup":
        for rule in props.get("ingress") or []:
            cidrs = set(rule.get("cidrBlocks") or []) | set(rule.get("ipv6CidrBlocks") or [])
            if cidrs & _WORLD and _covers_22(rule.get("fromPort"), rule.get("toPort"), rule.get("protocol")):
                return [msg.format(", ".join(sorted(cidrs & _WORLD)))]
    if resource_type == "aws:ec2/securityGroupRule:SecurityGroupRule" and props.get("type") == "ingress":
        cidrs = set(props.get("cidrBlocks") or []) | set(props.get("ipv6CidrBlocks") or [])
        if cidrs & _WORLD and _covers_22(props.get("fromPort"), props.get("toPort"), props.get("protocol")):
            return [msg.format(", ".join(sorted(cidrs & _WORLD)))]
    if resource_type == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule":
        cidr = props.get("cidrIpv4") or props.get("cidrIpv6")
        if cidr in _WORLD and _covers_22(props.get("fromPort"), props.get("toPort"), props.get("ipProtocol")):
            return [msg.format(cidr)]
    if resource_type == "gcp:compute/firewall:Firewall" and props.get("direction", "INGRESS") == "INGRESS":
        if set(props.get("sourceRanges") or []) & _WORLD:
            for allow in props.get("allows") or []:
                ports = allow.get("ports") or []
                if allow.get("protocol") == "all" or not ports or any(_port_range_has_22(p) for p in ports):
                    return [msg.format("0.0.0.0/0")]
    return []


def _port_range_has_22(p: str) -> bool:
    lo, _, hi = str(p).partition("-")
    try:
        return int(lo) <= 22 <= int(hi or lo)
    except ValueError:
        return False


GPU_RULES = {
    "gpusizer-no-overprovisioning": no_overprovisioning,
    "gpusizer-sized-gpu-capacity": sized_gpu_capacity,
    "gpusizer-no-underprovisioning": no_underprovisioning,
    "gpusizer-cost-ceiling": cost_ceiling,
    "gpusizer-allowed-gpus": allowed_gpus,
}
HOST_RULES = {
    "gpusizer-require-imdsv2": lambda t, p, cfg: require_imdsv2(t, p),
    "gpusizer-secure-gpu-hosts": lambda t, p, cfg: secure_gpu_hosts(t, p),
}


def plain(value: Any) -> Any:
    """Deep copy of policy-SDK props (Mapping/Sequence proxies) as dicts and lists.

    Reading an unknown preview value raises the SDK's UnknownValueError, which
    is left to the SDK: it reports the policy as not applicable (advisory).
    """
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [plain(v) for v in value]
    return value


def check_resource(name: str, resource_type: str, props: Mapping, config: Mapping[str, Any] | None = None) -> list[str]:
    """Messages of policy `name` for one resource; a malformed resource or config is a message, not a crash."""
    try:
        cfg = effective(name, config)
        props = plain(props)
        if name in HOST_RULES:
            return HOST_RULES[name](resource_type, props, cfg)
        if resource_type not in res.COVERED:
            return []
        gpu = res.gpu_resource(resource_type, props)
        return GPU_RULES[name](gpu, cfg) if gpu else []
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        return [f"gpusizer could not judge this resource: {exc}. To fix: correct the resource or the policy config"]


def stack_budget(resources: Iterable[tuple[str, Mapping]], config: Mapping[str, Any] | None = None) -> list[str]:
    """Stack-level GPU budget: the sum of every GPU resource's $/hour against maxHourlyUsd."""
    try:
        cfg = effective("gpusizer-gpu-budget", config)
    except ValueError as exc:
        return [f"gpusizer-gpu-budget config: {exc}"]
    if cfg["maxHourlyUsd"] is None:
        return []
    total = 0.0
    for resource_type, props in resources:
        if resource_type in (res.AWS_LAUNCH_TEMPLATE, res.GCP_TEMPLATE):
            continue  # templates cost nothing until an instance or group launches them
        try:
            gpu = res.gpu_resource(resource_type, plain(props))
        except (ValueError, TypeError, AttributeError):
            continue
        if gpu and gpu.hourly_usd:
            total += gpu.hourly_usd
    if total > cfg["maxHourlyUsd"]:
        return [f"GPU capacity in this stack costs ${total:,.2f}/h > budget ${cfg['maxHourlyUsd']:,.2f}/h. "
                "To fix: cheaper placements (spot, on-prem pools) or raise gpusizer-gpu-budget.maxHourlyUsd"]
    return []
