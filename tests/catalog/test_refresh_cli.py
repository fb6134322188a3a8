"""`gpusizer catalog refresh` against a local moto server, as a user with fake credentials would run it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from moto.server import ThreadedMotoServer

from tests.conftest import REPO


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def moto_server():
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


def _gpusizer(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "gpusizer.cli", *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=300
    )


@pytest.mark.slow  # a moto server and two CLI processes: ~10 s
def test_refresh_against_moto_keeps_what_it_could_not_refresh_and_plan_still_works(moto_server):
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": moto_server,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    r = _gpusizer("catalog", "refresh", "--provider", "aws", "--region", "us-east-1", env=env)
    out = r.stdout + r.stderr
    assert "Traceback" not in out
    assert r.returncode == 1  # something kept its previous data, and it says what
    assert "could not refresh: aws us-east-1: prices not refreshed" in out
    plan = _gpusizer("plan", "stacks/examples/chat-8b.yaml", "--format", "json", env=env)
    assert plan.returncode == 0, plan.stderr
    assert '"instance_type"' in plan.stdout
