"""The output contract as pydantic models: plan, estimate, preview and diff JSON (docs/contract.md section 2).

The engine writes these documents as plain dicts (gpusizer.render.plan_json; building models on the
way out would cost every command's start-up), and tests hold every document it writes to these
models. Readers validate through them: `gpusizer diff` reads both sides with :func:`read`, so a
wrong document is refused naming the field (exit 2) instead of failing somewhere inside, and
`gpusizer schema --output plan|estimate|preview|diff` prints their JSON Schemas.

What a reader relies on is typed; every model ignores fields it does not know (a newer writer may
add some; :data:`KNOWN_VERSIONS` says which versions mean the same thing). Numbers are finite,
counts whole and at least their physical minimum, so arithmetic on a validated document cannot fail.
"""

from typing import Annotated, Any, Literal

import pydantic

from gpusizer.base import errors, fields, inputs
from gpusizer.contract import OUTPUT_VERSION

KNOWN_VERSIONS = ("0", OUTPUT_VERSION)
"""Versions this reader understands: "0" (written before the field existed, no `version`) and the current one."""

# Upper bounds keep arithmetic on a validated document finite: a diff adds up to MAX_WORKLOADS of each
# (1e4 x 1e12 = 1e16), and a cost multiplies hourly by replicas and 730 h (1e12 x 1e6 x 730 < 1e21).
MAX_USD = 1e12
MAX_HOURS = 1e7  # over a thousand years
Usd = Annotated[float, pydantic.Field(ge=0, le=MAX_USD, allow_inf_nan=False), fields.NotBool]
Hours = Annotated[float, pydantic.Field(ge=0, le=MAX_HOURS, allow_inf_nan=False), fields.NotBool]
Count = Annotated[int, pydantic.Field(ge=0, le=10**9, strict=True)]
Positive = Annotated[int, pydantic.Field(ge=1, le=10**6, strict=True)]
Text = Annotated[str, pydantic.Field(strict=True)]
MAX_WORKLOADS = 10_000
"""Workloads one preview document may hold (a stack of 50 is large); checked before any is validated."""
MAX_RESOURCES = 10 * MAX_WORKLOADS  # a workload registers a handful of resources (components/): ten is ample


def _list(item):
    """A list validated up to its first bad item (pydantic.FailFast): a hostile document of a million bad items
    costs one error, not a million (each a dict in the ValidationError: gigabytes)."""
    return Annotated[list[item], pydantic.FailFast()]


def _at_most_workloads(value: Any) -> Any:
    if isinstance(value, (dict, list)) and len(value) > MAX_WORKLOADS:
        raise ValueError(f"{len(value):,} workloads, more than {MAX_WORKLOADS:,}: split the stack")
    return value


Workloads = pydantic.BeforeValidator(_at_most_workloads)


class _Open(pydantic.BaseModel):
    """A document part: typed where readers rely on it; fields it does not know are kept, not refused."""

    model_config = pydantic.ConfigDict(frozen=True, extra="allow")


class Offer(_Open):
    """Where a candidate runs and what one replica of it costs per hour."""

    provider: Text
    region: Text
    zone: Text | None = None
    instance_type: Text
    gpu: Text
    gpu_count: Count
    nodes: Positive = 1
    replicas: Positive = 1
    purchase: Text
    hourly_usd: Usd | None = None
    as_of: Text | None = None


class Candidate(Offer):
    """One row of `candidates`: an offer judged, feasible or with its reasons."""

    feasible: bool
    reasons: _list(Text) = []
    reason_code: Text | None = None


class Choice(Offer):
    """The plan's `choice`: the chosen offer with what it costs (gpusizer.base.cost) and how it runs."""

    hourly_usd: Usd
    monthly_usd: Usd | None = None
    run_hours: Hours | None = None
    total_usd: Usd | None = None
    performance: dict[str, Any] = {}

    @pydantic.model_validator(mode="after")
    def _a_run_states_its_hours(self):
        """A training run's cost is its hours x the hourly price: `total_usd` and `run_hours` come together."""
        if (self.total_usd is None) != (self.run_hours is None):
            raise ValueError("total_usd and run_hours come together (a run's cost and its hours): give both or neither")
        return self


class ResolvedModel(_Open):
    """What the spec's `model` resolved to (gpusizer.render.plan_json.resolved_model)."""

    name: Text
    display_name: Text
    hf_id: Text | None = None
    registry_hf_id: Text | None = None
    max_context: Positive | None = None
    context_limit: Positive | None = None
    requested: Text | None = None
    matched_by: Literal["name", "loose-alias", "hf_id", "hf_config", "architecture"]
    note: Text | None = None


class Plan(_Open):
    """`gpusizer plan --format json`, and each workload of a preview document."""

    version: Literal[KNOWN_VERSIONS] = "0"  # type: ignore[valid-type]  # a tuple of literals
    workload: Text
    model: Text | None = None
    resolved_model: ResolvedModel | None = None
    task: Literal["inference", "training", "finetune"] = "inference"
    objective: Text = ""
    spec: dict[str, Any] | None = None
    requirements: dict[str, Any] = {}
    choice: Choice | None
    candidates_total: Count | None = None
    candidates: _list(Candidate) = []
    notes: _list(Text) = []


class Estimate(_Open):
    """`gpusizer estimate --format json`."""

    version: Literal[KNOWN_VERSIONS] = "0"  # type: ignore[valid-type]
    workload: Text
    model: Text | None = None
    resolved_model: ResolvedModel | None = None
    task: Literal["inference", "training", "finetune"]
    requirements: dict[str, Any]
    per_gpu: _list(dict[str, Any])


class Policy(_Open):
    """The policy pack's results in a preview document."""

    resources: Count
    mandatory: Count
    passed: bool
    findings: _list(dict[str, Any]) = []


class Resource(_Open):
    """A resource the previewed program would create: its type, name, parent URN and key inputs."""

    type: Text
    name: Text
    parent: Text = ""
    fields: dict[str, Any] = {}


class Preview(_Open):
    """`gpusizer preview --format json`: every workload's plan, the resources and the pack's results."""

    version: Literal[KNOWN_VERSIONS] = "0"  # type: ignore[valid-type]
    workloads: Annotated[dict[Text, Plan], Workloads]
    # Every resource of the stack; bounded like the workloads it holds, validated up to its first bad item.
    resources: Annotated[_list(Resource), pydantic.Field(max_length=MAX_RESOURCES)] = []
    policy: Policy | None = None


class Change(_Open):
    """One workload of a diff: each side's choice, $/month, $ per run and why it moved."""

    workload: Text
    base: Choice | None
    head: Choice | None
    base_monthly_usd: Usd | None
    head_monthly_usd: Usd | None
    monthly_delta_usd: float
    base_run_usd: Usd | None = None
    head_run_usd: Usd | None = None
    why: _list(Text)


class Diff(_Open):
    """`gpusizer diff --format json`."""

    version: Literal[KNOWN_VERSIONS] = "0"  # type: ignore[valid-type]
    workloads: Annotated[_list(Change), Workloads]
    monthly_delta_usd: float
    run_delta_usd: float = 0.0
    not_counted: _list(Text) = []  # workloads with nothing feasible on a side: in no total
    policy: dict[str, Any] | None = None


DOCUMENTS: dict[str, type[_Open]] = {"plan": Plan, "estimate": Estimate, "preview": Preview, "diff": Diff}
"""The one list of output documents: `gpusizer schema --output` choices and their models."""


def json_schema(kind: str) -> dict:
    """The JSON Schema of one output document (`gpusizer schema --output KIND`)."""
    schema = DOCUMENTS[kind].model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def read(doc: Any, where: str, kinds: tuple[str, ...] = ("plan", "preview")) -> Plan | Preview:
    """Validate a decoded JSON document as one of `kinds`, told apart by its top-level keys.

    Raises:
        SpecError: naming `where` (a file's role, e.g. BASE) and the field, with the fix; a version
            this reader does not know is refused by name.
    """
    from gpusizer import spec  # errors_for: one wording of validation errors for every document

    fix = " or ".join(f"`gpusizer {k} --format json` output" for k in kinds)
    if not isinstance(doc, dict):
        raise errors.SpecError(f"{where}: not a JSON object. To fix: pass {fix}", where)
    version = doc.get("version", "0")
    if version not in KNOWN_VERSIONS:
        raise errors.SpecError(
            f"{where}: version {inputs.quote(version)} of the output contract is not one this gpusizer reads "
            f"({', '.join(KNOWN_VERSIONS)}). To fix: compare documents written by the same gpusizer release, or "
            "upgrade gpusizer",
            f"{where}.version",
        )
    kind = (
        "preview"
        if "workloads" in doc and "preview" in kinds
        else "plan"
        if "choice" in doc and "plan" in kinds
        else None
    )
    if kind is None:
        raise errors.SpecError(
            f"{where}: neither a {' nor a '.join(kinds)} JSON document (no "
            f"{' or '.join(_KEY[k] for k in kinds)} key). To fix: pass {fix}",
            where,
        )
    try:
        return DOCUMENTS[kind].model_validate(doc)
    except pydantic.ValidationError as exc:
        err = spec.errors_for(exc, DOCUMENTS[kind], what=f"{kind} JSON")
        raise errors.SpecError(f"{where}: {err}", f"{where}.{err.field}") from None


_KEY = {"plan": "`choice`", "preview": "`workloads`", "estimate": "`per_gpu`", "diff": "`workloads`"}
