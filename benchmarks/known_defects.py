"""The model's known defects, as the validation report of `make bench` prints them (issue 35).

    python benchmarks/known_defects.py

Every kernel switch where the model's time falls as the message grows and no measurement does
(issue 20; the list is the `known` rows of data/falls.csv, read by src/shardbudget/calibrate/falls.py, and
`python -m shardbudget.calibrate --report` prints the same lines): its system, GPUs, library, op,
kernels either side, size, the model's times either side and what the data say there.
tests/unit/test_physics.py holds the list true: each listed fall still happens (a fixed one fails
until it leaves the list) and a scan finds no fall outside it and MEASURED. The list is reported,
not a target: the script exits 0. With $SHARDBUDGET_BENCH_RESULTS set, writes its count and every
record there as JSON for run_all.py (docs/accuracy.md shows the list: scripts/bench_docs.py).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from shardbudget.calibrate.report import defect_records, known_defects


def main() -> int:
    records = defect_records()
    print("\n".join(known_defects(records)))
    out = os.environ.get("SHARDBUDGET_BENCH_RESULTS")
    if out:
        target = {
            "name": "known defects: falls of the model no measurement shows",
            "value": len(records),
            "unit": "",
            "target": "reported",
            "passed": True,
        }
        Path(out).write_text(
            json.dumps({"benchmark": "known_defects", "targets": [target], "tables": {"defects": records}}),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
