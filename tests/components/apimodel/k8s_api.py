"""What a mocked program registered on Kubernetes, validated against the Kubernetes OpenAPI models.

The official `kubernetes` client (v37+) generates one pydantic model per
OpenAPI definition (V1Deployment, V1Service, ...) with unknown fields
forbidden, strict types and required fields. Each registered manifest is
validated as its kind's model. On top, the rules the API server enforces that
the schema cannot express and that the components rely on: enum-like fields
(the OpenAPI descriptions list the values), RFC 1123/1035 names, and quota
keys for extended resources (only the `requests.` prefix is allowed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tests.components import conftest
from tests.components.apimodel.aws_api import ApiModelError

# Object names (Kubernetes docs, "Object Names and IDs"): namespaces, containers and labels are
# RFC 1123 labels; Services are RFC 1035 labels (start with a letter); most others RFC 1123 subdomains.
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
NAME_RULES = {"Namespace": DNS1123_LABEL, "Service": DNS1035_LABEL}
# Values the API server accepts for fields the OpenAPI schema types as plain strings (their
# descriptions in the Kubernetes API reference, v1.34).
ENUMS = {
    ("V1DeploymentStrategy", "type"): {"Recreate", "RollingUpdate"},
    ("V1Toleration", "operator"): {"Exists", "Equal"},
    ("V1Toleration", "effect"): {"NoSchedule", "PreferNoSchedule", "NoExecute"},
    ("V1Container", "image_pull_policy"): {"Always", "IfNotPresent", "Never"},
    ("V1ContainerPort", "protocol"): {"TCP", "UDP", "SCTP"},
    ("V1ServicePort", "protocol"): {"TCP", "UDP", "SCTP"},
    ("V1ServiceSpec", "type"): {"ClusterIP", "NodePort", "LoadBalancer", "ExternalName"},
    ("V1HTTPGetAction", "scheme"): {"HTTP", "HTTPS"},
}
# ResourceQuota on extended resources (Kubernetes docs, "Resource Quotas", "Resource quota for
# extended resources"): "only quota items prefixed with requests. are allowed".
STANDARD_RESOURCES = {"cpu", "memory", "storage", "ephemeral-storage", "pods", "services", "configmaps", "secrets"}


def _model(typ: str):
    import kubernetes.client  # pydantic models of the Kubernetes OpenAPI definitions

    group, kind = typ.split(":")[1:]
    version = group.split("/")[-1]
    cls = getattr(kubernetes.client, f"{version.title()}{kind}", None)
    if cls is None:
        raise ApiModelError(f"{typ}: the kubernetes client has no model {version.title()}{kind}")
    api_version = version if group.startswith("core/") else group
    return cls, api_version, kind


def manifest(typ: str, name: str, inputs: Mapping) -> Any:
    """The registered inputs as their kind's OpenAPI model, plus the server-side rules above."""
    cls, api_version, kind = _model(typ)
    body = {"apiVersion": api_version, "kind": kind, **{k: v for k, v in inputs.items() if v is not None}}
    body = _ints(body)
    try:
        obj = cls.model_validate(body)
    except Exception as e:  # pydantic.ValidationError, which names the field path
        raise ApiModelError(f"{name} ({kind}): {e}") from None
    meta = obj.metadata
    rule = NAME_RULES.get(kind, DNS1123_SUBDOMAIN)
    if meta is not None and meta.name and not rule.match(meta.name):
        raise ApiModelError(f"{name} ({kind}): name {meta.name!r} does not match {rule.pattern}")
    _enums(obj, name)
    if kind == "ResourceQuota":
        for key in obj.spec.hard or {}:
            resource = key.removeprefix("requests.").removeprefix("limits.")
            extended = "/" in resource and not resource.startswith("kubernetes.io/")
            if extended and not key.startswith("requests."):
                raise ApiModelError(f"{name}: quota key {key!r}: extended resources take only the requests. prefix")
    return obj


def _ints(value: Any) -> Any:
    """Pulumi's wire form carries numbers as floats (the schema's integers are strict) and secrets
    wrapped in a signature object (the API server sees the plain value)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping) and value.get(conftest._SIG_KEY) == conftest._SECRET_SIG:
        return _ints(value["value"])
    if isinstance(value, Mapping):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def _enums(obj: Any, where: str) -> None:
    if isinstance(obj, list):
        for i, item in enumerate(obj):
            _enums(item, f"{where}[{i}]")
        return
    fields = getattr(type(obj), "model_fields", None)
    if fields is None:
        return
    for field in fields:
        value = getattr(obj, field)
        allowed = ENUMS.get((type(obj).__name__, field))
        if allowed is not None and value is not None and value not in allowed:
            raise ApiModelError(f"{where}.{field}: {value!r} is not one of {sorted(allowed)}")
        _enums(value, f"{where}.{field}")


def _quantity(value: str) -> float:
    """A Kubernetes resource quantity in base units (Ki/Mi/Gi/Ti binary, k/M/G/T decimal, m milli)."""
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "m": 1e-3}
    value = str(value)
    for suffix in sorted(units, key=len, reverse=True):
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * units[suffix]
    return float(value)


def _pod_rules(where: str, pod) -> None:
    """The pod-spec rules the API server applies (Kubernetes API reference, PodSpec, Container,
    ResourceRequirements; "Resource Management for Pods and Containers": an extended resource cannot be
    overcommitted, so its request must equal its limit; a limit below the request is refused)."""
    volumes = [v.name for v in pod.volumes or []]
    if len(volumes) != len(set(volumes)):
        raise ApiModelError(f"{where}: duplicate volume names {volumes}")
    for c in pod.containers:
        for m in c.volume_mounts or []:
            if m.name not in volumes:
                raise ApiModelError(f"{where}: container {c.name} mounts {m.name!r}, which is no volume of the pod")
        res = c.resources
        requests, limits = (res.requests or {}) if res else {}, (res.limits or {}) if res else {}
        for key, limit in limits.items():
            if key in requests and _quantity(limit) < _quantity(requests[key]):
                raise ApiModelError(
                    f"{where}: container {c.name}: {key} limit {limit} below its request {requests[key]}"
                )
        for key in set(requests) | set(limits):
            if (
                "/" in key
                and not key.startswith("kubernetes.io/")
                and key in requests
                and key in limits
                and _quantity(requests[key]) != _quantity(limits[key])
            ):
                raise ApiModelError(f"{where}: container {c.name}: extended resource {key} request != limit")
        ports = {p.name for p in c.ports or [] if p.name}
        for probe_name in ("readiness_probe", "liveness_probe", "startup_probe"):
            probe = getattr(c, probe_name)
            if probe and probe.http_get and isinstance(probe.http_get.port, str) and probe.http_get.port not in ports:
                raise ApiModelError(f"{where}: {probe_name} names port {probe.http_get.port!r}, no port of {c.name}")


def check_rules(found: list[tuple[Any, Any]]) -> None:
    """Cross-field and cross-resource rules (Deployment selector, volumes, resources, HPA bounds, Services)."""
    templates = []
    for r, obj in found:
        kind = type(obj).__name__
        if kind == "V1Deployment":
            labels = obj.spec.template.metadata.labels or {} if obj.spec.template.metadata else {}
            wanted = obj.spec.selector.match_labels or {}
            if not wanted or any(labels.get(k) != v for k, v in wanted.items()):
                raise ApiModelError(f"{r.name}: selector {wanted} does not match the template's labels {labels}")
            _pod_rules(r.name, obj.spec.template.spec)
            templates.append((obj.metadata.namespace, labels))
        if kind == "V2HorizontalPodAutoscaler" and (obj.spec.min_replicas or 1) > obj.spec.max_replicas:
            raise ApiModelError(f"{r.name}: minReplicas {obj.spec.min_replicas} > maxReplicas {obj.spec.max_replicas}")
    for r, obj in found:
        if type(obj).__name__ == "V1Service" and obj.spec.selector:
            sel = obj.spec.selector
            if not any(
                ns == obj.metadata.namespace and all(labels.get(k) == v for k, v in sel.items())
                for ns, labels in templates
            ):
                raise ApiModelError(f"{r.name}: Service selector {sel} selects no pod of a Deployment in its namespace")


def manifests(resources) -> list[tuple[Any, Any]]:
    """(registered resource, validated model) for every Kubernetes resource (providers excluded)."""
    found = [
        (r, manifest(r.typ, r.name, r.inputs))
        for r in resources
        if r.typ.startswith("kubernetes:") and "keda.sh" not in r.typ
    ]
    check_rules(found)
    return found
