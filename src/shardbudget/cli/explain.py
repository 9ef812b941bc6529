"""`shardbudget explain`: the three questions, answered from numbers."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..decide.questions import DEFAULT_SYSTEMS
from ..decide.questions import explain as explain_questions
from ..step.settings import DEFAULT_ENGINE
from . import args
from .app import app
from .args import CatalogOpt, DownloadOpt, JsonOpt, NodesOpt
from .common import load_catalogs, model_name, print_json


@app.command()
def explain(
    *,
    model: Annotated[str, typer.Option("--model", "-m")] = "llama-3.1-70b",
    system: Annotated[Optional[list[str]], typer.Option("--system", "-s", help="One system (compared with its own GPU on other fabrics: NVSwitch, PCIe with and without P2P, two nodes), or several (compared with each other; repeat --system). Default: hgx-h100.")] = None,
    nodes: NodesOpt = 1,
    batch: Annotated[int, typer.Option("--batch", "-b", min=1, help="Decode batch size.")] = 1,
    context: Annotated[int, typer.Option("--context", min=1, help="Tokens in the KV cache per sequence.")] = 4096,
    budget: Annotated[str, typer.Option("--budget", help="Inter-token latency budget, e.g. 30ms ('none' to skip).")] = "30ms",
    engine: Annotated[str, typer.Option("--engine", help="vllm | sglang | trtllm | eager | vllm-v0 | tgi: which all-reduce kernels, CUDA graphs and host costs a step has")] = DEFAULT_ENGINE,
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="Weight dtype: bf16 | fp8 | int8 | int4 | mxfp4 | nvfp4 (default: the checkpoint's own)")] = None,
    catalog: CatalogOpt = None,
    download: DownloadOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Fabric against fabric, when all-reduce limits sharding, why the network is slow for decode: with numbers."""
    result = explain_questions(model_name(model, download), systems=system or DEFAULT_SYSTEMS, batch=batch,
                               context=context, engine=engine, nodes=nodes, dtype=dtype,
                               budget_s=args.budget(budget), catalog=load_catalogs(catalog))
    if json_out:
        print_json(result)
        return
    for a in result.answers:
        print(f"## {a.question}\n{a.text}")
        for t in a.tables:
            print(_table(t.columns, t.rows) + "\n" if t is not a.tables[-1] else _table(t.columns, t.rows))
        print(f"-> {a.takeaway}\n")


def _table(columns, rows) -> str:
    """Plain aligned columns (first column left, the rest right); a row of empty cells is a gap."""
    cells = [list(columns)] + [list(r) + [""] * (len(columns) - len(r)) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(columns))]
    lines = []
    for k, c in enumerate(cells):
        if k and not any(c):
            lines.append("")
            continue
        lines.append("  ".join(c[0].ljust(widths[0]) if i == 0 else c[i].rjust(widths[i])
                               for i in range(len(columns))).rstrip())
    return "\n".join(lines)
