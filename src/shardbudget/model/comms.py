"""The collectives a parallel plan inserts into a step, and the one function that sizes them.

Message bytes are as nccl-tests' "size" column: the per-rank buffer for all-reduce and all-to-all
(each rank's send buffer), the whole gathered / scattered buffer for all-gather and
reduce-scatter, the message for send/recv. Every TP message is `hidden_message_bytes`: the planner,
`compare`, `explain` and the figures call it too, so a decode all-reduce has one size everywhere.
`tokens` may be a numpy array (the step model prices a whole batch grid at once).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..comm.op import CollectiveOp
from ..dtypes import dtype_bytes
from .config import ModelConfig
from .layers import LayerKind
from .plan import check_amount, check_degree, check_pp, check_sharding, layer_kind

GROUPS = ("tp", "ep", "pp")
AR, RS, AG, A2A, P2P = (
    CollectiveOp.ALL_REDUCE,
    CollectiveOp.REDUCE_SCATTER,
    CollectiveOp.ALL_GATHER,
    CollectiveOp.ALL_TO_ALL,
    CollectiveOp.SEND_RECV,
)


@dataclass(frozen=True)
class CollectiveCall:
    """A collective a plan inserts, `count` times per layer (or per step, for the head and pp)."""

    op: CollectiveOp
    msg_bytes: object
    """Bytes per call as nccl-tests' "size" (see the module docstring); float or array."""
    group: str
    """Which parallel group runs it: tp, ep or pp (ep = tp here: expert ranks are the TP group)."""
    count: int = 1


def hidden_message_bytes(cfg: ModelConfig, tokens, act_dtype: str = "bf16"):
    """The hidden states of `tokens` tokens: tokens x hidden x activation bytes. The size of every
    TP all-reduce (per rank) and of every pipeline-stage send."""
    return tokens * cfg.hidden_size * dtype_bytes(act_dtype)


def dispatch_bytes(cfg: ModelConfig, tokens, ep: int, act_dtype: str = "bf16"):
    """One rank's all-to-all send buffer for MoE dispatch (or combine): its tokens/ep tokens (tokens
    spread evenly over the ep ranks, as with sequence parallelism or data-parallel attention), each
    copied to k experts."""
    return tokens * cfg.experts_per_token * cfg.hidden_size * dtype_bytes(act_dtype) / ep


def _tp_reductions(count: int, msg_bytes, sequence_parallel: bool) -> list[CollectiveCall]:
    if not count:
        return []
    if sequence_parallel:  # all-reduce = reduce-scatter + all-gather of the same total size
        return [CollectiveCall(RS, msg_bytes, "tp", count), CollectiveCall(AG, msg_bytes, "tp", count)]
    return [CollectiveCall(AR, msg_bytes, "tp", count)]


def collectives_for_layer(
    cfg: ModelConfig,
    layer: int | str | LayerKind,
    *,
    tokens,
    tp: int,
    ep: int = 1,
    act_dtype: str = "bf16",
    sequence_parallel: bool = False,
    attn_dp: int = 1,
) -> list[CollectiveCall]:
    """The collectives one decoder layer inserts per step.

    tp > 1: the row-parallel O projection and MLP down projection leave partial sums, so each is
    followed by an all-reduce of tokens x hidden x act_bytes (per rank). With sequence_parallel each
    becomes a reduce-scatter + all-gather pair of that total size.
    MoE layer with ep > 1 and tensor-parallel attention: every rank already holds every token (the
    attention all-reduce left them there), so each runs its own experts on the tokens routed to them
    and one all-reduce sums the experts' outputs with the shared experts' partial sums: the
    attention and MoE all-reduces, no all-to-all. That is what the engines run by default: vLLM's
    FusedMoE reduces its results over the TP group unless DP ranks need an all-to-all backend,
    TensorRT-LLM's EP8/TP8 MoE ends in a local reduction and one all-reduce (its DeepSeek-R1 B200
    blog, module 13), SGLang without DeepEP likewise. An EP group wider than the TP group (ep > tp)
    spans ranks that hold other tokens: its MoE layers dispatch and combine by all-to-all (below),
    with the tp all-reduces of attention and of tp-sharded shared experts. DeepSeek's dense first
    layers are dense layers.
    Data-parallel attention (attn_dp = tp): each rank holds only its own sequences, so MoE layers
    dispatch tokens to their experts' ranks and combine them back, an all-to-all each of
    `dispatch_bytes`; dense layers gather every rank's tokens for the tp-sharded MLP and scatter the
    sums back.
    """
    kind = layer_kind(cfg, layer)
    tp_attn = check_sharding(cfg, tp=tp, ep=ep, attn_dp=attn_dp)
    check_amount("tokens", tokens, minimum=0, strict=True)
    hidden = hidden_message_bytes(cfg, tokens, act_dtype)
    if kind.ffn not in ("dense", "moe") or kind.attention == "none":
        return _hybrid_collectives(
            cfg,
            kind,
            tokens=tokens,
            tp=tp,
            ep=ep,
            act_dtype=act_dtype,
            sequence_parallel=sequence_parallel,
            data_parallel=attn_dp > 1 and tp_attn == 1,
        )
    if attn_dp > 1 and tp_attn == 1:
        if kind.ffn == "moe":
            return [CollectiveCall(A2A, dispatch_bytes(cfg, tokens, ep, act_dtype), "ep", 2)]
        return [CollectiveCall(AG, hidden, "tp"), CollectiveCall(RS, hidden, "tp")]
    if kind.ffn == "moe" and ep > tp:  # expert ranks beyond the TP group hold other tokens
        reductions = (1 + bool(cfg.num_shared_experts)) if tp > 1 else 0
        return _tp_reductions(reductions, hidden, sequence_parallel) + [
            CollectiveCall(A2A, dispatch_bytes(cfg, tokens, ep, act_dtype), "ep", 2)
        ]  # dispatch + combine
    return _tp_reductions(2 if tp > 1 else 0, hidden, sequence_parallel)


def _hybrid_collectives(
    cfg: ModelConfig,
    kind: LayerKind,
    *,
    tokens,
    tp: int,
    ep: int,
    act_dtype: str,
    sequence_parallel: bool,
    data_parallel: bool,
) -> list[CollectiveCall]:
    """Layers with a mixer or an FFN alone (Nemotron-H blocks) or with a dense MLP beside the experts
    (Gemma 4): one TP all-reduce per row-parallel output that a norm follows. A Gated DeltaNet or
    Mamba-2 mixer's out_proj is row-parallel like attention's o_proj, so it inserts the same one.
    The experts dispatch and combine by all-to-all where their ranks hold other tokens (ep > tp,
    or data-parallel attention); a dense MLP then gathers the tokens and scatters the sums."""
    hidden = hidden_message_bytes(cfg, tokens, act_dtype)
    a2a = [CollectiveCall(A2A, dispatch_bytes(cfg, tokens, ep, act_dtype), "ep", 2)]
    if data_parallel:
        gather = [CollectiveCall(AG, hidden, "tp"), CollectiveCall(RS, hidden, "tp")]
        return (gather if "dense" in kind.ffn else []) + (a2a if "moe" in kind.ffn else [])
    reductions = int(kind.attention != "none") + int("dense" in kind.ffn)
    calls = []
    if "moe" in kind.ffn:
        experts_apart = ep > tp
        reductions += bool(cfg.num_shared_experts) if experts_apart else 1
        calls = a2a if experts_apart else []
    return _tp_reductions(reductions if tp > 1 else 0, hidden, sequence_parallel) + calls


def pp_collectives(cfg: ModelConfig, *, tokens, pp: int, act_dtype: str = "bf16") -> list[CollectiveCall]:
    """Per step: the hidden states cross each of the pp - 1 stage boundaries once (send/recv of
    tokens x hidden x act_bytes)."""
    check_pp(cfg, pp)
    check_amount("tokens", tokens, minimum=0, strict=True)
    if pp == 1:
        return []
    return [CollectiveCall(P2P, hidden_message_bytes(cfg, tokens, act_dtype), "pp", pp - 1)]


def lm_head_collectives(cfg: ModelConfig, *, tokens, tp: int, act_dtype: str = "bf16") -> list[CollectiveCall]:
    """vLLM gathers each rank's vocab_size/tp slice of the logits (`tensor_model_parallel_gather`, or
    all-gather on some platforms): priced as an all-gather whose nccl-tests size is the full logits
    buffer, tokens x vocab_size x act_bytes."""
    check_degree("tp", tp)  # vocabulary-parallel: any tp splits the vocabulary
    check_amount("tokens", tokens, minimum=0, strict=True)
    return [CollectiveCall(AG, tokens * cfg.vocab_size * dtype_bytes(act_dtype), "tp")] if tp > 1 else []


def embedding_collectives(cfg: ModelConfig, *, tokens, tp: int, act_dtype: str = "bf16") -> list[CollectiveCall]:
    """The vocabulary-parallel embedding's all-reduce over tp, which sums each rank's rows."""
    check_degree("tp", tp)  # vocabulary-parallel: any tp splits the vocabulary
    check_amount("tokens", tokens, minimum=0, strict=True)
    return [CollectiveCall(AR, hidden_message_bytes(cfg, tokens, act_dtype), "tp")] if tp > 1 else []


__all__ = [
    "CollectiveCall",
    "GROUPS",
    "collectives_for_layer",
    "dispatch_bytes",
    "embedding_collectives",
    "hidden_message_bytes",
    "lm_head_collectives",
    "pp_collectives",
]
