"""Strip credentials from any text before gpusizer prints, stores or reports it.

One function, :func:`redact`, used for every error message, every cache
manifest entry, every catalog note and every rendered report (table,
markdown for PR comments, JSON). What it removes, and why each pattern:

- userinfo in URLs (``https://user:PASSWORD@host``; RFC 3986 section 3.2.1
  deprecates passwords there, yet endpoint variables such as
  ``AWS_ENDPOINT_URL_*`` and Prometheus URLs carry them);
- credential query parameters (``X-Amz-Signature``, ``X-Amz-Credential``,
  ``X-Amz-Security-Token`` of SigV4 presigned URLs; ``access_token``,
  ``token``, ``key``, ``sig``, ``signature``);
- ``key=value`` / ``key: value`` pairs whose key names a secret (password,
  secret, token, api key, authorization, credential, private key);
- ``Bearer``/``Basic`` authorization values;
- tokens recognisable by their published prefixes: AWS access key ids
  (``AKIA``/``ASIA``/... + 16 upper-case characters, AWS IAM User Guide,
  "Unique identifier prefixes"), GitHub tokens (``ghp_``/``gho_``/``ghu_``/
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

MASK = "***"

_PATTERNS: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", re.S), MASK),
    # scheme://userinfo@host: userinfo may hold ':' but not '/', '@' or whitespace.
    (re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@\"'<>]+@"), rf"\g<1>{MASK}@"),
    (re.compile(r"([?&](?:X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token|access_token|token|key|sig|signature"
                r"|api_key|apikey|password)=)[^&\s\"'<>]+", re.I), rf"\g<1>{MASK}"),
    (re.compile(r"\b((?:Bearer|Basic)\s+)[A-Za-z0-9._~+/=\-]{8,}", re.I), rf"\g<1>{MASK}"),
    (re.compile(r"((?:[\"']?)[A-Za-z0-9_\-]*(?:password|passwd|secret|token|api[_\-]?key|authorization|credential"
                r"|private[_\-]?key|access[_\-]?key)[A-Za-z0-9_\-]*[\"']?\s*[:=]\s*[\"']?)[^\s\"',;&}]+", re.I),
     rf"\g<1>{MASK}"),
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA|ABIA|ACCA)[A-Z0-9]{16}\b"), MASK),
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})\b"), MASK),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), MASK),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), MASK),
    (re.compile(r"\bxox[abpr]-[A-Za-z0-9\-]{10,}\b"), MASK),
)


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
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
