"""Per-GPU efficiency factors measured on real runs, replacing the speed model's defaults.

A calibration file (written by `gpusizer calibrate`, YAML) maps canonical GPU
names to the achieved fractions of peak the speed model uses
(gpusizer.estimate.speed): ``decode_mbu`` (HBM bandwidth while decoding),
``inference_mfu`` (tensor FLOPS in prefill) and ``training_mfu``, each with the
runs it was fitted from. A spec picks one with ``sizing.calibration: FILE``
(relative to the spec file), else the ``GPUSIZER_CALIBRATION`` environment
variable; GPUs or factors the file lacks keep the GPU's row of data/efficiency.yaml. Plans name the
file and the calibrated figures.

>>> cal = parse({"gpus": {"L40S": {"decode_mbu": 0.7, "sources": ["run.json"]}}}, "cal.yaml")
>>> cal.efficiency("L40S"), cal.efficiency("H100")
((0.7, 0.5, 0.4), (0.75, 0.5, 0.42))
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import os
import pathlib

from gpusizer.base import errors, inputs
from gpusizer.estimate import efficiency
from gpusizer.facts import hardware

ENV = "GPUSIZER_CALIBRATION"
FACTORS = efficiency.FACTORS
VERSION = 1


@dataclasses.dataclass(frozen=True)
class Calibration:
    """Fitted factors per GPU, and where each came from.

    Attributes:
        path: the file it was read from (named in plans).
        gpus: GPU -> factor name -> value (only the fitted ones).
        sources: GPU -> one line per run it was fitted from.
    """

    path: str
    gpus: dict[str, dict[str, float]]
    sources: dict[str, tuple[str, ...]]

    def efficiency(self, gpu: str) -> tuple[float, float, float]:
        """(decode MBU, inference MFU, training MFU) for `gpu`: calibrated where fitted, else the defaults."""
        got = self.gpus.get(gpu, {})
        return tuple(got.get(k, efficiency.value(gpu, k)) for k in FACTORS)

    def describe(self, gpu: str) -> dict | None:
        """What a plan says about `gpu`'s speed figures, or None when it is not calibrated."""
        if gpu not in self.gpus:
            return None
        return {
            "file": self.path,
            "gpu": gpu,
            "factors": dict(self.gpus[gpu]),
            "defaults": {k: efficiency.value(gpu, k) for k in self.gpus[gpu]},
            "from": list(self.sources.get(gpu, ())),
        }

    def notes(self) -> tuple[str, ...]:
        """One line per calibrated GPU, for a plan's notes."""
        out = []
        for gpu, factors in sorted(self.gpus.items()):
            figures = ", ".join(f"{k} {v:.3f} (default {efficiency.value(gpu, k)})" for k, v in factors.items())
            out.append(
                f"calibrated from {self.path}: {gpu} {figures}; fitted on {len(self.sources.get(gpu, ()))} run(s)"
            )
        return tuple(out)

    def to_dict(self) -> dict:
        return {
            "version": VERSION,
            "gpus": {g: {**f, "sources": list(self.sources.get(g, ()))} for g, f in sorted(self.gpus.items())},
        }


def default(gpu: str, factor: str) -> float:
    """The figure a calibrated `factor` replaces on `gpu`: its row of data/efficiency.yaml."""
    return efficiency.value(gpu, factor)


def parse(doc, path: str) -> Calibration:
    """Validate a calibration document (a mapping with `gpus:`).

    Raises:
        SpecError: naming the file and the entry at fault.
    """
    field = "sizing.calibration"
    if not isinstance(doc, dict) or not isinstance(doc.get("gpus"), dict):
        raise errors.SpecError(
            f"{field}: {path} is not a calibration file (no 'gpus:' mapping). "
            "To fix: write it with `gpusizer calibrate RESULT.json --out FILE`",
            field,
        )
    gpus, sources = {}, {}
    for name, entry in doc["gpus"].items():
        gpu = hardware.canonical_gpu(str(name))
        if gpu is None or not isinstance(entry, dict):
            raise errors.SpecError(
                f"{field}: {path}: unknown GPU {name!r} or not a mapping. "
                f"To fix: use one of {', '.join(hardware.load_gpus())}",
                field,
            )
        factors = {}
        for key, value in entry.items():
            if key == "sources":
                continue
            if key not in FACTORS or not isinstance(value, (int, float)) or not 0 < value <= 1:
                raise errors.SpecError(
                    f"{field}: {path}: {name}.{key} = {value!r}. "
                    f"To fix: use {', '.join(FACTORS)} with a fraction in (0, 1]",
                    field,
                )
            factors[key] = float(value)
        gpus[gpu] = factors
        sources[gpu] = tuple(str(s) for s in entry.get("sources") or ())
    return Calibration(path, gpus, sources)


def load(path: str | os.PathLike) -> Calibration:
    """Read a calibration file (YAML or JSON)."""
    try:
        doc = inputs.read_yaml(path, "calibration file")
    except errors.SpecError as exc:
        raise errors.SpecError(f"sizing.calibration: {exc}", "sizing.calibration") from None
    return parse(doc, str(path))


# Off inside `recorded_only()`: the policy pack judges a workload by the calibration its spec records (trusted
# or within a band), never by one the process environment happens to set.
_ENV_READ: contextvars.ContextVar[bool] = contextvars.ContextVar("gpusizer_calibration_env", default=True)


@contextlib.contextmanager
def recorded_only():
    """Within it, a spec without `sizing.calibration` uses none, whatever $GPUSIZER_CALIBRATION says."""
    token = _ENV_READ.set(False)
    try:
        yield
    finally:
        _ENV_READ.reset(token)


def chosen(path: str | None) -> str | None:
    """The calibration file a spec uses: its `sizing.calibration`, else $GPUSIZER_CALIBRATION (outside
    `recorded_only`), else none."""
    return path or (os.environ.get(ENV) if _ENV_READ.get() else None) or None


def fingerprint(path: str | None) -> tuple[str, str] | None:
    """(the file, sha256 of its bytes) of the calibration a spec uses, or None: what a cached decision
    depends on besides the spec (a file rewritten between two plans is another calibration)."""
    found = chosen(path)
    if not found:
        return None
    try:
        return found, hashlib.sha256(pathlib.Path(found).read_bytes()).hexdigest()
    except OSError:
        return found, ""


def for_spec(path: str | None) -> Calibration | None:
    """The calibration a spec uses: its `sizing.calibration`, else $GPUSIZER_CALIBRATION, else none."""
    found = chosen(path)
    return load(pathlib.Path(found)) if found else None
