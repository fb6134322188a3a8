"""Read and write offer CSVs (header = CATALOG_FIELDS); a bad file is refused whole, never half-used."""

from __future__ import annotations

import csv
import functools
import importlib.resources
import io
import pathlib
from collections.abc import Iterable

from gpusizer import errors
from gpusizer.catalog.offer import CATALOG_FIELDS, Offer

PACKAGED = ("aws.csv", "gcp.csv")

_INT = {"gpu_count", "vcpus"}
_FLOAT = {"gpu_fraction", "gpu_memory_gib", "ram_gib", "network_gbps", "local_nvme_gib", "on_demand_usd", "spot_usd"}
_BOOL = {"nvlink", "opt_in"}


def _value(field: str, text: str):
    if text == "":
        return None if field not in _BOOL | {"gpu_fraction", "network_gbps", "local_nvme_gib"} else _DEFAULTS[field]
    if field in _INT:
        return int(text)
    if field in _FLOAT:
        return float(text)
    if field in _BOOL:
        if text not in ("true", "false"):
            raise ValueError(f"{field} must be true or false")
        return text == "true"
    return text


_DEFAULTS = {"nvlink": False, "opt_in": False, "gpu_fraction": 1.0, "network_gbps": 0.0, "local_nvme_gib": 0.0}


def parse_offers(text: str, name: str) -> list[Offer]:
    """Offers from CSV text; raises CatalogError naming `name` and the line of the first bad row."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if tuple(header or ()) != CATALOG_FIELDS:
        raise errors.CatalogError(f"{name}: header does not match CATALOG_FIELDS; rebuild with `python -m gpusizer.catalog.build`")
    offers = []
    for line, row in enumerate(reader, start=2):
        try:
            if len(row) != len(CATALOG_FIELDS):
                raise ValueError(f"{len(row)} columns, expected {len(CATALOG_FIELDS)}")
            offers.append(Offer(**{f: _value(f, v) for f, v in zip(CATALOG_FIELDS, row)}))
        except (ValueError, TypeError) as exc:
            raise errors.CatalogError(f"{name} line {line}: {exc}") from None
    return offers


def format_offers(offers: Iterable[Offer]) -> str:
    """CSV text for `offers` in CATALOG_FIELDS order (floats rounded, booleans lower-case)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CATALOG_FIELDS)
    for o in offers:
        row = []
        for f in CATALOG_FIELDS:
            v = getattr(o, f)
            if v is None:
                row.append("")
            elif isinstance(v, bool):
                row.append("true" if v else "false")
            elif isinstance(v, float):
                row.append(f"{v:.6g}" if f != "on_demand_usd" and f != "spot_usd" else f"{round(v, 5):g}")
            else:
                row.append(str(v))
        w.writerow(row)
    return out.getvalue()


@functools.cache
def _packaged() -> tuple[Offer, ...]:
    root = importlib.resources.files("gpusizer").joinpath("data/catalog")
    offers: list[Offer] = []
    for name in PACKAGED:
        offers += parse_offers(root.joinpath(name).read_text(), f"gpusizer/data/catalog/{name}")
    return tuple(offers)


def load_offers(path: str | pathlib.Path | None = None) -> list[Offer]:
    """The packaged snapshot, or the offers in `path` (a directory of *.csv, or one CSV file)."""
    if path is None:
        return list(_packaged())
    p = pathlib.Path(path)
    files = sorted(p.glob("*.csv")) if p.is_dir() else [p]
    if not files or not all(f.is_file() for f in files):
        raise errors.CatalogError(f"--catalog {p}: no catalog CSV there. To fix: give a directory of CSVs or a CSV file")
    offers: list[Offer] = []
    for f in files:
        offers += parse_offers(f.read_text(), str(f))
    return offers
