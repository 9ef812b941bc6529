"""`shardbudget explain`: the three questions, answered from numbers."""

from __future__ import annotations

import textwrap
from typing import Annotated, Optional

import typer

from . import args
from .app import app
from .args import BatchOpt, ContextOpt, JsonOpt, ModelOpt, NodesOpt
from .command_io import print_json
from .options import BUDGETS, FABRIC, STEP, BudgetArgs, FabricArgs, StepArgs, build_request, groups

ExplainSystemsOpt = Annotated[
    Optional[list[str]],
    typer.Option("--system", "-s", help="Systems to compare, e.g. -s hgx-h100 -s h100-pcie (repeat)."),
]


@app.command()
@groups(FABRIC, STEP, BUDGETS)
def explain(
    *,
    model: ModelOpt = args.EXPLAIN_MODEL,
    system: ExplainSystemsOpt = None,
    nodes: NodesOpt = None,
    batch: BatchOpt = None,
    context: ContextOpt = None,
    json_out: JsonOpt = False,
    fabric: FabricArgs,
    step: StepArgs,
    budgets: BudgetArgs,
) -> None:
    """Fabric against fabric, when all-reduce limits sharding, why the network is slow for decode: with numbers.

    One --system is compared with its own GPU on the catalog's other fabrics (NVSwitch, PCIe with and
    without P2P, two nodes); several are compared with each other. Default: hgx-h100."""
    from ..decide.questions import explain as explain_questions
    from ..errors import PlanError

    if batch and len(batch) > 1:
        raise PlanError("explain answers for one batch size: give --batch once")
    systems = system or [args.EXPLAIN_SYSTEM]
    req = build_request(
        model,
        systems[0],
        fabric=fabric,
        step=step,
        budgets=budgets,
        nodes=nodes,
        batches=batch or [1],
        context=context or args.CONTEXT_TOKENS,
    )
    result = explain_questions(req, systems=systems)
    if json_out:
        print_json(result)
        return
    from ..quoting import terminal  # names in the answers: no escape sequence reaches the terminal raw
    from ..report.tables import text_width, wrap

    width = text_width()  # None when piped: one line per paragraph, tables whole
    print(
        terminal(
            wrap(
                f"# {result.model} on {', '.join(result.systems)}, engine {result.engine} {result.release}, "
                f"NCCL {result.nccl}",
                width,
            )
        )
    )
    for note in result.notes:  # a degraded system, said before anything is answered on it
        print(terminal(wrap(f"# {note}", width)))
    for note in req.scenario.precision_notes:
        if note.startswith("engine:"):  # an older release than its engine's newest says how old
            print(terminal(wrap(f"# note: {note}", width)))
    for a in result.answers:
        print(terminal(f"## {a.question}\n{wrap(a.text, width)}"))
        for t in a.tables:
            print(terminal(_table(t.columns, t.rows, width or 10_000) + ("\n" if t is not a.tables[-1] else "")))
        print(terminal(wrap(f"-> {a.takeaway}", width) + "\n"))


def _table(columns, rows, width: int = 10_000) -> str:
    """Plain aligned columns (first column left, the rest right); a row of empty cells is a gap. A table
    wider than `width` is folded into tables that each repeat the first column, whose names wrap at
    spaces where even one other column would not fit beside them (nothing is cut)."""
    cells = [list(columns)] + [list(r) + [""] * (len(columns) - len(r)) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(columns))]
    widest = max(widths[1:], default=0)
    if widths[0] + 2 + widest > width:  # the names wrap
        widths[0] = max(16, width - 2 - widest, max(len(w) for c in cells for w in c[0].split() or [""]))
    groups, current, used = [], [0], widths[0]
    for i in range(1, len(columns)):
        if used + 2 + widths[i] > width and len(current) > 1:
            groups.append(current)
            current, used = [0], widths[0]
        current.append(i)
        used += 2 + widths[i]
    groups.append(current)
    return "\n\n".join(_block(cells, widths, g) for g in groups)


def _block(cells, widths, group) -> str:
    lines = []
    for k, c in enumerate(cells):
        if k and not any(c):
            lines.append("")
            continue
        names = textwrap.wrap(c[0], widths[0], break_long_words=False, break_on_hyphens=False) or [""]
        lines.append("  ".join(names[0].ljust(widths[0]) if i == 0 else c[i].rjust(widths[i]) for i in group).rstrip())
        lines += names[1:]
    return "\n".join(lines)
