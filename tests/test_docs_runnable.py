"""The first hour: every command block of README.md and docs/*.md marked runnable runs, as written, and exits 0.

Convention (README, "Quick start"): an HTML comment on the line before a ```sh fence,

    <!-- runnable -->                              the block runs with gpusizer installed, from the repository root
    <!-- runnable: needs prometheus, promtool -->  ... and with these programs on PATH (marked slow)

Each block runs in `bash -e` in a temporary directory that links every top-level entry of the repository
(so `stacks/examples/...` and `tests/...` resolve and whatever a block writes lands in the temporary
directory), with this interpreter's virtualenv first on PATH (`gpusizer`, `python`). A block that binds
the documented local port 127.0.0.1:9090 gets a free port instead, so parallel runs do not collide.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys

import pytest

from tests.conftest import REPO

MARKED = re.compile(r"^<!-- runnable(?:: needs (?P<needs>[^>]*?))? -->\n```(?:sh|bash)\n(?P<body>.*?)^```", re.M | re.S)
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SKIP_LINKS = {".git", ".venv", "__pycache__", ".pytest_cache"}


def blocks() -> list:
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for m in MARKED.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            needs = [n.strip() for n in (m["needs"] or "").split(",") if n.strip()]
            marks = [pytest.mark.slow] if needs else []
            found.append(pytest.param(m["body"], needs, id=f"{doc.relative_to(REPO)}:{line}", marks=marks))
    return found


BLOCKS = blocks()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_docs_mark_the_first_hours_commands_runnable():
    """The README's plan, tco and preview examples and docs/observe.md's local Prometheus are marked."""
    ids = " ".join(p.id for p in BLOCKS)
    bodies = "\n".join(p.values[0] for p in BLOCKS)
    assert "README.md" in ids and "docs/observe.md" in ids and "docs/calibrate.md" in ids
    for command in (
        "gpusizer plan",
        "gpusizer tco",
        "gpusizer preview",
        "gpusizer observe",
        "python -m gpusizer",
        "--pools stacks/examples/pools.yaml",
    ):
        assert command in bodies


@pytest.mark.parametrize("body, needs", BLOCKS)
def test_runnable_block(tmp_path, body, needs):
    missing = [n for n in needs if shutil.which(n) is None]
    assert not missing, f"{', '.join(missing)} not installed (Debian: apt-get install -y prometheus curl; .ci/run does)"
    for entry in REPO.iterdir():
        if entry.name not in SKIP_LINKS:
            (tmp_path / entry.name).symlink_to(entry)
    if "127.0.0.1:9090" in body:
        body = body.replace("127.0.0.1:9090", f"127.0.0.1:{_free_port()}")
    env = {**os.environ, "PATH": f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    # Its own process group: whatever the block starts in the background (a Prometheus) ends with it.
    proc = subprocess.Popen(
        ["bash", "-e", "-c", body],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, f"exit {proc.returncode}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-3000:]}"
    assert "Traceback" not in err
