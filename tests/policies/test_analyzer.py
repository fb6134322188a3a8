"""The pack's analyzer in-process: the requests the Pulumi engine sends, the diagnostics it gets back."""

from __future__ import annotations

import pytest

from gpusizer.policies import analyzer
from tests.policies import cases


def _findings(*resources, config=None):
    return analyzer.analyze([(t, f"r{i}", p) for i, (t, p) in enumerate(resources)], "test", config)


def test_h100_for_20_gib_is_a_mandatory_diagnostic_naming_the_cheaper_offer():
    (f,) = [f for f in _findings(cases.H100_FOR_20) if f.policy == "gpusizer-no-overprovisioning"]
    assert f.level == "mandatory"
    assert "g6.xlarge" in f.message and "32x" in f.message


def test_l4_for_18_and_non_gpu_pass():
    assert _findings(cases.L4_FOR_18, cases.NON_GPU) == []


def test_untagged_gpu_is_mandatory():
    (f,) = _findings(cases.UNTAGGED_GPU)
    assert (f.policy, f.level) == ("gpusizer-sized-gpu-capacity", "mandatory")


@pytest.mark.parametrize("case", sorted(cases.OVER))
def test_each_covered_type_through_the_analyzer(case):
    policies = {f.policy for f in _findings(cases.OVER[case])}
    assert "gpusizer-no-overprovisioning" in policies


def test_config_without_level_keeps_the_coded_level():
    # The wire default for a configured policy is ADVISORY; the offline driver keeps "mandatory".
    (f,) = [
        f
        for f in _findings(cases.H100_FOR_20, config={"gpusizer-no-overprovisioning": {"maxRatio": 4}})
        if f.policy == "gpusizer-no-overprovisioning"
    ]
    assert f.level == "mandatory"


def test_stack_budget_through_analyze_stack():
    fs = _findings(
        cases.H100_FOR_20, config={"gpusizer-gpu-budget": {"maxHourlyUsd": 10, "enforcementLevel": "mandatory"}}
    )
    budget = [f for f in fs if f.policy == "gpusizer-gpu-budget"]
    assert budget and budget[0].resource == "(stack)" and budget[0].level == "mandatory"


def test_malformed_config_is_a_diagnostic_not_a_crash():
    fs = _findings(cases.L4_FOR_18, config={"gpusizer-no-overprovisioning": {"maxRatio": "two"}})
    (f,) = [f for f in fs if f.policy == "gpusizer-no-overprovisioning"]
    assert "maxRatio" in f.message and f.level == "mandatory"
