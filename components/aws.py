"""AWS: a launch template plus an instance, or an Auto Scaling group that fails over across adequate types."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

from components import tags as tagging
from gpusizer.decision import Decision

# Deep Learning AMI, looked up by owner and name (AWS DLAMI release notes, "Deep Learning OSS
# Nvidia Driver AMI GPU PyTorch 2.x (Ubuntu 24.04)", 2026: G4dn, G5, G6, Gr6, G6e, P4, P5, P5e,
# P5en, P6-B200). The ARM64 images are named "Deep Learning ARM64 AMI ...", so this filter and
# the architecture filter keep to x86_64. deploy.machine_image overrides it.
DLAMI_OWNER = "amazon"
DLAMI_NAME = "Deep Learning OSS Nvidia Driver AMI GPU PyTorch * (Ubuntu 24.04) *"
# Ubuntu AMIs boot from /dev/sda1; the looked-up AMI's own root device name wins when known.
DEFAULT_ROOT_DEVICE = "/dev/sda1"
# The only managed policy the host gets: Session Manager access instead of SSH.
SSM_POLICY = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
# IMDSv2 only. Hop limit 2, not 1: a container on the host adds one network hop, and with 1 the
# SDKs inside Docker cannot fetch the instance role's credentials (AWS docs, "Configure the
# instance metadata options"). Session tokens still cannot leave the host.
IMDS_HOP_LIMIT = 2


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

        # A single instance goes to the zone that was priced (the type is offered there); a group
        # spans the region's subnets unless its nodes share a cluster placement group (one zone).
        vpc_id, subnets = _network(args.network, c.offer.zone if not grouped or c.nodes > 1 else None, invoke)
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
        image_id, root_device = _image(spec.deploy.machine_image, invoke)
        spot = c.purchase == "spot"
        disk = d.workload.disk_gib  # deploy.disk_gib, else the OS image + model files (+ checkpoints)
        metadata_options = dict(http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=IMDS_HOP_LIMIT)
        spot_options = dict(instance_interruption_behavior="terminate", spot_instance_type="one-time")
        lt = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            image_id=image_id,
            instance_type=c.offer.instance_type,
            iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(arn=profile.arn),
            vpc_security_group_ids=None if efa else [sg.id],
            network_interfaces=[aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                device_index=0, interface_type="efa", security_groups=[sg.id], delete_on_termination="true",
                associate_public_ip_address="true" if args.network is None else None,  # default VPC: reach SSM
            )] if efa else None,
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
            opts=child,
        )
        self.launch_template_id = lt.id
        self.security_group_id = sg.id
        self.instance_id = None
        self.asg_name = None
        if grouped:
            self.asg_name = self._group(name, d, lt, subnets, child).name
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
               child: pulumi.ResourceOptions) -> aws.autoscaling.Group:
        """The Auto Scaling group: every node of every replica (Candidate.instances) over the ranked adequate types."""
        c = d.chosen
        size = c.instances
        types = failover_types(d)
        spot = c.purchase == "spot"
        group_tags = tagging.aws_tags(d, hourly_usd=c.hourly_usd)  # the whole group's price
        placement = None
        if c.nodes > 1:  # multi-node training: one cluster placement group, so the nodes sit close (EFA)
            placement = aws.ec2.PlacementGroup(f"{name}-pg", strategy="cluster", tags=group_tags, opts=child).name
            subnets = subnets.apply(lambda ids: ids[:1])
        return aws.autoscaling.Group(
            f"{name}-asg",
            min_size=size,
            max_size=size,
            desired_capacity=size,
            vpc_zone_identifiers=subnets,
            placement_group=placement,
            capacity_rebalance=spot,  # replace a spot node on a rebalance signal, before it is reclaimed
            health_check_type="EC2",
            mixed_instances_policy=aws.autoscaling.GroupMixedInstancesPolicyArgs(
                launch_template=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateArgs(
                    launch_template_specification=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateLaunchTemplateSpecificationArgs(
                        launch_template_id=lt.id, version="$Latest"
                    ),
                    overrides=[aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateOverrideArgs(instance_type=t)
                               for t in types],
                ),
                instances_distribution=aws.autoscaling.GroupMixedInstancesPolicyInstancesDistributionArgs(
                    # "prioritized" launches on-demand capacity in override order, i.e. the engine's
                    # ranking; spot goes where the price and the spare capacity are best.
                    on_demand_allocation_strategy="prioritized",
                    on_demand_base_capacity=0 if spot else size,
                    on_demand_percentage_above_base_capacity=0 if spot else 100,
                    spot_allocation_strategy="price-capacity-optimized",
                ),
            ),
            # Instances and volumes get per-node tags from the launch template; these stay on the group.
            tags=[aws.autoscaling.GroupTagArgs(key=k, value=v, propagate_at_launch=False) for k, v in group_tags.items()],
            opts=child,
        )


def uses_group(d: Decision) -> bool:
    """An Auto Scaling group for replicas, capacity failover or a multi-node choice; else one instance."""
    c = d.chosen
    return c.instances > 1 or d.workload.spec.deploy.capacity_failover


def failover_types(d: Decision) -> list[str]:
    """The group's override list: the choice, then the next-ranked adequate types in the same
    region, purchase option and node count (deploy.failover_types of them in all)."""
    deploy = d.workload.spec.deploy
    return [x.offer.instance_type for x in d.failover(deploy.failover_types if deploy.capacity_failover else 1)]


def _network(network: AwsNetwork | None, zone: str | None,
             invoke: pulumi.InvokeOptions | None) -> tuple[pulumi.Input[str], pulumi.Output[list[str]]]:
    """(VPC id, subnet ids): the configured ones or the default VPC's, in `zone` (an AZ id) when given."""
    if network is not None:
        if zone is None:
            return network.vpc_id, pulumi.Output.from_input(list(network.subnet_ids))
        vpc_id: pulumi.Input[str] = network.vpc_id
        filters = [aws.ec2.GetSubnetsFilterArgs(name="subnet-id", values=list(network.subnet_ids))]
    else:
        vpc_id = aws.ec2.get_vpc_output(default=True, opts=invoke).id
        filters = [aws.ec2.GetSubnetsFilterArgs(name="vpc-id", values=[vpc_id]),
                   aws.ec2.GetSubnetsFilterArgs(name="default-for-az", values=["true"])]
    if zone is not None:
        filters.append(aws.ec2.GetSubnetsFilterArgs(name="availability-zone-id", values=[zone]))
    where = f"zone {zone}" if zone else "the default VPC"

    def some(ids: list[str] | None) -> list[str]:
        if not ids:
            raise pulumi.RunError(f"no subnet in {where}. To fix: set gpusizer:awsNetworks for this region "
                                  "(vpcId and subnetIds, one in the chosen zone)")
        return sorted(ids)  # stable order, so the instance's subnet does not flap between runs

    return vpc_id, aws.ec2.get_subnets_output(filters=filters, opts=invoke).ids.apply(some)


def _image(machine_image: str | None, invoke: pulumi.InvokeOptions | None) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
    """(image id, root device name): the Deep Learning AMI, or deploy.machine_image."""
    if machine_image and not machine_image.startswith("ami-"):  # e.g. "resolve:ssm:/aws/service/..."
        return pulumi.Output.from_input(machine_image), pulumi.Output.from_input(DEFAULT_ROOT_DEVICE)
    if machine_image:
        ami = aws.ec2.get_ami_output(filters=[aws.ec2.GetAmiFilterArgs(name="image-id", values=[machine_image])],
                                     opts=invoke)
    else:
        ami = aws.ec2.get_ami_output(
            owners=[DLAMI_OWNER],
            most_recent=True,
            filters=[aws.ec2.GetAmiFilterArgs(name="name", values=[DLAMI_NAME]),
                     aws.ec2.GetAmiFilterArgs(name="architecture", values=["x86_64"])],
            opts=invoke,
        )
    return ami.id, ami.root_device_name.apply(lambda dev: dev or DEFAULT_ROOT_DEVICE)


def check(plan: Decision, args) -> None:
    """Nothing AWS-specific to validate before registering (gpusizer.providers component hook)."""


def provision(name: str, plan: Decision, args, opts: pulumi.ResourceOptions) -> dict[str, object]:
    """Provision an AWS choice for GpuWorkload; returns the outputs it exports.

    Args:
        name: the child's resource name.
        plan: the decision, its choice on AWS.
        args: the workload's GpuWorkloadArgs (aws_networks by region, aws_region).
        opts: options for the child (its parent).
    """
    cap = AwsGpuCapacity(name, AwsGpuCapacityArgs(plan, args.aws_networks.get(plan.chosen.offer.region), args.aws_region), opts)
    return {"instance_id": cap.instance_id, "asg_name": cap.asg_name,
            "launch_template_id": cap.launch_template_id, "security_group_id": cap.security_group_id}
