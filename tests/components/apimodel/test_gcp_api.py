"""GCP: what the components register, built as google.cloud.compute_v1 messages."""

from __future__ import annotations

import copy

import pytest

from gpusizer.catalog import Catalog
from gpusizer.components import GpuWorkload, GpuWorkloadArgs
from tests.components.apimodel import gcp_api
from tests.components.apimodel.aws_api import ApiModelError
from tests.components.conftest import Registered, run_program
from tests.components.training import GCP_PRETRAIN as PRETRAIN
from tests.components.training import ULTRA
from tests.conftest import make_offer

# compute_v1 takes ~5 s to import on a machine without bytecode: every test here is slow.
pytestmark = pytest.mark.slow

QWEN = {
    "name": "qwen",
    "model": {"name": "qwen2.5-7b"},
    "inference": {"batch_size": 2},
    "placement": {"providers": ["gcp"], "regions": ["us-central1"]},
}
A3 = Catalog(
    (make_offer("a3-highgpu-1g", "H100", 1, 79.65, 11.0, provider="gcp", region="us-central1", zone="us-central1-a"),)
)
# Jobs that end: flex-start (at most 7 days) fits them, serving is refused there.
TUNE = {
    "name": "tune",
    "model": {"name": "llama-3.1-8b"},
    "task": "finetune",
    "training": {"sequence_length": 2048},
    "placement": {"providers": ["gcp"], "regions": ["us-central1"]},
}
SCENARIOS = {
    "g2-vm": (QWEN, None),
    "n1-attached-t4": (
        {
            **QWEN,
            "model": {"name": "qwen2.5-1.5b"},
            "precision": "fp16",  # T4: no bf16
            "placement": {**QWEN["placement"], "gpus": ["T4"]},
        },
        None,
    ),
    "spot-group": ({**QWEN, "placement": {**QWEN["placement"], "purchase": "spot"}, "deploy": {"replicas": 3}}, None),
    "a3-hyperdisk": (TUNE, GpuWorkloadArgs(catalog=A3)),
    "digit-first-name": ({**QWEN, "name": "70b-chat"}, None),
    "digit-first-group": ({**QWEN, "name": "70b-chat", "deploy": {"replicas": 2}}, None),
    "flex-start-a3-ultra": (TUNE, GpuWorkloadArgs(catalog=ULTRA)),
    "flex-start-roce-group": (PRETRAIN, GpuWorkloadArgs(catalog=ULTRA)),
    "reservation-bound-roce-group": (
        PRETRAIN,
        GpuWorkloadArgs(catalog=ULTRA, gcp_reservations={"us-central1-b": "ultra-res"}),
    ),
    "serving-with-token-and-gpu-scaling": (
        {
            **QWEN,
            "deploy": {
                "autoscaling": {"min_replicas": 1, "max_replicas": 3, "metric": "gpu_utilization", "target": 70}
            },
        },
        GpuWorkloadArgs(hf_token="hf_x"),
    ),
    "multi-node-a3-gpudirect": (
        {
            "name": "pretrain",
            "model": {"name": "llama-3.1-70b"},
            "task": "training",
            "training": {"sequence_length": 4096},
            "placement": {"providers": ["gcp"]},
        },
        GpuWorkloadArgs(
            catalog=Catalog(
                (
                    make_offer(
                        "a3-highgpu-8g",
                        "H100",
                        8,
                        79.65,
                        88.0,
                        provider="gcp",
                        region="us-central1",
                        zone="us-central1-a",
                        fabric="gpudirect-tcpx",
                        network_gbps=1000,
                        nvlink=True,
                    ),
                )
            )
        ),
    ),
}


def _registered(spec, args):
    mocks, _, _ = run_program(lambda: GpuWorkload(spec["name"], spec, args=args or GpuWorkloadArgs()))
    return mocks


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_registered_gcp_resource_is_a_valid_compute_message(scenario):
    spec, args = SCENARIOS[scenario]
    found = gcp_api.messages(_registered(spec, args).resources)
    kinds = {type(m).__name__ for _, m in found}
    assert kinds & {"Instance", "InstanceTemplate"}
    for _, msg in found:
        if type(msg).__name__ == "Instance":
            assert msg.scheduling.on_host_maintenance == "TERMINATE"
            assert msg.machine_type.startswith(f"zones/{msg.zone}/machineTypes/")


def _broken(typ, change, spec=QWEN):
    mocks = _registered(spec, None)
    (r,) = [r for r in mocks.resources if r.typ == typ]
    inputs = copy.deepcopy(r.inputs)
    change(inputs)
    return [Registered(r.typ, r.name, inputs, None)]


VM = "gcp:compute/instance:Instance"


@pytest.mark.parametrize(
    "change",
    [
        # A provisioning model Compute Engine does not have.
        lambda i: i["scheduling"].update(provisioningModel="SPOTTY"),
        lambda i: i["scheduling"].update(onHostMaintenance="LIVE_MIGRATE"),
        # A field the Scheduling message does not have.
        lambda i: i["scheduling"].update(preemptable=True),
        # A NIC type that does not exist.
        lambda i: i["networkInterfaces"][0].update(nicType="GVNIC2"),
        # A name that starts with a digit (RFC 1035).
        lambda i: i.update(name="70b-chat-vm"),
        # A label value with upper-case letters.
        lambda i: i["labels"].update(team="ML"),
    ],
)
def test_compute_model_rejects_a_broken_instance(change):
    with pytest.raises(ApiModelError):
        gcp_api.messages(_broken(VM, change))


def test_compute_model_rejects_an_untranslated_resource_type():
    with pytest.raises(ApiModelError) as e:
        gcp_api.messages([Registered("gcp:compute/disk:Disk", "x", {}, None)])
    assert "no API translation" in str(e.value)
