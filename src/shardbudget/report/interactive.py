"""The report's interactive section: controls (budget slider, system, engine, batch), the verdict
in words, token-time bars and a deployment table, all looked up in the grid the page embeds.

The grid (`grid.build_grid`) is JSON in a <script type="application/json"> block; the script
(`explore.js`, shipped beside this module) is plain JavaScript inlined in the page, allowed by the
page's Content-Security-Policy through its SHA-256 hash and nothing else. The section's initial
verdict is written here, in Python, from the same grid the script reads, so the page says the same
before and after the script runs.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from importlib import resources

from .markup import esc
from .report_data import ReportData

CSS = """
.explore { border: 1px solid var(--line); border-radius: 8px; padding: 4px 20px 14px; margin: 28px 0; }
.explore h2 { margin-top: 14px; }
.controls { display: flex; flex-wrap: wrap; gap: 10px 28px; align-items: center; margin: 8px 0 6px; }
.controls label { font-size: 14px; font-weight: 600; }
.controls select, .controls input { margin-left: 6px; font: inherit; font-weight: 400; vertical-align: middle; }
.controls input[type=range] { width: 260px; }
.controls output { display: inline-block; min-width: 5.5em; font-weight: 600; color: #0072B2; }
#sb-bars svg { width: 100%; height: auto; display: block; }
tr.pick td { font-weight: 700; background: #eaf4ea; }
"""

JS_RESOURCE = "explore.js"


@lru_cache(maxsize=1)
def script() -> str:
    """The section's JavaScript, as shipped in the package."""
    return (resources.files(__package__) / JS_RESOURCE).read_text(encoding="utf-8")


def script_hash() -> str:
    """The CSP source that allows exactly this script: 'sha256-<base64>' of its text."""
    digest = hashlib.sha256(script().encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def _select(ctl_id: str, what: str, names: list[str], selected: int) -> str:
    opts = "".join(
        f'<option value="{i}"{" selected" if i == selected else ""}>{esc(n)}</option>' for i, n in enumerate(names)
    )
    return f'<label>{esc(what)}<select id="{ctl_id}">{opts}</select></label>'


def _controls(grid: dict) -> str:
    init, budgets = grid["initial"], grid["budgets"]
    first = budgets[init["budget"]]["label"]
    slider = (
        f'<label for="sb-budget">budget<input type="range" id="sb-budget" min="0" '
        f'max="{len(budgets) - 1}" step="1" value="{init["budget"]}" aria-valuetext="{esc(first)}"></label>'
        f'<output id="sb-budget-value" for="sb-budget">{esc(first)}</output>'
    )
    return (
        '<div class="controls">'
        + slider
        + _select("sb-system", "system", grid["systems"], init["system"])
        + _select("sb-engine", "engine", [e["label"] for e in grid["engines"]], init["engine"])
        + _select("sb-batch", "batch", [str(b) for b in grid["batches"]], init["batch"])
        + "</div>"
    )


def _initial_verdict(grid: dict) -> str:
    init = grid["initial"]
    step = grid["cells"][init["system"]][init["engine"]][init["batch"]]["steps"][init["budget"]]
    strings = grid["strings"]
    return f'<p class="lead">{esc(strings[step["lead"]])}</p>' + "".join(
        f"<p>{esc(strings[i])}</p>" for i in step["sentences"]
    )


def section_explore(data: ReportData) -> str:
    """The interactive section, or nothing when the report has no grid (budget steps 0)."""
    if data.grid is None or data.grid_json is None:
        return ""
    grid = data.grid
    headers = [
        "deployment",
        "GPUs",
        "in flight per replica",
        "ITL",
        "TPOT",
        "tokens/s per GPU",
        "memory per GPU",
        "batch cap in budget",
        "budget",
    ]
    head = "".join(
        f'<th class="l">{esc(h)}</th>' if h in ("deployment", "budget") else f"<th>{esc(h)}</th>" for h in headers
    )
    return "\n".join(
        [
            '<section id="explore" class="explore">',
            '<h2 id="explore-title">Explore: budget, system, engine, batch</h2>',
            f'<p class="note">Move the budget or pick a system, engine or batch: the verdict, the bars and the table '
            f"are looked up in a grid the planner computed for {len(grid['budgets'])} budgets (every sentence is "
            f"the planner's own). The sections below show the report's own budget.</p>",
            _controls(grid),
            f'<div id="sb-verdict" class="verdict" aria-live="polite">{_initial_verdict(grid)}</div>',
            '<figure id="sb-bars-figure"><div id="sb-bars"></div><figcaption>Inter-token latency of each plan at the '
            "selected batch, split into compute, communication and host time (per-step overhead). Faded: the plan "
            "does not fit in GPU memory. Dashed: the budget. Bold: the plan to run under it.</figcaption></figure>",
            '<h3 id="explore-deploy">Deployments under the selected engine, batch and budget</h3>',
            f'<table id="sb-deploy"><thead><tr>{head}</tr></thead><tbody></tbody></table>',
            f'<p class="note">{esc(grid["deploy_note"])}</p>',
            '<noscript><p class="note">The controls need JavaScript; every number is also in the sections '
            "below.</p></noscript>",
            f'<script type="application/json" id="sb-grid">{data.grid_json}</script>',
            f"<script>{script()}</script>",
            "</section>",
        ]
    )


__all__ = ["CSS", "script", "script_hash", "section_explore"]
