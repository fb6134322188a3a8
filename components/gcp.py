"""GCP: a compute instance (or instance template + managed instance group) with the chosen GPUs."""

from __future__ import annotations

import dataclasses
import re

import pulumi
import pulumi_gcp as gcp

from gpusizer.base import errors
from gpusizer.catalog import consumption
from gpusizer.components import boot, gcp_network, names, scaling, serving
from gpusizer.components import tags as tagging
from gpusizer.decide.decision import Decision

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
# Machine types Compute Engine does not sell as plain on-demand VMs, and those a reservation can
# bind (RESERVATION_BOUND): one registry, gpusizer/catalog/consumption.py (sold_on_demand,
# reservation_bound). An on-demand choice of one is provisioned from a named reservation or, without
# one, as flex-start (jobs only: check()).
# Flex-start VMs run at most 7 days (GCP docs, "About flex-start VMs", 2025).
FLEX_START_MAX_SECONDS = 7 * 24 * 3600
# Google's health-check probers (GCP docs, "Health checks overview", "Probe IP ranges and firewall
# rules": 35.191.0.0/16 and 130.211.0.0/22 for internal passthrough Network Load Balancers).
HEALTH_CHECK_RANGES = ["35.191.0.0/16", "130.211.0.0/22"]
# Clients of the internal load balancer: private addresses only (RFC 1918), so nothing from the
# internet reaches the server port (the VMs have no external IP either).
INTERNAL_RANGES = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]
# Autohealing waits at most 3600 s after a VM starts (Compute API, InstanceGroupManagerAutoHealingPolicy.initialDelaySec).
MAX_HEALING_DELAY = 3600
# Reading a Secret Manager secret needs the cloud-platform scope on the VM (GCP docs, "Secret
# Manager access control": access scopes); IAM then limits the account to that one secret.
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
# The SDK subpackages provision() uses (gpusizer.base.providers.Provider.component says why).
SDK_MODULES = (
    "pulumi_gcp.compute",
    "pulumi_gcp.serviceaccount",
    "pulumi_gcp.secretmanager",
    "pulumi_gcp.projects",
    "pulumi_gcp.organizations",
)


@dataclasses.dataclass
class GcpGpuCapacityArgs:
    decision: Decision
    """The engine's decision; its choice must be a GCP offer (it names the zone)."""
    network: str = "default"
    """VPC network for the NIC (no external IP is attached)."""
    secure_boot: bool = False
    """Shielded VM Secure Boot. Off by default: the Deep Learning VM images load NVIDIA kernel
    modules that Secure Boot rejects unless they are signed; turn it on for an image that signs them."""
    subnetwork: str | None = None
    """Subnetwork in the chosen region; required when `network` is a custom-mode VPC."""
    cloud_nat: bool = True
    """Create a Cloud Router + NAT in the chosen region (the VM has no external IP). Off when the
    network already has egress (another stack's NAT, a proxy)."""
    reservation: str | None = None
    """A reservation to consume (SPECIFIC_RESERVATION); for types not sold on-demand it makes the VM
    RESERVATION_BOUND instead of flex-start."""
    stack: str | None = None
    """Stack name put into names Pulumi does not autoname; default: the running stack."""
    hf_token: pulumi.Input[str] | None = None
    """Hugging Face token (a Pulumi secret) for a serving VM: a Secret Manager secret that only the
    VM's service account may read, fetched at boot (never in metadata)."""


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
    endpoint: pulumi.Output[str] | None
    """http://<internal forwarding rule address>:8000 for serving (deploy.expose internal), else None."""

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
        scaled = d.autoscaling is not None
        grouped = c.instances > 1 or scaled
        stack = args.stack or pulumi.get_stack()
        region = c.offer.region
        account = gcp.serviceaccount.Account(
            f"{name}-sa",
            account_id=account_id(spec.name, stack),
            display_name=f"gpusizer {spec.name} GPU host ({stack})",
            opts=child,
        )
        reservation = spec.deploy.capacity_reservation or args.reservation
        model = provisioning_model(c.offer.instance_type, c.purchase, reservation)
        serve = spec.task == "inference"
        exposed = serve and spec.deploy.expose == "internal"
        flex_group = model == "FLEX_START" and grouped
        scheduling = scheduling_args(model, grouped)
        if (
            flex_group
        ):  # a flex-start MIG's run time is the resize request's (GCP docs, "Create a MIG with flex-start VMs")
            scheduling.pop("max_run_duration")
        affinity = None
        # Only standard and reservation-bound VMs consume a reservation; spot and flex-start VMs take none
        # (GCP docs, "Consume reservations": spot VMs cannot; flex-start: reservation affinity none).
        if reservation and model in ("STANDARD", "RESERVATION_BOUND"):
            affinity = dict(
                type="SPECIFIC_RESERVATION",
                specific_reservation=dict(key="compute.googleapis.com/reservation-name", values=[reservation]),
            )
        elif model == "FLEX_START":
            affinity = dict(type="NO_RESERVATION")
        if args.cloud_nat:
            gcp_network.cloud_nat(
                name, stack=stack, region=region, network=args.network, subnetwork=args.subnetwork, opts=child
            )
        nics = [dict(network=args.network, subnetwork=args.subnetwork)]  # no access config: no external IP
        policies = None
        if c.nodes > 1 and c.offer.fabric in gcp_network.GPUDIRECT:
            # Multi-node A3/A4: the nodes share one compact placement (low latency) and get the
            # GPUDirect data NICs the catalog priced the fabric for; gVNIC on every NIC.
            nics[0]["nic_type"] = "GVNIC"
            nics += gcp_network.data_nics(
                name,
                stack=stack,
                workload=spec.name,
                fabric=c.offer.fabric,
                region=region,
                zone=c.offer.zone,
                opts=child,
            )
            policy = gcp.compute.ResourcePolicy(
                f"{name}-placement",
                name=names.per_stack(spec.name, stack),
                region=region,
                group_placement_policy=gcp.compute.ResourcePolicyGroupPlacementPolicyArgs(
                    collocation="COLLOCATED", vm_count=c.nodes
                ),
                opts=child,
            )
            policies = policy
        image = spec.deploy.machine_image or DLVM_IMAGE
        disk_gib = d.workload.disk_gib  # deploy.disk_gib, else the OS image + model files (+ checkpoints)
        disk_type = boot_disk_type(machine)
        shielded = dict(enable_secure_boot=args.secure_boot, enable_vtpm=True, enable_integrity_monitoring=True)
        metadata = {
            "install-nvidia-driver": "True",  # DLVM images without a baked driver install it at first boot
            "enable-oslogin": "TRUE",  # IAM-controlled SSH, no project-wide keys
            "block-project-ssh-keys": "TRUE",
        }
        gpu_metric = scaled and spec.deploy.autoscaling.metric == "gpu_utilization"
        secret = None
        if serve:
            if args.hf_token is not None:
                secret = gcp.secretmanager.Secret(
                    f"{name}-hf-token",
                    secret_id=names.per_stack(f"{spec.name}-hf-token", stack),
                    replication=gcp.secretmanager.SecretReplicationArgs(
                        auto=gcp.secretmanager.SecretReplicationAutoArgs()
                    ),
                    labels=labels,
                    opts=child,
                )
                gcp.secretmanager.SecretVersion(
                    f"{name}-hf-token-value",
                    secret=secret.id,
                    secret_data=pulumi.Output.secret(args.hf_token),
                    opts=child,
                )
                gcp.secretmanager.SecretIamMember(
                    f"{name}-hf-token-reader",
                    secret_id=secret.id,
                    role="roles/secretmanager.secretAccessor",
                    member=account.email.apply(lambda e: f"serviceAccount:{e}"),
                    opts=child,
                )
            if gpu_metric:  # the Ops Agent writes agent.googleapis.com/gpu/* as this account
                project = gcp.organizations.get_client_config_output(opts=pulumi.InvokeOptions(parent=self)).project
                gcp.projects.IAMMember(
                    f"{name}-metric-writer",
                    project=project,
                    role="roles/monitoring.metricWriter",
                    member=account.email.apply(lambda e: f"serviceAccount:{e}"),
                    opts=child,
                )
            b = dict(
                cloud="gcp",
                workload=spec.name,
                image=serving.server_image(d),
                args=tuple(serving.vllm_args(d)),
                weights_bytes=int(d.workload.breakdown.weights),
                region=region,
                gpu_metric=gpu_metric,
            )
            metadata["user-data"] = (secret.name if secret else pulumi.Output.from_input(None)).apply(
                lambda ref: boot.cloud_config(boot.Boot(**b, token_secret=ref))
            )
        sa = dict(email=account.email, scopes=SCOPES + [CLOUD_PLATFORM] if secret else SCOPES)
        network_tags = [serve_tag(spec.name)] if exposed else None
        health = None
        if exposed:
            health = gcp.compute.RegionHealthCheck(
                f"{name}-health",
                name=names.per_stack(f"{spec.name}-health", stack),
                region=region,
                check_interval_sec=serving.HEALTH_INTERVAL_SECONDS,
                timeout_sec=serving.HEALTH_TIMEOUT_SECONDS,
                healthy_threshold=serving.HEALTHY_AFTER,
                unhealthy_threshold=serving.UNHEALTHY_AFTER,
                http_health_check=gcp.compute.RegionHealthCheckHttpHealthCheckArgs(
                    port=serving.PORT, request_path=serving.HEALTH_PATH
                ),
                opts=child,
            )
            gcp.compute.Firewall(
                f"{name}-serve-fw",
                name=names.per_stack(f"{spec.name}-serve", stack),
                network=args.network,
                direction="INGRESS",
                source_ranges=HEALTH_CHECK_RANGES + INTERNAL_RANGES,
                target_tags=network_tags,
                allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(serving.PORT)])],
                opts=child,
            )
        self.instance_self_link = None
        self.group_self_link = None
        if grouped:
            template = gcp.compute.InstanceTemplate(
                f"{name}-tmpl",
                # Templates are immutable: each change makes a new one, so the name is a prefix
                # (at most 37 characters: pulumi-gcp InstanceTemplate.namePrefix).
                name_prefix=f"{names.per_stack(spec.name, stack, 36)}-",
                machine_type=machine,
                disks=[
                    gcp.compute.InstanceTemplateDiskArgs(
                        source_image=image,
                        disk_size_gb=disk_gib,
                        disk_type=disk_type,
                        boot=True,
                        auto_delete=True,
                    )
                ],
                guest_accelerators=[gcp.compute.InstanceTemplateGuestAcceleratorArgs(**a) for a in accels] or None,
                scheduling=gcp.compute.InstanceTemplateSchedulingArgs(
                    **_scheduling(gcp.compute, "InstanceTemplate", scheduling)
                ),
                shielded_instance_config=gcp.compute.InstanceTemplateShieldedInstanceConfigArgs(**shielded),
                network_interfaces=[gcp.compute.InstanceTemplateNetworkInterfaceArgs(**n) for n in nics],
                resource_policies=policies.name if policies else None,  # one policy, by name
                reservation_affinity=_affinity("InstanceTemplate", affinity),
                service_account=gcp.compute.InstanceTemplateServiceAccountArgs(**sa),
                metadata=metadata,
                tags=network_tags,
                labels=labels,
                opts=child,
            )
            group = gcp.compute.InstanceGroupManager(
                f"{name}-mig",
                name=names.per_stack(spec.name, stack),
                zone=c.offer.zone,
                base_instance_name=names.rfc1035(spec.name, 58),
                versions=[gcp.compute.InstanceGroupManagerVersionArgs(instance_template=template.self_link_unique)],
                # An autoscaled group's size is the autoscaler's to set (pulumi-gcp InstanceGroupManager.targetSize);
                # a flex-start group starts empty and grows by its resize request.
                target_size=0 if flex_group else None if scaled else c.instances,
                # Serving: a VM failing GET /health is recreated, after the time the model load may take.
                auto_healing_policies=gcp.compute.InstanceGroupManagerAutoHealingPoliciesArgs(
                    health_check=health.id,
                    initial_delay_sec=min(MAX_HEALING_DELAY, serving.load_seconds(d)),
                )
                if health is not None
                else None,
                # Flex-start MIGs: no repair of a failed VM, which would request capacity again (GCP docs,
                # "Create a MIG with flex-start VMs": --default-action-on-vm-failure=do-nothing).
                instance_lifecycle_policy=gcp.compute.InstanceGroupManagerInstanceLifecyclePolicyArgs(
                    default_action_on_failure="DO_NOTHING"
                )
                if flex_group
                else None,
                opts=child,
            )
            if flex_group:
                gcp.compute.ResizeRequest(
                    f"{name}-resize",
                    name=names.per_stack(spec.name, stack),
                    zone=c.offer.zone,
                    instance_group_manager=group.name,
                    resize_by=c.instances,
                    requested_run_duration=gcp.compute.ResizeRequestRequestedRunDurationArgs(
                        seconds=str(FLEX_START_MAX_SECONDS)
                    ),
                    description=f"gpusizer {spec.name}: {c.instances} flex-start VMs, at most 7 days",
                    opts=child,
                )
            if scaled:
                scaling.gcp_autoscaler(name, d, group, c.offer.zone, child)
            self.group_self_link = group.self_link
            backend_group = group.instance_group
        else:
            instance = gcp.compute.Instance(
                f"{name}-vm",
                name=names.per_stack(spec.name, stack),
                machine_type=machine,
                # A catalog refresh can change the machine type: stop, resize and start in place
                # rather than fail (pulumi-gcp Instance.allowStoppingForUpdate).
                allow_stopping_for_update=True,
                zone=c.offer.zone,
                boot_disk=gcp.compute.InstanceBootDiskArgs(
                    initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                        image=image,
                        size=disk_gib,
                        type=disk_type,
                        labels=labels,
                    ),
                ),
                guest_accelerators=[gcp.compute.InstanceGuestAcceleratorArgs(**a) for a in accels] or None,
                scheduling=gcp.compute.InstanceSchedulingArgs(**_scheduling(gcp.compute, "Instance", scheduling)),
                shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(**shielded),
                network_interfaces=[gcp.compute.InstanceNetworkInterfaceArgs(**n) for n in nics],
                resource_policies=policies.self_link if policies else None,
                reservation_affinity=_affinity("Instance", affinity),
                service_account=gcp.compute.InstanceServiceAccountArgs(**sa),
                metadata=metadata,
                tags=network_tags,
                labels=labels,
                # The name is fixed per stack: a replacement must delete the old VM first.
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(delete_before_replace=True)),
            )
            self.instance_self_link = instance.self_link
            backend_group = None
            if exposed:  # a lone VM joins the load balancer through an unmanaged instance group
                backend_group = gcp.compute.InstanceGroup(
                    f"{name}-ig",
                    name=names.per_stack(spec.name, stack),
                    zone=c.offer.zone,
                    instances=[instance.self_link],
                    opts=child,
                ).self_link
        self.endpoint = None
        if exposed:
            backend = gcp.compute.RegionBackendService(
                f"{name}-backend",
                name=names.per_stack(spec.name, stack),
                region=region,
                load_balancing_scheme="INTERNAL",
                protocol="TCP",
                health_checks=health.id,
                backends=[
                    gcp.compute.RegionBackendServiceBackendArgs(group=backend_group, balancing_mode="CONNECTION")
                ],
                opts=child,
            )
            rule = gcp.compute.ForwardingRule(
                f"{name}-rule",
                name=names.per_stack(spec.name, stack),
                region=region,
                load_balancing_scheme="INTERNAL",
                backend_service=backend.id,
                ip_protocol="TCP",
                ports=[str(serving.PORT)],
                network=args.network,
                subnetwork=args.subnetwork,
                opts=child,
            )
            self.endpoint = rule.ip_address.apply(lambda ip: f"http://{ip}:{serving.PORT}")
        self.service_account_email = account.email
        self.register_outputs(
            {
                "instance_self_link": self.instance_self_link,
                "group_self_link": self.group_self_link,
                "service_account_email": self.service_account_email,
                "endpoint": self.endpoint,
            }
        )


def serve_tag(workload: str) -> str:
    """The network tag the serving firewall rule targets."""
    return names.rfc1035(f"gpusizer-{workload}-serve")


def account_id(workload: str, stack: str) -> str:
    """A service-account id (6-30 characters, a letter first) unique per workload and stack.

    >>> account_id("support-chat", "dev")
    'gpusizer-support-chat-dev'
    >>> account_id("70b-chat", "prod"), len(account_id("a-very-long-workload-name-for-serving", "prod"))
    ('gpusizer-70b-chat-prod', 30)
    """
    return names.rfc1035(f"gpusizer-{workload}-{stack}", 30)


def provisioning_model(instance_type: str, purchase: str, reservation: str | None) -> str:
    """SPOT for spot; for on-demand, STANDARD where Compute Engine sells it, else RESERVATION_BOUND
    with a reservation or FLEX_START without one.

    >>> provisioning_model("a3-ultragpu-8g", "on-demand", None), provisioning_model("g2-standard-4", "on-demand", None)
    ('FLEX_START', 'STANDARD')
    """
    if purchase == "spot":
        return "SPOT"
    if not consumption.sold_on_demand("gcp", instance_type):
        return (
            "RESERVATION_BOUND" if reservation and consumption.reservation_bound("gcp", instance_type) else "FLEX_START"
        )
    return "STANDARD"


def scheduling_args(model: str, grouped: bool) -> dict:
    """Scheduling for a provisioning model: GPU VMs cannot live-migrate; SPOT needs preemptible and no
    automatic restart; a reclaimed lone spot VM stops (keeps its disk), a group's is deleted and
    recreated; flex-start VMs are deleted at the end of their run (at most 7 days)."""
    spot, flex = model == "SPOT", model == "FLEX_START"
    out = dict(
        on_host_maintenance="TERMINATE",
        automatic_restart=not (spot or flex),
        preemptible=spot,
        provisioning_model=model,
    )
    if spot:
        out["instance_termination_action"] = "DELETE" if grouped else "STOP"
    if flex:
        out.update(instance_termination_action="DELETE", max_run_duration=dict(seconds=FLEX_START_MAX_SECONDS))
    if model == "RESERVATION_BOUND":  # the VM ends with the reservation; the API requires the action
        out.update(instance_termination_action="DELETE", automatic_restart=False)
    return out


def _scheduling(module, kind: str, scheduling: dict) -> dict:
    out = dict(scheduling)
    if "max_run_duration" in out:
        out["max_run_duration"] = getattr(module, f"{kind}SchedulingMaxRunDurationArgs")(**out["max_run_duration"])
    return out


def _affinity(kind: str, affinity: dict | None):
    if affinity is None:
        return None
    specific = affinity.get("specific_reservation")
    return getattr(gcp.compute, f"{kind}ReservationAffinityArgs")(
        type=affinity["type"],
        specific_reservation=getattr(gcp.compute, f"{kind}ReservationAffinitySpecificReservationArgs")(**specific)
        if specific
        else None,
    )


def check(plan: Decision, args) -> None:
    """Validate before registering (gpusizer.base.providers component hook): the server's flags, and
    a consumption model the VM can be given.

    Raises:
        errors.SpecError: serving on flex-start capacity (deleted after at most 7 days), a reservation on
            a type that cannot be bound to one, or a spot choice with a reservation; naming the field.
    """
    spec = plan.workload.spec
    c = plan.chosen
    reservation = spec.deploy.capacity_reservation or args.gcp_reservations.get(c.offer.zone or "")
    model = provisioning_model(c.offer.instance_type, c.purchase, reservation)
    scaling.check_signal(plan)
    if spec.task == "inference":
        serving.check_one_node(plan)
        serving.vllm_args(plan)
        if model == "FLEX_START":
            raise errors.SpecError(
                f"placement: {c.offer.instance_type} is not sold on demand; without a reservation it would run as "
                "flex-start, which Compute Engine deletes after at most 7 days, and a server runs until stopped. "
                "To fix: set deploy.capacity_reservation (or gpusizer:gcpReservations) to a reservation in "
                f"{c.offer.zone}, use placement.purchase: spot, or exclude the type (placement.gpus)",
                field="placement.purchase",
            )
    if (
        spec.deploy.capacity_reservation
        and not consumption.sold_on_demand("gcp", c.offer.instance_type)
        and model != "RESERVATION_BOUND"
    ):
        raise errors.SpecError(
            f"deploy.capacity_reservation: {c.offer.instance_type} cannot be bound to a reservation (only "
            f"{', '.join(t.rstrip('-') for t in consumption.GCP_RESERVATION_BOUND)} can). To fix: drop it",
            field="deploy.capacity_reservation",
        )
    if spec.deploy.capacity_reservation and c.purchase == "spot":
        raise errors.SpecError(
            "deploy.capacity_reservation: a reservation is not spot capacity. To fix: set "
            "placement.purchase: on-demand",
            field="deploy.capacity_reservation",
        )


def provision(name: str, plan: Decision, args, opts: pulumi.ResourceOptions) -> dict[str, object]:
    """Provision a GCP choice for GpuWorkload; returns the outputs it exports.

    Args:
        name: the child's resource name.
        plan: the decision, its choice on GCP.
        args: the workload's GpuWorkloadArgs (gcp_network, gcp_secure_boot, gcp_subnetworks by region,
            gcp_cloud_nat, gcp_reservations by zone).
        opts: options for the child (its parent).
    """
    o = plan.chosen.offer
    cap = GcpGpuCapacity(
        name,
        GcpGpuCapacityArgs(
            plan,
            args.gcp_network,
            args.gcp_secure_boot,
            subnetwork=args.gcp_subnetworks.get(o.region),
            cloud_nat=args.gcp_cloud_nat,
            reservation=args.gcp_reservations.get(o.zone or ""),
            hf_token=args.hf_token,
        ),
        opts,
    )
    return {
        "instance_self_link": cap.instance_self_link,
        "group_self_link": cap.group_self_link,
        "service_account_email": cap.service_account_email,
        "endpoint": cap.endpoint,
    }
