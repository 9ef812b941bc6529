"""The report's verdict in words: the plan to pick per batch size, where sharding stops paying per
system, and the rows of the verdict table. Plain text; the page escapes it.
"""

from __future__ import annotations

from .fmt import fmt_seconds
from .plan_rows import batch_result, budget_words, comm_threshold, result_label, too_far_tps, tp_line
from .report_data import ReportData


def _row_at(br, tp):
    return next((r for r in tp_line(br.rows) if r.tp == tp), None) if tp is not None else None


def verdict_rows(data: ReportData) -> list[dict]:
    """Per system and batch: min TP, max TP within budget, best TP, ITL and comm share at best, one line."""
    out = []
    for spec, res in zip(data.specs, data.plans):
        for br in res.results:
            best = _row_at(br, br.best_tp)
            far = too_far_tps(br)
            out.append({"system": spec.label, "batch": br.batch, "min_tp": br.min_tp_memory,
                        "max_tp": br.max_tp_budget, "best_tp": br.best_tp,
                        "itl_s": best.itl_s if best else None, "comm_share": best.comm_share if best else None,
                        "verdict": _short_verdict(br, res.budget_s, far), "meets": br.max_tp_budget is not None,
                        "too_far": far})
    return out


def _short_verdict(br, budget_s, far: list[int]) -> str:
    if br.min_tp_memory is None:
        return "does not fit in memory at any TP"
    budget = budget_words(budget_s)
    if budget_s and br.max_tp_budget is None:
        text = f"misses {budget} at every TP"
    elif budget_s:
        text = f"meets {budget} up to TP{br.max_tp_budget}"
    else:
        text = f"latency-optimal at TP{br.best_tp}"
    if far:
        text += f"; TP{far[0]}{'+' if len(far) > 1 else ''} sharded too far"
    else:
        text += "; the fabric is not the limit"
    return text


def _times(x: float) -> str:
    return "twice" if x == 2 else f"{x:g}×"


def recommendations(data: ReportData) -> dict[int, tuple | None]:
    """Per batch: (row, system label) of the fastest plan that meets the budget and is not sharded
    too far; None where there is none."""
    out = {}
    for b in data.settings["batches"]:
        good = []
        for spec, res in zip(data.specs, data.plans):
            br = batch_result(res, b)
            if br is not None:
                far = set(too_far_tps(br))
                good += [(r, spec.label) for r in tp_line(br.rows) if r.meets_budget and r.tp not in far]
        out[b] = min(good, key=lambda c: c[0].itl_s) if good else None
    return out


def headline(data: ReportData) -> str:
    """Two sentences: the plan to pick, and where sharding stops paying."""
    budget = data.settings["budget_s"]
    within = f"Within the {fmt_seconds(budget)} budget" if budget else "Among the plans that fit"
    recs = recommendations(data)
    picks: dict[tuple, list[int]] = {}
    for b, rec in recs.items():
        key = (rec[1], rec[0].tp) if rec else None
        picks.setdefault(key, []).append(b)
    parts = []
    for key, bs in picks.items():
        at = "batch " + " and ".join(str(b) for b in bs)
        if key:
            parts.append(f"{key[0]} at TP{key[1]} is the plan to pick at {at}")
        elif any(r.meets_budget for res in data.plans for br in res.results if br.batch in bs for r in br.rows):
            parts.append(f"only plans that are sharded too far make it at {at}")
        else:
            parts.append(f"no system makes it at {at}")
    text = f"{within}, " + "; ".join(parts) + "."
    stops = []
    for res in data.plans:
        hits = [(too_far_tps(br)[0], br.batch) for br in res.results if too_far_tps(br)]
        if hits:
            tp = min(t for t, _ in hits)
            bs = sorted({b for t, b in hits if t == tp})
            which = "" if len(bs) == len(res.results) else " (batch " + ", ".join(str(b) for b in bs) + ")"
            stops.append(f"TP{tp} on {result_label(res)}{which}")
    if stops:
        threshold = comm_threshold(data.plans[0])
        text += (f" Sharded too far (communication over {100 * threshold:.0f}% of the token, or past the fastest "
                 "TP): " + ", ".join(stops[:-1]) + (" and " if len(stops) > 1 else "") + stops[-1] + ".")
    else:
        text += " Sharding pays up to the largest TP on every system: the fabric is not the limit here."
    return text


def summary_sentences(data: ReportData) -> list[str]:
    """The verdict in plain words: one sentence per batch size (the plan to pick), then one per
    system (where sharding stops paying). Plain text; the caller escapes it."""
    out = []
    budget = data.settings["budget_s"]
    within = f"the {fmt_seconds(budget)} budget" if budget else "memory"
    for b in data.settings["batches"]:
        cands = []  # (row, label, sharded too far)
        for spec, res in zip(data.specs, data.plans):
            br = batch_result(res, b)
            if br is None:
                continue
            far = set(too_far_tps(br))
            cands += [(r, spec.label, r.tp in far) for r in tp_line(br.rows) if r.meets_budget]
        if not cands:
            out.append(_closest_miss(data, b, budget))
            continue
        good = [c for c in cands if not c[2]]
        fastest = min(cands, key=lambda c: c[0].itl_s)
        if good:
            rec = min(good, key=lambda c: c[0].itl_s)
            text = (f"At batch {b}, the best plan within {within} is {rec[1]} at TP{rec[0].tp}: "
                    f"{fmt_seconds(rec[0].itl_s)} per token, {100 * rec[0].comm_share:.0f}% of it communication.")
            if fastest is not rec and fastest[2]:
                r = fastest[0]
                text += (f" {fastest[1]} at TP{r.tp} is {100 * (1 - r.itl_s / rec[0].itl_s):.0f}% faster "
                         f"({fmt_seconds(r.itl_s)}) on {_times(r.tp / rec[0].tp)} the GPUs, but sharded too far: "
                         f"{100 * r.comm_share:.0f}% of its token is communication.")
            fewest = min(cands, key=lambda c: (c[0].tp, c[0].itl_s))
            if fewest[0].tp < rec[0].tp:
                text += (f" The fewest GPUs that meet it: {fewest[1]} at TP{fewest[0].tp} "
                         f"({fmt_seconds(fewest[0].itl_s)}).")
        else:
            r = fastest[0]
            text = (f"At batch {b}, only plans that are sharded too far meet {within}: {fastest[1]} at TP{r.tp} "
                    f"({fmt_seconds(r.itl_s)}, {100 * r.comm_share:.0f}% communication).")
        out.append(text)
    for res in data.plans:
        out.append(_stops_paying(res))
    return out


def _closest_miss(data: ReportData, batch: int, budget) -> str:
    rows = [(r, spec.label) for spec, res in zip(data.specs, data.plans)
            for br in res.results if br.batch == batch for r in tp_line(br.rows) if r.fits_memory]
    if not rows:
        return f"At batch {batch}, the model does not fit in memory on any system at any TP."
    r, label = min(rows, key=lambda x: x[0].itl_s)
    return (f"At batch {batch}, no system meets the {fmt_seconds(budget)} budget: the closest is {label} at "
            f"TP{r.tp} with {fmt_seconds(r.itl_s)} per token ({100 * r.comm_share:.0f}% communication).")


def _stops_paying(res) -> str:
    label = result_label(res)
    hits = []
    for br in res.results:
        far = too_far_tps(br)
        if far:
            r = _row_at(br, far[0])
            hits.append((far[0], br.batch, r, br.best_tp))
    if not hits:
        top = max(r.tp for br in res.results for r in tp_line(br.rows))
        return (f"On {label} sharding still pays up to TP{top}: communication stays under the threshold "
                f"and every step up in TP still lowers the latency.")
    # past the latency-optimal TP is the clearest case ('adding GPUs no longer pays'); else the
    # planner's other reason: communication over the threshold even at the fastest TP
    past = [h for h in hits if h[3] is not None and h[0] > h[3]]
    tp, batch, r, best_tp = min(past or hits, key=lambda h: (h[0], h[1]))
    share = (f"communication is {100 * r.comm_share:.0f}% of the token "
             f"({fmt_seconds(r.comm_s)} of {fmt_seconds(r.itl_s)})")
    if best_tp is not None and tp <= best_tp:
        # the planner's 'comm-bound at the fastest TP': more TP still helps a little, but the fabric
        # now sets the token time
        return (f"On {label} at batch {batch}, TP{tp} is the fastest option but the fabric sets its pace: {share}.")
    return f"On {label} sharding stops paying at TP{tp} (batch {batch}): {share}."


__all__ = ["headline", "recommendations", "summary_sentences", "verdict_rows"]
