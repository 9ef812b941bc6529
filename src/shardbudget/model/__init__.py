"""The model layer: a Hugging Face config.json read into a `ModelConfig`, its parameters and memory
per GPU, the ops one GPU runs per step and the collectives a parallel plan inserts.

    families  the one table of architecture families (attention kind, MoE layout, biases, norms, windows)
    config    ModelConfig, load_model, list_models, layer_kinds
    reader    reading config.json's fields (text_config, family defaults, windows, MoE layouts)
    layouts   hybrid layouts (linear attention, Mamba-2, sliding/full heads), DSA, unknown model_types
    layers    LayerKind and how far each kind's attention reaches (sliding windows, chunks, top-k)
    quant     the checkpoint's own precision: torch_dtype and quantization_config
    precision default_precision: the Precision a checkpoint runs in on a GPU, with notes
    plan      Plan (tp, pp, ep, dp) and the divisibility rules a model sets for it
    params    parameter counts, weight and KV-cache bytes per GPU
    ops       per-GPU ops (FLOPs and HBM bytes) as array arithmetic over (batch, context)
    comms     the collectives a plan inserts, and the one message-size function
    work      a whole step's ops and collectives (what `step` prices)

Words with two meanings (per-rank vs total, per-token vs per-step, GB vs GiB) are defined once in
the glossary of `shardbudget.units`.
"""

from .comms import CollectiveCall, collectives_for_layer, hidden_message_bytes, pp_collectives
from .config import ModelConfig, config_from_dict, layer_kinds, list_models, load_model
from .layers import LayerKind
from .ops import Op, embedding_ops, expected_experts_hit, layer_work, lm_head_ops
from .params import (
    active_params,
    kv_bytes_per_token,
    kv_cache_bytes_per_gpu,
    memory_bytes_per_gpu,
    total_params,
    weight_bytes_per_gpu,
)
from .plan import Plan
from .precision import default_precision
from .quant import Checkpoint
from .work import Precision, StepWork, pipeline_calls, step_work

__all__ = [
    "Checkpoint",
    "CollectiveCall",
    "LayerKind",
    "ModelConfig",
    "Op",
    "Plan",
    "Precision",
    "StepWork",
    "active_params",
    "collectives_for_layer",
    "config_from_dict",
    "default_precision",
    "embedding_ops",
    "expected_experts_hit",
    "hidden_message_bytes",
    "kv_bytes_per_token",
    "kv_cache_bytes_per_gpu",
    "layer_kinds",
    "layer_work",
    "list_models",
    "lm_head_ops",
    "load_model",
    "memory_bytes_per_gpu",
    "pipeline_calls",
    "pp_collectives",
    "step_work",
    "total_params",
    "weight_bytes_per_gpu",
]
