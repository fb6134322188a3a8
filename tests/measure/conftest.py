"""A real Prometheus (Debian's `prometheus` package) serving backfilled DCGM samples, for `gpusizer observe`.

The fixture writes the OpenMetrics file (tests/measure/dcgm_openmetrics.py),
backfills it with `promtool tsdb create-blocks-from openmetrics`, starts
`prometheus` on 127.0.0.1 at a free port on that TSDB, waits for /-/ready
(at most READY_S), and always stops it. `.ci/run` installs the package; the
tests skip, saying why, only where the binaries are not installed.
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request

import pytest

from tests.conftest import require_tools
from tests.measure import dcgm_openmetrics

READY_S = 60


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def prometheus_url(tmp_path_factory):
    """Base URL of a running Prometheus holding the generated DCGM week."""
    prom, promtool = require_tools("prometheus", "promtool", install="Debian: apt-get install -y prometheus")
    root = tmp_path_factory.mktemp("prometheus")
    om = dcgm_openmetrics.write(root / "dcgm.om")
    data = root / "data"
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", str(om), str(data)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    config = root / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (root / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            prom,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + READY_S
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prometheus did not become ready: {(root / 'prometheus.log').read_text()[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
