"""Figures and reports as bytes and as files: PNG/SVG rendering, the output-path checks made before
any work (`shardbudget.atomic.check_output_path`), and atomic writes (`shardbudget.atomic.write_atomic`).
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..atomic import check_output_path, write_atomic
from ..errors import ShardbudgetError
from .style import figure_style

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure


class FigureError(ShardbudgetError, ValueError):
    """A figure or report that cannot be written (unknown format, missing folder) or has nothing to plot."""


FORMATS = {".png": "png", ".svg": "svg"}
REPORT_SUFFIXES = (".html", ".htm")
SVG_ID_SALT = "shardbudget"


def render(fig: Figure, fmt: str, *, id_salt: str = SVG_ID_SALT) -> bytes:
    """The figure as PNG or SVG bytes, the same bytes for the same figure.

    matplotlib names an SVG's clip paths, hatches and markers by a hash salted with a fresh uuid4
    unless `svg.hashsalt` is set; a fixed salt makes the ids a function of the content. Figures
    that share a page need different salts (`id_salt`), or two of them could define one id."""
    if fmt not in FORMATS.values():
        raise FigureError(f"figure format {fmt!r} is not supported (expected png or svg)")
    buf = io.BytesIO()
    with figure_style({"svg.hashsalt": id_salt}):
        # No creation date: the same figure gives the same file.
        fig.savefig(buf, format=fmt, metadata={"Date": None} if fmt == "svg" else {})
    return buf.getvalue()


def to_svg(fig: Figure, *, id_salt: str = SVG_ID_SALT) -> str:
    """Inline SVG (no XML prolog or DOCTYPE), ready to be placed in an HTML page."""
    text = render(fig, "svg", id_salt=id_salt).decode("utf-8")
    return text[text.index("<svg") :]


def check_path(path: str | os.PathLike, *, force: bool = True) -> str:
    """The format for `path` (png or svg), or a one-line error before any work is done; an existing
    file only with `force` (the command line's --force; a library caller replaces by default)."""
    path = check_output_path(path, what="a figure", suffixes=tuple(FORMATS), error=FigureError, force=force)
    return FORMATS[path.suffix.lower()]


def save(fig: Figure, path: str | os.PathLike, *, force: bool = True) -> Path:
    """Write `fig` as PNG or SVG (chosen by the extension), atomically: temp file, then rename."""
    fmt = check_path(path, force=force)
    return _write(Path(path), render(fig, fmt), "a figure", force=force)


def check_report_path(path: str | os.PathLike, *, force: bool = True) -> Path:
    """Fail before any work if the report cannot be written there (an existing file only with `force`)."""
    return check_output_path(path, what="the report", suffixes=REPORT_SUFFIXES, error=FigureError, force=force)


def write_html(path: str | os.PathLike, text: str, *, force: bool = True) -> Path:
    """Write a report's HTML to `path`, atomically."""
    return _write(check_report_path(path, force=force), text, "the report", force=force)


def _write(path: Path, data: bytes | str, what: str, *, force: bool) -> Path:
    try:
        return write_atomic(path, data, force=force)
    except OSError as err:  # a folder removed or made read-only since the check; a file written since
        raise FigureError(f"cannot write {what} to {path}: {err.strerror or err}") from None


__all__ = [
    "FORMATS",
    "FigureError",
    "REPORT_SUFFIXES",
    "check_path",
    "check_report_path",
    "render",
    "save",
    "to_svg",
    "write_html",
]
