"""`shardbudget measure`, `fit` and `lab`: time real collectives, fit a profile to measurements, emulate a fabric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from . import args
from .app import app
from .args import (
    CatalogOpt,
    ElementDtypeOpt,
    ForceOpt,
    GpusOpt,
    IterationsOpt,
    JsonOpt,
    NameOpt,
    OpOpt,
    OutOpt,
    PlotOpt,
    hidden,
    renamed,
    size_opt,
)
from .command_io import check_plot, load_catalogs, print_json, write_plot


@app.command()
def measure(
    *,
    backend: Annotated[str, typer.Option("--backend", help="gloo (CPU) | nccl (GPUs).")] = "gloo",
    gpus: GpusOpt = None,
    op: OpOpt = "all-reduce",
    size: size_opt("8B:64MiB") = None,
    dtype: ElementDtypeOpt = None,
    iters: IterationsOpt = 20,
    warmup: args.WarmupOpt = 5,
    check: Annotated[bool, typer.Option("--check", help="Verify the results on known data.")] = False,
    out: OutOpt = None,
    force: ForceOpt = False,
    timeout: Annotated[
        str, typer.Option("--timeout", help="Give up on a hung or dead rank after this long, e.g. 120s.")
    ] = "120s",
    master_addr: Annotated[str, typer.Option("--master-addr", help="Rendezvous address (local runs).")] = "127.0.0.1",
    port: Annotated[Optional[int], typer.Option("--port", help="Rendezvous port (default: a free one).")] = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bar on stderr.")] = False,
    nproc: hidden("--nproc", Optional[int]) = None,
    sizes: hidden("--sizes") = None,
) -> None:
    """Time real collectives with torch.distributed: nccl-tests' columns on stdout, every sample as JSON with --out."""
    from ..measure.harness import (
        command as measure_command,
    )  # the one runner, shared with `python -m shardbudget.measure`
    from ..errors import MeasureError

    gpus = renamed(gpus, nproc, "--nproc", "--gpus")
    size = renamed(size, [sizes] if sizes else None, "--sizes", "--size") or ["8B:64MiB"]
    if len(size) > 1 and any(":" in s for s in size):
        raise MeasureError("measure takes one range (8B:64MiB) or a list of sizes (8B,1KiB): not several ranges")
    argv = [
        "--backend",
        backend,
        "--op",
        op,
        "--sizes",
        ",".join(size),
        "--dtype",
        dtype or "fp32",
        "--iters",
        str(iters),
        "--warmup",
        str(warmup),
        "--timeout",
        timeout,
        "--master-addr",
        master_addr,
    ]
    argv += (["--nproc", str(gpus)] if gpus is not None else []) + (["--port", str(port)] if port is not None else [])
    argv += (["--check"] if check else []) + (["--out", str(out)] if out else []) + (["--force"] if force else [])
    argv += ["--no-progress"] if no_progress else []
    measure_command.run(argv, prog="shardbudget measure")


@app.command()
def fit(
    *,
    files: Annotated[
        list[Path],
        typer.Argument(help="nccl-tests / rccl-tests logs (text, or nccl-tests -J JSON) or shardbudget measure JSON."),
    ],
    name: NameOpt,
    base_system: Annotated[str, typer.Option("--base-system", help="The catalog system it is a measurement of.")],
    out: OutOpt = None,
    force: ForceOpt = False,
    no_holdout: Annotated[bool, typer.Option("--no-holdout", help="Skip the leave-one-GPU-count-out check.")] = False,
    plot: PlotOpt = None,
    catalog: CatalogOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Fit the collective model's constants to measurements and write a profile usable as --catalog.

    A profile outside physical bounds (a link faster than its datasheet, a collective under 1 us) is
    refused with the bound named; --force keeps it, with a warning (and overwrites --out)."""
    from ..measure.analysis.fit import check_profile_path, fit_profile, write_profile
    from ..measure.logs.read import read_logs, summarize

    check_plot(plot, force=force)
    if out:  # before the fit: a refused --out must not cost the user a run
        check_profile_path(out, force=force)
    sets = read_logs(files)
    result = fit_profile(
        sets, name=name, base_system=base_system, catalog=load_catalogs(catalog), holdout=not no_holdout, force=force
    )
    if out:
        write_profile(result, out, force=force)
    for warning in result.warnings:  # a held-out error above 25%, a forced algorithm the model lacks
        typer.echo(f"warning: {warning}", err=True)
    if json_out:
        d = result.to_dict()
        d["warnings"] = list(result.warnings) + [w for ms in sets for w in ms.warnings]
        print_json(d)
    else:
        from ..report import tables

        for ms in sets:
            print(f"# {ms.source}: {summarize(ms)}")
            for w in ms.warnings:
                print(f"#   warning: {w}")
        tables.print_fit(result)
    if out:
        typer.echo(f"wrote {out}: use it with --catalog {out} --system {name}", err=True)
    if plot:
        from ..report import figures

        write_plot(lambda: figures.measured_vs_predicted(result), plot, force=force)


@app.command()
def lab(
    *,
    gpus: GpusOpt = None,
    rate: Annotated[
        Optional[list[str]], typer.Option("--rate", help="Link rates to emulate (repeatable), e.g. 10Gbit/s.")
    ] = None,
    size: size_opt("8B:8MiB") = None,
    iters: IterationsOpt = 10,
    warmup: args.WarmupOpt = 3,
    repeats: Annotated[int, typer.Option("--repeats", help="Runs per rate, for the spread.")] = 3,
    delay: Annotated[
        str, typer.Option("--delay", help="Added one-way delay per link (netem, where the kernel has it).")
    ] = "0ms",
    keep: Annotated[
        Optional[Path], typer.Option("--keep", help="Keep the raw JSON of every run in this folder.")
    ] = None,
    json_out: JsonOpt = False,
    ranks: hidden("--ranks", Optional[int]) = None,
    sizes: hidden("--sizes") = None,
) -> None:
    """Emulated fabric: ranks in network namespaces over shaped veth links, measured vs predicted."""
    from .. import units
    from ..errors import MeasureError
    from ..measure.harness.lab import format_lab, lab_unavailable, run_lab

    gpus = renamed(gpus, ranks, "--ranks", "--gpus") or 2
    size = renamed(size, [sizes] if sizes else None, "--sizes", "--size") or ["8B:8MiB"]
    if len(size) != 1:
        raise MeasureError("lab takes one --size range, e.g. 8B:8MiB")
    why = lab_unavailable()
    if why:
        raise MeasureError(why)
    delay_ms = units.parse_seconds(delay, what="--delay", allow_zero=True) * 1e3
    log = lambda m: typer.echo(m, err=True)
    result = run_lab(
        ranks=gpus,
        rates=tuple(rate or ("unshaped", "10Gbit/s", "1Gbit/s")),
        sizes=size[0],
        iters=iters,
        warmup=warmup,
        repeats=repeats,
        delay_ms=delay_ms,
        keep_dir=str(keep) if keep else None,
        log=log,
    )
    if json_out:
        print_json(result.to_dict())
    else:
        print(format_lab(result))  # its warnings among its lines
