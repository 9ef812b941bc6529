"""`shardbudget report` and `shardbudget demo`: the single-file HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from . import args
from .app import app
from .args import BatchOpt, ContextOpt, EngineOpt, ForceOpt, JsonOpt, ModelOpt, NodesListOpt, OutOpt, SystemsOpt
from .command_io import print_json, progress_bar
from .options import BUDGETS, FABRIC, STEP, BudgetArgs, FabricArgs, StepArgs, build_request, groups


def _systems(system: list[str], nodes: Optional[list[int]]) -> tuple[list[str], int]:
    """(systems as the report reads them, nodes of the others): --nodes once for every system or once
    per system; the old 'NAME:N' spelling still works for one release."""
    from ..errors import PlanError

    if any(":" in s for s in system):
        typer.echo(
            "warning: --system NAME:N is now --system NAME --nodes N; NAME:N will be removed in the next release",
            err=True,
        )
    if not nodes:
        return system, 1
    if len(nodes) == 1:
        return system, nodes[0]
    if len(nodes) != len(system):
        raise PlanError(
            f"--nodes given {len(nodes)} times for {len(system)} --system: give it once, or once per system"
        )
    if any(":" in s for s in system):
        raise PlanError("give nodes either as --nodes or as NAME:N, not both")
    return [f"{s}:{n}" for s, n in zip(system, nodes)], 1


@app.command()
@groups(FABRIC, STEP, BUDGETS)
def report(
    *,
    model: ModelOpt,
    system: SystemsOpt,
    nodes: NodesListOpt = None,
    batch: BatchOpt = None,
    context: ContextOpt = None,
    measured: Annotated[
        Optional[list[Path]],
        typer.Option(
            "--measured",
            help="nccl-tests log (text or -J JSON) or shardbudget measure JSON to lay over the model (repeat).",
        ),
    ] = None,
    measured_system: Annotated[
        Optional[str],
        typer.Option(
            "--measured-system", help="System the measurements are compared with (default: the first --system)."
        ),
    ] = None,
    out: OutOpt = None,
    force: ForceOpt = False,
    budget_steps: Annotated[
        int,
        typer.Option(
            "--budget-steps",
            help="Budgets the interactive section's slider offers (0: no interactive section, no script).",
        ),
    ] = args.DEFAULT_BUDGET_STEPS,
    json_out: JsonOpt = False,
    fabric: FabricArgs,
    step: StepArgs,
    budgets: BudgetArgs,
) -> None:
    """One self-contained HTML file: verdict, figures, the tables behind them, sources and assumptions (default report.html)."""
    from ..decide.report_answers import answer_report
    from ..report import html as report_html
    from ..step.scenario import check_impl
    from ..engines.presets import load_engine

    out = out or Path("report.html")
    check_impl(fabric.impl)
    load_engine(fabric.engine)  # an unknown engine fails here, in one line, before any work
    report_html.check_report_path(out, force=force)  # before the sweep, not after it
    systems, default_nodes = _systems(system, nodes)
    first = report_html.parse_system_spec(systems[0], default_nodes)
    req = build_request(
        model,
        first.name,
        fabric=fabric,
        step=step,
        budgets=budgets,
        nodes=default_nodes,
        batches=batch or args.REPORT_BATCHES,
        context=context or args.CONTEXT_TOKENS,
    )
    with progress_bar() as progress:
        answers = answer_report(
            req,
            systems,
            measured=measured or (),
            measured_system=measured_system,
            progress=progress,
            budget_steps=budget_steps,
        )
        data = report_html.view(answers)
        text = report_html.render(data, progress)
    path = report_html.write_html(out, text, force=force)
    if json_out:
        print_json(
            {
                "model": data.model,
                "headline": report_html.headline(data),
                "report": str(path.resolve()),
                "settings": data.settings,
                "plans": data.plans,
            }
        )
        return
    print(report_html.headline(data))
    print(f"report: {path.resolve()}")


@app.command()
def demo(out: OutOpt = None, force: ForceOpt = False, engine: EngineOpt = args.DEFAULT_ENGINE) -> None:
    """Llama-3.1-70B, bf16, batch 1 and 64, 50 ms: HGX H100 vs 8x L40S on PCIe vs 2 HGX H100 over InfiniBand (default report.html)."""
    from ..decide.report_answers import demo_answers
    from ..engines.presets import load_engine
    from ..report import demo as demo_mod, html as report_html

    out = out or Path("report.html")
    load_engine(engine)  # an unknown engine fails here, in one line, before any work
    report_html.check_report_path(out, force=force)
    with progress_bar() as progress:
        data = report_html.view(demo_answers(engine=engine, progress=progress))
        path = report_html.write_html(out, report_html.render(data, progress), force=force)
    demo_mod.print_verdict_table(data)
    print(report_html.headline(data))
    print(f"report: {path.resolve()}  (one self-contained file: open it in a browser)")
