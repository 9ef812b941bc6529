"""A serving benchmark measured against its priced run (`check RESULT.json --plot`): per metric (TTFT,
TPOT, ITL) the file's mean, median and p99 as points over the priced value as a bar, so a reader sees
which metric is off, by how much, and whether the mean or only the tail strays.

The prices are decide.serving_check's records (`ServingCheckResult`); this module only draws them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..decide.serving_check import primary
from .output import FigureError
from .style import MARKERS, PALETTE, finding_title, new_figure, seconds_axis

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

METRICS = (("TTFT", "ttft"), ("TPOT", "tpot"), ("ITL", "itl"))
STATS = ("mean", "median", "p99")
MAX_RUNS = 4


def _priced(check, metric: str) -> float | None:
    """The priced value each metric is compared with (serving_check.compare): the served TPOT for TPOT
    and ITL, the TTFT for TTFT."""
    row = check.row
    return row.ttft_s if metric == "TTFT" else row.tpot_s


def _finding(result) -> str:
    off = [(c, primary(c.metrics)) for c in result.checks if c.verdict != "ok"]
    if not off:
        return f"Every metric within its band of the priced run ({len(result.checks)} run(s))"
    c, m = off[0]  # the metric the causes explain (serving_check.primary)
    cause = f": likely {c.causes[0].kind}" if c.causes else ""
    return f"{m.metric} {m.stat} is x{m.ratio:.2f} the priced run under {c.plan}{cause}"


def serving_figure(result) -> Figure:
    """Measured mean / median / p99 (points) over the priced value (bars), one panel per run."""
    checks = result.checks[:MAX_RUNS]
    if not checks:
        raise FigureError("no serving run to draw")
    fig = new_figure(3.4 * len(checks) + 1.0, 4.2)
    axes = fig.subplots(1, len(checks), squeeze=False)[0]
    for ax, c in zip(axes, checks):
        xs = range(len(METRICS))
        priced = [_priced(c, name) or 0.0 for name, _ in METRICS]
        ax.bar(xs, priced, width=0.6, color="#D5DBE1", label="priced")
        for k, stat in enumerate(STATS):
            pts = [(i, c.run.latency(key, stat)) for i, (_, key) in enumerate(METRICS)]
            pts = [(i, v) for i, v in pts if v]
            if pts:
                ax.scatter(
                    [i + (k - 1) * 0.15 for i, _ in pts],
                    [v for _, v in pts],
                    marker=MARKERS[k],
                    color=PALETTE[k],
                    zorder=3,
                    label=f"measured {stat}",
                )
        ax.set_yscale("log")
        seconds_axis(ax.yaxis)
        ax.set_xticks(list(xs), [name for name, _ in METRICS])
        name = os.path.basename(c.run.source) + (f" (run {c.run.index})" if c.run.index > 1 else "")
        ax.set_title(f"{c.plan}, {c.batch:g} in flight\n{name}", fontsize=9)
    axes[0].set_ylabel("time")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=8)
    finding_title(fig, _finding(result))
    return fig


__all__ = ["serving_figure"]
