"""Unit constants. GiB (2**30 bytes) for memory, GB (1e9) only where a vendor says GB."""

GIB = 2**30
"""Bytes in a GiB. GPU memory is always reported in GiB, as the driver shows it."""

GB = 10**9
"""Bytes in a (vendor, decimal) GB; bandwidths in GB/s use this too."""

MIB_PER_GIB = 1024
"""MiB in a GiB: drivers (nvidia-smi) and cloud APIs report memory in MiB."""

TERA = 10**12
"""FLOP/s in a TFLOP/s; datasheet TFLOPS are decimal."""

BILLION = 10**9
"""Parameters in a billion (`params_b`)."""

HOURS_PER_YEAR = 8760


def gib(n_bytes: float) -> float:
    """Bytes to GiB."""
    return n_bytes / GIB
