"""The model's kernel-switch falls, as data: data/falls.csv holds MEASURED (the measured rows fall
there too, quoted) and KNOWN (the model's defects: no measurement shows the fall). `python -m
shardbudget.calibrate --falls` writes the file from switches.scan() and the data after a pricing
change; read its diff (a KNOWN row that went is a fixed fall). `python -m shardbudget.calibrate
--report` prints KNOWN as the list of known defects; tests/unit/test_physics.py fails when a scan
meets a fall in neither list, or a listed fall no longer happens.

A row's key is switches.Switch.key: an NCCL switch is keyed without its bytes (NCCL's crossover is
where its estimate puts it, one per group, op and pair of lines; `edge_bytes` is left blank), an
engine's by the size its rule names (`op` is all-reduce). `gpus` above a node's size names whole nodes
(hgx-h100 16: 2 nodes of 8; switches.switch_group). `source`: for a measured row the rows it
rests on, quoted (file, system, library and release, each row's time and size); for a known one what
the rows at that edge show (no fall), or that none are measured at that release.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

from .paths import DATA, data_file

FILE = "falls.csv"
COLUMNS = ("list", "system", "gpus", "library", "op", "before", "after", "edge_bytes", "source")
LISTS = ("measured", "known")


class FallsFileError(ValueError):
    """data/falls.csv is malformed (the line named)."""


@dataclass(frozen=True)
class Falls:
    """Switch.key -> the quoted measured rows (measured), or why the fall is not a measured one (known)."""

    measured: MappingProxyType
    known: MappingProxyType


def key_of(row: dict[str, str]) -> tuple:
    """The Switch.key a row of the file names."""
    system, gpus, library, op = row["system"], int(row["gpus"]), row["library"], row["op"]
    if library == "nccl":
        if row["edge_bytes"]:
            raise ValueError("an NCCL switch is keyed without its bytes: leave edge_bytes blank")
        return (system, gpus, "nccl", row["before"], row["after"]) + (() if op == "all-reduce" else (op,))
    if op != "all-reduce":
        raise ValueError(f"an engine's switch is an all-reduce's, not {op!r}")
    return (system, gpus, library, row["before"], row["after"], int(row["edge_bytes"]))


def _row(which: str, key: tuple, data: str) -> dict[str, object]:
    system, gpus, library, before, after = key[:5]
    nccl = library == "nccl"
    op = (key[5] if len(key) > 5 else "all-reduce") if nccl else "all-reduce"
    edge = "" if nccl else key[5]
    return dict(zip(COLUMNS, (which, system, gpus, library, op, before, after, edge, data)))


@lru_cache(maxsize=None)
def load(data_dir: Path | str | None = None) -> Falls:
    """data/falls.csv as the two lists; FallsFileError naming the line of a malformed row."""
    path = data_file(FILE, data_dir)
    lists: dict[str, dict[tuple, str]] = {w: {} for w in LISTS}
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise FallsFileError(f"{path}: the columns must be {', '.join(COLUMNS)}")
        for row in reader:
            where = f"{path}:{reader.line_num}"
            if row["list"] not in LISTS:
                raise FallsFileError(f"{where}: list must be one of {', '.join(LISTS)}, not {row['list']!r}")
            if not row["source"]:
                raise FallsFileError(
                    f"{where}: a fall needs its source (the measured rows at the switch, or that none are measured there)"
                )
            try:
                key = key_of(row)
            except (KeyError, ValueError) as err:
                raise FallsFileError(f"{where}: {err}") from None
            if any(key in d for d in lists.values()):
                raise FallsFileError(f"{where}: {key} is listed twice")
            lists[row["list"]][key] = row["source"]
    return Falls(MappingProxyType(lists["measured"]), MappingProxyType(lists["known"]))


def measured(data_dir: Path | str | None = None) -> MappingProxyType:
    """MEASURED: Switch.key -> the measured rows that fall there too (test_physics
    test_the_measured_steps_are_in_the_data: each side extended to the edge falls by more than
    NOISE, and the model falls there)."""
    return load(data_dir).measured


def known(data_dir: Path | str | None = None) -> MappingProxyType:
    """KNOWN: Switch.key -> why the model's fall there is not a measured one: defects to fix (issue
    20), printed by `python -m shardbudget.calibrate --report`; test_physics
    test_every_known_fall_still_happens fails on one that is gone, so a fixed fall must leave the list."""
    return load(data_dir).known


def to_csv(falls: Falls) -> str:
    """The file's text: MEASURED then KNOWN, each sorted by key."""
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for which, d in zip(LISTS, (falls.measured, falls.known)):
        for key, data in sorted(d.items(), key=lambda kv: str(kv[0])):
            w.writerow(_row(which, key, data))
    return out.getvalue()


def write(falls: Falls, data_dir: Path | str | None = None) -> Path:
    """Write data/falls.csv (or `data_dir`'s) and forget what was loaded."""
    path = Path(data_dir or DATA) / FILE
    path.write_text(to_csv(falls), encoding="utf-8")
    load.cache_clear()
    return path


__all__ = ["COLUMNS", "FILE", "Falls", "FallsFileError", "key_of", "known", "load", "measured", "to_csv", "write"]
