"""Read the collective benchmarks people already have into measurement records.

Formats are told apart by content, never by file extension:

* **nccl-tests / rccl-tests text output** (``all_reduce_perf``, ``all_gather_perf``, ...), as it is
  found in the wild: ``NCCL INFO``/``WARN`` lines and shell noise anywhere, shell prompts and
  ``\\``-continued command lines, several runs pasted into one file, a run cut short, the old layouts
  (no ``root`` column, a float ``error`` column instead of ``#wrong``), rccl-tests' in-place-only
  tables (``-O 0``) and nccl-tests' blank out-of-place columns (trace replay).
  The ``@key: value`` lines of the hand transcriptions in ``data/raw`` are read as annotations
  (``@collective``, ``@n_gpus``, ``@n_nodes``, ``@algo_or_note``, ``@section``, ...); an annotation
  after data rows starts a new table.
* **nccl-tests' own JSON** (``-J file.json``), with its per-iteration statistics (``-I 1``): the
  format and its versions are set out in `nccl_json`, after nccl-tests' ``src/util.cu`` at commit
  a0b82b2 (JSON version 3). The text tables' ``-I`` columns (i_min, i_max, i_p99, i_cv%) are read too.
* **shardbudget's own JSON**, written by the harness (``"tool": "shardbudget"``).

Where a file has per-iteration timing, each `Sample` carries it as `IterStats` (``sample.per_iter``):
the slowest rank's time in every iteration, its percentiles, spread and, from nccl-tests' JSON,
every process's slowest GPU per iteration. `tail` turns those into the p99 of a token's time.

What the nccl-tests columns mean (nccl-tests ``doc/PERFORMANCE.md`` and ``src/*.cu``):

* ``size`` (bytes) is the buffer nccl-tests names the test by. For all-reduce, broadcast, reduce and
  send/recv it is what each rank sends; for all-gather it is the *gathered* output (each rank
  contributes size/n); for reduce-scatter the input each rank reduces (it keeps size/n); for
  all-to-all each rank's whole send buffer (size/n to each peer). `Sample.msg_bytes` keeps that
  column unchanged, so numbers line up with the user's own output.
* ``time`` (us) is one collective, averaged over the iterations (``-a``) and over ranks.
* ``algbw = size / time`` for every op, and ``busbw = algbw * busbw_factor(op, n)``.

We re-derive algbw and busbw from size and time at full precision (the file rounds them to
0.01 GB/s, which is 0.00 below a few KiB) and warn where the file's own numbers differ by more than
2 %: that almost always means the rank count or the op we settled on is wrong.

Everything a malformed file can cause is a `MeasureError` with a one-line message; nothing else
escapes, whatever the bytes.

This module holds the entry points and the file reading; the records are in `records`,
shardbudget's JSON in `shardbudget_json`, nccl-tests' JSON in `nccl_json`, and nccl-tests text in
`nccl_scan` (lines into tables) and `nccl_tables` (tables into samples).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from ...atomic import read_user_file
from ...comm.op import parse_op
from ...errors import MeasureError
from ...units import format_bytes
from .shardbudget_json import parse_json
from .records import OPS, TOOLS, IterStats, MeasurementSet, Sample, check_n_ranks
from .nccl_scan import LINE_PREFIX, Options
from .nccl_tables import parse_text

_MAX_FILE_BYTES = 256 * 2**20  # a log of 256 MiB is not a log


# --- entry points ----------------------------------------------------------------------------


def read_log(
    path: str | os.PathLike,
    *,
    default_op: str = "all-reduce",
    n_ranks: int | None = None,
    expect_ranks: int | None = None,
) -> MeasurementSet:
    """Read one nccl-tests / rccl-tests log (text or nccl-tests' ``-J`` JSON) or shardbudget JSON.

    `default_op` is used (with a warning) for tables whose log never names the collective;
    `n_ranks` overrides the world size for every table (for logs that do not show it).
    `expect_ranks` is the GPU count the caller asked for (``--gpus``): tables of another count
    are dropped with a warning, and a file with none of that count is a `MeasureError`.
    """
    source = str(path) if isinstance(path, (str, os.PathLike)) else repr(path)
    text = _read_text(path, source)
    return parse_log_text(text, source=source, default_op=default_op, n_ranks=n_ranks, expect_ranks=expect_ranks)


def read_logs(
    paths: Iterable[str | os.PathLike],
    *,
    default_op: str = "all-reduce",
    n_ranks: int | None = None,
    expect_ranks: int | None = None,
) -> list[MeasurementSet]:
    """`read_log` on each path, in order."""
    return [read_log(p, default_op=default_op, n_ranks=n_ranks, expect_ranks=expect_ranks) for p in paths]


def parse_log_text(
    text: str | bytes,
    *,
    source: str = "<text>",
    default_op: str = "all-reduce",
    n_ranks: int | None = None,
    expect_ranks: int | None = None,
) -> MeasurementSet:
    """Like `read_log`, for text already in memory; `source` names it in messages."""
    default_op = parse_op(default_op, OPS, error=MeasureError)
    if n_ranks is not None:
        check_n_ranks(n_ranks)
    if expect_ranks is not None:
        check_n_ranks(expect_ranks)
    if isinstance(text, (bytes, bytearray)):
        text = _decode(bytes(text), source)
    if not isinstance(text, str):
        raise MeasureError(f"{source}: expected text, got {type(text).__name__}")
    text = _ANSI.sub("", text.lstrip("\ufeff"))
    if not text.strip():
        raise MeasureError(f"{source}: the file is empty (expected nccl-tests output or shardbudget JSON)")
    head = text.lstrip()[:1]
    # '[' may also start mpirun --tag-output lines ("[1,0]<stdout>: ..."), which are text.
    if head == "{" or (head == "[" and not LINE_PREFIX.match(text.lstrip())):
        ms = parse_json(text, source=source, default_op=default_op, n_ranks=n_ranks)
    else:
        ms = parse_text(text, Options(source, default_op, n_ranks))
    return ms if expect_ranks is None else _only_ranks(ms, expect_ranks)


def _only_ranks(ms: MeasurementSet, expect_ranks: int) -> MeasurementSet:
    """The samples of `expect_ranks` ranks; a file with none of them is a MeasureError."""
    kept = tuple(s for s in ms.samples if s.n_ranks == expect_ranks)
    others = sorted({s.n_ranks for s in ms.samples if s.n_ranks != expect_ranks})
    if not others:
        return ms
    counts = ", ".join(str(n) for n in others)
    if not kept:
        raise MeasureError(
            f"{ms.source}: a log of {counts} GPUs (ranks), but {expect_ranks} were "
            f"asked for (--gpus {expect_ranks}); give a log of {expect_ranks} GPUs "
            "or change --gpus"
        )
    note = f"{ms.source}: dropped the tables of {counts} ranks; kept those of {expect_ranks} (--gpus)"
    return replace(ms, samples=kept, warnings=(*ms.warnings, note))


def summarize(ms: MeasurementSet) -> str:
    """One line: 'all-reduce, 16 ranks on 2 nodes, 8 B..8 GiB, 31 sizes, NCCL 2.27.3'."""
    s = ms.samples
    if not s:
        return f"no samples ({ms.source})"
    parts = [", ".join(dict.fromkeys(x.op for x in s))]
    runs = len({x.run for x in s})
    if runs > 1:
        parts.append(f"{runs} runs")
    parts.append(_span(sorted({x.n_ranks for x in s}), "rank") + _nodes_phrase(s))
    sizes = sorted({x.msg_bytes for x in s})
    parts.append(f"{format_bytes(sizes[0])}..{format_bytes(sizes[-1])}" if len(sizes) > 1 else format_bytes(sizes[0]))
    parts.append(f"{len(sizes)} size{'s' if len(sizes) != 1 else ''}")
    if any(x.graph for x in s):
        parts.append("CUDA graphs")
    timed = sum(1 for x in s if x.per_iter is not None and x.per_iter.n_iters != 1)
    if timed:
        parts.append(f"per-iteration timing at {timed} of {len(s)} results")
    version = ms.env.get("nccl_version")
    if version:
        parts.append(f"{'RCCL' if ms.tool == 'rccl-tests' else 'NCCL'} {str(version).split('+')[0]}")
    elif ms.env.get("backend"):
        parts.append(str(ms.env["backend"]))
    return ", ".join(parts)


def _span(values: Sequence[int], noun: str) -> str:
    if len(values) == 1:
        return f"{values[0]} {noun}{'s' if values[0] != 1 else ''}"
    return f"{values[0]}..{values[-1]} {noun}s"


def _nodes_phrase(samples: Sequence[Sample]) -> str:
    nodes = sorted({x.n_nodes for x in samples if x.n_nodes is not None})
    if not nodes:
        return ""
    unknown = any(x.n_nodes is None for x in samples)
    return " on " + _span(nodes, "node") + (" (some unknown)" if unknown else "")


# --- reading the file ------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # colour codes some launchers add
_CONTROL = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\ufffd]")  # not in text: NUL, BEL, ..., undecodable


def read_log_text(path: str | os.PathLike) -> str:
    """The text of a log file as the readers see it (bounded, decoded, vetted as text), for callers
    that read more from it than the samples (check: NCCL's INFO lines)."""
    return _read_text(path, str(path))


def _read_text(path: object, source: str) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise MeasureError(f"{source}: cannot be read (expected a file path, got {type(path).__name__})")
    data = read_user_file(path, what="an nccl-tests log or shardbudget JSON", limit=_MAX_FILE_BYTES, error=MeasureError)
    return _decode(data, source)


def _decode(data: bytes, source: str) -> str:
    if not data.strip():
        raise MeasureError(f"{source}: the file is empty (expected nccl-tests output or shardbudget JSON)")
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 with BOM: PowerShell's '>' writes this
        data = data.decode("utf-16", errors="replace").encode("utf-8", errors="replace")
    text = data.decode("utf-8", errors="replace")
    # Logs are text: a NUL, many undecodable bytes or control characters mean a binary file.
    controls = len(_CONTROL.findall(text))
    if b"\x00" in data or controls > max(8, len(text) // 100):
        raise MeasureError(f"{source}: looks like a binary file, expected nccl-tests text output or shardbudget JSON")
    return text


__all__ = [
    "OPS",
    "TOOLS",
    "IterStats",
    "MeasurementSet",
    "Sample",
    "parse_log_text",
    "read_log",
    "read_log_text",
    "read_logs",
    "summarize",
]
