"""The command line that runs a deployment option, for each engine, from the flags its preset cites.

Each engine's `[cli]` table (engines/<engine>.toml) names the flag for each role at the pinned
release, with the documentation or source it was checked against; this module only fills in the
values. Replicas are the engines' data parallelism (vLLM `--data-parallel-size` for dense models,
SGLang `--dp-size`); a MoE model's replicas under vLLM, and every replica under TensorRT-LLM, are
one server process each.
"""

from __future__ import annotations

import json
import re
from importlib import resources

from ..engines.allreduce import allreduce_ranges_for
from ..engines.presets import load_engine
from ..fabric.hardware import Catalog, System
from ..model import ModelConfig, Plan, list_models
from ..step.price_comm import tp_group

LAUNCH_ENGINES = ("vllm", "sglang", "trtllm")


def hf_id(cfg: ModelConfig) -> str:
    """The Hugging Face repository of a shipped model (from its config's `_source`), else its name."""
    if cfg.name in list_models():
        raw = json.loads((resources.files("shardbudget") / "catalog" / "models" / f"{cfg.name}.json").read_text())
        found = re.match(r"https://huggingface\.co/([^/]+/[^/]+)/", str(raw.get("_source", "")))
        if found:
            return found.group(1)
    return cfg.name


def _custom_unavailable(engine: str, system: System, option, catalog: Catalog) -> bool:
    """The preset's rule sends no TP all-reduce to the custom kernel on this group (PCIe without P2P,
    more than two PCIe GPUs, across nodes): the launch line turns it off explicitly."""
    if option.tp < 2:
        return False
    group = tp_group(system, Plan(option.tp, option.pp, option.ep, option.dp), catalog)
    kinds = set(allreduce_ranges_for(engine, group, 2.0 * 8192).kinds)
    return not kinds & {"one-shot", "two-shot"}


def _fraction(result, preset) -> float:
    """The memory fraction deploy assumed: the user's, else the engine's own default."""
    return result.memory_utilization if result.memory_utilization is not None else preset.memory.fraction


def _flags(cli: dict, pairs: list[tuple[str, object]]) -> str:
    parts = []
    for role, value in pairs:
        flag = cli.get(role)
        if flag is None or value is None or value is False:
            continue
        parts.append(flag if value is True else f"{flag} {value}")
    return " ".join(parts)


def vllm_line(result, cfg: ModelConfig, system: System, catalog: Catalog) -> str:
    o, preset = result.best, load_engine("vllm")
    # One vLLM server runs DP x TP x PP GPUs, each DP rank its own engine core and scheduler (so
    # --max-num-seqs is per rank). The DP ranks of a MoE model are not independent: its expert layers
    # form one DP x TP group (docs.vllm.ai/en/v0.12.0/serving/data_parallel_deployment/). So attention
    # DP is DP ranks of TP tp / dp, and a MoE model's replicas are separate servers; only a dense
    # model's replicas fold into --data-parallel-size.
    dp = o.dp * (1 if cfg.is_moe else o.replicas)
    pairs = [("tensor_parallel", o.tp // o.dp), ("pipeline_parallel", o.pp if o.pp > 1 else None),
             ("data_parallel", dp if dp > 1 else None),
             ("expert_parallel", o.ep > 1), ("max_batch", -(-o.max_batch // o.dp)),
             ("max_model_len", result.workload.max_context), ("memory_fraction", _fraction(result, preset)),
             ("disable_custom_allreduce", _custom_unavailable("vllm", system, o, catalog))]
    extra = f"; run {o.replicas} such servers" if cfg.is_moe and o.replicas > 1 else ""
    return f"{preset.launcher} {hf_id(cfg)} {_flags(preset.cli, pairs)}  # vLLM {preset.version}{extra}"


def sglang_line(result, cfg: ModelConfig, system: System, catalog: Catalog) -> str:
    o, preset = result.best, load_engine("sglang")
    dp = o.dp if o.dp > 1 else (o.replicas if o.replicas > 1 else None)
    pairs = [("tensor_parallel", o.tp), ("pipeline_parallel", o.pp if o.pp > 1 else None), ("data_parallel", dp),
             ("dp_attention", o.dp > 1), ("expert_parallel", o.ep if o.ep > 1 else None),
             ("max_batch", o.max_batch),  # per scheduler it is this // dp under DP attention, else as is
             ("max_model_len", result.workload.max_context), ("memory_fraction", _fraction(result, preset)),
             ("disable_custom_allreduce", _custom_unavailable("sglang", system, o, catalog))]
    line = f"{preset.launcher} --model-path {hf_id(cfg)} {_flags(preset.cli, pairs)}"
    extra = f"; run {o.replicas} such servers" if o.dp > 1 and o.replicas > 1 else ""
    return f"{line}  # SGLang {preset.version}{extra}"


def trtllm_line(result, cfg: ModelConfig, system: System) -> str:
    o, preset = result.best, load_engine("trtllm")
    pairs = [("tensor_parallel", o.tp), ("pipeline_parallel", o.pp), ("expert_parallel", o.ep if o.ep > 1 else None),
             ("max_batch", o.max_batch), ("max_model_len", result.workload.max_context),
             ("memory_fraction", _fraction(result, preset))]
    extra = f"; one process per replica, {o.replicas} in all" if o.replicas > 1 else ""
    note = "; attention DP: enable_attention_dp: true in --extra_llm_api_options" if o.dp > 1 else ""
    return f"{preset.launcher} {hf_id(cfg)} {_flags(preset.cli, pairs)}  # TensorRT-LLM {preset.version}{extra}{note}"


def launch_lines(result, cfg: ModelConfig, system: System, catalog: Catalog) -> dict[str, str]:
    """The chosen option's command line for each engine."""
    return {"vllm": vllm_line(result, cfg, system, catalog), "sglang": sglang_line(result, cfg, system, catalog),
            "trtllm": trtllm_line(result, cfg, system)}


__all__ = ["LAUNCH_ENGINES", "hf_id", "launch_lines"]
