"""Sweep parallel plans and answer the question: how far can this model be sharded on this fabric?

For each batch size the planner prices every valid plan (TP x PP x EP x data-parallel attention):
inter-token latency (ITL) with its compute, communication and host parts, TTFT, memory per GPU;
`verdicts.judge` then gives the verdicts over all of them (fits, meets budget, latency-optimal,
sharded too far, comm-bound; each defined once in `verdicts`). The BatchResult keeps the summary
numbers: min_tp_memory (smallest TP of a plan that fits), max_tp_budget (largest TP of a plan that
meets every budget), best_tp and best_plan (the latency-optimal plan).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..comm.op import busbw_factor
from ..comm.custom_kernels import custom_allreduce_allowed
from ..engines.presets import load_engine
from ..errors import PlanError
from ..fabric.hardware import System
from ..step.memory import fits as memory_fits
from ..step.memory import memory_need, usable_bytes
from ..model import ModelConfig, Plan
from ..model.plan import check_degree, check_tp
from ..step.price_comm import tp_group
from ..step.scenario import Scenario
from ..step.settings import Efficiency, PlanSettings
from ..units import format_rate, format_seconds
from .release_words import nccl_words
from .request import Budgets, Request, Workload
from .verdicts import Row, Thresholds, Verdict, judge

if TYPE_CHECKING:  # tail_plan reads logs; only plan --jitter needs it loaded
    from .tail_plan import Jitter


@dataclass(frozen=True)
class BatchResult:
    batch: int
    rows: tuple[Row, ...]
    min_tp_memory: int | None
    """The smallest TP of any plan that fits (its PP may be > 1)."""
    max_tp_budget: int | None
    """The largest TP of any plan that meets every budget."""
    best_tp: int | None
    """The latency-optimal plan's TP."""
    verdict: str
    min_gpus_memory: int | None = None
    """The fewest GPUs of any plan that fits."""
    judgement: Verdict | None = None
    """Every verdict with the rows it points at (verdicts.Verdict): what plan, report, explain and the
    figures all read."""

    @property
    def best_plan(self) -> dict | None:
        return self.judgement.best_plan if self.judgement else None

    def to_dict(self) -> dict:
        return {
            "batch": self.batch,
            "rows": [r.to_dict() for r in self.rows],
            "min_tp_memory": self.min_tp_memory,
            "max_tp_budget": self.max_tp_budget,
            "best_tp": self.best_tp,
            "best_plan": self.best_plan,
            "min_gpus_memory": self.min_gpus_memory,
            "verdict": self.verdict,
        }


@dataclass(frozen=True, kw_only=True)
class Assumptions:
    """What a plan's numbers rest on, as its header, the report's assumptions and --json state them."""

    efficiency: Efficiency
    settings: PlanSettings
    memory_utilization: float
    """Share of the GPU's memory the engine may use, as priced."""
    impl: str | None
    engine: str
    engine_version: str | None
    nccl: str
    """The NCCL release priced, in the header's words (release_words.nccl_words)."""
    allreduce: dict[str, str]
    """Per TP degree ('TP8'), what runs its all-reduce: the engine's size ranges, or the forced kernel."""
    weight_dtype: str
    kv_dtype: str
    act_dtype: str
    comm_threshold: float
    knee_threshold: float
    ttft: str
    gpu: str
    intra_fabric: str
    nic: str | None
    expert_dtype: str | None
    compute_dtype: str | None
    notes: tuple[str, ...]
    tail: str | None
    """What the rows' p99 ITLs come from (--jitter), or None."""
    tpot: str
    """What the latency columns answer: decode only, or the served TPOT too."""
    judged: str = "ITL"
    """What the budget and every verdict judge: ITL (decode only) or TPOT (a served workload)."""

    def to_dict(self) -> dict:
        eff = {**self.efficiency.to_dict(), **self.settings.to_dict(), "memory_utilization": self.memory_utilization}
        return {
            "efficiency": eff,
            "impl": self.impl,
            "engine": self.engine,
            "engine_version": self.engine_version,
            "nccl": self.nccl,
            "allreduce": dict(self.allreduce),
            "weight_dtype": self.weight_dtype,
            "kv_dtype": self.kv_dtype,
            "act_dtype": self.act_dtype,
            "comm_threshold": self.comm_threshold,
            "knee_threshold": self.knee_threshold,
            "ttft": self.ttft,
            "gpu": self.gpu,
            "intra_fabric": self.intra_fabric,
            "nic": self.nic,
            "expert_dtype": self.expert_dtype,
            "compute_dtype": self.compute_dtype,
            "notes": list(self.notes),
            "tail": self.tail,
            "tpot": self.tpot,
            "judged": self.judged,
        }


@dataclass(frozen=True)
class PlanResult:
    model: str
    system: str
    nodes: int
    context: int
    budget_s: float | None
    ttft_budget_s: float | None
    impl: str
    dtype: str
    results: tuple[BatchResult, ...]
    assumptions: Assumptions

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "system": self.system,
            "nodes": self.nodes,
            "context": self.context,
            "budget_s": self.budget_s,
            "ttft_budget_s": self.ttft_budget_s,
            "impl": self.impl,
            "dtype": self.dtype,
            "expert_dtype": self.assumptions.expert_dtype or self.dtype,
            "results": [r.to_dict() for r in self.results],
            "assumptions": self.assumptions.to_dict(),
        }


# --- which plans are valid ------------------------------------------------------------------


def _tp_problem(cfg: ModelConfig, tp: int) -> str | None:
    """Why the model's heads refuse this TP degree (as engines refuse it), or None."""
    try:
        check_tp(cfg, tp)
        return None
    except PlanError as err:
        return str(err)


def _tp_degrees(system: System, total: int) -> list[int]:
    """TP degrees worth sweeping: powers of two, and whole nodes (TP beyond one node spans whole
    nodes of the scale-out network), up to every GPU of the nodes."""
    gpn = system.gpus_per_node
    powers = {2**k for k in range(0, 17) if 2**k <= total}
    whole_nodes = {gpn * k for k in range(1, total // gpn + 1)}
    return sorted(t for t in powers | whole_nodes if t <= gpn or t % gpn == 0)


def _dp_attention_ok(cfg: ModelConfig, tp: int) -> bool:
    """Data-parallel attention (dp = ep = tp) needs experts that divide over the group, not heads."""
    return cfg.is_moe and tp > 1 and cfg.num_experts % tp == 0


def plan_notes(cfg: ModelConfig, system: System, nodes: int, plans: Sequence[Plan] = ()) -> list[str]:
    """What the sweep left out and why, and where KV heads are replicated (as vLLM does)."""
    total = nodes * system.gpus_per_node
    notes = []
    for tp in (2**k for k in range(1, 17)):
        if tp > total:
            break
        if tp > system.gpus_per_node and tp % system.gpus_per_node:
            notes.append(f"TP{tp} skipped: TP beyond one node must span whole nodes of {system.gpus_per_node} GPUs")
        elif (why := _tp_problem(cfg, tp)) is not None:
            offered = (
                " (offered with data-parallel attention, which needs no head split)"
                if _dp_attention_ok(cfg, tp)
                else ""
            )
            notes.append(f"TP{tp} skipped: {why}{offered}")
        elif not cfg.is_mla and tp > cfg.num_kv_heads:
            notes.append(
                f"TP{tp}: {cfg.num_kv_heads} KV heads for {tp} GPUs, so each KV head is replicated on "
                f"{tp // cfg.num_kv_heads} GPUs (KV cache and K/V weights per GPU stop shrinking)"
            )
    used = max((p.gpus for p in plans), default=total)
    if used < total:
        notes.append(f"no valid plan uses all {total} GPUs: the largest uses {used}")
    return notes


def valid_plans(cfg: ModelConfig, system: System, nodes: int, *, pp_all: bool = False) -> list[Plan]:
    """Every plan the model and the nodes allow: TP over `_tp_degrees` where the heads divide; PP of
    any degree that completes the cluster (every degree that fits with `pp_all`), at most one stage
    per layer; for MoE models also EP = TP, and data-parallel attention (dp = ep = tp) wherever the
    experts divide over the group."""
    total = nodes * system.gpus_per_node
    plans: list[Plan] = []
    for tp in _tp_degrees(system, total):
        heads_ok, dp_ok = _tp_problem(cfg, tp) is None, _dp_attention_ok(cfg, tp)
        pps = [
            pp for pp in range(1, total // tp + 1) if pp <= cfg.num_layers and (pp == 1 or pp_all or tp * pp == total)
        ]
        for pp in pps:
            if heads_ok:
                plans.append(Plan(tp, pp, 1))
                if dp_ok:
                    plans.append(Plan(tp, pp, tp))
            if dp_ok:
                plans.append(Plan(tp, pp, tp, tp))  # attention data-parallel, experts over EP
    if not plans:
        raise PlanError(
            f"no valid TP degree for {cfg.name} on {total} GPUs of {system.name} "
            f"(num_attention_heads {cfg.num_heads}, num_key_value_heads {cfg.num_kv_heads})"
        )
    return plans


# --- the sweep ------------------------------------------------------------------------------


def plan_rows(req: Request, p: Plan, batches) -> list[Row]:
    """The rows of one plan at these batches (floats allowed: a measured mean in flight) under the
    request's workload, priced as `plan` prices its rows (check's serving runs)."""
    work = req.decode_workload
    return _plan_rows(
        req.scenario,
        p,
        batches=np.asarray(batches, dtype=float),
        context=shown_context(work),
        budgets=req.budgets,
        served=work.served,
    )


def plan(req: Request) -> PlanResult:
    """Sweep the valid plans for each batch size of the request and give the verdicts (module docstring).

    Without a workload, decode at the default context: each row's ITL is one decode step with that
    many tokens cached, its TTFT the prefill of one prompt that long. With a served workload
    (input_len / output_len), each row also has the served TPOT (step.served, as deploy prices it),
    which the budget and every verdict then judge (request.Workload.judged), its communication share
    counting the mixed prompts' collectives; the decode step (ITL) is at the mean context
    input + output / 2, memory at input + output, TTFT a new prompt's chunks in the batch's steps."""
    sc, work = req.scenario, req.decode_workload
    if work.speculation is not None:
        raise PlanError("plan prices plain decode: speculative decoding is deploy's (--speculative)")
    req.check_length(work)
    cfg, sysm, nodes = sc.model, sc.system, sc.node_count
    served, context = work.served, shown_context(work)
    plans = valid_plans(cfg, sysm, nodes, pp_all=req.pp_all)
    batch_arr = np.asarray(req.batches, dtype=float)
    rows_by_plan = {
        p: _plan_rows(sc, p, batches=batch_arr, context=context, budgets=req.budgets, jitter=req.jitter, served=served)
        for p in plans
    }
    usable = usable_bytes(sysm.gpu, engine=sc.engine, plan=Plan(1), utilization=sc.settings.memory_utilization)
    results = [
        _batch_result(
            int(b),
            [rows_by_plan[p][i] for p in plans],
            _Where(cfg, sysm, nodes),
            req.budgets,
            usable_bytes=usable,
            token=work.judged,
        )
        for i, b in enumerate(req.batches)
    ]
    return PlanResult(
        model=cfg.name,
        system=sysm.name,
        nodes=nodes,
        context=context,
        budget_s=req.budgets.budget_s,
        ttft_budget_s=req.budgets.ttft_budget_s,
        impl=sc.impl,
        dtype=sc.dtype or sc.precision.weights,
        results=tuple(results),
        assumptions=_assumptions(req, plans, usable, served, context),
    )


def shown_context(work: Workload) -> int:
    """The context a plan's header names: the decode-only context, or a served request's mean
    (input + output // 2; its steps are priced at input + output / 2)."""
    served = work.served
    return served[0] + served[1] // 2 if served else work.context


def _assumptions(
    req: Request, plans: Sequence[Plan], usable: float, served: tuple[int, int] | None, context: int
) -> Assumptions:
    sc, b = req.scenario, req.budgets
    sysm, precision = sc.system, sc.precision
    return Assumptions(
        efficiency=sc.eff,
        settings=sc.settings,
        memory_utilization=usable / sysm.gpu.memory_bytes,
        impl=sc.impl,
        engine=sc.engine,
        engine_version=load_engine(sc.engine).version,
        nccl=nccl_words(sc.catalog, sc.engine),
        allreduce=allreduce_words(sc, plans),
        weight_dtype=precision.weights,
        kv_dtype=precision.kv_dtype,
        act_dtype=precision.activations,
        comm_threshold=b.comm_threshold,
        knee_threshold=b.knee_threshold,
        ttft=f"prefill of one {served[0] if served else context}-token prompt",
        gpu=sysm.gpu.name,
        intra_fabric=sysm.intra_fabric.name,
        nic=f"{sysm.nics_per_node}x {sysm.nic_fabric.name}" if sysm.nic_fabric else None,
        expert_dtype=precision.expert_dtype,
        compute_dtype=precision.compute_dtype,
        notes=tuple(sc.precision_notes) + tuple(plan_notes(sc.model, sysm, sc.node_count, plans)),
        tail=req.jitter.describe() if req.jitter else None,
        tpot=served_words(served, context),
        judged=req.decode_workload.judged,
    )


def allreduce_words(sc: Scenario, plans: Sequence[Plan]) -> dict:
    """What runs each plan's TP all-reduce, per TP degree: the engine's size ranges ('< 256 KiB:
    one-shot; ...'), or the forced implementation."""
    out = {}
    # one plan per TP degree: pure TP where the heads allow it, else its data-parallel-attention plan
    by_tp = {q.tp: Plan(q.tp, 1, q.ep, q.dp) for q in sorted(plans, key=lambda q: -q.dp) if q.tp > 1}
    for p in sorted(by_tp.values(), key=lambda q: q.tp):
        if sc.impl is not None:
            out[f"TP{p.tp}"] = _forced_words(sc.impl, tp_group(sc.system, p, sc.catalog))
            continue
        out[f"TP{p.tp}"] = f"{sc.engine}: {sc.step(p).allreduce_ranges.describe()}"
    return out


def _forced_words(impl: str, group) -> str:
    """'custom (forced by --impl)', or, where the custom kernels cannot run on the group, what is
    priced instead: NCCL (the same candidates CommPricer prices with)."""
    why = custom_allreduce_allowed(group, impl) if impl != "nccl" else None
    if why is None:
        return f"{impl} (forced by --impl)"
    return f"NCCL: --impl {impl} cannot run here ({why})"


def served_words(served: tuple[int, int] | None, context: int) -> str:
    """What the plan's latency columns answer: decode only, or the served TPOT too."""
    if served is None:
        return (
            f"decode only: ITL is one decode step at context {context}, no prompts mixed in; the budget and every "
            f"verdict judge the ITL (give --input-len/--output-len for the served TPOT)"
        )
    i, o = served
    return (
        f"served at input {i} / output {o} tokens: ITL is the decode step alone (at context {i + o // 2}), TPOT "
        f"the decode step with the other requests' prompts mixed in (chunked prefill), as deploy prices it; the "
        f"budget and every verdict judge the TPOT; compute, comm and host split the TPOT (comm counts the "
        f"prompts' collectives); TTFT is a new prompt's chunks in the batch's steps"
    )


def _plan_rows(
    sc: Scenario,
    p: Plan,
    *,
    batches: np.ndarray,
    context: int,
    budgets: Budgets,
    jitter: Jitter | None = None,
    served: tuple[int, int] | None = None,
) -> list[Row]:
    """One Row per batch size for plan `p`: decode ITL and its parts, TTFT, memory, fits, meets, and
    the ITL's p99 where `jitter` gives measured per-iteration times."""
    settings = sc.settings
    decode = sc.step(p, "decode")
    at = served[0] + served[1] / 2 if served else float(context)  # the mean context a served request sees
    dec = decode.evaluate(batches, at)
    calls = decode.tp_allreduces(batches, at)  # the TP all-reduce each row was priced with
    p99s = jitter.row_p99s(decode, batches, at, dec.total_s) if jitter else [None] * len(batches)
    need = memory_need(
        sc.model,
        p,
        precision=sc.precision,
        engine=sc.engine,
        batch=batches,
        context=float(sum(served) if served else context),
        workspace_bytes=settings.workspace_bytes,
    )
    mem = need.total
    ok = memory_fits(need, sc.system.gpu, engine=sc.engine, plan=p, utilization=settings.memory_utilization)
    if served:  # TPOT and TTFT at each batch as deploy prices them (a prompt's chunks ride in the batch's steps)
        from ..step.served import served_curve  # only here: plan's start-up loads neither it nor speculative

        curve = served_curve(sc, p, batch=batches, input_len=served[0], output_len=served[1])
        tpots, tpot_comms, ttfts = curve.tpot_s, curve.comm_s, curve.ttft_s
    else:  # one prompt of `context` tokens prefilled alone
        ttft = sc.prompt_alone_s(p, context)
        tpots, tpot_comms, ttfts = [None] * len(batches), [None] * len(batches), [ttft] * len(batches)
    rows = []
    for i in range(len(batches)):
        itl, comm, fits, ttft = float(dec.total_s[i]), float(dec.comm_s[i]), bool(ok[i]), float(ttfts[i])
        # the budget judges the TPOT where prompts are served, else the ITL (request.Workload.judged)
        tpot = None if tpots[i] is None else float(tpots[i])
        tpot_comm = None if tpot_comms[i] is None else float(tpot_comms[i])
        judged, judged_comm = (itl, comm) if tpot is None else (tpot, tpot_comm)
        meets = (
            fits
            and (budgets.budget_s is None or judged <= budgets.budget_s)
            and (budgets.ttft_budget_s is None or ttft <= budgets.ttft_budget_s)
        )
        rows.append(
            Row(
                tp=p.tp,
                pp=p.pp,
                ep=p.ep,
                dp=p.dp,
                itl_s=itl,
                compute_s=float(dec.compute_s[i]),
                comm_s=comm,
                comm_share=judged_comm / judged if judged else 0.0,
                comm_latency_s=float(dec.comm_latency_s[i]),
                other_s=float(dec.other_s[i]),
                ttft_s=ttft,
                mem_bytes_per_gpu=float(mem[i]),
                fits_memory=fits,
                meets_budget=meets,
                memory={**need.to_dict(), "kv_cache": float(need.kv_cache[i]), "total": float(mem[i])},
                itl_p99_s=p99s[i],
                tpot_s=tpot,
                tpot_comm_s=tpot_comm,
                allreduce=calls[i],
            )
        )
    return rows


@dataclass(frozen=True)
class _Where:
    """The model, system and node count a verdict speaks of."""

    cfg: ModelConfig
    system: System
    nodes: int

    def text(self) -> str:
        name = f"{self.nodes} x {self.system.name}" if self.nodes > 1 else self.system.name
        return f"{self.cfg.name} on {name}"


def _batch_result(
    batch: int, rows: list[Row], where: _Where, budgets: Budgets, *, usable_bytes: float, token: str
) -> BatchResult:
    v = judge(
        batch,
        rows,
        where=where.text(),
        gpu_memory_bytes=where.system.gpu.memory_bytes,
        usable_bytes=usable_bytes,
        limits=Thresholds(
            budget_s=budgets.budget_s,
            ttft_budget_s=budgets.ttft_budget_s,
            comm_threshold=budgets.comm_threshold,
            knee_threshold=budgets.knee_threshold,
            token=token,
        ),
    )
    fitting = [r for r in v.rows if r.fits_memory]
    return BatchResult(
        batch=batch,
        rows=v.rows,
        min_tp_memory=min((r.tp for r in fitting), default=None),
        max_tp_budget=v.largest_tp_within_budget.tp if v.largest_tp_within_budget else None,
        best_tp=v.best.tp if v.best else None,
        verdict=v.text,
        judgement=v,
        min_gpus_memory=v.smallest.gpus if v.smallest else None,
    )


# --- the inverse question -------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Requirement:
    """What the fabric would need for `tp` to meet the budget."""

    model: str
    system: str
    tp: int
    nodes: int
    batch: int
    budget_s: float
    itl_s: float
    compute_s: float
    comm_s: float
    calls_per_step: int
    comm_budget_s: float
    current_latency_per_call_s: float
    required_latency_per_call_s: float | None
    """Per-call latency (all hops) that would fit, keeping today's bandwidth; None if impossible."""
    current_busbw_bytes_per_s: float
    required_busbw_bytes_per_s: float | None
    """Bus bandwidth that would fit, keeping today's latency; None if latency alone breaks the budget."""
    explanation: str

    def to_dict(self) -> dict:
        return asdict(self)


def required_fabric(req: Request, tp: int) -> Requirement:
    """What the fabric would need for TP `tp` to meet the request's budget at its first batch:
    solve ITL = compute + Σ_calls (latency + bytes/bandwidth) <= budget for the fabric terms."""
    sc, budget_s, batch = req.scenario, req.budgets.budget_s, req.batches[0]
    cfg, sysm, nodes = sc.model, sc.system, sc.node_count
    if budget_s is None:
        raise PlanError("--require-tp asks what the fabric needs to meet a budget: give --budget, not 'none'")
    check_degree("tp", tp)
    if tp > nodes * sysm.gpus_per_node:
        raise PlanError(f"TP{tp} needs {tp} GPUs but {nodes} x {sysm.name} has {nodes * sysm.gpus_per_node}")
    context = shown_context(req.decode_workload)
    sm = sc.step(Plan(tp, 1, 1))
    st = sm.step(batch, context)
    calls = sm.collective_calls(batch, context)
    n_calls = sum(c.count for c in calls)
    comm_budget = budget_s - st.compute_s - st.other_s  # what is left for the collectives
    lat = st.comm_latency_s
    bw_time = st.comm_s - lat
    bus_bytes = sum(c.count * c.msg_bytes * busbw_factor("all-reduce", tp) for c in calls)
    common = dict(
        model=cfg.name,
        system=sysm.name,
        tp=tp,
        nodes=nodes,
        batch=batch,
        budget_s=budget_s,
        itl_s=st.total_s,
        compute_s=st.compute_s,
        comm_budget_s=comm_budget,
        current_busbw_bytes_per_s=bus_bytes / bw_time if bw_time > 0 else math.inf,
    )
    if n_calls == 0:
        return Requirement(
            **common,
            comm_s=0.0,
            calls_per_step=0,
            current_latency_per_call_s=0.0,
            required_latency_per_call_s=None,
            required_busbw_bytes_per_s=None,
            explanation="TP1 inserts no collectives.",
        )
    req_lat = (comm_budget - bw_time) / n_calls if comm_budget > bw_time else None
    req_bw = bus_bytes / (comm_budget - lat) if comm_budget > lat else None
    text = _requirement_text(
        sysm,
        tp=tp,
        st=st,
        n_calls=n_calls,
        comm_budget=comm_budget,
        bw_time=bw_time,
        req_lat=req_lat,
        req_bw=req_bw,
        budget_s=budget_s,
    )
    return Requirement(
        **common,
        comm_s=st.comm_s,
        calls_per_step=int(n_calls),
        current_latency_per_call_s=lat / n_calls,
        required_latency_per_call_s=req_lat,
        required_busbw_bytes_per_s=req_bw,
        explanation=text,
    )


def _requirement_text(
    sysm: System,
    *,
    tp: int,
    st,
    n_calls: float,
    comm_budget: float,
    bw_time: float,
    req_lat: float | None,
    req_bw: float | None,
    budget_s: float,
) -> str:
    lat = st.comm_latency_s
    if st.total_s <= budget_s:
        slack = budget_s - st.total_s
        return (
            f"TP{tp} already meets the {format_seconds(budget_s)} budget at {format_seconds(st.total_s)}: "
            f"{format_seconds(slack)} of headroom ({100 * slack / budget_s:.0f}% of the budget). Its "
            f"{n_calls} collectives could each take {format_seconds(slack / n_calls)} longer, or the fabric "
            f"could be {_slower_factor(st, slack)} slower in latency, before TP{tp} misses it."
        )
    if comm_budget <= 0:
        return (
            f"Compute and host overhead alone take {format_seconds(st.compute_s + st.other_s)}, more than the "
            f"{format_seconds(budget_s)} budget: no fabric can make TP{tp} fit."
        )
    text = (
        f"TP{tp} leaves {format_seconds(comm_budget)} for {n_calls} collectives per token "
        f"({format_seconds(comm_budget / n_calls)} each). Today each costs "
        f"{format_seconds(lat / n_calls)} of latency plus {format_seconds(bw_time / n_calls)} of transfer. "
    )
    if req_lat is not None:
        ratio = req_lat / (lat / n_calls)
        fabric = sysm.nic_fabric if tp > sysm.gpus_per_node and sysm.nic_fabric else sysm.intra_fabric
        hop = fabric.hop_latency_s["ll"]
        text += (
            f"Keeping today's bandwidth, each call's latency must fall to {format_seconds(req_lat)} "
            f"({100 * ratio:.0f}% of today's: e.g. the {fabric.name} per-hop latency from "
            f"{format_seconds(hop)} to {format_seconds(hop * ratio)}, with NCCL's base latency scaled alike). "
        )
    else:
        text += "No latency is small enough with today's bandwidth. "
    return text + (
        f"Keeping today's latency, bus bandwidth must reach {format_rate(req_bw)}."
        if req_bw is not None
        else "With today's per-call latency no bandwidth is enough: latency alone breaks the budget."
    )


def _slower_factor(st, slack: float) -> str:
    """How many times today's collective latency the budget's slack allows ('2.3x')."""
    if st.comm_latency_s <= 0:
        return "any amount"
    return f"{(st.comm_latency_s + slack) / st.comm_latency_s:.1f}x"


__all__ = [
    "Assumptions",
    "BatchResult",
    "PlanResult",
    "Requirement",
    "Row",
    "plan",
    "plan_rows",
    "required_fabric",
    "shown_context",
    "valid_plans",
]
