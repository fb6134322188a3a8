"""The evasion suite: every way issue 8 found to talk the pack out of blocking, each blocked (mandatory).

Resources go through the pack's analyzer in-process exactly as the engine
sends them (policies/analyzer.py). Where a resource is legitimately exempt it
is so only through a decision the pack re-derives from a GpuWorkload's
recorded spec (last tests).
"""

from __future__ import annotations

import copy
import dataclasses

import pytest

import gpusizer
from gpusizer.components import workload
from gpusizer.contract import audit
from gpusizer.policies import analyzer, budget, sizing, verify, view
from tests.conftest import REPO
from tests.policies import cases

INSTANCE = "aws:ec2/instance:Instance"
SECURE = {"metadataOptions": {"httpTokens": "required"}, "rootBlockDevice": {"encrypted": True}}


def _mandatory(typ, props, config=None, policy=None):
    found = analyzer.analyze([(typ, "r", props)], "test", config)
    return [f for f in found if f.level == "mandatory" and (policy is None or f.policy == policy)]


@pytest.mark.parametrize("tag", ["0", "-1", "1e-400", "nan", "inf", "-inf", "lots", "", " "])
def test_requirement_tag_that_is_not_a_positive_finite_number_is_unsized(tag):
    (f,) = _mandatory(INSTANCE, {"instanceType": "p5.48xlarge", "tags": {cases.REQ: tag}, **SECURE})
    assert f.policy == "gpusizer-sized-gpu-capacity"


def test_digit_separators_do_not_turn_a_tag_into_another_number():
    """float() reads "2_0" as 20 and "20_15" as 2015 (PEP 515): an AWS tag with one is unsized."""
    (f,) = _mandatory(INSTANCE, {"instanceType": "p5.48xlarge", "tags": {cases.REQ: "2_000"}, **SECURE})
    assert f.policy == "gpusizer-sized-gpu-capacity"


GCP_INSTANCE = "gcp:compute/instance:Instance"
GCP_SECURE = {"shieldedInstanceConfig": {"enableSecureBoot": True}}


@pytest.mark.parametrize("label", ["20_", "_15", "20_155", "2_0_1", "20.15", "20-15", "1e3", "nan"])
def test_gcp_requirement_label_not_in_the_contract_form_is_unsized(label):
    props = {"machineType": "a3-highgpu-8g", "labels": {cases.GCP_REQ: label}, **GCP_SECURE}
    assert [f.policy for f in _mandatory(GCP_INSTANCE, props)] == ["gpusizer-sized-gpu-capacity"]


def test_gcp_requirement_label_keeps_its_decimals():
    """20.15 GiB on an L4 (22.35 GiB x 0.9 = 20.1... GiB usable per the pack's headroom) is judged at
    20.15, not rounded up to 21 (which blocked the planner's own choice), and "20_15" is not 2015."""

    def found(label, machine):
        props = {"machineType": machine, "labels": {cases.GCP_REQ: label}, **GCP_SECURE}
        return {f.policy for f in _mandatory(GCP_INSTANCE, props)}

    assert "gpusizer-no-underprovisioning" in found("21", "g2-standard-4")  # a whole GiB label, read as written
    assert found("20_15", "g2-standard-4") == set()
    assert "gpusizer-no-overprovisioning" in found("20_15", "a3-highgpu-8g")  # 8 x H100 for 20.15 GiB


@pytest.mark.parametrize(
    "label",
    ["throughput", "ttft", "tpot", "deadline", "interconnect", "per-job-cost", "per-token-cost", "cost-per-token"],
)
def test_hand_written_sized_by_is_judged_on_memory_alone(label):
    props = {"instanceType": "p5.48xlarge", "tags": {cases.REQ: "20", "gpusizer:sized-by": label}, **SECURE}
    (f,) = _mandatory(INSTANCE, props)
    assert f.policy == "gpusizer-no-overprovisioning" and "637 GiB for a 20 GiB requirement" in f.message


def test_hand_written_price_tag_is_ignored_prices_come_from_the_catalog():
    # 560 GiB fits 8 x 79.65 GiB x 0.90 headroom (573 GiB): only the price policies may fire.
    props = {"instanceType": "p5.48xlarge", "tags": {cases.REQ: "560", "gpusizer:hourly-usd": "0.01"}, **SECURE}
    config = {
        "gpusizer-cost-ceiling": {"enforcementLevel": "mandatory", "maxHourlyUsd": 10},
        "gpusizer-gpu-budget": {"enforcementLevel": "mandatory", "maxHourlyUsd": 10},
    }
    found = {f.policy: f.message for f in _mandatory(INSTANCE, props, config)}
    assert set(found) == {"gpusizer-cost-ceiling", "gpusizer-gpu-budget"}
    assert "(catalog on-demand) > $10.00/h" in found["gpusizer-cost-ceiling"]


@pytest.mark.parametrize("spelling", ["P5.48XLARGE", " p5.48xlarge", "p5.48xlarge\t", "P5.48xLarge "])
def test_type_spelled_differently_is_normalised(spelling):
    (f,) = _mandatory(INSTANCE, {"instanceType": spelling, "tags": {cases.REQ: "20"}, **SECURE})
    assert f.policy == "gpusizer-no-overprovisioning"


@pytest.mark.parametrize(
    "typ, props",
    [
        (INSTANCE, {"instanceType": t})
        for t in ("p2.xlarge", "g3.4xlarge", "g5g.xlarge", "p6e-gb200.36xlarge", "inf2.xlarge", "P6-B300.48XLARGE")
    ]
    + [
        ("gcp:compute/instance:Instance", {"machineType": "a4x-highgpu-4g"}),
        (
            "gcp:compute/instance:Instance",
            {"machineType": "n1-standard-8", "guestAccelerators": [{"type": "nvidia-tesla-k80", "count": 1}]},
        ),
        ("kubernetes:core/v1:Pod", {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}}),
    ],
)
def test_gpu_type_the_pack_does_not_know_is_unknown_not_a_gpu(typ, props):
    props = copy.deepcopy(props)
    props.setdefault("tags", {cases.REQ: "20"})
    props.setdefault("labels", {cases.GCP_REQ: "20"})
    props.update(SECURE) if typ == INSTANCE else None
    found = _mandatory(typ, props, policy="gpusizer-sized-gpu-capacity")
    assert found and "unknown GPU type, cannot verify" in found[0].message


_ABS = {"acceleratorCount": {"min": 8}, "acceleratorTypes": ["gpu"], "vcpuCount": {"min": 0}, "memoryMib": {"min": 0}}


@pytest.mark.parametrize(
    "typ, props",
    [
        ("aws:ec2/launchTemplate:LaunchTemplate", {"instanceRequirements": _ABS}),
        (
            "aws:autoscaling/group:Group",
            {
                "maxSize": 1,
                "mixedInstancesPolicy": {
                    "launchTemplate": {
                        "launchTemplateSpecification": {"launchTemplateId": "lt-1"},
                        "overrides": [{"instanceRequirements": _ABS}],
                    }
                },
            },
        ),
        (
            "aws:ec2/fleet:Fleet",
            {
                "launchTemplateConfigs": [{"overrides": [{"instanceRequirements": _ABS}]}],
                "targetCapacitySpecification": {"totalTargetCapacity": 1},
            },
        ),
        (
            "aws:ec2/launchTemplate:LaunchTemplate",
            {"instanceRequirements": {"acceleratorNames": ["h100"], "vcpuCount": {"min": 1}, "memoryMib": {"min": 1}}},
        ),
    ],
)
def test_attribute_based_selection_is_judged_by_the_types_it_admits(typ, props):
    props = {**copy.deepcopy(props), "tags": {cases.REQ: "20"}, "metadataOptions": {"httpTokens": "required"}}
    if typ == "aws:autoscaling/group:Group":
        props["tags"] = [{"key": cases.REQ, "value": "20", "propagateAtLaunch": True}]
    found = _mandatory(typ, props, policy="gpusizer-no-overprovisioning")
    assert found and "for a 20 GiB requirement" in found[0].message


def test_attribute_based_selection_without_gpus_is_not_a_gpu_resource():
    props = {
        "instanceRequirements": {"acceleratorCount": {"max": 0}, "vcpuCount": {"min": 2}, "memoryMib": {"min": 1}},
        "metadataOptions": {"httpTokens": "required"},
    }
    assert _mandatory("aws:ec2/launchTemplate:LaunchTemplate", props) == []


@pytest.mark.parametrize("case", sorted(cases.by_type("over")))
def test_every_covered_type_blocks_an_overprovisioned_gpu(case):
    assert _mandatory(*cases.by_type("over")[case], policy="gpusizer-no-overprovisioning")


def test_launch_configuration_cannot_carry_a_requirement_and_is_blocked():
    props = {
        "instanceType": "p5.48xlarge",
        "metadataOptions": {"httpTokens": "required"},
        "rootBlockDevice": {"encrypted": True},
    }
    assert _mandatory("aws:ec2/launchConfiguration:LaunchConfiguration", props, policy="gpusizer-sized-gpu-capacity")


def test_mig_slices_are_gpu_capacity():
    pod = {
        "metadata": {"annotations": {cases.K8S_REQ: "10"}},
        "spec": {
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/mig-3g.40gb": 4}}}],
        },
    }
    (f,) = _mandatory(
        "kubernetes:apps/v1:ReplicaSet", {"spec": {"template": pod}}, policy="gpusizer-no-overprovisioning"
    )
    assert "4 x H100 MIG 3g.40gb" in f.message


@pytest.mark.parametrize(
    "typ, props, words",
    [
        (
            "aws:ec2/spotInstanceRequest:SpotInstanceRequest",
            {"instanceType": "g6.xlarge", "tags": {cases.REQ: "18"}, "rootBlockDevice": {"encrypted": True}},
            "IMDSv2",
        ),
        (
            "aws:ec2/spotFleetRequest:SpotFleetRequest",
            {
                "targetCapacity": 1,
                "tags": {cases.REQ: "18"},
                "launchSpecifications": [{"instanceType": "g6.xlarge", "rootBlockDevices": [{"encrypted": True}]}],
            },
            "cannot require IMDSv2",
        ),
        (
            "aws:ec2/launchConfiguration:LaunchConfiguration",
            {
                "instanceType": "g6.xlarge",
                "metadataOptions": {"httpTokens": "required"},
                "rootBlockDevice": {"encrypted": False},
            },
            "unencrypted EBS",
        ),
        (
            "aws:eks/nodeGroup:NodeGroup",
            {"instanceTypes": ["g6.xlarge"], "tags": {cases.REQ: "18"}, "scalingConfig": {"maxSize": 1}},
            "without a launch template",
        ),
    ],
)
def test_host_security_wherever_a_host_is_described(typ, props, words):
    found = [f for f in _mandatory(typ, props) if f.policy in ("gpusizer-require-imdsv2", "gpusizer-secure-gpu-hosts")]
    assert any(words in f.message for f in found), found


def _stack(*rs):
    return [
        sizing.StackResource(t, view.View(p), urn, urn.rsplit("::", 1)[-1], parent, deps)
        for t, p, urn, parent, deps in rs
    ]


def test_budget_counts_a_launch_template_at_the_size_of_the_group_that_launches_it():
    lt_urn, asg_urn = (
        "urn:pulumi:s::p::aws:ec2/launchTemplate:LaunchTemplate::lt",
        "urn:pulumi:s::p::aws:autoscaling/group:Group::asg",
    )
    stack = _stack(
        ("aws:ec2/launchTemplate:LaunchTemplate", {"instanceType": "p5.48xlarge", "id": "lt-1"}, lt_urn, None, ()),
        (
            "aws:autoscaling/group:Group",
            {"maxSize": 10, "desiredCapacity": 2, "launchTemplate": {"id": "lt-1"}},
            asg_urn,
            None,
            (lt_urn,),
        ),
    )
    p5 = audit.price_of("aws", "p5.48xlarge")  # one node at the catalog's on-demand price (data/catalog/aws.csv)
    assert budget.hourly(stack[1], {r.urn: r for r in stack}) == pytest.approx(10 * p5)  # maxSize, not desired
    assert budget.stack_budget(stack, 9 * p5)  # 10 nodes at most: over a budget of 9
    assert budget.stack_budget(stack, 10 * p5) == []
    assert budget.hourly(stack[0], {}) is None  # the template alone launches nothing


def _workload_stack(child_type, child_props, spec):
    wl = "urn:pulumi:dev::gpusizer::gpusizer:index:GpuWorkload::w"
    cap = "urn:pulumi:dev::gpusizer::gpusizer:index:GpuWorkload$gpusizer:aws:GpuCapacity::w-aws"
    child = f"urn:pulumi:dev::gpusizer::gpusizer:index:GpuWorkload$gpusizer:aws:GpuCapacity${child_type}::w-aws-x"
    recorded = workload.recorded_inputs(gpusizer.load_spec(spec), [])
    return [
        analyzer.Resource("gpusizer:index:GpuWorkload", "w", recorded, wl),
        analyzer.Resource("gpusizer:aws:GpuCapacity", "w-aws", {}, cap, wl),
        analyzer.Resource(child_type, "w-aws-x", child_props, child, cap),
    ]


SMALL_CHAT = {
    "name": "w",
    "model": {"name": "llama-3.1-8b"},
    "inference": {"context_length": 4096, "batch_size": 4},
    "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
}
# The requirement its decision tags, written as the tag holds it (two decimals).
SMALL_CHAT_GIB = f"{gpusizer.plan(SMALL_CHAT).required_gpu_memory_gib:.2f}"


def test_a_claimed_exemption_that_does_not_re_derive_is_judged_on_memory():
    # A GpuWorkload whose spec re-plans to a 1-GPU shape, above a p5.48xlarge that claims its size was set by
    # a throughput target: the claim does not re-derive, so memory judges it.
    props = {"instanceType": "p5.48xlarge", "tags": {cases.REQ: "20", "gpusizer:sized-by": "throughput"}, **SECURE}
    found = analyzer.analyze(_workload_stack(INSTANCE, props, SMALL_CHAT), "dev")
    (f,) = [f for f in found if f.level == "mandatory"]
    assert f.policy == "gpusizer-no-overprovisioning" and f.resource == "w-aws-x"
    need = gpusizer.plan(SMALL_CHAT).required_gpu_memory_gib  # the re-planned requirement (the tag rounds it up)
    assert "not re-derived" in f.message and f"637 GiB for a {need:g} GiB requirement" in f.message


@pytest.mark.parametrize(
    "config",
    [
        None,
        {"gpusizer-no-overprovisioning": {"maxRatio": 3}},  # a stricter ratio applies to labelled resources too
        {"gpusizer-gpu-budget": {"enforcementLevel": "disabled"}},  # no other rule's setting turns the judgement off
    ],
)
def test_no_setting_but_disabling_the_rule_itself_leaves_a_labelled_resource_unjudged(config):
    # The last wave's gap: the resource rule skipped a labelled resource under a GpuWorkload and left it to a
    # second rule; disabling that rule, or a maxRatio on the first, judged it nowhere (32x with no finding).
    props = {"instanceType": "p5.48xlarge", "tags": {cases.REQ: "20", "gpusizer:sized-by": "throughput"}, **SECURE}
    found = [
        f
        for f in analyzer.analyze(_workload_stack(INSTANCE, props, SMALL_CHAT), "dev", config)
        if f.policy == "gpusizer-no-overprovisioning"
    ]
    limit = (config or {}).get("gpusizer-no-overprovisioning", {}).get("maxRatio", 2)
    ratio = 8 * 79.65 / gpusizer.plan(SMALL_CHAT).required_gpu_memory_gib  # 8 x H100 (79.65 GiB as the driver shows)
    assert [f.level for f in found] == ["mandatory"] and f"({ratio:.0f}x, limit {limit}x)" in found[0].message


def test_an_exemption_re_derived_from_the_recorded_spec_holds():
    spec = gpusizer.load_spec(REPO / "stacks/examples/lora-8b.yaml")
    d = gpusizer.plan(spec)
    assert d.sized_by == "per-job-cost" and d.chosen.offer.provider == "aws"
    assert d.chosen.purchase == "spot"
    props = {
        "instanceType": d.chosen.offer.instance_type,
        **SECURE,
        "instanceMarketOptions": {"marketType": "spot"},
        "tags": {cases.REQ: f"{d.required_gpu_memory_gib:.2f}", "gpusizer:sized-by": d.sized_by},
    }
    found = analyzer.analyze(_workload_stack(INSTANCE, props, spec.model_dump(mode="json")), "dev")
    assert [f for f in found if f.level == "mandatory"] == []
    # The same type bought on-demand where the decision buys spot costs more: the exemption does not hold.
    on_demand = {k: val for k, val in props.items() if k != "instanceMarketOptions"}
    (f,) = [
        f
        for f in analyzer.analyze(_workload_stack(INSTANCE, on_demand, spec.model_dump(mode="json")), "dev")
        if f.level == "mandatory"
    ]
    assert "buys on-demand capacity, the decision spot" in f.message
    # The same resource with no GpuWorkload above it is over the ratio: the re-derived decision is what exempts it.
    alone = [f for f in _mandatory(INSTANCE, props) if f.policy == "gpusizer-no-overprovisioning"]
    assert len(alone) == 1 and "no GpuWorkload above it" in alone[0].message


# Bypasses a review found after the rule became one stack rule; each is blocked now.
ASG = "aws:autoscaling/group:Group"
LT = "aws:ec2/launchTemplate:LaunchTemplate"


def _under(workload_urn, typ, name, props, deps=()):
    return analyzer.Resource(typ, name, props, f"urn:pulumi:dev::gpusizer::{typ}::{name}", workload_urn, tuple(deps))


def _lora():
    spec = gpusizer.load_spec(REPO / "stacks/examples/lora-8b.yaml")
    wl = "urn:pulumi:dev::gpusizer::gpusizer:index:GpuWorkload::w"
    d = gpusizer.plan(spec)
    props = {
        "instanceType": d.chosen.offer.instance_type,
        **SECURE,
        "instanceMarketOptions": {"marketType": "spot"},
        "tags": {cases.REQ: f"{d.required_gpu_memory_gib:.2f}", "gpusizer:sized-by": d.sized_by},
    }
    return analyzer.Resource("gpusizer:index:GpuWorkload", "w", workload.recorded_inputs(spec, []), wl), d, props


@pytest.mark.parametrize(
    "typ, props",
    [
        (ASG, {"maxSize": 100, "launchTemplate": {"id": "lt-0abc", "version": "$Latest"}}),
        ("aws:ec2/instance:Instance", {"launchTemplate": {"id": "lt-0abc"}, **SECURE}),
    ],
)
def test_a_group_launching_a_template_outside_the_stack_cannot_pass_unverified(typ, props):
    (f,) = _mandatory(typ, props, policy="gpusizer-no-overprovisioning")
    assert "template that is not in this stack" in f.message and "allowTemplates" in f.message


@pytest.mark.parametrize("pattern", ["lt-0cpuexternal", "LT-0CPU*"])
def test_the_platform_team_may_allow_a_template_that_lives_in_another_stack(pattern):
    """A CPU web tier whose launch template another stack owns: the reviewed template is the way through,
    and only that one (another external template still fails closed)."""
    props = {"maxSize": 3, "launchTemplate": {"id": "lt-0cpuexternal", "version": "$Latest"}}
    config = {"gpusizer-no-overprovisioning": {"allowTemplates": [{"template": pattern, "reason": "CPU web tier"}]}}
    assert _mandatory(ASG, props) and not _mandatory(ASG, props, config)
    other = {"maxSize": 3, "launchTemplate": {"id": "lt-0gpu", "version": "$Latest"}}
    assert _mandatory(ASG, other, config)


def test_a_group_outside_the_workload_launching_its_template_is_judged_through_the_template():
    w, d, props = _lora()
    lt = _under(w.urn, LT, "lt", {k: val for k, val in props.items() if k != "rootBlockDevice"})
    asg = _under("", ASG, "asg", {"maxSize": 200, "launchTemplate": {"id": cases.U}}, deps=[lt.urn])
    found = [f for f in analyzer.analyze([w, lt, asg], "dev") if f.policy == "gpusizer-no-overprovisioning"]
    assert [(f.resource, f.level) for f in found] == [("asg", "mandatory"), ("w", "mandatory")]
    assert "no GpuWorkload above it" in found[0].message
    assert "may run 200 nodes or pods together" in found[1].message  # the group runs the workload's template


def test_a_group_buying_on_demand_through_a_template_with_no_market_is_not_the_spot_decision():
    w, d, props = _lora()
    assert d.chosen.purchase == "spot"
    template = {k: val for k, val in props.items() if k not in ("rootBlockDevice", "instanceMarketOptions")}
    lt = _under(w.urn, LT, "lt", template)
    asg = _under(w.urn, ASG, "asg", {"maxSize": 1, "launchTemplate": {"id": cases.U}}, deps=[lt.urn])  # on-demand
    found = [f for f in analyzer.analyze([w, lt, asg], "dev") if f.policy == "gpusizer-no-overprovisioning"]
    assert [(f.resource, f.level) for f in found] == [("asg", "mandatory")]
    assert "buys on-demand capacity, the decision spot" in found[0].message
    spot_lt = _under(w.urn, LT, "lt", {**template, "instanceMarketOptions": {"marketType": "spot"}})
    assert not [f for f in analyzer.analyze([w, spot_lt, asg], "dev") if f.level == "mandatory"]


def test_capacity_beyond_the_decision_under_a_workload_is_blocked():
    w, d, props = _lora()
    assert verify.most_instances(d) == 1
    many = [_under(w.urn, INSTANCE, f"i{k}", props) for k in range(3)]  # each matches the decision alone
    found = [f for f in analyzer.analyze([w, *many], "dev") if f.policy == "gpusizer-no-overprovisioning"]
    assert [(f.resource, f.level) for f in found] == [("w", "mandatory")]
    assert "may run 3 nodes or pods together" in found[0].message and "decision 1" in found[0].message
    assert not [f for f in analyzer.analyze([w, many[0]], "dev") if f.level == "mandatory"]


def test_an_inflated_requirement_under_a_workload_is_replaced_by_the_re_planned_one():
    # 8 x H100 (637 GiB) passes a 400 GiB tag on memory alone; under a GpuWorkload the pack re-plans the requirement.
    props = {"instanceType": "p5.48xlarge", "tags": {cases.REQ: "400"}, **SECURE}
    assert not _mandatory(INSTANCE, props, policy="gpusizer-no-overprovisioning")  # standalone: the tag is all there is
    found = analyzer.analyze(_workload_stack(INSTANCE, props, SMALL_CHAT), "dev")
    (f,) = [f for f in found if f.policy == "gpusizer-no-overprovisioning"]
    need = gpusizer.plan(SMALL_CHAT).required_gpu_memory_gib
    assert (
        f.level == "mandatory" and f"for a {need:g} GiB requirement" in f.message and "its own says '400'" in f.message
    )


def test_a_workload_whose_recorded_spec_is_unknown_exempts_nothing():
    # An unknown spec once made the whole rule advisory at preview; now the label simply does not hold.
    props = {"instanceType": "p5.48xlarge", "tags": {cases.REQ: "20", "gpusizer:sized-by": "throughput"}, **SECURE}
    stack = _workload_stack(INSTANCE, props, SMALL_CHAT)
    stack[0] = dataclasses.replace(stack[0], inputs={"spec": cases.U, "pools": []})
    (f,) = [f for f in analyzer.analyze(stack, "dev") if f.policy == "gpusizer-no-overprovisioning"]
    assert f.level == "mandatory" and "recorded spec is unknown at preview" in f.message


def test_gpus_of_sidecar_containers_add_to_the_pod():
    # Seven sidecars (init containers with restartPolicy Always) of one H100 each beside one app container
    # hold 8 x H100 per pod; an ordinary init container's GPUs are held only while it runs. A 45 GiB
    # requirement sits between the two: one H100 (79.65 GiB, gpus.yaml) is under the 2x ratio (1.8x),
    # eight are not (14x).
    def pod(init_policy):
        init = [
            {"name": f"s{i}", "restartPolicy": init_policy, "resources": {"limits": {"nvidia.com/gpu": "1"}}}
            for i in range(7)
        ]
        return {
            "metadata": {"name": "sa", "annotations": {cases.K8S_REQ: "45"}},
            "spec": {
                "replicas": 1,
                "template": {
                    "spec": {
                        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                        "initContainers": init,
                        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                    }
                },
            },
        }

    (f,) = _mandatory("kubernetes:apps/v1:Deployment", pod("Always"), policy="gpusizer-no-overprovisioning")
    assert "8 x H100" in f.message
    assert not _mandatory("kubernetes:apps/v1:Deployment", pod("OnFailure"), policy="gpusizer-no-overprovisioning")


def test_attribute_based_selection_allowing_a_gpu_type_the_catalog_lacks_is_unverifiable():
    # p6-b300 (an accelerated family, policies/accelerator_families.yaml) is not in the packaged catalog: a
    # group allowed to launch it beside g6.xlarge was judged by g6.xlarge alone.
    assert "p6-b300.48xlarge" not in audit.types_of("aws")
    lt = analyzer.Resource(
        LT,
        "lt",
        {"imageId": "ami-1", "metadataOptions": {"httpTokens": "required"}},
        f"urn:pulumi:dev::gpusizer::{LT}::lt",
    )
    asg = analyzer.Resource(
        ASG,
        "asg",
        {
            "maxSize": 1,
            "tags": [{"key": cases.REQ, "value": "20", "propagateAtLaunch": True}],
            "mixedInstancesPolicy": {
                "launchTemplate": {
                    "launchTemplateSpecification": {"launchTemplateId": "lt-x"},
                    "overrides": [
                        {
                            "instanceRequirements": {
                                "vcpuCount": {"min": 4},
                                "memoryMib": {"min": 16384},
                                "acceleratorCount": {"min": 1},
                                "allowedInstanceTypes": ["g6.xlarge", "p6-b300.48xlarge"],
                            }
                        }
                    ],
                }
            },
        },
        f"urn:pulumi:dev::gpusizer::{ASG}::asg",
        "",
        (lt.urn,),
    )
    found = [f for f in analyzer.analyze([lt, asg], "dev") if f.level == "mandatory"]
    assert [(f.policy, f.resource) for f in found] == [("gpusizer-sized-gpu-capacity", "asg")]
    assert "p6-b300.48xlarge: unknown GPU type" in found[0].message


@pytest.mark.parametrize(
    "typ, spec, bounded",
    [
        ("kubernetes:apps/v1:DaemonSet", {}, False),  # a pod on every matching node
        ("kubernetes:batch/v1:CronJob", {"schedule": "* * * * *"}, False),  # concurrencyPolicy defaults to Allow
        ("kubernetes:batch/v1:CronJob", {"schedule": "* * * * *", "concurrencyPolicy": "Forbid"}, True),
    ],
)
def test_kubernetes_workloads_without_a_pod_bound_exceed_any_decision(typ, spec, bounded):
    pod = {
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"},
        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
    }
    template = {"spec": {"template": {"spec": pod}}} if "CronJob" in typ else {"template": {"spec": pod}}
    props = {
        "metadata": {"annotations": {cases.K8S_REQ: SMALL_CHAT_GIB}},
        "spec": {**spec, "jobTemplate": template} if "CronJob" in typ else template,
    }
    stack = _workload_stack(typ, props, SMALL_CHAT)[0:1]
    stack.append(_under(stack[0].urn, typ, "extra", props))
    found = [f for f in analyzer.analyze(stack, "dev") if f.policy == "gpusizer-no-overprovisioning"]
    if bounded:
        assert found == []
    else:
        assert [(f.resource, f.level) for f in found] == [("w", "mandatory")] and "without bound" in found[0].message


def test_an_autoscaled_group_whose_size_is_computed_counts_at_its_autoscalers_maximum():
    # GCP leaves an autoscaled group's targetSize to the autoscaler: unknown at a real first preview. The group
    # counts at the autoscaler's maximum instead of turning the whole rule advisory.
    spec = {**SMALL_CHAT, "placement": {"providers": ["gcp"], "regions": ["us-central1"]}}
    d = gpusizer.plan(spec)
    w = analyzer.Resource(
        "gpusizer:index:GpuWorkload",
        "w",
        workload.recorded_inputs(gpusizer.load_spec(spec), []),
        "urn:pulumi:dev::gpusizer::gpusizer:index:GpuWorkload::w",
    )
    labels = {cases.GCP_REQ: f"{d.required_gpu_memory_gib:.2f}".replace(".", "_"), "gpusizer-sized-by": d.sized_by}
    tpl = _under(
        w.urn,
        "gcp:compute/instanceTemplate:InstanceTemplate",
        "tpl",
        {"machineType": d.chosen.offer.instance_type, "labels": labels, **GCP_SECURE},
    )
    mig = _under(
        w.urn,
        "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager",
        "mig",
        {"targetSize": cases.U, "versions": [{"instanceTemplate": cases.U}]},
        deps=[tpl.urn],
    )
    scaler = _under(
        w.urn,
        "gcp:compute/regionAutoscaler:RegionAutoscaler",
        "as",
        {"autoscalingPolicy": {"maxReplicas": 40}},
        deps=[mig.urn],
    )
    found = [f for f in analyzer.analyze([w, tpl, mig, scaler], "dev") if f.policy == "gpusizer-no-overprovisioning"]
    assert [(f.resource, f.level) for f in found] == [("w", "mandatory")] and "may run 40 nodes" in found[0].message


def test_an_autoscaler_whose_maximum_is_unknown_is_named_not_dropped():
    pod = {
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"},
        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
    }
    dep = {
        "metadata": {"name": "extra", "annotations": {cases.K8S_REQ: SMALL_CHAT_GIB}},
        "spec": {"replicas": 1, "template": {"spec": pod}},
    }
    stack = _workload_stack("kubernetes:apps/v1:Deployment", dep, SMALL_CHAT)[0:1]
    stack.append(_under(stack[0].urn, "kubernetes:apps/v1:Deployment", "extra", dep))
    hpa = {"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "extra"}, "maxReplicas": 50}}
    stack.append(_under("", "kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "hpa", hpa))
    assert [f.level for f in analyzer.analyze(stack, "dev") if f.policy == "gpusizer-no-overprovisioning"] == [
        "mandatory"
    ]
    stack[-1] = _under(
        "",
        "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
        "hpa",
        {"spec": {**hpa["spec"], "maxReplicas": cases.U}},
    )
    (f,) = [f for f in analyzer.analyze(stack, "dev") if f.policy == "gpusizer-no-overprovisioning"]
    assert f.level == "advisory" and "maxReplicas" in f.message


def test_a_group_launching_two_templates_is_counted_once():
    w, d, props = _lora()
    template = {k: val for k, val in props.items() if k != "rootBlockDevice"}
    lt1, lt2 = _under(w.urn, LT, "lt1", template), _under(w.urn, LT, "lt2", template)
    asg = _under(w.urn, ASG, "asg", {"maxSize": 1, "launchTemplate": {"id": cases.U}}, deps=[lt1.urn, lt2.urn])
    assert not [f for f in analyzer.analyze([w, lt1, lt2, asg], "dev") if f.level == "mandatory"]


def test_a_type_copied_from_an_in_stack_template_and_unknown_at_preview_is_judged_through_the_template():
    # At a real first preview an instance naming only its launch template has a computed, unknown
    # instanceType: the rule once went advisory on it; with the template in the stack it follows that.
    w, d, props = _lora()
    template = {k: val for k, val in props.items() if k != "rootBlockDevice"}
    lt = _under(w.urn, LT, "lt", template)
    inputs = {"launchTemplate": {"id": cases.U}, **SECURE}
    many = [
        analyzer.Resource(
            INSTANCE,
            f"i{k}",
            inputs,
            f"urn:pulumi:dev::gpusizer::{INSTANCE}::i{k}",
            w.urn,
            (lt.urn,),
            {**inputs, "instanceType": cases.U},
        )
        for k in range(20)
    ]
    found = [f for f in analyzer.analyze([w, lt, *many], "dev") if f.policy == "gpusizer-no-overprovisioning"]
    assert [(f.resource, f.level) for f in found] == [("w", "mandatory")]
    assert "may run 20 nodes or pods together" in found[0].message
