"""`shardbudget deploy`: how to spend N GPUs, with the engine command lines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from . import args
from .app import app
from .args import (
    ContextOpt,
    DeployBatchOpt,
    ForceOpt,
    GpusOpt,
    InputLenOpt,
    JitterOpt,
    JsonOpt,
    MemoryOpt,
    ModelOpt,
    NodesOpt,
    OutputLenOpt,
    PlotOpt,
    SystemOpt,
)
from .command_io import check_plot, print_json, write_plot
from .options import BUDGETS, FABRIC, STEP, BudgetArgs, FabricArgs, StepArgs, build_request, groups


@app.command()
@groups(FABRIC, STEP, BUDGETS)
def deploy(
    *,
    model: ModelOpt,
    system: SystemOpt,
    gpus: GpusOpt = None,
    rate: Annotated[
        Optional[float],
        typer.Option("--rate", help="Requests per second to serve: deploy finds the fewest GPUs (instead of --gpus)."),
    ] = None,
    users: Annotated[
        Optional[int],
        typer.Option(
            "--users",
            help="Concurrent users to serve, one request in flight each: deploy finds the fewest GPUs (instead of --gpus).",
        ),
    ] = None,
    nodes: NodesOpt = None,
    input_len: InputLenOpt = None,
    output_len: OutputLenOpt = None,
    context: ContextOpt = None,
    batch: DeployBatchOpt = None,
    speculative: Annotated[
        Optional[str], typer.Option("--speculative", help="Speculative decoding: mtp | eagle | draft.")
    ] = None,
    draft_tokens: Annotated[
        Optional[int],
        typer.Option("--draft-tokens", help=f"Tokens the draft proposes per step (default {args.DRAFT_TOKENS})."),
    ] = None,
    acceptance: Annotated[
        Optional[float],
        typer.Option("--acceptance", help=f"Probability each draft token is accepted (default {args.ACCEPTANCE})."),
    ] = None,
    draft_model: Annotated[
        Optional[str], typer.Option("--draft-model", help="The draft model for --speculative draft.")
    ] = None,
    disaggregate: Annotated[
        Optional[str],
        typer.Option(
            "--disaggregate",
            help="P:D GPUs for prefill and decode, e.g. 2:6; off: aggregated replicas alone; auto: search the splits beside the uniform options, answer the best and say which layout wins (default: searched where prompts are served, no --batch and --objective throughput; named when a split wins).",
        ),
    ] = None,
    plot: PlotOpt = None,
    emit: Annotated[
        Optional[tuple[str, Path]],
        typer.Option(
            "--emit",
            metavar="slurm|k8s DIR",
            help="Write a Slurm batch script or Kubernetes manifests for the best option into DIR (an existing DIR needs --force).",
        ),
    ] = None,
    force: ForceOpt = False,
    rdma_resource: Annotated[
        Optional[str],
        typer.Option(
            "--rdma-resource",
            help="--emit k8s: the RDMA device plugin's resource a pod of a group across nodes asks for (default by fabric: rdma/hca_shared_devices_a, NVIDIA's k8s-rdma-shared-dev-plugin; vpc.amazonaws.com/efa on EFA).",
        ),
    ] = None,
    host_network: Annotated[
        bool,
        typer.Option("--host-network", help="--emit k8s: run the server pods on the nodes' network (hostNetwork)."),
    ] = False,
    memory_table: MemoryOpt = False,
    jitter: JitterOpt = None,
    pp_all: Annotated[
        bool,
        typer.Option(
            "--pp-all",
            hidden=True,
            help="plan's flag, accepted: deploy sweeps every PP degree always (every split of the GPUs).",
        ),
    ] = False,  # noqa: ARG001
    objective: Annotated[
        str,
        typer.Option(
            "--objective",
            metavar="throughput|cost|energy",
            help="Rank the options by tokens/s per GPU (default), $ per million output tokens (cost) or output tokens per joule (energy); the Pareto figure's y-axis follows it.",
        ),
    ] = "throughput",
    gpu_hour_usd: Annotated[
        Optional[float],
        typer.Option(
            "--gpu-hour-usd",
            help="US dollars for one GPU for one hour (default: the catalog's prices.toml, or a [system_costs.<system>] table in --catalog).",
        ),
    ] = None,
    gpu_watts: Annotated[
        Optional[float],
        typer.Option(
            "--gpu-watts", help="One GPU board's power under load, W (default: the catalog's [gpu_power.<gpu>])."
        ),
    ] = None,
    show_all: Annotated[
        bool,
        typer.Option(
            "--all",
            help=f"Show every option and every launch line (default: the best {args.DEPLOY_ROWS} options, and one line per kind of step where a launch has more than 16; --json and --emit have all).",
        ),
    ] = False,
    json_out: JsonOpt = False,
    fabric: FabricArgs,
    step: StepArgs,
    budgets: BudgetArgs,
) -> None:
    """How to spend N GPUs: replicas x TP x PP at the largest batch within the budgets, tokens/s per GPU, launch lines.

    With --rate or --users instead of --gpus: the fewest GPUs that serve that load within the budgets.

    Exit 0: an option meets the budgets; 1: the request is valid but none does (the table is printed,
    the closest option named); 2: bad input; 3: an internal error (a bug)."""
    load = _load(rate, users, gpus=gpus, nodes=nodes, disaggregate=disaggregate, batch=batch)
    from ..decide.cost import Pricing  # deploy's alone (start-up)

    pricing = Pricing(objective=objective, gpu_hour_usd=gpu_hour_usd, gpu_watts=gpu_watts)
    check_plot(plot, force=force)
    spec = args.speculation(
        speculative, draft_tokens, acceptance, fabric.model(draft_model) if draft_model else draft_model
    )
    k8s = _k8s_options(rdma_resource, host_network, emit)
    _emit(None, emit, engine=fabric.engine, force=force)  # a bad --emit is refused before any work
    req = build_request(
        model,
        system,
        fabric=fabric,
        step=step,
        budgets=budgets,
        nodes=nodes,
        context=context,
        input_len=input_len,
        output_len=output_len,
        speculation=spec,
        jitter=jitter,
        pricing=pricing,
    )
    shown = dict(json_out=json_out, show_all=show_all, plot=plot, force=force, memory_table=memory_table)
    result = (
        _for_load(req, load, shown)
        if load is not None
        else _for_gpus(req, shown, gpus=gpus, batch=batch, disaggregate=disaggregate)
    )
    if result is None or result.best is None:  # a valid request that nothing meets: the closest option, exit 1
        raise typer.Exit(1)
    _emit(result, emit, engine=fabric.engine, force=force, k8s=k8s)


def _k8s_options(rdma_resource, host_network: bool, emit):
    """--emit k8s's cluster options, checked before any work (refused without --emit k8s)."""
    if rdma_resource is None and not host_network:
        return None
    from ..errors import PlanError

    if not emit or emit[0] != "k8s":
        raise PlanError(
            f"{'--rdma-resource' if rdma_resource is not None else '--host-network'} shapes the "
            f"Kubernetes manifests: give it with --emit k8s DIR"
        )
    from ..decide.launch.k8s import K8sOptions

    return K8sOptions(rdma_resource=rdma_resource, host_network=host_network)


def _load(rate, users, *, gpus, nodes, disaggregate, batch):
    """The load of --rate / --users (None: --gpus is the question), refusing what does not go with it."""
    from ..errors import PlanError

    if rate is None and users is None:
        if gpus is None:
            raise PlanError("deploy needs --gpus (the GPUs to spend), or --rate / --users (the load to serve)")
        return None
    given = "--rate" if rate is not None else "--users"
    split = None if (disaggregate or "").strip().lower() == "off" else disaggregate  # aggregated, as a load's answer
    for flag, value in (("--gpus", gpus), ("--nodes", nodes), ("--disaggregate", split), ("--batch", batch)):
        if value is not None:
            raise PlanError(f"{given} finds the GPUs itself: give {given} or {flag}, not both")
    from ..decide.capacity import Load

    return Load(rate_per_s=rate, users=users)


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

        write_plot(lambda: figures.pareto_figure(result, axis=result.costs.objective), plot, force=force)


def _for_gpus(req, shown: dict, *, gpus, batch, disaggregate):
    """--gpus: deploy's options on those GPUs, shown; its result."""
    from ..decide.deploy import deploy as run_deploy
    from ..decide.disagg import parse_split
    from ..errors import PlanError

    mode = (disaggregate or "").strip().lower()
    if mode == "auto" or (not mode and _searched_by_default(req, batch)):
        if batch is not None:
            raise PlanError(
                "--disaggregate auto searches prefill:decode splits of served prompts: "
                "give --batch or --disaggregate, not both"
            )
        from ..decide.split_search import deploy_searched

        result = deploy_searched(req, gpus=gpus, quiet_uniform=not mode)
    else:
        split = parse_split(disaggregate) if mode and mode != "off" else None
        result = run_deploy(req, gpus=gpus, batch=batch, disaggregate=split)
    _show(result, **shown)
    return result


def _searched_by_default(req, batch) -> bool:
    """Whether deploy searches the prefill:decode splits without --disaggregate: where prompts are
    served (not --context), at each option's own batch (not --batch), ranked by tokens/s per GPU
    (the search's measure; --objective cost / energy rank the uniform options alone)."""
    objective = req.pricing.objective if req.pricing is not None else "throughput"
    return batch is None and not req.served_workload.context and objective == "throughput"


def _for_load(req, load, shown: dict):
    """--rate / --users: the answer in words, then deploy's table on that many GPUs (or the JSON of
    both); deploy's result on those GPUs (None: nothing serves the load)."""
    from ..decide.capacity import deploy_for_load

    answer = deploy_for_load(req, load)
    if shown["json_out"]:
        print_json(answer.to_dict())
        return answer.result
    from ..quoting import terminal

    typer.echo(terminal(answer.text))
    if answer.result is not None:
        _show(answer.result, **shown)
    return answer.result


def _emit(result, emit: tuple[str, Path] | None, *, engine: str, force: bool, k8s=None) -> None:
    """--emit KIND DIR: check it (result None), or write the best option's files."""
    if not emit:
        return
    from ..decide.launch import emit as emitting  # command-only module (start-up)

    if result is None:
        emitting.check_emit(emit[0], emit[1], force=force)
        return
    from ..quoting import terminal

    for path in emitting.emit(result, emit[0], emit[1], engine=engine, force=force, k8s=k8s):
        typer.echo(terminal(f"wrote {path}"), err=True)
