"""The serving engine's command line for a sized model: vLLM's OpenAI-compatible server.

The arguments come from the spec and the decision, so the pods serve exactly
what was sized: the model's Hugging Face id, the decision's parallel layout
(tensor parallel over the GPUs of one replica on a node, one pipeline stage per
node, the replicas packed on one node as data-parallel ranks), the context length, the sequences held at once, and the share of GPU
memory vLLM may take (the sizing headroom the engine sized against).

Sources (checked 2026-11-23): vLLM docs, "Engine Arguments" (--model,
--tensor-parallel-size, --pipeline-parallel-size, --max-model-len,
--max-num-seqs, --gpu-memory-utilization, --dtype, --kv-cache-dtype,
--quantization, --port; default port 8000), "Data Parallel Deployment"
(--data-parallel-size: each rank an engine owning tensor-parallel-size GPUs,
one API server in front; docs.vllm.ai v0.12.0) and "OpenAI-Compatible Server" /
"Using Kubernetes" (GET /health answers 200 once the engine is up; HF_TOKEN
from a Secret; shared memory for tensor parallelism).
"""

from __future__ import annotations

import math
import re

from gpusizer.base import errors, units
from gpusizer.decide import decision as decision_mod

PORT = 8000  # vLLM's OpenAI-compatible server default port
HEALTH_PATH = "/health"
# How a load balancer checks a server: every 30 s, 10 s to answer, healthy after 2 answers, unhealthy after 3
# misses (90 s). The clouds allow these (Elastic Load Balancing, "Health checks for Network Load Balancer target
# groups": interval 5-300 s, thresholds 2-10; Cloud Load Balancing, "Health checks overview": interval and
# timeout in seconds, thresholds from 1; both read 2026-11-26). Three misses outlast one restart of the server
# unit (boot.RESTART_SECONDS), so a crash the unit recovers from does not take the replica out of service.
HEALTH_INTERVAL_SECONDS = 30
HEALTH_TIMEOUT_SECONDS = 10
HEALTHY_AFTER = 2
UNHEALTHY_AFTER = 3
HF_TOKEN_ENV = "HF_TOKEN"  # read by huggingface_hub inside vLLM to download gated weights
HF_CACHE = "/root/.cache/huggingface"  # Hugging Face's cache inside vLLM's image (its user is root)
# The CloudWatch agent's nvidia_gpu plugin publishes nvidia_smi_utilization_gpu in namespace CWAgent (Amazon
# CloudWatch User Guide, "Collect NVIDIA GPU metrics", read 2026-11-23): the agent's config, the instance role's
# namespace condition and the scaling policy's metric all name it from here.
CW_GPU_NAMESPACE = "CWAgent"
# --dtype per spec precision (vLLM engine arguments: auto, half, float16, bfloat16, float, float32).
# 8/4-bit weights come from a quantized checkpoint: vLLM reads the method from its config.
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
# The server image: vLLM's OpenAI-compatible server, pinned to a release (Docker Hub vllm/vllm-openai,
# tag v0.11.0: vLLM release v0.11.0, 2025-10-02). deploy.image may name another pinned tag of it.
VLLM_REPOSITORY = "vllm/vllm-openai"
VLLM_VERSION = (0, 11, 0)
VLLM_IMAGE = f"{VLLM_REPOSITORY}:v{'.'.join(map(str, VLLM_VERSION))}"
# The first vLLM release each generated flag is known in; a flag not listed is in every release this
# project accepts (MIN_VERSION on). --data-parallel-size: absent from v0.6.x (vLLM issue #9206,
# 2024-10-09, proposes it), present in v0.8.3 (vLLM issue #18702 and trl PR #3310, v0.8.3 logs with
# data_parallel_size); earlier 0.7/0.8 releases are not claimed.
FLAG_SINCE = {"--data-parallel-size": (0, 8, 3)}
# The oldest release whose flags above (--pipeline-parallel-size for the OpenAI server, --kv-cache-dtype
# fp8, --quantization fp8) this project generates for: vLLM v0.5.1 (pipeline parallelism in the
# OpenAI server, release notes of v0.5.1).
MIN_VERSION = (0, 5, 1)
_TAG = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:[-+.].*)?$")
# Budget for the server to become healthy (a budget, not a prediction): download the weights at
# LOAD_GBPS GB/s (an assumed sustained Hugging Face Hub rate; unverified, generous) and read them, plus
# START_SECONDS for the engine (CUDA graph capture, KV cache profiling; minutes on large models).
LOAD_GBPS = 0.1
START_SECONDS = 600


def model_id(d: decision_mod.Decision) -> str:
    """The Hugging Face id the server loads: the one the spec names (model.hf_id, or a model.name
    spelt as a Hugging Face id, "meta-llama/Llama-3.1-8B-Instruct"), else the registry entry's.

    The registry sizes an Instruct model by its base model's architecture (the same shapes), but the
    server loads the weights the spec named: an Instruct id stays Instruct.

    Raises:
        errors.SpecError: the model names no weights (an explicit architecture or an hf_config).
    """
    ref = d.workload.spec.model
    named = ref.hf_id or (ref.name if ref.name and "/" in ref.name else None)
    found = named or d.workload.model.hf_id
    if not found:
        raise errors.SpecError(
            "model: names no weights for the serving engine to load (deploy.image runs vLLM). "
            "To fix: use a registry model (model.name) with a Hugging Face id, or model.hf_id",
            field="model",
        )
    return found


def image_version(image: str) -> tuple[int, int, int]:
    """The vLLM release a vllm/vllm-openai image is pinned to.

    >>> image_version("vllm/vllm-openai:v0.11.0"), image_version("docker.io/vllm/vllm-openai:v0.8.5@sha256:ab")
    ((0, 11, 0), (0, 8, 5))

    Raises:
        errors.SpecError: not vLLM's OpenAI server image, or its tag names no release (latest, none).
    """
    ref = image.split("@", 1)[0]
    repo, _, tag = ref.rpartition(":") if ":" in ref.rsplit("/", 1)[-1] else (ref, "", "")
    if repo.removeprefix("docker.io/") != VLLM_REPOSITORY:
        raise errors.SpecError(
            f"deploy.image {image!r}: serving runs vLLM's OpenAI server, whose flags are generated per "
            f"release. To fix: use {VLLM_IMAGE} (or another pinned vllm/vllm-openai:vX.Y.Z)",
            field="deploy.image",
        )
    m = _TAG.match(tag)
    if not m:
        raise errors.SpecError(
            f"deploy.image {image!r}: the tag {tag or '(none)'!r} pins no vLLM release, so the flags it takes are "
            f"unknown. To fix: pin a release tag, e.g. {VLLM_IMAGE}",
            field="deploy.image",
        )
    version = tuple(int(x) for x in m.groups())
    if version < MIN_VERSION:
        raise errors.SpecError(
            f"deploy.image {image!r}: vLLM before v{'.'.join(map(str, MIN_VERSION))} is not supported. "
            f"To fix: use {VLLM_IMAGE}",
            field="deploy.image",
        )
    return version  # type: ignore[return-value]


def server_image(d: decision_mod.Decision) -> str:
    """deploy.image, else the pinned VLLM_IMAGE."""
    return d.workload.spec.deploy.image or VLLM_IMAGE


def load_seconds(d: decision_mod.Decision) -> int:
    """Seconds the server may take to become healthy: download and load the weights at LOAD_GBPS, then
    start the engine (START_SECONDS). An 8B model in bf16 (16.06 GB): 161 + 600 = 761 s."""
    gb = d.workload.breakdown.weights / units.GB
    return START_SECONDS + math.ceil(gb / LOAD_GBPS)


def check_one_node(d: decision_mod.Decision) -> None:
    """One server per node: a choice spanning several nodes (pipeline stages) cannot be served.

    Raises:
        errors.SpecError: multi-node serving needs a Ray (or LeaderWorkerSet) cluster, which the
            components do not create.
    """
    c = d.chosen
    if c.fit is not None and c.fit.pipeline_stages > 1:
        raise errors.SpecError(
            f"placement: the choice ({c.offer.instance_type}) spans {c.nodes} nodes per replica; the components run one "
            "vLLM server per node, and serving across nodes needs a Ray or LeaderWorkerSet cluster, which they do not "
            "create. To fix: allow a type with more GPU memory per node (placement.gpus), or lower "
            "inference.context_length / batch_size",
            field="placement.gpus",
        )


def vllm_args(d: decision_mod.Decision, image: str | None = None) -> list[str]:
    """vLLM server arguments for the decision's model and layout (task inference), only flags that
    the image's release has (FLAG_SINCE).

    Raises:
        errors.SpecError: the model names no weights to load (field model); the image is not a pinned
            vLLM release, or lacks a flag the layout needs (field deploy.image).
    """
    image = image or server_image(d)
    version = image_version(image)
    spec = d.workload.spec
    f = d.chosen.fit
    args = [
        "--model",
        model_id(d),
        "--tensor-parallel-size",
        str(f.tensor_parallel),
        "--max-model-len",
        str(spec.serving.context_length),
        "--max-num-seqs",
        str(spec.serving.batch_size),
        # The engine sized the model to fit in this share of each GPU's memory (sizing.memory_headroom).
        "--gpu-memory-utilization",
        f"{spec.sizing.memory_headroom:g}",
        "--port",
        str(PORT),
    ]
    if f.pipeline_stages > 1:
        args += ["--pipeline-parallel-size", str(f.pipeline_stages)]
    if f.replicas_per_node > 1:  # several replicas side by side on one node: one engine per DP rank
        args += ["--data-parallel-size", str(f.replicas_per_node)]
    if spec.precision in DTYPES:
        args += ["--dtype", DTYPES[spec.precision]]
    elif spec.precision == "fp8":
        args += ["--quantization", "fp8"]  # vLLM quantizes 16-bit weights to FP8 on load
    if d.workload.kv_precision == "fp8":
        args += ["--kv-cache-dtype", "fp8"]
    for flag in args:
        since = FLAG_SINCE.get(flag)
        if since and version < since:
            have, need = ".".join(map(str, version)), ".".join(map(str, since))
            raise errors.SpecError(
                f"deploy.image {image!r}: the decision needs {flag} ({d.chosen.fit.replicas_per_node} replicas on "
                f"one node), which vLLM v{have} does not have (since v{need}). To fix: use {VLLM_IMAGE}",
                field="deploy.image",
            )
    return args
