"""Where the `gpusizer catalog refresh` cache lives, apart from the cache module.

Reading the catalog asks first whether the directory exists at all; when it
does not (no refresh was ever run), the cache module, its manifest model and
its imports are never loaded.
"""

from __future__ import annotations

import os
import pathlib


def cache_dir() -> pathlib.Path:
    """$GPUSIZER_CACHE_DIR, else $XDG_CACHE_HOME/gpusizer, else ~/.cache/gpusizer."""
    explicit = os.environ.get("GPUSIZER_CACHE_DIR")
    if explicit:
        return pathlib.Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base, "gpusizer")


def cache_missing() -> bool:
    """True when the cache directory does not exist (any other stat failure: False, so the reader reports it)."""
    try:
        os.stat(cache_dir())
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False
