"""`shardbudget fabrics` and `shardbudget models`: what the catalog holds."""

from __future__ import annotations

from typing import Annotated

import typer

from .app import app
from .args import CatalogOpt, JsonOpt
from .command_io import load_catalogs, print_json


@app.command()
def fabrics(
    catalog: CatalogOpt = None,
    json_out: JsonOpt = False,
    systems: Annotated[bool, typer.Option("--systems", help="List systems and GPUs too.")] = False,
) -> None:
    """The fabric catalog: per-direction bandwidth, per-hop latency and the source of each number."""
    from ..report import tables

    cat = load_catalogs(catalog)
    if json_out:
        print_json(tables.fabrics_dict(cat))
        return
    tables.print_fabrics(cat, systems=systems)


@app.command()
def models(json_out: JsonOpt = False) -> None:
    """The model configs shipped with shardbudget."""
    from ..model import active_params, list_models, load_model, total_params

    rows = []
    for name in list_models():
        cfg = load_model(name)
        rows.append(
            {
                "name": name,
                "layers": cfg.num_layers,
                "hidden": cfg.hidden_size,
                "heads": cfg.num_heads,
                "kv_heads": cfg.num_kv_heads,
                "experts": cfg.num_experts if cfg.is_moe else 0,
                "params": total_params(cfg),
                "active_params": active_params(cfg),
            }
        )
    if json_out:
        print_json(rows)
        return
    for r in rows:
        moe = f", {r['experts']} experts" if r["experts"] else ""
        print(
            f"{r['name']:<18} {r['params'] / 1e9:7.1f}B params ({r['active_params'] / 1e9:.1f}B active), "
            f"{r['layers']} layers, hidden {r['hidden']}, {r['heads']} heads / {r['kv_heads']} KV{moe}"
        )
