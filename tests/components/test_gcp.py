"""GCP path under Pulumi mocks: machine family, accelerators only on N1, scheduling, labels, disks, MIG."""

from __future__ import annotations

import pytest

import gpusizer
from gpusizer.catalog import Catalog
from gpusizer.components import GpuWorkload, GpuWorkloadArgs, gcp, tags
from tests.components.conftest import REPO, parent_type, run_program
from tests.components.training import GCP_PRETRAIN
from tests.conftest import make_offer

QWEN = {
    "name": "qwen",
    "model": {"name": "qwen2.5-7b"},
    "inference": {"batch_size": 2},
    "placement": {"providers": ["gcp"], "regions": ["us-central1"]},
}
# A short fine-tune: a job that ends, so flex-start capacity fits it.
TUNE = {
    "name": "qwen",
    "model": {"name": "llama-3.1-8b"},
    "task": "finetune",
    "training": {"sequence_length": 2048},
    "placement": {"providers": ["gcp"], "regions": ["us-central1"]},
}
VM = "gcp:compute/instance:Instance"
TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
ROUTER, NAT = "gcp:compute/router:Router", "gcp:compute/routerNat:RouterNat"


def _with(spec: dict, **sections) -> dict:
    return {**spec, **{k: {**spec.get(k, {}), **v} for k, v in sections.items()}}


def test_g2_vm_carries_its_gpu_and_secure_defaults():
    plan = gpusizer.plan(QWEN)
    c = plan.chosen
    assert c.offer.instance_type.startswith("g2-")
    mocks, _, resolved = run_program(lambda: _export(GpuWorkload("qwen", QWEN)))
    seen = resolved["out"]
    vm = mocks.one(VM)
    assert vm["machineType"] == c.offer.instance_type
    assert not vm.get("guestAccelerators")  # G2 comes with its L4
    assert vm["zone"] == c.offer.zone
    assert vm["scheduling"] == {
        "onHostMaintenance": "TERMINATE",
        "automaticRestart": True,
        "preemptible": False,
        "provisioningModel": "STANDARD",
    }
    assert vm["shieldedInstanceConfig"] == {
        "enableSecureBoot": False,
        "enableVtpm": True,
        "enableIntegrityMonitoring": True,
    }
    assert vm["networkInterfaces"] == [{"network": "default"}]  # no access config: no external IP
    disk = vm["bootDisk"]["initializeParams"]
    assert (disk["image"], disk["size"], disk["type"]) == (gcp.DLVM_IMAGE, plan.workload.disk_gib, "pd-balanced")
    assert vm["metadata"]["enable-oslogin"] == "TRUE"
    labels = vm["labels"]
    assert labels[tags.GCP_REQUIRED] == f"{plan.required_gpu_memory_gib:.2f}".replace(".", "_")
    assert labels[tags.GCP_WORKLOAD] == "qwen"
    assert labels[tags.GCP_GPU] == "l4" and labels[tags.GCP_PURCHASE] == "on-demand"
    sa = mocks.one("gcp:serviceaccount/account:Account")
    assert sa["accountId"] == "gpusizer-qwen-dev"  # workload and stack: two stacks do not collide
    assert vm["serviceAccount"] == {
        "email": "gpusizer-qwen-dev@my-project.iam.gserviceaccount.com",
        "scopes": gcp.SCOPES,
    }
    assert vm["allowStoppingForUpdate"] is True  # a machine-type change stops and resizes in place
    assert vm["name"] == "qwen-dev"
    assert not any(s.endswith("/cloud-platform") for s in gcp.SCOPES)
    assert not mocks.of_type(TEMPLATE) and not mocks.calls  # no invokes on the GCP path
    # No external IP, so egress goes through a Cloud NAT in the VM's region, on the VM's network.
    router, nat = mocks.one(ROUTER), mocks.one(NAT)
    assert (router["region"], router["network"]) == (c.offer.region, "default")
    assert nat["router"] == router["name"] and nat["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"
    assert {parent_type(r) for r in mocks.resources if r.typ.startswith("gcp:")} == {"gpusizer:gcp:GpuCapacity"}
    assert seen["instance_type"] == c.offer.instance_type
    assert seen["instance_self_link"].endswith("/qwen-gcp-vm")
    assert seen["decision"]["choice"]["zone"] == c.offer.zone


def test_n1_takes_attached_accelerators():
    spec = {
        **_with(QWEN, model={"name": "qwen2.5-1.5b"}, placement={"gpus": ["T4"]}),
        "precision": "fp16",
    }  # T4: no bf16
    plan = gpusizer.plan(spec)
    assert plan.chosen.offer.instance_type.startswith("n1-")
    mocks, _, _ = run_program(lambda: GpuWorkload("qwen", spec))
    vm = mocks.one(VM)
    host, _, _ = plan.chosen.offer.instance_type.partition("+")
    assert vm["machineType"] == host
    assert vm["guestAccelerators"] == [{"type": "nvidia-tesla-t4", "count": plan.chosen.gpu_count}]
    assert vm["scheduling"]["onHostMaintenance"] == "TERMINATE"


def test_spot_uses_the_spot_provisioning_model():
    spec = _with(QWEN, placement={"purchase": "spot"})
    mocks, _, _ = run_program(lambda: GpuWorkload("qwen", spec))
    assert mocks.one(VM)["scheduling"] == {
        "onHostMaintenance": "TERMINATE",
        "automaticRestart": False,
        "preemptible": True,
        "provisioningModel": "SPOT",
        "instanceTerminationAction": "STOP",
    }
    assert mocks.one(VM)["labels"][tags.GCP_PURCHASE] == "spot"


def test_replicas_use_a_template_and_managed_group():
    spec = _with(QWEN, placement={"purchase": "spot"}, deploy={"replicas": 3})
    plan = gpusizer.plan(spec)
    mocks, _, resolved = run_program(lambda: _export(GpuWorkload("qwen", spec)))
    seen = resolved["out"]
    tmpl, mig = mocks.one(TEMPLATE), mocks.one(MIG)
    assert tmpl["machineType"] == plan.chosen.offer.instance_type
    assert tmpl["scheduling"]["provisioningModel"] == "SPOT"
    assert tmpl["scheduling"]["instanceTerminationAction"] == "DELETE"  # the group recreates it
    (disk,) = tmpl["disks"]
    assert (disk["boot"], disk["diskSizeGb"], disk["diskType"]) == (True, plan.workload.disk_gib, "pd-balanced")
    assert tmpl["labels"][tags.GCP_REQUIRED] == f"{plan.required_gpu_memory_gib:.2f}".replace(".", "_")
    assert (mig["targetSize"], mig["zone"]) == (3, plan.chosen.offer.zone)
    assert mig["versions"][0]["instanceTemplate"].endswith("/qwen-gcp-tmpl?uniqueId=1")  # replaced on change
    assert not mocks.of_type(VM)
    assert seen["group_self_link"].endswith("/qwen-gcp-mig")


def test_a3_boots_from_hyperdisk():
    catalog = Catalog(
        (
            make_offer(
                "a3-highgpu-1g", "H100", 1, 79.65, 11.0, provider="gcp", region="us-central1", zone="us-central1-a"
            ),
        )
    )
    spec = TUNE  # a3-highgpu-1g is not sold on demand: flex-start, which serving refuses
    mocks, _, _ = run_program(lambda: GpuWorkload("qwen", spec, args=GpuWorkloadArgs(catalog=catalog)))
    vm = mocks.one(VM)
    assert vm["machineType"] == "a3-highgpu-1g" and not vm.get("guestAccelerators")
    assert vm["bootDisk"]["initializeParams"]["type"] == "hyperdisk-balanced"


@pytest.mark.parametrize(
    "itype, machine, accels",
    [
        ("a3-highgpu-8g", "a3-highgpu-8g", []),  # A3 comes with its H100s
        ("a4-highgpu-8g", "a4-highgpu-8g", []),  # A4 with its B200s
        ("a2-ultragpu-1g", "a2-ultragpu-1g", []),  # A2 with its A100s
        ("n1-standard-32+nvidia-tesla-v100x8", "n1-standard-32", [{"type": "nvidia-tesla-v100", "count": 8}]),
        ("n1-highmem-8+nvidia-tesla-p100x2", "n1-highmem-8", [{"type": "nvidia-tesla-p100", "count": 2}]),
    ],
)
def test_machine_family_rules(itype, machine, accels):
    assert gcp.machine_and_accelerators(itype) == (machine, accels)


def test_every_catalog_n1_offer_parses():
    text = (REPO / "gpusizer/data/catalog/gcp.csv").read_text()
    n1 = {line.split(",")[3] for line in text.splitlines() if ",n1-" in line}
    assert n1 and all(gcp.machine_and_accelerators(t)[1] for t in n1)


def test_an_n1_offer_without_its_gpus_is_refused():
    with pytest.raises(ValueError) as e:
        gcp.machine_and_accelerators("n1-standard-8")
    assert "<accelerator>x<count>" in str(e.value)


def test_digit_first_spec_name_yields_names_that_start_with_a_letter():
    spec = {**_with(QWEN, deploy={"replicas": 2}), "name": "70b-chat"}
    mocks, _, _ = run_program(lambda: (GpuWorkload("70b-chat", spec), GpuWorkload("solo", {**QWEN, "name": "7b"})))
    given = [
        mocks.one(MIG)["name"],
        mocks.one(MIG)["baseInstanceName"],
        mocks.one(TEMPLATE)["namePrefix"],
        mocks.one(VM)["name"],
        *(a.inputs["accountId"] for a in mocks.of_type("gcp:serviceaccount/account:Account")),
    ]
    assert given and all(n[0].isalpha() for n in given), given
    assert mocks.one(MIG)["baseInstanceName"] == "w70b-chat"
    assert len(mocks.one(TEMPLATE)["namePrefix"]) <= 37  # pulumi-gcp's limit for a name prefix


def test_names_differ_between_stacks():
    first, _, _ = run_program(lambda: GpuWorkload("qwen", QWEN), stack="dev")
    second, _, _ = run_program(lambda: GpuWorkload("qwen", QWEN), stack="prod")
    for typ, key in ((VM, "name"), ("gcp:serviceaccount/account:Account", "accountId"), (ROUTER, "name")):
        assert first.one(typ)[key] != second.one(typ)[key]


def test_custom_mode_vpc_gets_the_regions_subnetwork_and_nat_can_be_turned_off():
    args = GpuWorkloadArgs(gcp_network="ml-vpc", gcp_subnetworks={"us-central1": "ml-us-central1"}, gcp_cloud_nat=False)
    mocks, _, _ = run_program(lambda: GpuWorkload("qwen", QWEN, args=args))
    assert mocks.one(VM)["networkInterfaces"] == [{"network": "ml-vpc", "subnetwork": "ml-us-central1"}]
    assert not mocks.of_type(ROUTER) and not mocks.of_type(NAT)


@pytest.mark.parametrize(
    "itype, purchase, reservation, model",
    [
        ("a3-ultragpu-8g", "on-demand", None, "FLEX_START"),  # not sold plain on-demand
        ("a4-highgpu-8g", "on-demand", "my-res", "RESERVATION_BOUND"),
        ("a3-highgpu-2g", "on-demand", None, "FLEX_START"),
        ("a3-highgpu-8g", "on-demand", None, "STANDARD"),  # sold on-demand
        ("a3-ultragpu-8g", "spot", None, "SPOT"),
        ("a3-highgpu-2g", "on-demand", "my-res", "FLEX_START"),  # cannot be reservation-bound: flex-start, no affinity
        ("a3-ultragpu-8g", "spot", "my-res", "SPOT"),  # spot consumes no reservation
    ],
)
def test_consumption_option_follows_the_family(itype, purchase, reservation, model):
    price = dict(on_demand_usd=None, spot_usd=30.0) if purchase == "spot" else {}
    catalog = Catalog(
        (
            make_offer(
                itype, "H200", 8, 140.0, 80.0, provider="gcp", region="us-central1", zone="us-central1-b", **price
            ),
        )
    )
    spec = _with(TUNE, placement={"purchase": purchase})
    args = GpuWorkloadArgs(catalog=catalog, gcp_reservations={"us-central1-b": reservation} if reservation else {})
    mocks, _, _ = run_program(lambda: GpuWorkload("qwen", spec, args=args))
    vm = mocks.one(VM)
    assert vm["scheduling"]["provisioningModel"] == model
    if model == "FLEX_START":
        assert vm["scheduling"]["maxRunDuration"] == {"seconds": 7 * 24 * 3600}
        assert vm["scheduling"]["instanceTerminationAction"] == "DELETE"
    if model == "RESERVATION_BOUND":  # the API requires a termination action for reservation-bound VMs
        assert vm["scheduling"]["instanceTerminationAction"] == "DELETE"
        assert vm["scheduling"]["automaticRestart"] is False
    if model == "RESERVATION_BOUND":
        assert vm["reservationAffinity"] == {
            "type": "SPECIFIC_RESERVATION",
            "specificReservation": {"key": "compute.googleapis.com/reservation-name", "values": [reservation]},
        }
    elif model == "FLEX_START":
        assert vm["reservationAffinity"] == {"type": "NO_RESERVATION"}
    else:
        assert not vm.get("reservationAffinity")


def test_multi_node_a3_gets_compact_placement_and_gpudirect_nics():
    catalog = Catalog(
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
    spec = GCP_PRETRAIN
    plan = gpusizer.plan(spec, catalog=catalog)
    assert plan.chosen.nodes > 1
    mocks, _, _ = run_program(lambda: GpuWorkload("pretrain", spec, args=GpuWorkloadArgs(catalog=catalog)))
    policy = mocks.one("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy["groupPlacementPolicy"] == {"collocation": "COLLOCATED", "vmCount": plan.chosen.nodes}
    tmpl = mocks.one(TEMPLATE)
    assert tmpl["resourcePolicies"] == policy["name"]
    nics = tmpl["networkInterfaces"]
    # GCP docs: a3-highgpu-8g with GPUDirect-TCPX has 1 + 4 NICs, all gVNIC, each data NIC on its own VPC.
    assert len(nics) == 5 and {n["nicType"] for n in nics} == {"GVNIC"}
    assert len({n["network"] for n in nics[1:]}) == 4
    assert all(n["mtu"] == 8244 for n in (r.inputs for r in mocks.of_type("gcp:compute/network:Network")))


def _export(w: GpuWorkload) -> None:
    import pulumi

    pulumi.export(
        "out",
        {"instance_type": w.instance_type, "decision": w.decision, **{k: v for k, v in w.ids.items() if v is not None}},
    )
