"""Kubernetes: what the on-prem component registers, validated against the Kubernetes OpenAPI models."""

from __future__ import annotations

import copy

import pulumi
import pytest

from gpusizer.components import GpuWorkload, GpuWorkloadArgs
from tests.components.apimodel import k8s_api
from tests.components.apimodel.aws_api import ApiModelError
from tests.components.conftest import Registered, run_program

SPEC = {
    "name": "chat",
    "model": {"name": "llama-3.1-8b"},
    "inference": {"batch_size": 4},
    "placement": {"providers": ["onprem"]},
    "deploy": {"image": "vllm/vllm-openai:v0.11.0", "replicas": 2},
}


def _registered(tiny_pools, spec=SPEC):
    def prog():  # with an HF token, so the Secret and the env var that reads it are validated too
        GpuWorkload(spec["name"], spec, args=GpuWorkloadArgs(pools=tiny_pools, hf_token=pulumi.Output.secret("hf_x")))

    mocks, _, _ = run_program(prog)
    return mocks


@pytest.mark.parametrize("name", ["chat", "70b-chat"])
def test_every_registered_manifest_is_valid_against_the_openapi_models(tiny_pools, name):
    found = k8s_api.manifests(_registered(tiny_pools, {**SPEC, "name": name}).resources)
    kinds = sorted(type(m).__name__ for _, m in found)
    assert {"V1Namespace", "V1ResourceQuota", "V1Deployment", "V1Service", "V1Secret"} <= set(kinds)
    (dep,) = [m for _, m in found if type(m).__name__ == "V1Deployment"]
    container = dep.spec.template.spec.containers[0]
    assert container.readiness_probe.http_get.path == "/health"
    assert container.env[0].value_from.secret_key_ref.key == "token"


DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def _container(i):
    return i["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize(
    "typ, change",
    [
        # A misspelt container field.
        (DEPLOYMENT, lambda i: _container(i).update(imagePullPolicyy="Always")),
        # A string where the schema wants an integer.
        (DEPLOYMENT, lambda i: i["spec"].update(replicas="two")),
        # A strategy type the API server refuses.
        (DEPLOYMENT, lambda i: i["spec"]["strategy"].update(type="Rolling")),
        # Extended resources take only the requests. prefix in a quota.
        ("kubernetes:core/v1:ResourceQuota", lambda i: i["spec"]["hard"].update({"limits.nvidia.com/gpu": "2"})),
        # A readiness probe with a misspelt field, and one with a port of the wrong type.
        (DEPLOYMENT, lambda i: _container(i)["readinessProbe"].update(httpGett={"path": "/health"})),
        (DEPLOYMENT, lambda i: _container(i)["readinessProbe"]["httpGet"].update(port=["http"])),
        # Container args must be strings.
        (DEPLOYMENT, lambda i: _container(i).update(args=[{"model": "x"}])),
        # A Service type the API server refuses, and a Service name that starts with a digit (RFC 1035).
        ("kubernetes:core/v1:Service", lambda i: i["spec"].update(type="Public")),
        ("kubernetes:core/v1:Service", lambda i: i["metadata"].update(name="70b-chat")),
        # Secret data values are strings (stringData) or base64 strings (data), not numbers.
        ("kubernetes:core/v1:Secret", lambda i: i.update(stringData={"token": 42})),
        # A namespace name that is not an RFC 1123 label.
        ("kubernetes:core/v1:Namespace", lambda i: i["metadata"].update(name="Chat_NS")),
    ],
)
def test_openapi_models_reject_a_broken_manifest(tiny_pools, typ, change):
    (r,) = [r for r in _registered(tiny_pools).resources if r.typ == typ]
    inputs = copy.deepcopy(r.inputs)
    change(inputs)
    with pytest.raises(ApiModelError):
        k8s_api.manifests([Registered(r.typ, r.name, inputs, None)])
