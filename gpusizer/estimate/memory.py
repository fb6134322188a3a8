"""GPU memory a workload needs: weights, KV cache, activations, gradients, optimizer states, overhead.

All results are bytes; callers convert to GiB for display. Formulas and their
sources are in each function's docstring. Constants were checked on
2026-11-23 against the sources named beside them.
"""

from __future__ import annotations

import dataclasses
import math

from gpusizer.base import units
from gpusizer.facts import registry

BYTES_PER_PARAM = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5, "fp4": 0.5}

# Quantization metadata per quantized weight, bytes/param.
# int4: AWQ/GPTQ with group_size 128 store an fp16 scale (2 B) and a packed 4-bit
#   zero point (0.5 B) per group of 128 weights: 2.5/128 (AutoAWQ and GPTQ
#   checkpoint layouts, qweight/scales/qzeros tensors).
# int8 / fp8: one fp16 (int8) or fp32 (fp8) scale per output channel or tensor:
#   < 0.05% of the weights for hidden sizes >= 2048; taken as 0.
# nf4 (QLoRA): 4-bit NormalFloat, blocks of 64 with double-quantized scales:
#   0.127 bits/param of constants (Dettmers et al. 2023, QLoRA, section 3).
# fp4: NVFP4 stores one FP8 (E4M3) scale per 16 weights (1/16 B); MXFP4 one E8M0 scale per 32
#   (OCP Microscaling Formats (MX) v1.0 specification, 2023; NVIDIA "Introducing NVFP4", 2025-06).
QUANT_SCALE_BYTES = {"int4": 2.5 / 128, "int8": 0.0, "fp8": 0.0, "nf4": 0.127 / 8, "fp4": 1 / 16}


def scale_bytes(precision: str, scheme: str | None = None, group: int | None = None) -> float:
    """Bytes of quantization constants per quantized weight for a scheme and group size.

    >>> scale_bytes("int4", "awq", 64), scale_bytes("fp4", "mxfp4")
    (0.0390625, 0.03125)
    """
    if scheme in ("awq", "gptq", "gptq-exllama") and precision == "int4":
        return 2.5 / (group or 128)
    if scheme == "nvfp4":
        return 1 / (group or 16)
    if scheme == "mxfp4":
        return 1 / (group or 32)
    return QUANT_SCALE_BYTES[precision]


# Per-GPU fixed costs, GiB.
# CUDA context + cuBLAS/cuDNN workspaces: 0.5-1.0 GiB on Ampere/Hopper with
#   PyTorch 2.x (measured as torch.cuda memory after init vs nvidia-smi; the
#   PyTorch "CUDA semantics" notes say the context is not counted by the
#   caching allocator). We take 1.0 GiB.
CUDA_CONTEXT_GIB = 1.0
# Serving engine reserve: CUDA graphs and the sampler. vLLM logs 0.3-1.0 GiB
#   for CUDA graph capture on 7-70B models (vLLM docs, "Conserving memory",
#   2025); we take 0.5 GiB.
SERVING_RESERVE_GIB = 0.5
# NCCL buffers per GPU when collectives run (NCCL_BUFFSIZE default 4 MiB per
#   channel and peer; about 0.25 GiB on an 8-GPU node).
NCCL_GIB = 0.25

# vLLM's default max_num_batched_tokens with chunked prefill (vLLM V1 engine
# args, 2025): the largest number of tokens one forward pass holds.
PREFILL_CHUNK_TOKENS = 8192


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """Bytes per component, for the whole workload on one GPU (no sharding)."""

    weights: float
    kv_cache: float
    activations: float
    gradients: float
    optimizer_states: float
    overhead: float

    @property
    def total(self) -> float:
        return self.weights + self.kv_cache + self.activations + self.gradients + self.optimizer_states + self.overhead

    def to_gib(self) -> dict[str, float]:
        out = {f.name: round(units.gib(getattr(self, f.name)), 2) for f in dataclasses.fields(self)}
        out["total"] = round(units.gib(self.total), 2)
        return out


def embedding_params(model: registry.ModelArch) -> int:
    """Input embedding + LM head parameters (kept in 16-bit by quantized checkpoints)."""
    if not model.vocab_size:
        return 0
    copies = 1 if getattr(model, "tied_embeddings", False) else 2
    return min(model.params, copies * model.vocab_size * model.hidden_size)


def weight_bytes(
    model: registry.ModelArch, precision: str, scheme: str | None = None, group: int | None = None
) -> float:
    """Bytes of the weights at `precision`.

    fp32/bf16/fp16: params x bytes. Quantized formats (fp8, int8, int4, and
    "nf4" for QLoRA) quantize the transformer blocks and keep the embeddings
    and LM head in 16-bit, as published checkpoints do (e.g.
    neuralmagic Llama-3.1-8B-Instruct-FP8 = 9.08 GB = 6.98e9 x 1 B + 1.05e9 x 2 B),
    plus the scales of QUANT_SCALE_BYTES.

    >>> m = registry.from_architecture(params_b=7.0, layers=32, hidden_size=4096, attention_heads=32)
    >>> round(weight_bytes(m, "bf16") / 1e9, 1)
    14.0
    """
    if precision in ("fp32", "bf16", "fp16"):
        return model.params * BYTES_PER_PARAM[precision]
    bits = 0.5 if precision == "nf4" else BYTES_PER_PARAM[precision]
    emb = embedding_params(model)
    body = model.params - emb
    return body * (bits + scale_bytes(precision, scheme, group)) + emb * 2.0


def kv_bytes_per_sequence(model: registry.ModelArch, context: int, kv_precision: str) -> float:
    """KV-cache bytes for one sequence of `context` tokens.

    Standard/GQA attention: 2 (K and V) x layers x kv_heads x head_dim x bytes
    per token. Sliding-window layers hold at most `sliding_window` tokens
    (Mistral-7B-v0.1: all layers, 4096; Gemma 2: every other layer, 4096).
    MLA (DeepSeek-V2/V3) caches one compressed latent of kv_lora_rank plus the
    decoupled RoPE key of qk_rope_head_dim per token per layer, with no factor
    2 (DeepSeek-V2 paper, arXiv:2405.04434, section 2.1.4).
    Non-LLMs (vision, diffusion) have no KV cache.

    >>> m = registry.from_architecture(params_b=8.03, layers=32, hidden_size=4096, attention_heads=32, kv_heads=8)
    >>> kv_bytes_per_sequence(m, 1, "bf16")
    131072.0
    """
    if model.kind != "llm":
        return 0.0
    nbytes = BYTES_PER_PARAM[kv_precision]
    if model.is_mla:
        return model.layers * (model.kv_lora_rank + (model.qk_rope_head_dim or 0)) * nbytes * context
    per_token_layer = 2 * model.kv_heads * model.head_dim * nbytes
    local = model.local_layers if model.sliding_window else 0
    local_ctx = min(context, model.sliding_window or context)
    return per_token_layer * ((model.layers - local) * context + local * local_ctx)


def inference_activation_bytes(model: registry.ModelArch, context: int, batch: int) -> float:
    """Peak transient activations of one forward pass while serving.

    LLMs: with chunked prefill a pass holds at most PREFILL_CHUNK_TOKENS
    tokens; per token it keeps the residual stream and attention output
    (4 x hidden) and the MLP intermediates (2 x ffn per routed expert), in
    16-bit, plus fp32 logits of one position per sequence for sampling.
    Encoders (BERT-style) run all context x batch tokens in one pass, with
    no logits.
    FlashAttention never materialises the score matrix (Dao et al. 2022), so
    there is no context^2 term. Vision/diffusion: the registry's measured
    activation_gib_per_item x batch.
    """
    if model.kind not in ("llm", "encoder"):
        return (model.activation_gib_per_item or 0.0) * batch * units.GIB
    tokens = min(context * batch, PREFILL_CHUNK_TOKENS)
    if model.kind == "encoder":
        # One forward pass over every sequence (no chunking, no sampling logits); FlashAttention/SDPA
        # keep no score matrix. Same per-token working set as the decoder's.
        tokens = context * batch
    ffn = (model.intermediate_size or 4 * model.hidden_size) * max(1, model.experts_per_token or 1)
    per_token = (4 * model.hidden_size + 2 * ffn) * 2
    logits = batch * (model.vocab_size or 0) * 4 if model.kind == "llm" else 0
    return tokens * per_token + logits


def training_activation_bytes(model: registry.ModelArch, seq: int, micro_batch: int, checkpointing: bool) -> float:
    """Activations kept for the backward pass of one micro-batch.

    Korthikanti et al. 2022 (arXiv:2205.05198, eq. 1): per layer
    s*b*h*(34 + 5*a*s/h) bytes in 16-bit. FlashAttention does not store the
    attention scores, removing the 5*a*s/h term. With full activation
    checkpointing only each layer's input (2*s*b*h bytes) is kept, plus one
    layer's full activations during recomputation (section 4.1). The fp32
    logits for the loss add s*b*vocab*4 bytes. Vision/diffusion models use
    the registry's per-item figure x 3 (forward + backward working set).
    """
    if model.kind != "llm":
        return 3 * (model.activation_gib_per_item or 0.0) * micro_batch * units.GIB
    sbh = seq * micro_batch * model.hidden_size
    full_layer = 34 * sbh
    kept = model.layers * 2 * sbh + full_layer if checkpointing else model.layers * full_layer
    return kept + seq * micro_batch * (model.vocab_size or 0) * 4


def lora_params(model: registry.ModelArch, rank: int) -> int:
    """Trainable parameters of LoRA adapters on every attention and MLP projection.

    Each adapted d_in x d_out matrix gets r*(d_in + d_out) parameters (Hu et al.
    2021, LoRA). Per layer: q, o (hidden <-> heads*head_dim), k, v (hidden ->
    kv_heads*head_dim), gate, up, down (hidden <-> ffn).
    """
    h = model.hidden_size
    q = model.attention_heads * model.head_dim
    kv = model.kv_heads * model.head_dim
    ffn = model.intermediate_size or 4 * h
    per_layer = rank * ((h + q) * 2 + (h + kv) * 2 + (h + ffn) * 3)
    return model.layers * per_layer


# Optimizer state bytes per trained parameter, beyond the weights and gradients.
# AdamW: two fp32 moments (8 B). adamw-8bit: two 8-bit block-quantized moments
# (bitsandbytes, Dettmers et al. 2021: 2 B). SGD with momentum: one fp32 buffer
# (4 B). Adafactor: factored second moment, O(rows+cols) per matrix: ~0
# (Shazeer & Stern 2018). Mixed precision adds an fp32 master copy (4 B)
# (Rajbhandari et al. 2020, ZeRO, section 3.1: K = 12 for mixed-precision Adam).
OPTIMIZER_BYTES = {"adamw": 8.0, "adamw-8bit": 2.0, "sgd": 4.0, "adafactor": 0.0}


def training_state_bytes(
    model: registry.ModelArch, precision: str, method: str, optimizer: str, lora_rank: int, master_weights: str = "fp32"
):
    """(weights, gradients, optimizer_states) bytes for training or fine-tuning.

    full: weights and gradients in the training precision (fp8 training keeps
    bf16 weights, as Transformer Engine does), optimizer states per
    OPTIMIZER_BYTES plus a 4-byte fp32 master copy unless training in fp32
    or `master_weights` is "none": pure bf16/fp16 training with the model
    loaded in 16-bit, as Hugging Face Trainer and axolotl do when the model
    is loaded with torch_dtype=bfloat16 (no master copy: 2 + 2 + optimizer
    bytes per parameter; Rajbhandari et al. 2020 count K = 12 only for
    mixed precision).
    lora: the frozen base in the given precision, adapters trained in fp32
    (16 B/param with AdamW). qlora: the base in NF4 ("nf4" in weight_bytes).
    """
    if method in ("lora", "qlora"):
        base = weight_bytes(model, "nf4" if method == "qlora" else precision)
        adapters = lora_params(model, lora_rank)
        return base + adapters * 4.0, adapters * 4.0, adapters * OPTIMIZER_BYTES[optimizer]
    train_precision = "bf16" if precision == "fp8" else precision
    per_param = BYTES_PER_PARAM[train_precision]
    master = 0.0 if train_precision == "fp32" or master_weights == "none" else 4.0
    return (
        model.params * per_param,
        model.params * per_param,
        model.params * (OPTIMIZER_BYTES[optimizer] + master),
    )


def overhead_bytes(task: str, gpus: int) -> float:
    """Per-GPU fixed memory: CUDA context, serving reserve, NCCL buffers."""
    gib = CUDA_CONTEXT_GIB + (SERVING_RESERVE_GIB if task == "inference" else 0.0)
    if gpus > 1:
        gib += NCCL_GIB
    return gib * units.GIB


SHARDING_LEVELS = ("none", "zero1", "zero2", "zero3")


def per_gpu_training_bytes(
    b: MemoryBreakdown, gpus: int, sharding: str, tp: int = 1, pp: int = 1, cp: int = 1
) -> float:
    """Bytes on each of `gpus` GPUs: tensor parallel `tp` x pipeline stages `pp` x data parallel the rest, under a ZeRO stage.

    Tensor and pipeline parallelism split weights, gradients and optimizer
    states by tp x pp (Megatron-LM: Narayanan et al. 2021, arXiv:2104.04473);
    ZeRO-1 then partitions optimizer states, ZeRO-2 also gradients, ZeRO-3
    (FSDP full shard) also the weights over the data-parallel degree
    (Rajbhandari et al. 2020, Figure 1). Activations: tensor parallelism with
    sequence parallelism divides them by tp (Korthikanti et al. 2022, section
    4.2.2); a 1F1B pipeline stage holds its L/pp layers for pp micro-batches in
    flight, the same total. Context parallelism over `cp` ranks splits each
    sequence, so activations divide by cp too; the model states are replicated
    across cp ranks and ZeRO shards them over dp x cp (Megatron-LM context
    parallelism). Excludes the per-GPU overhead (overhead_bytes).
    """
    level = SHARDING_LEVELS.index(sharding)
    mp = tp * pp
    dp = max(1, gpus // mp)  # ZeRO shards over every rank holding the same layers: data x context parallel
    opt, grads, weights = b.optimizer_states / mp, b.gradients / mp, b.weights / mp
    opt = opt / dp if level >= 1 else opt
    grads = grads / dp if level >= 2 else grads
    weights = weights / dp if level >= 3 else weights
    return weights + grads + opt + b.activations / (tp * cp)


def per_gpu_inference_bytes(model: registry.ModelArch, b: MemoryBreakdown, gpus: int, stages: int = 1) -> float:
    """Bytes on each GPU with tensor parallelism over `gpus` and `stages` pipeline stages.

    Weights split evenly over all gpus x stages GPUs (Megatron-LM TP splits
    each layer's matrices, pipeline stages split the layers: Narayanan et al.
    2021, arXiv:2104.04473, section 2). The KV cache splits by layer across
    stages and by KV head within a stage; when there are more GPUs than KV
    heads, heads are replicated (vLLM), so each GPU holds 1/kv_heads. MLA's
    latent cache is not split by heads: each tensor-parallel rank holds all
    of its stage's (vLLM MLA backend). Activations of one forward pass are
    transient per layer, so they split over the tensor-parallel GPUs only.
    Excludes the per-GPU overhead (overhead_bytes).
    """
    kv = b.kv_cache / stages
    if not model.is_mla:
        kv /= min(gpus, model.kv_heads)
    return b.weights / (gpus * stages) + b.activations / gpus + kv


def ceil_gib(n_bytes: float) -> int:
    return math.ceil(units.gib(n_bytes))
