"""Shapes, parameter counts, per-GPU work and collectives of a decoder-only transformer, from its
Hugging Face ``config.json``.

What this module answers, for one layer of a real model under a parallel plan (tp, ep, pp):
which matmuls, attention and elementwise ops each GPU runs (FLOPs and HBM bytes, per GPU, per step),
and which collectives the plan inserts (message bytes per rank, as nccl-tests' "size" column).
`step` prices both; this module never knows about time.

Words with two meanings (per-rank vs total, per-token vs per-step, GB vs GiB) are defined once in the
glossary of `shardbudget.units`. Here, every `Op` is **per GPU for one step**, and a step processes
`tokens` tokens: the batch size in decode, batch x prompt length in prefill.

Sharding follows Megatron-LM / vLLM:
  * attention: fused QKV column-parallel, O row-parallel; query heads split over tp. When tp exceeds
    the number of KV heads, each KV head is replicated so every rank holds one (vLLM
    `QKVParallelLinear`), and the replicas are counted in weight, KV-cache and attention bytes.
  * MLP: gate/up column-parallel, down row-parallel; one all-reduce after O and one after down.
  * MoE: with ep == 1 every expert is tp-sharded like a dense MLP (vLLM `FusedMoE` without expert
    parallelism); with ep > 1 each rank holds E/ep whole experts and tokens travel by all-to-all.
    Shared experts are always tp-sharded like a dense MLP. The router is replicated.
  * MLA (DeepSeek-V2/V3): down-projections replicated, up-projections column-parallel, O
    row-parallel; the latent KV cache (kv_lora_rank + rope dims per token) is replicated on every
    rank, as in vLLM's MLA backends. Decode uses the absorbed form, prefill the expanded form.
  * Embedding and LM head are vocabulary-parallel.

DeepSeek-V3's multi-token-prediction (MTP) module (`num_nextn_predict_layers`) is ignored: it is only
used for speculative decoding, and the published 671B / 37B figures exclude it.
"""

from __future__ import annotations

import json
import math
import reprlib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Any, NamedTuple

from .errors import CatalogError, PlanError, UnknownNameError

__all__ = [
    "CollectiveCall", "ModelConfig", "Op",
    "active_params", "collectives_for_layer", "config_from_dict", "dtype_bytes", "embedding_work",
    "expected_experts_hit", "kv_bytes_per_token", "kv_cache_bytes_per_gpu", "layer_kinds",
    "layer_work", "list_models", "lm_head_work", "load_model", "pp_collectives", "total_params",
    "weight_bytes_per_gpu",
]

# ----------------------------------------------------------------------------------------------
# dtypes
# ----------------------------------------------------------------------------------------------

_DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0, "float32": 4.0,
    "bf16": 2.0, "bfloat16": 2.0, "fp16": 2.0, "float16": 2.0,
    "fp8": 1.0, "int8": 1.0,
    "int4": 0.5,  # two weights per byte: a float on purpose, never integer-divided to 0
}


def dtype_bytes(name: str) -> float:
    """Bytes per element of a weight, activation or KV-cache dtype (bf16 -> 2.0, int4 -> 0.5)."""
    key = name.lower() if isinstance(name, str) else None
    if key not in _DTYPE_BYTES:
        raise UnknownNameError("dtype", str(name), _DTYPE_BYTES)
    return _DTYPE_BYTES[key]


# ----------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """The shape of a decoder-only transformer, read from an HF config.json (see `config_from_dict`).

    Sizes are element counts (not bytes); byte sizes come from a dtype at the call site.
    Build it with `load_model` / `config_from_dict`, which validate it and fill defaults visibly.
    """

    name: str
    """Catalog name, or the folder / file stem the config was read from."""
    model_type: str
    """HF `model_type` (family): llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe,
    deepseek_v2 or deepseek_v3."""
    hidden_size: int
    """Width of the residual stream, elements per token (HF `hidden_size`)."""
    num_layers: int
    """Decoder layers (HF `num_hidden_layers`); DeepSeek's MTP layer is not counted."""
    num_heads: int
    """Query heads (HF `num_attention_heads`)."""
    num_kv_heads: int
    """Key/value heads (HF `num_key_value_heads`; absent or null -> num_heads, i.e. MHA)."""
    head_dim: int
    """Elements per head (HF `head_dim`; absent -> hidden_size / num_heads). For MLA: the q/k head
    width qk_nope_head_dim + qk_rope_head_dim."""
    intermediate_size: int
    """Width of the dense gated MLP, elements (for Mixtral: of each expert)."""
    vocab_size: int
    """Rows of the embedding and LM head, tokens."""
    tie_embeddings: bool = False
    """LM head shares the embedding matrix (HF `tie_word_embeddings`; absent -> False, the default of
    every family read here)."""
    max_position_embeddings: int = 0
    """Longest context the model was configured for, tokens (0: the config does not say)."""
    qkv_bias: bool = False
    """Q, K and V projections carry a bias (always for Qwen2; HF `attention_bias` otherwise)."""
    qk_norm: bool = False
    """Per-head RMSNorm of q and k before RoPE (Qwen3), head_dim weights each."""
    num_experts: int = 0
    """Routed experts per MoE layer (0: dense model)."""
    experts_per_token: int = 0
    """Routed experts each token is sent to, k (HF `num_experts_per_tok`)."""
    moe_intermediate_size: int = 0
    """Width of one routed expert's gated MLP, elements."""
    num_shared_experts: int = 0
    """Experts every token goes through in each MoE layer (DeepSeek `n_shared_experts`; 1 for
    Qwen2-MoE when `shared_expert_intermediate_size` > 0)."""
    shared_expert_intermediate_size: int = 0
    """Width of one shared expert's gated MLP, elements."""
    dense_layers: tuple[int, ...] = ()
    """Indices of the layers whose FFN is a dense MLP in a MoE model. From `first_k_dense_replace`
    and `moe_layer_freq` (DeepSeek: layer i is MoE iff i >= k and i % freq == 0) or from
    `mlp_only_layers` and `decoder_sparse_step` (Qwen-MoE: MoE iff i not listed and
    (i + 1) % step == 0). Empty for Mixtral (every layer MoE) and for dense models."""
    router_bias: bool = False
    """The router carries a per-expert score-correction bias (DeepSeek-V3 `noaux_tc`)."""
    q_lora_rank: int = 0
    """MLA: rank of the query down-projection, elements (0: queries are not compressed)."""
    kv_lora_rank: int = 0
    """MLA: rank of the compressed KV latent, elements per token per layer (0: not MLA)."""
    qk_nope_head_dim: int = 0
    """MLA: per-head q/k elements without rotary embedding."""
    qk_rope_head_dim: int = 0
    """MLA: per-head q/k elements with rotary embedding; the rotary key is shared by all heads."""
    v_head_dim: int = 0
    """MLA: per-head value elements."""

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    def is_moe_layer(self, index: int) -> bool:
        return self.is_moe and index not in self.dense_layers


def layer_kinds(cfg: ModelConfig) -> dict[str, int]:
    """How many layers of each kind the model has: {"dense": n} and/or {"moe": n}.

    Every layer of one kind costs the same, so a step model prices each kind once and multiplies.
    """
    moe = cfg.num_layers - len(cfg.dense_layers) if cfg.is_moe else 0
    counts = {"dense": cfg.num_layers - moe, "moe": moe}
    return {kind: n for kind, n in counts.items() if n}


# ----------------------------------------------------------------------------------------------
# Reading config.json
# ----------------------------------------------------------------------------------------------

_ARCH_TO_FAMILY = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2", "Qwen2MoeForCausalLM": "qwen2_moe", "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe", "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
}
_FAMILIES = tuple(sorted(set(_ARCH_TO_FAMILY.values())))
_MLA_FAMILIES = ("deepseek_v2", "deepseek_v3")
_MAX_INT = 2**31 - 1  # int32, as checkpoints store shapes; keeps every product a finite float
_MAX_LAYERS = 100_000  # real models have a few hundred; the reader lists dense layers one by one


def _short(value: Any) -> str:
    """A bounded repr of a config value for an error message (it may be huge or nested)."""
    return reprlib.repr(value)


class _Reader:
    """Typed access to one raw config dict; every error names the key, the value and the file."""

    def __init__(self, raw: dict, where: str):
        self.raw, self.where = raw, where

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None  # HF writes null for "use the default"

    def fail(self, message: str) -> CatalogError:
        return CatalogError(f"{message} (in {self.where})")

    def integer(self, key: str, *, minimum: int = 1, default: int | None = None,
                maximum: int = _MAX_INT) -> int:
        value = self.raw.get(key)
        if value is None:
            if default is None:
                raise self.fail(f"config.json is missing {key!r}")
            return default
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise self.fail(f"config.json field {key!r} must be an integer from {minimum} to "
                            f"{maximum}, got {_short(value)}")
        return value

    def flag(self, key: str, *, default: bool) -> bool:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(f"config.json field {key!r} must be true or false, got {_short(value)}")
        return value

    def indices(self, key: str, count: int) -> tuple[int, ...]:
        value = self.raw.get(key)
        if value is None:
            return ()
        ok = isinstance(value, list) and all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < count for i in value)
        if not ok:
            raise self.fail(f"config.json field {key!r} must be a list of layer indices from 0 to "
                            f"{count - 1}, got {_short(value)}")
        return tuple(sorted(set(value)))


def _family(r: _Reader) -> str:
    """The model family, from `model_type` or else `architectures[0]`; unsupported ones are refused."""
    if r.raw.get("is_encoder_decoder") is True:
        raise r.fail("config.json describes an encoder-decoder model; only decoder-only models are "
                     "supported")
    supported = ", ".join(_FAMILIES)
    model_type = r.raw.get("model_type")
    if model_type is not None:
        if model_type not in _FAMILIES:
            raise r.fail(f"config.json field 'model_type' is {_short(model_type)}, which shardbudget "
                         f"does not model (supported: {supported})")
        return model_type
    archs = r.raw.get("architectures")
    if archs is None:
        raise r.fail("config.json is missing 'model_type' (and 'architectures')")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str) \
            or archs[0] not in _ARCH_TO_FAMILY:
        raise r.fail(f"config.json field 'architectures' is {_short(archs)}, which shardbudget does "
                     f"not model (supported: {', '.join(sorted(_ARCH_TO_FAMILY))})")
    return _ARCH_TO_FAMILY[archs[0]]


def _attention_fields(r: _Reader, family: str) -> dict[str, Any]:
    heads, hidden = r.integer("num_attention_heads"), r.integer("hidden_size")
    kv_heads = r.integer("num_key_value_heads", default=heads)  # absent/null: multi-head attention
    if heads % kv_heads:
        raise r.fail(f"config.json field 'num_key_value_heads' ({kv_heads}) must divide "
                     f"num_attention_heads ({heads})")
    fields: dict[str, Any] = {"hidden_size": hidden, "num_heads": heads, "num_kv_heads": kv_heads}
    if family in _MLA_FAMILIES:
        fields.update(_mla_fields(r))
        fields["head_dim"] = fields["qk_nope_head_dim"] + fields["qk_rope_head_dim"]
        return fields
    if r.has("head_dim"):
        fields["head_dim"] = r.integer("head_dim")
    elif hidden % heads:
        raise r.fail(f"config.json has no 'head_dim' and hidden_size ({hidden}) is not divisible by "
                     f"num_attention_heads ({heads})")
    else:
        fields["head_dim"] = hidden // heads
    # Qwen2 hard-codes bias=True on q/k/v (transformers modeling_qwen2.py); others say so in the config.
    fields["qkv_bias"] = family in ("qwen2", "qwen2_moe") or r.flag("attention_bias", default=False)
    fields["qk_norm"] = family in ("qwen3", "qwen3_moe")  # Qwen3Attention's q_norm / k_norm
    return fields


def _mla_fields(r: _Reader) -> dict[str, int]:
    return {
        "q_lora_rank": r.integer("q_lora_rank", default=0),  # null in DeepSeek-V2-Lite: no q compression
        "kv_lora_rank": r.integer("kv_lora_rank"),
        "qk_nope_head_dim": r.integer("qk_nope_head_dim"),
        "qk_rope_head_dim": r.integer("qk_rope_head_dim"),
        "v_head_dim": r.integer("v_head_dim"),
    }


def _moe_fields(r: _Reader, family: str, layers: int, intermediate: int) -> dict[str, Any]:
    if family == "mixtral":
        # Every layer is MoE and each expert is a full-width MLP (intermediate_size).
        return _checked_moe(r, experts=r.integer("num_local_experts"), expert_width=intermediate)
    if family in ("qwen2_moe", "qwen3_moe"):
        step = r.integer("decoder_sparse_step", default=1)
        only_mlp = set(r.indices("mlp_only_layers", layers))
        dense = tuple(i for i in range(layers) if i in only_mlp or (i + 1) % step)
        shared_width = r.integer("shared_expert_intermediate_size", minimum=0, default=0)
        return _checked_moe(r, experts=r.integer("num_experts"),
                            expert_width=r.integer("moe_intermediate_size"), dense=dense,
                            shared=1 if shared_width else 0, shared_width=shared_width)
    if family in _MLA_FAMILIES:
        first_dense = r.integer("first_k_dense_replace", minimum=0, default=0)
        if first_dense > layers:
            raise r.fail(f"config.json field 'first_k_dense_replace' ({first_dense}) exceeds "
                         f"num_hidden_layers ({layers})")
        freq = r.integer("moe_layer_freq", default=1)
        dense = tuple(i for i in range(layers) if i < first_dense or i % freq)
        width = r.integer("moe_intermediate_size")
        shared = r.integer("n_shared_experts", minimum=0, default=0)
        return _checked_moe(r, experts=r.integer("n_routed_experts"), expert_width=width, dense=dense,
                            shared=shared, shared_width=width if shared else 0,
                            router_bias=r.raw.get("topk_method") == "noaux_tc")
    return {}  # llama, mistral, qwen2, qwen3: dense


def _checked_moe(r: _Reader, *, experts: int, expert_width: int, dense: tuple[int, ...] = (),
                 shared: int = 0, shared_width: int = 0, router_bias: bool = False) -> dict[str, Any]:
    k = r.integer("num_experts_per_tok")
    if k > experts:
        raise r.fail(f"config.json field 'num_experts_per_tok' ({k}) exceeds the number of routed "
                     f"experts ({experts})")
    return {"num_experts": experts, "experts_per_token": k, "moe_intermediate_size": expert_width,
            "num_shared_experts": shared, "shared_expert_intermediate_size": shared_width,
            "dense_layers": dense, "router_bias": router_bias}


def config_from_dict(raw: Any, *, name: str, where: str | None = None) -> ModelConfig:
    """Validate a parsed HF config.json and return its `ModelConfig`; `where` names it in errors.

    Keys starting with "_" (such as the catalog's "_source") and keys this model does not need are
    ignored. Anything malformed raises `CatalogError` naming the key and the value.
    """
    where = where or name
    if not isinstance(raw, dict):
        raise CatalogError(f"config.json must hold a JSON object, got a {type(raw).__name__} "
                           f"(in {where})")
    r = _Reader(raw, where)
    family = _family(r)
    layers, intermediate = r.integer("num_hidden_layers", maximum=_MAX_LAYERS), r.integer("intermediate_size")
    return ModelConfig(
        name=name, model_type=family, num_layers=layers, intermediate_size=intermediate,
        vocab_size=r.integer("vocab_size"),
        tie_embeddings=r.flag("tie_word_embeddings", default=False),
        max_position_embeddings=r.integer("max_position_embeddings", default=0),
        **_attention_fields(r, family), **_moe_fields(r, family, layers, intermediate))


def _parse_bytes(data: bytes, *, name: str, where: str) -> ModelConfig:
    try:
        raw = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise CatalogError(f"{where} is not UTF-8 text, so not a config.json") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CatalogError(f"{where} is not valid JSON: {reason}") from None
    return config_from_dict(raw, name=name, where=where)


def _catalog_dir():
    return resources.files("shardbudget") / "catalog" / "models"


@lru_cache(maxsize=1)
def _catalog_names() -> tuple[str, ...]:
    return tuple(sorted(p.name[:-5] for p in _catalog_dir().iterdir() if p.name.endswith(".json")))


def list_models() -> list[str]:
    """Names of the models shipped in the catalog (their HF config.json files)."""
    return list(_catalog_names())


@lru_cache(maxsize=None)
def _load_catalog(name: str) -> ModelConfig:
    data = _catalog_dir().joinpath(f"{name}.json").read_bytes()
    return _parse_bytes(data, name=name, where=f"catalog model {name!r}")


def _load_path(path: Path) -> ModelConfig:
    file = path / "config.json" if path.is_dir() else path
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise CatalogError(f"cannot read {file}: {exc.strerror or exc}") from None
    name = (file.parent.name if file.name == "config.json" else file.stem) or file.stem
    return _parse_bytes(data, name=name, where=str(file))


def _is_existing_path(text: str) -> bool:
    try:
        return Path(text).exists()
    except (OSError, ValueError):  # name too long, embedded NUL byte, ...
        return False


def load_model(name_or_path: str | PathLike) -> ModelConfig:
    """A catalog model by name, or a config.json file, or a folder holding one."""
    if not isinstance(name_or_path, (str, PathLike)):
        raise UnknownNameError("model", repr(name_or_path), _catalog_names())
    text = str(name_or_path)
    if text in _catalog_names():
        return _load_catalog(text)
    looks_like_path = "/" in text or "\\" in text or text.endswith(".json")
    if isinstance(name_or_path, PathLike) or looks_like_path or _is_existing_path(text):
        if not _is_existing_path(text):
            raise CatalogError(f"no model config at {text} (expected a config.json file or a folder "
                               f"holding one)")
        return _load_path(Path(text))
    raise UnknownNameError("model", text, _catalog_names())


# ----------------------------------------------------------------------------------------------
# Parameter accounting (shared by the totals and by the per-GPU weight bytes)
# ----------------------------------------------------------------------------------------------

def _kv_heads_per_gpu(cfg: ModelConfig, tp: int) -> float:
    """KV heads each rank holds: K/tp, or 1 when tp > K (each head replicated tp/K times)."""
    return max(cfg.num_kv_heads / tp, 1.0)


def _attention_params_per_gpu(cfg: ModelConfig, tp: int) -> float:
    """Attention weights on one rank, plus the layer's two RMSNorms (replicated)."""
    h, norms = cfg.hidden_size, 2 * cfg.hidden_size
    if cfg.is_mla:
        return _mla_params_per_gpu(cfg, tp) + norms
    heads, d = cfg.num_heads / tp, cfg.head_dim
    qkv_width = (heads + 2 * _kv_heads_per_gpu(cfg, tp)) * d  # fused QKV output columns per rank
    params = h * qkv_width + heads * d * h                     # QKV (column-) + O (row-parallel)
    params += qkv_width if cfg.qkv_bias else 0
    params += 2 * d if cfg.qk_norm else 0                      # q_norm, k_norm: replicated
    return params + norms


def _mla_params_per_gpu(cfg: ModelConfig, tp: int) -> float:
    h, heads, q_lora = cfg.hidden_size, cfg.num_heads / tp, cfg.q_lora_rank
    qk_dim = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
    latent = cfg.kv_lora_rank + cfg.qk_rope_head_dim
    # q: down-projection + its norm (replicated), then the column-parallel up-projection.
    q = h * q_lora + q_lora + q_lora * heads * qk_dim if q_lora else h * heads * qk_dim
    # kv: kv_a_proj_with_mqa + kv_a_layernorm (replicated), kv_b_proj = W_UK and W_UV (column-par.).
    kv = (h * latent + cfg.kv_lora_rank
          + cfg.kv_lora_rank * heads * (cfg.qk_nope_head_dim + cfg.v_head_dim))
    return q + kv + heads * cfg.v_head_dim * h                 # + O (row-parallel)


def _ffn_params_per_gpu(cfg: ModelConfig, kind: str, tp: int, ep: int) -> float:
    h = cfg.hidden_size
    if kind == "dense":
        return 3 * h * cfg.intermediate_size / tp              # gate, up, down
    expert = 3 * h * cfg.moe_intermediate_size
    routed = cfg.num_experts / ep * expert if ep > 1 else cfg.num_experts * expert / tp
    return _router_params(cfg) + routed + _shared_params(cfg) / tp


def _router_params(cfg: ModelConfig) -> float:
    return cfg.num_experts * cfg.hidden_size + (cfg.num_experts if cfg.router_bias else 0)


def _shared_params(cfg: ModelConfig) -> float:
    # Qwen2-MoE's one-output shared_expert_gate (hidden weights per layer) is left out: < 0.01 %.
    return 3 * cfg.hidden_size * cfg.num_shared_experts * cfg.shared_expert_intermediate_size


def total_params(cfg: ModelConfig) -> int:
    """Every parameter of the model: embedding, layers, final norm and (untied) LM head."""
    kinds = layer_kinds(cfg)
    layers = sum(n * (_attention_params_per_gpu(cfg, 1) + _ffn_params_per_gpu(cfg, kind, 1, 1))
                 for kind, n in kinds.items())
    matrix = cfg.vocab_size * cfg.hidden_size
    return round(layers + matrix * (1 if cfg.tie_embeddings else 2) + cfg.hidden_size)


def active_params(cfg: ModelConfig, *, include_embedding: bool = True) -> int:
    """Parameters one token touches: all but the routed experts it is not sent to.

    The LM head always counts. `include_embedding=False` drops the (untied) embedding table, whose
    one looked-up row costs no FLOPs. Vendors differ: DeepSeek-V3's "37B activated" is 36.6B
    without the embedding (README_WEIGHTS.md), Mistral's 12.9B for Mixtral-8x7B includes it.
    """
    h = cfg.hidden_size
    active_ffn = {
        "dense": 3 * h * cfg.intermediate_size,
        "moe": _router_params(cfg) + _shared_params(cfg)
        + cfg.experts_per_token * 3 * h * cfg.moe_intermediate_size,
    }
    layers = sum(n * (_attention_params_per_gpu(cfg, 1) + active_ffn[kind])
                 for kind, n in layer_kinds(cfg).items())
    matrix = cfg.vocab_size * h
    embedding = matrix if include_embedding and not cfg.tie_embeddings else 0
    return round(layers + matrix + embedding + h)


# ----------------------------------------------------------------------------------------------
# Plan checks
# ----------------------------------------------------------------------------------------------

def _check_degree(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PlanError(f"{name} ({value!r}) must be a positive integer")


def _check_tp(cfg: ModelConfig, tp: int) -> None:
    _check_degree("tp", tp)
    if cfg.num_heads % tp:
        raise PlanError(f"tp ({tp}) must divide num_attention_heads ({cfg.num_heads})")
    kv = cfg.num_kv_heads
    if not cfg.is_mla and kv % tp and tp % kv:  # MLA has one latent KV, replicated on every rank
        raise PlanError(f"tp ({tp}) must divide num_key_value_heads ({kv}) or be a multiple of it")


def _check_ep(cfg: ModelConfig, ep: int) -> None:
    _check_degree("ep", ep)
    if ep == 1:
        return
    if not cfg.is_moe:
        raise PlanError(f"ep ({ep}) > 1 needs a mixture-of-experts model; {cfg.name} has no experts")
    if cfg.num_experts % ep:
        raise PlanError(f"ep ({ep}) must divide the number of routed experts ({cfg.num_experts})")


def _check_pp(cfg: ModelConfig, pp: int) -> None:
    _check_degree("pp", pp)
    if pp > cfg.num_layers:
        raise PlanError(f"pp ({pp}) must not exceed num_hidden_layers ({cfg.num_layers})")


def _check_amount(name: str, value: Any, *, minimum: float, strict: bool) -> None:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    finite = number and abs(value) < 1e300  # also refuses ints too large for a float
    if not finite or math.isnan(value) or value < minimum or (strict and value == minimum):
        bound = f"greater than {minimum:g}" if strict else f"at least {minimum:g}"
        raise PlanError(f"{name} ({value!r}) must be a finite number {bound}")


def _layer_kind(cfg: ModelConfig, layer: int | str) -> str:
    if isinstance(layer, int) and not isinstance(layer, bool):
        if not 0 <= layer < cfg.num_layers:
            raise PlanError(f"layer ({layer}) must be from 0 to {cfg.num_layers - 1} "
                            f"({cfg.name} has {cfg.num_layers} layers)")
        return "moe" if cfg.is_moe_layer(layer) else "dense"
    kinds = layer_kinds(cfg)
    if layer not in kinds:
        raise PlanError(f"layer {layer!r} is neither a layer index nor a layer kind of {cfg.name} "
                        f"({', '.join(kinds)})")
    return layer


def _stage_layer_counts(num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage, split as vLLM's get_pp_indices does: evenly, with the remainder
    going to the stages before the last (which also holds the LM head)."""
    counts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        counts[-i] += 1
    return counts


# ----------------------------------------------------------------------------------------------
# Memory per GPU
# ----------------------------------------------------------------------------------------------

def weight_bytes_per_gpu(cfg: ModelConfig, *, tp: int, pp: int = 1, ep: int = 1,
                         weight_dtype: str = "bf16", attn_dp: int = 1) -> float:
    """Weight bytes on the most loaded GPU of the plan (the heaviest pipeline stage).

    Counts replicated KV heads when tp > num_kv_heads, replicated norms / router / MLA
    down-projections, the vocabulary-parallel embedding on the first stage and the LM head and final
    norm on the last (a tied LM head needs its own copy there when pp > 1). Every tensor is in
    `weight_dtype`; quantized checkpoints that keep norms in bf16 differ by < 0.01 %.
    """
    _check_tp(cfg, tp)
    _check_ep(cfg, ep)
    _check_pp(cfg, pp)
    tp_attn = _check_attn_dp(cfg, tp, ep, attn_dp)  # data-parallel attention replicates its weights
    shared_extra = _shared_params(cfg) * (1 - 1 / tp) if tp_attn != tp else 0.0  # and the shared experts'
    per_layer = {kind: _attention_params_per_gpu(cfg, tp_attn) + _ffn_params_per_gpu(cfg, kind, tp, ep)
                 + (shared_extra if kind == "moe" else 0.0) for kind in layer_kinds(cfg)}
    vocab_shard = cfg.vocab_size * cfg.hidden_size / tp   # elements per rank of embedding / LM head
    heaviest, start = 0.0, 0
    for stage, count in enumerate(_stage_layer_counts(cfg.num_layers, pp)):
        dense = sum(1 for i in cfg.dense_layers if start <= i < start + count) if cfg.is_moe else count
        params = dense * per_layer.get("dense", 0.0) + (count - dense) * per_layer.get("moe", 0.0)
        if stage == 0:
            params += vocab_shard
        if stage == pp - 1:
            shares_embedding = cfg.tie_embeddings and pp == 1
            params += cfg.hidden_size + (0.0 if shares_embedding else vocab_shard)
        heaviest, start = max(heaviest, params), start + count
    return heaviest * dtype_bytes(weight_dtype)


def _kv_elems_per_token_layer(cfg: ModelConfig, tp: int) -> float:
    """Cached elements per token per layer on one rank."""
    if cfg.is_mla:
        return cfg.kv_lora_rank + cfg.qk_rope_head_dim  # the latent; every rank keeps all of it
    return 2 * _kv_heads_per_gpu(cfg, tp) * cfg.head_dim  # K and V of this rank's (replicated) heads


def kv_bytes_per_token(cfg: ModelConfig, kv_dtype: str = "bf16") -> float:
    """KV-cache bytes one token adds to the whole (unsharded) model.

    GQA: 2 (K and V) x layers x kv_heads x head_dim x bytes; MLA: layers x (kv_lora_rank +
    qk_rope_head_dim) x bytes.
    """
    return cfg.num_layers * _kv_elems_per_token_layer(cfg, 1) * dtype_bytes(kv_dtype)


def kv_cache_bytes_per_gpu(cfg: ModelConfig, *, batch: int, context: float, tp: int, pp: int = 1,
                           kv_dtype: str = "bf16", attn_dp: int = 1) -> float:
    """KV-cache bytes on the most loaded GPU for `batch` sequences of `context` tokens each (with
    data-parallel attention each GPU caches only its own batch / attn_dp sequences, whole heads)."""
    _check_tp(cfg, tp)
    if attn_dp > 1:
        if attn_dp != tp:
            raise PlanError(f"data-parallel attention needs dp = tp; got dp {attn_dp}, tp {tp}")
        busiest = math.ceil(batch / attn_dp - 1e-9)  # whole sequences per rank
        return kv_cache_bytes_per_gpu(cfg, batch=busiest, context=context, tp=1, pp=pp, kv_dtype=kv_dtype)
    _check_pp(cfg, pp)
    _check_amount("batch", batch, minimum=0, strict=False)
    _check_amount("context", context, minimum=0, strict=False)
    layers = max(_stage_layer_counts(cfg.num_layers, pp))
    # bytes per GPU: batch * context * layers on the stage * cached elements per layer * dtype
    return batch * context * layers * _kv_elems_per_token_layer(cfg, tp) * dtype_bytes(kv_dtype)


# ----------------------------------------------------------------------------------------------
# Work per GPU
# ----------------------------------------------------------------------------------------------

OP_KINDS = ("gemm", "attention", "elementwise")


@dataclass(frozen=True)
class Op:
    """One kernel's work on one GPU for one step."""

    name: str
    flops: float
    """Floating-point operations on this GPU (a multiply-add is 2)."""
    bytes: float
    """HBM bytes this GPU moves: weights read + activations read/written + KV cache read/written.
    Each op is assumed to read its inputs from and write its outputs to HBM (no fusion), except
    softmax, which flash-attention style kernels keep on chip."""
    kind: str
    """One of OP_KINDS: gemm, attention or elementwise."""


class _Bytes(NamedTuple):
    w: float   # bytes per weight element
    a: float   # bytes per activation element
    kv: float  # bytes per KV-cache element


def _gemm(name: str, *, m: float, k: float, n: float, b: _Bytes,
          weight_elems: float | None = None) -> Op:
    """[m, k] activations times a [k, n] weight shard. 2*m*n*k: one multiply and one add per weight
    element per row. `weight_elems` overrides k*n when only part of a stacked weight is read."""
    weight = k * n if weight_elems is None else weight_elems
    return Op(name, 2.0 * m * n * k, weight * b.w + (m * k + m * n) * b.a, "gemm")


def _elementwise(name: str, *, elems: float, flops_per_elem: float, b: _Bytes,
                 read_elems: float | None = None, weight_elems: float = 0.0) -> Op:
    """Reads `read_elems` (default: elems) activations, writes `elems`."""
    read = elems if read_elems is None else read_elems
    return Op(name, float(flops_per_elem * elems), (read + elems) * b.a + weight_elems * b.w,
              "elementwise")


def _rms_norm(name: str, tokens: float, width: int, b: _Bytes) -> Op:
    # ~4 FLOPs per element: square, sum, scale by 1/rms, multiply by the weight.
    return _elementwise(name, elems=tokens * width, flops_per_elem=4, b=b, weight_elems=width)


def _residual(name: str, tokens: float, cfg: ModelConfig, b: _Bytes) -> Op:
    elems = tokens * cfg.hidden_size  # two reads, one write
    return _elementwise(name, elems=elems, flops_per_elem=1, b=b, read_elems=2 * elems)


def _swiglu(name: str, elems: float, b: _Bytes) -> Op:
    # SiLU(gate) * up: ~5 FLOPs per output element (exp, add, divide, two multiplies); reads 2, writes 1.
    return _elementwise(name, elems=elems, flops_per_elem=5, b=b, read_elems=2 * elems)


def _softmax(scores: float) -> Op:
    # ~5 FLOPs per score (max, subtract, exp, sum, scale); scores stay in SRAM, so no HBM bytes.
    return Op("softmax", 5.0 * scores, 0.0, "elementwise")


def _mean_keys(context: float, phase: str) -> float:
    """Keys each query attends over. Decode: the whole cache. Prefill (causal): token i of a prompt
    of `context` tokens sees i + 1 keys, (context + 1) / 2 on average."""
    return context if phase == "decode" else (context + 1) / 2


def _gqa_ops(cfg: ModelConfig, tokens: float, context: float, tp: int, b: _Bytes,
             phase: str) -> list[Op]:
    h, d = cfg.hidden_size, cfg.head_dim
    heads, kv_heads = cfg.num_heads / tp, _kv_heads_per_gpu(cfg, tp)
    qkv_width = (heads + 2 * kv_heads) * d
    bias = qkv_width if cfg.qkv_bias else 0
    ops = [_gemm("qkv_proj", m=tokens, k=h, n=qkv_width, b=b, weight_elems=h * qkv_width + bias)]
    if cfg.qk_norm:
        ops.append(_elementwise("qk_norm", elems=tokens * (heads + kv_heads) * d, flops_per_elem=4, b=b))
    # RoPE on q and k: two multiplies and an add per element.
    ops.append(_elementwise("rotary", elems=tokens * (heads + kv_heads) * d, flops_per_elem=3, b=b))
    ops += _gqa_attention(cfg, tokens, context, heads, kv_heads, b, phase)
    ops.append(_gemm("o_proj", m=tokens, k=heads * d, n=h, b=b))
    return ops


def _gqa_attention(cfg: ModelConfig, tokens: float, context: float, heads: float, kv_heads: float,
                   b: _Bytes, phase: str) -> list[Op]:
    d = cfg.head_dim
    kv_token_bytes = 2 * kv_heads * d * b.kv  # K and V of one token on this rank (replicas included)
    if phase == "decode":
        cache_read = tokens * context * kv_token_bytes  # one sequence per token, each reads its cache
    else:
        cache_read = tokens * kv_token_bytes            # each prompt's fresh K/V read once
    scores = tokens * heads * _mean_keys(context, phase)
    flops = 2 * 2 * scores * d  # QK^T and PV: 2*d FLOPs per (query, key) pair each
    io = tokens * heads * d * 2 * b.a + tokens * kv_token_bytes  # read Q, write O, append new K/V
    return [Op("attention", flops, cache_read + io, "attention"), _softmax(scores)]


def _mla_ops(cfg: ModelConfig, tokens: float, context: float, tp: int, b: _Bytes,
             phase: str) -> list[Op]:
    h, heads = cfg.hidden_size, cfg.num_heads / tp
    lora, rope, q_lora = cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.q_lora_rank
    qk_dim = cfg.qk_nope_head_dim + rope
    # Down-projections (q_a and kv_a_proj_with_mqa, fused) are replicated on every rank.
    ops = [_gemm("qkv_a_proj", m=tokens, k=h, n=q_lora + lora + rope, b=b),
           _rms_norm("qkv_a_norm", tokens, q_lora + lora, b)]
    ops.append(_gemm("q_b_proj" if q_lora else "q_proj", m=tokens, k=q_lora or h, n=heads * qk_dim, b=b))
    ops.append(_elementwise("rotary", elems=tokens * (heads + 1) * rope, flops_per_elem=3, b=b))
    ops += (_mla_absorbed if phase == "decode" else _mla_expanded)(cfg, tokens, context, heads, b)
    ops.append(_gemm("o_proj", m=tokens, k=heads * cfg.v_head_dim, n=h, b=b))
    return ops


def _mla_absorbed(cfg: ModelConfig, tokens: float, context: float, heads: float, b: _Bytes) -> list[Op]:
    """Decode in the absorbed form (DeepSeek-V2 paper, section 2.1.3; vLLM / FlashMLA decode): W_UK
    is folded into the query and W_UV applied after attention, so attention runs over the compressed
    cache, one latent of kv_lora_rank + rope elements per token shared by all local heads."""
    lora, nope, v = cfg.kv_lora_rank, cfg.qk_nope_head_dim, cfg.v_head_dim
    latent = lora + cfg.qk_rope_head_dim
    # Per-head batched matmuls: rows are (token, head) pairs.
    ops = [_gemm("q_absorb", m=tokens * heads, k=nope, n=lora, b=b, weight_elems=heads * nope * lora)]
    scores = tokens * heads * context
    flops = 2 * scores * latent + 2 * scores * lora  # q.[c_kv, k_rope], then P.c_kv
    cache_read = tokens * context * latent * b.kv    # each sequence's latents, read once for all heads
    io = tokens * heads * (latent + lora) * b.a + tokens * latent * b.kv  # q in, out, new latent
    ops += [Op("attention", flops, cache_read + io, "attention"), _softmax(scores)]
    ops.append(_gemm("v_up", m=tokens * heads, k=lora, n=v, b=b, weight_elems=heads * lora * v))
    return ops


def _mla_expanded(cfg: ModelConfig, tokens: float, context: float, heads: float, b: _Bytes) -> list[Op]:
    """Prefill in the expanded form (as vLLM runs it): kv_b_proj decompresses K_nope and V for every
    prompt token, then ordinary causal attention with q/k width nope + rope and v width v_head_dim."""
    lora, nope, rope, v = cfg.kv_lora_rank, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
    ops = [_gemm("kv_b_proj", m=tokens, k=lora, n=heads * (nope + v), b=b)]
    scores = tokens * heads * _mean_keys(context, "prefill")
    flops = 2 * scores * (nope + rope) + 2 * scores * v
    # read Q and K (nope + rope each), V; write O; append the new latent to the cache
    io = tokens * heads * (2 * (nope + rope) + 2 * v) * b.a + tokens * (lora + rope) * b.kv
    return ops + [Op("attention", flops, io, "attention"), _softmax(scores)]


def _mlp_ops(prefix: str, cfg: ModelConfig, tokens: float, width: float, b: _Bytes) -> list[Op]:
    """Gated MLP with gate/up column-parallel and down row-parallel; `width` is this rank's share."""
    h = cfg.hidden_size
    return [_gemm(f"{prefix}_gate_up", m=tokens, k=h, n=2 * width, b=b),
            _swiglu(f"{prefix}_act", tokens * width, b),
            _gemm(f"{prefix}_down", m=tokens, k=width, n=h, b=b)]


def expected_experts_hit(cfg: ModelConfig, tokens: float, *, ep: int = 1) -> float:
    """Expected number of distinct routed experts one rank's weights are read for in a step.

    Each token picks k of E experts; under uniform routing one token misses a given expert with
    probability 1 - k/E, all `tokens` independently with (1 - k/E)**tokens. A rank holds E/ep
    experts, so it reads E/ep * (1 - (1 - k/E)**tokens) of them: k/ep at batch 1, all at large
    batch. (Real routing is skewed, which only lowers this.)
    """
    _check_ep(cfg, ep)
    _check_amount("tokens", tokens, minimum=0, strict=False)
    if not cfg.is_moe:
        return 0.0
    e, k = cfg.num_experts, cfg.experts_per_token
    return e / ep * (1.0 - (1.0 - k / e) ** tokens)


def _moe_ops(cfg: ModelConfig, tokens: float, tp: int, ep: int, b: _Bytes) -> list[Op]:
    h, e, k = cfg.hidden_size, cfg.num_experts, cfg.experts_per_token
    # Router: a small replicated [tokens, hidden] x [hidden, E] matmul plus top-k, kept as an
    # elementwise-class op because it is tiny and memory-bound.
    ops = [Op("router", 2.0 * tokens * h * e,
              _router_params(cfg) * b.w + tokens * (h + e) * b.a, "elementwise")]
    if ep > 1:
        pairs, width = tokens * k / ep, cfg.moe_intermediate_size  # whole experts, E/ep per rank
    else:
        pairs, width = tokens * k, cfg.moe_intermediate_size / tp  # every expert tp-sharded
    hit = expected_experts_hit(cfg, tokens, ep=ep)
    ops += [_gemm("expert_gate_up", m=pairs, k=h, n=2 * width, b=b, weight_elems=hit * h * 2 * width),
            _swiglu("expert_act", pairs * width, b),
            _gemm("expert_down", m=pairs, k=width, n=h, b=b, weight_elems=hit * width * h),
            # scale each expert's output by its gate weight and sum the k of them per token
            Op("expert_combine", 2.0 * pairs * h, (pairs + pairs / k) * h * b.a, "elementwise")]
    if cfg.num_shared_experts:
        width = cfg.num_shared_experts * cfg.shared_expert_intermediate_size / tp
        ops += _mlp_ops("shared_expert", cfg, tokens, width, b)
    return ops


def _check_work(tokens: float, context: float, phase: str) -> None:
    if phase not in ("decode", "prefill"):
        raise PlanError(f"phase {phase!r} must be 'decode' or 'prefill'")
    _check_amount("tokens", tokens, minimum=0, strict=True)
    _check_amount("context", context, minimum=1 if phase == "prefill" else 0, strict=False)


def _check_attn_dp(cfg: ModelConfig, tp: int, ep: int, attn_dp: int) -> int:
    """Data-parallel attention (SGLang --enable-dp-attention, vLLM DP + EP): every GPU of the TP group
    runs attention for its own 1/attn_dp of the sequences with whole heads, while the experts are
    spread over EP. Only attn_dp = 1 or attn_dp = tp (attention TP = 1) with ep = tp is modelled.
    Returns the attention TP degree."""
    if attn_dp == 1:
        return tp
    if attn_dp != tp or ep != tp or not cfg.is_moe:
        raise PlanError(f"data-parallel attention (dp {attn_dp}) needs an MoE model with dp = ep = tp; "
                        f"got tp {tp}, ep {ep}")
    return 1


def _busiest_rank_tokens(tokens: float, context: float, attn_dp: int, phase: str) -> float:
    """Tokens of the busiest data-parallel attention rank: whole sequences go to one rank, so with
    batch sequences over attn_dp ranks the busiest has ceil(batch / attn_dp) of them."""
    if attn_dp == 1:
        return tokens
    per_seq = 1.0 if phase == "decode" else max(context, 1.0)
    batch = tokens / per_seq
    return math.ceil(batch / attn_dp - 1e-9) * per_seq


def layer_work(cfg: ModelConfig, layer: int | str, *, tokens: float, context: float, tp: int,
               ep: int = 1, weight_dtype: str = "bf16", act_dtype: str = "bf16",
               kv_dtype: str | None = None, phase: str = "decode", attn_dp: int = 1) -> list[Op]:
    """The ops one GPU runs for one decoder layer in one step, in execution order.

    layer: a layer index, or a kind from `layer_kinds` ("dense" / "moe").
    tokens: tokens processed in the step (decode: the batch; prefill: batch x prompt length).
    context: decode: cached tokens each sequence attends over; prefill: the prompt length (causal,
        so the mean query sees (context + 1) / 2 keys; batch = tokens / context).
    kv_dtype: defaults to act_dtype.
    attn_dp: data-parallel attention degree (1, or tp for MoE models with ep = tp): attention and
        the residual path run on tokens / attn_dp with whole heads; experts (and dense layers' MLP,
        after gathering the tokens) keep their tp / ep sharding over all tokens.
    """
    kind = _layer_kind(cfg, layer)
    _check_tp(cfg, tp)
    _check_ep(cfg, ep)
    _check_work(tokens, context, phase)
    tp_attn = _check_attn_dp(cfg, tp, ep, attn_dp)
    local = _busiest_rank_tokens(tokens, context, attn_dp, phase)
    b = _Bytes(dtype_bytes(weight_dtype), dtype_bytes(act_dtype), dtype_bytes(kv_dtype or act_dtype))
    attention = _mla_ops if cfg.is_mla else _gqa_ops
    ops = [_rms_norm("input_norm", local, cfg.hidden_size, b)]
    ops += attention(cfg, local, context, tp_attn, b, phase)
    ops += [_residual("attn_residual", local, cfg, b),
            _rms_norm("post_attn_norm", local, cfg.hidden_size, b)]
    if kind == "moe":
        ops += _moe_ops(cfg, tokens, tp, ep, b)
    else:
        ops += _mlp_ops("mlp", cfg, tokens, cfg.intermediate_size / tp, b)
    ops.append(_residual("mlp_residual", local, cfg, b))
    return ops


# ----------------------------------------------------------------------------------------------
# Collectives
# ----------------------------------------------------------------------------------------------

COLLECTIVE_OPS = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "send/recv")
GROUPS = ("tp", "ep", "pp")


@dataclass(frozen=True)
class CollectiveCall:
    """A collective a plan inserts, `count` times per layer (or per step, for the LM head and pp)."""

    op: str
    """One of COLLECTIVE_OPS."""
    msg_bytes: float
    """Bytes as nccl-tests' "size" column: the per-rank buffer for all-reduce and all-to-all (each
    rank's send buffer), the whole gathered / scattered buffer for all-gather and reduce-scatter,
    the message for send/recv."""
    group: str
    """Which parallel group runs it: tp, ep or pp."""
    count: int = 1


def _tp_reductions(count: int, msg_bytes: float, sequence_parallel: bool) -> list[CollectiveCall]:
    if not count:
        return []
    if sequence_parallel:  # all-reduce = reduce-scatter + all-gather of the same total size
        return [CollectiveCall("reduce-scatter", msg_bytes, "tp", count),
                CollectiveCall("all-gather", msg_bytes, "tp", count)]
    return [CollectiveCall("all-reduce", msg_bytes, "tp", count)]


def collectives_for_layer(cfg: ModelConfig, layer: int | str, *, tokens: float, tp: int,
                          ep: int = 1, act_dtype: str = "bf16",
                          sequence_parallel: bool = False, attn_dp: int = 1) -> list[CollectiveCall]:
    """The collectives one decoder layer inserts per step.

    tp > 1: the row-parallel O projection and MLP down projection leave partial sums, so each is
    followed by an all-reduce of tokens x hidden x act_bytes (per rank). With sequence_parallel each
    becomes a reduce-scatter + all-gather pair of that total size.
    MoE layer with ep > 1: an all-to-all dispatch before the experts and an all-to-all combine after
    (DeepEP / Megatron alltoall dispatcher), each rank sending tokens x k x hidden x act_bytes / ep:
    its tokens/ep tokens (tokens spread evenly over the ep ranks, as with sequence parallelism or
    data-parallel attention), each copied to k experts. No tp all-reduce follows the routed experts
    then; one does follow tp-sharded shared experts. DeepSeek's dense first layers are dense layers.
    """
    kind = _layer_kind(cfg, layer)
    _check_tp(cfg, tp)
    _check_ep(cfg, ep)
    _check_amount("tokens", tokens, minimum=0, strict=True)
    a = dtype_bytes(act_dtype)
    hidden_bytes = tokens * cfg.hidden_size * a  # bytes per rank: tokens * hidden * act_bytes
    if attn_dp > 1 and _check_attn_dp(cfg, tp, ep, attn_dp) == 1:
        if kind == "moe":  # attention needs no reduction; the experts' dispatch and combine remain
            return [CollectiveCall("all-to-all", tokens * cfg.experts_per_token * cfg.hidden_size * a / ep, "ep", 2)]
        # dense layers: gather every rank's tokens for the tp-sharded MLP, scatter the sums back
        return [CollectiveCall("all-gather", hidden_bytes, "tp"), CollectiveCall("reduce-scatter", hidden_bytes, "tp")]
    if kind == "moe" and ep > 1:
        dispatch_bytes = tokens * cfg.experts_per_token * cfg.hidden_size * a / ep
        reductions = (1 + bool(cfg.num_shared_experts)) if tp > 1 else 0
        return (_tp_reductions(reductions, hidden_bytes, sequence_parallel)
                + [CollectiveCall("all-to-all", dispatch_bytes, "ep", 2)])  # dispatch + combine
    return _tp_reductions(2 if tp > 1 else 0, hidden_bytes, sequence_parallel)


def pp_collectives(cfg: ModelConfig, *, tokens: float, pp: int,
                   act_dtype: str = "bf16") -> list[CollectiveCall]:
    """Per step: the hidden states cross each of the pp - 1 stage boundaries once (send/recv of
    tokens x hidden x act_bytes)."""
    _check_pp(cfg, pp)
    _check_amount("tokens", tokens, minimum=0, strict=True)
    if pp == 1:
        return []
    return [CollectiveCall("send/recv", tokens * cfg.hidden_size * dtype_bytes(act_dtype), "pp", pp - 1)]


def lm_head_work(cfg: ModelConfig, *, tokens: float, tp: int, weight_dtype: str = "bf16",
                 act_dtype: str = "bf16") -> tuple[list[Op], list[CollectiveCall]]:
    """Final norm and vocabulary-parallel LM head for `tokens` rows (in prefill only the last token
    of each prompt needs logits: pass the batch size).

    Each rank computes the logits of its vocab_size/tp slice; vLLM then gathers the slices
    (`tensor_model_parallel_gather`, or all-gather on some platforms). It is priced as an all-gather
    whose nccl-tests size is the full logits buffer, tokens x vocab_size x act_bytes.
    """
    _check_tp(cfg, tp)
    _check_amount("tokens", tokens, minimum=0, strict=True)
    b = _Bytes(dtype_bytes(weight_dtype), dtype_bytes(act_dtype), 0.0)
    ops = [_rms_norm("final_norm", tokens, cfg.hidden_size, b),
           _gemm("lm_head", m=tokens, k=cfg.hidden_size, n=cfg.vocab_size / tp, b=b)]
    calls = [CollectiveCall("all-gather", tokens * cfg.vocab_size * b.a, "tp")] if tp > 1 else []
    return ops, calls


def embedding_work(cfg: ModelConfig, *, tokens: float, tp: int, weight_dtype: str = "bf16",
                   act_dtype: str = "bf16") -> tuple[list[Op], list[CollectiveCall]]:
    """Vocabulary-parallel embedding lookup (vLLM `VocabParallelEmbedding`): each rank copies the rows
    it owns (tokens/tp on average) and zeros the rest, then an all-reduce over tp sums them."""
    _check_tp(cfg, tp)
    _check_amount("tokens", tokens, minimum=0, strict=True)
    h, w, a = cfg.hidden_size, dtype_bytes(weight_dtype), dtype_bytes(act_dtype)
    ops = [Op("embedding", 0.0, tokens * h * w / tp + tokens * h * a, "elementwise")]
    calls = [CollectiveCall("all-reduce", tokens * h * a, "tp")] if tp > 1 else []
    return ops, calls
