"""`shardbudget plan`: sweep the plans of one model on one system and say how far it can be sharded."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from . import args
from .app import app
from .args import (NcclOpt, NcclSymmetricOpt, BatchOpt, BudgetOpt, CatalogOpt, ContextOpt, DownloadOpt, EngineOpt, ForceOpt, GpuMemoryOpt, ImplOpt,
                   InputLenOpt, JitterOpt, OutputLenOpt,
                   JsonOpt, KvDtypeOpt, MemoryOpt, ModelOpt, NodesOpt, OverlapOpt, PlotOpt, SequenceParallelOpt, SystemOpt,
                   TtftBudgetOpt, WeightDtypeOpt)
from .common import check_plot, load_catalogs, model_name, print_json, write_plot

PpAllOpt = Annotated[bool, typer.Option("--pp-all", help="Sweep every PP degree, not only those that fill the nodes.")]


@app.command("plan")
def plan_cmd(
    *,
    model: ModelOpt,
    system: SystemOpt,
    nodes: NodesOpt = None,
    batch: BatchOpt = None,
    context: ContextOpt = None,
    input_len: InputLenOpt = None,
    output_len: OutputLenOpt = None,
    budget: BudgetOpt = "30ms",
    ttft_budget: TtftBudgetOpt = None,
    impl: ImplOpt = None,
    dtype: WeightDtypeOpt = None,
    kv_dtype: KvDtypeOpt = None,
    comm_threshold: Annotated[float, typer.Option("--comm-threshold", help="Communication share of the latency-optimal plan's ITL above which it is flagged comm-bound (a warning, not the 'sharded too far' verdict).")] = 0.30,
    knee_threshold: Annotated[float, typer.Option("--knee-threshold", help="Gain below which the next TP is not worth it (latency-optimal TP).")] = 0.10,
    engine: EngineOpt = args.DEFAULT_ENGINE,
    sequence_parallel: SequenceParallelOpt = False,
    overlap: OverlapOpt = "none",
    gpu_memory_utilization: GpuMemoryOpt = None,
    memory_table: MemoryOpt = False,
    pp_all: PpAllOpt = False,
    require_tp: Annotated[Optional[int], typer.Option("--require-tp", help="Also solve what the fabric would need for this TP to meet the budget.")] = None,
    jitter: JitterOpt = None,
    plot: PlotOpt = None,
    force: ForceOpt = False,
    catalog: CatalogOpt = None,
    nccl: NcclOpt = None,
    nccl_symmetric: NcclSymmetricOpt = False,
    download: DownloadOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Sweep TP x PP (x EP) and say how far the model can be sharded within the budget."""
    from ..decide.planner import plan, required_fabric
    from ..errors import PlanError
    from ..step.settings import PlanSettings, engine_efficiency
    check_plot(plot, force=force)
    model = model_name(model, download)
    budget_s = args.budget(budget)
    if require_tp is not None and budget_s is None:
        raise PlanError("--require-tp asks what the fabric needs to meet a budget: give --budget, not 'none'")
    ttft_s = args.ttft_budget(ttft_budget)
    eff, cat, nodes, batches = engine_efficiency(engine), load_catalogs(catalog, nccl, nccl_symmetric), nodes or 1, batch or [1]
    settings = PlanSettings(sequence_parallel=sequence_parallel, overlap=overlap,
                            memory_utilization=gpu_memory_utilization)
    result = plan(model, system, nodes=nodes, batches=batches, context=context, budget_s=budget_s,
                  ttft_budget_s=ttft_s, impl=impl, engine=engine, dtype=dtype, kv_dtype=kv_dtype,
                  comm_threshold=comm_threshold, knee_threshold=knee_threshold, pp_all=pp_all, eff=eff,
                  settings=settings, jitter=args.jitter(jitter), catalog=cat,
                  input_len=args.tokens("--input-len", input_len), output_len=args.tokens("--output-len", output_len))
    req = None
    if require_tp is not None:  # --require-tp 0 is an error to report, not "unset"
        req = required_fabric(model, system, tp=require_tp, nodes=nodes, batch=batches[0], context=result.context,
                              budget_s=budget_s, impl=impl, engine=engine, dtype=dtype, eff=eff, settings=settings,
                              catalog=cat)
    _print_plan(result, req, json_out=json_out, memory_table=memory_table)
    if plot:
        from ..report import figures
        write_plot(lambda: figures.where_the_token_goes([result]), plot, force=force)


def _print_plan(result, req, *, json_out: bool, memory_table: bool) -> None:
    if json_out:
        print_json({**result.to_dict(), **({"requirement": req.to_dict()} if req else {})})
        return
    from ..report import tables
    tables.print_plan(result)
    if memory_table:
        tables.print_memory(result)
    if req:
        tables.say(f"\nWhat TP{req.tp} would need: {req.explanation}")
