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

import math
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
    "font.size": 10,
    "axes.titlesize": 10.5,
    "axes.labelsize": 10,
    "legend.fontsize": 8.5,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "figure.titlesize": 12,
    "figure.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "figure.dpi": 100,
    "savefig.dpi": 130,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    # SVG text as <text> elements: a fraction of the size of glyph paths, searchable in a page, and
    # no font files to embed; browsers fall back to their sans-serif where DejaVu is missing.
    "svg.fonttype": "none",
    "font.family": "sans-serif",
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


def legend_patch(color: str, label: str, *, hatch: str | None = None, edge: str | None = None, alpha: float = 1.0):
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

BYTE_TICKS = 10
"""Labelled sizes on a bytes axis at most: every power of two where that many fit, else every 4th, 16th..."""


def _pow2_locator(max_ticks: int = BYTE_TICKS):
    """Ticks at powers of two, every `step`-th one (1, 2, 4, 10 or 20: 4 gives 16 B, 256 B, 4 KiB...,
    10 gives 1 KiB, 1 MiB, 1 GiB), the smallest step that keeps `max_ticks` or fewer in view: a sweep
    of 256 MiB to 2 GiB is labelled at each of its four sizes, not only at 256 MiB."""
    from matplotlib.ticker import Locator

    class Pow2Locator(Locator):
        def __call__(self):
            return self.tick_values(*self.axis.get_view_interval())

        def tick_values(self, vmin, vmax):
            lo, hi = sorted((max(float(vmin), 1e-300), max(float(vmax), 1e-300)))
            e_lo, e_hi = math.ceil(math.log2(lo) - 1e-9), math.floor(math.log2(hi) + 1e-9)
            for step in (1, 2, 4, 10, 20):
                exps = range(math.ceil(e_lo / step) * step, e_hi + 1, step)
                if len(exps) <= max_ticks:
                    break
            return [2.0**e for e in exps]

    return Pow2Locator()


def bytes_axis(axis) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(_pow2_locator())
    axis.set_minor_locator(LogLocator(base=2, subs=(1.0,), numticks=60))
    axis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(v) if v > 0 else ""))
    axis.set_minor_formatter(NullFormatter())


def log_axis(axis, fmt) -> None:
    """A log axis whose decades, and (over two decades or less) some ticks between them, are labelled by
    `fmt` (µs/ms, plain numbers): never matplotlib's '6×10⁻³', and never a single label in view."""
    from matplotlib.ticker import LogFormatter

    class Labels(LogFormatter):  # matplotlib decides which ticks get a label; `fmt` writes it
        def __call__(self, x, pos=None):
            return fmt(x) if x > 0 and super().__call__(x, pos) else ""

    axis.set_major_formatter(Labels(labelOnlyBase=False))
    axis.set_minor_formatter(Labels(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


def seconds_axis(axis) -> None:
    if axis.get_scale() == "log":
        log_axis(axis, format_seconds)
        return
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: format_seconds(v) if v > 0 else "0"))


def ms_axis(axis) -> None:
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 1e3:g}"))


# --- labels that no line crosses --------------------------------------------------------------


def drawn_lines(ax) -> list:
    """The axes' visible lines (not marker-only) as paths in display coordinates."""
    return [
        line.get_transform().transform_path(line.get_path())
        for line in ax.get_lines()
        if line.get_visible() and line.get_linestyle() not in ("None", "none", "", " ")
    ]


def crossings(box, lines) -> int:
    """How many of `lines` (display-coordinate paths) pass through `box`."""
    return sum(bool(path.intersects_bbox(box, filled=False)) for path in lines)


def place_labels(fig: Figure, placements) -> None:
    """Put each label where no line crosses it: `placements` is (text, candidates), each candidate the
    keyword arguments of `text.set` (position, alignment). A text takes the first candidate whose box
    lies inside its axes and meets no line of them and no label placed before it; where none is clear,
    the least crossed, on a white box drawn over the lines. Call it when the figure is complete (the
    layout is computed here, once, and the labels are kept out of it)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    placements = list(placements)
    if not placements:
        return
    for text, _ in placements:  # inside the axes: they must not move the layout they are placed in
        text.set_in_layout(False)
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw_without_rendering()
    lines: dict = {}
    taken: list = []
    for text, candidates in placements:
        ax = text.axes
        if ax not in lines:
            lines[ax] = drawn_lines(ax)
        frame = ax.get_window_extent(renderer)
        best = None
        for kw in candidates:
            text.set(**kw)
            box = text.get_window_extent(renderer).padded(1.5)
            outside = not (frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1)
            cost = 100 * outside + crossings(box, lines[ax]) + 10 * sum(box.overlaps(t) for t in taken)
            if best is None or cost < best[0]:
                best = (cost, kw)
            if cost == 0:
                break
        text.set(**best[1])
        if best[0]:
            text.set_bbox({"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1.5})
            text.set_zorder(8)
        taken.append(text.get_window_extent(renderer))


__all__ = [
    "BATCH_STYLES",
    "MARKERS",
    "PALETTE",
    "PART_COLORS",
    "TOO_FAR_COLOR",
    "WINDOW_COLOR",
    "bytes_axis",
    "colors_for",
    "crossings",
    "drawn_lines",
    "figure_style",
    "finding_title",
    "legend_line",
    "legend_patch",
    "log_axis",
    "ms_axis",
    "new_figure",
    "place_labels",
    "seconds_axis",
    "system_colors",
]
