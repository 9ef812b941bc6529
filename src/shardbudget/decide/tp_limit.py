"""`explain`'s second and third questions: what stops tensor parallelism from paying, and what a TP
group loses when it leaves the node (the planner's latency-optimal TP group, against the model's TP
group past the node or, where none crosses, as on an NVL72 rack, the same group split over two).

A decode step's time is split three ways, per TP degree, from the planner's own row:

    ITL = work + fixed + communication

work: the roofline of the ops one GPU runs (`OpPricer.op_parts`: FLOPs and bytes at the kernels'
achievable rates), which TP divides where it shards the op; fixed: what does not shrink with TP,
the kernels' floors above their roofline, launches, host time and per-step overhead (the row's
compute minus its work, plus its host part); communication: the row's. Doubling TP pays while the
work it saves exceeds the fixed cost and communication it adds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..comm.collectives import intra_path, make_group
from ..comm.nccl_algos import net_hop_s
from ..fabric.hardware import Fabric, System
from ..model import Plan
from ..units import format_bytes, format_rate, format_seconds
from ..step.records import AllReduceCall
from ..step.scenario import check_nodes
from .ask import Answer, Ask, Table, largest_tp, ratio
from .verdicts import Row
from .whatif import two_nodes

BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
"""The batch sizes of the second answer's table."""
NETWORK_NAMES = {"infiniband": "InfiniBand", "roce": "RoCE", "efa": "EFA", "ethernet": "Ethernet", "tcp": "TCP"}
NVLINK_KINDS = ("nvlink", "nvswitch", "nvl72")


@dataclass(frozen=True)
class TpParts:
    """One pure-TP row of the planner, split into work, fixed costs and communication (seconds)."""

    row: Row
    work_s: float
    fixed_s: float

    @property
    def tp(self) -> int:
        return self.row.tp

    @property
    def comm_s(self) -> float:
        return self.row.comm_s

    def to_dict(self) -> dict:
        return {
            "tp": self.tp,
            "itl_s": self.row.itl_s,
            "work_s": self.work_s,
            "fixed_s": self.fixed_s,
            "comm_s": self.comm_s,
            "comm_share": self.row.comm_share,
            "fits": self.row.fits_memory,
        }


def work_s(ask: Ask, system: System, tp: int, batch: int) -> float:
    """The roofline part of the step's compute (see the module docstring)."""
    sm = ask.step(system, Plan(tp))
    work = sm.work(np.asarray(float(batch)), np.asarray(float(ask.context)))
    total = 0.0
    for count, op in work.ops:
        if op.after_allreduce and sm.ops.fused_allreduce_norm:
            continue  # fused into the all-reduce: priced as nothing, as compute_s does
        total += count * float(np.asarray(sm.ops.op_parts(op)[0]).reshape(-1)[0])
    return total


def tp_parts(ask: Ask, system: System, nodes: int, batch: int, batches: Sequence[int]) -> list[TpParts]:
    """The pure-TP rows (pp = ep = dp = 1) at `batch`, smallest TP first, split three ways."""
    res = ask.plan(system, nodes, batches)
    br = next(b for b in res.results if b.batch == batch)
    line = sorted((r for r in br.rows if r.key == (r.tp, 1, 1, 1)), key=lambda r: r.tp)
    out = []
    for r in line:
        w = min(work_s(ask, system, r.tp, batch), r.compute_s)
        out.append(TpParts(r, w, r.compute_s - w + r.other_s))
    return out


def gain_eaten_after(parts: Sequence[TpParts]) -> TpParts | None:
    """The last TP whose doubling still pays: the next one's added fixed cost and communication are
    at least the work it saves (None: every step of the sweep pays)."""
    for a, b in zip(parts, parts[1:]):
        if (b.fixed_s + b.comm_s) - (a.fixed_s + a.comm_s) >= a.work_s - b.work_s:
            return a
    return None


def _parts_table(parts: Sequence[TpParts]) -> tuple[tuple[str, ...], ...]:
    return tuple(
        (
            f"TP{p.tp}",
            format_seconds(p.row.itl_s),
            format_seconds(p.work_s),
            format_seconds(p.fixed_s),
            format_seconds(p.comm_s),
            f"{100 * p.row.comm_share:.0f}%",
            "yes" if p.row.fits_memory else "no",
        )
        for p in parts
    )


def _step_words(a: TpParts, b: TpParts) -> str:
    """From TP a to TP b, each part as printed, with its ratio."""
    return (
        f"From TP{a.tp} to TP{b.tp} the work falls from {format_seconds(a.work_s)} to {format_seconds(b.work_s)} "
        f"({ratio(a.work_s, b.work_s):.2f}x for {b.tp // a.tp}x the GPUs), the fixed costs go from "
        f"{format_seconds(a.fixed_s)} to {format_seconds(b.fixed_s)} and communication from "
        f"{format_seconds(a.comm_s)} to {format_seconds(b.comm_s)}: the ITL goes from {format_seconds(a.row.itl_s)} "
        f"to {format_seconds(b.row.itl_s)} ({ratio(a.row.itl_s, b.row.itl_s):.2f}x)."
    )


def _batch_rows(ask: Ask, system: System, nodes: int, batches: Sequence[int]) -> list[dict]:
    out = []
    for br in ask.plan(system, nodes, batches).results:
        parts = tp_parts(ask, system, nodes, br.batch, batches)
        eaten = gain_eaten_after(parts)
        best = br.judgement.best if br.judgement else None
        top = parts[-1] if parts else None
        out.append(
            {
                "batch": br.batch,
                "gain_eaten_after_tp": eaten.tp if eaten else None,
                "largest_tp": top.tp if top else None,
                "best_plan": best.label() if best else None,
                "best_itl_s": best.itl_s if best else None,
                "best_comm_share": best.comm_share if best else None,
                "largest_tp_fixed_share": (top.fixed_s / top.row.itl_s) if top else None,
                "largest_tp_comm_share": top.row.comm_share if top else None,
            }
        )
    return out


def _batch_table(table: Sequence[dict]) -> Table:
    top = table[0]["largest_tp"]
    rows = tuple(
        (
            str(t["batch"]),
            f"TP{t['gain_eaten_after_tp']}" if t["gain_eaten_after_tp"] else f"not by TP{top}",
            t["best_plan"] or "none",
            format_seconds(t["best_itl_s"]) if t["best_itl_s"] else "–",
            _pct(t["best_comm_share"]),
            _pct(t["largest_tp_fixed_share"]),
            _pct(t["largest_tp_comm_share"]),
        )
        for t in table
    )
    return Table(
        (
            "batch",
            "gain eaten after",
            "latency-optimal",
            "its ITL",
            "its comm share",
            f"TP{top}: fixed share",
            f"TP{top}: comm share",
        ),
        rows,
    )


def _pct(share: float | None) -> str:
    return "–" if share is None else f"{100 * share:.0f}%"


def sweep_nodes(system: System, nodes: int) -> int:
    """The nodes the second answer sweeps: the request's, or two where it asks for one node of a
    system with a network, so that the sweep passes the node's edge (where the gain is usually eaten)."""
    return nodes if nodes > 1 or system.nic_fabric is None else 2


def when_allreduce_limits(ask: Ask, system: System, *, nodes: int = 1) -> Answer:
    """Q2: per TP the work that shrinks, the fixed costs that do not, and communication; where they
    eat the gain at the request's batch and at batch 1 to 256, beside the planner's verdict."""
    check_nodes(system, nodes)
    nodes = sweep_nodes(system, nodes)
    batches = tuple(sorted(set(BATCHES) | {ask.batch}))
    parts = tp_parts(ask, system, nodes, ask.batch, batches)
    where = f"{nodes} x {system.name}" if nodes > 1 else system.name
    br = next(b for b in ask.plan(system, nodes, batches).results if b.batch == ask.batch)
    v, eaten = br.judgement, gain_eaten_after(parts)
    crossing = next((p for p in parts if p.row.comm_share > ask.comm_threshold), None)
    text = (
        f"{ask.cfg.name}, batch {ask.batch}, on {where} ({ask.engine}): each token's time is work that TP "
        f"divides (the roofline of the sharded GEMMs, attention and KV reads), fixed costs that it does not "
        f"(kernel floors, launches, host and per-step overhead) and communication."
    )
    if eaten is not None:
        nxt = parts[parts.index(eaten) + 1]
        text += " " + _step_words(parts[parts.index(eaten) - 1], eaten) if parts.index(eaten) else ""
        text += (
            f" Past TP{eaten.tp} the gain is eaten: TP{nxt.tp} saves {format_seconds(eaten.work_s - nxt.work_s)} "
            f"of work and adds {format_seconds(nxt.fixed_s + nxt.comm_s - eaten.fixed_s - eaten.comm_s)} of "
            f"fixed cost and communication ({format_seconds(eaten.row.itl_s)} to {format_seconds(nxt.row.itl_s)})."
        )
    elif len(parts) >= 2:
        text += " " + _step_words(parts[-2], parts[-1])
        text += f" Up to TP{parts[-1].tp} every doubling saves more work than it adds in fixed cost and communication."
    text += (
        f" The planner's latency-optimal plan is {v.best.label()} ({format_seconds(v.best.itl_s)}, "
        f"{100 * v.best.comm_share:.0f}% communication)."
        if v and v.best
        else " No plan fits in memory."
    )
    table = _batch_rows(ask, system, nodes, batches)
    figures = {
        "system": system.name,
        "nodes": nodes,
        "batch": ask.batch,
        "parts": [p.to_dict() for p in parts],
        "gain_eaten_after_tp": eaten.tp if eaten else None,
        "first_tp_over_threshold": crossing.tp if crossing else None,
        "best_plan": br.best_plan,
        "by_batch": table,
    }
    return Answer(
        "When does all-reduce limit model sharding?",
        text,
        figures,
        _limits_takeaway(where, table, crossing, ask.comm_threshold),
        (Table(("TP", "ITL", "work", "fixed", "comm", "comm share", "fits"), _parts_table(parts)), _batch_table(table)),
    )


def _optimal_words(table: Sequence[dict]) -> str:
    """The latency-optimal plan over the batches, one run of batches per plan (issue 34: not "goes
    from TP8 to TP8", nor from TP8 back to TP8 with TP4 between unsaid)."""
    runs: list[list] = []  # [plan, first batch, last batch]
    for t in table:
        best = t["best_plan"] or "none"
        if runs and runs[-1][0] == best:
            runs[-1][2] = t["batch"]
        else:
            runs.append([best, t["batch"], t["batch"]])
    if len(runs) == 1:
        return f"the latency-optimal plan is {runs[0][0]} at every batch from {runs[0][1]} to {runs[0][2]}"
    spans = [f"{p} at batch {lo}" if lo == hi else f"{p} at batches {lo} to {hi}" for p, lo, hi in runs]
    return "the latency-optimal plan is " + ", ".join(spans[:-1]) + f" and {spans[-1]}"


def _limits_takeaway(where: str, table: Sequence[dict], crossing, threshold: float) -> str:
    first, last = table[0], table[-1]

    def at(t: dict) -> str:
        return f"after TP{t['gain_eaten_after_tp']}" if t["gain_eaten_after_tp"] else f"not by TP{t['largest_tp']}"

    optimal = _optimal_words(table)
    text = (
        f"All-reduce limits sharding where communication plus the fixed per-kernel costs grow by more than the "
        f"work TP saves: on {where} the gain is eaten {at(first)} at batch {first['batch']} and {at(last)} at "
        f"batch {last['batch']}; {optimal}."
    )
    if crossing is not None:
        text += (
            f" Communication passes {100 * threshold:.0f}% of the token from TP{crossing.tp} (the comm-bound warning)."
        )
    return text


# --- question 3 ---------------------------------------------------------------------------


def _estimate(fabric: Fabric) -> str:
    src = fabric.latency_source or ""
    return "an estimate (NCCL's tuning table)" if not src or "estimate" in src.lower() else f"from {src}"


@dataclass(frozen=True)
class Crossing:
    """Q3's two TP groups: `inside` one node (the planner's latency-optimal TP where it stays inside;
    where that is TP1, which sends none, the fastest pure-TP plan that does),
    `across` over nodes: the model's own TP group past the node where the planner sweeps one, else
    the same TP group split over two nodes (a what-if of whatif.two_nodes: an NVL72 rack holds every
    TP its heads allow, so only a split group crosses racks)."""

    tp_in: int
    one: Row | None
    tp_out: int
    two: Row | None
    across_system: System
    """The system the crossing group is priced on (the request's, or the split what-if)."""
    across_nodes: int
    whatif: bool


def _crossing(ask: Ask, system: System, nodes: int, best: Row | None) -> Crossing:
    cfg, g = ask.cfg, system.gpus_per_node
    rows = {r.key: r for r in ask.plan(system, nodes).results[0].rows}
    if best is not None and 1 < best.tp <= g:
        tp_in = best.tp
    elif best is not None and best.tp == 1:  # it sends no TP all-reduce: the fastest pure-TP plan that does
        sending = [r for r in rows.values() if r.fits_memory and r.key == (r.tp, 1, 1, 1) and 1 < r.tp <= g]
        tp_in = min(sending, key=lambda r: (r.judged_s, r.tp)).tp if sending else largest_tp(cfg, g)
    else:  # no plan fits, or the latency-optimal one crosses nodes: the largest group one node holds
        tp_in = largest_tp(cfg, g)
    one = rows.get((tp_in, 1, 1, 1)) if tp_in > 1 else None
    tp_out = largest_tp(cfg, nodes * g)
    if tp_out > g and rows.get((tp_out, 1, 1, 1)) is not None:
        return Crossing(tp_in, one, tp_out, rows[(tp_out, 1, 1, 1)], system, tp_out // g, False)
    split = two_nodes(system, tp_in)
    two = ask.row(split, (tp_in, 1, 1, 1), nodes=2) if split is not None and one is not None else None
    return Crossing(tp_in, one, tp_in, two, split or system, 2, True)


def _unit(system: System) -> str:
    """What a node of the system is called: an NVL72 rack (--nodes counts racks) or a node."""
    return "rack" if system.intra_fabric.kind == "nvl72" else "node"


def why_the_network_is_slow(ask: Ask, system: System, *, nodes: int = 2) -> Answer:
    """Q3: the planner's latency-optimal TP group inside one node against a TP group over nodes
    (`Crossing`): the calls each runs, priced, and what the numbers say about the network."""
    check_nodes(system, nodes)
    g = system.gpus_per_node
    v = ask.plan(system, nodes).results[0].judgement
    best = v.best if v else None
    nic = system.nic_fabric
    name = NETWORK_NAMES.get(nic.kind, nic.kind)
    domain = "NVLink domain" if system.intra_fabric.kind in NVLINK_KINDS else "node"
    unit = _unit(system)
    cross = _crossing(ask, system, nodes, best)
    text, figures = _network_facts(ask, system, cross)
    if best is None:
        take = f"On {nodes} {unit}s no plan fits in memory."
    elif best.gpus > g and best.tp > g:
        take = (
            f"On {nodes} {unit}s the planner's latency-optimal plan is {best.label()}: crossing {unit}s with TP "
            f"still pays here, but {100 * best.comm_share:.0f}% of its token is communication."
        )
    else:
        group = (
            f", its TP group inside one {domain} ({g} GPUs)."
            if best.tp > 1
            else f", which sends no TP all-reduce; the fastest plan that does, TP{cross.tp_in}, keeps its group inside "
            f"one {domain} ({g} GPUs)."
        )
        take = f"On {nodes} {unit}s the planner's latency-optimal plan is {best.label()}{group}" + _across_words(
            cross, name, unit, figures.get("lost", [])
        )
    figures["best_plan_two_nodes"] = v.best_plan if v else None
    # the question presumes the network is the slower fabric; on a PCIe node it may not be (issue 34: on the
    # degraded L40S box TP8's call takes 1.355 ms inside the node and 539.5 us split over two nodes of RoCE).
    # Like with like: the same TP group and message, inside one node and split over two (whatif.two_nodes)
    inside, split = _split_calls(ask, system, cross)
    pace = split.time_s / inside.time_s if inside is not None and split is not None else None
    figures.update(split_call=split.to_dict() if split else None, split_over_inside_call=pace)
    if pace is None or pace > NETWORK_SAME_PACE:
        return Answer(f"Why is {name} slow for decode parallelism?", text, figures, take)
    words = (
        f"{1 / pace:.1f}x faster than"
        if pace < 1 / NETWORK_SAME_PACE
        else f"about as fast as ({pace:.2f}x the time of)"
    )
    verdict = (
        f"{name} is not the slow fabric here: TP{cross.tp_in}'s {format_bytes(inside.msg_bytes)} all-reduce "
        f"split over 2 {unit}s x {cross.tp_in // 2} GPUs runs as {split.words} at "
        f"{format_seconds(split.time_s)} per call, {words} the same group inside one {unit} "
        f"({format_seconds(inside.time_s)}), whose ring has {_node_path_words(system, cross.tp_in)}. "
    )
    return Answer(f"Is {name} slower than staying inside one {system.name} for decode?", text, figures, verdict + take)


NETWORK_SAME_PACE = 1.10
"""Q3 calls the network slow where the split group's call takes more than 1.1x the in-node one; within
10% either way the two are "about as fast", below 1/1.1 the network is the faster fabric (a PCIe node
whose hops are staged through host memory)."""


def _split_calls(ask: Ask, system: System, c: Crossing) -> tuple[AllReduceCall | None, AllReduceCall | None]:
    """The in-node group's call, and the same group's split over two nodes (the crossing's own where it
    is that split, else priced here)."""
    inside = c.one.allreduce if c.one is not None and c.tp_in > 1 else None
    if inside is None:
        return None, None
    if c.whatif:
        return inside, c.two.allreduce if c.two is not None else None
    split = two_nodes(system, c.tp_in)
    halves = ask.row(split, (c.tp_in, 1, 1, 1), nodes=2) if split is not None else None
    return inside, halves.allreduce if halves is not None else None


def _node_path_words(system: System, tp: int) -> str:
    """How TP's ring moves inside the node, in the path's own words: its transports and the rate of the
    hop that binds it."""
    path = intra_path(system, tp)
    staged = "shm" in path.transports
    how = (
        "hops staged through host memory"
        if staged and "p2p" not in path.transports
        else ("P2P hops, and hops staged through host memory" if staged else "P2P hops")
    )
    return f"{how}, {format_rate(path.busbw_bytes_per_s)} busbw for TP{tp}"


def _across_words(c: Crossing, network: str, unit: str, lost: list[str]) -> str:
    """What the numbers say of the crossing group: its call against the inside one, and which term
    of it, latency or bandwidth, sets it (issue 34: only what the numbers show)."""
    if c.one is None or c.two is None or c.one.allreduce is None or c.two.allreduce is None:
        return ""
    inside, across = c.one.allreduce, c.two.allreduce
    group = (
        f"the same TP{c.tp_in} group split over 2 {unit}s"
        if c.whatif
        else f"TP{c.tp_out} over {c.across_nodes} {unit}s"
    )
    latency = across.latency_s / across.time_s if across.time_s else 0.0  # the line's latency term's share
    sets = (
        "its per-message latency, not its bandwidth, sets the call"
        if latency >= 0.5
        else "its bandwidth, more than its per-message latency, sets the call"
    )
    text = (
        f" Over {network}, {group} runs its all-reduce at {format_seconds(across.time_s)} per call against "
        f"{format_seconds(inside.time_s)} inside ({ratio(across.time_s, inside.time_s):.1f}x), "
        f"{100 * latency:.0f}% of it the latency term: {sets}"
    )
    text += f"; and it loses {' and '.join(lost)}." if lost else "."
    return text + (
        f" Its token takes {format_seconds(c.two.itl_s)} against {format_seconds(c.one.itl_s)} "
        f"({ratio(c.two.itl_s, c.one.itl_s):.2f}x)."
    )


def _lost(inside: AllReduceCall, across: AllReduceCall, system: System, tp_in: int) -> list[str]:
    """What the group runs inside the node that it does not run across: the engine's own kernel
    (one host only), and NVLS where the inside call ran it and the crossing one does not keep it in
    each node (NCCL's NVLSTree, 'hierarchical' here, does). Nothing the inside call did not run."""
    lost = []
    if inside.kind != "nccl" and across.kind == "nccl":
        lost.append(f"{inside.words} ({format_seconds(inside.time_s)} per call)")
    if inside.algorithm == "nvls" and across.algorithm != "hierarchical" and intra_path(system, tp_in).nvls:
        lost.append(f"NVLS, the switch's in-network reduction ({format_seconds(inside.time_s)} per call)")
    return lost


def _network_facts(ask: Ask, system: System, c: Crossing) -> tuple[str, dict]:
    """The calls inside and across nodes, what the group loses, the network step, the rows."""
    g, nic, unit = system.gpus_per_node, system.nic_fabric, _unit(system)
    one, two = c.one, c.two
    inside = one.allreduce if one is not None and c.tp_in > 1 else None  # the calls the rows were priced with
    across = two.allreduce if two is not None else None
    figures = {
        "tp_one_node": c.tp_in,
        "tp_across": c.tp_out if two is not None else None,
        "across_whatif": c.whatif if two is not None else None,
        "one_node_call": inside.to_dict() if inside else None,
        "across_call": across.to_dict() if across else None,
        "one_node_itl_s": one.itl_s if one else None,
        "two_node_itl_s": two.itl_s if two else None,
        "one_node_comm_share": one.comm_share if one else None,
        "two_node_comm_share": two.comm_share if two else None,
    }
    if inside is None or across is None or one is None:
        return (f"{ask.cfg.name} has no TP group of 2 or more GPUs to take across {unit}s of {system.name}.", figures)
    lost = _lost(inside, across, system, c.tp_in)
    per_node = c.tp_out // c.across_nodes
    group = make_group(c.across_system, nodes=c.across_nodes, gpus=c.tp_out, catalog=ask.catalog)
    algo = across.algorithm if across.algorithm in ("ring", "tree") else "ring"
    hop = net_hop_s(group, across.protocol, algo, True)
    figures.update(network_hop_s=hop, network_hop_algorithm=algo, network_hop_protocol=across.protocol, lost=lost)
    nics = c.across_system.nics_per_node
    if c.whatif:
        where = (
            f"Split over 2 {unit}s, {per_node} GPUs in each (a what-if: no TP group of {ask.cfg.name} crosses "
            f"{unit}s of {system.name}, whose {g} GPUs hold TP{largest_tp(ask.cfg, g)}, the most its heads "
            f"allow), the same group's all-reduce runs as {across.words} over {nics}x {nic.name} per {unit}"
        )
    else:
        where = (
            f"Over {c.across_nodes} {unit}s TP{c.tp_out}'s all-reduce runs as {across.words} over {nics}x "
            f"{nic.name} per {unit}"
        )
    text = (
        f"Inside one {unit} TP{c.tp_in}'s {format_bytes(inside.msg_bytes)} all-reduce runs as {inside.words}: "
        f"{format_seconds(inside.time_s)} per call. {where}: {format_seconds(across.time_s)} per call "
        f"({ratio(across.time_s, inside.time_s):.1f}x). "
    )
    text += f"Leaving the {unit} the group loses {' and '.join(lost)}; " if lost else ""
    proto = across.protocol.upper() if across.protocol != "simple" else "Simple"
    text += (
        f"{'each' if lost else 'Each'} network step of NCCL's {algo} ({proto}) costs {format_seconds(hop)}, "
        f"{_estimate(nic)}. With {across.count} such calls per token, communication goes from "
        f"{100 * one.comm_share:.0f}% of TP{c.tp_in}'s {format_seconds(one.itl_s)} to {100 * two.comm_share:.0f}% "
        f"of {'the split ' if c.whatif else ''}TP{c.tp_out}'s {format_seconds(two.itl_s)} "
        f"({ratio(two.comm_s, one.comm_s):.1f}x the communication, {format_seconds(one.comm_s)} to "
        f"{format_seconds(two.comm_s)})."
    )
    return text, figures


__all__ = [
    "BATCHES",
    "Crossing",
    "TpParts",
    "gain_eaten_after",
    "tp_parts",
    "when_allreduce_limits",
    "why_the_network_is_slow",
    "work_s",
]
