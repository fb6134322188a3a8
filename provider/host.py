"""The gpusizer component provider: GpuWorkload and the plan function, for Pulumi programs in any language.

The engine starts the plugin (provider/__main__.py) and calls, over gRPC,
GetSchema (provider/schema.py), Construct for each `gpusizer:index:GpuWorkload`
a program declares, and Invoke for `gpusizer:index:plan`. Construct builds the
same `gpusizer.components.GpuWorkload` the Python program (__main__.py) builds, so the
children, their settings and the sizing record the policy pack reads are the
same whatever the program's language.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.errors import InputPropertyError
from pulumi.provider import provider as pulumi_provider
from pulumi.runtime import rpc

import gpusizer
import gpusizer.reuse
from gpusizer.components import aws, workload
from gpusizer.render import plan_json
from provider import outputs, schema
from provider.names import camel_case


def version() -> str:
    """The package version: gpusizer's (pyproject.toml), as Pulumi's schema and plugin info want semver."""
    return importlib.metadata.version("gpusizer")


def _path(prefix: str, field: str) -> str:
    """A spec or pool field path (inference.batch_size, 0.gpu) as a property path (spec.inference.batchSize)."""
    parts = [p if p.isdigit() else camel_case(p) for p in field.split(".") if p]
    return ".".join([prefix, *parts]) if parts else prefix


def _known(value: Any, path: str) -> None:
    """Refuse a value that is not known when the program runs: the engine sizes before it creates anything."""
    if isinstance(value, (pulumi.Output, pulumi.output.Unknown)) or rpc.is_rpc_secret(value):
        raise schema.PropertyError(
            path,
            "must be a plain value known when the program runs (a literal or stack "
            "config), not another resource's output or a secret: GpuWorkload sizes the "
            "workload before it creates anything",
        )
    if isinstance(value, Mapping):
        for k, v in value.items():
            _known(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _known(v, f"{path}[{i}]")


def _secret(value: Any) -> Any:
    """A secret input as a Pulumi secret Output (it may arrive as an Output, a wire-format secret or text)."""
    if rpc.is_rpc_secret(value):
        value = rpc.unwrap_rpc_secret(value)
    return pulumi.Output.secret(value)


class GpusizerProvider(pulumi_provider.Provider):
    """Serves the schema, GpuWorkload (Construct) and plan (Invoke)."""

    def __init__(self, version_: str | None = None) -> None:
        doc, self.types = schema.build(version_ or version())
        super().__init__(doc["version"], json.dumps(doc))

    # ---- inputs ----

    def spec(self, inputs: Mapping[str, Any]) -> gpusizer.WorkloadSpec:
        """The validated spec from `spec` (and `deploy`, when given there instead)."""
        if inputs.get("spec") is None:
            raise schema.PropertyError("spec", "is required: the workload to size (docs/contract.md section 1)")
        for key in ("spec", "deploy"):
            _known(inputs.get(key), key)
        data = self.types.to_python(schema.ref("WorkloadSpec"), inputs["spec"], "spec")
        if inputs.get("deploy") is not None:
            if "deploy" in data:
                raise schema.PropertyError("deploy", "is given twice, here and as spec.deploy. To fix: keep one")
            data["deploy"] = self.types.to_python(schema.ref("Deploy"), inputs["deploy"], "deploy")
        try:
            return gpusizer.load_spec(data)
        except gpusizer.SpecError as exc:
            raise schema.PropertyError(_path("spec", exc.field), str(exc)) from None

    def pools(self, inputs: Mapping[str, Any]) -> list:
        raw = inputs.get("pools") or []
        _known(raw, "pools")
        items = [self.types.to_python(schema.ref("Pool"), p, f"pools[{i}]") for i, p in enumerate(raw)]
        try:
            return gpusizer.parse_pools(items)
        except gpusizer.SizingError as exc:
            raise schema.PropertyError(_path("pools", getattr(exc, "field", "")), str(exc)) from None

    def catalog(self, inputs: Mapping[str, Any]):
        path = inputs.get("catalog")
        _known(path, "catalog")
        try:
            return gpusizer.load_catalog(path)
        except gpusizer.SizingError as exc:
            raise schema.PropertyError("catalog", str(exc)) from None

    def args(self, inputs: Mapping[str, Any], pools: list) -> workload.GpuWorkloadArgs:
        """GpuWorkloadArgs from `stack`, the secrets, the pools and the catalog."""
        _known(inputs.get("stack"), "stack")
        settings = self.types.to_python(schema.ref("StackSettings"), inputs.get("stack") or {}, "stack")
        settings["aws_networks"] = {
            region: aws.AwsNetwork(**net) for region, net in settings.get("aws_networks", {}).items()
        }
        settings.setdefault("aws_region", pulumi.Config("aws").get("region"))
        kubeconfigs = inputs.get("kubeconfigs")
        if isinstance(kubeconfigs, pulumi.Output):  # a whole secret map: each pool's entry, read when it resolves
            found = {p.name: kubeconfigs.apply(lambda m, n=p.name: (m or {}).get(n)) for p in pools}
        else:
            found = dict(kubeconfigs or {})
            unknown = sorted(set(found) - {p.name for p in pools})
            if unknown:
                raise schema.PropertyError(
                    "kubeconfigs",
                    f"names unknown pool(s) {', '.join(unknown)}. To fix: use "
                    f"one of {', '.join(p.name for p in pools) or '(no pools given)'}",
                )
        hf_token = inputs.get("hfToken")
        return workload.GpuWorkloadArgs(
            pools=pools,
            catalog=self.catalog(inputs),
            **settings,
            kubeconfigs={name: _secret(text) for name, text in found.items()},
            hf_token=None if hf_token is None else _secret(hf_token),
        )

    # ---- GpuWorkload ----

    def construct(
        self, name: str, resource_type: str, inputs: Mapping[str, Any], options: pulumi.ResourceOptions | None = None
    ) -> pulumi_provider.ConstructResult:
        if resource_type != schema.TOKEN:
            raise ValueError(f"unknown resource type {resource_type}; this provider serves {schema.TOKEN}")
        try:
            spec = self.spec(inputs)
            args = self.args(inputs, self.pools(inputs))
            try:
                component = workload.GpuWorkload(name, spec, options, args=args)
            except gpusizer.SpecError as exc:  # the spec or pool cannot be provisioned where it was placed
                raise schema.PropertyError(_path("spec", exc.field), str(exc)) from None
            except workload.InfeasibleWorkloadError as exc:
                raise schema.PropertyError("spec.placement", str(exc)) from None
            except ValueError as exc:  # a setting; the message names it as its stack config key gpusizer:<key>
                key = re.match(r"gpusizer:(\w+)|aws:region", str(exc))
                where = "stack" if key is None else f"stack.{key.group(1) or 'awsRegion'}"
                raise schema.PropertyError(where, str(exc)) from None
        except schema.PropertyError as exc:
            raise InputPropertyError(exc.path, exc.reason) from None
        doc = workload.decision_summary(component.plan)
        state = {**outputs.choice(doc), **outputs.ids(component.ids)}
        state.update(
            instanceType=component.instance_type, hourlyUsd=component.hourly_usd, monthlyUsd=component.monthly_usd
        )
        endpoint = outputs.endpoint(component.ids)
        if endpoint is not None:
            state["endpoint"] = endpoint
        return pulumi_provider.ConstructResult(component.urn, state)

    # ---- plan ----

    def invoke(self, token: str, args: Mapping[str, Any]) -> pulumi_provider.InvokeResult:
        if token != schema.PLAN:
            raise ValueError(f"unknown function {token}; this provider serves {schema.PLAN}")
        try:
            spec = self.spec(args)
            top = args.get("top", workload.DECISION_CANDIDATES)
            if not isinstance(top, (int, float)) or top != int(top) or top < 0:
                raise schema.PropertyError("top", f"must be a whole number >= 0 (got {top!r})")
            decision = gpusizer.reuse.plan(spec, catalog=self.catalog(args), pools=self.pools(args))
        except schema.PropertyError as exc:
            return pulumi_provider.InvokeResult({}, [pulumi_provider.CheckFailure(exc.path, exc.reason)])
        return pulumi_provider.InvokeResult(outputs.plan_result(plan_json.plan(decision, top=int(top))))
