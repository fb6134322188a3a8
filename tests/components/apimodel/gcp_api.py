"""What a mocked program registered on GCP, as `google.cloud.compute_v1` messages.

Each registered compute resource becomes the message the Compute Engine API
takes (Instance, InstanceTemplate, InstanceGroupManager, Router with its NAT,
ResourcePolicy, Network, Subnetwork). proto-plus rejects a field the message
does not have; the string fields compute_v1 declares with an enum (the
message's nested Enum named after the field, e.g. Scheduling.ProvisioningModel)
are checked against its members, which proto-plus does not do by itself; and
resource names, label keys/values and service-account ids are checked against
the patterns the API documents. Pulumi-side inputs this module does not know
fail, so a new field must be mapped before its tests pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from tests.components.apimodel.aws_api import ApiModelError

# Pulumi/Terraform-only arguments (pulumi-gcp docs: Instance.allowStoppingForUpdate, desiredStatus,
# InstanceGroupManager.waitForInstances, ...): they steer the provider, no API message has them.
TERRAFORM_ONLY = {
    "allowStoppingForUpdate",
    "desiredStatus",
    "waitForInstances",
    "waitForInstancesStatus",
    "project",
    "deletionPolicy",
    "namePrefix",
}
# Compute Engine resource names (API reference, e.g. Instance.name): RFC 1035, 1-63 characters.
NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
# InstanceGroupManager.baseInstanceName (API reference): "[a-z](([-a-z0-9]{0,57})|([-a-z0-9]{0,51}-#{4,6}))".
BASE_INSTANCE_NAME = re.compile(r"^[a-z](([-a-z0-9]{0,57})|([-a-z0-9]{0,51}-#{4,6}))$")
# Labels (GCP docs, "Requirements for labels"): keys start with a lower-case letter; keys and
# values at most 63 characters of lower-case letters, digits, '_' and '-'.
LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
# IAM CreateServiceAccount accountId (API reference): "[a-z]([-a-z0-9]*[a-z0-9])", 6-30 characters.
ACCOUNT_ID = re.compile(r"^[a-z]([-a-z0-9]{4,28}[a-z0-9])$")
# Pulumi keys whose proto field is not the key in snake_case (proto-plus spells "IP" as "i_p").
RENAMES = {"type": "type_", "networkIp": "network_i_p", "natIp": "nat_i_p"}


def _compute():
    from google.cloud import compute_v1  # ~5 s to import without bytecode: only when a test needs it

    return compute_v1


def _snake(key: str) -> str:
    return RENAMES.get(key) or re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def snake(value: Any) -> Any:
    """Pulumi's camelCase wire form as the API's snake_case fields (maps of labels/metadata kept)."""
    if isinstance(value, Mapping):
        return {_snake(k): snake(v) for k, v in value.items() if v is not None and k not in TERRAFORM_ONLY}
    if isinstance(value, list):
        return [snake(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def message(cls, fields: Mapping, where: str):
    """`cls(mapping=fields)`, then every enum-declared string field checked against its enum."""
    try:
        msg = cls(mapping=dict(fields))
    except (ValueError, TypeError, KeyError) as e:
        raise ApiModelError(f"{where}: {cls.__name__}: {e}") from None
    check_enums(msg, where)
    return msg


def check_enums(msg, where: str) -> None:
    cls = type(msg)
    for name, field in cls.meta.fields.items():
        value = getattr(msg, name)
        enum = getattr(cls, "".join(p.title() for p in name.rstrip("_").split("_")), None)
        if field.message is not None and not name.endswith("_entry"):
            items = list(value) if field.repeated else ([value] if name in msg else [])
            for i, item in enumerate(items):
                if hasattr(type(item), "meta"):
                    check_enums(item, f"{where}.{name}[{i}]" if field.repeated else f"{where}.{name}")
        elif isinstance(value, str) and value and enum is not None and hasattr(enum, "__members__"):
            if value not in enum.__members__ or value.startswith("UNDEFINED_"):
                raise ApiModelError(
                    f"{where}.{name}: {value!r} is not one of {cls.__name__}.{enum.__name__} "
                    f"{[m for m in enum.__members__ if not m.startswith('UNDEFINED_')]}"
                )


def _name(where: str, name: str, pattern: re.Pattern = NAME) -> str:
    if not pattern.match(name):
        raise ApiModelError(f"{where}: name {name!r} does not match {pattern.pattern}")
    return name


def _labels(where: str, labels: Mapping | None) -> None:
    for k, v in (labels or {}).items():
        if not LABEL_KEY.match(k) or not LABEL_VALUE.match(str(v)):
            raise ApiModelError(f"{where}: label {k}={v!r} breaks the label rules")


def _autoname(name: str, inputs: Mapping) -> str:
    """The name the resource gets: the input; else a namePrefix plus the provider's 26-character
    unique suffix (pulumi-gcp InstanceTemplate.namePrefix); else Pulumi's autoname, the logical
    name plus a 7-character suffix."""
    if inputs.get("namePrefix"):
        return f"{inputs['namePrefix']}20261123160000000000000001"
    return inputs.get("name") or f"{name}-1234567"


def _take(inputs: Mapping, where: str, known: set[str]) -> dict:
    unknown = set(inputs) - known - TERRAFORM_ONLY
    if unknown:
        raise ApiModelError(f"{where}: inputs {sorted(unknown)} have no API mapping")
    return {k: v for k, v in inputs.items() if v is not None and k not in TERRAFORM_ONLY}


def _properties(given: dict, where: str, zone: str | None) -> dict:
    """The fields an Instance and an InstanceProperties share (zonal paths when `zone` is given)."""
    prefix = f"zones/{zone}/" if zone else ""
    out = {"machine_type": f"{prefix}machineTypes/{given.pop('machineType')}"}
    accels = given.pop("guestAccelerators", None)
    if accels:
        out["guest_accelerators"] = [
            {"accelerator_type": f"{prefix}acceleratorTypes/{a['type']}", "accelerator_count": int(a["count"])}
            for a in accels
        ]
    if "serviceAccount" in given:
        out["service_accounts"] = [snake(given.pop("serviceAccount"))]
    if "metadata" in given:
        out["metadata"] = {"items": [{"key": k, "value": v} for k, v in given.pop("metadata").items()]}
    if "labels" in given:
        _labels(where, given["labels"])
        out["labels"] = given.pop("labels")
    if "reservationAffinity" in given:
        ra = given.pop("reservationAffinity")
        out["reservation_affinity"] = {"consume_reservation_type": ra["type"]}
        if ra.get("specificReservation"):
            out["reservation_affinity"].update(
                key=ra["specificReservation"]["key"], values=ra["specificReservation"]["values"]
            )
    for key in (
        "scheduling",
        "shieldedInstanceConfig",
        "networkInterfaces",
        "resourcePolicies",
        "networkPerformanceConfig",
        "advancedMachineFeatures",
        "tags",
    ):
        if key in given:
            value = given.pop(key)
            out[_snake(key)] = snake({"items": value} if key == "tags" else value)
    return out


INSTANCE_KEYS = {
    "name",
    "zone",
    "machineType",
    "bootDisk",
    "guestAccelerators",
    "scheduling",
    "shieldedInstanceConfig",
    "networkInterfaces",
    "serviceAccount",
    "metadata",
    "labels",
    "resourcePolicies",
    "reservationAffinity",
    "networkPerformanceConfig",
    "advancedMachineFeatures",
    "deletionProtection",
    "tags",
}


def instance(name: str, inputs: Mapping):
    c = _compute()
    given = _take(inputs, name, INSTANCE_KEYS)
    zone = given.pop("zone")
    body = {"name": _name(name, given.pop("name", None) or _autoname(name, inputs)), "zone": zone}
    boot = given.pop("bootDisk")
    params = dict(boot.get("initializeParams", {}))
    _labels(f"{name}.bootDisk", params.get("labels"))
    disk = {
        "boot": True,
        "auto_delete": boot.get("autoDelete", True),
        "initialize_params": {
            "source_image": params.pop("image"),
            "disk_size_gb": int(params.pop("size")),
            "disk_type": f"zones/{zone}/diskTypes/{params.pop('type')}",
            **snake(params),
        },
    }
    body.update(disks=[disk], **_properties(given, name, zone))
    if "deletionProtection" in given:
        body["deletion_protection"] = given.pop("deletionProtection")
    return message(c.Instance, body, name)


def instance_template(name: str, inputs: Mapping):
    c = _compute()
    given = _take(inputs, name, INSTANCE_KEYS - {"zone", "bootDisk", "deletionProtection"} | {"disks", "description"})
    body = {"name": _name(name, _autoname(name, inputs))}
    given.pop("name", None)
    disks = []
    for d in given.pop("disks"):
        d = dict(d)
        _labels(f"{name}.disks", d.get("labels"))
        init = {
            "source_image": d.pop("sourceImage"),
            "disk_size_gb": int(d.pop("diskSizeGb")),
            "disk_type": d.pop("diskType"),
            **({"labels": d.pop("labels")} if "labels" in d else {}),
        }
        disks.append({"initialize_params": init, **snake(d)})
    if "description" in given:
        body["description"] = given.pop("description")
    body["properties"] = {"disks": disks, **_properties(given, name, None)}
    return message(c.InstanceTemplate, body, name)


def instance_group_manager(name: str, inputs: Mapping):
    c = _compute()
    given = _take(
        inputs,
        name,
        {
            "name",
            "zone",
            "baseInstanceName",
            "versions",
            "targetSize",
            "description",
            "updatePolicy",
            "instanceLifecyclePolicy",
            "resourcePolicies",
            "autoHealingPolicies",
        },
    )
    body = snake(given)
    if isinstance(body.get("auto_healing_policies"), Mapping):  # one block in pulumi-gcp, a list in the API
        body["auto_healing_policies"] = [body["auto_healing_policies"]]
    body["name"] = _name(name, given.get("name") or _autoname(name, inputs))
    _name(f"{name}.baseInstanceName", given["baseInstanceName"], BASE_INSTANCE_NAME)
    return message(c.InstanceGroupManager, body, name)


_AUTOSCALING_RENAMES = {
    "maxReplicas": "maxNumReplicas",
    "minReplicas": "minNumReplicas",
    "cooldownPeriod": "coolDownPeriodSec",
}


def autoscaler(name: str, inputs: Mapping):
    """compute_v1.Autoscaler; `target` is the group's URL (the provider resolves the id to it)."""
    c = _compute()
    given = _take(inputs, name, {"name", "zone", "target", "description", "autoscalingPolicy"})
    body = snake({k: v for k, v in given.items() if k != "autoscalingPolicy"})
    body["name"] = _name(name, given.get("name") or _autoname(name, inputs))
    policy = dict(given.get("autoscalingPolicy") or {})
    # pulumi-gcp (Terraform) names -> the API's AutoscalingPolicy fields (compute_v1.AutoscalingPolicy).
    out = {_AUTOSCALING_RENAMES.get(k, k): v for k, v in policy.items() if k not in ("metrics", "scalingSchedules")}
    if policy.get("metrics"):
        out["customMetricUtilizations"] = [
            {
                "metric": m.get("name"),
                "filter": m.get("filter"),
                "utilizationTarget": m.get("target"),
                "utilizationTargetType": m.get("type"),
                "singleInstanceAssignment": m.get("singleInstanceAssignment"),
                **{
                    k: v
                    for k, v in m.items()
                    if k not in ("name", "filter", "target", "type", "singleInstanceAssignment")
                },
            }
            for m in policy["metrics"]
        ]
    if policy.get("scalingSchedules"):  # a list keyed by name -> the API's map of name to schedule
        out["scalingSchedules"] = {
            w["name"]: {k: v for k, v in w.items() if k != "name"} for w in policy["scalingSchedules"]
        }
    body["autoscaling_policy"] = snake(out)
    if "scaling_schedules" in body["autoscaling_policy"]:  # map keys are names, not fields
        body["autoscaling_policy"]["scaling_schedules"] = {k: snake(v) for k, v in out["scalingSchedules"].items()}
    return message(c.Autoscaler, body, name)


def router(name: str, inputs: Mapping, nats: list[Mapping] = ()):
    c = _compute()
    given = _take(inputs, name, {"name", "network", "region", "description", "bgp"})
    body = {**snake(given), "name": _name(name, given.get("name") or _autoname(name, inputs))}
    body["nats"] = [router_nat(n.name, n.inputs) for n in nats]
    return message(c.Router, body, name)


def router_nat(name: str, inputs: Mapping) -> dict:
    given = _take(
        inputs,
        name,
        {
            "name",
            "router",
            "region",
            "natIpAllocateOption",
            "sourceSubnetworkIpRangesToNat",
            "logConfig",
            "subnetworks",
            "minPortsPerVm",
            "enableEndpointIndependentMapping",
        },
    )
    given.pop("router"), given.pop("region", None)
    return {**snake(given), "name": _name(name, given.get("name") or _autoname(name, inputs))}


def resource_policy(name: str, inputs: Mapping):
    c = _compute()
    given = _take(inputs, name, {"name", "region", "description", "groupPlacementPolicy"})
    return message(
        c.ResourcePolicy, {**snake(given), "name": _name(name, given.get("name") or _autoname(name, inputs))}, name
    )


def network(name: str, inputs: Mapping):
    c = _compute()
    given = _take(
        inputs, name, {"name", "autoCreateSubnetworks", "mtu", "description", "routingMode", "networkProfile"}
    )
    body = snake({k: v for k, v in given.items() if k != "routingMode"})
    if "routingMode" in given:
        body["routing_config"] = {"routing_mode": given["routingMode"]}
    body["name"] = _name(name, given.get("name") or _autoname(name, inputs))
    return message(c.Network, body, name)


def subnetwork(name: str, inputs: Mapping):
    c = _compute()
    given = _take(inputs, name, {"name", "network", "region", "ipCidrRange", "privateIpGoogleAccess", "description"})
    return message(
        c.Subnetwork, {**snake(given), "name": _name(name, given.get("name") or _autoname(name, inputs))}, name
    )


def service_account(name: str, inputs: Mapping) -> dict:
    given = _take(inputs, name, {"accountId", "displayName", "description"})
    _name(f"{name}.accountId", given["accountId"], ACCOUNT_ID)
    return given


def firewall(name: str, inputs: Mapping):
    c = _compute()
    given = _take(
        inputs,
        name,
        {"name", "network", "direction", "allows", "sourceRanges", "targetTags", "description", "priority"},
    )
    body = snake({k: v for k, v in given.items() if k != "allows"})
    body["allowed"] = [
        {"I_p_protocol": a["protocol"], **({"ports": a["ports"]} if a.get("ports") else {})}
        for a in given.get("allows", [])
    ]
    body["name"] = _name(name, given.get("name") or _autoname(name, inputs))
    return message(c.Firewall, body, name)


def health_check(name: str, inputs: Mapping):
    """A regional health check as compute_v1.HealthCheck (type HTTP and its http_health_check)."""
    c = _compute()
    given = _take(
        inputs,
        name,
        {
            "name",
            "region",
            "description",
            "checkIntervalSec",
            "timeoutSec",
            "healthyThreshold",
            "unhealthyThreshold",
            "httpHealthCheck",
            "tcpHealthCheck",
        },
    )
    body = snake(given)
    body["type_"] = "HTTP" if "httpHealthCheck" in given else "TCP"
    body["name"] = _name(name, given.get("name") or _autoname(name, inputs))
    return message(c.HealthCheck, body, name)


def backend_service(name: str, inputs: Mapping):
    c = _compute()
    given = _take(
        inputs,
        name,
        {
            "name",
            "region",
            "description",
            "loadBalancingScheme",
            "protocol",
            "healthChecks",
            "backends",
            "sessionAffinity",
            "connectionDrainingTimeoutSec",
        },
    )
    body = snake({k: v for k, v in given.items() if k != "healthChecks"})
    checks = given.get("healthChecks")
    body["health_checks"] = [checks] if isinstance(checks, str) else list(checks or [])
    body["name"] = _name(name, given.get("name") or _autoname(name, inputs))
    return message(c.BackendService, body, name)


def forwarding_rule(name: str, inputs: Mapping):
    c = _compute()
    given = _take(
        inputs,
        name,
        {
            "name",
            "region",
            "description",
            "loadBalancingScheme",
            "backendService",
            "ipProtocol",
            "ports",
            "network",
            "subnetwork",
            "allPorts",
            "ipAddress",
        },
    )
    body = snake({k: v for k, v in given.items() if k not in ("ipProtocol", "ipAddress")})
    if "ipProtocol" in given:
        body["I_p_protocol"] = given["ipProtocol"]
    if "ipAddress" in given:
        body["I_p_address"] = given["ipAddress"]
    body["name"] = _name(name, given.get("name") or _autoname(name, inputs))
    return message(c.ForwardingRule, body, name)


def instance_group(name: str, inputs: Mapping):
    c = _compute()
    given = _take(inputs, name, {"name", "zone", "description", "instances", "namedPorts", "network"})
    body = snake({k: v for k, v in given.items() if k != "instances"})
    body["name"] = _name(name, given.get("name") or _autoname(name, inputs))
    return message(c.InstanceGroup, body, name)


def resize_request(name: str, inputs: Mapping):
    c = _compute()
    given = _take(
        inputs, name, {"name", "zone", "description", "instanceGroupManager", "resizeBy", "requestedRunDuration"}
    )
    body = snake({k: v for k, v in given.items() if k not in ("instanceGroupManager", "zone")})
    body["name"] = _name(name, given.get("name") or _autoname(name, inputs))
    return message(c.InstanceGroupManagerResizeRequest, body, name)


# IAM role names (IAM docs, "Roles": predefined roles are roles/<service>.<role>) and members.
ROLE = re.compile(r"^roles/[a-zA-Z0-9_.]+$")
MEMBER = re.compile(r"^(user|serviceAccount|group|domain):.+$")


def iam_member(name: str, inputs: Mapping) -> dict:
    given = _take(inputs, name, {"project", "secretId", "role", "member"})
    if not ROLE.match(given["role"]) or not MEMBER.match(given["member"]):
        raise ApiModelError(f"{name}: role {given['role']!r} / member {given['member']!r} malformed")
    return given


def secret(name: str, inputs: Mapping) -> dict:
    given = _take(inputs, name, {"secretId", "replication", "labels"})
    # Secret Manager secret ids: letters, digits, '-' and '_', at most 255 (API reference, Secret).
    if not re.match(r"^[A-Za-z0-9_-]{1,255}$", given["secretId"]):
        raise ApiModelError(f"{name}.secretId: {given['secretId']!r} breaks the secret id rules")
    _labels(name, given.get("labels"))
    if not given.get("replication"):
        raise ApiModelError(f"{name}: a secret needs a replication policy")
    return given


# Pulumi type -> its API message. A registered gcp: type missing here fails `messages`.
TRANSLATORS: dict[str, Callable[[str, Mapping], Any]] = {
    "gcp:compute/instance:Instance": instance,
    "gcp:compute/instanceTemplate:InstanceTemplate": instance_template,
    "gcp:compute/instanceGroupManager:InstanceGroupManager": instance_group_manager,
    "gcp:compute/autoscaler:Autoscaler": autoscaler,
    "gcp:compute/resourcePolicy:ResourcePolicy": resource_policy,
    "gcp:compute/network:Network": network,
    "gcp:compute/subnetwork:Subnetwork": subnetwork,
    "gcp:compute/firewall:Firewall": firewall,
    "gcp:serviceaccount/account:Account": service_account,
    "gcp:compute/regionHealthCheck:RegionHealthCheck": health_check,
    "gcp:compute/regionBackendService:RegionBackendService": backend_service,
    "gcp:compute/forwardingRule:ForwardingRule": forwarding_rule,
    "gcp:compute/instanceGroup:InstanceGroup": instance_group,
    "gcp:compute/resizeRequest:ResizeRequest": resize_request,
    "gcp:projects/iAMMember:IAMMember": iam_member,
    "gcp:secretmanager/secretIamMember:SecretIamMember": iam_member,
    "gcp:secretmanager/secret:Secret": secret,
    "gcp:secretmanager/secretVersion:SecretVersion": lambda n, i: _take(i, n, {"secret", "secretData"}),
}
ROUTER, NAT = "gcp:compute/router:Router", "gcp:compute/routerNat:RouterNat"


# Boot disk sizes, GB (GCP docs, "Persistent Disk" limits: pd-* 10 GB to 64 TB; "Hyperdisk": Hyperdisk
# Balanced 4 GiB to 64 TiB), checked with the API's GB figure.
DISK_SIZES = {
    "pd-balanced": (10, 65536),
    "pd-ssd": (10, 65536),
    "pd-standard": (10, 65536),
    "hyperdisk-balanced": (4, 65536),
}
# Network interfaces per VM (GCP docs, "Create A3 Ultra or A4 instances with RDMA": 2 gVNIC + 8 MRDMA;
# GPUDirect-TCPX/TCPXO: a3-highgpu-8g 1 + 4, a3-megagpu-8g 1 + 8; "Network interface limits": at most
# 8 for other machine types).
MAX_NICS = {"a3-ultragpu-8g": 10, "a4-highgpu-8g": 10, "a3-megagpu-8g": 9, "a3-highgpu-8g": 5, "a3-edgegpu-8g": 5}
# Flex-start runs at most 7 days (GCP docs, "About flex-start VMs").
FLEX_MAX_SECONDS = 7 * 24 * 3600
GPU_FAMILIES = ("a2-", "a3-", "a4-", "g2-")


def _catalog_machines() -> frozenset[str]:
    import gpusizer
    from gpusizer.components.gcp import machine_and_accelerators

    return frozenset(
        machine_and_accelerators(o.instance_type)[0] for o in gpusizer.Catalog.load().offers if o.provider == "gcp"
    )


def _vm_rules(where: str, machine: str, props, disks) -> None:
    """Rules for an Instance or an InstanceTemplate's properties."""
    from gpusizer.catalog import consumption

    m = machine.rsplit("/", 1)[-1]
    if m not in _catalog_machines():
        raise ApiModelError(f"{where}: machine type {m!r} is not in the catalog (a typo, or a shape GCP does not sell)")
    sched = props.scheduling
    gpu = bool(list(props.guest_accelerators)) or m.startswith(GPU_FAMILIES)
    if gpu and sched.on_host_maintenance != "TERMINATE":
        raise ApiModelError(f"{where}: a GPU VM cannot live-migrate: onHostMaintenance must be TERMINATE")
    model = sched.provisioning_model
    if model == "SPOT" and sched.automatic_restart:
        raise ApiModelError(f"{where}: SPOT VMs take automaticRestart false")
    if model == "FLEX_START" and sched.instance_termination_action != "DELETE":
        raise ApiModelError(f"{where}: FLEX_START needs instanceTerminationAction DELETE")
    if "max_run_duration" in sched and sched.max_run_duration.seconds > FLEX_MAX_SECONDS:
        raise ApiModelError(f"{where}: maxRunDuration above 7 days")
    ra = props.reservation_affinity
    if (
        model in ("SPOT", "FLEX_START")
        and "reservation_affinity" in props
        and ra.consume_reservation_type == "SPECIFIC_RESERVATION"
    ):
        raise ApiModelError(f"{where}: {model} VMs consume no reservation")
    if model == "RESERVATION_BOUND":
        if ra.consume_reservation_type != "SPECIFIC_RESERVATION" or not list(ra.values):
            raise ApiModelError(f"{where}: RESERVATION_BOUND needs a named reservation (SPECIFIC_RESERVATION)")
        if not sched.instance_termination_action:
            raise ApiModelError(f"{where}: RESERVATION_BOUND needs an instanceTerminationAction")
        if not consumption.reservation_bound("gcp", m):
            raise ApiModelError(f"{where}: {m} cannot be RESERVATION_BOUND")
    nics = list(props.network_interfaces)
    limit = MAX_NICS.get(m, 8)
    if len(nics) > limit:
        raise ApiModelError(f"{where}: {len(nics)} network interfaces, {m} takes at most {limit}")
    for d in disks:
        kind = d.initialize_params.disk_type.rsplit("/", 1)[-1]
        low, high = DISK_SIZES.get(kind, (10, 65536))
        if not low <= d.initialize_params.disk_size_gb <= high:
            raise ApiModelError(f"{where}: {kind} of {d.initialize_params.disk_size_gb} GB outside {low}-{high}")


def check_rules(found: list[tuple[Any, Any]]) -> None:
    """Cross-field and cross-resource rules Compute Engine applies that the messages cannot express.

    Raises:
        ApiModelError: naming the resource and the rule.
    """
    roce = set()
    resized = any(type(m).__name__ == "InstanceGroupManagerResizeRequest" for _, m in found)
    for r, msg in found:
        kind = type(msg).__name__
        if kind == "Network" and msg.network_profile.endswith("-vpc-roce"):
            roce |= {f"{r.name}-id", msg.name}
    for r, msg in found:
        kind = type(msg).__name__
        if kind == "Instance":
            _vm_rules(r.name, msg.machine_type, msg, msg.disks)
        elif kind == "InstanceTemplate":
            _vm_rules(r.name, msg.properties.machine_type, msg.properties, msg.properties.disks)
        if kind in ("Instance", "InstanceTemplate"):
            sched = msg.scheduling if kind == "Instance" else msg.properties.scheduling
            # A flex-start VM runs for a bounded time: its own maxRunDuration, or (a MIG's template) the
            # resize request's requestedRunDuration (GCP docs, "About flex-start VMs").
            if (
                sched.provisioning_model == "FLEX_START"
                and "max_run_duration" not in sched
                and not (kind == "InstanceTemplate" and resized)
            ):
                raise ApiModelError(
                    f"{r.name}: FLEX_START without a maxRunDuration (or a resize request's run duration)"
                )
            nics = list(msg.network_interfaces if kind == "Instance" else msg.properties.network_interfaces)
            for i, nic in enumerate(nics):
                if (nic.nic_type == "MRDMA") != (nic.network in roce):
                    raise ApiModelError(f"{r.name}: NIC {i}: MRDMA NICs go on a RoCE network, and only they")
        if kind == "Firewall" and (msg.network in roce):
            raise ApiModelError(f"{r.name}: a RoCE (RDMA) network takes no VPC firewall rules")
        if kind == "Autoscaler":
            pol = msg.autoscaling_policy
            if pol.min_num_replicas > pol.max_num_replicas:
                raise ApiModelError(
                    f"{r.name}: minNumReplicas {pol.min_num_replicas} > maxNumReplicas {pol.max_num_replicas}"
                )
        if kind == "InstanceGroupManagerResizeRequest":
            if msg.resize_by < 1:
                raise ApiModelError(f"{r.name}: resizeBy must be at least 1")
            if "requested_run_duration" not in msg or not 0 < msg.requested_run_duration.seconds <= FLEX_MAX_SECONDS:
                raise ApiModelError(f"{r.name}: a flex-start resize request needs a run duration of at most 7 days")
        if kind == "HealthCheck" and msg.type_ == "HTTP":
            h = msg.http_health_check
            if not h.request_path.startswith("/") or not 1 <= h.port <= 65535:
                raise ApiModelError(f"{r.name}: HTTP health check needs a /path and a port 1-65535")
        if (
            kind == "BackendService"
            and msg.load_balancing_scheme == "INTERNAL"
            and msg.protocol not in ("TCP", "UDP", "UNSPECIFIED")
        ):
            raise ApiModelError(f"{r.name}: an internal passthrough backend service takes TCP or UDP")


def messages(resources) -> list[tuple[Any, Any]]:
    """(registered resource, API message) for every GCP resource; a Router carries its RouterNats.

    Raises:
        ApiModelError: an unknown resource type, input or field, a bad enum value, a name the API refuses.
    """
    out = []
    nats = [r for r in resources if r.typ == NAT]
    for r in resources:
        if not r.typ.startswith("gcp:") or r.typ == NAT:
            continue
        if r.typ == ROUTER:
            mine = [n for n in nats if n.inputs.get("router") in (r.inputs.get("name"), f"{r.name}-1234567")]
            out.append((r, router(r.name, r.inputs, mine)))
            continue
        translate = TRANSLATORS.get(r.typ)
        if translate is None:
            raise ApiModelError(f"{r.typ} ({r.name}): no API translation; add one to TRANSLATORS")
        out.append((r, translate(r.name, r.inputs)))
    routed = {
        n.name
        for r, _ in out
        if r.typ == ROUTER
        for n in nats
        if n.inputs.get("router") in (r.inputs.get("name"), f"{r.name}-1234567")
    }
    orphans = sorted({n.name for n in nats} - routed)
    if orphans:
        raise ApiModelError(f"RouterNat {', '.join(orphans)} names no registered router")
    check_rules(out)
    return out
