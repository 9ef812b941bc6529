"""`shardbudget check`: is this nccl-tests result, or this serving benchmark, normal for the system?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from . import args
from ..defaults import CHECK_TTFT_TOLERANCE
from .app import app
from .args import (
    CatalogOpt,
    ForceOpt,
    GpusOpt,
    JsonOpt,
    KvDtypeOpt,
    MaybeEngineOpt,
    MaybeModelOpt,
    NodesOpt,
    PlotOpt,
    SystemOpt,
    WeightDtypeOpt,
)
from .command_io import check_plot, load_catalogs, print_json, write_plot

DegreeOpt = Optional[int]


@app.command()
def check(
    *,
    files: Annotated[
        list[Path],
        typer.Argument(
            help="nccl-tests / rccl-tests logs (all_reduce_perf, ...) or shardbudget measure JSON; or the JSON of a serving benchmark (vllm bench serve, SGLang bench_serving, AIPerf / genai-perf, trtllm-bench)."
        ),
    ],
    system: SystemOpt,
    nodes: NodesOpt = None,
    gpus: GpusOpt = None,
    tolerance: Annotated[
        float,
        typer.Option(
            "--tolerance",
            help="Allowed deviation of each region's median time from the model: 0.25 = within x1.25 either way (serving: of each TPOT, ITL and throughput).",
        ),
    ] = args.DEFAULT_TOLERANCE,
    catalog: CatalogOpt = None,
    model: MaybeModelOpt = None,
    engine: MaybeEngineOpt = None,
    dtype: WeightDtypeOpt = None,
    kv_dtype: KvDtypeOpt = None,
    tp: Annotated[
        DegreeOpt,
        typer.Option(
            "--tp", min=1, help="Serving: the tensor-parallel degree of the plan to price (default: the file's)."
        ),
    ] = None,
    pp: Annotated[
        DegreeOpt,
        typer.Option("--pp", min=1, help="Serving: the pipeline-parallel degree (default: the file's, else 1)."),
    ] = None,
    ep: Annotated[
        DegreeOpt,
        typer.Option("--ep", min=1, help="Serving: the expert-parallel degree (default: the file's, else 1)."),
    ] = None,
    replicas: Annotated[
        int,
        typer.Option(
            "--replicas",
            min=1,
            help="Serving: replicas of the plan behind the benchmark's endpoint; the load is split evenly.",
        ),
    ] = 1,
    concurrency: Annotated[
        Optional[float],
        typer.Option(
            "--concurrency",
            min=1,
            help="Serving: requests in flight over all replicas (default: the client's max concurrency, or the run's measured mean in flight).",
        ),
    ] = None,
    ttft_tolerance: Annotated[
        float,
        typer.Option(
            "--ttft-tolerance", help="Serving: allowed deviation of the mean TTFT: 1.0 = within x2 either way."
        ),
    ] = CHECK_TTFT_TOLERANCE,
    plot: PlotOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Is this nccl-tests result or serving benchmark normal for the system? Per size and region, or per metric, with the likely cause; exit 0 ok, 1 not, 2 bad input, 3 a bug."""
    from ..measure.logs.serving_formats import serving_runs_or_none

    first_runs = serving_runs_or_none(files[0]) if files else None  # the file parsed once, here
    serving = first_runs is not None
    _refuse_others(
        serving,
        gpus=gpus,
        model=model,
        engine=engine,
        dtype=dtype,
        kv_dtype=kv_dtype,
        tp=tp,
        pp=pp,
        ep=ep,
        replicas=replicas if replicas != 1 else None,
        concurrency=concurrency,
        ttft_tolerance=ttft_tolerance if ttft_tolerance != CHECK_TTFT_TOLERANCE else None,
        plot=plot,
    )
    check_plot(plot, force=force)
    if serving:
        from ..decide.serving_check import Asked, check_serving_runs
        from ..measure.logs.serving_formats import read_serving
        from ..report.serving_check import format_serving_check

        asked = Asked(tp=tp, pp=pp, ep=ep, replicas=replicas, concurrency=concurrency)
        runs = first_runs + [run for path in files[1:] for run in read_serving(path)]
        result = check_serving_runs(
            runs,
            system=system,
            model=model,
            engine=engine,
            nodes=nodes,
            dtype=dtype,
            kv_dtype=kv_dtype,
            catalog=load_catalogs(catalog),
            asked=asked,
            tol=tolerance,
            ttft_tol=ttft_tolerance,
        )
        text = format_serving_check
    else:
        from ..measure.analysis.check import check_logs, format_check

        result = check_logs(
            files, system=system, catalog=load_catalogs(catalog), nodes=nodes, gpus=gpus, tolerance=tolerance
        )
        text = format_check
    if json_out:
        print_json(result.to_dict())
    else:
        print(text(result))
    if plot is not None:
        from ..report.fig_serving import serving_figure

        write_plot(lambda: serving_figure(result), plot, force=force)
    if result.exit_code:
        raise typer.Exit(code=result.exit_code)


def _refuse_others(serving: bool, **given) -> None:
    """An option of the other kind of file is refused, never ignored: --gpus is an nccl-tests log's,
    the plan and model options a serving benchmark's."""
    from ..errors import PlanError

    wrong = [k for k, v in given.items() if v is not None and (k == "gpus") == serving]
    if wrong:
        flags = ", ".join("--" + k.replace("_", "-") for k in wrong)
        what = "a serving benchmark's result" if serving else "nccl-tests logs"
        raise PlanError(f"{flags}: not an option for {what} (check reads the first file as {what})")
