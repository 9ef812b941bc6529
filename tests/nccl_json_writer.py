"""Test helper: write nccl-tests' ``-J`` JSON the way nccl-tests does, from records or from a text log.

The layout, the key order and the number formats are those of nccl-tests' ``src/util.cu`` at
commit a0b82b2260cf5152b9f8c061bbf7eaf0ba096432 (JSON version 3): no whitespace, doubles printed
with ``%lf`` (six decimals), NaN as the string "nan", booleans as the strings "true"/"false", ints
and size_t as integers. The tests read what this writes and compare it with what the text log gave,
so both readers are held to one schema.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from shardbudget.comm.op import CollectiveOp
from shardbudget.measure.logs.read import MeasurementSet, Sample

BINARY = {
    CollectiveOp.ALL_REDUCE: "all_reduce",
    CollectiveOp.ALL_GATHER: "all_gather",
    CollectiveOp.REDUCE_SCATTER: "reduce_scatter",
    CollectiveOp.ALL_TO_ALL: "alltoall",
    CollectiveOp.BROADCAST: "broadcast",
    CollectiveOp.REDUCE: "reduce",
    CollectiveOp.SEND_RECV: "sendrecv",
}


class Lf(float):
    """A double nccl-tests writes with %lf."""


def dumps(value: object) -> str:
    """nccl-tests' hand-written JSON: compact, %lf doubles, "nan" for NaN, bare inf for infinities."""
    if isinstance(value, bool):
        return '"true"' if value else '"false"'  # jsonBool writes strings
    if isinstance(value, Lf):
        return '"nan"' if value != value else ("%lf" % value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "%lf" % value
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "{" + ",".join(f"{dumps(k)}:{dumps(v)}" for k, v in value.items()) + "}"
    return "[" + ",".join(dumps(v) for v in value) + "]"  # type: ignore[union-attr]


def device(rank: int, hostname: str) -> dict:
    return {
        "rank": rank,
        "group": 0,
        "pid": 1000 + rank,
        "hostname": hostname,
        "device": rank % 8,
        "device_hex": "0000:04:00",
        "device_info": "NVIDIA H100 80GB HBM3",
    }


def document(
    *,
    op: str,
    results: list[dict],
    processes: Sequence[str],
    ngpus: int = 1,
    nthreads: int = 1,
    graph: int = 0,
    per_iter: bool = False,
    skip: int = 0,
    iters: int = 20,
    nccl_version: int = 22703,
    env: Sequence[str] = (),
) -> dict:
    """A whole file; `processes` names each process's host (one ``devices`` entry per process)."""
    return {
        "version": 3,
        "start_time": "2026-07-10 10:00:00",
        "args": [f"./build/{BINARY[CollectiveOp(op)]}_perf", "-b", "8", "-e", "8G", "-f", "2"],
        "env": list(env),
        "nccl_version": nccl_version,
        "config": {
            "nthreads": nthreads,
            "ngpus": ngpus,
            "minimum_bytes": 8,
            "maximum_bytes": 8 << 30,
            "step_factor": 2,
            "warmup_iters": 5,
            "iterations": iters,
            "aggregated_iterations": 1,
            "validation": 1,
            "graph": graph,
            "blocking_collectives": False,
            "per_iter_timing": per_iter,
            "per_iter_skip": skip,
            "parallel_init": False,
            "devices": [device(i * ngpus * nthreads, h) for i, h in enumerate(processes)],
        },
        "results": results,
        "out_of_bounds": {"count": 0, "okay": True},
        "average_bus_bandwidth": {"bandwidth": Lf(1.0), "okay": "unchecked"},
        "errors": [],
        "end_time": "2026-07-10 10:01:00",
    }


def placement(time_us: float, algbw_GBps: float, busbw_GBps: float, wrong: float | None = 0.0) -> dict:
    return {
        "time": Lf(time_us),
        "alg_bw": Lf(algbw_GBps),
        "bus_bw": Lf(busbw_GBps),
        "nwrong": None if wrong is None else Lf(wrong),
    }


def per_iter_block(times_us: Sequence[float], *, skip: int = 0, per_process: Sequence[Sequence[float]] = ()) -> dict:
    """``writePerIterReport``'s object, with the statistics computed as ``computeIterStats`` does."""
    kept = sorted(times_us[skip:])
    n = len(kept)
    avg = sum(kept) / n
    stdev = math.sqrt(sum((t - avg) ** 2 for t in kept) / n)

    def pct(p: int) -> float:
        return kept[min(n - 1, (n * p + 99) // 100 - 1)]

    block = {
        "skipped_iterations": skip,
        "min_us": Lf(kept[0]),
        "max_us": Lf(kept[-1]),
        "avg_us": Lf(avg),
        "p50_us": Lf(kept[n // 2]),
        "p95_us": Lf(pct(95)),
        "p99_us": Lf(pct(99)),
        "stdev_us": Lf(stdev),
        "cv_pct": Lf(100 * stdev / avg),
        "times_us": [Lf(t) for t in times_us],
    }
    if len(per_process) > 1:
        block["per_process_max_times_us"] = [[Lf(t) for t in row] for row in per_process]
    return block


def result(
    size: int,
    count: int,
    dtype: str,
    redop: str,
    *,
    out: dict | None,
    inp: dict | None,
    out_iter: dict | None = None,
    in_iter: dict | None = None,
    root: int = -1,
) -> dict:
    r: dict = {"size": size, "count": count, "type": dtype, "redop": redop, "root": "%6i" % root, "out_of_place": out}
    if out_iter is not None:
        r["out_of_place_per_iter"] = out_iter
    r["in_place"] = inp
    if in_iter is not None:
        r["in_place_per_iter"] = in_iter
    r.update({"actual_iterations": 20, "experiment_name": ""})
    return r


def _half(s: Sample | None) -> dict | None:
    if s is None:
        return None
    return placement(s.time_s * 1e6, s.algbw_bytes_per_s / 1e9, s.busbw_bytes_per_s / 1e9)


def from_measurements(ms: MeasurementSet) -> list[tuple[int, dict]]:
    """(run index, document) for every run of a text log: the JSON nccl-tests would have written."""
    docs = []
    for run in sorted({s.run for s in ms.samples}):
        samples = [s for s in ms.samples if s.run == run]
        first = samples[0]
        rows: dict[tuple, dict[bool, Sample]] = {}
        for s in samples:
            rows.setdefault((s.msg_bytes, s.dtype, s.redop), {})[s.in_place] = s
        results = [
            result(
                int(size),
                int(size) // 4,
                dtype,
                redop or "none",
                out=_half(halves.get(False)),
                inp=_half(halves.get(True)),
            )
            for (size, dtype, redop), halves in rows.items()
        ]
        nodes = first.n_nodes or 1
        hosts = [f"node{r * nodes // first.n_ranks}" for r in range(first.n_ranks)]
        docs.append(
            (
                run,
                document(op=first.op, results=results, processes=hosts, graph=int(first.graph), env=_exported(ms, run)),
            )
        )
    return docs


def _exported(ms: MeasurementSet, run: int) -> list[str]:
    """The NCCL_* settings a text run names in its notes, as nccl-tests -J lists the environment."""
    runs = {r.get("run"): r for r in ms.env.get("runs", []) if isinstance(r, dict)}
    notes = " ".join(str(v) for v in (runs.get(run, {}).get("annotations") or {}).values())
    return sorted(
        {m.upper().split("=")[0] + "=" + m.split("=", 1)[1] for m in re.findall(r"\bNCCL_\w+=[\w,^]+", notes)}
    )
