"""`gpusizer diff BASE.json HEAD.json`: what a change does to each workload's choice and its $/month.

Inputs are plan JSONs (`gpusizer plan --format json`) or preview documents
(`gpusizer preview --format json`: {"workloads": {NAME: PLAN_JSON}, "policy": {...}}),
one of each side, in any mix. Workloads are matched by name.

Why a choice moved, in this order of evidence (several may apply):
1. the workload was added or removed;
2. its spec changed (the plan JSON's `spec`, compared field by field; plans
   without it fall back to `requirements`);
3. the price of the same offer changed (the base choice's offer priced again
   in head, or head's choice priced in base);
4. the base choice is now rejected, or no longer offered;
5. head's choice is a new offer (absent from base's complete candidate list);
   4 and 5 are only inferred when the spec did not change (a spec change
   changes which candidates are listed);
6. the replica count changed (a throughput target met with more or fewer copies).
When the candidate lists were trimmed and nothing above explains a move, the
reason given is "catalog change".
"""

from __future__ import annotations

import dataclasses
import functools
import json
import pathlib

from gpusizer.base import cost, errors, inputs

FORMATS = ("table", "markdown", "json")
MAX_DOCUMENT_BYTES = 16 << 20
"""One side's cap: both sides are held at once, so half of inputs.MAX_RESULT_BYTES (a plan with the full
catalog's candidates is ~780 KB; a preview of 20 such plans fits)."""


@dataclasses.dataclass(frozen=True)
class Change:
    """One workload, base against head.

    Attributes:
        workload: its name.
        base, head: the plan JSON `choice` of each side, or None (no plan, or nothing feasible).
        base_plan, head_plan: the whole plan JSONs (None when the workload is absent on that side).
        why: sentences saying why the choice or its cost moved; empty when nothing did.
    """

    workload: str
    base: dict | None
    head: dict | None
    base_plan: dict | None
    head_plan: dict | None
    why: tuple[str, ...]

    @functools.cached_property
    def costs(self) -> tuple[cost.Cost | None, cost.Cost | None]:
        """(base, head) cost of each side's choice (cost.from_choice), None where a side has none."""
        return tuple(None if c is None else cost.from_choice(c) for c in (self.base, self.head))

    @property
    def base_monthly_usd(self) -> float | None:
        return _usd(self.costs[0], "monthly_usd")

    @property
    def head_monthly_usd(self) -> float | None:
        return _usd(self.costs[1], "monthly_usd")

    @property
    def monthly_delta_usd(self) -> float:
        """Head minus base, $/month of what runs until stopped (totals()); a side with no choice, or one
        that is a training run (its cost counts once, in the run totals), counts as $0."""
        (base, head), _ = self.totals()
        return round(head - base, cost.USD_DECIMALS)

    def to_dict(self) -> dict:
        return {
            "workload": self.workload,
            "base": self.base,
            "head": self.head,
            "base_monthly_usd": self.base_monthly_usd,
            "head_monthly_usd": self.head_monthly_usd,
            "monthly_delta_usd": self.monthly_delta_usd,
            "base_run_usd": _usd(self.costs[0], "total_usd"),
            "head_run_usd": _usd(self.costs[1], "total_usd"),
            "why": list(self.why),
        }

    @property
    def infeasible(self) -> bool:
        """Whether a side plans the workload but nothing is feasible there: no price to compare, so the change is
        left out of every total (a workload that breaks is not a saving, nor one that is fixed a cost)."""
        return (self.base_plan is not None and self.base is None) or (self.head_plan is not None and self.head is None)

    def totals(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """((base, head) $/month of the sides that run until stopped, (base, head) $ of the sides that are
        one run): a run of hours costs its total once, not hourly x 730 every month. All zero when a side
        has nothing feasible (`infeasible`)."""
        if self.infeasible:
            return (0.0, 0.0), (0.0, 0.0)
        monthly = tuple(0.0 if c is None or c.total_usd is not None else c.monthly_usd for c in self.costs)
        runs = tuple(0.0 if c is None or c.total_usd is None else c.total_usd for c in self.costs)
        return monthly, runs

    @property
    def is_run(self) -> bool:
        """Whether either side is a training run with a token count."""
        return any(c is not None and c.total_usd is not None for c in self.costs)


def _usd(c: cost.Cost | None, figure: str) -> float | None:
    return None if c is None else getattr(c, figure)


def load(path: str | pathlib.Path, side: str) -> tuple[dict[str, dict], dict | None]:
    """The plans of one side by workload name, and its policy results (preview documents only).

    The document is validated against the output contract (gpusizer.contract.output): a missing or
    mistyped field, or a version this gpusizer does not read, is refused naming it.

    Raises:
        SpecError: naming the side (BASE/HEAD) and the field when the file is unreadable or is neither document.
    """
    from gpusizer.contract import output  # pydantic models: built only when a diff reads them

    p = pathlib.Path(path)
    try:
        doc = inputs.read_json(p, "plan JSON", side, max_bytes=MAX_DOCUMENT_BYTES)
    except errors.SpecError as exc:
        message = str(exc)
        if "To fix" not in message:
            message += ". To fix: pass `gpusizer plan --format json` or `gpusizer preview --format json` output"
        raise errors.SpecError(f"{side}: {message}", side) from None
    output.read(doc, side)  # validated; the document itself is used (a model_dump would copy all of it again)
    if isinstance(doc.get("workloads"), dict):
        return doc["workloads"], doc.get("policy")
    return {doc["workload"]: doc}, None


def compare(base: dict[str, dict], head: dict[str, dict]) -> list[Change]:
    """Every workload of either side, in base order then head's new ones."""
    names = list(base) + [n for n in head if n not in base]
    out = []
    for name in names:
        b, h = base.get(name), head.get(name)
        out.append(Change(name, b and b.get("choice"), h and h.get("choice"), b, h, tuple(_why(b, h))))
    return out


def _flat(d, prefix: str = "") -> dict[str, object]:
    if not isinstance(d, dict):
        return {prefix: d}
    out: dict[str, object] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def _spec_changes(b: dict, h: dict) -> list[str]:
    key = "spec" if "spec" in b and "spec" in h else "requirements"
    fb, fh = _flat(b.get(key) or {}), _flat(h.get(key) or {})
    changed = [k for k in sorted(set(fb) | set(fh)) if fb.get(k) != fh.get(k)]
    label = "spec" if key == "spec" else "requirements"
    return [f"{label} change: {k} {_v(fb.get(k))} -> {_v(fh.get(k))}" for k in changed]


def _v(x) -> str:
    return "(unset)" if x is None else json.dumps(x) if isinstance(x, (list, dict)) else str(x)


def _key(c: dict) -> tuple:
    return (c.get("provider"), c.get("region"), c.get("zone"), c.get("instance_type"), c.get("purchase"))


def _label(c: dict) -> str:
    where = f"{c.get('region')}/{c['zone']}" if c.get("zone") else c.get("region")
    return f"{c.get('provider')} {where} {c.get('instance_type')} {c.get('purchase')}"


def _find(plan: dict, choice: dict) -> dict | None:
    """The same offer among `plan`'s choice and candidates, or None."""
    k = _key(choice)
    for c in [plan.get("choice") or {}, *plan.get("candidates", [])]:
        if c and _key(c) == k:
            return c
    return None


def _complete(plan: dict) -> bool:
    """Whether `plan` lists every candidate (not trimmed by --top or a component)."""
    total = plan.get("candidates_total")
    return total is None or total == len(plan.get("candidates", []))


def _why(b: dict | None, h: dict | None) -> list[str]:
    if b is None:
        return ["workload added"]
    if h is None:
        return ["workload removed"]
    why = _spec_changes(b, h)
    bc, hc = b.get("choice"), h.get("choice")
    if bc is None or hc is None:
        if bc is not None or hc is not None:
            why.append("nothing feasible in head" if hc is None else "nothing was feasible in base")
        return why
    moved = _key(bc) != _key(hc)
    # Candidate lists answer "new offer?" / "gone?" only when the same spec judged the same catalog's offers.
    same_spec = not why
    # The base choice seen from head: repriced, rejected or gone.
    again = _find(h, bc)
    if again is not None and again.get("hourly_usd") not in (None, bc.get("hourly_usd")):
        why.append(
            f"price change: {_label(bc)} ${bc['hourly_usd']}/h -> ${again['hourly_usd']}/h "
            f"(as of {bc.get('as_of')} -> {again.get('as_of')})"
        )
    if moved and again is not None and again.get("feasible") is False:
        why.append(f"base choice now rejected: {'; '.join(again.get('reasons') or [])}")
    if moved and same_spec and again is None and _complete(h):
        why.append(f"base choice no longer offered: {_label(bc)}")
    if moved:
        before = _find(b, hc)
        if before is not None and before.get("hourly_usd") not in (None, hc.get("hourly_usd")):
            why.append(f"price change: {_label(hc)} ${before['hourly_usd']}/h -> ${hc['hourly_usd']}/h")
        if same_spec and before is None and _complete(b):
            why.append(f"new offer: {_label(hc)} (as of {hc.get('as_of')})")
    if bc.get("replicas", 1) != hc.get("replicas", 1):
        why.append(f"replicas {bc.get('replicas', 1)} -> {hc.get('replicas', 1)}")
    if moved and not why:
        why.append("catalog change (prices or offers; the candidate lists were trimmed)")
    return why


def totals(changes: list[Change]) -> tuple[tuple[float, float], tuple[float, float]]:
    """Every change's totals added up: ((base, head) $/month, (base, head) $ of runs), rounded to the cent."""
    each = [c.totals() for c in changes]
    return tuple(
        tuple(round(sum(t[kind][side] for t in each), cost.USD_DECIMALS) for side in (0, 1)) for kind in (0, 1)
    )
