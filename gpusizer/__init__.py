"""gpusizer: size a GPU workload from its spec and pick the cheapest adequate offer.

>>> import gpusizer
>>> spec = gpusizer.load_spec({"name": "chat", "model": {"name": "llama-3.1-8b"}})
>>> spec.task, spec.precision
('inference', 'bf16')
"""

from gpusizer.catalog import Catalog, load_catalog
from gpusizer.catalog.onprem import Pool, load_pools, parse_pools
from gpusizer.decision import Decision
from gpusizer.errors import CatalogError, SizingError, SpecError, UnknownModelError
from gpusizer.planner import Estimate, estimate, load_spec, plan
from gpusizer.spec import WorkloadSpec

__all__ = [
    "Catalog",
    "CatalogError",
    "Decision",
    "Estimate",
    "Pool",
    "SizingError",
    "SpecError",
    "UnknownModelError",
    "WorkloadSpec",
    "estimate",
    "load_catalog",
    "load_pools",
    "load_spec",
    "parse_pools",
    "plan",
]
