"""A local stand-in for the AWS Price List API's GetProducts, shared by the refresh tests.

It answers in the wire format botocore parses (JSON 1.1, PriceList as JSON strings), so the
real client, its retries and gpusizer's parser all run.
"""

from __future__ import annotations

import http.server
import json


def price_list(instance_type: str, usd: float | str, region: str | None = None) -> dict:
    """A GetProducts answer with one on-demand Linux price."""
    attributes = {"instanceType": instance_type, **({"regionCode": region} if region else {})}
    item = {
        "product": {"attributes": attributes},
        "terms": {"OnDemand": {"T": {"priceDimensions": {"D": {"pricePerUnit": {"USD": str(usd)}}}}}},
    }
    return {"PriceList": [json.dumps(item)], "FormatVersion": "aws_v1"}


class Handler(http.server.BaseHTTPRequestHandler):
    """Base handler: subclasses implement do_POST and answer with :meth:`reply`."""

    def reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass
