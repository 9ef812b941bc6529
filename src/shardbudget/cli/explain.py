"""`shardbudget explain`: the three questions, answered from numbers."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .app import app
from .args import BatchOpt, CatalogOpt, ContextOpt, DownloadOpt, JsonOpt, ModelOpt
from .common import load_catalogs, model_name, print_json

ExplainSystemsOpt = Annotated[Optional[list[str]], typer.Option(
    "--system", "-s", help="Systems to compare, e.g. -s hgx-h100 -s h100-pcie (repeat).")]


@app.command()
def explain(
    *,
    model: ModelOpt = "llama-3.1-70b",
    batch: BatchOpt = None,
    context: ContextOpt = None,
    system: ExplainSystemsOpt = None,
    catalog: CatalogOpt = None,
    download: DownloadOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Fabric A vs fabric B, when all-reduce limits sharding, why the network is slow for decode: with numbers."""
    from ..decide.questions import DEFAULT_SYSTEMS, explain as explain_questions
    from ..errors import PlanError
    if batch and len(batch) > 1:
        raise PlanError("explain answers for one batch size: give --batch once")
    answers = explain_questions(model_name(model, download), systems=system or DEFAULT_SYSTEMS,
                                batch=batch[0] if batch else 1, context=context or 4096,
                                catalog=load_catalogs(catalog))
    if json_out:
        print_json([a.to_dict() for a in answers])
        return
    for a in answers:
        print(f"## {a.question}\n{a.text}\n-> {a.takeaway}\n")
