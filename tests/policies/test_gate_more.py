"""The gate, second adversarial round (issue 23): the evasions a reviewer found after the first hardening, each a
regression case sent over gRPC as the engine sends it, with the controls each fix must keep green. Helpers and the
conventions (blocked = at least one MANDATORY diagnostic) are test_gate.py's.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import pickle
import subprocess
import sys
import textwrap

import pytest

from gpusizer.policies import charts
from tests.conftest import REPO
from tests.policies import cases
from tests.policies.test_gate import (
    ASG,
    DEPLOY_DOC,
    H100_POD,
    HOST_SECURITY,
    LT,
    PINNED,
    SECURE,
    WL,
    R,
    _preview,
    _recorded,
    deployment,
    mandatory,
    pod,
)

DEP = "kubernetes:apps/v1:Deployment"
HELM = "kubernetes:helm.sh/v3:Release"
NP = "kubernetes:karpenter.sh/v1:NodePool"
GPU_LIMITS = {"resources": {"limits": {"nvidia.com/gpu": 8}}}


def _requirement(key, op, values):
    return [
        R(
            NP,
            "np",
            {"spec": {"template": {"spec": {"requirements": [{"key": key, "operator": op, "values": values}]}}}},
        )
    ]


def _sidecar_unknown():
    spec = {
        **H100_POD["spec"],
        "containers": [
            *H100_POD["spec"]["containers"],
            {"name": "s", "resources": {"limits": {"nvidia.com/gpu": cases.U}}},
        ],
    }
    return [R(DEP, "d", deployment({"metadata": H100_POD["metadata"], "spec": spec}))]


def _versioned(version, **template):
    lt = {
        "instanceType": "g6.xlarge",
        "id": "lt-small",
        "latestVersion": 3,
        "tags": {cases.REQ: "18"},
        **SECURE,
        **template,
    }
    asg = {
        "maxSize": 1,
        "launchTemplate": {"id": "lt-small", "version": version},
        "tags": [{"key": cases.REQ, "value": "18"}],
    }
    return [R(LT, "lt", lt), R(ASG, "asg", asg, deps=[(LT, "lt")])]


BLOCKED = {
    # other clouds' accelerated sizes: evidence gpusizer cannot judge
    "azure-vm-nd-h100": [
        R("azure-native:compute:VirtualMachine", "vm", {"hardwareProfile": {"vmSize": "Standard_ND96isr_H100_v5"}})
    ],
    "azure-aks-pool": [
        R("azure-native:containerservice:AgentPool", "np", {"vmSize": "Standard_NC24ads_A100_v4", "count": 8})
    ],
    "oci-gpu-shape": [R("oci:Core/instance:Instance", "i", {"shape": "BM.GPU.H100.8"})],
    "alibaba-gn7": [R("alicloud:ecs/instance:Instance", "i", {"instanceType": "ecs.gn7i-c8g1.2xlarge"})],
    "az-cli-size-in-command": [
        R("command:local:Command", "c", {"create": "az vm create -n x --size Standard_ND96isr_H100_v5"})
    ],
    # type patterns: EC2's wildcard, an ECS expression's regular expression
    "aws-native-lt-wildcard": [
        R(
            "aws-native:ec2:LaunchTemplate",
            "lt",
            {
                "launchTemplateData": {
                    "instanceRequirements": {
                        "vCpuCount": {"min": 1},
                        "memoryMiB": {"min": 1},
                        "allowedInstanceTypes": ["p5*"],
                    }
                }
            },
        )
    ],
    "ecs-placement-regex": [
        R(
            "aws:ecs/service:Service",
            "s",
            {
                "desiredCount": 10,
                "placementConstraints": [{"type": "memberOf", "expression": "attribute:ecs.instance-type =~ p5.*"}],
            },
        )
    ],
    # selection by elimination
    "karpenter-category-notin-cpu": _requirement("karpenter.k8s.aws/instance-category", "NotIn", ["c", "m", "r", "t"]),
    "karpenter-gpu-count-notin-zero": _requirement("karpenter.k8s.aws/instance-gpu-count", "NotIn", ["0"]),
    # evidence under keys that usually record or exclude, and beside a requirement's words
    "values-under-description": [R(HELM, "rel", {"chart": "x", "values": {"description": GPU_LIMITS}})],
    "values-under-exclude-word": [R(HELM, "rel", {"chart": "x", "values": {"excludedNamespacesWorker": GPU_LIMITS}})],
    "notin-beside-resources": [
        R(HELM, "rel", {"chart": "x", "values": {"worker": {"key": "x", "operator": "NotIn", **GPU_LIMITS}}})
    ],
    # templates: outside the stack for a type with no precise model; an earlier version than the stack's
    "aws-native-instance-external-template": [
        R("aws-native:ec2:Instance", "i", {"launchTemplate": {"launchTemplateName": "gpu-lt-external", "version": "1"}})
    ],
    "aws-native-instance-gpu-template-in-stack": [
        R(LT, "lt", {"instanceType": "p5.48xlarge", "name": "big", **SECURE, "tags": {cases.REQ: "20"}}),
        R("aws-native:ec2:Instance", "i", {"launchTemplate": {"launchTemplateName": "big", "version": "$Latest"}}),
    ],
    "asg-earlier-template-version": _versioned("1"),
    "asg-older-default-version": _versioned("$Default", defaultVersion=2),
    # fields read as the scheduler and the cloud read them
    "selector-and-affinity-disagree": [
        R(
            DEP,
            "d",
            deployment(
                pod(
                    {"nvidia.com/gpu": 1},
                    {"nvidia.com/gpu.product": "NVIDIA-L4"},
                    need="18",
                    affinity=[
                        {
                            "matchExpressions": [
                                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]}
                            ]
                        }
                    ],
                )
            ),
        )
    ],
    "gcp-machine-unknown-accelerators-known": [
        R(
            "gcp:compute/instance:Instance",
            "vm",
            {
                "machineType": cases.U,
                "guestAccelerators": [{"type": "nvidia-h100-80gb", "count": 8}],
                "labels": {cases.GCP_REQ: "20"},
            },
        )
    ],
    "pod-known-h100s-beside-an-unknown-count": _sidecar_unknown(),
}

L4_ASG = [
    R(LT, "lt", {"instanceType": "g6.xlarge", "name": "small", **SECURE, "tags": {cases.REQ: "18"}}),
    R(
        ASG,
        "asg",
        {
            "name": "gpu-asg",
            "maxSize": 1,
            "launchTemplate": {"name": "small"},
            "tags": [{"key": cases.REQ, "value": "18"}],
        },
    ),
]
L4_DEP = R(
    DEP,
    "llm",
    {
        "metadata": {"name": "llm", "namespace": "ml", "annotations": {cases.K8S_REQ: "18"}},
        "spec": {
            "replicas": 1,
            "template": pod({"nvidia.com/gpu": 1}, {"nvidia.com/gpu.product": "NVIDIA-L4"}, need="18"),
        },
    },
)
BUDGET = {"gpusizer-gpu-budget": {"enforcementLevel": "mandatory", "maxHourlyUsd": 20}}


def _one_l4_replica(name: str, template: dict):
    """L4_DEP with one replica of `template`, recreated on update (no surge)."""
    typ, _, props, deps, parent = L4_DEP
    return R(
        typ,
        name,
        {**props, "spec": {"replicas": 1, "strategy": {"type": "Recreate"}, "template": template}},
        deps,
        parent,
    )


# The engine's wire form of assets and archives: pulumi.runtime.rpc's _special_sig_key, _special_asset_sig and
# _special_archive_sig (pulumi 3.x SDK), written out so a test does not lean on the pack's own copy.
SIG = "4dabf18193072939515e22adb298388d"
ASSET, ARCHIVE = "c44067f5952c0a294b673a41bacd8c17", "0def7320c3a5731c473e5ecbe6d01bc7"

# (rows, pack config): each within a $20/h budget as written, over it at what it may really run
COUNTED = {
    "aws-native-scheduled-action": [
        *L4_ASG,
        R(
            "aws-native:autoscaling:ScheduledAction",
            "night",
            {"autoScalingGroupName": "gpu-asg", "maxSize": 100, "desiredCapacity": 100},
        ),
    ],
    "predictive-scaling-past-max": [
        *L4_ASG,
        R(
            "aws:autoscaling/policy:Policy",
            "pred",
            {
                "autoscalingGroupName": "gpu-asg",
                "policyType": "PredictiveScaling",
                "predictiveScalingConfiguration": {
                    "maxCapacityBreachBehavior": "IncreaseMaxCapacity",
                    "maxCapacityBuffer": 100,
                },
            },
        ),
    ],
    "deployment-patch-replicas": [
        L4_DEP,
        R(
            "kubernetes:apps/v1:DeploymentPatch",
            "scale",
            {"metadata": {"name": "llm", "namespace": "ml"}, "spec": {"replicas": 60}},
        ),
    ],
    "budget-count-unknown-p5": [
        R(
            "aws:autoscaling/group:Group",
            "asg",
            {
                "maxSize": cases.U,
                "mixedInstancesPolicy": {
                    "launchTemplate": {
                        "launchTemplateSpecification": {"launchTemplateId": cases.U},
                        "overrides": [{"instanceType": "p5.48xlarge"}],
                    }
                },
            },
        )
    ],
    "override-names-its-own-template": [
        R(LT, "small", {"instanceType": "g6.xlarge", "name": "small", **SECURE, "tags": {cases.REQ: "18"}}),
        R(LT, "big", {"instanceType": "p5.48xlarge", "name": "gpu-big", **SECURE, "tags": {cases.REQ: "500"}}),
        R(
            ASG,
            "asg",
            {
                "maxSize": 2,
                "tags": [{"key": cases.REQ, "value": "18"}],
                "mixedInstancesPolicy": {
                    "launchTemplate": {
                        "launchTemplateSpecification": {"launchTemplateName": "small"},
                        "overrides": [
                            {"instanceType": "g6.xlarge"},
                            {"launchTemplateSpecification": {"launchTemplateName": "gpu-big"}},
                        ],
                    }
                },
            },
        ),
    ],
}

MORE_BLOCKED = {
    "digitalocean-gpu-droplet": [R("digitalocean:index/droplet:Droplet", "d", {"size": "gpu-h100x8-640gb"})],
    "linode-gpu": [R("linode:index/instance:Instance", "ln", {"type": "g1-gpu-rtx6000-4"})],
    "values-file-text-asset": [
        R(
            HELM,
            "rel",
            {
                "chart": "oci://x/llm",
                "valueYamlFiles": [
                    {SIG: ASSET, "text": "worker:\n  resources:\n    limits:\n      nvidia.com/gpu: 8\n"}
                ],
            },
        )
    ],
    "layout-pin": [],  # filled below from test_gate's recorded spec
    "gpu-count-unknown-on-h100": [
        R(DEP, "d", deployment(pod({"nvidia.com/gpu": cases.U}, {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})))
    ],
    "user-data-asks-for-p4d-beside-a-computed-type": [
        R(
            "aws:ec2/instance:Instance",
            "i",
            {
                "instanceType": cases.U,
                **SECURE,
                "tags": {cases.REQ: "18"},
                "userData": "#!/bin/bash\naws ec2 run-instances --instance-type p4d.24xlarge --count 4\n",
            },
        )
    ],
    "cloudformation-short-form-tags": [
        R(
            "aws:cloudformation/stack:Stack",
            "cfn",
            {
                "templateBody": "Resources:\n  G:\n    Type: AWS::EKS::Nodegroup\n    Properties:\n      ClusterName: !Ref C\n      InstanceTypes: [!Sub 'p4d.24xlarge']\n"
            },
        )
    ],
}

GREEN = {
    "image-tag-naming-a-type": [
        R(
            DEP,
            "web",
            {
                "spec": {
                    "replicas": 2,
                    "template": {
                        "spec": {"containers": [{"name": "c", "image": "grafana/gpu-dashboard:p5.48xlarge-edition"}]}
                    },
                }
            },
        )
    ],
    "configmap-listing-types": [
        R("kubernetes:core/v1:ConfigMap", "cm", {"data": {"allowed": "p5.48xlarge,g6.xlarge"}})
    ],
    "karpenter-notin-burstable": _requirement("karpenter.k8s.aws/instance-category", "NotIn", ["t"]),
    "karpenter-notin-accelerated": _requirement(
        "karpenter.k8s.aws/instance-category", "NotIn", ["g", "p", "inf", "trn"]
    ),
    "asg-latest-version": _versioned("$Latest"),
    "asg-the-stacks-version": _versioned("3"),
    "asg-default-updated": _versioned("$Default", defaultVersion=3),
    "aws-native-instance-cpu-template-in-stack": [
        R(LT, "lt", {"instanceType": "m6i.large", "name": "web", **SECURE}),
        R("aws-native:ec2:Instance", "i", {"launchTemplate": {"launchTemplateName": "web", "version": "$Latest"}}),
    ],
    "azure-cpu-vm": [
        R("azure-native:compute:VirtualMachine", "vm", {"hardwareProfile": {"vmSize": "Standard_D4s_v5"}})
    ],
    "oci-cpu-shape": [R("oci:Core/instance:Instance", "i", {"shape": "VM.Standard.E4.Flex"})],
    "user-data-globs": [
        R(
            "aws:ec2/instance:Instance",
            "t3",
            {"instanceType": "t3.micro", **SECURE, "userData": "#!/bin/bash\nrm -f /var/log/g* /tmp/p*\nls nvme*\n"},
        )
    ],
    "cloud-init-prose-naming-a-type": [
        R(
            "aws:ec2/instance:Instance",
            "t3",
            {
                "instanceType": "t3.small",
                **SECURE,
                "userData": "#cloud-config\nruncmd:\n  - echo 'preparing the AMI for g6.xlarge builds'\n",
            },
        )
    ],
    "scp-denying-gpu-types": [
        R(
            "aws:organizations/policy:Policy",
            "scp",
            {
                "content": json.dumps(
                    {
                        "Statement": [
                            {
                                "Effect": "Deny",
                                "Action": "ec2:RunInstances",
                                "Condition": {"StringLike": {"ec2:InstanceType": ["p5.*", "p4d.24xlarge"]}},
                            }
                        ]
                    }
                )
            },
        )
    ],
    "alarm-on-a-gpu-type": [
        R(
            "aws:cloudwatch/metricAlarm:MetricAlarm",
            "al",
            {"metricName": "CPUUtilization", "dimensions": {"InstanceType": "g6.xlarge"}},
        )
    ],
    "time-slicing-configmap": [
        R(
            "kubernetes:core/v1:ConfigMap",
            "ts",
            {
                "data": {
                    "any": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
                }
            },
        )
    ],
    "dcgm-daemonset-by-affinity": [
        R(
            "kubernetes:apps/v1:DaemonSet",
            "dcgm",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "affinity": {
                                "nodeAffinity": {
                                    "requiredDuringSchedulingIgnoredDuringExecution": {
                                        "nodeSelectorTerms": [
                                            {
                                                "matchExpressions": [
                                                    {"key": "nvidia.com/gpu.present", "operator": "Exists"}
                                                ]
                                            }
                                        ]
                                    }
                                }
                            },
                            "containers": [{"name": "dcgm-exporter"}],
                        }
                    }
                }
            },
        )
    ],
    "cpu-group-predictive-past-max": [
        R(
            ASG,
            "web",
            {
                "name": "web",
                "maxSize": 4,
                "mixedInstancesPolicy": {
                    "launchTemplate": {
                        "launchTemplateSpecification": {"launchTemplateId": cases.U},
                        "overrides": [{"instanceType": "m6i.large"}],
                    }
                },
            },
        ),
        R(
            "aws:autoscaling/policy:Policy",
            "pred",
            {
                "autoscalingGroupName": "web",
                "policyType": "PredictiveScaling",
                "predictiveScalingConfiguration": {"maxCapacityBreachBehavior": "IncreaseMaxCapacity"},
            },
        ),
    ],
    "selector-and-affinity-agree": [
        R(
            DEP,
            "d",
            deployment(
                pod(
                    {"nvidia.com/gpu": 1},
                    {"nvidia.com/gpu.product": "NVIDIA-L4"},
                    need="18",
                    affinity=[
                        {
                            "matchExpressions": [
                                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g6.xlarge"]}
                            ]
                        }
                    ],
                )
            ),
        )
    ],
}


def test_an_earlier_template_version_names_both_versions_and_the_fix(pack_stub):
    found = [m for _, m in mandatory(pack_stub, BLOCKED["asg-earlier-template-version"])]
    assert any("version 1" in m and "version 3" in m and "$Latest" in m for m in found), found


def test_known_gpus_beside_an_unknown_count_are_judged_as_a_lower_bound(pack_stub):
    found = [
        m
        for p, m in mandatory(pack_stub, BLOCKED["pod-known-h100s-beside-an-unknown-count"])
        if p == "gpusizer-no-overprovisioning"
    ]
    assert found and "at least" in found[0], found


def _chart(root, values, template):
    root.mkdir()
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (root / "values.yaml").write_text(values)
    (root / "templates").mkdir()
    (root / "templates" / "d.yaml").write_text(template)
    return str(root)


TEMPLATE = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  template:
    spec:
      containers:
      - name: c
        image: {{ .Values.image }}
        resources:
{{ toYaml .Values.resources | indent 10 }}
"""


def test_a_local_chart_directory_is_read_its_values_and_templates(pack_stub, tmp_path):
    gpu = _chart(tmp_path / "gpu", "image: vllm\nresources:\n  limits:\n    nvidia.com/gpu: 8\n", TEMPLATE)
    found = mandatory(pack_stub, [R(HELM, "rel", {"chart": gpu})])
    assert any("rel/Deployment" in m for _, m in found), found  # rendered: the child is judged
    counted = _chart(
        tmp_path / "count",
        "image: vllm\n",
        TEMPLATE.replace(
            "{{ toYaml .Values.resources | indent 10 }}", "          limits: {nvidia.com/gpu: {{ .Values.gpus }}}"
        ),
    )
    assert _judged(pack_stub, [R(HELM, "rel", {"chart": counted})])
    cpu = _chart(tmp_path / "cpu", "image: nginx\nresources:\n  limits:\n    cpu: 1\n", TEMPLATE)
    assert mandatory(pack_stub, [R(HELM, "rel", {"chart": cpu})]) == []


def test_the_pod_with_h100_affinity_and_l4_selector_is_reported_as_unverifiable(pack_stub):
    found = json.dumps(mandatory(pack_stub, BLOCKED["selector-and-affinity-disagree"]))
    assert "unknown GPU type, cannot verify" in found, found


def test_the_counted_cases_fit_the_budget_as_written(pack_stub):
    """Each COUNTED case without what it adds (the scaler, the override, the unknown) is within the budget:
    the block comes from counting, not from the base."""
    assert mandatory(pack_stub, L4_ASG, BUDGET) == [] and mandatory(pack_stub, [L4_DEP], BUDGET) == []


def _layout_pinned():
    spec = {**PINNED, "placement": {}, "inference": {**PINNED.get("inference", {}), "layout": {"tensor_parallel": 8}}}
    return [R(WL, "chat-3b", _recorded(spec))]


def test_a_layout_pin_names_itself_and_may_be_allowed(pack_stub):
    found = [m for p, m in mandatory(pack_stub, _layout_pinned()) if p == "gpusizer-no-overprovisioning"]
    assert any("inference.layout" in m for m in found), found
    allow = {
        "gpusizer-no-overprovisioning": {
            "allowPins": [
                {"workload": "chat-3b", "pins": {"layout": {"tensor_parallel": 8}}, "reason": "TP8 benchmark"}
            ]
        }
    }
    assert not [m for p, m in mandatory(pack_stub, _layout_pinned(), allow) if p == "gpusizer-no-overprovisioning"]


# --- third round: services that name GPUs in their own words, counting, host size, read as the cloud reads ----
THIRD_BLOCKED = {
    "codebuild-gpu-environment": [
        R(
            "aws:codebuild/project:Project",
            "cb",
            {"environment": {"type": "LINUX_GPU_CONTAINER", "computeType": "BUILD_GENERAL1_LARGE"}},
        )
    ],
    "appstream-graphics-fleet": [
        R(
            "aws:appstream/fleet:Fleet",
            "f",
            {"instanceType": "stream.graphics.g5.24xlarge", "computeCapacity": {"desiredInstances": 50}},
        )
    ],
    "workspaces-graphics-bundle": [
        R("aws:workspaces/workspace:Workspace", "ws", {"workspaceProperties": {"computeTypeName": "GRAPHICSPRO_G4DN"}})
    ],
    "lambda-cloud-instance": [R("lambda:index:Instance", "l", {"instanceTypeName": "gpu_8x_h100_sxm5"})],
    "gcp-accelerator-count-unknown": [
        R(
            "gcp:compute/instance:Instance",
            "vm",
            {
                "machineType": "n1-standard-32",
                "labels": {cases.GCP_REQ: "5"},
                "guestAccelerators": [{"type": "nvidia-tesla-v100", "count": cases.U}],
            },
        )
    ],
    "cloudformation-parameter-in-fn-sub": [
        R(
            "aws:cloudformation/stack:Stack",
            "cfn",
            {
                "parameters": {"Size": "48xlarge"},
                "templateBody": json.dumps(
                    {
                        "Resources": {
                            "I": {
                                "Type": "AWS::EC2::Instance",
                                "Properties": {"InstanceType": {"Fn::Sub": "p5.${Size}"}},
                            }
                        }
                    }
                ),
            },
        )
    ],
    "one-l4-on-an-oversized-host": [
        R("aws:ec2/instance:Instance", "i", {"instanceType": "g6.16xlarge", **SECURE, "tags": {cases.REQ: "18"}})
    ],
    "gpu-quantity-in-millis-on-h100": [
        R(DEP, "d", deployment(pod({"nvidia.com/gpu": "8000m"}, {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})))
    ],
}

THIRD_COUNTED = {
    "asg-max-computed": [
        R(LT, "lt", {"instanceType": "g6.xlarge", "id": "lt-small", **SECURE, "tags": {cases.REQ: "18"}}),
        R(
            ASG,
            "asg",
            {"maxSize": cases.U, "launchTemplate": {"id": "lt-small"}, "tags": [{"key": cases.REQ, "value": "18"}]},
        ),
    ],
    "cronjob-overlapping-runs": [
        R(
            "kubernetes:batch/v1:CronJob",
            "cj",
            {
                "spec": {
                    "schedule": "* * * * *",
                    "concurrencyPolicy": "Allow",
                    "jobTemplate": {"spec": {"template": L4_DEP[2]["spec"]["template"]}},
                }
            },
        )
    ],
    "hpa-target-computed": [
        L4_DEP,
        R(
            "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
            "hpa",
            {
                "metadata": {"namespace": "ml"},
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": cases.U}, "maxReplicas": 100},
            },
        ),
    ],
    "command-resizes-the-group": [
        *L4_ASG,
        R(
            "command:local:Command",
            "scale",
            {"create": "aws autoscaling update-auto-scaling-group --auto-scaling-group-name gpu-asg --max-size 100"},
        ),
    ],
    "kubectl-scales-the-deployment": [
        L4_DEP,
        R("command:local:Command", "scale", {"create": "kubectl -n ml scale deployment/llm --replicas=60"}),
    ],
}

THIRD_GREEN = {
    "network-policy-selecting-gpu-pods": [
        R(
            "kubernetes:networking.k8s.io/v1:NetworkPolicy",
            "np",
            {
                "spec": {
                    "podSelector": {"matchLabels": {"accelerator": "nvidia-tesla-a100", "gpu": "h100"}},
                    "policyTypes": ["Ingress"],
                }
            },
        )
    ],
    "affinity-in-and-notin-leaves-l4": [
        R(
            DEP,
            "d",
            deployment(
                pod(
                    {"nvidia.com/gpu": 1},
                    need="18",
                    affinity=[
                        {
                            "matchExpressions": [
                                {
                                    "key": "nvidia.com/gpu.product",
                                    "operator": "In",
                                    "values": ["NVIDIA-L4", "NVIDIA-H100-80GB-HBM3"],
                                },
                                {
                                    "key": "nvidia.com/gpu.product",
                                    "operator": "NotIn",
                                    "values": ["NVIDIA-H100-80GB-HBM3"],
                                },
                            ]
                        }
                    ],
                )
            ),
        )
    ],
    "ssm-parameter-naming-a-type": [
        R("aws:ssm/parameter:Parameter", "p", {"name": "/fleet/forbidden", "type": "String", "value": "p5.48xlarge"})
    ],
    "one-l4-on-the-smallest-host": [
        R("aws:ec2/instance:Instance", "i", {"instanceType": "g6.xlarge", **SECURE, "tags": {cases.REQ: "18"}})
    ],
    "command-resizing-a-cpu-group": [
        *L4_ASG,
        R(
            "command:local:Command",
            "scale",
            {"create": "aws autoscaling update-auto-scaling-group --auto-scaling-group-name web --max-size 100"},
        ),
    ],
}


def test_an_oversized_host_names_the_smaller_host_of_the_same_gpus(pack_stub):
    (found,) = [
        m
        for p, m in mandatory(pack_stub, THIRD_BLOCKED["one-l4-on-an-oversized-host"])
        if p == "gpusizer-no-overprovisioning"
    ]
    smaller = found.split(" is ", 1)[1].split(" at ", 1)[0]  # "3.5x g6.2xlarge": the catalog's cheapest L4 host
    assert smaller.split()[-1].startswith("g6.") and "same GPUs on a smaller host" in found


def test_kustomize_replicas_are_counted(pack_stub, tmp_path):
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", **L4_DEP[2]}
    (tmp_path / "deploy.yaml").write_text(json.dumps(doc))
    (tmp_path / "kustomization.yaml").write_text("resources:\n- deploy.yaml\nreplicas:\n- name: llm\n  count: 100\n")
    rows = [R("kubernetes:kustomize/v2:Directory", "k", {"directory": str(tmp_path)})]
    assert any(p == "gpusizer-gpu-budget" for p, _ in mandatory(pack_stub, rows, BUDGET))
    (tmp_path / "kustomization.yaml").write_text("resources:\n- deploy.yaml\n")
    assert mandatory(pack_stub, rows, BUDGET) == []


@pytest.mark.slow
def test_offline_preview_reads_v1_yaml_and_a_helm_v3_chart_it_cannot_render(tmp_path):
    """v1 ConfigFile decodes its YAML in the SDK (the mocks answer the decode invoke, so a CPU file previews),
    and a helm.v3.Chart's template invoke records the chart's inputs: its local chart asks for 8 GPUs."""
    (tmp_path / "web.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n")
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: llm\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("gpus: 8\n")
    (chart / "templates" / "d.yaml").write_text(
        TEMPLATE.replace(
            "{{ toYaml .Values.resources | indent 10 }}", "          limits: {nvidia.com/gpu: {{ .Values.gpus }}}"
        )
    )
    program = f"""
        import pulumi_kubernetes as k8s
        k8s.yaml.ConfigFile("web", file={str(tmp_path / "web.yaml")!r})
        """
    ok = _preview(tmp_path, {}, program)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "kubernetes:core/v1:ConfigMap" in ok.stdout
    program += f'k8s.helm.v3.Chart("llm", k8s.helm.v3.LocalChartOpts(path={str(chart)!r}))\n'
    blocked = _preview(tmp_path, {}, program)
    assert blocked.returncode == 1 and "[mandatory] gpusizer-gpu-evidence on llm" in blocked.stdout, blocked.stdout


# --- fourth round: shell as a shell reads it, device plugins and classes, more scalers, the headroom pin -------
SH = "#!/bin/bash\n"
FOURTH_BLOCKED = {
    "shell-variable": 'T=p5.48xlarge\naws ec2 run-instances --instance-type "$T" --count 4\n',
    "shell-default": "aws ec2 run-instances --instance-type ${SIZE:-p5.48xlarge}\n",
    "continued-line": "aws ec2 run-instances \\\n  --instance-type \\\n  p5.48xlarge\n",
    "quoted-parts": 'aws ec2 run-instances --instance-type p5."48xlarge"\n',
    "inline-base64": "aws ec2 run-instances --instance-type $(echo cDUuNDh4bGFyZ2U= | base64 -d)\n",
    "echo-into-a-file": "echo 'instance_type = \"p5.48xlarge\"' > big.tfvars && terraform apply -var-file big.tfvars\n",
}
FOURTH_GREEN = {
    "describe-only": "aws ec2 describe-instance-types --instance-types p5.48xlarge g6.xlarge\n",
    "a-comment": "apt-get install -y nvidia-driver-535\n# GPU nodes: p5.48xlarge\n",
    "echo-to-the-log": "echo 'preparing the AMI for g6.xlarge builds'\n",
}


def _user_data(script):
    return [R("aws:ec2/instance:Instance", "t3", {"instanceType": "t3.micro", **SECURE, "userData": SH + script})]


@pytest.mark.parametrize("case", sorted(FOURTH_BLOCKED))
def test_shell_text_is_read_as_a_shell_reads_it(pack_stub, case):
    assert _judged(pack_stub, _user_data(FOURTH_BLOCKED[case])), case


@pytest.mark.parametrize("case", sorted(FOURTH_GREEN))
def test_shell_text_that_only_reads_or_prints_asks_for_nothing(pack_stub, case):
    assert mandatory(pack_stub, _user_data(FOURTH_GREEN[case])) == [], case


def test_a_command_deploying_a_local_file_is_read(pack_stub, tmp_path):
    cfn = tmp_path / "big.yaml"
    cfn.write_text("Resources:\n  I:\n    Type: AWS::EC2::Instance\n    Properties:\n      InstanceType: p5.48xlarge\n")
    rows = [
        R("command:local:Command", "c", {"create": f"aws cloudformation deploy --stack-name big --template-file {cfn}"})
    ]
    assert _judged(pack_stub, rows)


MORE_DEVICES = {
    "generic-device-plugin": [R(DEP, "d", deployment(pod({"squat.ai/nvidia": 8})))],
    "dra-custom-accelerator-class": [
        R(
            "kubernetes:resource.k8s.io/v1beta1:ResourceClaimTemplate",
            "t",
            {
                "spec": {
                    "spec": {"devices": {"requests": [{"name": "g", "deviceClassName": "accel-large", "count": 8}]}}
                }
            },
        )
    ],
    "scaleway-h100": [R("scaleway:index/instanceServer:InstanceServer", "s", {"type": "H100-2-80G"})],
    "azure-container-apps-gpu": [
        R("azure-native:app:ManagedEnvironment", "e", {"workloadProfiles": [{"workloadProfileType": "NC24-A100"}]})
    ],
    "script-in-a-configmap": [
        R(
            "kubernetes:core/v1:ConfigMap",
            "s",
            {"data": {"run.sh": "#!/bin/sh\naws ec2 run-instances --instance-type p5.48xlarge\n"}},
        )
    ],
}
MORE_SCALERS = {
    "warm-pool-resource": [
        *L4_ASG,
        R("aws-native:autoscaling:WarmPool", "wp", {"autoScalingGroupName": "gpu-asg", "minSize": 300}),
    ],
    "hpa-patch": [
        L4_DEP,
        R(
            "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
            "hpa",
            {
                "metadata": {"name": "h", "namespace": "ml"},
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "llm"}, "maxReplicas": 2},
            },
        ),
        R(
            "kubernetes:autoscaling/v2:HorizontalPodAutoscalerPatch",
            "hp",
            {"metadata": {"name": "h", "namespace": "ml"}, "spec": {"maxReplicas": 500}},
        ),
    ],
    "rollout-workload-ref": [
        L4_DEP,
        R(
            "kubernetes:argoproj.io/v1alpha1:Rollout",
            "ro",
            {
                "metadata": {"namespace": "ml"},
                "spec": {"replicas": 500, "workloadRef": {"kind": "Deployment", "name": "llm"}},
            },
        ),
    ],
}
MORE_GREEN = {
    "dcgm-daemonset-with-the-nvidia-runtime": [
        R(
            "kubernetes:apps/v1:DaemonSet",
            "dcgm",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "runtimeClassName": "nvidia",
                            "nodeSelector": {"nvidia.com/gpu.present": "true"},
                            "containers": [
                                {"name": "dcgm", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}
                            ],
                        }
                    }
                }
            },
        )
    ],
    "dcgm-exporter-chart-on-gpu-nodes": [
        R(HELM, "dcgm", {"chart": "dcgm-exporter", "values": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}})
    ],
    "grafana-dashboard-querying-a-type": [
        R(
            "kubernetes:core/v1:ConfigMap",
            "dash",
            {
                "data": {
                    "gpu.json": json.dumps(
                        {"panels": [{"targets": [{"expr": 'DCGM_FI_DEV_GPU_UTIL{instance_type="p5.48xlarge"}'}]}]}
                    )
                }
            },
        )
    ],
}


def test_a_smaller_memory_headroom_is_a_pin(pack_stub):
    spec = {**PINNED, "model": {"name": "llama-3.1-8b"}, "placement": {}, "sizing": {"memory_headroom": 0.51}}
    found = [m for p, m in mandatory(pack_stub, [R(WL, "chat-3b", _recorded(spec))]) if "sizing.memory_headroom" in m]
    assert found, found


# --- fifth round: the offline preview keeps the program apart from the pack ------------------------------------
P5 = """
import pulumi_aws as aws
aws.ec2.Instance("big", instance_type="p5.48xlarge", ami="ami-1",
                 metadata_options={"http_tokens": "required"}, root_block_device={"encrypted": True})
"""


@pytest.mark.slow
@pytest.mark.parametrize("leave", ["import sys; sys.exit(0)", "import os; os._exit(0)"])
def test_a_program_that_exits_early_is_an_error_not_a_pass(tmp_path, leave):
    done = _preview(tmp_path, {}, P5 + leave + "\n")
    assert done.returncode == 2 and "--program" in done.stderr, (done.returncode, done.stdout, done.stderr)


@pytest.mark.slow
def test_a_program_cannot_patch_the_pack_that_judges_it(tmp_path):
    """The program runs in a forked child; the pack judges in the parent, untouched by what the program did."""
    tamper = "import gpusizer.policies.analyzer as a\na.analyze = lambda *args, **kw: []\n"
    done = _preview(tmp_path, {}, P5 + tamper)
    assert done.returncode == 1 and "[mandatory]" in done.stdout, done.stdout + done.stderr


@pytest.mark.slow
def test_relative_paths_are_read_from_the_programs_directory(tmp_path):
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "d.yaml").write_text(json.dumps(DEPLOY_DOC))
    program = 'import pulumi_kubernetes as k8s\nk8s.yaml.v2.ConfigFile("cf", file="manifests/d.yaml")\n'
    done = _preview(tmp_path, {}, program)
    assert done.returncode == 1 and "637 GiB" in done.stdout, done.stdout + done.stderr


def test_a_gpu_named_switch_for_something_else_turns_no_gpu_on(pack_stub):
    cpu = [R(HELM, "web", {"chart": "web", "values": {"gpuDashboard": True, "metrics": {"gpuPanel": True}}})]
    assert mandatory(pack_stub, cpu) == []
    assert _judged(pack_stub, [R(HELM, "llm", {"chart": "llm", "values": {"gpu": {"enabled": True}}})])


# --- sixth round: any command that resizes, GPU words in any cloud's sizes, escapes and machine images ---------
RESIZERS = {
    "kubectl-patch-replicas": 'kubectl -n ml patch deployment llm -p \'{"spec":{"replicas":200}}\'',
    "kubectl-autoscale": "kubectl -n ml autoscale deployment llm --max=200",
    "put-scheduled-action": "aws autoscaling put-scheduled-update-group-action --auto-scaling-group-name gpu-asg --max-size 100",
    "boto3-update": "python3 -c \"import boto3; boto3.client('autoscaling').update_auto_scaling_group(AutoScalingGroupName='gpu-asg', MaxSize=100)\"",
}


@pytest.mark.parametrize("case", sorted(RESIZERS))
def test_any_command_that_resizes_a_gpu_group_counts(pack_stub, case):
    base = [L4_DEP] if "kubectl" in RESIZERS[case] else L4_ASG
    rows = [*base, R("command:local:Command", "c", {"create": RESIZERS[case]})]
    assert mandatory(pack_stub, base, BUDGET) == [] and mandatory(pack_stub, rows, BUDGET), case


def test_a_command_resizing_a_group_of_another_name_counts_nothing(pack_stub):
    rows = [
        *L4_ASG,
        R(
            "command:local:Command",
            "c",
            {"create": "aws autoscaling update-auto-scaling-group --auto-scaling-group-name web-asg --max-size 100"},
        ),
    ]
    assert mandatory(pack_stub, rows, BUDGET) == []


SIXTH_BLOCKED = {
    "ovh-flavor": [R("ovh:CloudProject/instance:Instance", "i", {"flavorName": "h100-380"})],
    "nebius-preset": [
        R(
            "nebius:compute/v1:Instance",
            "i",
            {"resources": {"platform": "gpu-h100-sxm", "preset": "8gpu-128vcpu-1600gb"}},
        )
    ],
    "json-patch-escaped-gpu": [
        R(
            "kubernetes:kyverno.io/v1:ClusterPolicy",
            "p",
            {
                "spec": {
                    "rules": [
                        {
                            "mutate": {
                                "patchesJson6902": json.dumps(
                                    [
                                        {
                                            "op": "add",
                                            "path": "/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu",
                                            "value": "8",
                                        }
                                    ]
                                )
                            }
                        }
                    ]
                }
            },
        )
    ],
    "gcp-instance-from-external-machine-image": [
        R(
            "gcp:compute/instanceFromMachineImage:InstanceFromMachineImage",
            "vm",
            {"sourceMachineImage": "projects/p/global/machineImages/a3-image"},
        )
    ],
    "ecs-in-list-expression": [
        R(
            "aws:ecs/service:Service",
            "s",
            {
                "placementConstraints": [
                    {"type": "memberOf", "expression": "attribute:ecs.instance-type in [p5.48xlarge, p4d.24xlarge]"}
                ]
            },
        )
    ],
}
SIXTH_GREEN = {
    "service-type": [
        R("kubernetes:core/v1:Service", "web", {"spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}})
    ],
    "disk-types": [
        R("gcp:compute/disk:Disk", "d", {"type": "pd-ssd", "size": 100}),
        R("aws:ebs/volume:Volume", "v", {"type": "gp3", "size": 100}),
    ],
    "burstable-graviton": [R("aws:ec2/instance:Instance", "t4g", {"instanceType": "t4g.micro", **SECURE})],
}


# --- every table above, one test per verdict -------------------------------------------------------------------
def _merged(*tables: dict) -> dict:
    out: dict = {}
    for table in tables:
        assert not set(table) & set(out), set(table) & set(out)  # a case name is one case
        out.update(table)
    return out


ALL_BLOCKED = _merged(BLOCKED, MORE_BLOCKED, THIRD_BLOCKED, MORE_DEVICES, SIXTH_BLOCKED)
ALL_COUNTED = _merged(COUNTED, THIRD_COUNTED, MORE_SCALERS)  # blocked under BUDGET
ALL_GREEN = _merged(GREEN, MORE_GREEN, SIXTH_GREEN)
GREEN_UNDER_BUDGET = THIRD_GREEN


# The policies that judge GPU capacity: a case blocked only by host security (IMDSv2, encrypted disks) would be
# blocked for the wrong reason.


def _judged(stub, rows, config=None) -> set[str]:
    """The GPU-judging policies with a mandatory finding on the rows (host security left out)."""
    return {p for p, _ in mandatory(stub, rows, config)} - HOST_SECURITY


@pytest.mark.parametrize("case", sorted(ALL_BLOCKED))
def test_blocked(pack_stub, case):
    assert _judged(pack_stub, ALL_BLOCKED[case] or _layout_pinned()), case


@pytest.mark.parametrize("case", sorted(ALL_COUNTED))
def test_all_capacity_counts(pack_stub, case):
    """The budget is what blocks: each case costs over $20/h only as counted (what else blocks is beside it)."""
    assert "gpusizer-gpu-budget" in {p for p, _ in mandatory(pack_stub, ALL_COUNTED[case], BUDGET)}, case


@pytest.mark.parametrize("case", sorted(ALL_GREEN))
def test_green(pack_stub, case):
    assert mandatory(pack_stub, ALL_GREEN[case]) == [], case


@pytest.mark.parametrize("case", sorted(GREEN_UNDER_BUDGET))
def test_green_under_a_budget(pack_stub, case):
    assert mandatory(pack_stub, GREEN_UNDER_BUDGET[case], BUDGET) == [], case


def test_a_quantity_in_millis_reads_as_whole_gpus(pack_stub):
    """ "8000m" GPUs is 8 (Kubernetes resource.Quantity): 8 x H100 = 8 x 79.65 GiB, the catalog's driver figure."""
    found = [
        m
        for p, m in mandatory(pack_stub, THIRD_BLOCKED["gpu-quantity-in-millis-on-h100"])
        if p == "gpusizer-no-overprovisioning"
    ]
    assert any("8 x H100 = 637 GiB" in m for m in found), found


# --- seventh round: types built at run time, shapes computed at preview, the rollout's surge -------------------
BUILT_AT_RUN_TIME = {
    "printf": "aws ec2 run-instances --image-id ami-1 --instance-type \"$(printf 'p%d.%dxlarge' 5 48)\"\n",
    "rev": "T=$(echo egralx84.5p | rev)\naws ec2 run-instances --instance-type $T --count 8\n",
    "fetched": "gcloud compute instances create x --machine-type=$(curl -s http://cfg/mt) --zone us-central1-a\n",
    "cli-input-built": 'aws ec2 run-instances --cli-input-json "$(python3 gen.py)"\n',
    "boto3-from-env": (
        'python3 - <<PY\nimport boto3, os\nt = os.environ["T"]\n'
        'boto3.client("ec2").run_instances(\n    ImageId="ami-1",\n    InstanceType=t,\n    MinCount=1, MaxCount=1)\nPY\n'
    ),
}
ANSI_C_HEX = "aws ec2 run-instances --instance-type $'\\x70\\x35\\x2e\\x34\\x38\\x78\\x6c\\x61\\x72\\x67\\x65'\n"  # bash decodes it to p5.48xlarge
READABLE_LAUNCHES = {
    "literal-cpu": "aws ec2 run-instances --instance-type m5.large\n",
    "variable-set-to-cpu": 'T=m5.large\naws ec2 run-instances --instance-type "$T"\n',
    "default-cpu": "aws ec2 run-instances --instance-type ${T:-c6i.large}\n",
    "boto3-literal-variable": (
        'python3 - <<PY\nimport boto3\nt = "m5.large"\nboto3.client("ec2").run_instances(InstanceType=t, MinCount=1)\nPY\n'
    ),
    "variable-from-the-resource": "aws ec2 run-instances --instance-type $WEB_TYPE\n",  # WEB_TYPE given below
}


@pytest.mark.parametrize("case", sorted(BUILT_AT_RUN_TIME))
def test_a_launch_whose_type_is_built_at_run_time_fails_closed(pack_stub, case):
    found = mandatory(pack_stub, _user_data(BUILT_AT_RUN_TIME[case]))
    assert any("built at run time" in m for _, m in found), (case, found)


@pytest.mark.parametrize("case", sorted(READABLE_LAUNCHES))
def test_a_launch_whose_type_reads_as_a_cpu_literal_passes(pack_stub, case):
    rows = [
        R(
            "command:local:Command",
            "c",
            {"create": READABLE_LAUNCHES[case], "environment": {"WEB_TYPE": "m5.large"}},
        )
    ]
    assert mandatory(pack_stub, rows) == [], case


def test_the_ansi_c_type_is_read_as_the_type_bash_runs(pack_stub):
    found = mandatory(pack_stub, _user_data(ANSI_C_HEX))
    assert any("p5.48xlarge" in m for _, m in found), found


def _surging(replicas, strategy=None):
    typ, name, props, deps, parent = L4_DEP
    spec = {**props["spec"], "replicas": replicas, **({"strategy": strategy} if strategy else {})}
    return [R(typ, name, {**props, "spec": spec}, deps, parent)]


def test_a_rolling_update_counts_its_surge_in_the_budget(pack_stub):
    """15 one-L4 pods fit $20/h; a 100% surge runs 30 of them during a rollout, twice what Recreate runs. One L4
    pod is priced at the cheapest one-L4 host (g2-standard-4, us-east4, $0.70452/h in gpusizer/data/catalog/gcp.csv):
    15 x = $10.57, 19 x (the default 25% surge) = $13.39, 30 x = $21.14."""
    recreate = mandatory(pack_stub, _surging(15, {"type": "Recreate"}), BUDGET)
    assert recreate == []
    (over,) = [m for p, m in mandatory(pack_stub, _surging(15, {"rollingUpdate": {"maxSurge": "100%"}}), BUDGET)]
    assert "rolling updates at their surge" in over
    # the default surge (25% of 15, rounded up: 4) keeps 19 pods within the budget
    assert mandatory(pack_stub, _surging(15), BUDGET) == []


OUTSIDE_THE_STACK = {
    # Bedrock model units are dedicated accelerator capacity, billed per unit-hour
    "bedrock-provisioned-throughput": [
        R(
            "aws:bedrock/provisionedModelThroughput:ProvisionedModelThroughput",
            "pt",
            {"modelArn": "arn:aws:bedrock:us-east-1::foundation-model/meta.llama3-70b", "modelUnits": 8},
        )
    ],
    # a CloudFormation template fetched from S3: what it launches is not in the stack
    "cloudformation-template-url": [
        R(
            "aws:cloudformation/stack:Stack",
            "s",
            {"name": "gpu", "templateUrl": "https://s3.amazonaws.com/bucket/gpu-fleet.yaml"},
        )
    ],
}


@pytest.mark.parametrize("case", sorted(OUTSIDE_THE_STACK))
def test_capacity_bought_outside_the_stack_is_blocked(pack_stub, case):
    assert _judged(pack_stub, OUTSIDE_THE_STACK[case]), case


def test_a_reviewed_cloudformation_template_url_may_be_allowed(pack_stub):
    allow = {
        "gpusizer-no-overprovisioning": {
            "allowTemplates": [{"template": "https://s3.amazonaws.com/bucket/*", "reason": "CPU only, reviewed"}]
        }
    }
    assert mandatory(pack_stub, OUTSIDE_THE_STACK["cloudformation-template-url"], allow) == []


@pytest.mark.parametrize(
    "key, expected",
    [
        # rendered: the child asks for 8 GPUs and is judged as the Deployment it is
        ('{{ printf "%s.com/%s" .Values.v .Values.k }}', "rel/Deployment"),
        ("{{ .Values.vendor }}.com/gpu", "rel/Deployment"),
        # an include defined nowhere is not rendered: the key it builds is evidence on the component
        ('{{ include "c.gpu" . }}', "a key a template action builds"),
    ],
)
def test_a_chart_key_a_template_action_builds_where_devices_are_asked_for_is_evidence(
    pack_stub, tmp_path, key, expected
):
    template = TEMPLATE.replace(
        "{{ toYaml .Values.resources | indent 10 }}", f"          limits:\n            {key}: 8"
    )
    chart = _chart(tmp_path / "built", "image: vllm\nv: nvidia\nk: gpu\nvendor: nvidia\n", template)
    found = mandatory(pack_stub, [R(HELM, "rel", {"chart": chart})])
    assert any(expected in m for _, m in found), found


def test_a_chart_label_a_template_action_builds_is_no_evidence(pack_stub, tmp_path):
    template = TEMPLATE.replace("  name: {{ .Release.Name }}\n", "  name: x\n  labels:\n    {{ .Values.k }}: web\n")
    cpu = _chart(tmp_path / "labels", "image: nginx\nk: team\nresources:\n  limits:\n    cpu: 1\n", template)
    assert mandatory(pack_stub, [R(HELM, "rel", {"chart": cpu})]) == []


def _pinned_pods(name, replicas, gpus, instance_type="g6.48xlarge"):
    typ, _, props, deps, parent = L4_DEP
    template = pod({"nvidia.com/gpu": gpus}, {"node.kubernetes.io/instance-type": instance_type}, need="18")
    spec = {"replicas": replicas, "strategy": {"type": "Recreate"}, "template": template}
    return R(typ, name, {**props, "metadata": {**props["metadata"], "name": name}, "spec": spec}, deps, parent)


def test_a_pod_pinning_an_eight_gpu_type_buys_the_whole_node(pack_stub):
    """g6.48xlarge holds 8 L4s (DescribeInstanceTypes, the packaged catalog): a pod of one leaves 7 idle."""
    found = [m for p, m in mandatory(pack_stub, [_pinned_pods("one", 1, 1)]) if p == "gpusizer-no-overprovisioning"]
    assert any("7 of 8 GPUs stay idle" in m for m in found), found


def test_pods_that_fill_the_pinned_node_together_pass(pack_stub):
    # two workloads of 2 x 1 L4 pin the same type: 4 of its 8 GPUs asked, within 2x
    rows = [_pinned_pods("a", 2, 1), _pinned_pods("b", 2, 1)]
    assert not [m for p, m in mandatory(pack_stub, rows) if p == "gpusizer-no-overprovisioning"]
    # a one-GPU type pinned by a one-GPU pod is the pod's own size
    assert not [m for p, m in mandatory(pack_stub, [_pinned_pods("c", 1, 1, "g6.xlarge")])]


L4_CHART_TEMPLATE = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "c.fullname" . }}
  annotations:
    gpusizer.io/required-gpu-memory-gib: {{ .Values.requiredGib | quote }}
spec:
  replicas: {{ .Values.replicas | default 1 }}
  template:
    metadata:
      annotations:
        gpusizer.io/required-gpu-memory-gib: {{ .Values.requiredGib | quote }}
    spec:
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
      - name: server
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
        resources:
          {{- toYaml .Values.resources | nindent 10 }}
"""
L4_CHART_VALUES = """replicas: 1
requiredGib: 18
image: {repository: vllm/vllm-openai, tag: v0.6.3}
nodeSelector: {nvidia.com/gpu.product: NVIDIA-L4}
resources: {limits: {nvidia.com/gpu: 1}}
"""


def _l4_chart(root):
    return _helm_create_chart(root, L4_CHART_TEMPLATE)


def test_a_right_sized_local_chart_is_rendered_and_passes_without_an_allow(pack_stub, tmp_path):
    assert mandatory(pack_stub, [R(HELM, "rel", {"chart": _l4_chart(tmp_path / "l4")})]) == []


def test_a_local_chart_is_rendered_with_the_release_values(pack_stub, tmp_path):
    """The release's values override the chart's: an H100 and 8 GPUs asked through them are judged."""
    values = {
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        "resources": {"limits": {"nvidia.com/gpu": 8}},
    }
    found = mandatory(pack_stub, [R(HELM, "rel", {"chart": _l4_chart(tmp_path / "h100"), "values": values})])
    assert any("8 x H100" in m for p, m in found if p == "gpusizer-no-overprovisioning"), found


def test_a_monitoring_daemonset_chart_is_rendered_and_passes(pack_stub, tmp_path):
    template = """apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: dcgm
spec:
  template:
    spec:
      runtimeClassName: nvidia
      nodeSelector: {nvidia.com/gpu.present: "true"}
      containers:
      - name: exporter
        image: {{ .Values.image }}
        env:
        - {name: NVIDIA_VISIBLE_DEVICES, value: all}
"""
    chart = _chart(tmp_path / "dcgm", "image: nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5\n", template)
    assert mandatory(pack_stub, [R(HELM, "dcgm", {"chart": chart})]) == []


def test_a_child_a_real_preview_sent_is_not_counted_twice(pack_stub):
    """A v2 ConfigGroup registers its children in a real preview: the manifest expanded offline and the child
    sent are one Deployment. 15 one-L4 pods fit $20/h (test_a_rolling_update_counts_its_surge_in_the_budget);
    counted twice they would not."""
    ((typ, name, props, _, _),) = _surging(15, {"type": "Recreate"})
    cg = "kubernetes:yaml/v2:ConfigGroup"
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", **props}
    rows = [R(cg, "web", {"objs": [doc]}), R(typ, "web:ml/llm", props, (), (cg, "web"))]
    assert mandatory(pack_stub, rows, BUDGET) == []
    offline = [R(cg, "web", {"objs": [doc, {**doc, "metadata": {**doc["metadata"], "name": "llm2"}}]})]
    assert "gpusizer-gpu-budget" in {p for p, _ in mandatory(pack_stub, offline, BUDGET)}  # two, expanded


NODES_BY_NAME = {
    # a GKE compute class chosen by a name that names a GPU: its nodes are GPU nodes the pack cannot see
    "compute-class-named-for-a-gpu": {
        "nodeSelector": {"cloud.google.com/compute-class": "h100-class"},
        "containers": [{"name": "c"}],
    },
    # a pod's DRA claim by template name: the devices are in the claim
    "dra-claim-by-template-name": {
        "resourceClaims": [{"name": "g", "resourceClaimTemplateName": "eight-h100"}],
        "containers": [{"name": "c", "resources": {"claims": [{"name": "g"}]}}],
    },
}


@pytest.mark.parametrize("case", sorted(NODES_BY_NAME))
def test_gpus_chosen_by_a_name_are_evidence(pack_stub, case):
    rows = [R(DEP, "d", deployment({"metadata": {"annotations": {cases.K8S_REQ: "20"}}, "spec": NODES_BY_NAME[case]}))]
    assert any(p == "gpusizer-gpu-evidence" for p, _ in mandatory(pack_stub, rows)), case


def test_a_cpu_compute_class_is_no_evidence(pack_stub):
    spec = {"nodeSelector": {"cloud.google.com/compute-class": "Scale-Out"}, "containers": [{"name": "c"}]}
    assert mandatory(pack_stub, [R(DEP, "d", deployment({"metadata": {"annotations": {}}, "spec": spec}))]) == []


@pytest.mark.parametrize("where", ["templates/gpu.tpl", "templates/gpu.txt", "crds/gpu.yaml"])
def test_every_file_helm_applies_from_a_local_chart_is_judged(pack_stub, tmp_path, where):
    """Helm renders every file under templates/ not named `_*` (whatever its extension) and installs crds/ as
    they are: a GPU Deployment hidden in either is applied."""
    chart = pathlib.Path(_l4_chart(tmp_path / "c"))
    hidden = L4_CHART_TEMPLATE.replace('{{ include "c.fullname" . }}', "hidden").replace(
        "{{- toYaml .Values.resources | nindent 10 }}", "  limits: {nvidia.com/gpu: 8}"
    )
    if where.startswith("crds/"):
        hidden = hidden.replace("{{ .Values.requiredGib | quote }}", '"18"').replace(
            "{{- with .Values.nodeSelector }}\n      nodeSelector:\n        {{- toYaml . | nindent 8 }}\n      {{- end }}\n",
            "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-L4}\n",
        )
        hidden = hidden.replace('"{{ .Values.image.repository }}:{{ .Values.image.tag }}"', "vllm")
        hidden = hidden.replace("{{ .Values.replicas | default 1 }}", "1")
    (chart / where).parent.mkdir(exist_ok=True)
    (chart / where).write_text(hidden)
    assert _judged(pack_stub, [R(HELM, "rel", {"chart": str(chart)})]), where


def test_a_chart_with_dependencies_is_not_taken_as_rendered(tmp_path):
    chart = pathlib.Path(_l4_chart(tmp_path / "deps"))
    assert charts.rendered(str(chart), None, [], "rel", "default")  # renders alone
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: c\nversion: 0.1.0\ndependencies:\n"
        "- {name: vllm, version: 0.1.0, repository: https://charts.example.com}\n"
    )
    assert charts.rendered(str(chart), None, [], "rel", "default") is None  # fetched charts are not rendered


def test_an_sdk_launch_from_a_mapping_built_elsewhere_fails_closed(pack_stub):
    script = "python3 - <<PY\nimport boto3\nparams = load()\nboto3.client('ec2').run_instances(**params)\nPY\n"
    assert any("built at run time" in m for _, m in mandatory(pack_stub, _user_data(script)))


@pytest.mark.parametrize(
    "props, gpu",
    [
        ({"nodeClass": "h100-8x"}, True),
        ({"hardware": "8x A100 80GB"}, True),
        ({"computeTarget": "gpu-l40s"}, True),
        ({"instanceName": "llm-h100-server"}, False),  # a name, not a size
        ({"serverId": "a100-rack-3"}, False),
    ],
)
def test_keys_that_size_capacity_in_other_words(pack_stub, props, gpu):
    rows = [R("somecloud:index:Machine", "m", props)]
    assert bool(mandatory(pack_stub, rows)) is gpu, props


@pytest.mark.slow
def test_a_stack_reference_previews_offline(tmp_path):
    """Another stack's outputs cannot be read offline: a CPU stack that reads one previews, and a type taken
    from one is unknown at preview, so a resource that declares GPU capacity with it fails closed."""
    program = """
        import pulumi
        import pulumi_aws as aws
        net = pulumi.StackReference("org/network/prod")
        secure = dict(metadata_options={"http_tokens": "required"}, root_block_device={"encrypted": True})
        aws.ec2.Instance("web", instance_type="t3.micro", ami="ami-1", subnet_id=net.get_output("subnet"), **secure)
        """
    ok = _preview(tmp_path, {}, program)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    program = program.rstrip() + (
        '\n        aws.ec2.Instance("gpu", instance_type=net.get_output("type"), ami="ami-1",\n'
        '                         tags={"gpusizer:required-gpu-memory-gib": "20"}, **secure)\n'
    )
    blocked = _preview(tmp_path, {}, program)
    assert blocked.returncode == 1 and "declares GPU capacity" in blocked.stdout, blocked.stdout + blocked.stderr


@pytest.mark.slow
@pytest.mark.parametrize("when", ["written-by-the-program", "left-by-an-earlier-run"])
def test_the_gate_never_reads_a_refresh_cache_the_judged_program_can_write(tmp_path, when):
    """A "refreshed" catalog holding only p5.48xlarge would leave the pack no cheaper offer to name: the pack
    judges with its packaged snapshot, whose g6.xlarge holds 20 GiB, whatever the refresh cache holds."""
    poison = """
        import datetime
        from gpusizer.catalog import cache
        from gpusizer.catalog.offer import Offer
        at = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)
        only_p5 = Offer(provider="aws", region="us-east-1", zone=None, instance_type="p5.48xlarge", gpu="H100",
                        gpu_count=8, gpu_memory_gib=79.65, vcpus=192, ram_gib=2048, on_demand_usd=55.04,
                        spot_usd=None, source="poisoned", as_of=at.date().isoformat())
        cache.write(cache.CachedProvider("aws", (only_p5,), at, {}))
        """
    program = """
        import pulumi_aws as aws
        aws.ec2.Instance("big", instance_type="p5.48xlarge", ami="ami-1",
                         tags={"gpusizer:required-gpu-memory-gib": "20"},
                         metadata_options={"http_tokens": "required"}, root_block_device={"encrypted": True})
        """
    env = {**os.environ, "GPUSIZER_CACHE_DIR": str(tmp_path / "cache")}
    if when == "left-by-an-earlier-run":
        subprocess.run([sys.executable, "-c", textwrap.dedent(poison)], env=env, check=True, cwd=REPO)
    else:
        program = poison + program
    r = _preview(tmp_path, {}, program, env=env)
    assert r.returncode == 1 and "g6.xlarge" in r.stdout, r.stdout + r.stderr
    assert any((tmp_path / "cache").iterdir())  # the cache was written


# --- eighth round (fresh sets G and H, and a cloud engineer's false-positive hunt) -----------------------------
CMD = "command:local:Command"


def _cmd(text, **props):
    return [R(CMD, "c", {"create": text, **props})]


EIGHTH_BLOCKED = {
    # text read as the tools read it
    "type-after-a-long-gap": _cmd("aws ec2 run-instances --instance-type" + " " * 60 + "p5.48xlarge"),
    "second-type-of-a-list": _cmd("aws ec2 create-fleet --instance-types t3.large p5.48xlarge"),
    "type-in-a-comma-list": _cmd("aws eks create-nodegroup --instance-types t3.large,p5.48xlarge"),
    "sagemaker-ml-prefix": _cmd("python3 train.py --instance_type='ml.p4d.24xlarge'"),
    "python-concatenation": _cmd("python3 -c \"t = 'p4d' + '.24xlarge'; ec2.run_instances(InstanceType=t)\""),
    "json-unicode-escape": _cmd('aws ec2 run-instances --cli-input-json \'{"InstanceType": "p5\\u002e48xlarge"}\''),
    "gcloud-accelerator-count-first": _cmd(
        "gcloud compute instances create x --machine-type n1-standard-8 --accelerator count=8,type=nvidia-tesla-v100"
    ),
    # a name/value option naming types (Elastic Beanstalk's InstanceTypes takes a comma list)
    "option-value-list": [
        R(
            "aws:elasticbeanstalk/environment:Environment",
            "e",
            {
                "settings": [
                    {"namespace": "aws:ec2:instances", "name": "InstanceTypes", "value": "t3.micro,p5.48xlarge"}
                ]
            },
        )
    ],
    # a device plugin's resource named for a GPU model, an Azure N-series family, an `accel` field
    "resource-named-for-a-gpu": [R(DEP, "d", deployment(pod({"example.com/h100": 8})))],
    "azure-gpu-family-selector": [R(DEP, "d", deployment(pod({"cpu": 1}, {"karpenter.azure.com/sku-family": "ND"})))],
    "accel-field": [R("acme:index:Inference", "i", {"accel": "h100", "replicas": 4})],
    # other clouds' GPU sizes
    "tencent-gpu-type": [R("tencentcloud:Instance/instance:Instance", "i", {"instanceType": "GN7.20XLARGE320"})],
    "huawei-gpu-flavor": [R("huaweicloud:Ecs/instance:Instance", "i", {"flavorId": "p2s.16xlarge.8"})],
    "ovh-v100-flavor": [R("ovh:CloudProject/instance:Instance", "i", {"flavorName": "t2-le-180"})],
    # an event target starts work with the input it carries: it is no record
    "event-target-input": [
        R(
            "aws:cloudwatch/eventTarget:EventTarget",
            "t",
            {"arn": "arn:aws:lambda:x", "input": '{"InstanceType": "p5.48xlarge"}'},
        )
    ],
    # a GCP MIG's flexibility policy launches types its template does not hold
    "mig-flexibility-policy": [
        R("gcp:compute/instanceTemplate:InstanceTemplate", "t", {"name": "web", "machineType": "n2-standard-4"}),
        R(
            "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager",
            "m",
            {
                "region": "us-central1",
                "targetSize": 4,
                "versions": [{"instanceTemplate": "web"}],
                "instanceFlexibilityPolicy": {"instanceSelections": {"gpu": {"machineTypes": ["a3-highgpu-8g"]}}},
            },
        ),
    ],
    # a template that user data launches from, outside the stack
    "user-data-launches-an-outside-template": _user_data(
        "aws ec2 run-instances --launch-template LaunchTemplateName=gpu-8x --count 4\n"
    ),
}
EIGHTH_GREEN = {
    "describe-a-template": _cmd("aws ec2 describe-launch-template-versions --launch-template-name web"),
    "new-template-version": _cmd(
        "aws ec2 create-launch-template-version --launch-template-name web --source-version 1 "
        '--launch-template-data \'{"InstanceType": "t3.small"}\''
    ),
    "self-defaulted-variable": _cmd(
        'INSTANCE_TYPE="${INSTANCE_TYPE:-t3.small}"\naws ec2 run-instances --instance-type "$INSTANCE_TYPE"'
    ),
    "for-loop-over-cpu-types": _cmd("for t in t3.micro t3.small; do aws ec2 run-instances --instance-type $t; done"),
    "python-getenv-default": _cmd(
        "python3 -c \"import os, boto3; boto3.client('ec2').run_instances("
        "InstanceType=os.getenv('INSTANCE_TYPE', 't3.micro'), MinCount=1, MaxCount=1)\""
    ),
    "non-gpu-pool": [
        R(
            DEP,
            "d",
            deployment(
                {
                    "metadata": {"annotations": {}},
                    "spec": {"nodeSelector": {"node-pool": "non-gpu"}, "containers": [{"name": "c"}]},
                }
            ),
        )
    ],
    "prose-listing-types": _cmd("echo 'sizes we considered: t3.large, p5.48xlarge'"),
}


@pytest.mark.parametrize("case", sorted(EIGHTH_BLOCKED))
def test_eighth_round_blocked(pack_stub, case):
    assert _judged(pack_stub, EIGHTH_BLOCKED[case]), case


@pytest.mark.parametrize("case", sorted(EIGHTH_GREEN))
def test_eighth_round_green(pack_stub, case):
    assert mandatory(pack_stub, EIGHTH_GREEN[case]) == [], case


def _l4_group(**extra):
    lt = R(LT, "lt", {"instanceType": "g6.xlarge", "name": "small", **SECURE, "tags": {cases.REQ: "18"}})
    props = {
        "name": "g",
        "maxSize": 20,
        "launchTemplate": {"name": "small"},
        "tags": [{"key": cases.REQ, "value": "18"}],
    }
    return [lt, R(ASG, "asg", {**props, **extra})]


def _l4_pool(**extra):
    labels = {cases.GCP_REQ: "18"}
    props = {
        "cluster": "c",
        "location": "us-central1-a",
        "nodeCount": 12,
        "nodeConfig": {"machineType": "g2-standard-4", "labels": labels},
    }
    return [R("gcp:container/nodePool:NodePool", "np", {**props, **extra})]


def _l4_mig(**extra):
    t = R(
        "gcp:compute/instanceTemplate:InstanceTemplate",
        "t",
        {"name": "l4", "machineType": "g2-standard-4", "labels": {cases.GCP_REQ: "18"}},
    )
    m = {"zone": "us-central1-a", "targetSize": 12, "versions": [{"instanceTemplate": "l4"}]}
    return [t, R("gcp:compute/instanceGroupManager:InstanceGroupManager", "m", {**m, **extra})]


# (as written: within the budget; with the update: over it). Hand-derived against the packaged catalog: 20 x
# g6.xlarge at $0.8048/h (gpusizer/data/catalog/aws.csv, us-east-1) = $16.10 < $20, doubled by an instance
# refresh at 200% = $32.19; 12 x g2-standard-4 (one L4, $0.70452/h, the cheapest g2-standard-4 row of
# gpusizer/data/catalog/gcp.csv, us-east4) = $8.45 < $10, with a blue-green upgrade or a surge of 12 = $16.91.
UPDATES = {
    "asg-instance-refresh-200pct": (
        _l4_group(),
        _l4_group(instanceRefresh={"strategy": "Rolling", "preferences": {"maxHealthyPercentage": 200}}),
        20,
    ),
    "gke-blue-green-upgrade": (_l4_pool(), _l4_pool(upgradeSettings={"strategy": "BLUE_GREEN"}), 10),
    "gke-surge-upgrade": (_l4_pool(), _l4_pool(upgradeSettings={"maxSurge": 12, "maxUnavailable": 0}), 10),
    "mig-update-surge": (_l4_mig(), _l4_mig(updatePolicy={"type": "PROACTIVE", "maxSurgeFixed": 12}), 10),
}


@pytest.mark.parametrize("case", sorted(UPDATES))
def test_an_update_runs_its_surge_and_the_budget_counts_it(pack_stub, case):
    plain, updating, usd = UPDATES[case]
    budget = {"gpusizer-gpu-budget": {"enforcementLevel": "mandatory", "maxHourlyUsd": usd}}
    assert "gpusizer-gpu-budget" not in {p for p, _ in mandatory(pack_stub, plain, budget)}, case
    assert "gpusizer-gpu-budget" in {p for p, _ in mandatory(pack_stub, updating, budget)}, case


def test_a_job_patch_raising_parallelism_counts(pack_stub):
    job = {
        "metadata": {"name": "j", "namespace": "ml"},
        "spec": {"parallelism": 1, "template": L4_DEP[2]["spec"]["template"]},
    }
    rows = [R("kubernetes:batch/v1:Job", "j", job)]
    patch = R(
        "kubernetes:batch/v1:JobPatch",
        "jp",
        {"metadata": {"name": "j", "namespace": "ml"}, "spec": {"parallelism": 200}},
    )
    assert "gpusizer-gpu-budget" not in {p for p, _ in mandatory(pack_stub, rows, BUDGET)}
    assert "gpusizer-gpu-budget" in {p for p, _ in mandatory(pack_stub, [*rows, patch], BUDGET)}


def test_a_manifest_larger_than_the_pack_reads_fails_closed(pack_stub):
    padding = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pad"}, "data": {"x": "a" * 1_100_000}}
    rows = [R("kubernetes:yaml/v2:ConfigGroup", "cg", {"yaml": json.dumps(padding)})]
    assert any("more than" in m for _, m in mandatory(pack_stub, rows))


def test_a_kustomize_component_is_read(pack_stub, tmp_path):
    base, comp = tmp_path / "base", tmp_path / "gpu"
    base.mkdir(), comp.mkdir()
    (base / "deploy.yaml").write_text(
        json.dumps(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "llm"},
                "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}},
            }
        )
    )
    (base / "kustomization.yaml").write_text("resources: [deploy.yaml]\ncomponents: [../gpu]\n")
    (comp / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches: [{path: patch.yaml}]\n"
    )
    patch = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "llm"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}},
    }
    (comp / "patch.yaml").write_text(json.dumps(patch))
    assert _judged(pack_stub, [R("kubernetes:kustomize/v2:Directory", "k", {"directory": str(base)})])


def test_a_gpu_count_label_buys_nodes_of_that_many_gpus(pack_stub):
    """A one-L4 pod selecting `nvidia.com/gpu.count: 8` makes an autoscaler buy an eight-GPU node."""
    template = pod(
        {"nvidia.com/gpu": 1}, {"nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.count": "8"}, need="18"
    )
    row = _one_l4_replica("g", template)
    assert any("7 of 8 GPUs stay idle" in m for _, m in mandatory(pack_stub, [row]))


HELM_CREATE_HELPERS = """{{- define "c.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "c.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}
"""


def _helm_create_chart(root, template, values=L4_CHART_VALUES, files=None):
    chart = pathlib.Path(_chart(root, values, template))
    (chart / "templates" / "_helpers.tpl").write_text(HELM_CREATE_HELPERS)
    for name, text in (files or {}).items():
        (chart / name).parent.mkdir(parents=True, exist_ok=True)
        (chart / name).write_text(text)
    return str(chart)


def test_a_scaffolded_chart_with_variables_renders_and_passes(pack_stub, tmp_path):
    """`helm create`'s helpers use variables and contains; env comes from `range $k, $v`."""
    template = L4_CHART_TEMPLATE.replace(
        "        image:",
        "        env:\n        {{- range $k, $v := .Values.env }}\n        - {name: {{ $k }}, value: {{ $v | quote }}}\n        {{- end }}\n        image:",
    )
    chart = _helm_create_chart(tmp_path / "c", template, L4_CHART_VALUES + "env: {A: '1', B: '2'}\n")
    assert mandatory(pack_stub, [R(HELM, "rel", {"chart": chart})]) == []


@pytest.mark.parametrize("trick", ["files-get", "tpl", "variable-dict"])
def test_gpus_a_chart_builds_with_files_tpl_or_variables_are_judged(pack_stub, tmp_path, trick):
    limits = {
        "files-get": (
            '{{- .Files.Get "files/limits.yaml" | nindent 12 }}',
            {"files/limits.yaml": "nvidia.com/gpu: 8"},
            "",
        ),
        "tpl": ("{{ tpl .Values.key . }}: 8", {}, 'key: "{{ .Values.vendor }}.com/gpu"\nvendor: nvidia\n'),
        "variable-dict": (
            '{{- $r := dict (printf "%s/gpu" "nvidia.com") 8 }}{{ toYaml $r | nindent 12 }}',
            {},
            "",
        ),
    }[trick]
    body, files, extra = limits
    template = L4_CHART_TEMPLATE.replace("{{- toYaml .Values.resources | nindent 10 }}", "limits:\n            " + body)
    chart = _helm_create_chart(tmp_path / "c", template, L4_CHART_VALUES + extra, files)
    found = mandatory(pack_stub, [R(HELM, "rel", {"chart": chart})])
    assert any("8 x L4" in m for p, m in found if p == "gpusizer-no-overprovisioning"), (trick, found)


def test_a_subchart_is_rendered_with_its_scoped_values(pack_stub, tmp_path):
    parent = pathlib.Path(_l4_chart(tmp_path / "parent"))
    sub = parent / "charts" / "worker"
    sub.mkdir(parents=True)
    (sub / "Chart.yaml").write_text("apiVersion: v2\nname: worker\nversion: 0.1.0\n")
    (sub / "values.yaml").write_text("gpus: 1\nnodeSelector: {nvidia.com/gpu.product: NVIDIA-L4}\n")
    (sub / "templates").mkdir()
    worker = L4_CHART_TEMPLATE.replace('{{ include "c.fullname" . }}', "worker").replace(
        "{{- toYaml .Values.resources | nindent 10 }}", "  limits: {nvidia.com/gpu: {{ .Values.gpus }}}"
    )
    (sub / "templates" / "d.yaml").write_text(worker.replace(".Values.requiredGib", ".Values.global.requiredGib"))
    values = {"global": {"requiredGib": 18}, "worker": {"gpus": 8}}  # the parent's values scope the subchart's
    found = mandatory(pack_stub, [R(HELM, "rel", {"chart": str(parent), "values": values})])
    assert any("worker" in m and "8 x L4" in m for _, m in found), found


def test_a_release_of_a_local_chart_the_pack_cannot_render_fails_closed(pack_stub, tmp_path):
    template = L4_CHART_TEMPLATE.replace("{{- toYaml .Values.resources | nindent 10 }}", '{{ .Files.Glob "x/*" }}')
    chart = _chart(tmp_path / "c", L4_CHART_VALUES, template)
    found = mandatory(pack_stub, [R(HELM, "rel", {"chart": chart})])
    assert any("cannot render" in m for _, m in found), found


LAUNCHER = "import boto3\nboto3.client('ec2').run_instances(ImageId='ami-1', InstanceType='p5.48xlarge', MinCount=8)\n"
LAMBDA = "aws:lambda/function:Function"


def _code(tmp_path, kind):
    """A function's code or a command's files, as the engine sends them (assets in their wire form)."""
    (tmp_path / "fn").mkdir()
    (tmp_path / "fn" / "index.py").write_text(LAUNCHER)
    if kind == "inline-asset":
        code = {SIG: ARCHIVE, "assets": {"index.py": {SIG: ASSET, "text": LAUNCHER}}}
        return [R(LAMBDA, "f", {"runtime": "python3.12", "handler": "index.handler", "code": code})]
    if kind == "file-archive":
        return [R(LAMBDA, "f", {"runtime": "python3.12", "code": {SIG: ARCHIVE, "path": str(tmp_path / "fn")}})]
    if kind == "command-dir":
        return [R(CMD, "c", {"create": "python3 index.py", "dir": str(tmp_path / "fn")})]
    if kind == "terraform-chdir":
        (tmp_path / "tf").mkdir()
        (tmp_path / "tf" / "main.tf").write_text('resource "aws_instance" "x" {\n  instance_type = "p5.48xlarge"\n}\n')
        return [R(CMD, "c", {"create": f"terraform -chdir={tmp_path / 'tf'} apply -auto-approve"})]
    provider = base64.b64encode(pickle.dumps({"sizes": {"xl": "p5.48xlarge"}})).decode()
    return [R("pulumi-python:dynamic:Resource", "box", {"size": "xl", "__provider": provider})]


@pytest.mark.parametrize("kind", ["inline-asset", "file-archive", "command-dir", "terraform-chdir", "dynamic-provider"])
def test_code_a_resource_runs_is_read(pack_stub, tmp_path, kind):
    """A function's code (inline or a folder), the files a command runs in its folder, a Terraform folder, and a
    dynamic provider's pickled code launch what they name."""
    assert any("p5.48xlarge" in m for _, m in mandatory(pack_stub, _code(tmp_path, kind))), kind


def test_a_function_whose_code_launches_nothing_passes(pack_stub):
    code = {SIG: ARCHIVE, "assets": {"index.py": {SIG: ASSET, "text": "def handler(e, c):\n    return {'ok': 1}\n"}}}
    assert mandatory(pack_stub, [R(LAMBDA, "f", {"runtime": "python3.12", "code": code})]) == []


def test_an_autoscaler_finds_a_workload_whose_namespace_is_computed(pack_stub):
    """20 one-L4 pods cost $14.09/h (the catalog's cheapest one-L4 host: g2-standard-4, us-east4, $0.70452/h in
    gpusizer/data/catalog/gcp.csv), over a $10 budget: the HPA
    targets the workload by name and kind while its namespace is unknown at preview."""
    typ, name, props, deps, parent = L4_DEP
    dep = {
        **props,
        "metadata": {**props["metadata"], "namespace": cases.U},
        "spec": {**props["spec"], "strategy": {"type": "Recreate"}},
    }
    hpa = {
        "metadata": {"name": "h", "namespace": "ml"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "llm"}, "maxReplicas": 20},
    }
    rows = [R(typ, name, dep, deps, parent), R("kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "h", hpa)]
    budget = {"gpusizer-gpu-budget": {"enforcementLevel": "mandatory", "maxHourlyUsd": 10}}
    assert "gpusizer-gpu-budget" in {p for p, _ in mandatory(pack_stub, rows, budget)}


def test_pods_kept_one_to_a_node_each_buy_a_whole_pinned_node(pack_stub):
    """Four one-GPU pods pinned to g6.12xlarge (4 L4s) would fill one node, but required anti-affinity on the
    host puts each on its own: 3 of each node's 4 GPUs idle."""
    typ, _, props, deps, parent = L4_DEP
    template = pod({"nvidia.com/gpu": 1}, {"node.kubernetes.io/instance-type": "g6.12xlarge"}, need="18")
    spread = {"labelSelector": {"matchLabels": {"app": "llm"}}, "topologyKey": "kubernetes.io/hostname"}
    together = {"replicas": 4, "strategy": {"type": "Recreate"}, "template": template}
    apart = {
        **together,
        "template": {
            **template,
            "spec": {
                **template["spec"],
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [spread]}},
            },
        },
    }
    assert not [
        m for p, m in mandatory(pack_stub, [R(typ, "t", {**props, "spec": together}, deps, parent)]) if "idle" in m
    ]
    found = mandatory(pack_stub, [R(typ, "a", {**props, "spec": apart}, deps, parent)])
    assert any("3 of 4 GPUs stay idle" in m for _, m in found), found


def _files_of(tmp_path, kind):
    if kind == "cli-input-file":
        (tmp_path / "req.json").write_text('{"InstanceType": "p5.48xlarge", "MinCount": 8}')
        return _cmd(f"aws ec2 run-instances --cli-input-json file://{tmp_path / 'req.json'}")
    if kind == "makefile":
        (tmp_path / "ops").mkdir()
        (tmp_path / "ops" / "Makefile").write_text("burst:\n\taws ec2 run-instances --instance-type p5.48xlarge\n")
        return _cmd(f"make -C {tmp_path / 'ops'} burst")
    if kind == "tpu-vm":
        return _cmd("gcloud compute tpus tpu-vm create x --zone us-central2-b --accelerator-type=v5litepod-256")
    if kind == "gpu-and-count":
        return _cmd("sky launch --gpus H100:8 --num-nodes 4 task.yaml")
    if kind == "argv-list":
        spec = {
            "template": {
                "spec": {"containers": [{"name": "c", "image": "sky", "args": ["sky", "launch", "--gpus", "H100:8"]}]}
            }
        }
        return [R("kubernetes:batch/v1:Job", "j", {"metadata": {"name": "j"}, "spec": spec})]
    (tmp_path / "fn").mkdir()
    (tmp_path / "fn" / "main.py").write_text(LAUNCHER)
    source = {SIG: ARCHIVE, "path": str(tmp_path / "fn")}
    return [R("aws:s3/bucketObjectv2:BucketObjectv2", "o", {"bucket": "b", "key": "fn.zip", "source": source})]


@pytest.mark.parametrize("kind", ["cli-input-file", "makefile", "tpu-vm", "gpu-and-count", "argv-list", "bucket-code"])
def test_what_commands_and_stored_code_launch_is_read(pack_stub, tmp_path, kind):
    assert _judged(pack_stub, _files_of(tmp_path, kind)), kind


def test_helm_values_read_as_helm_reads_them(tmp_path):
    """go-yaml (YAML 1.1) reads `n` as false: `{{ if not .Values.single }}8{{ else }}1{{ end }}` renders 8."""
    template = L4_CHART_TEMPLATE.replace(
        "{{- toYaml .Values.resources | nindent 10 }}",
        "limits: {nvidia.com/gpu: {{ if not .Values.single }}8{{ else }}1{{ end }}}",
    )
    chart = _helm_create_chart(tmp_path / "c", template, L4_CHART_VALUES + "single: n\n")
    (doc,) = charts.rendered(chart, None, [], "rel", "default")
    assert doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 8}


def test_karpenter_size_and_gpu_name_pick_the_node_the_pod_buys(pack_stub):
    selector = {"karpenter.k8s.aws/instance-gpu-name": "l4", "karpenter.k8s.aws/instance-size": "48xlarge"}
    row = _one_l4_replica("k", pod({"nvidia.com/gpu": 1}, selector, need="18"))
    assert any("g6.48xlarge" in m and "7 of 8" in m for _, m in mandatory(pack_stub, [row]))


@pytest.mark.slow
def test_a_program_reads_its_own_projects_config(tmp_path):
    """`pulumi.Config()` reads the namespace of the project Pulumi.yaml names, as the CLI does."""
    (tmp_path / "Pulumi.yaml").write_text("name: myapp\nruntime: python\n")
    program = (
        "import pulumi, pulumi_aws as aws\n"
        'aws.ec2.Instance("web", instance_type=pulumi.Config().require("size"), ami="ami-1",\n'
        '    metadata_options={"http_tokens": "required"}, root_block_device={"encrypted": True})\n'
    )
    r = _preview(tmp_path, {"myapp:size": "t3.micro"}, program)
    assert r.returncode == 0 and "instanceType=t3.micro" in r.stdout, r.stdout + r.stderr


ROUND_J = {
    # launches in other tools' and SDKs' words, with types built at run time or named by enum
    "emr-cluster-printf": _cmd(
        "aws emr create-cluster --instance-groups InstanceGroupType=CORE,InstanceCount=16,"
        "InstanceType=$(printf 'p%s.%s' 5 48xlarge)"
    ),
    "helm-set-gpus": _cmd("helm upgrade --install llm oci://registry/vllm --set gpu.count=8 --set gpu.product=H100"),
    "gcloud-set-machine-type": _cmd('gcloud compute instances set-machine-type vm --machine-type "${F}-highgpu-8g"'),
    "js-sdk-v3-joined-type": _cmd(
        "node -e \"new RunInstancesCommand({ ImageId: 'ami', InstanceType: ['p5','48xlarge'].join('.'), MinCount: 8 })\""
    ),
    "java-sdk-enum": _cmd(
        "cat > Launch.java <<'JAVA'\nec2.runInstances(RunInstancesRequest.builder()"
        ".instanceType(InstanceType.P5_48_XLARGE).build());\nJAVA\njava Launch.java"
    ),
    "go-sdk-enum": _cmd(
        "cat > main.go <<'GO'\nsvc.RunInstances(ctx, &ec2.RunInstancesInput{InstanceType: types.InstanceTypeP548xlarge})"
        "\nGO\ngo run main.go"
    ),
    "machine-type-url-in-code": _cmd(
        "python3 -c \"compute_v1.Instance(name='b', machine_type='zones/us-central1-a/machineTypes/a3-highgpu-8g')\""
    ),
    "url-encoded-query": _cmd("awscurl 'https://ec2.amazonaws.com/?Action=RunInstances&InstanceType=p5%2E48xlarge'"),
    "python-reversed-literal": _cmd(
        "python3 -c \"T = 'egralx84.5p'[::-1]\nimport boto3; boto3.client('ec2').run_instances(InstanceType=T)\""
    ),
    # a LimitRange's defaults hand GPUs to every container of the namespace
    "limit-range-default-gpus": [
        R(
            "kubernetes:core/v1:LimitRange",
            "lr",
            {"spec": {"limits": [{"type": "Container", "default": {"nvidia.com/gpu": 8}}]}},
        )
    ],
    # an object stored under a script's name, which user data fetches and runs
    "stored-script": [
        R(
            "aws:s3/bucketObjectv2:BucketObjectv2",
            "o",
            {"bucket": "b", "key": "boot.sh", "content": "aws ec2 run-instances --instance-type p5.48xlarge --count 4"},
        )
    ],
}


@pytest.mark.parametrize("case", sorted(ROUND_J))
def test_round_j_blocked(pack_stub, case):
    assert _judged(pack_stub, ROUND_J[case]), case


def test_a_limit_range_that_caps_gpus_passes(pack_stub):
    rows = [
        R(
            "kubernetes:core/v1:LimitRange",
            "lr",
            {"spec": {"limits": [{"type": "Container", "max": {"nvidia.com/gpu": 1}}]}},
        )
    ]
    assert mandatory(pack_stub, rows) == []


@pytest.mark.parametrize(
    "command",
    [
        "N=$((20*10))\naws autoscaling update-auto-scaling-group --auto-scaling-group-name gpu-asg --max-size $N",
        'kubectl -n ml patch deployment llm --type json -p \'[{"op":"replace","path":"/spec/replicas","value":200}]\'',
    ],
)
def test_resizes_written_as_arithmetic_or_a_json_patch_count(pack_stub, command):
    base = [L4_DEP] if "kubectl" in command else L4_ASG
    assert "gpusizer-gpu-budget" in {
        p for p, _ in mandatory(pack_stub, [*base, R(CMD, "c", {"create": command})], BUDGET)
    }


def test_an_allow_follows_the_spec_name_not_a_borrowed_resource_name(pack_stub):
    """The platform allowed chat-3b's H100 pin; another workload whose GpuWorkload resource is named chat-3b does
    not inherit it."""
    other = {**PINNED, "name": "summarizer"}
    allow = {
        "gpusizer-no-overprovisioning": {
            "allowPins": [{"workload": "chat-3b", "pins": {"gpus": ["H100"]}, "reason": "reserved"}]
        }
    }
    found = mandatory(pack_stub, [R(WL, "chat-3b", _recorded(other))], allow)
    assert any('placement.gpus: ["H100"]' in m for p, m in found if p == "gpusizer-no-overprovisioning"), found


def test_a_values_key_go_yaml_reads_as_a_boolean_is_not_found_as_in_helm(tmp_path):
    """helm/helm#11054: `size: {x: 1, y: 2}` renders `map[true:2 x:1]`; `.Values.n` finds nothing."""
    template = L4_CHART_TEMPLATE.replace(
        "{{- toYaml .Values.resources | nindent 10 }}", "limits: {nvidia.com/gpu: {{ .Values.n | default 1 }}}"
    )
    chart = _helm_create_chart(tmp_path / "c", template, L4_CHART_VALUES + "n: 8\n")
    (doc,) = charts.rendered(chart, None, [], "rel", "default")
    assert doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}
