"""Reading the fields of a Hugging Face ``config.json`` for `config.ModelConfig`.

What a family is (attention kind, MoE layout, biases, norms, windows) comes from the one table in
`families`; this module reads the fields that table says the family has, fills the family's own
defaults visibly (before reading, so a default is never mistaken for a checkpoint value) and names
the key, the value and the file in every error. Sizes are element counts, never bytes.
"""

from __future__ import annotations

import reprlib
from typing import Any

from ..errors import CatalogError
from . import layouts
from .families import BY_ARCHITECTURE, BY_MODEL_TYPE, Family
from .quant import read_checkpoint

MAX_INT = 2**31 - 1  # int32, as checkpoints store shapes; keeps every product a finite float
MAX_LAYERS = 100_000  # real models have a few hundred; the reader lists layers one by one

# HF `layer_types` values -> layers.ATTENTION_SPANS
_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding", "chunked_attention": "chunked"}


def _short(value: Any) -> str:
    """A bounded repr of a config value for an error message (it may be huge or nested)."""
    return reprlib.repr(value)


class _Reader:
    """Typed access to one raw config dict; every error names the key, the value and the file."""

    def __init__(self, raw: dict, where: str, prefix: str = ""):
        self.raw, self.where, self.prefix = raw, where, prefix

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None  # HF writes null for "use the default"

    def fail(self, message: str) -> CatalogError:
        return CatalogError(f"{message} (in {self.where})")

    def name(self, key: str) -> str:
        return repr(self.prefix + key)

    def integer(self, key: str, *, minimum: int = 1, default: int | None = None, maximum: int = MAX_INT) -> int:
        value = self.raw.get(key)
        if value is None:
            if default is None:
                raise self.fail(f"config.json is missing {self.name(key)}")
            return default
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise self.fail(
                f"config.json field {self.name(key)} must be an integer from {minimum} to "
                f"{maximum}, got {_short(value)}"
            )
        return value

    def flag(self, key: str, *, default: bool) -> bool:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(f"config.json field {self.name(key)} must be true or false, got {_short(value)}")
        return value

    def indices(self, key: str, count: int) -> tuple[int, ...]:
        value = self.raw.get(key)
        if value is None:
            return ()
        ok = isinstance(value, list) and all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < count for i in value
        )
        if not ok:
            raise self.fail(
                f"config.json field {self.name(key)} must be a list of layer indices from 0 "
                f"to {count - 1}, got {_short(value)}"
            )
        return tuple(sorted(set(value)))

    def per_layer(self, key: str, count: int, allowed: tuple) -> list:
        """A list with one entry per layer (at least `count`), each one of `allowed`."""
        value = self.raw.get(key)
        ok = (
            isinstance(value, list)
            and len(value) >= count
            and all(any(v == a and type(v) is type(a) for a in allowed) for v in value[:count])
        )
        if not ok:
            raise self.fail(
                f"config.json field {self.name(key)} must list one of {', '.join(map(repr, allowed))} "
                f"for each of the {count} layers, got {_short(value)}"
            )
        return value[:count]


def _family(raw: dict, where: str) -> tuple[Family, tuple[str, ...]]:
    """The model family, from `model_type` or else `architectures[0]`, and the reader's notes. An
    unknown model_type whose architecture or fields match a family is read as it (with a note that
    says so: `layouts.matched_family`); one that matches none is refused."""
    r = _Reader(raw, where)
    if raw.get("is_encoder_decoder") is True:
        raise r.fail("config.json describes an encoder-decoder model; only decoder-only models are supported")
    model_type = raw.get("model_type")
    if model_type is not None:
        if isinstance(model_type, str) and model_type in BY_MODEL_TYPE:
            return BY_MODEL_TYPE[model_type], ()
        matched = layouts.matched_family(raw, model_type) if isinstance(model_type, str) else None
        if matched is None:
            raise r.fail(
                f"config.json field 'model_type' is {_short(model_type)}, which shardbudget "
                f"does not model (supported: {', '.join(sorted(BY_MODEL_TYPE))})"
            )
        return matched[0], (matched[1],)
    archs = raw.get("architectures")
    if archs is None:
        raise r.fail("config.json is missing 'model_type' (and 'architectures')")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str) or archs[0] not in BY_ARCHITECTURE:
        raise r.fail(
            f"config.json field 'architectures' is {_short(archs)}, which shardbudget does "
            f"not model (supported: {', '.join(sorted(BY_ARCHITECTURE))})"
        )
    return BY_ARCHITECTURE[archs[0]], ()


def _decoder_reader(raw: dict, family: Family, where: str) -> _Reader:
    """The dict the decoder's fields come from, with the family's defaults filled in: the top level,
    or `text_config` for a multimodal checkpoint (whose top-level tie_word_embeddings wins, as the
    multimodal model class ties the LM head)."""
    if family.text_config:
        text = raw.get("text_config")
        if not isinstance(text, dict):
            raise CatalogError(
                f"config.json of a {family.model_type} model must hold its decoder in a "
                f"'text_config' object, got {_short(text)} (in {where})"
            )
        fields = dict(text)
        if raw.get("tie_word_embeddings") is not None:
            fields["tie_word_embeddings"] = raw["tie_word_embeddings"]
        prefix = "text_config."
    else:
        fields, prefix = dict(raw), ""
    for key, value in family.defaults:
        if fields.get(key) is None:
            fields[key] = value
    return _Reader(fields, where, prefix)


def _attention_fields(r: _Reader, family: Family) -> dict[str, Any]:
    heads, hidden = r.integer("num_attention_heads"), r.integer("hidden_size")
    kv_heads = r.integer("num_key_value_heads", default=heads)  # absent/null: multi-head attention
    if heads % kv_heads:
        raise r.fail(
            f"config.json field {r.name('num_key_value_heads')} ({kv_heads}) must divide num_attention_heads ({heads})"
        )
    fields: dict[str, Any] = {"hidden_size": hidden, "num_heads": heads, "num_kv_heads": kv_heads}
    if family.attention == "mla":
        fields.update(_mla_fields(r))
        fields["head_dim"] = fields["qk_nope_head_dim"] + fields["qk_rope_head_dim"]
        if family.indexer:
            fields.update(layouts.indexer(r, r.integer("max_position_embeddings", default=0)))
        return fields
    if r.has("head_dim"):
        fields["head_dim"] = r.integer("head_dim")
    elif hidden % heads:
        raise r.fail(
            f"config.json has no 'head_dim' and hidden_size ({hidden}) is not divisible by "
            f"num_attention_heads ({heads})"
        )
    else:
        fields["head_dim"] = hidden // heads
    bias = r.flag("attention_bias", default=False)
    fields["qkv_bias"] = family.qkv_bias or bias
    fields["o_bias"] = family.o_bias and bias
    switched_on = family.qk_norm_flag is None or r.flag(family.qk_norm_flag, default=False)
    fields["qk_norm"] = family.qk_norm != "none" and switched_on
    if family.output_gate_key:
        fields["attn_output_gate"] = r.flag(family.output_gate_key, default=False)
    if family.global_heads:
        fields.update(layouts.global_heads(r, heads, kv_heads, fields["head_dim"]))
    if family.layout == "mimo":  # values narrower than keys (MiMo-V2: 128 beside 192)
        fields["v_head_dim"] = r.integer("v_head_dim", default=fields["head_dim"])
    return fields


def _mla_fields(r: _Reader) -> dict[str, int]:
    return {
        "q_lora_rank": r.integer("q_lora_rank", default=0),  # null in DeepSeek-V2-Lite: no q compression
        "kv_lora_rank": r.integer("kv_lora_rank"),
        "qk_nope_head_dim": r.integer("qk_nope_head_dim"),
        "qk_rope_head_dim": r.integer("qk_rope_head_dim"),
        "v_head_dim": r.integer("v_head_dim"),
    }


def _mixtral_moe(r: _Reader, family: Family, layers: int) -> dict[str, Any]:
    # Every layer is MoE and each expert is a full-width MLP (intermediate_size).
    return _checked_moe(r, experts=r.integer("num_local_experts"), expert_width=r.integer("intermediate_size"))


def _qwen_moe(r: _Reader, family: Family, layers: int) -> dict[str, Any]:
    step = r.integer("decoder_sparse_step", default=1)
    only_mlp = set(r.indices("mlp_only_layers", layers))
    dense = tuple(i for i in range(layers) if i in only_mlp or (i + 1) % step)
    shared_width = r.integer("shared_expert_intermediate_size", minimum=0, default=0)
    return _checked_moe(
        r,
        experts=r.integer("num_experts"),
        expert_width=r.integer("moe_intermediate_size"),
        dense=dense,
        shared=1 if shared_width else 0,
        shared_width=shared_width,
    )


def _deepseek_moe(r: _Reader, family: Family, layers: int) -> dict[str, Any]:
    first_dense = r.integer("first_k_dense_replace", minimum=0, default=0)
    if first_dense > layers:
        raise r.fail(f"config.json field 'first_k_dense_replace' ({first_dense}) exceeds num_hidden_layers ({layers})")
    freq = r.integer("moe_layer_freq", default=1)
    dense = tuple(i for i in range(layers) if i < first_dense or i % freq)
    width = r.integer("moe_intermediate_size")
    shared = r.integer("n_shared_experts", minimum=0, default=0)
    moe = _checked_moe(
        r,
        experts=r.integer("n_routed_experts"),
        expert_width=width,
        dense=dense,
        shared=shared,
        shared_width=width if shared else 0,
        router_bias=r.raw.get("topk_method") in family.router_bias_methods,
    )
    # group-limited routing (modeling_deepseek.py MoEGate: topk_method group_limited_greedy / noaux_tc)
    if r.raw.get("topk_method") in ("group_limited_greedy", "noaux_tc"):
        groups = r.integer("n_group", default=1)
        if groups < 1 or moe["num_experts"] % groups:
            raise r.fail(f"config.json field 'n_group' ({groups}) must divide n_routed_experts ({moe['num_experts']})")
        per_token = r.integer("topk_group", default=groups)
        if not 1 <= per_token <= groups:
            raise r.fail(f"config.json field 'topk_group' ({per_token}) must be between 1 and n_group ({groups})")
        moe |= {"expert_groups": groups, "expert_groups_per_token": per_token}
    return moe


def _llama4_moe(r: _Reader, family: Family, layers: int) -> dict[str, Any]:
    # Llama4TextConfig: moe_layers, else every interleave_moe_layer_step-th layer from step - 1
    # (Scout: every layer; Maverick: every other). Routed and shared experts are intermediate_size
    # wide (Llama4TextMoe); the dense layers' MLP is intermediate_size_mlp wide.
    step = r.integer("interleave_moe_layer_step", default=1)
    moe = set(r.indices("moe_layers", layers)) if r.has("moe_layers") else set(range(step - 1, layers, step))
    width = r.integer("intermediate_size")
    return _checked_moe(
        r,
        experts=r.integer("num_local_experts"),
        expert_width=width,
        dense=tuple(i for i in range(layers) if i not in moe),
        shared=1,
        shared_width=width,
    )


def _gemma4_moe(r: _Reader, family: Family, layers: int) -> dict[str, Any]:
    # Gemma4TextConfig: enable_moe_block puts num_experts experts (top_k_experts per token) in every
    # layer beside its dense MLP (intermediate_size), the two outputs summed.
    if not r.flag("enable_moe_block", default=False):
        return {}
    return _checked_moe(
        r, experts=r.integer("num_experts"), expert_width=r.integer("moe_intermediate_size"), k_key="top_k_experts"
    )


def _nemotron_moe(r: _Reader, family: Family, layers: int) -> dict[str, Any]:
    # NemotronHConfig: the 'E' blocks route to n_routed_experts relu2 experts plus a shared expert.
    pattern = layouts.nemotron_pattern(r, layers)
    if "E" not in pattern:
        return {}
    shared_width = r.integer("moe_shared_expert_intermediate_size", minimum=0, default=0)
    shared = r.integer("n_shared_experts", minimum=0, default=1) if shared_width else 0
    return _checked_moe(
        r,
        experts=r.integer("n_routed_experts"),
        expert_width=r.integer("moe_intermediate_size"),
        dense=tuple(i for i, block in enumerate(pattern) if block != "E"),
        shared=shared,
        shared_width=shared_width if shared else 0,
    )


def _mimo_moe(r: _Reader, family: Family, layers: int) -> dict[str, Any]:
    # MiMo-V2: moe_layer_freq lists 0 (dense MLP) or 1 (experts) per layer; no shared expert unless
    # n_shared_experts says so.
    freq = r.raw.get("moe_layer_freq", 1)
    if isinstance(freq, list):
        freq = r.per_layer("moe_layer_freq", layers, (0, 1))
        if len(r.raw["moe_layer_freq"]) != layers:
            raise r.fail(
                f"config.json field {r.name('moe_layer_freq')} lists {len(r.raw['moe_layer_freq'])} "
                f"layers, but num_hidden_layers is {layers}"
            )
        dense = tuple(i for i, f in enumerate(freq) if f == 0)
    else:
        every = r.integer("moe_layer_freq")
        dense = tuple(i for i in range(layers) if i % every)
    width = r.integer("moe_intermediate_size")
    shared = r.integer("n_shared_experts", minimum=0, default=0)
    return _checked_moe(
        r,
        experts=r.integer("n_routed_experts"),
        expert_width=width,
        dense=dense,
        shared=shared,
        shared_width=width if shared else 0,
        router_bias=r.raw.get("topk_method") in family.router_bias_methods,
    )


# One reader per MoE layout of families.MOE_LAYOUTS.
_MOE_READERS = {
    "mixtral": _mixtral_moe,
    "qwen_moe": _qwen_moe,
    "deepseek": _deepseek_moe,
    "llama4": _llama4_moe,
    "gemma4": _gemma4_moe,
    "nemotron": _nemotron_moe,
    "mimo": _mimo_moe,
}


def _checked_moe(
    r: _Reader,
    *,
    experts: int,
    expert_width: int,
    dense: tuple[int, ...] = (),
    shared: int = 0,
    shared_width: int = 0,
    router_bias: bool = False,
    k_key: str = "num_experts_per_tok",
) -> dict[str, Any]:
    k = r.integer(k_key)
    if k > experts:
        raise r.fail(f"config.json field {r.name(k_key)} ({k}) exceeds the number of routed experts ({experts})")
    return {
        "num_experts": experts,
        "experts_per_token": k,
        "moe_intermediate_size": expert_width,
        "num_shared_experts": shared,
        "shared_expert_intermediate_size": shared_width,
        "dense_layers": dense,
        "router_bias": router_bias,
    }


def _rule_spans(r: _Reader, rule: str, layers: int) -> list[str]:
    """Each layer's attention span ("full" / "sliding" / "chunked") by the family's rule
    (families.WINDOW_RULES) when the config lists no layer_types."""
    if rule == "all":
        return ["sliding" if r.has("sliding_window") else "full"] * layers
    if rule == "qwen":
        windowed = r.flag("use_sliding_window", default=False) and r.has("sliding_window")
        first = r.integer("max_window_layers", minimum=0, default=28)  # Qwen2Config's default
        return ["sliding" if windowed and i >= first else "full" for i in range(layers)]
    if rule == "pattern":
        every = r.integer("sliding_window_pattern")
        return ["full" if (i + 1) % every == 0 else "sliding" for i in range(layers)]
    if rule == "alternate":
        return ["sliding" if i % 2 == 0 else "full" for i in range(layers)]
    if rule == "chunked":
        if r.has("no_rope_layers") and r.raw["no_rope_layers"] != []:  # [] means "derive it"
            rope = [v == 1 for v in r.per_layer("no_rope_layers", layers, (0, 1))]
        else:
            every = r.integer("no_rope_layer_interval")
            rope = [(i + 1) % every != 0 for i in range(layers)]
        chunked = r.has("attention_chunk_size")
        return ["chunked" if chunked and uses_rope else "full" for uses_rope in rope]
    return ["full"] * layers


def _window_fields(r: _Reader, family: Family, layers: int) -> dict[str, Any]:
    """sliding_window / sliding_layers and attention_chunk_size / chunked_layers."""
    if family.windows == "none":
        return {}
    if r.has("layer_types"):
        spans = [_LAYER_TYPES[t] for t in r.per_layer("layer_types", layers, tuple(_LAYER_TYPES))]
    else:
        spans = _rule_spans(r, family.windows, layers)
    fields: dict[str, Any] = {}
    sliding = tuple(i for i, s in enumerate(spans) if s == "sliding")
    chunked = tuple(i for i, s in enumerate(spans) if s == "chunked")
    if sliding:
        fields.update(sliding_window=r.integer("sliding_window"), sliding_layers=sliding)
    if chunked:
        fields.update(attention_chunk_size=r.integer("attention_chunk_size"), chunked_layers=chunked)
    return fields


# Spellings of the multi-token-prediction layer count (DeepSeek-V3 / GLM / MiMo; Qwen3.5 / Nemotron-H;
# MiniMax-M2's num_mtp_modules).
_MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")


def _mtp_layers(r: _Reader) -> int:
    """MTP layers (0 when the config names none); the first spelling present wins."""
    for key in _MTP_KEYS:
        if r.has(key):
            return r.integer(key, minimum=0, maximum=MAX_LAYERS)
    return 0


def _dense_width(r: _Reader, family: Family, moe: dict, layout: dict) -> int:
    """The dense MLP's width; 0 (when the config leaves it out) where no layer has a dense MLP."""
    no_ffn = set(layout.get("mixer_only_layers", ()))
    has_dense = not moe or moe["dense_with_experts"] or bool(set(moe["dense_layers"]) - no_ffn)
    return r.integer(family.dense_width_key, minimum=0 if not has_dense else 1, default=None if has_dense else 0)


def read_fields(raw: Any, *, name: str, where: str) -> dict[str, Any]:
    """The keyword arguments of `config.ModelConfig` for a parsed config.json; anything malformed
    raises `CatalogError` naming the key and the value."""
    if not isinstance(raw, dict):
        raise CatalogError(f"config.json must hold a JSON object, got a {type(raw).__name__} (in {where})")
    family, notes = _family(raw, where)
    r = _decoder_reader(raw, family, where)
    layers = r.integer("num_hidden_layers", maximum=MAX_LAYERS)
    moe = _MOE_READERS[family.moe](r, family, layers) if family.moe else {}
    if moe:
        flagged = family.router_bias_flag is not None and r.flag(family.router_bias_flag, default=False)
        moe["router_bias"] = moe["router_bias"] or family.router_bias or flagged
        moe["dense_with_experts"] = family.moe == "gemma4"
    layout = layouts.LAYOUT_READERS[family.layout](r, family, layers) if family.layout != "uniform" else {}
    return dict(
        name=name,
        model_type=family.model_type,
        num_layers=layers,
        notes=notes,
        **layout,
        intermediate_size=_dense_width(r, family, moe, layout),
        vocab_size=r.integer("vocab_size"),
        tie_embeddings=r.flag("tie_word_embeddings", default=False),
        max_position_embeddings=r.integer("max_position_embeddings", default=0),
        mtp_layers=_mtp_layers(r),
        checkpoint=read_checkpoint(
            raw, text=r.raw if family.text_config else None, where=where, in_features=r.integer("hidden_size")
        ),
        **_attention_fields(r, family),
        **_window_fields(r, family, layers),
        **moe,
    )


__all__ = ["MAX_INT", "MAX_LAYERS", "read_fields"]
