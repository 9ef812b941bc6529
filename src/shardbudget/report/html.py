"""The single-file HTML report: the verdict in words, the figures inline, the numbers behind them.

One file, nothing to fetch (see `page`). decide.report_answers.answer_report prices the request
(plans, collective sweeps, explanations, measurements); `view` reads those answers into what the
page shows, `render` turns that into HTML; `build_report` is both, `write_report` writes the result
atomically. The parts, one job each:

* `report_data`: what the page shows (`ReportData`), read from the request's answers (`view`);
  the answers are priced in decide.report_answers (`answer_report`), never here;
* `summary`: the verdict in words (headline, sentences, the verdict table's rows);
* `grid`, `interactive`: the interactive section's grid (every budget step judged in Python) and
  its controls, bars, table and script;
* `page`, `sections`, `markup`: the document, its sections, and the escaped HTML pieces;
* `output`: the output-path check and the atomic write.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..decide.report_answers import ReportAnswers, SystemSpec, parse_system_spec
from .grid import DEFAULT_BUDGET_STEPS, GridTooLargeError
from .markup import esc
from .output import check_report_path, write_html
from .page import render
from .report_data import ReportData, view
from .summary import engine_words, headline, recommendations, summary_sentences, verdict_rows, weights_words


def build_report(answers: ReportAnswers, progress=None) -> str:
    """The report of a request's answers (decide.report_answers.answer_report) as an HTML string."""
    return render(view(answers), progress)


def write_report(path: str | os.PathLike, answers: ReportAnswers, *, force: bool = True) -> Path:
    """`build_report(answers)` written to `path` atomically (temp file + rename)."""
    check_report_path(path, force=force)
    return write_html(path, build_report(answers), force=force)


__all__ = [
    "DEFAULT_BUDGET_STEPS",
    "GridTooLargeError",
    "ReportData",
    "SystemSpec",
    "build_report",
    "check_report_path",
    "engine_words",
    "esc",
    "headline",
    "parse_system_spec",
    "recommendations",
    "render",
    "summary_sentences",
    "verdict_rows",
    "view",
    "weights_words",
    "write_html",
    "write_report",
]
