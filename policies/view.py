"""Read resource properties field by field, so a value unknown at preview blinds only the rules that need it.

During `pulumi preview` the engine sends every input it cannot know yet (the
id of a resource not yet created, an ARN, a service account's email) as a
sentinel string, one per value kind (pulumi/sdk/go/common/resource/plugin/rpc.go,
`marshalUnknownProperty`; the same strings in pulumi_policy/proxy.py, 1.21).
The policy SDK wraps the properties in proxies that raise on the first read of
such a value, so a rule that copies the whole resource is blinded by an
unknown it never needed. Here the properties are unwrapped without reading
through the proxies (`raw`), and a `View` hands out one field at a time: an
unknown on the path to a field raises `Unknown` naming that path; unknowns
elsewhere are never touched.

>>> v = View({"instanceType": "p5.48xlarge", "subnetId": STRING})
>>> v.text("instanceType")
'p5.48xlarge'
>>> v.text("subnetId")
Traceback (most recent call last):
...
gpusizer.policies.view.Unknown: subnetId is unknown until the resource is created
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
# What the offline preview (policies/offline.py) gives a program for a `secure:` config value it cannot decrypt:
# unknown to the rules as a computed value is, so a type read from it is judged by the real preview, never
# taken as "no GPU".
OFFLINE_SECRET = "[secret: encrypted in the stack file, not readable by the offline preview]"
# Bool, number, string, array, asset, archive, object: the sentinels the engine sends for unknowns.
SENTINELS = frozenset(
    {
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
        STRING,
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
        "030794c1-ac77-496b-92df-f27374a8bd58",
        "e48ece36-62e2-4504-bad9-02848725956a",
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
        OFFLINE_SECRET,
    }
)


class Unknown(Exception):  # noqa: N818 - a condition, not a failure: the value exists after `up`
    """A field a rule needs is unknown at preview; the rule judges it again at `pulumi up`.

    Attributes:
        path: the field, e.g. "mixedInstancesPolicy.launchTemplate.overrides[0].instanceType".
    """

    def __init__(self, path: str):
        super().__init__(f"{path} is unknown until the resource is created")
        self.path = path


def is_unknown(value: Any) -> bool:
    return isinstance(value, str) and value in SENTINELS


# The engine's wire form of assets and archives (pulumi.runtime.rpc: the special signature key and values).
SIG_KEY = "4dabf18193072939515e22adb298388d"
ASSET_SIG = "c44067f5952c0a294b673a41bacd8c17"
ARCHIVE_SIG = "0def7320c3a5731c473e5ecbe6d01bc7"


def asset(value: Any) -> dict | None:
    """A Pulumi asset or archive object (the policy SDK deserializes them from the wire) as its wire form:
    the signature and its text, path, URI or assets; None for anything else."""
    kind = type(value).__name__
    if not kind.endswith(("Asset", "Archive")) or not type(value).__module__.startswith("pulumi"):
        return None
    out: dict[str, Any] = {SIG_KEY: ARCHIVE_SIG if kind.endswith("Archive") else ASSET_SIG}
    for k in ("text", "path", "uri"):
        if isinstance(getattr(value, k, None), str):
            out[k] = getattr(value, k)
    if isinstance(getattr(value, "assets", None), Mapping):
        out["assets"] = {k: asset(x) or raw(x) for k, x in value.assets.items()}
    return out


def raw(value: Any) -> Any:
    """Plain dicts and lists from policy-SDK props (or plain data), sentinels kept, nothing read through a proxy,
    assets and archives in their wire form (`asset`), so a function's code is read like any other text.

    The SDK's proxies hand out their wrapped container under the key "__target"
    (pulumi_policy/proxy.py); plain containers are copied as they are.
    """
    if isinstance(value, (str, bytes)):
        return value
    wired = asset(value)
    if wired is not None:
        return wired
    if isinstance(value, Mapping):
        target = _target(value)
        return {k: raw(target[k]) for k in target}
    if isinstance(value, Sequence):
        return [raw(x) for x in _target(value)]
    return value


def _target(value):
    try:
        return value["__target"]
    except (KeyError, TypeError, IndexError):
        return value


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class View:
    """One resource's properties (or a part of them) at a path; every read names what it reads."""

    __slots__ = ("data", "path")

    def __init__(self, data: Any, path: str = ""):
        self.data = data
        self.path = path

    def _walk(self, keys: tuple) -> tuple[Any, str]:
        cur, path = self.data, self.path
        for key in keys:
            if is_unknown(cur):
                raise Unknown(path or "(the resource)")
            if isinstance(key, int):
                cur = cur[key] if isinstance(cur, list) and -len(cur) <= key < len(cur) else None
            else:
                cur = cur.get(key) if isinstance(cur, Mapping) else None
            path = _join(path, key)
            if cur is None:
                return None, path
        if is_unknown(cur):
            raise Unknown(path)
        return cur, path

    def get(self, *keys: str | int) -> Any:
        """The value at keys (None when absent); Unknown when it, or anything on the way, is unknown."""
        return self._walk(keys)[0]

    def has(self, *keys: str | int) -> bool:
        """Whether a value is set at keys; an unknown value counts as set (it will be, after `up`)."""
        try:
            return self.get(*keys) is not None
        except Unknown:
            return True

    def at(self, *keys: str | int) -> View:
        value, path = self._walk(keys)
        return View(value, path)

    def each(self, *keys: str | int) -> list[View]:
        """The elements of the list at keys (none when absent), each a View with its index in its path."""
        value, path = self._walk(keys)
        if value is None:
            return []
        if isinstance(value, Mapping) or not isinstance(value, Sequence) or isinstance(value, str):
            raise ValueError(f"{path} must be a list (got {value!r})")
        return [View(x, f"{path}[{i}]") for i, x in enumerate(value)]

    def mapping(self, *keys: str | int) -> dict:
        """The object at keys as a dict ({} when absent), for tags and labels. Values are not read here: an
        unknown one stays a sentinel for the reader of that key (`is_unknown`), so it blinds only that reader."""
        value, path = self._walk(keys)
        if value is None:
            return {}
        if isinstance(value, list):  # Auto Scaling group tags: [{key, value, propagateAtLaunch}]
            return {t.get("key"): t.get("value") for t in value if isinstance(t, Mapping)}
        if not isinstance(value, Mapping):
            raise ValueError(f"{path} must be an object (got {value!r})")
        return dict(value)

    def text(self, *keys: str | int) -> str | None:
        """A string field normalised for comparison: stripped, lower case; None when absent or blank."""
        value, path = self._walk(keys)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError(f"{path} must be a string (got {value!r})")
        return value.strip().lower() or None

    def number(self, *keys: str | int) -> float | None:
        """A finite number (JSON numbers or decimal strings, as Kubernetes quantities and tags carry them)."""
        value, path = self._walk(keys)
        if value is None:
            return None
        return finite(value, path)


def finite(value: Any, what: str) -> float:
    """`value` as a finite float; ValueError naming `what` otherwise (booleans are not numbers)."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a number (got {value!r})")
    try:
        if isinstance(value, str) and "_" in value:
            raise ValueError  # float() reads "2_0" as 20 (PEP 515 separators): no tag or label writes one
        out = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number (got {value!r})") from None
    if not math.isfinite(out):
        raise ValueError(f"{what} must be a finite number (got {value!r})")
    return out
