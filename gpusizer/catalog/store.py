"""Read and write offer CSVs whose header is exactly CATALOG_FIELDS.

A catalog file is all or nothing: the first bad row raises CatalogError naming
the file and line, and no offer from that load is returned (a corrupt cache is
reported and ignored by the caller, never half-used).
"""

from __future__ import annotations

import csv
import datetime
import functools
import importlib.resources
import io
import math
import pathlib
from collections.abc import Iterable

from gpusizer.base import errors, inputs
from gpusizer.catalog.offer import CATALOG_FIELDS, Offer
from gpusizer.facts import hardware

# A refreshed CSV of every AWS and GCP region is a few MB (the packaged snapshot: 250 KB).
MAX_CSV_BYTES = 64 << 20

_INT = frozenset({"gpu_count", "vcpus"})
_FLOAT = frozenset(
    {"gpu_fraction", "gpu_memory_gib", "ram_gib", "network_gbps", "local_nvme_gib", "on_demand_usd", "spot_usd"}
)
_BOOL = frozenset({"nvlink", "opt_in"})
# Empty cell -> None for these; -> the Offer default for _DEFAULTS; anything else must be filled.
_NULLABLE = frozenset({"zone", "fabric", "on_demand_usd", "spot_usd", "spot_as_of"})
_DEFAULTS = {"gpu_fraction": 1.0, "nvlink": False, "network_gbps": 0.0, "local_nvme_gib": 0.0, "opt_in": False}
# Decimal places written per column: prices keep the source's precision (AWS
# prints up to 6 places, 21.957642), memory is meaningful to 0.01 GiB.
_PLACES = {
    "on_demand_usd": 6,
    "spot_usd": 6,
    "gpu_memory_gib": 2,
    "ram_gib": 2,
    "gpu_fraction": 6,
    "network_gbps": 3,
    "local_nvme_gib": 1,
}


def _value(field: str, text: str):
    if text == "":
        if field in _NULLABLE:
            return None
        if field in _DEFAULTS:
            return _DEFAULTS[field]
        raise ValueError(f"{field} is empty")
    if field in _INT:
        return int(text)
    if field in _FLOAT:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"{field} is {text}")
        return value
    if field in _BOOL:
        if text not in ("true", "false"):
            raise ValueError(f"{field} must be true or false, not {text!r}")
        return text == "true"
    if field in ("as_of", "spot_as_of"):
        datetime.date.fromisoformat(text)  # raises ValueError on a non-ISO date
    return text


def _offer(row: list[str]) -> Offer:
    if len(row) != len(CATALOG_FIELDS):
        raise ValueError(f"{len(row)} columns, expected {len(CATALOG_FIELDS)}")
    values = {f: _value(f, v) for f, v in zip(CATALOG_FIELDS, row)}
    if values["gpu"] not in hardware.load_gpus():
        raise ValueError(f"GPU {values['gpu']!r} is not a canonical name in gpusizer/data/gpus.yaml")
    if values["on_demand_usd"] is None and values["spot_usd"] is None:
        raise ValueError("no on-demand or spot price")
    return Offer(**values)


def parse_offers(text: str, name: str) -> list[Offer]:
    """Offers from CSV text.

    Args:
        text: the file's content; the first line must equal CATALOG_FIELDS.
        name: what to call the file in error messages.

    Returns:
        The offers, in file order.

    Raises:
        CatalogError: on a wrong header or the first bad row, naming `name`
            and the 1-based line.
    """
    reader = csv.reader(io.StringIO(text))
    header = tuple(next(reader, None) or ())
    # A file written before a nullable column was appended (a cache refreshed before spot_as_of, 2026-11-25)
    # reads with the missing columns empty.
    missing = CATALOG_FIELDS[len(header) :]
    if not header or header != CATALOG_FIELDS[: len(header)] or not set(missing) <= _NULLABLE:
        raise errors.CatalogError(
            f"{name} line 1: header does not match CATALOG_FIELDS. "
            "To fix: rebuild with `python -m gpusizer.catalog.builder` or use the columns of gpusizer.catalog.offer"
        )
    offers = []
    for row in reader:
        try:
            offers.append(_offer(row + [""] * len(missing)))
        except (ValueError, TypeError) as exc:
            raise errors.CatalogError(f"{name} line {reader.line_num}: {exc}") from None
    return offers


def _cell(field: str, value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        value = round(value, _PLACES.get(field, 6))
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def format_offers(offers: Iterable[Offer]) -> str:
    """CSV text for `offers` in CATALOG_FIELDS order, "\\n" line ends; parse_offers reads it back.

    Floats are rounded per column (_PLACES) and written in their shortest form,
    integers without ".0", booleans as true/false, None as an empty cell, so the
    same offers always give the same bytes.
    """
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CATALOG_FIELDS)
    for o in offers:
        writer.writerow([_cell(f, getattr(o, f)) for f in CATALOG_FIELDS])
    return out.getvalue()


def check_unique(offers: list[Offer], name: str) -> None:
    """Raise CatalogError when one (provider, region, zone, instance type) appears twice."""
    seen: set[tuple] = set()
    for o in offers:
        key = (o.provider, o.region, o.zone, o.instance_type)
        if key in seen:
            raise errors.CatalogError(f"{name}: {o.instance_type} appears twice in {o.zone or o.region} ({o.provider})")
        seen.add(key)


@functools.cache
def _packaged() -> tuple[Offer, ...]:
    """The packaged CSVs' offers: from their compact form when it matches them byte for byte, else parsed."""
    from gpusizer.catalog import compact

    root = importlib.resources.files("gpusizer").joinpath("data/catalog")
    sources = compact.csv_sources(root)
    offers = compact.read(root.joinpath(compact.NAME), sources)
    if offers is None:
        offers = parse_files(sources, "gpusizer/data/catalog")
    return tuple(offers)


def parse_files(sources, where: str) -> list[Offer]:
    """The offers of (CSV name, bytes) pairs in order, each file strict UTF-8, checked unique across all.

    Raises:
        CatalogError: a bad header or row (naming `where`/name and the line), or one offer twice.
    """
    offers: list[Offer] = []
    for name, data in sources:
        offers += parse_offers(data.decode("utf-8"), f"{where}/{name}")
    check_unique(offers, where)
    return offers


def load_offers(path: str | pathlib.Path | None = None) -> list[Offer]:
    """The packaged snapshot, or the offers in `path`.

    Args:
        path: None for the snapshot packaged in gpusizer/data/catalog (parsed
            once per process), a directory (every *.csv in it, by name), or
            one CSV file.

    Returns:
        A new list of offers.

    Raises:
        CatalogError: the path holds no CSV, a file has a wrong header or a bad
            row (message names file and line), or one offer appears twice.
    """
    if path is None:
        return list(_packaged())
    p = pathlib.Path(path)
    files = sorted(p.glob("*.csv")) if p.is_dir() else [p]
    if not files or not all(f.is_file() for f in files):
        raise errors.CatalogError(
            f"{p}: no catalog CSV there. To fix: give a directory of <provider>.csv files or one CSV file"
        )
    offers: list[Offer] = []
    for f in files:  # a user's file: regular, size-capped, strict UTF-8 (gpusizer.base.inputs)
        offers += parse_offers(inputs.read_text(f, "catalog file", "--catalog", max_bytes=MAX_CSV_BYTES), str(f))
    check_unique(offers, str(p))
    return offers
