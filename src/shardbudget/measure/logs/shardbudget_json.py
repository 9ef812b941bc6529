"""shardbudget's own JSON (``"tool": "shardbudget"``, written by the harness) into a MeasurementSet.

The harness has written the dtype as torch names it ("float32") and, since one dtype vocabulary,
by its canonical name ("fp32"); either is kept as the file spells it, like any other log's.
"""

from __future__ import annotations

from ...comm.op import busbw_factor, op_or_none
from ...errors import MeasureError
from .records import (
    BW_TOLERANCE,
    OPS,
    MeasurementSet,
    Notes,
    NoUsableRows,
    Sample,
    finite,
    impossible_time,
    iter_stats_of,
    positive_int,
    size_list,
)
from .nccl_json import load_json, looks_like_nccl_tests, parse_nccl_tests


def parse_json(text: str, *, source: str, default_op: str, n_ranks: int | None) -> MeasurementSet:
    """Read shardbudget JSON or nccl-tests' own (``-J``); `n_ranks` overrides the world size."""
    data, warnings = load_json(text, source)
    if looks_like_nccl_tests(data):
        return parse_nccl_tests(
            data,
            source=source,
            default_op=default_op,
            n_ranks=n_ranks,  # type: ignore[arg-type]
            warnings=warnings,
        )
    if not (isinstance(data, dict) and data.get("tool") == "shardbudget" and isinstance(data.get("results"), list)):
        raise MeasureError(
            f"{source}: JSON of another shape; expected nccl-tests' -J output "
            '({"version": 3, "config": {...}, "results": [...]}) or shardbudget\'s '
            '{"tool": "shardbudget", "results": [...]}'
        )
    return _parse_shardbudget(data, source=source, default_op=default_op, n_ranks=n_ranks)


def _parse_shardbudget(data: dict, *, source: str, default_op: str, n_ranks: int | None) -> MeasurementSet:
    warnings = Notes(source=source)
    op = _json_op(data, source, default_op, warnings)
    ranks = n_ranks or positive_int(data.get("world_size", data.get("n_ranks")))
    if ranks is None:
        raise MeasureError(f'{source}: no usable "world_size" (expected a whole number >= 1)')
    if data.get("complete") is False:
        why = data.get("error") if isinstance(data.get("error"), str) else "no reason given"
        warnings.problem("truncated", f"{source}: the run did not complete ({why}); read the sizes it finished")
    samples = [
        s
        for i, r in enumerate(data["results"])
        if (s := _json_sample(data, r, i, op=op, ranks=ranks, source=source, warnings=warnings)) is not None
    ]
    if not samples:
        raise NoUsableRows(
            f'{source}: no usable results (expected items like {{"bytes": 8, "time_s": 1.2e-05}})'
            + (f"; {warnings.problems[-1].text}" if warnings.problems else ""),
            warnings.problems,
        )
    samples.sort(key=lambda x: x.msg_bytes)
    return MeasurementSet(
        samples=tuple(samples),
        source=source,
        tool="shardbudget",
        env=_json_env(data),
        warnings=tuple(warnings),
        problems=tuple(warnings.problems),
    )


def _json_op(data: dict, source: str, default_op: str, warnings: list[str]) -> str:
    raw = data.get("op")
    if raw is None:
        warnings.append(f'{source}: no "op"; assumed {default_op}')
        return default_op
    op = op_or_none(raw)
    if op is None:
        raise MeasureError(f'{source}: "op" {raw!r} is not a collective (expected one of {", ".join(OPS)})')
    return op


def _json_env(data: dict) -> dict:
    env = dict(data["env"]) if isinstance(data.get("env"), dict) else {}
    for key in ("version", "backend", "world_size", "n_nodes", "dtype"):
        if key in data and not isinstance(data[key], (dict, list)):
            env.setdefault("tool_version" if key == "version" else key, data[key])
    return env


def _json_sample(data: dict, r: object, i: int, *, op: str, ranks: int, source: str, warnings: Notes) -> Sample | None:
    where = f"{source}:results[{i}]"
    if not isinstance(r, dict):
        warnings.problem("dropped", f"{where}: not an object; skipped")
        return None
    msg_bytes = finite(r.get("bytes", r.get("msg_bytes", r.get("size"))))
    raw = r.get("time_s", r.get("median_s"))
    time_s = finite(raw)
    if msg_bytes is None or msg_bytes < 0:
        warnings.problem("dropped", f'{where}: needs "bytes" >= 0 and "time_s" (or "median_s") > 0; skipped')
        return None
    why = f"{raw!r}, not a number" if time_s is None else impossible_time(time_s, msg_bytes)
    if why is not None:
        warnings.problem(
            "impossible",
            f'{where}: needs "time_s" (or "median_s") > 0, got {why} at {size_list([msg_bytes])}; skipped',
            sizes=[msg_bytes],
        )
        return None
    if positive_int(r.get("wrong")):
        warnings.problem(
            "corrupted",
            f"{where}: {r['wrong']} wrong element(s) at {size_list([msg_bytes])} reported "
            "by the harness's check (a GPU or link returned wrong values); skipped",
            sizes=[msg_bytes],
        )
        return None
    algbw = msg_bytes / time_s
    busbw = algbw * busbw_factor(op, ranks)
    given = finite(r.get("busbw_bytes_per_s"))
    if given and busbw and abs(given - busbw) > BW_TOLERANCE * busbw:
        warnings.append(
            f"{where}: busbw_bytes_per_s {given:.4g} differs from bytes/time x factor {busbw:.4g} by more than 2%"
        )
    redop = r.get("redop", data.get("redop"))
    samples_s = r.get("samples_s")
    per_iter = None
    if isinstance(samples_s, list) and samples_s and all((v := finite(t)) is not None and v > 0 for t in samples_s):
        per_iter = iter_stats_of([float(t) for t in samples_s])  # the harness keeps every iteration
    return Sample(
        op=op,
        msg_bytes=float(msg_bytes),
        time_s=float(time_s),
        algbw_bytes_per_s=algbw,
        busbw_bytes_per_s=busbw,
        n_ranks=ranks,
        n_nodes=positive_int(data.get("n_nodes")),
        in_place=bool(r.get("in_place", data.get("in_place", False))),
        graph=bool(data.get("graph", False)),
        dtype=str(r.get("dtype", data.get("dtype", "?"))),
        redop=redop if isinstance(redop, str) else None,
        source=where,
        per_iter=per_iter,
    )
