"""The interactive report's grid: every answer the page can show, laid out as JSON here from the
answers decide/report_grid.py priced and judged, so that the page's JavaScript only looks things up
and can never say something `shardbudget plan` would not. Nothing here prices or judges.

Dimensions: system x engine x batch (the cells), and the budget steps of the slider. A cell holds
the planner's rows for one (system, engine, batch) -- priced once by `plan` -- and, for every budget
step, the verdicts `verdicts.judge` gives on those same rows under that budget (report_grid.rejudge:
no re-pricing, only `meets_budget` changes with the budget). Sentences are stored once in `strings`
and referred to by index, since most of them do not depend on the budget.

The format (``GRID_FORMAT``), as JSON with sorted keys::

    {"format": "shardbudget.report-grid/1", "model": "llama-3.1-70b",
     "systems": ["hgx-h100", ...], "engines": [{"key": "nccl", "label": "..."}, ...],
     "batches": [1, 64], "budgets": [{"s": 0.05, "label": "50 ms"}, ..., {"s": null, "label": "no budget"}],
     "initial": {"system": 0, "engine": 0, "batch": 0, "budget": 7},
     "labels": ["does not fit", "latency-optimal", "over budget", "sharded too far", "ok"],
     "parts": [{"key": "compute_s", "label": "compute", "color": "#9AA8BA"}, ...],
     "strings": ["Batch 1: llama-3.1-70b on hgx-h100 fits on ...", ...],
     "cells": [[[cell, ...per batch], ...per engine], ...per system],
     "deploy": [[deploy cell, ...per engine], ...per system],
     "deploy_rows": [entry, ...],                 # `deployment_entry`, each distinct one once
     "deploy_labels": ["meets the budget", "over the TPOT budget", ...],
     "deploy_note": "..."}

    cell = {"rows": [{"plan": "TP8", "tp": 8, "pp": 1, "ep": 1, "dp": 1, "gpus": 8, "itl_s": ...,
                      "compute_s": ..., "comm_s": ..., "host_s": ..., "mem_bytes_per_gpu": ...,
                      "fits": true, "comm_bound": false, "itl": "11.5 ms", "mem": "70.1 GB",
                      "share": "35%"}, ...],           # the planner's order
            "order": [row indices, fewest GPUs first],   # display order of the bars
            "steps": [{"lead": i, "sentences": [i, ...], "labels": [label index per row],
                       "pick": row index | null, "best": row index | null}, ...per budget]}

    deploy cell = {"rows": [[deploy_rows index per split], ...per batch],   # `deploy --batch B` at each batch
                   "largest": [["12" | "–" per split], ...per budget],     # `deploy`'s own max batch
                   "steps": [[{"order": [split, ...best first], "labels": [deploy_labels index, ...]},
                              ...per budget], ...per batch]}
    entry = {"plan": "1 × TP8", "gpus": 8, "in_flight": 64, "itl_s": ..., "itl": "17.1 ms", "tpot_s": ...,
             "tpot": "24.3 ms",
             "tokens_per_s_per_gpu": ..., "tokens": "468", "mem_bytes_per_gpu": ..., "mem": "31.2 GB"}

Every control drives the deployment table too: the batch selects each option at that decode batch
(`deploy --batch`), the budget what meets it, its order and each option's largest batch within it.

Seconds and bytes are SI floats; the strings ("11.5 ms", "70.1 GB") are what the page prints.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from ..decide.report_grid import DeployOptions, GridAnswers
from ..decide.verdicts import LABELS, Row, Verdict
from ..defaults import BUDGET_STEPS as DEFAULT_BUDGET_STEPS
from ..errors import ShardbudgetError
from ..model import Plan
from .fmt import fmt_pct, fmt_seconds
from .output import FigureError
from .style import PART_COLORS

GRID_FORMAT = "shardbudget.report-grid/1"
MAX_GRID_BYTES = 4_000_000
"""The most a report embeds (4 MB, decimal): beyond it a browser parses the page for seconds."""
DEPLOY_KEYS = ("replicas", "tp", "pp", "ep", "dp", "max_batch", "itl_s", "tpot_s", "tokens_per_s_per_gpu")
PARTS = (
    ("compute_s", "compute", PART_COLORS["compute"]),
    ("comm_s", "communication", PART_COLORS["latency"]),
    ("host_s", "host and per-step overhead", PART_COLORS["other"]),
)


class GridTooLargeError(FigureError):
    """The interactive grid would make the report too large to embed."""


# --- the deployment table ------------------------------------------------------------------

SHOWN_OPTIONS = 8
"""Options the table shows per selection: the best ones, as deploy ranks them."""
DEFAULT_DEPLOY_NOTE = "No deployment options: the report was built without them."
DEPLOY_LABELS = ("meets the budget", "over the TPOT budget", "over the TTFT budget", "does not fit in memory")
_BINDING_LABEL = {"batch": 0, "tpot": 1, "ttft": 2, "memory": 3}  # deploy's binding at a given batch (served)


def _option_dicts(options: DeployOptions | None, budgets: Sequence, batches: Sequence) -> dict:
    """deploy's options as the deployment table reads them: {"largest": per budget, the option dicts
    (`deploy.Option.to_dict` without the memory parts, best first), "at": per batch, per budget};
    empty lists where deploy had none to offer."""
    if options is None:
        return {"largest": [[] for _ in budgets], "at": [[[] for _ in budgets] for _ in batches]}
    return {
        "largest": [[_option_dict(o) for o in opts] for opts in options.largest],
        "at": [[[_option_dict(o) for o in opts] for opts in per_batch] for per_batch in options.at],
    }


def _option_dict(o) -> dict:
    """An option as the grid holds it: without its memory parts (the page shows the total alone)."""
    d = o.to_dict()
    d.pop("memory", None)
    return d


def deployment_entry(opt: dict, batch: int) -> dict:
    """THE DEPLOYMENT-TABLE HOOK: one row of the table, from `deploy --batch`'s option dict at
    `batch` (keys DEPLOY_KEYS and mem_bytes_per_gpu): what does not depend on the budget, with the
    text the page prints. A replica holds pp micro-batches of `batch`; one that does not fit has no
    throughput ("–")."""
    missing = [key for key in (*DEPLOY_KEYS, "mem_bytes_per_gpu") if key not in opt]
    if missing:
        raise ShardbudgetError(
            f"deployment option lacks {', '.join(missing)} (expected keys: {', '.join(DEPLOY_KEYS)}, mem_bytes_per_gpu)"
        )
    tp, pp, ep, dp = (int(opt[key]) for key in ("tp", "pp", "ep", "dp"))
    label = Plan(tp, pp, ep, dp).label().replace("DP-attention", "DP")  # as the plan table's rows
    runs, mem = int(opt["max_batch"]) > 0, opt["mem_bytes_per_gpu"]
    return {
        "plan": f"{int(opt['replicas'])} × {label}",
        "gpus": int(opt["replicas"]) * tp * pp,
        "in_flight": pp * batch,
        "itl_s": _num(opt["itl_s"]),
        "itl": fmt_seconds(opt["itl_s"]),
        "tpot_s": _num(opt["tpot_s"]),
        "tpot": fmt_seconds(opt["tpot_s"]),
        "tokens_per_s_per_gpu": _num(opt["tokens_per_s_per_gpu"]),
        "tokens": _rate_text(opt["tokens_per_s_per_gpu"]) if runs else "–",
        "mem_bytes_per_gpu": _num(mem),
        "mem": f"{mem / 1e9:.1f} GB",
    }


def _split(opt: dict) -> tuple:
    return tuple(int(opt[k]) for k in ("replicas", "tp", "pp", "ep", "dp"))


def deployment_cell(src: dict, batches: Sequence[int], rows: _Strings) -> dict:
    """One system and engine's table at every batch and budget, from its option dicts (`_option_dicts`):
    `splits` shown anywhere (first seen first); `rows[b][j]`: split j at batch b (an index into the
    grid's deploy_rows); `largest[k][j]`: deploy's largest batch for split j within budget k ("–":
    none); `steps[b][k]`: the splits shown, best first, and each one's DEPLOY_LABELS index."""
    index: dict[tuple, int] = {}
    for per_batch in src["at"]:
        for opts in per_batch:
            for o in opts[:SHOWN_OPTIONS]:
                index.setdefault(_split(o), len(index))
    at = [{_split(o): o for o in per_batch[0]} if per_batch else {} for per_batch in src["at"]]
    largest = [{_split(o): o["max_batch"] for o in opts} for opts in src["largest"]]
    return {
        "rows": [
            [rows(json.dumps(deployment_entry(by[key], b), sort_keys=True)) for key in index] if by else []
            for b, by in zip(batches, at)
        ],
        "largest": [[str(m[key]) if m.get(key) else "–" for key in index] for m in largest],
        "steps": [
            [
                {
                    "order": [index[_split(o)] for o in opts[:SHOWN_OPTIONS]],
                    "labels": [_BINDING_LABEL[o["binding"]] for o in opts[:SHOWN_OPTIONS]],
                }
                for opts in per_batch
            ]
            for per_batch in src["at"]
        ],
    }


def _rate_text(tokens_per_s: float) -> str:
    """'14.5', '1,234': one decimal below 100 tokens/s, whole numbers above."""
    return f"{tokens_per_s:,.1f}" if tokens_per_s < 100 else f"{tokens_per_s:,.0f}"


# --- the grid ------------------------------------------------------------------------------


class _Strings:
    """Each distinct sentence once; cells refer to them by index."""

    def __init__(self):
        self.index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))

    def table(self) -> list[str]:
        return list(self.index)


def lead_sentence(v: Verdict, budget_s: float | None) -> str:
    """The one line above the verdict's sentences: the plan to run under this budget, if any."""
    if v.best is None:
        return "Does not fit in memory under any plan."
    if v.pick is not None:
        p = v.pick
        run = (
            f"Within the {fmt_seconds(budget_s)} budget, run {p.label()}"
            if budget_s is not None
            else f"With no budget, run the latency-optimal {p.label()}"
        )
        return (
            f"{run}: {fmt_seconds(p.judged_s)} per token on {p.gpus} GPU{'s' if p.gpus > 1 else ''}, "
            f"{fmt_pct(p.comm_share)} of it communication."
        )
    c = v.closest
    budget = f"the {fmt_seconds(budget_s)} budget" if budget_s is not None else "the TTFT budget"
    return f"No plan meets {budget}: the closest is {c.label()} at {fmt_seconds(c.judged_s)} per token."


def _row_entry(r: Row) -> dict:
    return {
        "plan": r.label(),
        "tp": r.tp,
        "pp": r.pp,
        "ep": r.ep,
        "dp": r.dp,
        "gpus": r.gpus,
        "itl_s": _num(r.itl_s),
        "compute_s": _num(r.compute_s),
        "comm_s": _num(r.comm_s),
        "host_s": _num(r.other_s),
        "mem_bytes_per_gpu": _num(r.mem_bytes_per_gpu),
        "fits": r.fits_memory,
        "comm_bound": r.comm_bound,
        "itl": fmt_seconds(r.itl_s),
        "mem": f"{r.mem_bytes_per_gpu / 1e9:.1f} GB",
        "share": fmt_pct(r.comm_share),
    }


def _cell(rows: Sequence[Row], verdicts: Sequence[Verdict], budgets: Sequence[float | None], strings: _Strings) -> dict:
    index = {r.key: k for k, r in enumerate(rows)}
    steps = []
    for budget_s, v in zip(budgets, verdicts):
        steps.append(
            {
                "lead": strings(lead_sentence(v, budget_s)),
                "sentences": [strings(s) for s in v.sentences],
                "labels": [LABELS.index(r.verdict) for r in v.rows],
                "pick": index[v.pick.key] if v.pick else None,
                "best": index[v.best.key] if v.best else None,
            }
        )
    order = sorted(range(len(rows)), key=lambda k: (rows[k].gpus, rows[k].judged_s, rows[k].key))
    return {"rows": [_row_entry(r) for r in rows], "order": order, "steps": steps}


def build_grid(
    answers: GridAnswers,
    *,
    model: str,
    systems: Sequence[str],
    budget_s: float | None,
    deploy_note: str = DEFAULT_DEPLOY_NOTE,
) -> dict:
    """The grid (see the module docstring) from the interactive section's answers: `systems` are the
    systems' labels, `budget_s` the report's own budget (selected first); `deploy_note` says under the
    deployment table what its options are."""
    plans, budgets = answers.plans, list(answers.budgets)
    batches = [br.batch for br in plans[0][0].results]
    strings = _Strings()
    cells = [
        [
            [_cell(res.results[i].rows, answers.verdicts[s][e][i], budgets, strings) for i in range(len(batches))]
            for e, res in enumerate(per)
        ]
        for s, per in enumerate(plans)
    ]
    rows = _Strings()  # each distinct entry once, referred to by index
    deploys = [
        [deployment_cell(_option_dicts(options, budgets, batches), batches, rows) for options in per]
        for per in answers.deploys
    ]
    return {
        "format": GRID_FORMAT,
        "model": model,
        "systems": list(systems),
        "engines": [{"key": c.key, "label": c.label} for c in answers.engines],
        "batches": batches,
        "budgets": [{"s": b, "label": fmt_seconds(b) if b is not None else "no budget"} for b in budgets],
        "initial": {"system": 0, "engine": answers.initial_engine, "batch": 0, "budget": budgets.index(budget_s)},
        "labels": list(LABELS),
        "parts": [{"key": k, "label": lbl, "color": c} for k, lbl, c in PARTS],
        "strings": strings.table(),
        "cells": cells,
        "deploy": deploys,
        "deploy_labels": list(DEPLOY_LABELS),
        "deploy_rows": [json.loads(t) for t in rows.table()],
        "deploy_note": deploy_note,
    }


def _num(x):
    """A JSON number: finite floats as they are, ints as ints, anything else (inf, NaN) as null."""
    if isinstance(x, bool) or isinstance(x, int):
        return x
    x = float(x)
    return x if math.isfinite(x) else None


def grid_json(grid: dict, *, max_bytes: int | None = None) -> str:
    """The grid as JSON fit for a <script type="application/json"> block: sorted keys, no spaces,
    ASCII only, and '<', '>', '&' escaped so that no string can close the block. Over `max_bytes`
    (default MAX_GRID_BYTES) it is a one-line GridTooLargeError saying what to reduce."""
    max_bytes = MAX_GRID_BYTES if max_bytes is None else max_bytes
    text = json.dumps(grid, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    if len(text) > max_bytes:
        n_steps = len(grid["budgets"]) - 1
        raise GridTooLargeError(
            f"the interactive report's grid is {len(text) / 1e6:.1f} MB, over the {max_bytes / 1e6:g} MB a report "
            f"embeds ({len(grid['systems'])} systems x {len(grid['engines'])} engines x {len(grid['batches'])} "
            f"batches x {n_steps} budget steps): give fewer batches (--batch), systems (--system) or budget "
            f"steps (--budget-steps {n_steps} now; 0 leaves the interactive section out)"
        )
    return text


__all__ = [
    "DEFAULT_BUDGET_STEPS",
    "DEFAULT_DEPLOY_NOTE",
    "DEPLOY_KEYS",
    "DEPLOY_LABELS",
    "GRID_FORMAT",
    "GridTooLargeError",
    "MAX_GRID_BYTES",
    "SHOWN_OPTIONS",
    "build_grid",
    "deployment_cell",
    "deployment_entry",
    "grid_json",
    "lead_sentence",
]
