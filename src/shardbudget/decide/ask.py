"""What `explain`'s answers share: the request with the planner's sweeps its answers share (`Ask`,
which prices exactly as `plan` does) and the answer and the explanation as data. The TP all-reduce
an answer quotes is the one a plan row carries (step.records.AllReduceCall).
Every ratio an answer quotes is computed from the numbers as printed (`shown`), so that a reader can
check it by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

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
        return {
            "question": self.question,
            "text": self.text,
            "figures": self.figures,
            "takeaway": self.takeaway,
            "tables": [t.to_dict() for t in self.tables],
        }


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
    notes: tuple[str, ...] = ()
    """Said before the answers: that a system asked about is a degraded profile (step.scenario.degraded_note)."""
    release: str = ""
    """The engine release priced ('0.34.0': engines/*.toml [engine] version)."""
    nccl: str = ""
    """The NCCL release priced, in the header's words (release_words.nccl_words)."""

    def __iter__(self):
        return iter(self.answers)

    def __len__(self) -> int:
        return len(self.answers)

    def __getitem__(self, i: int) -> Answer:
        return self.answers[i]

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "systems": list(self.systems),
            "engine": self.engine,
            "batch": self.batch,
            "context": self.context,
            "nodes": self.nodes,
            "dtype": self.dtype,
            "budget_s": self.budget_s,
            "release": self.release,
            "nccl": self.nccl,
            "answers": [a.to_dict() for a in self.answers],
            "notes": list(self.notes),
        }


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

    def row(
        self, system: System, key: tuple[int, int, int, int], nodes: int = 1, batch: int | None = None
    ) -> Row | None:
        b = self.batch if batch is None else batch
        res = self.plan(system, nodes, (b,))
        return next((r for r in res.results[0].rows if r.key == key), None)

    def step(self, system: System, p: Plan) -> StepModel:
        """The decode step `plan` priced that plan's row with (the same cached object)."""
        return self.req.scenario.on(system).step(p, "decode")


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


__all__ = ["Answer", "Ask", "ExplainError", "Explanation", "Table", "largest_tp", "ratio", "shown"]
