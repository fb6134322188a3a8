"""Offline `pulumi preview --policy-pack policies`: the program under mocks, every resource through the pack.

`gpusizer preview --stack NAME` runs the Pulumi program (__main__.py, or
--program) with stacks/Pulumi.NAME.yaml as its config under Pulumi's mocks
(preview=False, ids returned, unexpected invokes raising), then sends every
registered resource to the policy pack's analyzer in-process, as Analyze and
AnalyzeStack requests built the way the engine builds them (type, camelCase
properties, URN). It prints the decisions and the policy results and exits 1
on a mandatory violation, 2 on invalid input, 0 otherwise. This is how CI
without cloud credentials or the Pulumi CLI gates a change.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import pathlib
import runpy
import sys
from typing import Any

import pulumi
import yaml
from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import policy as policy_sdk

from policies import pack

REPO = pathlib.Path(__file__).resolve().parents[1]
_LEVEL_NAMES = {v: k.lower() for k, v in analyzer_pb2.EnforcementLevel.items()}


class MockCloud(pulumi.runtime.Mocks):
    """Pulumi mocks that record (type, name, inputs) of every resource and answer the invokes the components make."""

    def __init__(self):
        self.resources: list[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.resources.append(args)
        outputs = dict(args.inputs)
        outputs.setdefault("arn", f"arn:aws:mock:::{args.name}")
        outputs.setdefault("name", args.name)
        outputs.setdefault("email", f"{args.name}@mock.iam.gserviceaccount.com")
        outputs.setdefault("selfLinkUnique", f"https://compute.mock/{args.name}?uid=1")
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        if args.token == "aws:ec2/getAmi:getAmi":
            return {"id": "ami-0dlami00000000001", "name": args.args["filters"][0]["values"][0]}
        if args.token == "aws:ec2/getVpc:getVpc":
            return {"id": "vpc-0default"}
        if args.token == "aws:ec2/getSubnets:getSubnets":
            return {"ids": ["subnet-a", "subnet-b"], "id": "subnets"}
        raise NotImplementedError(f"unmocked invoke {args.token}")  # an empty answer would silently yield None

    def of_type(self, typ: str) -> list[pulumi.runtime.MockResourceArgs]:
        return [r for r in self.resources if r.typ == typ]

    def one(self, typ: str) -> dict:
        found = self.of_type(typ)
        assert len(found) == 1, f"{typ}: {len(found)} registered"
        return found[0].inputs


def run_program(fn, config: dict | None = None, secret_keys=(), stack: str = "dev") -> tuple[MockCloud, dict]:
    """Run `fn` under fresh mocks (new root stack, new event loop); return the recorder and the exports."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    pulumi.runtime.settings.set_root_resource(None)
    pulumi.runtime.set_all_config(
        {k: v if isinstance(v, str) else json.dumps(v) for k, v in (config or {}).items()}, list(secret_keys)
    )
    mocks = MockCloud()
    pulumi.runtime.set_mocks(mocks, project="gpusizer", stack=stack, preview=False)
    exports: dict = {}
    original = pulumi.export

    def record(name, value):
        exports[name] = value
        original(name, value)

    pulumi.export = record
    try:
        pulumi.runtime.test(fn)()
    finally:
        pulumi.export = original
        pulumi.runtime.set_all_config({})
        loop.close()
        asyncio.set_event_loop(None)
    return mocks, exports


@dataclasses.dataclass(frozen=True)
class Finding:
    policy: str
    level: str  # "mandatory", "advisory", ...
    resource: str
    message: str


def _struct(value: dict) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(json.loads(json.dumps(value, default=str)))
    return s


def _message(d) -> str:
    """The violation text without the policy description the SDK puts before it."""
    return d.message.removeprefix(d.description).strip()


def _urn(stack: str, typ: str, name: str) -> str:
    return f"urn:pulumi:{stack}::gpusizer::{typ}::{name}"


def analyzer(policy_config: dict[str, Any] | None = None) -> policy_sdk._PolicyAnalyzerServicer:
    """The pack's analyzer, in-process, configured as the CLI would (pulumi-policy 1.21's servicer).

    A policy named in `policy_config` without an enforcementLevel keeps its
    coded level (the wire default would make it advisory).
    """
    servicer = policy_sdk._PolicyAnalyzerServicer(
        "gpusizer", "0.1.0", pack.policies(), policy_sdk.EnforcementLevel.MANDATORY
    )
    if policy_config:
        defaults = pack.levels()
        req = analyzer_pb2.ConfigureAnalyzerRequest()
        for name, cfg in policy_config.items():
            cfg = dict(cfg) if isinstance(cfg, dict) else {"enforcementLevel": cfg}
            level = cfg.pop("enforcementLevel", defaults.get(name, "mandatory"))
            req.policyConfig[name].enforcementLevel = analyzer_pb2.EnforcementLevel.Value(str(level).upper())
            req.policyConfig[name].properties.CopyFrom(_struct(cfg))
        servicer.Configure(req, None)
    return servicer


def analyze(resources: list[tuple[str, str, dict]], stack: str, policy_config: dict | None = None) -> list[Finding]:
    """Findings for (type, name, inputs) resources: one Analyze per resource, then AnalyzeStack."""
    servicer = analyzer(policy_config)
    findings: list[Finding] = []
    stack_req = analyzer_pb2.AnalyzeStackRequest()
    for typ, name, inputs in resources:
        urn = _urn(stack, typ, name)
        resp = servicer.Analyze(analyzer_pb2.AnalyzeRequest(type=typ, properties=_struct(inputs), urn=urn, name=name), None)
        findings += [Finding(d.policyName, _LEVEL_NAMES[d.enforcementLevel], name, _message(d)) for d in resp.diagnostics]
        stack_req.resources.append(analyzer_pb2.AnalyzerResource(type=typ, properties=_struct(inputs), urn=urn, name=name))
    resp = servicer.AnalyzeStack(stack_req, None)
    findings += [Finding(d.policyName, _LEVEL_NAMES[d.enforcementLevel], "(stack)", _message(d)) for d in resp.diagnostics]
    return findings


def preview(stack: str, stacks_dir: pathlib.Path, program: pathlib.Path, policy_config: dict | None = None):
    """Run the program for `stack` under mocks and the pack over its resources: (exports, resources, findings)."""
    stack_file = stacks_dir / f"Pulumi.{stack}.yaml"
    config = (yaml.safe_load(stack_file.read_text()) or {}).get("config") or {}
    mocks, exports = run_program(lambda: runpy.run_path(str(program), run_name="__main__") and None, config, stack=stack)
    resources = [(r.typ, r.name, dict(r.inputs)) for r in mocks.resources]
    return exports, resources, analyze(resources, stack, policy_config)


def _resolved(value):
    if isinstance(value, pulumi.Output):
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(value.future())
        finally:
            loop.close()
    return value


def render(exports: dict, resources: list, findings: list[Finding], fmt: str) -> str:
    md = fmt == "markdown"
    out = ["### gpusizer preview" if md else "Decisions:"]
    for name, e in exports.items():
        e = {k: _resolved(v) for k, v in e.items()} if isinstance(e, dict) else {"value": _resolved(e)}
        line = (f"{name}: {e.get('provider')} {e.get('region')} {e.get('instance_type')} ({e.get('gpu')}), "
                f"${e.get('hourly_usd')}/h")
        if e.get("burst"):
            line += f" - BURST: {e['burst']}"
        out.append(f"- {line}" if md else f"  {line}")
    out.append("")
    out.append(f"Policy results ({len(resources)} resources):")
    if not findings:
        out.append("- none: every policy passed" if md else "  none: every policy passed")
    if md and findings:
        out += ["", "| level | policy | resource | message |", "|---|---|---|---|"]
    for f in sorted(findings, key=lambda f: (f.level != "mandatory", f.policy, f.resource)):
        if md:
            out.append(f"| {f.level} | {f.policy} | `{f.resource}` | {f.message.replace('|', '/')} |")
        else:
            out.append(f"  [{f.level}] {f.policy} on {f.resource}: {f.message}")
    mandatory = sum(f.level == "mandatory" for f in findings)
    out += ["", f"{mandatory} mandatory violation(s)" + (": preview FAILED" if mandatory else ": preview passed")]
    return "\n".join(out)


def run(args) -> int:
    """The `gpusizer preview` command (its arguments: gpusizer/cli.py); exit 1 on a mandatory violation."""
    from gpusizer import errors

    stacks_dir = pathlib.Path(args.stacks_dir or REPO / "stacks")
    if not (stacks_dir / f"Pulumi.{args.stack}.yaml").is_file():
        known = sorted(p.name.split(".")[1] for p in stacks_dir.glob("Pulumi.*.yaml"))
        raise errors.SpecError(f"--stack: no {stacks_dir}/Pulumi.{args.stack}.yaml. To fix: use one of {', '.join(known)}",
                               "--stack")
    policy_config = json.loads(pathlib.Path(args.policy_config).read_text()) if args.policy_config else None
    try:
        exports, resources, findings = preview(args.stack, stacks_dir, pathlib.Path(args.program or REPO / "__main__.py"), policy_config)
    except pulumi.RunError as exc:
        raise errors.SpecError(f"stack {args.stack}: {exc}", "") from None
    print(render(exports, resources, findings, args.format))
    sys.stdout.flush()
    return 1 if any(f.level == "mandatory" for f in findings) else 0
