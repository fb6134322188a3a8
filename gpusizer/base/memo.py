"""Values computed once within a scope: `gpusizer preview` plans each distinct spec, and reads each
Hugging Face id, once per process (gpusizer.reuse says why and what the keys are).

>>> calls = []
>>> with scope():
...     a = remembered(("k",), lambda: calls.append(1) or len(calls))
...     b = remembered(("k",), lambda: calls.append(1) or len(calls))
>>> a, b, calls
(1, 1, [1])
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

T = TypeVar("T")

# key -> (True, the value computed) or (False, the exception of a `failures` class it raised)
_MEMO: dict[tuple[object, ...], tuple[bool, Any]] | None = None


def active() -> bool:
    """Whether a scope is open."""
    return _MEMO is not None


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """Reuse values until the block ends (nested scopes share the outermost one's memo)."""
    global _MEMO
    if _MEMO is not None:
        yield
        return
    _MEMO = {}
    try:
        yield
    finally:
        _MEMO = None


def remembered(
    key: tuple[object, ...],
    compute: Callable[[], T],
    failures: type[BaseException] | tuple[type[BaseException], ...] = (),
) -> T:
    """compute(), once per `key` inside a scope: later calls return its value, or raise again the
    exception of a `failures` class it raised (an unreachable Hub is not asked twice); other
    exceptions are not remembered. Outside a scope, compute() every time."""
    if _MEMO is None:
        return compute()
    if key not in _MEMO:
        try:
            _MEMO[key] = (True, compute())
        except failures as exc:
            _MEMO[key] = (False, exc)
    ok, value = _MEMO[key]
    if ok:
        return cast(T, value)  # what compute() returned for this key: a key names one computation
    raise value.with_traceback(None)  # the one object raised again: its traceback starts afresh each time
