"""Leave-one-system-out validation of the collective model, run by `make bench`.

    python benchmarks/loso.py [--data ../shared/data] [--system hgx-h100] [--rows]

For every system with rows in measured_comm.csv or nccl_tests.csv: start from the catalog with every
fitted constant put back to its no-data value (calibrate.neutral), fit them all on the other
systems' rows (calibrate.calibrate; a GPU generation left without rows takes the others' mean),
predict the held-out system, and print per system the median and 90th percentile of
|predicted - measured| / measured time for

  NCCL all-reduce   single node, 512 B-512 MiB (measured_comm.csv at 2/4/8 GPUs and the system's
                    nccl_tests.csv rows)
  custom all-reduce the engines' custom kernels under CUDA graphs (measured_comm.csv): the rows where
                    the engine's source runs its own kernel (engines.toml's group sizes, P2P,
                    NVLink and buffer limits); above those the engines call NCCL through their own
                    communicators, which is not a custom kernel and is not scored
  multi-node        nccl_tests.csv rows over 2+ hosts (variants as tests/validation/measured.py)

against the issue's targets (NCCL median <= 10%, p90 <= 25%; custom median <= 12%, p90 <= 30%;
multi-node median <= 15%). The in-sample figures (constants fitted on every system) are printed
beside them. `--rows` lists, per held-out system, every single-node NCCL row with its measured and
held-out predicted time, the error and the line that ran (where the error comes from). Exits 1 when a held-out system misses a target, 2 when the data is missing. With
$SHARDBUDGET_BENCH_RESULTS set, writes one target record per metric for run_all.py, and the table per
held-out system (docs/accuracy.md is generated from it: scripts/bench_docs.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import calibrate as C  # noqa: E402

from shardbudget.comm.collectives import make_group, sweep  # noqa: E402
from shardbudget.comm.custom_kernels import runs_custom_kernel  # noqa: E402
from shardbudget.fabric.hardware import Catalog
from shardbudget.comm.versions import at_stated  # noqa: E402
from shardbudget.fabric.catalog import load_catalog  # noqa: E402

MAX_BYTES = 512 * 2**20
TARGETS = {"nccl": (0.10, 0.25), "custom": (0.12, 0.30), "multi": (0.15, None)}
LABELS = {"nccl": "NCCL all-reduce (1 node)", "custom": "custom all-reduce (graph)", "multi": "multi-node"}


@dataclass(frozen=True)
class Case:
    """One measured time to predict."""

    metric: str
    system: str
    gpus: int
    nodes: int
    size_bytes: float
    time_s: float
    impl: str = "nccl"
    algo: str = "auto"
    variant: str | None = None
    nccl: str | None = None
    """The NCCL release the row was measured with (or states), priced at its rules."""


def cases(data_dir: Path | None) -> list[Case]:
    mc = C.load_module("measured_comm")
    measured = C.load_module("measured")
    catalog = load_catalog()
    out = []
    for r in mc.load_rows(data_dir):
        if r.op != "all-reduce" or r.size_bytes > MAX_BYTES:
            continue
        if r.library == "nccl":
            out.append(Case("nccl", r.system, r.gpus, 1, r.size_bytes, r.time_s, nccl=r.version))
        elif r.mode == "graph" and runs_custom_kernel(make_group(r.system, gpus=r.gpus, catalog=catalog), r.library,
                                                      r.size_bytes):
            out.append(Case("custom", r.system, r.gpus, 1, r.size_bytes, r.time_s, impl=r.library))
    for r in measured.load_rows(data_dir):
        if r.kept and r.op == "all-reduce":
            out.append(Case("multi" if r.multi_node else "nccl", r.system, r.gpus, r.nodes, r.size_bytes, r.time_s,
                            algo=r.algo, variant=r.variant, nccl=r.nccl))
    return out


@lru_cache(maxsize=8)
def _variant_base(variant: str | None) -> Catalog:
    measured = C.load_module("measured")
    return measured.variant_catalog(variant)


def fold_catalog(cal: C.Calibration, variant: str | None) -> Catalog:
    return C.apply(C.neutral(_variant_base(variant)), cal)


def errors(cal: C.Calibration, rows: list[Case]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {k: [] for k in TARGETS}
    catalogs: dict[str | None, Catalog] = {}
    for c in rows:
        if c.variant not in catalogs:
            catalogs[c.variant] = fold_catalog(cal, c.variant)
        system = c.variant or c.system
        cost = sweep("all-reduce", [c.size_bytes], system, nodes=c.nodes, gpus=c.gpus, algo=c.algo, impl=c.impl,
                     catalog=at_stated(catalogs[c.variant], c.nccl))[0]
        out[c.metric].append(abs(cost.time_s / c.time_s - 1))
    return out


def row_lines(cal: C.Calibration, rows: list[Case]) -> list[str]:
    """Each single-node NCCL case held out: GPUs, size, measured, predicted, error, the line that ran."""
    out = []
    for c in sorted((c for c in rows if c.metric == "nccl"), key=lambda c: (c.gpus, c.algo, c.size_bytes)):
        cost = sweep("all-reduce", [c.size_bytes], c.variant or c.system, nodes=c.nodes, gpus=c.gpus, algo=c.algo,
                     impl=c.impl, catalog=at_stated(fold_catalog(cal, c.variant), c.nccl))[0]
        out.append(f"    {c.gpus:>3} GPUs {c.algo:5} {c.size_bytes:>12.0f} B  measured {c.time_s * 1e6:>10.1f} us  "
                   f"predicted {cost.time_s * 1e6:>10.1f} us  {cost.time_s / c.time_s - 1:>+7.1%}  "
                   f"{cost.algorithm}/{cost.protocol}")
    return out


def summary(errs: list[float]) -> tuple[float, float] | None:
    if not errs:
        return None
    measured = C.load_module("measured")
    return measured.percentile(errs, 50), measured.percentile(errs, 90)


def held_out(metric: str, data_dir: Path | None) -> dict[str, list[float]]:
    """|predicted - measured| / measured of every `metric` row, each system predicted by constants
    fitted without it, by system (pool the lists for the figure over every system)."""
    rows = [c for c in cases(data_dir) if c.metric == metric]
    return {s: errors(fit_without(s, data_dir), [c for c in rows if c.system == s])[metric]
            for s in sorted({c.system for c in rows})}


def fit_without(system: str | None, data_dir: Path | None) -> C.Calibration:
    xs = [x for x in C.samples(data_dir) if x.system != system]
    eng = [(e, x) for e, x in C.engine_samples(data_dir) if x.system != system]
    base = C.neutral(load_catalog())
    # XLA's GB200 NVL72 table (not a system's nccl-tests or measured_comm rows: whole XLA executables,
    # used only for shapes, NVLS's growth with the group) enters every fold as it enters calibrate.py
    cal = C.calibrate(xs, base=base, engine_rows=eng, xla=C.xla_samples(data_dir),
                      xla_all_gather=C.xla_all_gather_samples(data_dir))
    return C.held_out(cal, base, system) if system else cal


def _cell(s: tuple[float, float] | None, target: tuple[float, float | None]) -> tuple[str, bool]:
    if s is None:
        return f"{'-':>17}", True
    ok = s[0] <= target[0] and (target[1] is None or s[1] <= target[1])
    return f"{s[0]:>7.1%} {s[1]:>7.1%}{' ' if ok else '*'}", ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="folder holding measured_comm.csv and nccl_tests.csv")
    parser.add_argument("--system", action="append", help="hold out only these systems")
    parser.add_argument("--rows", action="store_true", help="list every held-out NCCL row with its error")
    args = parser.parse_args(argv)
    try:
        rows = cases(args.data)
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    systems = sorted({c.system for c in rows})
    if args.system:
        systems = [s for s in systems if s in args.system]
    insample = fit_without(None, args.data)
    head = f"  {'held-out system':18} " + " ".join(f"{LABELS[m]:>26}" for m in TARGETS)
    sub = f"  {'':18} " + " ".join(f"{'n':>5} {'median':>8} {'p90':>8}    " for _ in TARGETS)
    lines = ["Leave-one-system-out: constants fitted without the system, |predicted - measured| / measured",
             "(* misses the target; in-sample: fitted on every system)", head, sub]
    missed: dict[str, list[str]] = {m: [] for m in TARGETS}
    met: dict[str, int] = {m: 0 for m in TARGETS}
    pooled: dict[str, list[float]] = {m: [] for m in TARGETS}
    table: list[dict] = []  # per held-out system and metric, for run_all.py (docs/accuracy.md)
    for system in systems:
        mine = [c for c in rows if c.system == system]
        fold = fit_without(system, args.data)
        loo = errors(fold, mine)
        ins = errors(insample, mine)
        cells, cells_in = [], []
        for m in TARGETS:
            s = summary(loo[m])
            pooled[m] += loo[m]
            text, ok = _cell(s, TARGETS[m])
            cells.append(f"{len(loo[m]):>5} {text}")
            cells_in.append(f"{'':>5} {_cell(summary(ins[m]), TARGETS[m])[0]}")
            if s is not None:
                (met.__setitem__(m, met[m] + 1) if ok else missed[m].append(system))
                si = summary(ins[m])
                table.append({"system": system, "metric": m, "rows": len(loo[m]), "median": s[0], "p90": s[1],
                              "in_sample_median": si[0], "in_sample_p90": si[1], "passed": ok})
        lines.append(f"  {system:18} " + " ".join(cells))
        lines.append(f"  {'  in-sample':18} " + " ".join(cells_in))
        if args.rows:
            lines += row_lines(fold, mine)
    lines.append(f"  {'all rows, held out':18} "
                 + " ".join(f"{len(pooled[m]):>5} " + (f"{'-':>17} " if not pooled[m] else
                            "{:>7.1%} {:>7.1%}  ".format(*summary(pooled[m]))) for m in TARGETS))
    lines.append("")
    lines.append("Targets per held-out system: NCCL median <= 10%, p90 <= 25%; custom median <= 12%, p90 <= 30%; "
                 "multi-node median <= 15%")
    records = []
    for m in TARGETS:
        total = met[m] + len(missed[m])
        lines.append(f"  {LABELS[m]:28} {met[m]}/{total} held-out systems within target"
                     + (f"; missed: {', '.join(missed[m])}" if missed[m] else ""))
        records.append({"name": f"LOSO {LABELS[m]}: held-out systems within target", "value": met[m],
                        "unit": f"of {total}", "target": f"{total}", "passed": not missed[m]})
    print("\n".join(lines))
    out = os.environ.get("SHARDBUDGET_BENCH_RESULTS")
    if out:
        pooled_rows = [{"metric": m, "rows": len(pooled[m]), "median": summary(pooled[m])[0],
                        "p90": summary(pooled[m])[1]} for m in TARGETS if pooled[m]]
        targets_table = [{"metric": m, "label": LABELS[m], "median": TARGETS[m][0], "p90": TARGETS[m][1]}
                         for m in TARGETS]
        Path(out).write_text(json.dumps({"benchmark": "loso", "targets": records, "tables": {
            "held_out": table, "pooled": pooled_rows, "targets": targets_table}}), encoding="utf-8")
    return 0 if not any(missed.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
