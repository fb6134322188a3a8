"""Model registry: architecture facts for known models, by any spelling users type.

(Skeleton: the loader, lookup and Hugging Face config reader are being filled in.)
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class ModelArch:
    """Architecture facts the estimators need.

    Attributes:
        key: registry key, lower-case ("llama-3.1-8b").
        display_name: as the publisher writes it ("Llama-3.1-8B").
        kind: "llm", "vision" (ViT) or "diffusion".
        params: total parameters (all experts for MoE; all components for diffusion).
        active_params: parameters used per token (MoE); == params for dense models.
        layers, hidden_size, attention_heads, kv_heads, head_dim: transformer shape
            (for diffusion: the main denoiser's transformer/UNet figures as published).
        intermediate_size: FFN width (per expert for MoE), or None.
        vocab_size: vocabulary (None for vision/diffusion).
        max_context: trained context length in tokens, or None.
        kv_lora_rank, qk_rope_head_dim: MLA (DeepSeek-V2/V3): the cache holds
            kv_lora_rank + qk_rope_head_dim values per token per layer.
        sliding_window: window in tokens for local-attention layers, or None.
        local_layers: how many of `layers` use the sliding window (Gemma 2: half;
            Mistral-7B-v0.1: all).
        experts, experts_per_token: MoE routed experts and top-k; None for dense.
        activation_gib_per_item: non-LLMs: peak inference activation memory per
            batch item (one image at the model's default resolution), GiB.
        hf_id: Hugging Face repo id; aliases: other spellings accepted.
        source: where the figures come from.
    """

    key: str
    display_name: str
    kind: str
    params: int
    active_params: int
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    source: str
    intermediate_size: int | None = None
    vocab_size: int | None = None
    max_context: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    sliding_window: int | None = None
    local_layers: int = 0
    experts: int | None = None
    experts_per_token: int | None = None
    activation_gib_per_item: float | None = None
    hf_id: str | None = None
    aliases: tuple[str, ...] = ()

    @property
    def is_moe(self) -> bool:
        return bool(self.experts)

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None
