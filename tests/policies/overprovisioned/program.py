"""A hand-written Pulumi program that over-provisions: 8 x H100 for a 20 GiB workload."""

import pulumi_aws as aws

aws.ec2.Instance(
    "big-box",
    ami="ami-0123456789abcdef0",
    instance_type="p5.48xlarge",
    metadata_options=aws.ec2.InstanceMetadataOptionsArgs(http_tokens="required"),
    root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(encrypted=True, volume_size=200),
    tags={"gpusizer:required-gpu-memory-gib": "20", "gpusizer:workload": "chat"},
)
