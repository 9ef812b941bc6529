"""The report's deployment section: how to spend each system's GPUs (deploy.py), its options, the
Pareto front of tokens/s per user against tokens/s per GPU, and the launch lines of the choice.

The report prices decode at its own context (as its plan tables do), so the deployment is the
decode-only question: every GPU of the system's nodes, split into identical replicas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..decide.deploy import MAX_BATCH, DeployResult, budget_options, deploy
from ..decide.request import Request, Workload
from ..errors import ShardbudgetError
from .fig_deploy import pareto_figure
from .grid import SHOWN_OPTIONS, default_deploy
from .markup import esc, fig_block, launch_block, table
from .tables import deploy_cells


def decode_request(req: Request) -> Request:
    """The report's deployment question: decode at the report's context (as its plan tables), with
    the ITL budget alone (decode at a fixed context prefills no prompt)."""
    return replace(req, workload=Workload(context=req.decode_workload.context), jitter=None,
                   budgets=replace(req.budgets, ttft_budget_s=None))


def deployments(reqs: Sequence[Request], specs: Sequence) -> list:
    """One DeployResult per system (all its nodes' GPUs), or the one-line reason there is none."""
    out = []
    for r, s in zip(reqs, specs):
        try:
            out.append(deploy(decode_request(r), gpus=s.nodes * r.system.gpus_per_node))
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


def deploy_source(reqs: Sequence[Request], specs: Sequence):
    """The interactive grid's deployment hook: each system's `deploy` options (decode at the report's
    context, every GPU of its nodes) under the selected engine, at every budget of the slider, each
    at its largest batch within it and (`deploy --batch`) at each of the report's batches."""
    by_label = {s.label: (s, r) for s, r in zip(specs, reqs)}

    def source(system: str, engine: str, budgets: Sequence, batches: Sequence) -> dict:
        spec, req = by_label[system]
        inside = [b for b in batches if b <= MAX_BATCH]  # deploy's sweep ends at MAX_BATCH: none beyond it
        try:
            per = budget_options(decode_request(req).with_engine(engine), gpus=spec.nodes * req.system.gpus_per_node,
                                 budgets_s=budgets, batches=(None, *inside))
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
