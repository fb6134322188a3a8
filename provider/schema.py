"""The Pulumi package schema of the gpusizer component provider, derived from the models it serves.

Pulumi's Python host (`pulumi.provider.experimental`) infers a schema from type
annotations, but it cannot express the workload spec: the spec is a pydantic
model whose fields are `Annotated` constraints and `Literal` choices, which the
host's analyzer does not read. Writing the spec out again as dataclasses and
enums would be a second list of the spec's fields. So the schema is built here
from the one definition of each input:

- the spec (`gpusizer.spec.WorkloadSpec`) and on-prem pools (`gpusizer.Pool`)
  from their pydantic JSON Schema: every field, its description, `Literal`
  choices as enum types, required fields as required;
- the stack-level settings from `gpusizer.components.workload.GpuWorkloadArgs` (its
  fields, types and attribute docstrings), less what has its own input (pools,
  catalog) or is internal (decision);
- the outputs and the plan function's result from `provider.outputs.FIELDS`.

Property names are camelCase, as Pulumi names properties (`contextLength`);
`Types.to_python` maps them back. Every input but the two secrets
(`kubeconfigs`, `hfToken`) is `plain`: the engine sizes the
workload before it creates anything, so those values must be known when the
program runs (literals or config), never another resource's output.
"""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import inspect
import sys
import textwrap
import types
import typing
from collections.abc import Mapping
from typing import Any

import pulumi
import pydantic

import gpusizer
from gpusizer import spec as spec_mod
from gpusizer.components import workload
from provider import outputs
from provider.names import camel_case

PACKAGE = "gpusizer"
COMPONENT = "GpuWorkload"
TOKEN = f"{PACKAGE}:index:{COMPONENT}"
PLAN = f"{PACKAGE}:index:plan"
SECRETS = ("kubeconfigs", "hf_token")
"""GpuWorkloadArgs fields that hold secrets: inputs of their own, taking Pulumi secrets (Pulumi marks a whole
input secret when anything inside it is, so inside `stack` they would hide the plain settings)."""
NOT_SETTINGS = ("pools", "catalog", "decision") + SECRETS
"""GpuWorkloadArgs fields that are not in `stack`: pools, catalog and the secrets are inputs of their own; decision
is what a Python program that planned every workload first passes in."""


def ref(name: str) -> str:
    return f"#/types/{PACKAGE}:index:{name}"


def type_name(ref_: str) -> str:
    return ref_.rsplit(":", 1)[-1]


_PRIMITIVES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _plain_type(hint: Any, where: str) -> Any:
    """T of `T | None` and of `pulumi.Input[T]` (T | Awaitable[T] | Output[T]); a real union is untyped."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        kinds = [
            a
            for a in typing.get_args(hint)
            if a is not type(None) and typing.get_origin(a) not in (collections.abc.Awaitable, pulumi.Output)
        ]
        if len(kinds) != 1:
            raise UntypedField(f"{where}: a union of {kinds}")
        return _plain_type(kinds[0], where)
    return hint


def _pascal(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.replace("-", "_").split("_"))


class UntypedField(TypeError):
    """A field the schema cannot type without `Any`: add an override or a type."""


class Types:
    """The object and enum types of the schema, with each object type's schema -> Python field names."""

    def __init__(self) -> None:
        self.types: dict[str, dict] = {}
        self.fields: dict[str, dict[str, str]] = {}
        self._defs: dict[str, dict] = {}  # the JSON Schema definitions of the model being defined

    def _define(self, name: str, definition: dict) -> str:
        if name in self.types and self.types[name] != definition:
            raise ValueError(f"two different types named {name}")
        self.types[name] = definition
        return ref(name)

    # ---- pydantic models, through their JSON Schema ----

    def model(
        self, model: type[pydantic.BaseModel], overrides: Mapping[tuple[str, str], dict] = {}, undocumented: str = ""
    ) -> str:
        """Define `model` and every model it holds; return the reference to `model`'s type.

        Args:
            overrides: (model, field) -> the property to use instead of the one derived.
            undocumented: the description of a model without a docstring ("{name}" is its name).
        """
        js = model.model_json_schema(ref_template="#/$defs/{model}")
        defs = js.pop("$defs", {})
        self._defs = {**defs, js["title"]: js}
        for name, definition in {**defs, js["title"]: js}.items():
            if undocumented and not definition.get("description"):
                definition = {**definition, "description": undocumented.format(name=name)}
            self._json_object(name, definition, overrides)
        return ref(js["title"])

    def _json_object(self, name: str, definition: dict, overrides) -> None:
        props, mapping = {}, {}
        for field, js in definition["properties"].items():
            key = camel_case(field)
            mapping[key] = field
            props[key] = overrides.get((name, field)) or self._json_property(name, field, js)
            if js.get("description"):
                props[key]["description"] = js["description"]
            props[key]["plain"] = True
        self.fields[name] = mapping
        body = {
            "type": "object",
            "properties": props,
            "required": sorted(camel_case(f) for f in definition.get("required", [])),
        }
        if definition.get("description"):
            body["description"] = definition["description"]
        self._define(name, body)

    def _json_property(self, owner: str, field: str, js: dict) -> dict:
        if "anyOf" in js:
            kinds = [k for k in js["anyOf"] if k != {"type": "null"}]
            if len(kinds) == 1:
                return self._json_property(owner, field, kinds[0])
            # A real union (output_tokens: a number, or mean and max): Pulumi's union type, each member typed.
            members = [self._json_property(owner, field, k) for k in kinds]
            shapes = [self._shape(m) for m in members]
            if len(set(shapes)) != len(shapes):
                raise UntypedField(f"{owner}.{field}: a union of two {shapes} a value cannot be told apart in")
            return {"oneOf": members}
        if "$ref" in js:
            return {"$ref": ref(js["$ref"].rsplit("/", 1)[-1])}
        if "enum" in js or "const" in js:
            values = js.get("enum") or [js["const"]]
            kind = {str: "string", int: "integer", float: "number", bool: "boolean"}[type(values[0])]
            return {
                "$ref": self._define(
                    owner + _pascal(field),
                    {
                        "type": kind,
                        "enum": [{"value": v} for v in values],
                        "description": f"The values of {owner}.{field}.",
                    },
                )
            }
        kind = js.get("type")
        if kind == "array":
            return {"type": "array", "items": self._json_property(owner, field, js["items"])}
        if kind == "object":
            extra = js.get("additionalProperties")
            if not isinstance(extra, dict):
                raise UntypedField(f"{owner}.{field}: an object of any shape")
            return {"type": "object", "additionalProperties": self._json_property(owner, field, extra)}
        if kind in ("string", "integer", "number", "boolean"):
            return {"type": kind}
        raise UntypedField(f"{owner}.{field}: JSON Schema {js}")

    def _shape(self, prop: dict) -> str:
        """What a value of `prop` looks like on the wire: object, array, number (integers arrive as floats),
        string or boolean; a union's members must differ in it, so `_value` can tell which one a value is."""
        target = prop.get("$ref")
        if target and type_name(target) not in self.types:  # a model of the one being defined, defined after it
            return "object" if "properties" in self._defs[type_name(target)] else self._defs[type_name(target)]["type"]
        kind = self.types[type_name(target)]["type"] if target else prop["type"]
        return "number" if kind == "integer" else kind

    # ---- dataclasses, through their annotations and attribute docstrings ----

    def dataclass(
        self, cls: type, exclude: tuple[str, ...] = (), name: str | None = None, description: str | None = None
    ) -> str:
        """Define the dataclass `cls` (less `exclude`), every property plain; return the reference to it."""
        props, mapping = {}, {}
        for f in dataclasses.fields(cls):
            if f.name not in exclude:
                mapping[camel_case(f.name)] = f.name
                props[camel_case(f.name)] = {**self.field(cls, f.name), "plain": True}
        name = name or cls.__name__
        self.fields[name] = mapping
        required = sorted(
            camel_case(f.name)
            for f in dataclasses.fields(cls)
            if f.name not in exclude and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        )
        body = {"type": "object", "properties": props, "required": required}
        if description or cls.__doc__:
            body["description"] = description or inspect.cleandoc(cls.__doc__)
        return self._define(name, body)

    def field(self, cls: type, field: str) -> dict:
        """The property for one field of the dataclass `cls`: its type and its attribute docstring."""
        # pulumi.Input[T] names "Output[T]" as a forward reference, resolved in pulumi.output's namespace.
        hints = typing.get_type_hints(cls, {**vars(pulumi.output), **vars(sys.modules[cls.__module__])})
        prop = self._python_property(cls.__name__, field, hints[field])
        doc = attribute_docs(cls).get(field)
        return {**prop, "description": doc} if doc else prop

    def _python_property(self, owner: str, field: str, hint: Any) -> dict:
        hint = _plain_type(hint, f"{owner}.{field}")
        if hint in _PRIMITIVES:
            return {"type": _PRIMITIVES[hint]}
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin in (list, tuple, collections.abc.Sequence) and len(args) == 1:
            return {"type": "array", "items": self._python_property(owner, field, args[0])}
        if origin in (dict, collections.abc.Mapping) and len(args) == 2:
            if args[0] is not str:
                raise UntypedField(f"{owner}.{field}: map keys must be text")
            return {"type": "object", "additionalProperties": self._python_property(owner, field, args[1])}
        if dataclasses.is_dataclass(hint):
            return {"$ref": self.dataclass(hint)}
        raise UntypedField(f"{owner}.{field}: {hint!r}")

    # ---- from schema names back to Python ----

    def to_python(self, type_ref: str, value: Any, path: str) -> dict:
        """`value` (schema names, as the engine sends it) with the field names of `type_ref`'s Python model.

        Integers arrive as floats (Pulumi's wire format has one number type) and become ints again.

        Raises:
            PropertyError: a property the type does not have, or a value of the wrong kind; names its path.
        """
        name = type_name(type_ref)
        if not isinstance(value, Mapping):
            raise PropertyError(path, f"must be an object with the fields of {name}")
        props, mapping = self.types[name]["properties"], self.fields[name]
        out = {}
        for key, item in value.items():
            if key not in mapping:
                raise PropertyError(
                    f"{path}.{key}", f"{name} has no property {key!r}. To fix: use one of {', '.join(sorted(mapping))}"
                )
            if item is not None:
                out[mapping[key]] = self._value(props[key], item, f"{path}.{key}")
        return out

    def _value(self, prop: dict, value: Any, path: str) -> Any:
        if "oneOf" in prop:
            wire = {Mapping: "object", list: "array", bool: "boolean", str: "string", int: "number", float: "number"}
            shape = next((s for t, s in wire.items() if isinstance(value, t)), None)
            member = next((m for m in prop["oneOf"] if self._shape(m) == shape), None)
            if member is None:
                return value  # not one of the members: the spec's own validation names the field and the fix
            return self._value(member, value, path)
        target = prop.get("$ref")
        if target and "properties" in self.types[type_name(target)]:
            return self.to_python(target, value, path)
        if prop.get("type") == "array" and isinstance(value, list):
            return [self._value(prop["items"], v, f"{path}[{i}]") for i, v in enumerate(value)]
        if prop.get("type") == "object" and isinstance(value, Mapping):
            return {k: self._value(prop["additionalProperties"], v, f"{path}.{k}") for k, v in value.items()}
        kind = prop.get("type") or self.types[type_name(target)]["type"]
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            return int(value)
        return value


class PropertyError(ValueError):
    """An input the component cannot take; `path` is its property path in schema names (spec.inference.batchSize)."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


def attribute_docs(cls: type) -> dict[str, str]:
    """Attribute -> the docstring written under it in `cls`'s source (PEP 257 attribute docstrings)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    docs = {}
    for node, after in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


TOLERATION = {
    "type": "object",
    "description": "A Kubernetes toleration (core/v1 Toleration) the pool's pods carry.",
    "properties": {
        "key": {"type": "string", "plain": True, "description": "Taint key the toleration applies to."},
        "operator": {"type": "string", "plain": True, "description": "Exists or Equal (default Equal)."},
        "value": {"type": "string", "plain": True, "description": "Taint value, for operator Equal."},
        "effect": {"type": "string", "plain": True, "description": "NoSchedule, PreferNoSchedule or NoExecute."},
        "tolerationSeconds": {
            "type": "integer",
            "plain": True,
            "description": "NoExecute: seconds the pod stays bound after the taint appears.",
        },
    },
    "required": [],
}
"""Pool.tolerations is a list of mappings in the pool model (any Kubernetes toleration field); here each item is
typed with the fields gpusizer.components.onprem.pod_toleration accepts, in Kubernetes' camelCase (tests check that they
are the same)."""


def build(version: str) -> tuple[dict, Types]:
    """The package schema and its types (for mapping inputs back to Python)."""
    types = Types()
    types.types["Toleration"] = TOLERATION
    types.fields["Toleration"] = {k: k for k in TOLERATION["properties"]}  # pools take Kubernetes' own names
    spec_ref = types.model(
        spec_mod.WorkloadSpec, undocumented="{name}: a section of the workload spec (docs/contract.md section 1)."
    )
    pool_ref = types.model(
        gpusizer.Pool, {("Pool", "tolerations"): {"type": "array", "items": {"$ref": ref("Toleration")}}}
    )
    stack_ref = types.dataclass(
        workload.GpuWorkloadArgs,
        exclude=NOT_SETTINGS,
        name="StackSettings",
        description="Stack-level settings of gpusizer.components.GpuWorkloadArgs: networks, egress, "
        "reservations, Prometheus. Each is the stack config key gpusizer:<name> "
        "of the Python program (docs/pulumi.md, Other settings).",
    )
    deploy_ref = ref("Deploy")
    inputs = {
        "spec": {
            "$ref": spec_ref,
            "plain": True,
            "description": "The workload spec (docs/contract.md section 1): model, task, targets, placement, "
            "sizing and deploy. Its `deploy` section may instead be given as `deploy`.",
        },
        "pools": {
            "type": "array",
            "items": {"$ref": pool_ref, "plain": True},
            "plain": True,
            "description": "On-prem pools that compete with the clouds, with what is free on them now.",
        },
        "catalog": {
            "type": "string",
            "plain": True,
            "description": "Catalog directory or CSV to choose from (as `gpusizer plan --catalog`), relative "
            "to the program's directory; default: the freshest of the refresh cache and the "
            "packaged snapshot.",
        },
        "stack": {
            "$ref": stack_ref,
            "plain": True,
            "description": "Stack-level settings, named as the Python program's gpusizer:* stack config keys "
            "(awsEgress, gcpNetwork, ...). awsRegion defaults to the stack's aws:region.",
        },
        **{camel_case(f): {**types.field(workload.GpuWorkloadArgs, f), "secret": True} for f in SECRETS},
        "deploy": {
            "$ref": deploy_ref,
            "plain": True,
            "description": "How to provision the choice (the spec's deploy section); give it here or in "
            "`spec.deploy`, not both.",
        },
    }
    plan_inputs = {k: v for k, v in inputs.items() if k in ("spec", "pools", "catalog", "deploy")}
    plan_inputs["top"] = {
        "type": "integer",
        "plain": True,
        "description": f"Feasible candidates kept in decisionJson (default "
        f"{workload.DECISION_CANDIDATES}, as the component keeps).",
    }
    component_outputs = {f.name: f.property() for f in outputs.COMPONENT_FIELDS}
    schema = {
        "name": PACKAGE,
        "displayName": "gpusizer",
        "version": version,
        "description": "Right-sized GPU capacity from a workload spec: the sizing engine picks the cheapest adequate "
        "AWS, GCP or on-prem offer and GpuWorkload provisions it.",
        "keywords": ["gpu", "right-sizing", "kind/component", "category/cloud"],
        "license": "Apache-2.0",
        "resources": {
            TOKEN: {
                "isComponent": True,
                "description": inspect.cleandoc(workload.GpuWorkload.__doc__).split("\n\n")[0]
                + " Construct refuses an invalid or infeasible spec, or a bad setting, before anything is created.",
                "inputProperties": inputs,
                "requiredInputs": ["spec"],
                "properties": component_outputs,
                "required": sorted(f.name for f in outputs.COMPONENT_FIELDS if f.always),
            },
        },
        "functions": {
            PLAN: {
                "description": "The engine's decision for a spec, without provisioning anything: what GpuWorkload "
                "would choose, or why nothing is feasible.",
                "inputs": {"properties": plan_inputs, "required": ["spec"]},
                "outputs": {
                    "properties": {f.name: f.property() for f in outputs.PLAN_FIELDS},
                    "required": sorted(f.name for f in outputs.PLAN_FIELDS if f.always),
                },
            },
        },
        "types": {f"{PACKAGE}:index:{name}": t for name, t in sorted(types.types.items())},
    }
    return schema, types
