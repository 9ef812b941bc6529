"""`shardbudget report` and `shardbudget demo`: the single-file HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..decide.planner import check_impl
from ..report import tables
from ..report.grid import DEFAULT_BUDGET_STEPS
from . import args
from .app import app
from .args import CatalogOpt, DownloadOpt
from .common import load_catalogs, model_name, progress_bar


@app.command()
def report(
    *,
    model: Annotated[str, typer.Option("--model", "-m", help="Model name (see `shardbudget models`), a config.json path or folder, or a Hugging Face id (ORG/NAME, from the local HF cache; --download fetches its config.json).")],
    system: Annotated[list[str], typer.Option("--system", "-s", help="System to compare (repeat); 'name:N' for N nodes, e.g. hgx-h100:2.")],
    nodes: Annotated[int, typer.Option("--nodes", help="Nodes of every system given without ':N'.")] = 1,
    batch: Annotated[Optional[list[int]], typer.Option("--batch", "-b", help="Decode batch size (repeat).")] = None,
    context: Annotated[int, typer.Option("--context", help="Tokens in the KV cache per sequence.")] = 4096,
    budget: Annotated[str, typer.Option("--budget", help="Inter-token latency budget, e.g. 50ms ('none' to skip).")] = "30ms",
    impl: Annotated[Optional[str], typer.Option("--impl", help="Force every all-reduce to nccl | custom (default: the engine decides)")] = None,
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="Weight dtype: bf16 | fp8 | int8 | int4 | mxfp4 | nvfp4 (default: the checkpoint's own, from its config.json)")] = None,
    measured: Annotated[Optional[list[Path]], typer.Option("--measured", help="nccl-tests log (text or -J JSON) or shardbudget measure JSON to lay over the model (repeat).")] = None,
    measured_system: Annotated[Optional[str], typer.Option("--measured-system", help="System the measurements are compared with (default: the first --system).")] = None,
    catalog: CatalogOpt = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write (overwritten, atomically).")] = Path("report.html"),
    budget_steps: Annotated[int, typer.Option("--budget-steps", help="Budgets the interactive section's slider offers (0: no interactive section, no script).")] = DEFAULT_BUDGET_STEPS,
    download: DownloadOpt = False,
) -> None:
    """One self-contained HTML file: verdict, figures, the tables behind them, sources and assumptions."""
    from ..report import html as report_html  # command-only module (start-up)
    check_impl(impl)
    report_html.check_report_path(out)  # before the sweep, not after it
    model = model_name(model, download)
    budget_s = args.budget(budget)
    with progress_bar() as progress:
        data = report_html.collect(model, system, nodes=nodes, batches=batch or [1, 64], context=context,
                                   budget_s=budget_s, impl=impl, dtype=dtype, measured=measured or (),
                                   measured_system=measured_system, catalog=load_catalogs(catalog), progress=progress,
                                   budget_steps=budget_steps)
        text = report_html.render(data, progress)
    path = report_html.write_html(out, text)
    print(report_html.headline(data))
    print(f"report: {path.resolve()}")


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write (overwritten, atomically).")] = Path("report.html"),
) -> None:
    """Llama-3.1-70B, bf16, batch 1 and 64, 50 ms: HGX H100 vs 8x L40S on PCIe vs 2 HGX H100 over InfiniBand."""
    from ..report import demo as demo_mod, html as report_html  # command-only modules (start-up)
    report_html.check_report_path(out)
    with progress_bar() as progress:
        data, path = demo_mod.run_demo(out, progress=progress)
    tables.console.print(demo_mod.verdict_table(data))
    print(report_html.headline(data))
    print(f"report: {path.resolve()}  (one self-contained file: open it in a browser)")
