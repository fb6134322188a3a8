"""AWS: a launch template plus an instance, or an Auto Scaling group that fails over across adequate types."""

from __future__ import annotations

import base64
import dataclasses
import ipaddress
import json
import re
from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

from gpusizer.base import errors
from gpusizer.catalog import consumption
from gpusizer.components import aws_network, boot, scaling, serving
from gpusizer.components import tags as tagging
from gpusizer.decide.decision import Decision
from gpusizer.facts import images
from gpusizer.render import plan_json

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
# How long `pulumi up` waits for an Auto Scaling group to have its minimum (or desired) instances in
# service (pulumi-aws Group.waitForCapacityTimeout; the provider default is "10m"). Never "0": a
# group that gets no capacity must fail `up` with the provider's "waiting for capacity" error (its
# activity history says why), not report success at 0 instances. 30 minutes leaves capacity
# failover time to walk the override list.
WAIT_FOR_CAPACITY = "30m"
# Capacity reservations a launch template can target (EC2 API CapacityReservationTarget): an
# On-Demand Capacity Reservation or Capacity Block id, or a capacity reservation group's ARN.
RESERVATION_ID = re.compile(r"^cr-[0-9a-f]{8}([0-9a-f]{9})?$")
RESERVATION_GROUP = re.compile(r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/[A-Za-z0-9_.-]+$")
# CloudWatch agent: the only namespace the instance role may publish to is serving.CW_GPU_NAMESPACE (IAM
# condition key cloudwatch:namespace, CloudWatch "Using condition keys to limit access to CloudWatch
# namespaces"), and ec2:DescribeTags, which the agent calls to resolve ${aws:AutoScalingGroupName}.
# Traffic: an internal Network Load Balancer on the server's port, its target group checking
# GET /health (vLLM answers 200 once the engine is up) as serving.HEALTH_INTERVAL_SECONDS says.
# The SDK subpackages provision() uses (gpusizer.base.providers.Provider.component says why).
SDK_MODULES = (
    "pulumi_aws.ec2",
    "pulumi_aws.autoscaling",
    "pulumi_aws.iam",
    "pulumi_aws.lb",
    "pulumi_aws.secretsmanager",
)
# AWS Region codes, one pattern per partition (aws, aws-cn, aws-us-gov, the ISO partitions, aws-eusc):
# each partition's regionRegex in botocore's endpoints model (botocore/data/endpoints.json, read
# 2026-11-25); tests/components/test_aws.py compares them with the installed botocore's.
REGION_PATTERNS = (
    r"^(us|eu|ap|sa|ca|me|af|il|mx)\-\w+\-\d+$",
    r"^cn\-\w+\-\d+$",
    r"^us\-gov\-\w+\-\d+$",
    r"^us\-iso\-\w+\-\d+$",
    r"^us\-isob\-\w+\-\d+$",
    r"^eu\-isoe\-\w+\-\d+$",
    r"^us\-isof\-\w+\-\d+$",
    r"^eusc\-(de)\-\w+\-\d+$",
)


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
    hf_token: pulumi.Input[str] | None = None
    """Hugging Face token (a Pulumi secret) for a serving instance: stored in Secrets Manager, read
    at boot with the instance role, never in user data."""

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
    endpoint: pulumi.Output[str] | None
    """http://<internal load balancer DNS name>:8000 for serving (deploy.expose internal), else None."""
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
            provider = aws.Provider(
                f"{name}-{c.offer.region}", region=c.offer.region, opts=pulumi.ResourceOptions(parent=self)
            )
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        invoke = pulumi.InvokeOptions(provider=provider) if provider else None
        grouped = uses_group(d)
        efa = c.nodes > 1 and c.offer.fabric == "efa"
        cards = aws_network.network_cards(c.offer.instance_type) if efa else 1
        block_rate = (
            consumption.capacity_block_usd(c.offer.instance_type, c.offer.region)
            if spec.deploy.capacity_block
            else None
        )
        # per node: templates, instances, volumes; a Capacity Block at its published rate where there is one
        tags = tagging.aws_tags(d, hourly_usd=block_rate)
        tags[tagging.AWS_CONSUMPTION] = plan_json.consumption_model(d)

        role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
                    ],
                }
            ),
            tags=tags,
            opts=child,
        )
        aws.iam.RolePolicyAttachment(f"{name}-ssm", role=role.name, policy_arn=SSM_POLICY, opts=child)
        serve = spec.task == "inference"
        gpu_metric = d.autoscaling is not None and spec.deploy.autoscaling.metric == "gpu_utilization"
        secret = None
        if serve and args.hf_token is not None:
            secret = aws.secretsmanager.Secret(
                f"{name}-hf-token",
                description=f"gpusizer {spec.name}: Hugging Face token, read at boot",
                recovery_window_in_days=0,
                tags=tags,
                opts=child,
            )
            aws.secretsmanager.SecretVersion(
                f"{name}-hf-token-value",
                secret_id=secret.id,
                secret_string=pulumi.Output.secret(args.hf_token),
                opts=child,
            )
        statements = instance_statements(secret.arn if secret else None, gpu_metric)
        if statements:
            aws.iam.RolePolicy(
                f"{name}-serve",
                role=role.name,
                opts=child,
                policy=pulumi.Output.all(*[pulumi.Output.from_input(st) for st in statements]).apply(
                    lambda sts: json.dumps({"Version": "2012-10-17", "Statement": sts})
                ),
            )
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
                name,
                vpc_id=vpc_id,
                zone_id=zone_id,
                public_subnet=subnets[0],
                egress=args.egress,
                cidr=args.private_cidr,
                region=c.offer.region,
                tags=tags,
                opts=child,
            ).apply(lambda sid: [sid])
        exposed = serve and spec.deploy.expose == "internal"
        lb_sg = None
        ingress = []
        if efa:  # EFA needs all traffic between the group's own members (AWS EC2 User Guide, "Prepare an EFA-enabled security group")
            ingress.append(aws.ec2.SecurityGroupIngressArgs(protocol="-1", from_port=0, to_port=0, self=True))
        if exposed:
            vpc_cidr = aws.ec2.get_vpc_output(id=vpc_id, opts=invoke).cidr_block
            # The load balancer's own group: the server port from inside the VPC only.
            lb_sg = aws.ec2.SecurityGroup(
                f"{name}-lb-sg",
                description=f"gpusizer {spec.name}: the server port from inside the VPC",
                vpc_id=vpc_id,
                tags=tags,
                opts=child,
                ingress=[
                    aws.ec2.SecurityGroupIngressArgs(
                        protocol="tcp", from_port=serving.PORT, to_port=serving.PORT, cidr_blocks=[vpc_cidr]
                    )
                ],
                egress=[
                    aws.ec2.SecurityGroupEgressArgs(
                        protocol="tcp", from_port=serving.PORT, to_port=serving.PORT, cidr_blocks=[vpc_cidr]
                    )
                ],
            )
            ingress.append(
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp", from_port=serving.PORT, to_port=serving.PORT, security_groups=[lb_sg.id]
                )
            )
        egress = [aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, cidr_blocks=["0.0.0.0/0"])]
        if efa:  # and all traffic out to them: NCCL over EFA fails without the self egress rule (same guide)
            egress.append(aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, self=True))
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            description=f"gpusizer {spec.name}: no inbound from outside; use SSM Session Manager",
            vpc_id=vpc_id,
            ingress=ingress or None,
            egress=egress,
            tags=tags,
            opts=child,
        )
        row = images.default_for("aws", c.offer.instance_type)
        image_id, root_device, snapshot_gib = _image(spec.deploy.machine_image, row, invoke)
        spot = c.purchase == "spot"
        # deploy.disk_gib, else the OS image + model files (+ checkpoints); never below the AMI's snapshot.
        disk = snapshot_gib.apply(lambda snap: max(d.workload.disk_gib, snap))
        metadata_options = dict(
            http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=IMDS_HOP_LIMIT
        )
        spot_options = dict(instance_interruption_behavior="terminate", spot_instance_type="one-time")
        # The default image is found by name; a later release must not change the template (and so
        # every instance): the first lookup sticks until the user sets deploy.machine_image or
        # replaces the template.
        pinned = [] if spec.deploy.machine_image else ["imageId"]
        user_data = None
        if serve:
            b = dict(
                cloud="aws",
                workload=spec.name,
                image=serving.server_image(d),
                args=tuple(serving.vllm_args(d)),
                weights_bytes=int(d.workload.breakdown.weights),
                region=c.offer.region,
                gpu_metric=gpu_metric,
            )
            user_data = (secret.arn if secret else pulumi.Output.from_input(None)).apply(
                lambda arn: base64.b64encode(boot.cloud_config(boot.Boot(**b, token_secret=arn)).encode()).decode()
            )
        reservation = spec.deploy.capacity_reservation
        capacity = None
        if reservation:
            target = (
                dict(capacity_reservation_id=reservation)
                if reservation.startswith("cr-")
                else dict(capacity_reservation_resource_group_arn=reservation)
            )
            capacity = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    **target
                )
            )
        market = None
        if spec.deploy.capacity_block:  # EC2 Capacity Blocks for ML: market type capacity-block plus the block's id
            market = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
        elif spot and not grouped:
            market = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
                market_type="spot",
                spot_options=aws.ec2.LaunchTemplateInstanceMarketOptionsSpotOptionsArgs(**spot_options),
            )
        lt = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            image_id=image_id,
            instance_type=c.offer.instance_type,
            iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(arn=profile.arn),
            vpc_security_group_ids=None if efa else [sg.id],
            # Default VPC, one interface: a public IP so SSM is reachable; several: the private subnet.
            network_interfaces=aws_network.efa_interfaces(
                c.offer.instance_type, sg.id, True if args.network is None and cards == 1 else None
            )
            if efa
            else None,
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(**metadata_options),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=root_device,
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=disk, volume_type="gp3", encrypted="true", delete_on_termination="true"
                    ),
                )
            ],
            # A mixed-instances group buys spot through its distribution, and rejects templates that ask.
            instance_market_options=market,
            capacity_reservation_specification=capacity,
            user_data=user_data,
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tags)
                for kind in ("instance", "volume", "network-interface")
            ],
            tags=tags,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=pinned)),
        )
        self.launch_template_id = lt.id
        self.security_group_id = sg.id
        self.instance_id = None
        self.asg_name = None
        self.endpoint = None
        target_group = None
        if exposed:
            target_group = aws.lb.TargetGroup(
                f"{name}-tg",
                port=serving.PORT,
                protocol="TCP",
                target_type="instance",
                vpc_id=vpc_id,
                health_check=aws.lb.TargetGroupHealthCheckArgs(
                    enabled=True,
                    protocol="HTTP",
                    path=serving.HEALTH_PATH,
                    port="traffic-port",
                    matcher="200",
                    interval=serving.HEALTH_INTERVAL_SECONDS,
                    healthy_threshold=serving.HEALTHY_AFTER,
                    unhealthy_threshold=serving.UNHEALTHY_AFTER,
                ),
                tags=tags,
                opts=child,
            )
            balancer = aws.lb.LoadBalancer(
                f"{name}-nlb",
                load_balancer_type="network",
                internal=True,
                subnets=subnets,
                security_groups=[lb_sg.id],
                tags=tags,
                opts=child,
            )
            aws.lb.Listener(
                f"{name}-listener",
                load_balancer_arn=balancer.arn,
                port=serving.PORT,
                protocol="TCP",
                default_actions=[aws.lb.ListenerDefaultActionArgs(type="forward", target_group_arn=target_group.arn)],
                tags=tags,
                opts=child,
            )
            self.endpoint = balancer.dns_name.apply(lambda dns: f"http://{dns}:{serving.PORT}")
        if grouped:
            types = pulumi.Output.all(offered, group_zones).apply(lambda a: overrides(d, candidates, a[0], a[1]))
            self.asg_name = self._group(name, d, lt, subnets, types, child, target_group).name
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
                    market_type="spot",
                    spot_options=aws.ec2.InstanceInstanceMarketOptionsSpotOptionsArgs(**spot_options),
                )
                if spot and not spec.deploy.capacity_block
                else None,
                tags=tags,
                opts=child,
            )
            self.instance_id = instance.id
            if target_group is not None:
                aws.lb.TargetGroupAttachment(
                    f"{name}-target",
                    target_group_arn=target_group.arn,
                    target_id=instance.id,
                    port=serving.PORT,
                    opts=child,
                )
        self.register_outputs(
            {
                "region": self.region,
                "instance_id": self.instance_id,
                "asg_name": self.asg_name,
                "launch_template_id": self.launch_template_id,
                "security_group_id": self.security_group_id,
                "endpoint": self.endpoint,
            }
        )

    def _group(
        self,
        name: str,
        d: Decision,
        lt: aws.ec2.LaunchTemplate,
        subnets: pulumi.Output[list[str]],
        types: pulumi.Output[list[str]],
        child: pulumi.ResourceOptions,
        target_group: aws.lb.TargetGroup | None = None,
    ) -> aws.autoscaling.Group:
        """The Auto Scaling group: every node of every replica (Candidate.instances) over the ranked adequate types."""
        c = d.chosen
        size = low = high = c.instances
        scaled = d.autoscaling is not None
        spot = c.purchase == "spot"
        rate = consumption.capacity_block_usd(c.offer.instance_type, c.offer.region)
        block = d.workload.spec.deploy.capacity_block and rate is not None
        group_tags = tagging.aws_tags(
            d, hourly_usd=rate * c.instances if block else c.hourly_usd
        )  # the whole group's price
        group_tags[tagging.AWS_CONSUMPTION] = plan_json.consumption_model(d)
        if scaled:  # min..max nodes, and no warm pool: GPU groups scale from cold (issue 14)
            low, high = scaling.bounds(d)
            group_tags[scaling.AWS_MAX_REPLICAS] = str(d.autoscaling.max_replicas)
        placement = None
        if c.nodes > 1:  # multi-node training: one cluster placement group, so the nodes sit close (EFA)
            placement = aws.ec2.PlacementGroup(f"{name}-pg", strategy="cluster", tags=group_tags, opts=child).name
        reserved = d.workload.spec.deploy.capacity_reservation is not None
        mixed = aws.autoscaling.GroupMixedInstancesPolicyArgs(
            launch_template=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateArgs(
                launch_template_specification=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateLaunchTemplateSpecificationArgs(
                    launch_template_id=lt.id, version="$Latest"
                ),
                overrides=types.apply(
                    lambda ts: [
                        aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateOverrideArgs(instance_type=t) for t in ts
                    ]
                ),
            ),
            instances_distribution=aws.autoscaling.GroupMixedInstancesPolicyInstancesDistributionArgs(
                # "prioritized" launches on-demand capacity in override order, i.e. the engine's
                # ranking; spot goes where the price and the spare capacity are best.
                on_demand_allocation_strategy="prioritized",
                on_demand_base_capacity=0 if spot else high,
                on_demand_percentage_above_base_capacity=0 if spot else 100,
                spot_allocation_strategy="price-capacity-optimized",
            ),
        )
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
            # Serving behind the load balancer: an instance failing GET /health is replaced, after the
            # grace the model load may take (serving.load_seconds).
            health_check_type="ELB" if target_group is not None else "EC2",
            health_check_grace_period=serving.load_seconds(d) if target_group is not None else None,
            target_group_arns=[target_group.arn] if target_group is not None else None,
            wait_for_capacity_timeout=WAIT_FOR_CAPACITY,
            # A reservation (ODCR, Capacity Block) is for one type: the template alone, no failover list.
            launch_template=aws.autoscaling.GroupLaunchTemplateArgs(id=lt.id, version="$Latest") if reserved else None,
            mixed_instances_policy=None if reserved else mixed,
            # Instances and volumes get per-node tags from the launch template; these stay on the group.
            tags=[
                aws.autoscaling.GroupTagArgs(key=k, value=v, propagate_at_launch=False) for k, v in group_tags.items()
            ],
            opts=child,
        )
        if scaled:
            scaling.aws_scaling(name, d, group, child)
        return group


def instance_statements(secret_arn: pulumi.Input[str] | None, gpu_metric: bool) -> list:
    """The instance role's own permissions beyond SSM: read the one token secret; publish the GPU
    metric to the CloudWatch agent's namespace only (and DescribeTags, for its group dimension)."""
    out: list = []
    if secret_arn is not None:
        out.append(
            pulumi.Output.from_input(secret_arn).apply(
                lambda arn: {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue", "Resource": arn}
            )
        )
    if gpu_metric:
        out.append(
            {
                "Effect": "Allow",
                "Action": "cloudwatch:PutMetricData",
                "Resource": "*",
                "Condition": {"StringEquals": {"cloudwatch:namespace": serving.CW_GPU_NAMESPACE}},
            }
        )
        out.append({"Effect": "Allow", "Action": "ec2:DescribeTags", "Resource": "*"})
    return out


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
        raise pulumi.RunError(
            f"EC2 does not offer {itype} in {where} for this account. To fix: pin "
            "placement.regions (or gpus) to where it is offered, or refresh the catalog"
        )
    return zones


def _image(
    machine_image: str | None,
    row: images.MachineImage,
    invoke: pulumi.InvokeOptions | None,
) -> tuple[pulumi.Output[str], pulumi.Output[str], pulumi.Output[int]]:
    """(image id, root device name, root snapshot GiB): the family's image row, or deploy.machine_image."""
    if machine_image and not machine_image.startswith("ami-"):  # e.g. "resolve:ssm:/aws/service/..."
        return (
            pulumi.Output.from_input(machine_image),
            pulumi.Output.from_input(DEFAULT_ROOT_DEVICE),
            pulumi.Output.from_input(0),
        )
    if machine_image:
        ami = aws.ec2.get_ami_output(
            filters=[aws.ec2.GetAmiFilterArgs(name="image-id", values=[machine_image])], opts=invoke
        )
    else:
        ami = aws.ec2.get_ami_output(
            owners=[row.owner],
            most_recent=True,
            filters=[
                aws.ec2.GetAmiFilterArgs(name="name", values=[row.name]),
                aws.ec2.GetAmiFilterArgs(name="architecture", values=[row.architecture or "x86_64"]),
            ],
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
    check_capacity(plan)
    scaling.check_signal(plan)
    if plan.workload.spec.task == "inference":
        serving.check_one_node(plan)
        serving.vllm_args(plan)  # a model without weights, or an image without the flags, fails here


def check_capacity(plan: Decision) -> None:
    """deploy.capacity_reservation names an EC2 reservation (cr-... or a group ARN); a Capacity Block
    is a cr- id, for an on-demand choice (Capacity Blocks are not spot).

    Raises:
        errors.SpecError: naming the field and the fix.
    """
    deploy = plan.workload.spec.deploy
    r = deploy.capacity_reservation
    if r is None:
        return
    if not (RESERVATION_ID.match(r) or RESERVATION_GROUP.match(r)):
        raise errors.SpecError(
            f"deploy.capacity_reservation {r!r} is no EC2 capacity reservation. To fix: an On-Demand Capacity "
            "Reservation or Capacity Block id (cr-0123456789abcdef0) or a capacity reservation group ARN "
            "(arn:aws:resource-groups:<region>:<account>:group/<name>)",
            field="deploy.capacity_reservation",
        )
    if deploy.capacity_block and not r.startswith("cr-"):
        raise errors.SpecError(
            "deploy.capacity_block: a Capacity Block is targeted by its reservation id (cr-...). "
            "To fix: set capacity_reservation to the block's id",
            field="deploy.capacity_reservation",
        )
    if plan.chosen.purchase == "spot":
        raise errors.SpecError(
            "deploy.capacity_reservation: a reservation is on-demand capacity, the choice is spot. "
            "To fix: set placement.purchase: on-demand",
            field="deploy.capacity_reservation",
        )


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
        raise ValueError(
            f"gpusizer:awsEgress {egress!r} is not an egress. To fix: use one of {', '.join(aws_network.EGRESS)}"
        )
    try:
        block = ipaddress.IPv4Network(private_cidr)  # strict: host bits set ("172.31.240.1/20") fail
    except (TypeError, ValueError):
        block = None
    if block is None or not 16 <= block.prefixlen <= 28:
        raise ValueError(
            f"gpusizer:awsPrivateCidr {private_cidr!r} is not an IPv4 subnet block from /16 to /28. "
            f"To fix: a free block of the default VPC's 172.31.0.0/16 (default {aws_network.PRIVATE_CIDR})"
        )
    if region is not None and not any(re.match(p, str(region)) for p in REGION_PATTERNS):
        raise ValueError(
            f"aws:region {region!r} is not an AWS Region code. To fix: pulumi config set aws:region "
            "us-east-1 (or another Region: aws ec2 describe-regions)"
        )


def provision(name: str, plan: Decision, args, opts: pulumi.ResourceOptions) -> dict[str, object]:
    """Provision an AWS choice for GpuWorkload; returns the outputs it exports.

    Args:
        name: the child's resource name.
        plan: the decision, its choice on AWS.
        args: the workload's GpuWorkloadArgs (aws_networks by region, aws_region).
        opts: options for the child (its parent).
    """
    cap = AwsGpuCapacity(
        name,
        AwsGpuCapacityArgs(
            plan,
            args.aws_networks.get(plan.chosen.offer.region),
            args.aws_region,
            egress=args.aws_egress,
            private_cidr=args.aws_private_cidr,
            hf_token=args.hf_token,
        ),
        opts,
    )
    return {
        "instance_id": cap.instance_id,
        "asg_name": cap.asg_name,
        "launch_template_id": cap.launch_template_id,
        "security_group_id": cap.security_group_id,
        "endpoint": cap.endpoint,
    }
