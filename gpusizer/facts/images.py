"""Machine images per instance family (data/images.yaml): what the components boot, or why not.

One table serves the engine, which rejects an offer whose family has no
supported image (unless the spec names its own), and the components, which
look the image up by the same family.

>>> family("aws", "p6-b200.48xlarge"), family("gcp", "n1-standard-8+nvidia-tesla-t4x2")
('p6-b200', 'n1')
>>> for_type("aws", "g6.xlarge").owner, for_type("aws", "g6f.large").unsupported[:14]
('amazon', 'fractional-GPU')
"""

from __future__ import annotations

import dataclasses
import functools

from gpusizer.base import packaged


@dataclasses.dataclass(frozen=True, slots=True)
class MachineImage:
    """One row: the families it covers and either an image (AWS: owner + name pattern; GCP: image
    path) or the reason there is none."""

    provider: str
    families: tuple[str, ...]
    source: str
    owner: str | None = None
    name: str | None = None
    architecture: str | None = None
    image: str | None = None
    unsupported: str | None = None


@functools.cache
def table() -> tuple[MachineImage, ...]:
    raw = packaged.load("data/images.yaml")
    rows = []
    for provider, items in raw.items():
        for item in items:
            row = MachineImage(provider=provider, **{**item, "families": tuple(item["families"])})
            if (row.unsupported is None) == (row.name is None and row.image is None):
                raise ValueError(f"data/images.yaml {provider} {row.families}: give an image or a reason, not both")
            rows.append(row)
    return tuple(rows)


def family(provider: str, instance_type: str) -> str:
    """AWS: the part before the '.' (p5, p6-b200); GCP: the machine series (a3, g2, n1)."""
    return instance_type.split(".")[0] if provider == "aws" else instance_type.split("-")[0]


def for_type(provider: str, instance_type: str) -> MachineImage | None:
    """The row covering the type's family, or None when the table does not know the family."""
    fam = family(provider, instance_type)
    return next((r for r in table() if r.provider == provider and fam in r.families), None)


def default_for(provider: str, instance_type: str) -> MachineImage:
    """The row for the type's family; a family the table does not list (a custom catalog) gets the
    provider's first image row. Every family of the packaged catalogs is listed (a test checks)."""
    return for_type(provider, instance_type) or next(
        r for r in table() if r.provider == provider and r.unsupported is None
    )


def unsupported(provider: str, instance_type: str) -> str | None:
    """Why the type cannot be provisioned with a default image, or None when it can (or is on-prem)."""
    row = for_type(provider, instance_type)
    return row.unsupported if row is not None else None
