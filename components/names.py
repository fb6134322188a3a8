"""Cloud and Kubernetes names derived from a workload spec name and the Pulumi stack.

Spec names are `[a-z0-9-]`, up to 63 characters, and may start with a digit
(`70b-chat`). GCP resource names and Kubernetes Service names must be RFC 1035
labels (start with a letter), and names that are not autonamed by Pulumi
(service-account ids, namespaces, routers) must differ between two stacks of
one project or cluster, so they carry the stack name. A name cut to a limit
keeps a 4-hex-digit hash of the whole, so two long names do not collide.
"""

from __future__ import annotations

import hashlib
import re

_INVALID = re.compile(r"[^a-z0-9-]+")
# Prefix for a name that would start with a digit or hyphen: RFC 1035 wants a letter first.
LETTER_PREFIX = "w"


def fit(name: str, limit: int) -> str:
    """`name` cut to `limit` characters; when cut, the last 5 are '-' and a hash of the whole.

    >>> fit("support-chat", 30)
    'support-chat'
    >>> len(fit("a-very-long-workload-name-for-serving-prod", 30))
    30
    """
    if len(name) <= limit:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:4]
    return f"{name[: limit - 5].rstrip('-')}-{digest}"


def rfc1035(name: str, limit: int = 63) -> str:
    """An RFC 1035 label (a letter first; letters, digits, '-'; no '-' last) of at most `limit` characters.

    >>> rfc1035("70b-chat")
    'w70b-chat'
    >>> rfc1035("support-chat")
    'support-chat'
    >>> rfc1035("Dev_Stack.1")
    'dev-stack-1'
    """
    clean = _INVALID.sub("-", name.lower()).strip("-")
    if not clean[:1].isalpha():
        clean = f"{LETTER_PREFIX}{clean}"
    return fit(clean, limit).rstrip("-")


def per_stack(workload: str, stack: str, limit: int = 63) -> str:
    """`<workload>-<stack>` as an RFC 1035 label: unique per stack for names Pulumi does not autoname.

    >>> per_stack("70b-chat", "prod")
    'w70b-chat-prod'
    """
    return rfc1035(f"{workload}-{stack}", limit)
