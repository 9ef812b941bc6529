"""The interactive report's answers, priced once: every system under every engine the page offers,
at every budget of its slider, as `plan` and `deploy` answer them: the plans decode at the report's
context (the budget judges their ITL), the deployments are `deploy`'s with its defaults (served
at input / output of defaults.INPUT_TOKENS / OUTPUT_TOKENS: the budget judges their TPOT).

Per system and engine, the planner's rows are priced once (`plan`); under each budget of the slider
the verdicts are `verdicts.judge`'s on those same rows (`rejudge`: no re-pricing, only
`meets_budget` changes with the budget); and deploy's options are priced once per split and judged
at each budget and batch (`deploy.budget_options`, as `deploy --budget B [--batch b]` answers).
report/grid.py turns these records into the page's JSON; it prices nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .. import defaults
from ..errors import ShardbudgetError
from ..fabric.hardware import Catalog
from .deploy import MAX_BATCH, Option, budget_options
from .planner import PlanResult, plan
from .request import Request
from .verdicts import Thresholds, Verdict, judge

MAX_BUDGET_STEPS = 400
# Budget values people say: 10, 12, 15, 20, 25, 30, 40, 50 ... ms (12 per factor of ten).
NICE_MANTISSAS = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
# The slider spans from below the fastest plan (nothing meets) to above the slowest (all do).
SPAN_BELOW, SPAN_ABOVE = 0.8, 1.25


@dataclass(frozen=True, kw_only=True)
class EngineChoice:
    """One value of the engine control: the engine (its key) and what the page shows."""

    key: str
    label: str


def engine_dimension(engine: str | None = None) -> tuple[tuple[EngineChoice, ...], int]:
    """The engine control's values and the one selected first: the engines users choose between
    (vllm, sglang, trtllm, eager), the report's own `engine` among them (an older one, vllm-v0 or
    tgi, is added after them)."""
    names = (*defaults.CURRENT_ENGINES, *([engine] if engine and engine not in defaults.CURRENT_ENGINES else []))
    return tuple(EngineChoice(key=e, label=e) for e in names), names.index(engine) if engine else 0


@dataclass(frozen=True, kw_only=True)
class DeployOptions:
    """deploy's options for one system and engine over the slider (each tuple best first)."""

    largest: tuple[tuple[Option, ...], ...]
    """Per budget: each split at its largest batch within that budget."""
    at: tuple[tuple[tuple[Option, ...], ...], ...]
    """Per report batch, per budget: each split at that decode batch (`deploy --batch`); empty past
    deploy's sweep (MAX_BATCH) or where no split can be priced."""


@dataclass(frozen=True, kw_only=True)
class GridAnswers:
    """Everything the interactive section can show, indexed [system][engine] (then [batch][budget])."""

    engines: tuple[EngineChoice, ...]
    initial_engine: int
    budgets: tuple[float | None, ...]
    """The slider's budgets, the report's own among them, None (no budget) last."""
    plans: tuple[tuple[PlanResult, ...], ...]
    verdicts: tuple[tuple[tuple[tuple[Verdict, ...], ...], ...], ...]
    """[system][engine][batch][budget]: the planner's verdict on that plan's rows under that budget."""
    deploys: tuple[tuple[DeployOptions | None, ...], ...]
    """[system][engine]: deploy's options (None: deploy cannot split that system's GPUs)."""


def answer_grid(
    reqs: Sequence[Request], plans: Sequence[PlanResult], gpus: Sequence[int], *, steps: int
) -> GridAnswers:
    """The grid of the report's requests (one per system, `plans` their own plans, `gpus` each one's
    GPUs to spend): every engine, `steps` budgets of the slider, every batch."""
    engines, first = engine_dimension(reqs[0].scenario.engine)
    per_system = tuple(
        tuple(res if e.key == r.scenario.engine else plan(r.with_engine(e.key)) for e in engines)
        for r, res in zip(reqs, plans)
    )
    itls = [
        row.judged_s for per in per_system for res in per for br in res.results for row in br.rows if row.fits_memory
    ]
    budgets = tuple(budget_steps(itls, reqs[0].budgets.budget_s, steps))
    verdicts = tuple(
        tuple(
            tuple(
                tuple(rejudge(res, i, b, catalog=r.scenario.catalog) for b in budgets) for i in range(len(res.results))
            )
            for res in per
        )
        for r, per in zip(reqs, per_system)
    )
    deploys = tuple(
        tuple(deploy_options(deploy_request(r).with_engine(e.key), gpus=n, budgets_s=budgets) for e in engines)
        for r, n in zip(reqs, gpus)
    )
    return GridAnswers(
        engines=engines, initial_engine=first, budgets=budgets, plans=per_system, verdicts=verdicts, deploys=deploys
    )


def deploy_request(req: Request) -> Request:
    """The report's deployment question: `deploy --gpus N` with the report's options and deploy's
    own defaults (issue 34), so that the page and the command agree: the served workload
    (Request.served_workload: prompts mixed into the decode steps), the budget judging the TPOT, the
    TTFT budget applying. A user who reads "4xTP2 at a batch cap of 40" in the report and runs deploy
    with the same model, system and budget gets that answer, not the answer to a decode-only question."""
    return replace(req, workload=None, jitter=None)


def deploy_options(req: Request, *, gpus: int, budgets_s: Sequence[float | None]) -> DeployOptions | None:
    """deploy's options on `gpus` GPUs at every budget, each at its largest batch within it and at
    each of the request's batches; None where deploy has no split to offer."""
    inside = [b for b in req.batches if b <= MAX_BATCH]  # deploy's sweep ends at MAX_BATCH: none beyond it
    try:
        per = budget_options(req, gpus=gpus, budgets_s=budgets_s, batches=(None, *inside))
    except ShardbudgetError:
        return None
    at = dict(zip(inside, per[1:]))
    empty = tuple(() for _ in budgets_s)
    return DeployOptions(largest=tuple(per[0]), at=tuple(tuple(at[b]) if b in at else empty for b in req.batches))


def where_text(result: PlanResult) -> str:
    """What a verdict speaks of, as the planner writes it: 'llama-3.1-70b on 2 x hgx-h100'."""
    name = f"{result.nodes} x {result.system}" if result.nodes > 1 else result.system
    return f"{result.model} on {name}"


def rejudge(result: PlanResult, batch_index: int, budget_s: float | None, *, catalog: Catalog) -> Verdict:
    """The planner's verdict on `result`'s rows at one batch, under `budget_s` instead of its own.

    Only `meets_budget` depends on the budget (fits, the judged time <= budget, TTFT <= the TTFT
    budget, as the planner defines it); every verdict is then `verdicts.judge`'s on the same rows."""
    br = result.results[batch_index]
    ttft_budget = result.ttft_budget_s
    rows = [
        replace(
            r,
            verdict="",
            comm_bound=False,
            meets_budget=r.fits_memory
            and (budget_s is None or r.judged_s <= budget_s)
            and (ttft_budget is None or r.ttft_s <= ttft_budget),
        )
        for r in br.rows
    ]
    a = result.assumptions
    gpu = catalog.system(result.system).gpu
    limits = Thresholds(
        budget_s=budget_s,
        ttft_budget_s=ttft_budget,
        comm_threshold=a.comm_threshold,
        knee_threshold=a.knee_threshold,
        token=a.judged,
    )
    return judge(
        br.batch,
        rows,
        where=where_text(result),
        gpu_memory_bytes=gpu.memory_bytes,
        usable_bytes=gpu.memory_bytes * a.memory_utilization,
        limits=limits,
    )


def budget_steps(itls_s: Sequence[float], report_budget_s: float | None, count: int) -> list[float | None]:
    """The slider's budgets: at most `count` round values from below the fastest plan to above the
    slowest, the report's own budget among them, then None (no budget)."""
    out: set[float] = set()
    finite = [t for t in itls_s if math.isfinite(t) and t > 0]
    if finite:
        lo, hi = min(finite) * SPAN_BELOW, max(finite) * SPAN_ABOVE
        nice = [
            float(f"{m * 10.0**e:.3g}")
            for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
            for m in NICE_MANTISSAS
        ]
        nice = sorted(x for x in nice if lo <= x <= hi)
        if len(nice) > count:  # keep both ends, thin the middle evenly
            nice = [nice[round(i * (len(nice) - 1) / (count - 1))] for i in range(count)]
        out.update(nice)
    if report_budget_s is not None:
        out.add(float(report_budget_s))
    return [*sorted(out), None]


def check_budget_steps(count) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or not (count == 0 or 2 <= count <= MAX_BUDGET_STEPS):
        raise ShardbudgetError(
            f"budget steps must be 0 (no interactive section) or a whole number from 2 to "
            f"{MAX_BUDGET_STEPS}, got {count!r}"
        )
    return count


__all__ = [
    "DeployOptions",
    "EngineChoice",
    "GridAnswers",
    "MAX_BUDGET_STEPS",
    "answer_grid",
    "budget_steps",
    "check_budget_steps",
    "deploy_request",
    "deploy_options",
    "engine_dimension",
    "rejudge",
    "where_text",
]
