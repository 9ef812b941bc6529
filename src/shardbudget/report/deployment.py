"""The report's deployment section: how to spend each system's GPUs (deploy.py), its options, the
Pareto front of tokens/s per user against tokens/s per GPU, and the launch lines of the choice.

The report prices decode at its own context (as its plan tables do), so the deployment is the
decode-only question: every GPU of the system's nodes, split into identical replicas.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..decide.deploy import MAX_BATCH, DeployResult, Workload, budget_options, deploy
from ..errors import ShardbudgetError
from .fig_deploy import pareto_figure
from .grid import SHOWN_OPTIONS, default_deploy
from .markup import esc, fig_block, launch_block, table
from .tables import deploy_cells


def deployments(cfg, specs: Sequence, *, budget_s: float | None, context: int, engine: str, catalog,
                dtype: str | None = None, impl: str | None = None) -> list:
    """One DeployResult per system (all its nodes' GPUs), or the one-line reason there is none."""
    out = []
    for s in specs:
        gpus = s.nodes * catalog.system(s.name).gpus_per_node
        try:
            out.append(deploy(cfg, s.name, gpus=gpus, nodes=s.nodes, budget_s=budget_s,
                              workload=Workload(context=context), engine=engine, dtype=dtype, catalog=catalog,
                              impl=impl))
        except ShardbudgetError as err:
            out.append(str(err))
    return out


def _options_table(r: DeployResult) -> str:
    rows = [[c for k, c in enumerate(deploy_cells(o)) if k != 3] for o in r.options[:SHOWN_OPTIONS]]  # no TTFT
    return table(["option", "max batch", "ITL ms", "tok/s", "tok/s/GPU", "tok/s/user", "GB/GPU", "comm %", "binding",
                  "meets"], rows, left=1)


def section_deploy(data) -> str:
    """Per system: the options, the figure, the choice in words and its launch lines."""
    if not getattr(data, "deployments", None):
        return ""
    out = ['<h2 id="deploy">How to spend the GPUs</h2>',
           '<p class="note">Every split of each system\'s GPUs into identical replicas, each at the largest batch '
           'within the budget and memory (decode at the report\'s context); best tokens/s per GPU first.</p>']
    for k, (spec, r) in enumerate(zip(data.specs, data.deployments)):
        out.append(f"<h3>{esc(spec.label)}</h3>")
        if isinstance(r, str):
            out.append(f'<p class="err">{esc(r)}</p>')
            continue
        out.append(f"<p>{esc(r.verdict)}</p>")
        out.append(_options_table(r))
        out.append(fig_block(f"fig-deploy-{k}", pareto_figure(r), "Each option's tokens/s per user against tokens/s "
                             "per GPU as its batch grows; dashed: the Pareto front; star: the choice."))
        if r.launch:
            out.append(launch_block([f"{engine}: {line}" for engine, line in r.launch.items()]))
    return "\n".join(out)


def deploy_source(cfg, specs: Sequence, *, context: int, dtype: str | None, catalog, impl: str | None = None):
    """The interactive grid's deployment hook: each system's `deploy` options (decode at the report's
    context, every GPU of its nodes) under the selected engine, at every budget of the slider, each
    at its largest batch within it and (`deploy --batch`) at each of the report's batches."""
    by_label = {s.label: s for s in specs}

    def source(system: str, engine: str, budgets: Sequence, batches: Sequence) -> dict:
        spec = by_label[system]
        sysm = catalog.system(spec.name)
        inside = [b for b in batches if b <= MAX_BATCH]  # deploy's sweep ends at MAX_BATCH: none beyond it
        try:
            per = budget_options(cfg, sysm, gpus=spec.nodes * sysm.gpus_per_node, nodes=spec.nodes, budgets_s=budgets,
                                 workload=Workload(context=context), engine=engine, dtype=dtype, catalog=catalog,
                                 batches=(None, *inside), impl=impl)
        except ShardbudgetError:
            return default_deploy(system, engine, budgets, batches)
        dicts = [[[_cell(o) for o in opts] for opts in per_batch] for per_batch in per]
        at = dict(zip(inside, dicts[1:]))
        return {"largest": dicts[0], "at": [at.get(b, [[] for _ in budgets]) for b in batches]}

    return source


def _cell(o) -> dict:
    """An option as the grid holds it: without its memory parts (the page shows the total alone)."""
    d = o.to_dict()
    d.pop("memory", None)
    return d


__all__ = ["deploy_source", "deployments", "section_deploy"]
