"""Start-up and shut-down: what keeps a command's process short, gathered in one place.

A `gpusizer plan` is a fraction of a second of work; what surrounds it (imports, class
creation, the garbage collector, the interpreter's teardown) would otherwise dominate.
`benchmarks/speed.py` measures the whole as a ratio to `import pydantic, yaml`
(budget 2.5; tests/test_startup.py holds what a command imports). The tricks:

- here, :func:`command_settings`: no pydantic plugin discovery, the cyclic garbage
  collector off while a command runs;
- here, :func:`end_process`: end the process once exit handlers ran and output is flushed,
  without the interpreter's teardown;
- data read from JSON twins instead of YAML (gpusizer.base.packaged) and the packaged catalog
  from its column file (gpusizer.catalog.compact), each used only while it carries the
  digest of its source;
- public names imported on first use (gpusizer/__init__.py, PEP 562), each subcommand's
  parser built only when named (gpusizer.cli), model modules that do not postpone
  annotations (gpusizer.base.fields says why).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
from collections.abc import Iterator

EXIT_OUTPUT = 120
"""The exit code when the output could not be written (a full disk), as the interpreter's own at exit."""
_reported: list[bool] = []


class OutputError(Exception):
    """Standard output refused a write (a full disk, an I/O error): the command's output is incomplete."""

    def __init__(self, cause: OSError):
        super().__init__(str(cause))
        self.cause = cause


class _Output:
    """sys.stdout while a command runs: its write errors become OutputError, told apart from any other OSError
    (a full disk while printing a large report is not an internal error); a reader that left stays
    BrokenPipeError. Everything else is the stream's own."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from None

    def flush(self):
        try:
            return self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextlib.contextmanager
def guarded_output() -> Iterator[None]:
    """Run a command with sys.stdout wrapped (:class:`_Output`), flushed at the end so that a write error
    surfaces inside the command, in-process as well as run as the command."""
    _reported.clear()
    stream = sys.stdout
    if stream is None:
        yield
        return
    sys.stdout = _Output(stream)
    try:
        yield
        sys.stdout.flush()
    finally:
        sys.stdout = stream


def report_output_error(exc: BaseException) -> None:
    """Say once, on stderr (itself perhaps the failing stream: then nothing), that the output is incomplete."""
    if _reported:
        return
    _reported.append(True)
    with contextlib.suppress(OSError, ValueError):
        os.write(2, f"gpusizer: error: cannot write the output: {exc}\n".encode(errors="replace"))


@contextlib.contextmanager
def command_settings() -> Iterator[None]:
    """Process settings for one command, restored afterwards (main() also runs in-process, as in tests).

    - Pydantic plugins are not discovered unless PYDANTIC_DISABLE_PLUGINS is set:
      discovery scans every installed package's metadata for entry points (about
      10 ms of a `gpusizer plan` here) and no gpusizer command uses a plugin.
    - The cyclic garbage collector is off: a command allocates in one burst and exits,
      and its objects are either kept to the end (modules, the catalog, the decision) or
      freed by reference counting; the cycles a `gpusizer plan` leaves are ~600 objects.
      Collections took ~20 ms of a 0.25 s `gpusizer plan` and ~0.4 s of a 4 s 50-workload
      `gpusizer preview`, even collecting the youngest generation only every 20,000
      allocations; the peak RSS with the collector off is within 1% for those and for
      `plan --all` (lower for a 35,000-offer catalog: 432 vs 470 MB). /usr/bin/time and
      gc.callbacks, this machine, 2026-11-25.
    """
    added = "PYDANTIC_DISABLE_PLUGINS" not in os.environ
    if added:
        os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
        if added:
            os.environ.pop("PYDANTIC_DISABLE_PLUGINS", None)


def end_process(code: int) -> None:
    """End the process now, much as mypy does (mypy.util.hard_exit: flush, then os._exit) but with the
    exit handlers run first: the interpreter's teardown, which frees every object one by one in a
    process about to end (~8 ms of a `gpusizer plan` here, 2026-11-25), is skipped.

    Returns, every object left frozen (gc.freeze) so the interpreter's final collection skips them
    (~40 ms of a `gpusizer plan`), while another thread runs (the interpreter waits for it) or a
    profiler, tracer or `python -i` wraps the command (each reports once the program ends).
    Output that cannot be written is reported as the interpreter would (exit 120), except to a
    reader that left (`| head`): that ends with the command's code.
    """
    gc.freeze()
    threading = sys.modules.get("threading")  # not imported: no thread was started through it
    if (
        (threading is not None and threading.active_count() > 1)
        or sys.getprofile()
        or sys.gettrace()
        or sys.flags.inspect
    ):
        return
    atexit._run_exitfuncs()  # what the interpreter's own exit runs first (CPython's Modules/atexitmodule.c)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: started with that descriptor closed
                stream.flush()
        except (BrokenPipeError, ValueError):  # the reader left, or the stream was closed: nothing to tell
            pass
        except OSError as exc:  # a full disk: the output is incomplete (said once, if the command did not yet)
            report_output_error(exc)
            os._exit(EXIT_OUTPUT)
    os._exit(code)
