"""AWS throttling is retried by botocore's own retry handler, exercised against a local endpoint.

botocore's Stubber answers before the retry handler runs, so a throttle it
returns is never retried: these tests use a real HTTP endpoint on localhost
that answers the Price List API's GetProducts (awsJson1_1) with
ThrottlingException a set number of times, and count the requests it saw.
"""

from __future__ import annotations

import http.server
import threading

import boto3
import botocore.endpoint
import botocore.exceptions
import pytest

from gpusizer.catalog.refresh import aws
from tests.catalog import pricing_stub


class _ThrottlingPricing(pricing_stub.Handler):
    """GetProducts: ThrottlingException (HTTP 400) for the first `server.throttles` requests, then one price."""

    def do_POST(self):  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.seen += 1
        if self.server.seen <= self.server.throttles:
            self.reply(400, {"__type": "ThrottlingException", "message": "Rate exceeded"})
        else:
            self.reply(200, pricing_stub.price_list("g6.xlarge", "0.8048"))


@pytest.fixture
def pricing_endpoint(monkeypatch):
    """A local GetProducts endpoint, and a session whose clients talk to it (with gpusizer's client config)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ThrottlingPricing)
    server.seen, server.throttles = 0, 0
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    class Session:
        def client(self, service, region_name=None, config=None):
            real = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing")
            return real.client(service, region_name=region_name, config=config, endpoint_url=url)

    # botocore's backoff sleeps between attempts (endpoint.time.sleep); record instead of waiting.
    sleeps: list[float] = []
    monkeypatch.setattr(botocore.endpoint.time, "sleep", sleeps.append)
    server.session, server.sleeps = Session(), sleeps
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def test_clients_use_adaptive_retries_with_ten_attempts(pricing_endpoint):
    client = aws._client(pricing_endpoint.session, "pricing", "us-east-1")
    # botocore stores the total (first try included) as total_max_attempts.
    assert client.meta.config.retries == {"mode": "adaptive", "total_max_attempts": 10}


@pytest.mark.slow  # botocore's retry backoff really sleeps (~2 s)
def test_a_throttled_request_is_retried_by_botocore_and_succeeds(pricing_endpoint):
    pricing_endpoint.throttles = 1
    client = aws._client(pricing_endpoint.session, "pricing", "us-east-1")
    assert aws.on_demand_prices(client, "us-east-1") == {"g6.xlarge": 0.8048}
    assert pricing_endpoint.seen == 2  # one throttled, one retried by botocore
    assert len(pricing_endpoint.sleeps) == 1 and pricing_endpoint.sleeps[0] > 0  # it backed off first


@pytest.mark.slow  # adaptive mode's client-side rate limiter really waits (~15 s) after repeated throttles
def test_throttling_beyond_ten_attempts_gives_up_with_the_throttle(pricing_endpoint):
    pricing_endpoint.throttles = 100
    client = aws._client(pricing_endpoint.session, "pricing", "us-east-1")
    with pytest.raises(botocore.exceptions.ClientError) as exc:
        aws.on_demand_prices(client, "us-east-1")
    assert exc.value.response["Error"]["Code"] == "ThrottlingException"
    assert pricing_endpoint.seen == 10
