"""Reading the per-layer layout of hybrid models from their config.json's own fields.

Which layers are linear attention, Mamba-2, sliding or full attention, or sparse (DSA), comes from
the fields each family's configuration class defines (`families.LAYOUTS`), never from the model's
name. Each reader returns keyword arguments of `config.ModelConfig`; a layout that disagrees with
`num_hidden_layers`, a missing state size or an `index_topk` beyond the model's context is one
`CatalogError` naming the field. Also here: the family an unknown `model_type` is read as.
"""

from __future__ import annotations

from typing import Any

from ..dtypes import WEIGHT_DTYPES, canonical
from ..errors import CatalogError, ShardbudgetError
from .families import BY_ARCHITECTURE, BY_MODEL_TYPE, SIGNATURES, TEXT_ONLY, Family
from .layers import Heads


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _state_dtype(r, family: Family) -> str | None:
    for key in family.state_dtype_keys:
        if r.has(key):
            try:
                return canonical(r.raw[key], WEIGHT_DTYPES)
            except ShardbudgetError:
                raise r.fail(
                    f"config.json field {r.name(key)} is {_short(r.raw[key])}, not a dtype shardbudget knows"
                ) from None
    return None


def _linear_spans(r, layers: int) -> list[bool]:
    """Per layer: is it Gated DeltaNet (True) or full attention (False)? `layer_types` wins; else
    full iff (i + 1) % full_attention_interval == 0. Both given must agree."""
    interval = r.integer("full_attention_interval", default=4) if not r.has("layer_types") else None
    if r.has("layer_types"):
        types = r.raw["layer_types"]
        allowed = ("linear_attention", "full_attention")
        if not isinstance(types, list) or len(types) != layers or any(t not in allowed for t in types):
            count = len(types) if isinstance(types, list) else "no"
            raise r.fail(
                f"config.json field {r.name('layer_types')} must list 'linear_attention' or "
                f"'full_attention' for each of the {layers} layers (num_hidden_layers), got {count} "
                f"entries: {_short(types)}"
            )
        linear = [t == "linear_attention" for t in types]
        if r.has("full_attention_interval"):
            every = r.integer("full_attention_interval")
            if linear != [(i + 1) % every != 0 for i in range(layers)]:
                raise r.fail(
                    f"config.json fields {r.name('layer_types')} and {r.name('full_attention_interval')} "
                    f"({every}) disagree about which layers are full attention"
                )
        return linear
    if interval > layers:
        raise r.fail(
            f"config.json field {r.name('full_attention_interval')} ({interval}) exceeds "
            f"num_hidden_layers ({layers}): no layer would be full attention"
        )
    return [(i + 1) % interval != 0 for i in range(layers)]


def linear_hybrid(r, family: Family, layers: int) -> dict[str, Any]:
    """Qwen3.5 / Qwen3-Next: Gated DeltaNet layers and (gated) full-attention layers."""
    linear = tuple(i for i, is_linear in enumerate(_linear_spans(r, layers)) if is_linear)
    key_heads, value_heads = r.integer("linear_num_key_heads"), r.integer("linear_num_value_heads")
    if value_heads % key_heads:
        raise r.fail(
            f"config.json field {r.name('linear_num_key_heads')} ({key_heads}) must divide "
            f"linear_num_value_heads ({value_heads})"
        )
    return dict(
        linear_layers=linear,
        linear_key_heads=key_heads,
        linear_value_heads=value_heads,
        linear_key_head_dim=r.integer("linear_key_head_dim"),
        linear_value_head_dim=r.integer("linear_value_head_dim"),
        conv_kernel=r.integer("linear_conv_kernel_dim"),
        state_dtype=_state_dtype(r, family),
    )


NEMOTRON_BLOCKS = {"M": "mamba", "*": "attention", "E": "moe", "-": "mlp"}


def nemotron_pattern(r, layers: int) -> str:
    """hybrid_override_pattern: one character per block (NemotronHConfig)."""
    pattern = r.raw.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or len(pattern) != layers or set(pattern) - set(NEMOTRON_BLOCKS):
        count = len(pattern) if isinstance(pattern, str) else "no"
        raise r.fail(
            f"config.json field {r.name('hybrid_override_pattern')} must have one of "
            f"{''.join(NEMOTRON_BLOCKS)} for each of the {layers} layers (num_hidden_layers), got {count} "
            f"characters: {_short(pattern)}"
        )
    return pattern


def nemotron(r, family: Family, layers: int) -> dict[str, Any]:
    """Nemotron-H: Mamba-2 (M), attention (*), MoE (E) and MLP (-) blocks."""
    pattern = nemotron_pattern(r, layers)
    at = {c: tuple(i for i, b in enumerate(pattern) if b == c) for c in NEMOTRON_BLOCKS}
    fields: dict[str, Any] = dict(
        mixer_only_layers=tuple(sorted(at["M"] + at["*"])), ffn_only_layers=tuple(sorted(at["E"] + at["-"]))
    )
    if at["M"]:
        heads, groups = r.integer("mamba_num_heads"), r.integer("n_groups")
        if heads % groups:
            raise r.fail(f"config.json field {r.name('n_groups')} ({groups}) must divide mamba_num_heads ({heads})")
        fields.update(
            mamba_layers=at["M"],
            mamba_heads=heads,
            mamba_head_dim=r.integer("mamba_head_dim"),
            ssm_state_size=r.integer("ssm_state_size"),
            mamba_groups=groups,
            conv_kernel=r.integer("conv_kernel"),
            state_dtype=_state_dtype(r, family),
        )
    return fields


def mimo(r, family: Family, layers: int) -> dict[str, Any]:
    """MiMo-V2: hybrid_layer_pattern 1 = sliding window with the swa_* heads, 0 = full attention."""
    pattern = r.raw.get("hybrid_layer_pattern")
    if (
        not isinstance(pattern, list)
        or len(pattern) != layers
        or any(p not in (0, 1) or isinstance(p, bool) for p in pattern)
    ):
        count = len(pattern) if isinstance(pattern, list) else "no"
        raise r.fail(
            f"config.json field {r.name('hybrid_layer_pattern')} must hold 0 (full) or 1 (sliding) "
            f"for each of the {layers} layers (num_hidden_layers), got {count} entries: {_short(pattern)}"
        )
    sliding = tuple(i for i, p in enumerate(pattern) if p == 1)
    if not sliding:
        return {}
    window_key = "sliding_window" if r.has("sliding_window") else "sliding_window_size"
    heads = Heads(
        r.integer("swa_num_attention_heads"),
        r.integer("swa_num_key_value_heads"),
        r.integer("swa_head_dim"),
        r.integer("swa_v_head_dim"),
    )
    if heads.heads % heads.kv_heads:
        raise r.fail(
            f"config.json field {r.name('swa_num_key_value_heads')} ({heads.kv_heads}) must divide "
            f"swa_num_attention_heads ({heads.heads})"
        )
    return dict(sliding_layers=sliding, sliding_window=r.integer(window_key), sliding_heads=heads)


LAYOUT_READERS = {"linear_hybrid": linear_hybrid, "nemotron": nemotron, "mimo": mimo}


def global_heads(r, heads: int, kv_heads: int, head_dim: int) -> dict[str, Any]:
    """Gemma 4: the full-attention layers' own KV heads and head size, and K = V."""
    kv = r.integer("num_global_key_value_heads", default=kv_heads)
    if heads % kv:
        raise r.fail(
            f"config.json field {r.name('num_global_key_value_heads')} ({kv}) must divide num_attention_heads ({heads})"
        )
    d = r.integer("global_head_dim", default=head_dim)
    return {"full_heads": Heads(heads, kv, d, d, k_eq_v=r.flag("attention_k_eq_v", default=False))}


def indexer(r, max_context: int) -> dict[str, int]:
    """DSA: the lightning indexer's heads, head size and top-k; top-k cannot exceed the context."""
    topk = r.integer("index_topk")
    if max_context and topk > max_context:
        raise r.fail(
            f"config.json field {r.name('index_topk')} ({topk}) exceeds the model's context, "
            f"max_position_embeddings ({max_context})"
        )
    return {
        "index_topk": topk,
        "index_heads": r.integer("index_n_heads"),
        "index_head_dim": r.integer("index_head_dim"),
    }


def _has_all(fields: Any, keys: tuple[str, ...]) -> bool:
    return isinstance(fields, dict) and all(fields.get(k) is not None for k in keys)


def matched_family(raw: dict, model_type: str) -> tuple[Family, str] | None:
    """The family an unknown model_type is read as, with the warning that says why: the one its
    `architectures[0]` names, else the first `families.SIGNATURES` row whose keys it has."""
    archs = raw.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str) and archs[0] in BY_ARCHITECTURE:
        family = BY_ARCHITECTURE[archs[0]]
        return family, (
            f"model_type {model_type!r} is not one shardbudget knows: read as {family.model_type} "
            f"because architectures names {archs[0]}"
        )
    for name, keys in SIGNATURES:
        for fields, family in (
            (raw.get("text_config"), BY_MODEL_TYPE[name]),
            (raw, BY_MODEL_TYPE[TEXT_ONLY.get(name, name)]),
        ):
            if _has_all(fields, keys) and (fields is not raw or not family.text_config):
                return family, (
                    f"model_type {model_type!r} is not one shardbudget knows: read as "
                    f"{family.model_type}, whose fields it has ({', '.join(keys)})"
                )
    return None


def refuse(message: str, where: str) -> CatalogError:
    return CatalogError(f"{message} (in {where})")


__all__ = [
    "LAYOUT_READERS",
    "NEMOTRON_BLOCKS",
    "global_heads",
    "indexer",
    "linear_hybrid",
    "matched_family",
    "mimo",
    "nemotron",
    "nemotron_pattern",
    "refuse",
]
