"""`shardbudget deploy`: how to spend N GPUs, with the engine command lines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from . import args
from .app import app
from .args import (NcclOpt, NcclSymmetricOpt, BudgetOpt, CatalogOpt, ContextOpt, DeployBatchOpt, DownloadOpt, EngineOpt,
                   ForceOpt, GpuMemoryOpt, GpusOpt, ImplOpt,
                   InputLenOpt, JitterOpt, JsonOpt, KvDtypeOpt, MemoryOpt, OutputLenOpt, ModelOpt, NodesOpt, OverlapOpt, PlotOpt, SequenceParallelOpt, SystemOpt, TtftBudgetOpt,
                   WeightDtypeOpt)
from .common import check_plot, load_catalogs, model_name, print_json, write_plot


@app.command()
def deploy(
    *,
    model: ModelOpt,
    system: SystemOpt,
    gpus: GpusOpt = None,
    rate: Annotated[Optional[float], typer.Option("--rate", help="Requests per second to serve: deploy finds the fewest GPUs (instead of --gpus).")] = None,
    users: Annotated[Optional[int], typer.Option("--users", help="Concurrent users to serve, one request in flight each: deploy finds the fewest GPUs (instead of --gpus).")] = None,
    nodes: NodesOpt = None,
    budget: BudgetOpt = "30ms",
    ttft_budget: TtftBudgetOpt = None,
    input_len: InputLenOpt = None,
    output_len: OutputLenOpt = None,
    context: ContextOpt = None,
    batch: DeployBatchOpt = None,
    engine: EngineOpt = args.DEFAULT_ENGINE,
    impl: ImplOpt = None,
    dtype: WeightDtypeOpt = None,
    kv_dtype: KvDtypeOpt = None,
    sequence_parallel: SequenceParallelOpt = False,
    overlap: OverlapOpt = "none",
    speculative: Annotated[Optional[str], typer.Option("--speculative", help="Speculative decoding: mtp | eagle | draft.")] = None,
    draft_tokens: Annotated[Optional[int], typer.Option("--draft-tokens", help="Tokens the draft proposes per step (default 3).")] = None,
    acceptance: Annotated[Optional[float], typer.Option("--acceptance", help="Probability each draft token is accepted (default 0.7).")] = None,
    draft_model: Annotated[Optional[str], typer.Option("--draft-model", help="The draft model for --speculative draft.")] = None,
    gpu_memory_utilization: GpuMemoryOpt = None,
    disaggregate: Annotated[Optional[str], typer.Option("--disaggregate", help="P:D GPUs for prefill and decode, e.g. 2:6.")] = None,
    plot: PlotOpt = None,
    emit: Annotated[Optional[tuple[str, Path]], typer.Option("--emit", metavar="slurm|k8s DIR", help="Write a Slurm batch script or Kubernetes manifests for the best option into DIR (an existing DIR needs --force).")] = None,
    force: ForceOpt = False,
    memory_table: MemoryOpt = False,
    jitter: JitterOpt = None,
    pp_all: Annotated[bool, typer.Option("--pp-all", hidden=True, help="plan's flag, accepted: deploy sweeps every PP degree always (every split of the GPUs).")] = False,  # noqa: ARG001
    show_all: Annotated[bool, typer.Option("--all", help=f"Show every option (default: the best {args.DEPLOY_ROWS}; --json has all).")] = False,
    catalog: CatalogOpt = None,
    nccl: NcclOpt = None,
    nccl_symmetric: NcclSymmetricOpt = False,
    download: DownloadOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """How to spend N GPUs: replicas x TP x PP at the largest batch within the budgets, tokens/s per GPU, launch lines.

    With --rate or --users instead of --gpus: the fewest GPUs that serve that load within the budgets.

    Exit 0: an option meets the budgets; 1: the request is valid but none does (the table is printed,
    the closest option named); 2: bad input."""
    load = _load(rate, users, gpus=gpus, nodes=nodes, disaggregate=disaggregate, batch=batch)
    check_plot(plot, force=force)
    model = model_name(model, download)
    spec = args.speculation(speculative, draft_tokens, acceptance, model_name(draft_model, download) if draft_model else draft_model)
    work = _workload(context, input_len, output_len, spec)
    _emit(None, emit, engine=engine, force=force)  # a bad --emit is refused before any work
    request = dict(budget_s=args.budget(budget), ttft_budget_s=args.ttft_budget(ttft_budget), workload=work,
                   engine=engine, impl=_impl(impl), dtype=dtype, kv_dtype=kv_dtype, catalog=load_catalogs(catalog, nccl, nccl_symmetric),
                   settings=_settings(gpu_memory_utilization, overlap, sequence_parallel), jitter=args.jitter(jitter))
    shown = dict(json_out=json_out, show_all=show_all, plot=plot, force=force, memory_table=memory_table)
    result = (_for_load(model, system, load, request, shown) if load is not None else
              _for_gpus(model, system, request, shown, gpus=gpus, nodes=nodes, batch=batch, disaggregate=disaggregate))
    if result is None or result.best is None:  # a valid request that nothing meets: the closest option, exit 1
        raise typer.Exit(1)
    _emit(result, emit, engine=engine, force=force)


def _impl(impl):
    from ..decide.planner import check_impl
    return check_impl(impl)


def _settings(memory_utilization, overlap, sequence_parallel):
    from ..step.settings import PlanSettings
    return PlanSettings(memory_utilization=memory_utilization, overlap=overlap, sequence_parallel=sequence_parallel)


def _load(rate, users, *, gpus, nodes, disaggregate, batch):
    """The load of --rate / --users (None: --gpus is the question), refusing what does not go with it."""
    from ..errors import PlanError
    if rate is None and users is None:
        if gpus is None:
            raise PlanError("deploy needs --gpus (the GPUs to spend), or --rate / --users (the load to serve)")
        return None
    given = "--rate" if rate is not None else "--users"
    for flag, value in (("--gpus", gpus), ("--nodes", nodes), ("--disaggregate", disaggregate), ("--batch", batch)):
        if value is not None:
            raise PlanError(f"{given} finds the GPUs itself: give {given} or {flag}, not both")
    from ..decide.capacity import Load
    return Load(rate_per_s=rate, users=users)


def _workload(context, input_len, output_len, spec):
    """The requests deploy prices: ISL/OSL (defaults 2048/256) or, decode only, a fixed context."""
    from ..decide.deploy import Workload
    from ..errors import PlanError
    if context is not None and (input_len is not None or output_len is not None):
        raise PlanError("give --context (decode only) or --input-len/--output-len, not both")
    return Workload(input_len=args.tokens("--input-len", input_len) or 2048,
                    output_len=args.tokens("--output-len", output_len) or 256, context=context, speculation=spec)


def _show(result, *, json_out: bool, show_all: bool, plot, force: bool, memory_table: bool = False) -> None:
    """The options table (or JSON: every option's memory parts), --memory's table, the Pareto figure on request."""
    if json_out:
        print_json(result.to_dict())
    else:
        from ..report import tables
        rows = None if show_all else tables.DEPLOY_ROWS
        tables.print_deploy(result, rows=rows)
        if memory_table:
            tables.print_deploy_memory(result, rows=rows)
    if plot:
        from ..report import figures
        write_plot(lambda: figures.pareto_figure(result), plot, force=force)


def _for_gpus(model, system, request: dict, shown: dict, *, gpus, nodes, batch, disaggregate):
    """--gpus: deploy's options on those GPUs, shown; its result."""
    from ..decide.deploy import deploy as run_deploy
    from ..decide.disagg import parse_split
    result = run_deploy(model, system, gpus=gpus, nodes=nodes, batch=batch,
                        disaggregate=parse_split(disaggregate) if disaggregate else None, **request)
    _show(result, **shown)
    return result


def _for_load(model, system, load, request: dict, shown: dict):
    """--rate / --users: the answer in words, then deploy's table on that many GPUs (or the JSON of
    both); deploy's result on those GPUs (None: nothing serves the load)."""
    from ..decide.capacity import deploy_for_load
    answer = deploy_for_load(model, system, load, **request)
    if shown["json_out"]:
        print_json(answer.to_dict())
        return answer.result
    from ..quoting import terminal
    typer.echo(terminal(answer.text))
    if answer.result is not None:
        _show(answer.result, **shown)
    return answer.result


def _emit(result, emit: tuple[str, Path] | None, *, engine: str, force: bool) -> None:
    """--emit KIND DIR: check it (result None), or write the best option's files."""
    if not emit:
        return
    from ..decide.launch import emit as emitting  # command-only module (start-up)
    if result is None:
        emitting.check_emit(emit[0], emit[1], force=force)
        return
    from ..quoting import terminal
    for path in emitting.emit(result, emit[0], emit[1], engine=engine, force=force):
        typer.echo(terminal(f"wrote {path}"), err=True)
