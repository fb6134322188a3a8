"""The fields of a Hugging Face config.json that gpusizer reads, validated by one pydantic model.

A config.json is input like any spec: a string layer count, ``0`` heads, a
``text_config`` that is a list, an MoE without ``num_experts_per_tok``, MLA's
``kv_lora_rank`` without its companion dimensions, ``"tie_word_embeddings":
"false"`` (a string, which Python reads as true) or ``sliding_window: -1``
would otherwise crash the counter, hang it (``num_hidden_layers: 1e12``) or
size the model wrong. :func:`validate` turns each into a SpecError naming the
key; the bounds are those of :mod:`gpusizer.base.fields`.

Key spellings follow the transformers configuration classes (LlamaConfig,
MistralConfig, MixtralConfig, Qwen2/Qwen2MoE/Qwen3Config, Gemma2/Gemma3Config
with ``text_config``, DeepseekV3Config, Phi3Config, FalconConfig, GPT2Config
``n_layer``/``n_embd``/``n_head``; transformers v4.46 docs). Unknown keys are
ignored: config.json files carry dozens the sizing does not need.
"""

from typing import Annotated, Any, Self

import pydantic

from gpusizer.base import errors, fields

Ffn = fields.count(1 << 20)  # FFN width; Llama 3.1 405B: 53,248 (arXiv:2407.21783, table 3).
Rank = fields.count(fields.MAX_HIDDEN)
Optional0 = fields.count(fields.MAX_LAYERS, lower=0)


def _alias(*keys: str) -> Any:
    return pydantic.Field(None, validation_alias=pydantic.AliasChoices(*keys))


class HfConfig(pydantic.BaseModel):
    """The config.json fields used for sizing, under their canonical transformers names.

    Algorithm of the cross-field checks (`_consistent`): an MoE (experts > 0)
    needs ``num_experts_per_tok`` in [1, experts]; MLA (``kv_lora_rank``) needs
    ``qk_rope_head_dim``, ``qk_nope_head_dim``, ``v_head_dim``,
    ``moe_intermediate_size`` and an MoE; kv heads must divide query heads;
    hidden_size must be at least the head count when head_dim is derived;
    dense layers cannot outnumber layers.
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore", populate_by_name=True, defer_build=True)

    layers: fields.Layers = pydantic.Field(
        validation_alias=pydantic.AliasChoices("num_hidden_layers", "n_layer", "num_layers")
    )
    hidden_size: fields.HiddenSize = pydantic.Field(
        validation_alias=pydantic.AliasChoices("hidden_size", "n_embd", "d_model")
    )
    heads: fields.Heads = pydantic.Field(validation_alias=pydantic.AliasChoices("num_attention_heads", "n_head"))
    vocab_size: fields.Vocab
    kv_heads: fields.Heads | None = _alias("num_key_value_heads", "num_kv_heads")
    multi_query: fields.StrictBool = False
    head_dim: fields.HeadDim | None = None
    intermediate_size: Ffn | None = _alias("intermediate_size", "ffn_hidden_size")
    experts: fields.count(fields.MAX_EXPERTS, lower=0) | None = _alias(
        "num_local_experts", "num_experts", "n_routed_experts"
    )
    num_experts_per_tok: fields.Experts | None = None
    moe_intermediate_size: Ffn | None = None
    tie_word_embeddings: fields.StrictBool = False
    name: Annotated[str, pydantic.Field(max_length=256)] | None = _alias("_name_or_path")
    model_type: Annotated[str, pydantic.Field(max_length=64)] | None = None
    max_position_embeddings: fields.Context | None = None
    kv_lora_rank: Rank | None = None
    q_lora_rank: fields.count(fields.MAX_HIDDEN, lower=0) | None = None
    qk_rope_head_dim: fields.HeadDim | None = None
    qk_nope_head_dim: fields.HeadDim | None = None
    v_head_dim: fields.HeadDim | None = None
    first_k_dense_replace: Optional0 = 0
    n_shared_experts: fields.count(fields.MAX_EXPERTS, lower=0) = 0
    use_sliding_window: fields.StrictBool = True
    sliding_window: fields.Context | None = None
    sliding_window_pattern: fields.Layers | None = None

    @pydantic.model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.experts and self.num_experts_per_tok is None:
            raise ValueError(
                f"an MoE ({self.experts} experts) needs num_experts_per_tok. To fix: add the key "
                "from the model's original config.json"
            )
        if self.experts and self.num_experts_per_tok > self.experts:
            raise ValueError(f"num_experts_per_tok {self.num_experts_per_tok} exceeds the {self.experts} experts")
        if self.kv_lora_rank is not None:
            need = (
                "qk_rope_head_dim",
                "qk_nope_head_dim",
                "v_head_dim",
                "moe_intermediate_size",
                "num_experts_per_tok",
            )
            missing = [k for k in need if getattr(self, k) is None] + ([] if self.experts else ["n_routed_experts"])
            if missing:
                raise ValueError(
                    f"kv_lora_rank (MLA) needs {', '.join(missing)} as well. To fix: use the model's "
                    "original config.json"
                )
        if self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(f"num_key_value_heads {self.kv_heads} must divide num_attention_heads {self.heads}")
        if self.head_dim is None and self.hidden_size < self.heads:
            raise ValueError(f"hidden_size {self.hidden_size} is smaller than num_attention_heads {self.heads}")
        if self.first_k_dense_replace > self.layers:
            raise ValueError(
                f"first_k_dense_replace {self.first_k_dense_replace} exceeds num_hidden_layers {self.layers}"
            )
        return self


def validate(mapping: Any, source_name: str, field: str = "model.hf_config") -> HfConfig:
    """Validate a parsed config.json (``text_config`` merged over the top level, null values dropped).

    Args:
        mapping: the parsed JSON (a dict).
        source_name: what to call it in messages (a path or a hub id).
        field: the SpecError's field.

    Raises:
        SpecError: `field`, naming the config key, what is wrong and the fix.
    """
    from gpusizer import spec
    from gpusizer.base import inputs  # spec holds the pydantic error translation

    if not isinstance(mapping, dict):
        raise errors.SpecError(f"{field}: {source_name} must hold a JSON object (got {type(mapping).__name__})", field)
    text = mapping.get("text_config")
    if text is not None and not isinstance(text, dict):
        raise errors.SpecError(
            f"{field}: {source_name}: text_config must be an object (got {inputs.quote(text)}). "
            "To fix: use the model's original config.json",
            field,
        )
    merged = {k: v for k, v in {**mapping, **(text or {})}.items() if v is not None}
    try:
        return HfConfig.model_validate(merged)
    except pydantic.ValidationError as exc:
        err = spec.errors_for(exc, HfConfig, what=f"Hugging Face config {source_name}")
        raise errors.SpecError(f"{field}: {err}", field) from None
