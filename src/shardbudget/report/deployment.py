"""The report's deployment section: how to spend each system's GPUs (deploy.py), its options, the
Pareto front of tokens/s per user against tokens/s per GPU, and the launch lines of the choice.

The deployment is `deploy --gpus N`'s answer with the report's options and deploy's defaults: every
GPU of the system's nodes, split into identical replicas, served at deploy's default workload
(prompts mixed into the decode steps), the budget judging the TPOT (priced in
decide.report_answers; this module only shows it). The plan tables above decode at the report's
context: the same budget judges their ITL.
"""

from __future__ import annotations

from ..decide.deploy import DeployResult
from .fig_deploy import pareto_figure
from .grid import SHOWN_OPTIONS
from .markup import esc, fig_block, launch_block, table
from .tables import deploy_cells, objective_columns


def _options_table(r: DeployResult) -> str:
    """deploy's options as the narrow terminal prints them: of the cost columns, the objective's alone
    (none when ranked by throughput), so the page fits an 800 px window; --json has both."""
    tpot = r.judged == "TPOT"
    rows = [deploy_cells(o, tpot=tpot) for o in r.options[:SHOWN_OPTIONS]]
    headers = [
        "option",
        "batch cap",
        "ITL ms",
        *(["TPOT ms"] if tpot else []),
        "TTFT ms",
        "tok/s",
        "tok/s/GPU",
        "$/Mtok",
        "tok/J",
        "tok/s/user",
        "GB/GPU",
        "comm %",
        "binding",
        "meets",
    ]
    objective = r.costs.objective if r.costs else "throughput"
    keep = objective_columns(headers, objective)
    return table([headers[i] for i in keep], [[row[i] for i in keep] for row in rows], left=1)


def _workload_words(data) -> str:
    """What the deployments answer, from the first one's record."""
    r = next((d for d in data.deployments if not isinstance(d, str)), None)
    if r is None:
        return ""
    w = r.workload
    served = (
        f"served at input {w.input_len} / output {w.output_len} tokens (deploy's defaults: the other "
        f"requests' prompts mixed into the decode steps)"
        if w.served
        else f"decode at context {w.context}"
    )
    return f" As <code>shardbudget deploy --gpus N</code> answers it: {esc(served)}; {esc(r.judged_words)}."


def section_deploy(data) -> str:
    """Per system: the options, the figure, the choice in words and its launch lines."""
    if not getattr(data, "deployments", None):
        return ""
    out = [
        '<h2 id="deploy">How to spend the GPUs</h2>',
        '<p class="note">Every split of each system\'s GPUs into identical replicas, each at its batch cap (the '
        "largest batch within the budgets and memory); best tokens/s per GPU first." + _workload_words(data) + "</p>",
    ]
    for k, (spec, r) in enumerate(zip(data.specs, data.deployments)):
        out.append(f"<h3>{esc(spec.label)}</h3>")
        if isinstance(r, str):
            out.append(f'<p class="err">{esc(r)}</p>')
            continue
        out.append(f"<p>{esc(r.verdict)}</p>")
        out.append(_options_table(r))
        out.append(
            fig_block(
                f"fig-deploy-{k}",
                pareto_figure(r),
                "Each option's tokens/s per user against tokens/s "
                "per GPU as its batch grows; dashed: the Pareto front; star: the choice.",
            )
        )
        if r.launch:
            out.append(launch_block([f"{engine}: {line}" for engine, line in r.launch.items()]))
    return "\n".join(out)


__all__ = ["section_deploy"]
