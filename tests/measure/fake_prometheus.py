"""A local HTTP server speaking Prometheus' query API, for what a real Prometheus will not do on request:
hostile answers (NaN, ±Inf, negative or malformed values, 512 MB bodies, one byte every few seconds) and
authentication enforced the way managed services enforce it (basic, bearer, AWS SigV4, Google OAuth).

`serve(handler)` runs `handler(request) -> None` for every request on a thread of a local
ThreadingHTTPServer; `request` is the BaseHTTPRequestHandler (its path, headers, and wfile to answer on).
`dcgm_answer(values)` answers the queries gpusizer.measure.dcgm sends, for one L40S GPU with a whole
week of samples, with the statistic values given as Prometheus strings.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import urllib.parse

from gpusizer.measure import dcgm

# The value each statistic has unless a test says otherwise (MiB, %, ratios), as Prometheus writes them.
DEFAULTS = {
    "count_over_time": "2016",
    f"max(max_over_time({dcgm.FB_USED}": "12288",
    f"max(quantile_over_time(0.95, {dcgm.FB_USED}": "12000",
    "last_over_time": "45776",  # used + free: an L40S' 44.7 GiB
    f"avg(avg_over_time({dcgm.GPU_UTIL}": "20",
    f"max(quantile_over_time(0.95, {dcgm.GPU_UTIL}": "35",
}
LABELS = {"__name__": dcgm.FB_USED, "gpu": "0", "UUID": "GPU-1", "Hostname": "node-1", "modelName": "NVIDIA L40S"}


def query_of(request) -> tuple[str, dict[str, str]]:
    """(endpoint, parameters) of a /api/v1/ request."""
    url = urllib.parse.urlsplit(request.path)
    return url.path.rsplit("/", 1)[-1], dict(urllib.parse.parse_qsl(url.query))


def send_json(request, doc, status: int = 200) -> None:
    body = json.dumps(doc).encode()
    request.send_response(status)
    request.send_header("Content-Type", "application/json")
    request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)


def dcgm_answer(values: dict[str, object] | None = None):
    """A handler answering dcgm.observe's queries; `values` maps a substring of the query to the sample value
    (a string as Prometheus writes it, or any JSON to put in `value[1]` as it is; a key "value:EXPR" replaces the
    whole `value` pair)."""
    table = {**(values or {}), **{k: v for k, v in DEFAULTS.items() if k not in (values or {})}}  # the test's first

    def handle(request) -> None:
        endpoint, params = query_of(request)
        expr = params.get("query", "")
        if endpoint == "query_range":
            start, end, step = float(params["start"]), float(params["end"]), float(params["step"])
            n = int(round((end - start) / step)) + 1
            send_json(
                request,
                {
                    "status": "success",
                    "data": {
                        "resultType": "matrix",
                        "result": [{"metric": {}, "values": [[start + i * step, "1"] for i in range(n)]}],
                    },
                },
            )
            return
        for key, value in table.items():
            if key.startswith("value:") and key[6:] in expr:
                result = [{"metric": dict(LABELS), "value": value}]
                break
            if not key.startswith("value:") and key in expr:
                result = [{"metric": dict(LABELS), "value": [float(params.get("time", 0)), value]}]
                break
        else:
            result = []  # no such series (PROF metrics)
        send_json(request, {"status": "success", "data": {"resultType": "vector", "result": result}})

    return handle


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 - http.server's name
        try:
            self.server.app(self)
        except (BrokenPipeError, ConnectionResetError):
            pass

    do_POST = do_GET

    def log_message(self, *args):  # quiet
        pass


@contextlib.contextmanager
def serve(app):
    """A running server calling `app(request)` per request; yields its base URL (http://127.0.0.1:PORT)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.app = app
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
