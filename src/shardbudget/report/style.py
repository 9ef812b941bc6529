"""The look every figure shares: colours, rcParams, the figure itself, its title, axis ticks.

matplotlib is imported inside the functions (never at module import), so `import shardbudget` stays
fast and the library works without the `[report]` extra. Figures are built with
`matplotlib.figure.Figure` directly, not pyplot: no global figure registry, no GUI backend, nothing
to close; the Agg canvas renders PNG and the SVG backend renders SVG.

Times are plotted in seconds with µs/ms tick labels, sizes in bytes with binary-prefix tick labels
(nccl-tests sweeps are powers of two), memory in GB (1e9 bytes, as GPU datasheets state capacity).
Colours belong to systems and stay the same in every figure of a report (`system_colors`); the
parts of a token (compute, communication latency, communication transfer) have their own colours.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..units import format_bytes, format_seconds

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

# Okabe & Ito's colour-blind-safe palette (https://jfly.uni-koeln.de/color/), red left out so that it
# can mean "communication" and "sharded too far" in every figure.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#8C6D31", "#000000", "#F0E442")
PART_COLORS = {"compute": "#9AA8BA", "latency": "#C0392B", "bandwidth": "#F1948A", "other": "#D5DBE1"}
TOO_FAR_COLOR = "#D62728"
WINDOW_COLOR = "#2CA02C"
BATCH_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P")

_RC = {
    "font.size": 10, "axes.titlesize": 10.5, "axes.labelsize": 10, "legend.fontsize": 8.5,
    "xtick.labelsize": 9, "ytick.labelsize": 9, "figure.titlesize": 12, "figure.titleweight": "bold",
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.25,
    "grid.linewidth": 0.6, "legend.frameon": False, "figure.dpi": 100, "savefig.dpi": 130,
    "figure.facecolor": "white",
    "axes.facecolor": "white", "savefig.facecolor": "white",
    # SVG text as <text> elements: a fraction of the size of glyph paths, searchable in a page, and
    # no font files to embed; browsers fall back to their sans-serif where DejaVu is missing.
    "svg.fonttype": "none", "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"],
}


@contextmanager
def figure_style(rc: Mapping[str, object] | None = None):
    """The shared rcParams (plus `rc`), for building a figure and again for saving it."""
    import matplotlib
    with matplotlib.rc_context(_RC | dict(rc or {})):
        yield


def new_figure(width_in: float, height_in: float) -> Figure:
    from matplotlib.figure import Figure
    return Figure(figsize=(width_in, height_in), layout="constrained")


def finding_title(fig: Figure, text: str) -> None:
    """The finding as the figure's title, wrapped to the figure's width (12 pt bold: ~9 characters
    per inch)."""
    width_chars = max(40, int(fig.get_figwidth() * 9.2))
    fig.suptitle("\n".join(textwrap.wrap(text, width_chars)) or text, ha="center")


def legend_patch(color: str, label: str, *, hatch: str | None = None, edge: str | None = None,
                 alpha: float = 1.0):
    from matplotlib.patches import Patch
    return Patch(facecolor=color, edgecolor=edge or color, hatch=hatch, alpha=alpha, label=label)


def legend_line(label: str, **kwargs):
    from matplotlib.lines import Line2D
    return Line2D([], [], label=label, **kwargs)


# --- colours ----------------------------------------------------------------------------------

def system_colors(labels: Sequence[str]) -> dict[str, str]:
    """One colour per system label, in the given order (a report passes all its labels once)."""
    out: dict[str, str] = {}
    for label in labels:
        if label not in out:
            out[label] = PALETTE[len(out) % len(PALETTE)]
    return out


def colors_for(labels: Sequence[str], colors: Mapping[str, str] | None) -> dict[str, str]:
    """`colors` (a report's, so that a system keeps its colour), extended to every label in `labels`."""
    base = dict(colors or {})
    for label in labels:
        if label not in base:
            base[label] = PALETTE[len(base) % len(PALETTE)]
    return base


# --- tick formatting --------------------------------------------------------------------------

def bytes_axis(axis) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    axis.set_major_locator(LogLocator(base=16, numticks=20))
    axis.set_minor_locator(LogLocator(base=2, subs=(1.0,), numticks=60))
    axis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(v) if v > 0 else ""))
    axis.set_minor_formatter(NullFormatter())


def seconds_axis(axis) -> None:
    from matplotlib.ticker import FuncFormatter
    axis.set_major_formatter(FuncFormatter(lambda v, _: format_seconds(v) if v > 0 else "0"))


def ms_axis(axis) -> None:
    from matplotlib.ticker import FuncFormatter
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 1e3:g}"))


__all__ = ["BATCH_STYLES", "MARKERS", "PALETTE", "PART_COLORS", "TOO_FAR_COLOR", "WINDOW_COLOR", "bytes_axis",
           "colors_for", "figure_style", "finding_title", "legend_line", "legend_patch", "ms_axis", "new_figure",
           "seconds_axis", "system_colors"]
