"""The workload spec (docs/contract.md section 1): one strict pydantic model, validated once.

Every field is documented with its unit and default; `gpusizer schema` prints
the JSON Schema generated from these models so editors can validate spec files.
Bad input of any kind becomes a :class:`gpusizer.base.errors.SpecError` naming the
field and the fix; nothing downstream ever sees an unvalidated value.
"""

import functools
import os
import pathlib
from typing import Annotated, Any, Literal, Self

import pydantic

from gpusizer import autoscaling as autoscaling_mod
from gpusizer.base import errors, fields, inputs, providers

Precision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4"]
QuantScheme = Literal["awq", "gptq", "gptq-exllama", "w8a8-int8", "fp8", "fp8-block", "nvfp4", "mxfp4"]

# The weight precision each quantization scheme stores (model.quantization.scheme -> precision).
SCHEME_PRECISION = {
    "awq": "int4",
    "gptq": "int4",
    "gptq-exllama": "int4",
    "w8a8-int8": "int8",
    "fp8": "fp8",
    "fp8-block": "fp8",
    "nvfp4": "fp4",
    "mxfp4": "fp4",
}
KvPrecision = Literal["fp32", "bf16", "fp16", "fp8", "int8"]
Provider = Literal[providers.NAMES]  # the one registry (gpusizer.base.providers)


class RopeScaling(fields.Strict):
    """An explicit opt-in to serve or train past the model's trained context with RoPE scaling."""

    type: Literal["yarn", "linear", "dynamic"] = pydantic.Field(
        "yarn",
        description="RoPE scaling method the serving engine applies (YaRN, linear position interpolation, dynamic NTK).",
    )
    # 32: the largest factor published for a RoPE-scaled checkpoint we know of (NousResearch/Yarn-Llama-2-13b-128k,
    # factor 32 over 4096 in its config.json, 2023); beyond it nothing supports the quality.
    factor: fields.positive_float(32.0, lower=1.0) = pydantic.Field(
        description="Multiplies the trained context (Qwen2.5 documents yarn x4 over 32,768 tokens); "
        "the context limit becomes trained context x factor."
    )


class Quantization(fields.Strict):
    """How the checkpoint's weights are quantized: the scheme sets the weight bytes, the kernels' speed and the GPUs it runs on."""

    scheme: QuantScheme = pydantic.Field(
        description="awq, gptq (4-bit, Marlin kernels in vLLM), gptq-exllama (TGI's kernels), w8a8-int8 (SmoothQuant), "
        "fp8 (per-tensor/channel), fp8-block (128x128 blocks, DeepSeek-style), nvfp4 / mxfp4 (Blackwell)."
    )
    group_size: fields.count(4096) | None = pydantic.Field(
        None, description="Weights per scale: default 128 for awq/gptq, 16 for nvfp4, 32 for mxfp4."
    )
    bits: Literal[4, 8] | None = pydantic.Field(None, description="gptq only: 4 (default) or 8.")

    @pydantic.model_validator(mode="after")
    def _bits_for_gptq(self) -> Self:
        if self.bits is not None and not self.scheme.startswith("gptq"):
            raise ValueError("bits applies to gptq only. To fix: remove bits, the scheme fixes the width")
        return self

    @property
    def precision(self) -> str:
        if self.scheme.startswith("gptq") and self.bits == 8:
            return "int8"
        return SCHEME_PRECISION[self.scheme]


class ModelRef(fields.Strict):
    """The model: a registry name, a Hugging Face config.json, or an explicit architecture."""

    name: fields.Label | None = pydantic.Field(None, description="Registry key or common spelling, e.g. llama-3.1-8b.")
    hf_config: Annotated[str, pydantic.Field(min_length=1, max_length=4096)] | None = pydantic.Field(
        None, description="Path to a Hugging Face config.json, read offline (relative to the spec file)."
    )
    hf_id: Annotated[str, pydantic.Field(max_length=200)] | None = pydantic.Field(
        None,
        description="Hugging Face repo id (org/name): config.json and safetensors metadata through "
        "huggingface_hub (the [hf] extra), honouring HF_HUB_OFFLINE and the local cache.",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$",
    )
    params_b: fields.ParamsB | None = pydantic.Field(None, description="Billions of parameters (total, for MoE).")
    active_params_b: fields.ParamsB | None = pydantic.Field(None, description="MoE: billions active per token.")
    layers: fields.Layers | None = None
    hidden_size: fields.HiddenSize | None = None
    attention_heads: fields.Heads | None = None
    kv_heads: fields.Heads | None = pydantic.Field(None, description="GQA/MQA; defaults to attention_heads.")
    head_dim: fields.HeadDim | None = pydantic.Field(None, description="Defaults to hidden_size / attention_heads.")
    rope_scaling: RopeScaling | None = pydantic.Field(
        None,
        description="Opt in to a context beyond the model's trained maximum with RoPE scaling "
        "({type: yarn, factor: 4}); default: none, and a longer context is refused.",
    )
    quantization: Quantization | None = pydantic.Field(
        None, description="Quantization scheme of the weights; sets precision when precision is not given."
    )

    @pydantic.model_validator(mode="after")
    def _one_way(self) -> Self:
        explicit = [self.params_b, self.layers, self.hidden_size, self.attention_heads]
        ways = [
            self.name is not None or self.hf_id is not None,
            self.hf_config is not None,
            any(v is not None for v in explicit),
        ]
        if sum(ways) != 1 or (self.name is not None and self.hf_id is not None):
            raise ValueError(
                "give exactly one of: name, hf_id, hf_config, or an explicit architecture "
                "(params_b, layers, hidden_size, attention_heads). To fix: keep one and remove the others"
            )
        if ways[2] and not all(v is not None for v in explicit):
            raise ValueError(
                "an explicit architecture needs params_b, layers, hidden_size and attention_heads. To fix: add the missing ones"
            )
        if self.active_params_b and self.params_b and self.active_params_b > self.params_b:
            raise ValueError("active_params_b cannot exceed params_b. To fix: give total parameters in params_b")
        if ways[2] and self.kv_heads is not None and self.kv_heads > self.attention_heads:
            raise ValueError("kv_heads cannot exceed attention_heads. To fix: give the key/value head count (GQA)")
        if ways[2] and self.head_dim is None and self.hidden_size < self.attention_heads:
            raise ValueError(
                "hidden_size is smaller than attention_heads, so no head_dim follows. To fix: give head_dim"
            )
        return self


class PercentileTargets(fields.Strict):
    """Latency targets at one percentile of requests, queueing at requests_per_second included."""

    ttft_ms: fields.LatencyMs | None = pydantic.Field(None, description="Time to first token, ms.")
    tpot_ms: fields.LatencyMs | None = pydantic.Field(None, description="Time per output token, ms.")
    e2e_ms: fields.LatencyMs | None = pydantic.Field(None, description="End-to-end request latency, ms.")


class Targets(fields.Strict):
    """Serving targets; all optional. Throughput targets are multiplied by `growth` before sizing."""

    tokens_per_second: fields.TokensPerSecond | None = pydantic.Field(None, description="Aggregate output tokens/s.")
    ttft_ms: fields.LatencyMs | None = pydantic.Field(
        None, description="Time to first token at batch_size concurrent requests, ms."
    )
    tpot_ms: fields.LatencyMs | None = pydantic.Field(None, description="Time per output token, ms.")
    requests_per_second: fields.positive_float(1e6, lower=fields.MIN_RATE, inclusive=True) | None = pydantic.Field(
        None, description="Poisson request rate to serve (all replicas); percentile targets include the queueing at it."
    )
    p50: PercentileTargets | None = None
    p95: PercentileTargets | None = None
    p99: PercentileTargets | None = None

    @pydantic.model_validator(mode="after")
    def _percentiles_need_rate(self) -> Self:
        if (self.p50 or self.p95 or self.p99) and self.requests_per_second is None:
            raise ValueError(
                "percentile targets (p50/p95/p99) need requests_per_second, the load they hold at. "
                "To fix: add inference.targets.requests_per_second"
            )
        return self

    def percentiles(self) -> list[tuple[float, PercentileTargets]]:
        """(fraction, targets) for each percentile given."""
        return [(q, t) for q, t in ((0.5, self.p50), (0.95, self.p95), (0.99, self.p99)) if t is not None]


class OutputTokens(fields.Strict):
    """Output tokens per request: the mean sets speed, the max the KV cache each sequence may reach."""

    mean: fields.Context = pydantic.Field(description="Mean output tokens per request.")
    max: fields.Context | None = pydantic.Field(None, description="Longest output (memory); default the mean.")

    @pydantic.model_validator(mode="after")
    def _max_covers_mean(self) -> Self:
        if self.max is not None and self.max < self.mean:
            raise ValueError("output_tokens.max is below its mean. To fix: raise max or lower mean")
        return self


class ServingLayout(fields.Strict):
    """A pinned serving layout: only shapes that run it are considered."""

    tensor_parallel: Literal[1, 2, 4, 8] | None = pydantic.Field(None, description="GPUs per tensor-parallel group.")
    pipeline_stages: fields.count(64) | None = pydantic.Field(None, description="Pipeline stages, one per node.")
    data_parallel: fields.Replicas | None = pydantic.Field(None, description="Replicas at least (as deploy.replicas).")


class InferenceSpec(fields.Strict):
    context_length: fields.Context = pydantic.Field(4096, description="Tokens per sequence, prompt + output.")
    batch_size: fields.Batch = pydantic.Field(1, description="Concurrent sequences held in the KV cache.")
    kv_cache_precision: KvPrecision | None = pydantic.Field(
        None, description="Defaults from precision (16-bit for int8/int4 weights)."
    )
    prompt_tokens: fields.Context | None = pydantic.Field(
        None, description="Prompt length for time to first token; defaults to context_length (worst case)."
    )
    output_tokens: OutputTokens | None = pydantic.Field(
        None,
        description="Output tokens per request (a number, or mean and max); default context_length - "
        "prompt_tokens. With prompt_tokens and no context_length, context_length = prompt + max output.",
    )
    targets: Targets = Targets()
    layout: ServingLayout | None = pydantic.Field(None, description="Pin the serving layout (TP, PP, DP).")

    @pydantic.field_validator("output_tokens", mode="before")
    @classmethod
    def _output_number(cls, value: Any) -> Any:
        """A plain number is the mean (and the max)."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return {"mean": value}
        return value

    @pydantic.model_validator(mode="before")
    @classmethod
    def _context_from_lengths(cls, data: Any) -> Any:
        if isinstance(data, dict) and "context_length" not in data and data.get("prompt_tokens") is not None:
            out = data.get("output_tokens")
            peak = out.get("max") or out.get("mean") if isinstance(out, dict) else out
            if isinstance(peak, int) and not isinstance(peak, bool) and isinstance(data["prompt_tokens"], int):
                data = {**data, "context_length": data["prompt_tokens"] + peak}
        return data

    @pydantic.model_validator(mode="after")
    def _prompt_fits(self) -> Self:
        if self.prompt_tokens is not None and self.prompt_tokens > self.context_length:
            raise ValueError(
                "prompt_tokens cannot exceed context_length. To fix: lower prompt_tokens or raise context_length"
            )
        if self.output_tokens is not None and (self.prompt_tokens or 0) + self.output_max > self.context_length:
            raise ValueError(
                "prompt_tokens + output_tokens exceed context_length. To fix: raise context_length or lower them"
            )
        return self

    @property
    def output_mean(self) -> int | None:
        return None if self.output_tokens is None else self.output_tokens.mean

    @property
    def output_max(self) -> int:
        o = self.output_tokens
        return 0 if o is None else (o.max or o.mean)


class TrainingSpec(fields.Strict):
    sequence_length: fields.Context = pydantic.Field(4096, description="Tokens per training sequence.")
    micro_batch_size: fields.Batch = pydantic.Field(1, description="Sequences per GPU per step.")
    tokens: fields.TrainingTokens | None = pydantic.Field(None, description="Total training tokens.")
    deadline_hours: fields.DeadlineHours | None = pydantic.Field(None, description="With tokens, sets a FLOPs rate.")
    optimizer: Literal["adamw", "sgd", "adafactor", "adamw-8bit"] = "adamw"
    activation_checkpointing: fields.StrictBool = True
    sharding: Literal["auto", "none", "zero1", "zero2", "zero3"] = pydantic.Field(
        "auto", description="auto: the least sharding that fits."
    )
    lora_rank: fields.LoraRank = pydantic.Field(16, description="LoRA/QLoRA adapter rank.")
    master_weights: Literal["fp32", "none"] = pydantic.Field(
        "fp32",
        description="fp32: mixed precision with an fp32 master copy (4 B/param); "
        "none: pure bf16/fp16 training, the model loaded in 16-bit (Hugging Face Trainer, axolotl).",
    )

    @pydantic.model_validator(mode="after")
    def _deadline_needs_tokens(self) -> Self:
        if self.deadline_hours is not None and self.tokens is None:
            raise ValueError(
                "deadline_hours needs tokens. To fix: add training.tokens (total training tokens) or remove deadline_hours"
            )
        return self


class Placement(fields.Strict):
    # min_length 1: an empty list would allow nothing and reject every offer "by placement" (exit 3 with
    # nothing to act on); leaving the field out is how a spec allows all.
    providers: list[Provider] | None = pydantic.Field(None, min_length=1, description="Default: all configured.")
    regions: list[fields.Label] | None = pydantic.Field(
        None, min_length=1, description="Default: every region in the catalog."
    )
    purchase: Literal["on-demand", "spot", "any"] = "on-demand"
    max_hourly_usd: fields.HourlyUsd | None = pydantic.Field(None, description="Ceiling, $/hour for all nodes.")
    allow_opt_in: fields.StrictBool = pydantic.Field(False, description="Allow AWS Local Zones and opt-in regions.")
    gpus: list[fields.Label] | None = pydantic.Field(
        None, min_length=1, description="Only these GPU models (canonical names)."
    )


class Sizing(fields.Strict):
    # 0.90 is vLLM's default gpu_memory_utilization (vLLM engine arguments,
    # --gpu-memory-utilization, "defaults to 0.9"; docs.vllm.ai, 2025).
    memory_headroom: fields.positive_float(1.0, lower=0.5) = pydantic.Field(
        0.90,
        description="Fraction of driver-reported GPU memory the workload may use; default 0.90 for LLM serving "
        "(vLLM's gpu_memory_utilization), 0.95 for runtimes that allocate on demand (training, diffusion, vision).",
    )
    precision_fallback: fields.StrictBool = pydantic.Field(
        False,
        description="Allow GPUs without the spec's precision: bf16 runs as fp16 (pre-Ampere), "
        "fp8 as weight-only fp8 with 16-bit compute (Ampere). The plan names the fallback.",
    )
    objective: Literal["auto", "hourly", "per-token"] = pydantic.Field(
        "auto", description="auto: $ per million output tokens when a throughput target is set, else $/hour."
    )
    calibration: str | None = pydantic.Field(
        None,
        description="Calibration file from `gpusizer calibrate` (relative to the spec file); default $GPUSIZER_CALIBRATION.",
    )


class Deploy(fields.Strict):
    """How the components provision the choice (ignored by the CLI's sizing, except replicas)."""

    replicas: fields.Replicas = pydantic.Field(
        1, description=f"Copies of the workload (at most {fields.MAX_REPLICAS}); throughput targets are split."
    )
    capacity_failover: fields.StrictBool = pydantic.Field(
        False, description="AWS: an Auto Scaling group over the top adequate types, so capacity errors fall back."
    )
    failover_types: fields.count(20) = pydantic.Field(3, description="How many ranked types the failover lists.")
    image: fields.Label | None = pydantic.Field(
        None,
        description="Container image: serving, a pinned vllm/vllm-openai:vX.Y.Z (VMs default to the pinned "
        "release); on-prem pools, the Deployment's image.",
    )
    machine_image: fields.Label | None = pydantic.Field(
        None, description="AMI id or GCP image; default: Deep Learning image."
    )
    disk_gib: fields.DiskGib | None = pydantic.Field(None, description="Root disk; default: weights plus margin.")
    autoscaling: autoscaling_mod.Autoscaling | None = pydantic.Field(
        None,
        description="Replicas between min and max on a metric (docs/contract.md section 8); default: fixed replicas.",
    )
    expose: Literal["internal", "none"] = pydantic.Field(
        "internal",
        description="Serving on AWS/GCP VMs: an internal load balancer with a /health check in front "
        "(internal), or the instances only (none).",
    )
    capacity_reservation: fields.Label | None = pydantic.Field(
        None,
        description="AWS: an On-Demand Capacity Reservation id (cr-...) or a capacity reservation group ARN; "
        "GCP: a reservation name in the chosen zone. The instances launch into it.",
    )
    capacity_block: fields.StrictBool = pydantic.Field(
        False, description="AWS: capacity_reservation is an EC2 Capacity Block for ML (market type capacity-block)."
    )

    @pydantic.model_validator(mode="after")
    def _bounds_cover_replicas(self) -> Self:
        a = self.autoscaling
        if a is not None and a.max_replicas is not None and a.max_replicas < self.replicas:
            raise ValueError(
                f"autoscaling.max_replicas ({a.max_replicas}) is below replicas ({self.replicas}). "
                "To fix: raise max_replicas or lower replicas"
            )
        if self.capacity_block and not self.capacity_reservation:
            raise ValueError(
                "deploy.capacity_block needs deploy.capacity_reservation: the Capacity Block's "
                "reservation id (cr-...). To fix: set it, or drop capacity_block"
            )
        return self


@functools.cache
def _default(section: type[fields.Strict]) -> fields.Strict:
    """A section with every default, built once: the models are frozen, so one instance serves every spec."""
    return section()


class WorkloadSpec(fields.Strict):
    """A workload to size. See docs/contract.md section 1."""

    @pydantic.model_validator(mode="before")
    @classmethod
    def _precision_from_scheme(cls, data: Any) -> Any:
        """model.quantization.scheme sets precision when precision is not given."""
        if isinstance(data, dict) and "precision" not in data and isinstance(data.get("model"), dict):
            q = data["model"].get("quantization")
            scheme = q.get("scheme") if isinstance(q, dict) else None
            if isinstance(scheme, str) and scheme in SCHEME_PRECISION:
                bits = q.get("bits")
                data = {
                    **data,
                    "precision": "int8" if scheme.startswith("gptq") and bits == 8 else SCHEME_PRECISION[scheme],
                }
        return data

    name: str = pydantic.Field(pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$", description="[a-z0-9-]")
    model: ModelRef
    task: Literal["inference", "training", "finetune"] = "inference"
    finetune_method: Literal["full", "lora", "qlora"] | None = pydantic.Field(
        None, description="task: finetune only; default lora. qlora keeps base weights in 4-bit NF4."
    )
    precision: Precision = "bf16"
    inference: InferenceSpec | None = None
    training: TrainingSpec | None = None
    growth: fields.Growth = pydantic.Field(1.0, description="Multiplies throughput targets (planned growth).")
    placement: Placement = Placement()
    sizing: Sizing = Sizing()
    deploy: Deploy = Deploy()

    @pydantic.model_validator(mode="after")
    def _sections_match_task(self) -> Self:
        if self.task == "inference":
            if self.training is not None:
                raise ValueError("training: applies to task training or finetune. To fix: remove it or change task")
            if self.finetune_method is not None:
                raise ValueError(
                    "finetune_method: applies only to task: finetune. To fix: remove it or set task: finetune"
                )
        else:
            if self.deploy.autoscaling is not None:
                raise ValueError(
                    f"deploy.autoscaling applies to serving (task: inference), not {self.task}. "
                    "To fix: remove it; a training job runs a fixed set of GPUs"
                )
            if self.inference is not None:
                raise ValueError(f"inference: does not apply to task: {self.task}. To fix: use a training: section")
            if self.precision in ("int8", "int4") and self.finetune_method != "qlora":
                raise ValueError(
                    f"precision: {self.precision} weights cannot be trained. To fix: use bf16, or finetune_method: qlora"
                )
            if self.model.quantization is not None and self.finetune_method != "qlora":
                raise ValueError(
                    "model.quantization applies to serving (and qlora's base). To fix: remove it for training"
                )
            if self.task == "training" and self.finetune_method is not None:
                raise ValueError(
                    "finetune_method: applies only to task: finetune. To fix: remove it or set task: finetune"
                )
        return self

    @pydantic.model_validator(mode="after")
    def _scheme_matches_precision(self) -> Self:
        q = self.model.quantization
        if q is not None and self.task == "inference" and q.precision != self.precision:
            raise ValueError(
                f"model.quantization.scheme {q.scheme} stores {q.precision} weights, not precision {self.precision}. "
                f"To fix: set precision: {q.precision} or remove precision"
            )
        return self

    @property
    def serving(self) -> InferenceSpec:
        """The inference section with its defaults (task inference)."""
        return self.inference or _default(InferenceSpec)

    @property
    def train(self) -> TrainingSpec:
        """The training section with its defaults (task training/finetune)."""
        return self.training or _default(TrainingSpec)

    @property
    def method(self) -> str:
        """full, lora or qlora for fine-tuning; full for training; "" for inference."""
        if self.task == "finetune":
            return self.finetune_method or "lora"
        return "full" if self.task == "training" else ""


# What each kind of pydantic failure means for a person editing YAML.
_FIXES = {
    "extra_forbidden": "remove it or check its spelling",
    "missing": "add it",
    "string_pattern_mismatch": "use lower-case letters, digits and '-' (it becomes part of resource names)",
    "int_parsing": "give a whole number",
    "int_type": "give a whole number",
    "float_parsing": "give a number",
    "float_type": "give a number",
    "bool_parsing": "give true or false",
    "greater_than_equal": "use a larger value",
    "greater_than": "use a larger value",
    "less_than_equal": "use a smaller value",
    "model_type": "give a mapping of fields",
    "finite_number": "give a finite number",
    "string_too_long": "shorten it",
    "string_too_short": "give a value",
    "too_short": "give at least one item, or leave the field out (its default allows all)",
    "int_from_float": "give a whole number",
    "bool_type": "give true or false (unquoted)",
}


# An example per list field, for "give a list" (list_type): the example matches the field.
_LIST_EXAMPLES = {
    "providers": "[aws, gcp]",
    "regions": "[us-east-1, us-central1]",
    "gpus": "[L4, L40S]",
    "tolerations": "[{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]",
    "schedule": "[{start: '0 8 * * 1-5', end: '0 20 * * 1-5', replicas: 3}]",
}


# Problems listed per error: a 100,000-item list of bad values is one message, not 100,000 lines.
_MAX_LINES = 10


def _field_path(loc: tuple) -> str:
    return ".".join(str(part)[: inputs.QUOTE_CHARS] for part in loc)


def errors_for(
    exc: pydantic.ValidationError,
    model: type[pydantic.BaseModel],
    prefix: str = "",
    what: str = "workload spec",
) -> errors.SpecError:
    """Turn pydantic's errors into one SpecError a person can act on.

    Each line names the field (dotted, under `prefix`), what is wrong, the
    value given, and "To fix: ...". The error's `field` is the first one.

    Args:
        exc: what `model.model_validate` raised.
        model: the model that was validated; an unknown field's fix lists the
            fields `model` allows at that place. The caller passes it, so this
            layer needs to know no model above it (on-prem pools).
        prefix: dotted path the document sits under ("pools.0").
        what: how the message names the document.
    """
    lines = []
    first_field = ""
    problems = exc.errors(include_url=False)
    for err in problems[:_MAX_LINES]:
        field = ".".join(filter(None, [prefix, _field_path(err["loc"])])) or "(top level)"
        first_field = first_field or field
        fix = _FIXES.get(err["type"])
        if err["type"] == "string_pattern_mismatch" and field.endswith("hf_id"):
            fix = "give a Hugging Face repo id, organisation/name (e.g. meta-llama/Llama-3.1-8B-Instruct)"
        if err["type"] == "list_type":
            fix = f"give a list, e.g. {_LIST_EXAMPLES.get(str(err['loc'][-1]), '[first, second]')}"
            if isinstance(err["input"], str):
                fix += f" (one item is written [{err['input'][:40]}])"
        if err["type"] == "literal_error":
            fix = "use " + err["ctx"]["expected"]
        if err["type"] == "extra_forbidden":
            allowed = _allowed_fields(model, err["loc"][:-1])
            if allowed:
                fix = f"{fix}; allowed here: {', '.join(allowed)}"
        msg = err["msg"].removeprefix("Value error, ")[:300]
        if err["type"] == "string_pattern_mismatch" and err["ctx"]["pattern"] == fields.LABEL_PATTERN:
            msg, fix = "must be one line of text", "remove line breaks, control characters, '|' and '`'"
        shown = err["input"]
        got = (
            ""
            if err["type"] in ("missing", "extra_forbidden") or isinstance(shown, dict)
            else f" (got {inputs.quote(shown)})"
        )
        lines.append(f"{field}: {msg}{got}." + (f" To fix: {fix}." if fix else ""))
    if len(problems) > _MAX_LINES:
        lines.append(f"... and {len(problems) - _MAX_LINES} more problem(s).")
    return errors.SpecError(f"invalid {what}:\n  " + "\n  ".join(lines), field=first_field)


def _allowed_fields(cls: type[pydantic.BaseModel] | None, loc: tuple) -> list[str]:
    for part in loc:
        field = cls.model_fields.get(str(part)) if cls else None
        if field is None:
            return []
        ann = field.annotation
        inner = [
            a for a in getattr(ann, "__args__", (ann,)) if isinstance(a, type) and issubclass(a, pydantic.BaseModel)
        ]
        cls = inner[0] if inner else None
    return sorted(cls.model_fields) if cls else []


def parse_spec(data: Any, base_dir: str | os.PathLike | None = None) -> WorkloadSpec:
    """Validate a spec mapping.

    Args:
        data: the spec as a mapping (parsed YAML, stack config, a dict).
        base_dir: directory that a relative `model.hf_config` is relative to.

    Returns:
        The validated, frozen spec; `model.hf_config` made absolute.

    Raises:
        SpecError: naming the first offending field, with every problem listed.
    """
    if isinstance(data, WorkloadSpec):
        return data
    if not isinstance(data, dict):
        raise errors.SpecError(
            f"a workload spec must be a mapping of fields (got {'an empty document' if data is None else type(data).__name__}). "
            "To fix: start the file with 'name: my-workload' and 'model: ...'",
            field="",
        )
    try:
        spec = WorkloadSpec.model_validate(data)
    except pydantic.ValidationError as exc:
        raise errors_for(exc, WorkloadSpec) from None
    if spec.model.hf_config and base_dir is not None:
        path = pathlib.Path(base_dir, spec.model.hf_config)
        spec = spec.model_copy(update={"model": spec.model.model_copy(update={"hf_config": str(path)})})
    if spec.sizing.calibration and base_dir is not None:
        path = pathlib.Path(base_dir, spec.sizing.calibration)
        spec = spec.model_copy(update={"sizing": spec.sizing.model_copy(update={"calibration": str(path)})})
    return spec


def json_schema() -> dict:
    """JSON Schema of the spec, for editors (yaml-language-server) and CI linting."""
    schema = WorkloadSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "gpusizer workload spec"
    return schema
