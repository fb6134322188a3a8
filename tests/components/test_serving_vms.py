"""Serving on AWS/GCP VMs does its job: the boot config starts the decided server (validated by the
real `cloud-init schema`, and run with stub commands on PATH), a health-checked internal load
balancer routes to it, the autoscaler's metric is published, and the token never sits in user data."""

from __future__ import annotations

import base64
import json
import os
import pathlib
import shutil
import stat
import subprocess

import pytest
import yaml

import gpusizer
from gpusizer.base import errors
from gpusizer.components import GpuWorkload, GpuWorkloadArgs, aws, boot, gcp, serving
from tests.components.conftest import run_program, secret_value
from tests.components.training import GCP_PRETRAIN, P5, PRETRAIN, ULTRA
from tests.conftest import require_tools

CHAT = {
    "name": "chat",
    "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
    "inference": {"batch_size": 4, "context_length": 8192},
    "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
}
GPU_SCALING = {"min_replicas": 1, "max_replicas": 3, "metric": "gpu_utilization", "target": 70}
AWS_ARGS = GpuWorkloadArgs(aws_region="us-east-1", hf_token="hf_s3cret")
GCP_CHAT = {**CHAT, "placement": {"providers": ["gcp"], "regions": ["us-central1"]}}
LT, ASG = "aws:ec2/launchTemplate:LaunchTemplate", "aws:autoscaling/group:Group"
TG, NLB, LISTENER = "aws:lb/targetGroup:TargetGroup", "aws:lb/loadBalancer:LoadBalancer", "aws:lb/listener:Listener"
VM, TEMPLATE, MIG = (
    "gcp:compute/instance:Instance",
    "gcp:compute/instanceTemplate:InstanceTemplate",
    "gcp:compute/instanceGroupManager:InstanceGroupManager",
)


def _user_data(lt: dict) -> str:
    return base64.b64decode(lt["userData"]).decode()


def _files(cloud_config: str) -> dict[str, str]:
    doc = yaml.safe_load(cloud_config)
    return {f["path"]: f["content"] for f in doc["write_files"]}


@pytest.fixture(scope="module")
def cloud_init():
    (found,) = require_tools("cloud-init", install="Debian: apt-get install -y cloud-init")
    return found


def _schema_errors(cloud_init: str, text: str, tmp_path: pathlib.Path) -> subprocess.CompletedProcess:
    path = tmp_path / "user-data.yaml"
    path.write_text(text)
    return subprocess.run([cloud_init, "schema", "--config-file", str(path)], capture_output=True, text=True)


def test_aws_user_data_is_valid_cloud_config_that_starts_the_server(cloud_init, tmp_path):
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", CHAT, args=AWS_ARGS))
    text = _user_data(mocks.one(LT))
    assert text.startswith("#cloud-config\n")
    done = _schema_errors(cloud_init, text, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = yaml.safe_load(text)
    assert ["systemctl", "enable", "--now", "gpusizer-serve.service"] in doc["runcmd"]
    assert "hf_s3cret" not in text  # the token is fetched at boot, never written into user data


def test_cloud_init_schema_refuses_a_broken_config(cloud_init, tmp_path):
    # The check is real: a misspelt write_files key fails it.
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", CHAT, args=AWS_ARGS))
    doc = yaml.safe_load(_user_data(mocks.one(LT)))
    doc["write_files"][0]["contents"] = doc["write_files"][0].pop("content")
    done = _schema_errors(cloud_init, "#cloud-config\n" + yaml.safe_dump(doc), tmp_path)
    assert done.returncode != 0 and "contents" in done.stdout + done.stderr


def test_gcp_user_data_is_valid_cloud_config_with_the_ops_agent(cloud_init, tmp_path):
    spec = {**GCP_CHAT, "deploy": {"autoscaling": GPU_SCALING}}
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs(hf_token="hf_s3cret")))
    text = mocks.one(TEMPLATE)["metadata"]["user-data"]
    done = _schema_errors(cloud_init, text, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    agent = _files(text)[boot.AGENT_SCRIPT]
    assert "add-google-cloud-ops-agent-repo.sh --also-install" in agent
    assert "hf_s3cret" not in text


def _stubs(tmp_path: pathlib.Path, names: dict[str, str]) -> pathlib.Path:
    """Stub commands that log their argv (one JSON list per line) and print a canned answer."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.jsonl"
    for name, answer in names.items():
        answer, rc = answer if isinstance(answer, tuple) else (answer, 0)
        path = bin_dir / name
        path.write_text(f"""#!{shutil.which("python3")}
import json, sys
with open({str(log)!r}, "a") as f:
    f.write(json.dumps([{name!r}, *sys.argv[1:]]) + "\\n")
sys.stdout.write({answer!r})
sys.exit({rc})
""")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def _run_script(tmp_path, script: str, answers: dict[str, str]) -> tuple[list[list[str]], pathlib.Path]:
    root = tmp_path / "root"
    bin_dir = _stubs(tmp_path, answers)
    path = tmp_path / "serve.sh"
    path.write_text(script)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "GPUSIZER_ROOT": str(root)}
    done = subprocess.run(["bash", str(path)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    return calls, root


# mountpoint and blkid answer "no" (exit 1): a fresh VM, nothing mounted or formatted yet.
STUBS = {
    "mountpoint": ("", 1),
    "lsblk": "",
    "blkid": ("", 1),
    "mkfs.ext4": "",
    "mount": "",
    "docker": "",
    "aws": "hf_s3cret",
    "gcloud": "hf_s3cret",
}


def test_aws_serve_script_launches_the_exact_server_command(tmp_path):
    plan = gpusizer.plan(CHAT)
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", CHAT, args=AWS_ARGS))
    script = _files(_user_data(mocks.one(LT)))[boot.SCRIPT]
    calls, root = _run_script(tmp_path, script, STUBS)
    (fetch,) = [c for c in calls if c[0] == "aws"]
    assert fetch[:3] == ["aws", "secretsmanager", "get-secret-value"]
    assert fetch[fetch.index("--secret-id") + 1] == "arn:aws:mock:us-east-1:123456789012:chat-aws-hf-token"
    run = [c for c in calls if c[:2] == ["docker", "run"]][-1]
    f = plan.chosen.fit
    assert run == [
        "docker",
        "run",
        "--rm",
        "--name",
        "vllm",
        "--gpus",
        "all",
        "--ipc=host",
        "-p",
        "8000:8000",
        "-v",
        f"{root}/opt/gpusizer/cache:/root/.cache/huggingface",
        "--env-file",
        f"{root}/run/gpusizer/env",
        "vllm/vllm-openai:v0.11.0",
        "--model",
        "meta-llama/Llama-3.1-8B-Instruct",  # the Instruct id the spec named
        "--tensor-parallel-size",
        str(f.tensor_parallel),
        "--max-model-len",
        "8192",
        "--max-num-seqs",
        "4",
        "--gpu-memory-utilization",
        "0.9",
        "--port",
        "8000",
        "--dtype",
        "bfloat16",
    ]
    env = root / "run/gpusizer/env"
    assert env.read_text() == "HF_TOKEN=hf_s3cret\n"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600  # root-only


def test_serve_script_caches_weights_on_a_local_nvme_disk_big_enough(tmp_path):
    b = boot.Boot(
        cloud="aws",
        workload="chat",
        image=serving.VLLM_IMAGE,
        args=("--model", "x"),
        weights_bytes=16 * 10**9,
        region="us-east-1",
    )
    stubs = {**STUBS, "lsblk": "3800000000000\n"}  # lsblk -b: the disk's size in bytes (3.8 TB)
    calls, root = _run_script(
        tmp_path,
        boot.serve_script(b).replace(
            "lsblk -dnpo NAME,MODEL | awk '/Instance Storage/ {print $1; exit}'", "echo /dev/nvme1n1"
        ),
        stubs,
    )
    assert ["mkfs.ext4", "-q", "-F", "/dev/nvme1n1"] in calls
    assert ["mount", "/dev/nvme1n1", f"{root}/opt/gpusizer/cache"] in calls
    # A disk smaller than the weights is left alone: the root disk holds them.
    small = {**stubs, "lsblk": "1000\n"}
    (tmp_path / "small").mkdir()
    calls, _ = _run_script(
        tmp_path / "small",
        boot.serve_script(b).replace(
            "lsblk -dnpo NAME,MODEL | awk '/Instance Storage/ {print $1; exit}'", "echo /dev/nvme1n1"
        ),
        small,
    )
    assert not [c for c in calls if c[0] in ("mkfs.ext4", "mount")]


def test_gcp_serve_script_reads_the_token_from_secret_manager(tmp_path):
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", GCP_CHAT, args=GpuWorkloadArgs(hf_token="hf_s3cret")))
    script = _files(mocks.one(VM)["metadata"]["user-data"])[boot.SCRIPT]
    calls, root = _run_script(tmp_path, script, STUBS)
    (fetch,) = [c for c in calls if c[0] == "gcloud"]
    assert fetch == [
        "gcloud",
        "secrets",
        "versions",
        "access",
        "latest",
        "--secret=chat-hf-token-dev",
        "--project=my-project",
    ]
    assert (root / "run/gpusizer/env").read_text() == "HF_TOKEN=hf_s3cret\n"
    secret = mocks.one("gcp:secretmanager/secret:Secret")
    reader = mocks.one("gcp:secretmanager/secretIamMember:SecretIamMember")
    assert reader["role"] == "roles/secretmanager.secretAccessor"
    assert (
        reader["member"]
        == f"serviceAccount:{mocks.one('gcp:serviceaccount/account:Account')['accountId']}@my-project.iam.gserviceaccount.com"
    )
    assert secret["secretId"] == "chat-hf-token-dev"
    assert secret_value(mocks.one("gcp:secretmanager/secretVersion:SecretVersion")["secretData"]) == "hf_s3cret"
    assert gcp.CLOUD_PLATFORM in mocks.one(VM)["serviceAccount"]["scopes"]  # Secret Manager needs it


def test_aws_group_is_behind_a_health_checked_internal_nlb():
    spec = {**CHAT, "deploy": {"replicas": 2}}
    plan = gpusizer.plan(spec)
    mocks, _, seen = run_program(lambda: GpuWorkload("chat", spec, args=AWS_ARGS))
    tg, nlb, listener, asg = mocks.one(TG), mocks.one(NLB), mocks.one(LISTENER), mocks.one(ASG)
    assert (tg["port"], tg["protocol"], tg["targetType"]) == (8000, "TCP", "instance")
    assert (tg["healthCheck"]["protocol"], tg["healthCheck"]["path"]) == ("HTTP", "/health")
    assert (nlb["loadBalancerType"], nlb["internal"]) == ("network", True)
    assert listener["defaultActions"] == [
        {"type": "forward", "targetGroupArn": "arn:aws:mock:us-east-1:123456789012:chat-aws-tg"}
    ]
    assert (listener["port"], listener["protocol"]) == (8000, "TCP")
    # The group replaces instances the load balancer finds unhealthy, after the model's load time.
    assert asg["healthCheckType"] == "ELB" and asg["targetGroupArns"] == [
        listener["defaultActions"][0]["targetGroupArn"]
    ]
    assert asg["healthCheckGracePeriod"] == serving.load_seconds(plan) > 600


def test_aws_single_instance_is_registered_with_the_target_group():
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", CHAT, args=AWS_ARGS))
    attach = mocks.one("aws:lb/targetGroupAttachment:TargetGroupAttachment")
    assert attach["targetId"] == "chat-aws-instance-id" and attach["port"] == 8000


def test_expose_none_keeps_instances_only():
    spec = {**CHAT, "deploy": {"expose": "none"}}
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=AWS_ARGS))
    assert not mocks.of_type(TG) and not mocks.of_type(NLB)
    (sg,) = mocks.of_type("aws:ec2/securityGroup:SecurityGroup")
    assert not sg.inputs.get("ingress")  # nothing comes in
    assert mocks.one(LT)["userData"]  # the server still starts
    gcp_spec = {**GCP_CHAT, "deploy": {"expose": "none"}}
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", gcp_spec, args=GpuWorkloadArgs()))
    assert not mocks.of_type("gcp:compute/forwardingRule:ForwardingRule")
    assert not mocks.of_type("gcp:compute/firewall:Firewall")


def test_aws_gpu_scaling_metric_is_published_by_group_and_the_role_may_publish_it():
    spec = {**CHAT, "deploy": {"autoscaling": GPU_SCALING}}
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=AWS_ARGS))
    files = _files(_user_data(mocks.one(LT)))
    config = json.loads(files[boot.CW_CONFIG])
    metrics = config["metrics"]
    assert metrics["namespace"] == "CWAgent"
    assert metrics["append_dimensions"]["AutoScalingGroupName"] == "${aws:AutoScalingGroupName}"
    assert ["AutoScalingGroupName"] in metrics["aggregation_dimensions"]
    assert "utilization_gpu" in metrics["metrics_collected"]["nvidia_gpu"]["measurement"]
    # The policy tracks that very series: nvidia_smi_<measurement>, dimension AutoScalingGroupName only.
    target = mocks.one("aws:autoscaling/policy:Policy")["targetTrackingConfiguration"]["customizedMetricSpecification"]
    assert (target["namespace"], target["metricName"]) == ("CWAgent", "nvidia_smi_utilization_gpu")
    assert [d["name"] for d in target["metricDimensions"]] == ["AutoScalingGroupName"]
    assert "amazon-cloudwatch-agent-ctl -a fetch-config -m ec2 -s" in files[boot.AGENT_SCRIPT]
    statements = json.loads(mocks.one("aws:iam/rolePolicy:RolePolicy")["policy"])["Statement"]
    put = next(s for s in statements if s["Action"] == "cloudwatch:PutMetricData")
    assert put["Condition"] == {"StringEquals": {"cloudwatch:namespace": "CWAgent"}}
    read = next(s for s in statements if s["Action"] == "secretsmanager:GetSecretValue")
    assert read["Resource"] == "arn:aws:mock:us-east-1:123456789012:chat-aws-hf-token"  # that secret only


def test_gcp_gpu_scaling_account_may_write_metrics():
    spec = {**GCP_CHAT, "deploy": {"autoscaling": GPU_SCALING}}
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs()))
    member = mocks.one("gcp:projects/iAMMember:IAMMember")
    assert (member["project"], member["role"]) == ("my-project", "roles/monitoring.metricWriter")
    assert member["member"].startswith("serviceAccount:gpusizer-chat-dev@")


def test_gcp_serving_group_is_behind_a_health_checked_internal_load_balancer():
    spec = {**GCP_CHAT, "deploy": {"replicas": 2}}
    plan = gpusizer.plan(spec)
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs()))
    health = mocks.one("gcp:compute/regionHealthCheck:RegionHealthCheck")
    assert health["httpHealthCheck"] == {"port": 8000, "requestPath": "/health"}
    backend = mocks.one("gcp:compute/regionBackendService:RegionBackendService")
    mig = mocks.one(MIG)
    assert backend["loadBalancingScheme"] == "INTERNAL" and backend["healthChecks"] == "chat-gcp-health-id"
    assert backend["backends"][0]["group"].endswith(f"/instanceGroups/{mig['name']}")
    rule = mocks.one("gcp:compute/forwardingRule:ForwardingRule")
    assert (rule["loadBalancingScheme"], rule["ports"], rule["backendService"]) == (
        "INTERNAL",
        ["8000"],
        "chat-gcp-backend-id",
    )
    assert mig["autoHealingPolicies"] == {
        "healthCheck": "chat-gcp-health-id",
        "initialDelaySec": min(3600, serving.load_seconds(plan)),
    }
    fw = mocks.one("gcp:compute/firewall:Firewall")
    assert set(gcp.HEALTH_CHECK_RANGES) <= set(fw["sourceRanges"]) and "0.0.0.0/0" not in fw["sourceRanges"]
    assert fw["targetTags"] == mocks.one(TEMPLATE)["tags"] == [gcp.serve_tag("chat")]


def test_gcp_single_vm_joins_the_load_balancer_through_an_instance_group():
    mocks, _, seen = run_program(lambda: GpuWorkload("chat", GCP_CHAT, args=GpuWorkloadArgs()))
    group = mocks.one("gcp:compute/instanceGroup:InstanceGroup")
    assert group["instances"] == ["https://www.googleapis.com/compute/v1/projects/my-project/chat-gcp-vm"]


def test_unpinned_or_too_old_image_is_refused_naming_the_field():
    for image, words in (
        ("vllm/vllm-openai:latest", "pins no vLLM release"),
        ("vllm/vllm-openai", "pins no"),
        ("nginx:1.27", "vLLM's OpenAI server"),
    ):
        spec = {**CHAT, "deploy": {"image": image}}
        with pytest.raises(errors.SpecError, match=words) as e:
            run_program(lambda spec=spec: GpuWorkload("chat", spec, args=AWS_ARGS))
        assert e.value.field == "deploy.image"


def test_only_flags_the_image_release_has(tiny_pools):
    spec = {**CHAT, "placement": {"providers": ["onprem"]}, "deploy": {"replicas": 2}}
    import dataclasses

    d = gpusizer.plan(spec, pools=tiny_pools)
    fit = d.chosen.fit._replace(tensor_parallel=4, replicas_per_node=2)  # 2 x TP4 on an 8-GPU node
    plan = dataclasses.replace(d, chosen=dataclasses.replace(d.chosen, fit=fit))
    assert "--data-parallel-size" in serving.vllm_args(plan, "vllm/vllm-openai:v0.11.0")
    with pytest.raises(errors.SpecError, match="--data-parallel-size"):
        serving.vllm_args(plan, "vllm/vllm-openai:v0.6.3")


def test_training_vm_starts_no_server():
    train = {
        "name": "train",
        "model": {"name": "llama-3.1-8b"},
        "task": "training",
        "training": {"sequence_length": 2048},
        "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
    }
    mocks, _, _ = run_program(lambda: GpuWorkload("train", train, args=AWS_ARGS))
    assert not mocks.one(LT).get("userData") and not mocks.of_type(NLB)
    assert not mocks.of_type("aws:secretsmanager/secret:Secret")


def test_efa_security_group_allows_all_traffic_in_and_out_to_itself():
    mocks, _, _ = run_program(
        lambda: GpuWorkload("pretrain", PRETRAIN, args=GpuWorkloadArgs(aws_region="us-east-1", catalog=P5))
    )
    (sg,) = [r.inputs for r in mocks.of_type("aws:ec2/securityGroup:SecurityGroup") if r.name == "pretrain-aws-sg"]
    rule = {"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}
    assert rule in sg["ingress"] and rule in sg["egress"]


@pytest.mark.parametrize(
    "reservation, block, target, market",
    [
        ("cr-0123456789abcdef0", False, {"capacityReservationId": "cr-0123456789abcdef0"}, None),
        (
            "arn:aws:resource-groups:us-east-1:123456789012:group/p5-odcrs",
            False,
            {"capacityReservationResourceGroupArn": "arn:aws:resource-groups:us-east-1:123456789012:group/p5-odcrs"},
            None,
        ),
        (
            "cr-0123456789abcdef0",
            True,
            {"capacityReservationId": "cr-0123456789abcdef0"},
            {"marketType": "capacity-block"},
        ),
    ],
)
def test_p5_capacity_comes_from_the_named_reservation_or_capacity_block(reservation, block, target, market):
    spec = {**PRETRAIN, "deploy": {"capacity_reservation": reservation, "capacity_block": block}}
    mocks, _, _ = run_program(
        lambda: GpuWorkload("pretrain", spec, args=GpuWorkloadArgs(aws_region="us-east-1", catalog=P5))
    )
    lt, asg = mocks.one(LT), mocks.one(ASG)
    assert lt["capacityReservationSpecification"] == {"capacityReservationTarget": target}
    assert lt.get("instanceMarketOptions") == market
    assert asg["launchTemplate"]["id"] == "pretrain-aws-lt-id" and not asg.get("mixedInstancesPolicy")
    assert asg["waitForCapacityTimeout"] != "0"  # no capacity fails `up`
    consumption = "capacity-block" if block else "capacity-reservation"
    assert lt["tags"]["gpusizer:consumption"] == consumption
    if block:  # priced at the published Capacity Block rate, $39.33/h per p5.48xlarge in us-east-1 (2024-12)
        assert lt["tags"]["gpusizer:hourly-usd"] == "39.3300"
        assert float(
            asg["tags"][[t["key"] for t in asg["tags"]].index("gpusizer:hourly-usd")]["value"]
        ) == pytest.approx(39.33 * gpusizer.plan(spec, catalog=P5).chosen.instances)


@pytest.mark.parametrize(
    "deploy, words",
    [
        ({"capacity_reservation": "odcr-123"}, "is no EC2 capacity reservation"),
        (
            {"capacity_reservation": "arn:aws:resource-groups:us-east-1:123456789012:group/x", "capacity_block": True},
            "targeted by its reservation id",
        ),
    ],
)
def test_a_reservation_ec2_cannot_take_is_refused(deploy, words):
    spec = {**PRETRAIN, "deploy": deploy}
    with pytest.raises(errors.SpecError, match=words):
        run_program(lambda: GpuWorkload("pretrain", spec, args=GpuWorkloadArgs(aws_region="us-east-1", catalog=P5)))


def test_gcp_roce_has_no_firewall_and_the_documented_nic_layout():
    mocks, _, _ = run_program(lambda: GpuWorkload("pretrain", GCP_PRETRAIN, args=GpuWorkloadArgs(catalog=ULTRA)))
    nets = {r.name: r.inputs for r in mocks.of_type("gcp:compute/network:Network")}
    (roce,) = [n for n, i in nets.items() if i.get("networkProfile", "").endswith("-vpc-roce")]
    walls = mocks.of_type("gcp:compute/firewall:Firewall")
    assert not [w for w in walls if w.inputs["network"] == f"{roce}-id"]
    nics = mocks.one(TEMPLATE)["networkInterfaces"]
    assert [n.get("nicType") for n in nics] == ["GVNIC", "GVNIC"] + ["MRDMA"] * 8
    assert len({n["network"] for n in nics[:2]}) == 2  # two regular VPCs for the gVNICs


def test_gcp_flex_start_group_is_created_by_a_resize_request():
    mocks, _, _ = run_program(lambda: GpuWorkload("pretrain", GCP_PRETRAIN, args=GpuWorkloadArgs(catalog=ULTRA)))
    plan = gpusizer.plan(GCP_PRETRAIN, catalog=ULTRA)
    mig, resize = mocks.one(MIG), mocks.one("gcp:compute/resizeRequest:ResizeRequest")
    assert mig["targetSize"] == 0 and resize["resizeBy"] == plan.chosen.instances
    assert resize["requestedRunDuration"] == {"seconds": str(7 * 24 * 3600)}
    assert mocks.one(TEMPLATE)["scheduling"]["provisioningModel"] == "FLEX_START"


def test_gcp_serving_is_never_placed_on_flex_start():
    spec = {**GCP_CHAT, "placement": {"providers": ["gcp"], "regions": ["us-central1"]}}
    with pytest.raises(errors.SpecError, match="flex-start") as e:
        run_program(lambda: GpuWorkload("chat", spec, args=GpuWorkloadArgs(catalog=ULTRA)))
    assert e.value.field == "placement.purchase"
    # With a reservation it is RESERVATION_BOUND, with the termination action the API requires.
    res = {**spec, "deploy": {"capacity_reservation": "ultra-res"}}
    mocks, _, _ = run_program(lambda: GpuWorkload("chat", res, args=GpuWorkloadArgs(catalog=ULTRA)))
    sched = mocks.one(VM)["scheduling"]
    assert (sched["provisioningModel"], sched["instanceTerminationAction"]) == ("RESERVATION_BOUND", "DELETE")


def test_aws_check_runs_before_anything_is_registered():
    spec = {**CHAT, "deploy": {"image": "vllm/vllm-openai:latest"}}
    plan = gpusizer.plan(spec)
    with pytest.raises(errors.SpecError):
        aws.check(plan, AWS_ARGS)


def test_serving_across_nodes_is_refused_before_anything_is_registered():
    # 405B in bf16 (~756 GiB of weights) does not fit one 8 x H100 node: PP across nodes, which one
    # vLLM server per node cannot serve.
    spec = {**CHAT, "model": {"name": "llama-3.1-405b"}, "inference": {"batch_size": 1, "context_length": 4096}}
    d = gpusizer.plan(spec, catalog=P5)
    assert d.chosen.fit.pipeline_stages > 1
    errors_seen = []

    def prog():
        try:
            GpuWorkload("chat", spec, args=GpuWorkloadArgs(aws_region="us-east-1", catalog=P5))
        except errors.SpecError as e:
            errors_seen.append(e)

    mocks, _, _ = run_program(prog)
    assert errors_seen and errors_seen[0].field == "placement.gpus" and "Ray" in str(errors_seen[0])
    assert mocks.resources == []


def test_user_data_fits_ec2s_16_kb(tmp_path):
    mocks, _, _ = run_program(
        lambda: GpuWorkload("chat", {**CHAT, "deploy": {"autoscaling": GPU_SCALING}}, args=AWS_ARGS)
    )
    assert len(_user_data(mocks.one(LT)).encode()) < 16 * 1024
