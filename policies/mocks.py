"""Run a Pulumi program without the Pulumi CLI or a cloud: the offline stand-in for the engine (public API).

`run_program(fn, config, preview=...)` runs `fn` (a Pulumi program) under
Pulumi's own mocks (`pulumi.runtime.set_mocks`) with a fresh root stack,
config and event loop, and returns a `MockCloud` holding every resource it
registered (type, name, inputs, URN, parent, dependencies) and the exports.
`gpusizer preview` uses it to feed the policy pack; tests may too.

Two modes, as the engine runs a program:
- `preview=True`, a first `pulumi preview`: nothing exists, so no resource
  has an id and no output is known beyond the inputs given (ARNs, emails,
  self links...). Inputs built from those arrive unknown, exactly what the
  engine then sends the policy pack as sentinels.
- `preview=False`, `pulumi up`: every resource gets an id and plausible
  outputs, so everything is known.

Invokes the components make (AMI, default VPC, subnets) are answered as the
cloud would; any other invoke raises, because an empty answer would silently
read as None (docs/pulumi-offline.md).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib
import json
from collections.abc import Callable
from typing import Any

import pulumi
from pulumi.runtime import mocks as sdk_mocks

from gpusizer.policies import evidence, manifests

# Zone ids of the mocked default VPC's subnets.
MOCK_ZONES = ("az-a", "az-b")
RENDERED_CHART = "kubernetes:helm.sh/v3:Chart"  # what a helm.v3.Chart's template invoke is recorded as
STACK_REFERENCE = "pulumi:pulumi:StackReference"  # another stack's outputs, read by the engine, not offline


@functools.cache
def _catalog_zones(instance_type: str) -> frozenset[str]:
    import gpusizer

    return frozenset(o.zone for o in gpusizer.load_catalog().offers if o.instance_type == instance_type and o.zone)


def _sdk_properties(token: str, suffix: str = "") -> frozenset[str]:
    """The properties (engine names, from `pulumi.getter`s) the provider SDK's class `<Class><suffix>` declares
    for a resource type, its bases' included; empty when the class is not found (a component, another SDK)."""
    pkg, module, cls = (token.split(":") + ["", ""])[:3]
    for fqn in (f"pulumi_{pkg}.{module.split('/')[0]}", f"pulumi_{pkg}.{module.replace('/', '.')}"):  # aws/gcp, k8s
        try:
            klass = getattr(importlib.import_module(fqn), cls + suffix)
        except (ImportError, AttributeError, ValueError):
            continue
        return frozenset(
            p.fget._pulumi_name
            for base in klass.__mro__
            for p in vars(base).values()
            if isinstance(p, property) and hasattr(p.fget, "_pulumi_name")
        )
    return frozenset()


@functools.cache
def declared_outputs(token: str) -> frozenset[str]:
    """The output properties the provider SDK's class declares for a resource type
    ("gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager" -> targetSize, selfLink, ...).

    A first preview does not create anything: the engine hands stack policies a new resource's inputs
    with every other declared output unknown (a provider computes them at create), so a rule reading
    one (a group's targetSize left to its autoscaler) must cope with an unknown there.
    """
    return _sdk_properties(token)


@functools.cache
def declared_inputs(token: str) -> frozenset[str]:
    """The input properties the provider SDK's `<Class>Args` declares for a resource type."""
    return _sdk_properties(token, "Args")


# Inputs a provider computes when they are not given, that the rules count with: a group's target or desired
# size left to its autoscaler, a node pool's node count (Terraform schema: Optional and Computed). At a first
# preview they are unknown; an optional input that is not computed (a node pool's `autoscaling` block) is absent,
# as the engine's preview shows it.
COMPUTED_INPUTS = frozenset({"targetSize", "nodeCount", "desiredCapacity", "desiredSize"})


@dataclasses.dataclass
class Registered:
    """One registered resource as the engine would see it: its inputs (what resource policies get) and
    its outputs (what stack policies get; at a first preview, the inputs and every other declared
    output unknown)."""

    typ: str
    name: str
    inputs: dict
    custom: bool = True
    urn: str = ""
    parent: str = ""
    dependencies: tuple[str, ...] = ()
    outputs: dict | None = None


class MockCloud(pulumi.runtime.Mocks):
    """Pulumi mocks that record every resource and answer the invokes the components make.

    Args:
        preview: behave as a first preview (no ids, no outputs beyond the inputs).
    """

    def __init__(self, preview: bool = False):
        self.preview = preview
        self.resources: list[Registered] = []
        self.pending_charts: list[dict] = []  # helm.v3.Chart inputs from template invokes not yet matched

    def settle(self) -> None:
        """After the program: chart inputs no Chart component took become records of their own."""
        for i, inputs in enumerate(self.pending_charts):
            name = str(inputs.get("chart") or inputs.get("path") or f"chart-{i}").rsplit("/", 1)[-1]
            chart = Registered(RENDERED_CHART, name, inputs, True, outputs=dict(inputs))
            chart.urn = engine_urn("", RENDERED_CHART, name)
            self.resources.append(chart)
        self.pending_charts = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        inputs = dict(args.inputs)
        if args.typ == RENDERED_CHART and not inputs and self.pending_charts:  # its template invoke ran first
            inputs = self.pending_charts.pop(0)
        registered = Registered(args.typ, args.name, inputs, args.custom)
        self.resources.append(registered)
        if self.preview:  # no id: every output not given as an input is unknown (optional inputs not given: absent)
            optional = declared_inputs(args.typ) - COMPUTED_INPUTS
            unknown = {
                k: pulumi.output.Unknown()
                for k in declared_outputs(args.typ)
                if k not in args.inputs and k not in optional
            }
            if args.typ.startswith("kubernetes:") and "metadata" in unknown:
                # the Kubernetes provider auto-names an object at preview: its metadata is known, not computed
                unknown["metadata"] = {"name": f"{args.name}-mock"}
            registered.outputs = {**unknown, **inputs}
            return "", dict(args.inputs)
        outputs = dict(inputs)
        if args.typ == STACK_REFERENCE:  # another stack's outputs cannot be read offline: none (unknown at preview)
            outputs.setdefault("outputs", {})
            outputs.setdefault("secretOutputNames", [])
        outputs.setdefault("id", f"{args.name}-id")  # the engine's outputs carry the id a literal reference names
        outputs.setdefault("arn", f"arn:aws:mock:::{args.name}")
        outputs.setdefault("name", args.name)
        outputs.setdefault("email", f"{args.name}@mock.iam.gserviceaccount.com")
        outputs.setdefault("selfLinkUnique", f"https://compute.mock/{args.name}?uid=1")
        if args.typ.startswith("kubernetes:") and isinstance(outputs.get("metadata", {}), dict):
            # the Kubernetes provider auto-names an object the program did not name: `cm.metadata.name` reads it
            outputs["metadata"] = {"name": f"{args.name}-mock", **(outputs.get("metadata") or {})}
        registered.outputs = outputs
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        if args.token == "aws:ec2/getAmi:getAmi":
            return {"id": "ami-0dlami00000000001", "name": args.args["filters"][0]["values"][0]}
        if args.token == "aws:ec2/getVpc:getVpc":
            return {"id": "vpc-0default"}
        if args.token == "aws:ec2/getSubnets:getSubnets":
            # A default subnet "subnet-<zone id>" in every zone asked for (components pick zones that
            # offer the type); without a zone filter, two.
            zones = next(
                (f["values"] for f in args.args.get("filters", []) if f["name"] == "availability-zone-id"),
                list(MOCK_ZONES),
            )
            return {"ids": [f"subnet-{z}" for z in zones], "id": "subnets"}
        if args.token == "aws:ec2/getSubnet:getSubnet":
            return {"id": args.args["id"], "availabilityZoneId": args.args["id"].removeprefix("subnet-")}
        if args.token == "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings":
            # Every type offered in the mock zones and wherever the packaged catalog prices it.
            types = next(f["values"] for f in args.args["filters"] if f["name"] == "instance-type")
            zones = sorted(set(MOCK_ZONES).union(*(_catalog_zones(t) for t in types)))
            pairs = [(t, z) for t in types for z in zones]
            return {
                "id": "offerings",
                "instanceTypes": [t for t, _ in pairs],
                "locations": [z for _, z in pairs],
                "locationTypes": ["availability-zone-id"] * len(pairs),
            }
        if args.token == "kubernetes:yaml:decode":  # v1 ConfigFile/ConfigGroup: the SDK registers the children
            docs = [d for d in evidence.documents(str(args.args.get("text") or "")) if isinstance(d, dict)]
            return {"result": [x for d in docs for x in manifests.flattened(d)]}
        if args.token == "kubernetes:kustomize:directory":  # v1 kustomize.Directory: the SDK registers the children
            # (a local directory built as gpusizer reads kustomizations: resources, bases, replicas; a remote
            # one cannot be fetched offline and yields none, which the preview's note names)
            docs = manifests.read_files(str(args.args.get("directory") or ""), manifests.base())
            return {
                "result": [
                    x
                    for d in docs
                    if isinstance(d, dict) and d.get("kind") != "Kustomization"
                    for x in manifests.flattened(d)
                ]
            }
        if args.token == "kubernetes:helm:template":
            # helm.v3.Chart renders in the provider, which the offline preview has not: its inputs (chart, local
            # chart directory, values) are recorded as a provider-side Chart, judged like a Helm Release's,
            # and no children are made up. A real preview judges the rendered children as well.
            try:
                opts = json.loads(str(args.args.get("jsonOpts") or "{}"))
            except ValueError:
                opts = {}
            inputs = {k: opts[k] for k in ("chart", "path", "values", "repo", "version") if opts.get(k) is not None}
            # The Chart component that invokes it takes them (it registers with no inputs, before or after the
            # invoke: registrations run concurrently); one never registered gets a record of its own (`settle`).
            chart = next((r for r in reversed(self.resources) if r.typ == RENDERED_CHART and not r.inputs), None)
            if chart is None:
                self.pending_charts.append(inputs)
            else:
                chart.inputs, chart.outputs = inputs, dict(inputs)
            return {"result": []}
        raise NotImplementedError(f"unmocked invoke {args.token}")  # an empty answer would silently yield None


def engine_urn(parent: str, type_: str, name: str) -> str:
    """The engine's URN: the parent's whole qualified type chain, the root stack's left out (pulumi
    pkg/resource/deploy, `generateURN`); the SDK's mock keeps only the parent's last type."""
    if parent:
        qualified = parent.split("::")[2]
        if qualified != "pulumi:pulumi:Stack":
            type_ = f"{qualified}${type_}"
    return "::".join(["urn:pulumi:" + pulumi.get_stack(), pulumi.get_project(), type_, name])


class _Monitor(sdk_mocks.MockMonitor):
    """The SDK's mock monitor, also recording each resource's URN, parent and dependencies (as the engine
    passes them to stack policies), with URNs as the engine forms them."""

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        return engine_urn(parent, type_, name)

    def RegisterResource(self, request):  # noqa: N802 - the gRPC method name
        response = super().RegisterResource(request)
        # Registrations run concurrently: find this one's record by type and name (unique within a stack here).
        for r in self.mocks.resources:
            if (r.typ, r.name, r.urn) == (request.type, request.name, ""):
                deps = list(request.dependencies) + [u for d in request.propertyDependencies.values() for u in d.urns]
                r.urn, r.parent, r.dependencies = response.urn, request.parent, tuple(dict.fromkeys(deps))
                break
        return response


def run_program(
    fn: Callable[[], Any],
    config: dict | None = None,
    secret_keys=(),
    stack: str = "dev",
    preview: bool = False,
    project: str = "gpusizer",
) -> tuple[MockCloud, dict]:
    """Run `fn` under fresh mocks (new root stack, config, event loop); return the recorder and the exports.

    Args:
        fn: the program (e.g. `lambda: runpy.run_path("__main__.py", run_name="__main__")`).
        config: "ns:key" -> value (structured values are passed as JSON, as the CLI does).
        secret_keys: config keys that are secrets.
        stack: the stack name.
        preview: a first preview (unknown ids and outputs) instead of an update.
        project: the project name (Pulumi.yaml's `name`): `pulumi.Config()` reads its namespace.

    Raises:
        pulumi.RunError: the program failed as it would under `pulumi preview`.
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    pulumi.runtime.settings.set_root_resource(None)
    pulumi.runtime.set_all_config(
        {k: v if isinstance(v, str) else json.dumps(v) for k, v in (config or {}).items()}, list(secret_keys)
    )
    mocks = MockCloud(preview)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=_Monitor(mocks))
    exports: dict = {}
    original = pulumi.export

    def record(name, value):
        exports[name] = value
        original(name, value)

    pulumi.export = record
    try:
        pulumi.runtime.test(fn)()
        mocks.settle()
    finally:
        pulumi.export = original
        pulumi.runtime.set_all_config({})
        loop.close()
        asyncio.set_event_loop(None)
    return mocks, exports
