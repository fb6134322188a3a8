"""AWS: a launch template plus an instance, or an Auto Scaling group that fails over across adequate types."""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import re
from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

from components import aws_network, scaling
from components import tags as tagging
from gpusizer.facts import images
from gpusizer.decide.decision import Decision

# Machine images come per instance family from gpusizer/data/images.yaml (each row with its
# source); deploy.machine_image overrides them.
# Ubuntu AMIs boot from /dev/sda1; the looked-up AMI's own root device name wins when known.
DEFAULT_ROOT_DEVICE = "/dev/sda1"
# The only managed policy the host gets: Session Manager access instead of SSH.
SSM_POLICY = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
# IMDSv2 only. Hop limit 2, not 1: a container on the host adds one network hop, and with 1 the
# SDKs inside Docker cannot fetch the instance role's credentials (AWS docs, "Configure the
# instance metadata options"). Session tokens still cannot leave the host.
IMDS_HOP_LIMIT = 2
# How long `pulumi up` waits for an Auto Scaling group to reach its size. "0" = do not wait: scarce
# GPU capacity can take hours, and a timed-out wait leaves a half-created update; the group keeps
# launching (and failing over) by itself, its activity history says why it waits (pulumi-aws
# Group.waitForCapacityTimeout; the provider default is "10m").
WAIT_FOR_CAPACITY = "0"
# The SDK subpackages provision() uses (gpusizer.base.providers.Provider.component says why).
SDK_MODULES = ("pulumi_aws.ec2", "pulumi_aws.autoscaling", "pulumi_aws.iam")
# AWS Region codes, one pattern per partition (aws, aws-cn, aws-us-gov, the ISO partitions, aws-eusc):
# each partition's regionRegex in botocore's endpoints model (botocore/data/endpoints.json, read
# 2026-11-25); tests/components/test_aws.py compares them with the installed botocore's.
REGION_PATTERNS = (r"^(us|eu|ap|sa|ca|me|af|il|mx)\-\w+\-\d+$", r"^cn\-\w+\-\d+$", r"^us\-gov\-\w+\-\d+$",
                   r"^us\-iso\-\w+\-\d+$", r"^us\-isob\-\w+\-\d+$", r"^eu\-isoe\-\w+\-\d+$",
                   r"^us\-isof\-\w+\-\d+$", r"^eusc\-(de)\-\w+\-\d+$")


@dataclasses.dataclass(frozen=True)
class AwsNetwork:
    """Where to launch in one region; without one, the region's default VPC is used."""

    vpc_id: str
    """VPC of the security group."""
    subnet_ids: Sequence[str]
    """Subnets to launch into (all of them for a group; the chosen zone's for a single instance)."""


@dataclasses.dataclass
class AwsGpuCapacityArgs:
    decision: Decision
    """The engine's decision; its choice must be an AWS offer."""
    network: AwsNetwork | None = None
    """VPC and subnets in the chosen region; default: that region's default VPC."""
    default_region: str | None = None
    """Region of the stack's default AWS provider (aws:region); a choice elsewhere gets a regional provider."""
    egress: str = aws_network.DEFAULT_EGRESS
    """When instances cannot get a public IP (one EFA interface per network card) in the default VPC:
    "nat" (a private subnet with a NAT gateway), "endpoints" (a private subnet with SSM VPC
    endpoints, no internet) or "none" (launch in the default subnet; SSM unreachable)."""
    private_cidr: str = aws_network.PRIVATE_CIDR
    """CIDR of that private subnet inside the default VPC."""

    def __post_init__(self):
        # Here, not in AwsGpuCapacity: its constructor registers resources (a regional provider first).
        check_settings(self.egress, self.private_cidr, self.default_region)


class AwsGpuCapacity(pulumi.ComponentResource):
    """The chosen AWS capacity, secure by default.

    Creates an IAM role with SSM access only and its instance profile, a
    security group with no inbound rule, a launch template (IMDSv2 required,
    encrypted gp3 root sized for the model, spot market options when the
    choice is spot, sizing tags on the template, instances and volumes), and
    either one instance in the zone that was priced or, when the spec asks
    for replicas or capacity failover or the choice spans nodes, an Auto
    Scaling group whose mixed-instances overrides list the adequate types in
    the engine's rank order (Decision.failover), so an
    InsufficientInstanceCapacity on one type falls to the next adequate one.
    """

    instance_id: pulumi.Output[str] | None
    asg_name: pulumi.Output[str] | None
    launch_template_id: pulumi.Output[str]
    security_group_id: pulumi.Output[str]
    region: str

    def __init__(self, name: str, args: AwsGpuCapacityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpusizer:aws:GpuCapacity", name, {}, opts)
        d = args.decision
        c = d.chosen
        if c is None or c.offer.provider != "aws":
            raise ValueError("AwsGpuCapacity needs a decision whose choice is an AWS offer")
        spec = d.workload.spec
        self.region = c.offer.region
        provider = None
        if c.offer.region != args.default_region:
            # The engine may choose any allowed region; the stack's default provider serves one.
            provider = aws.Provider(f"{name}-{c.offer.region}", region=c.offer.region,
                                    opts=pulumi.ResourceOptions(parent=self))
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        invoke = pulumi.InvokeOptions(provider=provider) if provider else None
        grouped = uses_group(d)
        efa = c.nodes > 1 and c.offer.fabric == "efa"
        cards = aws_network.network_cards(c.offer.instance_type) if efa else 1
        tags = tagging.aws_tags(d)  # per node: templates, instances, volumes

        role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=json.dumps({
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
            }),
            tags=tags,
            opts=child,
        )
        aws.iam.RolePolicyAttachment(f"{name}-ssm", role=role.name, policy_arn=SSM_POLICY, opts=child)
        profile = aws.iam.InstanceProfile(f"{name}-profile", role=role.name, tags=tags, opts=child)

        # Zones come from EC2: the chosen type's offered zones (the priced zone when the row has one).
        candidates = d.failover_candidates() if grouped else [c]
        offered = aws_network.offered_zones([x.offer.instance_type for x in candidates], invoke)
        zones = offered.apply(lambda o: _zones(o, c.offer.instance_type, c.offer.zone, c.offer.region))
        vpc_id, subnets = aws_network.subnets_in(args.network, zones, invoke)
        # A single instance and a cluster placement group live in one zone: the first subnet's.
        one_zone = not grouped or c.nodes > 1
        if one_zone:
            subnets = subnets.apply(lambda ids: ids[:1])
        # A one-zone group (a cluster placement group) checks its overrides against its subnet's zone.
        zone_id = aws_network.zone_of(subnets[0], invoke) if grouped and one_zone else None
        group_zones = zone_id.apply(lambda z: [z]) if zone_id is not None else zones
        if cards > 1 and args.network is None and args.egress != "none":
            # Several interfaces rule out a public IP: a private subnet in the same zone, with egress.
            subnets = aws_network.private_subnet(
                name, vpc_id=vpc_id, zone_id=zone_id, public_subnet=subnets[0], egress=args.egress,
                cidr=args.private_cidr, region=c.offer.region, tags=tags, opts=child,
            ).apply(lambda sid: [sid])
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            description=f"gpusizer {spec.name}: no inbound from outside; use SSM Session Manager",
            vpc_id=vpc_id,
            # EFA needs all traffic between the group's own members; nothing else comes in.
            ingress=[aws.ec2.SecurityGroupIngressArgs(protocol="-1", from_port=0, to_port=0, self=True)] if efa else None,
            egress=[aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, cidr_blocks=["0.0.0.0/0"])],
            tags=tags,
            opts=child,
        )
        row = images.default_for("aws", c.offer.instance_type)
        image_id, root_device, snapshot_gib = _image(spec.deploy.machine_image, row, invoke)
        spot = c.purchase == "spot"
        # deploy.disk_gib, else the OS image + model files (+ checkpoints); never below the AMI's snapshot.
        disk = snapshot_gib.apply(lambda snap: max(d.workload.disk_gib, snap))
        metadata_options = dict(http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=IMDS_HOP_LIMIT)
        spot_options = dict(instance_interruption_behavior="terminate", spot_instance_type="one-time")
        # The default image is found by name; a later release must not change the template (and so
        # every instance): the first lookup sticks until the user sets deploy.machine_image or
        # replaces the template.
        pinned = [] if spec.deploy.machine_image else ["imageId"]
        lt = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            image_id=image_id,
            instance_type=c.offer.instance_type,
            iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(arn=profile.arn),
            vpc_security_group_ids=None if efa else [sg.id],
            # Default VPC, one interface: a public IP so SSM is reachable; several: the private subnet.
            network_interfaces=aws_network.efa_interfaces(
                c.offer.instance_type, sg.id, True if args.network is None and cards == 1 else None) if efa else None,
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(**metadata_options),
            block_device_mappings=[aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name=root_device,
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=disk, volume_type="gp3", encrypted="true", delete_on_termination="true"
                ),
            )],
            # A mixed-instances group buys spot through its distribution, and rejects templates that ask.
            instance_market_options=aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
                market_type="spot", spot_options=aws.ec2.LaunchTemplateInstanceMarketOptionsSpotOptionsArgs(**spot_options),
            ) if spot and not grouped else None,
            tag_specifications=[aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tags)
                                for kind in ("instance", "volume", "network-interface")],
            tags=tags,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=pinned)),
        )
        self.launch_template_id = lt.id
        self.security_group_id = sg.id
        self.instance_id = None
        self.asg_name = None
        if grouped:
            types = pulumi.Output.all(offered, group_zones).apply(
                lambda a: overrides(d, candidates, a[0], a[1]))
            self.asg_name = self._group(name, d, lt, subnets, types, child).name
        else:
            # Type, IMDS, disk and market are set on the instance too, so an Instance policy sees
            # them (an instance that only names a launch template hides them: pulumi-offline.md).
            instance = aws.ec2.Instance(
                f"{name}-instance",
                launch_template=aws.ec2.InstanceLaunchTemplateArgs(id=lt.id, version="$Latest"),
                instance_type=c.offer.instance_type,
                subnet_id=subnets.apply(lambda ids: ids[0]),
                vpc_security_group_ids=[sg.id],
                metadata_options=aws.ec2.InstanceMetadataOptionsArgs(**metadata_options),
                root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(
                    volume_size=disk, volume_type="gp3", encrypted=True, delete_on_termination=True, tags=tags
                ),
                instance_market_options=aws.ec2.InstanceInstanceMarketOptionsArgs(
                    market_type="spot", spot_options=aws.ec2.InstanceInstanceMarketOptionsSpotOptionsArgs(**spot_options),
                ) if spot else None,
                tags=tags,
                opts=child,
            )
            self.instance_id = instance.id
        self.register_outputs({
            "region": self.region,
            "instance_id": self.instance_id,
            "asg_name": self.asg_name,
            "launch_template_id": self.launch_template_id,
            "security_group_id": self.security_group_id,
        })

    def _group(self, name: str, d: Decision, lt: aws.ec2.LaunchTemplate, subnets: pulumi.Output[list[str]],
               types: pulumi.Output[list[str]], child: pulumi.ResourceOptions) -> aws.autoscaling.Group:
        """The Auto Scaling group: every node of every replica (Candidate.instances) over the ranked adequate types."""
        c = d.chosen
        size = low = high = c.instances
        scaled = d.autoscaling is not None
        spot = c.purchase == "spot"
        group_tags = tagging.aws_tags(d, hourly_usd=c.hourly_usd)  # the whole group's price
        if scaled:  # min..max nodes, and no warm pool: GPU groups scale from cold (issue 14)
            low, high = scaling.bounds(d)
            group_tags[scaling.AWS_MAX_REPLICAS] = str(d.autoscaling.max_replicas)
        placement = None
        if c.nodes > 1:  # multi-node training: one cluster placement group, so the nodes sit close (EFA)
            placement = aws.ec2.PlacementGroup(f"{name}-pg", strategy="cluster", tags=group_tags, opts=child).name
        group = aws.autoscaling.Group(
            f"{name}-asg",
            min_size=low,
            max_size=high,
            desired_capacity=None if scaled else size,  # the scaling policy sets it
            # GroupInServiceInstances, for the per-replica metric math of a query metric (components/scaling.py).
            enabled_metrics=["GroupInServiceInstances"] if scaled else None,
            metrics_granularity="1Minute" if scaled else None,
            vpc_zone_identifiers=subnets,
            placement_group=placement,
            capacity_rebalance=spot,  # replace a spot node on a rebalance signal, before it is reclaimed
            health_check_type="EC2",
            wait_for_capacity_timeout=WAIT_FOR_CAPACITY,
            mixed_instances_policy=aws.autoscaling.GroupMixedInstancesPolicyArgs(
                launch_template=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateArgs(
                    launch_template_specification=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateLaunchTemplateSpecificationArgs(
                        launch_template_id=lt.id, version="$Latest"
                    ),
                    overrides=types.apply(lambda ts: [
                        aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateOverrideArgs(instance_type=t) for t in ts]),
                ),
                instances_distribution=aws.autoscaling.GroupMixedInstancesPolicyInstancesDistributionArgs(
                    # "prioritized" launches on-demand capacity in override order, i.e. the engine's
                    # ranking; spot goes where the price and the spare capacity are best.
                    on_demand_allocation_strategy="prioritized",
                    on_demand_base_capacity=0 if spot else high,
                    on_demand_percentage_above_base_capacity=0 if spot else 100,
                    spot_allocation_strategy="price-capacity-optimized",
                ),
            ),
            # Instances and volumes get per-node tags from the launch template; these stay on the group.
            tags=[aws.autoscaling.GroupTagArgs(key=k, value=v, propagate_at_launch=False) for k, v in group_tags.items()],
            opts=child,
        )
        if scaled:
            scaling.aws_scaling(name, d, group, child)
        return group


def uses_group(d: Decision) -> bool:
    """An Auto Scaling group for replicas, capacity failover or a multi-node choice; else one instance."""
    c = d.chosen
    deploy = d.workload.spec.deploy
    return c.instances > 1 or deploy.capacity_failover or deploy.autoscaling is not None


def overrides(d: Decision, candidates: list, offered: dict[str, list[str]], zones: list[str]) -> list[str]:
    """The group's override list: the choice, then each failover type that can launch where the
    group does: offered by EC2 in every zone of the group, booting the same machine image, and, for
    an EFA cluster, with EFA and as many network cards (the template has one interface per card).
    """
    c = d.chosen
    row = images.default_for("aws", c.offer.instance_type)
    efa = c.nodes > 1 and c.offer.fabric == "efa"
    cards = aws_network.network_cards(c.offer.instance_type)
    out = [c.offer.instance_type]
    for x in candidates[1:]:
        t = x.offer.instance_type
        same_image = d.workload.spec.deploy.machine_image or images.default_for("aws", t) == row
        same_fabric = not efa or (x.offer.fabric == "efa" and aws_network.network_cards(t) == cards)
        if same_image and same_fabric and set(zones) <= set(offered.get(t, ())):
            out.append(t)
    return out


def _zones(offered: dict[str, list[str]], itype: str, zone: str | None, region: str) -> list[str]:
    """The zone ids to launch `itype` in: where EC2 offers it (only the priced zone when the row has one)."""
    zones = [z for z in offered.get(itype, []) if zone is None or z == zone]
    if not zones:
        where = f"zone {zone}" if zone else region
        raise pulumi.RunError(f"EC2 does not offer {itype} in {where} for this account. To fix: pin "
                              "placement.regions (or gpus) to where it is offered, or refresh the catalog")
    return zones


def _image(machine_image: str | None, row: images.MachineImage, invoke: pulumi.InvokeOptions | None,
           ) -> tuple[pulumi.Output[str], pulumi.Output[str], pulumi.Output[int]]:
    """(image id, root device name, root snapshot GiB): the family's image row, or deploy.machine_image."""
    if machine_image and not machine_image.startswith("ami-"):  # e.g. "resolve:ssm:/aws/service/..."
        return (pulumi.Output.from_input(machine_image), pulumi.Output.from_input(DEFAULT_ROOT_DEVICE),
                pulumi.Output.from_input(0))
    if machine_image:
        ami = aws.ec2.get_ami_output(filters=[aws.ec2.GetAmiFilterArgs(name="image-id", values=[machine_image])],
                                     opts=invoke)
    else:
        ami = aws.ec2.get_ami_output(
            owners=[row.owner],
            most_recent=True,
            filters=[aws.ec2.GetAmiFilterArgs(name="name", values=[row.name]),
                     aws.ec2.GetAmiFilterArgs(name="architecture", values=[row.architecture or "x86_64"])],
            opts=invoke,
        )
    root = ami.root_device_name.apply(lambda dev: dev or DEFAULT_ROOT_DEVICE)
    return ami.id, root, pulumi.Output.all(root, ami.block_device_mappings).apply(lambda a: _snapshot_gib(*a))


def _snapshot_gib(root: str, mappings) -> int:
    """Size of the AMI's root snapshot (the root volume may not be smaller), 0 when not reported."""
    for m in mappings or []:
        name = m["device_name"] if isinstance(m, dict) else m.device_name
        ebs = m["ebs"] if isinstance(m, dict) else m.ebs
        if name == root and ebs and ebs.get("volume_size"):
            return int(ebs["volume_size"])
    return 0


def check(plan: Decision, args) -> None:
    """Validate the AWS settings before anything is registered (gpusizer.base.providers component hook).

    Args:
        plan: the decision, its choice on AWS.
        args: the workload's GpuWorkloadArgs (aws_egress, aws_private_cidr, aws_region).

    Raises:
        ValueError: a setting no AWS resource could be created with; the message names its stack
            config key (gpusizer:awsEgress, gpusizer:awsPrivateCidr) and the values allowed.
    """
    check_settings(args.aws_egress, args.aws_private_cidr, args.aws_region)


def check_settings(egress: str, private_cidr: str, region: str | None = None) -> None:
    """The egress is one of aws_network.EGRESS, the private subnet's CIDR one EC2 accepts, and the
    default provider's region (aws:region, where set) an AWS Region code (REGION_PATTERNS).

    Both are checked whenever a workload lands on AWS, used by its instance or not (egress and the CIDR
    serve only multi-card EFA instances in a default VPC), before anything is registered: a typo fails
    that `pulumi preview`, not the update that first needs it. A stack with no AWS workload reads neither.
    AWS allows subnet blocks from /16 to /28 (AWS VPC User Guide, "Subnet CIDR blocks").

    >>> check_settings("nat", "172.31.240.0/20")
    >>> check_settings("public", "172.31.240.0/20")
    Traceback (most recent call last):
    ...
    ValueError: gpusizer:awsEgress 'public' is not an egress. To fix: use one of nat, endpoints, none
    """
    if egress not in aws_network.EGRESS:
        raise ValueError(f"gpusizer:awsEgress {egress!r} is not an egress. To fix: use one of "
                         f"{', '.join(aws_network.EGRESS)}")
    try:
        block = ipaddress.IPv4Network(private_cidr)  # strict: host bits set ("172.31.240.1/20") fail
    except (TypeError, ValueError):
        block = None
    if block is None or not 16 <= block.prefixlen <= 28:
        raise ValueError(f"gpusizer:awsPrivateCidr {private_cidr!r} is not an IPv4 subnet block from /16 to /28. "
                         f"To fix: a free block of the default VPC's 172.31.0.0/16 (default {aws_network.PRIVATE_CIDR})")
    if region is not None and not any(re.match(p, str(region)) for p in REGION_PATTERNS):
        raise ValueError(f"aws:region {region!r} is not an AWS Region code. To fix: pulumi config set aws:region "
                         "us-east-1 (or another Region: aws ec2 describe-regions)")


def provision(name: str, plan: Decision, args, opts: pulumi.ResourceOptions) -> dict[str, object]:
    """Provision an AWS choice for GpuWorkload; returns the outputs it exports.

    Args:
        name: the child's resource name.
        plan: the decision, its choice on AWS.
        args: the workload's GpuWorkloadArgs (aws_networks by region, aws_region).
        opts: options for the child (its parent).
    """
    cap = AwsGpuCapacity(name, AwsGpuCapacityArgs(
        plan, args.aws_networks.get(plan.chosen.offer.region), args.aws_region, egress=args.aws_egress,
        private_cidr=args.aws_private_cidr), opts)
    return {"instance_id": cap.instance_id, "asg_name": cap.asg_name,
            "launch_template_id": cap.launch_template_id, "security_group_id": cap.security_group_id}
