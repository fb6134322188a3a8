"""The engine's own data files, gpusizer/data/*.yaml, read through their JSON twins.

The YAML files are the source of truth: edited by hand, every figure with its
source in a comment. Beside each, ``<name>.json`` (its twin) holds the same
data and the sha256 of the YAML bytes it was made from. A start reads the twin:
json.loads takes ~0.2 ms for models.yaml where PyYAML takes ~10 ms even with
libyaml (CSafeLoader scans in C but builds every node in Python; this machine,
2026-11-25). A twin is used only while its digest equals the digest of the YAML
bytes now; otherwise the YAML is parsed, so a stale or damaged twin costs time,
never a wrong figure.

After editing a data file: ``python -m gpusizer.base.packaged`` rewrites the twins
(``--check`` only reports stale ones, exit 1); a test fails while one is stale.
The YAML is read as every YAML gpusizer reads (gpusizer.base.inputs.load_yaml: a
key given twice is an error, a date-like plain scalar is its text), and must
hold only what JSON carries exactly (gpusizer.base.inputs.not_json).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import sys
from importlib.resources.abc import Traversable
from typing import Any

FILES = ("data/efficiency.yaml", "data/gpus.yaml", "data/images.yaml", "data/models.yaml")
"""Every packaged YAML file (paths under gpusizer/); tests check the list against data/."""


def _twin_name(relpath: str) -> str:
    return relpath.removesuffix(".yaml") + ".json"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _parse(text: str, relpath: str) -> Any:
    """The YAML as every YAML gpusizer reads is parsed (gpusizer.base.inputs.load_yaml: a duplicate key is
    an error, a date-like plain scalar stays text)."""
    from gpusizer.base import inputs

    return inputs.load_yaml(text, f"gpusizer/{relpath}")


def twin_text(yaml_bytes: bytes, relpath: str) -> str:
    """The twin of a data file with these bytes; ValueError naming the value when JSON cannot carry it."""
    from gpusizer.base import inputs

    data = _parse(yaml_bytes.decode("utf-8"), relpath)
    misfit = inputs.not_json(data, relpath)
    if misfit:
        raise ValueError(f"{misfit.place}: {misfit.what}, which JSON does not carry. To fix: {misfit.fix}")
    return (
        json.dumps(
            {"yaml_sha256": _digest(yaml_bytes), "data": data},
            ensure_ascii=False,
            allow_nan=False,
            separators=(",", ":"),
        )
        + "\n"
    )


def load(relpath: str, root: Traversable | None = None) -> Any:
    """The data in ``<root>/<relpath>`` (one of FILES; root: the gpusizer package, or a Path): from its twin
    when current, else parsed from the YAML."""
    root = root or importlib.resources.files("gpusizer")
    raw = root.joinpath(relpath).read_bytes()
    try:
        twin = json.loads(root.joinpath(_twin_name(relpath)).read_bytes())
        if isinstance(twin, dict) and twin.get("yaml_sha256") == _digest(raw) and "data" in twin:
            return twin["data"]
    except (OSError, ValueError):
        pass
    return _parse(raw.decode("utf-8"), relpath)


def main(argv: list[str] | None = None) -> int:
    """Rewrite every stale twin (with --check: list them, exit 1); exit 0 when all are current."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gpusizer.base.packaged", description=main.__doc__)
    parser.add_argument("--check", action="store_true", help="only list stale twins; exit 1 when there are any")
    check = parser.parse_args(argv).check
    root = importlib.resources.files("gpusizer")
    stale = []
    for relpath in FILES:
        text = twin_text(root.joinpath(relpath).read_bytes(), relpath)
        twin = root.joinpath(_twin_name(relpath))
        current = twin.is_file() and twin.read_text(encoding="utf-8") == text
        if not current:
            stale.append(_twin_name(relpath))
            if not check:
                with open(str(twin), "w", encoding="utf-8") as f:
                    f.write(text)
    verb = "stale" if check else "rewrote"
    print(f"{verb}: {', '.join(stale)}" if stale else "every twin is current")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
