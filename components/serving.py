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

from gpusizer.decide import decision as decision_mod
from gpusizer.base import errors

PORT = 8000  # vLLM's OpenAI-compatible server default port
HEALTH_PATH = "/health"
HF_TOKEN_ENV = "HF_TOKEN"  # read by huggingface_hub inside vLLM to download gated weights
# --dtype per spec precision (vLLM engine arguments: auto, half, float16, bfloat16, float, float32).
# 8/4-bit weights come from a quantized checkpoint: vLLM reads the method from its config.
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def model_id(d: decision_mod.Decision) -> str:
    """The Hugging Face id the server loads: the spec's model.hf_id, or the Hugging Face id the spec wrote as
    model.name (meta-llama/Llama-3.1-8B-Instruct: the registry sizes it as Llama-3.1-8B, but the server loads
    the checkpoint named, not the base model), else the registry entry's.

    Raises:
        errors.SpecError: the model names no weights (an explicit architecture or an hf_config).
    """
    ref = d.workload.spec.model
    named = ref.name if ref.name and "/" in ref.name else None
    found = ref.hf_id or named or d.workload.model.hf_id
    if not found:
        raise errors.SpecError(
            "model: names no weights for the serving engine to load (deploy.image runs vLLM). "
            "To fix: use a registry model (model.name) with a Hugging Face id, or model.hf_id",
            field="model",
        )
    return found


def vllm_args(d: decision_mod.Decision) -> list[str]:
    """vLLM server arguments for the decision's model and layout (task inference).

    Raises:
        errors.SpecError: the model names no weights to load (field model).
    """
    spec = d.workload.spec
    f = d.chosen.fit
    args = [
        "--model", model_id(d),
        "--tensor-parallel-size", str(f.tensor_parallel),
        "--max-model-len", str(spec.serving.context_length),
        "--max-num-seqs", str(spec.serving.batch_size),
        # The engine sized the model to fit in this share of each GPU's memory (sizing.memory_headroom).
        "--gpu-memory-utilization", f"{spec.sizing.memory_headroom:g}",
        "--port", str(PORT),
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
    return args
