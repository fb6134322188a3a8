"""GCP path under Pulumi mocks: machine family, accelerators only on N1, scheduling, labels, MIG."""

from __future__ import annotations

import math

import pytest

import gpusizer
from components import GpuWorkload
from components.gcp import machine_and_accelerators
from gpusizer import metadata
from tests.components.conftest import run_program

QWEN = {"name": "qwen", "model": {"name": "qwen2.5-7b"}, "inference": {"batch_size": 2},
        "placement": {"providers": ["gcp"], "regions": ["us-central1"]}}


def test_g2_instance_carries_its_gpus_and_secure_defaults():
    plan = gpusizer.plan(QWEN)
    mocks, _ = run_program(lambda: GpuWorkload("qwen", QWEN).instance_type)
    vm = mocks.one("gcp:compute/instance:Instance")
    machine, accels = machine_and_accelerators(plan.chosen.offer.instance_type)
    assert vm["machineType"] == machine
    assert vm["zone"] == plan.chosen.offer.zone
    assert not vm.get("guestAccelerators") if not accels else vm["guestAccelerators"]
    sched = vm["scheduling"]
    assert sched["onHostMaintenance"] == "TERMINATE"
    assert sched["provisioningModel"] == "STANDARD"
    assert vm["shieldedInstanceConfig"]["enableVtpm"] is True
    assert "accessConfigs" not in vm["networkInterfaces"][0]  # no external IP
    assert vm["bootDisk"]["initializeParams"]["size"] == plan.workload.disk_gib
    assert vm["labels"][metadata.GCP_REQUIRED] == str(math.ceil(plan.required_gpu_memory_gib))
    assert vm["labels"][metadata.GCP_WORKLOAD] == "qwen"
    sa = mocks.one("gcp:serviceaccount/account:Account")
    assert sa["accountId"] == "gpusizer-qwen"
    assert vm["serviceAccount"]["email"] == "qwen-gcp-sa@mock.iam.gserviceaccount.com"
    assert "https://www.googleapis.com/auth/cloud-platform" not in vm["serviceAccount"]["scopes"]


def test_n1_takes_attached_accelerators():
    spec = {**QWEN, "model": {"name": "qwen2.5-1.5b"}, "placement": {**QWEN["placement"], "gpus": ["T4"]}}
    plan = gpusizer.plan(spec)
    assert plan.chosen.offer.instance_type.startswith("n1-")
    mocks, _ = run_program(lambda: GpuWorkload("qwen", spec).instance_type)
    vm = mocks.one("gcp:compute/instance:Instance")
    assert vm["machineType"].startswith("n1-standard-")
    assert vm["guestAccelerators"] == [{"type": "nvidia-tesla-t4", "count": plan.chosen.gpu_count}]


def test_spot_uses_the_spot_provisioning_model():
    spec = {**QWEN, "placement": {**QWEN["placement"], "purchase": "spot"}}
    mocks, _ = run_program(lambda: GpuWorkload("qwen", spec).instance_type)
    sched = mocks.one("gcp:compute/instance:Instance")["scheduling"]
    assert (sched["provisioningModel"], sched["preemptible"], sched["automaticRestart"]) == ("SPOT", True, False)


def test_replicas_use_a_template_and_managed_group():
    spec = {**QWEN, "deploy": {"replicas": 3}}
    mocks, _ = run_program(lambda: GpuWorkload("qwen", spec).instance_type)
    tmpl = mocks.one("gcp:compute/instanceTemplate:InstanceTemplate")
    mig = mocks.one("gcp:compute/instanceGroupManager:InstanceGroupManager")
    assert mig["targetSize"] == 3
    assert tmpl["scheduling"]["onHostMaintenance"] == "TERMINATE"
    assert metadata.GCP_REQUIRED in tmpl["labels"]
    assert not mocks.of_type("gcp:compute/instance:Instance")


@pytest.mark.parametrize("itype, machine, accels", [
    ("a3-highgpu-8g", "a3-highgpu-8g", []),  # A3 comes with its H100s
    ("n1-standard-32+nvidia-tesla-v100x8", "n1-standard-32", [{"type": "nvidia-tesla-v100", "count": 8}]),
])
def test_machine_family_rules(itype, machine, accels):
    assert machine_and_accelerators(itype) == (machine, accels)
