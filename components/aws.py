"""AWS: a launch template plus an instance, or an Auto Scaling group that fails over across adequate types."""

from __future__ import annotations

import dataclasses
import json

import pulumi
import pulumi_aws as aws

from gpusizer import metadata
from gpusizer.decision import Decision

# Deep Learning AMI, looked up by owner and name (AWS DLAMI release notes,
# "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.x (Ubuntu 22.04)", 2025).
DLAMI_OWNER = "amazon"
DLAMI_NAME = "Deep Learning OSS Nvidia Driver AMI GPU PyTorch * (Ubuntu 22.04) *"
# The only managed policy the host gets: Session Manager access instead of SSH.
SSM_POLICY = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
# IMDSv2 hop limit 2 so containers on the host (one extra hop) can reach it;
# 1 would break the SDKs inside Docker (AWS docs, "Configure the instance metadata options").
IMDS_HOP_LIMIT = 2


@dataclasses.dataclass
class AwsGpuCapacityArgs:
    decision: Decision
    """The engine's decision; its choice must be an AWS offer."""
    subnet_ids: list[str] | None = None
    """Subnets for an Auto Scaling group; default: the default VPC's subnets."""
    vpc_id: str | None = None
    """VPC for the security group; default: the default VPC."""


class AwsGpuCapacity(pulumi.ComponentResource):
    """The chosen AWS capacity, secure by default.

    Creates an IAM role with SSM access only and its instance profile, a
    security group with no inbound rule, a launch template (IMDSv2 required,
    encrypted gp3 root sized for the model, spot market options when the
    choice is spot, sizing tags), and either one instance or, when the spec
    asks for replicas, capacity failover or several nodes, an Auto Scaling
    group whose mixed-instances overrides list the adequate types in rank
    order.
    """

    instance_id: pulumi.Output[str] | None
    asg_name: pulumi.Output[str] | None
    launch_template_id: pulumi.Output[str]

    def __init__(self, name: str, args: AwsGpuCapacityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpusizer:aws:GpuCapacity", name, {}, opts)
        d = args.decision
        c = d.chosen
        spec = d.workload.spec
        child = pulumi.ResourceOptions(parent=self)
        tags = metadata.aws_tags(
            spec.name,
            d.required_gpu_memory_gib,
            d.sized_by,
            **{"gpusizer:gpu": f"{c.gpu_count}x{c.offer.gpu}", "gpusizer:hourly-usd": f"{c.hourly_usd:.4f}",
               "gpusizer:purchase": c.purchase},
        )

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
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            description=f"gpusizer {spec.name}: no inbound; use SSM Session Manager",
            vpc_id=args.vpc_id,
            egress=[aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, cidr_blocks=["0.0.0.0/0"])],
            tags=tags,
            opts=child,
        )
        image_id = spec.deploy.machine_image or aws.ec2.get_ami(
            owners=[DLAMI_OWNER],
            most_recent=True,
            filters=[aws.ec2.GetAmiFilterArgs(name="name", values=[DLAMI_NAME])],
        ).id
        spot = c.purchase == "spot"
        disk = d.workload.disk_gib
        lt = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            image_id=image_id,
            instance_type=c.offer.instance_type,
            iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(arn=profile.arn),
            vpc_security_group_ids=[sg.id],
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=IMDS_HOP_LIMIT
            ),
            block_device_mappings=[aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name="/dev/sda1",
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=disk, volume_type="gp3", encrypted="true", delete_on_termination="true"
                ),
            )],
            instance_market_options=aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
                market_type="spot",
                spot_options=aws.ec2.LaunchTemplateInstanceMarketOptionsSpotOptionsArgs(
                    instance_interruption_behavior="terminate", spot_instance_type="one-time"
                ),
            ) if spot and not _uses_group(d) else None,
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tags) for kind in ("instance", "volume")
            ],
            tags=tags,
            opts=child,
        )
        self.launch_template_id = lt.id
        self.instance_id = None
        self.asg_name = None
        if _uses_group(d):
            self.asg_name = self._group(name, d, lt, tags, args, child).name
        else:
            # Type, IMDS and disk are set on the instance too, so an Instance policy sees them
            # (an instance that only names a launch template hides them: pulumi-offline.md).
            instance = aws.ec2.Instance(
                f"{name}-instance",
                launch_template=aws.ec2.InstanceLaunchTemplateArgs(id=lt.id, version="$Latest"),
                instance_type=c.offer.instance_type,
                metadata_options=aws.ec2.InstanceMetadataOptionsArgs(
                    http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=IMDS_HOP_LIMIT
                ),
                root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(volume_size=disk, volume_type="gp3", encrypted=True),
                instance_market_options=aws.ec2.InstanceInstanceMarketOptionsArgs(
                    market_type="spot",
                    spot_options=aws.ec2.InstanceInstanceMarketOptionsSpotOptionsArgs(
                        instance_interruption_behavior="terminate", spot_instance_type="one-time"
                    ),
                ) if spot else None,
                tags=tags,
                opts=child,
            )
            self.instance_id = instance.id
        self.register_outputs({"instance_id": self.instance_id, "asg_name": self.asg_name, "launch_template_id": lt.id})

    def _group(self, name, d: Decision, lt, tags, args: AwsGpuCapacityArgs, child) -> aws.autoscaling.Group:
        c = d.chosen
        spec = d.workload.spec
        size = c.replicas * c.nodes
        types = [x.offer.instance_type for x in d.failover(spec.deploy.failover_types if spec.deploy.capacity_failover else 1)]
        subnets = args.subnet_ids or _default_subnets()
        spot = c.purchase == "spot"
        placement = None
        if c.nodes > 1:  # multi-node training: one cluster placement group for EFA
            placement = aws.ec2.PlacementGroup(f"{name}-pg", strategy="cluster", tags=tags, opts=child).name
        return aws.autoscaling.Group(
            f"{name}-asg",
            min_size=size,
            max_size=size,
            desired_capacity=size,
            vpc_zone_identifiers=subnets,
            placement_group=placement,
            capacity_rebalance=spot,
            mixed_instances_policy=aws.autoscaling.GroupMixedInstancesPolicyArgs(
                launch_template=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateArgs(
                    launch_template_specification=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateLaunchTemplateSpecificationArgs(
                        launch_template_id=lt.id, version="$Latest"
                    ),
                    overrides=[
                        aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateOverrideArgs(instance_type=t) for t in types
                    ],
                ),
                instances_distribution=aws.autoscaling.GroupMixedInstancesPolicyInstancesDistributionArgs(
                    # "prioritized" launches on-demand capacity in override order: the engine's ranking.
                    on_demand_allocation_strategy="prioritized",
                    on_demand_base_capacity=0 if spot else size,
                    on_demand_percentage_above_base_capacity=0 if spot else 100,
                    spot_allocation_strategy="price-capacity-optimized",
                ),
            ),
            tags=[aws.autoscaling.GroupTagArgs(key=k, value=v, propagate_at_launch=True) for k, v in tags.items()],
            opts=child,
        )


def _uses_group(d: Decision) -> bool:
    deploy = d.workload.spec.deploy
    return d.chosen.replicas > 1 or deploy.capacity_failover or d.chosen.nodes > 1


def _default_subnets() -> list[str]:
    vpc = aws.ec2.get_vpc(default=True)
    return aws.ec2.get_subnets(filters=[aws.ec2.GetSubnetsFilterArgs(name="vpc-id", values=[vpc.id])]).ids
