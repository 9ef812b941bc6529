"""The verdicts, each defined once, over every plan of a sweep; every sentence is generated from them.

For one batch size, over all plans the planner swept (TP x PP x EP x data-parallel attention),
every verdict judges one time per token, the row's `judged_s`: the served TPOT (the decode step
with the other requests' prompts mixed in) where the question has a served workload
(--input-len/--output-len), else the ITL (one decode step). `Thresholds.token` names it, and the
sentences say it: "the 30 ms TPOT budget", "20% of TP4's TPOT". The communication share is of that
same time (the prompts' collectives counted in a TPOT).

fits             weights + KV cache + workspace fit in the usable GPU memory.
meets budget     fits, the judged time <= the budget and, when a TTFT budget is given, TTFT <= it.
latency-optimal  exactly one plan: among the plans that fit, the one with the fewest GPUs whose
                 judged time is within `knee_threshold` (default 10%) of the fastest plan's. More
                 GPUs than that buy less than the threshold. Ties: the faster plan, then the lower TP.
sharded too far  a plan that fits, with more GPUs than the latency-optimal one and not faster than
                 it by more than the knee threshold; or a plan slower than some plan with fewer GPUs,
                 or than a plan of a lower TP on no more GPUs (TP8 slower than TP4 x PP2 on the same
                 eight GPUs).
comm-bound       a warning, not a verdict of "too far": communication is more than `comm_threshold`
                 (default 30%) of the latency-optimal plan's judged time.

Each row of the table carries one label, in this order of precedence: "does not fit",
"latency-optimal", "over budget" (fits, misses a budget), "sharded too far" (within every budget),
"ok". A plan over the budget is that first (issue 34): what it misses decides it before what it
wastes, so the plans named sharded too far are ones a user could run. A row whose communication
share passes the threshold also has `comm_bound`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from ..step.records import AllReduceCall
from ..units import format_decimal_bytes, format_seconds

LABELS = ("does not fit", "latency-optimal", "over budget", "sharded too far", "ok")


@dataclass(frozen=True, kw_only=True)
class Row:
    """One plan at one batch size: the numbers every verdict is computed from (seconds, bytes)."""

    tp: int
    pp: int
    ep: int
    dp: int
    """Data-parallel attention degree (1: attention is tensor-parallel like the rest)."""
    itl_s: float
    """One decode step (the inter-token latency with no prompt mixed in)."""
    compute_s: float
    comm_s: float
    """Communication inside the ITL."""
    comm_share: float
    """Communication's share of the judged time (`judged_s`): of the TPOT, the mixed prompts'
    collectives counted, where tpot_s is given; else of the ITL."""
    comm_latency_s: float
    other_s: float
    """Host-bound time and per-step overhead (ITL minus compute minus communication)."""
    ttft_s: float
    mem_bytes_per_gpu: float
    fits_memory: bool
    meets_budget: bool
    verdict: str = ""
    comm_bound: bool = False
    memory: dict | None = None
    """What the bytes per GPU are made of (memory.MemoryNeed: weights, kv_cache, activations,
    cuda_graphs, comm_buffers, cuda_context, total)."""
    itl_p99_s: float | None = None
    """The ITL's p99 from measured collective jitter (tail_plan.py); None without a --jitter log."""
    tpot_s: float | None = None
    """The served TPOT with prompts mixed in (step.served, as deploy prices it); None: plan was
    asked a decode-only question (no --input-len/--output-len)."""
    tpot_comm_s: float | None = None
    """Communication inside tpot_s: the decode step's collectives and the mixed prompts'."""
    allreduce: AllReduceCall | None = None
    """The decode step's chief TP all-reduce as it was priced (kernel, algorithm, protocol, time per
    call, calls per token): what every view names; None without TP."""

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    @property
    def judged_s(self) -> float:
        """The time per token the verdicts judge: the served TPOT where given, else the ITL."""
        return self.itl_s if self.tpot_s is None else self.tpot_s

    @property
    def judged_comm_s(self) -> float:
        """Communication inside judged_s."""
        return self.comm_s if self.tpot_comm_s is None else self.tpot_comm_s

    @property
    def judged_parts(self) -> tuple[float, float, float]:
        """(compute, communication, host) of judged_s: the ITL's parts, or in a TPOT the mixed
        prompts' communication with the rest and their other work with compute (the host part is
        the decode step's: a prompt mixed in adds no step)."""
        if self.tpot_s is None:
            return self.compute_s, self.comm_s, self.other_s
        return self.tpot_s - self.tpot_comm_s - self.other_s, self.tpot_comm_s, self.other_s

    @property
    def key(self) -> tuple[int, int, int, int]:
        return (self.tp, self.pp, self.ep, self.dp)

    def label(self) -> str:
        """TP8, TP8 PP2, TP8 EP8, TP8 EP8 DP8 (data-parallel attention)."""
        return (
            f"TP{self.tp}"
            + (f" PP{self.pp}" if self.pp > 1 else "")
            + (f" EP{self.ep}" if self.ep > 1 else "")
            + (f" DP{self.dp}" if self.dp > 1 else "")
        )

    def to_dict(self) -> dict:
        return {**asdict(self), "allreduce": self.allreduce.to_dict() if self.allreduce else None}


@dataclass(frozen=True, kw_only=True)
class Thresholds:
    budget_s: float | None
    ttft_budget_s: float | None
    comm_threshold: float
    knee_threshold: float
    token: str = "ITL"
    """What the rows' judged time is, as the sentences name it: ITL, or TPOT (request.Workload.judged)."""


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """Every verdict of one batch size, with the rows they point at and the sentences they make."""

    batch: int
    rows: tuple[Row, ...]
    """Every plan, labelled."""
    smallest: Row | None
    """The plan that fits on the fewest GPUs (ties: the least memory per GPU)."""
    fastest: Row | None
    best: Row | None
    """The latency-optimal plan."""
    largest_tp_within_budget: Row | None
    """Among plans that meet every budget, the one with the largest TP (ties: fewer GPUs, faster)."""
    closest: Row | None
    """When no plan meets the budgets: the fitting plan nearest to them."""
    pick: Row | None
    """The plan to run: the latency-optimal one if it meets every budget, else the same knee rule
    applied to the plans that do (None when none does)."""
    too_far: tuple[Row, ...]
    """The plans labelled sharded too far (within every budget), fewest GPUs first."""
    comm_bound: bool
    sentences: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.sentences)

    @property
    def best_plan(self) -> dict | None:
        return None if self.best is None else dict(zip(("tp", "pp", "ep", "dp"), self.best.key))


def _order(r: Row) -> tuple:
    return (r.gpus, r.judged_s, r.tp, r.pp, r.ep, r.dp)


def latency_optimal(fitting: list[Row], knee: float) -> Row | None:
    """The fewest-GPU plan within `knee` of the fastest (see the module docstring)."""
    if not fitting:
        return None
    fastest = min(r.judged_s for r in fitting)
    return min((r for r in fitting if r.judged_s <= fastest * (1 + knee)), key=_order)


def is_too_far(r: Row, best: Row, fitting: list[Row], knee: float) -> bool:
    if r.key == best.key or not r.fits_memory:
        return False
    # the same product as latency_optimal's test, so a plan inside the knee there is past it here
    # (a ratio minus one rounds differently at the edge)
    past_best = r.gpus > best.gpus and best.judged_s <= r.judged_s * (1 + knee)
    slower_than_smaller = any(
        o.judged_s < r.judged_s and (o.gpus < r.gpus or (o.gpus == r.gpus and o.tp < r.tp)) for o in fitting
    )
    return past_best or slower_than_smaller


def judge(
    batch: int, rows: list[Row], *, where: str, gpu_memory_bytes: float, usable_bytes: float, limits: Thresholds
) -> Verdict:
    """The verdicts of one batch size over `rows` (one per plan); every row the Verdict points at is
    the labelled row of its table."""
    knee = limits.knee_threshold
    unlabelled = [r for r in rows if r.fits_memory]
    best0 = latency_optimal(unlabelled, knee)
    far = {r.key for r in unlabelled if best0 and is_too_far(r, best0, unlabelled, knee)}
    labelled = tuple(_labelled(r, best0, far, limits.comm_threshold) for r in rows)
    fitting = [r for r in labelled if r.fits_memory]
    meeting = [r for r in fitting if r.meets_budget]
    best = next((r for r in fitting if best0 and r.key == best0.key), None)
    v = Verdict(
        batch=batch,
        rows=labelled,
        smallest=min(fitting, key=lambda r: (r.gpus, r.mem_bytes_per_gpu, r.judged_s)) if fitting else None,
        fastest=_fastest(fitting, best),
        best=best,
        largest_tp_within_budget=min(meeting, key=lambda r: (-r.tp, r.gpus, r.judged_s)) if meeting else None,
        closest=_closest(fitting, limits) if fitting and not meeting else None,
        pick=best if best and best.meets_budget else latency_optimal(meeting, knee),
        too_far=tuple(sorted((r for r in fitting if r.verdict == "sharded too far"), key=_order)),
        comm_bound=bool(best and best.comm_share > limits.comm_threshold),
        sentences=(),
    )
    text = _sentences(
        v, where=where, gpu_memory_bytes=gpu_memory_bytes, usable_bytes=usable_bytes, rows=rows, limits=limits
    )
    return Verdict(**{**{f: getattr(v, f) for f in v.__dataclass_fields__}, "sentences": text})


def _fastest(fitting: list[Row], best: Row | None) -> Row | None:
    """The fastest plan; the latency-optimal one itself when nothing is strictly faster."""
    if not fitting:
        return None
    fastest = min(fitting, key=lambda r: (r.judged_s, _order(r)))
    return best if best is not None and best.judged_s <= fastest.judged_s else fastest


def _labelled(r: Row, best: Row | None, far: set, comm_threshold: float) -> Row:
    if not r.fits_memory:
        label = "does not fit"
    elif best and r.key == best.key:
        label = "latency-optimal"
    elif not r.meets_budget:
        label = "over budget"
    elif r.key in far:
        label = "sharded too far"
    else:
        label = "ok"
    return replace(r, verdict=label, comm_bound=r.comm_share > comm_threshold)


def _closest(fitting: list[Row], limits: Thresholds) -> Row:
    """The plan whose worst budget ratio (judged time / budget, TTFT / TTFT budget) is smallest."""

    def worst(r: Row) -> float:
        ratios = [r.judged_s / limits.budget_s if limits.budget_s else 0.0]
        ratios.append(r.ttft_s / limits.ttft_budget_s if limits.ttft_budget_s else 0.0)
        return max(ratios)

    return min(fitting, key=lambda r: (worst(r), r.gpus))


def _ms(t_s: float) -> str:
    return format_seconds(t_s)


def _share(r: Row, threshold: float | None = None) -> str:
    """'30%'; one decimal where whole percents would print the share equal to the threshold."""
    pct = 100 * r.comm_share
    if threshold is not None and round(pct) == round(100 * threshold) and pct != 100 * threshold:
        return f"{pct:.1f}%"
    return f"{pct:.0f}%"


def _budget_words(limits: Thresholds) -> str:
    words = [f"the {_ms(limits.budget_s)} {limits.token} budget"] if limits.budget_s is not None else []
    if limits.ttft_budget_s is not None:
        words.append(f"the {_ms(limits.ttft_budget_s)} TTFT budget")
    return " and ".join(words)


def _sentences(
    v: Verdict, *, where: str, gpu_memory_bytes: float, usable_bytes: float, rows: list[Row], limits: Thresholds
) -> tuple[str, ...]:
    head = f"Batch {v.batch}: {where}"
    if v.best is None:
        least = min(rows, key=lambda r: r.mem_bytes_per_gpu) if rows else None
        need = (
            f" (the smallest need is {least.label()} with {format_decimal_bytes(least.mem_bytes_per_gpu)} per GPU; "
            f"{format_decimal_bytes(usable_bytes)} of the {format_decimal_bytes(gpu_memory_bytes)} are usable)"
            if least
            else ""
        )
        return (f"{head} does not fit in memory under any plan{need}; add nodes or quantise.",)
    s = v.smallest
    out = [
        f"{head} fits on as few as {s.gpus} GPU{'s' if s.gpus > 1 else ''} "
        f"({s.label()}: {format_decimal_bytes(s.mem_bytes_per_gpu)} per GPU)."
    ]
    out.append(_best_sentence(v, limits))
    if limits.budget_s is not None or limits.ttft_budget_s is not None:
        out.append(_budget_sentence(v, limits))
        if v.pick is not None and v.pick.key != v.best.key:
            out.append(
                f"{v.best.label()} misses {_budget_words(limits)}; within it, pick {v.pick.label()} "
                f"({_ms(v.pick.judged_s)})."
            )
    if v.too_far:
        out.append(_too_far_sentence(v, limits))
    out.append(_comm_sentence(v, limits))
    return tuple(out)


def _best_sentence(v: Verdict, limits: Thresholds) -> str:
    best, fastest = v.best, v.fastest
    text = f"Latency-optimal: {best.label()} at {_ms(best.judged_s)} per token ({_share(best)} of it communication)"
    if fastest.key != best.key:
        return (
            text + f"; {fastest.label()} is faster ({_ms(fastest.judged_s)}) but by less than "
            f"{100 * limits.knee_threshold:.0f}% for {fastest.gpus - best.gpus} more GPUs."
        )
    larger = [r for r in v.rows if r.fits_memory and r.gpus > best.gpus]
    return text + ("; no plan with more GPUs is faster." if larger else "; it is the fastest plan swept.")


def _budget_sentence(v: Verdict, limits: Thresholds) -> str:
    budgets, token = _budget_words(limits), limits.token
    if v.largest_tp_within_budget is None:
        c = v.closest
        compute, comm, _ = c.judged_parts
        parts = f"({_ms(compute)} compute, {_ms(comm)} communication)"
        if limits.ttft_budget_s is None:
            return f"No plan meets {budgets}: the closest is {c.label()} at {_ms(c.judged_s)} {parts}."
        # say which budget the closest plan misses: a token time within its budget is not the problem
        token_ok = limits.budget_s is None or c.judged_s <= limits.budget_s
        ttft_ok = c.ttft_s <= limits.ttft_budget_s
        words = {True: "meets", False: "misses"}
        time = (
            f"its {token} {_ms(c.judged_s)} {parts} {words[token_ok]} the {token} budget"
            if limits.budget_s is not None
            else f"its {token} is {_ms(c.judged_s)} {parts}"
        )
        return (
            f"No plan meets {budgets}: the closest is {c.label()}; {time}, its TTFT {_ms(c.ttft_s)} "
            f"{words[ttft_ok]} the TTFT budget."
        )
    r = v.largest_tp_within_budget
    ttft = f", TTFT {_ms(r.ttft_s)}" if limits.ttft_budget_s is not None else ""
    plan = "" if r.label() == f"TP{r.tp}" else f"{r.label()}: "
    return f"The largest TP that meets {budgets} is TP{r.tp} ({plan}{_ms(r.judged_s)}{ttft})."


def _too_far_sentence(v: Verdict, limits: Thresholds) -> str:
    n = len(v.too_far)
    widest = max(v.too_far, key=lambda r: (r.tp, r.gpus, r.judged_s))
    some = ", ".join(f"{r.label()} {_ms(r.judged_s)}" for r in v.too_far[:3]) + (", ..." if n > 3 else "")
    comm = (
        f"; at {widest.label()} communication is {_share(widest)} of the {limits.token}"
        if widest.comm_share >= 0.01
        else ""
    )
    return (
        f"{n} plan{'s are' if n > 1 else ' is'} sharded too far, {'each ' if n > 1 else ''}using more GPUs "
        f"or a higher TP than another plan that is faster or at most {100 * limits.knee_threshold:.0f}% slower "
        f"({some}){comm}."
    )


def _comm_sentence(v: Verdict, limits: Thresholds) -> str:
    best, token = v.best, limits.token
    parts = f"{_ms(best.judged_comm_s)} of {_ms(best.judged_s)}"
    share = _share(best, limits.comm_threshold)
    if v.comm_bound:
        return (
            f"Warning: communication is {share} of {best.label()}'s {token} ({parts}), above the "
            f"{100 * limits.comm_threshold:.0f}% threshold: the fabric, not the GPUs, sets its token time."
        )
    return (
        f"Communication is {share} of {best.label()}'s {token} ({parts}), under the "
        f"{100 * limits.comm_threshold:.0f}% threshold."
    )


__all__ = ["LABELS", "Row", "Thresholds", "Verdict", "is_too_far", "judge", "latency_optimal"]
