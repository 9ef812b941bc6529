"""The report's deployment section: how to spend each system's GPUs (deploy.py), its options, the
Pareto front of tokens/s per user against tokens/s per GPU, and the launch lines of the choice.

The report prices decode at its own context (as its plan tables do), so the deployment is the
decode-only question: every GPU of the system's nodes, split into identical replicas.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..decide.deploy import DeployResult, Workload, deploy
from ..errors import ShardbudgetError
from .fig_deploy import pareto_figure
from .markup import esc, fig_block, table

SHOWN_OPTIONS = 8


def deployments(cfg, specs: Sequence, *, budget_s: float | None, context: int, engine: str, catalog) -> list:
    """One DeployResult per system (all its nodes' GPUs), or the one-line reason there is none."""
    out = []
    for s in specs:
        gpus = s.nodes * catalog.system(s.name).gpus_per_node
        try:
            out.append(deploy(cfg, s.name, gpus=gpus, nodes=s.nodes, budget_s=budget_s,
                              workload=Workload(context=context), engine=engine, catalog=catalog))
        except ShardbudgetError as err:
            out.append(str(err))
    return out


def _options_table(r: DeployResult) -> str:
    rows = [[o.label(), o.max_batch, f"{o.itl_s * 1e3:.2f}", f"{o.tokens_per_s:,.0f}", f"{o.tokens_per_s_per_gpu:,.0f}",
             f"{o.tokens_per_s_per_user:.1f}", f"{o.mem_bytes_per_gpu / 1e9:.1f}", f"{100 * o.comm_share:.0f}",
             o.binding, "yes" if o.meets_budget else "no"] for o in r.options[:SHOWN_OPTIONS]]
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
            out.append("<pre>" + "\n".join(esc(f"{engine}: {line}") for engine, line in r.launch.items()) + "</pre>")
    return "\n".join(out)


def deploy_source(data_deployments: Sequence, labels: Sequence[str]):
    """The interactive grid's deployment hook: the options of the system's deployment (engine as the
    report's), whatever the batch (deploy chooses the batch itself)."""
    by_label = dict(zip(labels, data_deployments))

    def source(system: str, engine: str, batch: int, rows) -> list[dict]:
        r = by_label.get(system)
        if not isinstance(r, DeployResult):
            return []
        return [{**o.to_dict(), "tokens_per_s_per_gpu": o.tokens_per_s_per_gpu} for o in r.options[:SHOWN_OPTIONS]]

    return source


__all__ = ["deploy_source", "deployments", "section_deploy"]
