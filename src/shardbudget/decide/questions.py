"""The three questions this tool exists for, answered from the planner's own rows.

1. NVLink versus PCIe for tensor-parallel inference (`fabric_vs_fabric`): the same GPU, engine and
   plan on other fabrics (what-ifs built from the catalog, `whatif.py`), or the systems named, with
   the GPU's share of a difference apart from the fabric's where their GPUs differ. The plan is the
   planner's latency-optimal one (`compared_plan`), not the largest TP a node holds.
2. When all-reduce limits sharding (`when_allreduce_limits`, `tp_limit.py`): per TP the work that
   shrinks, the fixed per-kernel costs that do not, and communication; where they eat the gain, by batch.
3. Why the network is slow for decode (`why_the_network_is_slow`, `tp_limit.py`): what a TP group loses
   when it leaves the node, priced: the model's TP group past the node, or the latency-optimal group
   split over two nodes where none crosses (an NVL72 rack); its conclusion only what the numbers show.

Every ITL, share and verdict is a Row of `planner.plan` with the request's engine, dtype, batch,
context and budget, so `explain` never disagrees with `plan`; every per-call time is the call the
engine runs at that size (the row's `allreduce`), the one the step's communication was priced with. Each
ratio is computed from the numbers as printed (`shown`), so it can be checked by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..engines.presets import load_engine
from ..fabric.hardware import System
from ..model import Plan
from ..units import format_bytes, format_seconds
from ..step.records import AllReduceCall, engine_call
from ..step.scenario import degraded_note
from .cost import fabric_cost_view, usd_text
from .ask import Answer, Ask, ExplainError, Explanation, Table, largest_tp, ratio
from .release_words import nccl_words
from .request import Request
from .tp_limit import when_allreduce_limits, why_the_network_is_slow
from .verdicts import Row
from .whatif import FabricCase, fabric_cases

# --- question 1 ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FabricRow:
    case: FabricCase
    row: Row
    call: AllReduceCall
    """The TP all-reduce the row was priced with."""
    big: AllReduceCall
    """The same plan's call at the large batch (`big_batch`)."""


def _fabric_rows(
    ask: Ask, cases: Sequence[FabricCase], key: tuple[int, int, int, int], big_batch: int
) -> list[FabricRow]:
    out = []
    for c in cases:
        # a case over two nodes holds one TP group on two of them: a PP plan takes PP such pairs
        row = ask.row(c.system, key, nodes=c.nodes * key[1] if c.nodes > 1 else 1)
        if row is None or row.allreduce is None:
            continue  # the what-if cannot hold this plan
        sm = ask.step(c.system, Plan(*key))
        out.append(FabricRow(c, row, row.allreduce, engine_call(sm, big_batch, ask.context)))
    return out


def compared_plan(ask: Ask, systems: Sequence[System]) -> tuple[tuple[int, int, int, int], str]:
    """The plan the fabrics are compared at, and why, in words (issue 34: the largest TP that fits a
    node was compared, TP64 on an NVL72, a plan the second answer rejects): the planner's
    latency-optimal plan on one node of the first system, at the request's batch. Where it sends no
    TP all-reduce (TP1) the fastest plan that does; where it does not fit a node of every system, or
    no plan fits one node, the largest TP that one node of each holds."""
    cfg, first = ask.cfg, systems[0]
    least = min(s.gpus_per_node for s in systems)
    largest = largest_tp(cfg, least)
    if largest < 2:
        raise ExplainError(
            f"explain cannot compare fabrics for {cfg.name} on {', '.join(s.name for s in systems)}: "
            f"no TP of 2 or more fits one node and the model's heads"
        )
    br = ask.plan(first, 1).results[0]
    best = br.judgement.best if br.judgement else None
    where = f"one {first.name} at batch {ask.batch}"
    if best is None:
        return (largest, 1, 1, 1), (
            f"no plan fits {where}, so the fabrics are compared at TP{largest}, the largest TP one node holds"
        )
    chosen, why = best, f"the planner's latency-optimal plan on {where}"
    if best.tp < 2:
        sending = [r for r in br.rows if r.fits_memory and r.tp >= 2 and r.gpus <= least]
        if not sending:
            return (largest, 1, 1, 1), (
                f"the planner's latency-optimal plan on {where}, {best.label()}, sends no TP "
                f"all-reduce and no plan that does fits; the fabrics are compared at TP{largest}"
            )
        chosen = min(sending, key=lambda r: (r.judged_s, r.gpus))
        why = (
            f"the fastest plan that sends TP all-reduces on {where}; the planner's latency-optimal plan, "
            f"{best.label()}, sends none, so no fabric sets its token"
        )
    if chosen.gpus > least:
        small = min(systems, key=lambda s: s.gpus_per_node)
        return (largest, 1, 1, 1), (
            f"TP{largest}, the largest TP one node of each system holds: the planner's "
            f"latency-optimal plan on {where}, {chosen.label()}, does not fit one {small.name}"
        )
    return chosen.key, why


def fabric_vs_fabric(ask: Ask, systems: Sequence[System]) -> Answer:
    """Q1: one system against its own fabric what-ifs, or the systems named against the first, at the
    planner's latency-optimal plan (`compared_plan`)."""
    cfg = ask.cfg
    key, why = compared_plan(ask, systems)
    tp, label = key[0], Plan(*key).label().replace("DP-attention", "DP")  # as a plan row names it
    if len(systems) == 1:
        cases = fabric_cases(systems[0], ask.catalog, tp)
        if len(cases) < 2:
            raise ExplainError(
                f"system {systems[0].name!r} has no other fabric to compare with: name a second "
                f"system (--system A --system B)"
            )
    else:
        cases = [FabricCase(f"{s.name} ({FabricCase('', s).fabric})", s) for s in systems]
    big_batch = max(64, 4 * ask.batch)
    rows = _fabric_rows(ask, cases, key, big_batch)
    if len(rows) < 2:
        raise ExplainError(f"explain cannot compare fabrics for {cfg.name} at {label}: fewer than two fabrics hold it")
    ref = rows[0]
    same_gpu = all(r.case.system.gpu is ref.case.system.gpu for r in rows)
    who = (
        f"Same GPU ({ref.case.system.gpu.name}), same engine ({ask.engine}), same plan ({label}): only the fabric "
        "differs."
        if same_gpu
        else f"Same engine ({ask.engine}) and plan ({label}) on each system."
    )
    text = (
        f"{who} {label} is {why}. {cfg.name} at batch {ask.batch}, context {ask.context}: each token runs "
        f"{ref.call.count} TP all-reduces of {format_bytes(ref.call.msg_bytes)}, each priced as the kernel the "
        f"engine runs at that size on that fabric; the rest of a token's communication is its other collectives "
        f"and the ranks' skew."
    )
    costs, cost_text = fabric_cost_view(
        [(r.case.label, r.case.system, r.row.itl_s, ask.batch * key[1], Plan(*key).gpus) for r in rows], ask.catalog
    )
    table = tuple(
        (
            r.case.label,
            r.call.words,
            format_seconds(r.call.time_s),
            format_seconds(r.row.comm_s),
            format_seconds(r.row.itl_s),
            f"{100 * r.row.comm_share:.0f}%",
            f"{format_seconds(r.big.time_s)} ({r.big.words})",
            "-" if c is None or c.usd_per_mtok is None else usd_text(c.usd_per_mtok)[1:],
            "-" if c is None or c.tokens_per_joule is None else f"{c.tokens_per_joule:.3g}",
        )
        for r, c in zip(rows, costs)
    )
    columns = (
        "fabric",
        "all-reduce (what runs)",
        "per call",
        "comm per token",
        "ITL",
        "comm share",
        f"per call at batch {big_batch}",
        "$/Mtok",
        "tok/J",
    )
    take = _fabric_takeaway(rows, big_batch) + (" " + cost_text if cost_text else "")
    if not same_gpu:
        take += " " + " ".join(_gpu_vs_fabric(ref, r) for r in rows[1:])
    figures = {
        "tp": tp,
        "plan": dict(zip(("tp", "pp", "ep", "dp"), key)),
        "why": why,
        "batch": ask.batch,
        "big_batch": big_batch,
        "same_gpu": same_gpu,
        "cases": [
            {
                "label": r.case.label,
                "system": r.case.system.name,
                "nodes": r.case.nodes,
                "whatif": r.case.whatif,
                "fabric": r.case.fabric,
                "itl_s": r.row.itl_s,
                "compute_s": r.row.compute_s,
                "comm_s": r.row.comm_s,
                "other_s": r.row.other_s,
                "comm_share": r.row.comm_share,
                "fits": r.row.fits_memory,
                "call": r.call.to_dict(),
                "big_call": r.big.to_dict(),
                "usd_per_mtok": c.usd_per_mtok if c else None,
                "tokens_per_joule": c.tokens_per_joule if c else None,
            }
            for r, c in zip(rows, costs)
        ],
    }
    return Answer(
        f"{ref.case.fabric} versus other fabrics for tensor-parallel inference"
        if len(systems) == 1
        else " versus ".join(r.case.fabric for r in rows) + " for tensor-parallel inference",
        text,
        figures,
        take,
        (Table(columns, table),),
    )


def _fabric_takeaway(rows: Sequence[FabricRow], big_batch: int) -> str:
    fast = min(rows, key=lambda r: r.row.itl_s)
    slow = max(rows, key=lambda r: r.row.itl_s)
    if fast is slow:
        return "Every fabric gives the same ITL here."
    return (
        f"{fast.case.label} is fastest: {fast.call.words} at {format_seconds(fast.call.time_s)} per call. "
        f"{slow.case.label} runs {slow.call.words} at {format_seconds(slow.call.time_s)} per call "
        f"({ratio(slow.call.time_s, fast.call.time_s):.1f}x), {format_seconds(slow.row.comm_s)} of communication "
        f"per token against {format_seconds(fast.row.comm_s)} ({ratio(slow.row.comm_s, fast.row.comm_s):.1f}x), "
        f"an ITL of {format_seconds(slow.row.itl_s)} against {format_seconds(fast.row.itl_s)} "
        f"({ratio(slow.row.itl_s, fast.row.itl_s):.2f}x). At batch {big_batch} a call takes "
        f"{format_seconds(slow.big.time_s)} against {format_seconds(fast.big.time_s)} "
        f"({ratio(slow.big.time_s, fast.big.time_s):.1f}x)."
    )


def _gpu_vs_fabric(ref: FabricRow, other: FabricRow) -> str:
    """ITL difference = GPU (compute + host) + fabric (communication), exactly, as printed."""
    a, b = ref.row, other.row
    gpu_a, gpu_b = a.compute_s + a.other_s, b.compute_s + b.other_s
    name_a, name_b = ref.case.system.name, other.case.system.name
    return (
        f"{name_b} against {name_a}: ITL {format_seconds(b.itl_s)} against {format_seconds(a.itl_s)}; "
        f"compute and host (the GPU) {format_seconds(gpu_b)} against {format_seconds(gpu_a)}, communication "
        f"(the fabric) {format_seconds(b.comm_s)} against {format_seconds(a.comm_s)}: the GPU makes "
        f"{_signed(gpu_b - gpu_a)} of the {_signed(b.itl_s - a.itl_s)} difference, the fabric "
        f"{_signed(b.comm_s - a.comm_s)}."
    )


def _signed(t_s: float) -> str:
    return ("+" if t_s >= 0 else "-") + format_seconds(abs(t_s))


# --- the request --------------------------------------------------------------------------


def explain(req: Request, systems: Sequence[str | System] | None = None) -> Explanation:
    """The three answers of the request: fabric against fabric (its system against its own what-ifs,
    or the `systems` named against each other, the first of them in the request's place), when
    all-reduce limits sharding (on the first system, over the request's nodes), and why crossing
    nodes is slow (the first system with a network). Decode at the request's context and first batch."""
    work = req.decode_workload
    if work.served is not None or work.speculation is not None:
        raise ExplainError(
            "explain answers decode at one context: give --context, not --input-len/--output-len or --speculative"
        )
    req.check_length(work)
    names = list(systems) if systems is not None else [req.system]
    if not names:
        raise ExplainError("explain needs at least one system (--system NAME)")
    catalog, nodes = req.scenario.catalog, req.scenario.node_count
    found = [s if isinstance(s, System) else catalog.system(s) for s in names]
    if len({s.name for s in found}) != len(found):
        raise ExplainError(f"system listed twice: {', '.join(s.name for s in found)}")
    ask = Ask(req.on(found[0], nodes))
    answers = [fabric_vs_fabric(ask, found), when_allreduce_limits(ask, found[0], nodes=nodes)]
    networked = next((s for s in found if s.nic_fabric is not None), None)
    if networked is not None:
        answers.append(why_the_network_is_slow(ask, networked, nodes=max(2, nodes)))
    sc = ask.req.scenario
    return Explanation(
        model=sc.model.name,
        systems=tuple(s.name for s in found),
        engine=sc.engine,
        batch=ask.batch,
        context=ask.context,
        nodes=nodes,
        dtype=sc.dtype,
        budget_s=req.budgets.budget_s,
        answers=tuple(answers),
        notes=tuple(n for s in found for n in degraded_note(s)),
        release=load_engine(sc.engine).version,
        nccl=nccl_words(sc.catalog, sc.engine),
    )


__all__ = [
    "Answer",
    "ExplainError",
    "Explanation",
    "compared_plan",
    "explain",
    "fabric_vs_fabric",
    "when_allreduce_limits",
    "why_the_network_is_slow",
]
