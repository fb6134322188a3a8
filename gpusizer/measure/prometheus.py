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
import http.client
import io
import json
import math
import re
import ssl
import time
import urllib.parse
import urllib.request

from gpusizer.base import errors, inputs, redact

TIMEOUT_S = 15.0
"""Total seconds one request may take, connecting, sending, the status line, headers and body together
(not per read: a server trickling a byte every few seconds is cut off at this deadline). --timeout sets it."""
MAX_RESPONSE_BYTES = 16 << 20
"""The largest answer read: every query is an aggregation (a few hundred bytes per GPU series; 16 MiB is
~50,000 series), so more is a misconfigured or hostile server. Parsed, 16 MiB of JSON stays under ~150 MB."""
MIN_WINDOW_S = 60
MAX_WINDOW_S = 10 * 365 * 86400
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
    m = _DURATION.match(text.strip()) if len(text) < 40 else None
    if not m:
        raise errors.SpecError(
            f"{field}: {inputs.quote(text)} is not a duration. To fix: give a number and a unit, e.g. 7d, 36h, 90m",
            field,
        )
    seconds = int(m.group(1)) * _UNIT_S[m.group(2)]
    if not MIN_WINDOW_S <= seconds <= MAX_WINDOW_S:
        raise errors.SpecError(
            f"{field}: {inputs.quote(text)} is outside 1m to 10y. To fix: give a window from 1m "
            "(a few scrapes) to 10y, e.g. 7d",
            field,
        )
    return seconds


def parse_time(text: str | None, field: str = "--end") -> datetime.datetime:
    """An RFC 3339 timestamp (UTC when no offset is given), or now when `text` is None."""
    if text is None:
        return datetime.datetime.now(datetime.UTC)
    fix = "To fix: e.g. 2026-11-23T12:00:00Z"
    try:
        t = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise errors.SpecError(f"{field}: {inputs.quote(text)} is not an RFC 3339 time. {fix}", field) from None
    t = t if t.tzinfo else t.replace(tzinfo=datetime.UTC)
    try:
        t = t.astimezone(datetime.UTC)
    except OverflowError:
        t = None
    if t is None or not EARLIEST <= t <= LATEST:
        raise errors.SpecError(f"{field}: {inputs.quote(text)} is outside {EARLIEST:%Y} to {LATEST:%Y}. {fix}", field)
    return t


EARLIEST = datetime.datetime(1980, 1, 1, tzinfo=datetime.UTC)
"""--end bounds: a window of up to MAX_WINDOW_S before the earliest end stays after 1970 (Prometheus' epoch)."""
LATEST = datetime.datetime(9000, 1, 1, tzinfo=datetime.UTC)


def parse_timeout(seconds: float | None, field: str = "--timeout") -> float:
    """A request deadline in seconds, from 1 to 600 (default TIMEOUT_S)."""
    if seconds is None:
        return TIMEOUT_S
    if not (math.isfinite(seconds) and 1 <= seconds <= 600):
        raise errors.SpecError(f"{field}: {seconds:g} is outside 1 to 600 seconds. To fix: e.g. --timeout 60", field)
    return seconds


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
            raise errors.SpecError(
                f"{name!r} is not a Prometheus metric or label name. To fix: use [a-zA-Z_][a-zA-Z0-9_]*"
            )
    return metric + "{" + ",".join(f"{k}={escape_label_value(v)}" for k, v in labels.items()) + "}"


class Client:
    """Prometheus at `url` (scheme, host, port and an optional path prefix, e.g. http://prom:9090).

    `auth` (gpusizer.measure.prom_auth) adds each request's credentials; userinfo in the URL
    (http://user:password@host) is basic auth. `url` as shown in every message and report has no
    userinfo; every credential is registered with gpusizer.base.redact, so no output shows it.
    """

    def __init__(self, url: str, timeout_s: float = TIMEOUT_S, auth=None):
        from gpusizer.measure import prom_auth

        parts = split_url(url)
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, parts.port
        self.prefix = parts.path.rstrip("/")
        netloc = self.host if ":" not in self.host else f"[{self.host}]"
        self.url = f"{self.scheme}://{netloc}{'' if parts.port is None else f':{parts.port}'}{self.prefix}"
        if parts.username is not None or parts.password is not None:
            if auth is not None:
                raise errors.SpecError(
                    "--prometheus: the URL carries a user and password and another way of "
                    "authenticating was given. To fix: keep one",
                    "--prometheus",
                )
            auth = prom_auth.Basic(
                urllib.parse.unquote(parts.username or ""), urllib.parse.unquote(parts.password or "")
            )
        self.auth = auth
        self.timeout_s = timeout_s

    def query(self, expr: str, at: datetime.datetime) -> list[dict]:
        """Evaluate `expr` at time `at`; the result list (vector or matrix elements)."""
        return self._get("query", {"query": expr, "time": f"{at.timestamp():.3f}"})

    def query_range(self, expr: str, start: datetime.datetime, end: datetime.datetime, step_s: float) -> list[dict]:
        """Evaluate `expr` every `step_s` seconds from `start` to `end`; a matrix."""
        params = {
            "query": expr,
            "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}",
            "step": f"{step_s:g}",
        }
        return self._get("query_range", params)

    def _get(self, endpoint: str, params: dict) -> list[dict]:
        # RFC 3986 encoding (%20, not +): the form SigV4's canonical query string needs, and Prometheus reads.
        path = f"{self.prefix}/api/v1/{endpoint}?{urllib.parse.urlencode(params, quote_via=urllib.parse.quote, safe='-_.~')}"
        where = f"Prometheus at {self.url}"
        try:
            status, reason, body = self._request(path)
        except _Deadline:
            raise PrometheusError(
                f"{where} did not answer /api/v1/{endpoint} within {self.timeout_s:g} s. To fix: "
                "check --prometheus, or raise --timeout for a slow server"
            ) from None
        except _TooLarge:
            raise PrometheusError(
                f"{where} answered /api/v1/{endpoint} with more than {MAX_RESPONSE_BYTES >> 20} MiB: "
                "not a Prometheus aggregation. To fix: check --prometheus"
            ) from None
        except errors.SizingError:  # the way of authenticating refused (SpecError is a ValueError too)
            raise
        except (OSError, http.client.HTTPException, ValueError, UnicodeError) as exc:
            detail = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise PrometheusError(
                redact.redact(f"cannot reach {where}: {detail}. To fix: check --prometheus")
            ) from None
        if status >= 400 or status < 200:
            detail = _error_of(body) or reason
            hint = (
                " To fix: check the credentials (docs/observe.md, Authentication)"
                if status in (401, 403)
                else " To fix: check that Prometheus is up and healthy"
                if status >= 500
                else " To fix: check --prometheus (its path prefix) and the query"
            )
            raise PrometheusError(
                redact.redact(f"{where} answered HTTP {status} to /api/v1/{endpoint}: {detail}.{hint}")
            )
        if status >= 300:
            raise PrometheusError(
                f"{where} answered HTTP {status} (a redirect) to /api/v1/{endpoint}. To fix: give "
                "--prometheus the URL it redirects to"
            )
        try:
            doc = inputs.load_json(body.decode("utf-8"), "Prometheus answer")
        except (errors.SpecError, UnicodeDecodeError):
            raise PrometheusError(
                f"{self.url}/api/v1/{endpoint} did not answer JSON: is --prometheus a Prometheus server?"
            ) from None
        if not isinstance(doc, dict) or doc.get("status") != "success" or not isinstance(doc.get("data"), dict):
            raise PrometheusError(
                redact.redact(f"{where} refused the query: {_error_of(body) or 'not a Prometheus API answer'}")
            )
        result = doc["data"].get("result")
        if result is None:
            return []
        if not isinstance(result, list) or not all(isinstance(r, dict) for r in result):
            raise PrometheusError(
                f"{where} answered /api/v1/{endpoint} with a malformed data.result (not a list of "
                "objects). To fix: check --prometheus"
            )
        return result

    def _request(self, path: str) -> tuple[int, str, bytes]:
        """GET `path`: (status, reason, body), all within self.timeout_s; _Deadline or _TooLarge otherwise."""
        deadline = time.monotonic() + self.timeout_s
        conn, target = self._connection(path, deadline)
        try:
            headers = {"Accept": "application/json", "Host": self._host_header(), "User-Agent": "gpusizer"}
            if self.auth is not None:
                headers.update(self.auth.headers("GET", f"{self.scheme}://{self._host_header()}{path}", headers))
            conn.connect()
            conn.sock.settimeout(_remaining(deadline))
            conn.putrequest("GET", target, skip_host=True, skip_accept_encoding=True)
            for k, v in headers.items():
                conn.putheader(k, v)
            conn.endheaders()
            response = http.client.HTTPResponse(_DeadlineSocket(conn.sock, deadline), method="GET")
            try:
                response.begin()
                body = _read_capped(response, deadline)
            finally:
                response.close()
            return response.status, response.reason, body
        except TimeoutError:
            raise _Deadline() from None
        finally:
            conn.close()

    def _host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = self.host if ":" not in self.host else f"[{self.host}]"
        return host if self.port in (None, default) else f"{host}:{self.port}"

    def _connection(self, path: str, deadline: float):
        """An HTTP(S) connection to the server, through the environment's proxy (HTTP(S)_PROXY, NO_PROXY) where set."""
        kind = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        extra = {"context": ssl.create_default_context()} if self.scheme == "https" else {}
        proxy = urllib.request.getproxies().get(self.scheme)
        if proxy and not urllib.request.proxy_bypass(self.host):
            p = split_url(proxy if "://" in proxy else f"http://{proxy}", "proxy")
            if self.scheme == "https":
                conn = kind(p.hostname, p.port or 8080, timeout=_remaining(deadline), **extra)
                conn.set_tunnel(self.host, self.port or 443)
                return conn, path
            return http.client.HTTPConnection(
                p.hostname, p.port or 8080, timeout=_remaining(deadline)
            ), f"{self.scheme}://{self._host_header()}{path}"
        return kind(self.host, self.port, timeout=_remaining(deadline), **extra), path


def split_url(url: str, what: str = "--prometheus") -> urllib.parse.SplitResult:
    """`url` split and checked: http(s), a host, a valid port, no query or fragment; SpecError with a fix otherwise."""
    fix = "To fix: e.g. http://localhost:9090 or https://prometheus.example.com/prefix"
    shown = inputs.quote(redact.redact(url))
    try:
        parts = urllib.parse.urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in 0-65535
    except (ValueError, AttributeError):
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise errors.SpecError(redact.redact(f"{what}: {shown} is not an http(s) URL with a host. {fix}"), what)
    if "@" in parts.path:  # http://user:pa/ss@host: a raw '/' ended the authority inside the password
        raise errors.SpecError(
            redact.redact(
                f"{what}: {shown} has an '@' after a '/': a password holding '/', '?', "
                "'#' or '@' must be percent-encoded (%2F, %3F, %23, %40). To fix: "
                "encode it, or use --user with --password-file"
            ),
            what,
        )
    if parts.query or parts.fragment or any(ord(c) < 33 or ord(c) == 127 for c in url.strip()):
        raise errors.SpecError(
            redact.redact(
                f"{what}: {shown} has a query, a fragment or a control character. "
                f"To fix: give the base URL only, {fix.removeprefix('To fix: ')}"
            ),
            what,
        )
    return parts


class _Deadline(Exception):
    """The request's total deadline passed."""


class _TooLarge(Exception):
    """The answer is larger than MAX_RESPONSE_BYTES."""


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Deadline()
    return left


class _DeadlineSocket:
    """What http.client.HTTPResponse reads the status line, headers and body through: each read waits at most
    until the request's deadline, so a server trickling bytes cannot stretch a request past it."""

    def __init__(self, sock, deadline: float):
        self._sock, self._deadline = sock, deadline

    def makefile(self, mode: str, *args, **kwargs):
        return io.BufferedReader(_DeadlineIO(self._sock, self._deadline))


class _DeadlineIO(io.RawIOBase):
    def __init__(self, sock, deadline: float):
        self._sock, self._deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        self._sock.settimeout(_remaining(self._deadline))
        try:
            return self._sock.recv_into(buffer)
        except TimeoutError:
            raise _Deadline() from None


def _read_capped(response: http.client.HTTPResponse, deadline: float) -> bytes:
    """The body, read in chunks (never more than MAX_RESPONSE_BYTES + one chunk held), within the deadline."""
    declared = response.getheader("Content-Length")
    if declared and declared.strip().isdigit() and int(declared) > MAX_RESPONSE_BYTES:
        raise _TooLarge()
    chunks, size = [], 0
    while True:
        _remaining(deadline)
        chunk = response.read1(1 << 16)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise _TooLarge()
        chunks.append(chunk)


def _error_of(body: bytes) -> str:
    try:
        doc = json.loads(body[:65536])
    except ValueError:
        return ""
    if isinstance(doc, dict) and doc.get("error"):
        return inputs.quote(f"{doc.get('errorType', 'error')}: {doc['error']}", 300).strip("'\"")
    return ""


def sample(value, where: str) -> float | None:
    """The number of an instant-vector element's ``value`` ([timestamp, "string"], Prometheus HTTP API
    "Expression query result formats"): None for NaN ("no sample": Prometheus writes NaN where a series
    has no value, e.g. avg_over_time of nothing, or a stale marker); ±Inf and other non-finite values are
    returned as they are, for the caller to report as a finding rather than use.

    Raises:
        PrometheusError: the element is not [timestamp, number-as-string].
    """
    if not (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[1], str)
        and isinstance(value[0], (int, float))
        and not isinstance(value[0], bool)
    ):
        raise PrometheusError(
            f'malformed answer: {where} is {inputs.quote(value, 80)}, not [timestamp, "number"]. '
            "To fix: check --prometheus (is it a Prometheus API?)"
        )
    try:
        number = float(value[1].strip())
    except ValueError:
        raise PrometheusError(
            f"malformed answer: {where} value {inputs.quote(value[1], 80)} is not a number. To fix: check --prometheus"
        ) from None
    return None if math.isnan(number) else number
