"""Every answer the HTML report (and the demo) shows, priced once for one request: each system's
plan, how to spend its GPUs, the fabric sweep, the three questions, the measurements beside the
model, and the interactive section's grid (report_grid). The report's pages only read this record.

`answer_report` checks the whole request (systems, nodes, model, measurement files) before any long
work, so that a typo fails in a second, not after the sweeps.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from .. import defaults
from ..comm.collectives import Cost, Group, crossover_bytes, make_group, sweep
from ..comm.op import CollectiveOp
from ..errors import PlanError, ShardbudgetError
from ..measure.logs.read import read_log
from ..model import hidden_message_bytes
from .compare import effective_impl
from .deploy import DeployResult, deploy
from .measured import MeasuredEntry, measured_entry
from .planner import PlanResult, plan
from .questions import explain
from .report_grid import GridAnswers, answer_grid, check_budget_steps, deploy_request
from .request import Request, request

DEMO_MODEL = "llama-3.1-70b"
DEMO_SYSTEMS = ("hgx-h100", "l40s-pcie-switch", "hgx-h100:2")
DEMO_BATCHES = (1, 64)
DEMO_CONTEXT = 4096
DEMO_BUDGET_S = 0.050
DEMO_DTYPE = "bf16"
"""The demo's one well-known case (`shardbudget demo`): Llama-3.1-70B in bf16, decode at batch 1 and 64
with 4096 tokens of context, a 50 ms budget, on an HGX H100 (NVSwitch), eight L40S on PCIe across two
sockets (the catalog's healthy PCIe reference: P2P under each socket's switch, host-staged across; issue
34: not the degraded EPYC-in-NPS1 box), and two HGX H100 nodes joined by InfiniBand NDR: three machines
that differ mainly by fabric."""

Progress = Callable[[str, int, int], None]
"""progress(what, done, total): called before each long step."""

FABRIC_OP = CollectiveOp.ALL_REDUCE
# Message sizes of the fabric sweep: 8 B to 1 GiB, 16 points per factor of 2^5 (smooth on a log axis).
SWEEP_MIN_BYTES, SWEEP_MAX_BYTES, SWEEP_POINTS = 8.0, float(2**30), 106
REFERENCE_BYTES = (8.0, float(2**16), float(2**20), float(2**24), float(2**28), float(2**30))
"""Sizes the fabric table shows beside the messages the model sends."""


@dataclass(frozen=True)
class SystemSpec:
    """A system of the catalog on `nodes` nodes ('hgx-h100:2' on the command line)."""

    name: str
    nodes: int = 1

    @property
    def label(self) -> str:
        return self.name if self.nodes == 1 else f"{self.nodes}× {self.name}"


def parse_system_spec(text: str, default_nodes: int = 1) -> SystemSpec:
    """'hgx-h100' (default_nodes nodes) or 'hgx-h100:2' (two nodes)."""
    if not isinstance(text, str) or not text.strip():
        raise PlanError(f"system {text!r} must be a catalog name, optionally with ':N' nodes (hgx-h100:2)")
    name, sep, count = text.strip().partition(":")
    if not sep:
        return SystemSpec(name, default_nodes)
    if not count.strip().isdigit() or int(count) < 1:
        raise PlanError(
            f"system {text!r}: the node count after ':' must be a whole number of at least 1 (e.g. hgx-h100:2)"
        )
    return SystemSpec(name.strip(), int(count))


@dataclass(frozen=True, kw_only=True)
class FabricCurve:
    """FABRIC_OP on every GPU of one system, over the sweep's message sizes."""

    label: str
    """'hgx-h100 ×8': the system and its GPU count."""
    costs: tuple[Cost, ...]
    """Per message size of the sweep, smallest first."""
    crossover_bytes: float
    """Message size per rank where the bandwidth term overtakes the latency term (inf: never)."""
    group: Group
    impl: str
    """The implementation the costs are priced with ('custom' falls back to 'nccl' where it cannot run)."""
    table: tuple[Cost, ...]
    """At the fabric table's sizes (`ReportAnswers.table_sizes`), in that order."""


@dataclass(frozen=True, kw_only=True)
class ReportSettings:
    """What the report was asked, as its pages and its JSON state it."""

    model: str
    systems: list[str]
    """The systems' labels ('hgx-h100', '2× hgx-h100')."""
    batches: list[int]
    context: int
    budget_s: float | None
    ttft_budget_s: float | None
    impl: str | None
    engine: str
    dtype: str | None
    op: CollectiveOp = FABRIC_OP

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class ReportAnswers:
    """Everything the report shows, priced once for one request on each of its systems."""

    request: Request
    """The request every section answers (each system's plan is this request on that system)."""
    specs: tuple[SystemSpec, ...]
    settings: ReportSettings
    plans: tuple[PlanResult, ...]
    """One per system."""
    deployments: tuple[DeployResult | str, ...]
    """Per system: how to spend all its GPUs as `deploy --gpus N` answers with its defaults (served:
    report_grid.deploy_request), or why there is no answer."""
    fabric: tuple[FabricCurve, ...]
    marks: tuple[tuple[float, str], ...]
    """(message bytes per rank, what sends it): a decode step's all-reduce per batch, a prefill's."""
    table_sizes: tuple[float, ...]
    answers: tuple
    """explain's answers (decide.ask.Answer) for the report's systems."""
    answers_error: str | None
    measured: tuple[MeasuredEntry, ...]
    grid: GridAnswers | None
    """The interactive section's answers; None with no budget steps."""


def no_progress(what: str, done: int, total: int) -> None:
    """The progress callback that reports nothing."""
    return None


class _Steps:
    """Counts the long steps of `answer_report` for a progress callback."""

    def __init__(self, progress: Progress, total: int):
        self.progress, self.total, self.done = progress, total, 0

    def __call__(self, what: str) -> None:
        self.progress(what, self.done, self.total)
        self.done += 1


def answer_report(
    req: Request,
    systems: Sequence[str] = (),
    *,
    measured: Sequence[str | os.PathLike] = (),
    measured_system: str | None = None,
    progress: Progress | None = None,
    budget_steps: int = defaults.BUDGET_STEPS,
) -> ReportAnswers:
    """The report's answers for the request on each of `systems` ('hgx-h100', or 'hgx-h100:2' for two
    nodes; a bare name spans the request's nodes; default: the request's own system); with
    `budget_steps` > 0, the interactive section's too. The report prices decode at one context."""
    progress = progress or no_progress
    work = req.decode_workload
    if work.served is not None or work.speculation is not None:
        raise PlanError("the report prices decode at one context: give --context, not --input-len/--output-len")
    check_budget_steps(budget_steps)
    specs = _system_specs(systems or [req.system.name], req.scenario.node_count)
    catalog, cfg = req.scenario.catalog, req.model
    found = [catalog.system(s.name) for s in specs]  # unknown names fail here, before any long work
    measured_system = measured_system or specs[0].name
    catalog.system(measured_system)
    # Read the measurement files first: a typo'd path should not cost a whole sweep.
    sets = [(str(p), read_log(p)) for p in measured]
    step = _Steps(progress, 2 * len(specs) + 3 + len(sets) + bool(budget_steps))
    reqs = [req.on(sysm, s.nodes) for s, sysm in zip(specs, found)]
    plans = []
    for s, r in zip(specs, reqs):
        step(f"planning {cfg.name} on {s.label}")
        plans.append(plan(r))
    step("spending each system's GPUs")
    gpus = [s.nodes * sysm.gpus_per_node for s, sysm in zip(specs, found)]
    spent = tuple(_deployment(r, n) for r, n in zip(reqs, gpus))
    grid = None
    if budget_steps:
        step("judging every budget step")
        grid = answer_grid(reqs, plans, gpus, steps=budget_steps)
    # What one decode step sends per all-reduce: batch x hidden x activation bytes, and what prefill
    # of one `context`-token prompt sends.
    marks = tuple((float(hidden_message_bytes(cfg, b)), f"decode batch {b}") for b in req.batches) + (
        (float(hidden_message_bytes(cfg, work.context)), f"prefill {work.context} tokens"),
    )
    table_sizes = tuple(sorted({m for m, _ in marks} | set(REFERENCE_BYTES)))
    fabric = []
    for s in specs:
        step(f"pricing {FABRIC_OP} on {s.label}")
        fabric.append(fabric_curve(s, req.scenario.impl, catalog, table_sizes))
    step("answering the three questions")
    answers, answers_error = _answers(req, specs)
    entries = []
    for path, ms in sets:
        step(f"comparing {os.path.basename(path)} with {measured_system}")
        entries.append(
            measured_entry(ms, measured_system, path=path, impl=req.scenario.impl or "nccl", catalog=catalog)
        )
    progress("done", step.total, step.total)
    return ReportAnswers(
        request=req,
        specs=tuple(specs),
        settings=_settings(req, specs),
        plans=tuple(plans),
        deployments=spent,
        fabric=tuple(fabric),
        marks=marks,
        table_sizes=table_sizes,
        answers=tuple(answers),
        answers_error=answers_error,
        measured=tuple(entries),
        grid=grid,
    )


def demo_answers(
    *,
    engine: str = defaults.DEFAULT_ENGINE,
    catalog=None,
    progress: Progress | None = None,
    budget_steps: int = defaults.BUDGET_STEPS,
) -> ReportAnswers:
    """The demo's answers under `engine` (its all-reduce the one the engine picks by size)."""
    req = request(
        DEMO_MODEL,
        DEMO_SYSTEMS[0],
        batches=DEMO_BATCHES,
        context=DEMO_CONTEXT,
        budget_s=DEMO_BUDGET_S,
        engine=engine,
        dtype=DEMO_DTYPE,
        catalog=catalog,
    )
    return answer_report(req, DEMO_SYSTEMS, progress=progress, budget_steps=budget_steps)


def _settings(req: Request, specs: Sequence[SystemSpec]) -> ReportSettings:
    b, sc = req.budgets, req.scenario
    return ReportSettings(
        model=req.model.name,
        systems=[s.label for s in specs],
        batches=list(req.batches),
        context=req.decode_workload.context,
        budget_s=b.budget_s,
        ttft_budget_s=b.ttft_budget_s,
        impl=sc.impl,
        engine=sc.engine,
        dtype=sc.dtype,
    )


def _deployment(req: Request, gpus: int) -> DeployResult | str:
    """How to spend every GPU of the request's nodes, or the one-line reason there is no answer."""
    try:
        return deploy(deploy_request(req), gpus=gpus)
    except ShardbudgetError as err:
        return str(err)


def _system_specs(systems: Sequence[str], nodes: int) -> list[SystemSpec]:
    specs = [parse_system_spec(s, nodes) for s in systems]
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        raise PlanError(f"system listed twice: {', '.join(sorted({x for x in labels if labels.count(x) > 1}))}")
    return specs


def fabric_curve(spec: SystemSpec, impl: str | None, catalog, table_sizes: Sequence[float] = ()) -> FabricCurve:
    """FABRIC_OP on every GPU of `spec`, over the sweep and at `table_sizes`: NCCL unless `impl`
    forces the engines' custom kernels where they can run."""
    sizes = [float(x) for x in np.geomspace(SWEEP_MIN_BYTES, SWEEP_MAX_BYTES, SWEEP_POINTS)]
    group = make_group(spec.name, nodes=spec.nodes, catalog=catalog)
    use = effective_impl(group, impl or "nccl")
    price = lambda at: tuple(sweep(FABRIC_OP, list(at), spec.name, nodes=spec.nodes, impl=use, catalog=catalog))  # noqa: E731
    return FabricCurve(
        label=f"{spec.label} ×{group.ranks}",
        costs=price(sizes),
        crossover_bytes=crossover_bytes(group, FABRIC_OP, use),
        group=group,
        impl=use,
        table=price(table_sizes) if table_sizes else (),
    )


def _answers(req: Request, specs: Sequence[SystemSpec]) -> tuple[list, str | None]:
    """explain's answers for the report's own systems (each named once, one node each) and request,
    or the reason there are none (the rest of the report still stands)."""
    names = list(dict.fromkeys(s.name for s in specs))
    try:
        return list(explain(replace(req, scenario=replace(req.scenario, nodes=1)), systems=names)), None
    except ShardbudgetError as err:
        return [], str(err)


__all__ = [
    "DEMO_BATCHES",
    "DEMO_BUDGET_S",
    "DEMO_CONTEXT",
    "DEMO_DTYPE",
    "DEMO_MODEL",
    "DEMO_SYSTEMS",
    "FABRIC_OP",
    "FabricCurve",
    "Progress",
    "REFERENCE_BYTES",
    "ReportAnswers",
    "ReportSettings",
    "SWEEP_MAX_BYTES",
    "SWEEP_MIN_BYTES",
    "SWEEP_POINTS",
    "SystemSpec",
    "answer_report",
    "demo_answers",
    "fabric_curve",
    "no_progress",
    "parse_system_spec",
]
