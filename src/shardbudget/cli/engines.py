"""`shardbudget engines`: the engine presets (release, date, NCCL, sources), and `--diff A B`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .app import app
from .args import BatchOpt, JsonOpt, MaybeModelOpt, OptSystemOpt
from .command_io import print_json

DiffOpt = Annotated[
    Optional[tuple[str, str]],
    typer.Option(
        "--diff",
        metavar="A B",
        help="Two presets side by side (e.g. --diff vllm-0.19 vllm): what changed in their rules, "
        "defaults and flags; with --model and --system, the plan under each.",
    ),
]
WIDTH = 100


@app.command()
def engines(
    *,
    diff: DiffOpt = None,
    model: MaybeModelOpt = None,
    system: OptSystemOpt = None,
    batch: BatchOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """The engine presets: each one's release, date, the NCCL it ships and where its rules were read; --diff A B."""
    from ..decide.engine_diff import engine_diff, engine_releases
    from ..errors import PlanError

    if diff is None:
        if model is not None or system is not None or batch:
            raise PlanError("--model, --system and --batch go with --diff A B")
        releases = engine_releases()
        if json_out:
            print_json({"presets": [r.to_dict() for r in releases]})
            return
        _print_releases(releases)
        return
    if batch and len(batch) > 1:
        raise PlanError("engines --diff prices one batch: give one --batch")
    result = engine_diff(diff[0], diff[1], model=model, system=system, batch=batch[0] if batch else 1)
    if json_out:
        print_json(result.to_dict())
        return
    _print_diff(result)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _print_releases(releases) -> None:
    print(f"{'preset':<14} {'release':<10} {'date':<11} {'NCCL':<7} status")
    for r in releases:
        i = r.info
        if r.note:
            status = f"older: {r.behind}"
        else:
            status = "the engine's newest (--engine " + i.name + ")" if i.line else "a configuration of its own"
        print(f"{i.name:<14} {i.version:<10} {_cut(i.released, 11):<11} {i.nccl or '-':<7} {_cut(status, WIDTH - 46)}")
    print("\nwhere each preset's rules were read:")
    for r in releases:
        print(f"  {r.info.name}: {_cut(r.info.source, WIDTH - 4 - len(r.info.name))}")


def _print_diff(d) -> None:
    a, b = d.a, d.b
    print(
        f"{a.name} -> {b.name}: {a.version} ({a.released}, NCCL {a.nccl or '-'}) -> "
        f"{b.version} ({b.released}, NCCL {b.nccl or '-'})"
    )
    print(f"\nwhat the presets state differently ({len(d.changes)} fields):")
    key, col = 42, (WIDTH - 2 - 42 - 2) // 2
    print(f"  {'field':<{key}} {a.name:<{col}} {b.name}")
    for c in d.changes:
        where = _cut(f"{c.table}.{c.field}" if c.table != "engine" else c.field, key)
        print(f"  {where:<{key}} {_cut(c.old, col):<{col}} {_cut(c.new, col)}")
    if d.plans:
        _print_plans(d)


def _print_plans(d) -> None:
    pa, pb = d.plans
    print(f"\n{d.model} on {d.system}, batch {pa.batch}, per plan: {pa.preset} -> {pb.preset}")
    print(f"  {'plan':<10} {'ITL':>21} {'served TPOT':>21} {'memory per GPU':>20} {'fits':>10}")
    by_b = {x.plan: x for x in pb.lines}
    pairs = [(x, by_b[x.plan]) for x in pa.lines if x.plan in by_b]
    for x, y in pairs:
        tpot = f"{_ms(x.tpot_s)} -> {_ms(y.tpot_s)}"
        fits = f"{'yes' if x.fits else 'no'} -> {'yes' if y.fits else 'no'}"
        mem = f"{x.mem_bytes_per_gpu / 1e9:.1f} -> {y.mem_bytes_per_gpu / 1e9:.1f} GB"
        print(f"  {x.plan:<10} {_ms(x.itl_s) + ' -> ' + _ms(y.itl_s):>21} {tpot:>21} {mem:>20} {fits:>10}")
    seen = set()
    for x, y in pairs:
        tp = x.plan.split()[0]
        if x.allreduce and tp not in seen:
            seen.add(tp)
            print(f"  {tp} all-reduce: {x.allreduce} -> {y.allreduce}")
    print(
        f"  memory the engine allows a GPU (at the latency-optimal TP): {100 * pa.memory_fraction:.0f}% "
        f"({pa.usable_bytes / 1e9:.1f} GB) -> {100 * pb.memory_fraction:.0f}% ({pb.usable_bytes / 1e9:.1f} GB)"
    )
    best = [
        f"{p.best_plan} ({_ms(next(x.itl_s for x in p.lines if x.plan == p.best_plan))})" if p.best_plan else "none"
        for p in (pa, pb)
    ]
    print(f"  latency-optimal plan: {best[0]} -> {best[1]}")


def _ms(t_s: float | None) -> str:
    return "-" if t_s is None else f"{t_s * 1e3:.2f} ms"
