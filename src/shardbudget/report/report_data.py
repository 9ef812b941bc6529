"""What the HTML report shows, computed once: plans, collective sweeps, explanations, measurements.

`collect` checks the whole request (systems, nodes, model, measurement files) before any long work,
so that a typo fails in a second, not after the sweeps. The demo prints its table from the same data.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from .. import defaults
from ..comm.op import CollectiveOp
from ..comm.collectives import Group, crossover_bytes, make_group, sweep
from ..decide.compare import effective_impl
from ..decide.request import Request
from ..errors import PlanError, ShardbudgetError
from ..decide.questions import explain
from ..fabric.hardware import Catalog
from ..measure.logs.read import read_log
from ..model import ModelConfig, hidden_message_bytes
from ..decide.planner import plan
from .deployment import deploy_source, deployments
from .fig_measured import measured_groups, predict_samples
from .grid import build_grid, check_budget_steps, engine_dimension, grid_json, plan_engines
from .style import system_colors

Progress = Callable[[str, int, int], None]
"""progress(what, done, total): called before each long step."""

FABRIC_OP = CollectiveOp.ALL_REDUCE
# Message sizes of the fabric sweep: 8 B to 1 GiB, 16 points per factor of 2^5 (smooth on a log axis).
SWEEP_MIN_BYTES, SWEEP_MAX_BYTES, SWEEP_POINTS = 8.0, float(2 ** 30), 106


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
        raise PlanError(f"system {text!r}: the node count after ':' must be a whole number of at least 1 "
                        f"(e.g. hgx-h100:2)")
    return SystemSpec(name.strip(), int(count))


@dataclass(frozen=True, kw_only=True)
class FabricCurve:
    """FABRIC_OP on every GPU of one system, over the sweep's message sizes."""

    label: str
    """'hgx-h100 ×8': the system and its GPU count."""
    costs: list
    """collectives.Cost per message size, smallest first."""
    crossover_bytes: float
    """Message size per rank where the bandwidth term overtakes the latency term (inf: never)."""
    group: Group
    impl: str
    """The implementation the costs are priced with ('custom' falls back to 'nccl' where it cannot run)."""


@dataclass(kw_only=True)
class MeasuredEntry:
    path: str
    measurement: Any  # MeasurementSet
    system: str
    groups: list  # (label, samples, predicted times or None)
    svg: str | None = None
    error: str | None = None


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


@dataclass(kw_only=True)
class ReportData:
    """Everything the report shows, computed once (the demo prints its table from the same data)."""

    model: str
    """The model's name as the config reader gives it (a folder name for a config.json path)."""
    model_cfg: ModelConfig
    request: Request
    """The request every section answers (each system's plan is this request on that system)."""
    specs: list[SystemSpec]
    plans: list  # PlanResult, one per spec
    fabric: list[FabricCurve]  # one per spec
    marks: list[tuple[float, str]]
    answers: list  # explain.Answer
    answers_error: str | None
    measured: list[MeasuredEntry]
    settings: ReportSettings
    catalog: Catalog
    colors: dict[str, str] = field(default_factory=dict)
    grid: dict | None = None
    """The interactive section's grid (`grid.build_grid`), None when it is left out (budget steps 0)."""
    grid_json: str | None = None
    """The grid as the page embeds it, checked against `grid.MAX_GRID_BYTES`."""
    deployments: list = field(default_factory=list)
    """Per system: how to spend all its GPUs (deploy.DeployResult), or why there is no answer."""


def no_progress(what: str, done: int, total: int) -> None:
    """The progress callback that reports nothing."""
    return None


class _Steps:
    """Counts the long steps of `collect` for a progress callback."""

    def __init__(self, progress: Progress, total: int):
        self.progress, self.total, self.done = progress, total, 0

    def __call__(self, what: str) -> None:
        self.progress(what, self.done, self.total)
        self.done += 1


def collect(req: Request, systems: Sequence[str] = (), *, measured: Sequence[str | os.PathLike] = (),
            measured_system: str | None = None, progress: Progress | None = None,
            budget_steps: int = defaults.BUDGET_STEPS) -> ReportData:
    """Run the planner, the collective sweeps, the explanations and read the measurements for the
    request on each of `systems` ('hgx-h100', or 'hgx-h100:2' for two nodes; a bare name spans the
    request's nodes; default: the request's own system); with `budget_steps` > 0, also the interactive
    section's grid (system x engine x batch x budget). The report prices decode at one context."""
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
    spent = deployments(reqs, specs)
    grid = None
    if budget_steps:  # before the sweeps and figures: a grid too large to embed fails here
        step("judging every budget step")
        grid = _grid(reqs, specs, plans, steps=budget_steps)
    impl = req.scenario.impl
    fabric = []
    for s in specs:
        step(f"pricing {FABRIC_OP} on {s.label}")
        fabric.append(_fabric_curve(s, impl, catalog))
    # What one decode step sends per all-reduce: batch x hidden x 2 bytes (bf16 activations), and
    # what prefill of one `context`-token prompt sends.
    context = work.context
    marks = [(float(hidden_message_bytes(cfg, b)), f"decode batch {b}") for b in req.batches]
    marks.append((float(hidden_message_bytes(cfg, context)), f"prefill {context} tokens"))
    step("answering the three questions")
    answers, answers_error = _answers(req, specs)
    entries = _measured_entries(sets, measured_system, impl=impl, catalog=catalog, step=step)
    progress("done", step.total, step.total)
    b = req.budgets
    settings = ReportSettings(model=cfg.name, systems=[s.label for s in specs], batches=list(req.batches),
                              context=context, budget_s=b.budget_s, ttft_budget_s=b.ttft_budget_s, impl=impl,
                              engine=req.scenario.engine, dtype=req.scenario.dtype)
    return ReportData(model=cfg.name, model_cfg=cfg, request=req, specs=specs, plans=plans, fabric=fabric, marks=marks,
                      answers=answers, answers_error=answers_error, measured=entries, settings=settings,
                      catalog=catalog, colors=system_colors([s.label for s in specs]),
                      grid=grid[0] if grid else None, grid_json=grid[1] if grid else None, deployments=spent)


def _measured_entries(sets, system: str, *, impl: str | None, catalog, step) -> list[MeasuredEntry]:
    """Each measurement file beside the model of `system` at the same sizes, ranks and nodes."""
    entries = []
    for path, ms in sets:
        step(f"comparing {os.path.basename(path)} with {system}")
        groups = [(label, samples, predict_samples(samples, system, impl=impl or "nccl", catalog=catalog))
                  for label, samples in measured_groups(ms)]
        entries.append(MeasuredEntry(path=path, measurement=ms, system=system, groups=groups))
    return entries


def _grid(reqs: list[Request], specs: list[SystemSpec], plans: list, *, steps: int) -> tuple[dict, str]:
    """The interactive grid and its JSON: each system's plan under every engine, every budget step."""
    engines, first = engine_dimension(engine=reqs[0].scenario.engine)
    per_system = [plan_engines(res, engines, r) for r, res in zip(reqs, plans)]
    grid = build_grid(model=reqs[0].model.name, systems=[s.label for s in specs], engines=engines, plans=per_system,
                      budget_s=reqs[0].budgets.budget_s, steps=steps, catalog=reqs[0].scenario.catalog,
                      initial_engine=first, deploy=deploy_source(reqs, specs),
                      deploy_note="Every way to split the system's GPUs into identical replicas (shardbudget deploy "
                                  "--batch B: every GPU of its nodes, decode at the report's context), each at the "
                                  "selected batch (a PP replica keeps PP micro-batches of it in flight), best tokens/s "
                                  "per GPU first among those that meet the budget; the last but one column is deploy's "
                                  "own answer, the largest batch within the budget. No TTFT: decode at a fixed "
                                  "context prefills no prompt.")
    return grid, grid_json(grid)


def _system_specs(systems: Sequence[str], nodes: int) -> list[SystemSpec]:
    specs = [parse_system_spec(s, nodes) for s in systems]
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        raise PlanError(f"system listed twice: {', '.join(sorted({x for x in labels if labels.count(x) > 1}))}")
    return specs


def _fabric_curve(spec: SystemSpec, impl: str, catalog) -> FabricCurve:
    sizes = [float(x) for x in np.geomspace(SWEEP_MIN_BYTES, SWEEP_MAX_BYTES, SWEEP_POINTS)]
    group = make_group(spec.name, nodes=spec.nodes, catalog=catalog)
    use = effective_impl(group, impl or "nccl")  # the fabric curve: NCCL unless an impl is forced
    costs = sweep(FABRIC_OP, sizes, spec.name, nodes=spec.nodes, impl=use, catalog=catalog)
    return FabricCurve(label=f"{spec.label} ×{group.ranks}", costs=costs,
                       crossover_bytes=crossover_bytes(group, FABRIC_OP, use), group=group, impl=use)


def _answers(req: Request, specs: Sequence[SystemSpec]) -> tuple[list, str | None]:
    """explain's answers for the report's own systems (each named once, one node each) and request,
    or the reason there are none (the rest of the report still stands)."""
    names = list(dict.fromkeys(s.name for s in specs))
    try:
        return list(explain(replace(req, scenario=replace(req.scenario, nodes=1)), systems=names)), None
    except ShardbudgetError as err:
        return [], str(err)


__all__ = ["FABRIC_OP", "FabricCurve", "MeasuredEntry", "Progress", "ReportData", "ReportSettings", "SystemSpec", "collect",
           "no_progress", "parse_system_spec"]
