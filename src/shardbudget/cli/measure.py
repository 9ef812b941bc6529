"""`shardbudget measure`, `fit` and `lab`: time real collectives, fit a profile to measurements, emulate a fabric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import units
from ..errors import MeasureError
from ..report import figures, tables
from .app import app
from .args import CatalogOpt, JsonOpt
from .common import check_plot, load_catalogs, print_json, write_plot


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True}, add_help_option=False)
def measure(ctx: typer.Context) -> None:
    """Time real collectives with torch.distributed; nccl-tests columns on stdout, JSON with --out (--help: options)."""
    from ..measure import command as measure_command  # the one option parser, shared with `python -m shardbudget.measure`
    measure_command.run(ctx.args, prog="shardbudget measure")


@app.command()
def fit(
    *,
    files: Annotated[list[Path], typer.Argument(help="nccl-tests / rccl-tests logs (text, or nccl-tests -J JSON) or shardbudget measure JSON.")],
    name: Annotated[str, typer.Option("--name", help="Name of the fitted system.")],
    base_system: Annotated[str, typer.Option("--base-system", help="The catalog system it is a measurement of.")],
    out: Annotated[Optional[Path], typer.Option("--out", help="Write the profile TOML here.")] = None,
    force: Annotated[bool, typer.Option("--force")] = False,
    no_holdout: Annotated[bool, typer.Option("--no-holdout", help="Skip the leave-one-GPU-count-out check.")] = False,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Measured vs predicted figure (PNG/SVG).")] = None,
    catalog: CatalogOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Fit the collective model's constants to measurements and write a profile usable as --catalog."""
    from ..measure.fit import check_profile_path, fit_profile, write_profile  # command-only modules (start-up)
    from ..measure.logs import read_logs, summarize
    check_plot(plot)
    if out:  # before the fit: a refused --out must not cost the user a run
        check_profile_path(out, force=force)
    sets = read_logs(files)
    result = fit_profile(sets, name=name, base_system=base_system, catalog=load_catalogs(catalog), holdout=not no_holdout)
    if out:
        write_profile(result, out, force=force)
    for warning in result.warnings:  # a held-out error above 25%, a forced algorithm the model lacks
        typer.echo(f"warning: {warning}", err=True)
    if json_out:
        d = result.to_dict()
        d["warnings"] = list(result.warnings) + [w for ms in sets for w in ms.warnings]
        print_json(d)
    else:
        for ms in sets:
            print(f"# {ms.source}: {summarize(ms)}")
            for w in ms.warnings:
                print(f"#   warning: {w}")
        tables.print_fit(result)
    if out:
        typer.echo(f"wrote {out}: use it with --catalog {out} --system {name}", err=True)
    if plot:
        write_plot(lambda: figures.measured_vs_predicted(result), plot)


@app.command()
def lab(
    *,
    ranks: Annotated[int, typer.Option("--ranks", help="Ranks, one per network namespace.")] = 2,
    rate: Annotated[Optional[list[str]], typer.Option("--rate", help="Link rates to emulate (repeatable), e.g. 10Gbit/s.")] = None,
    sizes: Annotated[str, typer.Option("--sizes")] = "8B:8MiB",
    iters: Annotated[int, typer.Option("--iters")] = 10,
    warmup: Annotated[int, typer.Option("--warmup")] = 3,
    repeats: Annotated[int, typer.Option("--repeats", help="Runs per rate, for the spread.")] = 3,
    delay: Annotated[str, typer.Option("--delay", help="Added one-way delay per link (netem, where the kernel has it).")] = "0ms",
    keep: Annotated[Optional[Path], typer.Option("--keep", help="Keep the raw JSON of every run in this folder.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Emulated fabric: ranks in network namespaces over shaped veth links, measured vs predicted."""
    from ..measure.lab import format_lab, lab_unavailable, run_lab  # command-only module (start-up)
    why = lab_unavailable()
    if why:
        raise MeasureError(why)
    delay_ms = units.parse_seconds(delay, what="--delay", allow_zero=True) * 1e3
    log = (lambda m: typer.echo(m, err=True))
    result = run_lab(ranks=ranks, rates=tuple(rate or ("unshaped", "10Gbit/s", "1Gbit/s")), sizes=sizes,
                     iters=iters, warmup=warmup, repeats=repeats, delay_ms=delay_ms,
                     keep_dir=str(keep) if keep else None, log=log)
    if json_out:
        print_json(result.to_dict())
    else:
        print(format_lab(result))
