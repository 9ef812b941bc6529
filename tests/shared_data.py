"""Where ../shared/data is: beside the checkout (CI, sessions), $SHARDBUDGET_DATA, or /work/shared/data."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def find_data_dir() -> Path:
    candidates = (ROOT.parent / "shared" / "data", Path(os.environ.get("SHARDBUDGET_DATA", "/nonexistent")),
                  Path("/work/shared/data"))
    for cand in candidates:
        if (cand / "nccl_tests.csv").exists():
            return cand
    return candidates[0]
