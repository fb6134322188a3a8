"""Steps 3 and 4 for the evidence rule: every resource's model problems, reported (gpusizer-gpu-evidence).

Reads only the model (policies/model.py): a resource with GPU evidence and no
precise model, evidence its model does not account for, a crash while
modelling it; and, for children the pack expanded from a provider-side
component's manifests (which no resource rule sees), the checks the resource
rules make: a GPU type the pack knows and a sizing requirement.
"""

from __future__ import annotations

from collections.abc import Iterable

from policies import model, sizing


def check(stack: list[sizing.StackResource], allow: Iterable = ()) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for m in model.build(stack, allow):
        out += [(p, m.resource.urn) for p in m.problems]
        if model.EXPANDED in m.resource.urn and m.gpu is not None:
            try:
                out += [(f"{m.label}: {msg}", m.resource.urn) for msg in _sized(m)]
            except Exception as exc:  # noqa: BLE001 - a crash names the resource, the other findings stand
                out.append((f"{m.label}: gpusizer could not judge it ({type(exc).__name__}: {exc})", m.resource.urn))
    return out


def _sized(m: model.Model) -> list[str]:
    g = m.gpu
    out = [f"{s.label}: unknown GPU type, cannot verify its GPU memory or price" for s in g.unknown]
    if g.required_gib is None:
        out.append("GPU capacity without a sizing requirement (annotation gpusizer.io/required-gpu-memory-gib). "
                   "To fix: annotate it with `gpusizer estimate`'s total, or provision it with components.GpuWorkload")
    return out
