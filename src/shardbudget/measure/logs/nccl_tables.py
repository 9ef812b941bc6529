"""nccl-tests tables (from `nccl_scan`) into samples: which op, how many ranks and nodes, which
rows to keep, and the warnings a reader should see."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ...comm.op import CollectiveOp, busbw_factor, op_or_none
from ...errors import MeasureError
from ...units import format_bytes
from .records import (
    BW_TOLERANCE,
    OPS,
    IterStats,
    MeasurementSet,
    Notes,
    NoUsableRows,
    Sample,
    impossible_time,
    positive_int,
    size_list,
)
from .nccl_scan import ANNOTATED_VERSION, BINARY, WRONG, Options, Row, Table, parse_command, scan

# The file's values are rounded to 0.01 GB/s, so only values of at least this are compared.
_BW_CHECK_MIN_GBPS = 0.5

_EXAMPLE_ROW = "'  8  2  float  sum  -1  10.2  0.00  0.00  0'"


# --- nccl-tests text: from tables to samples -------------------------------------------------


@dataclass(frozen=True)
class _Run:
    op: str
    n_ranks: int
    n_nodes: int | None
    graph: bool


def parse_text(text: str, opts: Options) -> MeasurementSet:
    tables, rccl, last_row_line = scan(text)
    if not any(h for t in tables for r in t.rows for h in r.halves):
        raise MeasureError(f"{opts.source}: no nccl-tests data rows found (expected lines like {_EXAMPLE_ROW})")
    warnings = Notes(source=opts.source)
    samples: list[Sample] = []
    runs: list[dict] = []
    prev: _Run | None = None
    skipped: list[str] = []
    for table in tables:
        try:
            run = _resolve_run(table, prev, opts, warnings)
        except MeasureError as e:
            skipped.append(str(e))
            warnings.problem("dropped", f"{e}; table skipped", sizes=[r.size for r in table.rows])
            continue
        if run is None:
            continue
        index = len(runs)
        got = _table_samples(
            table, run, index=index, source=opts.source, last_row_line=last_row_line, warnings=warnings
        )
        if got:
            samples.extend(got)
            runs.append(_run_env(table, run, index))
            prev = run
        else:  # the table's problems belong to the file: no run of that index will exist
            warnings.problems = [replace(p, run=None) if p.run == index else p for p in warnings.problems]
    if not samples:
        message = (
            skipped[0]
            if skipped
            else warnings.problems[0].text
            if warnings.problems
            else warnings[0]
            if warnings
            else f"{opts.source}: no usable nccl-tests data rows (expected lines like {_EXAMPLE_ROW})"
        )
        raise NoUsableRows(message, warnings.problems)
    return MeasurementSet(
        samples=tuple(samples),
        source=opts.source,
        tool="rccl-tests" if rccl else "nccl-tests",
        env=_file_env(runs),
        warnings=tuple(warnings),
        problems=tuple(warnings.problems),
    )


def _resolve_run(table: Table, prev: _Run | None, opts: Options, warnings: list[str]) -> _Run | None:
    where = f"{opts.source}:{table.rows[0].lineno}"
    op = _resolve_op(table, prev, opts, where=where, warnings=warnings)
    if op is None:
        return None
    n_ranks = _resolve_ranks(table, op, prev, opts, where=where, warnings=warnings)
    return _Run(op=op, n_ranks=n_ranks, n_nodes=_resolve_nodes(table, n_ranks, prev), graph=_resolve_graph(table, prev))


def _annotated_binary(ann: dict) -> str | None:
    m = BINARY.search(ann.get("algo_or_note", ""))
    return m.group(1) if m else None


def _resolve_op(table: Table, prev: _Run | None, opts: Options, *, where: str, warnings: list[str]) -> str | None:
    for name in (table.ctx.binary, table.annotations.get("collective"), _annotated_binary(table.annotations)):
        if name:
            op = op_or_none(name)
            if op is None:
                warnings.append(
                    f"{where}: {name!r} is not a collective shardbudget models "
                    f"({', '.join(OPS)}); its table was skipped"
                )
            return op
    if prev is not None and table.ctx.is_empty():
        warnings.append(f"{where}: this table does not name its collective; assumed {prev.op} like the table before")
        return prev.op
    warnings.append(f"{where}: the log does not name the collective (no *_perf binary); assumed {opts.default_op}")
    return opts.default_op


def _resolve_ranks(table: Table, op: str, prev: _Run | None, opts: Options, *, where: str, warnings: list[str]) -> int:
    ctx = table.ctx
    if ctx.rank_lines > len(ctx.ranks):
        warnings.append(
            f"{where}: the same rank number appears on several '# Rank' lines: the processes "
            "may not have formed one communicator (nccl-tests built without MPI?)"
        )
    for n in (
        opts.n_ranks,
        positive_int(table.annotations.get("n_gpus")),
        max(ctx.ranks) + 1 if ctx.ranks else None,
        ctx.launch.ranks if ctx.launch else None,
    ):
        if n:
            return n
    if prev is not None and ctx.is_empty():
        warnings.append(f"{where}: no header for this table; assumed {prev.n_ranks} ranks like the table before")
        return prev.n_ranks
    if n := _ranks_from_ratio(op, table.rows):
        warnings.append(
            f"{where}: no '# Rank' lines or command line; {n} ranks inferred from the file's busbw/algbw ratio"
        )
        return n
    if ctx.header.get("nGpus"):
        n = max(1, ctx.header["nGpus"]) * max(1, ctx.header.get("nThread", 1))
        warnings.append(f"{where}: no '# Rank' lines; assumed one process with nThread x nGpus = {n} ranks")
        return n
    raise MeasureError(
        f"{where}: cannot tell how many ranks ran this table (no '# Rank' lines, "
        "command line or usable busbw); pass n_ranks="
    )


def _ranks_from_ratio(op: str, rows: list[Row]) -> int | None:
    """The n whose busbw factor matches the file's busbw/algbw, where the rounding allows telling n apart."""
    if op in (CollectiveOp.BROADCAST, CollectiveOp.REDUCE, CollectiveOp.SEND_RECV):
        return None  # factor 1 for every n
    halves = [h for r in rows for h in r.halves if math.isfinite(h[1]) and math.isfinite(h[2]) and h[1] >= 1.0]
    if not halves:
        return None
    _, algbw, busbw, _ = max(halves, key=lambda h: h[1])
    ratio, slack = busbw / algbw, 0.02 / algbw  # both printed to 0.01 GB/s
    scale = 2.0 if op == CollectiveOp.ALL_REDUCE else 1.0
    if not 0 <= ratio < scale:
        return None
    n = round(scale / (scale - ratio))
    if n < 1 or n > 100_000:
        return None
    factor = busbw_factor(op, n)
    neighbours = [busbw_factor(op, k) for k in (n - 1, n + 1) if k >= 1]
    if abs(factor - ratio) <= slack and all(abs(f - ratio) > slack for f in neighbours):
        return n
    return None


def _resolve_nodes(table: Table, n_ranks: int, prev: _Run | None) -> int | None:
    ctx = table.ctx
    hosts = {h for h, _ in ctx.ranks.values()}
    for n in (
        positive_int(table.annotations.get("n_nodes")),
        len(hosts) or None,
        ctx.launch.nodes if ctx.launch else None,
    ):
        if n:
            return n
    if n_ranks == 1:
        return 1
    return prev.n_nodes if prev is not None and ctx.is_empty() else None


def _resolve_graph(table: Table, prev: _Run | None) -> bool:
    ctx = table.ctx
    if ctx.header.get("graph", 0) > 0 or ctx.graph_text or (ctx.launch is not None and ctx.launch.graph):
        return True
    note = parse_command(table.annotations.get("algo_or_note", ""))
    if note is not None and note.graph:
        return True
    return prev.graph if prev is not None and ctx.is_empty() else False


def _placements(table: Table, row: Row) -> tuple[str, ...]:
    if len(row.halves) == 2:
        return ("out", "in")
    if row.blank_first or table.ctx.placements == ("in",):
        return ("in",)
    return ("out",)


def _table_samples(
    table: Table, run: _Run, *, index: int, source: str, last_row_line: int, warnings: Notes
) -> list[Sample]:
    where = f"{source}:{table.rows[0].lineno}"
    old_error = table.ctx.columns.get("error", False) or not any(r.has_root for r in table.rows)
    samples: list[Sample] = []
    wrong: list[float] = []
    impossible: list[tuple[float, str, int]] = []  # (size, why, line)
    off: list[str] = []
    truncated_at = None
    factor = busbw_factor(run.op, run.n_ranks)
    two_placements = table.ctx.placements == ("out", "in") or any(len(r.halves) == 2 for r in table.rows)
    for row in table.rows:
        if row.cut and row.lineno == last_row_line:
            truncated_at = row.lineno
        else:
            _note_odd_row(row, two_placements, source, warnings, index)
        for k, (placement, half) in enumerate(zip(_placements(table, row), row.halves)):
            if _is_wrong(half[3], old_error):
                wrong.append(row.size)
            elif (why := impossible_time(half[0] / 1e6, row.size)) is not None:
                impossible.append((row.size, why, row.lineno))
            else:
                stats = _text_iter_stats(table, row.per_iter[k]) if k < len(row.per_iter) else None
                samples.append(
                    _sample(row, placement, half, run, factor=factor, index=index, source=source, per_iter=stats)
                )
                off.extend(_bandwidth_disagreements(samples[-1], half))
    if truncated_at is not None:
        upto = f"; kept rows up to {format_bytes(max(s.msg_bytes for s in samples))}" if samples else ""
        warnings.problem(
            "truncated", f"{source}:{truncated_at}: the last row is cut mid-line (truncated file?){upto}", run=index
        )
    _note_bad_rows(table, wrong, impossible, where, warnings, index)
    if off:
        warnings.append(
            f"{where}: {len(off)} algbw/busbw value(s) differ by more than 2% from "
            f"size/time with {run.op} on {run.n_ranks} ranks (first: {off[0]}); "
            "is the rank count or the op right?"
        )
    _check_order(samples, where, warnings)
    _check_footer(table, samples, where, warnings, index)
    if table.ctx.columns.get("cputime"):
        warnings.append(f"{where}: times are CPU-side launch times (-C 1), not completion times")
    samples.sort(key=lambda s: s.msg_bytes)  # stable: out-of-place stays before in-place
    return samples


def _note_bad_rows(
    table: Table, wrong: list[float], impossible: list[tuple[float, str, int]], where: str, warnings: Notes, index: int
) -> None:
    """Corrupted and impossible results, each a problem naming the sizes and the count."""
    if wrong:
        warnings.problem(
            "corrupted",
            f"{where}: dropped {len(wrong)} result(s) with '#wrong' != 0 (nccl-tests found "
            f"corrupted data: a GPU or link returned wrong values) at {size_list(wrong)}",
            run=index,
            sizes=wrong,
        )
    elif table.out_of_bounds:  # -c 1 counted wrong elements the rows do not show (an old layout)
        warnings.problem(
            "corrupted",
            f"{where}: nccl-tests' footer says 'Out of bounds values : {table.out_of_bounds} "
            "FAILED' (corrupted data: a GPU or link returned wrong values)",
            run=index,
        )
    if impossible:
        first = impossible[0]
        reasons = ", ".join(dict.fromkeys(why.split(",")[0] for _, why, _ in impossible))
        warnings.problem(
            "impossible",
            f"{where}: dropped {len(impossible)} impossible result(s) ({reasons}) at "
            f"{size_list([s for s, _, _ in impossible])}; first at line {first[2]}: {first[1]}",
            run=index,
            sizes=[s for s, _, _ in impossible],
        )


def _is_wrong(token: str, old_error: bool) -> bool:
    """True when nccl-tests reported wrong elements; old layouts print a max relative error instead."""
    m = WRONG.fullmatch(token)
    if m is None or m.group(1) == "N/A":
        return False
    if m.group(2):  # rccl-tests marks errors above its threshold with '*'
        return True
    value = float(m.group(1))
    return False if old_error else value != 0


def _note_odd_row(row: Row, two_placements: bool, source: str, warnings: Notes, index: int) -> None:
    where = f"{source}:{row.lineno}"
    if row.cut and row.halves:
        warnings.append(f"{where}: malformed data row (read its first columns only)")
    elif row.cut:
        warnings.problem(
            "dropped",
            f"{where}: malformed data row of {format_bytes(row.size)} (skipped it)",
            run=index,
            sizes=[row.size],
        )
    elif len(row.halves) == 1 and not row.blank_first and two_placements:
        warnings.append(
            f"{where}: only one set of time/algbw/busbw columns where the table has "
            "out-of-place and in-place; read as out-of-place"
        )


def _text_iter_stats(table: Table, cols: tuple[float, float, float, float]) -> IterStats:
    """nccl-tests' -I text columns (i_min, i_max, i_p99 in us, i_cv%) in seconds and a fraction."""
    i_min, i_max, i_p99, cv_pct = cols
    iters, skip = table.ctx.header.get("iters"), table.ctx.header.get("per_iter_skip", 0)
    return IterStats(
        n_iters=iters - skip if iters and iters > skip else None,
        skipped=skip,
        min_s=i_min / 1e6,
        max_s=i_max / 1e6,
        p99_s=i_p99 / 1e6,
        cv=cv_pct / 100,
    )


def _sample(
    row: Row,
    placement: str,
    half: tuple[float, float, float, str],
    run: _Run,
    *,
    factor: float,
    index: int,
    source: str,
    per_iter: IterStats | None = None,
) -> Sample:
    time_s = half[0] / 1e6  # nccl-tests prints microseconds
    algbw = row.size / time_s
    return Sample(
        op=run.op,
        msg_bytes=float(row.size),
        time_s=time_s,
        algbw_bytes_per_s=algbw,
        busbw_bytes_per_s=algbw * factor,
        n_ranks=run.n_ranks,
        n_nodes=run.n_nodes,
        in_place=placement == "in",
        graph=run.graph,
        dtype=row.dtype,
        redop=row.redop if row.redop not in (None, "none") else None,
        source=f"{source}:{row.lineno}",
        run=index,
        per_iter=per_iter,
    )


def _bandwidth_disagreements(s: Sample, half: tuple[float, float, float, str]) -> list[str]:
    """The file's algbw/busbw (GB/s) where they differ from ours: a wrong rank count or op, or a typo."""
    out = []
    for name, file_GBps, ours in (("algbw", half[1], s.algbw_bytes_per_s), ("busbw", half[2], s.busbw_bytes_per_s)):
        if file_GBps >= _BW_CHECK_MIN_GBPS and abs(ours / 1e9 - file_GBps) > BW_TOLERANCE * file_GBps:
            out.append(f"{s.source} {name} {file_GBps:g} GB/s in the file, {ours / 1e9:.4g} derived")
    return out


def _check_order(samples: list[Sample], where: str, warnings: list[str]) -> None:
    last: dict[tuple, float] = {}
    for s in samples:
        key = (s.dtype, s.redop, s.in_place)
        if s.msg_bytes < last.get(key, -1.0):
            warnings.append(
                f"{s.source}: sizes go down within one table (rows pasted out of order, or "
                "a repeated sweep); kept all rows, sorted by size"
            )
            return
        last[key] = s.msg_bytes


def _check_footer(table: Table, samples: list[Sample], where: str, warnings: Notes, index: int) -> None:
    """A real log (it has the '# nThread' header) ends each table with '# Avg bus bandwidth'
    (nccl-tests prints it, after '# Out of bounds values', once every size has run)."""
    if table.ctx.header and table.footer_busbw_GBps is None and samples:
        largest = format_bytes(max(s.msg_bytes for s in samples))
        warnings.problem(
            "truncated",
            f"{where}: no '# Avg bus bandwidth' footer after this table: the run may "
            f"have stopped early (last size {largest})",
            run=index,
        )


# --- env -------------------------------------------------------------------------------------


def _run_env(table: Table, run: _Run, index: int) -> dict:
    ctx, ann = table.ctx, table.annotations
    version = ctx.nccl_version or ctx.library_version
    if version is None:
        m = ANNOTATED_VERSION.search(" ".join(ann.get(k, "") for k in ("hardware", "algo_or_note", "source")))
        version = m.group(2) if m else None
    info = {
        "run": index,
        "line": table.rows[0].lineno,
        "op": run.op,
        "n_ranks": run.n_ranks,
        "n_nodes": run.n_nodes,
        "graph": run.graph,
        "nccl_version": version,
        "nccl_tests_version": ctx.tests_version,
        "command": ctx.command,
        "hostnames": sorted({h for h, _ in ctx.ranks.values()}),
        "devices": sorted({d for _, d in ctx.ranks.values() if d}),
        "header": dict(ctx.header),
        "avg_busbw_bytes_per_s": None if table.footer_busbw_GBps is None else table.footer_busbw_GBps * 1e9,
        "annotations": dict(ann),
    }
    return {k: v for k, v in info.items() if v not in (None, [], {})}


def _file_env(runs: list[dict]) -> dict:
    env: dict = {}
    for key in ("nccl_version", "nccl_tests_version", "command"):
        env[key] = next((r[key] for r in runs if key in r), None)
    for key in ("hostnames", "devices"):
        env[key] = sorted({x for r in runs for x in r.get(key, [])})
    env = {k: v for k, v in env.items() if v not in (None, [])}
    env["runs"] = runs
    return env
