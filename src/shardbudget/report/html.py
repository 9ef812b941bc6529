"""The single-file HTML report: the verdict in words, the figures inline, the numbers behind them.

One file, nothing to fetch (see `page`). `collect` does the work (plans, collective sweeps,
explanations, measurements), `render` turns it into HTML; `build_report` is both, `write_report`
writes the result atomically. The parts, one job each:

* `report_data`: the request checked and computed once (`collect`, `ReportData`);
* `verdict`: the verdict in words (headline, sentences, the verdict table's rows);
* `grid`, `interactive`: the interactive section's grid (every budget step judged in Python) and
  its controls, bars, table and script;
* `page`, `sections`, `markup`: the document, its sections, and the escaped HTML pieces;
* `output`: the output-path check and the atomic write.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..decide.request import Request
from .grid import DEFAULT_BUDGET_STEPS, GridTooLargeError
from .markup import esc
from .output import check_report_path, write_html
from .page import render
from .report_data import Progress, ReportData, SystemSpec, collect, parse_system_spec
from .verdict import engine_words, headline, recommendations, summary_sentences, verdict_rows, weights_words


def build_report(req: Request, systems: Sequence[str] = (), *, measured: Sequence[str | os.PathLike] = (),
                 measured_system: str | None = None, progress: Progress | None = None,
                 budget_steps: int = DEFAULT_BUDGET_STEPS) -> str:
    """The report of `req` on `systems` as an HTML string (see the module docstring and `collect`);
    `budget_steps` 0 leaves out the interactive section (and with it the page's only script)."""
    data = collect(req, systems, measured=measured, measured_system=measured_system, progress=progress,
                   budget_steps=budget_steps)
    return render(data, progress)


def write_report(path: str | os.PathLike, req: Request, systems: Sequence[str] = (), **kwargs) -> Path:
    """`build_report(req, systems, **kwargs)` written to `path` atomically (temp file + rename)."""
    check_report_path(path)  # fail before the work, not after it
    return write_html(path, build_report(req, systems, **kwargs))


__all__ = ["DEFAULT_BUDGET_STEPS", "GridTooLargeError", "engine_words", "weights_words", "Progress", "ReportData", "SystemSpec", "build_report", "check_report_path", "collect", "esc",
           "headline", "parse_system_spec", "recommendations", "render", "summary_sentences", "verdict_rows",
           "write_html", "write_report"]
