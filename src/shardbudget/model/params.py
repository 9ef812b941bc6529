"""Parameter counts and memory per GPU: weights of the heaviest pipeline stage, and the KV cache.

Parameters are element counts; bytes come from a dtype (`shardbudget.dtypes`). The same per-rank
counts serve the model's totals (tp = 1) and each GPU's share, so the two cannot drift apart.
Batch and context may be numpy arrays: memory over a whole (batch, context) grid in one call.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import dtype_bytes
from ..errors import PlanError
from .config import ModelConfig, layer_kinds
from .layers import STATE_SPANS, Heads, LayerKind, cached_tokens
from .plan import busiest_rank_sequences, check_amount, check_pp, check_sharding, check_tp, stage_layer_counts


def kv_heads_per_gpu(cfg: ModelConfig, tp: int, heads: Heads | None = None) -> float:
    """KV heads each rank holds: K/tp, or 1 when tp > K (each head replicated tp/K times); `heads`:
    the geometry of one kind of layer (`ModelConfig.heads_for`), default the config's top-level one."""
    return max((cfg.num_kv_heads if heads is None else heads.kv_heads) / tp, 1.0)


def qkv_width_per_gpu(cfg: ModelConfig, g: Heads, tp: int) -> float:
    """Fused QKV output columns on one rank: queries (twice, with Qwen3.5's output gate), keys, and
    values unless keys double as them (Gemma 4 K = V)."""
    heads, kv = g.heads / tp, kv_heads_per_gpu(cfg, tp, g)
    if g.v_head_dim == g.head_dim and not g.k_eq_v and not cfg.attn_output_gate:
        return (heads + 2 * kv) * g.head_dim
    q = heads * g.head_dim * (2 if cfg.attn_output_gate else 1)
    return q + kv * g.head_dim + (0 if g.k_eq_v else kv * g.v_head_dim)


def _norm_params(cfg: ModelConfig, kind: LayerKind) -> float:
    """The layer's RMSNorms (replicated): two, four in Gemma, one per Nemotron-H block; Gemma 4's
    dense+MoE layers add the experts' pre-norm and both branches' post-norms."""
    extra = 3 if kind.ffn == "dense+moe" else 0
    return (cfg.family.norms_per_layer + extra) * cfg.hidden_size


def _attention_params_per_gpu(cfg: ModelConfig, tp: int, kind: LayerKind = LayerKind("dense")) -> float:
    """The token mixer's weights on one rank, plus the layer's RMSNorms (replicated)."""
    norms = _norm_params(cfg, kind)
    if kind.attention in STATE_SPANS or kind.attention == "none":
        return _state_mixer_params_per_gpu(cfg, kind, tp) + norms
    if cfg.is_mla:
        return _mla_params_per_gpu(cfg, tp) + norms + (indexer_params(cfg) if kind.attention == "sparse" else 0)
    h, g = cfg.hidden_size, cfg.heads_for(kind)
    heads, d = g.heads / tp, g.head_dim
    qkv_width = qkv_width_per_gpu(cfg, g, tp)  # fused QKV output columns per rank
    params = h * qkv_width + heads * g.v_head_dim * h  # QKV (column-) + O (row-parallel)
    params += qkv_width if cfg.qkv_bias else 0
    params += h if cfg.o_bias else 0  # added once after the reduction: replicated
    params += 2 * d if cfg.qk_norm and cfg.family.qk_norm == "rms" else 0  # q_norm, k_norm: replicated
    params += heads if cfg.family.attention_sinks else 0  # one sink logit per local head
    return params + norms


def indexer_params(cfg: ModelConfig) -> float:
    """DSA's lightning indexer, replicated on every rank: wq_b (q_lora_rank -> heads x head_dim), wk
    (hidden -> head_dim), k_norm (a LayerNorm: weight and bias) and weights_proj (hidden -> heads)."""
    h, ih, idim = cfg.hidden_size, cfg.index_heads, cfg.index_head_dim
    return (cfg.q_lora_rank or h) * ih * idim + h * idim + 2 * idim + h * ih


def _state_mixer_params_per_gpu(cfg: ModelConfig, kind: LayerKind, tp: int) -> float:
    """Gated DeltaNet (Qwen3NextGatedDeltaNet) or Mamba-2 (NemotronHMamba2Mixer) weights on one rank;
    every projection's heads split over tp (in column-, out row-parallel), the short convolution's
    channels with them."""
    h = cfg.hidden_size
    if kind.attention == "linear":
        key, value = cfg.linear_key_heads * cfg.linear_key_head_dim, cfg.linear_value_heads * cfg.linear_value_head_dim
        in_proj = h * (2 * key + 2 * value + 2 * cfg.linear_value_heads)  # q, k, v, z (gate) and b, a per value head
        conv = (2 * key + value) * cfg.conv_kernel  # depthwise over q, k, v
        per_head = 2 * cfg.linear_value_heads  # A_log, dt_bias
        return (in_proj + conv + per_head + value * h) / tp + cfg.linear_value_head_dim  # + out_proj; norm
    if kind.attention == "mamba":
        inner, bc = cfg.mamba_heads * cfg.mamba_head_dim, 2 * cfg.mamba_groups * cfg.ssm_state_size
        in_proj = h * (2 * inner + bc + cfg.mamba_heads)  # x, z, B, C, dt
        conv = (inner + bc) * (cfg.conv_kernel + 1)  # depthwise weights + bias
        return (in_proj + conv + 3 * cfg.mamba_heads + inner + inner * h) / tp  # A_log, D, dt_bias; norm; out
    return 0.0


def _mla_params_per_gpu(cfg: ModelConfig, tp: int) -> float:
    h, heads, q_lora = cfg.hidden_size, cfg.num_heads / tp, cfg.q_lora_rank
    qk_dim = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
    latent = cfg.kv_lora_rank + cfg.qk_rope_head_dim
    # q: down-projection + its norm (replicated), then the column-parallel up-projection.
    q = h * q_lora + q_lora + q_lora * heads * qk_dim if q_lora else h * heads * qk_dim
    # kv: kv_a_proj_with_mqa + kv_a_layernorm (replicated), kv_b_proj = W_UK and W_UV (column-par.).
    kv = h * latent + cfg.kv_lora_rank + cfg.kv_lora_rank * heads * (cfg.qk_nope_head_dim + cfg.v_head_dim)
    return q + kv + heads * cfg.v_head_dim * h  # + O (row-parallel)


def expert_params(cfg: ModelConfig) -> float:
    """One routed expert: gate, up and down projections (3 x hidden x width; up and down only for
    relu2 experts), plus gpt-oss's biases (2 x width on gate/up, hidden on down)."""
    h, width = cfg.hidden_size, cfg.moe_intermediate_size
    return cfg.family.mlp_matrices * h * width + ((2 * width + h) if cfg.family.expert_bias else 0)


def _routed_params_per_gpu(cfg: ModelConfig, tp: int, ep: int) -> float:
    """The routed experts on one rank: E/ep whole experts, or all E sharded over tp (gate/up columns
    and their biases split, the down projection's bias replicated)."""
    if ep > 1:
        return cfg.num_experts / ep * expert_params(cfg)
    replicated = cfg.hidden_size if cfg.family.expert_bias else 0
    return cfg.num_experts * ((expert_params(cfg) - replicated) / tp + replicated)


def _ffn_params_per_gpu(cfg: ModelConfig, ffn: str, tp: int, ep: int) -> tuple[float, float]:
    """(non-expert, routed-expert) FFN parameters of one layer on one rank; `ffn` is dense or moe."""
    h = cfg.hidden_size
    if ffn == "none":
        return 0.0, 0.0
    if ffn == "dense":
        return cfg.family.mlp_matrices * h * cfg.intermediate_size / tp, 0.0  # gate, up, down
    dense = cfg.family.mlp_matrices * h * cfg.intermediate_size / tp if ffn == "dense+moe" else 0.0
    return router_params(cfg) + shared_params(cfg) / tp + dense, _routed_params_per_gpu(cfg, tp, ep)


def router_params(cfg: ModelConfig) -> float:
    return cfg.num_experts * cfg.hidden_size + (cfg.num_experts if cfg.router_bias else 0)


def shared_params(cfg: ModelConfig) -> float:
    # Qwen2-MoE's one-output shared_expert_gate (hidden weights per layer) is left out: < 0.01 %.
    return cfg.family.mlp_matrices * cfg.hidden_size * cfg.num_shared_experts * cfg.shared_expert_intermediate_size


def total_params(cfg: ModelConfig) -> int:
    """Every parameter of the model: embedding, layers, final norm and (untied) LM head."""
    layers = sum(
        n * (_attention_params_per_gpu(cfg, 1, kind) + sum(_ffn_params_per_gpu(cfg, kind.ffn, 1, 1)))
        for kind, n in layer_kinds(cfg).items()
    )
    matrix = cfg.vocab_size * cfg.hidden_size
    return round(layers + matrix * (1 if cfg.tie_embeddings else 2) + cfg.hidden_size)


def active_params(cfg: ModelConfig, *, include_embedding: bool = True) -> int:
    """Parameters one token touches: all but the routed experts it is not sent to.

    The LM head always counts. `include_embedding=False` drops the (untied) embedding table, whose
    one looked-up row costs no FLOPs. Vendors differ: DeepSeek-V3's "37B activated" is 36.6B
    without the embedding (README_WEIGHTS.md), as is gpt-oss's 5.1B; Mistral's 12.9B for
    Mixtral-8x7B and Meta's 17B for Llama 4 Scout include it.
    """
    h = cfg.hidden_size
    dense = cfg.family.mlp_matrices * h * cfg.intermediate_size
    moe = router_params(cfg) + shared_params(cfg) + cfg.experts_per_token * expert_params(cfg)
    active_ffn = {"dense": dense, "moe": moe, "dense+moe": dense + moe, "none": 0.0}
    layers = sum(
        n * (_attention_params_per_gpu(cfg, 1, kind) + active_ffn[kind.ffn]) for kind, n in layer_kinds(cfg).items()
    )
    matrix = cfg.vocab_size * h
    embedding = matrix if include_embedding and not cfg.tie_embeddings else 0
    return round(layers + matrix + embedding + h)


def weight_bytes_per_gpu(
    cfg: ModelConfig,
    *,
    tp: int,
    pp: int = 1,
    ep: int = 1,
    weight_dtype: str = "bf16",
    attn_dp: int = 1,
    expert_dtype: str | None = None,
    head_dtype: str | None = None,
    weight_scale_bytes: float = 0.0,
    expert_scale_bytes: float | None = None,
) -> float:
    """Weight bytes on the most loaded GPU of the plan (the heaviest pipeline stage).

    Counts replicated KV heads when tp > num_kv_heads, replicated norms / router / MLA
    down-projections, the vocabulary-parallel embedding on the first stage and the LM head and final
    norm on the last (a tied LM head needs its own copy there when pp > 1). The routed experts are in
    `expert_dtype`, the embedding and LM head in `head_dtype` (each None: `weight_dtype`), everything
    else in `weight_dtype` (gpt-oss: bf16 attention, MXFP4 experts; an FP8 checkpoint keeps its
    embedding and LM head in bf16). Norms and routers stored in bf16 beside FP8 weights: < 0.01 %.
    Each quantized weight adds its scales' share: `weight_scale_bytes`, and `expert_scale_bytes` for
    the routed experts (None: the same; `quant.Checkpoint.scale_bytes`, Kimi-K2.5's experts 0.0625).
    """
    check_pp(cfg, pp)
    e_scales = weight_scale_bytes if expert_scale_bytes is None else expert_scale_bytes
    w, e = dtype_bytes(weight_dtype) + weight_scale_bytes, dtype_bytes(expert_dtype or weight_dtype) + e_scales
    tp_attn = check_sharding(cfg, tp=tp, ep=ep, attn_dp=attn_dp)  # data-parallel attention replicates its weights
    shared_extra = shared_params(cfg) * (1 - 1 / tp) if tp_attn != tp else 0.0  # and the shared experts'
    per_layer: dict[LayerKind, float] = {}
    for kind in layer_kinds(cfg):
        other, routed = _ffn_params_per_gpu(cfg, kind.ffn, tp, ep)
        other += _attention_params_per_gpu(cfg, tp_attn, kind) + (shared_extra if "moe" in kind.ffn else 0.0)
        per_layer[kind] = other * w + routed * e  # bytes of one layer on one rank
    # bytes per rank of the vocabulary-parallel embedding / LM head
    vocab_shard = cfg.vocab_size * cfg.hidden_size / tp * dtype_bytes(head_dtype or weight_dtype)
    heaviest, start = 0.0, 0
    for stage, count in enumerate(stage_layer_counts(cfg.num_layers, pp)):
        kinds = layer_kinds(cfg, start, start + count)
        layer_bytes = sum(n * per_layer[kind] for kind, n in kinds.items())
        if stage == 0:
            layer_bytes += vocab_shard
        if stage == pp - 1:
            shares_embedding = cfg.tie_embeddings and pp == 1
            layer_bytes += cfg.hidden_size * w + (0.0 if shares_embedding else vocab_shard)
        heaviest, start = max(heaviest, layer_bytes), start + count
    return heaviest


def _kv_elems_per_token_layer(cfg: ModelConfig, tp: int) -> float:
    """Cached elements per token per layer on one rank (a model whose layers all cache alike)."""
    if cfg.is_mla:
        return cfg.kv_lora_rank + cfg.qk_rope_head_dim  # the latent; every rank keeps all of it
    return 2 * kv_heads_per_gpu(cfg, tp) * cfg.head_dim  # K and V of this rank's (replicated) heads


INDEXER_KEY_BYTES_PER_ELEM = 1.0 + 4.0 / 128
"""DSA's indexer key cache: FP8 keys with one fp32 scale per 128 elements, whatever the KV dtype
(vLLM DeepseekV32IndexerCache: index_head_dim + index_head_dim // 128 * 4 bytes per token)."""


def kv_bytes_per_token_layer(cfg: ModelConfig, kind: LayerKind, tp: int, kv_dtype: str) -> float:
    """Cache bytes one token adds to one layer of this kind on one rank: K and V of the rank's
    (replicated) heads, K alone where keys double as values (Gemma 4 global layers), MLA's latent
    (replicated) plus DSA's indexer key, nothing for a state mixer or a layer without attention."""
    if kind.attention in STATE_SPANS or kind.attention == "none":
        return 0.0
    if cfg.is_mla:
        indexer = cfg.index_head_dim * INDEXER_KEY_BYTES_PER_ELEM if kind.attention == "sparse" else 0.0
        return (cfg.kv_lora_rank + cfg.qk_rope_head_dim) * dtype_bytes(kv_dtype) + indexer
    g = cfg.heads_for(kind)
    per_head = g.head_dim + (0 if g.k_eq_v else g.v_head_dim)
    return kv_heads_per_gpu(cfg, tp, g) * per_head * dtype_bytes(kv_dtype)


def state_bytes_per_layer(cfg: ModelConfig, kind: LayerKind, tp: int, kv_dtype: str) -> float:
    """Bytes of one sequence's fixed-size state in one layer of this kind on one rank, whatever its
    length: the recurrent state in `ModelConfig.state_dtype` (else the KV dtype) and the short
    convolution's last conv_kernel - 1 inputs in the KV dtype; heads and channels split over tp.

    Gated DeltaNet: value_heads x key_dim x value_dim, conv over 2 x key + value channels
    (vLLM mamba_utils gated_delta_net_state_shape). Mamba-2: heads x head_dim x state, conv over
    inner + 2 x groups x state channels (mamba2_state_shape)."""
    state_b = dtype_bytes(cfg.state_dtype or kv_dtype)
    if kind.attention == "linear":
        recurrent = cfg.linear_value_heads * cfg.linear_key_head_dim * cfg.linear_value_head_dim
        channels = (
            2 * cfg.linear_key_heads * cfg.linear_key_head_dim + cfg.linear_value_heads * cfg.linear_value_head_dim
        )
    elif kind.attention == "mamba":
        recurrent = cfg.mamba_heads * cfg.mamba_head_dim * cfg.ssm_state_size
        channels = cfg.mamba_heads * cfg.mamba_head_dim + 2 * cfg.mamba_groups * cfg.ssm_state_size
    else:
        return 0.0
    return (recurrent * state_b + (cfg.conv_kernel - 1) * channels * dtype_bytes(kv_dtype)) / tp


def _uniform_cache(cfg: ModelConfig) -> bool:
    """Every layer caches the same bytes per token (the models before hybrids: one formula)."""
    return (
        not cfg.has_state
        and cfg.sliding_heads is None
        and cfg.full_heads is None
        and not cfg.index_topk
        and (cfg.is_mla or cfg.v_head_dim in (0, cfg.head_dim))
        and not cfg.ffn_only_layers
    )


def kv_bytes_per_token(cfg: ModelConfig, kv_dtype: str = "bf16") -> float:
    """KV-cache bytes one token adds to the whole (unsharded) model while it lies inside every
    window (a sliding-window or chunked layer stops adding once its window is full: see
    `kv_cache_bytes_per_gpu`). Linear-attention and Mamba layers add none: their state is per
    sequence (`state_bytes_per_sequence`).

    GQA: 2 (K and V) x layers x kv_heads x head_dim x bytes; MLA: layers x (kv_lora_rank +
    qk_rope_head_dim) x bytes, plus DSA's FP8 indexer key; per kind where kinds differ.
    """
    if _uniform_cache(cfg):
        return cfg.num_layers * _kv_elems_per_token_layer(cfg, 1) * dtype_bytes(kv_dtype)
    return sum(n * kv_bytes_per_token_layer(cfg, kind, 1, kv_dtype) for kind, n in layer_kinds(cfg).items())


def state_bytes_per_sequence(cfg: ModelConfig, kv_dtype: str = "bf16", *, tp: int = 1, pp: int = 1) -> float:
    """Fixed-size state bytes one sequence holds on the most loaded GPU (tp = pp = 1: the whole
    model): the linear-attention and Mamba layers' states, whatever the context."""
    heaviest, start = 0.0, 0
    for count in stage_layer_counts(cfg.num_layers, pp):
        kinds = layer_kinds(cfg, start, start + count)
        heaviest = max(heaviest, sum(n * state_bytes_per_layer(cfg, kind, tp, kv_dtype) for kind, n in kinds.items()))
        start += count
    return heaviest


def _stage_cached_tokens(cfg: ModelConfig, context, pp: int):
    """Cached tokens of one sequence summed over the layers of the heaviest stage (an array like
    `context`): full-attention layers cache all `context` tokens, windowed ones at most their span."""
    heaviest, start = None, 0
    for count in stage_layer_counts(cfg.num_layers, pp):
        kinds = layer_kinds(cfg, start, start + count)
        tokens = sum(n * cached_tokens(kind, context) for kind, n in kinds.items())
        heaviest, start = tokens if heaviest is None else np.maximum(heaviest, tokens), start + count
    return heaviest


def _stage_cache_bytes(cfg: ModelConfig, context, tp: int, pp: int, kv_dtype: str):
    """One sequence's cache bytes on the heaviest stage, kind by kind: its cached tokens times the
    kind's bytes per token, plus the kind's fixed state (an array like `context`)."""
    heaviest, start = None, 0
    for count in stage_layer_counts(cfg.num_layers, pp):
        stage = 0.0
        for kind, n in layer_kinds(cfg, start, start + count).items():
            per_token = kv_bytes_per_token_layer(cfg, kind, tp, kv_dtype)
            stage = stage + n * (
                cached_tokens(kind, context) * per_token + state_bytes_per_layer(cfg, kind, tp, kv_dtype)
            )
        heaviest, start = stage if heaviest is None else np.maximum(heaviest, stage), start + count
    return heaviest


def kv_cache_bytes_per_gpu(
    cfg: ModelConfig, *, batch: int, context: float, tp: int, pp: int = 1, kv_dtype: str = "bf16", attn_dp: int = 1
) -> float:
    """KV-cache (and state) bytes on the most loaded GPU for `batch` sequences of `context` tokens
    each (with data-parallel attention each GPU caches only its own batch / attn_dp sequences, whole
    heads). Sliding-window and chunked layers cache at most their window (Mistral-7B v0.1: 4096
    tokens); linear-attention and Mamba layers hold a fixed state per sequence instead (Qwen3.5-27B
    at 128k: 16 full-attention layers' KV plus 48 states, a quarter of a full-attention model's)."""
    if attn_dp > 1:
        if attn_dp != tp:
            raise PlanError(f"data-parallel attention needs dp = tp; got dp {attn_dp}, tp {tp}")
        busiest = busiest_rank_sequences(batch, attn_dp)  # whole sequences per rank
        return kv_cache_bytes_per_gpu(cfg, batch=busiest, context=context, tp=1, pp=pp, kv_dtype=kv_dtype)
    check_tp(cfg, tp)
    check_pp(cfg, pp)
    check_amount("batch", batch, minimum=0, strict=False)
    check_amount("context", context, minimum=0, strict=False)
    if not _uniform_cache(cfg):
        return batch * _stage_cache_bytes(cfg, context, tp, pp, kv_dtype)
    # bytes per GPU: batch * (cached tokens summed over the stage's layers) * elements per token per layer * dtype
    return batch * _stage_cached_tokens(cfg, context, pp) * _kv_elems_per_token_layer(cfg, tp) * dtype_bytes(kv_dtype)


def memory_bytes_per_gpu(
    cfg: ModelConfig,
    *,
    tp: int,
    pp: int = 1,
    ep: int = 1,
    attn_dp: int = 1,
    batch,
    context,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    workspace_bytes: float = 0.0,
    expert_dtype: str | None = None,
    head_dtype: str | None = None,
    weight_scale_bytes: float = 0.0,
    expert_scale_bytes: float | None = None,
):
    """Weights + KV cache for batch x context + a fixed workspace, bytes on the most loaded GPU;
    an array when batch or context is one (they broadcast). `expert_dtype` / `head_dtype` and the
    scales as in `weight_bytes_per_gpu` (`work.Precision.memory_dtypes` gives them all for a precision)."""
    weights = weight_bytes_per_gpu(
        cfg,
        tp=tp,
        pp=pp,
        ep=ep,
        weight_dtype=weight_dtype,
        attn_dp=attn_dp,
        expert_dtype=expert_dtype,
        head_dtype=head_dtype,
        weight_scale_bytes=weight_scale_bytes,
        expert_scale_bytes=expert_scale_bytes,
    )
    kv = kv_cache_bytes_per_gpu(cfg, batch=batch, context=context, tp=tp, pp=pp, kv_dtype=kv_dtype, attn_dp=attn_dp)
    return weights + kv + workspace_bytes


__all__ = [
    "INDEXER_KEY_BYTES_PER_ELEM",
    "active_params",
    "expert_params",
    "kv_bytes_per_token",
    "kv_bytes_per_token_layer",
    "kv_cache_bytes_per_gpu",
    "kv_heads_per_gpu",
    "memory_bytes_per_gpu",
    "qkv_width_per_gpu",
    "router_params",
    "shared_params",
    "state_bytes_per_layer",
    "state_bytes_per_sequence",
    "total_params",
    "weight_bytes_per_gpu",
]
