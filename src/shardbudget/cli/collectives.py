"""`shardbudget allreduce` and `shardbudget compare`: collective times on one system, and systems side by side."""

from __future__ import annotations

from typing import Annotated

import typer

from . import args
from .app import app
from .args import (
    NcclOpt,
    NcclSymmetricOpt,
    BatchOpt,
    CatalogOpt,
    ElementDtypeOpt,
    ForceOpt,
    GpusOpt,
    ImplOpt,
    JsonOpt,
    ModelOpt,
    NodesOpt,
    OpOpt,
    PlotOpt,
    SystemOpt,
    SystemsOpt,
    size_opt,
)
from .command_io import check_plot, load_catalogs, print_json, write_plot
from .options import FABRIC, FabricArgs, build_request, groups


@app.command()
def allreduce(
    *,
    system: SystemOpt,
    nodes: NodesOpt = None,
    gpus: GpusOpt = None,
    op: OpOpt = "all-reduce",
    size: size_opt("8B:1GiB") = None,
    algo: Annotated[
        str,
        typer.Option(
            "--algo",
            help="auto | ring | tree | nvls | one-shot | two-shot | hierarchical | direct; all-to-all: deepep-normal | deepep-ll (DeepEP's dispatch + combine, their mean per call)",
        ),
    ] = "auto",
    protocol: Annotated[str, typer.Option("--protocol", help="auto | ll | ll128 | simple")] = "auto",
    impl: ImplOpt = None,
    dtype: ElementDtypeOpt = None,
    plot: PlotOpt = None,
    force: ForceOpt = False,
    catalog: CatalogOpt = None,
    nccl: NcclOpt = None,
    nccl_symmetric: NcclSymmetricOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """An nccl-tests-like table of predicted collective times on a system."""
    from ..comm.collectives import (
        crossover_bytes,
        custom_allreduce_allowed,
        make_group,
        normalize_op,
        require_peers,
        sweep,
    )
    from ..comm.custom_kernels import ENGINES
    from ..comm.net_path import gdr
    from ..dtypes import dtype_bytes

    check_plot(plot, force=force)
    from ..engines.release import engine_catalog

    sizes = args.sizes(size, "8B:1GiB")
    op, impl, dtype, nodes = normalize_op(op), impl or "nccl", dtype or "bf16", nodes or 1
    # an engine's kernels run beside the NCCL its release installs (plan prices the same)
    cat = engine_catalog(load_catalogs(catalog, nccl, nccl_symmetric), impl if impl in ENGINES else None)
    elem_bytes = dtype_bytes(dtype)
    group = require_peers(make_group(system, nodes=nodes, gpus=gpus, catalog=cat), "allreduce")
    costs = sweep(op, sizes, system, nodes=nodes, gpus=gpus, algo=algo, protocol=protocol, impl=impl, catalog=cat)
    cross = crossover_bytes(group, op, impl, algo, protocol)
    rule = None
    if impl in ENGINES and op == "all-reduce" and (algo, protocol) == ("auto", "auto"):
        # the engine's whole rule, as plan prices it (one-shot, two-shot, symmetric memory, NCCL);
        # TensorRT-LLM's is by tokens: a row of hidden 8192 at the element size
        from ..engines.allreduce import allreduce_ranges_for, engine_costs

        ranges = allreduce_ranges_for(impl, group, 8192.0 * elem_bytes)
        costs, rule = engine_costs(ranges, group, sizes), ranges.describe()
    if json_out:
        print_json(
            {
                "system": group.system.name,
                "nodes": nodes,
                "gpus": group.ranks,
                "op": op,
                "impl": impl,
                "algo": algo,
                "protocol": protocol,
                "dtype": dtype,
                "crossover_bytes": cross,
                "engine_rule": rule,
                "gpudirect_rdma": gdr(group.system, cat.nccl) if nodes > 1 else None,
                "rows": costs,
            }
        )
    else:
        from ..report import tables

        why = custom_allreduce_allowed(group, impl) if op == "all-reduce" else "custom kernels are all-reduce only"
        tables.print_sweep(
            group, costs, op=op, impl=impl, elem_bytes=elem_bytes, crossover=cross, why_not_custom=why, rule=rule
        )
    if plot:
        from ..report import figures

        write_plot(
            lambda: figures.fabric_comparison([(f"{group.system.name} x{group.ranks}", costs, cross)], op=op),
            plot,
            force=force,
        )


@app.command()
@groups(FABRIC)
def compare(
    *,
    system: SystemsOpt,
    nodes: NodesOpt = None,
    gpus: GpusOpt = None,
    op: OpOpt = "all-reduce",
    model: ModelOpt = args.EXPLAIN_MODEL,
    batch: BatchOpt = None,
    plot: PlotOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
    fabric: FabricArgs,
) -> None:
    """Systems side by side: crossover sizes and the time ratio at the sizes decode really uses."""
    from ..decide.compare import compare_systems

    check_plot(plot, force=force)
    req = build_request(model, system[0], fabric=fabric, nodes=nodes, batches=batch or args.REPORT_BATCHES)
    result = compare_systems(req, system, gpus=gpus, op=op, curves=plot is not None)
    if json_out:
        print_json(result.to_dict())
    else:
        from ..report import tables

        tables.print_compare(result)
    if plot:
        from ..report import figures

        write_plot(lambda: figures.compare_figure(result), plot, force=force)
