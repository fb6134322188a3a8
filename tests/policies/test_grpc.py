"""The pack started exactly as the Pulumi CLI starts it (tests/policies/conftest.py), called over gRPC."""

from __future__ import annotations

import json

from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2

from tests.policies import cases


def analyze(stub, typ, props):
    """The diagnostics the engine gets for a stack of one resource: its Analyze, then the AnalyzeStack."""
    s = struct_pb2.Struct()
    s.update(json.loads(json.dumps(props)))
    urn = f"urn:pulumi:ci::p::{typ}::r"
    one = stub.Analyze(analyzer_pb2.AnalyzeRequest(type=typ, properties=s, urn=urn, name="r"), timeout=30).diagnostics
    stack = analyzer_pb2.AnalyzeStackRequest(
        resources=[analyzer_pb2.AnalyzerResource(type=typ, properties=s, urn=urn, name="r")]
    )
    return [*one, *stub.AnalyzeStack(stack, timeout=30).diagnostics]


def test_info_lists_the_policies_from_the_configured_virtualenv(pack_stub):
    info = pack_stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    names = {p.name for p in info.policies}
    assert info.name == "gpusizer"
    assert {"gpusizer-no-overprovisioning", "gpusizer-sized-gpu-capacity", "gpusizer-gpu-budget"} <= names
    ratio = next(p for p in info.policies if p.name == "gpusizer-no-overprovisioning")
    assert json_format.MessageToDict(ratio.configSchema.properties)["maxRatio"]["default"] == 2.0


def test_overprovisioned_h100_is_mandatory_over_grpc(pack_stub):
    diags = [d for d in analyze(pack_stub, *cases.H100_FOR_20) if d.policyName == "gpusizer-no-overprovisioning"]
    assert diags and diags[0].enforcementLevel == analyzer_pb2.MANDATORY
    assert "g6.xlarge" in diags[0].message


def test_right_sized_l4_passes_over_grpc(pack_stub):
    assert list(analyze(pack_stub, *cases.L4_FOR_18)) == []


def test_untagged_and_non_gpu_over_grpc(pack_stub):
    assert [d.policyName for d in analyze(pack_stub, *cases.UNTAGGED_GPU)] == ["gpusizer-sized-gpu-capacity"]
    assert list(analyze(pack_stub, *cases.NON_GPU)) == []
