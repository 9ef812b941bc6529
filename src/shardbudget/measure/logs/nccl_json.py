"""nccl-tests' own JSON (``-J file.json``), with its per-iteration timing (``-I 1``), into a MeasurementSet.

The format is taken from nccl-tests' source, ``src/util.cu`` (``jsonOutputInit``,
``writeDeviceReport``, ``writeBenchmarkLine*``, ``writePerIterReport``, ``writeResultFooter``,
``writeErrors``) at commit a0b82b2260cf5152b9f8c061bbf7eaf0ba096432 (NCCL_TESTS_VERSION 2.19.6,
``JSON_FILE_VERSION 3``); `FORMAT_COMMIT`. One file is one run of one ``*_perf`` binary:

    {"version": 3, "start_time": "...", "args": ["./all_reduce_perf", "-b", "8", ...],
     "env": ["NAME=value", ...], "nccl_version": 22703,
     "config": {"nthreads": 1, "ngpus": 1, "minimum_bytes": 8, ..., "iterations": 20,
                "aggregated_iterations": 1, "validation": 1, "graph": 0,
                "blocking_collectives": "false", "per_iter_timing": "true", "per_iter_skip": 0,
                "parallel_init": "false",
                "devices": [{"rank": 0, "group": 0, "pid": 1, "hostname": "h", "device": 0,
                             "device_hex": "0000:04:00", "device_info": "NVIDIA H100 80GB HBM3"}]},
     "results": [{"size": 8, "count": 2, "type": "float", "redop": "sum", "root": "    -1",
                  "out_of_place": {"time": 10.2, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": 0.0},
                  "out_of_place_per_iter": {"skipped_iterations": 0, "min_us": ..., "max_us": ...,
                      "avg_us": ..., "p50_us": ..., "p95_us": ..., "p99_us": ..., "stdev_us": ...,
                      "cv_pct": ..., "times_us": [...], "per_process_max_times_us": [[...], ...]},
                  "in_place": {...}, "in_place_per_iter": {...},
                  "actual_iterations": 20, "experiment_name": ""}],
     "out_of_bounds": {"count": 0, "okay": "true"},
     "average_bus_bandwidth": {"bandwidth": 0.9, "okay": "unchecked"},
     "errors": [], "end_time": "..."}

What the fields mean, as the source writes them:

* ``version`` 1 (commit ad956f1) has no per-iteration objects; 2 (0fdb00a) adds them; 3 (e1dc979)
  adds ``skipped_iterations`` / ``per_iter_skip`` (``-K``). Later versions are read for the fields
  named here, with a warning.
* ``time`` is in microseconds, the mean over the timed loop averaged over ranks (``cpu_time`` with
  ``-C 1``); ``alg_bw`` / ``bus_bw`` in GB/s (1e9); ``nwrong`` null without ``-c``. Doubles are
  printed with ``%lf``; NaN as the string ``"nan"``, an infinity as a bare ``inf`` (not JSON).
  Booleans are the *strings* ``"true"`` / ``"false"``. ``out_of_place`` is null where only in-place
  runs (trace replay).
* ``devices`` has one entry per *process* (its first GPU): the world size is
  processes x ``nthreads`` x ``ngpus``.
* ``times_us`` is, per iteration, the slowest GPU of each process and then the slowest process
  (CUDA-event time of one iteration divided by ``aggregated_iterations``); the summary fields skip
  the first ``skipped_iterations``. ``per_process_max_times_us`` is one row per process, only when
  there are several. The binary's name is only in ``args[0]``.
* The file is written as the run goes and closed at exit: a run that was killed leaves it cut off
  mid-way. We read the sizes that were written in full and say so.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace

from ...comm.op import busbw_factor, op_or_none
from ...errors import MeasureError
from .records import (
    BW_TOLERANCE,
    OPS,
    IterStats,
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
from .nccl_scan import BINARY, library_version

FORMAT_COMMIT = "a0b82b2260cf5152b9f8c061bbf7eaf0ba096432"
"""The nccl-tests commit whose ``src/util.cu`` this reader follows (NCCL_TESTS_VERSION 2.19.6)."""
FORMAT_VERSION = 3
"""``JSON_FILE_VERSION`` at `FORMAT_COMMIT`."""
_PLACEMENTS = (("out_of_place", False), ("in_place", True))
_INF = re.compile(r"(?<=[:,\[])(\s*)-?inf(?=\s*[,\]}])")  # nccl-tests' %lf of an infinity
_STAT_CHECK_REL = 0.01  # the file's p50/p99 against the same statistic recomputed from times_us


def looks_like_nccl_tests(data: object) -> bool:
    """True for a parsed document with nccl-tests' top-level shape (``results`` and ``config``)."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("results"), list)
        and isinstance(data.get("config"), dict)
        and "tool" not in data
    )


def load_json(text: str, source: str) -> tuple[object, Notes]:
    """The parsed document and warnings; a cut-off nccl-tests file yields the results written in full
    (a truncated problem: `check` does not certify it)."""
    try:
        return json.loads(text), Notes(source=source)
    except (ValueError, RecursionError) as e:
        error = e
    fixed = _INF.sub(r"\1null", text)
    if fixed != text:
        try:
            return json.loads(fixed), Notes(
                [f"{source}: infinite values (printed as inf) read as missing"], source=source
            )
        except (ValueError, RecursionError):
            pass
    salvaged = _salvage(fixed)
    if salvaged is not None:
        n = len(salvaged["results"])
        notes = Notes(source=source)
        notes.problem(
            "truncated",
            f"{source}: the file stops mid-way (the run was killed?); read the "
            f"{n} size{'s' * (n != 1)} written in full",
        )
        return salvaged, notes
    if isinstance(error, RecursionError):
        raise MeasureError(
            f"{source}: starts like JSON but is not valid JSON: nested too deeply to read (thousands "
            "of levels); expected nccl-tests' -J output or shardbudget JSON"
        ) from None
    where = f" at line {error.lineno}" if isinstance(error, json.JSONDecodeError) else ""
    raise MeasureError(f"{source}: starts like JSON but is not valid JSON{where}") from None


def _salvage(text: str) -> dict | None:
    """The header and every complete result of an nccl-tests file cut off inside ``results``."""
    key = '"results":['
    at = text.find(key)
    if at < 0:
        return None
    try:
        head = json.loads(text[:at].rstrip().rstrip(",") + "}")
    except (ValueError, RecursionError):
        return None
    if not (isinstance(head, dict) and isinstance(head.get("config"), dict)):
        return None
    decoder, pos, results = json.JSONDecoder(), at + len(key), []
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            break
        try:
            item, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            break
        results.append(item)
    return {**head, "results": results, "_cut": True}


# --- the document ----------------------------------------------------------------------------


def parse_nccl_tests(
    data: dict, *, source: str, default_op: str, n_ranks: int | None, warnings: Notes
) -> MeasurementSet:
    """Read a parsed nccl-tests document (see the module docstring); `n_ranks` overrides its world size."""
    version = data.get("version")
    if positive_int(version) is None:
        warnings.append(f'{source}: no JSON "version"; read as nccl-tests\' version {FORMAT_VERSION}')
    elif version > FORMAT_VERSION:
        warnings.append(
            f"{source}: JSON version {version} is newer than {FORMAT_VERSION} (nccl-tests "
            f"{FORMAT_COMMIT[:7]}); read the fields that version has"
        )
    config = data["config"]
    op = _op(data, source, default_op, warnings)
    devices = (
        [d for d in config.get("devices", []) if isinstance(d, dict)] if isinstance(config.get("devices"), list) else []
    )
    ranks = n_ranks or _world_size(config, devices, source)
    hosts = sorted({str(d["hostname"]) for d in devices if isinstance(d.get("hostname"), str)})
    n_nodes = len(hosts) or (1 if ranks == 1 else None)
    graph = (positive_int(config.get("graph")) or 0) > 0
    first = next((r for r in data["results"] if isinstance(r, dict)), {})
    if any(isinstance(first.get(key), dict) and "cpu_time" in first[key] for key, _ in _PLACEMENTS):
        warnings.append(f"{source}: times are CPU-side launch times (-C 1), not completion times")
    samples: list[Sample] = []
    for i, r in enumerate(data["results"]):
        samples.extend(
            _result_samples(
                r, f"{source}:results[{i}]", op=op, ranks=ranks, n_nodes=n_nodes, graph=graph, warnings=warnings
            )
        )
    if not samples:
        raise NoUsableRows(
            f"{source}: nccl-tests JSON with no usable results (expected items like "
            '{"size": 8, "out_of_place": {"time": 10.2, ...}})'
            + (f"; {warnings.problems[0].text}" if warnings.problems else ""),
            warnings.problems,
        )
    _check_order(samples, source, warnings)
    samples.sort(key=lambda s: (s.msg_bytes, s.in_place))
    return MeasurementSet(
        samples=tuple(samples),
        source=source,
        tool="nccl-tests",
        env=_env(data, config, devices, hosts, op=op, ranks=ranks, n_nodes=n_nodes, graph=graph),
        warnings=tuple(warnings),
        problems=tuple(warnings.problems),
    )


def _op(data: dict, source: str, default_op: str, warnings: list[str]) -> str:
    args = data.get("args")
    binary = args[0] if isinstance(args, list) and args and isinstance(args[0], str) else ""
    m = BINARY.search(os.path.basename(binary))
    if m:
        op = op_or_none(m.group(1))
        if op is None:
            raise MeasureError(
                f"{source}: {m.group(1)}_perf is not a collective shardbudget models (expected one of {', '.join(OPS)})"
            )
        return op
    warnings.append(f'{source}: "args" does not name a *_perf binary; assumed {default_op}')
    return default_op


def _world_size(config: dict, devices: list[dict], source: str) -> int:
    threads, gpus = positive_int(config.get("nthreads", 1)), positive_int(config.get("ngpus"))
    if threads is None or gpus is None:
        raise MeasureError(
            f'{source}: nccl-tests JSON without a usable config "ngpus" / "nthreads" (whole numbers >= 1); '
            "pass n_ranks="
        )
    return max(1, len(devices)) * threads * gpus  # one device entry per process


def _check_order(samples: list[Sample], source: str, warnings: list[str]) -> None:
    last: dict[bool, float] = {}
    for s in samples:
        if s.msg_bytes < last.get(s.in_place, -1.0):
            warnings.append(f"{s.source}: sizes go down (a repeated sweep, -R?); kept all results, sorted by size")
            return
        last[s.in_place] = s.msg_bytes


# --- one result ------------------------------------------------------------------------------


def _result_samples(
    r: object, where: str, *, op: str, ranks: int, n_nodes: int | None, graph: bool, warnings: Notes
) -> list[Sample]:
    if not isinstance(r, dict):
        warnings.problem("dropped", f"{where}: not an object; skipped")
        return []
    size = finite(r.get("size"))
    if size is None or size < 0:
        warnings.problem("dropped", f'{where}: needs "size" >= 0 (bytes); skipped')
        return []
    out = []
    for key, in_place in _PLACEMENTS:
        half = r.get(key)
        if half is None:
            continue  # nccl-tests writes null where it ran in-place only
        s = _sample(
            r,
            half,
            f"{where}.{key}",
            op=op,
            size=size,
            ranks=ranks,
            n_nodes=n_nodes,
            graph=graph,
            in_place=in_place,
            warnings=warnings,
        )
        if s is not None:
            per_iter = _iter_stats(r.get(f"{key}_per_iter"), f"{where}.{key}_per_iter", warnings)
            out.append(replace(s, per_iter=per_iter) if per_iter else s)
    return out


def _sample(
    r: dict,
    half: object,
    where: str,
    *,
    op: str,
    size: float,
    ranks: int,
    n_nodes: int | None,
    graph: bool,
    in_place: bool,
    warnings: Notes,
) -> Sample | None:
    if not isinstance(half, dict):
        warnings.problem("dropped", f"{where}: not an object; skipped", sizes=[size])
        return None
    raw = half.get("time", half.get("cpu_time"))
    time_us = finite(raw)
    why = "no time" if time_us is None else impossible_time(time_us / 1e6, size)
    if why is not None:
        why = f"time {raw!r}, not a number" if why == "no time" and raw is not None else why
        warnings.problem(
            "impossible",
            f'{where}: needs "time" > 0 (microseconds), got {why} at {size_list([size])}; skipped',
            sizes=[size],
        )
        return None
    wrong = finite(half.get("nwrong"))
    if wrong:
        warnings.problem(
            "corrupted",
            f"{where}: nwrong {wrong:g} at {size_list([size])} (nccl-tests found "
            "corrupted data: a GPU or link returned wrong values); skipped",
            sizes=[size],
        )
        return None
    time_s = time_us / 1e6  # nccl-tests writes microseconds
    algbw = size / time_s
    busbw = algbw * busbw_factor(op, ranks)
    for name, ours in (("alg_bw", algbw), ("bus_bw", busbw)):
        given = finite(half.get(name))
        if given is not None and given >= 0.5 and abs(ours / 1e9 - given) > BW_TOLERANCE * given:
            warnings.append(
                f"{where}: {name} {given:g} GB/s in the file, {ours / 1e9:.4g} derived "
                f"from size/time with {op} on {ranks} ranks; is the rank count right?"
            )
    redop = r.get("redop")
    return Sample(
        op=op,
        msg_bytes=float(size),
        time_s=time_s,
        algbw_bytes_per_s=algbw,
        busbw_bytes_per_s=busbw,
        n_ranks=ranks,
        n_nodes=n_nodes,
        in_place=in_place,
        graph=graph,
        dtype=str(r.get("type", "?")),
        redop=redop if isinstance(redop, str) and redop not in ("none", "") else None,
        source=where,
    )


def _iter_stats(obj: object, where: str, warnings: list[str]) -> IterStats | None:
    """``*_per_iter`` in seconds; checked against the statistics recomputed from ``times_us``."""
    if not isinstance(obj, dict):
        return None
    times = _floats(obj.get("times_us"))
    rows = obj.get("per_process_max_times_us")
    per_process = tuple(t for row in rows if (t := _floats(row))) if isinstance(rows, list) else ()
    skipped = positive_int(obj.get("skipped_iterations")) or 0
    stats = {
        name: (None if (v := finite(obj.get(f"{name}_us"))) is None else v / 1e6)
        for name in ("min", "max", "avg", "p50", "p95", "p99", "stdev")
    }
    cv_pct = finite(obj.get("cv_pct"))
    recomputed = iter_stats_of(times, skipped=skipped) if len(times) > skipped else None
    if recomputed is not None:
        for name, given in (("p50", stats["p50"]), ("p99", stats["p99"])):
            ours = getattr(recomputed, f"{name}_s")
            if given is not None and abs(given - ours) > _STAT_CHECK_REL * ours + 1e-9:
                warnings.append(
                    f"{where}: {name}_us {given * 1e6:g} differs from the {name} of "
                    f"times_us ({ours * 1e6:g}); kept the file's"
                )
    if not times and cv_pct is None and all(v is None for v in stats.values()):
        return None  # an empty or foreign object: nothing per iteration
    return IterStats(
        n_iters=len(times) - skipped if times else None,
        skipped=skipped,
        min_s=stats["min"],
        max_s=stats["max"],
        mean_s=stats["avg"],
        p50_s=stats["p50"],
        p95_s=stats["p95"],
        p99_s=stats["p99"],
        stddev_s=stats["stdev"],
        cv=None if cv_pct is None else cv_pct / 100,
        times_s=times,
        per_process_max_s=per_process,
    )


def _floats(values: object) -> tuple[float, ...]:
    """Microseconds to seconds; a list with anything but finite numbers counts as absent."""
    if not isinstance(values, list):
        return ()
    out = [finite(v) for v in values]
    return () if any(v is None or v < 0 for v in out) else tuple(v / 1e6 for v in out)  # type: ignore[operator]


# --- env -------------------------------------------------------------------------------------


def _env(
    data: dict,
    config: dict,
    devices: list[dict],
    hosts: list[str],
    *,
    op: str,
    ranks: int,
    n_nodes: int | None,
    graph: bool,
) -> dict:
    code = data.get("nccl_version")
    version = library_version(str(code)) if positive_int(code) else None
    args = data.get("args") if isinstance(data.get("args"), list) else []
    env_list = data.get("env") if isinstance(data.get("env"), list) else []
    # Only NCCL's own settings: the rest of a job's environment may hold anything, secrets included.
    nccl_env = dict(
        sorted(e.split("=", 1) for e in env_list if isinstance(e, str) and e.startswith("NCCL_") and "=" in e)
    )
    footer = data.get("average_bus_bandwidth")
    busbw = finite(footer.get("bandwidth")) if isinstance(footer, dict) else None
    run = {
        "run": 0,
        "op": op,
        "n_ranks": ranks,
        "n_nodes": n_nodes,
        "graph": graph,
        "nccl_version": version,
        "command": " ".join(str(a) for a in args) or None,
        "hostnames": hosts,
        "header": {k: v for k, v in config.items() if k != "devices"},
        "avg_busbw_bytes_per_s": None if busbw is None else busbw * 1e9,
    }
    run = {k: v for k, v in run.items() if v not in (None, [], {})}
    env = {
        "nccl_version": version,
        "command": run.get("command"),
        "hostnames": hosts,
        "devices": sorted({str(d["device_info"]) for d in devices if d.get("device_info")}),
        "json_version": data.get("version"),
        "start_time": data.get("start_time"),
        "end_time": data.get("end_time"),
        "nccl_env": nccl_env,
        "errors": [e for e in data.get("errors", []) if isinstance(e, str)]
        if isinstance(data.get("errors"), list)
        else [],
        "complete": not data.get("_cut", False),
        "runs": [run],
    }
    return {k: v for k, v in env.items() if v not in (None, [], {})}
