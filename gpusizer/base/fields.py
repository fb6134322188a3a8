"""Strict numeric field types for every model that reads user input (spec, pools, hf_config).

Each type refuses booleans (YAML's ``true`` is not 1 ms), NaN and infinities
(``.inf``, and ``1e309`` which overflows to inf), and values past a physical
upper bound, so nothing absurd reaches the estimators: a bound turns a
``num_hidden_layers: 1e12`` that would spin for hours, or a ``params_b:
1e308`` that overflows, into a SpecError naming the field. Bounds are
deliberately generous (10-100x the largest published figure, each cited
below): they stop nonsense, never a real workload. "Model, don't forbid":
within them, an expensive workload is priced, not refused.

Use them as annotations in any pydantic model::

    class Autoscaling(pydantic.BaseModel):
        max_replicas: fields.Replicas = 1
        target: fields.positive_float(1e9)

Strings that spell a number ("2.0e9", which YAML 1.1 reads as a string) are
still accepted, as pydantic's lax mode does; booleans never are.

Every spec section derives from :class:`Strict`. A module that defines pydantic
models does not postpone annotations (no ``from __future__ import annotations``):
pydantic would evaluate each annotation string again when it builds the model
(about 2 ms of every CLI start for the spec's twelve models; a validator returns
``typing.Self``, a later class is named in quotes).
"""

from typing import Annotated, Any

import pydantic


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("give a number, not true/false")
    return value


def _strict_bool(value: Any) -> Any:
    if not isinstance(value, bool):
        raise ValueError("give true or false (unquoted)")
    return value


class Strict(pydantic.BaseModel):
    """The base of every spec section: frozen, and a key it does not define is an error, never ignored."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")


NotBool = pydantic.BeforeValidator(_not_bool)
StrictBool = Annotated[bool, pydantic.BeforeValidator(_strict_bool)]
"""A boolean given as one: ``"false"`` (a string, true in Python) and ``0``/``1`` are refused."""


# The bounds come first in each Annotated: applied to the number itself they are JSON Schema's
# minimum/maximum in `gpusizer schema` (after the validator they were unknown "ge"/"le" keys that
# editors ignore); NotBool, last, runs first either way (a before-validator wraps what precedes it).


def count(upper: int, lower: int = 1) -> Any:
    """A whole number in [lower, upper], never a boolean; 8.0 is accepted as 8, 8.5 refused."""
    return Annotated[int, pydantic.Field(ge=lower, le=upper), NotBool]


def positive_float(upper: float, lower: float = 0.0, inclusive: bool = False) -> Any:
    """A finite number in (lower, upper] (or [lower, upper] with inclusive), never a boolean."""
    bound = (
        pydantic.Field(le=upper, allow_inf_nan=False, ge=lower)
        if inclusive
        else pydantic.Field(le=upper, allow_inf_nan=False, gt=lower)
    )
    return Annotated[float, bound, NotBool]


# Lower bounds: a value below them is a typo, and dividing by it overflows to
# infinity downstream ($ per million tokens at 1e-308 tokens/s).
MIN_PARAMS_B = 1e-6  # a thousand parameters
MIN_RATE = 1e-3  # a token every 1,000 s
MIN_LATENCY_MS = 1e-3  # 1 us; a CUDA kernel launch alone takes ~5 us (NVIDIA CUDA best practices guide)
MIN_HOURS = 1e-3  # 3.6 s
MIN_GROWTH = 1e-3
MIN_LIFETIME_YEARS = 1 / 12  # a month
MIN_UTILIZATION = 0.01  # 1% of hours in paid work

# Upper bounds, each 10-100x the largest published figure.
MAX_LAYERS = 1_000  # Llama 3.1 405B: 126 layers (arXiv:2407.21783, table 3); GPT-3: 96.
MAX_HIDDEN = 1 << 17  # 131,072; PaLM 540B: 18,432 (arXiv:2204.02311, table 1); Llama 405B: 16,384.
MAX_HEADS = 1_024  # Llama 3.1 405B: 128 query heads (arXiv:2407.21783, table 3).
MAX_HEAD_DIM = 1_024  # Gemma 2/3: 256 (Gemma 2 report, arXiv:2408.00118, table 1).
MAX_VOCAB = 1 << 22  # 4,194,304; Gemma: 256,128 (arXiv:2408.00118).
MAX_EXPERTS = 65_536  # DeepSeek-V3: 256 routed (arXiv:2412.19437); Kimi K2: 384 (unverified).
MAX_PARAMS_B = 100_000.0  # 100T parameters; the largest published, Kimi K2 / Switch-C, are ~1.6T.
MAX_CONTEXT = 1 << 24  # 16,777,216 tokens; Llama 4 Scout: 10M (Meta model card, 2025-04, unverified).
MAX_BATCH = 1 << 20  # concurrent sequences; vLLM's default max_num_seqs is 256.
MAX_LORA_RANK = 1 << 16  # a rank cannot usefully exceed hidden_size; 8-64 is typical (LoRA, arXiv:2106.09685).
MAX_TRAINING_TOKENS = 1e15  # Llama 3: 15.6T tokens (arXiv:2407.21783, section 3.1): 64x headroom.
MAX_TOKENS_PER_SECOND = 1e9  # aggregate output tokens/s; an H100 serves ~1e4 (MLPerf Inference v4.1).
MAX_LATENCY_MS = 86_400_000.0  # one day, in ms: a TTFT/TPOT target beyond it is not a target.
MAX_DEADLINE_HOURS = 87_600.0  # ten years.
MAX_GROWTH = 1_000.0  # planned growth multiplier.
# The most copies the optimizer spreads a workload over (gpusizer.estimate.fit.MAX_REPLICAS
# reads this): more replicas than this is a fleet, sized per replica by the user.
MAX_REPLICAS = 16
MAX_DISK_GIB = 65_536  # 64 TiB: the largest EBS io2 Block Express volume (AWS EBS user guide, volume types).
MAX_HOURLY_USD = 1e6  # ceiling for all nodes; p5.48xlarge lists at ~$55/h (AWS price list, 2026).
MAX_USD_PER_GPU_HOUR = 1_000.0  # H100 on-demand: ~$7-12/GPU-h across clouds (catalog snapshot).
MAX_CAPEX_USD_PER_NODE = 1e8  # a DGX B200 lists around $500k (press, 2024, unverified).
MAX_POWER_KW_PER_NODE = 1_000.0  # DGX B200: 14.3 kW max (NVIDIA DGX B200 datasheet).
MAX_USD_PER_KWH = 10.0  # EU industrial prices peaked near $0.5/kWh in 2022 (Eurostat, unverified).
MAX_PUE = 5.0  # Uptime Institute 2024 survey average 1.56; 1.0 is the physical floor.
MAX_LIFETIME_YEARS = 50.0
MAX_NODES = 100_000  # pool nodes; the largest published clusters hold ~100k GPUs (xAI Colossus, unverified).
MAX_VCPUS = 4_096  # the largest x86 hosts: 448-896 vCPUs (AWS u7in, EC2 user guide).
MAX_RAM_GIB = 65_536.0  # AWS u7in-32tb: 32 TiB (EC2 user guide).
MAX_NETWORK_GBPS = (
    32_000.0  # a typo guard: 10 x the fastest node network sold (p5en: 3,200 Gbit/s EFA, EC2 user guide).
)

Layers = count(MAX_LAYERS)
HiddenSize = count(MAX_HIDDEN)
Heads = count(MAX_HEADS)
HeadDim = count(MAX_HEAD_DIM)
Vocab = count(MAX_VOCAB)
Experts = count(MAX_EXPERTS)
ParamsB = positive_float(MAX_PARAMS_B, lower=MIN_PARAMS_B, inclusive=True)
Context = count(MAX_CONTEXT)
Batch = count(MAX_BATCH)
LoraRank = count(MAX_LORA_RANK)
TrainingTokens = positive_float(MAX_TRAINING_TOKENS, lower=1.0, inclusive=True)
TokensPerSecond = positive_float(MAX_TOKENS_PER_SECOND, lower=MIN_RATE, inclusive=True)
LatencyMs = positive_float(MAX_LATENCY_MS, lower=MIN_LATENCY_MS, inclusive=True)
DeadlineHours = positive_float(MAX_DEADLINE_HOURS, lower=MIN_HOURS, inclusive=True)
Growth = positive_float(MAX_GROWTH, lower=MIN_GROWTH, inclusive=True)
Replicas = count(MAX_REPLICAS)
DiskGib = count(MAX_DISK_GIB)
HourlyUsd = positive_float(MAX_HOURLY_USD)
UsdPerGpuHour = positive_float(MAX_USD_PER_GPU_HOUR, inclusive=True)  # $0 is a free (sunk-cost) pool
CapexUsd = positive_float(MAX_CAPEX_USD_PER_NODE)
OpexUsd = positive_float(MAX_CAPEX_USD_PER_NODE, inclusive=True)
PowerKw = positive_float(MAX_POWER_KW_PER_NODE, inclusive=True)
UsdPerKwh = positive_float(MAX_USD_PER_KWH, inclusive=True)
Pue = positive_float(MAX_PUE, lower=1.0, inclusive=True)
LifetimeYears = positive_float(MAX_LIFETIME_YEARS, lower=MIN_LIFETIME_YEARS, inclusive=True)
Utilization = positive_float(1.0, lower=MIN_UTILIZATION, inclusive=True)
"""A share of hours in [0.01, 1]."""
PoolNodes = count(MAX_NODES)
Vcpus = count(MAX_VCPUS)
RamGib = positive_float(MAX_RAM_GIB)

# Free text that ends up in reports and resource metadata: one line, no
# markdown table delimiter or backtick, so a value cannot break a PR comment.
LABEL_PATTERN = r"^[^\x00-\x1f\x7f|`]+$"
Label = Annotated[str, pydantic.Field(min_length=1, max_length=128, pattern=LABEL_PATTERN)]
