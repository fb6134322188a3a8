"""The gate on capacity that programs and other engines compute, and on resizes written as code, over gRPC.

Types built from literals are computed as the language computes them; types with a placeholder another engine
fills (Terraform, Jinja, Pulumi YAML, Bicep, Crossplane, Argo) count for every accelerated family they admit;
the code of a folder a deploy tool runs in is read; and a command or document that resizes a GPU group or
workload counts in the budget however it writes the number. Each blocked case asserts what the finding names;
each green case is the same form over CPU types."""

from __future__ import annotations

import json
import tarfile
import textwrap

import pytest

from gpusizer.policies import gotemplate, offline
from tests.policies import cases
from tests.policies.test_gate import SECURE, R, gpu_findings, mandatory
from tests.policies.test_gate_more import BUDGET, L4_DEP

CMD = "command:local:Command"


def _cmd(text: str, **props) -> list:
    return [R(CMD, "c", {"create": text, **props})]


def _py(call: str) -> list:
    return _cmd(f"python3 -c \"import boto3; boto3.client('ec2').run_instances(MinCount=1, MaxCount=1, {call})\"")


# --- expressions of literals, computed ---------------------------------------------------------------------------
COMPUTED = {
    "python-format": (_py("InstanceType='{}.{}'.format('g6e', '12xlarge')"), "g6e.12xlarge"),
    "python-percent": (_py("InstanceType='p%dd.%dxlarge' % (4, 24)"), "p4d.24xlarge"),
    "python-join": (_py("InstanceType='.'.join(['g5', '48xlarge'])"), "g5.48xlarge"),
    "python-str-of-a-number": (_py("InstanceType='p' + str(5) + '.48xlarge'"), "p5.48xlarge"),
    "go-sprintf": (
        [
            R(
                "pulumi-nodejs:dynamic:Resource",
                "p",
                {"__provider": 'InstanceType: types.InstanceType(fmt.Sprintf("p%d.%dxlarge", 5, 48))'},
            )
        ],
        "p5.48xlarge",
    ),
    "arm-concat": (
        [
            R(
                "azure-native:resources:Deployment",
                "d",
                {
                    "resourceGroupName": "rg",
                    "properties": {
                        "mode": "Incremental",
                        "template": {
                            "resources": [
                                {
                                    "type": "Microsoft.Compute/virtualMachineScaleSets",
                                    "name": "ss",
                                    "sku": {"name": "[concat('Standard_ND', '96asr_v4')]", "capacity": 4},
                                }
                            ]
                        },
                    },
                },
            )
        ],
        "standard_nd96asr_v4",
    ),
}


@pytest.mark.parametrize("case", sorted(COMPUTED))
def test_a_type_built_from_literals_is_the_type_it_builds(pack_stub, case):
    rows, seen = COMPUTED[case]
    found = gpu_findings(pack_stub, rows)
    assert any(seen in m.lower() for m in found), (case, found)


def test_a_cpu_type_built_from_literals_passes(pack_stub):
    assert mandatory(pack_stub, _py("InstanceType='{}.{}'.format('m5', 'large')")) == []


# --- placeholders another engine fills ------------------------------------------------------------------------------
def _files(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    return str(tmp_path)


PLACEHOLDERS = {
    "terraform-variable": (
        "terraform apply -auto-approve",
        {
            "main.tf": 'variable "g" { default = 4 }\nresource "aws_instance" "t" {\n  instance_type = "p${var.g}d.24xlarge"\n}\n'
        },
    ),
    "pulumi-yaml-config": (
        "pulumi up --yes",
        {
            "Pulumi.yaml": "name: b\nruntime: yaml\nconfig:\n  g: {default: '5'}\nresources:\n  box:\n"
            "    type: aws:ec2:Instance\n    properties:\n      instanceType: p${g}.48xlarge\n"
        },
    ),
    "ansible-jinja": (
        "ansible-playbook site.yml",
        {
            "site.yml": "- hosts: localhost\n  tasks:\n  - amazon.aws.ec2_instance:\n      instance_type: 'g{{ gen }}.48xlarge'\n"
        },
    ),
    "bicep-interpolation": (
        "az deployment group create -g rg --template-file main.bicep",
        {
            "main.bicep": "param g string = '96'\nresource vm 'Microsoft.Compute/virtualMachines@2024-03-01' = {\n"
            "  properties: { hardwareProfile: { vmSize: 'Standard_ND${g}isr_H100_v5' } }\n}\n"
        },
    ),
}


@pytest.mark.parametrize("case", sorted(PLACEHOLDERS))
def test_a_type_another_engine_fills_in_counts_for_what_it_admits(pack_stub, tmp_path, case):
    command, files = PLACEHOLDERS[case]
    found = gpu_findings(pack_stub, _cmd(command, dir=_files(tmp_path, files)))
    assert any("when deployed" in m for m in found), (case, found)


def test_a_crossplane_format_into_an_accelerated_family_counts(pack_stub):
    comp = {
        "spec": {
            "resources": [
                {
                    "base": {"apiVersion": "ec2.aws.upbound.io/v1beta1", "kind": "Instance"},
                    "patches": [
                        {
                            "fromFieldPath": "spec.gen",
                            "toFieldPath": "spec.forProvider.instanceType",
                            "transforms": [{"type": "string", "string": {"type": "Format", "fmt": "p%s.48xlarge"}}],
                        }
                    ],
                }
            ]
        }
    }
    found = gpu_findings(pack_stub, [R("kubernetes:apiextensions.crossplane.io/v1:Composition", "c", comp)])
    assert any("p%s.48xlarge" in m for m in found), found


def test_a_placeholder_in_a_launch_argument_is_built_at_run_time(pack_stub):
    """Argo fills `{{workflow.parameters.fam}}` before the container runs: the type is not a literal."""
    cmd = "aws ec2 run-instances --image-id ami-1 --count 4 --instance-type {{workflow.parameters.fam}}.48xlarge"
    found = gpu_findings(pack_stub, _cmd(cmd))
    assert any("built at run time" in m for m in found), found


def test_a_jsonata_type_field_is_computed_when_it_runs(pack_stub):
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "L",
        "States": {
            "L": {
                "Type": "Task",
                "End": True,
                "Resource": "arn:aws:states:::aws-sdk:ec2:runInstances",
                "Arguments": {"MinCount": 1, "MaxCount": 1, "InstanceType": "{% 'g' & $string(6) & 'e.48xlarge' %}"},
            }
        },
    }
    rows = [R("aws:sfn/stateMachine:StateMachine", "sm", {"roleArn": "r", "definition": json.dumps(definition)})]
    assert any("computed when deployed" in m for m in gpu_findings(pack_stub, rows))


@pytest.mark.parametrize(
    "files",
    [
        {"main.tf": 'resource "aws_instance" "t" {\n  instance_type = "${var.family}.${var.size}"\n}\n'},
        {"main.tf": 'resource "aws_instance" "t" {\n  instance_type = "m${var.gen}.large"\n}\n'},
    ],
)
def test_a_placeholder_that_admits_no_accelerated_family_passes(pack_stub, tmp_path, files):
    assert mandatory(pack_stub, _cmd("terraform apply -auto-approve", dir=_files(tmp_path, files))) == []


# --- other forms of evidence --------------------------------------------------------------------------------------
def test_a_gpu_named_size_of_an_unpriced_cloud_counts(pack_stub):
    """Exoscale names its GPU sizes `gpua5000.medium`, `gpu3.large`: a size token that says gpu."""
    rows = [R("exoscale:index/computeInstance:ComputeInstance", "g", {"type": "gpua5000.medium", "zone": "ch-gva-2"})]
    assert any(p == "gpusizer-gpu-evidence" for p, _ in mandatory(pack_stub, rows))


def test_a_set_of_accelerators_written_as_keys_counts(pack_stub):
    """SkyPilot's any-of form: `accelerators: {H100:8, A100-80GB:8}` (YAML reads each as a key)."""
    task = "resources:\n  accelerators: {H100:8, A100-80GB:8}\nrun: python train.py\n"
    rows = [R("aws:s3/bucketObjectv2:BucketObjectv2", "o", {"bucket": "b", "key": "t.yaml", "content": task})]
    assert any("H100:8" in m for m in gpu_findings(pack_stub, rows))


def test_a_ci_job_on_a_gpu_runner_counts(pack_stub):
    workflow = "jobs:\n  train:\n    runs-on: gpu-t4-4-core\n    steps: [{run: python train.py}]\n"
    rows = [
        R("github:index/repositoryFile:RepositoryFile", "wf", {"file": ".github/workflows/t.yml", "content": workflow})
    ]
    assert any("gpu-t4-4-core" in m for m in gpu_findings(pack_stub, rows))


def test_attribute_selection_of_inferentia_is_unverifiable_not_a_pass(pack_stub):
    reqs = {
        "vcpuCount": {"min": 4},
        "memoryMib": {"min": 8192},
        "acceleratorTypes": ["inference"],
        "acceleratorCount": {"min": 12},
    }
    lt = R(
        "aws:ec2/launchTemplate:LaunchTemplate",
        "lt",
        {"name": "lt", "instanceRequirements": reqs, "tags": {cases.REQ: "20"}, **SECURE},
    )
    found = gpu_findings(pack_stub, [lt])
    assert any("inference" in m for m in found), found


# --- resizes written as code or documents -------------------------------------------------------------------------
L4_LT = R(
    "aws:ec2/launchTemplate:LaunchTemplate",
    "l4-lt",
    {
        "name": "l4-lt",
        "instanceType": "g6.xlarge",
        "tags": {cases.REQ: "18"},
        "metadataOptions": {"httpTokens": "required"},
    },
)
L4_ASG = R(
    "aws:autoscaling/group:Group",
    "gpu-asg",
    {
        "name": "gpu-asg",
        "minSize": 1,
        "maxSize": 2,
        "launchTemplate": {"name": "l4-lt", "version": "$Latest"},
        "tags": [{"key": cases.REQ, "value": "18", "propagateAtLaunch": True}],
    },
)


def _lambda_code(tmp_path, code: str) -> R:
    (tmp_path / "fn").mkdir()
    (tmp_path / "fn" / "index.py").write_text(textwrap.dedent(code))
    archive = {"4dabf18193072939515e22adb298388d": "0def7320c3a5731c473e5ecbe6d01bc7", "path": str(tmp_path / "fn")}
    return R(
        "aws:lambda/function:Function", "f", {"runtime": "python3.12", "handler": "index.handler", "code": archive}
    )


RESIZES = {
    # 64 g6.xlarge at $0.8048/h (us-east-1, gpusizer/data/catalog/aws.csv) = $51.51/h, over $20; 2 are $1.61
    "shell-arithmetic-over-a-variable": lambda tmp: [
        *_cmd("N=8; aws autoscaling update-auto-scaling-group --auto-scaling-group-name gpu-asg --max-size $((N*8))")
    ],
    "python-variable": lambda tmp: [
        _lambda_code(
            tmp,
            """
            import boto3
            TARGET = 64
            def handler(e, c):
                boto3.client("autoscaling").update_auto_scaling_group(
                    AutoScalingGroupName="gpu-asg",
                    MaxSize=TARGET)
            """,
        )
    ],
    "python-environment-default": lambda tmp: [
        _lambda_code(
            tmp,
            """
            import os, boto3
            def handler(e, c):
                boto3.client("autoscaling").update_auto_scaling_group(
                    AutoScalingGroupName="gpu-asg",
                    MaxSize=int(os.environ.get("PEAK", "64")))
            """,
        )
    ],
    "automation-document-step": lambda tmp: [
        R(
            "aws:ssm/document:Document",
            "d",
            {
                "documentType": "Automation",
                "content": "schemaVersion: '0.3'\nmainSteps:\n- name: up\n  action: aws:executeAwsApi\n  inputs:\n"
                "    Service: autoscaling\n    Api: UpdateAutoScalingGroup\n    AutoScalingGroupName: gpu-asg\n"
                "    MaxSize: 64\n",
            },
        )
    ],
    "fleet-from-the-template-in-a-heredoc": lambda tmp: [
        *_cmd(
            "cat > f.json <<'EOF'\n"
            '{"TargetCapacitySpecification": {"TotalTargetCapacity": 48},\n'
            ' "LaunchTemplateConfigs": [{"LaunchTemplateSpecification": {"LaunchTemplateName": "l4-lt"}}]}\n'
            "EOF\naws ec2 create-fleet --cli-input-json file://f.json\n"
        )
    ],
    "terraform-variable-default": lambda tmp: [
        *_cmd(
            "terraform apply -auto-approve",
            dir=_files(
                tmp,
                {
                    "main.tf": 'variable "peak" {\n  default = 64\n}\n'
                    'resource "aws_autoscaling_group_tag" "t" {\n  autoscaling_group_name = "gpu-asg"\n}\n'
                    'resource "null_resource" "scale" {\n  triggers = {\n    group = "gpu-asg"\n'
                    "    max_size = var.peak\n  }\n}\n"
                },
            ),
        )
    ],
    "terraform-group-from-the-template": lambda tmp: [
        *_cmd(
            "terraform apply -auto-approve",
            dir=_files(
                tmp,
                {
                    "main.tf": 'resource "aws_autoscaling_group" "more" {\n  max_size = 60\n  min_size = 60\n'
                    '  launch_template {\n    name    = "l4-lt"\n    version = "$Latest"\n  }\n}\n'
                },
            ),
        )
    ],
}


@pytest.mark.parametrize("case", sorted(RESIZES))
def test_a_resize_or_launch_written_as_code_counts(pack_stub, tmp_path, case):
    assert mandatory(pack_stub, [L4_LT, L4_ASG], BUDGET) == []
    rows = [L4_LT, L4_ASG, *RESIZES[case](tmp_path)]
    found = mandatory(pack_stub, rows, BUDGET)
    # a resize is over the budget; a launch from the template is one gpusizer cannot count or price
    assert any(
        p == "gpusizer-gpu-budget" or (p == "gpusizer-no-overprovisioning" and "launches" in m) for p, m in found
    ), (case, found)


@pytest.mark.parametrize(
    "command",
    [
        'kubectl -n ml patch deployment llm --type=merge -p \'{"spec":{"replicas":40}}\'',
        "eksctl scale nodegroup --cluster c --name llm --nodes 40 --nodes-max 40",
    ],
)
def test_a_resize_of_a_workload_counts(pack_stub, command):
    """40 one-L4 pods at the cheapest one-L4 host ($0.70452/h, g2-standard-4 in us-east4) are $28.18/h > $20."""
    assert mandatory(pack_stub, [L4_DEP], BUDGET) == []
    assert any(p == "gpusizer-gpu-budget" for p, _ in mandatory(pack_stub, [L4_DEP, *_cmd(command)], BUDGET))


def test_a_kubectl_scale_split_over_command_and_args_is_one_command(pack_stub):
    job = {
        "spec": {
            "schedule": "0 8 * * *",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "k",
                                    "command": ["kubectl", "scale"],
                                    "args": ["-n", "ml", "--replicas=40", "deploy", "llm"],
                                }
                            ]
                        }
                    }
                }
            },
        }
    }
    rows = [L4_DEP, R("kubernetes:batch/v1:CronJob", "cj", job)]
    assert any(p == "gpusizer-gpu-budget" for p, _ in mandatory(pack_stub, rows, BUDGET))


def test_a_dws_resize_request_counts_in_the_budget(pack_stub):
    """A resize request adds 40 g2-standard-4 VMs to the group at once: 40 x $0.70452/h = $28.18/h > $20."""
    tpl = R(
        "gcp:compute/instanceTemplate:InstanceTemplate",
        "t",
        {"name": "l4", "machineType": "g2-standard-4", "labels": {cases.GCP_REQ: "18"}},
    )
    mig = R(
        "gcp:compute/instanceGroupManager:InstanceGroupManager",
        "m",
        {"name": "l4-mig", "zone": "us-central1-a", "targetSize": 1, "versions": [{"instanceTemplate": "l4"}]},
    )
    rr = R(
        "gcp:compute/resizeRequest:ResizeRequest", "rr", {"name": "b", "instanceGroupManager": "l4-mig", "resizeBy": 40}
    )
    assert mandatory(pack_stub, [tpl, mig], BUDGET) == []
    assert any(p == "gpusizer-gpu-budget" for p, _ in mandatory(pack_stub, [tpl, mig, rr], BUDGET))


GPU_SUBCHART = """apiVersion: apps/v1
kind: Deployment
metadata: {name: big}
spec:
  template:
    metadata: {annotations: {gpusizer.io/required-gpu-memory-gib: "20"}}
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]
"""


@pytest.mark.parametrize("tags, rendered", [("{gpu: false}", False), ("{gpu: true}", True), ("{}", True)])
def test_a_subchart_is_rendered_as_its_tags_decide(pack_stub, tmp_path, tags, rendered):
    """Helm ("Tags and Condition Resolution"): any true tag enables a dependency, all set false disable it, none
    set leaves it enabled. The vendored subchart asks for 8 x H100 for 20 GiB."""
    root = tmp_path / "app"
    _files(
        root,
        {
            "Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n"
            "- {name: trainer, version: 0.1.0, tags: [gpu]}\n",
            "values.yaml": f"tags: {tags}\n",
            "templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n",
            "charts/trainer/Chart.yaml": "apiVersion: v2\nname: trainer\nversion: 0.1.0\n",
            "charts/trainer/templates/d.yaml": GPU_SUBCHART,
        },
    )
    rows = [R("kubernetes:helm.sh/v3:Release", "app", {"chart": str(root), "namespace": "ml"})]
    assert bool(gpu_findings(pack_stub, rows)) == rendered


# --- round M: packing by any label of a type's shape, read-only commands, tags given to instances -------------------
def _pod_deployment(affinity_terms: list, selector: dict | None = None) -> R:
    spec = {
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": affinity_terms}}
        },
        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
    }
    if selector:
        spec["nodeSelector"] = selector
    return R(
        "kubernetes:apps/v1:Deployment",
        "d",
        {
            "metadata": {"name": "d", "annotations": {cases.K8S_REQ: "18"}},
            "spec": {"replicas": 1, "template": {"metadata": {"annotations": {cases.K8S_REQ: "18"}}, "spec": spec}},
        },
    )


L4_NAME = {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["l4"]}


@pytest.mark.parametrize(
    "extra",
    [
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["150"]},  # only g6.48xlarge
        {"key": "karpenter.k8s.aws/instance-memory", "operator": "Gt", "values": ["700000"]},  # MiB
        {"key": "nvidia.com/gpu.count", "operator": "Gt", "values": ["4"]},
    ],
)
def test_a_pod_selecting_only_large_hosts_buys_a_whole_one(pack_stub, extra):
    """One L4 asked for; the selection admits only hosts of 8 L4s (g6.48xlarge: 192 vCPUs, 768 GiB)."""
    found = mandatory(pack_stub, [_pod_deployment([{"matchExpressions": [L4_NAME, extra]}])])
    assert any("an autoscaler buys the whole node" in m for _, m in found), found


def test_a_pod_selecting_the_gpu_model_alone_passes(pack_stub):
    assert mandatory(pack_stub, [_pod_deployment([{"matchExpressions": [L4_NAME]}])]) == []


def test_a_command_that_only_reads_gpu_nodes_asks_for_none(pack_stub):
    job = {
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "k",
                            "command": ["sh", "-c"],
                            "args": [
                                "kubectl get nodes -l nvidia.com/gpu.product=NVIDIA-L4; "
                                "kubectl describe nodes | grep -A3 nvidia.com/gpu"
                            ],
                        }
                    ],
                }
            }
        }
    }
    assert mandatory(pack_stub, [R("kubernetes:batch/v1:Job", "j", job)]) == []


def test_the_tags_a_template_gives_its_instances_carry_the_requirement(pack_stub):
    """EC2 tags the instances a launch template launches with its `tagSpecifications` (resourceType instance)."""
    lt = R(
        "aws:ec2/launchTemplate:LaunchTemplate",
        "l4-lt",
        {
            "name": "l4-lt",
            "instanceType": "g6.xlarge",
            "metadataOptions": {"httpTokens": "required"},
            "tagSpecifications": [{"resourceType": "instance", "tags": {cases.REQ: "18"}}],
        },
    )
    assert mandatory(pack_stub, [lt]) == []


OTHER_CLOUD_COMMANDS = [
    "crusoe compute vms create --name t --type h100-80gb-sxm-ib.8x --location us-east1-a",
    "pspace machine create --machineType A100-80Gx8 --region ny2",
    "runpodctl create pod --name t --gpuType 'NVIDIA H100 80GB HBM3' --gpuCount 8",
]


@pytest.mark.parametrize("command", OTHER_CLOUD_COMMANDS)
def test_a_size_flag_naming_a_gpu_counts_on_any_cloud(pack_stub, command):
    assert any(p == "gpusizer-gpu-evidence" for p, _ in mandatory(pack_stub, _cmd(command)))


@pytest.mark.parametrize(
    "command, files",
    [
        ("node launch.mjs", {"launch.mjs": "await c.send(new RunInstancesCommand({InstanceType: 'p5.48xlarge'}));\n"}),
        (
            "kubectl apply -k overlays/gpu",
            {"overlays/gpu/d.yaml": "spec:\n  nodeSelector: {node.kubernetes.io/instance-type: p5.48xlarge}\n"},
        ),
        ("pulumi up --yes --cwd gpu", {"gpu/__main__.py": "aws.ec2.Instance('t', instance_type='p4d.24xlarge')\n"}),
        ("make gpu", {"Makefile": "gpu:\n\teksctl create nodegroup --cluster c --node-type p5.48xlarge\n"}),
        (
            "helmfile apply",
            {
                "helmfile.yaml": "releases:\n- name: llm\n  chart: ./charts/llm\n  values: [prod.yaml]\n",
                "prod.yaml": "nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\ngpus: 8\n",
                "charts/llm/Chart.yaml": "apiVersion: v2\nname: llm\nversion: 0.1.0\n",
            },
        ),
    ],
)
def test_the_files_a_command_deploys_are_read(pack_stub, tmp_path, command, files):
    found = gpu_findings(pack_stub, _cmd(command, dir=_files(tmp_path, files)))
    assert any(t in m for m in found for t in ("p5.48xlarge", "p4d.24xlarge", "nvidia.com/gpu", "H100")), (
        command,
        found,
    )


def test_a_gpu_request_in_a_script_kept_as_data_counts(pack_stub):
    """Modal's `gpu="H100:8"` in a function file a ConfigMap holds (a Job runs `modal deploy` on it)."""
    code = 'import modal\napp = modal.App()\n@app.function(gpu="H100:8")\ndef train(): ...\n'
    rows = [R("kubernetes:core/v1:ConfigMap", "cm", {"data": {"app.py": code}})]
    assert any("H100:8" in m for m in gpu_findings(pack_stub, rows))


def test_a_dependency_packaged_as_an_archive_is_rendered(pack_stub, tmp_path):
    """`helm dependency build` leaves charts/<name>-<version>.tgz: Helm unpacks and renders it."""
    sub = tmp_path / "w"
    _files(sub, {"Chart.yaml": "apiVersion: v2\nname: w\nversion: 0.1.0\n", "templates/d.yaml": GPU_SUBCHART})
    root = tmp_path / "app"
    _files(
        root,
        {
            "Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- {name: w, version: 0.1.0}\n",
            "values.yaml": "{}\n",
        },
    )
    (root / "charts").mkdir()
    with tarfile.open(root / "charts" / "w-0.1.0.tgz", "w:gz") as tar:
        tar.add(sub, arcname="w")
    rows = [R("kubernetes:helm.sh/v3:Release", "app", {"chart": str(root), "namespace": "ml"})]
    found = gpu_findings(pack_stub, rows)
    assert any("8 x H100" in m for m in found), found


def test_a_releases_post_renderer_script_is_read(pack_stub, tmp_path):
    """Helm pipes the rendered manifests through `postrender` before applying them: what it adds is applied."""
    script = "#!/bin/sh\nyq '.spec.template.spec.containers[0].resources.limits[\"nvidia.com/gpu\"] = 8'\n"
    folder = _files(tmp_path, {"add.sh": script})
    rows = [
        R(
            "kubernetes:helm.sh/v3:Release",
            "r",
            {
                "chart": "web",
                "repositoryOpts": {"repo": "https://charts.example.com"},
                "postrender": f"{folder}/add.sh",
            },
        )
    ]
    assert any("nvidia.com/gpu" in m for m in gpu_findings(pack_stub, rows))


def test_a_type_read_from_an_offline_secret_is_unknown_not_a_pass(pack_stub):
    """The offline preview cannot decrypt a `secure:` value; the pack reads its placeholder as unknown, so a
    resource declaring GPU capacity with it fails closed (the real preview decrypts and judges it)."""
    inst = R(
        "aws:ec2/instance:Instance",
        "t",
        {"instanceType": offline.SECRET_PLACEHOLDER, "ami": "ami-1", "tags": {cases.REQ: "20"}, **SECURE},
    )
    found = gpu_findings(pack_stub, [inst])
    assert any("instanceType" in m and "sizing requirement" in m for m in found), found


@pytest.mark.parametrize(
    "expression, blocked",
    [
        ("device.attributes['productName'] == 'NVIDIA H100 80GB HBM3'", True),
        ("device.attributes['vendor'] == 'mellanox'", False),
    ],
)
def test_a_dra_request_selecting_a_gpu_model_by_cel_is_evidence(pack_stub, expression, blocked):
    claim = {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "g",
                        "deviceClassName": "big-iron",
                        "count": 8,
                        "selectors": [{"cel": {"expression": expression}}],
                    }
                ]
            }
        }
    }
    found = mandatory(pack_stub, [R("kubernetes:resource.k8s.io/v1beta1:ResourceClaim", "c", claim)])
    assert any(p == "gpusizer-gpu-evidence" for p, _ in found) == blocked, found


def test_sprig_merge_and_regex_replace_render_as_helm_renders_them():
    """Sprig's `merge` is deep with the destination winning; Go's `regexReplaceAll` takes `${1}` groups."""
    tree = gotemplate.parse(
        '{{ $m := merge (dict "a" (dict "x" 1)) (dict "a" (dict "y" 2) "b" 3) }}{{ $m.a.x }}{{ $m.a.y }}{{ $m.b }}'
        ' {{ regexReplaceAll "(l)(4)" "nvidia-l4" "${2}${1}" }}',
        {},
    )
    assert gotemplate.Renderer({}, {}).render(tree, {}) == "123 nvidia-4l"
