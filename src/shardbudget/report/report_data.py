"""What the HTML report shows: the answers of one request (decide.report_answers.ReportAnswers,
priced there) with what the page adds to them, its colours and the interactive section's grid as
JSON. Nothing here prices; `view` only reads the record. The demo prints its table from the same data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..decide.report_answers import FABRIC_OP, FabricCurve, ReportAnswers, ReportSettings, SystemSpec, parse_system_spec
from ..decide.request import Request
from ..fabric.hardware import Catalog
from ..model import ModelConfig
from .grid import build_grid, grid_json
from .style import system_colors


@dataclass(kw_only=True)
class ReportData:
    """Everything the report shows (the demo prints its table from the same data)."""

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
    measured: list  # decide.measured.MeasuredEntry
    settings: ReportSettings
    catalog: Catalog
    colors: dict[str, str] = field(default_factory=dict)
    grid: dict | None = None
    """The interactive section's grid (`grid.build_grid`), None when it is left out (budget steps 0)."""
    grid_json: str | None = None
    """The grid as the page embeds it, checked against `grid.MAX_GRID_BYTES`."""
    deployments: list = field(default_factory=list)
    """Per system: how to spend all its GPUs (deploy.DeployResult), or why there is no answer."""
    table_sizes: tuple[float, ...] = ()
    """The fabric table's message sizes (each curve's `table` is priced at them)."""


def grid_deploy_note(req: Request) -> str:
    """What the interactive deployment table answers: deploy --batch B with deploy's defaults."""
    w = req.served_workload
    return (
        "Every way to split the system's GPUs into identical replicas (shardbudget deploy --batch B: every GPU of "
        f"its nodes, served at input {w.input_len} / output {w.output_len} tokens, deploy's defaults), each at "
        "the selected batch (a PP replica keeps PP micro-batches of it in flight), best tokens/s per GPU first "
        f"among those that meet the budget; {w.judged_words}. The plans above decode at the report's context: the "
        "same budget judges their ITL. The last but one column is deploy's own answer, the batch cap within the "
        "budget."
    )


def view(ans: ReportAnswers) -> ReportData:
    """The report's data from the request's answers: the grid built (and its size checked) from the
    answers' verdicts and options, one colour per system."""
    labels = [s.label for s in ans.specs]
    grid = (
        build_grid(
            ans.grid,
            model=ans.request.model.name,
            systems=labels,
            budget_s=ans.settings.budget_s,
            deploy_note=grid_deploy_note(ans.request),
        )
        if ans.grid
        else None
    )
    return ReportData(
        model=ans.request.model.name,
        model_cfg=ans.request.model,
        request=ans.request,
        specs=list(ans.specs),
        plans=list(ans.plans),
        fabric=list(ans.fabric),
        marks=list(ans.marks),
        answers=list(ans.answers),
        answers_error=ans.answers_error,
        measured=list(ans.measured),
        settings=ans.settings,
        catalog=ans.request.scenario.catalog,
        colors=system_colors(labels),
        grid=grid,
        grid_json=grid_json(grid) if grid else None,
        deployments=list(ans.deployments),
        table_sizes=ans.table_sizes,
    )


__all__ = ["FABRIC_OP", "FabricCurve", "ReportData", "ReportSettings", "SystemSpec", "parse_system_spec", "view"]
