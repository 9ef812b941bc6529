"""Layer kinds and how far each one's attention reaches.

A `LayerKind` is what makes two decoder layers cost the same: the FFN (dense MLP or MoE) and the
attention span (the whole context, a sliding window of the last `span` tokens, or the current
chunk of `span` tokens). The step model prices each kind once and multiplies by its count.

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

ATTENTION_SPANS = ("full", "sliding", "chunked")
"""full: every earlier token; sliding: the last `span` tokens (Mistral, Gemma, gpt-oss); chunked:
the tokens of the current `span`-token chunk (Llama 4 RoPE layers, `attention_chunk_size`)."""


class LayerKind(NamedTuple):
    """What a decoder layer is, for pricing: every layer of one kind costs the same."""

    ffn: str
    """dense (a gated MLP) or moe (routed experts)."""
    attention: str = "full"
    """One of ATTENTION_SPANS."""
    span: int = 0
    """Window or chunk length, tokens (0 for full attention)."""

    @property
    def label(self) -> str:
        """'dense', 'moe', 'dense sliding 4096', 'moe chunked 8192'."""
        return self.ffn if self.attention == "full" else f"{self.ffn} {self.attention} {self.span}"


def attention_keys(kind: LayerKind, context, phase: str):
    """Keys one query attends over, as an array broadcast like `context`.

    decode: `context` tokens are cached; the new token attends over all of them (full), the last
        `span` (sliding: min(context, span)) or the cached tokens of its own chunk (chunked:
        context mod span; a token that opens a chunk sees only itself).
    prefill: a causal prompt of P = `context` tokens; the mean over its queries. Query i sees
        i + 1 keys (full: (P + 1) / 2); min(i + 1, W) in a window W, so the first m = min(P, W)
        queries add m (m + 1) / 2 and the rest W each; within chunks of S tokens, each of the
        n = floor(P / S) whole chunks adds S (S + 1) / 2 and the last r = P - n S tokens r (r + 1) / 2.
    """
    if phase == "decode":
        if kind.attention == "sliding":
            return np.minimum(context, kind.span)
        if kind.attention == "chunked":
            return np.mod(context, kind.span)
        return context
    if kind.attention == "sliding":
        m = np.minimum(context, kind.span)
        return (m * (m + 1) / 2 + (context - m) * kind.span) / context
    if kind.attention == "chunked":
        whole = np.floor(context / kind.span)
        rest = context - whole * kind.span
        return (whole * kind.span * (kind.span + 1) / 2 + rest * (rest + 1) / 2) / context
    return (context + 1) / 2


def cached_tokens(kind: LayerKind, context):
    """Tokens of one sequence this layer caches once it holds `context` tokens: all of them, or at
    most `span` for a window or a chunk (a chunk fills up to `span` before it is dropped, so a
    sequence growing to `context` needs min(context, span))."""
    if kind.attention == "full":
        return context
    return np.minimum(context, kind.span)


__all__ = ["ATTENTION_SPANS", "LayerKind", "attention_keys", "cached_tokens"]
