"""Pulumi mocks for the component tests.

Follows docs/pulumi-offline.md: preview=False (every output is known,
so checks over them run), an id returned for every resource, unmocked invokes
raise (an empty answer would silently yield None), a fresh root stack, config
and event loop per program run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import pathlib
import runpy
from collections.abc import Callable
from typing import Any

import pulumi
import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
AMI_ID = "ami-0dlami00000000001"
# The default VPC's subnets and their zone ids, unsorted on purpose: the component sorts.
SUBNET_ZONES = {"subnet-b": "use1-az2", "subnet-a": "use1-az1", "subnet-c": "use1-az4"}
DEFAULT_SUBNETS = list(SUBNET_ZONES)
# Root snapshot of the mocked Deep Learning AMI, GiB.
AMI_SNAPSHOT_GIB = 75


@dataclasses.dataclass
class Registered:
    typ: str
    name: str
    inputs: dict
    provider: str | None
    urn: str = ""


class Mocks(pulumi.runtime.Mocks):
    """Records every resource (type, name, inputs, provider) and invoke; answers the invokes the components make."""

    def __init__(self, offerings: dict[str, list[str]] | None = None, subnet_zones: dict[str, str] | None = None):
        """offerings: instance type -> zone ids where EC2 offers it (default: every subnet's zone);
        subnet_zones: subnet id -> zone id of every subnet the account has."""
        self.resources: list[Registered] = []
        self.calls: list[pulumi.runtime.MockCallArgs] = []
        self.subnet_zones = dict(SUBNET_ZONES if subnet_zones is None else subnet_zones)
        self.offerings = offerings
        # Without explicit subnets, a region other than us-east-1 has a default subnet
        # "subnet-<zone id>" in every zone a filter names, and a type is offered in the
        # packaged-catalog zones too.
        self.every_zone = subnet_zones is None

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.resources.append(Registered(args.typ, args.name, args.inputs, args.provider))
        outputs = dict(args.inputs)
        if args.typ.startswith("aws:"):
            outputs.setdefault("arn", f"arn:aws:mock:us-east-1:123456789012:{args.name}")
            outputs.setdefault("name", f"{args.name}-1234567")
        if args.typ == "gcp:serviceaccount/account:Account":
            outputs["email"] = f"{args.inputs['accountId']}@my-project.iam.gserviceaccount.com"
        if args.typ == "aws:lb/loadBalancer:LoadBalancer":
            outputs["dnsName"] = f"{args.name}-0123456789.elb.us-east-1.amazonaws.com"
        if args.typ.startswith("gcp:compute/"):
            outputs["selfLink"] = f"https://www.googleapis.com/compute/v1/projects/my-project/{args.name}"
            outputs["selfLinkUnique"] = outputs["selfLink"] + "?uniqueId=1"
        if args.typ == "gcp:compute/instanceGroupManager:InstanceGroupManager":
            outputs["instanceGroup"] = (
                f"https://www.googleapis.com/compute/v1/projects/my-project/zones/{args.inputs.get('zone')}/instanceGroups/{args.inputs.get('name')}"
            )
        if args.typ == "gcp:compute/forwardingRule:ForwardingRule":
            outputs["ipAddress"] = "10.128.0.42"
        if args.typ == "gcp:secretmanager/secret:Secret":
            outputs["name"] = f"projects/my-project/secrets/{args.inputs['secretId']}"
        if args.typ.startswith("kubernetes:") and "metadata" in args.inputs:
            meta = dict(args.inputs["metadata"])
            meta.setdefault("name", f"{args.name}-abc123")
            outputs["metadata"] = meta
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        self.calls.append(args)
        if args.token == "aws:ec2/getAmi:getAmi":
            return {
                "id": AMI_ID,
                "imageId": AMI_ID,
                "rootDeviceName": "/dev/sda1",
                "architecture": "x86_64",
                "name": "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.9 (Ubuntu 24.04) 20260317",
                "blockDeviceMappings": [{"deviceName": "/dev/sda1", "ebs": {"volume_size": str(AMI_SNAPSHOT_GIB)}}],
            }
        if args.token == "aws:ec2/getVpc:getVpc":
            return {
                "id": args.args.get("id") or "vpc-0default",
                "default": "id" not in args.args,
                "cidrBlock": "172.31.0.0/16",
            }
        if args.token == "gcp:organizations/getClientConfig:getClientConfig":
            return {"id": "client", "project": "my-project", "region": "us-central1", "zone": ""}
        if args.token == "aws:ec2/getSubnets:getSubnets":
            filters = {f["name"]: f["values"] for f in args.args.get("filters", [])}
            wanted = filters.get("availability-zone-id")
            ids = [i for i, z in self.subnet_zones.items() if wanted is None or z in wanted]
            if self.every_zone and wanted and not ids:  # another region: its default subnets
                ids = [f"subnet-{z}" for z in wanted]
            if "subnet-id" in filters:  # configured subnets: those the account has, or unknown ones as given
                ids = [i for i in filters["subnet-id"] if i in ids or i not in self.subnet_zones]
            return {"id": "subnets", "ids": ids}
        if args.token == "aws:ec2/getSubnet:getSubnet":
            sid = args.args["id"]
            zone = self.subnet_zones.get(sid) or (sid.removeprefix("subnet-") if self.every_zone else "use1-az1")
            return {"id": sid, "availabilityZoneId": zone}
        if args.token == "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings":
            types = next(f["values"] for f in args.args["filters"] if f["name"] == "instance-type")
            every = set(self.subnet_zones.values()).union(*(_catalog_zones(t) for t in types))
            pairs = [
                (t, z) for t in types for z in sorted(every if self.offerings is None else self.offerings.get(t, []))
            ]
            return {
                "id": "offerings",
                "instanceTypes": [t for t, _ in pairs],
                "locations": [z for _, z in pairs],
                "locationTypes": ["availability-zone-id"] * len(pairs),
            }
        raise NotImplementedError(f"unmocked invoke {args.token}")

    def of_type(self, typ: str) -> list[Registered]:
        return [r for r in self.resources if r.typ == typ]

    def one(self, typ: str) -> dict:
        found = self.of_type(typ)
        assert len(found) == 1, f"{typ}: {len(found)} registered"
        return found[0].inputs

    def invoked(self, token: str) -> list[pulumi.runtime.MockCallArgs]:
        return [c for c in self.calls if c.token == token]


@functools.cache
def _catalog_zones(instance_type: str) -> frozenset[str]:
    import gpusizer

    return frozenset(o.zone for o in gpusizer.Catalog.load().offers if o.instance_type == instance_type and o.zone)


def run_program(
    fn: Callable[[], Any], config: dict | None = None, secret_keys=(), stack: str = "dev", mocks: Mocks | None = None
):
    """Run `fn` under fresh mocks (or `mocks`); return (mocks, exports, resolved exports).

    Exports are recorded as given (Outputs included) and resolved to plain values
    inside the same run. Each registered resource gets its URN, whose type part
    shows its parent's type (Pulumi's mock monitor builds it from the parent).
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    pulumi.runtime.settings.set_root_resource(None)
    pulumi.runtime.set_all_config(
        {k: v if isinstance(v, str) else json.dumps(v) for k, v in (config or {}).items()}, list(secret_keys)
    )
    mocks = mocks or Mocks()
    pulumi.runtime.set_mocks(mocks, project="gpusizer", stack=stack, preview=False)
    exports: dict = {}
    resolved: dict = {}
    original = pulumi.export

    def record(name, value):
        exports[name] = value
        original(name, value)

    def program():
        pulumi.export = record
        try:
            fn()
        finally:
            pulumi.export = original
        return pulumi.Output.from_input(exports).apply(resolved.update)

    try:
        pulumi.runtime.test(program)()
        monitor = pulumi.runtime.settings.get_monitor()
        urns = {
            (reg.urn.rsplit("::", 1)[1], reg.urn.split("::")[2].split("$")[-1]): reg.urn
            for reg in monitor.resources.values()
        }
        for r in mocks.resources:
            r.urn = urns.get((r.name, r.typ), "")
    finally:
        pulumi.export = original
        pulumi.runtime.set_all_config({})
        loop.close()
        asyncio.set_event_loop(None)
    return mocks, exports, resolved


def run_stack(stack_file: pathlib.Path, overrides: dict | None = None, secret_keys=()):
    """Run __main__.py under mocks with a stack file's config (plus overrides); also return the program's globals."""
    config = {**(yaml.safe_load(stack_file.read_text()).get("config") or {}), **(overrides or {})}
    stack = stack_file.name.split(".")[1]
    scope: dict = {}
    mocks, exports, resolved = run_program(
        lambda: scope.update(runpy.run_path(str(REPO / "__main__.py"), run_name="__main__")), config, secret_keys, stack
    )
    return mocks, resolved, scope


# How Pulumi's wire format marks a secret value (pulumi.runtime.rpc): the mock sees inputs in it.
_SIG_KEY = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


def secret_value(value: Any) -> Any:
    """The plain value of an input that was registered as a Pulumi secret; fails for a plain one."""
    assert isinstance(value, dict) and value.get(_SIG_KEY) == _SECRET_SIG, f"not a secret: {value!r}"
    return value["value"]


def parent_type(r: Registered) -> str:
    """The type of a resource's parent, from its URN ("" for a top-level resource)."""
    kinds = r.urn.split("::")[2].split("$")
    return kinds[-2] if len(kinds) > 1 else ""


@pytest.fixture
def tiny_pools():
    import gpusizer

    return gpusizer.parse_pools(
        [
            {
                "name": "rack-a",
                "location": "fra-dc1",
                "gpu": "L40S",
                "gpus_per_node": 8,
                "usd_per_gpu_hour": 0.4,
                "node_selector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            }
        ]
    )
