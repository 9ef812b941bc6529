"""The `shardbudget` command: a thin typer shell over the library. It parses, calls and prints."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import units
from .errors import ShardbudgetError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="How far can a transformer be tensor-parallel sharded before the interconnect "
                       "sets its per-token latency?")

CatalogOpt = Annotated[Optional[list[Path]], typer.Option("--catalog", help="Extra catalog TOML file(s) (fabrics, GPUs, systems, fitted profiles).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")]
NodesOpt = Annotated[int, typer.Option("--nodes", help="Number of nodes of the system.")]


def _catalog(paths: Optional[list[Path]]):
    from .hardware import load_catalog
    return load_catalog(tuple(str(p) for p in paths or ()))


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(jsonable(obj), indent=2, allow_nan=False) + "\n")


def jsonable(o):
    """Plain JSON data: dataclasses via to_dict(), inf/NaN as null (JSON has no infinity)."""
    if hasattr(o, "to_dict"):
        o = o.to_dict()
    if isinstance(o, dict):
        return {str(k): jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [jsonable(v) for v in o]
    if isinstance(o, float) and (o != o or o in (float("inf"), float("-inf"))):
        return None
    return o


# --- fabrics ---------------------------------------------------------------------------------

@app.command()
def fabrics(catalog: CatalogOpt = None, json_out: JsonOpt = False,
            systems: Annotated[bool, typer.Option("--systems", help="List systems and GPUs too.")] = False) -> None:
    """The fabric catalog: per-direction bandwidth, per-hop latency and the source of each number."""
    from .report import tables
    cat = _catalog(catalog)
    if json_out:
        _print_json(tables.fabrics_dict(cat))
        return
    tables.print_fabrics(cat, systems=systems)


# --- allreduce -------------------------------------------------------------------------------

@app.command()
def allreduce(
    system: Annotated[str, typer.Option("--system", "-s", help="System name, e.g. hgx-h100.")],
    nodes: NodesOpt = 1,
    gpus: Annotated[Optional[int], typer.Option("--gpus", help="GPUs taking part (default: all of the nodes).")] = None,
    op: Annotated[str, typer.Option("--op", help="all-reduce | reduce-scatter | all-gather | all-to-all | broadcast | send/recv")] = "all-reduce",
    size: Annotated[Optional[list[str]], typer.Option("--size", help="Message size(s) per rank, e.g. 16KiB (repeatable, or a range 8B:1GiB).")] = None,
    algo: Annotated[str, typer.Option("--algo", help="auto | ring | tree | nvls | one-shot | two-shot | hierarchical")] = "auto",
    protocol: Annotated[str, typer.Option("--protocol", help="auto | ll | ll128 | simple")] = "auto",
    impl: Annotated[str, typer.Option("--impl", help="nccl | custom (inference engines' one-/two-shot kernels)")] = "nccl",
    dtype: Annotated[str, typer.Option("--dtype", help="Element type, for the count column.")] = "bf16",
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write the figure (PNG or SVG).")] = None,
    catalog: CatalogOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """An nccl-tests-like table of predicted collective times on a system."""
    from .collectives import crossover_bytes, make_group, normalize_op, sweep
    from .report import tables
    cat = _catalog(catalog)
    sizes = _sizes(size)
    op = normalize_op(op)
    elem_bytes = _dtype_bytes(dtype)
    costs = sweep(op, sizes, system, nodes=nodes, gpus=gpus, algo=algo, protocol=protocol, impl=impl, catalog=cat)
    group = make_group(system, nodes=nodes, gpus=gpus, catalog=cat)
    cross = crossover_bytes(group, op, impl, algo, protocol)
    if json_out:
        _print_json({"system": group.system.name, "nodes": nodes, "gpus": group.ranks, "op": op,
                     "impl": impl, "algo": algo, "protocol": protocol, "dtype": dtype,
                     "crossover_bytes": cross,
                     "rows": [_row_dict(c) for c in costs]})
    else:
        tables.print_sweep(group, costs, op=op, impl=impl, elem_bytes=elem_bytes, crossover=cross)
    if plot:
        from .report import figures
        figures.save(figures.fabric_comparison([(f"{group.system.name} x{group.ranks}", costs, cross)], op=op), plot)
        typer.echo(f"wrote {plot}", err=True)


def _row_dict(c) -> dict:
    return {"bytes": c.msg_bytes, "time_s": c.time_s, "latency_s": c.latency_s, "bandwidth_s": c.bandwidth_s,
            "algorithm": c.algorithm, "protocol": c.protocol, "algbw_bytes_per_s": c.algbw_bytes_per_s,
            "busbw_bytes_per_s": c.busbw_bytes_per_s}


def _sizes(size: Optional[list[str]]) -> list[float]:
    if not size:
        return units.parse_size_range("8B:1GiB")
    out: list[float] = []
    for s in size:
        out.extend(units.parse_size_range(s) if ":" in s else units.parse_list([s], units.parse_bytes))
    return out


def _dtype_bytes(dtype: str) -> float:
    table = {"bf16": 2, "fp16": 2, "float16": 2, "bfloat16": 2, "fp32": 4, "float32": 4, "float": 4,
             "fp8": 1, "int8": 1, "int32": 4, "fp64": 8, "double": 8}
    if dtype not in table:
        from .errors import UnknownNameError
        raise UnknownNameError("dtype", dtype, table)
    return table[dtype]


# --- compare ---------------------------------------------------------------------------------

@app.command()
def compare(
    system: Annotated[list[str], typer.Option("--system", "-s", help="Systems to compare (repeat).")],
    nodes: NodesOpt = 1,
    gpus: Annotated[Optional[int], typer.Option("--gpus")] = None,
    op: Annotated[str, typer.Option("--op")] = "all-reduce",
    model: Annotated[str, typer.Option("--model", help="Model whose decode message sizes are marked.")] = "llama-3.1-70b",
    batch: Annotated[Optional[list[int]], typer.Option("--batch", help="Decode batch sizes to mark.")] = None,
    impl: Annotated[str, typer.Option("--impl")] = "nccl",
    plot: Annotated[Optional[Path], typer.Option("--plot")] = None,
    catalog: CatalogOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Systems side by side: crossover sizes and the time ratio at the sizes decode really uses."""
    from .compare import compare_systems
    from .report import tables
    result = compare_systems(system, nodes=nodes, gpus=gpus, op=op, model=model, batches=batch or [1, 64],
                             impl=impl, catalog=_catalog(catalog))
    if json_out:
        _print_json(result.to_dict())
    else:
        tables.print_compare(result)
    if plot:
        from .report import figures
        figures.save(figures.compare_figure(result), plot)
        typer.echo(f"wrote {plot}", err=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback."""
    try:
        app(args=argv, standalone_mode=False)
    except ShardbudgetError as err:
        typer.echo(f"error: {err}", err=True)
        return err.exit_code
    except _click_errors() as err:  # usage errors: unknown option, missing value, bad int
        typer.echo(f"error: {err.format_message()}", err=True)
        return 2
    except _click_exit() as err:
        return err.exit_code
    except _click_abort():
        return 130
    except (KeyboardInterrupt, BrokenPipeError):
        return 130
    except Exception as err:  # a bug: say so in one line; SHARDBUDGET_DEBUG=1 shows the traceback
        if os.environ.get("SHARDBUDGET_DEBUG"):
            raise
        typer.echo(f"internal error: {type(err).__name__}: {err} (set SHARDBUDGET_DEBUG=1 for details)", err=True)
        return 1
    return 0


def _click_errors():
    import click
    return (click.exceptions.UsageError, click.exceptions.BadParameter, click.exceptions.NoSuchOption)


def _click_exit():
    import click
    return click.exceptions.Exit


def _click_abort():
    import click
    return click.exceptions.Abort


def console_main() -> None:
    code = main()
    sys.exit(code)
