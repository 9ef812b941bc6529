"""What `check` will not certify, whatever the ratios say (issue 33, item 7).

A health check answers "is this result normal?"; it must never answer yes for a GPU or link that
returned wrong data, for numbers no hardware produces, or for a run that did not finish. So, besides
the regions' ratios, a table (and the whole check) fails on:

* the readers' problems (`logs.records.LogProblem`): **corrupted** results (nccl-tests' ``#wrong``
  column, its "Out of bounds values : N FAILED" footer, ``nwrong`` in its JSON, the harness's
  ``wrong`` under ``--check``), **impossible** times (NaN, infinite, zero, negative, over an hour),
  a **truncated** log (no "# Avg bus bandwidth" footer after a table that has nccl-tests' header, a
  last row cut mid-line, a JSON file cut off or a harness run that did not complete) and **dropped**
  rows (malformed data rows, tables the reader could not place);
* rows faster than any hardware in the catalog (`plausible`): a busbw above twice the fastest
  fabric's per-direction rate, an impossible row too;
* a table with no size left in any region.

Each is one line naming the file and line, the sizes and the count (`format_check` prints them as
``problem:`` lines, `--json` as ``problems``), and the last line of the report names what failed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ...fabric.hardware import Catalog, Fabric, System
from ...units import format_bytes, format_rate
from ..logs.records import PROBLEM_KINDS, LogProblem, MeasurementSet, Sample, size_list

BUSBW_CEILING_FACTOR = 2.0
"""A rank cannot move data faster than its fastest link, per direction. busbw counts the bytes a
ring moves (2(n-1)/n of the message for an all-reduce); in-switch reduction (NVLS, SHARP) moves each
byte once each way, so an all-reduce's busbw may reach 2(n-1)/n of the link rate, never 2x it. Every
other collective's busbw is at most the link rate."""

_WORDS = {
    "corrupted": "corrupted data (a GPU or link returned wrong values)",
    "impossible": "impossible rows",
    "truncated": "a truncated log",
    "dropped": "dropped rows",
}


def busbw_ceiling(catalog: Catalog) -> tuple[float, Fabric]:
    """(the highest busbw any hardware in `catalog` can show, bytes/s; the fabric it comes from)."""
    fastest = max(catalog.fabrics.values(), key=lambda f: f.bytes_per_s)
    return BUSBW_CEILING_FACTOR * fastest.bytes_per_s, fastest


def plausible(
    samples: Sequence[Sample], catalog: Catalog, run: int, source: str
) -> tuple[list[Sample], list[LogProblem]]:
    """(the samples some hardware of the catalog could have produced, a problem for the others)."""
    ceiling, fastest = busbw_ceiling(catalog)
    kept = [s for s in samples if s.busbw_bytes_per_s <= ceiling]
    bad = [s for s in samples if s.busbw_bytes_per_s > ceiling]
    if not bad:
        return kept, []
    first = bad[0]
    text = (
        f"{first.source}: dropped {len(bad)} impossible result(s) at {size_list([s.msg_bytes for s in bad])}: busbw "
        f"{format_rate(first.busbw_bytes_per_s)} at {format_bytes(first.msg_bytes)}, above "
        f"{format_rate(ceiling)} ({BUSBW_CEILING_FACTOR:g}x {format_rate(fastest.bytes_per_s)} per direction, "
        f"{fastest.name}, the fastest link in the catalog): not a measurement of any GPU or link"
    )
    return kept, [
        LogProblem(kind="impossible", text=text, run=run, sizes=tuple(s.msg_bytes for s in bad), source=source)
    ]


def own_problems(problems: Sequence[LogProblem], run: int) -> tuple[LogProblem, ...]:
    return tuple(p for p in problems if p.run == run)


def outcome(ok: bool, tables: Sequence, problems: Sequence[LogProblem], *, tolerance: str, system: str) -> str:
    """The report's last line: OK, or FAIL with what failed."""
    if ok:
        return f"OK: every region within {tolerance} of {system}"
    every = [p for t in tables for p in t.problems] + list(problems)
    parts = [_WORDS[k] + _where(every, k) for k in PROBLEM_KINDS if any(p.kind == k for p in every)]
    off = sum(any(r.off for r in t.regions) for t in tables)
    if off:
        parts.append(f"{off} of {len(tables)} table(s) outside {tolerance} of {system}")
    empty = sum(not any(r.sizes for r in t.regions) for t in tables)
    if empty:
        parts.append(f"{empty} table(s) with no size left to check")
    return "FAIL: " + "; ".join(parts or [f"no table of {system} to check"])


def plateau_note(regions: Sequence, sizes: Sequence) -> list[str]:
    """A region with no sizes is not ok, only unchecked: say so where it is the link's bandwidth."""
    if not sizes or regions[-1].sizes:
        return []
    return [
        f"no size reached the bandwidth plateau (largest {format_bytes(max(c.msg_bytes for c in sizes))}): the "
        "link's bandwidth was not checked; run up to 1 GiB or more (-e 1G) to check it"
    ]


def device_note(ms: MeasurementSet, run: int, system: System) -> list[str]:
    """A note when the log's devices do not look like the system's GPU (a different box)."""
    info = next((r for r in ms.env.get("runs", []) if r.get("run") == run), {})
    devices = info.get("devices") or []
    token = system.gpu.name.split("-")[0].lower()
    if devices and not any(token in d.lower().replace(" ", "") for d in devices):
        return [f"the log's GPUs are {', '.join(devices)}, not {system.gpu.name} as {system.name} has"]
    return []


def _where(problems: Sequence[LogProblem], kind: str) -> str:
    files = dict.fromkeys(os.path.basename(p.source) for p in problems if p.kind == kind and p.source)
    return f" in {', '.join(files)}" if files else ""


__all__ = [
    "BUSBW_CEILING_FACTOR",
    "busbw_ceiling",
    "device_note",
    "outcome",
    "own_problems",
    "plateau_note",
    "plausible",
]
