"""What the command modules share beyond their options: the catalog and model they name, JSON on
stdout, figures written on request, and a progress bar for the long commands."""

from __future__ import annotations

import json
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from ..fabric.catalog import load_catalog
from ..model import load_model
from ..report import figures
from . import args


def load_catalogs(paths: Optional[list[Path]]):
    return load_catalog(tuple(str(p) for p in paths or ()))


def model_name(name: str, download: bool) -> str:
    """With --download, an HF id missing from the local cache has its config.json fetched into the
    cache now; the name then resolves from there wherever the library loads it."""
    if download:
        load_model(name, download=True)
    return name


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(args.jsonable(obj), indent=2, allow_nan=False) + "\n")


def check_plot(plot: Optional[Path]) -> None:
    """Refuse a bad --plot path before any work (and before anything is printed)."""
    if plot is not None:
        figures.check_path(plot)


def write_plot(make_figure, plot: Path) -> None:
    """Build and save a figure; matplotlib's layout warnings are not the user's problem."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        figures.save(make_figure(), plot)
    typer.echo(f"wrote {plot}", err=True)


def progress_bar():
    """A transient progress bar on stderr while a report is computed; silent when stderr is not a terminal."""
    @contextmanager
    def cm():
        if not sys.stderr.isatty():
            yield None
            return
        with Progress(TextColumn("{task.description:<48}"), BarColumn(), TimeElapsedColumn(),
                      console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("starting", total=None)

            def update(what: str, done: int, total: int) -> None:
                bar.update(task, description=what, completed=done, total=total)

            yield update

    return cm()
