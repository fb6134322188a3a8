"""The Pulumi policy objects, built from gpusizer.policies.rules.RULES (thin adapters from the SDK's arguments).

Built here, importable anywhere; only policies/__main__.py builds the
PolicyPack (its constructor starts a gRPC server and blocks).

A field a rule needs that is unknown at preview becomes the SDK's own
"can't run policy ... during preview" diagnostic (advisory), with a message
naming the field; the engine sends the resource again with every value known
at `pulumi up`, where a resource rule runs at its own level before the
resource is created, and a stack rule (over-provisioning, budget, bounds)
once every resource is registered, after they were created. Unknowns the
rule does not read never reach it.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import proxy as sdk_proxy

from gpusizer.policies import rules, sizing
from gpusizer.policies import view as v

NAME = "gpusizer"


def unknown_error(exc: v.Unknown) -> sdk_proxy.UnknownValueError:
    """The SDK's exception for an unknown value, with a message that names the field and when it is judged."""
    err = sdk_proxy.UnknownValueError(v.STRING, exc.path.split("."))
    err.message = f"{exc.path} is unknown until the resource is created; gpusizer judges it again at `pulumi up`"
    return err


def _resource_validator(rule: rules.Rule):
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        try:
            messages = rules.check_resource(
                rule.name, args.resource_type, args.props, args.get_config(), args.name, args.urn
            )
        except v.Unknown as exc:
            raise unknown_error(exc) from None
        for message in messages:
            report(message)

    return validate


def stack_resources(args: StackValidationArgs) -> list[sizing.StackResource]:
    """The SDK's stack resources as plain StackResources (props unwrapped, links as URNs)."""
    out = []
    for r in args.resources:
        deps = [d.urn for d in r.dependencies] + [d.urn for ds in r.property_dependencies.values() for d in ds]
        out.append(
            sizing.StackResource(
                r.resource_type,
                v.View(v.raw(r.props)),
                r.urn,
                r.name,
                r.parent.urn if r.parent is not None else None,
                tuple(dict.fromkeys(deps)),
            )
        )
    return out


def _stack_validator(rule: rules.Rule):
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        try:
            found = rules.check_stack(rule.name, stack_resources(args), args.get_config())
        except v.Unknown as exc:
            raise unknown_error(exc) from None
        for message, urn in found:
            report(message, urn)

    return validate


def _remediator(rule: rules.Rule):
    def remediate(args: ResourceValidationArgs):
        try:
            return rule.remediate(args.resource_type, args.props)
        except v.Unknown as exc:
            raise unknown_error(exc) from None

    return remediate


def policies() -> list:
    """Every gpusizer policy, one per rules.RULES record, its config schema from the record's model."""
    out: list = []
    for rule in rules.RULES:
        schema = rule.schema()
        common = dict(
            name=rule.name,
            description=rule.description,
            enforcement_level=EnforcementLevel(rule.level),
            config_schema=PolicyConfigSchema(properties=schema) if schema else None,
        )
        if rule.scope == "stack":
            out.append(StackValidationPolicy(validate=_stack_validator(rule), **common))
        else:
            out.append(
                ResourceValidationPolicy(
                    validate=_resource_validator(rule),
                    remediate=_remediator(rule) if rule.remediate else None,
                    **common,
                )
            )
    return out


def levels() -> dict[str, str]:
    """Default enforcement level per policy name (for the offline preview)."""
    return {r.name: r.level for r in rules.RULES}
