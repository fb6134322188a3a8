"""Values unknown at a first preview, over gRPC: they blind only the rules that need them.

The engine sends an unknown input as a sentinel string (tests/policies/cases.py
puts them where a first preview has them, for every covered type). A rule
reads only its own fields, so an unknown id never changes a verdict; an
unknown field a rule needs is reported by name, as advisory, and the resource
is judged again at `pulumi up` when every input is known.
"""

from __future__ import annotations

import copy

import pytest
from pulumi.runtime.proto import analyzer_pb2

from tests.policies import cases
from tests.policies.test_grpc import analyze

RIGHT = cases.by_type("right")
OVER = cases.by_type("over")


def _known(value):
    """The same resource after `up`: every unknown replaced by a concrete value."""
    if value == cases.U:
        return "known-id-0123"
    if value == cases.UO:
        return {}
    if isinstance(value, dict):
        return {k: _known(x) for k, x in value.items()}
    if isinstance(value, list):
        return [_known(x) for x in value]
    return value


def _verdicts(diags):
    return sorted((d.policyName, d.enforcementLevel, d.message) for d in diags)


@pytest.mark.parametrize("case", sorted(RIGHT))
def test_right_sized_resource_with_unknown_ids_has_no_finding(pack_stub, case):
    assert list(analyze(pack_stub, *RIGHT[case])) == []


@pytest.mark.parametrize("case", sorted(OVER))
def test_overprovisioned_resource_with_unknown_ids_is_a_mandatory_violation(pack_stub, case):
    diags = analyze(pack_stub, *OVER[case])
    over = [d for d in diags if d.policyName == "gpusizer-no-overprovisioning"]
    assert [d.enforcementLevel for d in over] == [analyzer_pb2.MANDATORY], _verdicts(diags)
    assert "20 GiB requirement" in over[0].message
    assert not [d for d in diags if d.enforcementLevel == analyzer_pb2.ADVISORY], _verdicts(diags)


@pytest.mark.parametrize("case", sorted(OVER))
def test_an_unknown_in_a_field_no_rule_uses_never_changes_a_verdict(pack_stub, case):
    typ, props = OVER[case]
    assert _verdicts(analyze(pack_stub, typ, props)) == _verdicts(analyze(pack_stub, typ, _known(props)))


def test_p5_48xlarge_for_20_gib_with_unknown_subnet_is_mandatory_on_a_first_preview(pack_stub):
    typ, props = cases.H100_FOR_20
    first_preview = {**props, "subnetId": cases.U, "vpcSecurityGroupIds": [cases.U], "iamInstanceProfile": cases.U}
    (d,) = [d for d in analyze(pack_stub, typ, first_preview) if d.policyName == "gpusizer-no-overprovisioning"]
    assert d.enforcementLevel == analyzer_pb2.MANDATORY and "g6.xlarge" in d.message


@pytest.mark.parametrize(
    "case, field",
    [
        ("aws-instance", ("instanceType",)),
        ("aws-asg", ("mixedInstancesPolicy", "launchTemplate", "overrides", 0, "instanceType")),
        ("gcp-instance", ("machineType",)),
        ("k8s-deployment", ("spec", "template", "spec", "nodeSelector", "nvidia.com/gpu.product")),
    ],
)
def test_a_shape_computed_at_preview_on_declared_gpu_capacity_fails_closed(pack_stub, case, field):
    # The resource says it is GPU capacity (a literal requirement, a GPU request) while its type or GPU model is
    # computed: the rules that judge the shape would run only at `up`, after a CI preview passed it.
    typ, props = copy.deepcopy(OVER[case])
    at = props
    for key in field[:-1]:
        at = at[key]
    at[field[-1]] = cases.U
    diags = analyze(pack_stub, typ, props)
    named = ".".join(str(k) for k in field).replace(".0.", "[0].")
    (closed,) = [d for d in diags if d.enforcementLevel == analyzer_pb2.MANDATORY]
    assert closed.policyName == "gpusizer-sized-gpu-capacity", _verdicts(diags)
    assert named in closed.message and "declares GPU capacity" in closed.message
    others = [d for d in diags if d.policyName != "gpusizer-sized-gpu-capacity"]
    assert all(d.enforcementLevel == analyzer_pb2.ADVISORY and "pulumi up" in d.message for d in others)


def test_a_computed_type_without_gpu_words_is_judged_again_at_up(pack_stub):
    # No requirement and no GPU request: nothing says it is GPU capacity, so it is advisory until `up`.
    typ, props = copy.deepcopy(OVER["aws-instance"])
    props = {k: val for k, val in props.items() if k != "tags"} | {"instanceType": cases.U}
    diags = analyze(pack_stub, typ, props)
    assert diags and all(d.enforcementLevel == analyzer_pb2.ADVISORY for d in diags), _verdicts(diags)
    assert any("instanceType" in d.message and "pulumi up" in d.message for d in diags)
