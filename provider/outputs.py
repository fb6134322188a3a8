"""What GpuWorkload and the plan function return to a program in any language: one table for both.

Each value is read from the plan JSON (gpusizer.render.plan_json, docs/contract.md
section 2) that the component also exports whole as `decisionJson`, so the
outputs and the document can never disagree.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

import pulumi

from gpusizer.components import serving
from provider.names import camel_case


@dataclasses.dataclass(frozen=True)
class Field:
    name: str
    """The schema name (camelCase)."""
    type: str
    """string, integer, number or boolean."""
    description: str
    read: Callable[[dict], Any] | None = None
    """The value, from the plan JSON; None for a field the component sets (the cloud ids, the endpoint)."""
    always: bool = True
    """Present for every feasible choice (a required output); else absent where it does not apply."""

    def property(self) -> dict:
        return {"type": self.type, "description": self.description}


def _choice(key: str) -> Callable[[dict], Any]:
    return lambda doc: doc["choice"][key]


FIELDS = (
    Field("provider", "string", "Where it runs: aws, gcp or onprem (choice.provider).", _choice("provider")),
    Field("region", "string", "The chosen region, or the on-prem pool's location.", _choice("region")),
    Field("zone", "string", "The zone that was priced, where the offer names one.", _choice("zone"), always=False),
    Field(
        "instanceType",
        "string",
        "The chosen instance or machine type, or the on-prem pool's name.",
        _choice("instance_type"),
    ),
    Field("gpu", "string", "The GPU model (canonical name, e.g. L4, H100).", _choice("gpu")),
    Field("gpuCount", "integer", "GPUs of one replica, all its nodes.", _choice("gpu_count")),
    Field("nodes", "integer", "Nodes (instances or VMs) of one replica.", _choice("nodes")),
    Field(
        "replicas",
        "integer",
        "Copies of the workload (deploy.replicas, or the autoscaling minimum's count).",
        _choice("replicas"),
    ),
    Field("purchase", "string", "on-demand or spot.", _choice("purchase")),
    Field(
        "hourlyUsd",
        "number",
        "US dollars per hour for one replica, all its nodes (choice.hourly_usd).",
        _choice("hourly_usd"),
    ),
    Field(
        "monthlyUsd",
        "number",
        "US dollars per month for every replica: hourlyUsd x replicas x 730 h (choice.monthly_usd).",
        _choice("monthly_usd"),
    ),
    Field(
        "requiredGpuMemoryGib",
        "number",
        "GPU memory the workload needs, GiB (2^30 bytes): "
        "requirements.memory_gib.total, what the policy pack checks the choice against.",
        lambda doc: doc["requirements"]["memory_gib"]["total"],
    ),
    Field(
        "sizedBy",
        "string",
        "What set the size: memory, a latency or throughput target, a deadline, cost.",
        lambda doc: doc["sized_by"],
    ),
    Field(
        "burst",
        "string",
        "Why the workload left an on-prem pool for the cloud, when it did.",
        lambda doc: doc["burst"],
        always=False,
    ),
)
"""The choice, as outputs."""

ENDPOINT = Field(
    "endpoint",
    "string",
    "The serving endpoint, where one exists: on-prem serving (task inference "
    f"with deploy.image) gets a ClusterIP Service, http://<service>.<namespace>.svc.cluster.local:"
    f"{serving.PORT}/v1 (vLLM's OpenAI API; reachable inside the cluster); serving on cloud VMs "
    f"behind an internal load balancer gets http://<load balancer>:{serving.PORT} (AWS NLB DNS name, "
    "GCP forwarding rule address; reachable inside the network). Absent for training and for "
    "deploy.expose none.",
    always=False,
)
DECISION = Field(
    "decisionJson",
    "string",
    "The decision as JSON text: the plan JSON of `gpusizer plan --format json` "
    "(docs/contract.md section 2), candidates trimmed to the top 20 and the nearest miss per reason.",
    lambda doc: json.dumps(doc, sort_keys=True),
)

IDS = tuple(
    Field(camel_case(key), "string", description, always=False)
    for key, description in (
        ("instance_id", "AWS: the EC2 instance (a single instance)."),
        ("asg_name", "AWS: the Auto Scaling group (replicas, capacity failover, multi-node)."),
        ("launch_template_id", "AWS: the launch template."),
        ("security_group_id", "AWS: the security group (no inbound rule)."),
        ("instance_self_link", "GCP: the VM."),
        ("group_self_link", "GCP: the managed instance group."),
        ("service_account_email", "GCP: the workload's service account."),
        ("namespace", "On-prem: the Kubernetes namespace."),
        ("deployment_name", "On-prem: the Deployment (with deploy.image)."),
        ("service_name", "On-prem serving: the ClusterIP Service."),
    )
)
"""The cloud ids the providers' components return (components.<provider>.provision), known after `up`."""

COMPONENT_FIELDS = FIELDS + (ENDPOINT, DECISION) + IDS
FEASIBLE = Field(
    "feasible",
    "boolean",
    "Whether any offer satisfies the spec; when false only decisionJson (with every rejection) is set.",
    lambda doc: doc["choice"] is not None,
)
PLAN_FIELDS = (FEASIBLE, DECISION) + tuple(dataclasses.replace(f, always=False) for f in FIELDS)


def choice(doc: dict) -> dict[str, Any]:
    """The choice's fields (FIELDS) and decisionJson from a plan JSON with a choice; absent ones left out."""
    values = {f.name: f.read(doc) for f in FIELDS + (DECISION,)}
    return {k: v for k, v in values.items() if v is not None}


def plan_result(doc: dict) -> dict[str, Any]:
    """The plan function's result: feasible and decisionJson, and the choice's fields when there is one."""
    if doc["choice"] is None:
        return {"feasible": False, "decisionJson": DECISION.read(doc)}
    return {"feasible": True, **choice(doc)}


def ids(provisioned: Mapping[str, Any]) -> dict[str, Any]:
    """The component's cloud ids under their schema names (its `endpoint` is ENDPOINT, see `endpoint`); an id no
    IDS entry names is an error (add it there)."""
    cloud_ids = {k: v for k, v in provisioned.items() if k != ENDPOINT.name}
    known = {camel_case(k) for k in cloud_ids} - {f.name for f in IDS}
    if known:
        raise KeyError(f"provider.outputs.IDS does not name {', '.join(sorted(known))}")
    return {camel_case(k): v for k, v in cloud_ids.items() if v is not None}


def endpoint(provisioned: Mapping[str, Any]) -> Any:
    """The serving endpoint (an Output): the one a cloud component returns (its load balancer), else the
    Service's where the on-prem component created one, else None."""
    if provisioned.get(ENDPOINT.name) is not None:
        return provisioned[ENDPOINT.name]
    service, namespace = provisioned.get("service_name"), provisioned.get("namespace")
    if service is None or namespace is None:
        return None
    return pulumi.Output.concat("http://", service, ".", namespace, f".svc.cluster.local:{serving.PORT}/v1")
