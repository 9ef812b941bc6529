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
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..comm.op import busbw_factor
from ..comm.collectives import IMPLS
from ..comm.custom_kernels import custom_allreduce_allowed
from ..dtypes import canonical
from ..engines.presets import load_engine
from ..engines.release import engine_catalog
from ..errors import PlanError, UnknownNameError
from ..fabric.hardware import Catalog, System
from ..fabric.catalog import load_catalog
from ..step.memory import fits as memory_fits
from ..step.memory import memory_need, usable_bytes
from ..model import ModelConfig, Plan, Precision, load_model
from ..model import default_precision as model_default_precision
from ..model.plan import check_tp
from ..step.settings import DEFAULT_ENGINE, Efficiency, PlanSettings, engine_efficiency
from ..step.compose import compile_step
from ..step.price_comm import tp_group
from ..units import format_rate, format_seconds
from .release_words import nccl_words
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
        return {"batch": self.batch, "rows": [r.to_dict() for r in self.rows], "min_tp_memory": self.min_tp_memory,
                "max_tp_budget": self.max_tp_budget, "best_tp": self.best_tp, "best_plan": self.best_plan,
                "min_gpus_memory": self.min_gpus_memory,
                "verdict": self.verdict}


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
    assumptions: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"model": self.model, "system": self.system, "nodes": self.nodes, "context": self.context,
                "budget_s": self.budget_s, "ttft_budget_s": self.ttft_budget_s, "impl": self.impl,
                "dtype": self.dtype, "expert_dtype": self.assumptions.get("expert_dtype") or self.dtype,
                "results": [r.to_dict() for r in self.results],
                "assumptions": self.assumptions}


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
    powers = {2 ** k for k in range(0, 17) if 2 ** k <= total}
    whole_nodes = {gpn * k for k in range(1, total // gpn + 1)}
    return sorted(t for t in powers | whole_nodes if t <= gpn or t % gpn == 0)


def _dp_attention_ok(cfg: ModelConfig, tp: int) -> bool:
    """Data-parallel attention (dp = ep = tp) needs experts that divide over the group, not heads."""
    return cfg.is_moe and tp > 1 and cfg.num_experts % tp == 0


def plan_notes(cfg: ModelConfig, system: System, nodes: int, plans: Sequence[Plan] = ()) -> list[str]:
    """What the sweep left out and why, and where KV heads are replicated (as vLLM does)."""
    total = nodes * system.gpus_per_node
    notes = []
    for tp in (2 ** k for k in range(1, 17)):
        if tp > total:
            break
        if tp > system.gpus_per_node and tp % system.gpus_per_node:
            notes.append(f"TP{tp} skipped: TP beyond one node must span whole nodes of {system.gpus_per_node} GPUs")
        elif (why := _tp_problem(cfg, tp)) is not None:
            offered = " (offered with data-parallel attention, which needs no head split)" \
                if _dp_attention_ok(cfg, tp) else ""
            notes.append(f"TP{tp} skipped: {why}{offered}")
        elif not cfg.is_mla and tp > cfg.num_kv_heads:
            notes.append(f"TP{tp}: {cfg.num_kv_heads} KV heads for {tp} GPUs, so each KV head is replicated on "
                         f"{tp // cfg.num_kv_heads} GPUs (KV cache and K/V weights per GPU stop shrinking)")
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
        pps = [pp for pp in range(1, total // tp + 1) if pp <= cfg.num_layers
               and (pp == 1 or pp_all or tp * pp == total)]
        for pp in pps:
            if heads_ok:
                plans.append(Plan(tp, pp, 1))
                if dp_ok:
                    plans.append(Plan(tp, pp, tp))
            if dp_ok:
                plans.append(Plan(tp, pp, tp, tp))  # attention data-parallel, experts over EP
    if not plans:
        raise PlanError(f"no valid TP degree for {cfg.name} on {total} GPUs of {system.name} "
                        f"(num_attention_heads {cfg.num_heads}, num_key_value_heads {cfg.num_kv_heads})")
    return plans


# --- the sweep ------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Budgets:
    """What a plan must meet and the thresholds of the verdicts, validated once for every caller."""

    budget_s: float | None = 0.030
    """Inter-token latency budget, seconds (None: no budget)."""
    ttft_budget_s: float | None = None
    comm_threshold: float = 0.30
    """Communication share of the ITL above which a plan is flagged comm-bound (a warning)."""
    knee_threshold: float = 0.10
    """Gain below which the next TP is not worth it (the latency-optimal TP)."""

    def __post_init__(self) -> None:
        for name, v in (("budget (--budget)", self.budget_s), ("ttft budget (--ttft-budget)", self.ttft_budget_s)):
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise PlanError(f"{name} must be a positive time, got {v!r}")
        for name, v in (("comm_threshold (--comm-threshold)", self.comm_threshold),
                        ("knee_threshold (--knee-threshold)", self.knee_threshold)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
                raise PlanError(f"{name} must be between 0 and 1, got {v!r}")


def validate_request(cfg: ModelConfig, batches: Sequence[int], context: int) -> None:
    """Batch sizes and context a model can be asked about, or a one-line PlanError."""
    for b in batches:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1:
            raise PlanError(f"batch must be a whole number of at least 1, got {b!r}")
    if not isinstance(context, (int, np.integer)) or isinstance(context, bool) or context < 1:
        raise PlanError(f"context must be a whole number of tokens, at least 1, got {context!r}")
    if cfg.max_position_embeddings and context > cfg.max_position_embeddings:
        raise PlanError(f"context {context} exceeds {cfg.name}'s maximum of {cfg.max_position_embeddings} tokens")


def check_nodes(system: System, nodes: int) -> None:
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise PlanError(f"nodes must be a whole number of at least 1, got {nodes!r}")
    if nodes > 1 and system.nic_fabric is None:
        raise PlanError(f"system {system.name!r} has no scale-out network; it cannot span {nodes} nodes")


def check_impl(impl: str | None) -> str | None:
    """nccl or custom (forced for every all-reduce), or None: the engine decides."""
    if impl is not None and impl not in IMPLS:
        raise UnknownNameError("implementation", impl, IMPLS)
    return impl


def precision_for(cfg: ModelConfig, system: System, dtype: str | None = None,
                  kv_dtype: str | None = None) -> tuple[Precision, tuple[str, ...]]:
    """The checkpoint's own precision (its quantization_config and torch_dtype), or every weight in
    `dtype`; the KV cache in `kv_dtype` or else the activation dtype (engines' 'auto'); formats the
    GPU has no tensor cores for priced weight-only. With notes that say what was chosen and why."""
    if dtype is not None:
        dtype = canonical(dtype)
    return model_default_precision(cfg, system.gpu, dtype_override=dtype, kv_override=kv_dtype)


def plan(model: str | ModelConfig, system: str | System, *, nodes: int = 1, batches: Sequence[int] = (1,),
         context: int | None = None, budget_s: float | None = 0.030, ttft_budget_s: float | None = None,
         impl: str | None = None, engine: str = DEFAULT_ENGINE, dtype: str | None = None, kv_dtype: str | None = None,
         eff: Efficiency | None = None, settings: PlanSettings = PlanSettings(), comm_threshold: float = 0.30, knee_threshold: float = 0.10,
         pp_all: bool = False, jitter: Jitter | None = None, catalog: Catalog | None = None,
         input_len: int | None = None, output_len: int | None = None) -> PlanResult:
    """Sweep the valid plans for each batch size and give the verdicts (see module docstring).

    context: tokens cached per sequence for the decode ITL and the TTFT prompt (default 4096).
    input_len, output_len: a served workload instead: each row also has the served TPOT
    (step.served, as deploy prices it); the decode step (ITL, which the verdicts judge) is at the
    mean context input + output / 2, memory at input + output, TTFT a prompt of input_len."""
    catalog = engine_catalog(catalog or load_catalog(), engine)
    cfg = load_model(model) if isinstance(model, str) else model
    sysm = catalog.system(system) if isinstance(system, str) else system
    check_nodes(sysm, nodes)
    budgets = Budgets(budget_s=budget_s, ttft_budget_s=ttft_budget_s, comm_threshold=comm_threshold,
                      knee_threshold=knee_threshold)
    served = check_served(cfg, input_len, output_len)
    if served and context is not None:
        raise PlanError("--context is the decode-only question; --input-len/--output-len set the context themselves")
    context = (served[0] + served[1] // 2) if served else (4096 if context is None else context)
    validate_request(cfg, batches, context)
    precision, precision_notes = precision_for(cfg, sysm, dtype, kv_dtype)
    plans = valid_plans(cfg, sysm, nodes, pp_all=pp_all)
    batch_arr = np.asarray(list(batches), dtype=float)
    eff = eff or engine_efficiency(engine)
    common = dict(impl=check_impl(impl), engine=engine, precision=precision, eff=eff, settings=settings)
    rows_by_plan = {p: _plan_rows(cfg, sysm, p, catalog, batches=batch_arr, context=context, common=common,
                                  budgets=budgets, jitter=jitter, served=served)
                    for p in plans}
    usable = usable_bytes(sysm.gpu, engine=engine, plan=Plan(1), utilization=settings.memory_utilization)
    results = [_batch_result(int(b), [rows_by_plan[p][i] for p in plans], _Where(cfg, sysm, nodes), budgets,
                             usable_bytes=usable)
               for i, b in enumerate(batches)]
    assumptions = {"efficiency": {**eff.to_dict(), **settings.to_dict(),
                                  "memory_utilization": usable / sysm.gpu.memory_bytes},
                   "impl": impl, "engine": engine, "engine_version": load_engine(engine).version if engine else None,
                   "nccl": nccl_words(catalog, engine),
                   "allreduce": allreduce_words(cfg, sysm, plans, catalog, common),
                   "weight_dtype": precision.weights, "kv_dtype": precision.kv_dtype,
                   "act_dtype": precision.activations, "comm_threshold": comm_threshold,
                   "knee_threshold": knee_threshold, "ttft": f"prefill of one {served[0] if served else context}-token prompt",
                   "gpu": sysm.gpu.name, "intra_fabric": sysm.intra_fabric.name,
                   "nic": f"{sysm.nics_per_node}x {sysm.nic_fabric.name}" if sysm.nic_fabric else None,
                   "expert_dtype": precision.expert_dtype, "compute_dtype": precision.compute_dtype,
                   "notes": list(precision_notes) + plan_notes(cfg, sysm, nodes, plans),
                   "tail": jitter.describe() if jitter else None, "tpot": served_words(served, context)}
    return PlanResult(model=cfg.name, system=sysm.name, nodes=nodes, context=context, budget_s=budget_s,
                      ttft_budget_s=ttft_budget_s, impl=impl, dtype=dtype or precision.weights, results=tuple(results),
                      assumptions=assumptions)


def allreduce_words(cfg: ModelConfig, sysm: System, plans: Sequence[Plan], catalog: Catalog, common: dict) -> dict:
    """What runs each plan's TP all-reduce, per TP degree: the engine's size ranges ('< 256 KiB:
    one-shot; ...'), or the forced implementation."""
    out = {}
    # one plan per TP degree: pure TP where the heads allow it, else its data-parallel-attention plan
    by_tp = {q.tp: Plan(q.tp, 1, q.ep, q.dp) for q in sorted(plans, key=lambda q: -q.dp) if q.tp > 1}
    for p in sorted(by_tp.values(), key=lambda q: q.tp):
        if common["impl"] is not None:
            out[f"TP{p.tp}"] = _forced_words(common["impl"], tp_group(sysm, p, catalog))
            continue
        ranges = compile_step(cfg, sysm, p, catalog, **common).allreduce_ranges
        out[f"TP{p.tp}"] = f"{common['engine']}: {ranges.describe()}"
    return out


def _forced_words(impl: str, group) -> str:
    """'custom (forced by --impl)', or, where the custom kernels cannot run on the group, what is
    priced instead: NCCL (the same candidates CommPricer prices with)."""
    why = custom_allreduce_allowed(group, impl) if impl != "nccl" else None
    if why is None:
        return f"{impl} (forced by --impl)"
    return f"NCCL: --impl {impl} cannot run here ({why})"


def check_served(cfg: ModelConfig, input_len: int | None, output_len: int | None) -> tuple[int, int] | None:
    """(input_len, output_len) of a served-TPOT question, both or neither, or a one-line PlanError."""
    if input_len is None and output_len is None:
        return None
    if input_len is None or output_len is None:
        raise PlanError("--input-len and --output-len go together: the served TPOT needs both")
    for name, v in (("input-len", input_len), ("output-len", output_len)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise PlanError(f"{name} must be a whole number of tokens, at least 1, got {v!r}")
    if cfg.max_position_embeddings and input_len + output_len > cfg.max_position_embeddings:
        raise PlanError(f"a sequence of {input_len + output_len} tokens exceeds {cfg.name}'s maximum of "
                        f"{cfg.max_position_embeddings}")
    return int(input_len), int(output_len)


def served_words(served: tuple[int, int] | None, context: int) -> str:
    """What the plan's latency columns answer: decode only, or the served TPOT too."""
    if served is None:
        return (f"decode only: ITL is one decode step at context {context}, no prompts mixed in "
                f"(give --input-len/--output-len for the served TPOT)")
    i, o = served
    return (f"TPOT served at input {i} / output {o} tokens: the decode step (ITL, at context {i + o // 2}) plus the "
            f"prompts of the other requests mixed in (chunked prefill), and TTFT a new prompt's chunks in the batch's "
            f"steps, as deploy prices them; verdicts judge the ITL")


def _plan_rows(cfg: ModelConfig, sysm: System, p: Plan, catalog: Catalog, *, batches: np.ndarray, context: int,
               common: dict, budgets: Budgets, jitter: Jitter | None = None,
               served: tuple[int, int] | None = None) -> list[Row]:
    """One Row per batch size for plan `p`: decode ITL and its parts, TTFT, memory, fits, meets, and
    the ITL's p99 where `jitter` gives measured per-iteration times.
    `common`: the compile_step keywords shared by every plan (impl, engine, precision, eff, settings)."""
    precision, settings = common["precision"], common["settings"]
    decode = compile_step(cfg, sysm, p, catalog, phase="decode", **common)
    at = served[0] + served[1] / 2 if served else float(context)  # the mean context a served request sees
    dec = decode.evaluate(batches, at)
    p99s = jitter.row_p99s(decode, batches, at, dec["total_s"]) if jitter else [None] * len(batches)
    need = memory_need(cfg, p, precision=precision, engine=common["engine"], batch=batches,
                       context=float(sum(served) if served else context), workspace_bytes=settings.workspace_bytes)
    mem = need.total
    ok = memory_fits(need, sysm.gpu, engine=common["engine"], plan=p, utilization=settings.memory_utilization)
    if served:  # TPOT and TTFT at each batch as deploy prices them (a prompt's chunks ride in the batch's steps)
        from ..step.served import served_curve  # only here: plan's start-up loads neither it nor speculative
        curve = served_curve(cfg, sysm, p, catalog, batch=batches, input_len=served[0], output_len=served[1],
                             common=common)
        tpots, ttfts = curve.tpot_s, curve.ttft_s
    else:  # one prompt of `context` tokens prefilled alone
        ttft = float(compile_step(cfg, sysm, p, catalog, phase="prefill", **common).evaluate(1.0, float(context))["total_s"])
        tpots, ttfts = [None] * len(batches), [ttft] * len(batches)
    rows = []
    for i in range(len(batches)):
        itl, comm, fits, ttft = float(dec["total_s"][i]), float(dec["comm_s"][i]), bool(ok[i]), float(ttfts[i])
        meets = fits and (budgets.budget_s is None or itl <= budgets.budget_s) and (
            budgets.ttft_budget_s is None or ttft <= budgets.ttft_budget_s)
        rows.append(Row(tp=p.tp, pp=p.pp, ep=p.ep, dp=p.dp, itl_s=itl, compute_s=float(dec["compute_s"][i]),
                        comm_s=comm, comm_share=comm / itl if itl else 0.0,
                        comm_latency_s=float(dec["comm_latency_s"][i]), other_s=float(dec["other_s"][i]),
                        ttft_s=ttft, mem_bytes_per_gpu=float(mem[i]), fits_memory=fits, meets_budget=meets,
                        memory={**need.to_dict(), "kv_cache": float(need.kv_cache[i]), "total": float(mem[i])},
                        itl_p99_s=p99s[i], tpot_s=None if tpots[i] is None else float(tpots[i])))
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


def _batch_result(batch: int, rows: list[Row], where: _Where, budgets: Budgets, *, usable_bytes: float) -> BatchResult:
    v = judge(batch, rows, where=where.text(), gpu_memory_bytes=where.system.gpu.memory_bytes, usable_bytes=usable_bytes,
              limits=Thresholds(budget_s=budgets.budget_s, ttft_budget_s=budgets.ttft_budget_s,
                                comm_threshold=budgets.comm_threshold, knee_threshold=budgets.knee_threshold))
    fitting = [r for r in v.rows if r.fits_memory]
    return BatchResult(batch=batch, rows=v.rows, min_tp_memory=min((r.tp for r in fitting), default=None),
                       max_tp_budget=v.largest_tp_within_budget.tp if v.largest_tp_within_budget else None,
                       best_tp=v.best.tp if v.best else None, verdict=v.text, judgement=v,
                       min_gpus_memory=v.smallest.gpus if v.smallest else None)


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


def required_fabric(model: str | ModelConfig, system: str | System, *, tp: int, nodes: int = 1, batch: int = 1,
                    context: int = 4096, budget_s: float = 0.030, impl: str | None = None,
                    engine: str = DEFAULT_ENGINE, dtype: str | None = None, eff: Efficiency | None = None,
                    settings: PlanSettings = PlanSettings(),
                    catalog: Catalog | None = None) -> Requirement:
    """Solve ITL = compute + Σ_calls (latency + bytes/bandwidth) <= budget for the fabric terms."""
    catalog = engine_catalog(catalog or load_catalog(), engine)
    cfg = load_model(model) if isinstance(model, str) else model
    sysm = catalog.system(system) if isinstance(system, str) else system
    Budgets(budget_s=budget_s)
    if tp > nodes * sysm.gpus_per_node:
        raise PlanError(f"TP{tp} needs {tp} GPUs but {nodes} x {sysm.name} has {nodes * sysm.gpus_per_node}")
    sm = compile_step(cfg, sysm, Plan(tp, 1, 1), catalog, impl=check_impl(impl), engine=engine,
                      precision=precision_for(cfg, sysm, dtype)[0], eff=eff, settings=settings)
    st = sm.step(batch, context)
    calls = sm.collective_calls(batch, context)
    n_calls = sum(c["count"] for c in calls)
    comm_budget = budget_s - st.compute_s - st.other_s  # what is left for the collectives
    lat = st.comm_latency_s
    bw_time = st.comm_s - lat
    bus_bytes = sum(c["count"] * c["msg_bytes"] * busbw_factor("all-reduce", tp) for c in calls)
    common = dict(model=cfg.name, system=sysm.name, tp=tp, nodes=nodes, batch=batch, budget_s=budget_s,
                  itl_s=st.total_s, compute_s=st.compute_s, comm_budget_s=comm_budget,
                  current_busbw_bytes_per_s=bus_bytes / bw_time if bw_time > 0 else math.inf)
    if n_calls == 0:
        return Requirement(**common, comm_s=0.0, calls_per_step=0, current_latency_per_call_s=0.0,
                           required_latency_per_call_s=None, required_busbw_bytes_per_s=None,
                           explanation="TP1 inserts no collectives.")
    req_lat = (comm_budget - bw_time) / n_calls if comm_budget > bw_time else None
    req_bw = bus_bytes / (comm_budget - lat) if comm_budget > lat else None
    text = _requirement_text(sysm, tp=tp, st=st, n_calls=n_calls, comm_budget=comm_budget, bw_time=bw_time,
                             req_lat=req_lat, req_bw=req_bw, budget_s=budget_s)
    return Requirement(**common, comm_s=st.comm_s, calls_per_step=int(n_calls), current_latency_per_call_s=lat / n_calls,
                       required_latency_per_call_s=req_lat, required_busbw_bytes_per_s=req_bw, explanation=text)


def _requirement_text(sysm: System, *, tp: int, st, n_calls: float, comm_budget: float, bw_time: float,
                      req_lat: float | None, req_bw: float | None, budget_s: float) -> str:
    lat = st.comm_latency_s
    if st.total_s <= budget_s:
        slack = budget_s - st.total_s
        return (f"TP{tp} already meets the {format_seconds(budget_s)} budget at {format_seconds(st.total_s)}: "
                f"{format_seconds(slack)} of headroom ({100 * slack / budget_s:.0f}% of the budget). Its "
                f"{n_calls} collectives could each take {format_seconds(slack / n_calls)} longer, or the fabric "
                f"could be {_slower_factor(st, slack)} slower in latency, before TP{tp} misses it.")
    if comm_budget <= 0:
        return (f"Compute and host overhead alone take {format_seconds(st.compute_s + st.other_s)}, more than the "
                f"{format_seconds(budget_s)} budget: no fabric can make TP{tp} fit.")
    text = (f"TP{tp} leaves {format_seconds(comm_budget)} for {n_calls} collectives per token "
            f"({format_seconds(comm_budget / n_calls)} each). Today each costs "
            f"{format_seconds(lat / n_calls)} of latency plus {format_seconds(bw_time / n_calls)} of transfer. ")
    if req_lat is not None:
        ratio = req_lat / (lat / n_calls)
        fabric = sysm.nic_fabric if tp > sysm.gpus_per_node and sysm.nic_fabric else sysm.intra_fabric
        hop = fabric.hop_latency_s["ll"]
        text += (f"Keeping today's bandwidth, each call's latency must fall to {format_seconds(req_lat)} "
                 f"({100 * ratio:.0f}% of today's: e.g. the {fabric.name} per-hop latency from "
                 f"{format_seconds(hop)} to {format_seconds(hop * ratio)}, with NCCL's base latency scaled alike). ")
    else:
        text += "No latency is small enough with today's bandwidth. "
    return text + (f"Keeping today's latency, bus bandwidth must reach {format_rate(req_bw)}."
                   if req_bw is not None else "With today's per-call latency no bandwidth is enough: latency alone "
                   "breaks the budget.")


def _slower_factor(st, slack: float) -> str:
    """How many times today's collective latency the budget's slack allows ('2.3x')."""
    if st.comm_latency_s <= 0:
        return "any amount"
    return f"{(st.comm_latency_s + slack) / st.comm_latency_s:.1f}x"


__all__ = ["BatchResult", "Budgets", "PlanResult", "Requirement", "Row", "plan", "required_fabric", "valid_plans",
           "validate_request"]
