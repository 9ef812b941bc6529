"""A whole step's work under a plan: every op with how often it runs, every collective it inserts.

`step_work` composes `ops` and `comms` over the model's layer kinds, the embedding, the LM head and
the pipeline boundaries; `step` prices the result. Batch and context may be broadcastable numpy
arrays, so one call describes a whole (batch, context) grid.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..dtypes import WEIGHT_DTYPES, canonical
from .comms import (CollectiveCall, collectives_for_layer, embedding_collectives, lm_head_collectives,
                    pp_collectives)
from .config import ModelConfig, layer_kinds
from .ops import Op, embedding_ops, layer_work, lm_head_ops
from .plan import Plan


@dataclass(frozen=True, kw_only=True)
class Precision:
    """Element types of the weights, the activations and the KV cache (canonical names)."""

    weights: str = "bf16"
    activations: str = "bf16"
    kv: str | None = None
    """None: the activation dtype."""

    def __post_init__(self) -> None:
        for field in ("weights", "activations", "kv"):
            value = getattr(self, field)
            if value is not None:
                object.__setattr__(self, field, canonical(value, WEIGHT_DTYPES))

    @property
    def kv_dtype(self) -> str:
        return self.kv or self.activations

    @property
    def uses_fp8_gemms(self) -> bool:
        """FP8 checkpoints run W8A8 GEMMs on the FP8 tensor cores (vLLM, TRT-LLM); int8/int4 weights
        are weight-only (dequantised to BF16 in the GEMM), so they keep the BF16 rate."""
        return self.weights == "fp8" or self.activations == "fp8"


@dataclass(frozen=True)
class StepWork:
    ops: list[tuple[int, Op]]
    """(times per step, op): a layer's op runs once per layer of its kind."""
    calls: list[CollectiveCall]
    """Collectives with `count` = calls per step."""


def step_work(cfg: ModelConfig, plan: Plan, *, batch, context, phase: str = "decode",
              precision: Precision = Precision(), sequence_parallel: bool = False) -> StepWork:
    """The ops and collectives of one decode step (batch sequences, one token each, `context`
    cached) or one prefill (batch prompts of `context` tokens; only each prompt's last token needs
    logits)."""
    tokens = batch if phase == "decode" else batch * context
    w, a, kv = precision.weights, precision.activations, precision.kv_dtype
    ops: list[tuple[int, Op]] = []
    calls: list[CollectiveCall] = []
    for kind, layers in layer_kinds(cfg).items():
        ops += [(layers, op) for op in layer_work(cfg, kind, tokens=tokens, context=context, tp=plan.tp, ep=plan.ep,
                                                  weight_dtype=w, act_dtype=a, kv_dtype=kv, phase=phase,
                                                  attn_dp=plan.dp)]
        calls += [replace(c, count=layers * c.count)
                  for c in collectives_for_layer(cfg, kind, tokens=tokens, tp=plan.tp, ep=plan.ep, act_dtype=a,
                                                 sequence_parallel=sequence_parallel, attn_dp=plan.dp)]
    ops += [(1, op) for op in embedding_ops(cfg, tokens=tokens, tp=plan.tp, weight_dtype=w, act_dtype=a)]
    ops += [(1, op) for op in lm_head_ops(cfg, tokens=batch, tp=plan.tp, weight_dtype=w, act_dtype=a)]
    calls += embedding_collectives(cfg, tokens=tokens, tp=plan.tp, act_dtype=a)
    calls += lm_head_collectives(cfg, tokens=batch, tp=plan.tp, act_dtype=a)  # per row of logits
    calls += pp_collectives(cfg, tokens=tokens, pp=plan.pp, act_dtype=a)
    return StepWork(ops=ops, calls=calls)


__all__ = ["Precision", "StepWork", "step_work"]
