"""`shardbudget check`: is this nccl-tests result normal for the system?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..measure.check import DEFAULT_TOLERANCE, check_logs, format_check
from .app import app
from .args import CatalogOpt, JsonOpt
from .common import load_catalogs, print_json


@app.command()
def check(
    *,
    files: Annotated[list[Path], typer.Argument(help="nccl-tests / rccl-tests logs (all_reduce_perf, ...) or shardbudget measure JSON.")],
    system: Annotated[str, typer.Option("--system", "-s", help="The catalog system the logs should look like, e.g. hgx-h200.")],
    nodes: Annotated[Optional[int], typer.Option("--nodes", help="Nodes to model (default: the log's own count, else NCCL's INFO lines, else as few as hold the ranks).")] = None,
    gpus: Annotated[Optional[int], typer.Option("--gpus", help="Check only the tables of this GPU count; a log with none is refused (exit 2).")] = None,
    tolerance: Annotated[float, typer.Option("--tolerance", help="Allowed deviation of each region's median time from the model: 0.25 = within x1.25 either way.")] = DEFAULT_TOLERANCE,
    catalog: CatalogOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Is this nccl-tests result normal for the system? Per size and per region, with the likely cause; exit 0 ok, 1 not, 2 bad input."""
    result = check_logs(files, system=system, catalog=load_catalogs(catalog), nodes=nodes, gpus=gpus, tolerance=tolerance)
    if json_out:
        print_json(result.to_dict())
    else:
        print(format_check(result))
    if result.exit_code:
        raise typer.Exit(code=result.exit_code)
