"""Model registry: architecture facts for known models, by any spelling users type.

The facts live in data/models.yaml, each entry with its source. Three ways
in: a registry name (`lookup`), an explicit architecture from a spec
(`from_architecture`), or a Hugging Face config.json read offline
(`from_hf_config`).
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import re
from typing import Any

from gpusizer.base import errors, inputs, packaged, units


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
        denoiser_params: diffusion: parameters of the denoiser (transformer/UNet) that runs every
            step; the rest (text encoders, VAE) runs once per image and may be offloaded to CPU.
        tied_embeddings: the LM head shares the input embedding matrix.
        hf_id: Hugging Face repo id; aliases: other spellings of exactly this model (accepted silently).
        loose_aliases: names that leave out a version or variant ("mistral-7b"), resolved to this
            entry as the default; a plan reports such a resolution (Resolution.loose).
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
    denoiser_params: int | None = None
    tied_embeddings: bool = False
    hf_id: str | None = None
    aliases: tuple[str, ...] = ()
    loose_aliases: tuple[str, ...] = ()

    def __post_init__(self):
        if not 0 < self.active_params <= self.params:
            raise errors.SpecError(f"model {self.key}: need 0 < active params <= params", "model")
        if self.kv_heads < 1 or self.attention_heads % self.kv_heads:
            raise errors.SpecError(f"model {self.key}: kv_heads must divide attention_heads", "model.kv_heads")

    @property
    def is_moe(self) -> bool:
        return bool(self.experts)

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None


def count_params(
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    ffn: int,
    vocab: int,
    tied: bool = False,
    gated: bool = True,
    experts: int | None = None,
    experts_per_token: int | None = None,
    moe_ffn: int | None = None,
    shared_experts: int = 0,
    dense_layers: int = 0,
) -> tuple[int, int]:
    """(total, active) parameters of a decoder-only transformer.

    embeddings: vocab x hidden (x2 unless tied); per layer: attention
    hidden x heads x head_dim (Q) + 2 x hidden x kv_heads x head_dim (K, V) +
    heads x head_dim x hidden (O); MLP 3 x hidden x ffn when gated (SwiGLU/
    GeGLU), else 2 x; MoE layers: experts x 3 x hidden x moe_ffn + a router of
    hidden x experts, top-k (+ shared) of them active; two RMSNorms per layer
    and a final one. Biases are ignored (< 0.1% for the models here).
    """
    emb = vocab * hidden * (1 if tied else 2)
    attn = hidden * heads * head_dim * 2 + 2 * hidden * kv_heads * head_dim
    mlp_mult = 3 if gated else 2
    norms = 2 * hidden
    total = active = emb + hidden
    for i in range(layers):
        if experts and i >= dense_layers:
            ffn_e = moe_ffn or ffn
            per_expert = mlp_mult * hidden * ffn_e
            router = hidden * experts
            total += attn + norms + router + (experts + shared_experts) * per_expert
            active += attn + norms + router + (experts_per_token + shared_experts) * per_expert
        else:
            total += attn + norms + mlp_mult * hidden * ffn
            active += attn + norms + mlp_mult * hidden * ffn
    return total, active


@functools.cache
def _entries() -> dict[str, dict]:
    """data/models.yaml's entries as written, by registry key."""
    return packaged.load("data/models.yaml")["models"]


@functools.cache
def _model(key: str) -> ModelArch:
    return _from_entry(key, _entries()[key])


def load_models() -> dict[str, ModelArch]:
    """The packaged registry (data/models.yaml), keyed by registry key."""
    return {key: _model(key) for key in _entries()}


def entry_params(e: dict) -> tuple[int, int]:
    """(total, active) parameters that a models.yaml entry's architecture fields count (count_params)."""
    return count_params(
        e["layers"],
        e["hidden_size"],
        e["attention_heads"],
        e["kv_heads"],
        e["head_dim"],
        e["intermediate_size"],
        e["vocab_size"],
        e.get("tied_embeddings", False),
        e.get("gated", True),
        e.get("experts"),
        e.get("experts_per_token"),
        e.get("moe_intermediate_size"),
        e.get("shared_experts", 0),
        e.get("dense_layers", 0),
    )


def _from_entry(key: str, e: dict) -> ModelArch:
    e = dict(e)
    if "params" not in e:
        e["params"], e["active_params"] = entry_params(e)
    e.setdefault("active_params", e["params"])
    for k in ("gated", "moe_intermediate_size", "shared_experts", "dense_layers"):
        e.pop(k, None)
    e["aliases"] = tuple(e.get("aliases", ()))
    e["loose_aliases"] = tuple(e.get("loose_aliases", ()))
    return ModelArch(key=key, **e)


def _norm(name: str) -> str:
    return re.sub(r"[-_./\s]", "", name.lower())


_SUFFIXES = ("-instruct", "-it", "-chat", "-hf", "-base")


@functools.cache
def _index() -> dict[str, tuple[str, bool]]:
    """Every spelling of every model (normalized) -> (its key, whether the spelling is a loose alias):
    read from the entries, so a lookup builds only the model it returns. Exact spellings win over
    loose ones."""
    index: dict[str, tuple[str, bool]] = {}
    for loose in (False, True):
        for key, e in _entries().items():
            names = (
                e.get("loose_aliases", ())
                if loose
                else (key, e["display_name"], e.get("hf_id") or "", *e.get("aliases", ()))
            )
            for name in names:
                if name:
                    index.setdefault(_norm(name), (key, loose))
                    index.setdefault(_norm(name.split("/")[-1]), (key, loose))
    return index


@dataclasses.dataclass(frozen=True, slots=True)
class Resolution:
    """How a spec's model name became a registry entry (the plan reports it).

    Attributes:
        requested: the name as the spec gave it.
        key: the registry entry it resolved to.
        loose: it matched a loose alias (a name that leaves out a version or variant): the
            entry is a default the user did not name, so the plan says so on stderr and in its JSON.
    """

    requested: str
    key: str
    loose: bool = False

    def note(self, model: ModelArch) -> str:
        """The one line a loose resolution prints (empty for an exact one)."""
        if not self.loose:
            return ""
        return (
            f"model.name {self.requested!r} leaves out a version or variant; sized as {model.key} "
            f"({model.display_name}, {model.hf_id}, context {model.max_context or '-'}). "
            f"To choose another, name it exactly (`gpusizer models` lists them); to keep this one, "
            f"write model.name: {model.key}"
        )


def context_limit(model: ModelArch, rope_factor: float | None = None) -> int | None:
    """The longest context a spec may ask of `model`: its trained context, times the RoPE scaling factor the
    spec opts into (model.rope_scaling.factor); None when the model publishes no trained context."""
    if not model.max_context:
        return None
    return int(model.max_context * rope_factor) if rope_factor else model.max_context


def lookup(name: str) -> ModelArch:
    """The registry entry for `name`, however it is spelled (`resolve` also says how it matched).

    Raises:
        UnknownModelError: naming `model.name` with the nearest known keys.
    """
    return resolve(name)[0]


def resolve(name: str) -> tuple[ModelArch, Resolution]:
    """The registry entry for `name`, and how it matched.

    Matches case- and separator-insensitively against keys, display names,
    Hugging Face ids and aliases; then retries without an "org/" prefix and
    without -Instruct/-it/-chat/-hf/-base suffixes; loose aliases (a name
    without its version, "mistral-7b") match last and are marked loose.

    Raises:
        UnknownModelError: naming `model.name` with the nearest known keys.
    """
    index = _index()
    candidates = [name, name.split("/")[-1]]
    bare = name.split("/")[-1].lower()
    for suffix in _SUFFIXES:
        if bare.endswith(suffix):
            candidates.append(bare.removesuffix(suffix))
    found = [index[_norm(c)] for c in candidates if _norm(c) in index]
    if found:
        key, loose = min(found, key=lambda kl: kl[1])  # an exact spelling before a loose one
        return _model(key), Resolution(name, key, loose)
    import difflib  # only for the error message

    near = difflib.get_close_matches(_norm(name), list(index), n=12, cutoff=0.6)
    keys = list(dict.fromkeys(index[n][0] for n in near))[:5]
    hint = f" Nearest: {', '.join(keys)}." if keys else f" Known: {', '.join(_entries())} (`gpusizer models`)."
    raise errors.UnknownModelError(
        f"model.name: unknown model {name!r}.{hint} To fix: use one of these, a Hugging Face id as model.hf_id, "
        "or give the architecture explicitly (params_b, layers, hidden_size, attention_heads, ...) or "
        "model.hf_config: path/to/config.json",
        "model.name",
    )


def from_architecture(
    params_b: float,
    layers: int,
    hidden_size: int,
    attention_heads: int,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    active_params_b: float | None = None,
    name: str = "custom",
) -> ModelArch:
    """A model from an explicit architecture in a spec (params in billions)."""
    return ModelArch(
        key=name,
        display_name=name,
        kind="llm",
        params=int(params_b * units.BILLION),
        active_params=int((active_params_b or params_b) * units.BILLION),
        layers=layers,
        hidden_size=hidden_size,
        attention_heads=attention_heads,
        kv_heads=kv_heads or attention_heads,
        head_dim=head_dim or hidden_size // attention_heads,
        source="explicit architecture in the workload spec",
    )


def from_hf_config(path: str | pathlib.Path) -> ModelArch:
    """A model from a Hugging Face config.json file, read offline (no transformers import).

    The file is read under the input limits of gpusizer.base.inputs (regular file,
    size cap, strict UTF-8, strict JSON) and parsed by `parse_hf_config`.

    Raises:
        SpecError: naming model.hf_config and the bad file or key.
    """
    p = pathlib.Path(path)
    cfg = inputs.read_json(p, "Hugging Face config", "model.hf_config")
    # Without _name_or_path the file names the model ("llama31_8b.json"), or its folder for a plain config.json.
    return parse_hf_config(cfg, str(p), default_name=p.stem if p.stem != "config" else p.parent.name)


def parse_hf_config(mapping: Any, source_name: str, default_name: str = "hf-config") -> ModelArch:
    """A model from a parsed Hugging Face config.json (a file's, or one fetched from the Hub).

    Understands Llama/Mistral/Qwen2/Qwen3/Gemma2/Gemma3 (text_config nested),
    Mixtral and Qwen MoE (num_local_experts / num_experts,
    num_experts_per_tok, moe_intermediate_size), DeepSeek-V3 (MLA and
    n_routed_experts, first_k_dense_replace), Phi-3 and Falcon key spellings.
    Every field used is validated first by gpusizer.facts.hf_config.HfConfig
    (types, physical bounds, cross-field rules); parameters are counted with
    `count_params`.

    Args:
        mapping: the parsed config.json.
        source_name: where it came from (path or Hub id), for messages and `source`.
        default_name: the model's name when the config has no _name_or_path.

    Raises:
        SpecError: field model.hf_config, the message naming the config key.
    """
    from gpusizer.facts import hf_config  # its pydantic model is built only when a config is read

    c = hf_config.validate(mapping, source_name)
    layers, hidden, heads, vocab = c.layers, c.hidden_size, c.heads, c.vocab_size
    kv = c.kv_heads or (1 if c.multi_query else heads)
    head_dim = c.head_dim or hidden // heads
    ffn = c.intermediate_size or 4 * hidden
    experts = c.experts or None
    tied = c.tie_word_embeddings
    name = c.name or default_name or "hf-config"
    common = dict(
        key=_norm(name) or "hf-config",
        display_name=name,
        kind="llm",
        layers=layers,
        hidden_size=hidden,
        attention_heads=heads,
        intermediate_size=ffn,
        vocab_size=vocab,
        max_context=c.max_position_embeddings,
        tied_embeddings=tied,
        source=f"Hugging Face config {source_name}",
    )
    if c.kv_lora_rank:
        # MLA: count attention from its low-rank projections (DeepSeek-V2 paper, section 2.1).
        rope, nope, v_dim = c.qk_rope_head_dim, c.qk_nope_head_dim, c.v_head_dim
        q_rank, kv_rank = c.q_lora_rank or 0, c.kv_lora_rank
        q = (hidden * q_rank + q_rank * heads * (nope + rope)) if q_rank else hidden * heads * (nope + rope)
        attn = q + hidden * (kv_rank + rope) + kv_rank * heads * (nope + v_dim) + heads * v_dim * hidden
        moe_ffn = c.moe_intermediate_size
        dense = c.first_k_dense_replace
        shared = c.n_shared_experts
        k = c.num_experts_per_tok
        emb = vocab * hidden * (1 if tied else 2)
        dense_mlp = 3 * hidden * ffn
        expert = 3 * hidden * moe_ffn
        total = (
            emb
            + layers * attn
            + dense * dense_mlp
            + (layers - dense) * ((experts + shared) * expert + hidden * experts)
        )
        active = emb + layers * attn + dense * dense_mlp + (layers - dense) * ((k + shared) * expert + hidden * experts)
        return ModelArch(
            params=total,
            active_params=active,
            kv_heads=heads,
            head_dim=nope + rope,
            kv_lora_rank=kv_rank,
            qk_rope_head_dim=rope,
            experts=experts,
            experts_per_token=k,
            **common,
        )
    total, active = count_params(
        layers,
        hidden,
        heads,
        kv,
        head_dim,
        ffn,
        vocab,
        tied,
        gated=c.model_type not in ("falcon", "gpt2", "gpt_neox"),
        experts=experts,
        experts_per_token=c.num_experts_per_tok,
        moe_ffn=c.moe_intermediate_size,
    )
    window = c.sliding_window if c.use_sliding_window else None
    local = 0
    if window:
        pattern = c.sliding_window_pattern
        local = layers - layers // pattern if pattern else (layers // 2 if "gemma2" in str(c.model_type) else layers)
    return ModelArch(
        params=total,
        active_params=active,
        kv_heads=kv,
        head_dim=head_dim,
        sliding_window=window,
        local_layers=local,
        experts=experts,
        experts_per_token=c.num_experts_per_tok,
        **common,
    )
