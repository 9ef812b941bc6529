"""The three questions this tool exists for, answered from numbers computed on the spot."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .collectives import collective_cost, make_group
from .errors import PlanError
from .hardware import Catalog, load_catalog
from .model import ModelConfig, Plan, hidden_message_bytes, load_model, memory_bytes_per_gpu
from .planner import validate_request
from .settings import PlanSettings
from .step import decode_step
from .units import format_bytes, format_seconds


@dataclass(frozen=True)
class Answer:
    question: str
    text: str
    figures: dict
    takeaway: str

    def to_dict(self) -> dict:
        return asdict(self)


def nvlink_vs_pcie(cfg: ModelConfig, catalog: Catalog, batch: int = 1, context: int = 4096) -> Answer:
    msg = float(hidden_message_bytes(cfg, batch))  # bytes per rank: batch x hidden x bf16
    nv = collective_cost("all-reduce", msg, "hgx-h100", gpus=8, catalog=catalog)
    pc = collective_cost("all-reduce", msg, "l40s-pcie", gpus=8, catalog=catalog)
    itl_nv = decode_step(cfg, "hgx-h100", Plan(8), batch=batch, context=context, catalog=catalog)
    itl_pc = decode_step(cfg, "l40s-pcie", Plan(8), batch=batch, context=context, catalog=catalog)
    calls = itl_nv.comm_calls  # two per layer, plus the embedding and the LM head
    text = (f"A TP8 decode step of {cfg.name} at batch {batch} runs {calls} all-reduces of {format_bytes(msg)}. "
            f"Over NVSwitch (hgx-h100) each takes {format_seconds(nv.time_s)} ({nv.algorithm}/{nv.protocol}, "
            f"{100 * nv.latency_share:.0f}% latency); over PCIe Gen4 across two sockets (l40s-pcie) "
            f"{format_seconds(pc.time_s)} ({pc.time_s / nv.time_s:.1f}x). Per token that is "
            f"{format_seconds(itl_nv.comm_s)} of {format_seconds(itl_nv.total_s)} on NVLink "
            f"({100 * itl_nv.comm_share:.0f}%) against {format_seconds(itl_pc.comm_s)} of "
            f"{format_seconds(itl_pc.total_s)} on PCIe ({100 * itl_pc.comm_share:.0f}%).")
    big_batch = max(64, 4 * batch)
    big = float(hidden_message_bytes(cfg, big_batch))  # a large batch leaves the latency-bound regime
    nv64 = collective_cost("all-reduce", big, "hgx-h100", gpus=8, catalog=catalog)
    pc64 = collective_cost("all-reduce", big, "l40s-pcie", gpus=8, catalog=catalog)
    text += (f" At batch {big_batch} the message is {format_bytes(big)}: {format_seconds(nv64.time_s)} on NVSwitch against "
             f"{format_seconds(pc64.time_s)} on PCIe ({pc64.time_s / nv64.time_s:.1f}x), because PCIe's "
             f"{format_seconds(pc64.bandwidth_s)} of transfer now dominates.")
    return Answer("NVLink versus PCIe for tensor-parallel inference", text,
                  {"msg_bytes": msg, "nvlink_allreduce_s": nv.time_s, "pcie_allreduce_s": pc.time_s,
                   "ratio": pc.time_s / nv.time_s, "nvlink_comm_share": itl_nv.comm_share,
                   "pcie_comm_share": itl_pc.comm_share, "batch64_ratio": pc64.time_s / nv64.time_s},
                  f"NVLink keeps each all-reduce near its {format_seconds(nv.latency_s)} latency floor; PCIe pays "
                  f"{pc.time_s / nv.time_s:.1f}x per call at batch {batch} and {pc64.time_s / nv64.time_s:.1f}x at "
                  f"batch {big_batch}, so TP over PCIe buys less and stops paying sooner.")


def when_allreduce_limits(cfg: ModelConfig, catalog: Catalog, batch: int = 1, context: int = 4096,
                          system: str = "hgx-h100", threshold: float = 0.30) -> Answer:
    rows, fits = [], {}
    settings = PlanSettings()  # the planner's defaults: memory utilisation and workspace
    capacity = catalog.system(system).gpu.memory_bytes * settings.memory_utilization
    for tp in (1, 2, 4, 8):
        try:
            st = decode_step(cfg, system, Plan(tp), batch=batch, context=context, catalog=catalog)
        except PlanError:  # a TP the model's heads do not allow
            continue
        rows.append((tp, st))
        fits[tp] = memory_bytes_per_gpu(cfg, tp=tp, batch=batch, context=context,
                                        workspace_bytes=settings.workspace_bytes) <= capacity
    lines = ", ".join(f"TP{tp}: {format_seconds(st.total_s)} ({100 * st.comm_share:.0f}% comm"
                      f"{'' if fits[tp] else ', does not fit in memory'})" for tp, st in rows)
    crossing = next((tp for tp, st in rows if st.comm_share > threshold), None)
    per_call = rows[-1][1].comm_s / max(rows[-1][1].comm_calls, 1)
    calls = max(st.comm_calls for _, st in rows)
    text = (f"Compute shrinks as 1/TP while the number of all-reduces per token stays {calls} and "
            f"each one's latency does not shrink at all. {cfg.name}, batch {batch}, on {system}: {lines}. "
            f"At TP{rows[-1][0]} one all-reduce costs {format_seconds(per_call)}.")
    take = (f"All-reduce limits sharding once its fixed latency x {calls} calls is a visible share of "
            f"the token: here from TP{crossing}." if crossing else
            f"On {system} communication stays under {100 * threshold:.0f}% up to TP{rows[-1][0]}: compute, not the "
            f"fabric, still sets the latency.")
    return Answer("When does all-reduce limit model sharding?", text,
                  {"system": system, "itl_s": {tp: st.total_s for tp, st in rows},
                   "comm_share": {tp: st.comm_share for tp, st in rows}, "first_tp_over_threshold": crossing}, take)


def why_infiniband_is_slow(cfg: ModelConfig, catalog: Catalog, batch: int = 1, context: int = 4096) -> Answer:
    msg = float(hidden_message_bytes(cfg, batch))
    sysm = catalog.system("hgx-h100")
    intra = collective_cost("all-reduce", msg, sysm, gpus=8, catalog=catalog)
    inter = collective_cost("all-reduce", msg, sysm, nodes=2, catalog=catalog)
    nic = sysm.nic_fabric
    nv_hop = sysm.intra_fabric.hop_latency_s["ll"]
    net_hop = nic.hop_latency_s["ll"]
    one = decode_step(cfg, sysm, Plan(8), batch=batch, context=context, catalog=catalog)
    two = decode_step(cfg, sysm, Plan(16), batch=batch, context=context, nodes=2, catalog=catalog)
    text = (f"A message between nodes goes GPU -> PCIe -> NIC -> switch -> NIC -> PCIe -> GPU, with an RDMA "
            f"handshake and a proxy thread on the way: NCCL models each network hop at {format_seconds(net_hop)} "
            f"(LL) against {format_seconds(nv_hop)} for an NVLink hop, and Simple-protocol network hops at "
            f"{format_seconds(nic.hop_latency_s['simple'])}. The {format_bytes(msg)} all-reduce of a decode step takes "
            f"{format_seconds(intra.time_s)} on 8 GPUs in one node and {format_seconds(inter.time_s)} on 16 GPUs over "
            f"2 nodes of {sysm.nics_per_node}x {nic.name} ({inter.algorithm}). TP16 across nodes gives "
            f"{format_seconds(two.total_s)} per token ({100 * two.comm_share:.0f}% comm) against TP8 in one node "
            f"{format_seconds(one.total_s)} ({100 * one.comm_share:.0f}% comm).")
    take = ("InfiniBand's bandwidth is fine for decode; its per-message latency, paid on every one of "
            f"{one.comm_calls} all-reduces per token, is what makes cross-node TP a poor trade: keep TP inside "
            "the NVLink domain and cross nodes with PP or DP.")
    return Answer("Why is InfiniBand slow for decode parallelism?", text,
                  {"msg_bytes": msg, "intra_node_allreduce_s": intra.time_s, "inter_node_allreduce_s": inter.time_s,
                   "nvlink_hop_s": nv_hop, "network_hop_s": net_hop, "tp8_itl_s": one.total_s,
                   "tp16_2node_itl_s": two.total_s}, take)


def explain(model: str = "llama-3.1-70b", *, batch: int = 1, context: int = 4096,
            catalog: Catalog | None = None) -> list[Answer]:
    catalog = catalog or load_catalog()
    cfg = load_model(model)
    validate_request(cfg, [batch], context)
    make_group("hgx-h100", catalog=catalog)  # fails early, clearly, if a user catalog broke it
    return [nvlink_vs_pcie(cfg, catalog, batch, context), when_allreduce_limits(cfg, catalog, batch, context),
            why_infiniband_is_slow(cfg, catalog, batch, context)]
