"""The catalog cache under faults: kills between writes, a full disk, concurrent refreshes, odd files."""

from __future__ import annotations

import datetime
import errno
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import gpusizer
from gpusizer import cli
from gpusizer.catalog import Catalog, cache, paths
from tests.conftest import REPO, make_offer

NOW = datetime.datetime(2026, 11, 23, 10, 0, tzinfo=datetime.UTC)


def _entry(price: float, provider: str = "aws", at: datetime.datetime = NOW) -> cache.CachedProvider:
    region = "us-east-1" if provider == "aws" else "us-central1"
    offers = (make_offer("g6.xlarge", "L4", 1, 22.35, price, provider=provider, region=region, as_of="2026-11-23"),)
    return cache.CachedProvider(provider, offers, at, {(provider, region, "on-demand", "G"): 64.0})


def _price(root=None, provider: str = "aws") -> float | None:
    entries, problems = cache.read(root)
    assert problems == []
    entry = entries.get(provider)
    return entry.offers[0].on_demand_usd if entry else None


def _litter(root: pathlib.Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(".tmp"))


def test_each_write_is_a_whole_generation_and_keeps_the_other_providers():
    cache.write(_entry(0.5))
    cache.write(_entry(0.6, "gcp"))
    cache.write(_entry(0.7))
    assert (_price(), _price(provider="gcp")) == (0.7, 0.6)
    root = paths.cache_dir()
    gens = sorted(p.name for p in root.iterdir() if p.name.startswith("gen-"))
    assert len(gens) == cache.KEEP_GENERATIONS  # older generations are removed
    assert (root / cache.POINTER).read_text().strip() in gens


@pytest.mark.parametrize("failing_write", [1, 2, 3])  # the first CSV, the second CSV, the manifest
def test_a_full_disk_mid_write_keeps_the_previous_generation(monkeypatch, failing_write):
    cache.write(_entry(0.5))
    cache.write(_entry(0.6, "gcp"))
    calls = {"n": 0}
    real = cache._write_durably

    def full_disk(path, data):
        calls["n"] += 1
        if calls["n"] == failing_write:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(path, data)

    monkeypatch.setattr(cache, "_write_durably", full_disk)
    with pytest.raises(OSError) as e:
        cache.write(_entry(0.9))
    assert e.value.errno == errno.ENOSPC
    assert (_price(), _price(provider="gcp")) == (0.5, 0.6)  # the old cache, whole
    assert _litter(paths.cache_dir()) == []


_KILLER = textwrap.dedent("""
    import datetime, os, signal, sys
    from gpusizer.catalog import cache
    from tests.conftest import make_offer

    point = sys.argv[1]
    real_write, real_replace = cache._write_durably, os.replace

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def write(path, data):
        if point == "after-csv" and path.name == cache.MANIFEST:
            die()
        real_write(path, data)

    def replace(src, dst):
        if point == "before-switch":
            die()
        real_replace(src, dst)

    cache._write_durably, os.replace = write, replace
    at = datetime.datetime(2026, 11, 23, 11, 0, tzinfo=datetime.timezone.utc)
    offers = (make_offer("g6.xlarge", "L4", 1, 22.35, 0.99, as_of="2026-11-23"),)
    cache.write(cache.CachedProvider("aws", offers, at, {}))
""")


@pytest.mark.slow
@pytest.mark.parametrize("point", ["after-csv", "before-switch"])
def test_a_writer_killed_between_writes_leaves_the_previous_generation(point):
    cache.write(_entry(0.5))
    r = subprocess.run(
        [sys.executable, "-c", _KILLER, point], cwd=REPO, env=os.environ, capture_output=True, timeout=120
    )
    assert r.returncode == -9, r.stderr  # SIGKILL: no cleanup ran
    root = paths.cache_dir()
    assert _litter(root)  # the half-written generation is still there ...
    assert _price() == 0.5  # ... but readers never see it
    cache.write(_entry(0.6, "gcp"))  # the next writer removes it
    assert _litter(root) == [] and (_price(), _price(provider="gcp")) == (0.5, 0.6)


def _manifest_path() -> pathlib.Path:
    return cache.generation_dir() / cache.MANIFEST


def _rewrite_manifest(edit) -> None:
    path = _manifest_path()
    doc = json.loads(path.read_text())
    path.write_text(json.dumps(edit(doc)))


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda d: [], "not a JSON object"),
        (lambda d: None, "not a JSON object"),
        (lambda d: {"aws": {**d["aws"], "fetched_at": "2026-11-23T10:00:00"}}, "no timezone"),
        (lambda d: {"aws": {**d["aws"], "errors": 5}}, "errors"),
        (lambda d: {"aws": {**d["aws"], "rows": True}}, "rows"),
        (lambda d: {"aws": {**d["aws"], "sha256": "0" * 64}}, "checksum"),
        (lambda d: {"../../etc/passwd": d["aws"]}, "unknown provider"),
    ],
)
def test_an_odd_manifest_is_reported_in_one_line_and_ignored(edit, words):
    cache.write(_entry(0.77))
    _rewrite_manifest(edit)
    cat = Catalog.load(today=NOW.date())
    warnings = [n for n in cat.notes if n.startswith("WARNING: cache")]
    assert len(warnings) == 1 and words in warnings[0] and "\n" not in warnings[0]
    assert not any(o.on_demand_usd == 0.77 for o in cat.offers)
    assert any(o.provider == "aws" for o in cat.offers)  # the snapshot stands in


@pytest.mark.parametrize("content, words", [(b"\xff{}", "not UTF-8"), (b"{" * 5000, "JSON")])
def test_an_undecodable_manifest_is_reported_and_ignored(content, words):
    cache.write(_entry(0.77))
    _manifest_path().write_bytes(content)
    entries, problems = cache.read()
    assert entries == {} and len(problems) == 1 and words in problems[0]


def test_a_fifo_manifest_does_not_hang_the_reader():
    cache.write(_entry(0.77))
    path = _manifest_path()
    path.unlink()
    os.mkfifo(path)
    entries, problems = cache.read()
    assert entries == {} and "not a regular file" in problems[0]


def test_a_cache_dir_below_a_file_is_no_cache_and_a_file_as_cache_dir_is_one_warning(monkeypatch, tmp_path):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("GPUSIZER_CACHE_DIR", str(tmp_path / "file" / "cache"))  # NotADirectoryError: none written yet
    notes = Catalog.load(today=NOW.date()).notes
    assert sum(n.startswith("WARNING: cache") for n in notes) == 0
    monkeypatch.setenv("GPUSIZER_CACHE_DIR", str(tmp_path / "file"))
    assert len([n for n in Catalog.load(today=NOW.date()).notes if "not a directory" in n]) == 1


def test_a_5000_character_cache_path_plans_with_a_warning_and_refresh_fails_in_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("GPUSIZER_CACHE_DIR", str(tmp_path / ("x" * 5000)))
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: chat\nmodel: {name: llama-3.1-8b}\n")
    assert cli.main(["plan", str(spec)]) == 0
    assert cli.main(["catalog", "refresh", "--provider", "gcp", "--region", "us-central1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cache" in err and "intact" in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["abc", "-1", "1e9", ""])
def test_a_bad_max_price_age_is_a_clear_input_error(monkeypatch, value, tmp_path, capsys):
    monkeypatch.setenv("GPUSIZER_MAX_PRICE_AGE_DAYS", value)
    if value == "":
        assert Catalog.load(today=NOW.date()).offers  # empty means unset
        return
    with pytest.raises(gpusizer.SpecError) as e:
        Catalog.load(today=NOW.date())
    assert "GPUSIZER_MAX_PRICE_AGE_DAYS" in str(e.value) and "To fix" in str(e.value)
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: chat\nmodel: {name: llama-3.1-8b}\n")
    assert cli.main(["plan", str(spec)]) == 2


def test_a_read_only_cache_is_a_one_line_refresh_failure_with_the_old_cache_intact(monkeypatch, capsys):
    cache.write(_entry(0.5))

    def read_only(path, data):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    def fake_gcp(regions, previous, now, session=None):  # the fetch succeeded; only the write fails
        offers = [
            make_offer(
                "g6.xlarge", "L4", 1, 22.35, 0.6, provider="gcp", region="us-central1", as_of=now.date().isoformat()
            )
        ]
        return offers, {}, []

    monkeypatch.setattr(cache, "_write_durably", read_only)
    monkeypatch.setattr("gpusizer.catalog.refresh.gcp.refresh", fake_gcp)
    assert cli.main(["catalog", "refresh", "--provider", "gcp", "--region", "us-central1"]) == 1
    err = capsys.readouterr().err
    assert "Read-only file system" in err and "intact" in err and "internal error" not in err
    assert _price() == 0.5 and _price(provider="gcp") is None


def test_credentials_never_reach_the_manifest_or_the_notes():
    leak = 'aws us-east-1: quotas not read (EndpointConnectionError: "http://admin:hunter2@10.0.0.5:4566/")'
    entry = _entry(0.5)
    cache.write(cache.CachedProvider("aws", entry.offers, NOW, entry.quotas, (leak,)))
    assert "hunter2" not in _manifest_path().read_text()
    # A manifest written by an older gpusizer still holds it: reading redacts too.
    _rewrite_manifest(lambda d: {"aws": {**d["aws"], "errors": [leak]}})
    notes = " ".join(Catalog.load(today=NOW.date()).notes)
    assert "10.0.0.5" in notes and "hunter2" not in notes
