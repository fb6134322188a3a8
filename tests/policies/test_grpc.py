"""The pack started exactly as the Pulumi CLI starts it, and called over gRPC on loopback."""

from __future__ import annotations

import json
import subprocess
import sys

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from tests.conftest import REPO
from tests.policies import cases


@pytest.fixture(scope="module")
def analyzer():
    # `pulumi preview --policy-pack policies` runs: python -m pulumi.policy <engine-address> <pack dir>;
    # the pack prints its port on stdout. The engine address is only used for logging.
    proc = subprocess.Popen([sys.executable, "-m", "pulumi.policy", "127.0.0.1:1", "policies"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = proc.stdout.readline().strip()
        assert port.isdigit(), proc.stderr.read() if proc.poll() is not None else port
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()


def _analyze(stub, typ, props):
    s = struct_pb2.Struct()
    s.update(json.loads(json.dumps(props)))
    req = analyzer_pb2.AnalyzeRequest(type=typ, properties=s, urn=f"urn:pulumi:ci::p::{typ}::r", name="r")
    return stub.Analyze(req, timeout=30).diagnostics


def test_info_lists_the_policies(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    names = {p.name for p in info.policies}
    assert info.name == "gpusizer"
    assert {"gpusizer-no-overprovisioning", "gpusizer-sized-gpu-capacity", "gpusizer-gpu-budget"} <= names


def test_overprovisioned_h100_is_mandatory_over_grpc(analyzer):
    diags = [d for d in _analyze(analyzer, *cases.H100_FOR_20) if d.policyName == "gpusizer-no-overprovisioning"]
    assert diags and diags[0].enforcementLevel == analyzer_pb2.MANDATORY
    assert "g6.xlarge" in diags[0].message


def test_right_sized_l4_passes_over_grpc(analyzer):
    assert list(_analyze(analyzer, *cases.L4_FOR_18)) == []


def test_untagged_and_non_gpu_over_grpc(analyzer):
    assert [d.policyName for d in _analyze(analyzer, *cases.UNTAGGED_GPU)] == ["gpusizer-sized-gpu-capacity"]
    assert list(_analyze(analyzer, *cases.NON_GPU)) == []
