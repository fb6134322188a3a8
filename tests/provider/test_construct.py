"""Construct over gRPC: the children of a GpuWorkload declared in any language are the Python program's.

Each case takes one workload of a stack file, constructs it through the
plugin as the engine would for a TypeScript or YAML program (the spec and
pools in the schema's camelCase names, the stack's config passed along),
and compares every resource registered with the monitor, its URN (type,
parent chain, name) and its inputs, with what __main__.py registers for the
same stack under Pulumi's mocks (tests/components/test_program.py).
"""

from __future__ import annotations

import json

import grpc
import pytest
import yaml
from google.rpc import status_pb2
from pulumi.runtime.proto import errors_pb2

import gpusizer
from gpusizer.components import serving
from gpusizer.render import plan_json
from provider.names import camel_case
from tests.components.conftest import REPO, run_stack, secret_value
from tests.provider.conftest import plain

pytestmark = pytest.mark.slow  # whole components, in the plugin's process and under mocks (~2 s a case)

DEV, HYBRID = REPO / "stacks/Pulumi.dev.yaml", REPO / "stacks/Pulumi.hybrid.yaml"
CASES = {"aws": (DEV, "dev-chat"), "onprem": (HYBRID, "support-chat")}


def camel(value):
    """A spec or pool as a program in another language writes it: the schema's camelCase names."""
    if isinstance(value, dict):
        return {camel_case(k): camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel(v) for v in value]
    return value


def stack_case(stack_file, name):
    """(stack config, the named workload's spec, the stack's pools) of a stack file."""
    config = yaml.safe_load(stack_file.read_text())["config"]
    spec = next(w for w in config["gpusizer:workloads"] if isinstance(w, dict) and w["name"] == name)
    return config, spec, config.get("gpusizer:pools", [])


def ours(resources, name):
    """The workload `name` and everything registered under it, as (URN, inputs)."""
    return sorted(
        (r.urn, json.dumps(r.inputs, sort_keys=True))
        for r in resources
        if r.name == name or r.name.startswith(f"{name}-")
    )


def construct(plugin, stack_file, name, **inputs):
    config, spec, pools = stack_case(stack_file, name)
    stack = stack_file.name.split(".")[1]
    return plugin.construct(name, {"spec": camel(spec), "pools": camel(pools), **inputs}, config=config, stack=stack)


@pytest.mark.parametrize("case", sorted(CASES))
def test_construct_registers_the_children_the_python_program_registers(plugin, case):
    stack_file, name = CASES[case]
    mocks, exports, _ = run_stack(stack_file)
    program = ours(mocks.resources, name)
    monitor, response = construct(plugin, stack_file, name)
    assert not isinstance(response, grpc.RpcError), response.details()
    assert ours(monitor.registered, name) == program
    kinds = {urn.split("::")[2].split("$")[-1] for urn, _ in program}
    assert {"gpusizer:index:GpuWorkload", f"gpusizer:{case}:GpuCapacity"} <= kinds and len(program) >= 4
    if case == "aws":
        assert "aws:autoscaling/group:Group" in kinds  # the stack's capacity failover
    else:
        assert {"kubernetes:core/v1:Namespace", "kubernetes:apps/v1:Deployment", "kubernetes:core/v1:Service"} <= kinds


@pytest.mark.parametrize("case", sorted(CASES))
def test_construct_returns_the_choice_and_the_decision(plugin, case):
    stack_file, name = CASES[case]
    _, exports, _ = run_stack(stack_file)
    exported = exports[name]
    _, response = construct(plugin, stack_file, name)
    state = plain(response.state)
    assert state["provider"] == exported["provider"] == case
    for key in (
        "region",
        "instance_type",
        "purchase",
        "hourly_usd",
        "monthly_usd",
        "replicas",
        "nodes",
        "required_gpu_memory_gib",
    ):
        assert state[camel_case(key)] == exported[key], key
    assert f"{state['gpuCount']:g} x {state['gpu']}" == exported["gpu"]
    assert json.loads(state["decisionJson"]) == exported["decision"]
    assert state["sizedBy"] == exported["decision"]["sized_by"]
    if case == "onprem":
        assert state["namespace"] == exported["namespace"] == "support-chat-hybrid"
        assert state["endpoint"] == (
            f"http://{exported['service_name']}.support-chat-hybrid.svc.cluster.local:{serving.PORT}/v1"
        )
    else:
        # Serving on VMs runs vLLM behind an internal NLB (the serving branch): the endpoint the program exports.
        assert state["asgName"] == exported["asg_name"]
        assert state["endpoint"] == exported["endpoint"]
        assert state["endpoint"].startswith("http://") and state["endpoint"].endswith(
            f".elb.us-east-1.amazonaws.com:{serving.PORT}"
        )


def test_the_component_records_the_spec_and_pools_the_pack_replans(plugin):
    monitor, _ = construct(plugin, HYBRID, "support-chat")
    (component,) = [r for r in monitor.registered if r.typ == "gpusizer:index:GpuWorkload"]
    recorded = monitor.outputs[component.urn]
    _, spec, pools = stack_case(HYBRID, "support-chat")
    assert gpusizer.load_spec(recorded["spec"]) == gpusizer.load_spec(spec)  # snake_case, as the engine reads it
    assert [p["name"] for p in recorded["pools"]] == [p["name"] for p in pools]
    assert component.inputs["spec"] == recorded["spec"]


def test_deploy_may_be_given_beside_the_spec(plugin):
    config, spec, _ = stack_case(DEV, "dev-chat")
    monitor, response = plugin.construct(
        "dev-chat",
        {"spec": camel({k: v for k, v in spec.items() if k != "deploy"}), "deploy": camel(spec["deploy"])},
        config=config,
    )
    assert plain(response.state)["asgName"]  # capacity failover: an Auto Scaling group
    mocks, _, _ = run_stack(DEV)
    assert ours(monitor.registered, "dev-chat") == ours(mocks.resources, "dev-chat")


def property_errors(exc: grpc.RpcError) -> dict[str, str]:
    """The property path -> reason pairs of an INVALID_ARGUMENT error, as the engine shows them."""
    assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT, exc
    details = dict(exc.trailing_metadata())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(details)
    errors = errors_pb2.InputPropertiesError()
    status.details[0].Unpack(errors)
    return {e.property_path: e.reason for e in errors.errors}


SPEC = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "placement": {"providers": ["aws"]}}


@pytest.mark.parametrize(
    "inputs, path, words",
    [
        ({"spec": {**SPEC, "inference": {"batchSize": -1}}}, "spec.inference.batchSize", "To fix"),
        ({"spec": {**SPEC, "inference": {"batch_size": 4}}}, "spec.inference.batch_size", "use one of batchSize"),
        ({"spec": {**SPEC, "model": {"name": "no-such-model-xyz"}}}, "spec.model.name", "no-such-model-xyz"),
        (
            {"spec": {**SPEC, "placement": {"providers": ["aws"], "maxHourlyUsd": 0.01}}},
            "spec.placement",
            "no feasible offer",
        ),
        ({"spec": {**SPEC, "deploy": {"replicas": 2}}, "deploy": {"replicas": 2}}, "deploy", "given twice"),
        ({"spec": SPEC, "kubeconfigs": {"rack-z": "x"}}, "kubeconfigs", "rack-z"),
        ({"spec": {**SPEC, "placement": {"providers": ["aws"]}}, "catalog": "no/such/catalog"}, "catalog", "no/such"),
    ],
)
def test_bad_input_is_refused_naming_the_property_and_registers_nothing(plugin, inputs, path, words):
    monitor, response = plugin.construct("chat", inputs, config={"aws:region": "us-east-1"})
    assert isinstance(response, grpc.RpcError), "constructed"
    errors = property_errors(response)
    assert path in errors and words in errors[path], errors
    assert monitor.registered == []


def test_a_bad_stack_setting_is_refused_as_its_stack_property(plugin):
    big = {"name": "big", "model": {"name": "llama-3.1-405b"}, "placement": {"providers": ["aws"]}}
    monitor, response = plugin.construct(
        "big", {"spec": big, "stack": {"awsPrivateCidr": "172.31.240.0/29"}}, config={"aws:region": "us-east-1"}
    )
    errors = property_errors(response)
    assert "stack.awsPrivateCidr" in errors and "To fix" in errors["stack.awsPrivateCidr"]
    assert monitor.registered == []


def test_a_secret_or_unknown_spec_is_refused_it_must_be_known_to_size(plugin):
    monitor, response = plugin.construct("chat", {"spec": SPEC}, secret_inputs=("spec",))
    assert "must be a plain value known when the program runs" in property_errors(response)["spec"]
    assert monitor.registered == []


def test_secrets_reach_only_the_cluster_provider_and_the_token_secret(plugin):
    config, spec, pools = stack_case(HYBRID, "support-chat")
    monitor, response = plugin.construct(
        "support-chat",
        {
            "spec": camel(spec),
            "pools": camel(pools),
            "kubeconfigs": {"rack-a": "apiVersion: v1"},
            "hfToken": "hf_t0ken",
        },
        config=config,
        stack="hybrid",
        secret_inputs=("kubeconfigs", "hfToken"),
    )
    assert not isinstance(response, grpc.RpcError), response.details()
    (provider,) = [r for r in monitor.registered if r.typ == "pulumi:providers:kubernetes"]
    (token,) = [r for r in monitor.registered if r.typ == "kubernetes:core/v1:Secret"]
    assert secret_value(provider.inputs["kubeconfig"]) == "apiVersion: v1"
    assert secret_value(token.inputs["stringData"]) == {"token": "hf_t0ken"}
    others = [r.inputs for r in monitor.registered if r not in (provider, token)]
    assert "hf_t0ken" not in repr(others) and "apiVersion: v1" not in repr(others)
    assert "hf_t0ken" not in repr(plain(response.state)) and "hf_t0ken" not in repr(plugin.engine.logs)


def test_plan_returns_the_decision_without_registering_anything(plugin):
    spec = {**SPEC, "inference": {"contextLength": 4096, "batchSize": 4}}
    response = plugin.invoke({"spec": spec, "top": 5})
    assert not response.failures
    result = plain(getattr(response, "return"))
    expected = plan_json.plan(gpusizer.plan({**SPEC, "inference": {"context_length": 4096, "batch_size": 4}}), top=5)
    assert result["feasible"] is True
    assert json.loads(result["decisionJson"]) == expected
    assert (result["provider"], result["instanceType"], result["hourlyUsd"]) == (
        "aws",
        expected["choice"]["instance_type"],
        expected["choice"]["hourly_usd"],
    )


def test_plan_of_an_infeasible_spec_says_so_with_every_rejection(plugin):
    spec = {**SPEC, "model": {"name": "llama-3.1-405b"}, "placement": {"providers": ["aws"], "maxHourlyUsd": 1}}
    result = plain(getattr(plugin.invoke({"spec": spec}), "return"))
    assert result["feasible"] is False and "provider" not in result
    assert json.loads(result["decisionJson"])["rejections_by_reason"]


def test_plan_of_an_invalid_spec_fails_naming_the_property(plugin):
    response = plugin.invoke({"spec": {**SPEC, "inference": {"contextLength": 0}}})
    assert [f.property for f in response.failures] == ["spec.inference.contextLength"]
    assert "To fix" in response.failures[0].reason


def test_at_preview_the_choice_is_known(plugin):
    # The sizing runs on plain values at construction, so a first `pulumi preview` already shows the choice.
    _, response = construct(plugin, DEV, "dev-chat")
    known = plain(response.state)
    _, preview = plugin.construct(
        "dev-chat", {"spec": camel(stack_case(DEV, "dev-chat")[1])}, config={"aws:region": "us-east-1"}, preview=True
    )
    state = plain(preview.state)
    for key in ("provider", "instanceType", "gpuCount", "hourlyUsd", "monthlyUsd", "decisionJson"):
        assert state[key] == known[key], key


def test_stack_settings_reach_the_children_as_stack_config_does(plugin):
    # The Python program's gpusizer:awsNetworks, given as `stack.awsNetworks` (tests/components/test_program.py).
    net = {"us-east-1": {"vpcId": "vpc-0abc", "subnetIds": ["subnet-1", "subnet-2"]}}
    monitor, response = construct(plugin, DEV, "dev-chat", stack={"awsNetworks": net})
    assert not isinstance(response, grpc.RpcError), response.details()
    (asg,) = [r.inputs for r in monitor.registered if r.typ == "aws:autoscaling/group:Group"]
    assert asg["vpcZoneIdentifiers"] == ["subnet-1", "subnet-2"]
    mocks, _, _ = run_stack(DEV, {"gpusizer:awsNetworks": net})
    assert ours(monitor.registered, "dev-chat") == ours(mocks.resources, "dev-chat")
