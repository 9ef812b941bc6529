"""Layer kinds and how far each one's attention reaches.

A `LayerKind` is what makes two decoder layers cost the same: the FFN (dense MLP, MoE, both, or
none) and the token mixer (attention over the whole context, a sliding window of the last `span`
tokens, the current chunk of `span` tokens, the `span` tokens a sparse-attention indexer selects; a
linear-attention or state-space layer with a fixed-size state instead of a KV cache; or none). The
step model prices each kind once and multiplies by its count. `Heads` is the head geometry of an
attention layer, which may differ between a model's sliding and full layers (Gemma 4, MiMo-V2).

The two functions here are array arithmetic over the context (numpy broadcasting), branching only
on the layer kind, never on array values:
  * `attention_keys`: keys one query attends over (decode), or the mean over a prompt's queries
    (causal prefill);
  * `cached_tokens`: tokens of one sequence a layer keeps in its KV cache at a context length. Engines
    free what a window has passed (vLLM's hybrid KV-cache manager: SlidingWindowSpec and
    ChunkedLocalAttentionSpec, https://docs.vllm.ai/en/latest/design/hybrid_kv_cache_manager/).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

ATTENTION_SPANS = ("full", "sliding", "chunked", "sparse", "linear", "mamba", "none")
"""full: every earlier token; sliding: the last `span` tokens (Mistral, Gemma, gpt-oss); chunked:
the tokens of the current `span`-token chunk (Llama 4 RoPE layers, `attention_chunk_size`); sparse:
the `span` (index_topk) earlier tokens a lightning indexer picks, from a cache of all of them
(DeepSeek Sparse Attention: DeepSeek-V3.2, GLM-5); linear: Gated DeltaNet linear attention, a fixed
(key x value) state per head and sequence (Qwen3.5); mamba: a Mamba-2 state-space mixer, a fixed
(head_dim x state) state per head and sequence (Nemotron-H); none: the layer has no token mixer
(Nemotron-H's MoE and MLP blocks)."""

STATE_SPANS = ("linear", "mamba")
"""Mixers that keep a fixed-size state per sequence instead of a KV cache."""

FFN_KINDS = ("dense", "moe", "dense+moe", "none")
"""dense: a gated MLP; moe: routed (and shared) experts; dense+moe: both, their outputs summed
(Gemma 4 26B-A4B); none: the layer has no FFN (Nemotron-H's Mamba and attention blocks)."""


class Heads(NamedTuple):
    """The head geometry of one kind of attention layer."""

    heads: int
    """Query heads."""
    kv_heads: int
    """Key/value heads."""
    head_dim: int
    """Elements per query/key head."""
    v_head_dim: int
    """Elements per value head (MiMo-V2: 128 beside 192-wide keys)."""
    k_eq_v: bool = False
    """Keys double as values: no v_proj, one cached tensor (Gemma 4 global layers, attention_k_eq_v)."""


class LayerKind(NamedTuple):
    """What a decoder layer is, for pricing: every layer of one kind costs the same."""

    ffn: str
    """One of FFN_KINDS."""
    attention: str = "full"
    """One of ATTENTION_SPANS."""
    span: int = 0
    """Window, chunk or top-k length, tokens (0 for full attention and the state mixers)."""

    @property
    def label(self) -> str:
        """'dense', 'moe', 'dense sliding 4096', 'moe chunked 8192', 'moe sparse 2048', 'dense linear',
        'mamba' (a mixer without FFN), 'attention', 'moe only' (an FFN without mixer)."""
        if self.ffn == "none":
            return "attention" if self.attention == "full" else self.attention
        if self.attention == "none":
            return f"{self.ffn} only"
        if self.attention == "full":
            return self.ffn
        return f"{self.ffn} {self.attention}" + (f" {self.span}" if self.span else "")


def attention_keys(kind: LayerKind, context, phase: str):
    """Keys one query attends over, as an array broadcast like `context`.

    decode: `context` tokens are cached; the new token attends over all of them (full), the last
        `span` (sliding: min(context, span)) or the cached tokens of its own chunk (chunked:
        context mod span; a token that opens a chunk sees only itself).
    prefill: a causal prompt of P = `context` tokens; the mean over its queries. Query i sees
        i + 1 keys (full: (P + 1) / 2); min(i + 1, W) in a window or top-k W, so the first m = min(P, W)
        queries add m (m + 1) / 2 and the rest W each; within chunks of S tokens, each of the
        n = floor(P / S) whole chunks adds S (S + 1) / 2 and the last r = P - n S tokens r (r + 1) / 2.
    """
    if phase == "decode":
        if kind.attention in ("sliding", "sparse"):  # a window, or the indexer's top-k
            return np.minimum(context, kind.span)
        if kind.attention == "chunked":
            return np.mod(context, kind.span)
        return context
    if kind.attention in ("sliding", "sparse"):
        m = np.minimum(context, kind.span)
        return (m * (m + 1) / 2 + (context - m) * kind.span) / context
    if kind.attention == "chunked":
        whole = np.floor(context / kind.span)
        rest = context - whole * kind.span
        return (whole * kind.span * (kind.span + 1) / 2 + rest * (rest + 1) / 2) / context
    return (context + 1) / 2


def cached_tokens(kind: LayerKind, context):
    """Tokens of one sequence this layer caches once it holds `context` tokens: all of them (full;
    sparse, whose indexer scores every cached token), at most `span` for a window or a chunk (a
    chunk fills up to `span` before it is dropped, so a sequence growing to `context` needs
    min(context, span)), none for a state mixer or a layer without attention (a state is per
    sequence, not per token: `params.state_bytes_per_sequence`)."""
    if kind.attention in ("full", "sparse"):
        return context
    if kind.attention in (*STATE_SPANS, "none"):
        return 0.0 * context
    return np.minimum(context, kind.span)


__all__ = ["ATTENTION_SPANS", "FFN_KINDS", "Heads", "LayerKind", "STATE_SPANS", "attention_keys", "cached_tokens"]
