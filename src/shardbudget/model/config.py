"""Reading a Hugging Face ``config.json`` into a validated, frozen `ModelConfig`.

What a family is (attention kind, MoE layout, biases, norms) comes from the one table in
`families`; this module reads the fields that table says the family has, fills defaults visibly
and names the key, the value and the file in every error. Sizes are element counts, never bytes.

DeepSeek-V3's multi-token-prediction (MTP) module (`num_nextn_predict_layers`) is ignored: it is only
used for speculative decoding, and the published 671B / 37B figures exclude it.
"""

from __future__ import annotations

import json
import reprlib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Any

from ..errors import CatalogError, UnknownNameError
from .families import BY_ARCHITECTURE, BY_MODEL_TYPE, Family


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """The shape of a decoder-only transformer, read from an HF config.json (see `config_from_dict`).

    Sizes are element counts (not bytes); byte sizes come from a dtype at the call site.
    Build it with `load_model` / `config_from_dict`, which validate it and fill defaults visibly.
    """

    name: str
    """Catalog name, or the folder / file stem the config was read from."""
    model_type: str
    """HF `model_type`: a key of `families.BY_MODEL_TYPE` (llama, mistral, mixtral, qwen2,
    qwen2_moe, qwen3, qwen3_moe, deepseek_v2, deepseek_v3)."""
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
    def family(self) -> Family:
        return BY_MODEL_TYPE[self.model_type]

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.family.attention == "mla"

    def is_moe_layer(self, index: int) -> bool:
        return self.is_moe and index not in self.dense_layers


def layer_kinds(cfg: ModelConfig) -> dict[str, int]:
    """How many layers of each kind the model has: {"dense": n} and/or {"moe": n}.

    Every layer of one kind costs the same, so the step model prices each kind once and multiplies.
    """
    moe = cfg.num_layers - len(cfg.dense_layers) if cfg.is_moe else 0
    counts = {"dense": cfg.num_layers - moe, "moe": moe}
    return {kind: n for kind, n in counts.items() if n}


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


def _family(r: _Reader) -> Family:
    """The model family, from `model_type` or else `architectures[0]`; unsupported ones are refused."""
    if r.raw.get("is_encoder_decoder") is True:
        raise r.fail("config.json describes an encoder-decoder model; only decoder-only models are "
                     "supported")
    model_type = r.raw.get("model_type")
    if model_type is not None:
        if not isinstance(model_type, str) or model_type not in BY_MODEL_TYPE:
            raise r.fail(f"config.json field 'model_type' is {_short(model_type)}, which shardbudget "
                         f"does not model (supported: {', '.join(sorted(BY_MODEL_TYPE))})")
        return BY_MODEL_TYPE[model_type]
    archs = r.raw.get("architectures")
    if archs is None:
        raise r.fail("config.json is missing 'model_type' (and 'architectures')")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str) \
            or archs[0] not in BY_ARCHITECTURE:
        raise r.fail(f"config.json field 'architectures' is {_short(archs)}, which shardbudget does "
                     f"not model (supported: {', '.join(sorted(BY_ARCHITECTURE))})")
    return BY_ARCHITECTURE[archs[0]]


def _attention_fields(r: _Reader, family: Family) -> dict[str, Any]:
    heads, hidden = r.integer("num_attention_heads"), r.integer("hidden_size")
    kv_heads = r.integer("num_key_value_heads", default=heads)  # absent/null: multi-head attention
    if heads % kv_heads:
        raise r.fail(f"config.json field 'num_key_value_heads' ({kv_heads}) must divide "
                     f"num_attention_heads ({heads})")
    fields: dict[str, Any] = {"hidden_size": hidden, "num_heads": heads, "num_kv_heads": kv_heads}
    if family.attention == "mla":
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
    fields["qkv_bias"] = family.qkv_bias or r.flag("attention_bias", default=False)
    fields["qk_norm"] = family.qk_norm
    return fields


def _mla_fields(r: _Reader) -> dict[str, int]:
    return {
        "q_lora_rank": r.integer("q_lora_rank", default=0),  # null in DeepSeek-V2-Lite: no q compression
        "kv_lora_rank": r.integer("kv_lora_rank"),
        "qk_nope_head_dim": r.integer("qk_nope_head_dim"),
        "qk_rope_head_dim": r.integer("qk_rope_head_dim"),
        "v_head_dim": r.integer("v_head_dim"),
    }


def _mixtral_moe(r: _Reader, family: Family, layers: int, intermediate: int) -> dict[str, Any]:
    # Every layer is MoE and each expert is a full-width MLP (intermediate_size).
    return _checked_moe(r, experts=r.integer("num_local_experts"), expert_width=intermediate)


def _qwen_moe(r: _Reader, family: Family, layers: int, intermediate: int) -> dict[str, Any]:
    step = r.integer("decoder_sparse_step", default=1)
    only_mlp = set(r.indices("mlp_only_layers", layers))
    dense = tuple(i for i in range(layers) if i in only_mlp or (i + 1) % step)
    shared_width = r.integer("shared_expert_intermediate_size", minimum=0, default=0)
    return _checked_moe(r, experts=r.integer("num_experts"), expert_width=r.integer("moe_intermediate_size"),
                        dense=dense, shared=1 if shared_width else 0, shared_width=shared_width)


def _deepseek_moe(r: _Reader, family: Family, layers: int, intermediate: int) -> dict[str, Any]:
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
                        router_bias=r.raw.get("topk_method") in family.router_bias_methods)


# One reader per MoE layout of families.MOE_LAYOUTS.
_MOE_READERS = {"mixtral": _mixtral_moe, "qwen_moe": _qwen_moe, "deepseek": _deepseek_moe}


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
        name=name, model_type=family.model_type, num_layers=layers, intermediate_size=intermediate,
        vocab_size=r.integer("vocab_size"),
        tie_embeddings=r.flag("tie_word_embeddings", default=False),
        max_position_embeddings=r.integer("max_position_embeddings", default=0),
        **_attention_fields(r, family),
        **(_MOE_READERS[family.moe](r, family, layers, intermediate) if family.moe else {}))

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


__all__ = ["ModelConfig", "config_from_dict", "layer_kinds", "list_models", "load_model"]
