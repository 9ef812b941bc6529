"""The report's deployment section: how to spend each system's GPUs (deploy.py), its options, the
Pareto front of tokens/s per user against tokens/s per GPU, and the launch lines of the choice.

The report prices decode at its own context (as its plan tables do), so the deployment is the
decode-only question: every GPU of the system's nodes, split into identical replicas (priced in
decide.report_answers; this module only shows it).
"""

from __future__ import annotations

from ..decide.deploy import DeployResult
from .fig_deploy import pareto_figure
from .grid import SHOWN_OPTIONS
from .markup import esc, fig_block, launch_block, table
from .tables import deploy_cells


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


__all__ = ["section_deploy"]
