"""The gate, second adversarial round (issue 23): the evasions a reviewer found after the first hardening, each a
regression case sent over gRPC as the engine sends it, with the controls each fix must keep green. Helpers and the
conventions (blocked = at least one MANDATORY diagnostic) are test_gate.py's.
"""

from __future__ import annotations

import json

import pytest

from tests.policies import cases
from tests.policies.test_gate import ASG, H100_POD, LT, SECURE, R, deployment, mandatory, pod

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


@pytest.mark.parametrize("case", sorted(BLOCKED))
def test_blocked(pack_stub, case):
    assert mandatory(pack_stub, BLOCKED[case]), case


@pytest.mark.parametrize("case", sorted(GREEN))
def test_green(pack_stub, case):
    assert mandatory(pack_stub, GREEN[case]) == [], case


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
    assert any("nvidia.com/gpu" in m and "values.yaml" in m for _, m in found), found
    counted = _chart(
        tmp_path / "count",
        "image: vllm\n",
        TEMPLATE.replace(
            "{{ toYaml .Values.resources | indent 10 }}", "          limits: {nvidia.com/gpu: {{ .Values.gpus }}}"
        ),
    )
    assert mandatory(pack_stub, [R(HELM, "rel", {"chart": counted})])
    cpu = _chart(tmp_path / "cpu", "image: nginx\nresources:\n  limits:\n    cpu: 1\n", TEMPLATE)
    assert mandatory(pack_stub, [R(HELM, "rel", {"chart": cpu})]) == []


def test_the_pod_with_h100_affinity_and_l4_selector_is_reported_as_unverifiable(pack_stub):
    found = json.dumps(mandatory(pack_stub, BLOCKED["selector-and-affinity-disagree"]))
    assert "unknown GPU type" in found or "unverifiable" in found or "cannot verify" in found, found
