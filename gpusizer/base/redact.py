"""Strip credentials from any text before gpusizer prints, stores or reports it.

One function, :func:`redact`, used for every error message, every cache
manifest entry, every catalog note and every rendered report (table,
markdown for PR comments, JSON). What it removes, and why each pattern:

- userinfo in URLs (``https://user:PASSWORD@host``; RFC 3986 section 3.2.1
  deprecates passwords there, yet endpoint variables such as
  ``AWS_ENDPOINT_URL_*`` and Prometheus URLs carry them), found by parsing
  each ``scheme://`` authority (:func:`_mask_userinfo`), not by one pattern: a
  password may hold ``@`` or ``/``, and a URL may have no port or path;
- secrets registered at run time (:func:`register`): a password, token or key
  gpusizer read from a file or a credential chain is masked wherever it shows,
  whatever its form;
- kubeconfig ``client-key-data`` and ``client-certificate-data`` (base64 PEM) and
  ``token`` values;
- credential query parameters (``X-Amz-Signature``, ``X-Amz-Credential``,
  ``X-Amz-Security-Token`` of SigV4 presigned URLs; ``access_token``,
  ``token``, ``key``, ``sig``, ``signature``);
- ``key=value`` / ``key: value`` pairs whose key ends with a secret's name
  (password, secret, token, api key, credentials, private key, access key;
  ``tokens_per_second`` is left alone);
- ``Authorization:`` header values and ``Bearer`` tokens;
- tokens recognisable by their published prefixes: AWS access key ids
  and unique ids (``AKIA`` long-term, ``ASIA`` STS temporary, ``ABIA``,
  ``ACCA``, ``AGPA``, ``AIDA``, ``AIPA``, ``ANPA``, ``ANVA``, ``APKA``,
  ``AROA``, ``ASCA``, and the older ``A3T`` + one character, each + 16
  upper-case letters or digits; AWS IAM User Guide, "IAM identifiers",
  Unique identifier prefixes, read 2026-11-26), GitHub tokens (``ghp_``/``gho_``/``ghu_``/
  ``ghs_``/``ghr_``/``github_pat_``, GitHub blog "Behind GitHub's new
  authentication token formats", 2021-04), Hugging Face tokens (``hf_``,
  huggingface.co/docs/hub/security-tokens), Google API keys (``AIza`` + 35,
  unverified: gitleaks' published rule), Slack tokens (``xox[abpr]-``);
- PEM private key blocks.

Each match becomes ``***`` (or keeps its non-secret prefix), so redacted JSON
stays valid JSON and a redacted URL still shows the host it pointed at.
"""

from __future__ import annotations

import re
from collections.abc import Callable

MASK = "***"

_JSON_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def _mask_secret_value(m: re.Match[str]) -> str:
    """The secret-named key's value masked, unless it is a bare number under a quoted JSON key.

    JSON credentials are strings; a number there is a measurement ("pipeline_ms_per_token": 0.5),
    and masking it would make the report invalid JSON.
    """
    prefix, key_quote, sep, value_quote, value = m.groups()
    if key_quote and sep == ":" and not value_quote and _JSON_NUMBER.fullmatch(value):
        return m.group(0)
    return prefix + MASK


# ((pattern, flags), replacement, needles): a line is searched with a pattern only when it contains
# one of the pattern's needles (lower-case literals, found with str.find), so a large JSON report costs a
# few substring scans rather than ten regex passes over every character (measured on this 2-core
# machine under load, a 780 KB plan JSON: 2.6 s with plain regex passes, 0.19 s this way). A pattern
# is compiled when first applied (re keeps it): compiling all at import took 1.4 ms of every start.
_PATTERNS: tuple[tuple[tuple[str, int], str | Callable[[re.Match[str]], str], tuple[str, ...]], ...] = (
    # scheme://userinfo@host: userinfo may hold ':' but not '/', '@' or whitespace.
    (
        (r"://[^\s\"'<>`]*@[^\s\"'<>`]*", 0),
        lambda m: "".join(_mask_userinfo("://" + p) if i else p for i, p in enumerate(("_" + m.group(0)).split("://")))[
            1:
        ],
        ("://",),
    ),
    # scheme:/userinfo@host: a URL whose '//' a path normalization collapsed (pathlib: "http:/u:pw@h/x").
    ((r"(\b[A-Za-z][A-Za-z0-9+.\-]*:/)(?!/)[^\s\"'<>`/]+@", 0), rf"\g<1>{MASK}@", (":/",)),
    (
        (
            r"([?&](?:X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token|access_token|token|key|sig|signature"
            r"|api_key|apikey|password)=)[^&\s\"'<>]+",
            re.I,
        ),
        rf"\g<1>{MASK}",
        ("x-amz-", "token=", "key=", "sig=", "signature=", "password="),
    ),
    (
        (r"((?:Proxy-)?Authorization[\"']?\s*[:=]\s*[\"']?(?:Bearer|Basic|Token)?\s*)[^\s\"',;&}]+", re.I),
        rf"\g<1>{MASK}",
        ("authorization",),
    ),
    ((r"\b(Bearer\s+)[A-Za-z0-9._~+/=\-]{16,}", 0), rf"\g<1>{MASK}", ("bearer",)),
    # key=value / "key": "value" where the key ends with a secret's name ("tokens_per_second" does not;
    # nor does a number under a quoted JSON key, "pipeline_ms_per_token": 0.5: see _mask_secret_value).
    (
        (
            r"((?:password|passwd|secret|token|api[_\-]?key|credentials?|private[_\-]?key"
            r"|access[_\-]?key)([\"']?)\s*([:=])\s*([\"']?))([^\s\"',;&{}\[\]][^\s\"',;&}]*)",
            re.I,
        ),
        _mask_secret_value,
        ("passw", "secret", "token", "key", "credential"),
    ),
    (
        (
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA|ABIA|ACCA|ASCA|A3T[A-Z0-9])[A-Z0-9]{16}"
            r"(?![A-Za-z0-9])",
            0,
        ),
        MASK,
        ("akia", "asia", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka", "abia", "acca", "asca", "a3t"),
    ),
    # kubeconfig users[].user: client-key-data / client-certificate-data (base64 PEM), YAML or JSON.
    (
        (r"((?:client-key|client-certificate)-data([\"']?)\s*:\s*[\"']?)[A-Za-z0-9+/=_\-]+", re.I),
        rf"\g<1>{MASK}",
        ("-data",),
    ),
    (
        (r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})\b", 0),
        MASK,
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    ((r"\bhf_[A-Za-z0-9]{30,}\b", 0), MASK, ("hf_",)),
    ((r"\bAIza[0-9A-Za-z_\-]{35}\b", 0), MASK, ("aiza",)),
    ((r"\bxox[abpr]-[A-Za-z0-9\-]{10,}\b", 0), MASK, ("xoxa-", "xoxb-", "xoxp-", "xoxr-")),
)
# needle -> indices of the patterns it gates
_NEEDLES: dict[str, tuple[int, ...]] = {}
for _i, (_pattern, _replacement, _needles) in enumerate(_PATTERNS):
    for _n in _needles:
        _NEEDLES[_n] = _NEEDLES.get(_n, ()) + (_i,)
_PEM = r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)"


_SECRETS: set[str] = set()
MIN_SECRET_CHARS = 3
"""Registered secrets shorter than this are not masked wherever they occur (a one-character password
would turn every such character of a report into ***); they still never reach a URL or a message."""


def register(secret: str | None) -> None:
    """Mask `secret` (a password, token or key read at run time) wherever it occurs in text redacted from now on,
    and its percent-encoded form."""
    if isinstance(secret, str) and len(secret) >= MIN_SECRET_CHARS:
        from urllib.parse import quote

        _SECRETS.update({secret, quote(secret, safe="")})


def _mask_userinfo(url: str) -> str:
    """``://AUTHORITY...`` with the userinfo masked: everything before the '@' that ends it.

    RFC 3986 ends the authority at the first '/', '?' or '#', and userinfo at its last '@'; a password
    written raw may hold '@' (u:p@ss@host: the last '@' before the first '/') or '/' (u:pa/ss@host: the
    part before the first '/' is then "user:something" that is no port, and the userinfo runs to the
    last '@'). A host, host:port or path holding '@' (a mail address in a path) is left alone.

    >>> _mask_userinfo("://admin:S3cretPw@host")
    '://***@host'
    >>> _mask_userinfo("://u:p/a@ss@prom:9090/x"), _mask_userinfo("://prom:9090/to/a@b.c")
    ('://***@prom:9090/x', '://prom:9090/to/a@b.c')
    """
    rest = url[3:]
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    at = rest.rfind("@", 0, end)
    later = rest.rfind("@", end)
    if at >= 0:
        if ":" in rest[:at] and later > end:  # u:p@ss/w@rd@host: a password may run past a '/'; mask to the last '@'
            at = later
    else:
        user, colon, after = rest[:end].partition(":")
        if not colon or after == "" or after.isdigit() or later < 0:
            return url
        at = later
    return f"://{MASK}@{rest[at + 1 :]}"


def redact(text: str) -> str:
    """`text` with every credential the patterns above recognise replaced by ``***``.

    >>> redact("endpoint http://admin:hunter2@10.0.0.5:4566/ failed")
    'endpoint http://***@10.0.0.5:4566/ failed'
    >>> redact("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE")
    'AWS_ACCESS_KEY_ID=***'
    >>> redact('{"aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}')
    '{"aws_secret_access_key": "***"}'
    >>> redact("g6.xlarge in us-east-1: $0.8048/h")
    'g6.xlarge in us-east-1: $0.8048/h'
    """
    if not isinstance(text, str):
        text = str(text)
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    lower = text.lower()
    if "private key-----" in lower:  # spans lines: the whole text
        text = re.sub(_PEM, MASK, text, flags=re.S)
        lower = text.lower()
    lines: dict[int, tuple[int, set[int]]] = {}  # line start -> (line end, patterns to apply)
    for needle, indices in _NEEDLES.items():  # str.find: ~100x faster than a regex alternation
        at = lower.find(needle)
        while at >= 0:
            begin = lower.rfind("\n", 0, at) + 1
            end = lower.find("\n", at)
            end = len(text) if end < 0 else end
            lines.setdefault(begin, (end, set()))[1].update(indices)
            at = lower.find(needle, end)
    out, done = [], 0
    for begin, (end, gated) in sorted(lines.items()):
        line = text[begin:end]
        for i in sorted(gated):
            (source, flags), replacement, _ = _PATTERNS[i]
            line = re.compile(source, flags).sub(replacement, line)  # compiled on first use, then from re's cache
        out += [text[done:begin], line]
        done = end
    out.append(text[done:])
    return "".join(out)
