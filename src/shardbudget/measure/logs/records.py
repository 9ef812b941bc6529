"""What the log readers return (`Sample`, `MeasurementSet`) and the number readers they share.

See `read` for the formats read and what each nccl-tests column means.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...comm.op import CollectiveOp
from ...errors import MeasureError
from ...units import format_bytes

OPS = tuple(CollectiveOp)
"""Every collective nccl-tests / rccl-tests times: the readers accept them all."""
TOOLS = ("nccl-tests", "rccl-tests", "shardbudget")

# Relative disagreement between a file's algbw/busbw and ours above which we warn.
BW_TOLERANCE = 0.02
MAX_COLLECTIVE_S = 3600.0
"""One collective timed at more than an hour is not a measurement (nccl-tests' largest sweeps take
seconds per size; a 16 GiB all-reduce over TCP sockets ~0.35 s): an impossible row."""
PROBLEM_KINDS = ("corrupted", "impossible", "truncated", "dropped")
"""Why a file's numbers cannot all be trusted, or were not all read (`LogProblem.kind`):
corrupted  nccl-tests (or the harness's --check) found wrong values: a GPU or link returned bad data;
impossible a time that is no time (NaN, infinite, zero, negative, over MAX_COLLECTIVE_S);
truncated  the run or the file stops early (no closing footer, a row cut mid-line, an unfinished run);
dropped    data rows or tables the reader could not read and skipped."""


# --- records ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class IterStats:
    """Per-iteration timing of one size, in seconds: nccl-tests ``-I 1`` or the harness's samples.

    Each iteration's time is the **slowest rank's** (nccl-tests: the maximum over a process's GPUs,
    then over the process rows; the harness: an all-reduce MAX), so these describe what one
    synchronised collective costs the step that waits for it. Percentiles follow nccl-tests'
    ``computeIterStats`` (``src/util.cu``): nearest rank on the sorted times, p50 = sorted[n // 2],
    pXX = sorted[min(n - 1, ceil(n * XX / 100) - 1)]; the standard deviation is the population one
    (divided by n). A field the source does not give is None (nccl-tests' text columns carry only
    min, max, p99 and cv).
    """

    n_iters: int | None
    """Iterations the statistics summarise (after `skipped`); None where the source does not say."""
    skipped: int = 0
    """Leading iterations left out of the statistics (nccl-tests ``-K``)."""
    min_s: float | None = None
    max_s: float | None = None
    mean_s: float | None = None
    p50_s: float | None = None
    p95_s: float | None = None
    p99_s: float | None = None
    stddev_s: float | None = None
    cv: float | None = None
    """stddev / mean as a fraction (nccl-tests prints it as a percentage, ``i_cv%``)."""
    times_s: tuple[float, ...] = ()
    """Every iteration, slowest rank, skipped ones included (in the order they ran)."""
    per_process_max_s: tuple[tuple[float, ...], ...] = ()
    """nccl-tests' ``per_process_max_times_us``: per process, its slowest GPU in each iteration."""

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if v is not None}
        d["times_s"] = list(self.times_s)
        d["per_process_max_s"] = [list(row) for row in self.per_process_max_s]
        return d


def percentile_index(n: int, percentile: int) -> int:
    """Index into n sorted times of nccl-tests' pXX (``percentileIndex`` in ``src/util.cu``)."""
    return min(n - 1, (n * percentile + 99) // 100 - 1)


def iter_stats_of(times_s: Sequence[float], *, skipped: int = 0) -> IterStats | None:
    """Statistics of per-iteration times as nccl-tests computes them; None for no times."""
    times = [float(t) for t in times_s]
    kept = sorted(times[skipped:])
    n = len(kept)
    if n == 0:
        return None
    mean = math.fsum(kept) / n
    stddev = math.sqrt(math.fsum((t - mean) ** 2 for t in kept) / n)
    return IterStats(
        n_iters=n,
        skipped=skipped,
        min_s=kept[0],
        max_s=kept[-1],
        mean_s=mean,
        p50_s=kept[n // 2],
        p95_s=kept[percentile_index(n, 95)],
        p99_s=kept[percentile_index(n, 99)],
        stddev_s=stddev,
        cv=stddev / mean if mean > 0 else None,
        times_s=tuple(times),
    )


@dataclass(frozen=True, kw_only=True)
class Sample:
    """One timed collective at one message size, in SI units."""

    op: str
    """One of `OPS` (a `CollectiveOp`, which equals and prints as its string)."""
    msg_bytes: float
    """nccl-tests' ``size`` column in bytes, unchanged (see the module docstring for what it is per op)."""
    time_s: float
    """Time of one collective in seconds (nccl-tests' ``time`` column is in microseconds)."""
    algbw_bytes_per_s: float
    """msg_bytes / time_s, bytes per second (re-derived, not the file's rounded value)."""
    busbw_bytes_per_s: float
    """algbw x busbw_factor(op, n_ranks), bytes per second."""
    n_ranks: int
    """World size of the run."""
    n_nodes: int | None
    """Nodes the ranks ran on, when the log tells; None when it does not."""
    in_place: bool
    """True for nccl-tests' in-place columns."""
    graph: bool
    """Launched as CUDA/HIP graphs (``-G``), which removes most of the host launch latency."""
    dtype: str
    """Element type as the log names it ("float", "bfloat16", "float32", ...)."""
    redop: str | None
    """Reduction ("sum", ...); None for ops without one or when the log does not say."""
    source: str
    """Where it came from: ``path:line`` (text logs) or ``path:results[i]`` (JSON)."""
    run: int = 0
    """Index of the table in its file (0, 1, ...), to tell runs pasted into one file apart."""
    per_iter: IterStats | None = None
    """Per-iteration statistics where the file has them (nccl-tests ``-I 1``, shardbudget JSON)."""


@dataclass(frozen=True, kw_only=True)
class LogProblem:
    """A reason not to certify the file: `check` fails on every one (its text is also a warning)."""

    kind: str
    """One of PROBLEM_KINDS."""
    text: str
    """One line naming the file and line, the sizes and counts, and the reason."""
    run: int | None = None
    """The table (`Sample.run`) it belongs to; None: the file, or a table that kept no sample."""
    sizes: tuple[float, ...] = ()
    """The message sizes it concerns, bytes (empty where it is not about rows)."""
    source: str = ""
    """The file, as given."""

    def to_dict(self) -> dict:
        return {"kind": self.kind, "source": self.source, "run": self.run, "sizes": list(self.sizes), "text": self.text}


class Notes(list):
    """A reader's warnings (one line each, the list itself) and, among them, its `problems`."""

    def __init__(self, lines: Sequence[str] = (), *, source: str = ""):
        super().__init__(lines)
        self.source = source
        self.problems: list[LogProblem] = []

    def problem(self, kind: str, text: str, *, run: int | None = None, sizes: Sequence[float] = ()) -> None:
        self.append(text)
        self.problems.append(
            LogProblem(kind=kind, text=text, run=run, sizes=tuple(sorted(set(sizes))), source=self.source)
        )


class NoUsableRows(MeasureError):
    """A file whose every row was dropped; `.problems` says why (corrupted, impossible, ...), so that
    `check` can fail on them (exit 1) where another command refuses the file (exit 2)."""

    def __init__(self, message: str, problems: Sequence[LogProblem]):
        super().__init__(message)
        self.problems = tuple(problems)


def impossible_time(time_s: float, msg_bytes: float) -> str | None:
    """Why `time_s` cannot be the time of one collective of `msg_bytes`, or None when it can."""
    if math.isnan(time_s):
        return "time NaN"
    if math.isinf(time_s):
        return "infinite time"
    if time_s < 0:
        return f"negative time {time_s * 1e6:g} us"
    if time_s == 0:
        return "time 0 us"
    if time_s > MAX_COLLECTIVE_S:
        return f"time {time_s:.3g} s, over {MAX_COLLECTIVE_S / 3600:g} hour for one collective"
    if not math.isfinite(2 * msg_bytes / time_s):  # busbw is at most 2x size/time
        return f"time {time_s * 1e6:g} us, too small to divide by"
    return None


def size_list(sizes: Sequence[float], most: int = 6) -> str:
    """'8 B, 1 KiB, 64 MiB' (the first `most`, then 'and N more')."""
    unique = sorted(set(sizes))
    text = ", ".join(format_bytes(s) for s in unique[:most])
    return text + (f" and {len(unique) - most} more" if len(unique) > most else "")


@dataclass(frozen=True, kw_only=True)
class MeasurementSet:
    """Everything read from one file."""

    samples: tuple[Sample, ...]
    """Per table in file order, sorted by msg_bytes within a table (out-of-place before in-place)."""
    source: str
    """The file path (or name) as given."""
    tool: str
    """One of `TOOLS`: which program produced the numbers."""
    env: dict
    """What the header says: nccl_version, devices, hostnames, command, and per table ``runs``."""
    warnings: tuple[str, ...]
    """Everything read with doubt or dropped, one line each, naming file and line."""
    problems: tuple[LogProblem, ...] = ()
    """The warnings that forbid certifying the file (corrupted, impossible, truncated, dropped)."""


# --- numbers as files spell them -------------------------------------------------------------

UINT = re.compile(r"[0-9]{1,19}")  # 19 digits: more than any size column holds; keeps int() cheap
_FLOAT = re.compile(r"[-+]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][-+]?[0-9]{1,3})?")


def num(token: str) -> float | None:
    """A finite number spelt as a log prints one ('10.2', '1e-05'), or None."""
    if not _FLOAT.fullmatch(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def finite(value: object) -> float | None:
    """A JSON value as a finite float (numbers and numeric strings; not bools), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = num(value.strip())
    if isinstance(value, (int, float)):
        try:
            f = float(value)
        except OverflowError:
            return None
        return f if math.isfinite(f) else None
    return None


def positive_int(value: object) -> int | None:
    """A whole number >= 1 (or its decimal string), or None."""
    if isinstance(value, str) and UINT.fullmatch(value.strip()):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value


def check_n_ranks(n_ranks: object) -> int:
    """A world size given by the caller, or a MeasureError naming it."""
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or n_ranks < 1:
        raise MeasureError(f"n_ranks {n_ranks!r} must be a whole number of ranks, 1 or more")
    return n_ranks
