"""AWS placement: zones where EC2 offers a type, subnets there, EFA interfaces, private egress.

Catalog rows often carry no zone (every us-east-1 on-demand row), and P4d/P5/G6e
are not offered in every Availability Zone, so the zones come from EC2 itself
(`ec2:DescribeInstanceTypeOfferings` by `availability-zone-id`) and every
subnet the component launches into lies in one of them.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

# Network cards per instance type; EFA traffic gets one interface per card (AWS EC2 User Guide,
# "Maximize network bandwidth on accelerated computing instances with EFA": P5 and P5e support up
# to 32 network cards, 3,200 Gbps; G6e up to 4, 400 Gbps; 2025). p5en.48xlarge 16 and
# p6-b200.48xlarge 8 (16 x 200 and 8 x 400 Gbps EFAv3/v4) and p4d/p4de 4 are from the EC2
# instance-type specifications (unverified here); g6e.24xlarge 2 is unverified. Types not listed
# have one card.
NETWORK_CARDS = {
    "p5.48xlarge": 32,
    "p5e.48xlarge": 32,
    "p5en.48xlarge": 16,
    "p6-b200.48xlarge": 8,
    "p4d.24xlarge": 4,
    "p4de.24xlarge": 4,
    "g6e.48xlarge": 4,
    "g6e.24xlarge": 2,
}
# How a private subnet reaches SSM and the internet when instances cannot get a public IP
# (several network interfaces rule out an auto-assigned public IPv4: AWS EC2 User Guide, "Assign
# a public IPv4 address during launch": only for a single network interface).
EGRESS = ("nat", "endpoints", "none")
DEFAULT_EGRESS = EGRESS[0]  # internet and SSM, as a public subnet would have (gpusizer:awsEgress)
# Interface endpoints Session Manager needs (AWS Systems Manager User Guide, "Use VPC endpoints":
# ssm, ssmmessages, ec2messages), plus the S3 gateway endpoint for packages the agent fetches.
SSM_ENDPOINTS = ("ssm", "ssmmessages", "ec2messages")
# A /20 at the top of the default VPC's 172.31.0.0/16: default subnets take 172.31.0.0/20 upward,
# one per zone (AWS VPC User Guide, "Default VPCs"), so the last /20 is free in regions with fewer
# than 16 zones. Configurable (gpusizer:awsPrivateCidr).
PRIVATE_CIDR = "172.31.240.0/20"


def network_cards(instance_type: str) -> int:
    """Network cards of the type (1 when not listed).

    >>> network_cards("p5.48xlarge"), network_cards("g6.xlarge")
    (32, 1)
    """
    return NETWORK_CARDS.get(instance_type, 1)


def efa_interfaces(
    instance_type: str, security_group: pulumi.Input[str], public_ip: bool | None
) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """One EFA interface per network card: an EFA-with-ENA primary (card 0, device 0, carrying IP
    traffic) and an `efa-only` interface at device index 1 on every other card (AWS EC2 User Guide,
    "Maximize network bandwidth ... with multiple network cards", 2025)."""
    nics = [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=0,
            device_index=0,
            interface_type="efa",
            security_groups=[security_group],
            delete_on_termination="true",
            associate_public_ip_address=None if public_ip is None else str(public_ip).lower(),
        )
    ]
    nics += [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=card,
            device_index=1,
            interface_type="efa-only",
            security_groups=[security_group],
            delete_on_termination="true",
        )
        for card in range(1, network_cards(instance_type))
    ]
    return nics


def offered_zones(types: Sequence[str], invoke: pulumi.InvokeOptions | None) -> pulumi.Output[dict[str, list[str]]]:
    """Instance type -> the zone ids (use1-az1, ...) where EC2 offers it in the provider's region."""
    found = aws.ec2.get_instance_type_offerings_output(
        location_type="availability-zone-id",
        filters=[aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="instance-type", values=list(types))],
        opts=invoke,
    )

    def by_type(result) -> dict[str, list[str]]:
        out: dict[str, set[str]] = collections.defaultdict(set)
        for itype, zone in zip(result.instance_types, result.locations):
            out[itype].add(zone)
        return {t: sorted(z) for t, z in out.items()}

    return found.apply(by_type)


def subnets_in(
    network,
    zones: pulumi.Output[list[str]],
    invoke: pulumi.InvokeOptions | None,
) -> tuple[pulumi.Input[str], pulumi.Output[list[str]]]:
    """(VPC id, subnet ids in `zones`): among the configured subnets, else the default VPC's default ones."""
    if network is not None:
        vpc_id: pulumi.Input[str] = network.vpc_id
        base = [aws.ec2.GetSubnetsFilterArgs(name="subnet-id", values=list(network.subnet_ids))]
        where = "the subnets in gpusizer:awsNetworks"
    else:
        vpc_id = aws.ec2.get_vpc_output(default=True, opts=invoke).id
        base = [
            aws.ec2.GetSubnetsFilterArgs(name="vpc-id", values=[vpc_id]),
            aws.ec2.GetSubnetsFilterArgs(name="default-for-az", values=["true"]),
        ]
        where = "the default VPC"
    filters = zones.apply(lambda z: [*base, aws.ec2.GetSubnetsFilterArgs(name="availability-zone-id", values=z)])
    found = aws.ec2.get_subnets_output(filters=filters, opts=invoke)

    def some(args) -> list[str]:
        ids, z = args
        if not ids:
            raise pulumi.RunError(
                f"no subnet in {where} lies in a zone where EC2 offers the chosen type "
                f"({', '.join(z)}). To fix: set gpusizer:awsNetworks for this region with a "
                "subnet in one of those zones"
            )
        return sorted(ids)  # stable order, so the instance's subnet does not flap between runs

    return vpc_id, pulumi.Output.all(found.ids, zones).apply(some)


def zone_of(subnet_id: pulumi.Input[str], invoke: pulumi.InvokeOptions | None) -> pulumi.Output[str]:
    return aws.ec2.get_subnet_output(id=subnet_id, opts=invoke).availability_zone_id


def private_subnet(
    name: str,
    *,
    vpc_id: pulumi.Input[str],
    zone_id: pulumi.Input[str],
    public_subnet: pulumi.Input[str],
    egress: str,
    cidr: str,
    region: str,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> pulumi.Output[str]:
    """A private subnet in `zone_id` of the default VPC with egress for SSM (and, with NAT, the
    internet: model weights, packages). Returns its id.

    egress "nat": a NAT gateway (with an Elastic IP) in `public_subnet` of the same zone, and a
    default route to it; "endpoints": SSM interface endpoints and an S3 gateway endpoint, no internet.
    """
    subnet = aws.ec2.Subnet(
        f"{name}-private",
        vpc_id=vpc_id,
        cidr_block=cidr,
        availability_zone_id=zone_id,
        tags={**tags, "Name": f"{name}-private"},
        opts=opts,
    )
    table = aws.ec2.RouteTable(f"{name}-private-rt", vpc_id=vpc_id, tags=tags, opts=opts)
    aws.ec2.RouteTableAssociation(f"{name}-private-rta", subnet_id=subnet.id, route_table_id=table.id, opts=opts)
    if egress == "nat":
        ip = aws.ec2.Eip(f"{name}-nat-ip", domain="vpc", tags=tags, opts=opts)
        nat = aws.ec2.NatGateway(
            f"{name}-nat",
            subnet_id=public_subnet,
            allocation_id=ip.id,
            connectivity_type="public",
            tags=tags,
            opts=opts,
        )
        aws.ec2.Route(
            f"{name}-private-default",
            route_table_id=table.id,
            destination_cidr_block="0.0.0.0/0",
            nat_gateway_id=nat.id,
            opts=opts,
        )
    elif egress == "endpoints":
        sg = aws.ec2.SecurityGroup(
            f"{name}-endpoints",
            description="gpusizer: HTTPS from the private subnet to the SSM endpoints",
            vpc_id=vpc_id,
            tags=tags,
            opts=opts,
            ingress=[aws.ec2.SecurityGroupIngressArgs(protocol="tcp", from_port=443, to_port=443, cidr_blocks=[cidr])],
        )
        for svc in SSM_ENDPOINTS:
            aws.ec2.VpcEndpoint(
                f"{name}-{svc}",
                vpc_id=vpc_id,
                service_name=f"com.amazonaws.{region}.{svc}",
                vpc_endpoint_type="Interface",
                subnet_ids=[subnet.id],
                security_group_ids=[sg.id],
                private_dns_enabled=True,
                tags=tags,
                opts=opts,
            )
        aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=vpc_id,
            service_name=f"com.amazonaws.{region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[table.id],
            tags=tags,
            opts=opts,
        )
    return subnet.id
