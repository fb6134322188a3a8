"""`gpusizer preview` plans the stack and imports the SDK modules its components use before the phases run.

The phases then import no SDK module of their own (each provider component's
SDK_MODULES is whole) and judge no offer (the plans, and what the program
reads of them, were worked out before): a forked phase inherits what the
preload did instead of repeating it (policies/offline.py, _preload). Checked
in a fresh interpreter, where nothing is imported yet, over a stack that
reaches every provider and every autoscaling path.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO

pytestmark = pytest.mark.slow

QUEUE = {
    "min_replicas": 0,
    "max_replicas": 4,
    "metric": "queue_depth",
    "query": 'sum(rate(nginx_ingress_controller_requests{service="chat"}[2m]))',
    "target": 10,
}
CHAT = {"model": {"name": "llama-3.1-8b"}, "inference": {"batch_size": 4}}
POOL = {
    "name": "rack-a",
    "location": "fra-dc1",
    "gpu": "L40S",
    "gpus_per_node": 8,
    "usd_per_gpu_hour": 0.4,
    "node_selector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
}  # deploy.image needs the GPU model
WORKLOADS = [
    {
        **CHAT,
        "name": "pool-keda",
        "placement": {"providers": ["onprem"]},
        "deploy": {"image": "vllm/vllm-openai:v0.6.3", "autoscaling": QUEUE},
    },
    {
        **CHAT,
        "name": "pool-hpa",
        "placement": {"providers": ["onprem"]},
        "deploy": {
            "image": "vllm/vllm-openai:v0.6.3",
            "autoscaling": {"min_replicas": 1, "max_replicas": 2, "metric": "gpu_utilization", "target": 70},
        },
    },
    {
        **CHAT,
        "name": "aws-queue",
        "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
        "deploy": {"autoscaling": QUEUE, "capacity_failover": True},
    },
    {
        **CHAT,
        "name": "aws-schedule",
        "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
        "deploy": {
            "autoscaling": {
                "min_replicas": 0,
                "metric": "schedule",
                "schedule": [
                    {"start": "0 8 * * 1-5", "end": "0 20 * * 1-5", "replicas": 2, "timezone": "Europe/Berlin"}
                ],
            }
        },
    },
    {
        **CHAT,
        "name": "gcp-queue",
        "placement": {"providers": ["gcp"], "regions": ["us-central1"]},
        "deploy": {"autoscaling": QUEUE},
    },
    {
        "name": "aws-train",
        "model": {"name": "llama-3.1-8b"},
        "task": "training",
        "training": {"tokens": 2_000_000_000, "deadline_hours": 4},
        "placement": {"providers": ["aws"], "regions": ["us-east-1"]},
    },
]
SDKS = ("pulumi_aws", "pulumi_gcp", "pulumi_kubernetes")

# Runs the offline preview in one process (--serial) and reports which SDK modules the
# phases imported after the preload: new ones, and lazy placeholders they loaded.
SCRIPT = """
import json, pathlib, sys
from gpusizer.policies import offline

def sdk():
    return {n: type(m).__name__ == "_LazyModule" for n, m in list(sys.modules.items()) if n.startswith(%r)}

seen, judged = {}, []
preload = offline._preload
def recorded(config, program):
    preload(config, program)
    seen.update(sdk())
    from gpusizer.decide import judgement  # every offer class a plan judges, at once or when first read
    judge = judgement.Judgement._judge_next
    judgement.Judgement._judge_next = lambda self: judged.append(self) or judge(self)
offline._preload = recorded
exports, _, _ = offline.preview("mixed", pathlib.Path(sys.argv[1]), offline.REPO / "__main__.py", parallel=False)
after = sdk()
print(json.dumps({
    "providers": sorted({e["provider"] for e in exports.values()}),
    "loaded_by_preload": sorted(n for n, lazy in seen.items() if not lazy),
    "loaded_by_phases": sorted(n for n, lazy in after.items() if not lazy and seen.get(n, True)),
    "judged_by_phases": len(judged),
}))
""" % (SDKS,)


def test_phases_import_no_sdk_module_and_judge_no_offer_after_the_preload(tmp_path):
    config = {
        "aws:region": "us-east-1",
        "gcp:project": "p",
        "gcp:region": "us-central1",
        "gpusizer:pools": [POOL],
        "gpusizer:workloads": WORKLOADS,
    }
    (tmp_path / "Pulumi.mixed.yaml").write_text(yaml.safe_dump({"config": config}))
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert r.returncode == 0, r.stderr[-3000:]
    found = json.loads(r.stdout.strip().splitlines()[-1])
    assert found["providers"] == ["aws", "gcp", "onprem"]
    # Each provider's heavy subpackage was loaded by the preload, not by the phases ...
    assert {"pulumi_aws.ec2", "pulumi_gcp.compute", "pulumi_kubernetes.apps.v1"} <= set(found["loaded_by_preload"])
    # ... and the phases loaded nothing more, nor judged an offer.
    assert found["loaded_by_phases"] == []
    assert found["judged_by_phases"] == 0
