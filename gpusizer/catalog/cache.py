"""The local catalog cache written by `gpusizer catalog refresh`: atomic, checksummed, per provider.

Layout ($GPUSIZER_CACHE_DIR, else $XDG_CACHE_HOME/gpusizer, else ~/.cache/gpusizer):
    <provider>.csv      offers in the CATALOG_FIELDS format
    manifest.json       per provider: fetched_at (UTC ISO), sha256 and row count of the
                        CSV, vCPU quotas, and the errors of the refresh that wrote it

Every file is written to a temporary name and renamed into place, so a reader
sees the old or the new file, never half of one. A CSV whose checksum or row
count disagrees with the manifest, or that does not parse, is ignored whole
and reported.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import pathlib
import tempfile

from gpusizer import errors
from gpusizer.catalog import store
from gpusizer.catalog.offer import Offer

MANIFEST = "manifest.json"


def cache_dir() -> pathlib.Path:
    explicit = os.environ.get("GPUSIZER_CACHE_DIR")
    if explicit:
        return pathlib.Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base, "gpusizer")


@dataclasses.dataclass(frozen=True)
class CachedProvider:
    """One provider's refreshed offers, when they were fetched, and the quotas seen."""

    provider: str
    offers: tuple[Offer, ...]
    fetched_at: datetime.datetime
    quotas: dict[tuple[str, str, str, str], float]
    errors: tuple[str, ...] = ()


def _atomic_write(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise


def _read_manifest(root: pathlib.Path) -> dict:
    path = root / MANIFEST
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text())
        return doc if isinstance(doc, dict) else {}
    except (OSError, json.JSONDecodeError):
        return {"__corrupt__": True}


def write(entry: CachedProvider, root: pathlib.Path | None = None) -> pathlib.Path:
    """Write one provider's offers, then its manifest entry (both atomically)."""
    root = root or cache_dir()
    text = store.format_offers(entry.offers)
    _atomic_write(root / f"{entry.provider}.csv", text)
    manifest = _read_manifest(root)
    manifest.pop("__corrupt__", None)
    manifest[entry.provider] = {
        "fetched_at": entry.fetched_at.astimezone(datetime.timezone.utc).isoformat(timespec="seconds"),
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "rows": len(entry.offers),
        "quotas": [[*k, v] for k, v in sorted(entry.quotas.items())],
        "errors": list(entry.errors),
    }
    _atomic_write(root / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))
    return root


def read(root: pathlib.Path | None = None) -> tuple[dict[str, CachedProvider], list[str]]:
    """The usable cached providers, and one line per cache problem (ignored, never half-used)."""
    root = root or cache_dir()
    manifest = _read_manifest(root)
    if manifest.get("__corrupt__"):
        return {}, [f"cache {root / MANIFEST} is corrupt: ignored; run `gpusizer catalog refresh`"]
    found: dict[str, CachedProvider] = {}
    problems: list[str] = []
    for provider, meta in sorted(manifest.items()):
        path = root / f"{provider}.csv"
        try:
            text = path.read_text()
            if hashlib.sha256(text.encode()).hexdigest() != meta["sha256"]:
                raise errors.CatalogError("checksum does not match the manifest (partial or edited write)")
            offers = store.parse_offers(text, str(path))
            if len(offers) != meta["rows"]:
                raise errors.CatalogError(f"{len(offers)} rows, manifest says {meta['rows']}")
            fetched = datetime.datetime.fromisoformat(meta["fetched_at"])
            quotas = {tuple(q[:4]): float(q[4]) for q in meta.get("quotas", [])}
        except (OSError, KeyError, ValueError, TypeError, IndexError) as exc:
            problems.append(f"cache {path} ignored: {exc}")
            continue
        found[provider] = CachedProvider(provider, tuple(offers), fetched, quotas, tuple(meta.get("errors", ())))
    return found, problems
