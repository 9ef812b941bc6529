"""What a command reads and writes beyond its options, shared by the command modules: the catalog
and model it names, JSON on stdout, figures written on request, and a progress bar for the long
commands. The library is
imported when a command runs, not when this module is (start-up: `--help` needs none of it)."""

from __future__ import annotations

import json
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer

from . import args


def load_catalogs(paths: Optional[list[Path]], nccl: Optional[str] = None, nccl_symmetric: bool = False):
    """The built-in catalog with the user's files, priced as NCCL `nccl` (--nccl, --nccl-symmetric)."""
    from ..fabric.catalog import load_catalog

    cat = load_catalog(tuple(str(p) for p in paths or ()))
    if nccl or nccl_symmetric:
        from ..comm.versions import at_nccl

        cat = at_nccl(cat, nccl, symmetric=nccl_symmetric)
    return cat


def model_name(name: str, download: bool) -> str:
    """With --download, an HF id missing from the local cache has its config.json fetched into the
    cache now; the name then resolves from there wherever the library loads it."""
    if download:
        from ..model import load_model

        load_model(name, download=True)
    return name


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(args.jsonable(obj), indent=2, allow_nan=False) + "\n")


def check_out(path: Optional[Path], *, force: bool, what: str = "the output") -> None:
    """The one overwrite rule, for every file a command writes: an existing file is replaced only
    with --force. Checked before any work (and before anything is printed)."""
    if path is not None:
        from ..atomic import check_output_path

        check_output_path(path, what=what, force=force)


def check_plot(plot: Optional[Path], *, force: bool = False) -> None:
    """Refuse a bad --plot path before any work (and before anything is printed)."""
    if plot is not None:
        from ..report.output import check_path

        check_path(plot, force=force)


def write_plot(make_figure, plot: Path, *, force: bool = False) -> None:
    """Build and save a figure, saying so on stderr while it takes time; matplotlib's layout warnings
    are not the user's problem."""
    from ..report.output import save

    start = time.monotonic()
    if sys.stderr.isatty():
        typer.echo(f"drawing {plot} ...", err=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        save(make_figure(), plot, force=force)
    typer.echo(f"wrote {plot} ({time.monotonic() - start:.1f} s)", err=True)


def progress_bar():
    """A transient progress bar on stderr while a report is computed; silent when stderr is not a terminal."""

    @contextmanager
    def cm():
        if not sys.stderr.isatty():
            yield None
            return
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("{task.description:<48}"),
            BarColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        ) as bar:
            task = bar.add_task("starting", total=None)

            def update(what: str, done: int, total: int) -> None:
                bar.update(task, description=what, completed=done, total=total)

            yield update

    return cm()
