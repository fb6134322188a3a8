"""The need, not the author's pins: a GpuWorkload's recorded spec judged against the unconstrained catalog.

In a recorded spec, `placement.gpus`, `providers`, `regions` and `purchase`,
and a pinned serving layout (`inference.layout`: tensor, pipeline and data
parallel) are the workload author's own words. Re-planning the spec as written finds its
pinned choice "correct" by construction, so the pack re-plans it twice: as
written, and with those pins removed (purchase back to the default,
on-demand). When the pinned choice costs more than maxRatio x the cheapest
adequate offer without the pins (by the decision's own objective: $/hour, or
$ per million tokens), that is a mandatory finding naming the pin and the
cheaper offer, unless the pack config (`allowPins`, owned by the platform
team) allows that pin, at that value, for that workload; an allowed pin is kept in the
comparison and shown with its reason (`exceptions`).

A `sizing.calibration` file the spec names moves a decision only when the
pack config trusts its sha256 (`trustedCalibrations`), or when every factor
in it lies within `calibrationBand` of its GPU's default (data/efficiency.yaml)
and the decision it moves to costs at most maxRatio x the decision without it
per hour (factors inside the band can add up to a dearer GPU; $ per token
would be priced at the speed the calibration itself sets); otherwise the decision
without it is the one the workload's resources are judged against.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib

import gpusizer
from gpusizer import reuse
from gpusizer import spec as spec_model
from gpusizer.estimate import calibration
from gpusizer.estimate import workload as workload_estimate
from gpusizer.policies import evidence, manifests, sizing

REMOVED = object()  # a pin removed by deleting its key: the engine's default applies
# pin -> (where the spec holds it, its value with the pin removed). A serving layout (tensor, pipeline, data
# parallel) pins the shape as surely as a GPU model: with it removed, the engine picks the layout.
PIN_FIELDS: dict[str, tuple[tuple[str, str], object]] = {
    "gpus": (("placement", "gpus"), None),
    "providers": (("placement", "providers"), None),
    "regions": (("placement", "regions"), None),
    "purchase": (("placement", "purchase"), "on-demand"),
    "layout": (("inference", "layout"), None),
    # GPU memory held back beyond the engine's defaults (0.90 serving, 0.95 otherwise: gpusizer.spec.Sizing):
    # a smaller headroom inflates the need itself, so it is the author's word like any pin (removed: the
    # engine's default for the task)
    "headroom": (("sizing", "memory_headroom"), REMOVED),
}
# the smaller of the engine's defaults: spec.Sizing's (LLM serving) and the on-demand runtimes' (training)
LEAST_DEFAULT_HEADROOM = min(
    spec_model.Sizing.model_fields["memory_headroom"].default, workload_estimate.ON_DEMAND_HEADROOM
)


@dataclasses.dataclass(frozen=True)
class Pinned:
    """A workload's pinned choice against the choice without (some of) its pins."""

    name: str
    pins: dict[str, object]  # pin -> the value the spec gives it
    pinned: gpusizer.Decision
    free: gpusizer.Decision
    ratio: float


def spec_of(workload: sizing.StackResource) -> dict | None:
    """A GpuWorkload's recorded spec, its calibration file named as the engine read it (a relative path from
    the program's directory: _calibration_file)."""
    spec = workload.props.get("spec")
    if not isinstance(spec, dict):
        return None
    named = (spec.get("sizing") or {}).get("calibration") if isinstance(spec.get("sizing"), dict) else None
    if isinstance(named, str) and named and not pathlib.Path(named).is_absolute():
        spec = {**spec, "sizing": {**spec["sizing"], "calibration": str(_calibration_file(named))}}
    return spec


def pins_of(spec: dict) -> dict[str, object]:
    """pin -> the value the spec gives it, for the pins it sets (to other than the default)."""
    out = {}
    for k, ((section, key), default) in PIN_FIELDS.items():
        part = spec.get(section)
        value = part.get(key) if isinstance(part, dict) else None
        if k == "headroom":
            if isinstance(value, (int, float)) and value < LEAST_DEFAULT_HEADROOM:
                out[k] = value
        elif value is not None and value != default:
            out[k] = value
    return out


def pin_path(pin: str) -> str:
    """Where the spec holds a pin: `placement.gpus`, `inference.layout`."""
    return ".".join(PIN_FIELDS[pin][0])


def _plan(spec: dict, pools) -> gpusizer.Decision:
    with calibration.recorded_only():  # the calibration the spec records, never the pack's environment
        return reuse.plan(gpusizer.load_spec(spec), pools=gpusizer.parse_pools(pools or []))


def metric(d: gpusizer.Decision) -> float | None:
    c = d.chosen
    if c is None:
        return None
    return c.usd_per_mtok if d.objective == "per-token" and c.usd_per_mtok is not None else c.hourly_usd


def _without(spec: dict, pins) -> dict:
    out = dict(spec)
    for k in pins:
        (section, key), default = PIN_FIELDS[k]
        part = {**(out.get(section) or {}), key: default}
        out[section] = {x: val for x, val in part.items() if val is not REMOVED}
    return out


def compare(workload: sizing.StackResource, removed, cfg=None) -> Pinned | None:
    """The pinned decision against the one with `removed` pins dropped, or None (no such pins, no choice).
    A calibration that does not count (calibration_problem) is dropped from both."""
    plain, _ = calibration_problem(workload, cfg)
    spec = plain or spec_of(workload)
    if spec is None:
        return None
    pins = {k: val for k, val in pins_of(spec).items() if k in removed}
    if not pins:
        return None
    pools = workload.props.get("pools")
    pinned = _plan(spec, pools)
    free = _plan(_without(spec, pins), pools)
    a, b = metric(pinned), metric(free)
    if a is None or b is None or b <= 0:
        return None
    if (
        "gpus" in pins
        and pinned.chosen is not None
        and free.chosen is not None
        and pinned.chosen.purchase != free.chosen.purchase
    ):
        # Like for like: an H100 pinned on spot against an L4 on demand hides the GPU pin's cost (removing every
        # pin crosses purchase options). The GPU pin alone is judged too: the same places and purchase option as
        # the pinned choice, any GPU. Provider and region pins on spot are not (spot prices differ by region).
        same = _without(spec, {"gpus": pins["gpus"]})
        same = {**same, "placement": {**same["placement"], "purchase": pinned.chosen.purchase}}
        try:
            alike = _plan(same, pools)
        except gpusizer.SizingError:
            alike = None
        c = None if alike is None else metric(alike)
        if c is not None and 0 < c < b:
            free, b = alike, c
    return Pinned(spec.get("name") or workload.name, pins, pinned, free, a / b)


def preplan(spec: gpusizer.WorkloadSpec, pools) -> None:
    """Plan `spec` without its pins as the pack will (inside a gpusizer.reuse scope: once, before a fork)."""
    data = spec.model_dump(mode="json")
    pins = pins_of(data)
    if pins:
        try:
            metric(reuse.plan(gpusizer.load_spec(_without(data, pins)), pools=pools))
        except gpusizer.SizingError:
            pass


def _as_planned(spec: dict, pin: str, value) -> object:
    """The pin's value as the engine reads it in `spec` (canonical GPU names, a layout's defaults filled in),
    or a marker that equals nothing when that spec does not load."""
    (section, key), _ = PIN_FIELDS[pin]
    try:
        loaded = gpusizer.load_spec({**spec, section: {**(spec.get(section) or {}), key: value}})
    except (gpusizer.SizingError, ValueError, TypeError):
        return object()
    got = (loaded.model_dump(mode="json").get(section) or {}).get(key)
    return sorted(got) if pin in ("gpus", "providers", "regions") and isinstance(got, list) else got


def _allowed(spec: dict, urn_name: str, allow_pins) -> dict[str, object]:
    """pin -> the allow that covers it for this workload at the value its spec gives it (both read as the
    engine reads them: `h100` is H100, a layout's unnamed degrees are their defaults)."""
    given = pins_of(spec)
    out = {}
    # the spec's name is the workload's identity: a resource named like another workload borrows no allow
    identity = spec.get("name") or urn_name
    for a in allow_pins or ():
        if a.workload == identity:
            out.update(
                {
                    p: a
                    for p, val in a.pins.items()
                    if p in given and _as_planned(spec, p, val) == _as_planned(spec, p, given[p])
                }
            )
    return out


def _choice(d: gpusizer.Decision) -> str:
    c = d.chosen
    return (
        f"{c.offer.instance_type} ({c.offer.gpu_count:g} x {c.offer.gpu}, {c.offer.provider} {c.offer.region}, "
        f"{c.purchase})"
    )


def _cost(d: gpusizer.Decision) -> str:
    m = metric(d)
    return f"${m:,.2f}/Mtok" if d.objective == "per-token" and d.chosen.usd_per_mtok is not None else f"${m:,.2f}/h"


def pin_findings(workload: sizing.StackResource, max_ratio: float, cfg) -> list[str]:
    """The mandatory finding for pins that cost more than max_ratio (module docstring), or none."""
    spec = spec_of(workload)
    if spec is None:
        return []
    allowed = _allowed(spec, workload.name, getattr(cfg, "allow_pins", ()))
    unallowed = [p for p in pins_of(spec) if p not in allowed]
    try:
        p = compare(workload, unallowed, cfg)
    except gpusizer.SizingError:
        return []  # the spec that does not re-plan exempts nothing (judged on memory, policies/verify.py)
    if p is None or p.ratio <= max_ratio:
        return []
    pins = ", ".join(f"{pin_path(k)}: {json.dumps(val)}" for k, val in p.pins.items())
    return [
        f"{p.name}: its pins ({pins}) choose {_choice(p.pinned)} at {_cost(p.pinned)}, {p.ratio:.1f}x the cheapest "
        f"adequate offer without them, {_choice(p.free)} at {_cost(p.free)} (limit {max_ratio:g}x). The pack judges "
        "the need, not the author's pins. To fix: remove the pin, or have the platform team allow it: "
        f"gpusizer-no-overprovisioning.allowPins: [{{workload: {p.name!r}, pins: {json.dumps(p.pins)}, "
        "reason: ...}]"
    ]


def exceptions(workload: sizing.StackResource, max_ratio: float, cfg) -> list[str]:
    """Allowed pins that cost more than max_ratio, each with its reason (what the preview shows)."""
    spec = spec_of(workload)
    if spec is None:
        return []
    allowed = _allowed(spec, workload.name, getattr(cfg, "allow_pins", ()))
    out = []
    for pin, a in allowed.items():
        try:
            p = compare(workload, [pin], cfg)
        except gpusizer.SizingError:
            continue
        if p is not None and p.ratio > max_ratio:
            out.append(
                f"{p.name}: {pin_path(pin)} allowed by the pack config ({a.reason}): {_choice(p.pinned)} at "
                f"{p.ratio:.1f}x {_choice(p.free)}"
            )
    return out


# --- calibration ----------------------------------------------------------------------------------------------


def _calibration_file(path: str) -> pathlib.Path:
    """The calibration file a spec names: absolute as GpuWorkload records it, else read from the program's
    directory (manifests.base), as the engine planned it."""
    return evidence.located(path, manifests.base())


def calibration_problem(workload: sizing.StackResource, cfg) -> tuple[dict | None, str | None]:
    """(the spec to judge by, why its calibration does not count) for a spec naming a calibration file:
    (None, None) when it names none or the calibration counts."""
    spec = spec_of(workload)
    path = ((spec or {}).get("sizing") or {}).get("calibration")
    if not path:
        return None, None
    plain = {**spec, "sizing": {**(spec.get("sizing") or {}), "calibration": None}}
    try:
        raw = pathlib.Path(path).read_bytes()
        digest = hashlib.sha256(raw).hexdigest()
        cal = calibration.load(path)
    except (OSError, gpusizer.SizingError):
        return plain, f"its calibration file {path!r} cannot be read by the pack"
    if any(t.sha256 == digest for t in getattr(cfg, "trusted_calibrations", ())):
        return None, None
    band = getattr(cfg, "calibration_band", 0.5)
    off = [
        f"{gpu} {k} {val:g} (default {calibration.default(gpu, k):g})"
        for gpu, factors in cal.gpus.items()
        for k, val in factors.items()
        if abs(val / calibration.default(gpu, k) - 1) > band
    ]
    max_ratio = getattr(cfg, "max_ratio", 2.0)
    try:
        moved, plain_d = (_plan(x, workload.props.get("pools")) for x in (spec, plain))
        # $/hour, not the objective: $ per token is priced at each side's own speed, which the calibration sets
        with_it, without = (d.chosen.hourly_usd if d.chosen else 0.0 for d in (moved, plain_d))
        same = metric(moved) == metric(plain_d)
    except gpusizer.SizingError:
        with_it, without, same = 1.0, 0.0, False  # one does not plan: the calibration decides, so it must be trusted
    if same:
        return None, None
    if off:
        why = f"with factors outside {band:g} of the defaults ({'; '.join(off[:3])})"
    elif without <= 0 or with_it > max_ratio * without:
        # factors within the band can still add up to a dearer GPU: more than maxRatio is the author's word
        # until the platform team trusts the file, as a pin is
        shown = f"{with_it / without:.1f}x" if without > 0 else "an unplannable"
        why = f"to {shown} the $/hour without it (limit {max_ratio:g}x), with factors inside the band"
    else:
        return None, None
    return plain, (
        f"its calibration {path!r} (sha256 {digest}) moves the decision {why}, and the pack config does not "
        "trust it (gpusizer-no-overprovisioning.trustedCalibrations)"
    )
