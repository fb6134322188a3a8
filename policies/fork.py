"""Run a function in a forked child process and take its result: how `gpusizer preview` runs its two phases at once.

The child starts as a copy of this process (imported modules, decisions
memoised so far, stack config), runs the function, sends back its return
value or the exception it raised, pickled through a pipe, and leaves with
os._exit: no atexit handler runs twice and no buffer of the parent's is
flushed twice (both streams are flushed before the fork).

An exception whose class cannot be rebuilt from its pickle (an ``__init__``
taking more than the message, as Pulumi's ConfigMissingError does) comes back
as its nearest base class below Exception that can (a pulumi.RunError, with
the same message), so the caller's handling still applies; failing that, as a
RuntimeError naming the class and the message.

`available()` is true on Linux with two or more CPUs free to this process
(os.sched_getaffinity), where a second process can run while this one works.
The offline preview forks before its programs start, when no gRPC channel or
server exists (Pulumi's mocks use none) and no thread other than the main one
runs, so the child inherits no lock held by another thread.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


def forks() -> bool:
    """Whether this platform can fork a child (Linux, macOS): the offline preview runs programs apart."""
    return hasattr(os, "fork")


def available() -> bool:
    """Whether a forked child can run beside this process: Linux (fork and CPU affinity), >= 2 CPUs free."""
    return hasattr(os, "fork") and hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) >= 2


class Child(Generic[T]):
    """A forked child running `fn`; `result()` waits for it and returns what it returned."""

    def __init__(self, fn: Callable[[], T]):
        sys.stdout.flush()
        sys.stderr.flush()
        read, write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(read)
            _serve(fn, write)  # never returns
        os.close(write)
        self._read = read

    def result(self) -> T:
        """The child's return value; its exception is raised here (a RuntimeError when it could not say)."""
        with os.fdopen(self._read, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(self.pid, 0)
        if not data:
            raise RuntimeError(f"the forked process ended without a result (wait status {status})")
        ok, payload, described = pickle.loads(data)
        try:
            value = pickle.loads(payload)
        except Exception:  # an exception whose __init__ takes more than its message does not unpickle
            raise RuntimeError(described) from None
        if ok:
            return value
        raise value


def _serve(fn: Callable[[], object], write: int) -> None:
    try:
        try:
            ok, value = True, fn()
        except BaseException as exc:  # every outcome goes back to the parent, which raises it
            ok, value = False, exc
        described = f"{type(value).__name__}: {value}"
        if not ok:
            value = _portable(value)
        try:
            payload = pickle.dumps(value)
        except Exception as exc:  # an unpicklable value: say what it was
            ok, payload = False, pickle.dumps(RuntimeError(f"{described} ({exc})"))
        data = pickle.dumps((ok, payload, described))
        with os.fdopen(write, "wb") as pipe:
            pipe.write(data)
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0)


def _portable(exc: BaseException) -> BaseException:
    """`exc` if it survives a pickle round trip, else its nearest base class below Exception built
    from its message, else a RuntimeError saying what it was (module docstring)."""
    candidates = [lambda: exc]
    for base in type(exc).__mro__[1:]:
        if base in (Exception, BaseException, object):
            break
        candidates.append(lambda base=base: base(str(exc)))
    for make in candidates:
        try:
            candidate = make()
            pickle.loads(pickle.dumps(candidate))
            return candidate
        except Exception:  # noqa: BLE001 - any failure to build or round-trip: try the next base
            continue
    return RuntimeError(f"{type(exc).__name__}: {exc}")
