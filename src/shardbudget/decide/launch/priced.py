"""What a deployment option priced, engine-neutral: the settings every launch line must carry so
that the command runs what the numbers describe, and the checks that an engine can run it at all.

`Side` is one kind of replica (the aggregated servers, or the prefill and the decode side of
`--disaggregate`); `Priced` holds the sides with the model-wide settings: the online quantization
(`--dtype` narrower than the checkpoint), the KV-cache dtype, CUDA graphs or eager, speculation and
its draft, the memory share, the longest sequence and the prompt tokens per step.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import canonical
from ...engines.allreduce import allreduce_ranges_for
from ...engines.cli_tables import load_cli
from ...errors import PlanError
from ...fabric.hardware import Catalog, System
from ...model import ModelConfig, Plan, load_model
from ...quoting import check_name
from ...step.price_comm import tp_group
from ...step.speculative import Speculation
from .layout import PLACEHOLDER

ENGINE_LABELS = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
PROBE_BYTES_PER_TOKEN = 2.0 * 8192
"""A bf16 hidden state of 8192 elements: the message size at which the all-reduce rule is read
(the rule's size ranges do not depend on it for the flags chosen here)."""


@dataclass(frozen=True, kw_only=True)
class Side:
    role: str
    """'serve' (aggregated), 'prefill' or 'decode'."""
    replicas: int
    tp: int
    pp: int
    ep: int
    dp: int
    """Attention data parallelism inside the TP group (DP-attention ranks)."""
    max_batch: int | None
    """Sequences in flight per replica, as priced (None: the engine's default, e.g. prefill)."""
    custom_ar: dict
    """engine -> whether the preset's rule sends any of this group's all-reduces to its custom kernel."""
    symm_mem: dict
    """engine -> whether the rule uses symmetric memory on this group."""
    flashinfer_off: dict
    """engine -> the rule takes FlashInfer's all-reduce on this group but the pricing did not (--impl nccl):
    the line turns it off."""

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    @property
    def all_to_all(self) -> bool:
        """The MoE layers dispatch and combine by all-to-all: expert ranks beyond the TP group, or
        attention DP over the whole group (model/comms.py layer_collectives)."""
        return self.ep > 1 and (self.ep > self.tp or (self.dp > 1 and self.tp // self.dp == 1))


@dataclass(frozen=True, kw_only=True)
class Priced:
    model_id: str
    cfg: ModelConfig
    system: System
    engine: str
    """The engine the numbers were priced for (vllm, sglang, trtllm or eager)."""
    sides: tuple[Side, ...]
    max_model_len: int
    max_num_tokens: int
    memory_fraction: float | None
    """The user's --gpu-memory-utilization (None: each engine's own default)."""
    needed_fraction: float | None = None
    """The priced engine's fraction the plan needs above that engine's default (the best option's
    `Option.memory_fraction`, SGLang's static fraction for weights + KV pool); None: the default."""
    quantize_to: str | None
    """The dtype the weights are quantized to at load (--dtype narrower than the checkpoint)."""
    kv_dtype: str | None
    """The KV cache's dtype where it is not the activations' (None: 'auto')."""
    eager: bool
    speculation: Speculation | None
    draft_id: str | None
    """The draft's Hugging Face id (a draft model or an EAGLE head); None where it is the model's own MTP."""
    load: tuple[int, str] | None = None
    """Under deploy --rate/--users: (sequences in flight per replica at the load, the load in words)."""
    moe_a2a: str = "nccl"
    """What ran the MoE dispatch and combine as priced (--moe-a2a; comm/moe_a2a.py BACKENDS)."""

    def moe_a2a_words(self, engine: str, side: Side) -> list[str]:
        """The words of `side`'s server line that run its MoE all-to-all as priced ([] where the plan
        has none, or the engine's default runs it)."""
        if not side.all_to_all or self.moe_a2a == "nccl":
            return []
        return load_cli(engine).moe_a2a_words(self.moe_a2a, side.role)

    @property
    def disaggregated(self) -> bool:
        return any(s.role == "prefill" for s in self.sides)

    @property
    def gpus(self) -> int:
        return sum(s.gpus * s.replicas for s in self.sides)


def _allreduce_kinds(engine: str, system: System, side_plan: Plan, catalog: Catalog) -> set[str]:
    if side_plan.tp < 2:
        return {"none"}
    group = tp_group(system, side_plan, catalog)
    return set(allreduce_ranges_for(engine, group, PROBE_BYTES_PER_TOKEN).kinds)


def make_side(
    role: str,
    *,
    replicas: int,
    tp: int,
    pp: int,
    ep: int,
    dp: int,
    max_batch: int | None,
    system: System,
    catalog: Catalog,
    impl: str | None = None,
) -> Side:
    """One side's layout and all-reduce kernels; with `impl` 'nccl' (deploy --impl nccl) every TP
    all-reduce was priced as NCCL, so the engines' own kernels are switched off."""
    plan = Plan(tp, pp, ep, dp)
    custom, symm, fi = {}, {}, {}
    for engine in ENGINE_LABELS:
        kinds = _allreduce_kinds(engine, system, plan, catalog)
        fi[engine] = any(k.startswith("flashinfer") for k in kinds) and impl == "nccl"
        if impl == "nccl" and kinds != {"none"}:
            kinds = {"nccl"}
        custom[engine] = bool(kinds & {"one-shot", "two-shot", "mnnvl"}) or kinds == {"none"}  # mnnvl: TRT-LLM's own
        symm[engine] = any(k.startswith("symm-mem") for k in kinds)
    return Side(
        role=role,
        replicas=replicas,
        tp=tp,
        pp=pp,
        ep=ep,
        dp=dp,
        max_batch=max_batch,
        custom_ar=custom,
        symm_mem=symm,
        flashinfer_off=fi,
    )


def quantize_to(cfg: ModelConfig, weights_dtype: str) -> str | None:
    """The dtype the engine must quantize the checkpoint to at load, or None where the checkpoint
    already stores it (the engine reads its quantization_config)."""
    stored = cfg.checkpoint.weight_dtype
    if cfg.checkpoint.quant_method or canonical(weights_dtype) == canonical(stored):
        return None
    if canonical(weights_dtype) in ("bf16", "fp16", "fp32"):
        return None
    return canonical(weights_dtype)


def engine_runs(engine: str, system: System) -> str | None:
    """Why `engine` cannot run on `system`'s GPUs (None: it can), from its `[cli.support]` table."""
    support = load_cli(engine).support
    archs = support.archs
    if system.gpu.arch in archs:
        return None
    label = ENGINE_LABELS[engine]
    return (
        f"{label} does not run on {system.gpu.name} ({system.gpu.arch}): it supports "
        f"{', '.join(archs)} ({support.source.split(' ')[0]})"
    )


def speculation_runs(engine: str, spec: Speculation | None, cfg: ModelConfig) -> str | None:
    """Why `engine` cannot run `spec` on this model (None: it can)."""
    if spec is None:
        return None
    if spec.method == "mtp" and not getattr(cfg, "mtp_layers", 0):
        return (
            f"{cfg.name} has no multi-token-prediction layers (its config.json sets neither "
            f"num_nextn_predict_layers nor mtp_num_hidden_layers): --speculative mtp needs them; "
            f"use --speculative eagle or draft"
        )
    methods = load_cli(engine).speculative_methods
    if spec.method not in methods:
        why = methods.get(f"{spec.method}_not_supported", "its flag table has no such method")
        return f"{ENGINE_LABELS[engine]} cannot run --speculative {spec.method} ({why})"
    return None


def check_names(model_id: str, draft_id: str | None = None) -> None:
    """The names a launch line passes to the engine: printable UTF-8 (`quoting.check_name`), not
    starting with '-' (the engine would read an option: `--trust-remote-code`), and without a node
    address placeholder ($NODE<i>_IP: the commands fill those in)."""
    for what, name in (("model", model_id), ("--draft-model", draft_id)):
        if name is None:
            continue
        check_name(name, what, argument=True, error=PlanError)
        if found := PLACEHOLDER.search(name):
            raise PlanError(
                f"{what} {name!r} contains {found.group(0)}, the placeholder deploy's commands fill in "
                f"with a node's address: rename it"
            )


def check_request(engine: str, system: System, cfg: ModelConfig, spec: Speculation | None) -> None:
    """Refuse, in one line, a request the priced engine cannot run, or whose names cannot be
    arguments of its command lines (exit 2)."""
    draft = spec.draft_model if spec is not None and spec.method != "mtp" else None
    draft_cfg = load_model(draft) if draft and spec.method == "draft" else None
    check_names(cfg.name, draft_cfg.name if draft_cfg else draft)
    check_names(cfg.folder or cfg.name, (draft_cfg.folder or draft_cfg.name) if draft_cfg else None)  # by path
    key = "vllm" if engine == "eager" else engine
    if key not in ENGINE_LABELS:
        return
    why = engine_runs(key, system) or speculation_runs(key, spec, cfg)
    if why:
        raise PlanError(why)


__all__ = [
    "ENGINE_LABELS",
    "Priced",
    "Side",
    "check_names",
    "check_request",
    "engine_runs",
    "make_side",
    "quantize_to",
    "speculation_runs",
]
