"""A small client for Prometheus's HTTP API (instant and range queries), on the standard library.

Endpoints and response format: Prometheus "HTTP API" docs
(https://prometheus.io/docs/prometheus/latest/querying/api/, read 2026-11-23):
``GET /api/v1/query?query=&time=`` and ``GET /api/v1/query_range?query=&start=&end=&step=``
answer ``{"status": "success"|"error", "data": {"resultType", "result"}, "errorType", "error"}``.
Query parameters are URL-encoded with urllib.parse.urlencode, and every label
value put into PromQL goes through :func:`selector`, which escapes it as a
PromQL string literal ("PromQL follows the same escaping rules as Go",
Prometheus "Querying basics", String literals). Every failure becomes a
:class:`PrometheusError` with one line a person can act on.
"""

from __future__ import annotations

import datetime
import json
import re
import socket
import urllib.error
import urllib.parse
import urllib.request

from gpusizer.base import errors

TIMEOUT_S = 30
# Prometheus durations: a number and a unit, units from ms to years
# ("Querying basics", Time durations; a day is 24 h, a week 7 d, a year 365 d).
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_DURATION = re.compile(r"^(\d+)(ms|s|m|h|d|w|y)$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class PrometheusError(errors.SizingError):
    """Prometheus could not be reached or did not answer a query; the message is one line."""


def parse_duration(text: str, field: str = "--window") -> float:
    """Seconds in a Prometheus duration such as "7d", "36h" or "90m".

    >>> parse_duration("7d"), parse_duration("90m")
    (604800, 5400)

    Raises:
        SpecError: when `text` is not one number and unit.
    """
    m = _DURATION.match(text.strip())
    if not m or int(m.group(1)) == 0:
        raise errors.SpecError(f"{field}: {text!r} is not a duration. To fix: give a number and a unit, e.g. 7d, 36h, 90m", field)
    return int(m.group(1)) * _UNIT_S[m.group(2)]


def parse_time(text: str | None, field: str = "--end") -> datetime.datetime:
    """An RFC 3339 timestamp (UTC when no offset is given), or now when `text` is None."""
    if text is None:
        return datetime.datetime.now(datetime.timezone.utc)
    try:
        t = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise errors.SpecError(f"{field}: {text!r} is not an RFC 3339 time. To fix: e.g. 2026-11-23T12:00:00Z", field) from None
    return t if t.tzinfo else t.replace(tzinfo=datetime.timezone.utc)


def escape_label_value(value: str) -> str:
    """`value` as a double-quoted PromQL string literal (Go escaping: backslash, quote, newline).

    >>> escape_label_value('a"b\\\\c')
    '"a\\\\"b\\\\\\\\c"'
    """
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def selector(metric: str, **labels: str) -> str:
    """A series selector with equality matchers, every value escaped.

    >>> selector("DCGM_FI_DEV_FB_USED", gpusizer_workload="chat")
    'DCGM_FI_DEV_FB_USED{gpusizer_workload="chat"}'
    """
    for name in (metric, *labels):
        if not _LABEL_NAME.match(name):
            raise errors.SpecError(f"{name!r} is not a Prometheus metric or label name. To fix: use [a-zA-Z_][a-zA-Z0-9_]*")
    return metric + "{" + ",".join(f"{k}={escape_label_value(v)}" for k, v in labels.items()) + "}"


class Client:
    """Prometheus at `url` (scheme, host, port and an optional path prefix, e.g. http://prom:9090)."""

    def __init__(self, url: str, timeout_s: float = TIMEOUT_S):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise PrometheusError(f"--prometheus: {url!r} is not an http(s) URL. To fix: e.g. http://localhost:9090")
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def query(self, expr: str, at: datetime.datetime) -> list[dict]:
        """Evaluate `expr` at time `at`; the result list (vector or matrix elements)."""
        return self._get("query", {"query": expr, "time": f"{at.timestamp():.3f}"})

    def query_range(self, expr: str, start: datetime.datetime, end: datetime.datetime, step_s: float) -> list[dict]:
        """Evaluate `expr` every `step_s` seconds from `start` to `end`; a matrix."""
        params = {"query": expr, "start": f"{start.timestamp():.3f}", "end": f"{end.timestamp():.3f}", "step": f"{step_s:g}"}
        return self._get("query_range", params)

    def _get(self, endpoint: str, params: dict) -> list[dict]:
        address = f"{self.url}/api/v1/{endpoint}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(address, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310 (http(s) only, checked)
                body = response.read()
        except urllib.error.HTTPError as exc:
            body = exc.read()
            detail = _error_of(body) or exc.reason
            raise PrometheusError(f"Prometheus at {self.url} answered HTTP {exc.code} to /api/v1/{endpoint}: {detail}") from None
        except (urllib.error.URLError, socket.timeout, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise PrometheusError(f"cannot reach Prometheus at {self.url}: {reason}. To fix: check --prometheus") from None
        try:
            doc = json.loads(body)
        except ValueError:
            raise PrometheusError(f"{self.url}/api/v1/{endpoint} did not answer JSON: is --prometheus a Prometheus server?") from None
        if not isinstance(doc, dict) or doc.get("status") != "success" or not isinstance(doc.get("data"), dict):
            raise PrometheusError(f"Prometheus at {self.url} refused the query: {_error_of(body) or 'not a Prometheus API answer'}")
        return doc["data"].get("result") or []


def _error_of(body: bytes) -> str:
    try:
        doc = json.loads(body)
    except ValueError:
        return ""
    if isinstance(doc, dict) and doc.get("error"):
        return f"{doc.get('errorType', 'error')}: {doc['error']}"
    return ""
