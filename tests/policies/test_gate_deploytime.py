"""The gate on values other engines compute when they deploy, documents a tool launches from, and launches
written as code, over gRPC (Analyze and AnalyzeStack through the pack, as the engine sends them).

Each blocked case asserts the finding names what it saw (the type, or that it is computed when deployed);
each green case is a CPU or monitoring resource written the same way, which must pass."""

from __future__ import annotations

import base64
import json

import pytest

from gpusizer.policies import deploytime
from tests.policies import cases
from tests.policies.test_gate import SECURE, R, gpu_findings, mandatory

CFN = "aws:cloudformation/stack:Stack"
SFN = "aws:sfn/stateMachine:StateMachine"
ROLE = "arn:aws:iam::123456789012:role/r"


def _cfn(body: str, **props) -> list:
    return [R(CFN, "s", {"templateBody": body, **props})]


# --- CloudFormation, Step Functions and SSM documents, evaluated as their engines evaluate them ----------------
INSTANCE = (
    "Resources:\n  I:\n    Type: AWS::EC2::Instance\n    Properties:\n      ImageId: ami-1\n      InstanceType: {}\n"
)
DEPLOY_TIME_BLOCKED = {
    # Fn::Sub of a parameter's default: p4d + .24xlarge
    "sub-of-a-default": (
        _cfn("Parameters:\n  F: {Type: String, Default: p4d}\n" + INSTANCE.format("!Sub '${F}.24xlarge'")),
        "p4d.24xlarge",
    ),
    # Fn::Sub of a parameter the Pulumi resource gives
    "sub-of-a-given-parameter": (
        _cfn("Parameters:\n  F: {Type: String}\n" + INSTANCE.format("!Sub '${F}.48xlarge'"), parameters={"F": "p5"}),
        "p5.48xlarge",
    ),
    # a mapping row chosen by a parameter known only when deployed: every row it may choose counts
    "findinmap-by-an-open-parameter": (
        _cfn(
            "Parameters:\n  Env: {Type: String}\nMappings:\n  Size: {dev: {T: t3.small}, prod: {T: g6e.48xlarge}}\n"
            + INSTANCE.format("!FindInMap [Size, !Ref Env, T]")
        ),
        "g6e.48xlarge",
    ),
    # long form, in JSON: Fn::Join of two mapping cells
    "join-of-mapping-cells": (
        _cfn(
            json.dumps(
                {
                    "Mappings": {"M": {"x": {"a": "p5", "b": "48xlarge"}}},
                    "Resources": {
                        "I": {
                            "Type": "AWS::EC2::Instance",
                            "Properties": {
                                "InstanceType": {
                                    "Fn::Join": [
                                        ".",
                                        [{"Fn::FindInMap": ["M", "x", "a"]}, {"Fn::FindInMap": ["M", "x", "b"]}],
                                    ]
                                }
                            },
                        }
                    },
                }
            )
        ),
        "p5.48xlarge",
    ),
    # either branch of a condition may deploy
    "if-either-branch": (
        _cfn(
            "Conditions:\n  Big: !Equals [!Ref AWS::Region, us-east-1]\n"
            + INSTANCE.format("!If [Big, p5.48xlarge, t3.small]")
        ),
        "p5.48xlarge",
    ),
    # a dynamic reference: the type is read from SSM when CloudFormation deploys
    "ssm-dynamic-reference": (_cfn(INSTANCE.format("'{{resolve:ssm:/team/type}}'")), "computed when deployed"),
    # a parameter of an SSM parameter type holds a parameter's name; its value is read when deployed
    "ssm-parameter-type": (
        _cfn(
            "Parameters:\n  T: {Type: 'AWS::SSM::Parameter::Value<String>'}\n" + INSTANCE.format("!Ref T"),
            parameters={"T": "/team/type"},
        ),
        "computed when deployed",
    ),
    # Step Functions: States.Format of literals is computed (SageMaker's ml. prefix names the EC2 type)
    "states-format": (
        [
            R(
                SFN,
                "sm",
                {
                    "roleArn": ROLE,
                    "definition": json.dumps(
                        {
                            "StartAt": "T",
                            "States": {
                                "T": {
                                    "Type": "Task",
                                    "Resource": "arn:aws:states:::sagemaker:createTrainingJob.sync",
                                    "Parameters": {
                                        "ResourceConfig": {
                                            "InstanceCount": 8,
                                            "InstanceType.$": "States.Format('ml.{}.{}', 'p4d', '24xlarge')",
                                        }
                                    },
                                    "End": True,
                                }
                            },
                        }
                    ),
                },
            )
        ],
        "p4d.24xlarge",
    ),
    # a JSONPath into the execution's input: chosen by whoever starts it
    "states-path": (
        [
            R(
                SFN,
                "sm",
                {
                    "roleArn": ROLE,
                    "definition": json.dumps(
                        {
                            "StartAt": "L",
                            "States": {
                                "L": {
                                    "Type": "Task",
                                    "Resource": "arn:aws:states:::aws-sdk:ec2:runInstances",
                                    "Parameters": {"MinCount": 1, "MaxCount": 1, "InstanceType.$": "$.size"},
                                    "End": True,
                                }
                            },
                        }
                    ),
                },
            )
        ],
        "computed when deployed",
    ),
    # an SSM Automation runbook's `{{ Parameter }}` takes the parameter's default
    "automation-parameter-default": (
        [
            R(
                "aws:ssm/document:Document",
                "d",
                {
                    "documentType": "Automation",
                    "documentFormat": "YAML",
                    "content": "schemaVersion: '0.3'\nparameters:\n  F: {type: String, default: g5}\nmainSteps:\n"
                    "- name: l\n  action: aws:runInstances\n  inputs: {ImageId: ami-1, InstanceType: '{{ F }}.48xlarge'}\n",
                },
            )
        ],
        "g5.48xlarge",
    ),
}
DEPLOY_TIME_GREEN = {
    "sub-of-a-cpu-default": _cfn(
        "Parameters:\n  F: {Type: String, Default: m5}\n" + INSTANCE.format("!Sub '${F}.large'")
    ),
    "findinmap-over-cpu-rows": _cfn(
        "Parameters:\n  Env: {Type: String, AllowedValues: [dev, prod]}\n"
        "Mappings:\n  Size: {dev: {T: t3.small}, prod: {T: m6i.xlarge}}\n"
        + INSTANCE.format("!FindInMap [Size, !Ref Env, T]")
    ),
    "if-over-cpu-branches": _cfn(
        "Conditions:\n  Big: !Equals [!Ref AWS::Region, us-east-1]\n"
        + INSTANCE.format("!If [Big, c6i.large, t3.small]")
    ),
    "parameter-given-by-the-stack": _cfn(
        "Parameters:\n  T: {Type: String}\n" + INSTANCE.format("!Ref T"), parameters={"T": "t3.micro"}
    ),
    "automation-cpu-default": [
        R(
            "aws:ssm/document:Document",
            "d",
            {
                "documentType": "Automation",
                "documentFormat": "YAML",
                "content": "schemaVersion: '0.3'\nparameters:\n  S: {type: String, default: large}\nmainSteps:\n"
                "- name: l\n  action: aws:runInstances\n  inputs: {ImageId: ami-1, InstanceType: 'm5.{{ S }}'}\n",
            },
        )
    ],
}


@pytest.mark.parametrize("case", sorted(DEPLOY_TIME_BLOCKED))
def test_a_type_a_deploy_engine_computes_is_read_or_fails_closed(pack_stub, case):
    rows, seen = DEPLOY_TIME_BLOCKED[case]
    found = gpu_findings(pack_stub, rows)
    assert any(seen in m for m in found), (case, found)


@pytest.mark.parametrize("case", sorted(DEPLOY_TIME_GREEN))
def test_a_cpu_type_a_deploy_engine_computes_passes(pack_stub, case):
    assert mandatory(pack_stub, DEPLOY_TIME_GREEN[case]) == [], case


def test_deploy_time_values_are_every_value_they_may_take():
    """Hand-evaluated, as the CloudFormation and Step Functions references define the functions."""
    doc = {
        "Parameters": {"E": {"Type": "String", "AllowedValues": ["a", "b"]}, "F": {"Type": "String", "Default": "g6"}},
        "Mappings": {"M": {"a": {"s": "xlarge"}, "b": {"s": "12xlarge"}}},
        "R": {
            "join": {"Fn::Join": ["-", ["x", {"Ref": "F"}]]},
            "sub": {"Fn::Sub": ["${F}.${S}", {"S": {"Fn::FindInMap": ["M", {"Ref": "E"}, "s"]}}]},
            "select": {"Fn::Select": [1, ["t3.small", "g6.xlarge"]]},
            "split": {"Fn::Split": [",", "a,b"]},
            "InstanceType": {"Fn::GetAtt": ["X", "Type"]},
            "Other": {"Fn::ImportValue": "v"},
            "InstanceType.$": "States.Format('{}-{}', 'a', 7)",
        },
    }
    out, opened = deploytime.resolved(doc)
    r = out["R"]
    assert r["join"] == "x-g6"
    assert sorted(r["sub"]) == ["g6.12xlarge", "g6.xlarge"]  # the parameter allows a and b
    assert r["select"] == "g6.xlarge"
    assert r["split"] == ["a", "b"]
    assert r["Other"] == []  # not a type field: no value, and not reported
    assert out["R"]["InstanceType"] == "a-7"  # the `.$` field replaces the one it names
    assert [p for p, _ in opened] == ["R.InstanceType"]  # Fn::GetAtt in a type field


# --- documents a tool launches from, held as data ---------------------------------------------------------------
NODEPOOL_DOC = (
    "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: big}\nspec:\n  template:\n    spec:\n"
    "      requirements:\n      - {key: node.kubernetes.io/instance-type, operator: In, values: [p4de.24xlarge]}\n"
)
EKSCTL_DOC = (
    "apiVersion: eksctl.io/v1alpha5\nkind: ClusterConfig\nmetadata: {name: c, region: us-west-2}\n"
    "managedNodeGroups:\n- {name: g, instanceType: g6e.12xlarge, desiredCapacity: 6}\n"
)
LAUNCHERS = {
    "nodepool-in-a-configmap": (
        [R("kubernetes:core/v1:ConfigMap", "cm", {"metadata": {"name": "np"}, "data": {"pool.yaml": NODEPOOL_DOC}})],
        "p4de.24xlarge",
    ),
    "eksctl-config-in-a-secret-base64": (
        [
            R(
                "kubernetes:core/v1:Secret",
                "s",
                {"data": {"cluster.yaml": base64.b64encode(EKSCTL_DOC.encode()).decode()}},
            )
        ],
        "g6e.12xlarge",
    ),
    "skypilot-task-in-an-object": (
        [
            R(
                "aws:s3/bucketObjectv2:BucketObjectv2",
                "o",
                {
                    "bucket": "b",
                    "key": "train.yaml",
                    "content": "resources:\n  accelerators: A100-80GB:8\nrun: python t.py\n",
                },
            )
        ],
        "A100-80GB:8",
    ),
    "ray-cluster-config-in-a-configmap": (
        [
            R(
                "kubernetes:core/v1:ConfigMap",
                "cm",
                {
                    "data": {
                        "ray.yaml": "cluster_name: r\nprovider: {type: aws, region: us-east-1}\navailable_node_types:\n"
                        "  gpu: {node_config: {InstanceType: g5.48xlarge}, min_workers: 4, max_workers: 4}\n"
                    }
                },
            )
        ],
        "g5.48xlarge",
    ),
    "ansible-playbook-in-a-configmap": (
        [
            R(
                "kubernetes:core/v1:ConfigMap",
                "cm",
                {
                    "data": {
                        "site.yml": "- hosts: localhost\n  tasks:\n  - amazon.aws.ec2_instance:\n"
                        "      name: w\n      instance_type: p4d.24xlarge\n      count: 2\n"
                    }
                },
            )
        ],
        "p4d.24xlarge",
    ),
    "parallelcluster-config-in-an-object": (
        [
            R(
                "aws:s3/bucketObjectv2:BucketObjectv2",
                "o",
                {
                    "bucket": "b",
                    "key": "cluster.yaml",
                    "content": "Region: us-east-1\nImage: {Os: alinux2023}\nHeadNode: {InstanceType: c6i.large}\n"
                    "Scheduling:\n  Scheduler: slurm\n  SlurmQueues:\n  - Name: q\n    ComputeResources:\n"
                    "    - {Name: g, InstanceType: p5.48xlarge, MinCount: 4, MaxCount: 4}\n",
                },
            )
        ],
        "p5.48xlarge",
    ),
    "terraform-file-in-an-object": (
        [
            R(
                "aws:s3/bucketObjectv2:BucketObjectv2",
                "o",
                {
                    "bucket": "b",
                    "key": "infra/main.tf",
                    "content": 'resource "aws_instance" "w" {\n  instance_type = "g5.48xlarge"\n}\n',
                },
            )
        ],
        "g5.48xlarge",
    ),
    "cloudformation-template-in-an-object": (
        [
            R(
                "gcp:storage/bucketObject:BucketObject",
                "o",
                {"bucket": "b", "name": "t.yaml", "content": INSTANCE.format("p5.48xlarge")},
            )
        ],
        "p5.48xlarge",
    ),
}
RECORDS_GREEN = {
    # the NVIDIA device plugin's time-slicing config: it names the resource it shares, launches nothing
    "device-plugin-sharing-config": R(
        "kubernetes:core/v1:ConfigMap",
        "ts",
        {
            "data": {
                "any": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                "      replicas: 4\n"
            }
        },
    ),
    # an application's settings that list types: data a program reads
    "app-settings-listing-types": R(
        "kubernetes:core/v1:ConfigMap",
        "app",
        {"data": {"config.yaml": "allowed_instance_types: [g6.xlarge, p5.48xlarge]\nregion: us-east-1\n"}},
    ),
    # alerting rules on GPU metrics, kept as a manifest in a ConfigMap: a monitoring kind launches nothing
    "prometheus-rule-manifest": R(
        "kubernetes:core/v1:ConfigMap",
        "rules",
        {
            "data": {
                "rules.yaml": "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: gpu}\n"
                "spec:\n  groups:\n  - name: g\n    rules:\n    - alert: Idle\n"
                "      expr: avg(DCGM_FI_DEV_GPU_UTIL{instance_type='p5.48xlarge'}) < 10\n"
            }
        },
    ),
}


@pytest.mark.parametrize("case", sorted(LAUNCHERS))
def test_a_document_a_tool_launches_from_counts_wherever_it_is_kept(pack_stub, case):
    rows, seen = LAUNCHERS[case]
    found = gpu_findings(pack_stub, rows)
    assert any(seen in m for m in found), (case, found)


@pytest.mark.parametrize("case", sorted(RECORDS_GREEN))
def test_records_that_launch_nothing_pass(pack_stub, case):
    assert mandatory(pack_stub, [RECORDS_GREEN[case]]) == [], case


# --- launches written as code ------------------------------------------------------------------------------------
def _lambda(code: str) -> list:
    return [
        R(
            "aws:lambda/function:Function",
            "f",
            {
                "role": ROLE,
                "runtime": "python3.12",
                "handler": "index.handler",
                "code": {
                    "4dabf18193072939515e22adb298388d": "0def7320c3a5731c473e5ecbe6d01bc7",
                    "assets": {
                        "index.py": {
                            "4dabf18193072939515e22adb298388d": "c44067f5952c0a294b673a41bacd8c17",
                            "text": code,
                        }
                    },
                },
            },
        )
    ]


def _user_data(script: str) -> list:
    return [R("aws:ec2/instance:Instance", "w", {"instanceType": "t3.micro", **SECURE, "userData": script})]


CODE_BLOCKED = {
    "subprocess-argv-built": _lambda(
        "import subprocess, sys\nfam = sys.argv[1]\n"
        "subprocess.check_call(['aws', 'ec2', 'run-instances', '--instance-type', fam + '.48xlarge'])\n"
    ),
    "getattr-on-a-joined-name": _lambda(
        "import boto3, os\nc = boto3.client('ec2')\nt = os.environ['FAMILY'] + '.48xlarge'\n"
        "getattr(c, 'run_' + 'instances')(MinCount=1, MaxCount=1, InstanceType=t)\n"
    ),
    "pulumi-program-inside-a-function": _lambda(
        "import pulumi_gcp as gcp\nfrom pulumi import automation as auto\nimport os\n"
        "def prog():\n    gcp.compute.Instance('w', machine_type=os.environ['MT'] + '-highgpu-8g', zone='z')\n"
    ),
    "powershell-parenthesised-concatenation": _user_data(
        "<powershell>\n$f = 'p4d'\nNew-EC2Instance -ImageId ami-1 -InstanceType ($f + '.24xlarge') -MinCount 2\n</powershell>\n"
    ),
    "json-in-a-double-quoted-argument": _user_data(
        "#!/bin/bash\nS=24xlarge\naws sagemaker create-cluster --cluster-name c --instance-groups "
        '"[{\\"InstanceType\\":\\"ml.p4d.$S\\",\\"InstanceCount\\":4}]"\n'
    ),
}
CDK_ENUM = _lambda(
    "const t = ec2.InstanceType.of(ec2.InstanceClass.G5, ec2.InstanceSize.XLARGE48);\n"
    "new ec2.Instance(this, 'w', { vpc, machineImage, instanceType: t });\n"
)
K8S_CLIENT = _lambda(
    "from kubernetes import client\nlimits = {'nvidia.com' + '/gpu': '4'}\n"
    "client.CoreV1Api().create_namespaced_pod('default', client.V1Pod(spec=client.V1PodSpec(containers=["
    "client.V1Container(name='c', image='x', resources=client.V1ResourceRequirements(limits=limits))])))\n"
)


def test_a_gpu_clouds_api_payload_in_a_command_is_a_request(pack_stub):
    """RunPod's GraphQL `podFindAndDeployOnDemand` takes the GPU type and count in its input."""
    cmd = (
        "curl -s https://api.runpod.io/graphql -H 'content-type: application/json' -d '{\"query\": \"mutation "
        '{ podFindAndDeployOnDemand(input: {gpuTypeId: \\\\"NVIDIA H100 80GB HBM3\\\\", gpuCount: 8}) { id } }"}\''
    )
    found = gpu_findings(pack_stub, [R("command:local:Command", "c", {"create": cmd})])
    assert any("gpuCount: 8" in m for m in found), found


CODE_GREEN = {
    "two-literals-joined": _lambda(
        "import boto3\nboto3.client('ec2').run_instances(MinCount=1, MaxCount=1, InstanceType='m5.' + 'large')\n"
    ),
    "pulumi-literal-cpu": _lambda(
        "import pulumi_aws as aws\naws.ec2.Instance('w', ami='ami-1', instance_type='t3.micro')\n"
    ),
    "subprocess-literal-cpu": _lambda(
        "import subprocess\nsubprocess.check_call(['aws', 'ec2', 'run-instances', '--instance-type', 'c6i.large'])\n"
    ),
}


@pytest.mark.parametrize("case", sorted(CODE_BLOCKED))
def test_a_launch_built_in_code_fails_closed(pack_stub, case):
    found = gpu_findings(pack_stub, CODE_BLOCKED[case])
    assert any("built at run time" in m for m in found), (case, found)


def test_a_cdk_enum_pair_names_its_type(pack_stub):
    assert any("g5.48xlarge" in m for m in gpu_findings(pack_stub, CDK_ENUM))


def test_a_gpu_resource_name_a_program_concatenates_is_a_request(pack_stub):
    assert any("nvidia.com/gpu" in m for m in gpu_findings(pack_stub, K8S_CLIENT))


@pytest.mark.parametrize("case", sorted(CODE_GREEN))
def test_a_launch_of_a_literal_cpu_type_in_code_passes(pack_stub, case):
    assert mandatory(pack_stub, CODE_GREEN[case]) == [], case


# --- resizes of a pool with a short name; a compute class named for a family -------------------------------------
BUDGET = {"gpusizer-gpu-budget": {"enforcementLevel": "mandatory", "maxHourlyUsd": 10}}
L4_POOL = R(
    "gcp:container/nodePool:NodePool",
    "l4",
    {
        "name": "l4",
        "cluster": "c",
        "location": "us-central1-a",
        "nodeCount": 1,
        "nodeConfig": {"machineType": "g2-standard-4", "labels": {cases.GCP_REQ: "18"}},
    },
)


@pytest.mark.parametrize(
    "command",
    [
        "gcloud container clusters resize c --node-pool l4 --num-nodes 60 --zone us-central1-a --quiet",
        "gcloud container node-pools update l4 --cluster c --enable-autoscaling --min-nodes 30 --max-nodes 60",
    ],
)
def test_a_resize_of_a_pool_with_a_two_letter_name_counts(pack_stub, command):
    """60 one-L4 g2-standard-4 nodes at $0.70452/h (us-east4, the cheapest, gpusizer/data/catalog/gcp.csv) are
    $42.27/h, over the $10 budget; one node is $0.70."""
    rows = [L4_POOL, R("command:local:Command", "rs", {"create": command})]
    assert mandatory(pack_stub, [L4_POOL], BUDGET) == []
    assert any(p == "gpusizer-gpu-budget" for p, _ in mandatory(pack_stub, rows, BUDGET))


def test_a_two_letter_name_elsewhere_in_a_resize_names_nothing(pack_stub):
    command = "gcloud container clusters resize c --node-pool web --num-nodes 60 --labels=accel=l4 --quiet"
    rows = [L4_POOL, R("command:local:Command", "rs", {"create": command})]
    assert mandatory(pack_stub, rows, BUDGET) == []


@pytest.mark.parametrize("cls, blocked", [("a3-class", True), ("g2_batch", True), ("balanced", False)])
def test_a_compute_class_named_for_a_gpu_family_is_evidence(pack_stub, cls, blocked):
    dep = {
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"a": "d"}},
            "template": {
                "metadata": {"labels": {"a": "d"}},
                "spec": {"nodeSelector": {"cloud.google.com/compute-class": cls}, "containers": [{"name": "c"}]},
            },
        },
    }
    found = mandatory(pack_stub, [R("kubernetes:apps/v1:Deployment", "d", dep)])
    assert any(p == "gpusizer-gpu-evidence" for p, _ in found) == blocked, found


def test_python_adjacent_literals_are_one_type(pack_stub):
    code = "import boto3\nboto3.client('ec2').run_instances(MinCount=1, MaxCount=1, InstanceType=('g6e' '.48xlarge'))\n"
    assert any("g6e.48xlarge" in m for m in gpu_findings(pack_stub, _lambda(code)))


def test_a_nodejs_dynamic_providers_source_is_read_as_code(pack_stub):
    """A Node.js dynamic provider sends its source text, not a pickle: the type its launch builds from literals
    (`['g5', '48xlarge'].join('.')`) is the type it launches."""
    source = (
        "exports.handler = { async create(i) { await new EC2Client({}).send(new RunInstancesCommand("
        "{MinCount: 2, MaxCount: 2, InstanceType: ['g5', '48xlarge'].join('.')})); return {id: 'x'}; } }"
    )
    found = gpu_findings(pack_stub, [R("pulumi-nodejs:dynamic:Resource", "p", {"__provider": source})])
    assert any("g5.48xlarge" in m for m in found), found


def test_an_automation_runbooks_list_valued_input_resizes_the_group_it_names(pack_stub):
    """AWS-UpdateAutoScalingGroup takes its parameters as lists of strings: MaxSize ["60"] on a group of one-L4
    g2-standard-4 nodes is 60 x $0.70452/h = $42.27/h, over the $10 budget."""
    rows = [
        L4_POOL,
        R(
            "aws:cloudwatch/eventTarget:EventTarget",
            "t",
            {
                "rule": "nightly",
                "arn": "arn:aws:ssm:us-east-1::automation-definition/AWS-UpdateAutoScalingGroup",
                "input": json.dumps({"AutoScalingGroupName": ["l4"], "MaxSize": ["60"], "MinSize": ["60"]}),
            },
        ),
    ]
    assert any(p == "gpusizer-gpu-budget" for p, _ in mandatory(pack_stub, rows, BUDGET))
