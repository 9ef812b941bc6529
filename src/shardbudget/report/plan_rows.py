"""Reading plan results for figures and prose: the pure-TP line, the TPs sharded too far, labels,
and the one-clause finding per system that titles and the report's verdict share.

No matplotlib here: the HTML report's words and tables use these without drawing anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .fmt import fmt_seconds

if TYPE_CHECKING:  # pragma: no cover
    from ..planner import PlanResult


def tp_line(rows) -> list:
    """Pure-TP rows (pp = 1; for MoE the faster of ep = 1 / ep = tp), ordered by TP."""
    best: dict[int, Any] = {}
    for r in rows:
        if r.pp == 1 and (r.tp not in best or r.itl_s < best[r.tp].itl_s):
            best[r.tp] = r
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
    a = result.assumptions or {}
    intra = a.get("intra_fabric") or ""
    if result.nodes > 1 and a.get("nic"):
        return f"{intra} + {a['nic']}"
    return intra


def budget_words(budget_s: float | None) -> str:
    return fmt_seconds(budget_s) if budget_s else "no budget"


def comm_threshold(result: PlanResult) -> float:
    """The share of the token in collectives above which the planner calls a plan sharded too far."""
    return float((result.assumptions or {}).get("comm_threshold", 0.30))


def system_finding(result: PlanResult) -> str:
    """One clause per system: does it meet the budget, at which TP, and where does sharding stop paying."""
    brs = list(result.results)
    parts = [_budget_clause(brs, result.budget_s)]
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
    return f"{result_label(result)}: " + ", ".join(parts)


def _budget_clause(brs, budget: float | None) -> str:
    meeting = [br for br in brs if br.max_tp_budget is not None]
    if budget is None:
        return "latency-optimal at " + ", ".join(f"TP{br.best_tp} (batch {br.batch})" for br in brs)
    if len(meeting) == len(brs):
        tps = sorted({br.max_tp_budget for br in brs})
        at = f"TP{tps[0]}" if len(tps) == 1 else "TP" + "/".join(str(t) for t in tps)
        return f"meets {fmt_seconds(budget)} up to {at} at batch " + " and ".join(str(br.batch) for br in brs)
    if meeting:
        return (f"meets {fmt_seconds(budget)} only at batch "
                + ", ".join(f"{br.batch} (TP{br.max_tp_budget})" for br in meeting))
    best = min((r for br in brs for r in tp_line(br.rows) if r.fits_memory), key=lambda r: r.itl_s, default=None)
    return (f"misses {fmt_seconds(budget)} at every TP"
            + (f" (best {fmt_seconds(best.itl_s)} at TP{best.tp})" if best else " (does not fit)"))


__all__ = ["batch_result", "budget_words", "comm_threshold", "fabric_words", "plan_batches", "result_label",
           "system_finding", "too_far_tps", "tp_line"]
