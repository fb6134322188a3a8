"""`gpusizer ARGS` as the command, measured: exit code, stderr, peak RSS (MiB) and wall time (s).

The command runs as the only child of a small wrapper process, whose RUSAGE_CHILDREN then holds
that child's peak resident set (ru_maxrss, KiB on Linux) and nothing else's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO

_WRAPPER = """
import json, os, resource, subprocess, sys, time
start = time.monotonic()
r = subprocess.run([sys.executable, "-m", "gpusizer.cli", *sys.argv[1:]], stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=float(os.environ["GPUSIZER_TEST_TIMEOUT"]))
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps([r.returncode, r.stderr.decode(errors="replace"), peak, time.monotonic() - start]))
"""


def run(args, timeout: float = 60) -> tuple[int, str, float, float]:
    """(exit code, stderr, peak RSS in MiB, wall seconds) of `gpusizer ARGS`; fails the test past `timeout`."""
    out = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *map(str, args)],
        cwd=REPO,
        capture_output=True,
        timeout=timeout + 10,
        env={**os.environ, "GPUSIZER_TEST_TIMEOUT": str(timeout)},
    )
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    return tuple(json.loads(out.stdout))
