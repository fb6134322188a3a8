"""What a serving VM runs at boot: cloud-init user data that starts the decided vLLM server.

One cloud-config serves both clouds: AWS passes it as user data, GCP as the
`user-data` metadata value, which cloud-init reads on the Ubuntu-based Deep
Learning images of both (cloud-init docs, "Datasources": EC2, GCE). It writes

- `/opt/gpusizer/serve.sh`: puts the weights cache on the first local NVMe disk
  big enough for the weights (formatted and mounted at `/opt/gpusizer/cache`), else
  on the root disk (sized for the weights: Workload.disk_gib); fetches the Hugging
  Face token from AWS Secrets Manager or GCP Secret Manager with the instance's
  own role, into a root-only env file under /run (never into the user data,
  which any process on the host can read from the metadata service); and runs
  the pinned vLLM server container in the foreground with the decision's flags
  (gpusizer.components.serving.vllm_args);
- `gpusizer-serve.service`, a systemd unit that runs it at every boot and
  restarts it on failure;
- the metrics agent the autoscaler reads: on AWS the CloudWatch agent with an
  `nvidia_gpu` section aggregated by `AutoScalingGroupName` (so
  `CWAgent/nvidia_smi_utilization_gpu` exists per group, which target tracking
  reads); on GCP the Ops Agent (its `agent.googleapis.com/gpu/utilization`).

The image needs Docker with the NVIDIA Container Toolkit: the AWS Deep Learning
AMIs (DLAMI release notes: "Docker and NVIDIA Container Toolkit") ship both.
`GPUSIZER_ROOT` (unset on a VM) prefixes every path the script writes, so tests
can run it with stub commands.
"""

from __future__ import annotations

import dataclasses
import json
import shlex

import yaml

from gpusizer.components import serving

SCRIPT = "/opt/gpusizer/serve.sh"
AGENT_SCRIPT = "/opt/gpusizer/agent.sh"
UNIT = "/etc/systemd/system/gpusizer-serve.service"
CW_CONFIG = "/opt/aws/amazon-cloudwatch-agent/etc/amazon-cloudwatch-agent.json"
CACHE = "/opt/gpusizer/cache"  # mounted into the container as Hugging Face's cache
ENV_FILE = "/run/gpusizer/env"  # tmpfs: the token never reaches a disk or the user data
CONTAINER = "vllm"
# CloudWatch agent package per Region and architecture (Amazon CloudWatch User Guide, "Download and
# install the CloudWatch agent using the command line": the Region-specific S3 links).
CW_AGENT_URL = (
    "https://amazoncloudwatch-agent-{region}.s3.{region}.amazonaws.com/ubuntu/{arch}/latest/amazon-cloudwatch-agent.deb"
)
CW_AGENT_CTL = "/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl"
# GCP Ops Agent (GCP docs, "Install the Ops Agent on an individual VM": the repository script with --also-install).
OPS_AGENT_URL = "https://dl.google.com/cloudagents/add-google-cloud-ops-agent-repo.sh"


@dataclasses.dataclass(frozen=True)
class Boot:
    """Everything the boot script needs, as plain values."""

    cloud: str
    """"aws" or "gcp": which secret store and metrics agent."""
    workload: str
    image: str
    """The pinned server image."""
    args: tuple[str, ...]
    """The server's flags (serving.vllm_args)."""
    weights_bytes: int
    """Size of the weights: a local NVMe disk smaller than this is not used for the cache."""
    region: str
    token_secret: str | None = None
    """AWS: the Secrets Manager secret ARN; GCP: "projects/<p>/secrets/<id>"; None: no token."""
    gpu_metric: bool = False
    """Install the metrics agent the GPU-utilization autoscaler reads."""


def cloudwatch_config() -> dict:
    """The CloudWatch agent's config: GPU metrics per instance, and aggregated by Auto Scaling group.

    `append_dimensions` adds AutoScalingGroupName and InstanceId to every metric;
    `aggregation_dimensions` makes the agent also publish each metric with only
    AutoScalingGroupName, the series the target-tracking policy names (Amazon
    CloudWatch User Guide, "Manually create or edit the CloudWatch agent configuration
    file": append_dimensions, aggregation_dimensions; "Collect NVIDIA GPU metrics":
    nvidia_gpu, utilization_gpu -> nvidia_smi_utilization_gpu).
    """
    return {
        "agent": {"metrics_collection_interval": 60},
        "metrics": {
            "namespace": serving.CW_GPU_NAMESPACE,
            "append_dimensions": {
                "AutoScalingGroupName": "${aws:AutoScalingGroupName}",
                "InstanceId": "${aws:InstanceId}",
            },
            "aggregation_dimensions": [["AutoScalingGroupName"]],
            "metrics_collected": {
                "nvidia_gpu": {
                    "measurement": ["utilization_gpu", "memory_used", "memory_total"],
                    "metrics_collection_interval": 60,
                }
            },
        },
    }


def server_command(b: Boot) -> list[str]:
    """The exact command serve.sh ends with (cache path without GPUSIZER_ROOT)."""
    return [
        "docker",
        "run",
        "--rm",
        "--name",
        CONTAINER,
        "--gpus",
        "all",
        "--ipc=host",
        "-p",
        f"{serving.PORT}:{serving.PORT}",
        "-v",
        f"{CACHE}:{serving.HF_CACHE}",
        "--env-file",
        ENV_FILE,
        b.image,
        *b.args,
    ]


def serve_script(b: Boot) -> str:
    """/opt/gpusizer/serve.sh: cache, token, then exec the server."""
    if b.token_secret is None:
        fetch = ": # no Hugging Face token configured (gpusizer:hfToken): public weights only"
    elif b.cloud == "aws":
        fetch = (
            "TOKEN=$(aws secretsmanager get-secret-value --region "
            + shlex.quote(b.region)
            + " --secret-id "
            + shlex.quote(b.token_secret)
            + " --query SecretString --output text)\n"
            "printf '%s=%s\\n' " + serving.HF_TOKEN_ENV + ' "$TOKEN" > "$ENV_FILE"'
        )
    else:
        project, _, secret = b.token_secret.removeprefix("projects/").partition("/secrets/")
        fetch = (
            "TOKEN=$(gcloud secrets versions access latest --secret="
            + shlex.quote(secret)
            + " --project="
            + shlex.quote(project)
            + ")\n"
            "printf '%s=%s\\n' " + serving.HF_TOKEN_ENV + ' "$TOKEN" > "$ENV_FILE"'
        )
    if b.cloud == "aws":  # instance store volumes report this model (AWS EC2 User Guide, "Instance store volumes")
        nvme = "lsblk -dnpo NAME,MODEL | awk '/Instance Storage/ {print $1; exit}'"
    else:  # local SSDs are listed by id (GCP docs, "Format and mount a Local SSD device")
        nvme = "readlink -f /dev/disk/by-id/google-local-nvme-ssd-0 2>/dev/null || true"
    docker = (
        " ".join(shlex.quote(a) for a in server_command(b))
        .replace(shlex.quote(f"{CACHE}:{serving.HF_CACHE}"), f'"$CACHE:{serving.HF_CACHE}"')
        .replace(f"--env-file {ENV_FILE}", '--env-file "$ENV_FILE"')
    )
    return f"""#!/bin/bash
# gpusizer: start the vLLM server sized for workload {b.workload} (written by cloud-init).
set -euo pipefail
CACHE="${{GPUSIZER_ROOT:-}}{CACHE}"
ENV_FILE="${{GPUSIZER_ROOT:-}}{ENV_FILE}"
NEED_BYTES={b.weights_bytes}
mkdir -p "$CACHE"
# Weights cache: the first local NVMe disk that holds the weights, else the root disk.
if ! mountpoint -q "$CACHE"; then
  disk=$({nvme})
  if [ -n "$disk" ] && [ "$(lsblk -bdno SIZE "$disk")" -ge "$NEED_BYTES" ]; then
    blkid "$disk" >/dev/null 2>&1 || mkfs.ext4 -q -F "$disk"
    mount "$disk" "$CACHE"
  fi
fi
# The Hugging Face token, read with the instance's own role, into a root-only file on tmpfs.
umask 077
mkdir -p "$(dirname "$ENV_FILE")"
: > "$ENV_FILE"
{fetch}
if ! command -v docker >/dev/null; then
  echo "gpusizer: the image has no docker; serving needs Docker with the NVIDIA Container Toolkit (deploy.machine_image)" >&2
  exit 1
fi
docker rm -f {CONTAINER} >/dev/null 2>&1 || true
exec {docker}
"""


def agent_script(b: Boot) -> str:
    """/opt/gpusizer/agent.sh: install and start the metrics agent the autoscaler reads."""
    if b.cloud == "aws":
        url = CW_AGENT_URL.format(region=b.region, arch="$arch")
        body = f"""arch=$(dpkg --print-architecture)
curl -fsSL -o /tmp/amazon-cloudwatch-agent.deb "{url}"
dpkg -i -E /tmp/amazon-cloudwatch-agent.deb
{CW_AGENT_CTL} -a fetch-config -m ec2 -s -c file:{CW_CONFIG}"""
    else:
        body = f"""curl -fsSL -o /tmp/add-google-cloud-ops-agent-repo.sh {OPS_AGENT_URL}
bash /tmp/add-google-cloud-ops-agent-repo.sh --also-install"""
    return f"#!/bin/bash\n# gpusizer: the metrics agent the autoscaler reads.\nset -euo pipefail\n{body}\n"


# systemd restarts a failed server after 30 s (Restart=on-failure; systemd.service(5), RestartSec, default
# 100 ms, read 2026-11-26): long enough for the GPU to free its memory and for Docker to remove the failed
# container, short against the load balancer's three missed checks (serving.UNHEALTHY_AFTER).
RESTART_SECONDS = 30


def unit(b: Boot) -> str:
    return f"""[Unit]
Description=gpusizer: vLLM server for workload {b.workload}
Wants=network-online.target
After=network-online.target docker.service
Requires=docker.service

[Service]
ExecStart={SCRIPT}
Restart=on-failure
RestartSec={RESTART_SECONDS}

[Install]
WantedBy=multi-user.target
"""


def cloud_config(b: Boot) -> str:
    """The #cloud-config document (write_files + runcmd; cloud-init module reference)."""
    files = [
        {"path": SCRIPT, "permissions": "0755", "owner": "root:root", "content": serve_script(b)},
        {"path": UNIT, "permissions": "0644", "owner": "root:root", "content": unit(b)},
    ]
    run: list[list[str]] = []
    if b.gpu_metric:
        files.append({"path": AGENT_SCRIPT, "permissions": "0755", "owner": "root:root", "content": agent_script(b)})
        if b.cloud == "aws":
            files.append(
                {
                    "path": CW_CONFIG,
                    "permissions": "0644",
                    "owner": "root:root",
                    "content": json.dumps(cloudwatch_config(), indent=2) + "\n",
                }
            )
        run.append([AGENT_SCRIPT])
    run += [["systemctl", "daemon-reload"], ["systemctl", "enable", "--now", "gpusizer-serve.service"]]
    doc = {"write_files": files, "runcmd": run}
    return "#cloud-config\n" + yaml.safe_dump(doc, sort_keys=False, width=1000)
