"""What a priced step hands up to the layers above: its time and parts on the (batch, context) grid
(`StepArrays`), each kind of collective it ran with its price (`PricedCall`), and its chief TP
all-reduce as the engine runs it (`AllReduceCall`: which kernel, algorithm and protocol, at what
time). Views read these records; they never price a step again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..comm.collectives import candidates
from ..comm.lines import pick
from ..engines.allreduce import KIND_WORDS


@dataclass(frozen=True)
class StepArrays:
    """One step's time and what it is made of, seconds, on the broadcast (batch, context) shape."""

    total_s: np.ndarray
    compute_s: np.ndarray
    comm_s: np.ndarray
    """Communication on the critical path, the ranks' skew included."""
    comm_latency_s: np.ndarray
    """Part of comm_s that is the collectives' latency terms (the rest is bandwidth and skew)."""
    other_s: np.ndarray
    """Host-bound time and per-step overhead: total minus compute minus communication."""
    launch_s: np.ndarray
    calls: float
    """Collectives per step."""


@dataclass(frozen=True)
class PricedCall:
    """One kind of collective of a step: how many per step, its message per rank and its time each."""

    op: str
    group: str
    """The ranks it spans: tp, ep, pp (model.CollectiveCall.group)."""
    count: int
    msg_bytes: float
    time_s: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class AllReduceCall:
    """The TP all-reduce of one step as the engine runs it: how many per token, which kernel, its time."""

    msg_bytes: float
    count: int
    time_s: float
    latency_s: float
    kind: str
    """The engine's choice at this size (engines.allreduce.KIND_WORDS' keys: one-shot, nccl, ...)."""
    algorithm: str
    protocol: str
    engine: str

    @property
    def words(self) -> str:
        """'vllm one-shot', 'NCCL ring/LL' (NCCL's own choice of algorithm and protocol)."""
        if self.kind == "nccl":
            return f"NCCL {self.algorithm}/{self.protocol.upper() if self.protocol != 'simple' else 'Simple'}"
        return f"{self.engine} {KIND_WORDS.get(self.kind, self.kind)}"

    def to_dict(self) -> dict:
        return {**asdict(self), "words": self.words}


def allreduce_calls(sm, calls: list, b: np.ndarray) -> list[AllReduceCall | None]:
    """At each batch of the 1-D `b`: the step's chief TP all-reduce (the most frequent, then the
    largest) among `calls` (the merged CollectiveCalls the step priced at those batches), priced as
    the step prices it, with the kernel the engine's rule picks at its size (None: no TP all-reduce).
    `sm` is the step.compose.StepModel that priced them."""
    tp = [c for c in calls if c.op == "all-reduce" and c.group == "tp"]
    if not tp:
        return [None] * len(b)
    msgs = [np.broadcast_to(np.asarray(c.msg_bytes, dtype=float), b.shape) for c in tp]
    times = [sm.comms.call_s(c, m)[0] for c, m in zip(tp, msgs)]
    out = []
    for i in range(len(b)):
        k = max(range(len(tp)), key=lambda j: (tp[j].count, msgs[j][i]))
        out.append(_engine_call(sm, float(msgs[k][i]), int(tp[k].count), float(times[k][i])))
    return out


def _engine_call(sm, msg: float, count: int, time_s: float) -> AllReduceCall:
    """The kernel, algorithm and protocol that run one TP all-reduce of `msg` bytes per rank."""
    ranges = sm.allreduce_ranges
    if sm.impl is not None:  # forced: that library's own choice
        line = pick(candidates(sm.groups["tp"], "all-reduce", sm.impl), msg)
        kind = "nccl" if line.impl == "nccl" else line.algorithm
    else:
        kind = (ranges.kinds + ranges.at_edge)[int(ranges.kind_index(np.array([msg]))[0])]
        line = pick(ranges.pools[kind], msg)
    return AllReduceCall(
        msg_bytes=msg,
        count=count,
        time_s=time_s,
        latency_s=float(line.latency_s),
        kind=kind if line.impl == "custom" or kind == "nccl" else "nccl",
        algorithm=line.algorithm,
        protocol=line.protocol,
        engine=sm.engine,
    )


def engine_call(sm, batch: int, context: float) -> AllReduceCall | None:
    """The chief TP all-reduce of step model `sm` at one batch and context, as it prices it."""
    return sm.tp_allreduces([batch], context)[0]


__all__ = ["AllReduceCall", "PricedCall", "StepArrays", "allreduce_calls", "engine_call"]
