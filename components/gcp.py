"""GCP: a compute instance (or instance template + managed instance group) with the chosen GPUs."""

from __future__ import annotations

import dataclasses
import hashlib
import re

import pulumi
import pulumi_gcp as gcp

from components import tags as tagging
from gpusizer.decision import Decision

# Deep Learning VM image family with the NVIDIA driver installed (project
# deeplearning-platform-release, family common-cu128-ubuntu-2204-nvidia-570: CUDA 12.8, Ubuntu 22.04,
# driver 570; GCP docs, "Choose a Deep Learning VM image", 2025). deploy.machine_image overrides it.
DLVM_IMAGE = "projects/deeplearning-platform-release/global/images/family/common-cu128-ubuntu-2204-nvidia-570"
# Least scopes for a GPU host: write logs and metrics, read objects (model weights, images) from GCS.
# The dedicated service account holds no IAM roles until the user grants some.
SCOPES = [
    "https://www.googleapis.com/auth/logging.write",
    "https://www.googleapis.com/auth/monitoring.write",
    "https://www.googleapis.com/auth/devstorage.read_only",
]
# N1 offers are named "<host machine>+<accelerator>x<count>" by the catalog builder
# (gpusizer/data/catalog/gcp.csv: "n1-standard-8+nvidia-tesla-t4x2").
_N1 = re.compile(r"^(?P<host>n1-[a-z0-9-]+)\+(?P<accel>nvidia-[a-z0-9-]+)x(?P<count>\d+)$")
# Boot disk type per machine series (GCP docs, "Machine series support for Persistent Disk" and
# "Hyperdisk"): A3 and A4 take Hyperdisk only (A3 High also PD, but Hyperdisk is its default);
# N1, A2 and G2 take Persistent Disk. First matching prefix wins.
_BOOT_DISK_TYPES = (("a4-", "hyperdisk-balanced"), ("a3-", "hyperdisk-balanced"), ("", "pd-balanced"))


@dataclasses.dataclass
class GcpGpuCapacityArgs:
    decision: Decision
    """The engine's decision; its choice must be a GCP offer (it names the zone)."""
    network: str = "default"
    """VPC network for the NIC (no external IP is attached)."""
    secure_boot: bool = False
    """Shielded VM Secure Boot. Off by default: the Deep Learning VM images load NVIDIA kernel
    modules that Secure Boot rejects unless they are signed; turn it on for an image that signs them."""


def machine_and_accelerators(instance_type: str) -> tuple[str, list[dict]]:
    """(machine type, guest accelerators): G2/A2/A3/A4 carry their GPUs; N1 attaches them.

    >>> machine_and_accelerators("n1-standard-8+nvidia-tesla-t4x2")
    ('n1-standard-8', [{'type': 'nvidia-tesla-t4', 'count': 2}])
    >>> machine_and_accelerators("g2-standard-4")
    ('g2-standard-4', [])
    """
    m = _N1.match(instance_type)
    if m:
        return m["host"], [{"type": m["accel"], "count": int(m["count"])}]
    if instance_type.startswith("n1-"):
        raise ValueError(f"{instance_type}: an N1 offer must name its GPUs as '<machine>+<accelerator>x<count>'")
    return instance_type, []


def boot_disk_type(machine_type: str) -> str:
    """The boot disk type the machine series supports.

    >>> boot_disk_type("a3-highgpu-8g"), boot_disk_type("g2-standard-4")
    ('hyperdisk-balanced', 'pd-balanced')
    """
    return next(kind for prefix, kind in _BOOT_DISK_TYPES if machine_type.startswith(prefix))


class GcpGpuCapacity(pulumi.ComponentResource):
    """The chosen GCP capacity.

    A dedicated service account with minimal scopes; a VM (or, for replicas or
    several nodes, an instance template and a zonal managed instance group) in
    the zone that was priced, with the machine type (N1 plus attached GPUs),
    on-host-maintenance TERMINATE (GPU VMs cannot live-migrate), the SPOT
    provisioning model when chosen, a Deep Learning VM image on a disk sized
    for the model, shielded VM (vTPM, integrity monitoring), OS Login, no
    external IP, and the sizing labels.
    """

    instance_self_link: pulumi.Output[str] | None
    group_self_link: pulumi.Output[str] | None
    service_account_email: pulumi.Output[str]

    def __init__(self, name: str, args: GcpGpuCapacityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpusizer:gcp:GpuCapacity", name, {}, opts)
        d = args.decision
        c = d.chosen
        if c is None or c.offer.provider != "gcp":
            raise ValueError("GcpGpuCapacity needs a decision whose choice is a GCP offer")
        spec = d.workload.spec
        child = pulumi.ResourceOptions(parent=self)
        labels = tagging.gcp_labels(d)
        machine, accels = machine_and_accelerators(c.offer.instance_type)
        grouped = c.instances > 1
        spot = c.purchase == "spot"
        account = gcp.serviceaccount.Account(
            f"{name}-sa",
            account_id=_account_id(spec.name),
            display_name=f"gpusizer {spec.name} GPU host",
            opts=child,
        )
        scheduling = dict(
            on_host_maintenance="TERMINATE",  # GPU VMs cannot live-migrate
            automatic_restart=not spot,  # SPOT requires it off
            preemptible=spot,  # SPOT requires it on
            provisioning_model="SPOT" if spot else "STANDARD",
            # A lone VM stops when reclaimed and keeps its disk; a group deletes it and recreates it.
            instance_termination_action=("DELETE" if grouped else "STOP") if spot else None,
        )
        image = spec.deploy.machine_image or DLVM_IMAGE
        disk_gib = d.workload.disk_gib  # deploy.disk_gib, else the OS image + model files (+ checkpoints)
        disk_type = boot_disk_type(machine)
        shielded = dict(enable_secure_boot=args.secure_boot, enable_vtpm=True, enable_integrity_monitoring=True)
        metadata = {
            "install-nvidia-driver": "True",  # DLVM images without a baked driver install it at first boot
            "enable-oslogin": "TRUE",  # IAM-controlled SSH, no project-wide keys
            "block-project-ssh-keys": "TRUE",
        }
        sa = dict(email=account.email, scopes=SCOPES)
        self.instance_self_link = None
        self.group_self_link = None
        if grouped:
            template = gcp.compute.InstanceTemplate(
                f"{name}-tmpl",
                machine_type=machine,
                disks=[gcp.compute.InstanceTemplateDiskArgs(
                    source_image=image, disk_size_gb=disk_gib, disk_type=disk_type, boot=True, auto_delete=True,
                )],
                guest_accelerators=[gcp.compute.InstanceTemplateGuestAcceleratorArgs(**a) for a in accels] or None,
                scheduling=gcp.compute.InstanceTemplateSchedulingArgs(**scheduling),
                shielded_instance_config=gcp.compute.InstanceTemplateShieldedInstanceConfigArgs(**shielded),
                network_interfaces=[gcp.compute.InstanceTemplateNetworkInterfaceArgs(network=args.network)],
                service_account=gcp.compute.InstanceTemplateServiceAccountArgs(**sa),
                metadata=metadata,
                labels=labels,
                opts=child,
            )
            group = gcp.compute.InstanceGroupManager(
                f"{name}-mig",
                zone=c.offer.zone,
                base_instance_name=spec.name,
                versions=[gcp.compute.InstanceGroupManagerVersionArgs(instance_template=template.self_link_unique)],
                target_size=c.instances,
                opts=child,
            )
            self.group_self_link = group.self_link
        else:
            instance = gcp.compute.Instance(
                f"{name}-vm",
                machine_type=machine,
                zone=c.offer.zone,
                boot_disk=gcp.compute.InstanceBootDiskArgs(
                    initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                        image=image, size=disk_gib, type=disk_type, labels=labels,
                    ),
                ),
                guest_accelerators=[gcp.compute.InstanceGuestAcceleratorArgs(**a) for a in accels] or None,
                scheduling=gcp.compute.InstanceSchedulingArgs(**scheduling),
                shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(**shielded),
                network_interfaces=[gcp.compute.InstanceNetworkInterfaceArgs(network=args.network)],  # no access config: no external IP
                service_account=gcp.compute.InstanceServiceAccountArgs(**sa),
                metadata=metadata,
                labels=labels,
                opts=child,
            )
            self.instance_self_link = instance.self_link
        self.service_account_email = account.email
        self.register_outputs({
            "instance_self_link": self.instance_self_link,
            "group_self_link": self.group_self_link,
            "service_account_email": self.service_account_email,
        })


def _account_id(workload: str) -> str:
    """A service account id (6-30 characters of [a-z0-9-]) derived from the workload name;
    a long name is cut and given a hash of the whole, so two long names do not collide.

    >>> _account_id("support-chat")
    'gpusizer-support-chat'
    >>> len(_account_id("a-very-long-workload-name-for-serving"))
    30
    """
    full = f"gpusizer-{workload}"
    if len(full) <= 30:
        return full
    return f"{full[:25].rstrip('-')}-{hashlib.sha1(workload.encode()).hexdigest()[:4]}"
