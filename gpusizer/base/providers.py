"""The one provider registry: every place that needs the list of providers reads it here.

A provider is one :class:`Provider` record: its name, the modules that build
its catalog snapshot, refresh it from live APIs and provision its choice, and
how its offers count against vCPU quotas. Modules are named as strings and
imported only by the command that needs them, so the engine never imports a
cloud SDK or Pulumi to list providers. The spec's `placement.providers`, the
catalog's offer check, `gpusizer catalog list/refresh`, the snapshot builder,
the optimizer's quota lookup and `gpusizer.components.GpuWorkload` all read
:data:`REGISTRY`; adding a provider is one record here plus one module per
concern (docs/architecture.md).

>>> [p.name for p in REGISTRY]
['aws', 'gcp', 'onprem']
>>> get("aws").quota_class("p5.48xlarge"), get("gcp").quota_class("a2-highgpu-1g")
('P', '')
"""

from __future__ import annotations

import dataclasses
import importlib
import types
from collections.abc import Callable


def _no_quota_class(instance_type: str) -> str:
    """Providers whose quotas gpusizer does not read (yet): every offer in one class, ""."""
    return ""


def _aws_quota_class(instance_type: str) -> str:
    """AWS counts running vCPUs per instance family class: "G" (G and VT types) or "P".

    Source: AWS docs, "Amazon EC2 service quotas" (Running On-Demand G and VT
    instances, L-DB2E81BA; Running On-Demand P instances, L-417A185B), read 2026-07.
    Every GPU type AWS sells is a G or P type; VT (video transcoding) shares the G quota.
    """
    return "P" if instance_type.lower().startswith("p") else "G"


@dataclasses.dataclass(frozen=True, slots=True)
class Provider:
    """One place workloads can run.

    Attributes:
        name: the key used in specs, offers, CSV file names and the CLI ("aws").
        title: how reports and help text name it.
        builder: module with ``build(sources) -> Built`` that makes the snapshot CSV
            from dated public sources, or None where offers come from config (on-prem pools).
        refresher: module with ``refresh(regions, previous, now, session=None) ->
            (offers, quotas, errors)`` that reads the provider's live APIs, or None.
        component: module (under ``components/``) with ``check(plan, args)``,
            ``provision(name, plan, args, opts) -> dict of outputs`` for the Pulumi side, and
            ``SDK_MODULES``: the SDK subpackages provision uses (an SDK loads each on first use,
            all its resources at once), which `gpusizer preview` imports once before it forks
            its two runs (policies/offline.py); tests/policies/test_preload.py checks the list.
        quota_class: instance type -> the vCPU quota class its launches count against.
        owned: capacity the user owns (on-prem pools): sold one way at an amortized
            rate that may be $0, located by site rather than cloud region, and the
            provider a workload "bursts" from when full.
    """

    name: str
    title: str
    builder: str | None
    refresher: str | None
    component: str
    quota_class: Callable[[str], str] = _no_quota_class
    owned: bool = False

    def module(self, concern: str) -> types.ModuleType:
        """Import the module of one concern ("builder", "refresher" or "component").

        Raises:
            LookupError: the provider has no module for that concern.
        """
        name = getattr(self, concern)
        if name is None:
            raise LookupError(f"provider {self.name} has no {concern}")
        return importlib.import_module(name)


REGISTRY: tuple[Provider, ...] = (
    Provider(
        name="aws",
        title="AWS",
        builder="gpusizer.catalog.builder.aws",
        refresher="gpusizer.catalog.refresh.aws",
        component="gpusizer.components.aws",
        quota_class=_aws_quota_class,
    ),
    Provider(
        name="gcp",
        title="Google Cloud",
        builder="gpusizer.catalog.builder.gcp",
        refresher="gpusizer.catalog.refresh.gcp",
        component="gpusizer.components.gcp",
    ),
    Provider(
        name="onprem",
        title="on-prem pool",
        builder=None,
        refresher=None,
        component="gpusizer.components.onprem",
        owned=True,
    ),
)
"""Every provider, in tie-break order (an exact tie in price goes to the earlier one)."""

NAMES: tuple[str, ...] = tuple(p.name for p in REGISTRY)
"""Provider keys in registry order: the spec's and the CLI's choices."""

OWNED: tuple[str, ...] = tuple(p.name for p in REGISTRY if p.owned)
"""Providers whose capacity the user owns (priced from declared pools, not from a price list)."""

_BY_NAME = {p.name: p for p in REGISTRY}


def get(name: str) -> Provider:
    """The provider record for `name`.

    Raises:
        KeyError: `name` is not registered (callers validate names at their boundary first).
    """
    return _BY_NAME[name]


def having(concern: str) -> tuple[Provider, ...]:
    """The providers that have a module for `concern` ("builder" or "refresher"), in registry order.

    >>> [p.name for p in having("refresher")]
    ['aws', 'gcp']
    """
    return tuple(p for p in REGISTRY if getattr(p, concern) is not None)
