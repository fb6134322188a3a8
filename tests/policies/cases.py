"""Resource fixtures per covered type, as the engine sends them (camelCase wire names)."""

REQ = "gpusizer:required-gpu-memory-gib"

H100_FOR_20 = ("aws:ec2/instance:Instance", {"instanceType": "p5.48xlarge", "tags": {REQ: "20"},
                                               "metadataOptions": {"httpTokens": "required"},
                                               "rootBlockDevice": {"encrypted": True}})
L4_FOR_18 = ("aws:ec2/instance:Instance", {"instanceType": "g6.xlarge", "tags": {REQ: "18"},
                                            "metadataOptions": {"httpTokens": "required"},
                                            "rootBlockDevice": {"encrypted": True}})
UNTAGGED_GPU = ("aws:ec2/instance:Instance", {"instanceType": "g5.xlarge", "metadataOptions": {"httpTokens": "required"},
                                               "rootBlockDevice": {"encrypted": True}})
NON_GPU = ("aws:ec2/instance:Instance", {"instanceType": "t3.micro"})

# Each covered resource type, over-provisioned for a 20 GiB requirement.
OVER = {
    "aws-instance": H100_FOR_20,
    "aws-launch-template": ("aws:ec2/launchTemplate:LaunchTemplate", {"instanceType": "p5.48xlarge", "tags": {REQ: "20"}}),
    "aws-asg": ("aws:autoscaling/group:Group", {
        "mixedInstancesPolicy": {"launchTemplate": {"overrides": [{"instanceType": "p4de.24xlarge"}]}},
        "tags": [{"key": REQ, "value": "20", "propagateAtLaunch": True}]}),
    "aws-fleet": ("aws:ec2/fleet:Fleet", {
        "launchTemplateConfigs": [{"overrides": [{"instanceType": "p5.48xlarge"}]}], "tags": {REQ: "20"}}),
    "gcp-instance": ("gcp:compute/instance:Instance", {
        "machineType": "a3-highgpu-8g", "labels": {"gpusizer-required-gpu-memory-gib": "20"}}),
    "gcp-template": ("gcp:compute/instanceTemplate:InstanceTemplate", {
        "machineType": "n1-standard-32", "guestAccelerators": [{"type": "nvidia-tesla-v100", "count": 8}],
        "labels": {"gpusizer-required-gpu-memory-gib": "5"}}),
    "k8s-deployment": ("kubernetes:apps/v1:Deployment", {
        "metadata": {"annotations": {"gpusizer.io/required-gpu-memory-gib": "20"}},
        "spec": {"template": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                                       "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}),
    "k8s-statefulset": ("kubernetes:apps/v1:StatefulSet", {
        "metadata": {"annotations": {"gpusizer.io/required-gpu-memory-gib": "20"}},
        "spec": {"template": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                                       "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}}}),
    "k8s-job": ("kubernetes:batch/v1:Job", {
        "spec": {"template": {"metadata": {"annotations": {"gpusizer.io/required-gpu-memory-gib": "10"}},
                              "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
                                       "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}}}),
    "k8s-pod": ("kubernetes:core/v1:Pod", {
        "metadata": {"annotations": {"gpusizer.io/required-gpu-memory-gib": "20"}},
        "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
                 "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}),
}
