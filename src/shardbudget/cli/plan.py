"""`shardbudget plan`: sweep the plans of one model on one system and say how far it can be sharded."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from . import args
from .app import app
from .args import (
    BatchOpt,
    ContextOpt,
    InputLenOpt,
    JitterOpt,
    JsonOpt,
    MemoryOpt,
    ModelOpt,
    NodesOpt,
    OutputLenOpt,
    PlotOpt,
    ForceOpt,
    SystemOpt,
)
from .command_io import check_plot, print_json, write_plot
from .options import BUDGETS, FABRIC, STEP, BudgetArgs, FabricArgs, StepArgs, build_request, groups

PpAllOpt = Annotated[bool, typer.Option("--pp-all", help="Sweep every PP degree, not only those that fill the nodes.")]


@app.command("plan")
@groups(FABRIC, STEP, BUDGETS)
def plan_cmd(
    *,
    model: ModelOpt,
    system: SystemOpt,
    nodes: NodesOpt = None,
    batch: BatchOpt = None,
    context: ContextOpt = None,
    input_len: InputLenOpt = None,
    output_len: OutputLenOpt = None,
    comm_threshold: Annotated[
        float,
        typer.Option(
            "--comm-threshold",
            help="Communication share of the latency-optimal plan's ITL above which it is flagged comm-bound (a warning, not the 'sharded too far' verdict).",
        ),
    ] = args.COMM_THRESHOLD,
    knee_threshold: Annotated[
        float,
        typer.Option("--knee-threshold", help="Gain below which the next TP is not worth it (latency-optimal TP)."),
    ] = args.KNEE_THRESHOLD,
    memory_table: MemoryOpt = False,
    pp_all: PpAllOpt = False,
    require_tp: Annotated[
        Optional[int],
        typer.Option("--require-tp", help="Also solve what the fabric would need for this TP to meet the budget."),
    ] = None,
    jitter: JitterOpt = None,
    plot: PlotOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
    fabric: FabricArgs,
    step: StepArgs,
    budgets: BudgetArgs,
) -> None:
    """Sweep TP x PP (x EP) and say how far the model can be sharded within the budget."""
    from ..decide.planner import plan, required_fabric
    from ..errors import PlanError

    check_plot(plot, force=force)
    if require_tp is not None and args.budget(budgets.budget) is None:
        raise PlanError("--require-tp asks what the fabric needs to meet a budget: give --budget, not 'none'")
    req = build_request(
        model,
        system,
        fabric=fabric,
        step=step,
        budgets=budgets,
        nodes=nodes,
        batches=batch or [1],
        context=context,
        input_len=input_len,
        output_len=output_len,
        jitter=jitter,
        pp_all=pp_all,
        comm_threshold=comm_threshold,
        knee_threshold=knee_threshold,
    )
    result = plan(req)
    need = required_fabric(req, require_tp) if require_tp is not None else None  # --require-tp 0 is an error to report
    _print_plan(result, need, json_out=json_out, memory_table=memory_table)
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
