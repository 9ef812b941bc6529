"""GPU memory as the engine allocates it: what a plan needs on its most loaded GPU, and how much of the
device the engine lets it have.

    need = weights + KV cache (batch x context) + activation peak + CUDA-graph pool
           + communication buffers + CUDA context

Capacity is what nvidia-smi reports (catalog/gpus.toml). vLLM and SGLang give an instance a fraction
of the whole device (`--gpu-memory-utilization` 0.9, SGLang's computed `--mem-fraction-static`);
TensorRT-LLM gives the KV cache a fraction (0.9) of what is free after weights and buffers. The
components and their sources are in each engine's preset (engines/<engine>.toml [memory]):

* activation peak: vLLM's profiling forward pass over max_num_batched_tokens tokens, the widest
  activation of a layer (the gate/up output, 2 x intermediate / tp per token) plus the hidden state
  four times over (residual, normed input, attention output, MLP output), and the sampler's fp32
  logits for max_num_seqs sequences (engines/vllm.toml activation_rule, an estimate);
  where the preset states the sampler's bytes per logit (vLLM 0.34), the sampler's gathered logits
  run after the forward pass instead, and the peak is the larger of the two;
* the margin an engine keeps free beyond what it measured (vLLM 0.34's extensible KV cache:
  max(1 GiB, 0.75 x the activation peak)), which `fits` keeps out of the fraction;
* CUDA-graph pool, communication buffers (custom all-reduce IPC buffers, NCCL's), CUDA context:
  the preset's figures, each with its basis.

`workspace_bytes` (PlanSettings) replaces all non-weight, non-KV components by one figure when set.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..dtypes import dtype_bytes
from ..engines.memory_default import default_memory_fraction
from ..engines.presets import load_engine
from ..fabric.hardware import GPU
from ..model import ModelConfig, Plan, Precision, kv_cache_bytes_per_gpu, weight_bytes_per_gpu

MAX_NUM_BATCHED_TOKENS = 8192
"""Tokens of the profiling pass where the preset does not say (vLLM V1's default for serving)."""
MAX_NUM_SEQS = 256


@dataclass(frozen=True, kw_only=True)
class MemoryNeed:
    """Bytes on the most loaded GPU; kv may be an array over (batch, context)."""

    weights: float
    kv_cache: object
    activations: float
    cuda_graphs: float
    comm_buffers: float
    cuda_context: float

    @property
    def fixed(self) -> float:
        """Everything but the KV cache."""
        return self.weights + self.activations + self.cuda_graphs + self.comm_buffers + self.cuda_context

    @property
    def total(self):
        return self.fixed + self.kv_cache

    def to_dict(self) -> dict:
        d = {k: float(np.max(v)) if np.ndim(v) else float(v) for k, v in asdict(self).items()}
        d["total"] = (
            d["weights"] + d["kv_cache"] + d["activations"] + d["cuda_graphs"] + d["comm_buffers"] + d["cuda_context"]
        )
        return d


def activation_peak_bytes(
    cfg: ModelConfig,
    plan: Plan,
    *,
    act_dtype: str,
    tokens: int = MAX_NUM_BATCHED_TOKENS,
    seqs: int = MAX_NUM_SEQS,
    sampler_bytes_per_logit: float | None = None,
) -> float:
    """The profiling pass's peak. Its forward pass holds tokens x (2 x FFN width / tp + 4 x hidden)
    activations. Where the preset states the sampler's bytes per logit, the sampler runs after the
    forward pass has freed them, on min(seqs, tokens) rows of logits gathered whole on every TP rank,
    beside the hidden states the pass returns (tokens + rows of them): the peak is the larger of the
    two. Otherwise (the older estimate) fp32 logits of vocab / tp per sequence, added to the forward's."""
    width = max(cfg.intermediate_size, cfg.moe_intermediate_size * max(cfg.experts_per_token, 1)) / plan.tp
    per_token = 2 * width + 4 * cfg.hidden_size
    forward = tokens * per_token * dtype_bytes(act_dtype)
    if sampler_bytes_per_logit is None:
        return forward + seqs * cfg.vocab_size / plan.tp * 4.0
    rows = min(seqs, tokens)
    kept = (tokens + rows) * cfg.hidden_size * dtype_bytes(act_dtype)
    return max(forward, kept + rows * cfg.vocab_size * sampler_bytes_per_logit)


def memory_need(
    cfg: ModelConfig,
    plan: Plan,
    *,
    precision: Precision,
    engine: str,
    batch,
    context,
    workspace_bytes: float | None = None,
) -> MemoryNeed:
    """What the engine allocates on the plan's most loaded GPU for `batch` sequences of `context`."""
    dtypes = precision.memory_dtypes
    weights = weight_bytes_per_gpu(
        cfg,
        tp=plan.tp,
        pp=plan.pp,
        ep=plan.ep,
        attn_dp=plan.dp,
        weight_dtype=dtypes["weight_dtype"],
        expert_dtype=dtypes["expert_dtype"],
        head_dtype=dtypes["head_dtype"],
        weight_scale_bytes=precision.weight_scale_bytes,
        expert_scale_bytes=precision.expert_scales,
    )
    kv = kv_cache_bytes_per_gpu(
        cfg, batch=batch, context=context, tp=plan.tp, pp=plan.pp, kv_dtype=dtypes["kv_dtype"], attn_dp=plan.dp
    )
    if workspace_bytes is not None:
        return MemoryNeed(
            weights=weights,
            kv_cache=kv,
            activations=workspace_bytes,
            cuda_graphs=0.0,
            comm_buffers=0.0,
            cuda_context=0.0,
        )
    m = load_engine(engine).memory
    comm = (m.custom_ar_buffers_bytes + m.nccl_buffers_bytes) if plan.tp * plan.pp > 1 else 0.0
    tokens = MAX_NUM_BATCHED_TOKENS if m.max_num_batched_tokens is None else m.max_num_batched_tokens
    seqs = MAX_NUM_SEQS if m.max_num_seqs is None else m.max_num_seqs
    return MemoryNeed(
        weights=weights,
        kv_cache=kv,
        activations=activation_peak_bytes(
            cfg,
            plan,
            act_dtype=precision.activations,
            tokens=tokens,
            seqs=seqs,
            sampler_bytes_per_logit=m.sampler_bytes_per_logit,
        ),
        cuda_graphs=m.cuda_graph_pool_bytes if load_engine(engine).cuda_graphs.decode else 0.0,
        comm_buffers=comm,
        cuda_context=m.cuda_context_bytes,
    )


def fraction(engine: str, gpu: GPU, plan: Plan, utilization: float | None) -> float:
    """The share the engine takes: `utilization` if given, else the engine's default for this GPU."""
    if utilization is not None:
        return utilization
    return default_memory_fraction(load_engine(engine), gpu.memory_bytes, tp=plan.tp, pp=plan.pp)


def fits(need: MemoryNeed, gpu: GPU, *, engine: str, plan: Plan, utilization: float | None = None):
    """Whether the need fits as the engine counts: a fraction of the device for everything (vLLM),
    for the weights and the KV pool alone (SGLang's mem_fraction_static, the rest in its reserve),
    or the KV cache within a fraction of what is free after everything else (TensorRT-LLM).

    Policy where no fraction is given: SGLang's computed default reserves for a chunk's activations
    far more than a decode-heavy run needs (25 GiB for a 16384-token chunk on a B200), so a plan is
    judged at the static fraction it needs (`required_fraction`, which the launch line then sets)
    as long as the device holds everything; vLLM's and TensorRT-LLM's defaults are judged as they are."""
    share = fraction(engine, gpu, plan, utilization)
    m = load_engine(engine).memory
    basis = m.fraction_of
    if basis == "free_after_weights":
        return need.kv_cache <= share * (gpu.memory_bytes - need.fixed)
    if basis == "static":
        whole = need.total <= gpu.memory_bytes
        if utilization is None:
            return whole
        return whole & (need.weights + need.kv_cache <= share * gpu.memory_bytes)
    kept_free = max(m.kv_margin_floor_bytes, m.kv_margin_of_activations * need.activations)
    return need.total <= min(share * gpu.memory_bytes, gpu.memory_bytes - kept_free)


def required_fraction(need: MemoryNeed, gpu: GPU, *, engine: str, plan: Plan):
    """The engine fraction the need runs at: the default where it suffices, else (SGLang) the
    static fraction that holds the weights and the KV pool, rounded up to 0.01 - the value of
    --mem-fraction-static the launch line prints. Arrays follow the KV cache's shape."""
    share = fraction(engine, gpu, plan, None)
    if load_engine(engine).memory.fraction_of != "static":
        return np.full(np.shape(need.kv_cache), share) if np.ndim(need.kv_cache) else share
    static = np.ceil(100.0 * (need.weights + need.kv_cache) / gpu.memory_bytes - 1e-9) / 100.0
    return np.maximum(static, share)


def raised_fraction(need: MemoryNeed, gpu: GPU, *, engine: str, plan: Plan, utilization: float | None = None):
    """`required_fraction` where it is above the engine's default and none was given, else NaN:
    the fraction a launch line must set for the plan to run as judged (`fits`)."""
    req = np.asarray(required_fraction(need, gpu, engine=engine, plan=plan), dtype=float)
    if utilization is not None:
        return np.full(req.shape, np.nan)
    return np.where(req > fraction(engine, gpu, plan, None), req, np.nan)


def usable_bytes(gpu: GPU, *, engine: str, plan: Plan, utilization: float | None = None) -> float:
    """The device bytes the engine's fraction allows, less the margin it keeps free at the least
    (vLLM's extensible KV cache: 1 GiB); for reports, `fits` is the test (its margin grows with the
    activation peak)."""
    floor = load_engine(engine).memory.kv_margin_floor_bytes
    return min(fraction(engine, gpu, plan, utilization) * gpu.memory_bytes, gpu.memory_bytes - floor)


__all__ = [
    "MemoryNeed",
    "activation_peak_bytes",
    "fits",
    "fraction",
    "memory_need",
    "raised_fraction",
    "required_fraction",
    "usable_bytes",
]
