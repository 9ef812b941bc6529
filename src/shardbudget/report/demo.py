"""`shardbudget demo`: the question on one well-known case, answered in the terminal and in a report.

The case (decide.report_answers.DEMO_*): Llama-3.1-70B in bf16, decode at batch 1 and 64 with 4096
tokens of context, a 50 ms inter-token budget, on three machines that differ mainly by fabric: an
HGX H100 (NVSwitch), eight L40S on PCIe across two sockets, and two HGX H100 nodes joined by
InfiniBand NDR. It is priced by decide.report_answers.demo_answers; this module prints its table.
"""

from __future__ import annotations

from rich.table import Table

from . import html as report_html
from ..decide.report_answers import (
    DEMO_BATCHES as BATCHES,
    DEMO_BUDGET_S as BUDGET_S,
    DEMO_CONTEXT as CONTEXT,
    DEMO_DTYPE as DTYPE,
    DEMO_MODEL as MODEL,
    DEMO_SYSTEMS as SYSTEMS,
)
from ..defaults import DEFAULT_ENGINE
from .fmt import fmt_seconds, fmt_tp
from .tables import Col, print_table

ENGINE = DEFAULT_ENGINE
"""The engine every other command defaults to: its all-reduce is the one it picks by size, not forced."""


VERDICT_COLS = (
    Col("system", justify="left"),
    Col("batch"),
    Col("fewest GPUs (memory)", "fewest GPUs"),
    Col("max TP (budget)", "max TP"),
    Col("best plan", "best"),
    Col("ITL at best", "ITL"),
    Col("comm share at best", "comm"),
    Col("all-reduce at best", "all-reduce", "left", wrap=True),
    Col("verdict", justify="left", wrap=True, min_wrap=20),
)


def verdict_title(data: report_html.ReportData) -> str:
    budget = data.settings.budget_s
    return (
        f"{data.model} ({report_html.weights_words(data)}), context {data.settings.context}, "
        f"budget {fmt_seconds(budget) if budget else 'none'}, {report_html.engine_words(data)}: "
        "how far can it be sharded?"
    )


def verdict_cells(data: report_html.ReportData) -> list[list[str]]:
    """Per system and batch: the fewest GPUs that fit, the largest TP within budget, the latency-optimal
    plan with its ITL, comm share and all-reduce, the verdict."""
    return [
        [
            r["system"],
            str(r["batch"]),
            r["fewest_gpus"],
            fmt_tp(r["max_tp"]),
            r["best_plan"] or "none",
            fmt_seconds(r["itl_s"]) if r["itl_s"] is not None else "-",
            f"{100 * r['comm_share']:.0f}%" if r["comm_share"] is not None else "-",
            r["allreduce"] or "-",
            r["verdict"],
        ]
        for r in report_html.verdict_rows(data)
    ]


def print_verdict_table(data: report_html.ReportData) -> None:
    """The compact verdict table, fitted to the terminal (folded, never cut: report.tables.print_table)."""
    print_table(verdict_title(data), list(VERDICT_COLS), verdict_cells(data), keys=2)


def verdict_table(data: report_html.ReportData):
    """The same table as one rich Table at its natural width (for a caller with its own console)."""
    t = Table(title=verdict_title(data))
    for c in VERDICT_COLS:
        t.add_column(c.header, justify=c.justify)
    for row in verdict_cells(data):
        t.add_row(*row)
    return t


__all__ = [
    "BATCHES",
    "BUDGET_S",
    "CONTEXT",
    "DTYPE",
    "ENGINE",
    "MODEL",
    "SYSTEMS",
    "VERDICT_COLS",
    "print_verdict_table",
    "verdict_cells",
    "verdict_table",
    "verdict_title",
]
