"""Decode ITL of the step model against published engine measurements, as one table.

    python benchmarks/decode_accuracy.py

Every case of shardbudget.calibrate.decode (data/decode_tp.csv and data/decode_measurements.csv,
the cases the validation tests check): predicted beside
measured, the error, and the issue's targets (ITL median |error| <= 12%, p90 <= 25%; MoE rows within
25%). Exits 1 when a target is missed, so `make bench` shows it. With $SHARDBUDGET_BENCH_RESULTS set,
writes the targets and every case there as JSON for run_all.py (docs/accuracy.md).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from shardbudget.calibrate import decode


def rows() -> list[tuple[str, str, bool, float, float]]:
    """(name, engine, moe, predicted_s, measured_s) for every case."""
    out = []
    data = decode.tp_rows()
    for c in decode.TP_CASES:
        name = f"{c.model} {c.system} TP{c.tp} b{c.batch}"
        out.append((name, c.engine, False, decode.tp_predicted(c), decode.tp_measured(data, c)))
    for c in decode.measurement_cases():
        out.append((c.name, c.engine, c.moe, decode.predicted_s(c), c.measured_s))
    return out


def main() -> int:
    table = rows()
    print(f"{'case':<44} {'engine':<8} {'predicted':>10} {'measured':>10} {'error':>8}")
    for name, engine, moe, pred, meas in table:
        print(
            f"{name:<44} {engine:<8} {pred * 1e3:>8.2f}ms {meas * 1e3:>8.2f}ms {100 * (pred / meas - 1):>+7.1f}%"
            + ("  (MoE)" if moe else "")
        )
    every = [(p, m) for *_, p, m in table]
    dense = [(p, m) for _, _, moe, p, m in table if not moe]
    moe = [(p, m) for _, _, is_moe, p, m in table if is_moe]
    ok = True
    targets = []
    for label, pairs, median_goal, p90_goal in (
        ("all", every, 0.12, 0.25),
        ("dense", dense, 0.12, 0.25),
        ("MoE", moe, 0.25, 0.25),
    ):
        median, p90 = decode.summary(pairs)
        hit = median <= median_goal and p90 <= p90_goal
        ok &= hit
        print(
            f"{label:<6} {len(pairs):>3} cases: median |error| {100 * median:.1f}% (target {100 * median_goal:.0f}%), "
            f"p90 {100 * p90:.1f}% (target {100 * p90_goal:.0f}%)  {'PASS' if hit else 'MISS'}"
        )
        for stat, value, goal in (("median", median, median_goal), ("p90", p90, p90_goal)):
            targets.append(
                {
                    "name": f"decode ITL {label}: {stat} |error| ({len(pairs)} cases)",
                    "value": 100 * value,
                    "unit": "%",
                    "target": f"<= {100 * goal:.0f}",
                    "passed": value <= goal,
                    "class": label,
                    "stat": stat,
                    "rows": len(pairs),
                }
            )
    out = os.environ.get("SHARDBUDGET_BENCH_RESULTS")
    if out:
        cases = [
            {
                "case": name,
                "engine": engine,
                "moe": moe,
                "predicted_s": pred,
                "measured_s": meas,
                "error": pred / meas - 1,
            }
            for name, engine, moe, pred, meas in table
        ]
        Path(out).write_text(
            json.dumps({"benchmark": "decode_accuracy", "targets": targets, "tables": {"cases": cases}}),
            encoding="utf-8",
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
