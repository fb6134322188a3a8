"""Resource fixtures per covered type, as the engine sends them (camelCase wire names)."""

REQ = "gpusizer:required-gpu-memory-gib"

H100_FOR_20 = (
    "aws:ec2/instance:Instance",
    {
        "instanceType": "p5.48xlarge",
        "tags": {REQ: "20"},
        "metadataOptions": {"httpTokens": "required"},
        "rootBlockDevice": {"encrypted": True},
    },
)
L4_FOR_18 = (
    "aws:ec2/instance:Instance",
    {
        "instanceType": "g6.xlarge",
        "tags": {REQ: "18"},
        "metadataOptions": {"httpTokens": "required"},
        "rootBlockDevice": {"encrypted": True},
    },
)
UNTAGGED_GPU = (
    "aws:ec2/instance:Instance",
    {
        "instanceType": "g5.xlarge",
        "metadataOptions": {"httpTokens": "required"},
        "rootBlockDevice": {"encrypted": True},
    },
)
NON_GPU = ("aws:ec2/instance:Instance", {"instanceType": "t3.micro"})

# Each covered resource type, over-provisioned for a 20 GiB requirement.
OVER = {
    "aws-instance": H100_FOR_20,
    "aws-launch-template": (
        "aws:ec2/launchTemplate:LaunchTemplate",
        {"instanceType": "p5.48xlarge", "tags": {REQ: "20"}},
    ),
    "aws-asg": (
        "aws:autoscaling/group:Group",
        {
            "mixedInstancesPolicy": {"launchTemplate": {"overrides": [{"instanceType": "p4de.24xlarge"}]}},
            "tags": [{"key": REQ, "value": "20", "propagateAtLaunch": True}],
        },
    ),
    "aws-fleet": (
        "aws:ec2/fleet:Fleet",
        {"launchTemplateConfigs": [{"overrides": [{"instanceType": "p5.48xlarge"}]}], "tags": {REQ: "20"}},
    ),
    "gcp-instance": (
        "gcp:compute/instance:Instance",
        {"machineType": "a3-highgpu-8g", "labels": {"gpusizer-required-gpu-memory-gib": "20"}},
    ),
    "gcp-template": (
        "gcp:compute/instanceTemplate:InstanceTemplate",
        {
            "machineType": "n1-standard-32",
            "guestAccelerators": [{"type": "nvidia-tesla-v100", "count": 8}],
            "labels": {"gpusizer-required-gpu-memory-gib": "5"},
        },
    ),
    "k8s-deployment": (
        "kubernetes:apps/v1:Deployment",
        {
            "metadata": {"annotations": {"gpusizer.io/required-gpu-memory-gib": "20"}},
            "spec": {
                "template": {
                    "spec": {
                        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
                    }
                }
            },
        },
    ),
    "k8s-statefulset": (
        "kubernetes:apps/v1:StatefulSet",
        {
            "metadata": {"annotations": {"gpusizer.io/required-gpu-memory-gib": "20"}},
            "spec": {
                "template": {
                    "spec": {
                        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 4}}}],
                    }
                }
            },
        },
    ),
    "k8s-job": (
        "kubernetes:batch/v1:Job",
        {
            "spec": {
                "template": {
                    "metadata": {"annotations": {"gpusizer.io/required-gpu-memory-gib": "10"}},
                    "spec": {
                        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
                        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 8}}}],
                    },
                }
            }
        },
    ),
    "k8s-pod": (
        "kubernetes:core/v1:Pod",
        {
            "metadata": {"annotations": {"gpusizer.io/required-gpu-memory-gib": "20"}},
            "spec": {
                "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 8}}}],
            },
        },
    ),
}

# --- Every covered type, as a first `pulumi preview` sends it: ids of resources not yet created are the
# engine's unknown sentinel (pulumi sdk/go/common/resource/plugin/rpc.go), in the places the components and
# hand-written programs put them: subnets, security groups, instance profiles, launch template ids, service
# account emails, namespaces, images.
U = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # unknown string
UO = "dd056dcd-154b-4c76-9bd3-c8f88648b5ff"  # unknown object
GCP_REQ = "gpusizer-required-gpu-memory-gib"
K8S_REQ = "gpusizer.io/required-gpu-memory-gib"
SIZES = {  # (AWS type, GCP machine, Kubernetes GPU product label, GPUs per pod) per case
    "right": ("g6.xlarge", "g2-standard-4", "NVIDIA-L4", 1),  # 1 x L4 (22.49 GiB) for 18 GiB
    "over": ("p5.48xlarge", "a3-highgpu-8g", "NVIDIA-H100-80GB-HBM3", 8),  # 8 x H100 (637 GiB) for 20 GiB
}
NEED = {"right": "18", "over": "20"}
_HOST = {"metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 2}}


def _aws_tags(size):
    return {REQ: NEED[size], "gpusizer:workload": "chat", "Owner": U}


def _pod(size, **extra):
    _, _, label, n = SIZES[size]
    return {
        "metadata": {"annotations": {K8S_REQ: NEED[size]}, "labels": {"app": "chat"}},
        "spec": {
            "nodeSelector": {"nvidia.com/gpu.product": label},
            "serviceAccountName": U,
            "containers": [{"name": "c", "image": U, "resources": {"limits": {"nvidia.com/gpu": str(n)}}}],
            **extra,
        },
    }


def by_type(size: str) -> dict[str, tuple[str, dict]]:
    """One resource per covered type, sized `size`, with unknown ids where a first preview has them."""
    aws, gcp, _, _ = SIZES[size]
    labels = {GCP_REQ: NEED[size], "gpusizer-workload": "chat"}
    lt_ref = {"id": U, "version": "$Latest"}
    return {
        "aws-instance": (
            "aws:ec2/instance:Instance",
            {
                "instanceType": aws,
                "ami": U,
                "subnetId": U,
                "vpcSecurityGroupIds": [U],
                "iamInstanceProfile": U,
                "launchTemplate": lt_ref,
                "rootBlockDevice": {"encrypted": True, "kmsKeyId": U},
                "tags": _aws_tags(size),
                **_HOST,
            },
        ),
        "aws-spot-instance": (
            "aws:ec2/spotInstanceRequest:SpotInstanceRequest",
            {
                "instanceType": aws,
                "ami": U,
                "subnetId": U,
                "vpcSecurityGroupIds": [U],
                "iamInstanceProfile": U,
                "rootBlockDevice": {"encrypted": True},
                "tags": _aws_tags(size),
                **_HOST,
            },
        ),
        "aws-launch-template": (
            "aws:ec2/launchTemplate:LaunchTemplate",
            {
                "instanceType": aws,
                "imageId": U,
                "iamInstanceProfile": {"arn": U},
                "vpcSecurityGroupIds": [U],
                "blockDeviceMappings": [{"deviceName": U, "ebs": {"encrypted": "true", "volumeSize": 200}}],
                "tagSpecifications": [{"resourceType": "instance", "tags": _aws_tags(size)}],
                "tags": _aws_tags(size),
                **_HOST,
            },
        ),
        "aws-asg": (
            "aws:autoscaling/group:Group",
            {
                "minSize": 1,
                "maxSize": 1,
                "desiredCapacity": 1,
                "vpcZoneIdentifiers": [U, U],
                "placementGroup": U,
                "mixedInstancesPolicy": {
                    "launchTemplate": {
                        "launchTemplateSpecification": {"launchTemplateId": U, "version": "$Latest"},
                        "overrides": [{"instanceType": aws}],
                    },
                    "instancesDistribution": {"onDemandBaseCapacity": 1, "onDemandPercentageAboveBaseCapacity": 100},
                },
                "tags": [{"key": k, "value": v, "propagateAtLaunch": False} for k, v in _aws_tags(size).items()],
            },
        ),
        "aws-fleet": (
            "aws:ec2/fleet:Fleet",
            {
                "launchTemplateConfigs": [
                    {
                        "launchTemplateSpecification": {"launchTemplateId": U, "version": "1"},
                        "overrides": [{"instanceType": aws, "subnetId": U}],
                    }
                ],
                "targetCapacitySpecification": {"defaultTargetCapacityType": "on-demand", "totalTargetCapacity": 1},
                "tags": _aws_tags(size),
            },
        ),
        "aws-spot-fleet": (
            "aws:ec2/spotFleetRequest:SpotFleetRequest",
            {
                "iamFleetRole": U,
                "targetCapacity": 1,
                "launchTemplateConfigs": [
                    {
                        "launchTemplateSpecification": {"id": U, "version": "1"},
                        "overrides": [{"instanceType": aws, "subnetId": U}],
                    }
                ],
                "tags": _aws_tags(size),
            },
        ),
        "aws-eks-node-group": (
            "aws:eks/nodeGroup:NodeGroup",
            {
                "clusterName": U,
                "nodeRoleArn": U,
                "subnetIds": [U],
                "instanceTypes": [aws],
                "launchTemplate": lt_ref,
                "scalingConfig": {"desiredSize": 1, "maxSize": 1, "minSize": 1},
                "tags": _aws_tags(size),
            },
        ),
        "aws-batch": (
            "aws:batch/computeEnvironment:ComputeEnvironment",
            {
                "type": "MANAGED",
                "serviceRole": U,
                "computeResources": {
                    "type": "EC2",
                    "instanceTypes": [aws],
                    "maxVcpus": 4,
                    "subnets": [U],
                    "securityGroupIds": [U],
                    "instanceRole": U,
                    "launchTemplate": {"launchTemplateId": U},
                    "tags": _aws_tags(size),
                },
            },
        ),
        "gcp-instance": (
            "gcp:compute/instance:Instance",
            {
                "machineType": gcp,
                "zone": "us-central1-a",
                "bootDisk": {"initializeParams": {"image": U}},
                "networkInterfaces": [{"network": "default", "subnetwork": U}],
                "serviceAccount": {"email": U, "scopes": ["cloud-platform"]},
                "scheduling": {"onHostMaintenance": "TERMINATE", "provisioningModel": "STANDARD"},
                "labels": labels,
            },
        ),
        "gcp-template": (
            "gcp:compute/instanceTemplate:InstanceTemplate",
            {
                "machineType": gcp,
                "disks": [{"sourceImage": U, "boot": True}],
                "serviceAccount": {"email": U},
                "networkInterfaces": [{"network": U}],
                "labels": labels,
            },
        ),
        "gcp-region-template": (
            "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate",
            {
                "machineType": gcp,
                "region": "us-central1",
                "disks": [{"sourceImage": U}],
                "serviceAccount": UO,
                "labels": labels,
            },
        ),
        "gcp-instance-from-template": (
            "gcp:compute/instanceFromTemplate:InstanceFromTemplate",
            {"sourceInstanceTemplate": U, "machineType": gcp, "zone": "us-central1-a", "labels": labels},
        ),
        "gke-node-pool": (
            "gcp:container/nodePool:NodePool",
            {
                "cluster": U,
                "nodeCount": 1,
                "nodeConfig": {"machineType": gcp, "serviceAccount": U, "labels": labels, "oauthScopes": [U]},
            },
        ),
        "k8s-deployment": (
            "kubernetes:apps/v1:Deployment",
            {
                "metadata": {"namespace": U, "annotations": {K8S_REQ: NEED[size]}},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "chat"}}, "template": _pod(size)},
            },
        ),
        "k8s-statefulset": (
            "kubernetes:apps/v1:StatefulSet",
            {"metadata": {"namespace": U}, "spec": {"serviceName": U, "replicas": 1, "template": _pod(size)}},
        ),
        "k8s-replicaset": (
            "kubernetes:apps/v1:ReplicaSet",
            {"metadata": {"namespace": U}, "spec": {"template": _pod(size)}},
        ),
        "k8s-daemonset": (
            "kubernetes:apps/v1:DaemonSet",
            {"metadata": {"namespace": U}, "spec": {"template": _pod(size)}},
        ),
        "k8s-job": ("kubernetes:batch/v1:Job", {"metadata": {"namespace": U}, "spec": {"template": _pod(size)}}),
        "k8s-cronjob": (
            "kubernetes:batch/v1:CronJob",
            {
                "metadata": {"namespace": U},
                "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": _pod(size)}}},
            },
        ),
        "k8s-pod": (
            "kubernetes:core/v1:Pod",
            {**_pod(size), "metadata": {"namespace": U, "annotations": {K8S_REQ: NEED[size]}}},
        ),
        "k8s-deployment-patch": (
            "kubernetes:apps/v1:DeploymentPatch",
            {"metadata": {"name": "chat", "namespace": U}, "spec": {"template": _pod(size)}},
        ),
    }
