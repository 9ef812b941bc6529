"""Reading plan results for figures and prose: the pure-TP line, the TPs sharded too far, labels,
and the one-clause finding per system that titles and the report's verdict share.

No matplotlib here: the HTML report's words and tables use these without drawing anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .fmt import fmt_seconds

if TYPE_CHECKING:  # pragma: no cover
    from ..decide.planner import PlanResult


def tp_line(rows, optimal=None) -> list:
    """Pure-TP rows (pp = 1; for MoE the fastest EP / DP-attention variant), ordered by TP; with
    `optimal` (the planner's latency-optimal row) that row stands in for its TP's, so the line always
    shows the plan the verdict names."""
    best: dict[int, Any] = {}
    for r in rows:
        if r.pp == 1 and (r.tp not in best or r.itl_s < best[r.tp].itl_s):
            best[r.tp] = r
    if optimal is not None:
        best[optimal.tp] = optimal
    return [best[t] for t in sorted(best)]


def plan_batches(results: Sequence[PlanResult]) -> list[int]:
    """Every batch size of the results, in the order first met."""
    seen: list[int] = []
    for res in results:
        for br in res.results:
            if br.batch not in seen:
                seen.append(br.batch)
    return seen


def batch_result(result: PlanResult, batch: int):
    """The result's rows for one batch size, or None if it was not planned."""
    return next((br for br in result.results if br.batch == batch), None)


def too_far_tps(br) -> list[int]:
    """The pure-TP degrees the planner calls 'sharded too far', smallest first."""
    return sorted({r.tp for r in br.rows if r.pp == 1 and r.verdict == "sharded too far"})


def result_label(result: PlanResult) -> str:
    """'hgx-h100' for one node, '2× hgx-h100' for two."""
    return result.system if result.nodes == 1 else f"{result.nodes}× {result.system}"


def fabric_words(result: PlanResult) -> str:
    """The fabrics a plan's collectives cross: 'nvswitch-gen3', or 'nvswitch-gen3 + ib-ndr' across nodes."""
    a = result.assumptions
    if result.nodes > 1 and a.nic:
        return f"{a.intra_fabric} + {a.nic}"
    return a.intra_fabric


def budget_words(budget_s: float | None) -> str:
    return fmt_seconds(budget_s) if budget_s else "no budget"


def comm_threshold(result: PlanResult) -> float:
    """The share of the token in collectives above which the planner flags a plan comm-bound."""
    return result.assumptions.comm_threshold


def system_finding(result: PlanResult) -> str:
    """One clause per system, read from the planner's verdicts: the plan to pick (or the budget it
    misses) per batch, and where the latency-optimal plan is comm-bound."""
    brs = [br for br in result.results if br.judgement is not None]
    parts = [_pick_clause(brs, result.budget_s)]
    bound = [br for br in brs if br.judgement.comm_bound]
    if bound:
        share = max(br.judgement.best.comm_share for br in bound)
        which = "" if len(bound) == len(brs) else " at batch " + ", ".join(str(br.batch) for br in bound)
        parts.append(f"comm-bound{which} (up to {100 * share:.0f}% communication)")
    return f"{result_label(result)}: " + ", ".join(parts)


def _pick_clause(brs, budget: float | None) -> str:
    if not brs or all(br.judgement.best is None for br in brs):
        return "does not fit in memory"
    picks = [f"{br.judgement.pick.label()} (batch {br.batch})" for br in brs if br.judgement.pick]
    if budget is None:
        return "latency-optimal " + ", ".join(picks)
    missed = [br for br in brs if br.judgement.pick is None]
    if not missed:
        return f"within {fmt_seconds(budget)}: " + ", ".join(picks)
    best = min((br.judgement.fastest for br in missed if br.judgement.fastest), key=lambda r: r.itl_s, default=None)
    text = f"misses {fmt_seconds(budget)} at batch " + ", ".join(str(br.batch) for br in missed)
    text += f" (best {fmt_seconds(best.itl_s)} at {best.label()})" if best else ""
    return text + ("; within it " + ", ".join(picks) if picks else "")


__all__ = [
    "batch_result",
    "budget_words",
    "comm_threshold",
    "fabric_words",
    "plan_batches",
    "result_label",
    "system_finding",
    "too_far_tps",
    "tp_line",
]
