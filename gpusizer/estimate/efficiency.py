"""Achieved fractions of peak per GPU family and weight format, read from data/efficiency.yaml.

Every value there has its source and date. The speed model (gpusizer.estimate.speed)
takes them as its defaults; a calibration file (gpusizer.estimate.calibration)
overrides them per fleet.

>>> round(decode_mbu("L4"), 2), round(decode_mbu("L4", "awq"), 3), training_mfu("unknown-gpu")
(0.85, 0.807, 0.4)
"""

from __future__ import annotations

import functools

from gpusizer.base import packaged

FACTORS = ("decode_mbu", "inference_mfu", "training_mfu")


@functools.cache
def _table() -> dict:
    return packaged.load("data/efficiency.yaml")


def value(gpu: str, factor: str) -> float:
    """`factor` (one of FACTORS) on `gpu`: its row's value, else the default row's."""
    row = _table()["gpus"].get(gpu, {})
    entry = row.get(factor) or _table()["default"][factor]
    return float(entry["value"])


def format_factor(weight_format: str) -> float:
    """Decode bandwidth efficiency of a weight format's kernels relative to 16-bit (1.0 when unknown)."""
    entry = _table()["weight_formats"].get(weight_format)
    return float(entry["value"]) if entry else 1.0


def decode_mbu(gpu: str, weight_format: str = "16bit") -> float:
    """Decode bandwidth efficiency on `gpu` with `weight_format` kernels."""
    return value(gpu, "decode_mbu") * format_factor(weight_format)


def inference_mfu(gpu: str) -> float:
    return value(gpu, "inference_mfu")


def training_mfu(gpu: str) -> float:
    return value(gpu, "training_mfu")
