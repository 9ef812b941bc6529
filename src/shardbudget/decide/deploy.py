"""How to spend N GPUs: identical replicas of one plan (TP x PP x EP x DP-attention), each at the
largest batch that meets the budgets, ranked by tokens/s per GPU.

For every split of the GPUs into `replicas` copies of a plan, the batch (sequences in flight under
continuous batching) grows while it

* fits memory: weights + KV cache for every sequence at its longest (input + output tokens) + workspace;
* meets the budget: the mean time per output token of one sequence, the TPOT (request.Workload.judged);
* meets the TTFT budget, where one is given.

Continuous batching mixes prefill into decode (chunked prefill, the default of vLLM V1, SGLang and
TensorRT-LLM): every finished sequence is replaced by a new one, whose prompt rides in the decode
steps of the others. The budget judges the served TPOT of `step.served` (the one formula `plan
--input-len/--output-len` shows and judges too), and throughput is b over the per-token cycle that
adds each sequence's own prompt:

    tpot(b) = itl(b) + c_p x (b - 1) x input_len / output_len,   b / (tpot(b) + c_p x input_len / output_len)

with itl(b) one decode step and c_p what one prompt token adds to a step; the communication share
is of the TPOT, the mixed prompts' collectives counted. A new prompt's TTFT is its
ceil(input_len / chunk) chunks, each a decode step of the batch plus its share of the prompt.
`--context L` instead prices a fixed context of L tokens with no prefill (a decode-only question):
the TPOT is then the ITL, and the budget judges it by that name. Every table, JSON key and sentence
says ITL for one decode step and TPOT for the time per output token as served.

A pipeline-parallel replica keeps pp micro-batches of b sequences in flight (vLLM's virtual engines,
and SGLang's and TensorRT-LLM's pipeline schedulers alike): a sequence's next token takes one pass
through every stage, itl(b), while the other stages work on the other micro-batches, so the replica
holds pp x b sequences (memory) and makes pp x b / tpot(b) tokens per second.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .. import defaults
from ..engines.presets import load_engine
from ..errors import PlanError
from ..fabric.hardware import System
from .launch import build_launches, check_request
from ..step.memory import MemoryNeed, fits as memory_fits, memory_need, raised_fraction
from ..model import ModelConfig, Plan
from ..model.work import Precision
from .planner import valid_plans
from .release_words import nccl_words
from .request import Budgets, Request, Workload
from .disagg import Prefill, prefill_side, with_handoff
from .pareto import pareto_front
from ..step.scenario import Scenario, check_nodes
from ..step.served import CHUNK_TOKENS, decode_per_token, served_curve
from .deploy_words import verdict_text
from .cost import CostView, OptionCost, checked_rates, cost_view, objective_key, with_costs

if TYPE_CHECKING:  # tail_plan reads logs; only deploy --jitter needs it loaded
    from .split_search import PriceMemo, SplitSearch
    from .tail_plan import Jitter

MAX_BATCH = defaults.DEPLOY_MAX_BATCH


@dataclass(frozen=True, kw_only=True)
class Option:
    replicas: int
    tp: int
    pp: int
    ep: int
    dp: int
    max_batch: int
    """Sequences in flight per replica (0: none meets the constraints: no throughput, batch 1's times);
    with a fixed batch, those of that batch (0 where it does not fit in memory)."""
    tpot_s: float
    """Time per output token of one sequence as served (step.served): the decode step with the other
    requests' prompts mixed in; with speculation, over the tokens a step yields. What the budget
    judges (equal to itl_s where no prompt is mixed in and no draft: --context, disaggregated)."""
    itl_s: float
    """One decode step alone, no prompt mixed in (with speculation: the verify step and its drafts),
    as plan's ITL."""
    cycle_s: float
    """Per token of one sequence with its own prompt's share: tokens/s = replicas x max_batch / cycle_s
    (equal to tpot_s where no prompts are mixed in: --context, disaggregated)."""
    ttft_s: float
    """NaN under a fixed --context: nothing is prefilled."""
    tokens_per_s: float
    """All replicas together."""
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    mem_bytes_per_gpu: float
    binding: str
    """What stops the batch from growing: memory, tpot (itl where the budget judges the ITL), ttft, or
    max-batch (the sweep's end); with a fixed batch, what it misses (memory, tpot / itl, ttft), or
    batch where it meets every budget."""
    meets_budget: bool
    comm_share: float
    """Communication's share of tpot_s, the mixed prompts' collectives counted."""
    gpus_per_replica: int
    tokens_per_step: float = 1.0  # tokens a sequence gains per decode step (speculation's yield)
    memory_fraction: float | None = None  # the engine fraction it needs above the default (memory.raised_fraction)
    memory: dict | None = field(default=None, compare=False)  # mem_bytes_per_gpu's parts, as plan's rows give them
    itl_p99_s: float | None = None
    """itl_s's p99 from measured collective jitter (--jitter: tail_plan, as plan's rows), at the
    option's own decode batch; None without a log."""
    gpus_left: int = 0
    """GPUs of those given that the option leaves idle (`partial_splits`: fewer than all meet the
    budgets where no split of all does); tokens_per_s_per_gpu is per GPU it runs on."""
    cost: OptionCost | None = None  # $ per million output tokens, tokens per joule (decide.cost), once priced

    def label(self) -> str:
        plan = Plan(self.tp, self.pp, self.ep, self.dp).label().replace("DP-attention", "DP")
        return f"{self.replicas}x{plan.replace(' ', '/')}"

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("gpus_per_replica")
        return d


@dataclass(frozen=True, kw_only=True)
class DeployResult:
    model: str
    system: str
    nodes: int
    gpus: int
    budget_s: float | None
    ttft_budget_s: float | None
    engine: str
    workload: Workload
    options: tuple[Option, ...]
    best: Option | None
    pareto: tuple[dict, ...]
    curves: dict = field(default_factory=dict)
    """Option label -> (tokens/s/user, tokens/s/GPU) arrays over batch 1..max fitting (for figures)."""
    launch: dict = field(default_factory=dict)
    verdict: str = ""
    notes: tuple[str, ...] = ()
    memory_utilization: float | None = None
    """--gpu-memory-utilization as given (None: each engine's default); the launch lines pass it on."""
    prefill: dict | None = None
    """Under --disaggregate: the prefill side of the best option (plan, replicas, prefill and KV
    hand-off times, the hand-off's share of TTFT)."""
    without_speculation: Option | None = None
    """With --speculative: the best option of the same request without it (None: none meets the budgets)."""
    precision: Precision | None = None
    """What the weights, activations and KV cache were priced in (the launch lines carry it)."""
    chunk_tokens: int = 0
    """Prompt tokens per step under chunked prefill, as priced (CHUNK_TOKENS)."""
    launches: dict = field(default_factory=dict)
    """engine -> launch.Launch of the best option (the commands, steps, files); `launch` is their text."""
    batch: int | None = None
    """The decode batch every option runs at (--batch), or None: each at its largest within the budgets."""
    impl: str | None = None
    """Every all-reduce forced to this implementation (--impl), or None: the engine's rule."""
    tail: str | None = None
    """What the options' itl_p99_s come from (Jitter.describe, as plan's header), or None without --jitter."""
    nccl: str = ""
    """The NCCL release whose rules price it (release_words.nccl_words; --nccl)."""
    judged: str = "TPOT"
    """What the budget judges: TPOT, or ITL under a decode-only --context (request.Workload.judged)."""
    judged_words: str = ""
    """The header's sentence saying what the budget judges (Workload.judged_words, or the decode side's
    under --disaggregate, whose prompts are prefilled elsewhere)."""
    load: str | None = None
    """The load the best option serves, under deploy --rate/--users ('20 requests/s'; None: --gpus)."""
    in_flight: int | None = None
    """Under a load: the sequences in flight per replica of the best option at that load (at most its
    batch cap, max_batch; capacity.deploy_for_load), which the table's header and the launch lines name."""
    moe_a2a: str = "nccl"
    """What runs the MoE dispatch and combine (--moe-a2a): the launch lines name it where it is not
    the engine's default."""
    engine_version: str = ""
    """The engine release priced (engines/*.toml [engine] version)."""
    costs: CostView = CostView()  # --objective, the prices, the figure's cost / energy curves (decide.cost)
    split_search: SplitSearch | None = None
    """The prefill:decode splits searched beside the uniform options (split_search.deploy_searched;
    None: not searched, and the JSON has no such key)."""

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "system": self.system,
            "nodes": self.nodes,
            "gpus": self.gpus,
            "budget_s": self.budget_s,
            "ttft_budget_s": self.ttft_budget_s,
            "engine": self.engine,
            "engine_version": self.engine_version,
            "nccl": self.nccl,
            "workload": asdict(self.workload),
            "options": [o.to_dict() for o in self.options],
            "best": self.best.to_dict() if self.best else None,
            "pareto": list(self.pareto),
            "launch": dict(self.launch),
            "verdict": self.verdict,
            "notes": list(self.notes),
            "prefill": self.prefill,
            "launch_plans": {e: la.to_dict() for e, la in self.launches.items()},
            "without_speculation": self.without_speculation.to_dict() if self.without_speculation else None,
            "batch": self.batch,
            "impl": self.impl,
            "tail": self.tail,
            "judged": self.judged,
            "judged_words": self.judged_words,
            "load": self.load,
            "in_flight_per_replica": self.in_flight,
            **self.costs.to_dict(),
            **({"split_search": self.split_search.to_dict()} if self.split_search is not None else {}),
        }


# --- the splits -----------------------------------------------------------------------------


def splits(cfg: ModelConfig, system: System, gpus: int, memo: dict | None = None) -> list[tuple[int, Plan]]:
    """Every (replicas, plan) with replicas x plan GPUs = `gpus`: a replica inside a node, or over
    whole nodes. `memo` (nodes -> {GPUs: plans}) keeps each node count's valid plans across the
    sizes of a search (PriceMemo.plans)."""
    gpn = system.gpus_per_node
    out = []
    for size in _divisors(gpus):
        if size > gpn and (size % gpn or system.nic_fabric is None):
            continue
        out += [(gpus // size, p) for p in _plans_by_gpus(cfg, system, max(1, size // gpn), memo).get(size, ())]
    return out


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


def _plans_by_gpus(cfg: ModelConfig, system: System, nodes: int, memo: dict | None) -> dict[int, list[Plan]]:
    """The valid plans on `nodes` nodes, by their GPUs, in valid_plans' order: every PP degree on
    one node (replicas of any size inside it); over several, those of all their GPUs alone (TP x PP
    = nodes x GPUs per node, which valid_plans gives without pp_all too, at a fraction of the cost)."""
    if memo is not None and nodes in memo:
        return memo[nodes]
    try:
        plans = valid_plans(cfg, system, nodes, pp_all=nodes == 1)
    except PlanError:
        plans = []
    by: dict[int, list[Plan]] = {}
    for p in plans:
        by.setdefault(p.gpus, []).append(p)
    if memo is not None:
        memo[nodes] = by
    return by


def partial_splits(cfg: ModelConfig, system: System, gpus: int) -> list[tuple[int, Plan]]:
    """The splits of fewer than `gpus` GPUs, as many replicas of each size as fit: replicas inside
    a node, placed so that none straddles a node's edge, for each size that does not divide `gpus`;
    and the splits of the whole nodes, where the GPUs end part-way into a node. What `deploy` falls
    back to where no split of all the GPUs meets the budgets (`deploy --gpus 3`: TP2, one left)."""
    gpn = system.gpus_per_node
    whole, rest = divmod(gpus, gpn)
    out = splits(cfg, system, whole * gpn) if whole and rest else []
    try:
        plans = valid_plans(cfg, system, 1, pp_all=True)
    except PlanError:
        plans = []
    for size in range(1, min(gpn, gpus) + 1):
        replicas = whole * (gpn // size) + rest // size
        if gpus % size and replicas:  # not a split of all the GPUs (splits), and one fits
            out += [(replicas, p) for p in plans if p.gpus == size and (replicas, p) not in out]
    return out


# --- one option -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Curve:
    """Per batch b = 1..MAX_BATCH of one plan: TPOT, ITL, TTFT, memory, communication share."""

    tpot_s: np.ndarray
    """What the budget judges (Option.tpot_s)."""
    itl_s: np.ndarray
    """One decode step (Option.itl_s)."""
    ttft_s: np.ndarray
    mem_bytes: np.ndarray
    comm_share: np.ndarray
    seqs: np.ndarray
    """Sequences in flight per replica at each entry: pp micro-batches of b."""
    cycle_s: np.ndarray
    """Per token of one sequence with its own prompt's share (served.ServedCurve): seqs / cycle_s
    tokens/s per replica; equal to tpot_s where no prompts are mixed in."""
    fits: np.ndarray
    """Whether each entry fits as the engine counts memory (memory.fits)."""
    token: str = "TPOT"
    """What tpot_s is called where the budget binds it (request.Workload.judged)."""
    tokens_per_step: float = 1.0
    fraction: np.ndarray | None = None  # memory.raised_fraction per entry
    need: MemoryNeed | None = None  # what mem_bytes is made of (kv_cache per entry)

    def memory_at(self, i: int) -> dict | None:  # entry i's parts, as plan's rows give them
        return (
            None
            if self.need is None
            else {**self.need.to_dict(), "kv_cache": float(self.need.kv_cache[i]), "total": float(self.mem_bytes[i])}
        )


def _curve(sc: Scenario, p: Plan, *, work: Workload, prefill: Prefill | None = None) -> _Curve:
    b = np.arange(1, MAX_BATCH + 1, dtype=float)
    settings, gpu, engine = sc.settings, sc.system.gpu, sc.engine
    seqs = p.pp * b
    need = memory_need(
        sc.model,
        p,
        precision=sc.precision,
        engine=engine,
        batch=seqs,
        context=float(work.max_context),
        workspace_bytes=settings.workspace_bytes,
    )
    mem = need.total
    fit = memory_fits(need, gpu, engine=engine, plan=p, utilization=settings.memory_utilization)
    frac = raised_fraction(need, gpu, engine=engine, plan=p, utilization=settings.memory_utilization)
    yield_ = work.speculation.tokens_per_step if work.speculation else 1.0
    if work.context or prefill is not None:  # decode only: no prompts mixed in
        step, comm, _ = decode_per_token(sc, p, b=b, context=work.mean_context, spec=work.speculation)
        # disaggregated: prompts are prefilled elsewhere and handed over; --context: one prompt of the
        # context prefilled alone, as plan prices a decode-only row's TTFT (issue 34: one verdict)
        ttft = np.full_like(b, prefill.ttft_s if prefill is not None else sc.prompt_alone_s(p, work.context))
        return _Curve(step, step * yield_, ttft, mem, comm / step, seqs, step, fit, work.judged, yield_, frac, need)
    s = served_curve(sc, p, batch=b, input_len=work.input_len, output_len=work.output_len, spec=work.speculation)
    return _Curve(
        s.tpot_s,
        s.decode_s * yield_,
        s.ttft_s,
        mem,
        s.comm_s / s.tpot_s,
        seqs,
        s.cycle_s,
        fit,
        work.judged,
        yield_,
        frac,
        need,
    )


def _decode_curve(sc: Scenario, p: Plan, *, work: Workload, prefill: Prefill, memo: PriceMemo | None) -> _Curve:
    """A disaggregated decode plan's curve: decode steps alone, whatever the prefill side but its
    TTFT (constant over the batch), so a search prices it once per plan (memo.curves)."""
    if memo is None:
        return _curve(sc, p, work=work, prefill=prefill)
    if p not in memo.curves:
        memo.curves[p] = _curve(sc, p, work=work, prefill=prefill)
    c = memo.curves[p]
    return dataclasses.replace(c, ttft_s=np.full_like(c.itl_s, prefill.ttft_s))


def _option(
    replicas: int, p: Plan, c: _Curve, *, budgets: Budgets, batch: int | None = None, memory: bool = True
) -> Option:
    """The split at its largest batch within the budgets, or (`batch`) at that decode batch; without
    `memory`, its memory parts left out (a search's ranking, which never shows them)."""
    fits = c.fits
    itl_ok = c.tpot_s <= budgets.budget_s if budgets.budget_s is not None else np.ones_like(fits)
    ttft_ok = (
        ~(c.ttft_s > budgets.ttft_budget_s) if budgets.ttft_budget_s is not None else np.ones_like(fits)
    )  # NaN: no TTFT
    ok = fits & itl_ok & ttft_ok
    if batch is None:  # the batch grows while every smaller batch also meets the constraints
        n = int(np.argmin(ok)) if not ok.all() else MAX_BATCH
        i, runs, meets = max(n - 1, 0), n > 0, n > 0  # the largest good batch (or batch 1 for the closest miss)
    else:  # the batch given: it runs where it fits in memory, and meets the budgets or not
        n = i = batch - 1
        runs, meets = bool(fits[i]), bool(ok[i])
    binding = (
        "max-batch"
        if n == MAX_BATCH
        else "batch"
        if ok[n]
        else "memory"
        if not fits[n]
        else c.token.lower()
        if not itl_ok[n]
        else "ttft"
    )
    per_replica = float(c.seqs[i]) / c.cycle_s[i] if runs else 0.0  # no batch runs: no throughput
    return Option(
        replicas=replicas,
        tp=p.tp,
        pp=p.pp,
        ep=p.ep,
        dp=p.dp,
        max_batch=int(c.seqs[i]) if runs else 0,
        tpot_s=float(c.tpot_s[i]),
        itl_s=float(c.itl_s[i]),
        cycle_s=float(c.cycle_s[i]),
        ttft_s=float(c.ttft_s[i]),
        tokens_per_s=float(replicas * per_replica),
        tokens_per_s_per_gpu=float(per_replica / p.gpus),
        tokens_per_s_per_user=float(1 / c.tpot_s[i]) if runs else 0.0,
        mem_bytes_per_gpu=float(c.mem_bytes[i]),
        binding=binding,
        meets_budget=meets,
        comm_share=float(c.comm_share[i]),
        gpus_per_replica=p.gpus,
        tokens_per_step=c.tokens_per_step,
        memory_fraction=None if c.fraction is None or not runs or np.isnan(c.fraction[i]) else float(c.fraction[i]),
        memory=c.memory_at(i) if memory else None,
    )


# --- the sweep ------------------------------------------------------------------------------


def deploy(
    req: Request,
    *,
    gpus: int,
    disaggregate: tuple[int, int] | None = None,
    batch: int | None = None,
    memo: PriceMemo | None = None,
    launches: bool = True,
) -> DeployResult:
    """Every way to spend `gpus` GPUs on identical replicas, each at its largest batch within the
    budgets (or each at decode batch `batch`: a PP replica holds pp micro-batches of it); the best is
    the one with the most tokens/s per GPU. With `disaggregate` (P, D), P of the GPUs prefill and
    the replicas are over the other D (disagg.py). The request's scenario forces every all-reduce
    as plan's --impl does where it names one; its jitter (plan's --jitter) adds each option's p99
    ITL at its batch. Its nodes: None for as few as the GPUs need. split_search.deploy_searched
    searches the prefill:decode splits too (`--disaggregate auto`), and hands its `memo` here to
    price the winning split from what it priced; without `launches`, the result has no verdict and
    no launch lines yet (`with_launches` adds them: a search builds the winner's alone)."""
    sc, workload, budgets = req.scenario, req.served_workload, req.budgets
    cfg, sysm = sc.model, sc.system
    nodes = _nodes(sysm, gpus, sc.nodes)
    _check_request(req, workload)
    rated = checked_rates(sc.catalog, sysm, req.pricing)
    decode_gpus = _decode_gpus(gpus, disaggregate, workload, batch)
    options, curves, prefills = [], {}, {}
    side = (
        prefill_side(
            sc,
            gpus=disaggregate[0],
            input_len=workload.input_len,  # one for every decode plan
            candidates=splits(cfg, sysm, disaggregate[0], memo.plans if memo else None),
            memo=memo.prefill if memo else None,
        )
        if disaggregate
        else None
    )
    for replicas, p in splits(cfg, sysm, decode_gpus, memo.plans if memo else None):
        pre = (
            with_handoff(
                sc,
                *side,
                gpus=disaggregate[0],
                input_len=workload.input_len,
                decode_plan=p,
                decode_gpus=decode_gpus,
                memo=memo.handoffs if memo else None,
            )
            if side
            else None
        )
        c = _curve(sc, p, work=workload) if pre is None else _decode_curve(sc, p, work=workload, prefill=pre, memo=memo)
        opt = _option(replicas, p, c, budgets=budgets, batch=batch)
        if pre is not None:
            opt = _fed_by(opt, c, pre, workload, gpus)
        if req.jitter is not None:
            opt = _with_tail(opt, sc, p, work=workload, jitter=req.jitter, batch=batch)
        options.append(opt)
        curves[opt.label()] = _frontier_curve(c, opt)
        prefills[opt.label()] = pre
    if not disaggregate and not any(o.meets_budget for o in options):  # fewer GPUs, where they meet the budgets
        fewer = [
            _left(_option(r, p, _curve(sc, p, work=workload), budgets=budgets, batch=batch), gpus)
            for r, p in partial_splits(cfg, sysm, gpus)
        ]
        if any(o.meets_budget for o in fewer):
            fewer = [
                _with_tail(o, sc, Plan(o.tp, o.pp, o.ep, o.dp), work=workload, jitter=req.jitter, batch=batch)
                if req.jitter is not None
                else o
                for o in fewer
            ]
            options += fewer
            curves.update(
                {o.label(): _frontier_curve(_curve(sc, Plan(o.tp, o.pp, o.ep, o.dp), work=workload), o) for o in fewer}
            )
            prefills.update({o.label(): None for o in fewer})
    if not options:
        raise PlanError(
            f"no way to split {gpus} GPUs of {sysm.name} into replicas of {cfg.name}: no plan's "
            f"GPU count divides {gpus} (heads {cfg.num_heads}, KV heads {cfg.num_kv_heads})"
        )
    options = with_costs(options, rated, _rank)
    best = next((o for o in options if o.meets_budget), None)
    result = DeployResult(
        model=cfg.name,
        system=sysm.name,
        nodes=nodes,
        gpus=gpus,
        budget_s=budgets.budget_s,
        ttft_budget_s=budgets.ttft_budget_s,
        engine=sc.engine,
        workload=workload,
        options=tuple(options),
        best=best,
        pareto=tuple(pareto_front(curves, options)),
        curves=curves,
        prefill=prefills[best.label()].to_dict() if best and prefills[best.label()] else None,
        notes=tuple(sc.precision_notes),
        memory_utilization=sc.settings.memory_utilization,
        precision=sc.precision,
        chunk_tokens=CHUNK_TOKENS,
        batch=batch,
        impl=sc.impl,
        tail=req.jitter.describe() if req.jitter else None,
        nccl=nccl_words(sc.catalog, sc.engine),
        judged=workload.judged,
        judged_words=_judged_words(workload, disaggregate),
        engine_version=load_engine(sc.engine).version,
        moe_a2a=sc.settings.moe_a2a,
        costs=cost_view(rated, curves, options),
        without_speculation=_plain_best(req, workload, gpus=gpus, disaggregate=disaggregate, batch=batch),
    )
    return with_launches(req, result) if launches else result


def with_launches(req: Request, result: DeployResult) -> DeployResult:
    """The result with its verdict and its best option's launch lines."""
    sc = req.scenario
    return _with_words(result, *(build_launches(result, sc.model, sc.system, sc.catalog) if result.best else ({}, {})))


def _judged_words(work: Workload, disaggregate: tuple[int, int] | None) -> str:
    if disaggregate is None:
        return work.judged_words
    return (
        f"the budget judges the TPOT: time per output token of the decode side; its prompts are prefilled on "
        f"the other {disaggregate[0]} GPUs and handed over, none is mixed in, so the TPOT is the ITL"
    )


def _check_request(req: Request, workload: Workload) -> None:
    """Refuse what no option could serve: a sequence longer than the model's, an engine that does
    not run on the GPUs, a speculative method the model or engine lacks (launch.check_request), a
    tail under speculation (how many drafts a step accepts varies too, and is not modelled)."""
    sc = req.scenario
    if req.jitter is not None and workload.speculation is not None:
        raise PlanError(
            "--jitter with --speculative: a speculative token's tail also depends on how many drafts "
            "each step accepts, which is not modelled; drop one of them"
        )
    cfg = sc.model
    if cfg.max_position_embeddings and workload.max_context > cfg.max_position_embeddings:
        raise PlanError(
            f"a sequence of {workload.max_context} tokens exceeds {cfg.name}'s maximum of {cfg.max_position_embeddings}"
        )
    check_request(sc.engine, sc.system, cfg, workload.speculation)


def _rank(o: Option, objective: str = "throughput") -> tuple:
    """Best first: by `objective` among the options that meet the budgets (decide.cost.objective_key: by
    default the most tokens/s per GPU given), then the rest (the least judged time first)."""
    return (objective_key(objective, o), -o.tokens_per_s_per_user) if o.meets_budget else (math.inf, o.tpot_s)


def _left(o: Option, gpus: int) -> Option:
    return dataclasses.replace(o, gpus_left=gpus - o.replicas * o.gpus_per_replica)


def budget_options(
    req: Request, *, gpus: int, budgets_s: Sequence, batches: Sequence[int | None] = (None,)
) -> list[list[tuple[Option, ...]]]:
    """Per batch of `batches` (None: each option's largest within the budget), `deploy`'s options
    (best first) at each budget of `budgets_s` (on the request's judged time: TPOT served, ITL decode
    only), each split priced once (the report's controls)."""
    sc = req.scenario
    _nodes(sc.system, gpus, sc.nodes)
    for b in batches:
        _check_batch(b)
    curves = [(r, p, _curve(sc, p, work=req.served_workload)) for r, p in splits(sc.model, sc.system, gpus)]
    return [
        [
            tuple(sorted((_option(r, p, c, budgets=Budgets(budget_s=k), batch=b) for r, p, c in curves), key=_rank))
            for k in budgets_s
        ]
        for b in batches
    ]


def _plain_best(req: Request, workload: Workload, **question) -> Option | None:
    """The best option of the same request without speculation (None also when there is none)."""
    if workload.speculation is None:
        return None
    plain = dataclasses.replace(req, workload=dataclasses.replace(workload, speculation=None))
    return deploy(plain, **question).best


def _check_batch(batch: int | None) -> None:
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_BATCH):
        raise PlanError(f"batch must be a whole number from 1 to {MAX_BATCH} sequences, got {batch!r}")


def _decode_gpus(gpus: int, disaggregate: tuple[int, int] | None, work: Workload, batch: int | None) -> int:
    _check_batch(batch)
    if disaggregate is None:
        return gpus
    if batch is not None:
        raise PlanError(
            "give --batch or --disaggregate, not both: a disaggregated batch is what the prefill side feeds"
        )
    if work.context:
        raise PlanError("--disaggregate needs --input-len/--output-len (a prompt to hand over), not --context")
    if sum(disaggregate) != gpus:
        raise PlanError(
            f"--disaggregate {disaggregate[0]}:{disaggregate[1]} uses {sum(disaggregate)} GPUs, "
            f"not the {gpus} of --gpus"
        )
    return disaggregate[1]


def _fed_by(opt: Option, c: _Curve, pre: Prefill, work: Workload, gpus: int, memory: bool = True) -> Option:
    """A decode option under disaggregation, per GPU over all P + D GPUs. Where the prefill side
    cannot feed the largest batch (prompts/s x output_len tokens/s), the batch is the smallest that
    takes all it feeds, with that batch's (lower) ITL."""
    fed = pre.prompts_per_s * work.output_len
    fields = {f: getattr(opt, f) for f in opt.__dataclass_fields__}
    if not opt.meets_budget or fed >= opt.tokens_per_s:
        return Option(**{**fields, "tokens_per_s_per_gpu": opt.tokens_per_s / gpus})
    n = int(np.searchsorted(c.seqs, opt.max_batch, side="right"))  # entries up to the largest good batch
    takes = opt.replicas * c.seqs[:n] / c.cycle_s[:n] >= fed
    i = int(np.argmax(takes)) if takes.any() else n - 1
    tpot = float(c.tpot_s[i])
    return Option(
        **{
            **fields,
            "max_batch": int(c.seqs[i]),
            "tpot_s": tpot,
            "itl_s": float(c.itl_s[i]),
            "cycle_s": float(c.cycle_s[i]),
            "tokens_per_s": fed,
            "tokens_per_s_per_gpu": fed / gpus,
            "tokens_per_s_per_user": 1 / tpot,
            "mem_bytes_per_gpu": float(c.mem_bytes[i]),
            "memory": c.memory_at(i) if memory else None,
            "comm_share": float(c.comm_share[i]),
            "binding": "prefill",
        }
    )


def _with_tail(opt: Option, sc: Scenario, p: Plan, *, work: Workload, jitter: Jitter, batch: int | None) -> Option:
    """The option with its ITL's p99 at the decode batch it shows (a PP replica's micro-batch; batch
    1, or --batch, where none runs), from the function plan's rows use (Jitter.row_p99s): its decode
    step's collectives jitter, the rest of its ITL is fixed (as plan's p99 ITL column)."""
    b = opt.max_batch // opt.pp if opt.max_batch else (batch or 1)
    step = sc.step(p, "decode")
    return dataclasses.replace(opt, itl_p99_s=jitter.row_p99s(step, [b], work.mean_context, [opt.itl_s])[0])


def _nodes(system: System, gpus: int, nodes: int | None) -> int:
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise PlanError(f"--gpus must be a whole number of at least 1, got {gpus!r}")
    needed = math.ceil(gpus / system.gpus_per_node)
    nodes = needed if nodes is None else nodes
    check_nodes(system, nodes)
    if gpus > nodes * system.gpus_per_node:
        raise PlanError(
            f"{gpus} GPUs do not fit in {nodes} x {system.name} ({system.gpus_per_node} per node); "
            f"give --nodes {needed} or fewer --gpus"
        )
    if nodes > needed:
        # replicas are placed on whole nodes (a replica inside one node, or over whole nodes): what
        # is priced must be what the header says, so fewer GPUs than the nodes hold is refused
        # rather than priced on `needed` nodes under a header of `nodes`
        raise PlanError(
            f"{gpus} GPUs fill {needed} x {system.name} ({system.gpus_per_node} per node), not {nodes}: "
            f"deploy places replicas on whole nodes; give --nodes {needed}, or --gpus "
            f"{nodes * system.gpus_per_node} for {nodes} nodes"
        )
    return nodes


def _frontier_curve(c: _Curve, opt: Option) -> tuple[np.ndarray, np.ndarray]:
    fit = c.fits
    return 1 / c.tpot_s[fit], c.seqs[fit] / c.cycle_s[fit] / opt.gpus_per_replica


def _with_words(r: DeployResult, launches: dict, skipped: dict) -> DeployResult:
    """The result with its verdict and the commands of its best option: each engine's text, or why
    it cannot run it."""
    text = {e: launches[e].text() if e in launches else f"# not run: {skipped[e]}" for e in (*launches, *skipped)}
    return DeployResult(
        **{
            **{f: getattr(r, f) for f in r.__dataclass_fields__},
            "launch": text,
            "launches": launches,
            "verdict": verdict_text(r),
        }
    )


__all__ = [
    "DeployResult",
    "MAX_BATCH",
    "Option",
    "Workload",
    "budget_options",
    "deploy",
    "pareto_front",
    "splits",
    "verdict_text",
]
