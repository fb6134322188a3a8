"""The local catalog cache written by `gpusizer catalog refresh`: whole generations, switched atomically, under a lock.

Layout ($GPUSIZER_CACHE_DIR, else $XDG_CACHE_HOME/gpusizer, else ~/.cache/gpusizer):
    CURRENT                 the name of the current generation (one line)
    gen-<stamp>-<pid>-<id>/ one generation: <provider>.csv (CATALOG_FIELDS) and manifest.json
                            (per provider: fetched_at, sha256 and rows of its CSV, vCPU quotas,
                            the errors of the refresh that wrote it)
    .lock                   held (flock) by the one writer at a time
    .tmp-*                  a generation being written; left only by a killed writer, removed
                            by the next one

Algorithm of a write (:class:`Transaction`, under the lock): copy the current
generation's other providers (checksums verified) and the new provider's CSV
and manifest into a fresh ``.tmp-`` directory, fsync each file and the
directory, rename it to ``gen-...``, then replace CURRENT by rename (fsynced).
A reader sees the old generation or the new one, never a mix: a kill or a full
disk at any point leaves CURRENT naming the last complete generation (the
"new CSV, old manifest" loss of issue 15 cannot happen). `gpusizer catalog
refresh` holds the lock from reading the previous offers to the switch, so a
second refresh (another region, another process) waits and then merges onto
the first one's result instead of overwriting it. The two newest generations
are kept, so a reader that read CURRENT just before a switch still finds its
files.

Reading trusts nothing: CURRENT, the manifest and each CSV are read as regular
files under a size cap and as strict UTF-8/JSON; the manifest is validated
(known providers only, fetched_at timezone-aware, a sha256, whole row
counts; a fetched_at ahead of this machine's clock is kept and flagged, since
another host's clock may lead this one's); a CSV whose checksum or row count disagrees is
ignored whole. Every problem is one line in the notes of each plan, with
credentials redacted, and the embedded snapshot stands in.

Pre-generation caches (manifest.json and CSVs at the top level) are still read
until the next refresh replaces them.
"""

import contextlib
import dataclasses
import datetime
import hashlib
import json
import os
import pathlib
import re
import secrets
import shutil
import time
from typing import Annotated, Any

import pydantic

from gpusizer.base import errors, fields, inputs, providers, redact
from gpusizer.catalog import paths, store
from gpusizer.catalog.offer import Offer

MANIFEST = "manifest.json"
POINTER = "CURRENT"
LOCK = ".lock"
_GENERATION = re.compile(r"^gen-[0-9]{8}T[0-9]{6}-[0-9]+-[0-9a-f]{6}$")
# How long a refresh waits for another one to finish (a full AWS refresh takes minutes).
LOCK_TIMEOUT_S = 900.0
# fetched_at may lead this machine's clock by this much (NTP-synced clocks agree to well under a second).
CLOCK_SKEW = datetime.timedelta(minutes=5)
KEEP_GENERATIONS = 2


@dataclasses.dataclass(frozen=True)
class CachedProvider:
    """One provider's refreshed offers, when they were fetched, and the quotas seen."""

    provider: str
    offers: tuple[Offer, ...]
    fetched_at: datetime.datetime
    quotas: dict[tuple[str, str, str, str], float]
    errors: tuple[str, ...] = ()


def _aware(value: Any) -> datetime.datetime:
    """An ISO 8601 time with a timezone. One ahead of this machine's clock is kept (another host with a clock
    ahead refreshed it: the prices are good); Catalog.load flags it (:func:`ahead`)."""
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 string")
    stamp = datetime.datetime.fromisoformat(value)
    if stamp.tzinfo is None:
        raise ValueError(f"{inputs.quote(value)} has no timezone")
    return stamp


def ahead(fetched_at: datetime.datetime, now: datetime.datetime | None = None) -> datetime.timedelta | None:
    """How far `fetched_at` leads this machine's clock beyond CLOCK_SKEW, or None: a flag, never a reason to drop."""
    lead = fetched_at - (now or datetime.datetime.now(datetime.UTC))
    return lead if lead > CLOCK_SKEW else None


_Quota = tuple[fields.Label, fields.Label, fields.Label, fields.Label, fields.positive_float(1e9, inclusive=True)]


class _Entry(pydantic.BaseModel):
    """One provider's manifest entry, as written by `Transaction.write`."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", defer_build=True)

    fetched_at: Annotated[datetime.datetime, pydantic.BeforeValidator(_aware)]
    sha256: Annotated[str, pydantic.Field(pattern=r"^[0-9a-f]{64}$")]
    rows: fields.count(10_000_000, lower=0)
    quotas: list[_Quota] = []
    errors: list[Annotated[str, pydantic.Field(max_length=2000)]] = []


def _fsync_dir(path: pathlib.Path) -> None:
    """Make a rename or a new file in `path` durable (POSIX; a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_durably(path: pathlib.Path, data: bytes) -> None:
    with open(path, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _read(path: pathlib.Path, what: str, max_bytes: int = inputs.MAX_INPUT_BYTES) -> str:
    try:
        return inputs.read_text(path, what, max_bytes=max_bytes)
    except errors.SpecError as exc:
        raise errors.CatalogError(str(exc)) from None


def generation_dir(root: pathlib.Path | None = None) -> pathlib.Path | None:
    """The directory of the current generation, or None when nothing was ever refreshed here.

    Raises:
        OSError, CatalogError: the cache directory or its pointer cannot be read or is odd.
    """
    root = root or paths.cache_dir()
    if not root.exists():
        return None
    if not root.is_dir():
        raise errors.CatalogError(f"cache {inputs.quote(str(root))} is not a directory")
    pointer = root / POINTER
    if not pointer.exists():
        return root if (root / MANIFEST).exists() else None  # pre-generation layout
    name = _read(pointer, "cache pointer", 256).strip()
    if not _GENERATION.match(name) or not os.path.lexists(root / name / MANIFEST):
        # A crash (power loss) may keep the pointer's rename and lose the generation's: the newest complete
        # generation stands in (its manifest written last, so a generation with one is whole).
        whole = [p for p in root.iterdir() if _GENERATION.match(p.name) and (p / MANIFEST).is_file()]
        if not whole:
            raise errors.CatalogError(f"cache pointer {pointer} names no generation ({inputs.quote(name)})")
        return max(whole, key=lambda p: ((p / MANIFEST).stat().st_mtime, p.name))
    return root / name


def _manifest(gen: pathlib.Path) -> dict:
    doc = inputs.load_json(_read(gen / MANIFEST, "cache manifest"), f"cache manifest {gen / MANIFEST}")
    if not isinstance(doc, dict):
        raise errors.CatalogError(f"cache manifest {gen / MANIFEST} is not a JSON object (got {inputs.quote(doc)})")
    return doc


def _load_entry(gen: pathlib.Path, provider: str, raw: Any) -> tuple[CachedProvider, str]:
    """One provider's validated entry and its CSV text; CatalogError/ValueError naming what is wrong."""
    if provider not in providers.NAMES:
        raise errors.CatalogError(f"unknown provider {inputs.quote(provider)}")
    try:
        meta = _Entry.model_validate(raw)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "entry"
        raise errors.CatalogError(f"manifest {where}: {first['msg'].removeprefix('Value error, ')}") from None
    path = gen / f"{provider}.csv"
    text = _read(path, "cached catalog", store.MAX_CSV_BYTES)
    if hashlib.sha256(text.encode()).hexdigest() != meta.sha256:
        raise errors.CatalogError("checksum does not match the manifest (partial or edited write)")
    offers = store.parse_offers(text, str(path))
    if len(offers) != meta.rows:
        raise errors.CatalogError(f"{len(offers)} rows, manifest says {meta.rows}")
    if any(o.provider != provider for o in offers):
        raise errors.CatalogError(f"rows of another provider in {provider}.csv")
    quotas = {tuple(q[:4]): q[4] for q in meta.quotas}
    found_errors = tuple(redact.redact(e) for e in meta.errors)
    return CachedProvider(provider, tuple(offers), meta.fetched_at, quotas, found_errors), text


def _entries(root: pathlib.Path) -> tuple[dict[str, tuple[CachedProvider, str]], list[str]]:
    problems: list[str] = []
    fix = "ignored; run `gpusizer catalog refresh`"
    try:
        gen = generation_dir(root)
        if gen is None:
            return {}, []
        manifest = _manifest(gen)
    except (OSError, errors.SizingError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return {}, [redact.redact(f"cache {inputs.quote(str(root))} unreadable ({reason}): {fix}")]
    found = {}
    for provider, raw in sorted(manifest.items()):
        try:
            found[provider] = _load_entry(gen, provider, raw)
        except (OSError, errors.SizingError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            problems.append(redact.redact(f"cache {gen / MANIFEST} entry {inputs.quote(provider)} {fix}: {reason}"))
    return found, problems


def read(root: pathlib.Path | None = None) -> tuple[dict[str, CachedProvider], list[str]]:
    """The usable cached providers, and one line per cache problem (ignored, never half-used)."""
    found, problems = _entries(root or paths.cache_dir())
    return {p: entry for p, (entry, _) in found.items()}, problems


@contextlib.contextmanager
def _locked(root: pathlib.Path, timeout_s: float):
    """Hold an exclusive flock on root/.lock, polling until `timeout_s` (TimeoutError, an OSError)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock; the atomic switch still keeps every generation whole
        yield
        return
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another refresh held {root / LOCK} for {timeout_s:.0f} s") from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # releases the lock


class Transaction:
    """The one writer of a cache directory while it is open (see the module docstring)."""

    def __init__(self, root: pathlib.Path):
        self.root = root

    def write(self, entry: CachedProvider) -> pathlib.Path:
        """Write a new generation: the current one's other providers plus `entry`; switch to it.

        Raises:
            OSError: the file system refused (full disk, read-only, permissions); CURRENT still
                names the previous, complete generation.
        """
        carried = _carried(self.root, entry.provider)
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S")
        name = f"gen-{stamp}-{os.getpid()}-{secrets.token_hex(3)}"
        tmp = self.root / f".tmp-{name}"
        tmp.mkdir()
        try:
            manifest = {provider: raw for provider, (raw, _) in carried.items()}
            files = {provider: data for provider, (_, data) in carried.items()}
            text = store.format_offers(entry.offers)
            files[entry.provider] = text.encode()
            manifest[entry.provider] = _manifest_entry(entry, text)
            for provider, data in sorted(files.items()):
                _write_durably(tmp / f"{provider}.csv", data)
            _write_durably(tmp / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True, allow_nan=False).encode())
            _fsync_dir(tmp)
            os.rename(tmp, self.root / name)
            _fsync_dir(self.root)  # the generation is in place (durably) before the pointer names it
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        pointer_tmp = self.root / f".tmp-{POINTER}-{name}"
        try:
            _write_durably(pointer_tmp, f"{name}\n".encode())
            os.replace(pointer_tmp, self.root / POINTER)
        except BaseException:
            pointer_tmp.unlink(missing_ok=True)
            shutil.rmtree(self.root / name, ignore_errors=True)
            raise
        _fsync_dir(self.root)
        self._clean(keep=name)
        return self.root / name

    def _clean(self, keep: str) -> None:
        """Remove killed writers' .tmp files, generations but the newest two, and a pre-generation layout."""
        gens = sorted((p for p in self.root.iterdir() if _GENERATION.match(p.name)), key=lambda p: p.stat().st_mtime)
        old = [p for p in gens if p.name != keep][: max(0, len(gens) - KEEP_GENERATIONS)]
        for p in self.root.iterdir():
            stale = p.name.startswith(".tmp-") or (p.name.startswith(".") and p.name.endswith(".tmp"))
            legacy = p.name == MANIFEST or (p.suffix == ".csv" and p.stem in providers.NAMES)
            if stale or legacy or p in old:
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)


def _carried(root: pathlib.Path, provider: str) -> dict[str, tuple[Any, bytes]]:
    """The current generation's other providers, verbatim: each manifest entry as written and its CSV's bytes.

    Nothing is re-validated or re-dated on the way (a fetched_at ahead of this machine's clock, an entry
    this version would read differently): a refresh of one provider never changes another's prices. An
    entry whose CSV cannot be read is left behind (readers could not use it either).
    """
    try:
        gen = generation_dir(root)
        manifest = {} if gen is None else _manifest(gen)
    except (OSError, errors.SizingError):
        return {}
    out = {}
    for other, raw in manifest.items():
        if other == provider or other not in providers.NAMES:
            continue
        try:
            out[other] = (raw, _read(gen / f"{other}.csv", "cached catalog", store.MAX_CSV_BYTES).encode())
        except (OSError, errors.SizingError):
            continue
    return out


def _manifest_entry(entry: CachedProvider, text: str) -> dict:
    return {
        "fetched_at": entry.fetched_at.astimezone(datetime.UTC).isoformat(timespec="seconds"),
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "rows": len(entry.offers),
        "quotas": [[*k, v] for k, v in sorted(entry.quotas.items())],
        "errors": [redact.redact(e)[:2000] for e in entry.errors],
    }


@contextlib.contextmanager
def transaction(root: pathlib.Path | None = None, timeout_s: float = LOCK_TIMEOUT_S):
    """Open the cache for writing: create it, take the lock (waiting for another writer), yield a Transaction.

    Raises:
        OSError: the directory cannot be created or locked; TimeoutError after `timeout_s`.
    """
    root = root or paths.cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root, timeout_s):
        yield Transaction(root)


def write(entry: CachedProvider, root: pathlib.Path | None = None) -> pathlib.Path:
    """Write one provider's offers as a new generation (a one-write transaction); returns its directory."""
    with transaction(root) as tx:
        return tx.write(entry)
