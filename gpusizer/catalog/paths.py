"""Where the `gpusizer catalog refresh` cache lives, apart from the cache module.

Reading the catalog asks first whether the directory exists at all; when it
does not (no refresh was ever run), the cache module, its manifest model and
its imports are never loaded.
"""

from __future__ import annotations

import contextlib
import os
import pathlib


def cache_dir() -> pathlib.Path:
    """$GPUSIZER_CACHE_DIR, else $XDG_CACHE_HOME/gpusizer, else ~/.cache/gpusizer."""
    explicit = os.environ.get("GPUSIZER_CACHE_DIR")
    if explicit:
        return pathlib.Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base, "gpusizer")


CACHE_SWITCH = "GPUSIZER_CATALOG_CACHE"
"""Set to "off" where the refresh cache must not be read: the policy pack, whose judged programs can write it
(policies/__main__.py, and `gpusizer preview` before it runs a program)."""


@contextlib.contextmanager
def packaged_only():
    """Within it, this process (and the children it forks) reads the packaged snapshot, never the cache."""
    before = os.environ.get(CACHE_SWITCH)
    os.environ[CACHE_SWITCH] = "off"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CACHE_SWITCH, None)
        else:
            os.environ[CACHE_SWITCH] = before


def cache_enabled() -> bool:
    """False where the refresh cache must not be read (CACHE_SWITCH is "off")."""
    return os.environ.get(CACHE_SWITCH, "").strip().lower() != "off"


def cache_missing() -> bool:
    """True when the cache directory does not exist (any other stat failure: False, so the reader reports it)."""
    try:
        os.stat(cache_dir())
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False
