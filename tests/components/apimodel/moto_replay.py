"""Replay what a mocked program registered against a local moto server (loopback only, no cloud).

`MotoMocks` answers the program's invokes (get_ami, get_vpc, get_subnets,
get_instance_type_offerings) from moto, so subnet and image ids are moto's
own. `replay` then sends every registered AWS resource's API request
(`aws_api.requests`) to moto in registration order, which is dependency
order, swapping each mock id for the id moto returned, and returns what moto
created.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.request
from typing import Any

import boto3

from tests.components.apimodel import aws_api
from tests.components.conftest import Mocks

REGION = "us-east-1"
# moto cannot register an image under Amazon's account, so the Deep Learning AMI's stand-in is the
# test account's own: image look-ups by owner are answered with the owner "self".
DLAMI_STANDIN = "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.9 (Ubuntu 24.04) 20260317"
# Operations moto 5 does not implement: their requests are still checked against botocore's model
# (aws_api.requests), but not sent.
NOT_IN_MOTO = {"CreatePlacementGroup"}


def clients(endpoint: str) -> dict[str, Any]:
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION)
    return {
        svc: session.client(svc, endpoint_url=endpoint)
        for svc in ("ec2", "autoscaling", "iam", "elbv2", "secretsmanager")
    }


def reset(endpoint: str) -> None:
    """Drop every moto backend, so the next calls build them afresh (with the environment set now)."""
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=60).read()


def register_dlami(ec2, snapshot_gib: int = 100) -> str:
    """A stand-in Deep Learning AMI whose root snapshot is `snapshot_gib` GiB; returns its id."""
    volume = ec2.create_volume(AvailabilityZone=f"{REGION}a", Size=snapshot_gib)
    snap = ec2.create_snapshot(VolumeId=volume["VolumeId"])
    return ec2.register_image(
        Name=DLAMI_STANDIN,
        Architecture="x86_64",
        RootDeviceName="/dev/sda1",
        VirtualizationType="hvm",
        BlockDeviceMappings=[
            {"DeviceName": "/dev/sda1", "Ebs": {"SnapshotId": snap["SnapshotId"], "VolumeSize": snapshot_gib}}
        ],
    )["ImageId"]


class MotoMocks(Mocks):
    """Mocks whose AWS invokes are answered by moto (resources are still only recorded)."""

    def __init__(self, ec2):
        super().__init__()
        self.ec2 = ec2

    def call(self, args):
        filters = [{"Name": f["name"], "Values": list(f["values"])} for f in args.args.get("filters", [])]
        if args.token == "aws:ec2/getAmi:getAmi":
            self.calls.append(args)
            # moto's RegisterImage does not store the architecture, so that filter cannot match there.
            kept = [f for f in filters if f["Name"] != "architecture"]
            images = self.ec2.describe_images(Owners=["self"], Filters=kept)["Images"]
            if not images:
                raise ValueError(f"no image matches {filters}")
            image = max(images, key=lambda i: i["CreationDate"])
            return {
                "id": image["ImageId"],
                "imageId": image["ImageId"],
                "name": image["Name"],
                "rootDeviceName": image["RootDeviceName"],
                "architecture": image.get("Architecture", "x86_64"),
                "blockDeviceMappings": [
                    {
                        "deviceName": b["DeviceName"],
                        "ebs": {k[:1].lower() + k[1:]: str(v) for k, v in b.get("Ebs", {}).items()},
                    }
                    for b in image["BlockDeviceMappings"]
                ],
            }
        if args.token == "aws:ec2/getVpc:getVpc":
            self.calls.append(args)
            (vpc,) = self.ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"]
            return {"id": vpc["VpcId"], "default": True, "cidrBlock": vpc["CidrBlock"]}
        if args.token == "aws:ec2/getSubnets:getSubnets":
            self.calls.append(args)
            return {"id": REGION, "ids": [s["SubnetId"] for s in self.ec2.describe_subnets(Filters=filters)["Subnets"]]}
        if args.token == "aws:ec2/getSubnet:getSubnet":
            self.calls.append(args)
            (subnet,) = self.ec2.describe_subnets(SubnetIds=[args.args["id"]])["Subnets"]
            return {
                "id": subnet["SubnetId"],
                "availabilityZoneId": subnet["AvailabilityZoneId"],
                "vpcId": subnet["VpcId"],
                "cidrBlock": subnet["CidrBlock"],
            }
        if args.token == "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings":
            self.calls.append(args)
            found = self.ec2.describe_instance_type_offerings(LocationType=args.args["locationType"], Filters=filters)[
                "InstanceTypeOfferings"
            ]
            return {
                "id": REGION,
                "instanceTypes": [o["InstanceType"] for o in found],
                "locations": [o["Location"] for o in found],
                "locationTypes": [o["LocationType"] for o in found],
            }
        return super().call(args)


@dataclasses.dataclass
class Replayed:
    ids: dict[str, str]
    """mock id / arn / name -> moto's."""
    instances: list[dict]
    """Instances moto runs (RunInstances and the groups' launches)."""
    groups: list[dict]
    """DescribeAutoScalingGroups of every group created."""
    templates: dict[str, dict]
    """Launch template id -> its version's LaunchTemplateData as moto stored it."""


def _swap(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [_swap(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _swap(v, ids) for k, v in value.items()}
    return value


def replay(resources, endpoint: str) -> Replayed:
    """Send every registered AWS resource's request to moto; fail on the first one moto refuses."""
    api = clients(endpoint)
    ids: dict[str, str] = {}
    root_device = "/dev/sda1"
    groups = []
    for r in resources:
        if not r.typ.startswith("aws:"):
            continue
        for req in aws_api.TRANSLATORS[r.typ](r.name, _swap(r.inputs, ids)):
            aws_api.validate(req)
            if req.operation in NOT_IN_MOTO:
                continue
            params = _swap(req.params, ids)
            if req.operation == "RunInstances":
                params["BlockDeviceMappings"][0]["DeviceName"] = root_device
            method = getattr(api[req.service], _snake(req.operation))
            if req.operation == "AuthorizeSecurityGroupEgress":  # a new group allows all egress already
                api["ec2"].revoke_security_group_egress(
                    GroupId=params["GroupId"],
                    IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}],
                )
            try:
                out = method(**params)
            except Exception as e:
                raise aws_api.ApiModelError(f"moto refused {req.operation} for {r.name}: {e}") from e
            _record(r, req, out, ids)
            if req.operation == "CreateAutoScalingGroup":
                groups.append(params["AutoScalingGroupName"])
    # Only what this replay created: tests share one moto state (a reset costs ~10 s of EC2 set-up).
    templates = {}
    for _mock_id, real in ids.items():
        if real.startswith("lt-"):
            (version,) = api["ec2"].describe_launch_template_versions(LaunchTemplateId=real)["LaunchTemplateVersions"]
            templates[real] = version["LaunchTemplateData"]
    reservations = (
        api["ec2"].describe_instances(Filters=[{"Name": "tag:aws:ec2launchtemplate:id", "Values": list(templates)}])[
            "Reservations"
        ]
        if templates
        else []
    )
    return Replayed(
        ids,
        [i for res in reservations for i in res["Instances"]],
        api["autoscaling"].describe_auto_scaling_groups(AutoScalingGroupNames=groups)["AutoScalingGroups"]
        if groups
        else [],
        templates,
    )


def _record(r, req, out: dict, ids: dict[str, str]) -> None:
    """Remember moto's id for the mock's id (and arn) of what `req` created."""
    mock_id, mock_arn = f"{r.name}-id", f"arn:aws:mock:us-east-1:123456789012:{r.name}"
    found = {
        "CreateSecurityGroup": lambda: out["GroupId"],
        "CreateLaunchTemplate": lambda: out["LaunchTemplate"]["LaunchTemplateId"],
        "RunInstances": lambda: out["Instances"][0]["InstanceId"],
        "CreateSubnet": lambda: out["Subnet"]["SubnetId"],
        "AllocateAddress": lambda: out["AllocationId"],
        "CreateNatGateway": lambda: out["NatGateway"]["NatGatewayId"],
        "CreateRouteTable": lambda: out["RouteTable"]["RouteTableId"],
        "CreateVpcEndpoint": lambda: out["VpcEndpoint"]["VpcEndpointId"],
    }.get(req.operation)
    if found:
        ids[mock_id] = found()
    if req.operation == "CreateInstanceProfile":
        ids[mock_arn] = out["InstanceProfile"]["Arn"]
    if req.operation == "CreateTargetGroup":
        ids[mock_arn] = ids[mock_id] = out["TargetGroups"][0]["TargetGroupArn"]
    if req.operation == "CreateLoadBalancer":
        ids[mock_arn] = ids[mock_id] = out["LoadBalancers"][0]["LoadBalancerArn"]
    if req.operation == "CreateSecret":
        ids[mock_arn] = ids[mock_id] = out["ARN"]
    if req.operation == "CreateRole":
        ids[mock_arn] = out["Role"]["Arn"]
    if req.operation == "AllocateAddress":
        ids[f"{r.name}-id"] = out["AllocationId"]


def _snake(operation: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in operation).lstrip("_")


def dumps(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True)
