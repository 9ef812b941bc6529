"""The kernels one GPU runs in one step: FLOPs and HBM bytes per op, as plain array arithmetic.

Every `Op` is **per GPU for one step**, and a step processes `tokens` tokens: the batch size in
decode, batch x prompt length in prefill. `tokens` and `context` may be numpy arrays (batch as shape
(B, 1), context as (1, C)): each op's FLOPs and bytes then broadcast to the smallest shape they
depend on, so a weight read stays one number per batch and only attention spans the whole grid.
This module never knows about time (`step` prices the ops) nor about collectives (`comms`).

Sharding follows Megatron-LM / vLLM:
  * attention: fused QKV column-parallel, O row-parallel; query heads split over tp. When tp exceeds
    the number of KV heads, each KV head is replicated so every rank holds one (vLLM
    `QKVParallelLinear`), and the replicas are counted in weight, KV-cache and attention bytes.
  * MLP: gate/up column-parallel, down row-parallel.
  * MoE: with ep == 1 every expert is tp-sharded like a dense MLP (vLLM `FusedMoE` without expert
    parallelism); with ep > 1 each rank holds E/ep whole experts. Shared experts are always
    tp-sharded like a dense MLP. The router is replicated. Routed experts may be stored in their
    own dtype (gpt-oss: MXFP4 experts beside bf16 attention).
  * Sliding-window and chunked layers attend over at most their span (`layers.attention_keys`).
  * MLA (DeepSeek-V2/V3): down-projections replicated, up-projections column-parallel, O
    row-parallel; the latent KV cache (kv_lora_rank + rope dims per token) is replicated on every
    rank, as in vLLM's MLA backends. Decode uses the absorbed form, prefill the expanded form.
  * DSA (DeepSeek-V3.2, GLM-5): MLA attends over the index_topk tokens a lightning indexer picks;
    the indexer (replicated, as vLLM's ReplicatedLinear Indexer) scores every cached token with
    index_n_heads x index_head_dim FP8 keys.
  * Gated DeltaNet (Qwen3.5) and Mamba-2 (Nemotron-H): in_proj column-, out_proj row-parallel, the
    heads (and the short convolution's channels) split over tp; decode reads and writes each
    sequence's fixed state once, whatever the context; prefill runs the chunked scan.
  * Embedding and LM head are vocabulary-parallel.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from ..dtypes import dtype_bytes
from ..errors import PlanError
from .config import ModelConfig
from .layers import LayerKind, attention_keys
from .params import INDEXER_KEY_BYTES_PER_ELEM, kv_heads_per_gpu, qkv_width_per_gpu, router_params
from .plan import busiest_rank_sequences, check_amount, check_degree, check_ep, check_sharding, layer_kind
from .routing import busiest_rank

PHASES = ("decode", "prefill")

OP_KINDS = ("gemm", "attention", "elementwise")

_FULL = LayerKind("dense")  # MLA models attend over the whole context


@dataclass(frozen=True)
class Op:
    """One kernel's work on one GPU for one step."""

    name: str
    flops: float | np.ndarray
    """Floating-point operations on this GPU (a multiply-add is 2); an array over a (batch, context)
    grid when the step's tokens or context are arrays."""
    bytes: float | np.ndarray
    """HBM bytes this GPU moves: weights read + activations read/written + KV cache read/written.
    Each op is assumed to read its inputs from and write its outputs to HBM (no fusion), except
    softmax, which flash-attention style kernels keep on chip."""
    kind: str
    """One of OP_KINDS: gemm, attention or elementwise."""
    kernel: str | None = None
    """The kernel it runs as, an op kind of catalog/kernels.toml (dense_gemm, grouped_moe_gemm,
    rmsnorm, ...), whose floor and efficiencies price it; None: priced by the step's defaults."""
    launches: bool = True
    """False where the work runs inside the previous kernel (softmax inside flash attention)."""
    after_allreduce: bool = False
    """A residual add or RMSNorm right after a TP all-reduce: engines that fuse all-reduce +
    residual + RMSNorm (TensorRT-LLM by default) run it inside the all-reduce kernel."""
    active_experts: float | np.ndarray = 0.0
    """Grouped MoE GEMMs: the experts that receive tokens (their floor grows with them)."""
    in_fused_moe: bool = False
    """Routing, align, expert activation, combine: inside the experts' call where the engine fuses them."""
    shape_nk: tuple[float, float] = (0.0, 0.0)
    """GEMMs: the weight shard's (N, K), for tile quantisation."""
    quantized: bool = True
    """GEMMs: runs in the step's GEMM precision. False: kept in the activation dtype whatever the
    checkpoint (the MoE router: vLLM's gate is a ReplicatedLinear built with quant_config=None)."""
    norm_input: bool = False
    """Dense GEMMs whose input a norm or activation of the same compiled graph writes (not attention or a
    fused-MoE call): an engine that fuses FP8 quantisation into that producer runs no quant kernel."""


class _Bytes(NamedTuple):
    w: float  # bytes per weight element, its scales' share included
    a: float  # bytes per activation element
    kv: float  # bytes per KV-cache element
    e: float = 0.0  # bytes per routed-expert weight element, the same


def _expert_gemm(name: str, *, m: float, k: float, n: float, b: _Bytes, weight_elems: float, active_experts) -> Op:
    """A grouped expert GEMM: as `_gemm`, with the weights in the experts' dtype."""
    return Op(
        name,
        2.0 * m * n * k,
        weight_elems * b.e + (m * k + m * n) * b.a,
        "gemm",
        kernel="grouped_moe_gemm",
        active_experts=active_experts,
        shape_nk=(n, k),
    )


def _gemm(
    name: str, *, m: float, k: float, n: float, b: _Bytes, weight_elems: float | None = None, norm_input: bool = True
) -> Op:
    """[m, k] activations times a [k, n] weight shard. 2*m*n*k: one multiply and one add per weight
    element per row. `weight_elems` overrides k*n when only part of a stacked weight is read;
    `norm_input` False where attention writes the input (o_proj, MLA's absorbed products)."""
    weight = k * n if weight_elems is None else weight_elems
    return Op(
        name,
        2.0 * m * n * k,
        weight * b.w + (m * k + m * n) * b.a,
        "gemm",
        kernel="dense_gemm",
        shape_nk=(n, k),
        norm_input=norm_input,
    )


def _elementwise(
    name: str,
    *,
    elems: float,
    flops_per_elem: float,
    b: _Bytes,
    read_elems: float | None = None,
    weight_elems: float = 0.0,
    kernel: str | None = None,
    after_allreduce: bool = False,
) -> Op:
    """Reads `read_elems` (default: elems) activations, writes `elems`."""
    read = elems if read_elems is None else read_elems
    return Op(
        name,
        flops_per_elem * elems,
        (read + elems) * b.a + weight_elems * b.w,
        "elementwise",
        kernel=kernel,
        after_allreduce=after_allreduce,
    )


def _rms_norm(name: str, tokens: float, width: int, b: _Bytes, *, after_allreduce: bool = False) -> Op:
    # ~4 FLOPs per element: square, sum, scale by 1/rms, multiply by the weight.
    return _elementwise(
        name,
        elems=tokens * width,
        flops_per_elem=4,
        b=b,
        weight_elems=width,
        kernel="rmsnorm",
        after_allreduce=after_allreduce,
    )


def _residual(name: str, tokens: float, cfg: ModelConfig, b: _Bytes) -> Op:
    elems = tokens * cfg.hidden_size  # two reads, one write
    return _elementwise(name, elems=elems, flops_per_elem=1, b=b, read_elems=2 * elems, after_allreduce=True)


# FLOPs per output element of act(gate) * up: SiLU ~5 (exp, add, divide, two multiplies); the tanh GELU
# ~9 (cube, two multiply-adds, tanh, add, two multiplies) plus the multiply by up.
_GATE_FLOPS = {"silu": 5, "gelu_tanh": 10}


def _gated_act(name: str, elems: float, b: _Bytes, activation: str = "silu") -> Op:
    # act(gate) * up reads 2 elements and writes 1 per output element.
    return _elementwise(
        name, elems=elems, flops_per_elem=_GATE_FLOPS[activation], b=b, read_elems=2 * elems, kernel="activation"
    )


def _softmax(scores: float) -> Op:
    # ~5 FLOPs per score (max, subtract, exp, sum, scale); scores stay in SRAM, so no HBM bytes.
    return Op("softmax", 5.0 * scores, 0.0, "elementwise", launches=False)


def _gqa_ops(
    cfg: ModelConfig, *, tokens: float, context: float, tp: int, b: _Bytes, phase: str, kind: LayerKind
) -> list[Op]:
    """Llama 4's NoPE layers skip the rotary op and the qk norm priced here: < 0.1 % of a layer.
    The heads are those of this kind of layer (`ModelConfig.heads_for`)."""
    g = cfg.heads_for(kind)
    h, d = cfg.hidden_size, g.head_dim
    heads, kv_heads = g.heads / tp, kv_heads_per_gpu(cfg, tp, g)
    qkv_width = qkv_width_per_gpu(cfg, g, tp)
    bias = qkv_width if cfg.qkv_bias else 0
    ops = [_gemm("qkv_proj", m=tokens, k=h, n=qkv_width, b=b, weight_elems=h * qkv_width + bias)]
    if cfg.qk_norm:
        ops.append(
            _elementwise("qk_norm", elems=tokens * (heads + kv_heads) * d, flops_per_elem=4, b=b, kernel="rmsnorm")
        )
    # RoPE on q and k: two multiplies and an add per element.
    ops.append(_elementwise("rotary", elems=tokens * (heads + kv_heads) * d, flops_per_elem=3, b=b, kernel="rotary"))
    ops += _gqa_attention(
        cfg, tokens=tokens, context=context, heads=heads, kv_heads=kv_heads, b=b, phase=phase, kind=kind
    )
    if cfg.attn_output_gate:  # sigmoid(gate) * output, the gate computed by q_proj
        ops.append(
            _elementwise(
                "output_gate",
                elems=tokens * heads * g.v_head_dim,
                flops_per_elem=5,
                b=b,
                read_elems=2 * tokens * heads * g.v_head_dim,
            )
        )
    ops.append(
        _gemm(
            "o_proj",
            m=tokens,
            k=heads * g.v_head_dim,
            n=h,
            b=b,
            weight_elems=heads * g.v_head_dim * h + (h if cfg.o_bias else 0),
            norm_input=False,
        )
    )
    return ops


def _gqa_attention(
    cfg: ModelConfig,
    *,
    tokens: float,
    context: float,
    heads: float,
    kv_heads: float,
    b: _Bytes,
    phase: str,
    kind: LayerKind,
) -> list[Op]:
    g = cfg.heads_for(kind)
    d, dv = g.head_dim, g.v_head_dim
    # K and V of one token on this rank (replicas included); K alone where keys double as values
    kv_token_bytes = (
        2 * kv_heads * d * b.kv if dv == d and not g.k_eq_v else kv_heads * (d + (0 if g.k_eq_v else dv)) * b.kv
    )
    keys = attention_keys(kind, context, phase)  # a window / chunk stops the growth past its span
    if phase == "decode":
        cache_read = tokens * keys * kv_token_bytes  # one sequence per token, each reads its keys
    else:
        cache_read = tokens * kv_token_bytes  # each prompt's fresh K/V read once
    scores = tokens * heads * keys
    flops = 2 * 2 * scores * d if dv == d else 2 * scores * (d + dv)  # QK^T and PV: 2*d FLOPs per pair each
    io = tokens * heads * (d + dv) * b.a + tokens * kv_token_bytes  # read Q, write O, append new K/V
    kernel = (
        None if phase != "decode" else ("attention_decode_mha" if g.kv_heads == g.heads else "attention_decode_gqa")
    )
    return [Op("attention", flops, cache_read + io, "attention", kernel=kernel), _softmax(scores)]


def _mla_ops(
    cfg: ModelConfig, *, tokens: float, context: float, tp: int, b: _Bytes, phase: str, kind: LayerKind = _FULL
) -> list[Op]:
    h, heads = cfg.hidden_size, cfg.num_heads / tp
    lora, rope, q_lora = cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.q_lora_rank
    qk_dim = cfg.qk_nope_head_dim + rope
    # Down-projections (q_a and kv_a_proj_with_mqa, fused) are replicated on every rank.
    ops = [
        _gemm("qkv_a_proj", m=tokens, k=h, n=q_lora + lora + rope, b=b),
        _rms_norm("qkv_a_norm", tokens, q_lora + lora, b),
    ]
    ops.append(_gemm("q_b_proj" if q_lora else "q_proj", m=tokens, k=q_lora or h, n=heads * qk_dim, b=b))
    ops.append(_elementwise("rotary", elems=tokens * (heads + 1) * rope, flops_per_elem=3, b=b, kernel="rotary"))
    if kind.attention == "sparse":  # DSA: the indexer picks the keys; MLA attends over them alone
        ops += _indexer_ops(cfg, tokens, context, b, phase)
        keys = attention_keys(kind, context, phase)
        ops += _mla_absorbed(cfg, tokens, keys, heads, b)
    else:
        ops += (_mla_absorbed if phase == "decode" else _mla_expanded)(cfg, tokens, context, heads, b)
    ops.append(_gemm("o_proj", m=tokens, k=heads * cfg.v_head_dim, n=h, b=b, norm_input=False))
    return ops


def _mla_absorbed(cfg: ModelConfig, tokens: float, context: float, heads: float, b: _Bytes) -> list[Op]:
    """Decode in the absorbed form (DeepSeek-V2 paper, section 2.1.3; vLLM / FlashMLA decode): W_UK
    is folded into the query and W_UV applied after attention, so attention runs over the compressed
    cache, one latent of kv_lora_rank + rope elements per token shared by all local heads.
    DSA runs it in both phases over the `context` selected keys per query (FlashMLA's sparse
    kernels): each query gathers its own keys' latents."""
    lora, nope, v = cfg.kv_lora_rank, cfg.qk_nope_head_dim, cfg.v_head_dim
    latent = lora + cfg.qk_rope_head_dim
    # Per-head batched matmuls: rows are (token, head) pairs.
    ops = [_gemm("q_absorb", m=tokens * heads, k=nope, n=lora, b=b, weight_elems=heads * nope * lora, norm_input=False)]
    scores = tokens * heads * context
    flops = 2 * scores * latent + 2 * scores * lora  # q.[c_kv, k_rope], then P.c_kv
    cache_read = tokens * context * latent * b.kv  # each sequence's latents, read once for all heads
    io = tokens * heads * (latent + lora) * b.a + tokens * latent * b.kv  # q in, out, new latent
    ops += [Op("attention", flops, cache_read + io, "attention", kernel="attention_decode_mla"), _softmax(scores)]
    ops.append(_gemm("v_up", m=tokens * heads, k=lora, n=v, b=b, weight_elems=heads * lora * v, norm_input=False))
    return ops


def _mla_expanded(cfg: ModelConfig, tokens: float, context: float, heads: float, b: _Bytes) -> list[Op]:
    """Prefill in the expanded form (as vLLM runs it): kv_b_proj decompresses K_nope and V for every
    prompt token, then ordinary causal attention with q/k width nope + rope and v width v_head_dim."""
    lora, nope, rope, v = cfg.kv_lora_rank, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
    ops = [_gemm("kv_b_proj", m=tokens, k=lora, n=heads * (nope + v), b=b)]
    scores = tokens * heads * attention_keys(_FULL, context, "prefill")
    flops = 2 * scores * (nope + rope) + 2 * scores * v
    # read Q and K (nope + rope each), V; write O; append the new latent to the cache
    io = tokens * heads * (2 * (nope + rope) + 2 * v) * b.a + tokens * (lora + rope) * b.kv
    return ops + [Op("attention", flops, io, "attention"), _softmax(scores)]


def _indexer_ops(cfg: ModelConfig, tokens: float, context: float, b: _Bytes, phase: str) -> list[Op]:
    """DSA's lightning indexer (DeepSeek-V3.2-Exp inference/model.py Indexer), replicated on every
    rank: q from the query latent (wq_b), one shared key (wk) and per-head weights (weights_proj);
    each query scores every earlier token with index_n_heads FP8 dot products of index_head_dim
    (relu, weighted sum over heads), then keeps the index_topk best."""
    h, ih, idim = cfg.hidden_size, cfg.index_heads, cfg.index_head_dim
    keys = context if phase == "decode" else attention_keys(_FULL, context, "prefill")
    key_bytes = idim * INDEXER_KEY_BYTES_PER_ELEM
    scores = tokens * ih * keys
    cache_read = tokens * keys * key_bytes if phase == "decode" else tokens * key_bytes
    return [
        _gemm("indexer_q", m=tokens, k=cfg.q_lora_rank or h, n=ih * idim, b=b),
        _gemm("indexer_k_weights", m=tokens, k=h, n=idim + ih, b=b),
        Op(
            "indexer_scores",
            2.0 * scores * idim + 3.0 * scores,
            cache_read + tokens * (ih * idim * b.a + key_bytes),
            "attention",
        ),
        Op("indexer_topk", 5.0 * tokens * keys, tokens * keys * 4.0 + tokens * cfg.index_topk * 4.0, "elementwise"),
    ]


def _state_scan(
    name: str, *, tokens, seqs, state_bytes: float, flops_per_token: float, io_per_token: float, phase: str
) -> Op:
    """The recurrence of a linear-attention or Mamba mixer: decode reads and writes each sequence's
    state once (the bytes that bound it, whatever the context); prefill's chunked scan writes the
    final state and streams its inputs and outputs."""
    state_io = (2.0 if phase == "decode" else 1.0) * seqs * state_bytes
    return Op(name, flops_per_token * tokens, state_io + io_per_token * tokens, "attention")


_SCAN_CHUNK = 64
"""Tokens per chunk of the chunked prefill scan (flash-linear-attention chunk_gated_delta_rule: 64;
Mamba-2 SSD uses the config's chunk_size, 128 in Nemotron-H: priced at 64 too, within the estimate)."""


def _state_b(cfg: ModelConfig, b: _Bytes) -> float:
    """Bytes per recurrent-state element: the config's state dtype (Qwen3.5, Nemotron-3: fp32),
    else the KV-cache dtype."""
    return dtype_bytes(cfg.state_dtype) if cfg.state_dtype else b.kv


def _conv(tokens: float, seqs, channels: float, cfg: ModelConfig, b: _Bytes, phase: str) -> Op:
    """The causal depthwise convolution of conv_kernel taps over `channels` (this rank's); decode
    reads and writes each sequence's last conv_kernel - 1 inputs."""
    state = (2.0 if phase == "decode" else 1.0) * seqs * (cfg.conv_kernel - 1) * channels * b.kv
    return Op(
        "short_conv",
        2.0 * cfg.conv_kernel * tokens * channels,
        2.0 * tokens * channels * b.a + state + channels * cfg.conv_kernel * b.w,
        "elementwise",
    )


def _gdn_ops(cfg: ModelConfig, *, tokens: float, context: float, tp: int, b: _Bytes, phase: str) -> list[Op]:
    """Gated DeltaNet (Qwen3NextGatedDeltaNet): in_proj (q, k, v, z, b, a), the short causal
    convolution over q, k, v, the delta rule S <- g S (I - beta k k^T) + beta v k^T with o = S q per
    value head (decode ~8 x key_dim x value_dim FLOPs per head: decay, k^T S, rank-1 update, q S;
    prefill adds the within-chunk q k^T and its product with v), the gated RMSNorm and out_proj."""
    h, hk, hv = cfg.hidden_size, cfg.linear_key_heads / tp, cfg.linear_value_heads / tp
    dk, dv = cfg.linear_key_head_dim, cfg.linear_value_head_dim
    key, value = hk * dk, hv * dv
    seqs = tokens if phase == "decode" else tokens / np.maximum(context, 1.0)
    chunk = 0.0 if phase == "decode" else 2.0 * _SCAN_CHUNK * (dk + dv)
    return [
        _gemm("linear_in_proj", m=tokens, k=h, n=2 * key + 2 * value + 2 * hv, b=b),
        _conv(tokens, seqs, 2 * key + value, cfg, b, phase),
        _state_scan(
            "linear_attention",
            tokens=tokens,
            seqs=seqs,
            state_bytes=hv * dk * dv * _state_b(cfg, b),
            flops_per_token=hv * (8.0 * dk * dv + chunk),
            io_per_token=(2 * key + 2 * value) * b.a,
            phase=phase,
        ),
        _elementwise(
            "linear_gated_norm",
            elems=tokens * value,
            flops_per_elem=9,
            b=b,
            read_elems=2 * tokens * value,
            weight_elems=dv,
            kernel="rmsnorm",
        ),
        _gemm("linear_out_proj", m=tokens, k=value, n=h, b=b),
    ]


def _mamba_ops(cfg: ModelConfig, *, tokens: float, context: float, tp: int, b: _Bytes, phase: str) -> list[Op]:
    """Mamba-2 (NemotronHMamba2Mixer): in_proj (x, z, B, C, dt), the short convolution over x, B, C,
    the selective state update h <- exp(dt A) h + dt B x, y = C h + D x per head (decode ~6 x
    head_dim x state FLOPs per head; prefill's SSD chunks add 2 x chunk x (state + head_dim)), the
    gated RMSNorm and out_proj. Groups are split over tp with the heads (n_groups % tp == 0)."""
    h, heads, p, n = cfg.hidden_size, cfg.mamba_heads / tp, cfg.mamba_head_dim, cfg.ssm_state_size
    inner, bc = heads * p, 2 * max(cfg.mamba_groups / tp, 1.0) * n  # groups replicated when tp exceeds them
    seqs = tokens if phase == "decode" else tokens / np.maximum(context, 1.0)
    chunk = 0.0 if phase == "decode" else 2.0 * _SCAN_CHUNK * (n + p)
    return [
        _gemm("mamba_in_proj", m=tokens, k=h, n=2 * inner + bc + heads, b=b),
        _conv(tokens, seqs, inner + bc, cfg, b, phase),
        _state_scan(
            "ssm_scan",
            tokens=tokens,
            seqs=seqs,
            state_bytes=heads * p * n * _state_b(cfg, b),
            flops_per_token=heads * (6.0 * p * n + chunk),
            io_per_token=(2 * inner + bc) * b.a,
            phase=phase,
        ),
        _elementwise(
            "mamba_gated_norm",
            elems=tokens * inner,
            flops_per_elem=9,
            b=b,
            read_elems=2 * tokens * inner,
            weight_elems=inner,
            kernel="rmsnorm",
        ),
        _gemm("mamba_out_proj", m=tokens, k=inner, n=h, b=b),
    ]


def _mlp_ops(prefix: str, cfg: ModelConfig, tokens: float, width: float, b: _Bytes) -> list[Op]:
    """Gated MLP with gate/up column-parallel and down row-parallel; `width` is this rank's share.
    A relu2 MLP (Nemotron-H) has no gate: up, squared ReLU, down."""
    h = cfg.hidden_size
    if cfg.family.mlp_matrices == 2:
        return [
            _gemm(f"{prefix}_up", m=tokens, k=h, n=width, b=b),
            _elementwise(f"{prefix}_act", elems=tokens * width, flops_per_elem=2, b=b, kernel="activation"),
            _gemm(f"{prefix}_down", m=tokens, k=width, n=h, b=b),
        ]
    return [
        _gemm(f"{prefix}_gate_up", m=tokens, k=h, n=2 * width, b=b),
        _gated_act(f"{prefix}_act", tokens * width, b, cfg.family.activation),
        _gemm(f"{prefix}_down", m=tokens, k=width, n=h, b=b),
    ]


def expected_experts_hit(cfg: ModelConfig, tokens: float, *, ep: int = 1) -> float:
    """Expected number of distinct routed experts one rank's weights are read for in a step.

    Each token picks k of E experts; under uniform routing one token misses a given expert with
    probability 1 - k/E, all `tokens` independently with (1 - k/E)**tokens. A rank holds E/ep
    experts, so it reads E/ep * (1 - (1 - k/E)**tokens) of them: k/ep at batch 1, all at large
    batch. (Real routing is skewed, which only lowers this.)
    """
    check_ep(cfg, ep)
    check_amount("tokens", tokens, minimum=0, strict=False)
    if not cfg.is_moe:
        return 0.0
    e, k = cfg.num_experts, cfg.experts_per_token
    return e / ep * (1.0 - (1.0 - k / e) ** tokens)


def _moe_ops(cfg: ModelConfig, tokens: float, tp: int, ep: int, b: _Bytes) -> list[Op]:
    h, e, k = cfg.hidden_size, cfg.num_experts, cfg.experts_per_token
    # Router: a small replicated [tokens, hidden] x [hidden, E] GEMM, then the top-k / grouped top-k
    # kernel and the sort of tokens by expert that a fused-MoE call needs first (vLLM fused_moe:
    # fused_topk / grouped_topk, then moe_align_block_size): three kernels before the experts run.
    # The gate stays unquantized (bf16 weights and GEMM) in FP8 / FP4 checkpoints as engines run them.
    ops = [
        Op(
            "router",
            2.0 * tokens * h * e,
            router_params(cfg) * b.a + tokens * (h + e) * b.a,
            "gemm",
            kernel="dense_gemm",
            shape_nk=(e, h),
            quantized=False,
        ),
        Op(
            "topk",
            5.0 * tokens * e,
            tokens * e * (b.a + 4.0),
            "elementwise",
            kernel="moe_routing_topk",
            in_fused_moe=True,
        ),
        Op("moe_align", 2.0 * tokens * k, tokens * k * 8.0, "elementwise", kernel="moe_align", in_fused_moe=True),
    ]
    if ep > 1:
        pairs, width = tokens * k / ep, cfg.moe_intermediate_size  # whole experts, E/ep per rank
    else:
        pairs, width = tokens * k, cfg.moe_intermediate_size / tp  # every expert tp-sharded
    hit = expected_experts_hit(cfg, tokens, ep=ep)
    # the step waits for the busiest EP rank: more pairs and more distinct experts than the mean
    load, spread = busiest_rank(
        e, k, ep, tokens, groups=cfg.expert_groups, groups_per_token=cfg.expert_groups_per_token
    )
    pairs, hit = pairs * load, np.minimum(hit * spread, e / ep)
    up_bias, down_bias = (2 * width, h) if cfg.family.expert_bias else (0, 0)  # gpt-oss expert biases
    up = cfg.family.mlp_matrices - 1  # gate and up, or up alone (relu2 experts)
    act = replace(
        _gated_act("expert_act", pairs * width, b, cfg.family.activation)
        if up == 2
        else _elementwise("expert_act", elems=pairs * width, flops_per_elem=2, b=b, kernel="activation"),
        in_fused_moe=True,
    )
    # the fused-experts call's floor grows with the experts hit; its two grouped GEMMs share it
    ops += [
        _expert_gemm(
            "expert_gate_up",
            m=pairs,
            k=h,
            n=up * width,
            b=b,
            weight_elems=hit * (h * up * width + up_bias),
            active_experts=hit / 2,
        ),
        act,
        _expert_gemm(
            "expert_down",
            m=pairs,
            k=width,
            n=h,
            b=b,
            weight_elems=hit * (width * h + down_bias),
            active_experts=hit / 2,
        ),
        # scale each expert's output by its gate weight and sum the k of them per token
        Op("expert_combine", 2.0 * pairs * h, (pairs + pairs / k) * h * b.a, "elementwise", in_fused_moe=True),
    ]
    if cfg.num_shared_experts:
        width = cfg.num_shared_experts * cfg.shared_expert_intermediate_size / tp
        ops += _mlp_ops("shared_expert", cfg, tokens, width, b)
    return ops


def _check_work(tokens, context, phase: str) -> None:
    if phase not in PHASES:
        raise PlanError(f"phase {phase!r} must be 'decode' or 'prefill'")
    check_amount("tokens", tokens, minimum=0, strict=True)
    check_amount("context", context, minimum=1 if phase == "prefill" else 0, strict=False)


def _busiest_rank_tokens(tokens, context, attn_dp: int, phase: str):
    """Tokens of the busiest data-parallel attention rank: it holds ceil(batch / attn_dp) whole
    sequences (plan.busiest_rank_sequences), each of one token in decode, a prompt in prefill."""
    if attn_dp == 1:
        return tokens
    per_seq = 1.0 if phase == "decode" else np.maximum(context, 1.0)
    return busiest_rank_sequences(tokens / per_seq, attn_dp) * per_seq


def layer_work(
    cfg: ModelConfig,
    layer: int | str | LayerKind,
    *,
    tokens: float,
    context: float,
    tp: int,
    ep: int = 1,
    weight_dtype: str = "bf16",
    act_dtype: str = "bf16",
    kv_dtype: str | None = None,
    phase: str = "decode",
    attn_dp: int = 1,
    expert_dtype: str | None = None,
    weight_scale_bytes: float = 0.0,
    expert_scale_bytes: float | None = None,
) -> list[Op]:
    """The ops one GPU runs for one decoder layer in one step, in execution order.

    layer: a layer index, a `LayerKind` from `layer_kinds`, or "dense" / "moe" (the model's one such kind).
    tokens: tokens processed in the step (decode: the batch; prefill: batch x prompt length).
    context: decode: cached tokens each sequence attends over; prefill: the prompt length (causal,
        so the mean query sees (context + 1) / 2 keys; batch = tokens / context).
    kv_dtype: defaults to act_dtype; expert_dtype (the routed experts' weights) to weight_dtype; the
        scales' bytes per weight are read with each weight (`work.Precision`; experts' default: the others').
    attn_dp: data-parallel attention degree (1, or tp for MoE models with ep = tp): attention and
        the residual path run on tokens / attn_dp with whole heads; experts (and dense layers' MLP,
        after gathering the tokens) keep their tp / ep sharding over all tokens.
    """
    kind = layer_kind(cfg, layer)
    tp_attn = check_sharding(cfg, tp=tp, ep=ep, attn_dp=attn_dp)
    _check_work(tokens, context, phase)
    local = _busiest_rank_tokens(tokens, context, attn_dp, phase)
    b = _Bytes(
        dtype_bytes(weight_dtype) + weight_scale_bytes,
        dtype_bytes(act_dtype),
        dtype_bytes(kv_dtype or act_dtype),
        dtype_bytes(expert_dtype or weight_dtype)
        + (weight_scale_bytes if expert_scale_bytes is None else expert_scale_bytes),
    )
    h = cfg.hidden_size
    gemma = cfg.family.norms_per_layer == 4  # Gemma normalises each sub-block's output too
    ops = _mixer_block(cfg, kind, local=local, context=context, tp=tp_attn, b=b, phase=phase, gemma=gemma)
    if kind.ffn == "none":
        return ops
    if kind.attention != "none":
        ops.append(_rms_norm("pre_ffn_norm" if gemma else "post_attn_norm", local, h, b, after_allreduce=True))
    else:  # a block with an FFN alone (Nemotron-H): its one norm follows the previous block's reduction
        ops.append(_rms_norm("input_norm", local, h, b, after_allreduce=True))
    if kind.ffn == "moe":
        ops += _moe_ops(cfg, tokens, tp, ep, b)
    elif kind.ffn == "dense+moe":  # Gemma 4: the dense MLP, then the experts on their own pre-norm
        ops += _mlp_ops("mlp", cfg, tokens, cfg.intermediate_size / tp, b)
        ops += [_rms_norm("post_mlp_norm", local, h, b), _rms_norm("pre_experts_norm", local, h, b)]
        ops += _moe_ops(cfg, tokens, tp, ep, b) + [_rms_norm("post_experts_norm", local, h, b, after_allreduce=True)]
    else:
        ops += _mlp_ops("mlp", cfg, tokens, cfg.intermediate_size / tp, b)
    if gemma:
        ops.append(_rms_norm("post_ffn_norm", local, h, b))
    ops.append(_residual("mlp_residual", local, cfg, b))
    return ops


def _mixer_block(
    cfg: ModelConfig, kind: LayerKind, *, local, context, tp: int, b: _Bytes, phase: str, gemma: bool
) -> list[Op]:
    """The input norm, the token mixer (attention of the layer's kind, Gated DeltaNet, Mamba-2) and
    its residual add; nothing for a block without a mixer (Nemotron-H's MoE and MLP blocks)."""
    if kind.attention == "none":
        return []
    h = cfg.hidden_size
    ops = [_rms_norm("input_norm", local, h, b, after_allreduce=True)]  # after the previous layer's
    work = dict(tokens=local, context=context, tp=tp, b=b, phase=phase)
    if kind.attention == "linear":
        ops += _gdn_ops(cfg, **work)
    elif kind.attention == "mamba":
        ops += _mamba_ops(cfg, **work)
    else:
        ops += _mla_ops(cfg, **work, kind=kind) if cfg.is_mla else _gqa_ops(cfg, **work, kind=kind)
    if gemma:
        ops.append(_rms_norm("post_attn_norm", local, h, b))
    ops.append(_residual("attn_residual", local, cfg, b))
    return ops


def embedding_ops(
    cfg: ModelConfig, *, tokens, tp: int, weight_dtype: str = "bf16", act_dtype: str = "bf16"
) -> list[Op]:
    """Vocabulary-parallel embedding lookup (vLLM `VocabParallelEmbedding`): each rank copies the rows
    it owns (tokens/tp on average) and writes zeros for the rest (`comms` adds the all-reduce)."""
    check_degree("tp", tp)  # vocabulary-parallel: any tp splits the vocabulary
    check_amount("tokens", tokens, minimum=0, strict=True)
    h, w, a = cfg.hidden_size, dtype_bytes(weight_dtype), dtype_bytes(act_dtype)
    return [Op("embedding", 0.0, tokens * h * w / tp + tokens * h * a, "elementwise")]


def lm_head_ops(cfg: ModelConfig, *, tokens, tp: int, weight_dtype: str = "bf16", act_dtype: str = "bf16") -> list[Op]:
    """Final norm and vocabulary-parallel LM head for `tokens` rows (in prefill only the last token
    of each prompt needs logits: pass the batch size). Each rank computes its vocab_size/tp slice."""
    check_degree("tp", tp)  # vocabulary-parallel: any tp splits the vocabulary
    check_amount("tokens", tokens, minimum=0, strict=True)
    b = _Bytes(dtype_bytes(weight_dtype), dtype_bytes(act_dtype), 0.0)
    return [
        _rms_norm("final_norm", tokens, cfg.hidden_size, b),
        _gemm("lm_head", m=tokens, k=cfg.hidden_size, n=cfg.vocab_size / tp, b=b),
    ]


__all__ = ["OP_KINDS", "Op", "PHASES", "embedding_ops", "expected_experts_hit", "layer_work", "lm_head_ops"]
