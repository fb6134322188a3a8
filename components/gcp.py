"""GCP: a compute instance (or instance template + managed instance group) with the chosen GPUs."""

from __future__ import annotations

import dataclasses
import re

import pulumi
import pulumi_gcp as gcp

from gpusizer import metadata
from gpusizer.decision import Decision

# Deep Learning VM image family (GCP docs, "Choose an image": deeplearning-platform-release,
# common-cu124 Debian 11 family, 2025). Overridable with deploy.machine_image.
DLVM_IMAGE = "projects/deeplearning-platform-release/global/images/family/common-cu124-debian-11-py310"
# Least scopes for a GPU host: write logs and metrics, read container images from GCS/Artifact Registry.
SCOPES = [
    "https://www.googleapis.com/auth/logging.write",
    "https://www.googleapis.com/auth/monitoring.write",
    "https://www.googleapis.com/auth/devstorage.read_only",
]
# N1 offers are named "<host>+<accelerator>x<count>" by the catalog builder.
_N1 = re.compile(r"^(?P<host>n1-[a-z0-9-]+)\+(?P<accel>nvidia-[a-z0-9-]+)x(?P<count>\d+)$")


@dataclasses.dataclass
class GcpGpuCapacityArgs:
    decision: Decision
    """The engine's decision; its choice must be a GCP offer."""
    network: str = "default"
    """VPC network for the NIC (no external IP is attached)."""


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
    return instance_type, []


class GcpGpuCapacity(pulumi.ComponentResource):
    """The chosen GCP capacity: a dedicated service account, a shielded VM with no external IP,
    on-host-maintenance TERMINATE (GPU VMs cannot live-migrate), SPOT when chosen, sizing labels."""

    instance_id: pulumi.Output[str] | None
    group_id: pulumi.Output[str] | None

    def __init__(self, name: str, args: GcpGpuCapacityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpusizer:gcp:GpuCapacity", name, {}, opts)
        d = args.decision
        c = d.chosen
        spec = d.workload.spec
        child = pulumi.ResourceOptions(parent=self)
        labels = metadata.gcp_labels(spec.name, d.required_gpu_memory_gib, d.sized_by)
        machine, accels = machine_and_accelerators(c.offer.instance_type)
        spot = c.purchase == "spot"
        account = gcp.serviceaccount.Account(
            f"{name}-sa", account_id=f"gpusizer-{spec.name}"[:30].rstrip("-"),
            display_name=f"gpusizer {spec.name} GPU host", opts=child,
        )
        scheduling = dict(
            on_host_maintenance="TERMINATE",
            automatic_restart=not spot,
            preemptible=spot,
            provisioning_model="SPOT" if spot else "STANDARD",
            instance_termination_action="STOP" if spot else None,
        )
        disk = dict(image=spec.deploy.machine_image or DLVM_IMAGE, size=d.workload.disk_gib, type="pd-balanced")
        # Secure Boot stays off: the NVIDIA kernel modules the DLVM installs at first boot are
        # not signed for it; vTPM and integrity monitoring stay on (GCP docs, "Shielded VM" GPU notes).
        shielded = dict(enable_secure_boot=False, enable_vtpm=True, enable_integrity_monitoring=True)
        metadata_items = {"install-nvidia-driver": "True", "enable-oslogin": "TRUE", "block-project-ssh-keys": "TRUE"}
        nic = [{"network": args.network}]  # no access_configs: no external IP
        sa = {"email": account.email, "scopes": SCOPES}
        self.instance_id = None
        self.group_id = None
        if c.replicas > 1 or c.nodes > 1:
            template = gcp.compute.InstanceTemplate(
                f"{name}-tmpl",
                machine_type=machine,
                disks=[gcp.compute.InstanceTemplateDiskArgs(
                    source_image=disk["image"], disk_size_gb=disk["size"], disk_type=disk["type"], boot=True, auto_delete=True
                )],
                guest_accelerators=[gcp.compute.InstanceTemplateGuestAcceleratorArgs(**a) for a in accels],
                scheduling=gcp.compute.InstanceTemplateSchedulingArgs(**scheduling),
                shielded_instance_config=gcp.compute.InstanceTemplateShieldedInstanceConfigArgs(**shielded),
                network_interfaces=[gcp.compute.InstanceTemplateNetworkInterfaceArgs(**n) for n in nic],
                service_account=gcp.compute.InstanceTemplateServiceAccountArgs(**sa),
                metadata=metadata_items,
                labels=labels,
                opts=child,
            )
            group = gcp.compute.InstanceGroupManager(
                f"{name}-mig",
                zone=c.offer.zone,
                base_instance_name=spec.name,
                versions=[gcp.compute.InstanceGroupManagerVersionArgs(instance_template=template.self_link_unique)],
                target_size=c.replicas * c.nodes,
                opts=child,
            )
            self.group_id = group.id
        else:
            instance = gcp.compute.Instance(
                f"{name}-vm",
                machine_type=machine,
                zone=c.offer.zone,
                boot_disk=gcp.compute.InstanceBootDiskArgs(
                    initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(**disk)
                ),
                guest_accelerators=[gcp.compute.InstanceGuestAcceleratorArgs(**a) for a in accels],
                scheduling=gcp.compute.InstanceSchedulingArgs(**scheduling),
                shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(**shielded),
                network_interfaces=[gcp.compute.InstanceNetworkInterfaceArgs(**n) for n in nic],
                service_account=gcp.compute.InstanceServiceAccountArgs(**sa),
                metadata=metadata_items,
                labels=labels,
                opts=child,
            )
            self.instance_id = instance.id
        self.register_outputs({"instance_id": self.instance_id, "group_id": self.group_id})
