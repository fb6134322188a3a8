"""The gate judges evidence, not a list of types (issue 23): a table of evasions, one class per point of the
issue, each sent as the engine sends it, over gRPC to the pack started as the CLI starts it: an Analyze per
resource, then one AnalyzeStack over all. Blocked means at least one MANDATORY diagnostic. Controls must get
none. Cases through `gpusizer preview` are at the end (slow: each runs a whole program).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import subprocess
import sys
import textwrap

import pytest
from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2

import gpusizer
from gpusizer.components import workload
from gpusizer.policies import rules
from tests.conftest import REPO
from tests.policies import cases

K8S = cases.K8S_REQ
H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
SECURE = {"metadataOptions": {"httpTokens": "required"}, "rootBlockDevice": {"encrypted": True}}


def R(typ, name, props, deps=(), parent=""):  # noqa: N802 - a table row
    return (typ, name, props, tuple(deps), parent)


def urn(typ, name):
    return f"urn:pulumi:ci::p::{typ}::{name}"


def _struct(props):
    s = struct_pb2.Struct()
    s.update(json.loads(json.dumps(props)))
    return s


def send(stub, rows, config=None):
    """Diagnostics for the rows: Analyze each, then AnalyzeStack over all (links as URNs)."""
    if config:
        req = analyzer_pb2.ConfigureAnalyzerRequest()
        for name, cfg in config.items():
            cfg = dict(cfg)
            req.policyConfig[name].enforcementLevel = analyzer_pb2.EnforcementLevel.Value(
                cfg.pop("enforcementLevel", "mandatory").upper()
            )
            req.policyConfig[name].properties.CopyFrom(_struct(cfg))
        stub.Configure(req, timeout=30)
    try:
        out, stack = [], analyzer_pb2.AnalyzeStackRequest()
        for typ, name, props, deps, parent in rows:
            u = urn(typ, name)
            out += stub.Analyze(
                analyzer_pb2.AnalyzeRequest(type=typ, properties=_struct(props), urn=u, name=name), timeout=60
            ).diagnostics
            stack.resources.append(
                analyzer_pb2.AnalyzerResource(
                    type=typ,
                    properties=_struct(props),
                    urn=u,
                    name=name,
                    parent=urn(*parent) if parent else "",
                    dependencies=[urn(*d) for d in deps],
                )
            )
        return [*out, *stub.AnalyzeStack(stack, timeout=120).diagnostics]
    finally:
        if config:  # the pack is shared by the session: back to its defaults
            req = analyzer_pb2.ConfigureAnalyzerRequest()
            for name in config:
                req.policyConfig[name].enforcementLevel = (
                    analyzer_pb2.MANDATORY
                    if name not in ("gpusizer-gpu-budget", "gpusizer-cost-ceiling")
                    else analyzer_pb2.ADVISORY
                )
            stub.Configure(req, timeout=30)


def mandatory(stub, rows, config=None):
    return [(d.policyName, d.message) for d in send(stub, rows, config) if d.enforcementLevel == analyzer_pb2.MANDATORY]


HOST_SECURITY = {"gpusizer-require-imdsv2", "gpusizer-secure-gpu-hosts"}


def gpu_findings(stub, rows, config=None) -> list[str]:
    """The mandatory messages of the GPU-judging policies (host security left out): what shows the gate judged
    the capacity, not only how the host is secured."""
    return [m for p, m in mandatory(stub, rows, config) if p not in HOST_SECURITY]


def pod(limits, selector=None, affinity=None, need="20"):
    spec = {"containers": [{"name": "c", "resources": {"limits": limits}}]}
    if selector:
        spec["nodeSelector"] = selector
    if affinity:
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": affinity}}
        }
    return {"metadata": {"annotations": {K8S: need}}, "spec": spec}


def deployment(template, replicas=1):
    return {
        "metadata": {"name": "d", "annotations": template["metadata"]["annotations"]},
        "spec": {"replicas": replicas, "template": template},
    }


H100_POD = pod({"nvidia.com/gpu": 8}, H100)
DEPLOY_DOC = {"apiVersion": "apps/v1", "kind": "Deployment", **deployment(H100_POD)}


# --- 1. Evidence on any type: judged by a precise model, or a mandatory finding --------------------------------
EVIDENCE = {
    "gke-cluster-inline-node-config": [
        R(
            "gcp:container/cluster:Cluster",
            "c",
            {"location": "us-central1", "initialNodeCount": 4, "nodeConfig": {"machineType": "a3-highgpu-8g"}},
        )
    ],
    "gke-cluster-inline-node-pools": [
        R(
            "gcp:container/cluster:Cluster",
            "c",
            {
                "nodePools": [
                    {
                        "nodeConfig": {
                            "machineType": "n1-standard-8",
                            "guestAccelerators": [{"type": "nvidia-tesla-v100", "count": 8}],
                        }
                    }
                ]
            },
        )
    ],
    "gke-autoprovisioning-limits": [
        R(
            "gcp:container/cluster:Cluster",
            "c",
            {
                "clusterAutoscaling": {
                    "enabled": True,
                    "resourceLimits": [{"resourceType": "nvidia-h100-80gb", "maximum": 64}],
                }
            },
        )
    ],
    "replication-controller": [
        R("kubernetes:core/v1:ReplicationController", "rc", {"spec": {"replicas": 2, "template": H100_POD}})
    ],
    "keda-scaled-job": [
        R(
            "kubernetes:keda.sh/v1alpha1:ScaledJob",
            "sj",
            {"spec": {"jobTargetRef": {"template": H100_POD}, "maxReplicaCount": 50}},
        )
    ],
    "dra-resource-claim": [
        R(
            "kubernetes:resource.k8s.io/v1beta1:ResourceClaim",
            "claim",
            {"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 8}]}}},
        )
    ],
    "helm-release-values": [
        R(
            "kubernetes:helm.sh/v3:Release",
            "vllm",
            {"chart": "vllm", "values": {"resources": {"limits": {"nvidia.com/gpu": 8}}}},
        )
    ],
    "helm-chart-values-yaml-string": [
        R(
            "kubernetes:helm.sh/v4:Chart",
            "vllm",
            {"chart": "vllm", "values": {"extra": "nodeSelector:\n  node.kubernetes.io/instance-type: p5.48xlarge\n"}},
        )
    ],
    "leader-worker-set": [
        R(
            "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
            "lws",
            {"spec": {"replicas": 4, "leaderWorkerTemplate": {"workerTemplate": H100_POD}}},
        )
    ],
    "ray-cluster": [
        R(
            "kubernetes:ray.io/v1:RayCluster",
            "ray",
            {"spec": {"workerGroupSpecs": [{"replicas": 8, "template": pod({"nvidia.com/gpu": "4"})}]}},
        )
    ],
    "kserve": [
        R(
            "kubernetes:serving.kserve.io/v1beta1:InferenceService",
            "isvc",
            {"spec": {"predictor": {"model": {"resources": {"limits": {"NVIDIA.COM/GPU ": "8"}}}}}},
        )
    ],
    "jobset": [
        R(
            "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
            "js",
            {"spec": {"replicatedJobs": [{"replicas": 4, "template": {"spec": {"template": H100_POD}}}]}},
        )
    ],
    "pytorch-job": [
        R(
            "kubernetes:kubeflow.org/v1:PyTorchJob",
            "pt",
            {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 16, "template": H100_POD}}}},
        )
    ],
    "karpenter-node-pool": [
        R(
            "kubernetes:karpenter.sh/v1:NodePool",
            "np",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "requirements": [
                                {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["p5"]}
                            ]
                        }
                    }
                }
            },
        )
    ],
    "karpenter-gpu-name": [
        R(
            "kubernetes:karpenter.sh/v1:NodePool",
            "np",
            {
                "spec": {
                    "template": {
                        "spec": {"requirements": [{"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "Exists"}]}
                    }
                }
            },
        )
    ],
    "aws-native-instance": [R("aws-native:ec2:Instance", "i", {"instanceType": "p5.48xlarge"})],
    "aws-native-launch-template": [
        R("aws-native:ec2:LaunchTemplate", "lt", {"launchTemplateData": {"instanceType": "P4DE.24XLARGE"}})
    ],
    "sagemaker-endpoint": [
        R(
            "aws:sagemaker/endpointConfiguration:EndpointConfiguration",
            "ep",
            {"productionVariants": [{"instanceType": "ml.p4d.24xlarge", "initialInstanceCount": 4}]},
        )
    ],
    "emr-cluster": [
        R("aws:emr/cluster:Cluster", "emr", {"coreInstanceGroup": {"instanceType": "p3.16xlarge", "instanceCount": 10}})
    ],
    "capacity-reservation": [
        R(
            "aws:ec2/capacityReservation:CapacityReservation",
            "cr",
            {"instanceType": "p5.48xlarge", "instanceCount": 4, "instancePlatform": "Linux/UNIX"},
        )
    ],
    "dedicated-host": [R("aws:ec2/dedicatedHost:DedicatedHost", "h", {"instanceFamily": "p4d"})],
    "gcp-reservation": [
        R(
            "gcp:compute/reservation:Reservation",
            "res",
            {"specificReservation": {"count": 8, "instanceProperties": {"machineType": "a3-megagpu-8g"}}},
        )
    ],
    "gcp-tpu-vm": [R("gcp:tpu/v2Vm:V2Vm", "tpu", {"acceleratorType": "v5litepod-8"})],
    "gcp-tpu-accelerator-config": [
        R("gcp:tpu/v2Vm:V2Vm", "tpu", {"acceleratorConfig": {"type": "V5P", "topology": "4x4x4"}})
    ],
    "dynamic-provider": [
        R("pulumi-python:dynamic:Resource", "dyn", {"__provider": "abc", "instance_type": " P5.48XLARGE"})
    ],
    "machine-type-url": [
        R(
            "gcp:compute/instance:Instance",
            "vm",
            {
                "machineType": "https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/machineTypes/A3-HIGHGPU-8G "
            },
        )
    ],
    "amd-gpu-pod": [R("kubernetes:apps/v1:Deployment", "d", deployment(pod({"amd.com/gpu": 8})))],
    "tpu-pod": [R("kubernetes:batch/v1:Job", "j", {"spec": {"template": pod({"google.com/tpu": 8})}})],
    "neuron-pod": [R("kubernetes:core/v1:Pod", "p", pod({"aws.amazon.com/neuroncore": 32}))],
    "gpu-shared-pod": [R("kubernetes:core/v1:Pod", "p", pod({"nvidia.com/gpu.shared": 4}))],
    "selector-without-request-provisions-a-gpu-node": [
        R(
            "kubernetes:apps/v1:Deployment",
            "d",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"},
                            "containers": [{"name": "c"}],
                        }
                    }
                }
            },
        )
    ],
    "visible-devices-all-under-the-nvidia-runtime": [
        R(
            "kubernetes:apps/v1:Deployment",
            "d",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "runtimeClassName": "nvidia",
                            "containers": [{"name": "c", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}],
                        }
                    }
                }
            },
        )
    ],
    "ecs-task-gpu": [
        R(
            "aws:ecs/taskDefinition:TaskDefinition",
            "td",
            {
                "containerDefinitions": json.dumps(
                    [{"name": "c", "resourceRequirements": [{"type": "GPU", "value": "8"}]}]
                )
            },
        )
    ],
    "user-data-launching-gpus": [
        R(
            "aws:ec2/instance:Instance",
            "t3",
            {
                "instanceType": "t3.micro",
                **SECURE,
                "userDataBase64": base64.b64encode(
                    b"#!/bin/bash\naws ec2 run-instances --instance-type p5.48xlarge\n"
                ).decode(),
            },
        )
    ],
    "cli-command": [
        R("command:local:Command", "cmd", {"create": "aws ec2 run-instances --instance-type p5.48xlarge --count 10"})
    ],
    # From an adversarial review (2026-11-26): accelerators requested inside command text, a vendor's own
    # extended resource names, gzip-compressed user data, and a DRA device class selecting a GPU driver.
    "cli-gcloud-accelerator": [
        R(
            "command:local:Command",
            "cmd",
            {
                "create": "gcloud compute instances create x "
                "--machine-type=n1-standard-8 --accelerator=type=nvidia-tesla-v100,count=8"
            },
        )
    ],
    "cli-kubectl-limits": [
        R(
            "command:local:Command",
            "cmd",
            {"create": "kubectl run vllm --image=vllm/vllm-openai --limits=nvidia.com/gpu=8"},
        )
    ],
    "cli-helm-set": [
        R(
            "command:local:Command",
            "cmd",
            {"create": "helm install llm ./chart --set resources.limits.nvidia\\.com/gpu=8"},
        )
    ],
    "passthrough-resource-name": [
        R(
            "kubernetes:apps/v1:Deployment",
            "d",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "resources": {"limits": {"nvidia.com/GH100_H100_SXM5_80GB": 8}}}
                            ]
                        }
                    }
                }
            },
        )
    ],
    "tpu-device-plugin-name": [
        R(
            "kubernetes:apps/v1:Deployment",
            "d",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "resources": {"limits": {"cloud-tpus.google.com/v3": 8}}}]
                        }
                    }
                }
            },
        )
    ],
    "gzip-user-data": [
        R(
            "aws:ec2/instance:Instance",
            "i",
            {
                "instanceType": "t3.micro",
                **SECURE,
                "userDataBase64": base64.b64encode(
                    gzip.compress(b"#!/bin/bash\naws ec2 run-instances --instance-type p5.48xlarge --count 10\n")
                ).decode(),
            },
        )
    ],
    # A GPU shape known at preview whose requirement is computed (unknown): judged now, not after `up`.
    "known-gpu-unknown-requirement": [
        R("aws:ec2/instance:Instance", "i", {"instanceType": "p5.48xlarge", **SECURE, "tags": cases.UO})
    ],
    "gke-machine-family-selector": [
        R(
            "kubernetes:apps/v1:Deployment",
            "d",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "nodeSelector": {"cloud.google.com/machine-family": "a3"},
                            "containers": [{"name": "c"}],
                        }
                    }
                }
            },
        )
    ],
    "capacity-block-reservation": [
        R(
            "aws:ec2/capacityBlockReservation:CapacityBlockReservation",
            "cb",
            {"capacityBlockOfferingId": "cb-0123456789abcdef0", "instancePlatform": "Linux/UNIX"},
        )
    ],
    "gpu-in-overhead-only": [
        R("kubernetes:core/v1:Pod", "p", {"spec": {"overhead": {"nvidia.com/gpu": 8}, "containers": [{"name": "c"}]}})
    ],
    "eks-cluster": [R("eks:index:Cluster", "eks", {"instanceType": "p5.48xlarge", "desiredCapacity": 4})],
    "eks-managed-node-group": [
        R("eks:index:ManagedNodeGroup", "mng", {"instanceTypes": ["p4d.24xlarge"], "scalingConfig": {"maxSize": 8}})
    ],
    "crd-with-json-manifest-string": [
        R("kubernetes:apiextensions.k8s.io:CustomResource", "cr", {"spec": {"manifest": json.dumps(DEPLOY_DOC)}})
    ],
}

# --- 7. Provider-side components: their manifests expanded and judged like any resource -------------------------
COMPONENTS = {
    "configgroup-yaml": [
        R(
            "kubernetes:yaml/v2:ConfigGroup",
            "cg",
            {
                "yaml": [
                    "---\n"
                    + json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}})
                    + "\n---\n"
                    + json.dumps(DEPLOY_DOC)
                ]
            },
        )
    ],
    "configgroup-objs": [R("kubernetes:yaml:ConfigGroup", "cg", {"objs": [DEPLOY_DOC]})],
    "configgroup-list-kind": [
        R(
            "kubernetes:yaml/v2:ConfigGroup",
            "cg",
            {"objs": [{"apiVersion": "v1", "kind": "List", "items": [DEPLOY_DOC]}]},
        )
    ],
    "configgroup-ray-crd": [
        R(
            "kubernetes:yaml/v2:ConfigGroup",
            "cg",
            {
                "objs": [
                    {
                        "apiVersion": "ray.io/v1",
                        "kind": "RayCluster",
                        "metadata": {"name": "r"},
                        "spec": {"workerGroupSpecs": [{"template": pod({"nvidia.com/gpu": 1})}]},
                    }
                ]
            },
        )
    ],
    "helm-chart-v3": [
        R(
            "kubernetes:helm.sh/v3:Chart",
            "c",
            {"chart": "x", "values": {"nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}}},
        )
    ],
    "kustomize-with-gpu-in-inline": [
        R("kubernetes:kustomize/v2:Directory", "k", {"directory": "/nonexistent", "objs": [DEPLOY_DOC]})
    ],
}


# --- 3. Fields read as the cloud reads them ---------------------------------------------------------------------
LT = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"
L4_LT = R(
    LT,
    "lt",
    {
        "instanceType": "g6.xlarge",
        "id": "lt-small",
        "tags": {cases.REQ: "18"},
        "metadataOptions": {"httpTokens": "required"},
    },
)
FIELDS = {
    "affinity-terms-ored": [
        R(
            "kubernetes:apps/v1:Deployment",
            "d",
            deployment(
                pod(
                    {"nvidia.com/gpu": 8},
                    affinity=[
                        {
                            "matchExpressions": [
                                {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-L4"]}
                            ]
                        },
                        {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
                    ],
                )
            ),
        )
    ],
    "affinity-not-in": [
        R(
            "kubernetes:apps/v1:Deployment",
            "d",
            deployment(
                pod(
                    {"nvidia.com/gpu": 8},
                    affinity=[
                        {
                            "matchExpressions": [
                                {"key": "nvidia.com/gpu.product", "operator": "NotIn", "values": ["NVIDIA-L4"]}
                            ]
                        }
                    ],
                )
            ),
        )
    ],
    "affinity-exists": [
        R(
            "kubernetes:apps/v1:Deployment",
            "d",
            deployment(
                pod(
                    {"nvidia.com/gpu": 8},
                    affinity=[{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "Exists"}]}],
                )
            ),
        )
    ],
    "instance-type-selector": [
        R(
            "kubernetes:apps/v1:Deployment",
            "d",
            deployment(pod({"nvidia.com/gpu": 8}, {"node.kubernetes.io/instance-type": "p5.48xlarge"})),
        )
    ],
    "gpus-across-resource-names": [
        R(
            "kubernetes:apps/v1:Deployment",
            "d",
            deployment(pod({"nvidia.com/gpu": 1, "nvidia.com/mig-1g.10gb": 7}, H100, need="40")),
        )
    ],
    "abs-wildcard-family-not-in-catalog": [
        R(
            LT,
            "lt",
            {
                "instanceRequirements": {
                    "vcpuCount": {"min": 1},
                    "memoryMib": {"min": 1},
                    "allowedInstanceTypes": ["p6e*"],
                },
                "tags": {cases.REQ: "20"},
                "metadataOptions": {"httpTokens": "required"},
            },
        )
    ],
    "abs-accelerator-name-admits-both-a100s": [
        R(
            LT,
            "lt",
            {
                "instanceRequirements": {
                    "vcpuCount": {"min": 1},
                    "memoryMib": {"min": 1},
                    "acceleratorNames": ["a100"],
                    "acceleratorTotalMemoryMib": {"min": 600000},
                },
                "tags": {cases.REQ: "20"},
                "metadataOptions": {"httpTokens": "required"},
            },
        )
    ],
    "template-literal-id-not-in-stack": [
        L4_LT,
        R(
            ASG,
            "asg",
            {
                "maxSize": 1,
                "launchTemplate": {"id": "lt-0external", "version": "$Latest"},
                "tags": [{"key": cases.REQ, "value": "18"}],
            },
            deps=[(LT, "lt")],
        ),
    ],
    "template-literal-name-default-version": [
        L4_LT,
        R(
            "aws:ec2/instance:Instance",
            "i",
            {"launchTemplate": {"name": "big-template", "version": "$Default"}, **SECURE},
            deps=[(LT, "lt")],
        ),
    ],
    "fleet-config-without-overrides-beside-one-with": [
        R(
            "aws:ec2/fleet:Fleet",
            "fleet",
            {
                "launchTemplateConfigs": [
                    {
                        "launchTemplateSpecification": {"launchTemplateId": "lt-small"},
                        "overrides": [{"instanceType": "g6.xlarge"}],
                    },
                    {"launchTemplateSpecification": {"launchTemplateId": "lt-0big"}},
                ],
                "targetCapacitySpecification": {"totalTargetCapacity": 2},
                "tags": {cases.REQ: "18"},
            },
        )
    ],
    "gcp-mig-template-url-not-in-stack": [
        R(
            "gcp:compute/instanceTemplate:InstanceTemplate",
            "tpl",
            {"machineType": "g2-standard-4", "name": "small", "labels": {cases.GCP_REQ: "18"}},
        ),
        R(
            "gcp:compute/instanceGroupManager:InstanceGroupManager",
            "mig",
            {"targetSize": 1, "versions": [{"instanceTemplate": "projects/p/global/instanceTemplates/huge-a3"}]},
            deps=[("gcp:compute/instanceTemplate:InstanceTemplate", "tpl")],
        ),
    ],
}
BUDGET = {"gpusizer-gpu-budget": {"enforcementLevel": "mandatory", "maxHourlyUsd": 20}}
COUNTS = {  # each within a $20/h budget at its own size, over it at what it may really run
    "asg-schedule": [
        L4_LT,
        R(ASG, "asg", {"name": "gpu-asg", "maxSize": 1, "launchTemplate": {"id": "lt-small"}}),
        R(
            "aws:autoscaling/schedule:Schedule",
            "night",
            {"autoscalingGroupName": "gpu-asg", "maxSize": 100, "desiredCapacity": 100},
        ),
    ],
    "asg-warm-pool": [
        L4_LT,
        R(
            ASG,
            "asg",
            {"maxSize": 1, "launchTemplate": {"id": "lt-small"}, "warmPool": {"maxGroupPreparedCapacity": 60}},
        ),
    ],
    "spot-fleet-specification-weights": [
        R(
            "aws:ec2/spotFleetRequest:SpotFleetRequest",
            "sf",
            {"targetCapacity": 1, "launchSpecifications": [{"instanceType": "g6.xlarge", "weightedCapacity": 0.01}]},
        )
    ],
    "asg-weights": [
        R(
            ASG,
            "asg",
            {
                "maxSize": 1,
                "mixedInstancesPolicy": {
                    "launchTemplate": {
                        "launchTemplateSpecification": {"launchTemplateId": "lt-small"},
                        "overrides": [{"instanceType": "g6.xlarge", "weightedCapacity": "0.01"}],
                    }
                },
            },
        ),
        L4_LT,
    ],
    "gcp-autoscaler-literal-url": [
        R("gcp:compute/instanceTemplate:InstanceTemplate", "tpl", {"machineType": "g2-standard-4", "name": "small"}),
        R(
            "gcp:compute/instanceGroupManager:InstanceGroupManager",
            "mig",
            {"name": "gpu-mig", "targetSize": 1, "versions": [{"instanceTemplate": "small"}]},
        ),
        R(
            "gcp:compute/autoscaler:Autoscaler",
            "as",
            {
                "target": "https://www.googleapis.com/compute/v1/projects/p/zones/z/instanceGroupManagers/gpu-mig",
                "autoscalingPolicy": {"maxReplicas": 100},
            },
        ),
    ],
}

# --- 4. Budgets fail closed --------------------------------------------------------------------------------------
PRICES = {
    "no-on-demand-price": [
        R("aws:ec2/instance:Instance", "i", {"instanceType": "p5e.48xlarge", **SECURE, "tags": {cases.REQ: "1000"}})
    ],
    "unknown-accelerated-type": [
        R("aws:ec2/instance:Instance", "i", {"instanceType": "p6-b300.48xlarge", **SECURE, "tags": {cases.REQ: "1000"}})
    ],
}


# --- 6. A crash in a rule never hides another finding ------------------------------------------------------------
CRASH = [
    R(
        "gcp:compute/instance:Instance",
        "overflow",
        {
            "machineType": "n1-standard-8",
            "guestAccelerators": [{"type": "nvidia-tesla-t4", "count": 1e308}],
            "labels": {cases.GCP_REQ: "20"},
        },
    ),  # infinite memory: round() fails
    R(*cases.H100_FOR_20[:1], "big", cases.H100_FOR_20[1]),
]
CRASH_BUDGET = [
    R(
        "aws:ec2/fleet:Fleet",
        "overflow",
        {  # 1e308 units at a weight of 1e-300: an infinite count
            "launchTemplateConfigs": [{"overrides": [{"instanceType": "g6.xlarge", "weightedCapacity": 1e-300}]}],
            "targetCapacitySpecification": {"totalTargetCapacity": 1e308},
            "tags": {cases.REQ: "18"},
        },
    ),
    R(*cases.H100_FOR_20[:1], "big", cases.H100_FOR_20[1]),
]


# --- Controls: must stay green -----------------------------------------------------------------------------------
L4_POD = pod({"nvidia.com/gpu": 1}, {"nvidia.com/gpu.product": "NVIDIA-L4"}, need="18")
CONTROLS = {
    "aws-l4": [R(*cases.L4_FOR_18[:1], "l4", cases.L4_FOR_18[1])],
    "gcp-l4": [
        R("gcp:compute/instance:Instance", "vm", {"machineType": "g2-standard-4", "labels": {cases.GCP_REQ: "18"}})
    ],
    "k8s-l4": [R("kubernetes:apps/v1:Deployment", "d", deployment(L4_POD))],
    "configgroup-l4": [
        R(
            "kubernetes:yaml/v2:ConfigGroup",
            "cg",
            {"objs": [{"apiVersion": "apps/v1", "kind": "Deployment", **deployment(L4_POD)}]},
        )
    ],
    "aws-non-gpu": [R("aws:ec2/instance:Instance", "t3", {"instanceType": "t3.micro", "tags": {"Name": "gpu-box"}})],
    "gcp-non-gpu": [R("gcp:compute/instance:Instance", "n1", {"machineType": "n1-standard-4"})],
    "aws-native-non-gpu": [R("aws-native:ec2:Instance", "i", {"instanceType": "m5.large"})],
    "k8s-no-gpu": [
        R(
            "kubernetes:apps/v1:Deployment",
            "web",
            {
                "metadata": {"name": "web"},
                "spec": {
                    "replicas": 3,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "web",
                                    "image": "nginx",
                                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                                }
                            ]
                        }
                    },
                },
            },
        )
    ],
    "k8s-toleration-only": [
        R(
            "kubernetes:apps/v1:Deployment",
            "web",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                            "containers": [{"name": "web"}],
                        }
                    }
                }
            },
        )
    ],
    "gpu-monitoring-daemonset": [
        R(
            "kubernetes:apps/v1:DaemonSet",
            "dcgm",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "nodeSelector": {"nvidia.com/gpu.present": "true"},
                            "containers": [{"name": "dcgm-exporter"}],
                        }
                    }
                }
            },
        )
    ],
    "elasticache-and-opensearch": [
        R("aws:elasticache/cluster:Cluster", "cache", {"nodeType": "cache.r6g.large"}),
        R("aws:opensearch/domain:Domain", "search", {"clusterConfig": {"instanceType": "r6g.large.search"}}),
    ],
    "sagemaker-cpu": [
        R(
            "aws:sagemaker/endpointConfiguration:EndpointConfiguration",
            "ep",
            {"productionVariants": [{"instanceType": "ml.m5.xlarge", "initialInstanceCount": 2}]},
        )
    ],
    "eks-cpu-node-group": [
        R("aws:eks/nodeGroup:NodeGroup", "ng", {"instanceTypes": ["m6i.large"], "scalingConfig": {"maxSize": 3}})
    ],
    "helm-values-gpu-disabled": [
        R(
            "kubernetes:helm.sh/v3:Release",
            "app",
            {
                "chart": "app",
                "values": {"gpu": {"enabled": False, "count": 0}, "resources": {"limits": {"nvidia.com/gpu": 0}}},
            },
        )
    ],
    "prometheus-rules-configmap": [
        R(
            "kubernetes:core/v1:ConfigMap",
            "rules",
            {
                "data": {
                    "gpu.rules.yaml": "groups:\n- name: gpu\n  rules:\n  - alert: GpuIdle\n    expr: DCGM_FI_DEV_GPU_UTIL < 5\n"
                }
            },
        )
    ],
    "names-that-look-like-accelerators": [
        R("gcp:storage/bucket:Bucket", "a3-data", {"name": "a3-data", "location": "US"}),
        R("aws:ec2/securityGroup:SecurityGroup", "ctrl-plane", {"name": "ctrl-plane", "description": "g2-reports"}),
        R(
            "kubernetes:core/v1:Service",
            "tpu-checkpoints",
            {"metadata": {"name": "tpu-checkpoints"}, "spec": {"ports": [{"port": 80}]}},
        ),
        R("aws:ssm/parameter:Parameter", "p", {"name": "/gpu/p5-budget", "type": "String", "value": "ok"}),
    ],
    "k8s-gpu-quota": [R("kubernetes:core/v1:ResourceQuota", "q", {"spec": {"hard": {"requests.nvidia.com/gpu": 4}}})],
    "helm-release-no-gpu": [R("kubernetes:helm.sh/v3:Release", "redis", {"chart": "redis", "values": {"replicas": 3}})],
    "abs-without-gpus": [
        R(
            LT,
            "lt",
            {
                "instanceRequirements": {
                    "acceleratorCount": {"max": 0},
                    "vcpuCount": {"min": 2},
                    "memoryMib": {"min": 1},
                    "excludedInstanceTypes": ["p5.48xlarge"],
                },
                "metadataOptions": {"httpTokens": "required"},
            },
        )
    ],
    "affinity-ored-both-l4": [
        R(
            "kubernetes:apps/v1:Deployment",
            "d",
            deployment(
                pod(
                    {"nvidia.com/gpu": 1},
                    need="18",
                    affinity=[
                        {
                            "matchExpressions": [
                                {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-L4"]}
                            ]
                        },
                        {
                            "matchExpressions": [
                                {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-L4"]},
                                {"key": "zone", "operator": "In", "values": ["a"]},
                            ]
                        },
                    ],
                )
            ),
        )
    ],
}


class TestEvidence:
    @pytest.mark.parametrize("case", sorted(EVIDENCE))
    def test_blocked(self, pack_stub, case):
        assert mandatory(pack_stub, EVIDENCE[case]), case

    def test_the_finding_says_what_was_seen_and_the_two_ways_forward(self, pack_stub):
        (found,) = [m for p, m in mandatory(pack_stub, EVIDENCE["ray-cluster"]) if p == "gpusizer-gpu-evidence"]
        assert "nvidia.com/gpu" in found and "model it" in found and "gpusizer-gpu-evidence.allow" in found

    @pytest.mark.parametrize(
        "allowed", [{"type": "kubernetes:ray.io/v1:RayCluster"}, {"type": "kubernetes:ray.io/*"}, {"name": "ray"}]
    )
    def test_the_platform_team_can_allow_a_type_or_a_name(self, pack_stub, allowed):
        allow = {"gpusizer-gpu-evidence": {"allow": [{**allowed, "reason": "ray autoscaler bounded by quota"}]}}
        assert mandatory(pack_stub, EVIDENCE["ray-cluster"], allow) == []
        other = {"gpusizer-gpu-evidence": {"allow": [{"type": "kubernetes:ray.io/v1:RayJob", "reason": "x"}]}}
        assert mandatory(pack_stub, EVIDENCE["ray-cluster"], other)

    def test_a_budget_cannot_price_an_allowed_unmodelled_resource_and_says_so(self, pack_stub):
        cfg = {
            "gpusizer-gpu-evidence": {"allow": [{"name": "ray", "reason": "reviewed"}]},
            "gpusizer-gpu-budget": {"enforcementLevel": "mandatory", "maxHourlyUsd": 100},
        }
        found = mandatory(pack_stub, EVIDENCE["ray-cluster"], cfg)
        assert [p for p, _ in found] == ["gpusizer-gpu-budget"] and "cannot price ray" in found[0][1]


class TestComponents:
    @pytest.mark.parametrize("case", sorted(COMPONENTS))
    def test_blocked(self, pack_stub, case):
        assert mandatory(pack_stub, COMPONENTS[case]), case

    def test_local_files_a_component_names_are_read(self, pack_stub, tmp_path):
        (tmp_path / "gpu.yaml").write_text(json.dumps(DEPLOY_DOC))
        (tmp_path / "values.yaml").write_text("resources:\n  limits:\n    nvidia.com/gpu: 8\n")
        files = [R("kubernetes:yaml/v2:ConfigGroup", "cg", {"files": [str(tmp_path / "*.yaml")]})]
        assert any("637 GiB" in m for _, m in mandatory(pack_stub, files))
        values = [
            R(
                "kubernetes:helm.sh/v3:Release",
                "rel",
                {"chart": "x", "valueYamlFiles": [{"path": str(tmp_path / "values.yaml")}]},
            )
        ]
        assert any("nvidia.com/gpu" in m for _, m in mandatory(pack_stub, values))

    def test_a_manifest_child_is_judged_by_the_precise_model(self, pack_stub):
        found = mandatory(pack_stub, COMPONENTS["configgroup-objs"])
        assert any(p == "gpusizer-no-overprovisioning" and "637 GiB for a 20 GiB requirement" in m for p, m in found)


class TestFields:
    @pytest.mark.parametrize("case", sorted(FIELDS))
    def test_blocked(self, pack_stub, case):
        assert mandatory(pack_stub, FIELDS[case]), case

    @pytest.mark.parametrize("case", sorted(COUNTS))
    def test_all_capacity_counts(self, pack_stub, case):
        found = mandatory(pack_stub, COUNTS[case], BUDGET)
        assert any(p == "gpusizer-gpu-budget" for p, _ in found), (case, found)


class TestBudget:
    @pytest.mark.parametrize("case", sorted(PRICES))
    def test_fails_closed(self, pack_stub, case):
        found = mandatory(
            pack_stub, PRICES[case], {"gpusizer-gpu-budget": {"enforcementLevel": "mandatory", "maxHourlyUsd": 5}}
        )
        assert any(p == "gpusizer-gpu-budget" for p, _ in found), found

    @pytest.mark.parametrize("case", sorted(PRICES))
    def test_the_cost_ceiling_fails_closed_too(self, pack_stub, case):
        found = mandatory(
            pack_stub, PRICES[case], {"gpusizer-cost-ceiling": {"enforcementLevel": "mandatory", "maxHourlyUsd": 5}}
        )
        assert any(p == "gpusizer-cost-ceiling" for p, _ in found), found

    def test_a_type_without_an_on_demand_price_is_priced_from_its_spot_price(self, pack_stub):
        (msg,) = [
            m
            for p, m in mandatory(
                pack_stub,
                PRICES["no-on-demand-price"],
                {"gpusizer-cost-ceiling": {"enforcementLevel": "mandatory", "maxHourlyUsd": 5}},
            )
            if "ceiling" in m
        ]
        assert "p5e.48xlarge" in msg and "catalog spot" in msg


class TestCrash:
    def test_a_crash_names_the_resource_and_the_other_findings_stand(self, pack_stub):
        found = mandatory(pack_stub, CRASH)
        assert any("overflow" in m and "OverflowError" in m for _, m in found), found
        assert any(p == "gpusizer-no-overprovisioning" and "637 GiB" in m for p, m in found), found

    def test_a_crash_while_pricing_names_the_resource_and_the_budget_still_counts_the_rest(self, pack_stub):
        found = mandatory(
            pack_stub, CRASH_BUDGET, {"gpusizer-gpu-budget": {"enforcementLevel": "mandatory", "maxHourlyUsd": 50}}
        )
        budget = [m for p, m in found if p == "gpusizer-gpu-budget"]
        assert any("overflow" in m and "OverflowError" in m for m in budget), found
        # 55.04: the packaged catalog's lowest on-demand p5.48xlarge (gpusizer/data/catalog/aws.csv, us-east-1)
        assert any("costs $55.04/h" in m and "> budget $50.00/h" in m for m in budget), found


def _recorded(spec):
    return workload.recorded_inputs(gpusizer.load_spec(spec), [])


PINNED = {
    "name": "chat-3b",
    "model": {"name": "llama-3.2-3b"},
    "inference": {"context_length": 4096, "batch_size": 4},
    "placement": {"gpus": ["H100"]},
}
WL = "gpusizer:index:GpuWorkload"


class TestPins:
    def test_a_pin_costing_more_than_max_ratio_is_mandatory(self, pack_stub):
        found = mandatory(pack_stub, [R(WL, "chat-3b", _recorded(PINNED))])
        (msg,) = [m for p, m in found if p == "gpusizer-no-overprovisioning"]
        assert 'placement.gpus: ["H100"]' in msg and "L4" in msg and "without them" in msg

    @pytest.mark.parametrize(
        "placement",
        [
            {"gpus": ["A100-80GB"]},
            {"gpus": ["H100"], "providers": ["aws"]},
            {"gpus": ["H200", "B200"]},
            # a spot pin beside the GPU pin: compared like for like (an H100 on spot
            # against an L4 on spot), not against the L4's on-demand price
            {"gpus": ["H100"], "purchase": "spot"},
            {"gpus": ["H100"], "purchase": "any"},
        ],
    )
    def test_other_expensive_pins(self, pack_stub, placement):
        spec = {**PINNED, "placement": placement}
        assert any(
            p == "gpusizer-no-overprovisioning" for p, _ in mandatory(pack_stub, [R(WL, "chat-3b", _recorded(spec))])
        )

    def test_an_allowed_pin_passes(self, pack_stub):
        cfg = {
            "gpusizer-no-overprovisioning": {
                "allowPins": [
                    {"workload": "chat-3b", "pins": {"gpus": ["H100"]}, "reason": "H100-only reserved capacity"}
                ]
            }
        }
        assert mandatory(pack_stub, [R(WL, "chat-3b", _recorded(PINNED))], cfg) == []

    def test_a_spot_pin_alone_passes(self, pack_stub):
        spec = {**PINNED, "placement": {"purchase": "spot"}}
        assert mandatory(pack_stub, [R(WL, "chat-3b", _recorded(spec))]) == []

    def test_an_unpinned_workload_passes(self, pack_stub):
        spec = {**PINNED, "placement": {"providers": ["aws"], "regions": ["us-east-1"]}}
        assert mandatory(pack_stub, [R(WL, "chat-3b", _recorded(spec))]) == []

    def test_a_calibration_the_pack_cannot_read_does_not_count(self, pack_stub, tmp_path):
        cal = tmp_path / "cal.yaml"
        cal.write_text("gpus: {L4: {decode_mbu: 0.99}}\n")
        spec = gpusizer.load_spec({**PINNED, "placement": {}, "sizing": {"calibration": str(cal)}})
        recorded = workload.recorded_inputs(spec, [])
        cal.unlink()  # recorded, then gone: the pack cannot check what it would trust
        found = mandatory(pack_stub, [R(WL, "chat-3b", recorded)])
        assert any("calibration" in m for _, m in found), found

    CALIBRATED = {
        "name": "c",
        "model": {"name": "llama-3.1-8b"},
        "placement": {},
        "inference": {"context_length": 4096, "batch_size": 4, "targets": {"tokens_per_second": 400}},
    }

    def _calibrated(self, tmp_path, decode_mbu):
        cal = tmp_path / "cal.yaml"
        cal.write_text("gpus:\n" + "".join(f"  {g}: {{decode_mbu: {decode_mbu}}}\n" for g in ("L4", "A10G", "L40S")))
        spec = {**self.CALIBRATED, "sizing": {"calibration": str(cal)}}
        return cal, spec

    def test_an_untrusted_calibration_far_from_the_defaults_that_moves_the_decision_does_not_count(
        self, pack_stub, tmp_path
    ):
        cal, spec = self._calibrated(tmp_path, 0.05)  # defaults 0.75-0.85: the small GPUs look 15x slower
        moved = gpusizer.plan(spec).chosen.offer.instance_type
        assert moved != gpusizer.plan(self.CALIBRATED).chosen.offer.instance_type  # it moves the decision
        found = [m for p, m in mandatory(pack_stub, [R(WL, "c", _recorded(spec))]) if "calibration" in m]
        assert found and "trustedCalibrations" in found[0] and "decode_mbu 0.05" in found[0]
        import hashlib

        trust = {
            "gpusizer-no-overprovisioning": {
                "trustedCalibrations": [
                    {"sha256": hashlib.sha256(cal.read_bytes()).hexdigest(), "reason": "fitted on our cluster"}
                ]
            }
        }
        assert not [m for _, m in mandatory(pack_stub, [R(WL, "c", _recorded(spec))], trust) if "calibration" in m]

    def test_a_calibration_within_the_band_counts(self, pack_stub, tmp_path):
        _, spec = self._calibrated(tmp_path, 0.55)
        assert not [m for _, m in mandatory(pack_stub, [R(WL, "c", _recorded(spec))]) if "calibration" in m]

    def test_a_calibration_from_the_environment_is_recorded_and_judged(self, pack_stub, tmp_path, monkeypatch):
        """GPUSIZER_CALIBRATION moves the program's decision; the GpuWorkload records the file, so the pack
        judges it like one the spec names (and never reads its own environment)."""
        cal, _ = self._calibrated(tmp_path, 0.05)
        monkeypatch.setenv("GPUSIZER_CALIBRATION", str(cal))
        recorded = workload.recorded_inputs(gpusizer.load_spec(self.CALIBRATED), [])
        assert recorded["spec"]["sizing"]["calibration"] == str(cal.resolve())
        found = [m for p, m in mandatory(pack_stub, [R(WL, "c", recorded)]) if "calibration" in m]
        assert found and "decode_mbu 0.05" in found[0]
        from gpusizer.estimate import calibration

        with calibration.recorded_only():
            assert calibration.for_spec(None) is None  # the pack's own planning ignores the variable

    def test_a_calibration_file_rewritten_between_two_plans_is_planned_again(self, tmp_path):
        """Cached decisions key on the file's bytes, not its name: a program cannot plan with one calibration
        and leave the pack a harmless file under the same name."""
        from gpusizer import reuse
        from gpusizer.base import memo

        cal, spec = self._calibrated(tmp_path, 0.05)
        with memo.scope():
            first = reuse.plan(gpusizer.load_spec(spec)).chosen.offer.instance_type
            cal.write_text("gpus: {L4: {decode_mbu: 0.8}}\n")
            second = reuse.plan(gpusizer.load_spec(spec)).chosen.offer.instance_type
        assert first != second


class TestFailover:
    def test_a_lone_instance_of_a_failover_type_is_judged_like_any_other(self, pack_stub):
        spec = {
            "name": "w",
            "model": {"name": "llama-3.1-8b"},
            "inference": {"context_length": 4096, "batch_size": 4},
            "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
            "deploy": {"capacity_failover": True, "failover_types": 8},
        }
        d = gpusizer.plan(spec)
        # The engine lists failover types only within 2x the choice's price (Decision.failover), so the check
        # runs at a tighter maxRatio: the dearest failover type's memory ratio over the requirement exceeds it.
        dear = max(d.failover_candidates()[1:], key=lambda c: c.offer.on_demand_usd)
        ratio = dear.offer.total_gpu_memory_gib / d.required_gpu_memory_gib
        assert ratio > 1.05
        props = {
            "instanceType": dear.offer.instance_type,
            **SECURE,
            "tags": {cases.REQ: f"{d.required_gpu_memory_gib:.2f}", "gpusizer:sized-by": d.sized_by},
        }
        rows = [R(WL, "w", _recorded(spec)), R("aws:ec2/instance:Instance", "i", props, parent=(WL, "w"))]
        found = mandatory(pack_stub, rows, {"gpusizer-no-overprovisioning": {"maxRatio": 1.05}})
        assert any(
            "failover type" in m or "not the re-planned" in m or "not its GpuWorkload's decision" in m for _, m in found
        ), found

    def test_a_group_whose_first_choice_is_not_the_decision_is_judged_like_any_other(self, pack_stub):
        spec = {
            "name": "w",
            "model": {"name": "llama-3.1-8b"},
            "inference": {"context_length": 4096, "batch_size": 4},
            "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
            "deploy": {"capacity_failover": True, "failover_types": 8},
        }
        d = gpusizer.plan(spec)
        order = [c.offer.instance_type for c in d.failover_candidates()][::-1]  # the dearest first
        tags = [
            {"key": cases.REQ, "value": f"{d.required_gpu_memory_gib:.2f}"},
            {"key": "gpusizer:sized-by", "value": d.sized_by},
        ]
        asg = {
            "maxSize": 1,
            "tags": tags,
            "mixedInstancesPolicy": {
                "launchTemplate": {
                    "launchTemplateSpecification": {"launchTemplateId": cases.U},
                    "overrides": [{"instanceType": t} for t in order],
                }
            },
        }
        rows = [R(WL, "w", _recorded(spec)), R(ASG, "asg", asg, parent=(WL, "w"))]
        found = mandatory(pack_stub, rows, {"gpusizer-no-overprovisioning": {"maxRatio": 1.05}})
        assert any(p == "gpusizer-no-overprovisioning" for p, _ in found)


class TestControls:
    @pytest.mark.parametrize("case", sorted(CONTROLS))
    def test_green(self, pack_stub, case):
        assert mandatory(pack_stub, CONTROLS[case]) == []


# --- through `gpusizer preview` ----------------------------------------------------------------------------------


def _preview(tmp_path, config, program=None, *extra, env=None):
    (tmp_path / "Pulumi.t.yaml").write_text(json.dumps({"config": config}))
    args = ["preview", "--stack", "t", "--stacks-dir", str(tmp_path), *extra]
    if program:
        (tmp_path / "program.py").write_text(textwrap.dedent(program))
        args += ["--program", str(tmp_path / "program.py")]
    return subprocess.run(
        [sys.executable, "-m", "gpusizer.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=300, env=env
    )


@pytest.mark.slow
def test_pinned_h100_spec_fails_preview_naming_the_cheaper_offer_and_the_pin(tmp_path):
    r = _preview(tmp_path, {"aws:region": "us-east-1", "gpusizer:workloads": [PINNED]})
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'placement.gpus: ["H100"]' in r.stdout and "1 x L4" in r.stdout and "preview FAILED" in r.stdout


@pytest.mark.slow
def test_an_allowed_pin_passes_preview_and_shows_the_allow_and_its_reason(tmp_path):
    cfg = tmp_path / "policy.json"
    cfg.write_text(
        json.dumps(
            {
                "gpusizer-no-overprovisioning": {
                    "allowPins": [
                        {"workload": "chat-3b", "pins": {"gpus": ["H100"]}, "reason": "H100 reservation already paid"}
                    ]
                }
            }
        )
    )
    r = _preview(
        tmp_path, {"aws:region": "us-east-1", "gpusizer:workloads": [PINNED]}, None, "--policy-config", str(cfg)
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "exception: chat-3b: placement.gpus allowed by the pack config (H100 reservation already paid)" in r.stdout


@pytest.mark.slow
def test_a_program_with_unmodelled_gpu_resources_fails_preview(tmp_path):
    program = """
        import pulumi_aws as aws
        import pulumi_gcp as gcp
        import pulumi_kubernetes as k8s
        gcp.container.Cluster("gke", location="us-central1", initial_node_count=2,
                              node_config={"machine_type": "a3-highgpu-8g"})
        k8s.helm.v3.Release("vllm", chart="vllm", values={"resources": {"limits": {"nvidia.com/gpu": 8}}})
        k8s.yaml.v2.ConfigGroup("cg", yaml=open(__file__.replace("program.py", "d.yaml")).read())
        gcp.tpu.V2Vm("tpu", accelerator_type="v5litepod-8", zone="us-central1-a", runtime_version="v2-alpha-tpuv5-lite")
        k8s.apiextensions.CustomResource("ray", api_version="ray.io/v1", kind="RayCluster", spec={"workerGroupSpecs": [
            {"replicas": 8, "template": {"spec": {"containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}}]})
        aws.ec2.Instance("t3", instance_type="t3.micro", ami="ami-1", metadata_options={"http_tokens": "required"},
                         root_block_device={"encrypted": True},
                         user_data="#!/bin/bash\\naws ec2 run-instances --instance-type p5.48xlarge --count 4\\n")
        # controls: a CPU instance, a CPU cluster and a Deployment without GPU evidence stay green
        aws.ec2.Instance("cpu", instance_type="m5.large", ami="ami-1", metadata_options={"http_tokens": "required"},
                         root_block_device={"encrypted": True})
        gcp.container.Cluster("cpu-gke", location="us-central1", initial_node_count=1,
                              node_config={"machine_type": "e2-standard-4"})
        k8s.apps.v1.Deployment("web", spec={"selector": {"match_labels": {"a": "b"}}, "template": {
            "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}})
    """
    (tmp_path / "d.yaml").write_text(json.dumps(DEPLOY_DOC))
    r = _preview(tmp_path, {"gcp:project": "p", "gcp:region": "us-central1", "aws:region": "us-east-1"}, program)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    for name in ("gke", "vllm", "cg: cg/Deployment/d", "tpu", "ray", "t3"):  # a manifest's: on its component
        assert any(f"on {name}:" in line and "[mandatory]" in line and "only)" not in line for line in lines), name
    for name in ("cpu", "cpu-gke", "web"):
        assert f" on {name}:" not in r.stdout, r.stdout
    assert "a real `pulumi preview --policy-pack policies` also judges the children" in r.stdout


class TestAllowsAndBands:
    """An allow covers a pin at its value; a calibration inside the band still may not buy a dearer GPU unseen."""

    def _allow(self, pins):
        return {
            "gpusizer-no-overprovisioning": {"allowPins": [{"workload": "chat-3b", "pins": pins, "reason": "reserved"}]}
        }

    def test_an_allowed_pin_changed_to_another_value_is_judged_again(self, pack_stub):
        b200 = {**PINNED, "placement": {"gpus": ["B200"]}}
        found = mandatory(pack_stub, [R(WL, "chat-3b", _recorded(b200))], self._allow({"gpus": ["H100"]}))
        assert any('placement.gpus: ["B200"]' in m for p, m in found if p == "gpusizer-no-overprovisioning"), found

    def test_an_allow_matches_the_value_as_the_spec_writes_it(self, pack_stub):
        lower = {**PINNED, "placement": {"gpus": ["h100"]}}  # GPU names are canonical, as the engine reads them
        assert mandatory(pack_stub, [R(WL, "chat-3b", _recorded(lower))], self._allow({"gpus": ["H100"]})) == []

    def test_an_allow_without_values_is_a_config_error_naming_the_fix(self):
        with pytest.raises(ValueError, match=r"allowPins\.0\.pins.*pins: \{gpus: \[H100\]\}"):
            rules.BY_NAME["gpusizer-no-overprovisioning"].settings(
                self._allow(["gpus"])["gpusizer-no-overprovisioning"]
            )

    def _banded(self, tmp_path):
        # every factor within a band of 0.6 of its default (gpusizer/data/efficiency.yaml decode_mbu: L4 0.85, so
        # 0.36 is 0.42x; A10G 0.75, so 0.32 is 0.43x; L40S 0.80, so 0.34 is 0.43x). At 400 tokens/s they move
        # one L4 (g6.xlarge, $0.8048/h in the packaged catalog) to one L40S (g6e.xlarge, $1.861/h): 2.3x per
        # hour, over maxRatio 2
        cal = tmp_path / "cal.yaml"
        cal.write_text("gpus:\n  L4: {decode_mbu: 0.36}\n  A10G: {decode_mbu: 0.32}\n  L40S: {decode_mbu: 0.34}\n")
        spec = {
            "name": "chat8b",
            "model": {"name": "llama-3.2-3b"},
            "inference": {"context_length": 4096, "batch_size": 4, "targets": {"tokens_per_second": 400}},
            "placement": {"providers": ["aws"]},
            "sizing": {"calibration": str(cal)},
        }
        return cal, spec

    def test_a_calibration_inside_the_band_that_buys_a_dearer_gpu_does_not_count_untrusted(self, pack_stub, tmp_path):
        cal, spec = self._banded(tmp_path)
        allow = {
            "allowPins": [{"workload": "chat8b", "pins": {"providers": ["aws"]}, "reason": "AWS only"}],
            "calibrationBand": 0.6,
        }
        cfg = {"gpusizer-no-overprovisioning": allow}
        found = [m for _, m in mandatory(pack_stub, [R(WL, "chat8b", _recorded(spec))], cfg) if "calibration" in m]
        assert found and "inside the band" in found[0] and "trustedCalibrations" in found[0], found
        digest = hashlib.sha256(cal.read_bytes()).hexdigest()
        trusted = {**allow, "trustedCalibrations": [{"sha256": digest, "reason": "fitted on our cluster"}]}
        cfg = {"gpusizer-no-overprovisioning": trusted}
        assert not [m for _, m in mandatory(pack_stub, [R(WL, "chat8b", _recorded(spec))], cfg) if "calibration" in m]
