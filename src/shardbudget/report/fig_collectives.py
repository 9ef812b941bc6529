"""Collective time vs message size: the fabric comparison of the report, `allreduce --plot` and
`compare --plot`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..comm.op import CollectiveOp
from ..units import format_decimal_bytes
from .fmt import fmt_bytes, fmt_seconds
from .output import FigureError
from .style import bytes_axis, colors_for, figure_style, finding_title, new_figure, place_labels, seconds_axis

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..decide.compare import CompareResult


def fabric_comparison(
    entries: Sequence[tuple[str, Sequence[Any], float]],
    *,
    op: str = CollectiveOp.ALL_REDUCE,
    marks: Sequence[tuple[float, str]] = (),
    colors: Mapping[str, str] | None = None,
    title: str | None = None,
) -> Figure:
    """Collective time vs message size, one line per (system, GPU count).

    `entries`: (label, costs from `collectives.sweep`, crossover bytes). Solid: predicted time;
    dashed: its latency term alone (the floor no bandwidth can lower); a dot at each crossover, where
    the bandwidth term overtakes the latency term. Left of every crossover the fabric is
    latency-bound, right of every crossover bandwidth-bound; both regions are shaded. `marks`:
    (bytes, label) message sizes to mark on the x axis (decode and prefill of a model).
    """
    entries = [(label, list(costs), cross) for label, costs, cross in entries]
    if not entries or any(not costs for _, costs, _ in entries):
        raise FigureError("fabric comparison needs at least one system with at least one message size")
    cmap = colors_for([e[0] for e in entries], colors)
    with figure_style():
        fig = new_figure(10.5, 6.2)
        ax = fig.add_subplot()
        xs_all = [c.msg_bytes for _, costs, _ in entries for c in costs]
        x_lo, x_hi = min(xs_all), max(xs_all)
        labels = _shade_regimes(ax, entries, x_lo, x_hi)
        for label, costs, cross in entries:
            labels += _plot_curve(ax, label, costs, cross, color=cmap[label])
        for msg, label in marks:
            if x_lo <= msg <= x_hi:
                ax.axvline(msg, color="#555555", lw=1, ls=":", zorder=1)
                text = ax.text(
                    msg,
                    0.8,
                    f"{label}: {fmt_bytes(msg)}",
                    transform=ax.get_xaxis_transform(),
                    rotation=90,
                    fontsize=8,
                    color="#333333",
                )
                labels.append((text, _mark_spots(msg)))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlim(x_lo, x_hi)
        bytes_axis(ax.xaxis)
        seconds_axis(ax.yaxis)
        ax.set_xlabel("message size per rank (bytes, nccl-tests 'size')")
        ax.set_ylabel(f"{op} time per call (s, log scale)")
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=min(3, len(entries)))
        finding_title(fig, title or _fabric_finding(entries, op, marks))
        place_labels(fig, labels)
    return fig


# Where a label may go, nearest first: no line may cross it (style.place_labels). A crossover's label
# sits beside its circle, in any quadrant, up to 50 points away.
_CROSS_SPOTS = sorted(
    (
        {"position": (dx * sx, dy * sy), "ha": "right" if sx < 0 else "left", "va": "bottom" if sy > 0 else "top"}
        for dx in (9, 24, 48)
        for dy in (9, 22, 36, 50)
        for sx, sy in ((-1, 1), (1, -1), (1, 1), (-1, -1))
    ),
    key=lambda kw: abs(kw["position"][0]) + abs(kw["position"][1]),
)


def _mark_spots(msg: float) -> list[dict]:
    """Beside a marked size's dotted line (left, then right of it), from 0.8 of the axes' height down,
    then above that."""
    tops = [0.8, 0.74, 0.68, 0.62, 0.56, 0.5, 0.44, 0.38, 0.86, 0.92, 0.97]
    return [
        {"position": (msg * f, y), "ha": ha, "va": "top"}
        for y in tops
        for f, ha in ((1 / 1.05, "right"), (1.05, "left"))
    ]


def _shade_regimes(ax, entries, x_lo: float, x_hi: float) -> list:
    """Shade below the first crossover (latency-bound everywhere) and above the last (bandwidth-bound);
    returns the regions' labels with the places they may take."""
    finite = [cross for _, _, cross in entries if math.isfinite(cross) and x_lo <= cross <= x_hi]
    if not finite:
        return []
    ax.axvspan(x_lo, min(finite), color="#4C72B0", alpha=0.07, lw=0)
    ax.axvspan(max(finite), x_hi, color="#DD8452", alpha=0.08, lw=0)
    every = "\n(every fabric)" if len(entries) > 1 else ""
    left = ax.text(
        x_lo * 1.3,
        0.985,
        "latency-bound" + every,
        transform=ax.get_xaxis_transform(),
        ha="left",
        fontsize=8.5,
        color="#34495E",
    )
    right = ax.text(
        x_hi / 1.3,
        0.985,
        "bandwidth-bound" + every,
        transform=ax.get_xaxis_transform(),
        ha="right",
        fontsize=8.5,
        color="#7E5109",
    )
    return [
        (left, [{"position": (x_lo * 1.3, y), "va": va} for y, va in ((0.985, "top"), (0.015, "bottom"))]),
        (right, [{"position": (x_hi / 1.3, y), "va": va} for y, va in ((0.985, "top"), (0.015, "bottom"))]),
    ]


def _plot_curve(ax, label: str, costs, cross: float, *, color: str) -> list:
    """The predicted time and its floor; returns the crossover's label with the places it may take."""
    xs = [c.msg_bytes for c in costs]
    ts = [c.time_s for c in costs]
    ax.plot(xs, ts, color=color, lw=2.2, label=f"{label}: predicted time")
    ax.plot(
        xs,
        [c.latency_s for c in costs],
        color=color,
        lw=1.2,
        ls="--",
        alpha=0.8,
        label=f"{label}: latency term (floor)",
    )
    if math.isfinite(cross) and xs[0] <= cross <= xs[-1]:
        t_cross = _loglog_interp(cross, xs, ts)
        ax.plot([cross], [t_cross], "o", ms=7, mfc="white", mec=color, mew=2, zorder=5)
        text = ax.annotate(
            f"crossover {fmt_bytes(cross)}",
            (cross, t_cross),
            xytext=(-9, 9),
            textcoords="offset points",
            fontsize=8,
            color=color,
            fontweight="bold",
        )
        return [(text, _CROSS_SPOTS)]
    return []


def _loglog_interp(x: float, xs: Sequence[float], ys: Sequence[float]) -> float:
    return float(np.exp(np.interp(math.log(x), np.log(xs), np.log(ys))))


def _fabric_finding(entries, op: str, marks) -> str:
    decode = [(m, lbl) for m, lbl in marks if "decode" in lbl.lower()] or list(marks)
    if len(entries) > 1 and decode:
        msg, lbl = decode[0]
        times = sorted(
            (
                (_loglog_interp(msg, [c.msg_bytes for c in costs], [c.time_s for c in costs]), label)
                for label, costs, _ in entries
            )
        )
        (t_fast, fast), (t_slow, slow) = times[0], times[-1]
        crosses = [cross for _, _, cross in entries if math.isfinite(cross)]
        tail = f"; every fabric is latency-bound below {fmt_bytes(min(crosses))}" if crosses else ""
        return (
            f"{op} at the {fmt_bytes(msg)} message of {lbl}: {slow} takes {fmt_seconds(t_slow)}, "
            f"{t_slow / t_fast:.1f}× {fast} ({fmt_seconds(t_fast)}){tail}"
        )
    parts = []
    for label, costs, cross in entries:
        floor = min(c.latency_s for c in costs)
        where = f"latency-bound below {fmt_bytes(cross)}" if math.isfinite(cross) else "latency-bound throughout"
        busbw = format_decimal_bytes(float(f"{costs[-1].busbw_bytes_per_s:.3g}"))
        parts.append(
            f"{label}: {where} (floor {fmt_seconds(floor)}), busbw {busbw}/s at {fmt_bytes(costs[-1].msg_bytes)}"
        )
    return f"{op}: " + "; ".join(parts)


def compare_figure(result: CompareResult, *, colors: Mapping[str, str] | None = None) -> Figure:
    """`shardbudget compare --plot`: the systems' curves (priced by compare_systems over 8 B to
    4 GiB, at the NCCL release and implementation of the comparison) with the compared sizes marked."""
    if not result.curves:
        raise FigureError("compare's figure needs its curves: compare_systems(..., curves=True)")
    entries = [
        (f"{name} ×{result.gpus}", list(costs), cross)
        for name, costs, cross in zip(result.systems, result.curves, result.crossovers)
    ]
    marks = [(r.msg_bytes, r.label) for r in result.rows if r.label != "reference"]
    return fabric_comparison(entries, op=result.op, marks=marks, colors=colors)


__all__ = ["compare_figure", "fabric_comparison"]
