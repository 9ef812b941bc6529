"""One request, built once at the boundary and checked here: the scenario (step.scenario: what is
priced), the budgets and thresholds a plan is judged by, the workload, the batches asked about and
the measured jitter of the calls.

`plan`, `deploy`, `explain`, `compare` and the report all take a `Request`; the CLI builds it from
one shared option group (cli/options.py), a library caller with `request(...)`, the one function
that turns names into objects. Its defaults are `shardbudget.defaults`'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .. import defaults
from ..errors import PlanError
from ..fabric.hardware import Catalog, System
from ..model import ModelConfig, Precision
from ..step.scenario import Scenario, scenario
from ..step.settings import Efficiency, PlanSettings

if TYPE_CHECKING:  # tail_plan reads logs, speculative is deploy's: neither is loaded by `plan`
    from ..step.speculative import Speculation
    from .cost import Pricing
    from .tail_plan import Jitter


@dataclass(frozen=True, kw_only=True)
class Budgets:
    """What a plan must meet and the thresholds of the verdicts, validated once for every caller."""

    budget_s: float | None = defaults.BUDGET_S
    """Budget per output token, seconds (None: no budget): on the TPOT or the ITL, as the question's
    workload says (Workload.judged)."""
    ttft_budget_s: float | None = None
    comm_threshold: float = defaults.COMM_THRESHOLD
    """Communication share of the judged time (TPOT or ITL) above which a plan is flagged comm-bound
    (a warning)."""
    knee_threshold: float = defaults.KNEE_THRESHOLD
    """Gain below which the next TP is not worth it (the latency-optimal TP)."""

    def __post_init__(self) -> None:
        for name, v in (("budget (--budget)", self.budget_s), ("ttft budget (--ttft-budget)", self.ttft_budget_s)):
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise PlanError(f"{name} must be a positive time, got {v!r}")
        for name, v in (
            ("comm_threshold (--comm-threshold)", self.comm_threshold),
            ("knee_threshold (--knee-threshold)", self.knee_threshold),
        ):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
                raise PlanError(f"{name} must be between 0 and 1, got {v!r}")


@dataclass(frozen=True, kw_only=True)
class Workload:
    """What each sequence does: a prompt of `input_len` tokens and `output_len` generated tokens
    (served: prompts mixed into the decode steps), or (`context`) a fixed KV context, decode only;
    optionally with speculative decoding."""

    input_len: int = defaults.INPUT_TOKENS
    output_len: int = defaults.OUTPUT_TOKENS
    context: int | None = None
    speculation: Speculation | None = None

    def __post_init__(self) -> None:
        for name in ("input_len", "output_len"):
            _whole(f"{name.replace('_', '-')}", getattr(self, name), "tokens")
        if self.context is not None:
            _whole("context", self.context, "tokens")

    @property
    def served(self) -> tuple[int, int] | None:
        """(input_len, output_len) of a served workload; None for a decode-only one."""
        return None if self.context else (self.input_len, self.output_len)

    @property
    def judged(self) -> str:
        """What a budget judges under this workload, in every view's words (issue 34): the TPOT, time
        per output token with the other requests' prompts mixed in, where prompts are served (or a
        speculative step yields several tokens); else the ITL, one decode step (equal to the TPOT
        there: nothing else rides in the step)."""
        return "TPOT" if self.served or self.speculation is not None else "ITL"

    @property
    def judged_words(self) -> str:
        """The header's sentence: which time the budget judges, and what it is."""
        if self.served:
            return (
                "the budget judges the TPOT: time per output token, the decode step with the other requests' "
                "prompts mixed in (chunked prefill); comm % counts the prompts' collectives"
            )
        if self.speculation is not None:
            return (
                "the budget judges the TPOT: time per output token, a verify step and its drafts over the "
                "tokens it yields; no prompt mixed in"
            )
        return "the budget judges the ITL: one decode step, no prompt mixed in"

    @property
    def mean_context(self) -> float:
        """Cached tokens a decode step attends over on average."""
        return float(self.context) if self.context else self.input_len + self.output_len / 2

    @property
    def max_context(self) -> int:
        """The longest a sequence gets: what the KV cache must hold for each."""
        return self.context or self.input_len + self.output_len


@dataclass(frozen=True, kw_only=True)
class Request:
    """Everything one question is answered from (module docstring)."""

    scenario: Scenario
    budgets: Budgets = Budgets()
    workload: Workload | None = None
    """None: the question's own default: plan and explain decode at a context of
    defaults.CONTEXT_TOKENS; deploy serves defaults.INPUT_TOKENS / OUTPUT_TOKENS."""
    batches: tuple[int, ...] = defaults.BATCHES
    """Decode batches plan and explain answer for (explain: the first)."""
    jitter: Jitter | None = None
    """Measured per-iteration times of the calls (--jitter): the ITL's p99 beside its mean."""
    pp_all: bool = False
    """plan: sweep every PP degree, not only those that fill the nodes."""
    pricing: Pricing | None = None
    """deploy's objective and the user's GPU-hour price and board power (decide.cost); None: by
    throughput, at the catalog's prices."""

    def __post_init__(self) -> None:
        if not isinstance(self.scenario, Scenario):
            raise PlanError(f"a request needs a Scenario (step.scenario.scenario), got {type(self.scenario).__name__}")
        object.__setattr__(self, "batches", tuple(self.batches))
        if not self.batches:
            raise PlanError("a request needs at least one batch size")
        for b in self.batches:
            if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1:
                raise PlanError(f"batch must be a whole number of at least 1, got {b!r}")
        if self.jitter is not None and self.workload is not None and self.workload.speculation is not None:
            raise PlanError(
                "--jitter with --speculative: a speculative token's tail also depends on how many drafts "
                "each step accepts, which is not modelled; drop one of them"
            )
        if self.workload is not None:
            self.check_length(self.workload)

    def check_length(self, work: Workload) -> None:
        """Refuse a workload whose sequences outgrow the model's context window."""
        cfg, tokens = self.scenario.model, work.max_context
        if not cfg.max_position_embeddings or tokens <= cfg.max_position_embeddings:
            return
        if work.context:
            raise PlanError(f"context {tokens} exceeds {cfg.name}'s maximum of {cfg.max_position_embeddings} tokens")
        raise PlanError(f"a sequence of {tokens} tokens exceeds {cfg.name}'s maximum of {cfg.max_position_embeddings}")

    @property
    def model(self) -> ModelConfig:
        return self.scenario.model

    @property
    def system(self) -> System:
        return self.scenario.system

    @property
    def decode_workload(self) -> Workload:
        """The workload of plan's and explain's question: the one asked, else decode only at the
        default context."""
        return self.workload or Workload(context=defaults.CONTEXT_TOKENS)

    @property
    def served_workload(self) -> Workload:
        """The workload of deploy's question: the one asked, else the default served one."""
        return self.workload or Workload()

    def on(self, system: System, nodes: int | None = None) -> Request:
        """This request on another system (explain's what-ifs, the report's systems)."""
        return replace(self, scenario=self.scenario.on(system, nodes))

    def with_engine(self, engine: str) -> Request:
        return replace(self, scenario=self.scenario.with_engine(engine))

    def at(self, batches: Sequence[int]) -> Request:
        return replace(self, batches=tuple(batches))


def _whole(name: str, v, unit: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise PlanError(f"{name} must be a whole number of {unit}, at least 1, got {v!r}")


def workload(
    *,
    context: int | None = None,
    input_len: int | None = None,
    output_len: int | None = None,
    speculation: Speculation | None = None,
) -> Workload | None:
    """The workload these options give: decode only at `context`, served at `input_len` /
    `output_len` (either alone takes the other's default), or None where none is given."""
    if context is not None and (input_len is not None or output_len is not None):
        raise PlanError("give --context (decode only) or --input-len/--output-len (served), not both")
    if context is not None:
        return Workload(context=context, speculation=speculation)
    if input_len is None and output_len is None:
        return Workload(speculation=speculation) if speculation is not None else None
    return Workload(
        input_len=defaults.INPUT_TOKENS if input_len is None else input_len,
        output_len=defaults.OUTPUT_TOKENS if output_len is None else output_len,
        speculation=speculation,
    )


def request(
    model: str | ModelConfig,
    system: str | System,
    *,
    nodes: int | None = None,
    batches: Sequence[int] = defaults.BATCHES,
    context: int | None = None,
    input_len: int | None = None,
    output_len: int | None = None,
    work: Workload | None = None,
    budget_s: float | None = defaults.BUDGET_S,
    ttft_budget_s: float | None = None,
    comm_threshold: float = defaults.COMM_THRESHOLD,
    knee_threshold: float = defaults.KNEE_THRESHOLD,
    engine: str = defaults.DEFAULT_ENGINE,
    impl: str | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    settings: PlanSettings = PlanSettings(),
    catalog: Catalog | None = None,
    eff: Efficiency | None = None,
    precision: Precision | None = None,
    jitter: Jitter | None = None,
    pp_all: bool = False,
    pricing: Pricing | None = None,
) -> Request:
    """The request these names and numbers describe, every one checked: the library's way to ask
    (the CLI builds the same objects from its options). `work` is a whole Workload; `context`, or
    `input_len` / `output_len`, build one (not both)."""
    budgets = Budgets(
        budget_s=budget_s, ttft_budget_s=ttft_budget_s, comm_threshold=comm_threshold, knee_threshold=knee_threshold
    )
    if work is not None and (context, input_len, output_len) != (None, None, None):
        raise PlanError("give a Workload or --context / --input-len / --output-len, not both")
    sc = scenario(
        model,
        system,
        nodes=nodes,
        engine=engine,
        dtype=dtype,
        kv_dtype=kv_dtype,
        impl=impl,
        settings=settings,
        catalog=catalog,
        eff=eff,
        precision=precision,
    )
    return Request(
        scenario=sc,
        budgets=budgets,
        workload=work or workload(context=context, input_len=input_len, output_len=output_len),
        batches=tuple(batches),
        jitter=jitter,
        pp_all=pp_all,
        pricing=pricing,
    )


__all__ = ["Budgets", "Request", "Workload", "request", "workload"]
