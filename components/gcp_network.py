"""GCP networking a GPU VM needs beyond its primary NIC: Cloud NAT egress and GPUDirect data NICs."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from gpusizer.components import names

# GPUDirect data NICs per fabric: (extra NICs, NIC type, MTU). Each GPUDirect-TCPX/TCPXO NIC sits
# in its own VPC network (GCP docs, "Maximize GPU network bandwidth with GPUDirect-TCPX and
# multi-networking", 2025: a3-highgpu-8g / a3-edgegpu-8g 1 + 4 gVNICs, a3-megagpu-8g 1 + 8 gVNICs
# with GPUDirect-TCPXO, MTU 8244). A3 Ultra / A4 (RDMA): two gVNICs, each in a regular VPC (the
# primary and one more), plus 8 MRDMA NICs in one VPC made from the zone's RoCE network profile,
# one subnet each (GCP docs, "Create A3 Ultra or A4 instances with RDMA", 2025: "two regular VPC
# networks for the gVNIC network interfaces, one VPC network with the RDMA network profile for the
# eight CX-7 NICs"; the profile name "<zone>-vpc-roce" unverified). A RoCE VPC takes no VPC firewall
# rules (same guide: RDMA networks do not support them), so none is created there.
GPUDIRECT = {"gpudirect-tcpx": (4, "GVNIC", 8244), "gpudirect-tcpxo": (8, "GVNIC", 8244), "rdma": (8, "MRDMA", 8896)}
# Data subnets: private ranges inside VPCs this component owns, so they cannot clash with the user's.
DATA_CIDR = "192.168.{i}.0/24"
GVNIC1_CIDR = "192.168.100.0/24"  # the second gVNIC's subnet of A3 Ultra / A4


def cloud_nat(
    name: str, *, stack: str, region: str, network: str, subnetwork: str | None, opts: pulumi.ResourceOptions
) -> gcp.compute.RouterNat:
    """A Cloud Router and NAT in `region` of `network`, so VMs without an external IP reach the
    internet (model weights, packages, images). With a subnetwork, only that subnetwork is NATed,
    so another stack can NAT its own subnetwork of the same network."""
    router = gcp.compute.Router(
        f"{name}-router", name=names.rfc1035(f"gpusizer-{stack}-{region}"), network=network, region=region, opts=opts
    )
    scope = dict(source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES")
    if subnetwork:
        scope = dict(
            source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
            subnetworks=[
                gcp.compute.RouterNatSubnetworkArgs(name=subnetwork, source_ip_ranges_to_nats=["ALL_IP_RANGES"])
            ],
        )
    return gcp.compute.RouterNat(
        f"{name}-nat",
        name=names.rfc1035(f"gpusizer-{stack}-{region}-nat"),
        router=router.name,
        region=region,
        nat_ip_allocate_option="AUTO_ONLY",
        log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
        **scope,
        opts=opts,
    )


def data_nics(
    name: str, *, stack: str, workload: str, fabric: str, region: str, zone: str, opts: pulumi.ResourceOptions
) -> list[dict]:
    """The GPUDirect data NICs of a multi-node A3/A4 VM, each on a network this component creates,
    with a firewall rule letting the nodes' data subnets talk to each other (nothing else comes in).

    Returns:
        network-interface arguments (network, subnetwork, nic_type) for the NICs after the primary.
    """
    count, nic_type, mtu = GPUDIRECT[fabric]
    base = names.per_stack(workload, stack, 50)
    nics = []
    shared = None
    if nic_type == "MRDMA":  # the second gVNIC in a regular VPC of its own, then one RoCE VPC, one subnet per NIC
        net = gcp.compute.Network(
            f"{name}-gvnic1", name=names.fit(f"{base}-gvnic1", 63), auto_create_subnetworks=False, mtu=mtu, opts=opts
        )
        sub = gcp.compute.Subnetwork(
            f"{name}-gvnic1-sub",
            name=names.fit(f"{base}-gvnic1", 63),
            network=net.id,
            region=region,
            ip_cidr_range=GVNIC1_CIDR,
            opts=opts,
        )
        gcp.compute.Firewall(
            f"{name}-gvnic1-fw",
            name=names.fit(f"{base}-gvnic1-internal", 63),
            network=net.id,
            direction="INGRESS",
            source_ranges=[GVNIC1_CIDR],
            allows=[gcp.compute.FirewallAllowArgs(protocol="all")],
            opts=opts,
        )
        nics.append(dict(network=net.id, subnetwork=sub.id, nic_type="GVNIC"))
        shared = gcp.compute.Network(
            f"{name}-rdma",
            name=names.fit(f"{base}-rdma", 63),
            auto_create_subnetworks=False,
            mtu=mtu,
            network_profile=f"global/networkProfiles/{zone}-vpc-roce",
            opts=opts,
        )
    for i in range(count):
        net = shared or gcp.compute.Network(
            f"{name}-data{i}", name=names.fit(f"{base}-data{i}", 63), auto_create_subnetworks=False, mtu=mtu, opts=opts
        )
        cidr = DATA_CIDR.format(i=i)
        sub = gcp.compute.Subnetwork(
            f"{name}-data{i}-sub",
            name=names.fit(f"{base}-data{i}", 63),
            network=net.id,
            region=region,
            ip_cidr_range=cidr,
            opts=opts,
        )
        if shared is None:  # a RoCE network takes no firewall rule
            gcp.compute.Firewall(
                f"{name}-data{i}-fw",
                name=names.fit(f"{base}-data{i}-internal", 63),
                network=net.id,
                direction="INGRESS",
                source_ranges=["192.168.0.0/16"],
                allows=[gcp.compute.FirewallAllowArgs(protocol="all")],
                opts=opts,
            )
        nics.append(dict(network=net.id, subnetwork=sub.id, nic_type=nic_type))
    return nics
