"""gpusizer: size a GPU workload from its spec and pick the cheapest adequate offer.

>>> import gpusizer
>>> spec = gpusizer.load_spec({"name": "chat", "model": {"name": "llama-3.1-8b"}})
>>> spec.task, spec.precision
('inference', 'bf16')

The public names below are imported on first use (PEP 562 module
``__getattr__``), so ``import gpusizer`` and a CLI command load only the
modules they touch: `gpusizer catalog list` never builds the spec models, and
`gpusizer plan` never builds the on-prem Pool model unless pools are given.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the same names for type checkers and editors; at run time __getattr__ imports them
    from gpusizer.base.errors import CatalogError, SizingError, SpecError, UnknownModelError
    from gpusizer.catalog import Catalog, load_catalog
    from gpusizer.catalog.onprem import Pool, load_pools, parse_pools
    from gpusizer.decide.decision import Decision
    from gpusizer.planner import Estimate, estimate, load_spec, plan
    from gpusizer.render.plan_json import document
    from gpusizer.spec import WorkloadSpec

# The one list of public names: name -> the module that defines it.
_EXPORTS = {
    "Catalog": "gpusizer.catalog",
    "load_catalog": "gpusizer.catalog",
    "Pool": "gpusizer.catalog.onprem",
    "load_pools": "gpusizer.catalog.onprem",
    "parse_pools": "gpusizer.catalog.onprem",
    "Decision": "gpusizer.decide.decision",
    "CatalogError": "gpusizer.base.errors",
    "SizingError": "gpusizer.base.errors",
    "SpecError": "gpusizer.base.errors",
    "UnknownModelError": "gpusizer.base.errors",
    "Estimate": "gpusizer.planner",
    "estimate": "gpusizer.planner",
    "load_spec": "gpusizer.planner",
    "plan": "gpusizer.planner",
    "WorkloadSpec": "gpusizer.spec",
    "document": "gpusizer.render.plan_json",
}

__all__ = sorted(_EXPORTS)

# `gpusizer.estimate` names both the function and the subpackage of estimators.
# Load the subpackage now (its __init__ is a docstring), so that importing it
# later does not bind the name, then drop the binding: the name resolves to the
# function through __getattr__, as `from gpusizer.planner import estimate` did.
importlib.import_module("gpusizer.estimate")
del globals()["estimate"]


def __getattr__(name: str):
    """Import the module that defines a public name, cache the name here, return it."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gpusizer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
