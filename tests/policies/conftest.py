"""The policy pack started the way the Pulumi CLI starts it, for the gRPC tests.

The CLI reads the pack's PulumiPolicy.yaml, takes the interpreter of the
virtualenv its runtime options name (relative to the pack directory), and runs
`<venv>/bin/python -m pulumi.policy <engine-address> <pack-dir>`; the pack
prints its port on stdout. Here the pack is copied to a temporary directory
and its virtualenv created at the configured path; the `.pth` file in it
stands in for `pip install -r requirements.txt` (which needs the network):
it points at this checkout and the packages already installed for the tests.
"""

from __future__ import annotations

import pathlib
import shutil
import site
import subprocess
import sys
import sysconfig
import venv

import grpc
import pytest
import yaml
from pulumi.runtime.proto import analyzer_pb2_grpc

from tests.conftest import REPO


def interpreter(pack_dir):
    """The interpreter the CLI runs a Python pack with: the virtualenv named in PulumiPolicy.yaml."""
    runtime = yaml.safe_load((pack_dir / "PulumiPolicy.yaml").read_text())["runtime"]
    assert isinstance(runtime, dict) and runtime["name"] == "python", "runtime must name python and its virtualenv"
    return pack_dir / runtime["options"]["virtualenv"] / "bin" / "python"


def make_pack(tmp_path):
    """A copy of policies/ whose configured virtualenv exists and holds the pack's requirements."""
    pack_dir = tmp_path / "policies"
    shutil.copytree(REPO / "policies", pack_dir, ignore=shutil.ignore_patterns("venv", "__pycache__"))
    python = interpreter(pack_dir)
    venv.create(python.parents[1], system_site_packages=True, with_pip=False)
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # What `pip install -r requirements.txt` gives the pack: pulumi, pulumi-policy and the engine installed
    # (`-e ..`). The tests' own site directories are added as site directories, so their .pth files run
    # too: the editable install's finder is what maps gpusizer.policies to the policies/ folder.
    ours = [sysconfig.get_paths()["purelib"], *site.getsitepackages()]
    lines = [f"import site; site.addsitedir({d!r})" for d in dict.fromkeys(ours)]
    (pathlib.Path(purelib) / "requirements.pth").write_text("\n".join(lines) + "\n")
    return pack_dir, python


@pytest.fixture(scope="session")
def pack_stub(tmp_path_factory):
    """An Analyzer stub talking to the pack, started as the CLI starts it (not with the tests' interpreter)."""
    pack_dir, python = make_pack(tmp_path_factory.mktemp("pack"))
    assert str(python) != sys.executable  # the pack's own environment, not the tests'
    proc = subprocess.Popen(
        [str(python), "-m", "pulumi.policy", "127.0.0.1:1", str(pack_dir)],
        cwd=pack_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = proc.stdout.readline().strip()
        assert port.isdigit(), proc.stderr.read() if proc.poll() is not None else port
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=60)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
