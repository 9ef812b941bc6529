"""The report's verdict in words, read from the planner's own verdicts (`verdicts.Verdict`, one per
system and batch): the plan to pick per batch size, the warnings per system, and the rows of the
verdict table. Nothing here re-decides what is latency-optimal or sharded too far, so the report
can never disagree with `shardbudget plan`. Plain text; the page escapes it.
"""

from __future__ import annotations

from .fmt import fmt_seconds
from .plan_rows import batch_result, budget_words, result_label
from .report_data import ReportData


def verdict_rows(data: ReportData) -> list[dict]:
    """Per system and batch: the fewest GPUs that fit (as `plan` says it), the largest TP within
    budget, the latency-optimal plan, its ITL, comm share and all-reduce, and one line."""
    out = []
    for spec, res in zip(data.specs, data.plans):
        for br in res.results:
            v = br.judgement
            best, small = (v.best, v.smallest) if v else (None, None)
            out.append(
                {
                    "system": spec.label,
                    "batch": br.batch,
                    "min_tp": br.min_tp_memory,
                    "fewest_gpus": f"{small.gpus} ({small.label()})" if small else "none",
                    "max_tp": br.max_tp_budget,
                    "best_tp": br.best_tp,
                    "best_plan": best.label() if best else None,
                    "itl_s": best.itl_s if best else None,
                    "comm_share": best.comm_share if best else None,
                    "allreduce": _allreduce(best),
                    "verdict": _short_verdict(v, res.budget_s),
                    "meets": br.max_tp_budget is not None,
                    "too_far": [r.label() for r in v.too_far] if v else [],
                }
            )
    return out


def _allreduce(best) -> str | None:
    """The TP all-reduce the best plan runs at this batch ('vllm one-shot'), as its row was priced."""
    return best.allreduce.words if best is not None and best.allreduce is not None else None


def engine_words(data: ReportData) -> str:
    """'engine vllm, all-reduce as it picks by size, NCCL 2.30 (...)', or the implementation --impl
    forces; the NCCL release as plan's header says it (the first plan's assumptions)."""
    st = data.settings
    a = data.plans[0].assumptions
    nccl = f", NCCL {a.nccl}" if a.nccl else ""
    return (
        f"engine {st.engine}, "
        + (f"every all-reduce forced to {st.impl}" if st.impl else "all-reduce as the engine picks it by size")
        + nccl
    )


def weights_words(data: ReportData) -> str:
    """'bf16', or 'bf16, mxfp4 experts': the weights the plans priced (the checkpoint's own where no
    --dtype was given), from the first plan's assumptions."""
    a = data.plans[0].assumptions
    weights = a.weight_dtype
    experts = a.expert_dtype
    return weights + (f", {experts} experts" if experts and experts != weights else "")


def _short_verdict(v, budget_s) -> str:
    if v is None or v.best is None:
        return "does not fit in memory under any plan"
    text = f"latency-optimal {v.best.label()}"
    if budget_s is not None:
        text += (
            f", within {budget_words(budget_s)}"
            if v.best.meets_budget
            else f"; within {budget_words(budget_s)} pick {v.pick.label()}"
            if v.pick
            else f"; nothing meets {budget_words(budget_s)}"
        )
    if v.comm_bound:
        text += f"; comm-bound ({100 * v.best.comm_share:.0f}% communication)"
    if v.too_far:
        text += f"; {len(v.too_far)} plan{'s' if len(v.too_far) > 1 else ''} sharded too far"
    return text


def recommendations(data: ReportData) -> dict[int, tuple | None]:
    """Per batch: (row, system label) of the fastest of the systems' picks (each system's plan to run
    within the budgets, as `plan` names it); None where no system has one."""
    out = {}
    for b in data.settings.batches:
        picks = []
        for spec, res in zip(data.specs, data.plans):
            br = batch_result(res, b)
            if br is not None and br.judgement and br.judgement.pick is not None:
                picks.append((br.judgement.pick, spec.label))
        out[b] = min(picks, key=lambda c: (c[0].judged_s, c[0].gpus)) if picks else None
    return out


def headline(data: ReportData) -> str:
    """Two sentences: the plan to pick per batch, and which systems are comm-bound."""
    budget = data.settings.budget_s
    within = f"Within the {fmt_seconds(budget)} budget" if budget else "Among the plans that fit"
    picks: dict[tuple, list[int]] = {}
    for b, rec in recommendations(data).items():
        picks.setdefault((rec[1], rec[0].label()) if rec else None, []).append(b)
    parts = []
    for key, bs in picks.items():
        at = "batch " + " and ".join(str(b) for b in bs)
        parts.append(f"{key[0]} at {key[1]} is the plan to pick at {at}" if key else f"no system makes it at {at}")
    text = f"{within}, " + "; ".join(parts) + "."
    bound = [
        (result_label(res), br.batch, br.judgement.best)
        for res in data.plans
        for br in res.results
        if br.judgement and br.judgement.comm_bound
    ]
    if bound:
        worst = max(bound, key=lambda x: x[2].comm_share)
        text += (
            f" Comm-bound (communication over {100 * _threshold(data):.0f}% of the latency-optimal plan's "
            f"token): "
            + ", ".join(sorted({f"{label} at batch {b}" for label, b, _ in bound}))
            + f"; worst {worst[0]} at batch {worst[1]}, {100 * worst[2].comm_share:.0f}%."
        )
    else:
        text += (
            f" Communication stays under {100 * _threshold(data):.0f}% of the latency-optimal plan's token "
            "on every system."
        )
    return text


def _threshold(data: ReportData) -> float:
    return data.plans[0].assumptions.comm_threshold


def summary_sentences(data: ReportData) -> list[str]:
    """The verdict in plain words: the plan to pick per batch size, then each system's own verdict
    sentences as `plan` prints them. Plain text; the caller escapes it."""
    out = []
    budget = data.settings.budget_s
    within = f"the {fmt_seconds(budget)} budget" if budget else "memory"
    for b, rec in recommendations(data).items():
        if rec is None:
            out.append(f"At batch {b}, no system has a plan within {within}.")
            continue
        r, label = rec
        out.append(
            f"At batch {b}, the plan to pick within {within} is {label} at {r.label()}: "
            f"{fmt_seconds(r.judged_s)} per token, {100 * r.comm_share:.0f}% of it communication."
        )
    for res in data.plans:
        for br in res.results:
            out.append(f"{result_label(res)}, {br.verdict}")
    return out


__all__ = ["engine_words", "headline", "recommendations", "summary_sentences", "verdict_rows", "weights_words"]
