"""A parallel plan (TP x PP x EP x data-parallel attention) and the rules a model sets for it.

Each divisibility or topology limit is one function with a message that quotes the numbers, as
engines refuse such plans ("tp (6) must divide num_attention_heads (64)"); `Plan.check(cfg)` runs
them all. Amounts (tokens, context, batch) may be numpy arrays: the step model evaluates a whole
grid of batch sizes and context lengths at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PlanError
from .config import ModelConfig, layer_kinds
from .layers import LayerKind


@dataclass(frozen=True)
class Plan:
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    """Data-parallel attention inside the TP group (1, or tp for MoE models with ep = tp)."""

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    def label(self) -> str:
        return (
            f"TP{self.tp}"
            + (f" PP{self.pp}" if self.pp > 1 else "")
            + (f" EP{self.ep}" if self.ep > 1 else "")
            + (f" DP-attention{self.dp}" if self.dp > 1 else "")
        )

    @property
    def attention_tp(self) -> int:
        """TP degree of attention: tp, or 1 when attention is data-parallel across the group."""
        return 1 if self.dp > 1 else self.tp

    def check(self, cfg: ModelConfig) -> Plan:
        """This plan if the model allows it, else a PlanError naming the rule it breaks."""
        check_sharding(cfg, tp=self.tp, ep=self.ep, attn_dp=self.dp)
        check_pp(cfg, self.pp)
        return self


def check_degree(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PlanError(f"{name} ({value!r}) must be a positive integer")


def check_tp(cfg: ModelConfig, tp: int) -> None:
    """The heads split evenly over the `tp` ranks that run attention: the query heads, the KV heads
    (or a multiple of them, each replicated) of every kind of attention layer, and a linear-attention
    or Mamba layer's heads and groups, which engines split and never replicate (vLLM
    Qwen3NextGatedDeltaNet, MambaMixer2)."""
    check_degree("tp", tp)
    if cfg.num_heads % tp:
        raise PlanError(f"tp ({tp}) must divide num_attention_heads ({cfg.num_heads})")
    kv = cfg.num_kv_heads
    if not cfg.is_mla and kv % tp and tp % kv:  # MLA has one latent KV, replicated on every rank
        raise PlanError(f"tp ({tp}) must divide num_key_value_heads ({kv}) or be a multiple of it")
    for what, count, replicable in tp_bounds(cfg)[2:]:
        if count % tp and not (replicable and tp % count == 0):
            more = " or be a multiple of it" if replicable else ""
            raise PlanError(f"tp ({tp}) must divide {what} ({count}){more}")


def tp_bounds(cfg: ModelConfig) -> list[tuple[str, int, bool]]:
    """Every head count TP must divide, as (config field, count, whether tp may exceed it by
    replicating): query heads and KV heads first, then those of the hybrids' other layer kinds."""
    bounds = [("num_attention_heads", cfg.num_heads, False), ("num_key_value_heads", cfg.num_kv_heads, True)]
    for what, g in (("swa", cfg.sliding_heads), ("global", cfg.full_heads)):
        if g is not None:
            bounds += [(f"{what} attention heads", g.heads, False), (f"{what} key/value heads", g.kv_heads, True)]
    if cfg.linear_layers:
        bounds += [
            ("linear_num_key_heads", cfg.linear_key_heads, False),
            ("linear_num_value_heads", cfg.linear_value_heads, False),
        ]
    if cfg.mamba_layers:
        bounds += [("mamba_num_heads", cfg.mamba_heads, False), ("n_groups", cfg.mamba_groups, True)]
    return bounds


def check_ep(cfg: ModelConfig, ep: int) -> None:
    check_degree("ep", ep)
    if ep == 1:
        return
    if not cfg.is_moe:
        raise PlanError(f"ep ({ep}) > 1 needs a mixture-of-experts model; {cfg.name} has no experts")
    if cfg.num_experts % ep:
        raise PlanError(f"ep ({ep}) must divide the number of routed experts ({cfg.num_experts})")


def check_pp(cfg: ModelConfig, pp: int) -> None:
    check_degree("pp", pp)
    if pp > cfg.num_layers:
        raise PlanError(f"pp ({pp}) must not exceed num_hidden_layers ({cfg.num_layers})")


def check_attn_dp(cfg: ModelConfig, tp: int, ep: int, attn_dp: int) -> int:
    """Data-parallel attention (SGLang --enable-dp-attention, vLLM DP + EP): every GPU of the TP group
    runs attention for its own 1/attn_dp of the sequences with whole heads, while the experts are
    spread over EP. Only attn_dp = 1 or attn_dp = tp (attention TP = 1) with ep = tp is modelled.
    Returns the attention TP degree."""
    if attn_dp == 1:
        return tp
    if attn_dp != tp or ep != tp or not cfg.is_moe:
        raise PlanError(
            f"data-parallel attention (dp {attn_dp}) needs an MoE model with dp = ep = tp; got tp {tp}, ep {ep}"
        )
    return 1


def check_sharding(cfg: ModelConfig, *, tp: int, ep: int, attn_dp: int) -> int:
    """The rules of a TP x EP x data-parallel-attention layout; returns the attention TP degree.
    Heads must divide over the ranks that split them: all tp ranks, or none with data-parallel
    attention (each rank then runs whole heads on its own sequences)."""
    check_degree("tp", tp)
    check_ep(cfg, ep)
    check_degree("dp", attn_dp)
    tp_attn = check_attn_dp(cfg, tp, ep, attn_dp)
    check_tp(cfg, tp_attn)
    return tp_attn


def check_amount(name: str, value: Any, *, minimum: float, strict: bool) -> None:
    """A finite number (or array of them) at least `minimum` (greater, if strict)."""
    is_array = isinstance(value, np.ndarray) and value.dtype.kind in "iuf"
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not (number or is_array):
        raise PlanError(f"{name} ({value!r}) must be a finite number")
    if isinstance(value, int) and abs(value) >= 1e300:  # an int too large for a float
        raise PlanError(f"{name} ({value!r}) must be a finite number")
    arr = np.asarray(value, dtype=float)
    if is_array and arr.size:  # the common case, checked in two reductions (a sweep checks thousands)
        lo, hi = float(arr.min()), float(arr.max())
        if -1e300 < lo and hi < 1e300 and (lo > minimum if strict else lo >= minimum):
            return
    # |value| < 1e300 also refuses inf and NaN
    bad = ~(np.abs(arr) < 1e300) | (arr < minimum) | ((arr == minimum) if strict else False)
    if np.any(bad):
        first = arr[bad].flat[0] if arr.ndim else value
        bound = f"greater than {minimum:g}" if strict else f"at least {minimum:g}"
        raise PlanError(f"{name} ({first!r}) must be a finite number {bound}")


def layer_kind(cfg: ModelConfig, layer: int | str | LayerKind) -> LayerKind:
    """The `LayerKind` of a layer index, of a kind of `config.layer_kinds`, or of an FFN name
    ("dense" / "moe") that only one kind of the model has."""
    if isinstance(layer, int) and not isinstance(layer, bool):
        if not 0 <= layer < cfg.num_layers:
            raise PlanError(
                f"layer ({layer}) must be from 0 to {cfg.num_layers - 1} ({cfg.name} has {cfg.num_layers} layers)"
            )
        return cfg.layer_kind_at(layer)
    kinds = layer_kinds(cfg)
    if isinstance(layer, tuple) and any(layer == k for k in kinds):
        return LayerKind(*layer)
    named = [k for k in kinds if k.ffn == layer] if isinstance(layer, str) else []
    if len(named) == 1:
        return named[0]
    raise PlanError(
        f"layer {layer!r} is neither a layer index nor a layer kind of {cfg.name} ({', '.join(k.label for k in kinds)})"
    )


def stage_layer_counts(num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage, split as vLLM's get_pp_indices does: evenly, with the remainder
    going to the stages before the last (which also holds the LM head)."""
    counts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        counts[-i] += 1
    return counts


def busiest_rank_sequences(batch, attn_dp: int):
    """Sequences on the busiest data-parallel attention rank: whole sequences go to one rank, so
    with `batch` sequences over attn_dp ranks the busiest holds ceil(batch / attn_dp)."""
    if attn_dp == 1:
        return batch
    return np.ceil(np.asarray(batch, dtype=float) / attn_dp - 1e-9)


__all__ = [
    "Plan",
    "busiest_rank_sequences",
    "check_amount",
    "check_attn_dp",
    "check_degree",
    "check_ep",
    "check_pp",
    "check_sharding",
    "check_tp",
    "tp_bounds",
    "layer_kind",
    "stage_layer_counts",
]
