"""Rounds O and Q over gRPC: what only reads, restricts or filters passes however it is written (a platform
engineer's controls), and what launches still counts however it is written (an adversary's attempts)."""

from __future__ import annotations

import json
import textwrap

import pulumi_kubernetes as k8s
import pytest

from gpusizer.policies import evidence, mocks
from tests.policies import cases
from tests.policies.test_gate import SECURE, R, gpu_findings, mandatory

CMD = "command:local:Command"
ROLE = "arn:aws:iam::123456789012:role/r"


def _lambda(code: str) -> R:
    asset = {"4dabf18193072939515e22adb298388d": "c44067f5952c0a294b673a41bacd8c17", "text": textwrap.dedent(code)}
    archive = {"4dabf18193072939515e22adb298388d": "0def7320c3a5731c473e5ecbe6d01bc7", "assets": {"index.py": asset}}
    return R(
        "aws:lambda/function:Function",
        "f",
        {"role": ROLE, "runtime": "python3.12", "handler": "index.handler", "code": archive},
    )


def _sfn(resource: str, parameters: dict) -> R:
    state = {"Type": "Task", "Resource": resource, "Parameters": parameters, "End": True}
    return R(
        "aws:sfn/stateMachine:StateMachine",
        "sm",
        {"roleArn": ROLE, "definition": json.dumps({"StartAt": "S", "States": {"S": state}})},
    )


READS = {
    "kubectl-get-over-continued-lines": R(
        CMD,
        "c",
        {
            "create": "kubectl get nodes -l node.kubernetes.io/instance-type=g6.xlarge \\\n"
            "  -o custom-columns=NAME:.metadata.name,GPU:.status.allocatable.nvidia\\.com/gpu\n"
        },
    ),
    "kubectl-cordon-by-type": R(
        CMD, "c", {"create": "kubectl cordon -l node.kubernetes.io/instance-type=p4d.24xlarge"}
    ),
    "helm-template-into-kubectl-diff": R(
        CMD, "c", {"create": "helm template llm ./chart --set resources.limits.nvidia\\.com/gpu=1 | kubectl diff -f -"}
    ),
    "reaper-that-describes-and-stops": _lambda(
        """
        import boto3
        ec2 = boto3.client("ec2")
        GPU_TYPES = ["g5.xlarge", "p4d.24xlarge"]
        def handler(event, context):
            pages = ec2.get_paginator("describe_instances").paginate(
                Filters=[{"Name": "instance-type", "Values": GPU_TYPES}])
            ids = [i["InstanceId"] for p in pages for r in p["Reservations"] for i in r["Instances"]]
            if ids:
                ec2.stop_instances(InstanceIds=ids)
        """
    ),
    "state-machine-describing-types": _sfn(
        "arn:aws:states:::aws-sdk:ec2:describeInstanceTypes", {"InstanceTypes": ["p5.48xlarge", "g6.xlarge"]}
    ),
    "cloudformation-event-rule-on-gpu-launches": R(
        "aws:cloudformation/stack:Stack",
        "s",
        {
            "templateBody": json.dumps(
                {
                    "Resources": {
                        "Rule": {
                            "Type": "AWS::Events::Rule",
                            "Properties": {
                                "EventPattern": {
                                    "detail": {
                                        "eventName": ["RunInstances"],
                                        "requestParameters": {"instanceType": ["p5.48xlarge"]},
                                    }
                                }
                            },
                        }
                    }
                }
            )
        },
    ),
    "gcp-constraint-denying-a3": R(
        "gcp:orgpolicy/customConstraint:CustomConstraint",
        "c",
        {
            "name": "custom.noA3",
            "parent": "organizations/1",
            "condition": "resource.machineType.contains('a3-highgpu-8g')",
            "actionType": "DENY",
        },
    ),
    "azure-policy-denying-nd": R(
        "azure-native:authorization:PolicyDefinition",
        "p",
        {
            "policyRule": {
                "if": {"field": "Microsoft.Compute/virtualMachines/sku.name", "in": ["Standard_ND96isr_H100_v5"]},
                "then": {"effect": "deny"},
            }
        },
    ),
    "dra-device-class": R(
        "kubernetes:resource.k8s.io/v1beta1:DeviceClass",
        "gpu",
        {
            "metadata": {"name": "gpu.nvidia.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
        },
    ),
    "kueue-cluster-queue": R(
        "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue",
        "team",
        {
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                        "flavors": [{"name": "l4", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}],
                    }
                ]
            }
        },
    ),
    "cloudformation-allowed-values-with-a-given-cpu-type": R(
        "aws:cloudformation/stack:Stack",
        "s",
        {
            "parameters": {"T": "m7i.large"},
            "templateBody": "Parameters:\n  T: {Type: String, AllowedValues: [m7i.large, g6.xlarge]}\n"
            "Resources:\n  I:\n    Type: AWS::EC2::Instance\n    Properties: {InstanceType: !Ref T, ImageId: ami-1}\n",
        },
    ),
}


@pytest.mark.parametrize("case", sorted(READS))
def test_what_reads_restricts_or_filters_passes(pack_stub, case):
    assert mandatory(pack_stub, [READS[case]]) == [], case


def test_a_daemonset_on_gpu_nodes_by_type_makes_no_capacity(pack_stub):
    """Karpenter and the cluster autoscaler provision for pending pods, never for a DaemonSet's: a device plugin
    selecting GPU instance types follows the nodes that exist."""
    ds = {
        "spec": {
            "selector": {"matchLabels": {"a": "dp"}},
            "template": {
                "metadata": {"labels": {"a": "dp"}},
                "spec": {
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {
                                                "key": "node.kubernetes.io/instance-type",
                                                "operator": "In",
                                                "values": ["g6.xlarge", "p5.48xlarge"],
                                            }
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                    "containers": [{"name": "plugin", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}],
                },
            },
        }
    }
    assert mandatory(pack_stub, [R("kubernetes:apps/v1:DaemonSet", "dp", ds)]) == []


@pytest.mark.parametrize(
    "machine, accelerator, need",
    [("a3-highgpu-8g", "nvidia-h100-80gb", "540"), ("a2-highgpu-1g", "nvidia-tesla-a100", "32")],
)
def test_a_gke_pool_naming_the_gpus_its_machine_type_holds_passes(pack_stub, machine, accelerator, need):
    """gcloud's `node-pools create --accelerator type=...` accepts the GPUs an accelerator-optimized machine type
    holds: the block names them again (8 x H100 = 573.5 GiB usable for 540; one A100 40GB = 35.6 GiB for 32)."""
    pool = R(
        "gcp:container/nodePool:NodePool",
        "p",
        {
            "cluster": "c",
            "location": "us-central1-a",
            "nodeCount": 1,
            "nodeConfig": {
                "machineType": machine,
                "guestAccelerators": [{"type": accelerator, "count": 8 if machine.endswith("8g") else 1}],
                "labels": {cases.GCP_REQ: need},
            },
        },
    )
    assert gpu_findings(pack_stub, [pool]) == []


def test_a_cdk_instance_of_cpu_enums_passes(pack_stub, tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "web.ts").write_text(
        "new ec2.Instance(this, 'w', { vpc, machineImage, instanceType: ec2.InstanceType.of(ec2.InstanceClass.M7I, "
        "ec2.InstanceSize.LARGE) });\n"
    )
    assert (
        mandatory(pack_stub, [R(CMD, "c", {"create": "npx cdk deploy --require-approval never", "dir": str(tmp_path)})])
        == []
    )


# --- what launches, however written ----------------------------------------------------------------------------
ATTEMPTS = {
    "modify-instance-attribute-json-value": R(
        CMD,
        "c",
        {
            "create": 'aws ec2 modify-instance-attribute --instance-id i-1 --instance-type "{\\"Value\\": \\"p5.48xlarge\\"}"'
        },
    ),
    "jq-built-payload": R(
        CMD,
        "c",
        {
            "create": "jq -n --arg t p5.48xlarge '{InstanceType: $t, MinCount: 4, MaxCount: 4}' > ri.json\n"
            "aws ec2 run-instances --cli-input-json file://ri.json\n"
        },
    ),
    "terraform-format": R(
        CMD,
        "c",
        {
            "create": 'cat > main.tf <<\'EOF\'\nresource "aws_instance" "t" {\n  instance_type = format("p%d.%dxlarge", 5, 48)\n}\nEOF\n'
            "terraform apply -auto-approve\n"
        },
    ),
    "arm-format": R(
        "azure-native:resources:Deployment",
        "d",
        {
            "properties": {
                "template": {
                    "parameters": {
                        "size": {"type": "string", "defaultValue": "[format('Standard_ND{0}isr_H100_v5', 96)]"}
                    }
                }
            }
        },
    ),
    "lightsail-gpu-bundle": R(
        "aws:lightsail/instance:Instance",
        "l",
        {"availabilityZone": "us-east-1a", "blueprintId": "ubuntu_22_04", "bundleId": "gpu_nvidia_xl_1_0"},
    ),
    "capi-machine-template-outside-the-stack": R(
        "kubernetes:cluster.x-k8s.io/v1beta1:MachineDeployment",
        "md",
        {
            "spec": {
                "replicas": 16,
                "template": {
                    "spec": {
                        "infrastructureRef": {
                            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                            "kind": "AWSMachineTemplate",
                            "name": "trainers",
                        }
                    }
                },
            }
        },
    ),
    "attribute-selection-of-gaudi": R(
        "aws:ec2/launchTemplate:LaunchTemplate",
        "lt",
        {
            "name": "lt",
            "instanceRequirements": {
                "vcpuCount": {"min": 96},
                "memoryMib": {"min": 700000},
                "acceleratorManufacturers": ["habana"],
            },
            "tags": {cases.REQ: "20"},
            **SECURE,
        },
    ),
}


@pytest.mark.parametrize("case", sorted(ATTEMPTS))
def test_what_launches_counts_however_it_is_written(pack_stub, case):
    assert gpu_findings(pack_stub, [ATTEMPTS[case]]), case


def test_a_job_copied_from_a_cronjob_is_resized_as_the_cronjob(pack_stub):
    """`kubectl create job now --from=cronjob/train` runs train's pods as `now`: 64 of its one-L4 pods at the
    cheapest one-L4 host ($0.70452/h, g2-standard-4, us-east4) are $45.09/h, over $20."""
    pod = {
        "metadata": {"annotations": {cases.K8S_REQ: "18"}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"},
            "containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
        },
    }
    cron = R(
        "kubernetes:batch/v1:CronJob",
        "train",
        {
            "metadata": {"name": "train", "annotations": {cases.K8S_REQ: "18"}},
            "spec": {
                "schedule": "0 2 * * *",
                "concurrencyPolicy": "Forbid",
                "jobTemplate": {"spec": {"template": pod}},
            },
        },
    )
    budget = {"gpusizer-gpu-budget": {"enforcementLevel": "mandatory", "maxHourlyUsd": 20}}
    command = 'kubectl create job now --from=cronjob/train && kubectl patch job now -p \'{"spec":{"parallelism":64}}\''
    assert mandatory(pack_stub, [cron], budget) == []
    assert any(
        p == "gpusizer-gpu-budget" for p, _ in mandatory(pack_stub, [cron, R(CMD, "c", {"create": command})], budget)
    )


# --- round P: kustomize patches, Cloud Run and Helm flags, Terraform variable files, glued GPU names ----------------
DEPLOYMENT = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: llm}\nspec:\n  replicas: 1\n  template:\n    spec:\n"
    "      containers: [{name: srv, image: vllm}]\n"
)
KUSTOMIZATIONS = {
    "inline-json6902": {
        "kustomization.yaml": "resources: [deploy.yaml]\npatches:\n- target: {kind: Deployment, name: llm}\n  patch: |-\n"
        "    - op: add\n      path: /spec/template/spec/containers/0/resources\n"
        "      value: {limits: {nvidia.com/gpu: 8}}\n",
    },
    "json6902-file": {
        "kustomization.yaml": "resources: [deploy.yaml]\npatchesJson6902:\n- target: {kind: Deployment, name: llm}\n"
        "  path: gpu.yaml\n",
        "gpu.yaml": "- op: add\n  path: /spec/template/spec/containers/0/resources\n  value: {limits: {nvidia.com/gpu: 8}}\n",
    },
    "component-with-inline-merge": {
        "kustomization.yaml": "resources: [deploy.yaml]\ncomponents: [gpu]\n",
        "gpu/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n"
        "- target: {kind: Deployment}\n  patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n"
        "    metadata: {name: any}\n    spec:\n      template:\n        spec:\n          containers:\n"
        "          - name: srv\n            resources: {limits: {nvidia.com/gpu: 8}}\n",
    },
}


@pytest.mark.parametrize("case", sorted(KUSTOMIZATIONS))
def test_kustomize_patches_are_applied_as_kustomize_applies_them(pack_stub, tmp_path, case):
    (tmp_path / "deploy.yaml").write_text(DEPLOYMENT)
    for name, text in KUSTOMIZATIONS[case].items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = gpu_findings(pack_stub, [R("kubernetes:kustomize/v2:Directory", "k", {"directory": str(tmp_path)})])
    # the patched Deployment itself is judged (the patch's text alone is read from the kustomization too): its
    # 8 GPUs are asked by the child `k/Deployment/llm`
    assert any("Deployment/llm" in m and "nvidia.com/gpu" in m for m in found), (case, found)


@pytest.mark.parametrize(
    "command",
    [
        "gcloud run deploy llm --image x --gpu 1 --gpu-type nvidia-l4 --max-instances 200 --region us-central1",
        "helm upgrade --install vllm vllm/vllm-stack --set servingEngineSpec.modelSpec[0].requestGPU=8",
        "cwctl nodepool create --instance-type gd-8xh100ib-i128 --target-nodes 4",
        "hyperstack vm create --flavor_name n3-H100x8",
    ],
)
def test_gpu_flags_and_names_of_any_tool_count(pack_stub, command):
    assert gpu_findings(pack_stub, [R(CMD, "c", {"create": command})]), command


@pytest.mark.parametrize(
    "apply", ["terraform apply -auto-approve -var-file=prod.tfvars", "terraform apply -auto-approve"]
)
def test_a_terraform_variable_file_is_read(pack_stub, tmp_path, apply):
    (tmp_path / "main.tf").write_text('variable "t" {}\nresource "aws_instance" "w" {\n  instance_type = var.t\n}\n')
    name = "prod.tfvars" if "var-file" in apply else "terraform.tfvars"
    (tmp_path / name).write_text('t = "p4d.24xlarge"\n')
    assert any(
        "p4d.24xlarge" in m for m in gpu_findings(pack_stub, [R(CMD, "c", {"create": apply, "dir": str(tmp_path)})])
    )


@pytest.mark.parametrize(
    "row",
    [
        R(
            "aws:lambda/function:Function",
            "report",
            {
                "role": ROLE,
                "runtime": "python3.12",
                "handler": "i.h",
                "environment": {"variables": {"GPU_REPORT_TABLE": "gpu-inventory"}},
            },
        ),
        R(CMD, "c", {"create": "python3 -c \"print('nodes with nvidia.com/gpu consumers: none')\""}),
    ],
)
def test_names_and_printed_words_ask_for_nothing(pack_stub, row):
    assert mandatory(pack_stub, [row]) == []


# --- round T: MIG slices named by node labels, attribute categories, quota and flavor records --------------------
def _mig_deployment(selector: dict) -> R:
    return R(
        "kubernetes:apps/v1:Deployment",
        "embed",
        {
            "metadata": {"name": "embed", "annotations": {cases.K8S_REQ: "8"}},
            "spec": {
                "replicas": 1,
                "template": {
                    "metadata": {"annotations": {cases.K8S_REQ: "8"}},
                    "spec": {
                        "nodeSelector": selector,
                        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
                    },
                },
            },
        },
    )


@pytest.mark.parametrize(
    "selector",
    [
        {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"},  # the GPU operator's single MIG strategy
        {"cloud.google.com/gke-accelerator": "nvidia-a100-80gb", "cloud.google.com/gke-gpu-partition-size": "1g.10gb"},
    ],
)
def test_a_gpu_on_a_node_of_mig_slices_is_one_slice(pack_stub, selector):
    """One 1g.10gb slice (10 GB = 9.31 GiB) for 8 GiB passes; read as a whole A100 80GB it was 10x."""
    assert mandatory(pack_stub, [_mig_deployment(selector)]) == []


def test_attribute_selection_by_the_gpu_category_is_read_by_the_model(pack_stub):
    """`acceleratorTypes: [gpu]` with `acceleratorNames: [l4, a10g]` and one accelerator: the template's model
    reads the selection (g6.xlarge, g5.2xlarge, ...), so the category is no unread type."""
    reqs = {
        "vcpuCount": {"min": 4, "max": 8},
        "memoryMib": {"min": 16384},
        "acceleratorTypes": ["gpu"],
        "acceleratorNames": ["l4", "a10g"],
        "acceleratorCount": {"min": 1, "max": 1},
    }
    lt = R(
        "aws:ec2/launchTemplate:LaunchTemplate",
        "lt",
        {"name": "lt", "instanceRequirements": reqs, "tags": {cases.REQ: "18"}, **SECURE},
    )
    assert not [m for p, m in mandatory(pack_stub, [lt]) if p == "gpusizer-gpu-evidence"]


@pytest.mark.parametrize(
    "row",
    [
        R(
            "gcp:cloudquota/sQuotaPreference:SQuotaPreference",
            "q",
            {
                "parent": "projects/p",
                "service": "compute.googleapis.com",
                "quotaId": "NVIDIA-L4-GPUS-per-project-region",
                "quotaConfig": {"preferredValue": "16"},
            },
        ),
        R(
            "kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor",
            "l4",
            {"metadata": {"name": "l4"}, "spec": {"nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-L4"}}},
        ),
    ],
)
def test_quota_requests_and_kueue_flavors_are_records(pack_stub, row):
    assert mandatory(pack_stub, [row]) == []


# --- round R ----------------------------------------------------------------------------------------------------
def test_a_ci_workflow_installing_the_checkout_reads_nothing_here(pack_stub):
    """`pip install -e .` runs on the CI runner, in the runner's checkout: `.` is not a folder of this machine."""
    wf = (
        "on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n    - run: pip install -e . && pytest -q\n"
    )
    row = R(
        "github:index/repositoryFile:RepositoryFile",
        "wf",
        {"repository": "ml", "file": ".github/workflows/ci.yml", "content": wf},
    )
    assert mandatory(pack_stub, [row]) == []


def test_a_value_an_arm_expression_may_take_counts(pack_stub):
    template = {
        "parameters": {"env": {"type": "string", "defaultValue": "prod"}},
        "variables": {"size": "[if(equals(parameters('env'), 'prod'), 'Standard_ND96asr_v4', 'Standard_D4s_v5')]"},
        "resources": [
            {
                "type": "Microsoft.Compute/virtualMachines",
                "properties": {"hardwareProfile": {"vmSize": "[variables('size')]"}},
            }
        ],
    }
    row = R("azure-native:resources:Deployment", "d", {"properties": {"mode": "Incremental", "template": template}})
    assert any("standard_nd96asr_v4" in m.lower() for m in gpu_findings(pack_stub, [row]))


@pytest.mark.parametrize("inside", [False, True])
def test_a_sagemaker_endpoint_launches_its_configuration_by_name(pack_stub, inside):
    """A configuration in the stack is resolved by name (a CPU one passes); one outside it is a finding."""
    endpoint = R("aws:sagemaker/endpoint:Endpoint", "ep", {"endpointConfigName": "web-cfg"})
    config = R(
        "aws:sagemaker/endpointConfiguration:EndpointConfiguration",
        "cfg",
        {
            "name": "web-cfg",
            "productionVariants": [
                {"variantName": "v", "modelName": "m", "instanceType": "ml.m5.large", "initialInstanceCount": 1}
            ],
        },
    )
    found = gpu_findings(pack_stub, [config, endpoint] if inside else [endpoint])
    assert bool(found) != inside, found


def test_a_pipeline_spec_kept_in_a_bucket_object_counts(pack_stub):
    """A Kubeflow / Vertex AI pipeline spec is a launch document: its executor's accelerator counts."""
    spec = {
        "pipelineSpec": {
            "pipelineInfo": {"name": "ft"},
            "deploymentSpec": {
                "executors": {
                    "train": {
                        "container": {
                            "image": "x",
                            "resources": {"accelerator": {"type": "NVIDIA_H100_80GB", "count": "8"}},
                        }
                    }
                }
            },
            "root": {"dag": {"tasks": {}}},
        }
    }
    row = R(
        "gcp:storage/bucketObject:BucketObject",
        "o",
        {"bucket": "b", "name": "pipeline.json", "content": json.dumps(spec)},
    )
    assert any("NVIDIA_H100_80GB" in m for m in gpu_findings(pack_stub, [row]))


def test_terraform_variable_files_kept_in_a_secret_count(pack_stub):
    row = R(
        "kubernetes:core/v1:Secret",
        "tf",
        {"stringData": {"gpu.auto.tfvars": 'instance_type = "p5.48xlarge"\nnode_count = 4\n'}},
    )
    assert any("p5.48xlarge" in m for m in gpu_findings(pack_stub, [row]))


# --- round S ----------------------------------------------------------------------------------------------------
def test_buying_a_capacity_block_is_accelerated_capacity(pack_stub):
    """The offering is found by a read (which asks for nothing) and bought by id: Capacity Blocks for ML are P
    and Trn instances only, so the purchase itself is the evidence."""
    script = (
        "OID=$(aws ec2 describe-capacity-block-offerings --instance-type p5.48xlarge --instance-count 16 "
        "--capacity-duration-hours 48 --query 'CapacityBlockOfferings[0].CapacityBlockOfferingId' --output text)\n"
        'aws ec2 purchase-capacity-block --capacity-block-offering-id "$OID" --instance-platform Linux/UNIX\n'
    )
    found = gpu_findings(pack_stub, [R(CMD, "c", {"create": script})])
    assert any("purchase-capacity-block" in m for m in found), found


@pytest.mark.parametrize(
    "command, files",
    [
        (
            "python3 -m launcher",
            {"launcher/__main__.py": "boto3.client('ec2').run_instances(InstanceType='p5.48xlarge')\n"},
        ),
        ("uv run -m ops.launch", {"ops/launch.py": "boto3.client('ec2').run_instances(InstanceType='p4d.24xlarge')\n"}),
        (
            "go run ./launcher",
            {
                "launcher/main.go": "c.RunInstances(ctx, &ec2.RunInstancesInput{InstanceType: types.InstanceTypeP548xlarge})\n"
            },
        ),
        ("just train", {"justfile": "train:\n    eksctl create nodegroup --cluster c --node-type p5.48xlarge\n"}),
        (
            "java Launch.java",
            {
                "Launch.java": "ec2.runInstances(RunInstancesRequest.builder().instanceType(InstanceType.P5_48_XLARGE).build());\n"
            },
        ),
        (
            "cargo run --release --manifest-path launcher/Cargo.toml",
            {
                "launcher/Cargo.toml": "[package]\nname = 'launcher'\n",
                "launcher/src/main.rs": "client.run_instances().instance_type(InstanceType::P548xlarge).send().await?;\n",
            },
        ),
        (
            "task train",
            {
                "Taskfile.yml": "tasks:\n  train:\n    cmds: [eksctl create nodegroup --cluster c --node-type p5.48xlarge]\n"
            },
        ),
        (
            "npm run launch",
            {
                "package.json": '{"scripts": {"launch": "node launch.mjs"}}',
                "launch.mjs": "await c.send(new RunInstancesCommand({InstanceType: 'p5.48xlarge'}));\n",
            },
        ),
    ],
)
def test_what_a_run_form_runs_is_read(pack_stub, tmp_path, command, files):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = gpu_findings(pack_stub, [R(CMD, "c", {"create": command, "dir": str(tmp_path)})])
    assert any("p5.48xlarge" in m or "p4d.24xlarge" in m for m in found), (command, found)


@pytest.mark.parametrize(
    "command, wanted",
    [
        ("python3 -m launcher", "launcher/__main__.py"),
        ("uv run -m ops.launch", "ops/launch.py"),
        ("go run ./launcher", "launcher/main.go"),
        ("just train", "justfile"),
        ("task train", "Taskfile.yml"),
        ("npm run launch", "package.json"),
        ("java Launch.java", "Launch.java"),
        ("cargo run --manifest-path crate/Cargo.toml", "crate/src/main.rs"),
        ("terraform apply -var-file=prod.tfvars", "prod.tfvars"),
    ],
)
def test_each_run_form_names_the_file_it_runs(tmp_path, command, wanted):
    """Without a Command `dir` (no folder scan), the reader finds the file each form runs, and no decoy."""
    for name in (
        "launcher/__main__.py", "ops/launch.py", "launcher/main.go", "justfile", "Taskfile.yml", "package.json",
        "Launch.java", "crate/Cargo.toml", "crate/src/main.rs", "prod.tfvars", "decoy/unrelated.py",
    ):  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")
    found = {str(f.relative_to(tmp_path)) for f in evidence._local_files(command, [tmp_path])}
    assert wanted in found and "decoy/unrelated.py" not in found, found


def test_a_machine_image_a_command_launches_from_is_a_template(pack_stub):
    command = "gcloud compute instances create w --zone us-central1-a --source-machine-image=projects/ml/global/machineImages/a3-trainer"
    found = gpu_findings(pack_stub, [R(CMD, "c", {"create": command})])
    assert any("template" in m for m in found), found


def test_a_python_program_with_a_shebang_still_launches(pack_stub):
    """A comment line (`#!/usr/bin/env python3`) is no read: the SageMaker estimator below it launches."""
    script = "#!/usr/bin/env python3\nfrom sagemaker.estimator import Estimator\nEstimator(image_uri='x', role='r', instance_count=8, instance_type='ml.p4d.24xlarge').fit()\n"
    assert any("p4d.24xlarge" in m for m in gpu_findings(pack_stub, [R(CMD, "c", {"create": script})]))


def test_an_unnamed_kubernetes_object_has_the_name_the_provider_gives_it():
    """The offline run answers as the Kubernetes provider does: an object the program did not name is auto-named,
    so `cm.metadata["name"]` is a name, not a crash (a Deployment mounting a ConfigMap by it)."""

    def program():
        cm = k8s.core.v1.ConfigMap("conf", data={"a": "b"})
        name = cm.metadata.apply(lambda m: m["name"])
        k8s.apps.v1.Deployment(
            "web",
            spec={
                "selector": {"matchLabels": {"a": "w"}},
                "template": {
                    "metadata": {"labels": {"a": "w"}},
                    "spec": {
                        "containers": [{"name": "c", "image": "nginx"}],
                        "volumes": [{"name": "v", "configMap": {"name": name}}],
                    },
                },
            },
        )

    recorder, _ = mocks.run_program(program)
    (dep,) = [r for r in recorder.resources if r.typ == "kubernetes:apps/v1:Deployment"]
    name = dep.inputs["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"]
    assert isinstance(name, str) and name.startswith("conf")  # a name, as the provider's `conf-<suffix>` is


def test_a_fractional_gpu_offer_is_named_as_a_fraction(pack_stub):
    """One L4 for a 1 GiB smoke test: the cheaper offer named is g6f.large, 1/8 of an L4 (gpu_fraction 0.125 in
    gpusizer/data/catalog/aws.csv), which the finding must not call a whole L4."""
    dep = R(
        "kubernetes:apps/v1:Deployment",
        "smoke",
        {
            "metadata": {"name": "smoke", "annotations": {cases.K8S_REQ: "1"}},
            "spec": {
                "replicas": 1,
                "template": {
                    "metadata": {"annotations": {cases.K8S_REQ: "1"}},
                    "spec": {
                        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"},
                        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
                    },
                },
            },
        },
    )
    found = [m for p, m in mandatory(pack_stub, [dep]) if p == "gpusizer-no-overprovisioning"]
    assert any("g6f." in m and "x L4 (a fraction of one GPU)" in m for m in found), found
