"""The refresh cache never loses a good price (issue 24): a writer killed after every filesystem step of a
write, each at its own point; a crash that keeps the pointer switch but loses the generation's rename; and a
refresh on a host whose clock is behind another host's.

Kills: the writer runs in a forked child whose file-system calls (mkdir, open, write, fsync, close, rename,
replace, unlink, rmtree, as gpusizer.catalog.cache makes them) are counted; at step N the child ends with
os._exit before the call (no cleanup, no buffered flush: as a SIGKILL). A dry run counts the steps, so every
point from "before the first" to "after the last" is tried. After each, a reader sees the previous generation
or the new one, whole (both providers' prices, the right one for each), and the next writer cleans up.
"""

from __future__ import annotations

import builtins
import datetime
import hashlib
import json
import os
import pathlib
import shutil

import pytest

from gpusizer.catalog import Catalog, cache, paths
from tests.conftest import make_offer

NOW = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
OLD, NEW, GCP = 0.5, 0.99, 0.6


def _entry(price: float, provider: str = "aws", at: datetime.datetime = NOW) -> cache.CachedProvider:
    region = "us-east-1" if provider == "aws" else "us-central1"
    offers = (
        make_offer("g6.xlarge", "L4", 1, 22.35, price, provider=provider, region=region, as_of=at.date().isoformat()),
    )
    return cache.CachedProvider(provider, offers, at, {(provider, region, "on-demand", "G"): 64.0})


def _prices() -> dict[str, float]:
    entries, problems = cache.read()
    return {p: e.offers[0].on_demand_usd for p, e in entries.items()}


class _Steps:
    """Counts the cache module's file-system calls; at step `kill_at` ends the process before making it."""

    def __init__(self, kill_at: int | None):
        self.kill_at, self.n = kill_at, 0

    def step(self):
        self.n += 1
        if self.n == self.kill_at:
            os._exit(17)

    def wrap(self, fn):
        def counted(*args, **kwargs):
            self.step()
            return fn(*args, **kwargs)

        return counted


def _instrument(monkeypatch, steps: _Steps) -> None:
    class _File:
        def __init__(self, f):
            self._f = f

        def write(self, data):
            steps.step()
            return self._f.write(data)

        def flush(self):
            return self._f.flush()

        def fileno(self):
            return self._f.fileno()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            steps.step()
            self._f.close()

    real_open = builtins.open
    monkeypatch.setattr(cache, "open", lambda *a, **k: _File(steps.wrap(real_open)(*a, **k)), raising=False)
    for name in ("fsync", "rename", "replace", "open", "close"):
        monkeypatch.setattr(cache.os, name, steps.wrap(getattr(os, name)))
    monkeypatch.setattr(pathlib.Path, "mkdir", steps.wrap(pathlib.Path.mkdir))
    monkeypatch.setattr(pathlib.Path, "unlink", steps.wrap(pathlib.Path.unlink))
    monkeypatch.setattr(shutil, "rmtree", steps.wrap(shutil.rmtree))


def _write_in_child(kill_at: int | None) -> tuple[int, int]:
    """Fork; the child writes aws at NEW with steps counted (killed at `kill_at`); (exit status, steps made)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read)
        code = 0
        try:
            with pytest.MonkeyPatch.context() as mp:
                steps = _Steps(kill_at)
                _instrument(mp, steps)
                cache.write(_entry(NEW))
            os.write(write, str(steps.n).encode())
        except BaseException:  # noqa: BLE001 - any failure is the child's exit status
            code = 3
        os._exit(code)
    os.close(write)
    made = b""
    while chunk := os.read(read, 64):
        made += chunk
    os.close(read)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), int(made or 0)


@pytest.mark.slow
def test_a_writer_killed_at_every_filesystem_step_leaves_a_whole_generation():
    cache.write(_entry(OLD))
    cache.write(_entry(GCP, "gcp"))
    root = paths.cache_dir()
    saved = root.with_name(root.name + "-saved")
    shutil.copytree(root, saved)

    def restore():  # each point starts from the same two-generation cache
        shutil.rmtree(root)
        shutil.copytree(saved, root)

    code, total = _write_in_child(None)  # the dry run: how many steps a write makes
    assert code == 0 and total >= 12, (code, total)
    seen = set()
    for kill_at in range(1, total + 1):
        restore()
        code, _ = _write_in_child(kill_at)
        assert code == 17, (kill_at, code)
        prices = _prices()
        assert prices.get("gcp") == GCP, (kill_at, prices, cache.read()[1])  # the other provider's price is never lost
        assert prices.get("aws") in (OLD, NEW), (kill_at, prices)  # one whole generation or the other
        seen.add(prices["aws"])
        cache.write(_entry(NEW))  # the next writer succeeds and leaves no litter
        assert _prices() == {"aws": NEW, "gcp": GCP}
        assert not [p.name for p in root.iterdir() if p.name.startswith(".tmp")]
    assert seen == {OLD, NEW}  # kills before and after the pointer switch were both reached


@pytest.mark.parametrize("lost", ["generation removed", "rename lost"])
def test_pointer_switched_but_generation_not_in_place_reads_the_previous_one(lost):
    """A power loss may persist CURRENT's rename and not the generation's: readers use the newest whole one."""
    cache.write(_entry(OLD))
    cache.write(_entry(GCP, "gcp"))
    new = cache.write(_entry(NEW))
    if lost == "generation removed":
        shutil.rmtree(new)
    else:
        new.rename(new.with_name(f".tmp-{new.name}"))
    assert (paths.cache_dir() / cache.POINTER).read_text().strip() == new.name
    assert _prices() == {"aws": OLD, "gcp": GCP}
    cache.write(_entry(NEW))  # and the next refresh builds on it
    assert _prices() == {"aws": NEW, "gcp": GCP}


def _manifest(gen: pathlib.Path) -> dict:
    return json.loads((gen / cache.MANIFEST).read_text())


def test_a_refresh_behind_another_hosts_clock_carries_its_entry_verbatim():
    """Host B's clock is 3 h ahead; host A refreshes aws: gcp's entry and CSV pass through byte for byte,
    its prices stay in use, flagged."""
    ahead = NOW + datetime.timedelta(hours=3)
    cache.write(_entry(OLD))
    b = cache.write(_entry(GCP, "gcp", at=ahead))
    before = _manifest(b)["gcp"], hashlib.sha256((b / "gcp.csv").read_bytes()).hexdigest()
    a = cache.write(_entry(NEW))
    after = _manifest(a)["gcp"], hashlib.sha256((a / "gcp.csv").read_bytes()).hexdigest()
    assert after == before
    assert _prices() == {"aws": NEW, "gcp": GCP}
    cat = Catalog.load()
    assert any(o.provider == "gcp" and o.on_demand_usd == GCP for o in cat.offers)
    flagged = [n for n in cat.notes if n.startswith("gcp: refreshed cache") and "ahead of this machine's clock" in n]
    assert len(flagged) == 1 and "prices kept" in flagged[0]


def test_an_entry_this_version_cannot_read_is_still_carried_over():
    """Verbatim means verbatim: a refresh of aws does not judge gcp's entry, it passes it on."""
    cache.write(_entry(GCP, "gcp"))
    gen = cache.generation_dir()
    doc = _manifest(gen)
    doc["gcp"]["written_by"] = "gpusizer 9.0"  # a field a newer writer may add
    (gen / cache.MANIFEST).write_text(json.dumps(doc))
    new = cache.write(_entry(NEW))
    assert _manifest(new)["gcp"] == doc["gcp"]
    assert (new / "gcp.csv").read_bytes() == (gen / "gcp.csv").read_bytes()
