"""Host security on anything that describes a GPU host: IMDSv2, encrypted disks, no SSH open to the internet.

A host's GPU-ness is read from its type fields only; a type unknown at
preview counts as a GPU host (the checks are cheap to satisfy, so the guard
fails closed instead of waiting for `up`).
"""

from __future__ import annotations

from collections.abc import Mapping

from gpusizer.policies import resources as res
from gpusizer.policies import view as v

HOSTS = frozenset(t for t, k in res.KINDS.items() if k.host)
_WORLD = {"0.0.0.0/0", "::/0"}
_IMDS_FIX = "To fix: metadata_options={'http_tokens': 'required'} (or enforce this policy as remediate)"


def gpu_host(resource_type: str, p: v.View) -> bool:
    """A host description whose type is a GPU type, unknown yet, or (a launch template) left to its consumer."""
    if resource_type not in HOSTS:
        return False
    try:
        if res.gpu_resource(resource_type, p) is not None:
            return True
    except v.Unknown:
        return True
    return resource_type == res.AWS_LAUNCH_TEMPLATE and not (p.has("instanceType") or p.has("instanceRequirements"))


def _tokens(p: v.View, where: str) -> list[str]:
    tokens = p.text("metadataOptions", "httpTokens")
    if tokens == "required":
        return []
    return [
        f"{where}IMDSv2 is not required (metadataOptions.httpTokens is {tokens or 'unset'}): instance "
        f"credentials can be stolen through SSRF. {_IMDS_FIX}"
    ]


def require_imdsv2(resource_type: str, p: v.View) -> list[str]:
    """IMDSv2 (session tokens) on every description of a GPU host."""
    if not gpu_host(resource_type, p):
        return []
    if (
        resource_type in (res.AWS_INSTANCE, res.AWS_SPOT_INSTANCE)
        and p.has("launchTemplate")
        and not p.has("metadataOptions")
    ):
        return []  # the launch template is judged on its own
    if resource_type == res.AWS_SPOT_FLEET:
        return [
            f"{s.path}: a Spot Fleet launch specification cannot require IMDSv2. To fix: launch template "
            "configs whose template sets http_tokens 'required'"
            for s in p.each("launchSpecifications")
        ]
    if resource_type == res.AWS_NODE_GROUP:
        if p.has("launchTemplate"):
            return []  # judged on the launch template
        return [
            "a node group without a launch template cannot be shown to require IMDSv2. To fix: a launch "
            "template with metadata_options http_tokens 'required' (and encrypted volumes)"
        ]
    return _tokens(p, "")


def remediate_imdsv2(resource_type: str, props: Mapping) -> dict | None:
    """The same props with httpTokens required (instances, spot requests, launch templates/configurations).

    Raises:
        gpusizer.policies.view.Unknown: the props hold a value unknown at preview (a whole copy would carry it).
    """
    fixable = (res.AWS_INSTANCE, res.AWS_SPOT_INSTANCE, res.AWS_LAUNCH_TEMPLATE, res.AWS_LAUNCH_CONFIG)
    if resource_type not in fixable:
        return None
    fixed = v.raw(props)
    p = v.View(fixed)
    if not require_imdsv2(resource_type, p):
        return None
    _refuse_unknowns(fixed, "")
    fixed["metadataOptions"] = {**(fixed.get("metadataOptions") or {}), "httpTokens": "required"}
    return fixed


def _refuse_unknowns(value, path: str) -> None:
    if v.is_unknown(value):
        raise v.Unknown(path or "(the resource)")
    if isinstance(value, Mapping):
        for k, x in value.items():
            _refuse_unknowns(x, f"{path}.{k}" if path else k)
    elif isinstance(value, list):
        for i, x in enumerate(value):
            _refuse_unknowns(x, f"{path}[{i}]")


def _encrypted(disk: v.View) -> bool:
    value = disk.get("encrypted")
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def secure_gpu_hosts(resource_type: str, p: v.View) -> list[str]:
    """Encrypted volumes on GPU hosts; no SSH (22) open to the internet on any firewall or security group."""
    out = _open_ssh(resource_type, p)
    if not gpu_host(resource_type, p):
        return out
    disks: list[v.View] = []
    if resource_type in (res.AWS_INSTANCE, res.AWS_SPOT_INSTANCE, res.AWS_LAUNCH_CONFIG):
        own = p.has("rootBlockDevice") or p.has("ebsBlockDevices")
        if own or not p.has("launchTemplate"):  # without either, the default root volume is unencrypted
            disks = [p.at("rootBlockDevice"), *p.each("ebsBlockDevices")]
    elif resource_type == res.AWS_LAUNCH_TEMPLATE:
        disks = [m.at("ebs") for m in p.each("blockDeviceMappings") if m.has("ebs")]
    elif resource_type == res.AWS_SPOT_FLEET:
        disks = [
            d for s in p.each("launchSpecifications") for d in s.each("rootBlockDevices") + s.each("ebsBlockDevices")
        ]
    out += [
        f"unencrypted EBS volume {d.path or 'rootBlockDevice'} on a GPU host. To fix: encrypted=True on every "
        "block device"
        for d in disks
        if not _encrypted(d)
    ]
    return out


def _covers_22(from_port, to_port, protocol) -> bool:
    if str(protocol) in ("-1", "all"):
        return True
    try:
        return int(from_port) <= 22 <= int(to_port)
    except (TypeError, ValueError):
        return False


def _port_range_has_22(port: str) -> bool:
    lo, _, hi = str(port).partition("-")
    try:
        return int(lo) <= 22 <= int(hi or lo)
    except ValueError:
        return False


def _cidrs(p: v.View) -> set[str]:
    return {x.get() for x in p.each("cidrBlocks") + p.each("ipv6CidrBlocks")}


def _open_ssh(resource_type: str, p: v.View) -> list[str]:
    msg = "SSH (port 22) open to the internet ({}). To fix: no inbound rule; use SSM Session Manager or IAP"
    if resource_type == "aws:ec2/securityGroup:SecurityGroup":
        for rule in p.each("ingress"):
            world = _cidrs(rule) & _WORLD
            if world and _covers_22(rule.get("fromPort"), rule.get("toPort"), rule.get("protocol")):
                return [msg.format(", ".join(sorted(world)))]
    if resource_type == "aws:ec2/securityGroupRule:SecurityGroupRule" and p.text("type") == "ingress":
        world = _cidrs(p) & _WORLD
        if world and _covers_22(p.get("fromPort"), p.get("toPort"), p.get("protocol")):
            return [msg.format(", ".join(sorted(world)))]
    if resource_type == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule":
        cidr = p.get("cidrIpv4") or p.get("cidrIpv6")
        if cidr in _WORLD and _covers_22(p.get("fromPort"), p.get("toPort"), p.get("ipProtocol")):
            return [msg.format(cidr)]
    if resource_type == "gcp:compute/firewall:Firewall" and (p.text("direction") or "ingress") == "ingress":
        if {x.get() for x in p.each("sourceRanges")} & _WORLD:
            for allow in p.each("allows"):
                # ports apply to TCP, UDP and SCTP only (Compute Engine API, Firewall.allowed[].ports): an ICMP
                # rule with none opens no port; SSH is TCP (protocol "tcp", its number 6, or "all")
                protocol = (allow.text("protocol") or "").strip().lower()
                ports = [x.get() for x in allow.each("ports")]
                if protocol == "all" or (
                    protocol in ("tcp", "6") and (not ports or any(_port_range_has_22(x) for x in ports))
                ):
                    return [msg.format("0.0.0.0/0")]
    return []
