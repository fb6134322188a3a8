"""The Pulumi policy objects: thin adapters from the SDK's arguments to policies.rules.

Built here, importable anywhere; only policies/__main__.py builds the
PolicyPack (its constructor starts a gRPC server and blocks).
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

from policies import rules

_NUMBER_OR_NULL = {"type": ["number", "null"]}
_SCHEMAS = {
    "gpusizer-no-overprovisioning": {"maxRatio": {"type": "number", "default": 2.0, "minimum": 1,
                                                  "description": "Largest allowed provisioned / required GPU memory."}},
    "gpusizer-cost-ceiling": {"maxHourlyUsd": {**_NUMBER_OR_NULL, "default": None, "description": "$/hour per GPU resource."}},
    "gpusizer-gpu-budget": {"maxHourlyUsd": {**_NUMBER_OR_NULL, "default": None, "description": "$/hour for all GPU resources."}},
    "gpusizer-allowed-gpus": {
        "allowed": {"type": "array", "items": {"type": "string"}, "default": [],
                    "description": "Canonical GPU names allowed (empty: all)."},
        "spotOnly": {"type": "boolean", "default": False, "description": "Only spot capacity in the cloud."},
    },
}
_DESCRIPTIONS = {
    "gpusizer-no-overprovisioning": "GPU memory may not exceed the sizing requirement by more than maxRatio while a cheaper adequate offer exists.",
    "gpusizer-sized-gpu-capacity": "Every GPU resource carries the GPU memory it was sized for.",
    "gpusizer-no-underprovisioning": "GPU memory may not be below the sizing requirement.",
    "gpusizer-cost-ceiling": "A GPU resource may not cost more per hour than maxHourlyUsd.",
    "gpusizer-allowed-gpus": "Only the allowed GPU models (and spot only, when configured) in this stack.",
    "gpusizer-require-imdsv2": "GPU hosts require IMDSv2 session tokens.",
    "gpusizer-secure-gpu-hosts": "Encrypted disks on GPU hosts and no SSH open to the internet.",
}
_LEVELS = {
    "gpusizer-cost-ceiling": EnforcementLevel.ADVISORY,
    "gpusizer-gpu-budget": EnforcementLevel.ADVISORY,
}


def _validator(name: str):
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        for message in rules.check_resource(name, args.resource_type, args.props, args.get_config()):
            report(message)

    return validate


def _remediate_imdsv2(args: ResourceValidationArgs):
    return rules.remediate_imdsv2(args.resource_type, args.props)


def _budget(args: StackValidationArgs, report: ReportViolation) -> None:
    for message in rules.stack_budget(((r.resource_type, r.props) for r in args.resources), args.get_config()):
        report(message)


def policies() -> list:
    """Every gpusizer policy, with coded defaults mirrored in its config schema."""
    out: list = []
    for name, description in _DESCRIPTIONS.items():
        schema = _SCHEMAS.get(name)
        out.append(ResourceValidationPolicy(
            name=name,
            description=description,
            validate=_validator(name),
            remediate=_remediate_imdsv2 if name == "gpusizer-require-imdsv2" else None,
            enforcement_level=_LEVELS.get(name, EnforcementLevel.MANDATORY),
            config_schema=PolicyConfigSchema(properties=schema) if schema else None,
        ))
    out.append(StackValidationPolicy(
        name="gpusizer-gpu-budget",
        description="All GPU capacity in the stack may not cost more per hour than maxHourlyUsd.",
        validate=_budget,
        enforcement_level=_LEVELS["gpusizer-gpu-budget"],
        config_schema=PolicyConfigSchema(properties=_SCHEMAS["gpusizer-gpu-budget"]),
    ))
    return out


def levels() -> dict[str, str]:
    """Default enforcement level per policy name (for the offline preview)."""
    return {p.name: p.enforcement_level.value for p in policies()}
