"""Measured beside predicted: collective times read from nccl-tests logs or the harness (points)
over the model's prediction at the same sizes, ranks and nodes (lines), with the relative error.

The predictions are priced in decide.measured (`measured_entry`), or by `fit` (a FitResult's
residuals); this module only draws them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .fmt import fmt_bytes
from .output import FigureError
from .style import (
    PALETTE,
    WINDOW_COLOR,
    bytes_axis,
    figure_style,
    finding_title,
    new_figure,
    place_labels,
    seconds_axis,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..decide.measured import MeasuredEntry


def measured_vs_predicted(measured: MeasuredEntry, *, color: str | None = None, max_runs: int = 6) -> Figure:
    """Measured collective times (points) over the model's prediction (lines), and the relative error
    (predicted − measured) / measured per size in a lower panel.

    `measured` is a `decide.measured.MeasuredEntry` (a log beside the catalog model of its system);
    or a `measure.analysis.fit.FitResult` (`shardbudget fit --plot`), whose residuals hold the fitted
    profile's predictions."""
    if hasattr(measured, "residuals") and hasattr(measured, "base_system"):
        return _fit_vs_measured(measured, color=color, max_runs=max_runs)
    system, groups = measured.system, []
    for run in measured.runs[:max_runs]:
        if run.predicted_s is not None:
            groups.append(
                (
                    run.label,
                    [max(1.0, s.msg_bytes) for s in run.samples],
                    [s.time_s for s in run.samples],
                    list(run.predicted_s),
                    f"predicted on {system} ({run.samples[0].n_ranks} GPUs)",
                )
            )
    if not groups:
        raise FigureError(
            f"{measured.measurement.source}: no run in it can be placed on {system} (ranks, nodes or op do not match)"
        )
    name = os.path.basename(str(measured.measurement.source)) or str(measured.measurement.source)
    return _measured_figure(groups, f"{name} against the {system} model", color)


def _fit_vs_measured(result, *, color: str | None, max_runs: int) -> Figure:
    by: dict[tuple, list] = {}
    for r in result.residuals:
        by.setdefault((r.op, r.ranks, r.nodes), []).append(r)
    groups = []
    for (op, ranks, nodes), rs in list(by.items())[:max_runs]:
        rs = sorted(rs, key=lambda r: r.msg_bytes)
        where = f"{op}, {ranks} ranks on {nodes} node{'s' if nodes != 1 else ''}"
        groups.append(
            (
                where,
                [max(1.0, r.msg_bytes) for r in rs],
                [r.measured_s for r in rs],
                [r.predicted_s for r in rs],
                f"fitted {result.name}",
            )
        )
    if not groups:
        raise FigureError(f"fit {result.name!r} has no residuals to plot")
    names = ", ".join(os.path.basename(str(s)) for s in result.sources) or "measurements"
    return _measured_figure(
        groups, f"{names} against the fitted profile {result.name} (from {result.base_system})", color
    )


def _measured_figure(groups, what: str, color: str | None) -> Figure:
    """groups: (label, sizes, measured times, predicted times, prediction label)."""
    palette = [color] if color and len(groups) == 1 else list(PALETTE)
    with figure_style():
        fig = new_figure(9.5, 7.0)
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2.3, 1))
        errors_all = []
        for k, (label, xs, meas, pred, pred_label) in enumerate(groups):
            c = palette[k % len(palette)]
            top.plot(xs, meas, "o", ms=5, color=c, alpha=0.85, label=f"measured, {label}")
            top.plot(xs, pred, "-", marker="x", ms=5, lw=1.8, color=c, alpha=0.9, label=pred_label)
            err = [100 * (p - m) / m for p, m in zip(pred, meas)]
            errors_all.extend(zip(xs, err))
            bottom.plot(xs, [max(-100.0, min(e, 300.0)) for e in err], "o-", ms=4, lw=1, color=c)
        top.set_xscale("log", base=2)
        top.set_yscale("log")
        bytes_axis(top.xaxis)
        seconds_axis(top.yaxis)
        top.set_ylabel("time per call (s, log scale)")
        top.legend(loc="upper left", fontsize=8)
        bottom.axhspan(-20, 20, color=WINDOW_COLOR, alpha=0.12, lw=0)
        bottom.axhline(0, color="black", lw=1)
        lo = min(e for _, e in errors_all)
        hi = max(e for _, e in errors_all)
        bottom.set_ylim(max(-100, min(-30, lo * 1.15)), min(300, max(30, hi * 1.15)))
        bottom.set_ylabel("error (%)\n(pred − meas) / meas")
        bottom.set_xlabel("message size per rank (bytes, nccl-tests 'size')")
        band = bottom.text(
            0.005,
            0.97,
            "±20% band; points outside −100..300% are drawn at the edge",
            transform=bottom.transAxes,
            fontsize=7.5,
            color="#555555",
        )
        finding_title(fig, _error_finding(what, errors_all))
        place_labels(
            fig,
            [
                (
                    band,
                    [
                        {"position": (x, y), "ha": ha, "va": va}
                        for y, va in ((0.97, "top"), (0.03, "bottom"))
                        for x, ha in ((0.005, "left"), (0.995, "right"))
                    ],
                )
            ],
        )
    return fig


def error_summary(errors: Sequence[tuple[float, float]], split_bytes: float = 2**20) -> dict:
    """Median |error| % overall, below and from `split_bytes` (latency- vs bandwidth-dominated sizes)."""

    def med(vals):
        return float(np.median(np.abs(vals))) if len(vals) else None

    return {
        "median_abs_pct": med([e for _, e in errors]),
        "small_median_abs_pct": med([e for x, e in errors if x < split_bytes]),
        "large_median_abs_pct": med([e for x, e in errors if x >= split_bytes]),
        "small_median_pct": float(np.median([e for x, e in errors if x < split_bytes]))
        if any(x < split_bytes for x, _ in errors)
        else None,
        "split_bytes": split_bytes,
        "n": len(errors),
    }


def _error_finding(what: str, errors) -> str:
    s = error_summary(errors)
    text = f"{what}: median |error| {s['median_abs_pct']:.0f}% over {s['n']} sizes"
    details = []
    if s["small_median_abs_pct"] is not None:
        details.append(f"{s['small_median_abs_pct']:.0f}% below {fmt_bytes(s['split_bytes'])}")
    if s["large_median_abs_pct"] is not None:
        details.append(f"{s['large_median_abs_pct']:.0f}% from {fmt_bytes(s['split_bytes'])} up")
    text += (" — " + ", ".join(details)) if details else ""
    if s["small_median_pct"] is not None and abs(s["small_median_pct"]) > 20:
        text += (
            "; small messages take longer than predicted"
            if s["small_median_pct"] < 0
            else "; small messages are faster than predicted"
        )
    return text


__all__ = ["error_summary", "measured_vs_predicted"]
