"""The policies as data: one `Rule` per policy, its config model, its check (plain functions, no SDK).

A resource rule's check takes a `Subject` (type + properties read field by
field) and its validated config and returns violation messages; each message
says what is forbidden, with the numbers, and how to fix it. A stack rule's
check takes every resource and returns (message, urn) pairs. A field a rule
needs that is unknown at preview raises `gpusizer.policies.view.Unknown`; the pack
reports that as advisory "judged again at `pulumi up`" (policies/pack.py).

Config: each rule's pydantic model is the single source of its keys, types,
defaults and JSON schema (the schema the pack publishes, and the validation
of what a user passes), because the Python policy SDK applies no schema
defaults (docs/pulumi-offline.md).
"""

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pydantic

from gpusizer.base import errors, providers
from gpusizer.contract import metadata
from gpusizer.facts import hardware
from gpusizer.policies import (
    budget,
    evidence,
    gate,
    hosts,
    manifests,
    model,
    need,
    overprovisioning,
    resources,
    sizing,
    verify,
)
from gpusizer.policies import view as v


class _Config(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


class NoConfig(_Config):
    """No settings."""


class AllowType(_Config):
    """A resource type or name the platform team allows to carry GPU evidence without a precise model."""

    type: str | None = pydantic.Field(
        None,
        description="Pulumi type token, e.g. kubernetes:ray.io/v1:RayCluster "
        "(* matches any run of characters: kubernetes:ray.io/*).",
    )
    name: str | None = pydantic.Field(None, description="Resource name (or URN); none: every resource of the type.")
    reason: str = pydantic.Field(..., min_length=1, description="Why it is allowed (shown with the exception).")

    @pydantic.model_validator(mode="after")
    def _names_something(self):
        if self.type is None and self.name is None:
            raise ValueError("an allow names a type, a name or both")
        return self


class EvidenceConfig(_Config):
    allow: list[AllowType] = pydantic.Field([], description="Types or names allowed to carry GPU evidence unmodelled.")


class AllowPin(_Config):
    """A placement pin the platform team allows for one workload, at one value, although it costs more than
    maxRatio. The value is part of the allow: a pin changed to another value (H100 to B200) is judged again."""

    workload: str = pydantic.Field(..., min_length=1, description="The workload (spec name or GpuWorkload name).")
    pins: dict[str, Any] = pydantic.Field(
        ...,
        min_length=1,
        description="Pin -> the value allowed, as the spec writes it: {gpus: [H100]}, {purchase: spot}. Pins: "
        "gpus, providers, regions, purchase, layout, headroom.",
    )
    reason: str = pydantic.Field(..., min_length=1, description="Why (shown with the exception).")

    @pydantic.field_validator("pins", mode="before")
    @classmethod
    def _known(cls, pins: Any) -> Any:
        if isinstance(pins, list):
            raise ValueError(
                "give each pin with the value it allows, as the spec writes it: pins: {gpus: [H100]} (an allow "
                "covers that value only; a pin changed to another value is judged again)"
            )
        bad = [p for p in pins or {} if p not in PINS] if isinstance(pins, dict) else []
        if bad:
            raise ValueError(f"unknown pin {bad[0]!r}; pins: {', '.join(PINS)}")
        return pins


class TrustedCalibration(_Config):
    sha256: str = pydantic.Field(..., pattern=r"^[0-9a-f]{64}$", description="sha256 of the calibration file.")
    reason: str = pydantic.Field(..., min_length=1, description="Why it is trusted.")


class AllowTemplate(_Config):
    """A launch or instance template outside the stack that the platform team has reviewed (CPU only, or sized)."""

    template: str = pydantic.Field(
        ...,
        min_length=1,
        description="Its id, name or URL as resources name it (* matches any run of characters; case-blind).",
    )
    reason: str = pydantic.Field(..., min_length=1, description="Why (shown with the exception).")


PINS = tuple(need.PIN_FIELDS)


class RatioConfig(_Config):
    max_ratio: float = pydantic.Field(
        2.0,
        alias="maxRatio",
        ge=1,
        description="Largest allowed provisioned / required GPU memory, and pinned / unpinned cost.",
    )
    allow_pins: list[AllowPin] = pydantic.Field(
        [], alias="allowPins", description="Pins allowed per workload although they cost more."
    )
    allow_templates: list[AllowTemplate] = pydantic.Field(
        [], alias="allowTemplates", description="Templates outside the stack that resources may launch unjudged."
    )
    trusted_calibrations: list[TrustedCalibration] = pydantic.Field(
        [], alias="trustedCalibrations", description="Calibration files (by sha256) whose factors may move a decision."
    )
    calibration_band: float = pydantic.Field(
        0.5,
        alias="calibrationBand",
        gt=0,
        lt=1,
        description="An untrusted calibration counts only when each factor is within this fraction of its default.",
    )


class CeilingConfig(_Config):
    max_hourly_usd: float | None = pydantic.Field(
        None, alias="maxHourlyUsd", gt=0, description="$/hour limit (catalog on-demand prices); null: off."
    )


class AllowedConfig(_Config):
    allowed: list[str] = pydantic.Field([], description="Canonical GPU names allowed (empty: all).")
    spot_only: bool = pydantic.Field(False, alias="spotOnly", description="Only spot capacity in the cloud.")

    @pydantic.field_validator("allowed")
    @classmethod
    def _canonical(cls, names: list[str]) -> list[str]:
        out = []
        for name in names:
            gpu = hardware.canonical_gpu(name)
            if gpu is None:
                raise ValueError(f"unknown GPU {name!r}; known: {', '.join(hardware.load_gpus())}")
            out.append(gpu)
        return out


@dataclasses.dataclass(frozen=True)
class Subject:
    """One resource as a resource rule sees it."""

    type: str
    props: v.View
    name: str = ""
    urn: str = ""

    @functools.cached_property
    def gpu(self) -> resources.GpuResource | None:
        return resources.gpu_resource(self.type, self.props)


@dataclasses.dataclass(frozen=True)
class Rule:
    """One policy: its name, what it blocks, its default level, its config model and its check.

    Attributes:
        scope: "resource" (check(Subject, config) -> messages) or "stack"
            (check(list of StackResource, config) -> (message, urn) pairs).
        remediate: for resource rules that can fix what they flag: (type, props) -> fixed props or None.
    """

    name: str
    description: str
    level: str
    config: type[_Config]
    check: Callable[..., list]
    scope: str = "resource"
    remediate: Callable[[str, Mapping], dict | None] | None = None

    def schema(self) -> dict[str, Any]:
        """JSON-schema properties of the config (with defaults), as PolicyConfigSchema takes them."""
        return self.config.model_json_schema(by_alias=True).get("properties", {})

    def settings(self, given: Mapping[str, Any] | None) -> _Config:
        """The validated config: defaults overlaid with `given` (enforcementLevel is the SDK's, not ours).

        Raises:
            ValueError: an unknown key or a value of the wrong type, naming the policy and the key.
        """
        given = {k: val for k, val in (given or {}).items() if k != "enforcementLevel"}
        try:
            return self.config.model_validate(given)
        except pydantic.ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(config)'}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"{self.name} config: {problems}") from None


def _gpu(check: Callable[[resources.GpuResource, Any], list[str]]) -> Callable[[Subject, Any], list[str]]:
    """A check that applies to covered resources that may launch a GPU."""

    def run(s: Subject, cfg) -> list[str]:
        return check(s.gpu, cfg) if s.gpu is not None else []

    run.__doc__ = check.__doc__
    return run


def sized_gpu_capacity(r: resources.GpuResource, cfg) -> list[str]:
    """Every GPU type is one the pack can verify, and the resource carries a valid sizing requirement."""
    out = [
        f"{s.label}: unknown GPU type, cannot verify its GPU memory or price. To fix: "
        + (
            "select the GPU model with a node selector (nvidia.com/gpu.product; for a gpusizer pool, the pool's "
            "node_selector)"
            if "node selector" in s.label
            else "a GPU type in `gpusizer catalog list`, or refresh the catalog (`gpusizer catalog refresh`)"
        )
        for s in r.unknown
    ]
    try:
        required = r.required_gib
    except v.Unknown:
        # A GPU shape known at preview whose requirement is not: the stack rules that compare the two would
        # judge it only at `pulumi up`, after the capacity exists. The gate fails closed instead.
        try:
            known = [s for s in r.shapes if s.capacity is not None]
        except v.Unknown:
            known = []
        if not known:
            raise
        return out + [
            f"{r.label}: {known[0].label} is known at preview but its sizing requirement is not (the "
            "tag, label or annotation is computed from another resource's output), so the gate cannot "
            "judge it before `pulumi up` creates it. To fix: give gpusizer:required-gpu-memory-gib "
            "(or the label or annotation) as a literal value"
        ]
    if required is None and r.type == resources.AWS_LAUNCH_CONFIG:
        # a launch configuration carries no tags (EC2 Auto Scaling API: CreateLaunchConfiguration has no Tags),
        # so it cannot carry a requirement; AWS no longer offers them to new accounts (Amazon EC2 Auto Scaling
        # User Guide, "Launch configurations", read 2026-11-26)
        return out + [
            f"{r.label}: a launch configuration cannot carry a sizing requirement (it has no tags). To fix: a "
            "launch template tagged gpusizer:required-gpu-memory-gib (`gpusizer estimate`'s total), or "
            "components.GpuWorkload"
        ]
    if required is None:
        given = r.raw_requirement
        why = (
            f"its requirement {given!r} is not a positive finite number of GiB"
            if given not in (None, "")
            else "GPU capacity without a sizing requirement"
        )
        out.append(
            f"{r.label}: {why} (tag gpusizer:required-gpu-memory-gib, label gpusizer-required-gpu-memory-gib "
            "or annotation gpusizer.io/required-gpu-memory-gib). To fix: provision it with "
            "components.GpuWorkload, or tag it with `gpusizer estimate`'s total"
        )
    return out


_REQUIREMENT_KEYS = frozenset({metadata.AWS_REQUIRED, metadata.GCP_REQUIRED, metadata.K8S_REQUIRED})


def _declares_gpu(data) -> bool:
    """Whether `data` (a resource's properties) says it is GPU capacity in words known at preview: a literal
    sizing requirement (tag, label, annotation) or a GPU request with a count."""
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, Mapping):
            if x.get("key") in _REQUIREMENT_KEYS and isinstance(x.get("value"), (str, int, float)):
                return True
            for k, val in x.items():
                if isinstance(k, str) and (
                    (k in _REQUIREMENT_KEYS and isinstance(val, (str, int, float)))
                    or (evidence.is_resource_name(k) and isinstance(val, (str, int, float)) and str(val) != "0")
                ):
                    return True
                if isinstance(val, (Mapping, list)):
                    stack.append(val)
        elif isinstance(x, list):
            stack += [val for val in x if isinstance(val, (Mapping, list))]
    return False


def _computed_shape(s: Subject) -> list[str]:
    """Fail closed on a resource that says it is GPU capacity (a literal requirement, a GPU request) while the
    shape it launches is computed at preview: the rules that judge the shape would run only at `pulumi up`,
    and a CI preview would pass it unseen."""
    try:
        s.gpu  # noqa: B018 - reading the shape is the check
        return []
    except v.Unknown as exc:
        if not _declares_gpu(s.props.data):
            raise
        return [
            f"{s.name or s.type}: it declares GPU capacity (a sizing requirement or a GPU request) but {exc}, so "
            "the gate cannot judge its shape before `pulumi up` creates it. To fix: give the instance type, "
            "machine type or GPU model as a literal (or provision it with components.GpuWorkload)"
        ]


def cost_ceiling(s: Subject, cfg: CeilingConfig) -> list[str]:
    """The dearest type a resource may launch, at the catalog's on-demand price per node (off by default)."""
    if cfg.max_hourly_usd is None or s.gpu is None:
        return []
    r = s.gpu
    if r.provider == "onprem":
        return []  # a pod holds GPUs of an owned pool: no catalog price per node
    priced = [(x, *model.price(x, r.provider)) for x in r.shapes]
    unpriced = [
        f"{x.label}: {why}, so the ceiling cannot be checked (fail closed). To fix: a catalog type, or "
        "refresh the catalog"
        for x, usd, why in priced
        if usd is None
    ]
    if unpriced:
        return unpriced
    dear, usd, why = max(priced, key=lambda x: x[1])
    if usd <= cfg.max_hourly_usd:
        return []
    return [
        f"{dear.label} costs ${usd:,.2f}/h ({why}) > ${cfg.max_hourly_usd:,.2f}/h "
        "ceiling. To fix: a cheaper adequate type, or raise gpusizer-cost-ceiling.maxHourlyUsd"
    ]


def allowed_gpus(s: Subject, cfg: AllowedConfig) -> list[str]:
    """Allowed GPU models, and spot only; with neither configured it reads nothing."""
    if not (cfg.allowed or cfg.spot_only) or s.gpu is None:
        return []
    r, out = s.gpu, []
    if cfg.allowed:
        out += [
            f"{cap.label}: {cap.gpu} is not allowed in this stack (allowed: {', '.join(cfg.allowed)}). "
            "To fix: placement.gpus in the spec, or change gpusizer-allowed-gpus.allowed"
            for cap in r.capacities
            if cap.gpu not in cfg.allowed
        ]
        out += [f"{x.label}: unknown GPU type cannot be shown to be allowed" for x in r.unknown]
    if cfg.spot_only and not providers.get(r.provider).owned and r.purchase == "on-demand":
        out.append(
            f"{r.label}: this stack allows spot GPU capacity only, and this buys on-demand. "
            "To fix: placement.purchase: spot"
        )
    return out


RULES: tuple[Rule, ...] = (
    Rule(
        "gpusizer-gpu-evidence",
        "Every resource with GPU evidence (accelerated instance types, accelerator resource names and fields, GPU "
        "node selection) is judged by a precise model, or allowed by the pack config.",
        "mandatory",
        EvidenceConfig,
        lambda s, cfg: gate.check_resource(s.type, s.props, s.name, s.urn, cfg.allow),
    ),
    Rule(
        "gpusizer-no-overprovisioning",
        "GPU memory may not exceed the sizing requirement by more than maxRatio while a cheaper adequate offer "
        "exists; a size labelled as set by a target, a deadline or cost holds only when the pack re-plans the "
        "spec of the GpuWorkload above the resource and the resource matches that decision.",
        "mandatory",
        RatioConfig,
        lambda rs, cfg: overprovisioning.check(rs, cfg.max_ratio, cfg),
        scope="stack",
    ),
    Rule(
        "gpusizer-sized-gpu-capacity",
        "Every GPU resource names a GPU type the pack knows and carries the GPU memory it was sized for.",
        "mandatory",
        NoConfig,
        lambda s, cfg: _computed_shape(s) or _gpu(sized_gpu_capacity)(s, cfg),
    ),
    Rule(
        "gpusizer-no-underprovisioning",
        "GPU memory per node may not be below the sizing requirement, unless the resource is its GpuWorkload's "
        "re-planned decision (a replica spread over several nodes holds a share on each).",
        "mandatory",
        NoConfig,
        lambda rs, cfg: verify.underprovisioned(rs),
        scope="stack",
    ),
    Rule(
        "gpusizer-cost-ceiling",
        "A GPU resource may not cost more per hour (per node) than maxHourlyUsd.",
        "advisory",
        CeilingConfig,
        cost_ceiling,
    ),
    Rule(
        "gpusizer-allowed-gpus",
        "Only the allowed GPU models (and spot only, when configured) in this stack.",
        "mandatory",
        AllowedConfig,
        allowed_gpus,
    ),
    Rule(
        "gpusizer-require-imdsv2",
        "GPU hosts require IMDSv2 session tokens.",
        "mandatory",
        NoConfig,
        lambda s, cfg: hosts.require_imdsv2(s.type, s.props),
        remediate=hosts.remediate_imdsv2,
    ),
    Rule(
        "gpusizer-secure-gpu-hosts",
        "Encrypted disks on GPU hosts and no SSH open to the internet.",
        "mandatory",
        NoConfig,
        lambda s, cfg: hosts.secure_gpu_hosts(s.type, s.props),
    ),
    Rule(
        "gpusizer-autoscaling-bounds",
        "A GpuWorkload's autoscaling maximum may not exceed its pool's free GPUs or the vCPU quota the catalog knows.",
        "mandatory",
        NoConfig,
        lambda rs, cfg: verify.bounds_within_capacity(rs),
        scope="stack",
    ),
    Rule(
        "gpusizer-gpu-budget",
        "All GPU capacity in the stack may not cost more per hour than maxHourlyUsd.",
        "advisory",
        CeilingConfig,
        lambda rs, cfg: budget.stack_budget(rs, cfg.max_hourly_usd),
        scope="stack",
    ),
)
BY_NAME: dict[str, Rule] = {r.name: r for r in RULES}


LEVELS = ("advisory", "mandatory", "remediate", "disabled")
"""Enforcement levels a policy config may set (pulumi analyzer.proto EnforcementLevel; a test compares)."""
ALL = "all"
"""The config key whose enforcement level applies to every policy a config does not set one for
(Pulumi docs, "Configuring policy packs": "The top-level enforcement level under all will override...")."""


def level_of(cfg: Any) -> str | None:
    """The enforcementLevel a policy's config sets (a bare string is one), or None."""
    return cfg if isinstance(cfg, str) else cfg.get("enforcementLevel") if isinstance(cfg, Mapping) else None


def settings_of(cfg: Any) -> dict:
    """A policy's config as a mapping of its own: a bare string is {"enforcementLevel": string}."""
    return dict(cfg) if isinstance(cfg, Mapping) else {"enforcementLevel": cfg}


def validate_config(config: Any, where: str = "--policy-config") -> None:
    """A policy config as `pulumi preview --policy-pack-config` takes it, checked before any run: every
    key a policy of this pack, every enforcementLevel a level, every setting valid for its policy.
    A misspelt policy name would otherwise configure nothing and leave that policy at its default.

    Raises:
        gpusizer.base.errors.SpecError: naming the policy and the fix.
    """
    import difflib

    if not isinstance(config, Mapping):
        raise errors.SpecError(f"{where}: must be a JSON object of policy name -> settings", where)
    for name, cfg in config.items():
        if name != ALL and name not in BY_NAME:
            near = difflib.get_close_matches(str(name), list(BY_NAME), n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise errors.SpecError(
                f"{where}: {name!r} is no policy of this pack; {hint}policies: {', '.join(BY_NAME)}", where
            )
        settings = settings_of(cfg)
        level = settings.pop("enforcementLevel", None if name == ALL else BY_NAME[name].level)
        if not isinstance(level, str) or level.lower() not in LEVELS:
            raise errors.SpecError(f"{where}: {name}.enforcementLevel {level!r}: use one of {', '.join(LEVELS)}", where)
        if name == ALL and settings:
            raise errors.SpecError(f"{where}: all: give an enforcementLevel alone, not {', '.join(settings)}", where)
        try:
            if name != ALL:
                BY_NAME[name].settings(settings)
        except ValueError as exc:
            raise errors.SpecError(f"{where}: {exc}", where) from None


def check_resource(
    name: str,
    resource_type: str,
    props: Mapping,
    config: Mapping[str, Any] | None = None,
    resource_name: str = "",
    urn: str = "",
) -> list[str]:
    """Messages of resource rule `name` for one resource; a malformed resource or config is a message.

    Raises:
        gpusizer.policies.view.Unknown: a field the rule needs is unknown at preview.
    """
    rule = BY_NAME[name]
    try:
        cfg = rule.settings(config)
    except ValueError as exc:
        return [str(exc)]
    try:
        return rule.check(Subject(resource_type, v.View(v.raw(props)), resource_name, urn), cfg)
    except v.Unknown:
        raise
    except Exception as exc:  # noqa: BLE001 - a crash in a rule is a finding naming the resource, never a pass
        return [
            f"{name} could not judge this {resource_type} ({type(exc).__name__}: {exc}). To fix: correct the "
            "resource or the policy config"
        ]


def _on_component(message: str, urn: str | None) -> tuple[str, str | None]:
    """A finding on a child expanded from a component's manifests, reported on the component the engine knows."""
    if urn and manifests.EXPANDED in urn:
        component, _, label = urn.partition(manifests.EXPANDED)
        child = label.split("::", 1)[-1]
        return (message if message.startswith(child) else f"{child}: {message}"), component
    return message, urn


def check_stack(
    name: str, stack: Iterable[sizing.StackResource], config: Mapping[str, Any] | None = None
) -> list[tuple[str, str | None]]:
    """(message, urn) pairs of stack rule `name`; a malformed config is a message."""
    rule = BY_NAME[name]
    try:
        cfg = rule.settings(config)
    except ValueError as exc:
        return [(str(exc), None)]
    try:  # step 2, once per stack: the stack, its components' manifests expanded, modelled
        sm = model.StackModel(manifests.expand(list(stack), manifests.base()))
        return [_on_component(m, urn) for m, urn in rule.check(sm, cfg)]
    except v.Unknown:
        raise
    except Exception as exc:  # noqa: BLE001 - a finding, never a crashed analyzer (each resource: sizing.Findings)
        return [
            (
                f"{name} could not judge this stack ({type(exc).__name__}: {exc}). To fix: correct the resources "
                "or the policy config",
                None,
            )
        ]
