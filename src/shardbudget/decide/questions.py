"""The three questions this tool exists for, answered from numbers computed on the spot.

By default the first question compares the same GPU on NVLink and on PCIe (hgx-h100 vs h100-pcie)
so that only the fabric differs; `systems` picks any two. Every judgement (which TP is
latency-optimal, when communication passes the threshold, whether crossing nodes pays) is read from
the planner's verdicts, so `explain` never disagrees with `plan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ..comm.collectives import collective_cost, intra_path
from ..errors import PlanError
from ..fabric.hardware import Catalog, System
from ..fabric.catalog import load_catalog
from ..model import ModelConfig, Plan, hidden_message_bytes, load_model
from ..model.plan import check_tp
from .planner import check_nodes, plan, validate_request
from ..step.compose import decode_step
from ..units import format_bytes, format_seconds

DEFAULT_SYSTEMS = ("hgx-h100", "h100-pcie")


@dataclass(frozen=True)
class Answer:
    question: str
    text: str
    figures: dict
    takeaway: str

    def to_dict(self) -> dict:
        return asdict(self)


def _largest_tp(cfg: ModelConfig, gpus: int) -> int:
    """The largest power-of-two TP up to `gpus` that the model's heads allow."""
    tp = 1
    while tp * 2 <= gpus:
        try:
            check_tp(cfg, tp * 2)
        except PlanError:
            break
        tp *= 2
    return tp


def _fabric(s: System, tp: int) -> str:
    """The links a TP ring over `tp` GPUs of `s` crosses ('nvlink-bridge-h100+pcie5 (h100-pcie)')."""
    return f"{_path(s, tp)} ({s.name})"


def _path(s: System, tp: int) -> str:
    return intra_path(s, tp).name if tp > 1 else s.intra_fabric.name


NETWORK_NAMES = {"infiniband": "InfiniBand", "roce": "RoCE", "efa": "EFA", "ethernet": "Ethernet", "tcp": "TCP"}


def fabric_vs_fabric(cfg: ModelConfig, catalog: Catalog, systems: Sequence[System], *, batch: int = 1,
                     context: int = 4096) -> Answer:
    """The same TP decode step on two systems: per-call all-reduce time and share of the token."""
    a, b = systems
    tp = _largest_tp(cfg, min(a.gpus_per_node, b.gpus_per_node))
    msg = float(hidden_message_bytes(cfg, batch))  # bytes per rank: batch x hidden x bf16
    ca, cb = (collective_cost("all-reduce", msg, s, gpus=tp, catalog=catalog) for s in (a, b))
    sa, sb = (decode_step(cfg, s, Plan(tp), batch=batch, context=context, catalog=catalog) for s in (a, b))
    big_batch = max(64, 4 * batch)
    big = float(hidden_message_bytes(cfg, big_batch))  # a large batch leaves the latency-bound regime
    ba, bb = (collective_cost("all-reduce", big, s, gpus=tp, catalog=catalog) for s in (a, b))
    text = (f"A TP{tp} decode step of {cfg.name} at batch {batch} runs {sa.comm_calls} collectives, chiefly "
            f"all-reduces of {format_bytes(msg)}. Over {_fabric(a, tp)} each takes {format_seconds(ca.time_s)} "
            f"({ca.algorithm}/{ca.protocol}, {100 * ca.latency_share:.0f}% latency); over {_fabric(b, tp)} "
            f"{format_seconds(cb.time_s)} ({cb.time_s / ca.time_s:.1f}x). Per token that is "
            f"{format_seconds(sa.comm_s)} of {format_seconds(sa.total_s)} on {a.name} ({100 * sa.comm_share:.0f}%) "
            f"against {format_seconds(sb.comm_s)} of {format_seconds(sb.total_s)} on {b.name} "
            f"({100 * sb.comm_share:.0f}%). At batch {big_batch} the message is {format_bytes(big)}: "
            f"{format_seconds(ba.time_s)} against {format_seconds(bb.time_s)} ({bb.time_s / ba.time_s:.1f}x); "
            f"the transfer term is then {format_seconds(ba.bandwidth_s)} and {format_seconds(bb.bandwidth_s)}.")
    slow, fast = (b, a) if cb.time_s >= ca.time_s else (a, b)
    take = (f"{_path(fast, tp)} keeps each all-reduce near its {format_seconds(min(ca, cb, key=lambda c: c.time_s).latency_s)} "
            f"latency floor; {_path(slow, tp)} pays {max(ca.time_s, cb.time_s) / min(ca.time_s, cb.time_s):.1f}x "
            f"per call at batch {batch} and {max(ba.time_s, bb.time_s) / min(ba.time_s, bb.time_s):.1f}x at batch "
            f"{big_batch}, so TP over it buys less and stops paying sooner.")
    return Answer(f"{_path(a, tp)} versus {_path(b, tp)} for tensor-parallel inference", text,
                  {"systems": [a.name, b.name], "tp": tp, "msg_bytes": msg, "allreduce_s": [ca.time_s, cb.time_s],
                   "ratio": cb.time_s / ca.time_s, "comm_share": [sa.comm_share, sb.comm_share],
                   "large_batch_ratio": bb.time_s / ba.time_s}, take)


def when_allreduce_limits(cfg: ModelConfig, catalog: Catalog, system: System, *, batch: int = 1,
                          context: int = 4096) -> Answer:
    """The TP sweep of one node, with the planner's verdicts."""
    result = plan(cfg, system, batches=[batch], context=context, budget_s=None, catalog=catalog)
    v = result.results[0].judgement
    line = sorted((r for r in v.rows if r.pp == 1 and r.ep == 1), key=lambda r: r.tp)
    lines = ", ".join(f"TP{r.tp}: {format_seconds(r.itl_s)} ({100 * r.comm_share:.0f}% comm"
                      f"{'' if r.fits_memory else ', does not fit in memory'})" for r in line)
    threshold = float(result.assumptions["comm_threshold"])
    crossing = next((r.tp for r in line if r.comm_share > threshold), None)
    top = line[-1]
    text = (f"Compute shrinks as 1/TP while the number of collectives per token stays the same and each "
            f"one's latency does not shrink at all. {cfg.name}, batch {batch}, on {system.name}: {lines}. "
            + (f"The planner's latency-optimal plan is {v.best.label()} ({format_seconds(v.best.itl_s)}, "
               f"{100 * v.best.comm_share:.0f}% communication)." if v.best else "No plan fits in memory."))
    if crossing is not None:
        take = (f"All-reduce limits sharding once its fixed latency times the calls per token is a visible "
                f"share of the token: on {system.name} communication passes {100 * threshold:.0f}% from TP{crossing}"
                + (", the latency-optimal plan is comm-bound." if v.comm_bound else "."))
    else:
        take = (f"On {system.name} communication stays under {100 * threshold:.0f}% up to TP{top.tp}: compute, not "
                f"the fabric, still sets the latency.")
    return Answer("When does all-reduce limit model sharding?", text,
                  {"system": system.name, "itl_s": {r.tp: r.itl_s for r in line},
                   "comm_share": {r.tp: r.comm_share for r in line}, "first_tp_over_threshold": crossing,
                   "best_plan": v.best_plan}, take)


def why_the_network_is_slow(cfg: ModelConfig, catalog: Catalog, system: System, *, batch: int = 1,
                            context: int = 4096) -> Answer:
    """TP inside one node against TP over two nodes of the same system, with the planner's verdict."""
    check_nodes(system, 2)
    msg = float(hidden_message_bytes(cfg, batch))
    g = system.gpus_per_node
    tp = _largest_tp(cfg, 2 * g)
    intra = collective_cost("all-reduce", msg, system, gpus=g, catalog=catalog)
    inter = collective_cost("all-reduce", msg, system, nodes=2, catalog=catalog)
    nic, nv_hop = system.nic_fabric, system.intra_fabric.hop_latency_s["ll"]
    v = plan(cfg, system, nodes=2, batches=[batch], context=context, budget_s=None, catalog=catalog).results[0].judgement
    rows = {r.key: r for r in v.rows}
    one, two = rows.get((g, 1, 1, 1)), rows.get((tp, 1, 1, 1))
    text = (f"A message between nodes goes GPU -> PCIe -> NIC -> switch -> NIC -> PCIe -> GPU, with an RDMA "
            f"handshake and a proxy thread on the way: NCCL models each network hop at "
            f"{format_seconds(nic.hop_latency_s['ll'])} (LL) against {format_seconds(nv_hop)} for a "
            f"{system.intra_fabric.name} hop, and Simple-protocol network hops at "
            f"{format_seconds(nic.hop_latency_s['simple'])}. The {format_bytes(msg)} all-reduce of a decode step "
            f"takes {format_seconds(intra.time_s)} on {g} GPUs in one node and {format_seconds(inter.time_s)} on "
            f"{2 * g} GPUs over 2 nodes of {system.nics_per_node}x {nic.name} ({inter.algorithm}).")
    if one and two and tp > g:
        gain = one.itl_s / two.itl_s - 1
        text += (f" TP{tp} across nodes gives {format_seconds(two.itl_s)} per token "
                 f"({100 * two.comm_share:.0f}% comm) against TP{g} in one node {format_seconds(one.itl_s)} "
                 f"({100 * one.comm_share:.0f}% comm): {100 * gain:+.0f}% for twice the GPUs.")
    best = v.best.label() if v.best else "none"
    crosses = v.best is not None and v.best.tp > g
    take = (f"On two nodes the planner's latency-optimal plan is {best}: "
            + ("crossing nodes with TP still pays here, but the network's per-message latency, paid on every "
               "collective, puts " f"{100 * v.best.comm_share:.0f}% of the token in communication."
               if crosses else
               "keep TP inside the NVLink domain and cross nodes with PP or DP; the network's bandwidth is fine "
               "for decode, its per-message latency is not."))
    return Answer(f"Why is {NETWORK_NAMES.get(nic.kind, nic.kind)} slow for decode parallelism?", text,
                  {"msg_bytes": msg, "intra_node_allreduce_s": intra.time_s, "inter_node_allreduce_s": inter.time_s,
                   "intra_hop_s": nv_hop, "network_hop_s": nic.hop_latency_s["ll"],
                   "one_node_itl_s": one.itl_s if one else None, "two_node_itl_s": two.itl_s if two else None,
                   "best_plan_two_nodes": v.best_plan}, take)


def explain(model: str | ModelConfig = "llama-3.1-70b", *, systems: Sequence[str] = DEFAULT_SYSTEMS,
            batch: int = 1, context: int = 4096, catalog: Catalog | None = None) -> list[Answer]:
    """Fabric A vs fabric B (two systems, default the same GPU on NVLink and on PCIe), when all-reduce
    limits sharding on A, and why crossing nodes is slow (on the first system with a network)."""
    catalog = catalog or load_catalog()
    cfg = load_model(model) if isinstance(model, str) else model
    validate_request(cfg, [batch], context)
    if len(systems) != 2:
        raise PlanError(f"explain compares two systems (--system A --system B), got {len(systems)}")
    pair = [catalog.system(s) for s in systems]
    answers = [fabric_vs_fabric(cfg, catalog, pair, batch=batch, context=context),
               when_allreduce_limits(cfg, catalog, pair[0], batch=batch, context=context)]
    networked = next((s for s in pair if s.nic_fabric is not None), None)
    if networked is not None:
        answers.append(why_the_network_is_slow(cfg, catalog, networked, batch=batch, context=context))
    return answers


__all__ = ["Answer", "DEFAULT_SYSTEMS", "explain", "fabric_vs_fabric", "when_allreduce_limits",
           "why_the_network_is_slow"]
