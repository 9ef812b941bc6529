"""Where the public measurements are: the repository's own `data/` folder, beside `src/`.

Calibration and validation read the checkout, never anything beside it: `DATA` is
`<repository>/data` (this file is `<repository>/src/shardbudget/calibrate/paths.py`). An installed
copy without the repository has no such folder; every loader then names the folder it looked in
and says to run from a clone (or to pass `--data DIR`).
"""

from __future__ import annotations

from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
DATA = REPOSITORY / "data"
RAW = DATA / "raw"
"""The nccl-tests / rccl-tests logs as published (the README's `fit` and `check` examples read them)."""


def data_file(name: str, data_dir: Path | str | None = None) -> Path:
    """`data_dir`/`name` (default the repository's data/), or FileNotFoundError naming where it looked."""
    path = Path(data_dir or DATA) / name
    if not path.is_file():
        raise FileNotFoundError(
            f"{name} not found in {path.parent}: the measurements live in the repository's "
            "data/ folder; run from a clone of the repository or pass --data DIR"
        )
    return path
