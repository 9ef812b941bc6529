"""The deployment trade-off: tokens/s per user against tokens/s per GPU over batch, one curve per
option (replicas x plan), the Pareto front over all of them, and the chosen option marked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .output import FigureError
from .style import figure_style, finding_title, log_axis, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..decide.deploy import DeployResult

MAX_CURVES = 10
"""Curves drawn: the options with the most tokens/s per GPU (all of them stay in the front)."""
CURVE_COLORS = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#8C6D31",
    "#882255",
    "#999933",
    "#6A6A6A",
)
"""One colour per curve, MAX_CURVES of them (Okabe-Ito and Tol's muted, colour-blind safe): none is
black, which the front, the budget and the choice use (issue 24: 4xTP2 and 1xTP4/PP2 were both blue,
1xTP1/PP8 black like the front, from an 8-colour palette cycled over 10 curves)."""
UNDER_REL = 0.015
"""A curve within 1.5% of one drawn after it, over all its points, is hidden by it (a 1.6-point line
on the ~5-inch axis): the legend says which covers it (2xTP4 under 1xTP4/PP2: two replicas and two
pipeline stages give the same tokens/s per GPU to 0.6%)."""


AXES = {"throughput": "tokens/s per GPU", "cost": "$ per million output tokens", "energy": "output tokens per joule"}
"""The y-axis the figure can take (deploy --objective): the curves on cost and energy are
decide.cost's (DeployResult.costs.curves); the dashed front is drawn on throughput only."""


def pareto_figure(result: DeployResult, axis: str = "throughput") -> Figure:
    """Each option's curve as its batch grows (up to what fits in memory), the front no point beats
    on both axes, the budget (on the TPOT, or the ITL decode only) as a vertical line, the choice as a star;
    y by `axis` (AXES)."""
    if not result.curves:
        raise FigureError("the deployment figure needs at least one option")
    shown = [o.label() for o in result.options[:MAX_CURVES]]
    colors = dict(zip(shown, CURVE_COLORS))
    with figure_style():
        fig = new_figure(10.5, 6.2)
        ax = fig.add_subplot()
        names = legend_names(shown, result.curves)
        for label in shown:
            user, y = result.curves[label][0], _y(result, label, axis)
            if y is not None:
                ax.plot(user, y, lw=1.6, color=colors[label], label=names[label])
        front = result.pareto
        if axis == "throughput":
            ax.plot(
                [p["tokens_per_s_per_user"] for p in front],
                [p["tokens_per_s_per_gpu"] for p in front],
                "k--",
                lw=1.2,
                label="Pareto front",
            )
        if result.budget_s:
            ax.axvline(1 / result.budget_s, color="black", ls=":", lw=1.2, label=f"{result.judged} budget")
        if result.best is not None:
            b = result.best
            star = {
                "throughput": b.tokens_per_s_per_gpu,
                "cost": b.cost and b.cost.usd_per_mtok,
                "energy": b.cost and b.cost.tokens_per_joule,
            }[axis]
            if star is not None:
                ax.plot(
                    [b.tokens_per_s_per_user],
                    [star],
                    "*",
                    ms=16,
                    color="black",
                    label=f"choice: {b.label()}, batch cap {b.max_batch}",
                )
        ax.set_xscale("log")
        log_axis(ax.xaxis, lambda v: f"{v:g}")  # 20, 30, 40, 60, 100: not 2×10¹
        ax.set_xlabel(f"tokens/s per user (1 / {result.judged})")
        ax.set_ylabel(AXES[axis])
        ax.legend(fontsize=8, ncols=2)
        finding_title(fig, _title(result))
    return fig


def _y(result: DeployResult, label: str, axis: str):
    """One option's curve on the y-axis asked for (None: not priced)."""
    if axis == "throughput":
        return result.curves[label][1]
    usd, per_joule = result.costs.curves.get(label, (None, None))
    return usd if axis == "cost" else per_joule


def legend_names(shown: list[str], curves: dict) -> dict[str, str]:
    """Each option's legend entry: its label, '(no batch fits)' where it has no curve, or '(under X)'
    where the last-drawn curve X that hides it (UNDER_REL) lies over every point of it."""
    out = {}
    for i, label in enumerate(shown):
        x, y = (np.asarray(a, dtype=float) for a in curves[label])
        out[label] = f"{label} (no batch fits)" if x.size == 0 else label
        for top in reversed(shown[i + 1 :]) if x.size else ():
            xt, yt = (np.asarray(a, dtype=float) for a in curves[top])
            if xt.size < 2 or x.min() < xt.min() * (1 - UNDER_REL) or x.max() > xt.max() * (1 + UNDER_REL):
                continue  # some of it reaches past the other's ends (by more than a line width)
            order = np.argsort(xt)
            at = np.interp(np.log(x), np.log(xt[order]), yt[order])  # held at its ends just past them
            if np.all(np.abs(at - y) <= UNDER_REL * np.abs(y)):
                out[label] = f"{label} (under {top})"
                break
    return out


def _title(r: DeployResult) -> str:
    if r.best is None:
        return f"{r.model} on {r.gpus} GPUs of {r.system}: no option meets the budget"
    return (
        f"{r.model} on {r.gpus} GPUs of {r.system}: {r.best.label()} gives "
        f"{r.best.tokens_per_s_per_gpu:,.0f} tokens/s per GPU at {r.best.tokens_per_s_per_user:.0f} tokens/s per user"
    )


__all__ = ["legend_names", "pareto_figure"]
