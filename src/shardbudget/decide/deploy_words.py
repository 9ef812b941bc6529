"""deploy's choice in words: one paragraph with numbers (`verdict_text`), naming the best option
against one replica of the widest TP (or the runner-up), or, where nothing meets the budgets, the
closest option and what binds it. It reads a DeployResult's fields only; deploy.py builds it."""

from __future__ import annotations

import math

from ..step.speculative import comparison_text
from ..units import format_decimal_bytes, format_seconds


def verdict_text(r) -> str:  # r: a deploy.DeployResult
    """One paragraph, with numbers: the choice, against one replica of the widest TP (or the runner-up)."""
    budgets = " and ".join(
        w
        for w in (
            f"{format_seconds(r.budget_s)} {r.judged}" if r.budget_s else "",
            f"{format_seconds(r.ttft_budget_s)} TTFT" if r.ttft_budget_s else "",
        )
        if w
    )
    within = f"within {budgets}" if budgets else "with no budget"
    if r.best is None:
        spec = r.workload.speculation
        return _no_option_text(r, budgets) + (comparison_text(spec, None, r.without_speculation) if spec else "")
    b = r.best
    pre = r.prefill
    stages = f" PP{pre['pp']}" if pre and pre["pp"] > 1 else ""
    where = (
        f"On {r.gpus} GPUs of {r.system} ({pre['gpus']} prefilling as {pre['replicas']}x TP{pre['tp']}"
        f"{stages}, TTFT {format_seconds(pre['ttft_s'])} of which the KV "
        f"hand-off is {format_seconds(pre['kv_transfer_s'])}, {100 * pre['kv_transfer_share_of_ttft']:.1f}%)"
        if pre
        else f"On {r.gpus} GPUs of {r.system}"
    )
    left = ""
    if b.gpus_left:  # fewer GPUs than given meet the budgets where all of them do not (deploy.partial_splits)
        left = (
            f" on {b.replicas * b.gpus_per_replica} of them ({b.gpus_left} GPU{'s' if b.gpus_left > 1 else ''} "
            f"left: no split of all {r.gpus} meets the budgets)"
        )
    at = (
        f"with {b.max_batch} sequences in flight per replica"
        if r.batch
        else f"at its batch cap of {b.max_batch} per replica"
    )  # the table's 'in flight' / 'batch cap'
    text = (
        f"{where}, {b.label()}{left} {at} gives {_most(r.costs.objective, b)} {within}: "
        f"{b.tokens_per_s_per_gpu:,.0f} tokens/s/GPU, {b.tokens_per_s:,.0f} in all, "
        f"{b.tokens_per_s_per_user:.0f} tokens/s per user ({_times(r, b)}; "
        f"{'the batch is given' if b.binding == 'batch' else b.binding + ' binds'}; "
        f"{100 * b.comm_share:.0f}% of its {r.judged} in communication)."
    )
    if r.workload.speculation is not None:
        text += comparison_text(r.workload.speculation, b, r.without_speculation)
    # Against the plan people reach for first: one replica, tensor-parallel as wide as the GPUs allow.
    whole = max((o for o in r.options if o.replicas == 1), key=lambda o: (o.tp, -o.pp, -o.ep, -o.dp), default=None)
    if whole is b:
        second = next((o for o in r.options if o is not b and o.meets_budget), None)
        if second is not None:
            text += (
                f" The runner-up, {second.label()}, gives {second.tokens_per_s_per_gpu:,.0f}/GPU "
                f"({second.tokens_per_s_per_gpu / b.tokens_per_s_per_gpu:.2f}x) {_batch(r, second)}."
            )
        return text
    if whole is not None:
        if whole.meets_budget:
            text += (
                f" That is {b.tokens_per_s_per_gpu / whole.tokens_per_s_per_gpu:.2f}x the tokens/s of one "
                f"{whole.label()[2:]} replica ({whole.tokens_per_s_per_gpu:,.0f}/GPU {_batch(r, whole)}, "
                f"{100 * whole.comm_share:.0f}% of its {r.judged} in communication)."
            )
        else:
            text += f" One {whole.label()[2:]} replica of all {r.gpus} GPUs misses the budget ({whole.binding})."
    return text


def _batch(r, o) -> str:
    """An option's batch in the table's words: 'in flight' under --batch, else its 'batch cap'."""
    return f"with {o.max_batch} in flight" if r.batch else f"at a batch cap of {o.max_batch}"


def _times(r, o) -> str:
    """'TPOT 28.74 ms, ITL 26.84 ms': the time the budget judges first, then one decode step where it
    is another number (prompts mixed in, or a speculative step's several tokens)."""
    text = f"{r.judged} {format_seconds(o.tpot_s)}"
    return text + (f", ITL {format_seconds(o.itl_s)}" if format_seconds(o.itl_s) != format_seconds(o.tpot_s) else "")


def _most(objective: str, b) -> str:
    """What the best option is best at, by the objective (decide.cost)."""
    c = b.cost
    if objective == "cost" and c is not None and c.usd_per_mtok is not None:
        return f"the fewest dollars per million output tokens (${c.usd_per_mtok:.3f})"
    if objective == "energy" and c is not None and c.tokens_per_joule is not None:
        return f"the most output tokens per joule ({c.tokens_per_joule:.2f})"
    return "the most tokens/s per GPU"


def _no_option_text(r, budgets: str) -> str:
    """Why no option qualifies, with the closest one: among the splits that hold batch 1 in memory
    (the lowest judged time), or, where none does, the split that needs the least memory per GPU."""
    fitting = [o for o in r.options if not (o.binding == "memory" and o.max_batch == 0)]
    if not fitting:
        c = min(r.options, key=lambda o: o.mem_bytes_per_gpu)
        gpus = f"{r.gpus} GPU{'s' if r.gpus != 1 else ''}"
        return (
            f"No split of {gpus} of {r.system} fits {r.model} in memory, even at batch 1: the closest is "
            f"{c.label()} at {format_decimal_bytes(c.mem_bytes_per_gpu)} per GPU; give more --gpus or a smaller "
            f"--dtype / --kv-dtype / context."
        )
    c = min(fitting, key=lambda o: o.tpot_s)
    return (
        f"No way to spend {r.gpus} GPUs on {r.model} meets {budgets}: the closest is {c.label()} at "
        f"{format_seconds(c.tpot_s)} {r.judged}"
        + ("" if math.isnan(c.ttft_s) else f", TTFT {format_seconds(c.ttft_s)}")
        + f" (binding: {c.binding})."
    )


__all__ = ["verdict_text"]
