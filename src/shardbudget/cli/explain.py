"""`shardbudget explain`: the three questions, answered from numbers."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..decide.questions import DEFAULT_SYSTEMS
from ..decide.questions import explain as explain_questions
from .app import app
from .args import CatalogOpt, DownloadOpt, JsonOpt
from .common import load_catalogs, model_name, print_json


@app.command()
def explain(
    *,
    model: Annotated[str, typer.Option("--model", "-m")] = "llama-3.1-70b",
    batch: Annotated[int, typer.Option("--batch", "-b", min=1)] = 1,
    context: Annotated[int, typer.Option("--context", min=1)] = 4096,
    system: Annotated[Optional[list[str]], typer.Option("--system", "-s", help="The two systems to compare (give --system twice; default: hgx-h100 and h100-pcie, the same GPU on NVLink and on PCIe).")] = None,
    catalog: CatalogOpt = None,
    download: DownloadOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Fabric A vs fabric B, when all-reduce limits sharding, why the network is slow for decode: with numbers."""
    answers = explain_questions(model_name(model, download), systems=system or DEFAULT_SYSTEMS, batch=batch, context=context,
                                catalog=load_catalogs(catalog))
    if json_out:
        print_json([a.to_dict() for a in answers])
        return
    for a in answers:
        print(f"## {a.question}\n{a.text}\n-> {a.takeaway}\n")
