"""What a mocked program registered on AWS, as the EC2 / Auto Scaling / IAM API requests it becomes.

Pulumi mocks accept any input. This module turns each registered AWS resource
into the API request the provider would send (CreateLaunchTemplate,
RunInstances, CreateAutoScalingGroup, CreatePlacementGroup, ...), shaped and
checked by botocore's own service models: every key must be a member of the
operation's input shape (an unknown one fails), enum members must be among the
model's values, and `botocore.validate.validate_parameters` then checks types,
required members and ranges. `replay` sends the same requests to a moto server
on loopback, so what EC2 would refuse at `pulumi up` (a missing subnet, an
unknown launch template) fails here.

The translation is strict on the Pulumi side too: an input this module does
not know fails, so a field added to a component must be mapped (and so
validated) before its tests pass.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

import botocore.session
import botocore.validate

_SESSION = botocore.session.get_session()
_DROP = object()
# Terraform/Pulumi-only arguments: they steer the provider, no API request carries them.
# (pulumi-aws docs: LaunchTemplate.updateDefaultVersion, Group.waitForCapacityTimeout,
# Group.forceDelete, ...).
TERRAFORM_ONLY = {
    "updateDefaultVersion",
    "waitForCapacityTimeout",
    "forceDelete",
    "waitForElbCapacity",
    "minElbCapacity",
    "getPasswordData",
    "userDataReplaceOnChange",
    "tagsAll",
    "skipDestroy",
}
# Pulumi camelCase keys whose EC2 member is not the key with its first letter upper-cased.
RENAMES = {
    "vpcSecurityGroupIds": "SecurityGroupIds",
    "securityGroups": "Groups",
    # aws.autoscaling.Policy / Schedule (pulumi-aws) -> PutScalingPolicy / PutScheduledUpdateGroupAction
    "autoscalingGroupName": "AutoScalingGroupName",
    "metricDimensions": "Dimensions",
    # aws.autoscaling.Group -> CreateAutoScalingGroup
    "targetGroupArns": "TargetGroupARNs",
    # aws.lb.* (pulumi-aws) -> Elastic Load Balancing v2
    "loadBalancerArn": "LoadBalancerArn",
    "targetGroupArn": "TargetGroupArn",
}
# InterfaceType has no enum in the botocore model; EC2 API reference,
# LaunchTemplateInstanceNetworkInterfaceSpecificationRequest.InterfaceType (2025): "interface | efa | efa-only".
INTERFACE_TYPES = {"interface", "efa", "efa-only"}


class ApiModelError(AssertionError):
    """A registered resource that the cloud's API model rejects (or that cannot be translated)."""


@dataclasses.dataclass
class Request:
    service: str
    operation: str
    params: dict


def _shape(service: str, operation: str):
    return _SESSION.get_service_model(service).operation_model(operation).input_shape


def shaped(value: Any, shape, where: str) -> Any:
    """`value` (Pulumi wire form: camelCase keys, floats for numbers, "true" strings in launch
    templates, tag maps) as the member `shape` expects; unknown keys and bad enum values fail."""
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, Mapping):
            raise ApiModelError(f"{where}: {shape.name} takes an object, got {value!r}")
        out = {}
        for key, item in value.items():
            if item is None or key in TERRAFORM_ONLY:
                continue
            member = RENAMES.get(key, key[:1].upper() + key[1:])
            if member not in shape.members:
                raise ApiModelError(
                    f"{where}.{key}: {shape.name} has no member {member} (members: {', '.join(shape.members)})"
                )
            out[member] = shaped(item, shape.members[member], f"{where}.{key}")
        return out
    if kind == "list":
        if isinstance(value, Mapping) and set(getattr(shape.member, "members", {})) >= {"Key", "Value"}:
            value = [{"key": k, "value": v} for k, v in value.items()]  # a tag map
        if not isinstance(value, list):
            raise ApiModelError(f"{where}: {shape.name} takes a list, got {value!r}")
        return [shaped(x, shape.member, f"{where}[{i}]") for i, x in enumerate(value)]
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    if kind in ("integer", "long") and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind == "string" and shape.enum and value not in shape.enum:
        raise ApiModelError(f"{where}: {value!r} is not one of {shape.name}'s values {shape.enum}")
    return value


def _tags(tags: Mapping[str, str] | None, resource_type: str) -> list[dict]:
    return [{"ResourceType": resource_type, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}] if tags else []


def _top(inputs: Mapping, shape, where: str, skip: set[str]) -> dict:
    return shaped({k: v for k, v in inputs.items() if k not in skip}, shape, where)


def launch_template(name: str, inputs: Mapping) -> Request:
    shape = _shape("ec2", "CreateLaunchTemplate")
    data = _top(inputs, shape.members["LaunchTemplateData"], f"{name}", {"tags", "name", "namePrefix", "description"})
    for i, nic in enumerate(data.get("NetworkInterfaces", [])):
        if nic.get("InterfaceType", "interface") not in INTERFACE_TYPES:
            raise ApiModelError(
                f"{name}.networkInterfaces[{i}].interfaceType: {nic['InterfaceType']!r} "
                f"is not one of {sorted(INTERFACE_TYPES)}"
            )
    params = {
        "LaunchTemplateName": inputs.get("name") or f"{name}-1234567",
        "LaunchTemplateData": data,
        "TagSpecifications": _tags(inputs.get("tags"), "launch-template"),
    }
    if inputs.get("description"):
        params["VersionDescription"] = inputs["description"]
    return Request("ec2", "CreateLaunchTemplate", params)


def instance(name: str, inputs: Mapping, root_device: str = "/dev/sda1") -> Request:
    """RunInstances. The root volume is the launch template's root device (`root_device`)."""
    shape = _shape("ec2", "RunInstances")
    given = dict(inputs)
    root = given.pop("rootBlockDevice", None)
    tags = given.pop("tags", None)
    if given.get("launchTemplate"):  # the provider's {id, name, version}
        lt = given["launchTemplate"]
        given["launchTemplate"] = {
            "launchTemplateId": lt.get("id"),
            "launchTemplateName": lt.get("name"),
            "version": lt.get("version"),
        }
    params = _top(
        {
            k: v
            for k, v in given.items()
            if k not in ("ami", "placementGroup", "availabilityZone", "iamInstanceProfile")
        },
        shape,
        name,
        set(),
    )
    if "ami" in given:
        params["ImageId"] = given["ami"]
    if given.get("placementGroup") or given.get("availabilityZone"):
        params["Placement"] = {
            k: v
            for k, v in (
                ("GroupName", given.get("placementGroup")),
                ("AvailabilityZone", given.get("availabilityZone")),
            )
            if v
        }
    if given.get("iamInstanceProfile"):
        params["IamInstanceProfile"] = {"Name": given["iamInstanceProfile"]}
    specs = _tags(tags, "instance")
    if root:
        root = dict(root)
        specs += _tags(root.pop("tags", None), "volume")
        ebs = shaped(root, shape.members["BlockDeviceMappings"].member.members["Ebs"], f"{name}.rootBlockDevice")
        params["BlockDeviceMappings"] = [{"DeviceName": root_device, "Ebs": ebs}]
    params.update(MinCount=1, MaxCount=1, TagSpecifications=specs)
    return Request("ec2", "RunInstances", params)


def auto_scaling_group(name: str, inputs: Mapping) -> Request | list[Request]:
    shape = _shape("autoscaling", "CreateAutoScalingGroup")
    given = dict(inputs)
    subnets = given.pop("vpcZoneIdentifiers", None)
    tags = given.pop("tags", None) or []
    group_name = given.pop("name", None) or f"{name}-1234567"
    # Group metrics are a separate call (EnableMetricsCollection), made by the provider after the create.
    metrics = given.pop("enabledMetrics", None)
    granularity = given.pop("metricsGranularity", None)
    if given.get("launchTemplate"):  # the provider's {id, name, version} -> LaunchTemplateSpecification
        lt = given["launchTemplate"]
        given["launchTemplate"] = {
            k: v
            for k, v in (
                ("launchTemplateId", lt.get("id")),
                ("launchTemplateName", lt.get("name")),
                ("version", lt.get("version")),
            )
            if v
        }
    params = _top(given, shape, name, set())
    params["AutoScalingGroupName"] = group_name
    if subnets:
        params["VPCZoneIdentifier"] = ",".join(subnets)  # the API takes one comma-separated string
    params["Tags"] = [
        {
            **shaped(t, shape.members["Tags"].member, f"{name}.tags"),
            "ResourceId": group_name,
            "ResourceType": "auto-scaling-group",
        }
        for t in tags
    ]
    create = Request("autoscaling", "CreateAutoScalingGroup", params)
    if not metrics:
        return create
    return [
        create,
        Request(
            "autoscaling",
            "EnableMetricsCollection",
            {"AutoScalingGroupName": group_name, "Metrics": metrics, "Granularity": granularity or "1Minute"},
        ),
    ]


def placement_group(name: str, inputs: Mapping) -> Request:
    shape = _shape("ec2", "CreatePlacementGroup")
    given = dict(inputs)
    tags = given.pop("tags", None)
    params = _top(given, shape, name, {"name"})
    params.update(GroupName=given.get("name") or f"{name}-1234567", TagSpecifications=_tags(tags, "placement-group"))
    return Request("ec2", "CreatePlacementGroup", params)


def security_group(name: str, inputs: Mapping) -> list[Request]:
    """CreateSecurityGroup, then one AuthorizeSecurityGroupIngress/Egress per rule."""
    group = {
        "GroupName": inputs.get("name") or f"{name}-1234567",
        "Description": inputs["description"],
        "VpcId": inputs.get("vpcId"),
        "TagSpecifications": _tags(inputs.get("tags"), "security-group"),
    }
    out = [Request("ec2", "CreateSecurityGroup", {k: v for k, v in group.items() if v is not None})]
    unknown = set(inputs) - {"name", "description", "vpcId", "tags", "ingress", "egress"}
    if unknown:
        raise ApiModelError(f"{name}: security group inputs {sorted(unknown)} are not mapped")
    for direction, op in (("ingress", "AuthorizeSecurityGroupIngress"), ("egress", "AuthorizeSecurityGroupEgress")):
        for i, rule in enumerate(inputs.get(direction) or []):
            rule = dict(rule)
            perm = {
                "IpProtocol": rule.pop("protocol"),
                "FromPort": int(rule.pop("fromPort")),
                "ToPort": int(rule.pop("toPort")),
            }
            if rule.pop("self", False):
                perm["UserIdGroupPairs"] = [{"GroupId": f"{name}-id"}]
            cidrs = rule.pop("cidrBlocks", None)
            if cidrs:
                perm["IpRanges"] = [{"CidrIp": c} for c in cidrs]
            for group in rule.pop("securityGroups", None) or []:
                perm.setdefault("UserIdGroupPairs", []).append({"GroupId": group})
            if rule:
                raise ApiModelError(f"{name}.{direction}[{i}]: rule fields {sorted(rule)} are not mapped")
            out.append(
                Request(
                    "ec2",
                    op,
                    {
                        "GroupId": f"{name}-id",
                        "IpPermissions": [
                            shaped(perm, _shape("ec2", op).members["IpPermissions"].member, f"{name}.{direction}[{i}]")
                        ],
                    },
                )
            )
    return out


def _simple(
    service: str,
    operation: str,
    renames: Mapping[str, str] = {},
    tags: str | None = None,
    extra: Callable[[str, Mapping], dict] | None = None,
) -> Callable[[str, Mapping], list[Request]]:
    """A resource whose inputs are the request's members (after `renames`), tags to TagSpecifications."""

    def translate(name: str, inputs: Mapping) -> list[Request]:
        given = {renames.get(k, k): v for k, v in inputs.items() if k != "tags"}
        params = _top(given, _shape(service, operation), name, set())
        if tags and inputs.get("tags"):
            params["TagSpecifications"] = _tags(inputs["tags"], tags)
        if extra:
            params.update(extra(name, inputs))
        return [Request(service, operation, params)]

    return translate


def _role(name: str, inputs: Mapping) -> list[Request]:
    params = {
        "RoleName": inputs.get("name") or f"{name}-1234567",
        "AssumeRolePolicyDocument": inputs["assumeRolePolicy"],
        "Tags": [{"Key": k, "Value": v} for k, v in (inputs.get("tags") or {}).items()],
    }
    unknown = set(inputs) - {"name", "assumeRolePolicy", "tags"}
    if unknown:
        raise ApiModelError(f"{name}: role inputs {sorted(unknown)} are not mapped")
    json.loads(inputs["assumeRolePolicy"])
    return [Request("iam", "CreateRole", params)]


def _profile(name: str, inputs: Mapping) -> list[Request]:
    profile = inputs.get("name") or f"{name}-1234567"
    return [
        Request(
            "iam",
            "CreateInstanceProfile",
            {
                "InstanceProfileName": profile,
                "Tags": [{"Key": k, "Value": v} for k, v in (inputs.get("tags") or {}).items()],
            },
        ),
        Request("iam", "AddRoleToInstanceProfile", {"InstanceProfileName": profile, "RoleName": inputs["role"]}),
    ]


def _listed(reqs) -> list[Request]:
    return reqs if isinstance(reqs, list) else [reqs]


def scaling_policy(name: str, inputs: Mapping) -> Request:
    """PutScalingPolicy (the policy's name is autonamed by Pulumi)."""
    shape = _shape("autoscaling", "PutScalingPolicy")
    params = _top(inputs, shape, name, {"name"})
    params["PolicyName"] = inputs.get("name") or f"{name}-1234567"
    return Request("autoscaling", "PutScalingPolicy", params)


def _elb_tags(inputs: Mapping) -> list[dict]:
    return [{"Key": k, "Value": v} for k, v in (inputs.get("tags") or {}).items()]


def target_group(name: str, inputs: Mapping) -> list[Request]:
    """CreateTargetGroup; the health check's fields are the request's HealthCheck* members."""
    given = {k: v for k, v in inputs.items() if k not in ("tags", "healthCheck", "name")}
    params = _top(given, _shape("elbv2", "CreateTargetGroup"), name, set())
    check = dict(inputs.get("healthCheck") or {})
    names = {
        "enabled": "HealthCheckEnabled",
        "protocol": "HealthCheckProtocol",
        "path": "HealthCheckPath",
        "port": "HealthCheckPort",
        "interval": "HealthCheckIntervalSeconds",
        "timeout": "HealthCheckTimeoutSeconds",
        "healthyThreshold": "HealthyThresholdCount",
        "unhealthyThreshold": "UnhealthyThresholdCount",
    }
    matcher = check.pop("matcher", None)
    unknown = set(check) - set(names)
    if unknown:
        raise ApiModelError(f"{name}.healthCheck: {sorted(unknown)} are not mapped")
    shape = _shape("elbv2", "CreateTargetGroup")
    for k, v in check.items():
        params[names[k]] = shaped(
            int(v) if isinstance(v, float) else v, shape.members[names[k]], f"{name}.healthCheck.{k}"
        )
    if matcher:
        params["Matcher"] = {"HttpCode": matcher}
    params.update(Name=inputs.get("name") or f"{name}-1234567"[:32], Tags=_elb_tags(inputs))
    return [Request("elbv2", "CreateTargetGroup", params)]


def load_balancer(name: str, inputs: Mapping) -> list[Request]:
    given = dict(inputs)
    internal = given.pop("internal", None)
    kind = given.pop("loadBalancerType", None)
    given.pop("tags", None)
    groups = given.pop("securityGroups", None)
    params = _top({k: v for k, v in given.items() if k != "name"}, _shape("elbv2", "CreateLoadBalancer"), name, set())
    if groups:
        params["SecurityGroups"] = groups
    params.update(
        Name=inputs.get("name") or f"{name}-1234567"[:32],
        Tags=_elb_tags(inputs),
        Scheme="internal" if internal else "internet-facing",
    )
    if kind:
        params["Type"] = shaped(kind, _shape("elbv2", "CreateLoadBalancer").members["Type"], f"{name}.loadBalancerType")
    return [Request("elbv2", "CreateLoadBalancer", params)]


def listener(name: str, inputs: Mapping) -> list[Request]:
    given = {k: v for k, v in inputs.items() if k != "tags"}
    params = _top(given, _shape("elbv2", "CreateListener"), name, set())
    params["Tags"] = _elb_tags(inputs)
    return [Request("elbv2", "CreateListener", params)]


def target_attachment(name: str, inputs: Mapping) -> list[Request]:
    unknown = set(inputs) - {"targetGroupArn", "targetId", "port"}
    if unknown:
        raise ApiModelError(f"{name}: target attachment inputs {sorted(unknown)} are not mapped")
    return [
        Request(
            "elbv2",
            "RegisterTargets",
            {
                "TargetGroupArn": inputs["targetGroupArn"],
                "Targets": [
                    {"Id": inputs["targetId"], **({"Port": int(inputs["port"])} if inputs.get("port") else {})}
                ],
            },
        )
    ]


def secret(name: str, inputs: Mapping) -> list[Request]:
    given = dict(inputs)
    window = given.pop("recoveryWindowInDays", None)  # a DeleteSecret parameter, used at destroy
    if window is not None and not (window == 0 or 7 <= window <= 30):
        raise ApiModelError(f"{name}.recoveryWindowInDays: {window} is not 0 or 7-30 (DeleteSecret)")
    given.pop("tags", None)
    params = _top(
        {k: v for k, v in given.items() if k != "name"}, _shape("secretsmanager", "CreateSecret"), name, set()
    )
    params.update(Name=inputs.get("name") or f"{name}-1234567", Tags=_elb_tags(inputs))
    return [Request("secretsmanager", "CreateSecret", params)]


def secret_version(name: str, inputs: Mapping) -> list[Request]:
    from tests.components.apimodel.k8s_api import _ints  # the wire form's secret wrapper -> the plain value

    return [
        Request(
            "secretsmanager",
            "PutSecretValue",
            _top(_ints(dict(inputs)), _shape("secretsmanager", "PutSecretValue"), name, set()),
        )
    ]


def role_policy(name: str, inputs: Mapping) -> list[Request]:
    unknown = set(inputs) - {"role", "policy", "name"}
    if unknown:
        raise ApiModelError(f"{name}: role policy inputs {sorted(unknown)} are not mapped")
    doc = json.loads(inputs["policy"])
    for i, st in enumerate(doc["Statement"]):
        if st.get("Effect") not in ("Allow", "Deny") or not st.get("Action") or not st.get("Resource"):
            raise ApiModelError(f"{name}.policy.Statement[{i}]: needs Effect Allow|Deny, Action and Resource")
    return [
        Request(
            "iam",
            "PutRolePolicy",
            {
                "RoleName": inputs["role"],
                "PolicyName": inputs.get("name") or f"{name}-1234567",
                "PolicyDocument": inputs["policy"],
            },
        )
    ]


# Pulumi type -> translation to API requests. A registered aws: type missing here fails `requests`.
TRANSLATORS: dict[str, Callable[[str, Mapping], list[Request]]] = {
    "aws:ec2/launchTemplate:LaunchTemplate": lambda n, i: [launch_template(n, i)],
    "aws:ec2/instance:Instance": lambda n, i: [instance(n, i)],
    "aws:autoscaling/group:Group": lambda n, i: _listed(auto_scaling_group(n, i)),
    "aws:ec2/placementGroup:PlacementGroup": lambda n, i: [placement_group(n, i)],
    "aws:autoscaling/policy:Policy": lambda n, i: [scaling_policy(n, i)],
    "aws:autoscaling/schedule:Schedule": lambda n, i: [
        Request(
            "autoscaling",
            "PutScheduledUpdateGroupAction",
            _top(i, _shape("autoscaling", "PutScheduledUpdateGroupAction"), n, set()),
        )
    ],
    "aws:ec2/securityGroup:SecurityGroup": security_group,
    "aws:iam/role:Role": _role,
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": lambda n, i: [
        Request("iam", "AttachRolePolicy", {"RoleName": i["role"], "PolicyArn": i["policyArn"]})
    ],
    "aws:iam/instanceProfile:InstanceProfile": _profile,
    "aws:ec2/subnet:Subnet": _simple("ec2", "CreateSubnet", tags="subnet"),
    "aws:ec2/eip:Eip": _simple("ec2", "AllocateAddress", tags="elastic-ip"),
    "aws:ec2/natGateway:NatGateway": _simple("ec2", "CreateNatGateway", tags="natgateway"),
    "aws:ec2/routeTable:RouteTable": _simple("ec2", "CreateRouteTable", tags="route-table"),
    "aws:ec2/route:Route": _simple("ec2", "CreateRoute"),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": _simple("ec2", "AssociateRouteTable"),
    "aws:ec2/vpcEndpoint:VpcEndpoint": _simple("ec2", "CreateVpcEndpoint", tags="vpc-endpoint"),
    "aws:lb/targetGroup:TargetGroup": target_group,
    "aws:lb/loadBalancer:LoadBalancer": load_balancer,
    "aws:lb/listener:Listener": listener,
    "aws:lb/targetGroupAttachment:TargetGroupAttachment": target_attachment,
    "aws:secretsmanager/secret:Secret": secret,
    "aws:secretsmanager/secretVersion:SecretVersion": secret_version,
    "aws:iam/rolePolicy:RolePolicy": role_policy,
}


# Values the APIs accept for members botocore models as plain strings (no enum): Amazon EC2 Auto
# Scaling API Reference, InstancesDistribution (OnDemandAllocationStrategy: lowest-price |
# prioritized; SpotAllocationStrategy: lowest-price | capacity-optimized |
# capacity-optimized-prioritized | price-capacity-optimized) and CreateAutoScalingGroup
# (HealthCheckType: EC2 | ELB | VPC_LATTICE | EBS), read 2026-11.
PLAIN_ENUMS = {
    "OnDemandAllocationStrategy": {"lowest-price", "prioritized"},
    "SpotAllocationStrategy": {
        "lowest-price",
        "capacity-optimized",
        "capacity-optimized-prioritized",
        "price-capacity-optimized",
    },
    "HealthCheckType": {"EC2", "ELB", "VPC_LATTICE", "EBS"},
}
# EBS volume sizes per type, GiB (Amazon EBS User Guide, "Amazon EBS volume types": gp2/gp3 1-16,384,
# io1/io2 4-16,384 (io2 Block Express up to 65,536), st1/sc1 125-16,384).
EBS_SIZES = {
    "gp2": (1, 16384),
    "gp3": (1, 16384),
    "io1": (4, 16384),
    "io2": (4, 65536),
    "st1": (125, 16384),
    "sc1": (125, 16384),
    "standard": (1, 1024),
}
# Elastic Load Balancing target group health checks (API reference, CreateTargetGroup): interval 5-300 s.
HEALTH_INTERVAL = (5, 300)


def _ec2_types() -> frozenset[str]:
    return frozenset(_SESSION.get_service_model("ec2").shape_for("InstanceType").enum)


def _fail(where: str, rule: str) -> None:
    raise ApiModelError(f"{where}: {rule}")


def check_rules(found: list[tuple[Any, Request]]) -> None:
    """The cross-field and cross-resource rules the AWS APIs apply that the models cannot express.

    Raises:
        ApiModelError: naming the resource and the rule it breaks.
    """
    from gpusizer.components import aws_network  # the network-card table the component uses, with its sources

    by_op: dict[str, list[tuple[Any, Request]]] = {}
    for r, req in found:
        by_op.setdefault(req.operation, []).append((r, req))
    types = _ec2_types()
    for r, req in by_op.get("CreateAutoScalingGroup", []):
        p = req.params
        if p["MinSize"] > p["MaxSize"]:
            _fail(r.name, f"MinSize {p['MinSize']} > MaxSize {p['MaxSize']}")
        if "DesiredCapacity" in p and not p["MinSize"] <= p["DesiredCapacity"] <= p["MaxSize"]:
            _fail(r.name, f"DesiredCapacity {p['DesiredCapacity']} outside MinSize..MaxSize")
        if p.get("HealthCheckType") not in (None, *PLAIN_ENUMS["HealthCheckType"]):
            _fail(
                r.name, f"HealthCheckType {p['HealthCheckType']!r} not one of {sorted(PLAIN_ENUMS['HealthCheckType'])}"
            )
        if p.get("HealthCheckType") == "ELB" and not (p.get("TargetGroupARNs") or p.get("LoadBalancerNames")):
            _fail(r.name, "HealthCheckType ELB without a target group or load balancer: no health check would run")
        mixed = p.get("MixedInstancesPolicy") or {}
        dist = mixed.get("InstancesDistribution") or {}
        for key in ("OnDemandAllocationStrategy", "SpotAllocationStrategy"):
            if key in dist and dist[key] not in PLAIN_ENUMS[key]:
                _fail(r.name, f"{key} {dist[key]!r} not one of {sorted(PLAIN_ENUMS[key])}")
        for o in (mixed.get("LaunchTemplate") or {}).get("Overrides", []):
            if o.get("InstanceType") and o["InstanceType"] not in types:
                _fail(r.name, f"override InstanceType {o['InstanceType']!r} is no EC2 instance type")
    sg_rules: dict[str, set[str]] = {}
    for op, direction in (("AuthorizeSecurityGroupIngress", "in"), ("AuthorizeSecurityGroupEgress", "out")):
        for _, req in by_op.get(op, []):
            for perm in req.params["IpPermissions"]:
                for pair in perm.get("UserIdGroupPairs", []):
                    if perm["IpProtocol"] == "-1" and pair["GroupId"] == req.params["GroupId"]:
                        sg_rules.setdefault(req.params["GroupId"], set()).add(direction)
    for r, req in by_op.get("CreateLaunchTemplate", []):
        data = req.params["LaunchTemplateData"]
        itype = data.get("InstanceType")
        nics = data.get("NetworkInterfaces", [])
        cards = aws_network.network_cards(itype) if itype else 1
        seen = set()
        for i, nic in enumerate(nics):
            card = nic.get("NetworkCardIndex", 0)
            if card >= cards:
                _fail(r.name, f"networkInterfaces[{i}] on network card {card}: {itype} has {cards}")
            key = (card, nic.get("DeviceIndex", 0))
            if key in seen:
                _fail(r.name, f"networkInterfaces[{i}]: card {card} device {key[1]} used twice")
            seen.add(key)
            if nic.get("InterfaceType") in ("efa", "efa-only"):
                for group in nic.get("Groups", []):
                    missing = {"in", "out"} - sg_rules.get(group, set())
                    if missing:
                        _fail(
                            r.name,
                            f"EFA interface in security group {group} without all-traffic self "
                            f"{' and '.join(sorted(missing))}bound rules: NCCL over EFA fails",
                        )
        for m in data.get("BlockDeviceMappings", []):
            ebs = m.get("Ebs") or {}
            low, high = EBS_SIZES.get(ebs.get("VolumeType", "gp2"), (1, 16384))
            if "VolumeSize" in ebs and not low <= ebs["VolumeSize"] <= high:
                _fail(r.name, f"{ebs.get('VolumeType')} VolumeSize {ebs['VolumeSize']} GiB outside {low}-{high}")
        if data.get("UserData"):  # EC2 User Guide, "Run commands when you launch an EC2 instance with user data"
            raw = len(__import__("base64").b64decode(data["UserData"]))
            if raw > 16 * 1024:
                _fail(r.name, f"user data of {raw} bytes: EC2 takes at most 16 KB before base64")
        market = data.get("InstanceMarketOptions") or {}
        target = (data.get("CapacityReservationSpecification") or {}).get("CapacityReservationTarget") or {}
        if market.get("MarketType") == "capacity-block" and not target.get("CapacityReservationId"):
            _fail(r.name, "MarketType capacity-block without the Capacity Block's CapacityReservationId")
    for r, req in by_op.get("CreateTargetGroup", []):
        p = req.params
        if p.get("HealthCheckPath") and not p["HealthCheckPath"].startswith("/"):
            _fail(r.name, f"HealthCheckPath {p['HealthCheckPath']!r} must start with /")
        for key in ("HealthyThresholdCount", "UnhealthyThresholdCount"):
            if key in p and not 2 <= p[key] <= 10:
                _fail(r.name, f"{key} {p[key]} outside 2-10")
        if (
            "HealthCheckIntervalSeconds" in p
            and not HEALTH_INTERVAL[0] <= p["HealthCheckIntervalSeconds"] <= HEALTH_INTERVAL[1]
        ):
            _fail(r.name, f"HealthCheckIntervalSeconds {p['HealthCheckIntervalSeconds']} outside 5-300")
        if (
            p.get("Protocol") in ("TCP", "UDP", "TLS", "TCP_UDP")
            and p.get("HealthCheckProtocol") == "HTTPS"
            and not p.get("HealthCheckPath")
        ):
            _fail(r.name, "an HTTP(S) health check needs a path")
    for r, req in by_op.get("CreateListener", []):
        for a in req.params.get("DefaultActions", []):
            if a["Type"] == "forward" and not (a.get("TargetGroupArn") or a.get("ForwardConfig")):
                _fail(r.name, "a forward action without a target group")
    for r, req in by_op.get("PutScalingPolicy", []):
        t = req.params.get("TargetTrackingConfiguration") or {}
        if "TargetValue" in t and t["TargetValue"] <= 0:
            _fail(r.name, f"TargetValue {t['TargetValue']} must be positive")


def requests(resources) -> list[tuple[Any, Request]]:
    """(registered resource, API request) for every AWS resource, each validated against botocore's model.

    Raises:
        ApiModelError: a resource type or input with no API mapping, an unknown member, a bad enum value.
        botocore.exceptions.ParamValidationError: a wrong type, a missing required member, a value out of range.
    """
    out = []
    for r in resources:
        if not r.typ.startswith("aws:"):
            continue
        translate = TRANSLATORS.get(r.typ)
        if translate is None:
            raise ApiModelError(f"{r.typ} ({r.name}): no API translation; add one to TRANSLATORS")
        for req in translate(r.name, r.inputs):
            validate(req)
            out.append((r, req))
    check_rules(out)
    return out


def validate(req: Request) -> None:
    """botocore's own request validation (types, required members, unknown members, ranges)."""
    botocore.validate.validate_parameters(req.params, _shape(req.service, req.operation))
