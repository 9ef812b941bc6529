"""`shardbudget check`: is this nccl-tests result normal for the system?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from . import args
from .app import app
from .args import CatalogOpt, GpusOpt, JsonOpt, NodesOpt, SystemOpt
from .command_io import load_catalogs, print_json


@app.command()
def check(
    *,
    files: Annotated[list[Path], typer.Argument(help="nccl-tests / rccl-tests logs (all_reduce_perf, ...) or shardbudget measure JSON.")],
    system: SystemOpt,
    nodes: NodesOpt = None,
    gpus: GpusOpt = None,
    tolerance: Annotated[float, typer.Option("--tolerance", help="Allowed deviation of each region's median time from the model: 0.25 = within x1.25 either way.")] = args.DEFAULT_TOLERANCE,
    catalog: CatalogOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Is this nccl-tests result normal for the system? Per size and per region, with the likely cause; exit 0 ok, 1 not, 2 bad input, 3 a bug."""
    from ..measure.analysis.check import check_logs, format_check
    result = check_logs(files, system=system, catalog=load_catalogs(catalog), nodes=nodes, gpus=gpus, tolerance=tolerance)
    if json_out:
        print_json(result.to_dict())
    else:
        print(format_check(result))
    if result.exit_code:
        raise typer.Exit(code=result.exit_code)
