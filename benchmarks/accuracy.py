"""Accuracy of the collective model against published nccl-tests / rccl-tests timings.

    python benchmarks/accuracy.py [--worst 15] [--dropped] [--data DIR]

Prints, per system, how many rows were compared and the median / 90th percentile of
|predicted - measured| / measured time over all sizes and GPU counts (single-node and multi-node
separately), the worst rows with measured beside predicted, the issue's targets, and exits 1 when a
target is missed (2 when the data cannot be found). The rows, the keep/drop rules and the reasons live
in shardbudget.calibrate.nccl_tests and nccl_rules, which the validation tests read too: one copy of
the loader. With $SHARDBUDGET_BENCH_RESULTS set, writes its targets and tables there as JSON for
run_all.py (the figures docs/accuracy.md shows: scripts/bench_docs.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

from shardbudget.calibrate import nccl_tests


def _label(row) -> str:
    return f"{row.system} ({row.variant})" if row.variant else row.system


def _size(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def _us(t_s: float) -> str:
    return f"{t_s * 1e6:,.1f} us" if t_s < 1e-2 else f"{t_s * 1e3:,.2f} ms"


def system_table(measured, compared, title: str) -> list[str]:
    lines = [title, f"  {'system':34} {'rows':>5} {'median':>8} {'p90':>8} {'max':>8}"]
    groups = measured.by(compared, lambda c: _label(c.row))
    for name in sorted(groups):
        s = measured.summarize(groups[name])
        worst = max(abs(c.rel_error) for c in groups[name])
        lines.append(f"  {name:34} {s.n:>5} {s.median:>8.1%} {s.p90:>8.1%} {worst:>8.1%}")
    if compared:
        s = measured.summarize(compared)
        lines.append(f"  {'all':34} {s.n:>5} {s.median:>8.1%} {s.p90:>8.1%}")
    return lines


def worst_rows(compared, n: int) -> list[str]:
    lines = [
        f"Worst {n} rows (error = predicted / measured - 1):",
        f"  {'source':22} {'line':>4} {'system':16} {'gpus':>5} {'nodes':>5} {'op':14} {'size':>10} "
        f"{'measured':>12} {'predicted':>12} {'error':>8}  algorithm",
    ]
    for c in sorted(compared, key=lambda c: -abs(c.rel_error))[:n]:
        r = c.row
        forced = f" (forced {r.algo})" if r.algo != "auto" else ""
        lines.append(
            f"  {r.source_id:22} {r.line:>4} {r.catalog_system:16} {r.gpus:>5} {r.nodes:>5} {r.op:14} "
            f"{_size(r.size_bytes):>10} {_us(r.time_s):>12} {_us(c.predicted_s):>12} "
            f"{c.rel_error:>+8.1%}  {c.algorithm}/{c.protocol}{forced}"
        )
    return lines


def target_lines(measured, compared) -> tuple[list[str], bool]:
    ok = True
    lines = ["Targets (|relative error| of time over all sizes and GPU counts):"]
    for cls, (max_median, max_p90) in measured.TARGETS.items():
        s = measured.summarize([c for c in compared if measured.category(c.row) == cls])
        hit = s.n > 0 and s.median <= max_median and s.p90 <= max_p90
        ok &= hit
        p90 = f", p90 {s.p90:.1%} <= {max_p90:.0%}" if max_p90 < float("inf") else f", p90 {s.p90:.1%}"
        lines.append(
            f"  {cls:12} n={s.n:>4}: median {s.median:.1%} <= {max_median:.0%}{p90}  {'ok' if hit else 'MISSED'}"
        )
    single = [c for c in compared if not c.row.multi_node]
    for cls, group in sorted(measured.by(single, lambda c: measured.fabric_class(c.row)).items()):
        s = measured.summarize(group)
        lines.append(f"    {cls:30} n={s.n:>4}: median {s.median:.1%}, p90 {s.p90:.1%} (breakdown)")
    return lines, ok


def system_records(measured, compared) -> list[dict]:
    """The rows of `system_table` as records: system, rows, median, p90, max (fractions)."""
    out = []
    for name, group in sorted(measured.by(compared, lambda c: _label(c.row)).items()):
        s = measured.summarize(group)
        out.append(
            {"system": name, "rows": s.n, "median": s.median, "p90": s.p90, "max": max(abs(c.rel_error) for c in group)}
        )
    return out


def results(measured, rows, compared) -> dict:
    """What run_all.py records: one target per class and statistic, and the tables behind them."""
    targets = []
    for cls, (max_median, max_p90) in measured.TARGETS.items():
        s = measured.summarize([c for c in compared if measured.category(c.row) == cls])
        for stat, value, goal in (("median", s.median, max_median), ("p90", s.p90, max_p90)):
            targets.append(
                {
                    "name": f"collectives {cls}: {stat} |error| ({s.n} rows)",
                    "value": 100 * value,
                    "unit": "%",
                    "target": f"<= {100 * goal:.0f}" if goal < float("inf") else "reported",
                    "passed": s.n > 0 and value <= goal,
                    "class": cls,
                    "stat": stat,
                    "rows": s.n,
                }
            )
    single = [c for c in compared if not c.row.multi_node]
    breakdown = [
        {"class": cls, **vars(measured.summarize(group))}
        for cls, group in sorted(measured.by(single, lambda c: measured.fabric_class(c.row)).items())
    ]
    return {
        "benchmark": "accuracy",
        "targets": targets,
        "tables": {
            "single_node": system_records(measured, single),
            "multi_node": system_records(measured, [c for c in compared if c.row.multi_node]),
            "breakdown": breakdown,
            "releases": release_records(measured, compared),
            "rows": {"kept": len(compared), "dropped": sum(not r.kept for r in rows), "all": len(rows)},
        },
    }


def release_records(measured, compared) -> list[dict]:
    """Per NCCL release the rows state: rows, median and p90 |error|, and why the catalog has no rules
    of that release's own (comm/versions.stated_release; None where it has)."""
    from shardbudget.comm.versions import stated_release
    from shardbudget.fabric.catalog import load_catalog

    catalog = load_catalog()
    out = []
    for version, group in sorted(measured.by(compared, lambda c: c.row.nccl or "").items()):
        words, lacks = stated_release(catalog, version or None)
        s = measured.summarize(group)
        out.append({"release": words, "rows": s.n, "median": s.median, "p90": s.p90, "lacks": lacks})
    return out


def release_lines(measured, compared) -> list[str]:
    lines = [
        "Per NCCL release the rows state (each priced at its own release's rules; [lacks]: the catalog "
        "has none of that release's own)",
        f"  {'release':22} {'rows':>5} {'median':>8} {'p90':>8}",
    ]
    for r in release_records(measured, compared):
        lines.append(
            f"  {r['release']:22} {r['rows']:>5} {r['median']:>8.1%} {r['p90']:>8.1%}"
            + (f"  [lacks] {r['lacks']}" if r["lacks"] else "")
        )
    return lines


def dropped_lines(rows, full: bool) -> list[str]:
    dropped = [r for r in rows if not r.kept]
    lines = [f"Dropped {len(dropped)} of {len(rows)} rows:"]
    counts = Counter((r.source_id, r.reason) for r in dropped)
    for (source_id, reason), k in sorted(counts.items()):
        lines.append(f"  {k:>4} x {source_id}: {reason}")
    if full:
        lines += [f"    line {r.line}: {r.hardware[:60]} {r.n_gpus} GPUs, size {r.size_bytes}" for r in dropped]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worst", type=int, default=15, help="how many of the worst rows to print")
    parser.add_argument("--dropped", action="store_true", help="list every dropped row, not just the reasons")
    parser.add_argument(
        "--data", type=Path, default=None, help="folder holding nccl_tests.csv (default: the repository's data/)"
    )
    args = parser.parse_args(argv)
    measured = nccl_tests
    try:
        rows = measured.load_rows(args.data)
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    compared = measured.predict(rows)
    single = [c for c in compared if not c.row.multi_node]
    multi = [c for c in compared if c.row.multi_node]
    out = system_table(measured, single, "Single-node (one host): |predicted - measured| / measured time")
    out += [""] + system_table(measured, multi, "Multi-node (2+ hosts; an NVL72 rack is 18 trays)")
    out += [""] + release_lines(measured, compared)
    out += [""] + worst_rows(compared, args.worst)
    targets, ok = target_lines(measured, compared)
    out += [""] + targets + [""] + dropped_lines(rows, args.dropped)
    print("\n".join(out))
    if os.environ.get("SHARDBUDGET_BENCH_RESULTS"):
        Path(os.environ["SHARDBUDGET_BENCH_RESULTS"]).write_text(
            json.dumps(results(measured, rows, compared)), encoding="utf-8"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
