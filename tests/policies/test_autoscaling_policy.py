"""Autoscaled capacity under the pack: the budget counts max replicas, bounds must fit pool and quota."""

from __future__ import annotations

import re

import pytest

import gpusizer
from gpusizer.components import GpuWorkload
from gpusizer.policies import analyzer, budget, mocks, rules, scaling, sizing
from gpusizer.policies import view as v

QUERY = 'sum(rate(nginx_ingress_controller_requests{service="chat"}[2m]))'
GCP = {
    "name": "chat",
    "model": {"name": "llama-3.1-8b"},
    "inference": {"batch_size": 4},
    "placement": {"providers": ["gcp"], "regions": ["us-central1"]},
    "deploy": {
        "autoscaling": {"min_replicas": 0, "max_replicas": 4, "metric": "queue_depth", "query": QUERY, "target": 10}
    },
}
BUDGET = "gpusizer-gpu-budget"


def _findings(spec: dict, budget: float) -> list[analyzer.Finding]:
    recorder, _ = mocks.run_program(lambda: GpuWorkload("chat", spec) and None)
    resources = analyzer.recorded(recorder.resources)
    return analyzer.analyze(resources, "dev", {BUDGET: {"maxHourlyUsd": budget, "enforcementLevel": "mandatory"}})


def test_budget_counts_the_autoscalers_max_replicas():
    node = gpusizer.plan(GCP).chosen
    per_node = node.hourly_usd / node.instances  # the plan's price of one VM; the pack prices the same catalog
    # Between one VM (the group's own count without a target size) and four (the autoscaler's max).
    over = [f for f in _findings(GCP, per_node * 2.5) if f.policy == BUDGET]
    assert over and over[0].level == "mandatory"
    total = float(re.search(r"costs \$([0-9,.]+)/h", over[0].message)[1].replace(",", ""))
    assert total == pytest.approx(per_node * 4, rel=0.01)  # 4 VMs; the pack takes the type's lowest catalog price
    assert not [f for f in _findings(GCP, per_node * 4.5) if f.policy == BUDGET]


def _k8s(typ: str, urn: str, props: dict) -> sizing.StackResource:
    return sizing.StackResource(typ, v.View(props), urn)


DEPLOYMENT = {"metadata": {"namespace": "chat", "name": "chat"}, "spec": {"replicas": 0}}


def test_keda_and_hpa_maxima_reach_their_named_deployment():
    dep = _k8s("kubernetes:apps/v1:Deployment", "urn:dep", DEPLOYMENT)
    keda = _k8s(
        scaling.KEDA_SCALED_OBJECT,
        "urn:so",
        {
            "metadata": {"namespace": "chat", "name": "chat"},
            "spec": {"scaleTargetRef": {"name": "chat"}, "maxReplicaCount": 4},
        },
    )
    assert scaling.maxima([dep, keda]) == ({"urn:dep": 4}, [])
    unset = _k8s(
        scaling.KEDA_SCALED_OBJECT,
        "urn:so",
        {"metadata": {"namespace": "chat"}, "spec": {"scaleTargetRef": {"name": "chat"}}},
    )
    assert scaling.maxima([dep, unset]) == ({"urn:dep": 100}, [])  # KEDA's default maxReplicaCount
    other_ns = _k8s(
        scaling.K8S_HPAS[-1],
        "urn:hpa",
        {
            "metadata": {"namespace": "other"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "chat"}, "maxReplicas": 9},
        },
    )
    assert scaling.maxima([dep, other_ns]) == ({}, [])
    same_ns = _k8s(
        scaling.K8S_HPAS[-1],
        "urn:hpa",
        {
            "metadata": {"namespace": "chat"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "chat"}, "maxReplicas": 9},
        },
    )
    assert scaling.maxima([dep, same_ns]) == ({"urn:dep": 9}, [])


@pytest.mark.parametrize("version", ["v1", "v2beta1", "v2beta2", "v2"])
def test_every_hpa_version_reaches_a_deployment_or_its_patch_in_the_default_namespace(version):
    # A review found 50 pods under an autoscaling/v1 HPA, or a DeploymentPatch, or a Deployment naming no
    # namespace beside an HPA in "default", counted at the Deployment's 0 replicas.
    hpa = _k8s(
        f"kubernetes:autoscaling/{version}:HorizontalPodAutoscaler",
        "urn:hpa",
        {
            "metadata": {"namespace": "default"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "chat"}, "maxReplicas": 50},
        },
    )
    for typ in ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:DeploymentPatch"):
        dep = _k8s(typ, "urn:dep", {"metadata": {"name": "chat"}, "spec": {"replicas": 0}})
        assert scaling.maxima([dep, hpa]) == ({"urn:dep": 50}, []), typ


def test_one_unreadable_autoscaler_leaves_the_others_maxima_counted():
    # The budget once dropped every autoscaler's maximum when one lacked its own, counting an autoscaled
    # group at its own size. Two autoscalers target one priced GPU resource here; one has no maximum.
    vm = sizing.StackResource("gcp:compute/instance:Instance", v.View({"machineType": "g2-standard-4"}), "urn:vm")
    good = sizing.StackResource(
        scaling.GCP_AUTOSCALER, v.View({"autoscalingPolicy": {"maxReplicas": 9}}), "urn:as", dependencies=("urn:vm",)
    )
    broken = sizing.StackResource(
        scaling.GCP_AUTOSCALER, v.View({"autoscalingPolicy": {}}), "urn:as-2", dependencies=("urn:vm",)
    )
    scaled, failed = scaling.maxima([vm, broken, good])
    assert scaled == {"urn:vm": 9}
    assert [(urn, str(exc)) for urn, exc in failed] == [("urn:as-2", "autoscalingPolicy.maxReplicas is missing")]
    one = budget.hourly(vm, {})
    found = budget.stack_budget([vm, broken, good], 8.5 * one)  # 9 VMs at most: over a budget of 8.5
    assert [urn for _, urn in found] == ["urn:as-2", None] and "costs" in found[1][0]


def test_autoscaling_bound_beyond_pool_free_gpus_is_blocked():
    (pool,) = gpusizer.parse_pools(
        [
            {
                "name": "rack-a",
                "location": "fra-dc1",
                "gpu": "L40S",
                "gpus_per_node": 8,
                "gpus_free": 2,
                "usd_per_gpu_hour": 0.4,
            }
        ]
    )  # 2 GPUs free; one GPU serves a replica
    spec = {**GCP, "placement": {"providers": ["onprem"]}}
    workload = sizing.StackResource(
        sizing.WORKLOAD,
        v.View({"spec": gpusizer.load_spec(spec).model_dump(mode="json"), "pools": [pool.model_dump(mode="json")]}),
        f"urn:pulumi:dev::p::{sizing.WORKLOAD}::chat",
    )
    ((msg, urn),) = rules.check_stack("gpusizer-autoscaling-bounds", [workload])
    assert "max_replicas 4" in msg and "2 free" in msg and urn == workload.urn
    assert rules.BY_NAME["gpusizer-autoscaling-bounds"].level == "mandatory"
    fits = {**spec, "deploy": {"autoscaling": {**GCP["deploy"]["autoscaling"], "max_replicas": 2}}}
    ok = sizing.StackResource(
        sizing.WORKLOAD,
        v.View({"spec": gpusizer.load_spec(fits).model_dump(mode="json"), "pools": [pool.model_dump(mode="json")]}),
        workload.urn,
    )
    assert rules.check_stack("gpusizer-autoscaling-bounds", [ok]) == []
