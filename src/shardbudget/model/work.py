"""A whole step's work under a plan: every op with how often it runs, every collective it inserts.

`step_work` composes `ops` and `comms` over the model's layer kinds, the embedding, the LM head and
the pipeline boundaries; `step` prices the result. Batch and context may be broadcastable numpy
arrays, so one call describes a whole (batch, context) grid.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..dtypes import FP4_DTYPES, WEIGHT_DTYPES, canonical, dtype_bytes
from .comms import CollectiveCall, collectives_for_layer, embedding_collectives, lm_head_collectives, pp_collectives
from .config import ModelConfig, layer_kinds
from .ops import Op, embedding_ops, layer_work, lm_head_ops
from .plan import Plan


FP8_PEAK_DTYPES = ("fp8", *FP4_DTYPES)
"""GEMM compute dtypes that run on low-precision tensor cores (W8A8, W4A4 with their activation
quantisation): FP8 at the GPU's FP8 peak, FP4 at its dense FP4 peak (`uses_fp4_gemms`; the FP8
peak where the catalog has no FP4 one)."""


@dataclass(frozen=True, kw_only=True)
class Precision:
    """Element types of the weights, the activations, the KV cache and the GEMMs (canonical names).

    `model.precision.default_precision` builds the one a checkpoint runs in on a given GPU."""

    weights: str = "bf16"
    """Linear layers other than the routed experts (attention, dense MLP, shared experts), norms, router."""
    activations: str = "bf16"
    kv: str | None = None
    """None (or "auto"): the activation dtype, as engines' `--kv-cache-dtype auto`."""
    expert_weights: str | None = None
    """Routed experts; None: `weights` (gpt-oss: mxfp4 experts beside bf16 attention)."""
    head_weights: str | None = None
    """Embedding and LM head; None: `weights` (quantized checkpoints keep them in bf16)."""
    compute: str | None = None
    """What the GEMMs run in; None: fp8 when any weights or the activations are fp8 (W8A8), else
    the activation dtype (int8 / int4 weights are weight-only, dequantised in the GEMM)."""
    weight_scale_bytes: float = 0.0
    """Bytes per weight of the scales and zero points `weights` are decoded with, beyond the
    dtype's element (`quant.Checkpoint.scale_bytes`; 0 where unquantized or the dtype holds them)."""
    expert_scale_bytes: float | None = None
    """The routed experts' (Kimi-K2.5: 0.0625, one bf16 scale per 32 int4 weights); None:
    `weight_scale_bytes`."""

    def __post_init__(self) -> None:
        if isinstance(self.kv, str) and self.kv.lower() == "auto":
            object.__setattr__(self, "kv", None)
        for field in ("weights", "activations", "kv", "expert_weights", "head_weights", "compute"):
            value = getattr(self, field)
            if value is not None:
                object.__setattr__(self, field, canonical(value, WEIGHT_DTYPES))

    @property
    def kv_dtype(self) -> str:
        return self.kv or self.activations

    @property
    def expert_dtype(self) -> str:
        return self.expert_weights or self.weights

    @property
    def expert_scales(self) -> float:
        return self.weight_scale_bytes if self.expert_scale_bytes is None else self.expert_scale_bytes

    @property
    def weight_bytes(self) -> float:
        """Bytes one linear weight (other than the routed experts') occupies, its scales' share included."""
        return dtype_bytes(self.weights) + self.weight_scale_bytes

    @property
    def expert_bytes(self) -> float:
        """Bytes one routed expert's weight occupies, its scales' share included."""
        return dtype_bytes(self.expert_dtype) + self.expert_scales

    @property
    def head_dtype(self) -> str:
        return self.head_weights or self.weights

    @property
    def compute_dtype(self) -> str:
        if self.compute is not None:
            return self.compute
        fp8 = "fp8" in (self.weights, self.expert_dtype, self.activations)
        return "fp8" if fp8 else self.activations

    @property
    def uses_fp8_gemms(self) -> bool:
        """The GEMMs run on the FP8 tensor cores (W8A8 as vLLM and TRT-LLM run FP8 checkpoints; FP4
        priced there too, `FP8_PEAK_DTYPES`); weight-only formats keep the 16-bit rate."""
        return self.compute_dtype in FP8_PEAK_DTYPES

    @property
    def uses_fp4_gemms(self) -> bool:
        """The GEMMs run on FP4 tensor cores (NVFP4 / MXFP4 where the GPU has them)."""
        return self.compute_dtype in FP4_DTYPES

    @property
    def memory_dtypes(self) -> dict[str, str | float]:
        """Keyword arguments of `params.memory_bytes_per_gpu` for this precision: the four dtypes
        and the weights' and experts' scales."""
        return {
            "weight_dtype": self.weights,
            "expert_dtype": self.expert_dtype,
            "head_dtype": self.head_dtype,
            "kv_dtype": self.kv_dtype,
            "weight_scale_bytes": self.weight_scale_bytes,
            "expert_scale_bytes": self.expert_scales,
        }


@dataclass(frozen=True)
class StepWork:
    ops: list[tuple[int, Op]]
    """(times per step, op): a layer's op runs once per layer of its kind."""
    calls: list[CollectiveCall]
    """Collectives with `count` = calls per step."""


def step_work(
    cfg: ModelConfig,
    plan: Plan,
    *,
    batch,
    context,
    phase: str = "decode",
    precision: Precision = Precision(),
    sequence_parallel: bool = False,
) -> StepWork:
    """The ops and collectives of one decode step (batch sequences, one token each, `context`
    cached) or one prefill (batch prompts of `context` tokens; only each prompt's last token needs
    logits)."""
    tokens = batch if phase == "decode" else batch * context
    w, a, kv, head = precision.weights, precision.activations, precision.kv_dtype, precision.head_dtype
    ops: list[tuple[int, Op]] = []
    calls: list[CollectiveCall] = []
    for kind, layers in layer_kinds(cfg).items():
        ops += [
            (layers, op)
            for op in layer_work(
                cfg,
                kind,
                tokens=tokens,
                context=context,
                tp=plan.tp,
                ep=plan.ep,
                weight_dtype=w,
                act_dtype=a,
                kv_dtype=kv,
                phase=phase,
                attn_dp=plan.dp,
                expert_dtype=precision.expert_dtype,
                weight_scale_bytes=precision.weight_scale_bytes,
                expert_scale_bytes=precision.expert_scales,
            )
        ]
        calls += [
            replace(c, count=layers * c.count)
            for c in collectives_for_layer(
                cfg,
                kind,
                tokens=tokens,
                tp=plan.tp,
                ep=plan.ep,
                act_dtype=a,
                sequence_parallel=sequence_parallel,
                attn_dp=plan.dp,
            )
        ]
    ops += [(1, op) for op in embedding_ops(cfg, tokens=tokens, tp=plan.tp, weight_dtype=head, act_dtype=a)]
    ops += [(1, op) for op in lm_head_ops(cfg, tokens=batch, tp=plan.tp, weight_dtype=head, act_dtype=a)]
    calls += embedding_collectives(cfg, tokens=tokens, tp=plan.tp, act_dtype=a)
    calls += lm_head_collectives(cfg, tokens=batch, tp=plan.tp, act_dtype=a)  # per row of logits
    calls += pipeline_calls(cfg, plan, batch=batch, context=context, phase=phase, precision=precision)
    return StepWork(ops=ops, calls=calls)


def pipeline_calls(
    cfg: ModelConfig, plan: Plan, *, batch, context, phase: str = "decode", precision: Precision = Precision()
) -> list[CollectiveCall]:
    """The sends between pipeline stages: all that `plan.pp` adds to a step's work (the ops and the
    TP/EP collectives of every layer are those of the same plan at PP 1)."""
    tokens = batch if phase == "decode" else batch * context
    return pp_collectives(cfg, tokens=tokens, pp=plan.pp, act_dtype=precision.activations)


__all__ = ["FP8_PEAK_DTYPES", "Precision", "StepWork", "pipeline_calls", "step_work"]
