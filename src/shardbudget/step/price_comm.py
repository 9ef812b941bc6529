"""Pricing the collectives of a step: which ranks each call spans, the kernel that runs it (the
engine's all-reduce rule for TP all-reduces, NCCL's tuner or a forced implementation for the rest),
and its time on the call's message array, remembered across the plans of a sweep.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..comm.collectives import Group, candidates, make_group, times_and_latencies_s
from ..comm.moe_a2a import DISPATCH_WIRE, moe_lines
from ..comm.op import CollectiveOp
from ..engines.allreduce import AllReduceRanges, allreduce_ranges_for, engine_allreduce_s
from ..engines.presets import load_engine
from ..errors import PlanError
from ..fabric.hardware import Catalog, System
from ..model import CollectiveCall, ModelConfig, Plan, Precision, hidden_message_bytes


def tp_group(system: System, plan: Plan, catalog: Catalog) -> Group:
    """TP ranks fill a node first; TP beyond one node spans whole nodes over the scale-out network."""
    gpn = system.gpus_per_node
    if plan.tp <= gpn:
        return make_group(system, nodes=1, gpus=plan.tp, catalog=catalog)
    if plan.tp % gpn:
        raise PlanError(f"tp ({plan.tp}) larger than a node ({gpn} GPUs) must be a multiple of it")
    return make_group(system, nodes=plan.tp // gpn, gpus=plan.tp, catalog=catalog)


def pp_group(system: System, plan: Plan, catalog: Catalog) -> Group:
    """Neighbouring stages: in the same node while tp x pp fits in one, else across the network."""
    same_node = plan.tp * plan.pp <= system.gpus_per_node
    return make_group(system, nodes=1 if same_node else 2, gpus=2, catalog=catalog)


@dataclass(frozen=True, kw_only=True)
class CommPricer:
    """Collective times of one model's plan on one system under one engine."""

    model: ModelConfig
    system: System
    plan: Plan
    catalog: Catalog
    impl: str | None
    """nccl or custom forces that implementation for every all-reduce; None lets `engine` decide."""
    engine: str
    precision: Precision
    moe_a2a: str = "nccl"
    """What runs the MoE dispatch and combine (comm/moe_a2a.py BACKENDS)."""
    phase: str = "decode"
    """decode or prefill: DeepEP's mode under `moe_a2a="deepep"`."""

    @cached_property
    def groups(self) -> dict[str, Group | None]:
        """The ranks each CollectiveCall.group names (expert ranks are the TP group)."""
        tp = tp_group(self.system, self.plan, self.catalog) if self.plan.tp > 1 else None
        pp = pp_group(self.system, self.plan, self.catalog) if self.plan.pp > 1 else None
        return {"tp": tp, "ep": tp, "pp": pp}

    @cached_property
    def allreduce_ranges(self) -> AllReduceRanges | None:
        """Which kernel the engine runs for the TP all-reduce at each size (None without TP)."""
        group = self.groups["tp"]
        if group is None:
            return None
        per_token = float(hidden_message_bytes(self.model, 1.0, self.precision.activations))
        return allreduce_ranges_for(self.engine, group, per_token)

    def comm_s(self, calls: list[CollectiveCall], shape: tuple) -> tuple[np.ndarray, np.ndarray]:
        """Time and latency part of every collective, priced on its message array."""
        comm, lat = np.zeros(()), np.zeros(())
        for call in calls:
            t, latency = self.call_s(call, np.asarray(call.msg_bytes, dtype=float))
            comm, lat = comm + call.count * t, lat + call.count * latency
        return np.broadcast_to(comm, shape).copy(), np.broadcast_to(lat, shape).copy()

    def call_s(self, call: CollectiveCall, msg_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One call's (time, latency part): the engine's all-reduce rule for TP all-reduces, NCCL's
        tuner (or the forced implementation) for everything else; the MoE dispatch and combine as
        `moe_a2a` runs them (NCCL's all-to-all or DeepEP's mode for the phase)."""
        group = self.groups[call.group]
        if self.impl is None and call.op == CollectiveOp.ALL_REDUCE and call.group == "tp":
            return _priced(engine_allreduce_s, self.allreduce_ranges, msg_bytes)
        if call.op == CollectiveOp.ALL_TO_ALL and call.group == "ep" and self.moe_a2a != "nccl":
            lines = moe_lines(group, self.moe_a2a, self.phase, max(1, self.model.experts_per_token))
            return _priced(times_and_latencies_s, lines, msg_bytes)
        if call.op == CollectiveOp.ALL_TO_ALL and call.group == "ep" and self.gathers_tokens:
            return self._gathered_s(group, msg_bytes)
        return _priced(times_and_latencies_s, candidates(group, call.op, self.impl or "nccl"), msg_bytes)

    @cached_property
    def gathers_tokens(self) -> bool:
        """The MoE layers of this DP-attention group reach their experts by gathering every rank's
        tokens and reduce-scattering the outputs (the engine's default dispatch, EnginePreset.moe_dispatch),
        not by an all-to-all of each token's expert copies."""
        p = self.plan
        return p.dp > 1 and p.tp // p.dp == 1 and load_engine(self.engine).moe_dispatch == "allgather-reducescatter"

    def _gathered_s(self, group: Group, msg_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One of a dispatch + combine pair (the call's count is 2) as `gathers_tokens` runs them:
        half of an all-gather (of the tokens quantized to the experts' input where the engine does
        so first: DISPATCH_WIRE) and a reduce-scatter (BF16) of every rank's hidden states. The all-to-all's
        message is each rank's expert copies (model.comms.dispatch_bytes: tokens x top-k x hidden /
        ep), so every token's hidden state is that x ep / top-k."""
        hidden = msg_bytes * self.plan.ep / max(1, self.model.experts_per_token)
        impl = self.impl or "nccl"
        preset = load_engine(self.engine)
        experts = self.precision.expert_weights or self.precision.weights
        wire = DISPATCH_WIRE.get(experts, 1.0) if preset.moe_dispatch_quantized else 1.0
        t_ag, l_ag = _priced(times_and_latencies_s, candidates(group, CollectiveOp.ALL_GATHER, impl), hidden * wire)
        t_rs, l_rs = _priced(times_and_latencies_s, candidates(group, CollectiveOp.REDUCE_SCATTER, impl), hidden)
        return (t_ag + t_rs) / 2, (l_ag + l_rs) / 2


_PRICES: dict[tuple, tuple] = {}
_PRICES_MAX = 512
"""Collective prices remembered, by (line set, message array): the plans of one sweep that share a
TP group (every EP and DP variant, every replica count) send the same messages over it."""


def _priced(price, lines, msg_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """price(lines, msg_bytes), remembered. `lines` (NCCL's candidates or an engine's all-reduce
    ranges) come from lru caches, so one object stands for one group and op: it is the key, and
    is kept beside the result so that its id cannot be reused while the entry lives."""
    key = (price, id(lines), msg_bytes.tobytes(), msg_bytes.shape)
    hit = _PRICES.get(key)
    if hit is not None and hit[0] is lines:
        return hit[1]
    result = price(lines, msg_bytes)
    for a in result:
        if isinstance(a, np.ndarray):
            a.setflags(write=False)  # shared: nobody may change it in place
    if len(_PRICES) >= _PRICES_MAX:
        _PRICES.pop(next(iter(_PRICES)))
    _PRICES[key] = (lines, result)
    return result


def merged(calls: list[CollectiveCall]) -> list[CollectiveCall]:
    """Calls of the same op, group and message size as one call with their counts summed (dense and
    MoE layers insert the same all-reduce): each distinct collective is priced once."""
    out: list[CollectiveCall] = []
    for call in calls:
        for i, seen in enumerate(out):
            if (seen.op, seen.group) == (call.op, call.group) and np.array_equal(seen.msg_bytes, call.msg_bytes):
                out[i] = CollectiveCall(seen.op, seen.msg_bytes, seen.group, seen.count + call.count)
                break
        else:
            out.append(call)
    return out
