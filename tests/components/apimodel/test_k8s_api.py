"""Kubernetes: what the on-prem component registers, validated against the Kubernetes OpenAPI models."""

from __future__ import annotations

import copy

import pytest

from components import GpuWorkload, GpuWorkloadArgs
from tests.components.apimodel import k8s_api
from tests.components.apimodel.aws_api import ApiModelError
from tests.components.conftest import Registered, run_program

SPEC = {"name": "chat", "model": {"name": "llama-3.1-8b"}, "inference": {"batch_size": 4},
        "placement": {"providers": ["onprem"]}, "deploy": {"image": "vllm/vllm-openai:v0.6.3", "replicas": 2}}


def _registered(tiny_pools, spec=SPEC):
    mocks, _, _ = run_program(lambda: GpuWorkload(spec["name"], spec, args=GpuWorkloadArgs(pools=tiny_pools)))
    return mocks


@pytest.mark.parametrize("name", ["chat", "70b-chat"])
def test_every_registered_manifest_is_valid_against_the_openapi_models(tiny_pools, name):
    found = k8s_api.manifests(_registered(tiny_pools, {**SPEC, "name": name}).resources)
    kinds = sorted(type(m).__name__ for _, m in found)
    assert {"V1Namespace", "V1ResourceQuota", "V1Deployment"} <= set(kinds)


DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def _container(i):
    return i["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("typ, change", [
    # A misspelt container field.
    (DEPLOYMENT, lambda i: _container(i).update(imagePullPolicyy="Always")),
    # A string where the schema wants an integer.
    (DEPLOYMENT, lambda i: i["spec"].update(replicas="two")),
    # A strategy type the API server refuses.
    (DEPLOYMENT, lambda i: i["spec"]["strategy"].update(type="Rolling")),
    # Extended resources take only the requests. prefix in a quota.
    ("kubernetes:core/v1:ResourceQuota", lambda i: i["spec"]["hard"].update({"limits.nvidia.com/gpu": "2"})),
    # A namespace name that is not an RFC 1123 label.
    ("kubernetes:core/v1:Namespace", lambda i: i["metadata"].update(name="Chat_NS")),
])
def test_openapi_models_reject_a_broken_manifest(tiny_pools, typ, change):
    (r,) = [r for r in _registered(tiny_pools).resources if r.typ == typ]
    inputs = copy.deepcopy(r.inputs)
    change(inputs)
    with pytest.raises(ApiModelError):
        k8s_api.manifests([Registered(r.typ, r.name, inputs, None)])
