"""The sweep's sizes, its measured rows and the nccl-tests style table they print as.

What each number means (nccl-tests' size and count per op, median of the slowest rank, algbw and
busbw) is set out in the `run` module docstring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import numpy as np

from ...comm.op import CollectiveOp, busbw_factor
from ... import dtypes
from ...errors import MeasureError
from ...units import format_bytes

# --- sizes ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedSize:
    requested_bytes: int
    size_bytes: int  # nccl-tests "size": see the harness docstring for its meaning per op
    count: int  # nccl-tests "count" in elements


def plan_sizes(sizes_bytes: list[float], op: str, dtype: str, world_size: int) -> tuple[list[PlannedSize], list[str]]:
    """Round each size up to whole elements (whole chunks where the buffer is split n ways)."""
    elem_bytes = int(dtypes.dtype(dtype).elem_bytes)  # every type the harness moves is whole bytes
    split = 1 if op == CollectiveOp.ALL_REDUCE else world_size  # the other ops cut it in n chunks
    granule_bytes = elem_bytes * split
    plan: dict[int, PlannedSize] = {}
    rounded: list[str] = []
    for requested in sorted(int(math.ceil(s)) for s in sizes_bytes):
        size_bytes = -(-requested // granule_bytes) * granule_bytes
        if size_bytes != requested:
            rounded.append(f"{requested} B -> {size_bytes} B")
        elements = size_bytes // elem_bytes
        plan.setdefault(size_bytes, PlannedSize(requested, size_bytes, elements // split))
    notes = []
    if rounded:
        more = f" and {len(rounded) - 4} more" if len(rounded) > 4 else ""
        shown = ", ".join(rounded[:4]) + more
        chunks = f" ({split} chunks of equal size)" if split > 1 else ""
        notes.append(f"sizes rounded up to whole {dtype} elements{chunks}: {shown}")
    if len(plan) < len(sizes_bytes):
        notes.append(
            f"{len(sizes_bytes) - len(plan)} requested sizes fell on the same size after "
            "rounding and were measured once"
        )
    return list(plan.values()), notes


# --- results ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SizeResult:
    """One row of the sweep; all times in seconds, bandwidths in bytes/s."""

    size_bytes: int  # JSON "bytes": nccl-tests' size column
    requested_bytes: int
    count: int  # elements, nccl-tests' count column
    median_s: float  # of the per-iteration slowest-rank times; also JSON "time_s"
    min_s: float
    p99_s: float
    algbw_bytes_per_s: float  # size_bytes / median_s
    busbw_bytes_per_s: float  # algbw × busbw_factor(op, n)
    wrong: int | None  # wrong elements over all ranks; None without check
    wrong_by_rank: tuple[int, ...] | None
    samples_s: tuple[float, ...]

    @property
    def time_s(self) -> float:
        return self.median_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "bytes": self.size_bytes,
            "requested_bytes": self.requested_bytes,
            "count": self.count,
            "time_s": self.median_s,
            "median_s": self.median_s,
            "min_s": self.min_s,
            "p99_s": self.p99_s,
            "algbw_bytes_per_s": self.algbw_bytes_per_s,
            "busbw_bytes_per_s": self.busbw_bytes_per_s,
            "wrong": self.wrong,
            "wrong_by_rank": list(self.wrong_by_rank) if self.wrong_by_rank else None,
            "samples_s": list(self.samples_s),
        }


def summarize(
    planned: PlannedSize, samples_s: list[float], *, op: str, world_size: int, wrong_by_rank: list[int] | None
) -> SizeResult:
    """Per-iteration slowest-rank times -> median / min / p99 and nccl-tests bandwidths."""
    arr = np.asarray(samples_s, dtype=float)
    median_s = float(np.median(arr))
    algbw = planned.size_bytes / median_s if median_s > 0 else math.inf
    return SizeResult(
        size_bytes=planned.size_bytes,
        requested_bytes=planned.requested_bytes,
        count=planned.count,
        median_s=median_s,
        min_s=float(arr.min()),
        p99_s=float(np.percentile(arr, 99)),
        algbw_bytes_per_s=algbw,
        busbw_bytes_per_s=algbw * busbw_factor(op, world_size),
        wrong=None if wrong_by_rank is None else int(sum(wrong_by_rank)),
        wrong_by_rank=None if wrong_by_rank is None else tuple(int(w) for w in wrong_by_rank),
        samples_s=tuple(float(s) for s in samples_s),
    )


@dataclass(kw_only=True)
class MeasureResult:
    """A sweep, complete or not; `to_dict` is the JSON written by ``--out``."""

    op: CollectiveOp
    backend: str
    dtype: str
    """Canonical name (fp32, bf16, ...); files written before it was canonical say float32."""
    world_size: int
    n_nodes: int
    iters: int
    warmup: int
    check: bool
    results: list[SizeResult] = field(default_factory=list)
    complete: bool = False
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    env: dict[str, Any] = field(default_factory=dict)
    out_path: str | None = None

    @property
    def failed_checks(self) -> list[str]:
        """'rank 1: 2 wrong elements at 1 KiB (1024 B)' for every rank and size that failed."""
        return [
            f"rank {rank}: {w} wrong element{'s' * (w != 1)} at {size_text(r.size_bytes)}"
            for r in self.results
            for rank, w in enumerate(r.wrong_by_rank or ())
            if w
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": "shardbudget",
            "version": version("shardbudget"),
            "env": self.env,
            "op": self.op,
            "world_size": self.world_size,
            "n_nodes": self.n_nodes,
            "backend": self.backend,
            "dtype": self.dtype,
            "iters": self.iters,
            "warmup": self.warmup,
            "check": self.check,
            "notes": list(self.notes),
            "results": [r.to_dict() for r in self.results],
            "complete": self.complete,
            "error": self.error,
        }


class MeasureRunError(MeasureError):
    """A run that started but did not finish cleanly; `.result` holds what was measured."""

    exit_code = 1

    def __init__(self, message: str, result: MeasureResult):
        super().__init__(message)
        self.result = result


class RunFailed(Exception):
    """A rank died, failed or hung; the message names it and the size it was at."""


def size_text(size_bytes: int) -> str:
    """'8 KiB (8192 B)', or '8 B' where the two would say the same."""
    text = format_bytes(size_bytes)
    return text if text == f"{size_bytes} B" else f"{text} ({size_bytes} B)"


def version(dist_name: str) -> str:
    try:
        return metadata.version(dist_name)
    except metadata.PackageNotFoundError:
        return "unknown"


# --- the nccl-tests style table ---------------------------------------------------------------

_COLUMNS = "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9}  {:>7}  {:>7}  {:>6}"
_REDUCING = (CollectiveOp.ALL_REDUCE, CollectiveOp.REDUCE_SCATTER)


def format_table_header() -> str:
    names = _COLUMNS.format("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong")
    units = _COLUMNS.format("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "")
    return "#" + names[1:] + "\n#" + units[1:].rstrip()


def format_table_row(row: SizeResult, *, op: str, dtype: str) -> str:
    """One line in nccl-tests' column layout; GB/s are 1e9 bytes/s as there."""
    time_us = row.median_s * 1e6
    return _COLUMNS.format(
        row.size_bytes,
        row.count,
        dtypes.dtype(dtype).nccl_name,
        "sum" if op in _REDUCING else "none",
        -1,
        f"{time_us:.2f}" if time_us < 1e5 else f"{time_us:.0f}",
        f"{row.algbw_bytes_per_s / 1e9:.2f}",
        f"{row.busbw_bytes_per_s / 1e9:.2f}",
        "N/A" if row.wrong is None else row.wrong,
    )


def format_table(result: MeasureResult) -> str:
    rows = [format_table_row(r, op=result.op, dtype=result.dtype) for r in result.results]
    return "\n".join([format_table_header(), *rows])
