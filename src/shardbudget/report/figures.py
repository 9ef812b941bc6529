"""Matplotlib figures: every one answers a question in its title, computed from the data it plots.

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

import io
import math
import os
import textwrap
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ShardbudgetError
from ..atomic import write_atomic as _write_atomic
from ..units import format_bytes, format_decimal_bytes, format_seconds

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..compare import CompareResult
    from ..measure.logs import MeasurementSet
    from ..planner import PlanResult


class FigureError(ShardbudgetError, ValueError):
    """A figure that cannot be written (unknown format, missing folder) or has nothing to plot."""


# Okabe & Ito's colour-blind-safe palette (https://jfly.uni-koeln.de/color/), red left out so that it
# can mean "communication" and "sharded too far" in every figure.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#8C6D31", "#000000", "#F0E442")
PART_COLORS = {"compute": "#9AA8BA", "latency": "#C0392B", "bandwidth": "#F1948A", "other": "#D5DBE1"}
TOO_FAR_COLOR = "#D62728"
WINDOW_COLOR = "#2CA02C"
BATCH_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P")
FORMATS = {".png": "png", ".svg": "svg"}

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
def _style():
    import matplotlib
    with matplotlib.rc_context(_RC):
        yield


def _figure(width_in: float, height_in: float) -> Figure:
    from matplotlib.figure import Figure
    return Figure(figsize=(width_in, height_in), layout="constrained")


def _suptitle(fig: Figure, text: str) -> None:
    """The finding as the figure's title, wrapped to the figure's width (12 pt bold: ~9 characters
    per inch)."""
    width_chars = max(40, int(fig.get_figwidth() * 9.2))
    fig.suptitle("\n".join(textwrap.wrap(text, width_chars)) or text, ha="center")


# --- colours and labels ----------------------------------------------------------------------

def system_colors(labels: Sequence[str]) -> dict[str, str]:
    """One colour per system label, in the given order (a report passes all its labels once)."""
    out: dict[str, str] = {}
    for label in labels:
        if label not in out:
            out[label] = PALETTE[len(out) % len(PALETTE)]
    return out


def _colors_for(labels: Sequence[str], colors: Mapping[str, str] | None) -> dict[str, str]:
    base = dict(colors or {})
    for label in labels:
        if label not in base:
            base[label] = PALETTE[len(base) % len(PALETTE)]
    return base


def result_label(result: PlanResult) -> str:
    """'hgx-h100' for one node, '2× hgx-h100' for two."""
    return result.system if result.nodes == 1 else f"{result.nodes}× {result.system}"


def _fabric_words(result: PlanResult) -> str:
    a = result.assumptions or {}
    intra = a.get("intra_fabric") or ""
    if result.nodes > 1 and a.get("nic"):
        return f"{intra} + {a['nic']}"
    return intra


# --- tick formatting -------------------------------------------------------------------------

def _bytes_axis(axis) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    axis.set_major_locator(LogLocator(base=16, numticks=20))
    axis.set_minor_locator(LogLocator(base=2, subs=(1.0,), numticks=60))
    axis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(v) if v > 0 else ""))
    axis.set_minor_formatter(NullFormatter())


def _seconds_axis(axis) -> None:
    from matplotlib.ticker import FuncFormatter
    axis.set_major_formatter(FuncFormatter(lambda v, _: format_seconds(v) if v > 0 else "0"))


def _ms_axis(axis) -> None:
    from matplotlib.ticker import FuncFormatter
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 1e3:g}"))


def _s(t_s: float) -> str:
    """Seconds with three significant digits, for titles and labels: '29.9 µs'."""
    return format_seconds(float(f"{t_s:.3g}"))


def _b(n_bytes: float) -> str:
    """Bytes in binary prefixes with three significant digits, for titles and labels: '67.2 KiB'."""
    exp = 0 if n_bytes < 1024 else min(int(math.log(n_bytes, 1024)), 5)
    value = float(f"{n_bytes / 1024 ** exp:.3g}")
    return f"{value:g} {('B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB')[exp]}"


fmt_seconds, fmt_bytes = _s, _b  # for the HTML report's prose and tables


def _loglog_interp(x: float, xs: Sequence[float], ys: Sequence[float]) -> float:
    import numpy as np
    return float(np.exp(np.interp(math.log(x), np.log(xs), np.log(ys))))


# --- 1. fabric comparison -------------------------------------------------------------------

def fabric_comparison(entries: Sequence[tuple[str, Sequence[Any], float]], *, op: str = "all-reduce",
                      marks: Sequence[tuple[float, str]] = (), colors: Mapping[str, str] | None = None,
                      title: str | None = None) -> Figure:
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
    cmap = _colors_for([e[0] for e in entries], colors)
    with _style():
        fig = _figure(10.5, 6.2)
        ax = fig.add_subplot()
        xs_all = [c.msg_bytes for _, costs, _ in entries for c in costs]
        x_lo, x_hi = min(xs_all), max(xs_all)
        finite = [cross for _, _, cross in entries if math.isfinite(cross) and x_lo <= cross <= x_hi]
        if finite:
            ax.axvspan(x_lo, min(finite), color="#4C72B0", alpha=0.07, lw=0)
            ax.axvspan(max(finite), x_hi, color="#DD8452", alpha=0.08, lw=0)
            every = "\n(every fabric)" if len(entries) > 1 else ""
            ax.text(x_lo * 1.3, 0.985, "latency-bound" + every, transform=ax.get_xaxis_transform(),
                    va="top", ha="left", fontsize=8.5, color="#34495E")
            ax.text(x_hi / 1.3, 0.985, "bandwidth-bound" + every, transform=ax.get_xaxis_transform(),
                    va="top", ha="right", fontsize=8.5, color="#7E5109")
        for k, (label, costs, cross) in enumerate(entries):
            color = cmap[label]
            xs = [c.msg_bytes for c in costs]
            ts = [c.time_s for c in costs]
            ax.plot(xs, ts, color=color, lw=2.2, label=f"{label}: predicted time")
            ax.plot(xs, [c.latency_s for c in costs], color=color, lw=1.2, ls="--", alpha=0.8,
                    label=f"{label}: latency term (floor)")
            if math.isfinite(cross) and xs[0] <= cross <= xs[-1]:
                t_cross = _loglog_interp(cross, xs, ts)
                ax.plot([cross], [t_cross], "o", ms=7, mfc="white", mec=color, mew=2, zorder=5)
                # alternate above-left / below-right so that close crossovers keep readable labels
                above = k % 2 == 0
                ax.annotate(f"crossover {_b(cross)}", (cross, t_cross), xytext=(-9, 9) if above else (9, -9),
                            textcoords="offset points", ha="right" if above else "left",
                            va="bottom" if above else "top", fontsize=8, color=color, fontweight="bold")
        for msg, label in marks:
            if x_lo <= msg <= x_hi:
                ax.axvline(msg, color="#555555", lw=1, ls=":", zorder=1)
                ax.text(msg, 0.80, f"{label}: {_b(msg)} ", transform=ax.get_xaxis_transform(),
                        rotation=90, va="top", ha="right", fontsize=8, color="#333333")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlim(x_lo, x_hi)
        _bytes_axis(ax.xaxis)
        _seconds_axis(ax.yaxis)
        ax.set_xlabel("message size per rank (bytes, nccl-tests 'size')")
        ax.set_ylabel(f"{op} time per call (s, log scale)")
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=min(3, len(entries)))
        _suptitle(fig, title or _fabric_finding(entries, op, marks))
    return fig


def _fabric_finding(entries, op: str, marks) -> str:
    decode = [(m, lbl) for m, lbl in marks if "decode" in lbl.lower()] or list(marks)
    if len(entries) > 1 and decode:
        msg, lbl = decode[0]
        times = sorted(((_loglog_interp(msg, [c.msg_bytes for c in costs], [c.time_s for c in costs]), label)
                        for label, costs, _ in entries))
        (t_fast, fast), (t_slow, slow) = times[0], times[-1]
        crosses = [cross for _, _, cross in entries if math.isfinite(cross)]
        tail = (f"; every fabric is latency-bound below {_b(min(crosses))}" if crosses else "")
        return (f"{op} at the {_b(msg)} message of {lbl}: {slow} takes {_s(t_slow)}, "
                f"{t_slow / t_fast:.1f}× {fast} ({_s(t_fast)}){tail}")
    parts = []
    for label, costs, cross in entries:
        floor = min(c.latency_s for c in costs)
        where = f"latency-bound below {_b(cross)}" if math.isfinite(cross) else "latency-bound throughout"
        parts.append(f"{label}: {where} (floor {_s(floor)}), "
                     f"busbw {format_decimal_bytes(float(f'{costs[-1].busbw_bytes_per_s:.3g}'))}/s at {_b(costs[-1].msg_bytes)}")
    return f"{op}: " + "; ".join(parts)


def compare_figure(result: CompareResult, *, catalog=None, colors: Mapping[str, str] | None = None) -> Figure:
    """`shardbudget compare --plot`: the systems' curves with the compared message sizes marked."""
    from ..collectives import make_group, sweep
    from ..compare import effective_impl
    from ..hardware import load_catalog
    import numpy as np
    catalog = catalog or load_catalog()
    sizes = [float(s) for s in np.geomspace(8, 2 ** 32, 113)]
    entries = []
    for name, cross in zip(result.systems, result.crossovers):
        group = make_group(name, nodes=result.nodes, gpus=result.gpus, catalog=catalog)
        costs = sweep(result.op, sizes, name, nodes=result.nodes, gpus=result.gpus,
                      impl=effective_impl(group, result.impl), catalog=catalog)
        entries.append((f"{name} ×{result.gpus}", costs, cross))
    marks = [(r.msg_bytes, r.label) for r in result.rows if r.label != "reference"]
    return fabric_comparison(entries, op=result.op, marks=marks, colors=colors)


# --- helpers over plan results --------------------------------------------------------------

def tp_line(rows) -> list:
    """Pure-TP rows (pp = 1; for MoE the faster of ep = 1 / ep = tp), ordered by TP."""
    best: dict[int, Any] = {}
    for r in rows:
        if r.pp == 1 and (r.tp not in best or r.itl_s < best[r.tp].itl_s):
            best[r.tp] = r
    return [best[t] for t in sorted(best)]


def _batches(results: Sequence[PlanResult]) -> list[int]:
    seen: list[int] = []
    for res in results:
        for br in res.results:
            if br.batch not in seen:
                seen.append(br.batch)
    return seen


def batch_result(result: PlanResult, batch: int):
    return next((br for br in result.results if br.batch == batch), None)


def too_far_tps(br) -> list[int]:
    return sorted({r.tp for r in br.rows if r.pp == 1 and r.verdict == "sharded too far"})


def _budget_words(budget_s: float | None) -> str:
    return _s(budget_s) if budget_s else "no budget"


def system_finding(result: PlanResult) -> str:
    """One clause per system: does it meet the budget, at which TP, and where does sharding stop paying."""
    label = result_label(result)
    budget = result.budget_s
    brs = list(result.results)
    meeting = [br for br in brs if br.max_tp_budget is not None]
    parts = []
    if budget is None:
        parts.append("latency-optimal at " + ", ".join(f"TP{br.best_tp} (batch {br.batch})" for br in brs))
    elif len(meeting) == len(brs):
        tps = sorted({br.max_tp_budget for br in brs})
        at = f"TP{tps[0]}" if len(tps) == 1 else "TP" + "/".join(str(t) for t in tps)
        parts.append(f"meets {_s(budget)} up to {at} at batch "
                     + " and ".join(str(br.batch) for br in brs))
    elif meeting:
        parts.append(f"meets {_s(budget)} only at batch "
                     + ", ".join(f"{br.batch} (TP{br.max_tp_budget})" for br in meeting))
    else:
        best = min((r for br in brs for r in tp_line(br.rows) if r.fits_memory), key=lambda r: r.itl_s, default=None)
        parts.append(f"misses {_s(budget)} at every TP"
                     + (f" (best {_s(best.itl_s)} at TP{best.tp})" if best else " (does not fit)"))
    far = {}
    for br in brs:
        tps = too_far_tps(br)
        if tps:
            row = next(r for r in tp_line(br.rows) if r.tp == tps[0])
            far[br.batch] = (tps[0], row.comm_share)
    if far:
        first = min(t for t, _ in far.values())
        share = max(s for _, s in far.values())
        which = "" if len(far) == len(brs) else " at batch " + ", ".join(str(b) for b in far)
        parts.append(f"TP{first}{'+' if first < max(r.tp for r in tp_line(brs[0].rows)) else ''} "
                     f"sharded too far{which} (up to {100 * share:.0f}% communication)")
    return f"{label}: " + ", ".join(parts)


# --- 2. where the token goes ----------------------------------------------------------------

def where_the_token_goes(results: Sequence[PlanResult], *, colors: Mapping[str, str] | None = None) -> Figure:
    """ITL vs TP as stacked bars (compute, communication latency, communication transfer), one
    column per system and one row per batch size; the budget as a line, the latency-optimal TP
    starred, and the TPs the planner calls 'sharded too far' shaded."""
    results = list(results)
    if not results:
        raise FigureError("'where the token goes' needs at least one plan result")
    import numpy as np
    batches = _batches(results)
    labels = [result_label(r) for r in results]
    cmap = _colors_for(labels, colors)
    ncol, nrow = len(results), len(batches)
    with _style():
        fig = _figure(max(7.5, 3.9 * ncol + 0.6), 3.5 * nrow + 1.5)
        axes = np.atleast_2d(fig.subplots(nrow, ncol, sharey="row", squeeze=False))
        for i, batch in enumerate(batches):
            tops = []
            for res in results:
                br = batch_result(res, batch)
                if br is None:
                    continue
                line = tp_line(br.rows)
                fitting = [r.itl_s for r in line if r.fits_memory] or [r.itl_s for r in line]
                # headroom above the tallest plan that fits, for its label; taller bars are clipped
                tops.append(max(1.3 * max(fitting), 1.35 * (res.budget_s or 0)))
            top = max(tops) if tops else 1.0
            for j, res in enumerate(results):
                ax = axes[i, j]
                br = batch_result(res, batch)
                if br is None:
                    ax.set_axis_off()
                    continue
                _token_panel(ax, res, br, top, cmap[labels[j]], labels[j], first_col=(j == 0))
        handles = [_patch(PART_COLORS["compute"], "compute (GEMMs, attention, KV reads)"),
                   _patch(PART_COLORS["latency"], "communication: latency term"),
                   _patch(PART_COLORS["bandwidth"], "communication: transfer (bandwidth) term")]
        if any(r.itl_s - r.compute_s - r.comm_s > 1e-9 * r.itl_s for res in results for br in res.results
               for r in tp_line(br.rows)):
            handles.append(_patch(PART_COLORS["other"], "other (step overhead, host launches)", edge="#AAAAAA"))
        handles += [
                   _patch("white", "does not fit in memory", hatch="///", edge="#777777"),
                   _patch(TOO_FAR_COLOR, "sharded too far", alpha=0.12)]
        from matplotlib.lines import Line2D
        budget = results[0].budget_s
        if budget:
            handles.append(Line2D([], [], color="black", ls="--", lw=1.3, label=f"ITL budget ({_s(budget)})"))
        fig.legend(handles=handles, loc="outside lower center", ncols=3 if ncol > 1 else 2)
        _suptitle(fig, f"Where the token goes — {results[0].model}, {_budget_words(budget)} budget: "
                  + "; ".join(system_finding(r) for r in results))
    return fig


def _patch(color: str, label: str, *, hatch: str | None = None, edge: str | None = None, alpha: float = 1.0):
    from matplotlib.patches import Patch
    return Patch(facecolor=color, edgecolor=edge or color, hatch=hatch, alpha=alpha, label=label)


def _token_panel(ax, res: PlanResult, br, top: float, color: str, label: str, *, first_col: bool) -> None:
    line = tp_line(br.rows)
    x = list(range(len(line)))
    too_far = too_far_tps(br)
    if too_far:
        k = next(i for i, r in enumerate(line) if r.tp == too_far[0])
        ax.axvspan(k - 0.5, len(line) - 0.5, color=TOO_FAR_COLOR, alpha=0.10, lw=0)
        ax.text(len(line) - 0.55, 0.985, "sharded too far", transform=ax.get_xaxis_transform(), va="top", ha="right",
                fontsize=8, color=TOO_FAR_COLOR, zorder=7,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1.5})
    for xi, r in zip(x, line):
        other = max(0.0, r.itl_s - r.compute_s - r.comm_s)
        lat = min(r.comm_latency_s, r.comm_s)
        parts = [(r.compute_s, "compute"), (lat, "latency"), (r.comm_s - lat, "bandwidth"), (other, "other")]
        bottom = 0.0
        for value, part in parts:
            if value <= 0:
                continue
            kw = {} if r.fits_memory else {"hatch": "///", "alpha": 0.45, "edgecolor": "#777777"}
            # label: names the part for tests and tools reading ax.containers ('_' keeps it off the legend)
            ax.bar(xi, value, bottom=bottom, width=0.68, color=PART_COLORS[part], linewidth=0.5,
                   label=f"_part:{part}", **kw)
            bottom += value
        if br.best_tp == r.tp:  # the latency-optimal plan gets an outline in the system's colour
            ax.bar(xi, min(r.itl_s, top), width=0.68, fill=False, edgecolor=color, linewidth=2.2, zorder=5)
        note = "" if r.fits_memory else " (no fit)"
        if r.itl_s > 0.86 * top:  # clipped (or nearly): the value goes inside the bar, written upwards
            ax.text(xi, top * 0.98, f"↑ {_s(r.itl_s)}{note}", ha="center", va="top", fontsize=7.5,
                    color="#222222", rotation=90, zorder=7)
        else:
            ax.text(xi, r.itl_s + top * 0.01, f"{r.itl_s * 1e3:.1f}" + ("\nno fit" if note else ""),
                    ha="center", va="bottom", fontsize=7.5, color="#333333")
    if res.budget_s:
        ax.axhline(res.budget_s, color="black", ls="--", lw=1.3, zorder=4)
    ax.set_xticks(x, [f"TP{r.tp}" + (" ★" if r.tp == br.best_tp else "") for r in line])
    for tick, r in zip(ax.get_xticklabels(), line):
        if r.tp == br.best_tp:
            tick.set_color(color)
            tick.set_fontweight("bold")
    ax.set_xlim(-0.6, len(line) - 0.4)
    ax.set_ylim(0, top)
    _ms_axis(ax.yaxis)
    ax.grid(axis="x", visible=False)
    if first_col:
        ax.set_ylabel(f"batch {br.batch}\ninter-token latency (ms)")
    ax.set_title(f"{label} ({_fabric_words(res)}), batch {br.batch}", color=color, fontweight="bold",
                 fontsize=9.5)
    ax.set_xlabel("tensor-parallel degree (★, outlined: latency-optimal)", fontsize=8.5)


# --- 3. communication share -----------------------------------------------------------------

def comm_share(results: Sequence[PlanResult], *, colors: Mapping[str, str] | None = None) -> Figure:
    """Communication's share of the inter-token latency vs TP: one line per system (colour) and
    batch size (line style); hollow markers where the plan does not fit in memory."""
    results = list(results)
    if not results:
        raise FigureError("the communication-share figure needs at least one plan result")
    labels = [result_label(r) for r in results]
    cmap = _colors_for(labels, colors)
    batches = _batches(results)
    threshold = float((results[0].assumptions or {}).get("comm_threshold", 0.30))
    with _style():
        fig = _figure(9.5, 5.6)
        ax = fig.add_subplot()
        all_tps: set[int] = set()
        n = len(results)
        for k, (res, label) in enumerate(zip(results, labels)):
            # Systems that share a node type draw identical lines up to one node: a small sideways
            # dodge (a few % of a TP doubling) keeps every line visible.
            dodge = 2 ** (0.045 * (k - (n - 1) / 2))
            marker = MARKERS[k % len(MARKERS)]
            for br in res.results:
                line = tp_line(br.rows)
                tps = [r.tp for r in line]
                all_tps.update(tps)
                ls = BATCH_STYLES[batches.index(br.batch) % len(BATCH_STYLES)]
                ax.plot([t * dodge for t in tps], [100 * r.comm_share for r in line], color=cmap[label], ls=ls,
                        lw=2, marker=marker, ms=6.5, mfc=cmap[label], mec=cmap[label],
                        label=f"{label}, batch {br.batch}")
                for r in line:
                    if not r.fits_memory:
                        ax.plot([r.tp * dodge], [100 * r.comm_share], marker=marker, ms=6.5, mec=cmap[label],
                                mfc="white", mew=1.5, ls="none")
        ax.axhspan(100 * threshold, 100, color=TOO_FAR_COLOR, alpha=0.07, lw=0)
        ax.axhline(100 * threshold, color=TOO_FAR_COLOR, lw=1.2, ls="--")
        ax.text(min(all_tps), 100 * threshold + 1.2, f" above {100 * threshold:.0f}%: the fabric, not the GPUs, "
                "sets the latency ('sharded too far')", fontsize=8.5, color=TOO_FAR_COLOR, va="bottom")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(all_tps), [f"TP{t}" for t in sorted(all_tps)])
        ax.minorticks_off()
        top = max(100 * r.comm_share for res in results for br in res.results for r in tp_line(br.rows))
        ax.set_ylim(0, min(100, max(100 * threshold + 12, top * 1.15)))
        ax.set_xlabel("tensor-parallel degree (hollow marker: does not fit in memory)")
        ax.set_ylabel("communication share of inter-token latency (%)")
        ax.legend(loc="upper left", ncols=max(1, len(batches)))
        _suptitle(fig, _share_finding(results, labels, threshold))
    return fig


def _share_finding(results, labels, threshold: float) -> str:
    crossing, below = [], []
    for res, label in zip(results, labels):
        hits = []
        for br in res.results:
            first = next((r for r in tp_line(br.rows) if r.fits_memory and r.comm_share > threshold), None)
            if first:
                hits.append((first.tp, br.batch, first.comm_share))
        if hits:
            tp, batch, share = min(hits)
            crossing.append(f"{label} at TP{tp} (batch {batch}, {100 * share:.0f}%)")
        else:
            worst = max((r.comm_share for br in res.results for r in tp_line(br.rows) if r.fits_memory), default=0.0)
            below.append(f"{label} (≤{100 * worst:.0f}%)")
    text = "Communication share of the token: "
    if crossing:
        text += f"crosses {100 * threshold:.0f}% on " + ", ".join(crossing)
    if below:
        text += ("; " if crossing else "") + f"stays under {100 * threshold:.0f}% on " + ", ".join(below)
    return text


# --- 4. memory window -----------------------------------------------------------------------

def memory_window(results: Sequence[PlanResult], *, catalog=None, colors: Mapping[str, str] | None = None) -> Figure:
    """Memory per GPU vs TP against the GPU's capacity: the smallest TP that fits, the largest that
    meets the budget, and the window of TPs that do both shaded (or 'no window' in the title)."""
    from ..hardware import load_catalog
    import numpy as np
    results = list(results)
    if not results:
        raise FigureError("the memory-window figure needs at least one plan result")
    catalog = catalog or load_catalog()
    batches = _batches(results)
    labels = [result_label(r) for r in results]
    cmap = _colors_for(labels, colors)
    ncol, nrow = len(results), len(batches)
    with _style():
        fig = _figure(max(7.5, 3.9 * ncol + 0.6), 3.3 * nrow + 1.5)
        axes = np.atleast_2d(fig.subplots(nrow, ncol, sharey=True, squeeze=False))
        # The interesting part is near the capacity line: bars far above it are clipped and labelled.
        caps = [catalog.system(r.system).gpu.memory_bytes / 1e9 for r in results]
        fit_gb = [r.mem_bytes_per_gpu / 1e9 for res in results for br in res.results for r in tp_line(br.rows)
                  if r.fits_memory]
        top = max(1.6 * max(caps), 1.15 * max(fit_gb, default=0.0))
        windows = []
        for j, res in enumerate(results):
            gpu = catalog.system(res.system).gpu
            util = float(((res.assumptions or {}).get("efficiency") or {}).get("memory_utilization", 1.0))
            per_batch = []
            for i, batch in enumerate(batches):
                ax = axes[i, j]
                br = batch_result(res, batch)
                if br is None:
                    ax.set_axis_off()
                    continue
                window = _memory_panel(ax, res, br, gpu, util, top, cmap[labels[j]], labels[j],
                                       first_col=(j == 0))
                per_batch.append((batch, window))
            windows.append((labels[j], per_batch))
        from matplotlib.lines import Line2D
        handles = [Line2D([], [], color="black", lw=1.6, label="GPU memory"),
                   Line2D([], [], color="black", lw=1.2, ls="--", label="usable (engine's memory utilisation)"),
                   Line2D([], [], color="#1F618D", lw=1.5, ls=":", label="smallest TP that fits"),
                   Line2D([], [], color=TOO_FAR_COLOR, lw=1.5, ls="-.", label="largest TP within the budget"),
                   _patch(WINDOW_COLOR, "window: fits and meets the budget", alpha=0.18)]
        fig.legend(handles=handles, loc="outside lower center", ncols=3 if ncol > 1 else 2)
        _suptitle(fig, _window_finding(results[0], windows))
    return fig


def _memory_panel(ax, res, br, gpu, util: float, top: float, color: str, label: str, *, first_col: bool):
    line = tp_line(br.rows)
    x = list(range(len(line)))
    idx = {r.tp: i for i, r in enumerate(line)}
    ok = [r.tp for r in line if r.meets_budget]
    window = (min(ok), max(ok)) if ok else None
    if window:
        ax.axvspan(idx[window[0]] - 0.45, idx[window[1]] + 0.45, color=WINDOW_COLOR, alpha=0.18, lw=0)
    for xi, r in zip(x, line):
        gb = r.mem_bytes_per_gpu / 1e9
        if r.fits_memory:
            ax.bar(xi, gb, width=0.62, color=color, alpha=0.85, label="_memory:fits")
        else:
            ax.bar(xi, gb, width=0.62, color="white", edgecolor="#777777", hatch="///", linewidth=0.6,
                   label="_memory:no-fit")
        if gb > 0.93 * top:
            ax.text(xi, 0.97 * top, f"↑ {gb:.0f} GB", ha="center", va="top", fontsize=7.5, rotation=90,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
        else:
            ax.text(xi, gb + 0.01 * top, f"{gb:.0f}", ha="center", va="bottom", fontsize=7.5,
                    bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.7, "pad": 0.5})
    cap = gpu.memory_bytes / 1e9
    ax.axhline(cap, color="black", lw=1.6)
    ax.axhline(cap * util, color="black", lw=1.2, ls="--")
    ax.text(len(line) - 0.45, cap + 0.01 * top, f"{gpu.name} {format_decimal_bytes(gpu.memory_bytes)}",
            va="bottom", ha="right", fontsize=8, zorder=6,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1})
    if br.min_tp_memory is not None and br.min_tp_memory in idx:
        ax.axvline(idx[br.min_tp_memory] - 0.4, color="#1F618D", lw=1.5, ls=":")
    if br.max_tp_budget is not None and br.max_tp_budget in idx:
        ax.axvline(idx[br.max_tp_budget] + 0.4, color=TOO_FAR_COLOR, lw=1.5, ls="-.")
    ax.set_xticks(x, [f"TP{r.tp}" for r in line])
    ax.set_xlim(-0.6, len(line) - 0.4)
    ax.set_ylim(0, top)
    ax.grid(axis="x", visible=False)
    if first_col:
        ax.set_ylabel(f"batch {br.batch}\nmemory per GPU (GB = 1e9 B)")
    ax.set_xlabel("tensor-parallel degree", fontsize=8.5)
    wtext = (f"window TP{window[0]}–TP{window[1]}" if window and window[0] != window[1]
             else f"window TP{window[0]} only" if window else "no window")
    ax.set_title(f"{label}, batch {br.batch}: {wtext}", color=color, fontweight="bold", fontsize=9.5)
    return window


def _window_finding(first: PlanResult, windows) -> str:
    parts = []
    for label, per_batch in windows:
        spans = {b: (f"TP{w[0]}–TP{w[1]}" if w and w[0] != w[1] else f"TP{w[0]}" if w else "none")
                 for b, w in per_batch}
        if len(set(spans.values())) == 1:
            parts.append(f"{label} {next(iter(spans.values()))}")
        else:
            parts.append(f"{label} " + ", ".join(f"{s} at batch {b}" for b, s in spans.items()))
    return (f"Memory window (fits in memory and meets {_budget_words(first.budget_s)}), "
            f"{first.model} {first.dtype}, context {first.context}: " + "; ".join(parts))


# --- 5. measured vs predicted ---------------------------------------------------------------

def measured_groups(ms: MeasurementSet) -> list[tuple[str, list]]:
    """Out-of-place samples (nccl-tests' first columns) grouped per run: (label, samples)."""
    samples = [s for s in ms.samples if not s.in_place] or list(ms.samples)
    groups: dict[tuple, list] = {}
    for s in samples:
        groups.setdefault((s.run, s.op, s.n_ranks, s.n_nodes), []).append(s)
    out = []
    for (run, op, ranks, nodes), ss in groups.items():
        where = f"{ranks} ranks" + (f" on {nodes} node{'s' if nodes != 1 else ''}" if nodes else "")
        out.append((f"run {run}: {op}, {where}", sorted(ss, key=lambda s: s.msg_bytes)))
    return out


def predict_samples(samples, system, *, impl: str = "nccl", catalog=None) -> list[float] | None:
    """The model's time for each sample's size, rank and node count; None where it cannot place them
    on `system` (more ranks than the nodes hold, an op the model does not price)."""
    from ..collectives import OPS, make_group, sweep
    from ..compare import effective_impl
    s0 = samples[0]
    if s0.op not in OPS:
        return None
    sysm = catalog.system(system) if isinstance(system, str) else system
    nodes = s0.n_nodes or max(1, math.ceil(s0.n_ranks / sysm.gpus_per_node))
    try:
        group = make_group(sysm, nodes=nodes, gpus=s0.n_ranks, catalog=catalog)
        return [c.time_s for c in sweep(s0.op, [max(1.0, s.msg_bytes) for s in samples], sysm, nodes=nodes,
                                        gpus=s0.n_ranks, impl=effective_impl(group, impl), catalog=catalog)]
    except ShardbudgetError:
        return None


def measured_vs_predicted(measured, system: str | None = None, *, impl: str = "nccl", catalog=None,
                          color: str | None = None, max_runs: int = 6) -> Figure:
    """Measured collective times (points) over the model's prediction (lines), and the relative error
    (predicted − measured) / measured per size in a lower panel.

    `measured` is a `MeasurementSet` (`measure.logs.read_log`), compared with the catalog model of
    `system`; or a `measure.fit.FitResult` (`shardbudget fit --plot`), whose residuals already hold
    the fitted profile's predictions (`system` is then not needed)."""
    if hasattr(measured, "residuals") and hasattr(measured, "base_system"):
        return _fit_vs_measured(measured, color=color, max_runs=max_runs)
    if system is None:
        raise FigureError("measured vs predicted: name the system whose model the measurement is compared with")
    from ..hardware import load_catalog
    catalog = catalog or load_catalog()
    groups = []
    for label, samples in measured_groups(measured)[:max_runs]:
        pred = predict_samples(samples, system, impl=impl, catalog=catalog)
        if pred is not None:
            groups.append((label, [max(1.0, s.msg_bytes) for s in samples], [s.time_s for s in samples], pred,
                           f"predicted on {system} ({samples[0].n_ranks} GPUs)"))
    if not groups:
        raise FigureError(f"{measured.source}: no run in it can be placed on {system} "
                          "(ranks, nodes or op do not match)")
    name = os.path.basename(str(measured.source)) or str(measured.source)
    return _measured_figure(groups, f"{name} against the {system} model", color)


def _fit_vs_measured(result, *, color: str | None, max_runs: int) -> Figure:
    by: dict[tuple, list] = {}
    for r in result.residuals:
        by.setdefault((r.op, r.ranks, r.nodes), []).append(r)
    groups = []
    for (op, ranks, nodes), rs in list(by.items())[:max_runs]:
        rs = sorted(rs, key=lambda r: r.msg_bytes)
        where = f"{op}, {ranks} ranks on {nodes} node{'s' if nodes != 1 else ''}"
        groups.append((where, [max(1.0, r.msg_bytes) for r in rs], [r.measured_s for r in rs],
                       [r.predicted_s for r in rs], f"fitted {result.name}"))
    if not groups:
        raise FigureError(f"fit {result.name!r} has no residuals to plot")
    names = ", ".join(os.path.basename(str(s)) for s in result.sources) or "measurements"
    return _measured_figure(groups, f"{names} against the fitted profile {result.name} (from {result.base_system})",
                            color)


def _measured_figure(groups, what: str, color: str | None) -> Figure:
    """groups: (label, sizes, measured times, predicted times, prediction label)."""
    palette = [color] if color and len(groups) == 1 else list(PALETTE)
    with _style():
        fig = _figure(9.5, 7.0)
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
        _bytes_axis(top.xaxis)
        _seconds_axis(top.yaxis)
        top.set_ylabel("time per call (s, log scale)")
        top.legend(loc="upper left", fontsize=8)
        bottom.axhspan(-20, 20, color=WINDOW_COLOR, alpha=0.12, lw=0)
        bottom.axhline(0, color="black", lw=1)
        lo = min(e for _, e in errors_all)
        hi = max(e for _, e in errors_all)
        bottom.set_ylim(max(-100, min(-30, lo * 1.15)), min(300, max(30, hi * 1.15)))
        bottom.set_ylabel("error (%)\n(pred − meas) / meas")
        bottom.set_xlabel("message size per rank (bytes, nccl-tests 'size')")
        bottom.text(0.005, 0.97, "±20% band; points outside −100..300% are drawn at the edge",
                    transform=bottom.transAxes, fontsize=7.5, va="top", color="#555555")
        _suptitle(fig, _error_finding(what, errors_all))
    return fig


def error_summary(errors: Sequence[tuple[float, float]], split_bytes: float = 2 ** 20) -> dict:
    """Median |error| % overall, below and from `split_bytes` (latency- vs bandwidth-dominated sizes)."""
    import numpy as np

    def med(vals):
        return float(np.median(np.abs(vals))) if len(vals) else None

    return {"median_abs_pct": med([e for _, e in errors]),
            "small_median_abs_pct": med([e for x, e in errors if x < split_bytes]),
            "large_median_abs_pct": med([e for x, e in errors if x >= split_bytes]),
            "small_median_pct": float(np.median([e for x, e in errors if x < split_bytes]))
            if any(x < split_bytes for x, _ in errors) else None,
            "split_bytes": split_bytes, "n": len(errors)}


def _error_finding(what: str, errors) -> str:
    s = error_summary(errors)
    text = f"{what}: median |error| {s['median_abs_pct']:.0f}% over {s['n']} sizes"
    details = []
    if s["small_median_abs_pct"] is not None:
        details.append(f"{s['small_median_abs_pct']:.0f}% below {_b(s['split_bytes'])}")
    if s["large_median_abs_pct"] is not None:
        details.append(f"{s['large_median_abs_pct']:.0f}% from {_b(s['split_bytes'])} up")
    text += (" — " + ", ".join(details)) if details else ""
    if s["small_median_pct"] is not None and abs(s["small_median_pct"]) > 20:
        text += ("; small messages take longer than predicted" if s["small_median_pct"] < 0
                 else "; small messages are faster than predicted")
    return text


# --- output ---------------------------------------------------------------------------------

SVG_ID_SALT = "shardbudget"


def render(fig: Figure, fmt: str, *, id_salt: str = SVG_ID_SALT) -> bytes:
    """The figure as PNG or SVG bytes, the same bytes for the same figure.

    matplotlib names an SVG's clip paths, hatches and markers by a hash salted with a fresh uuid4
    unless `svg.hashsalt` is set; a fixed salt makes the ids a function of the content. Figures
    that share a page need different salts (`id_salt`), or two of them could define one id."""
    if fmt not in FORMATS.values():
        raise FigureError(f"figure format {fmt!r} is not supported (expected png or svg)")
    import matplotlib
    buf = io.BytesIO()
    with _style(), matplotlib.rc_context({"svg.hashsalt": id_salt}):
        fig.savefig(buf, format=fmt, metadata=_metadata(fmt))
    return buf.getvalue()


def _metadata(fmt: str) -> dict:
    # No creation date: the same figure gives the same file.
    return {"Date": None} if fmt == "svg" else {}


def to_svg(fig: Figure, *, id_salt: str = SVG_ID_SALT) -> str:
    """Inline SVG (no XML prolog or DOCTYPE), ready to be placed in an HTML page."""
    text = render(fig, "svg", id_salt=id_salt).decode("utf-8")
    return text[text.index("<svg"):]


def check_path(path: str | os.PathLike) -> str:
    """The format for `path` (png or svg), or a one-line error before any work is done."""
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise FigureError(f"cannot write a figure to {path}: expected a .png or .svg file name, "
                          f"got {path.suffix or 'no extension'!r}")
    _check_target(path)
    return fmt


def _check_target(path: Path) -> None:
    """An output file can be written here: its folder exists and it is not itself a folder."""
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise FigureError(f"cannot write {path}: folder {parent} does not exist")
    if path.is_dir():
        raise FigureError(f"cannot write {path}: it is a folder")


def save(fig: Figure, path: str | os.PathLike) -> Path:
    """Write `fig` as PNG or SVG (chosen by the extension), atomically: temp file, then rename."""
    fmt = check_path(path)
    write_atomic(Path(path), render(fig, fmt))
    return Path(path)


def write_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write bytes to `path` through a temp file in the same folder and os.replace (never half a file)."""
    path = Path(path)
    _check_target(path)
    try:
        _write_atomic(path, data)
    except OSError as err:
        raise FigureError(f"cannot write {path}: {err.strerror or err}") from None
    return path


__all__ = ["FigureError", "PALETTE", "batch_result", "comm_share", "compare_figure", "error_summary",
           "fabric_comparison", "fmt_bytes", "fmt_seconds", "measured_groups", "measured_vs_predicted",
           "memory_window", "predict_samples", "render", "result_label", "save", "system_colors",
           "system_finding", "to_svg", "too_far_tps", "tp_line", "where_the_token_goes", "write_atomic"]
