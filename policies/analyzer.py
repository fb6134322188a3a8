"""The pack's analyzer in-process, driven with the requests the Pulumi engine sends.

pulumi-policy has no public in-process analyzer; its gRPC servicer
(`pulumi_policy.policy._PolicyAnalyzerServicer`) is private, so this module
is the one place that uses it, and only for the versions whose constructor
and Configure/Analyze/AnalyzeStack it was checked against (SUPPORTED). Any
other version is refused with a clear error rather than misread; the real
`pulumi preview --policy-pack policies` needs none of this.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
from collections.abc import Iterable
from typing import Any

from google.protobuf import struct_pb2
from pulumi import output as pulumi_output
from pulumi.runtime.proto import analyzer_pb2

from gpusizer.base import errors
from gpusizer.policies import pack, rules
from gpusizer.policies import view as v

SUPPORTED = ("1.21.",)  # pulumi-policy releases whose private servicer this wraps
_LEVEL_NAMES = {n: k.lower() for k, n in analyzer_pb2.EnforcementLevel.items()}


@dataclasses.dataclass(frozen=True)
class Finding:
    policy: str
    level: str  # "mandatory", "advisory", ...
    resource: str
    message: str


@dataclasses.dataclass(frozen=True)
class Resource:
    """What the engine sends about one resource: type, name, inputs (unknowns as `view` sentinels), links,
    and the outputs stack policies get (default: the inputs)."""

    typ: str
    name: str
    inputs: dict
    urn: str = ""
    parent: str = ""
    dependencies: tuple[str, ...] = ()
    outputs: dict | None = None


def recorded(registered: Iterable[Any]) -> list[Resource]:
    """What the engine sends about each resource a run under gpusizer.policies.mocks recorded (a mocks.Registered:
    its inputs, links and, where recorded, the outputs stack policies get)."""
    return [Resource(r.typ, r.name, r.inputs, r.urn, r.parent, r.dependencies, r.outputs) for r in registered]


def servicer(policy_config: dict[str, Any] | None = None):
    """The pack's analyzer, configured as the CLI configures it.

    A policy named in `policy_config` without an enforcementLevel keeps its
    coded level (the wire default would make it advisory).

    Raises:
        gpusizer.base.errors.SizingError: an installed pulumi-policy this was not checked against.
    """
    version = importlib.metadata.version("pulumi-policy")
    if not version.startswith(SUPPORTED):
        raise errors.SizingError(
            f"pulumi-policy {version}: the offline analyzer wraps the private servicer of pulumi-policy "
            f"{', '.join(s + 'x' for s in SUPPORTED)} only. To fix: pip install 'pulumi-policy==1.21.*' "
            "(the [pulumi] extra pins it), or run the real `pulumi preview --policy-pack policies`"
        )
    from pulumi_policy import policy as sdk_policy

    s = sdk_policy._PolicyAnalyzerServicer(pack.NAME, "0.1.0", pack.policies(), sdk_policy.EnforcementLevel.MANDATORY)
    if policy_config:
        defaults = pack.levels()
        req = analyzer_pb2.ConfigureAnalyzerRequest()
        given = dict(policy_config)
        everyone = rules.level_of(given.pop(rules.ALL, None))  # "all" sets every policy's level, a policy's own wins
        if everyone is not None:
            given = {name: given.get(name, {}) for name in defaults}
        for name, cfg in given.items():
            cfg = rules.settings_of(cfg)
            level = cfg.pop("enforcementLevel", everyone or defaults.get(name, "mandatory"))
            req.policyConfig[name].enforcementLevel = analyzer_pb2.EnforcementLevel.Value(str(level).upper())
            req.policyConfig[name].properties.CopyFrom(struct(cfg))
        s.Configure(req, None)
    return s


def wire(value: Any) -> Any:
    """Plain JSON-able data as the engine marshals it: an unknown (pulumi.output.Unknown) as the sentinel, an
    asset or archive as its signature and its text, path, URI or assets (a Lambda's code is read, not lost)."""
    if isinstance(value, pulumi_output.Unknown):
        return v.STRING
    wired = v.asset(value)
    if wired is not None:
        return wired
    if isinstance(value, dict):
        return {k: wire(x) for k, x in value.items()}
    if isinstance(value, (list, tuple)):
        return [wire(x) for x in value]
    return value


def struct(value: dict) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(json.loads(json.dumps(wire(value), default=str)))
    return s


def _message(d) -> str:
    """The violation text without the policy description the SDK puts before it."""
    return d.message.removeprefix(d.description).strip()


def analyze(
    resources: Iterable[Resource | tuple[str, str, dict]], stack: str, policy_config: dict | None = None
) -> list[Finding]:
    """Findings for the resources: one Analyze per resource, then one AnalyzeStack over all of them."""
    s = servicer(policy_config)
    findings: list[Finding] = []
    stack_req = analyzer_pb2.AnalyzeStackRequest()
    names = {}
    for r in resources:
        if isinstance(r, tuple):
            r = Resource(*r)
        urn = r.urn or f"urn:pulumi:{stack}::gpusizer::{r.typ}::{r.name}"
        names[urn] = r.name
        props = struct(r.inputs)
        resp = s.Analyze(analyzer_pb2.AnalyzeRequest(type=r.typ, properties=props, urn=urn, name=r.name), None)
        findings += [
            Finding(d.policyName, _LEVEL_NAMES[d.enforcementLevel], r.name, _message(d)) for d in resp.diagnostics
        ]
        stack_req.resources.append(
            analyzer_pb2.AnalyzerResource(
                type=r.typ,
                properties=props if r.outputs is None else struct(r.outputs),
                urn=urn,
                name=r.name,
                parent=r.parent,
                dependencies=list(r.dependencies),
            )
        )
    resp = s.AnalyzeStack(stack_req, None)
    findings += [
        Finding(d.policyName, _LEVEL_NAMES[d.enforcementLevel], names.get(d.urn, "(stack)"), _message(d))
        for d in resp.diagnostics
    ]
    return findings
