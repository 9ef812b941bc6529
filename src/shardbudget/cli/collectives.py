"""`shardbudget allreduce` and `shardbudget compare`: collective times on one system, and systems side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..comm.collectives import crossover_bytes, custom_allreduce_allowed, make_group, normalize_op, sweep
from ..decide.compare import compare_systems
from ..dtypes import dtype_bytes
from ..report import figures, tables
from . import args
from .app import app
from .args import CatalogOpt, DownloadOpt, JsonOpt, NodesOpt
from .common import check_plot, load_catalogs, model_name, print_json, write_plot


@app.command()
def allreduce(
    *,
    system: Annotated[str, typer.Option("--system", "-s", help="System name, e.g. hgx-h100.")],
    nodes: NodesOpt = 1,
    gpus: Annotated[Optional[int], typer.Option("--gpus", help="GPUs taking part (default: all of the nodes).")] = None,
    op: Annotated[str, typer.Option("--op", help="all-reduce | reduce-scatter | all-gather | all-to-all | broadcast | send/recv")] = "all-reduce",
    size: Annotated[Optional[list[str]], typer.Option("--size", help="Message size(s) per rank, e.g. 16KiB (repeatable, or a range 8B:1GiB).")] = None,
    algo: Annotated[str, typer.Option("--algo", help="auto | ring | tree | nvls | one-shot | two-shot | hierarchical")] = "auto",
    protocol: Annotated[str, typer.Option("--protocol", help="auto | ll | ll128 | simple")] = "auto",
    impl: Annotated[str, typer.Option("--impl", help="nccl | custom (inference engines' one-/two-shot kernels)")] = "nccl",
    dtype: Annotated[str, typer.Option("--dtype", help="Element type, for the count column.")] = "bf16",
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write the figure (PNG or SVG).")] = None,
    catalog: CatalogOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """An nccl-tests-like table of predicted collective times on a system."""
    check_plot(plot)
    cat = load_catalogs(catalog)
    sizes = args.sizes(size)
    op = normalize_op(op)
    elem_bytes = dtype_bytes(dtype)
    costs = sweep(op, sizes, system, nodes=nodes, gpus=gpus, algo=algo, protocol=protocol, impl=impl, catalog=cat)
    group = make_group(system, nodes=nodes, gpus=gpus, catalog=cat)
    cross = crossover_bytes(group, op, impl, algo, protocol)
    if json_out:
        print_json({"system": group.system.name, "nodes": nodes, "gpus": group.ranks, "op": op,
                     "impl": impl, "algo": algo, "protocol": protocol, "dtype": dtype,
                     "crossover_bytes": cross,
                     "rows": [args.cost_row(c) for c in costs]})
    else:
        why = custom_allreduce_allowed(group) if op == "all-reduce" else "custom kernels are all-reduce only"
        tables.print_sweep(group, costs, op=op, impl=impl, elem_bytes=elem_bytes, crossover=cross, why_not_custom=why)
    if plot:
        write_plot(lambda: figures.fabric_comparison([(f"{group.system.name} x{group.ranks}", costs, cross)], op=op), plot)


@app.command()
def compare(
    *,
    system: Annotated[list[str], typer.Option("--system", "-s", help="Systems to compare (repeat).")],
    nodes: NodesOpt = 1,
    gpus: Annotated[Optional[int], typer.Option("--gpus")] = None,
    op: Annotated[str, typer.Option("--op")] = "all-reduce",
    model: Annotated[str, typer.Option("--model", help="Model whose decode message sizes are marked.")] = "llama-3.1-70b",
    batch: Annotated[Optional[list[int]], typer.Option("--batch", min=1, help="Decode batch sizes to mark.")] = None,
    impl: Annotated[str, typer.Option("--impl")] = "nccl",
    plot: Annotated[Optional[Path], typer.Option("--plot")] = None,
    catalog: CatalogOpt = None,
    download: DownloadOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Systems side by side: crossover sizes and the time ratio at the sizes decode really uses."""
    check_plot(plot)
    result = compare_systems(system, nodes=nodes, gpus=gpus, op=op, model=model_name(model, download), batches=batch or [1, 64],
                             impl=impl, catalog=load_catalogs(catalog))
    if json_out:
        print_json(result.to_dict())
    else:
        tables.print_compare(result)
    if plot:
        write_plot(lambda: figures.compare_figure(result), plot)
