"""What `explain`'s answers share: the request with the planner's sweeps its answers share (`Ask`,
which prices exactly as `plan` does), the answer and the explanation as data, and the TP
all-reduce as the engine runs it (`engine_call`).
Every ratio an answer quotes is computed from the numbers as printed (`shown`), so that a reader can
check it by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from ..comm.collectives import candidates
from ..comm.lines import pick
from ..engines.allreduce import KIND_WORDS
from ..errors import PlanError
from ..fabric.hardware import Catalog, System
from ..model import ModelConfig, Plan
from ..model.plan import check_tp
from ..step.compose import StepModel
from ..units import format_seconds, parse_seconds
from .planner import PlanResult, plan
from .request import Request
from .verdicts import Row


class ExplainError(PlanError):
    """A request `explain` cannot answer (a system with nothing to compare it with)."""


@dataclass(frozen=True)
class Table:
    """A table an answer prints: column headers and rows of printed cells."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def to_dict(self) -> dict:
        return {"columns": list(self.columns), "rows": [list(r) for r in self.rows]}


@dataclass(frozen=True)
class Answer:
    question: str
    text: str
    figures: dict
    takeaway: str
    tables: tuple[Table, ...] = ()

    def to_dict(self) -> dict:
        return {"question": self.question, "text": self.text, "figures": self.figures, "takeaway": self.takeaway,
                "tables": [t.to_dict() for t in self.tables]}


@dataclass(frozen=True)
class Explanation:
    """The three answers of one request, with the request they answer."""

    model: str
    systems: tuple[str, ...]
    engine: str
    batch: int
    context: int
    nodes: int
    dtype: str | None
    budget_s: float | None
    answers: tuple[Answer, ...]

    def __iter__(self):
        return iter(self.answers)

    def __len__(self) -> int:
        return len(self.answers)

    def __getitem__(self, i: int) -> Answer:
        return self.answers[i]

    def to_dict(self) -> dict:
        return {"model": self.model, "systems": list(self.systems), "engine": self.engine, "batch": self.batch,
                "context": self.context, "nodes": self.nodes, "dtype": self.dtype, "budget_s": self.budget_s,
                "answers": [a.to_dict() for a in self.answers]}


def shown(t_s: float) -> float:
    """A time as it is printed (format_seconds, four significant digits), read back: the number a
    quoted ratio is computed from."""
    return parse_seconds(format_seconds(t_s))


def ratio(a_s: float, b_s: float) -> float:
    """a / b of the printed times."""
    return shown(a_s) / shown(b_s)


@dataclass(frozen=True)
class Ask:
    """One `explain` request and the planner's sweeps its answers share. It holds no option of its
    own: every answer prices with `req` (the request `plan` and `deploy` take), on the request's
    system or on another (a what-if, a second system), through `plan` and `Scenario.step`."""

    req: Request
    results: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def cfg(self) -> ModelConfig:
        return self.req.model

    @property
    def catalog(self) -> Catalog:
        return self.req.scenario.catalog

    @property
    def engine(self) -> str:
        return self.req.scenario.engine

    @property
    def batch(self) -> int:
        return self.req.batches[0]

    @property
    def context(self) -> int:
        return self.req.decode_workload.context

    @property
    def budget_s(self) -> float | None:
        return self.req.budgets.budget_s

    @property
    def comm_threshold(self) -> float:
        return self.req.budgets.comm_threshold

    def plan(self, system: System, nodes: int = 1, batches: Sequence[int] | None = None) -> PlanResult:
        """`planner.plan` of this request on `system` (remembered: the answers share their sweeps)."""
        batches = tuple(batches or (self.batch,))
        key = (id(system), nodes, batches)
        if key not in self.results:
            self.results[key] = (system, plan(self.req.on(system, nodes).at(batches)))
        return self.results[key][1]

    def row(self, system: System, key: tuple[int, int, int, int], nodes: int = 1, batch: int | None = None) -> Row | None:
        b = self.batch if batch is None else batch
        res = self.plan(system, nodes, (b,))
        return next((r for r in res.results[0].rows if r.key == key), None)

    def step(self, system: System, p: Plan) -> StepModel:
        """The decode step `plan` priced that plan's row with (the same cached object)."""
        return self.req.scenario.on(system).step(p, "decode")


# --- the call the engine runs -------------------------------------------------------------

@dataclass(frozen=True)
class Call:
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


def engine_call(sm: StepModel, batch: int, context: float) -> Call | None:
    """The step's chief TP all-reduce (the most frequent), priced as the step prices it, with the
    kernel the engine's rule picks at its size (None: the plan has no TP all-reduce)."""
    calls = [c for c in sm.collective_calls(batch, context) if c["op"] == "all-reduce" and c["group"] == "tp"]
    if not calls:
        return None
    c = max(calls, key=lambda c: (c["count"], c["msg_bytes"]))
    msg, ranges = c["msg_bytes"], sm.allreduce_ranges
    if sm.impl is not None:  # forced: that library's own choice
        line = pick(candidates(sm.groups["tp"], "all-reduce", sm.impl), msg)
        kind = "nccl" if line.impl == "nccl" else line.algorithm
    else:
        kind = (ranges.kinds + ranges.at_edge)[int(ranges.kind_index(np.array([msg]))[0])]
        line = pick(ranges.pools[kind], msg)
    return Call(msg_bytes=msg, count=int(c["count"]), time_s=float(c["time_s"]), latency_s=float(line.latency_s),
                kind=kind if line.impl == "custom" or kind == "nccl" else "nccl", algorithm=line.algorithm,
                protocol=line.protocol, engine=sm.engine)


def largest_tp(cfg: ModelConfig, gpus: int) -> int:
    """The largest power-of-two TP up to `gpus` that the model's heads allow."""
    tp = 1
    while tp * 2 <= gpus:
        try:
            check_tp(cfg, tp * 2)
        except PlanError:
            break
        tp *= 2
    return tp


__all__ = ["Answer", "Ask", "Call", "ExplainError", "Explanation", "Table", "engine_call", "largest_tp", "ratio", "shown"]
