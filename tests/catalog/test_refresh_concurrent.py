"""Two `gpusizer catalog refresh` processes at once, against a local moto server and a Pricing API stub.

moto implements EC2 but not the Price List API, so a small HTTP server answers
GetProducts (JSON 1.1 protocol, as botocore sends it) with a price per region
that no snapshot has, after a delay that makes the two refreshes overlap.
"""

from __future__ import annotations

import datetime
import http.server
import json
import os
import subprocess
import sys
import threading
import time

import pytest
from moto.server import ThreadedMotoServer

from gpusizer.catalog import cache
from tests.catalog import pricing_stub
from tests.catalog.test_refresh_cli import _free_port
from tests.conftest import REPO

PRICES = {"us-east-1": 0.7001, "us-west-2": 0.7002}  # $/h of g6.xlarge: prices no snapshot has


class _Pricing(pricing_stub.Handler):
    def do_POST(self):  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        region = next(f["Value"] for f in body["Filters"] if f["Field"] == "regionCode")
        time.sleep(1.5)  # both refreshes are now mid-flight together
        self.reply(200, pricing_stub.price_list("g6.xlarge", PRICES[region], region))


@pytest.fixture
def endpoints():
    port = _free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    moto.start()
    pricing = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pricing)
    thread = threading.Thread(target=pricing.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}", f"http://127.0.0.1:{pricing.server_address[1]}"
    pricing.shutdown()
    pricing.server_close()
    moto.stop()


@pytest.mark.slow
def test_concurrent_refreshes_of_two_regions_keep_both(endpoints):
    moto_url, pricing_url = endpoints
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": moto_url,
        "AWS_ENDPOINT_URL_PRICING": pricing_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "gpusizer.cli", "catalog", "refresh", "--provider", "aws", "--region", region],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for region in PRICES
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    for out, err in outputs:
        assert "Traceback" not in out + err and "internal error" not in out + err
    entries, problems = cache.read()
    assert problems == []
    today = datetime.date.today().isoformat()
    for region, price in PRICES.items():
        g6 = [o for o in entries["aws"].offers if o.region == region and o.instance_type == "g6.xlarge"]
        assert g6 and all(o.on_demand_usd == price and o.as_of == today for o in g6), region
