"""gpusizer-gpu-evidence (step 3 for evidence): every resource's modelling problems, reported.

A resource rule: it needs nothing but the resource (and the children its
manifests hold), so it runs on every resource at preview and, at `pulumi up`,
before the resource is created.

Reads only the model (policies/model.py): a resource with GPU evidence and no
precise model, evidence its model does not account for, a crash while
modelling it; and, for children the pack expanded from a provider-side
component's manifests (which no resource rule sees), the checks the resource
rules make: a GPU type the pack knows and a sizing requirement. The pack
config's `allow` entries (type and/or name, with a reason) accept evidence
problems, never crashes.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpusizer.policies import manifests, model, sizing
from gpusizer.policies import view as v


def check_resource(resource_type: str, props: v.View, name: str = "", urn: str = "", allow: Iterable = ()) -> list[str]:
    """Messages for one resource and the children its manifests hold (named in each message)."""
    r = sizing.StackResource(resource_type, props, urn or f"urn:pulumi:::{resource_type}::{name or 'resource'}", name)
    return [message for message, _ in check(manifests.expand([r], manifests.base()), allow)]


def check(stack, allow: Iterable = ()) -> list[tuple[str, str | None]]:
    allow = list(allow)
    out: list[tuple[str, str | None]] = []
    for m in model.of_stack(stack):
        out += [
            (msg, m.urn) for kind, msg in m.problems if kind != "evidence" or model.allowed(m.resource, allow) is None
        ]
        if manifests.EXPANDED in m.urn and m.gpu is not None:
            try:
                out += [(f"{m.label}: {msg}", m.urn) for msg in _sized(m)]
            except Exception as exc:  # noqa: BLE001 - a crash names the resource, the other findings stand
                out.append((f"{m.label}: gpusizer could not judge it ({type(exc).__name__}: {exc})", m.urn))
    return out


def _sized(m: model.Model) -> list[str]:
    g = m.gpu
    out = [f"{s.label}: unknown GPU type, cannot verify its GPU memory or price" for s in g.unknown]
    if g.required_gib is None:
        out.append(
            "GPU capacity without a sizing requirement (annotation gpusizer.io/required-gpu-memory-gib). "
            "To fix: annotate it with `gpusizer estimate`'s total, or provision it with gpusizer.components.GpuWorkload"
        )
    return out
