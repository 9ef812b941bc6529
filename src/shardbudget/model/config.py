"""Reading a Hugging Face ``config.json`` into a validated, frozen `ModelConfig`.

What a family is (attention kind, MoE layout, biases, norms, windows) comes from the one table in
`families`; `reader` reads the fields that table says the family has, fills defaults visibly and
names the key, the value and the file in every error. Sizes are element counts, never bytes.

Multi-token-prediction (MTP) layers (`num_nextn_predict_layers`, `mtp_num_hidden_layers`) are counted
in `ModelConfig.mtp_layers` but kept out of the decoder and its parameter totals: they run only for
speculative decoding, and the published figures (DeepSeek-V3: 671B / 37B) exclude them. Multimodal checkpoints
(Gemma 3, Llama 4) are read for their text decoder (`text_config`); the vision tower (Gemma-3-27B:
417M parameters, 1.5 %) is not counted.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from os import PathLike
from pathlib import Path
from typing import Any

from ..datacache import PACKAGE
from ..errors import CatalogError, UnknownNameError
from ..quoting import check_name
from . import hub
from .families import BY_MODEL_TYPE, Family
from .layers import Heads, LayerKind
from .quant import Checkpoint
from .reader import read_fields


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """The shape of a decoder-only transformer, read from an HF config.json (see `config_from_dict`).

    Sizes are element counts (not bytes); byte sizes come from a dtype at the call site.
    Build it with `load_model` / `config_from_dict`, which validate it and fill defaults visibly.
    """

    name: str
    """Catalog name, or the folder / file stem the config was read from."""
    model_type: str
    """HF `model_type`: a key of `families.BY_MODEL_TYPE` (llama, mistral, mixtral, qwen2, qwen2_moe,
    qwen3, qwen3_moe, deepseek_v2, deepseek_v3, gpt_oss, gemma2, gemma3, gemma3_text, llama4,
    llama4_text)."""
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
    """Width of the dense gated MLP, elements (for Mixtral and gpt-oss: of each expert; for Llama 4
    `intermediate_size_mlp`, since its intermediate_size is the experts')."""
    vocab_size: int
    """Rows of the embedding and LM head, tokens."""
    tie_embeddings: bool = False
    """LM head shares the embedding matrix (HF `tie_word_embeddings`; absent -> False, the default of
    every family read here)."""
    max_position_embeddings: int = 0
    """Longest context the model was configured for, tokens (0: the config does not say)."""
    qkv_bias: bool = False
    """Q, K and V projections carry a bias (always for Qwen2; HF `attention_bias` otherwise)."""
    o_bias: bool = False
    """The output projection carries a bias (HF `attention_bias` where the family's o_proj follows it)."""
    qk_norm: bool = False
    """Per-head norm of q and k before attention (Qwen3, Gemma 3: RMSNorm with head_dim weights each;
    Llama 4: a weightless L2 norm, `families.Family.qk_norm`)."""
    sliding_window: int = 0
    """Tokens a sliding-window layer attends over and caches (0: no sliding-window layers)."""
    sliding_layers: tuple[int, ...] = ()
    """Indices of the sliding-window layers (all of them for Mistral-7B v0.1; five of six for Gemma 3)."""
    attention_chunk_size: int = 0
    """Tokens per chunk of a chunked-attention layer (Llama 4 `attention_chunk_size`; 0: none)."""
    chunked_layers: tuple[int, ...] = ()
    """Indices of the chunked-attention layers (Llama 4: its RoPE layers, three of four)."""
    checkpoint: Checkpoint = Checkpoint()
    """The checkpoint's own precision: torch_dtype and quantization_config (`quant.Checkpoint`)."""
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
    expert_groups: int = 1
    """Groups of consecutive experts the router picks among first (DeepSeek `n_group` under
    group-limited routing; 1: no group rule)."""
    expert_groups_per_token: int = 1
    """Groups each token's experts must come from (DeepSeek `topk_group`: 4 of 8 for V3)."""
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
    mtp_layers: int = 0
    """Multi-token-prediction layers beside the decoder (HF `num_nextn_predict_layers`, DeepSeek-V3,
    GLM, MiMo; `mtp_num_hidden_layers`, Qwen3.5, Nemotron; 0 when absent). Not in num_layers nor in
    the parameter totals: they run only for speculative decoding (`step.speculative`)."""
    sliding_heads: Heads | None = None
    """The sliding-window layers' own head geometry where it differs from the config's top-level
    heads (MiMo-V2 swa_num_attention_heads, swa_num_key_value_heads, swa_head_dim, swa_v_head_dim)."""
    full_heads: Heads | None = None
    """The full-attention layers' own head geometry where it differs (Gemma 4 global layers:
    num_global_key_value_heads, global_head_dim, attention_k_eq_v)."""
    attn_output_gate: bool = False
    """q_proj also computes a per-element sigmoid gate on the attention output (Qwen3.5)."""
    index_topk: int = 0
    """DSA: tokens each query attends to, picked by the lightning indexer (0: no sparse attention)."""
    index_heads: int = 0
    """DSA: indexer heads (index_n_heads)."""
    index_head_dim: int = 0
    """DSA: elements per indexer head, and per token of the indexer's key cache."""
    linear_layers: tuple[int, ...] = ()
    """Indices of the Gated DeltaNet linear-attention layers (Qwen3.5: three of four)."""
    linear_key_heads: int = 0
    """Gated DeltaNet: query/key heads (linear_num_key_heads)."""
    linear_value_heads: int = 0
    """Gated DeltaNet: value heads (linear_num_value_heads), each with a key_dim x value_dim state."""
    linear_key_head_dim: int = 0
    """Gated DeltaNet: elements per key head (linear_key_head_dim)."""
    linear_value_head_dim: int = 0
    """Gated DeltaNet: elements per value head (linear_value_head_dim)."""
    conv_kernel: int = 0
    """Taps of the causal short convolution before a linear-attention or Mamba mixer
    (linear_conv_kernel_dim, conv_kernel); it keeps the last conv_kernel - 1 inputs per sequence."""
    mamba_layers: tuple[int, ...] = ()
    """Indices of the Mamba-2 layers (Nemotron-H: the 'M' blocks of hybrid_override_pattern)."""
    mamba_heads: int = 0
    """Mamba-2 heads (mamba_num_heads)."""
    mamba_head_dim: int = 0
    """Mamba-2 elements per head (mamba_head_dim); the inner width is mamba_heads x mamba_head_dim."""
    ssm_state_size: int = 0
    """Mamba-2 state elements per head channel (ssm_state_size, N)."""
    mamba_groups: int = 0
    """Mamba-2 groups sharing B and C (n_groups)."""
    state_dtype: str | None = None
    """The dtype the config asks for the linear-attention / Mamba state (mamba_ssm_dtype,
    mamba_ssm_cache_dtype: float32 in Qwen3.5 and Nemotron-3); None: the KV-cache dtype."""
    mixer_only_layers: tuple[int, ...] = ()
    """Indices of the layers without an FFN (Nemotron-H Mamba and attention blocks)."""
    ffn_only_layers: tuple[int, ...] = ()
    """Indices of the layers without a token mixer (Nemotron-H MoE and MLP blocks)."""
    dense_with_experts: bool = False
    """Every MoE layer also runs the dense MLP (intermediate_size), the two outputs summed (Gemma 4)."""
    notes: tuple[str, ...] = ()
    """What the reader assumed, one line each (an unknown model_type read as a known family)."""
    folder: str | None = None
    """The local checkpoint folder the config was read from (a folder, or its config.json), as an
    absolute path: what deploy's launch lines serve, since an engine given the folder's name alone
    would look it up on the Hugging Face Hub. None for a shipped model or a Hub id."""

    @property
    def family(self) -> Family:
        return BY_MODEL_TYPE[self.model_type]

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.family.attention == "mla"

    @property
    def checkpoint_weight_dtype(self) -> str:
        """Dtype the checkpoint stores its quantized weights in (its torch_dtype when unquantized)."""
        return self.checkpoint.weight_dtype

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the reader could not use from config.json, one line each (e.g. an unknown
        quantization_config, an unknown model_type read as a known family), and what it did instead."""
        return self.notes + self.checkpoint.warnings

    @property
    def has_state(self) -> bool:
        """Some layers keep a fixed-size state per sequence (linear attention, Mamba)."""
        return bool(self.linear_layers or self.mamba_layers)

    def heads_for(self, kind: LayerKind) -> Heads:
        """The head geometry of an attention layer of this kind (`sliding_heads` / `full_heads` where
        the config gives those layers their own)."""
        if kind.attention == "sliding" and self.sliding_heads is not None:
            return self.sliding_heads
        if kind.attention == "full" and self.full_heads is not None:
            return self.full_heads
        return Heads(self.num_heads, self.num_kv_heads, self.head_dim, self.v_head_dim or self.head_dim)

    def is_moe_layer(self, index: int) -> bool:
        return self.layer_kind_at(index).ffn in ("moe", "dense+moe")

    def layer_kind_at(self, index: int) -> LayerKind:
        """The kind of layer `index`: its FFN and its attention span."""
        return _every_kind(self)[index]


@lru_cache(maxsize=64)
def _every_kind(cfg: ModelConfig) -> tuple[LayerKind, ...]:
    """Each layer's kind, built once per config with sets (a config may list 100,000 layers)."""
    dense, sliding, chunked = set(cfg.dense_layers), set(cfg.sliding_layers), set(cfg.chunked_layers)
    linear, mamba = set(cfg.linear_layers), set(cfg.mamba_layers)
    no_ffn, no_mixer = set(cfg.mixer_only_layers), set(cfg.ffn_only_layers)
    moe = "dense+moe" if cfg.dense_with_experts else "moe"
    kinds = []
    for i in range(cfg.num_layers):
        ffn = "none" if i in no_ffn else moe if cfg.is_moe and i not in dense else "dense"
        if i in no_mixer:
            kinds.append(LayerKind(ffn, "none"))
        elif i in linear:
            kinds.append(LayerKind(ffn, "linear"))
        elif i in mamba:
            kinds.append(LayerKind(ffn, "mamba"))
        elif i in sliding:
            kinds.append(LayerKind(ffn, "sliding", cfg.sliding_window))
        elif i in chunked:
            kinds.append(LayerKind(ffn, "chunked", cfg.attention_chunk_size))
        elif cfg.index_topk:
            kinds.append(LayerKind(ffn, "sparse", cfg.index_topk))
        else:
            kinds.append(LayerKind(ffn))
    return tuple(kinds)


@lru_cache(maxsize=256)
def _kinds_in(cfg: ModelConfig, start: int, stop: int) -> tuple[tuple[LayerKind, int], ...]:
    counts: dict[LayerKind, int] = {}
    for kind in _every_kind(cfg)[start:stop]:
        counts[kind] = counts.get(kind, 0) + 1
    return tuple(counts.items())


def layer_kinds(cfg: ModelConfig, start: int = 0, stop: int | None = None) -> dict[LayerKind, int]:
    """How many layers of each kind the model (or its layers start..stop-1) has, in order of first
    appearance: {LayerKind("dense"): 32}, {LayerKind("dense"): 3, LayerKind("moe"): 58}, or with
    windows {LayerKind("dense", "sliding", 1024): 52, LayerKind("dense"): 10}.

    Every layer of one kind costs the same, so the step model prices each kind once and multiplies.
    """
    return dict(_kinds_in(cfg, start, cfg.num_layers if stop is None else stop))


def config_from_dict(raw: Any, *, name: str, where: str | None = None) -> ModelConfig:
    """Validate a parsed HF config.json and return its `ModelConfig`; `where` names it in errors.

    Keys starting with "_" (such as the catalog's "_source") and keys this model does not need are
    ignored. Anything malformed raises `CatalogError` naming the key and the value; a
    quantization_config the reader does not know becomes a line of `ModelConfig.warnings`. The name
    (a folder's, a file's) is printed and written into launch files: printable UTF-8 (`check_name`).
    """
    check_name(name, "model name", error=CatalogError)
    return ModelConfig(**read_fields(raw, name=name, where=where or name))


def _parse_bytes(data: bytes, *, name: str, where: str) -> ModelConfig:
    try:
        raw = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise CatalogError(f"{where} is not UTF-8 text, so not a config.json") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        reason = (
            "nested too deeply to read (thousands of levels); a config.json nests a few"
            if isinstance(exc, RecursionError)
            else str(exc).splitlines()[0]
            if str(exc)
            else type(exc).__name__
        )
        raise CatalogError(f"{where} is not valid JSON: {reason}") from None
    return config_from_dict(raw, name=name, where=where)


def _catalog_dir():
    return PACKAGE / "catalog" / "models"


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


CONFIG_MAX_BYTES = 16 * 2**20
"""A config.json larger than this is not a config (the largest shipped one is a few KB)."""


def _load_path(path: Path, name: str | None = None) -> ModelConfig:
    from ..atomic import read_user_file  # a user's file only: shipped models start without it

    file = path / "config.json" if path.is_dir() else path
    data = read_user_file(
        file,
        what="a Hugging Face config.json",
        limit=CONFIG_MAX_BYTES,
        error=CatalogError,
        missing=f"cannot read {file}: no such file",
    )
    folder = None if name is not None or file.name != "config.json" else os.path.abspath(file.parent)
    name = name or (file.parent.name if file.name == "config.json" else file.stem) or file.stem
    cfg = _parse_bytes(data, name=name, where=str(file))
    return dataclasses.replace(cfg, folder=folder) if folder else cfg


def _is_existing_path(text: str) -> bool:
    try:
        return Path(text).exists()
    except (OSError, ValueError):  # name too long, embedded NUL byte, ...
        return False


def _shipped_name(text: str) -> str | None:
    """The shipped model `text` names, matched without regard to case ('Llama-3.1-70B' too)."""
    names = _catalog_names()
    if text in names:
        return text
    return {n.lower(): n for n in names}.get(text.lower())


def load_model(name_or_path: str | PathLike, *, download: bool = False) -> ModelConfig:
    """A shipped model by name (any case), a config.json file or a folder holding one, or a Hugging
    Face id ('meta-llama/Llama-3.1-70B').

    An id is read from the local Hugging Face cache first, then from a folder of that name, and
    only with `download=True` fetched from the Hub (config.json alone; needs huggingface_hub). See
    `model.hub` for the cache's location and layout. Every failure is a one-line `CatalogError`
    (or `UnknownNameError` for a bare name) saying where it looked.
    """
    if not isinstance(name_or_path, (str, PathLike)):
        raise UnknownNameError("model", repr(name_or_path), _catalog_names())
    text = str(name_or_path)
    if not isinstance(name_or_path, PathLike) and (shipped := _shipped_name(text)):
        return _load_catalog(shipped)
    if not isinstance(name_or_path, PathLike) and hub.looks_like_hub_id(text):
        return _load_hub_id(text, download=download)
    looks_like_path = "/" in text or "\\" in text or text.endswith(".json")
    if isinstance(name_or_path, PathLike) or looks_like_path or _is_existing_path(text):
        if not _is_existing_path(text):
            raise CatalogError(f"no model config at {text} (expected a config.json file or a folder holding one)")
        return _load_path(Path(text))
    if hub.hub_id_problem(text) is None:  # a bare id ('gpt2'): cached, or fetched when asked
        cached = hub.cached_config(text)
        if cached is not None or download:
            return _load_path(cached or hub.download_config(text), name=text)
    raise UnknownNameError("model", text, _catalog_names())


def _load_hub_id(repo_id: str, *, download: bool) -> ModelConfig:
    """cache -> folder -> (with download) the Hub; a one-line error otherwise."""
    cached = hub.cached_config(repo_id) if hub.hub_id_problem(repo_id) is None else None
    if cached is not None:
        return _load_path(cached, name=repo_id)
    if _is_existing_path(repo_id):
        return _load_path(Path(repo_id))
    hub.check_hub_id(repo_id)
    if download:
        return _load_path(hub.download_config(repo_id), name=repo_id)
    raise CatalogError(hub.not_found_message(repo_id, hub.shipped_hint(repo_id, _catalog_names())))


__all__ = ["ModelConfig", "config_from_dict", "layer_kinds", "list_models", "load_model"]
