"""`shardbudget deploy`: how to spend N GPUs, with the engine command lines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import units
from ..errors import PlanError
from ..report import figures, tables
from ..step.settings import DEFAULT_ENGINE, PlanSettings
from . import args
from .app import app
from .args import CatalogOpt, DownloadOpt, GpuMemoryOpt, JsonOpt
from .common import check_plot, load_catalogs, model_name, print_json, write_plot


@app.command()
def deploy(
    *,
    model: Annotated[str, typer.Option("--model", "-m", help="Model name, config.json path or folder, or Hugging Face id (ORG/NAME).")],
    system: Annotated[str, typer.Option("--system", "-s", help="System name, e.g. hgx-h100.")],
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs to spend (split into identical replicas).")],
    nodes: Annotated[Optional[int], typer.Option("--nodes", help="Nodes (default: as many as --gpus needs).")] = None,
    budget: Annotated[str, typer.Option("--budget", help="Inter-token latency budget ('none' to skip).")] = "30ms",
    ttft_budget: Annotated[Optional[str], typer.Option("--ttft-budget", help="Time-to-first-token budget, e.g. 2s.")] = None,
    input_len: Annotated[Optional[int], typer.Option("--input-len", help="Prompt tokens per request (default 2048).")] = None,
    output_len: Annotated[Optional[int], typer.Option("--output-len", help="Generated tokens per request (default 256).")] = None,
    context: Annotated[Optional[int], typer.Option("--context", help="A fixed KV context instead (decode only, no prefill).")] = None,
    engine: Annotated[str, typer.Option("--engine", help="vllm | sglang | trtllm | eager")] = DEFAULT_ENGINE,
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="Weight dtype: bf16 | fp8 | int8 | int4 | mxfp4 | nvfp4 (default: the checkpoint's own, from its config.json)")] = None,
    kv_dtype: Annotated[Optional[str], typer.Option("--kv-dtype")] = None,
    speculative: Annotated[Optional[str], typer.Option("--speculative", help="mtp | eagle | draft")] = None,
    draft_tokens: Annotated[Optional[int], typer.Option("--draft-tokens", help="Tokens the draft proposes per step (default 3).")] = None,
    acceptance: Annotated[Optional[float], typer.Option("--acceptance", help="Probability each draft token is accepted (default 0.7).")] = None,
    draft_model: Annotated[Optional[str], typer.Option("--draft-model", help="The draft model for --speculative draft.")] = None,
    gpu_memory_utilization: GpuMemoryOpt = None,
    disaggregate: Annotated[Optional[str], typer.Option("--disaggregate", help="P:D GPUs for prefill and decode, e.g. 2:6.")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write the Pareto figure (PNG/SVG).")] = None,
    emit: Annotated[Optional[tuple[str, Path]], typer.Option("--emit", metavar="slurm|k8s DIR", help="Write a Slurm batch script or Kubernetes manifests for the best option into DIR.")] = None,
    force: Annotated[bool, typer.Option("--force", help="With --emit: write into an existing DIR.")] = False,
    show_all: Annotated[bool, typer.Option("--all", help=f"Show every option (default: the best {tables.DEPLOY_ROWS}; --json has all).")] = False,
    catalog: CatalogOpt = None,
    download: DownloadOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """How to spend N GPUs: replicas x TP x PP at the largest batch within the budgets, tokens/s per GPU, launch lines.

    Exit 0: an option meets the budgets; 1: the request is valid but none does (the table is printed,
    the closest option named); 2: bad input."""
    from ..decide.deploy import Workload, deploy as run_deploy  # command-only modules (start-up)
    from ..decide.disagg import parse_split
    check_plot(plot)
    model = model_name(model, download)
    draft_model = model_name(draft_model, download) if draft_model else draft_model
    if context is not None and (input_len is not None or output_len is not None):
        raise PlanError("give --context (decode only) or --input-len/--output-len, not both")
    spec = args.speculation(speculative, draft_tokens, acceptance, draft_model)
    work = Workload(input_len=2048 if input_len is None else input_len,
                    output_len=256 if output_len is None else output_len, context=context, speculation=spec)
    _emit(None, emit, engine=engine, force=force)  # a bad --emit is refused before any work
    ttft_s = units.parse_seconds(ttft_budget, what="--ttft-budget") if ttft_budget else None
    result = run_deploy(model, system, gpus=gpus, nodes=nodes, budget_s=args.budget(budget), ttft_budget_s=ttft_s,
                        workload=work, engine=engine, dtype=dtype, kv_dtype=kv_dtype,
                        disaggregate=parse_split(disaggregate) if disaggregate else None,
                        settings=PlanSettings(memory_utilization=gpu_memory_utilization), catalog=load_catalogs(catalog))
    if json_out:
        print_json(result.to_dict())
    else:
        tables.print_deploy(result, rows=None if show_all else tables.DEPLOY_ROWS)
    if plot:
        write_plot(lambda: figures.pareto_figure(result), plot)
    if result.best is None:  # a valid request that nothing meets: the table and the closest option, exit 1
        raise typer.Exit(1)
    _emit(result, emit, engine=engine, force=force)


def _emit(result, emit: tuple[str, Path] | None, *, engine: str, force: bool) -> None:
    """--emit KIND DIR: check it (result None), or write the best option's files."""
    if not emit:
        return
    from ..decide.launch import emit as emitting  # command-only module (start-up)
    if result is None:
        emitting.check_emit(emit[0], emit[1], force=force)
        return
    for path in emitting.emit(result, emit[0], emit[1], engine=engine, force=force):
        typer.echo(f"wrote {path}", err=True)
