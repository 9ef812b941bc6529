"""What the HTML report shows, computed once: plans, collective sweeps, explanations, measurements.

`collect` checks the whole request (systems, nodes, model, measurement files) before any long work,
so that a typo fails in a second, not after the sweeps. The demo prints its table from the same data.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..comm.op import CollectiveOp
from ..comm.collectives import Group, crossover_bytes, make_group, sweep
from ..decide.compare import effective_impl
from ..errors import PlanError, ShardbudgetError
from ..decide.questions import explain
from ..engines.release import engine_catalog
from ..fabric.catalog import load_catalog
from ..measure.logs import read_log
from ..model import hidden_message_bytes, load_model
from ..decide.planner import plan
from ..step.settings import DEFAULT_ENGINE
from .deployment import deploy_source, deployments
from .fig_measured import measured_groups, predict_samples
from .grid import DEFAULT_BUDGET_STEPS, build_grid, check_budget_steps, engine_dimension, grid_json, plan_engines
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


@dataclass(kw_only=True)
class ReportData:
    """Everything the report shows, computed once (the demo prints its table from the same data)."""

    model: str
    """The model's name as the config reader gives it (a folder name for a config.json path)."""
    model_cfg: Any
    specs: list[SystemSpec]
    plans: list  # PlanResult, one per spec
    fabric: list[FabricCurve]  # one per spec
    marks: list[tuple[float, str]]
    answers: list  # explain.Answer
    answers_error: str | None
    measured: list[MeasuredEntry]
    settings: dict
    catalog: Any
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


def collect(model: str, systems: Sequence[str], *, nodes: int = 1, batches: Sequence[int] = (1, 64),
            context: int = 4096, budget_s: float | None = 0.05, ttft_budget_s: float | None = None,
            impl: str | None = None, dtype: str | None = None,
            engine: str = DEFAULT_ENGINE, measured: Sequence[str | os.PathLike] = (), measured_system: str | None = None,
            catalog=None, progress: Progress | None = None,
            budget_steps: int = DEFAULT_BUDGET_STEPS) -> ReportData:
    """Run the planner, the collective sweeps, the explanations and read the measurements; with
    `budget_steps` > 0, also the interactive section's grid (system x engine x batch x budget)."""
    progress = progress or no_progress
    if not systems:
        raise PlanError("the report needs at least one system (e.g. --system hgx-h100)")
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise PlanError(f"nodes must be a whole number of at least 1, got {nodes!r}")
    batches = list(batches) or [1]
    check_budget_steps(budget_steps)
    catalog = engine_catalog(catalog or load_catalog(), engine)  # other engines reprice at theirs
    specs = _system_specs(systems, nodes)
    cfg = load_model(model)
    for s in specs:
        catalog.system(s.name)  # unknown names fail here, before any long work, with a suggestion
    measured_system = measured_system or specs[0].name
    catalog.system(measured_system)
    # Read the measurement files first: a typo'd path should not cost a whole sweep.
    sets = [(str(p), read_log(p)) for p in measured]
    step = _Steps(progress, 2 * len(specs) + 3 + len(sets) + bool(budget_steps))
    plans = []
    for s in specs:
        step(f"planning {cfg.name} on {s.label}")
        plans.append(plan(cfg, s.name, nodes=s.nodes, batches=batches, context=context, budget_s=budget_s,
                          ttft_budget_s=ttft_budget_s, impl=impl, engine=engine, dtype=dtype, catalog=catalog))
    step("spending each system's GPUs")
    spent = deployments(cfg, specs, budget_s=budget_s, context=context, engine=engine, dtype=dtype, catalog=catalog,
                        impl=impl)
    grid = None
    if budget_steps:  # before the sweeps and figures: a grid too large to embed fails here
        step("judging every budget step")
        grid = _grid(cfg, specs, plans, engine=engine, budget_s=budget_s, steps=budget_steps, catalog=catalog,
                     plan_kwargs=dict(batches=batches, context=context, budget_s=budget_s, ttft_budget_s=ttft_budget_s,
                                      impl=impl, engine=engine, dtype=dtype, catalog=catalog),
                     deploy=deploy_source(cfg, specs, context=context, dtype=dtype, catalog=catalog, impl=impl))
    fabric = []
    for s in specs:
        step(f"pricing {FABRIC_OP} on {s.label}")
        fabric.append(_fabric_curve(s, impl, catalog))
    # What one decode step sends per all-reduce: batch x hidden x 2 bytes (bf16 activations), and
    # what prefill of one `context`-token prompt sends.
    marks = [(float(hidden_message_bytes(cfg, b)), f"decode batch {b}") for b in batches]
    marks.append((float(hidden_message_bytes(cfg, context)), f"prefill {context} tokens"))
    step("answering the three questions")
    answers, answers_error = _answers(model, specs, batch=batches[0], context=context, budget_s=budget_s,
                                      engine=engine, dtype=dtype, catalog=catalog)
    entries = _measured_entries(sets, measured_system, impl=impl, catalog=catalog, step=step)
    progress("done", step.total, step.total)

    settings = {"model": model, "systems": [s.label for s in specs], "batches": batches, "context": context,
                "budget_s": budget_s, "ttft_budget_s": ttft_budget_s, "impl": impl, "engine": engine, "dtype": dtype, "op": FABRIC_OP}
    return ReportData(model=cfg.name, model_cfg=cfg, specs=specs, plans=plans, fabric=fabric, marks=marks,
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


def _grid(cfg, specs: list[SystemSpec], plans: list, *, engine: str, budget_s: float | None, steps: int, catalog,
          plan_kwargs: dict, deploy) -> tuple[dict, str]:
    """The interactive grid and its JSON: each system's plan under every engine, every budget step."""
    engines, first = engine_dimension(engine=engine)
    per_system = [plan_engines(res, engines, plan_kwargs={**plan_kwargs, "model": cfg, "system": s.name,
                                                          "nodes": s.nodes})
                  for s, res in zip(specs, plans)]
    grid = build_grid(model=cfg.name, systems=[s.label for s in specs], engines=engines, plans=per_system,
                      budget_s=budget_s, steps=steps, catalog=catalog, initial_engine=first, deploy=deploy,
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


def _answers(model: str, specs: Sequence[SystemSpec], *, batch: int, context: int, budget_s: float | None,
             engine: str, dtype: str | None, catalog) -> tuple[list, str | None]:
    """explain's answers for the report's own systems (each named once) and request, or the reason
    there are none (the rest of the report still stands)."""
    names = list(dict.fromkeys(s.name for s in specs))
    try:
        return list(explain(model, systems=names, batch=batch, context=context, budget_s=budget_s, engine=engine,
                            dtype=dtype, catalog=catalog)), None
    except ShardbudgetError as err:
        return [], str(err)


__all__ = ["FABRIC_OP", "FabricCurve", "MeasuredEntry", "Progress", "ReportData", "SystemSpec", "collect",
           "no_progress", "parse_system_spec"]
