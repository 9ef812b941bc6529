"""`shardbudget plan`: sweep the plans of one model on one system and say how far it can be sharded."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import units
from ..decide.planner import plan, required_fabric
from ..errors import PlanError
from ..report import figures, tables
from ..step.settings import DEFAULT_ENGINE, PlanSettings, engine_efficiency
from . import args
from .app import app
from .args import CatalogOpt, DownloadOpt, GpuMemoryOpt, JsonOpt, NodesOpt
from .common import check_plot, load_catalogs, model_name, print_json, write_plot


@app.command("plan")
def plan_cmd(
    *,
    model: Annotated[str, typer.Option("--model", "-m", help="Model name (see `shardbudget models`), a config.json path or folder, or a Hugging Face id (ORG/NAME, from the local HF cache; --download fetches its config.json).")],
    system: Annotated[str, typer.Option("--system", "-s", help="System name, e.g. hgx-h100.")],
    nodes: NodesOpt = 1,
    batch: Annotated[Optional[list[int]], typer.Option("--batch", "-b", help="Decode batch size (repeatable).")] = None,
    context: Annotated[int, typer.Option("--context", help="Tokens in the KV cache per sequence (and the prompt length for TTFT).")] = 4096,
    budget: Annotated[str, typer.Option("--budget", help="Inter-token latency budget, e.g. 30ms ('none' to skip).")] = "30ms",
    ttft_budget: Annotated[Optional[str], typer.Option("--ttft-budget", help="Time-to-first-token budget, e.g. 2s.")] = None,
    impl: Annotated[Optional[str], typer.Option("--impl", help="Force every all-reduce to nccl | custom (default: the engine decides by size, as it does)")] = None,
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="Weight dtype: bf16 | fp8 | int8 | int4 | mxfp4 | nvfp4 (default: the checkpoint's own, from its config.json)")] = None,
    kv_dtype: Annotated[Optional[str], typer.Option("--kv-dtype", help="KV-cache dtype (default: auto, the activation dtype, as engines do).")] = None,
    comm_threshold: Annotated[float, typer.Option("--comm-threshold", help="Communication share of the latency-optimal plan's ITL above which it is flagged comm-bound (a warning, not the 'sharded too far' verdict).")] = 0.30,
    knee_threshold: Annotated[float, typer.Option("--knee-threshold", help="Gain below which the next TP is not worth it (latency-optimal TP).")] = 0.10,
    engine: Annotated[str, typer.Option("--engine", help="vllm | sglang | trtllm | eager (vLLM without CUDA graphs) | vllm-v0 | tgi: which all-reduce kernels, CUDA graphs and host costs a step has")] = DEFAULT_ENGINE,
    sequence_parallel: Annotated[bool, typer.Option("--sequence-parallel", help="TP all-reduces become reduce-scatter + all-gather.")] = False,
    overlap: Annotated[str, typer.Option("--overlap", help="How communication overlaps compute: none | tbo (two-batch overlap) | fused (GEMM + collective kernels).")] = "none",
    gpu_memory_utilization: GpuMemoryOpt = None,
    memory_table: Annotated[bool, typer.Option("--memory", help="Also print what each plan's bytes per GPU are made of.")] = False,
    pp_all: Annotated[bool, typer.Option("--pp-all", help="Sweep every PP degree, not only those that fill the nodes.")] = False,
    require_tp: Annotated[Optional[int], typer.Option("--require-tp", help="Also solve what the fabric would need for this TP to meet the budget.")] = None,
    jitter: Annotated[Optional[list[Path]], typer.Option("--jitter", help="Log with per-iteration times (nccl-tests -I 1, text or -J JSON; shardbudget measure JSON): adds the ITL's p99 beside its mean (repeat).")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write the 'where the token goes' figure (PNG/SVG).")] = None,
    catalog: CatalogOpt = None,
    download: DownloadOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Sweep TP x PP (x EP) and say how far the model can be sharded within the budget."""
    from ..decide.tail_plan import read_jitter  # command-only module (start-up)
    check_plot(plot)
    model = model_name(model, download)
    budget_s = args.budget(budget)
    if require_tp is not None and budget_s is None:
        raise PlanError("--require-tp asks what the fabric needs to meet a budget: give --budget, not 'none'")
    ttft_s = units.parse_seconds(ttft_budget, what="--ttft-budget") if ttft_budget else None
    eff = engine_efficiency(engine)
    settings = PlanSettings(sequence_parallel=sequence_parallel, overlap=overlap,
                            memory_utilization=gpu_memory_utilization)
    cat = load_catalogs(catalog)
    result = plan(model, system, nodes=nodes, batches=batch or [1], context=context, budget_s=budget_s,
                  ttft_budget_s=ttft_s, impl=impl, engine=engine, dtype=dtype, kv_dtype=kv_dtype,
                  comm_threshold=comm_threshold, knee_threshold=knee_threshold, pp_all=pp_all, eff=eff,
                  settings=settings, jitter=read_jitter(jitter) if jitter else None, catalog=cat)
    req = None
    if require_tp is not None:  # --require-tp 0 is an error to report, not "unset"
        req = required_fabric(model, system, tp=require_tp, nodes=nodes, batch=(batch or [1])[0], context=context,
                              budget_s=budget_s, impl=impl, engine=engine, dtype=dtype, eff=eff, settings=settings,
                              catalog=cat)
    _print_plan(result, req, json_out=json_out, memory_table=memory_table)
    if plot:
        write_plot(lambda: figures.where_the_token_goes([result]), plot)


def _print_plan(result, req, *, json_out: bool, memory_table: bool) -> None:
    if json_out:
        print_json({**result.to_dict(), **({"requirement": req.to_dict()} if req else {})})
        return
    tables.print_plan(result)
    if memory_table:
        tables.print_memory(result)
    if req:
        print(f"\nWhat TP{req.tp} would need: {req.explanation}")
