"""Leave-one-system-out validation of the collective model, run by `make bench`.

    python benchmarks/loso.py [--data DIR] [--system hgx-h100] [--rows]

What is held out, fitted and scored is `shardbudget.calibrate.loso` (its docstring). This prints, per
held-out system, the median and 90th percentile of |predicted - measured| / measured time of each
metric with the in-sample figures (constants fitted on every system) beside them; `--rows` lists,
per held-out system, every single-node NCCL row with its measured and held-out predicted time, the
error and the line that ran. Every row is priced at the release it states (NCCL's, or the engine
preset of its release); the held-out figures are also given per release, naming the rows whose release
the catalog has no rules or preset of its own for. Exits 1 when a held-out system misses a target, 2 when the data is
missing (`--data`: a folder other than the repository's data/). With $SHARDBUDGET_BENCH_RESULTS set,
writes one target record per metric for run_all.py, and the table per held-out system
(docs/accuracy.md is generated from it: scripts/bench_docs.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from shardbudget.calibrate.loso import (
    LABELS,
    TARGETS,
    case_errors,
    cases,
    errors,
    fit_without,
    release_lines,
    release_records,
    row_lines,
    summary,
)


def _cell(s: tuple[float, float] | None, target: tuple[float, float | None]) -> tuple[str, bool]:
    if s is None:
        return f"{'-':>17}", True
    ok = s[0] <= target[0] and (target[1] is None or s[1] <= target[1])
    return f"{s[0]:>7.1%} {s[1]:>7.1%}{' ' if ok else '*'}", ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="folder holding measured_comm.csv and nccl_tests.csv (default: the repository's data/)",
    )
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
    lines = [
        "Leave-one-system-out: constants fitted without the system, |predicted - measured| / measured",
        "(* misses the target; in-sample: fitted on every system)",
        head,
        sub,
    ]
    missed: dict[str, list[str]] = {m: [] for m in TARGETS}
    met: dict[str, int] = {m: 0 for m in TARGETS}
    pooled: dict[str, list[float]] = {m: [] for m in TARGETS}
    table: list[dict] = []  # per held-out system and metric, for run_all.py (docs/accuracy.md)
    held_all = []  # (case, held-out error) of every system: the figures per stated release
    for system in systems:
        mine = [c for c in rows if c.system == system]
        fold = fit_without(system, args.data)
        held = case_errors(fold, mine)
        held_all += held
        loo = {m: [e for c, e in held if c.metric == m] for m in TARGETS}
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
                table.append(
                    {
                        "system": system,
                        "metric": m,
                        "rows": len(loo[m]),
                        "median": s[0],
                        "p90": s[1],
                        "in_sample_median": si[0],
                        "in_sample_p90": si[1],
                        "passed": ok,
                    }
                )
        lines.append(f"  {system:18} " + " ".join(cells))
        lines.append(f"  {'  in-sample':18} " + " ".join(cells_in))
        if args.rows:
            lines += row_lines(fold, mine)
    lines.append(
        f"  {'all rows, held out':18} "
        + " ".join(
            f"{len(pooled[m]):>5} "
            + (f"{'-':>17} " if not pooled[m] else "{:>7.1%} {:>7.1%}  ".format(*summary(pooled[m])))
            for m in TARGETS
        )
    )
    lines += [""] + release_lines(held_all)
    lines.append("")
    lines.append(
        "Targets per held-out system: NCCL median <= 10%, p90 <= 25%; custom median <= 12%, p90 <= 30%; "
        "multi-node median <= 15%"
    )
    records = []
    for m in TARGETS:
        total = met[m] + len(missed[m])
        lines.append(
            f"  {LABELS[m]:28} {met[m]}/{total} held-out systems within target"
            + (f"; missed: {', '.join(missed[m])}" if missed[m] else "")
        )
        records.append(
            {
                "name": f"LOSO {LABELS[m]}: held-out systems within target",
                "value": met[m],
                "unit": f"of {total}",
                "target": f"{total}",
                "passed": not missed[m],
            }
        )
    print("\n".join(lines))
    out = os.environ.get("SHARDBUDGET_BENCH_RESULTS")
    if out:
        pooled_rows = [
            {"metric": m, "rows": len(pooled[m]), "median": summary(pooled[m])[0], "p90": summary(pooled[m])[1]}
            for m in TARGETS
            if pooled[m]
        ]
        targets_table = [
            {"metric": m, "label": LABELS[m], "median": TARGETS[m][0], "p90": TARGETS[m][1]} for m in TARGETS
        ]
        Path(out).write_text(
            json.dumps(
                {
                    "benchmark": "loso",
                    "targets": records,
                    "tables": {
                        "held_out": table,
                        "pooled": pooled_rows,
                        "targets": targets_table,
                        "releases": release_records(held_all),
                    },
                }
            ),
            encoding="utf-8",
        )
    return 0 if not any(missed.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
