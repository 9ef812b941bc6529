"""The figures of plan results: where the token goes (ITL split per TP), communication's share of
the token, and the memory window (fits in memory and meets the budget).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..fabric.catalog import load_catalog
from ..units import format_decimal_bytes
from .fmt import fmt_seconds
from .output import FigureError
from .plan_rows import (
    batch_result,
    budget_words,
    comm_threshold,
    fabric_words,
    plan_batches,
    result_label,
    system_finding,
    tp_line,
)
from .style import (
    BATCH_STYLES,
    MARKERS,
    PART_COLORS,
    TOO_FAR_COLOR,
    WINDOW_COLOR,
    colors_for,
    figure_style,
    finding_title,
    legend_line,
    legend_patch,
    ms_axis,
    new_figure,
    place_labels,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..decide.planner import PlanResult


def _panels(results: Sequence[PlanResult], colors: Mapping[str, str] | None, figure: str):
    """(results, batch sizes, one label per result, label -> colour): what every plan figure lays out."""
    results = list(results)
    if not results:
        raise FigureError(f"{figure} needs at least one plan result")
    labels = [result_label(r) for r in results]
    return results, plan_batches(results), labels, colors_for(labels, colors)


def where_the_token_goes(results: Sequence[PlanResult], *, colors: Mapping[str, str] | None = None) -> Figure:
    """ITL vs TP as stacked bars (compute, communication latency, communication transfer), one
    column per system and one row per batch size; the budget as a line, the latency-optimal TP
    starred, and the TPs the planner calls 'sharded too far' shaded."""
    results, batches, labels, cmap = _panels(results, colors, "'where the token goes'")
    ncol, nrow = len(results), len(batches)
    with figure_style():
        fig = new_figure(max(7.5, 3.9 * ncol + 0.6), 3.5 * nrow + 1.5)
        axes = np.atleast_2d(fig.subplots(nrow, ncol, sharey="row", squeeze=False))
        values = []
        for i, batch in enumerate(batches):
            top = _token_top(results, batch)
            for j, res in enumerate(results):
                ax = axes[i, j]
                br = batch_result(res, batch)
                if br is None:
                    ax.set_axis_off()
                    continue
                values += _token_panel(
                    ax, br, res=res, top=top, color=cmap[labels[j]], label=labels[j], first_col=(j == 0)
                )
        fig.legend(handles=_token_legend(results), loc="outside lower center", ncols=3 if ncol > 1 else 2)
        budget = results[0].budget_s
        finding_title(
            fig,
            f"Where the token goes — {results[0].model}, {budget_words(budget)} budget: "
            + "; ".join(system_finding(r) for r in results),
        )
        place_labels(fig, values)  # off the budget line
    return fig


def _token_top(results: Sequence[PlanResult], batch: int) -> float:
    """The y limit of one row of panels: headroom above the tallest plan that fits, for its label
    (taller bars are clipped), and above the budget line."""
    tops = []
    for res in results:
        br = batch_result(res, batch)
        if br is None:
            continue
        line = tp_line(br.rows)
        fitting = [r.itl_s for r in line if r.fits_memory] or [r.itl_s for r in line]
        tops.append(max(1.3 * max(fitting), 1.35 * (res.budget_s or 0)))
    return max(tops) if tops else 1.0


def _token_legend(results: Sequence[PlanResult]) -> list:
    handles = [
        legend_patch(PART_COLORS["compute"], "compute (GEMMs, attention, KV reads)"),
        legend_patch(PART_COLORS["latency"], "communication: latency term"),
        legend_patch(PART_COLORS["bandwidth"], "communication: transfer (bandwidth) term"),
    ]
    if any(
        r.itl_s - r.compute_s - r.comm_s > 1e-9 * r.itl_s
        for res in results
        for br in res.results
        for r in tp_line(br.rows)
    ):
        handles.append(legend_patch(PART_COLORS["other"], "other (step overhead, host launches)", edge="#AAAAAA"))
    handles += [
        legend_patch("white", "does not fit in memory", hatch="///", edge="#777777"),
        legend_patch(TOO_FAR_COLOR, "sharded too far", alpha=0.12),
    ]
    budget, judged = results[0].budget_s, results[0].assumptions.judged
    if budget:  # served (plan --input-len/--output-len): the budget judges the TPOT, not these ITL bars
        words = (
            f"ITL budget ({fmt_seconds(budget)})"
            if judged == "ITL"
            else f"TPOT budget ({fmt_seconds(budget)}; it judges the served TPOT, not these ITL bars)"
        )
        handles.append(legend_line(words, color="black", ls="--", lw=1.3))
    return handles


def _token_panel(ax, br, *, res: PlanResult, top: float, color: str, label: str, first_col: bool) -> list:
    """One system at one batch size; returns its bars' value labels with the places they may take."""
    optimal = br.judgement.best if br.judgement else None
    line = tp_line(br.rows, optimal)
    x = list(range(len(line)))
    first = next((i for i, r in enumerate(line) if r.key == getattr(optimal, "key", None)), -1)
    past = [i for i, r in enumerate(line) if i > first and r.verdict == "sharded too far"]
    if past:
        k = past[0]
        ax.axvspan(k - 0.5, len(line) - 0.5, color=TOO_FAR_COLOR, alpha=0.10, lw=0)
        ax.text(
            len(line) - 0.55,
            0.985,
            "sharded too far",
            transform=ax.get_xaxis_transform(),
            va="top",
            ha="right",
            fontsize=8,
            color=TOO_FAR_COLOR,
            zorder=7,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1.5},
        )
    is_best = [optimal is not None and r.key == optimal.key for r in line]
    values = [
        _token_bar(ax, xi, r, top=top, budget=res.budget_s, outline=color if star else None)
        for xi, r, star in zip(x, line, is_best)
    ]
    if res.budget_s:
        ax.axhline(res.budget_s, color="black", ls="--", lw=1.3, zorder=4)
    ax.set_xticks(x, [r.label().replace(" ", "\n") + (" ★" if star else "") for r, star in zip(line, is_best)])
    for tick, star in zip(ax.get_xticklabels(), is_best):
        if star:
            tick.set_color(color)
            tick.set_fontweight("bold")
    ax.set_xlim(-0.6, len(line) - 0.4)
    ax.set_ylim(0, top)
    ms_axis(ax.yaxis)
    ax.grid(axis="x", visible=False)
    if first_col:
        ax.set_ylabel(f"batch {br.batch}\ninter-token latency (ms)")
    ax.set_title(f"{label} ({fabric_words(res)}), batch {br.batch}", color=color, fontweight="bold", fontsize=9.5)
    ax.set_xlabel("tensor-parallel degree (★, outlined: latency-optimal)", fontsize=8.5)
    return values


def _token_bar(ax, xi: int, r, *, top: float, budget: float | None, outline: str | None):
    """One plan's ITL as stacked parts, outlined in `outline` (the latency-optimal plan); returns its value
    label with the places it may take: on the bar, else just above the budget line (never across it)."""
    other = max(0.0, r.itl_s - r.compute_s - r.comm_s)
    lat = min(r.comm_latency_s, r.comm_s)
    parts = [(r.compute_s, "compute"), (lat, "latency"), (r.comm_s - lat, "bandwidth"), (other, "other")]
    bottom = 0.0
    for value, part in parts:
        if value <= 0:
            continue
        kw = {} if r.fits_memory else {"hatch": "///", "alpha": 0.45, "edgecolor": "#777777"}
        # label: names the part for tests and tools reading ax.containers ('_' keeps it off the legend)
        ax.bar(
            xi, value, bottom=bottom, width=0.68, color=PART_COLORS[part], linewidth=0.5, label=f"_part:{part}", **kw
        )
        bottom += value
    if outline:
        ax.bar(xi, min(r.itl_s, top), width=0.68, fill=False, edgecolor=outline, linewidth=2.2, zorder=5)
    note = "" if r.fits_memory else " (no fit)"
    if r.itl_s > 0.86 * top:  # clipped (or nearly): the value goes inside the bar, written upwards
        text = ax.text(
            xi,
            top * 0.98,
            f"↑ {fmt_seconds(r.itl_s)}{note}",
            ha="center",
            va="top",
            fontsize=7.5,
            color="#222222",
            rotation=90,
            zorder=7,
        )
        spots = [(top * 0.98, "top")] + (
            [(budget - 0.02 * top, "top"), (budget + 0.02 * top, "bottom")] if budget else []
        )
    else:
        text = ax.text(
            xi,
            r.itl_s + top * 0.01,
            f"{r.itl_s * 1e3:.1f}" + ("\nno fit" if note else ""),
            ha="center",
            va="bottom",
            fontsize=7.5,
            color="#333333",
            zorder=7,
        )
        spots = [(r.itl_s + top * 0.01, "bottom")] + ([(budget + 0.01 * top, "bottom")] if budget else [])
    return text, [{"position": (xi, y), "va": va} for y, va in spots]


# --- communication share ----------------------------------------------------------------------


def comm_share(results: Sequence[PlanResult], *, colors: Mapping[str, str] | None = None) -> Figure:
    """Communication's share of the inter-token latency vs TP: one line per system (colour) and
    batch size (line style); hollow markers where the plan does not fit in memory."""
    results, batches, labels, cmap = _panels(results, colors, "the communication-share figure")
    threshold = comm_threshold(results[0])
    with figure_style():
        fig = new_figure(9.5, 5.6)
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
                ax.plot(
                    [t * dodge for t in tps],
                    [100 * r.comm_share for r in line],
                    color=cmap[label],
                    ls=ls,
                    lw=2,
                    marker=marker,
                    ms=6.5,
                    mfc=cmap[label],
                    mec=cmap[label],
                    label=f"{label}, batch {br.batch}",
                )
                for r in line:
                    if not r.fits_memory:
                        ax.plot(
                            [r.tp * dodge],
                            [100 * r.comm_share],
                            marker=marker,
                            ms=6.5,
                            mec=cmap[label],
                            mfc="white",
                            mew=1.5,
                            ls="none",
                        )
        ax.axhspan(100 * threshold, 100, color=TOO_FAR_COLOR, alpha=0.07, lw=0)
        ax.axhline(100 * threshold, color=TOO_FAR_COLOR, lw=1.2, ls="--")
        note = ax.text(
            min(all_tps),
            100 * threshold + 1.2,
            f" above {100 * threshold:.0f}%: the fabric, not the GPUs, sets the latency (comm-bound)",
            fontsize=8.5,
            color=TOO_FAR_COLOR,
            va="bottom",
        )
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(all_tps), [f"TP{t}" for t in sorted(all_tps)])
        ax.minorticks_off()
        top = max(100 * r.comm_share for res in results for br in res.results for r in tp_line(br.rows))
        ax.set_ylim(0, min(100, max(100 * threshold + 12, top * 1.15)))
        ax.set_xlabel("tensor-parallel degree (hollow marker: does not fit in memory)")
        ax.set_ylabel("communication share of inter-token latency (%)")
        ax.legend(loc="upper left", ncols=max(1, len(batches)))
        finding_title(fig, _share_finding(results, labels, threshold))
        # above the threshold's line, at its left or right end, clear of the curves
        place_labels(
            fig,
            [
                (
                    note,
                    [
                        {"position": (x, 100 * threshold + dy), "ha": ha}
                        for dy in (1.2, 4, 8, 12)
                        for x, ha in ((min(all_tps), "left"), (max(all_tps), "right"))
                    ],
                )
            ],
        )
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


# --- memory window ----------------------------------------------------------------------------


def memory_window(results: Sequence[PlanResult], *, catalog=None, colors: Mapping[str, str] | None = None) -> Figure:
    """Memory per GPU vs TP against the GPU's capacity: the smallest TP that fits, the largest that
    meets the budget, and the window of TPs that do both shaded (or 'no window' in the title)."""
    results, batches, labels, cmap = _panels(results, colors, "the memory-window figure")
    catalog = catalog or load_catalog()
    ncol, nrow = len(results), len(batches)
    with figure_style():
        fig = new_figure(max(7.5, 3.9 * ncol + 0.6), 3.3 * nrow + 1.5)
        axes = np.atleast_2d(fig.subplots(nrow, ncol, sharey=True, squeeze=False))
        # The interesting part is near the capacity line: bars far above it are clipped and labelled.
        caps = [catalog.system(r.system).gpu.memory_bytes / 1e9 for r in results]
        fit_gb = [
            r.mem_bytes_per_gpu / 1e9
            for res in results
            for br in res.results
            for r in tp_line(br.rows)
            if r.fits_memory
        ]
        top = max(1.6 * max(caps), 1.15 * max(fit_gb, default=0.0))
        windows = []
        for j, res in enumerate(results):
            gpu = catalog.system(res.system).gpu
            util = res.assumptions.memory_utilization
            per_batch = []
            for i, batch in enumerate(batches):
                ax = axes[i, j]
                br = batch_result(res, batch)
                if br is None:
                    ax.set_axis_off()
                    continue
                window = _memory_panel(
                    ax, br, gpu=gpu, util=util, top=top, color=cmap[labels[j]], label=labels[j], first_col=(j == 0)
                )
                per_batch.append((batch, window))
            windows.append((labels[j], per_batch))
        handles = [
            legend_line("GPU memory", color="black", lw=1.6),
            legend_line("usable (engine's memory utilisation)", color="black", lw=1.2, ls="--"),
            legend_line("smallest TP that fits (PP 1)", color="#1F618D", lw=1.5, ls=":"),
            legend_line("largest TP within the budget", color=TOO_FAR_COLOR, lw=1.5, ls="-."),
            legend_patch(WINDOW_COLOR, "window: fits and meets the budget", alpha=0.18),
        ]
        fig.legend(handles=handles, loc="outside lower center", ncols=3 if ncol > 1 else 2)
        finding_title(fig, _window_finding(results[0], windows))
    return fig


def _memory_panel(ax, br, *, gpu, util: float, top: float, color: str, label: str, first_col: bool):
    """One system at one batch size; returns its window (smallest, largest TP) or None."""
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
            ax.bar(
                xi,
                gb,
                width=0.62,
                color="white",
                edgecolor="#777777",
                hatch="///",
                linewidth=0.6,
                label="_memory:no-fit",
            )
        if gb > 0.93 * top:
            ax.text(
                xi,
                0.97 * top,
                f"↑ {gb:.0f} GB",
                ha="center",
                va="top",
                fontsize=7.5,
                rotation=90,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1},
            )
        else:
            ax.text(
                xi,
                gb + 0.01 * top,
                f"{gb:.0f}",
                ha="center",
                va="bottom",
                fontsize=7.5,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.7, "pad": 0.5},
            )
    cap = gpu.memory_bytes / 1e9
    ax.axhline(cap, color="black", lw=1.6)
    ax.axhline(cap * util, color="black", lw=1.2, ls="--")
    ax.text(
        len(line) - 0.45,
        cap + 0.01 * top,
        f"{gpu.name} {format_decimal_bytes(gpu.memory_bytes)}",
        va="bottom",
        ha="right",
        fontsize=8,
        zorder=6,
        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1},
    )
    alone = next((r.tp for r in line if r.fits_memory), None)  # the bars are PP 1: so is the line
    if alone is not None:
        ax.axvline(idx[alone] - 0.4, color="#1F618D", lw=1.5, ls=":")
    if br.max_tp_budget is not None and br.max_tp_budget in idx:
        ax.axvline(idx[br.max_tp_budget] + 0.4, color=TOO_FAR_COLOR, lw=1.5, ls="-.")
    ax.set_xticks(x, [f"TP{r.tp}" for r in line])
    ax.set_xlim(-0.6, len(line) - 0.4)
    ax.set_ylim(0, top)
    ax.grid(axis="x", visible=False)
    if first_col:
        ax.set_ylabel(f"batch {br.batch}\nmemory per GPU (GB = 1e9 B)")
    ax.set_xlabel("tensor-parallel degree", fontsize=8.5)
    wtext = (
        f"window TP{window[0]}–TP{window[1]}"
        if window and window[0] != window[1]
        else f"window TP{window[0]} only"
        if window
        else "no window"
    )
    ax.set_title(f"{label}, batch {br.batch}: {wtext}", color=color, fontweight="bold", fontsize=9.5)
    return window


def _window_finding(first: PlanResult, windows) -> str:
    parts = []
    for label, per_batch in windows:
        spans = {
            b: (f"TP{w[0]}–TP{w[1]}" if w and w[0] != w[1] else f"TP{w[0]}" if w else "none") for b, w in per_batch
        }
        if len(set(spans.values())) == 1:
            parts.append(f"{label} {next(iter(spans.values()))}")
        else:
            parts.append(f"{label} " + ", ".join(f"{s} at batch {b}" for b, s in spans.items()))
    return (
        f"Memory window (fits in memory and meets {budget_words(first.budget_s)}), "
        f"{first.model} {first.dtype}, context {first.context}: " + "; ".join(parts)
    )


__all__ = ["comm_share", "memory_window", "where_the_token_goes"]
