"""Collective benchmark on `torch.distributed`: nccl-tests numbers from real processes.

`run_measure` times all-reduce, all-gather, reduce-scatter or all-to-all over a sweep of sizes and
returns a `MeasureResult`; ``python -m shardbudget.measure`` is a thin shell over it. The transport
is always torch's (gloo on CPUs, NCCL on GPUs); this module only launches, times and bookkeeps.
It never imports torch at module level, so ``import shardbudget`` works without it.

What the numbers mean (nccl-tests ``doc/PERFORMANCE.md`` and ``src/*.cu``)
-------------------------------------------------------------------------
size (``bytes``)
    nccl-tests' "size" column, which is the *larger* of the send and receive buffers of one rank:

    =============== ============================================ ==================================
    op              ``bytes`` is                                 ``count`` (elements) is
    =============== ============================================ ==================================
    all-reduce      the buffer each rank reduces (in = out)      bytes / elem_size
    all-gather      the gathered output = per-rank send × n      the per-rank send count
    reduce-scatter  the input = per-rank output × n              the per-rank receive count
    all-to-all      each rank's send (= receive) buffer          the count sent to each peer
    =============== ============================================ ==================================

    A requested size is rounded *up* to whole elements (and, where the buffer is split into n
    chunks, to a multiple of n elements) so no size becomes 0; each rounding is listed in `notes`.
time
    Per iteration, the time of one collective is the **slowest rank's** (an all-reduce MAX of the
    per-rank times, as nccl-tests does), so a rank that enters late is not hidden by its peers.
    gloo: ``time.perf_counter`` around the (blocking) call, after a barrier. NCCL: CUDA events
    around the call, after a barrier and a device synchronize. We report the median (``time_s``),
    min and p99 over the iterations, and keep every sample; nccl-tests prints the mean instead.
    Warm-up iterations run before each size (nccl-tests warms up once), which keeps CPU runs stable.
algbw, busbw
    algbw = bytes / median time. busbw = algbw × factor, where the factor turns the algorithm
    bandwidth into the per-link rate a ring would need: all-reduce 2(n−1)/n (n−1 reduce steps and
    n−1 copy steps over n links), all-gather, reduce-scatter, all-to-all (n−1)/n (one half of that).
#wrong
    With ``check``, each size is run once more on known data and every rank counts the elements
    that differ from the expected result (all-reduce: rank r sends r+1, the sum is n(n+1)/2;
    all-gather / all-to-all: each chunk must come from the right rank). Without it: None ("N/A").

Launchers
---------
Locally, `run_measure` starts ``nproc`` worker processes (``python -m shardbudget.measure.worker``),
one rank each, rendezvous on 127.0.0.1 and a free port. Under ``torchrun`` (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT set) or ``srun`` (SLURM_PROCID, SLURM_STEP_NUM_TASKS set) the calling
process *is* a rank: nothing is spawned, and only rank 0 prints and writes the output file.

Faults
------
A rank that dies, fails or stops making progress ends the run within ``timeout_s`` (the longest one
size may take; start-up gets `STARTUP_ALLOWANCE_S` more to import torch). The error names the rank
and the size it was at, and every completed size stays in the output file with
``"complete": false``. Locally the bookkeeping lives in the parent: rank 0 reports each completed
size on its stdout as it finishes, so a rank that is killed loses nothing already measured.
Under a launcher each rank only sees its own error (gloo/NCCL time out after ``timeout_s``); rank 0
still saves what it completed, and the launcher's log names the rank that died.

Output
------
``out`` gets ``MeasureResult.to_dict()``, rewritten atomically (temp file + ``os.replace``) after
every completed size: ``tool``, ``version``, ``env`` (torch, backend, hosts, world_size, n_nodes,
launcher, command, time_utc, python), ``op``, ``world_size``, ``n_nodes``, ``backend``, ``dtype``,
``iters``, ``warmup``, ``check``, ``notes``, ``results`` (per size: ``bytes``, ``requested_bytes``,
``count``, ``time_s`` (= median), ``median_s``, ``min_s``, ``p99_s``, ``algbw_bytes_per_s``,
``busbw_bytes_per_s``, ``wrong`` (int, or null without check), ``wrong_by_rank``, ``samples_s``),
``complete`` and ``error``. An existing file is refused unless ``force``.

Test hook (not a user feature)
------------------------------
``SHARDBUDGET_FAULT=KIND@RANK[:SIZE][,...]`` makes rank RANK misbehave at size SIZE (the ``bytes``
value, e.g. ``1KiB``; all sizes when left out): ``crash`` kills itself with SIGKILL after starting
the size, ``hang`` sleeps forever before starting it, ``wrong-reduction`` adds 1 to one element of
its result before ``check`` compares it. The integration tests use it to show the guards work.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import math
import os
import platform
import queue
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import MeasureError, did_you_mean
from ..units import format_bytes, parse_bytes

OPS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
BACKENDS = ("gloo", "nccl")
FAULT_ENV = "SHARDBUDGET_FAULT"
FAULT_KINDS = ("crash", "hang", "wrong-reduction")
EVENT_PREFIX = "@shardbudget "  # marks our protocol lines among whatever else a worker prints
STARTUP_ALLOWANCE_S = 30.0  # importing torch on a loaded 2-core box takes several seconds per rank
TORCH_MISSING = ("torch is not installed; pip install 'shardbudget[measure]' "
                 "(CPU: pip install torch==2.13.0)")


@dataclass(frozen=True)
class DType:
    name: str
    elem_bytes: int
    nccl_name: str  # the name nccl-tests prints in its "type" column
    max_exact: int  # largest integer the type holds exactly; bounds the --check values


DTYPES = {d.name: d for d in (
    DType("float32", 4, "float", 2**24), DType("float64", 8, "double", 2**53),
    DType("float16", 2, "half", 2048), DType("bfloat16", 2, "bfloat16", 256),
    DType("int8", 1, "int8", 127), DType("uint8", 1, "uint8", 255),
    DType("int32", 4, "int32", 2**31 - 1), DType("int64", 8, "int64", 2**63 - 1),
)}


def busbw_factor(op: str, world_size: int) -> float:
    """nccl-tests' algbw -> busbw factor (doc/PERFORMANCE.md); the one definition is in collectives."""
    from ..collectives import busbw_factor as factor
    return factor(op, world_size)


def redop_name(op: str) -> str:
    return "sum" if op in ("all-reduce", "reduce-scatter") else "none"


def check_max_value(op: str, world_size: int) -> int:
    """Largest value the --check patterns reach (see worker.py), so small types can be refused."""
    n = world_size
    return {"all-reduce": n * (n + 1) // 2, "all-gather": n,
            "reduce-scatter": n * (n + 1) // 2 + n * (n - 1), "all-to-all": n * n}[op]


# --- sizes ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PlannedSize:
    requested_bytes: int
    size_bytes: int  # nccl-tests "size": see the module docstring for its meaning per op
    count: int  # nccl-tests "count" in elements


def plan_sizes(sizes_bytes: list[float], op: str, dtype: str, world_size: int
               ) -> tuple[list[PlannedSize], list[str]]:
    """Round each size up to whole elements (whole chunks where the buffer is split n ways)."""
    elem_bytes = DTYPES[dtype].elem_bytes
    split = 1 if op == "all-reduce" else world_size  # all other ops cut the buffer into n chunks
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
        notes.append(f"{len(sizes_bytes) - len(plan)} requested sizes fell on the same size after "
                     "rounding and were measured once")
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
        return {"bytes": self.size_bytes, "requested_bytes": self.requested_bytes,
                "count": self.count, "time_s": self.median_s, "median_s": self.median_s,
                "min_s": self.min_s, "p99_s": self.p99_s,
                "algbw_bytes_per_s": self.algbw_bytes_per_s,
                "busbw_bytes_per_s": self.busbw_bytes_per_s, "wrong": self.wrong,
                "wrong_by_rank": list(self.wrong_by_rank) if self.wrong_by_rank else None,
                "samples_s": list(self.samples_s)}


def summarize(planned: PlannedSize, samples_s: list[float], op: str, world_size: int,
              wrong_by_rank: list[int] | None) -> SizeResult:
    """Per-iteration slowest-rank times -> median / min / p99 and nccl-tests bandwidths."""
    import numpy as np  # numpy is a core dependency; imported here to keep module import light

    arr = np.asarray(samples_s, dtype=float)
    median_s = float(np.median(arr))
    algbw = planned.size_bytes / median_s if median_s > 0 else math.inf
    return SizeResult(
        size_bytes=planned.size_bytes, requested_bytes=planned.requested_bytes,
        count=planned.count, median_s=median_s, min_s=float(arr.min()),
        p99_s=float(np.percentile(arr, 99)), algbw_bytes_per_s=algbw,
        busbw_bytes_per_s=algbw * busbw_factor(op, world_size),
        wrong=None if wrong_by_rank is None else int(sum(wrong_by_rank)),
        wrong_by_rank=None if wrong_by_rank is None else tuple(int(w) for w in wrong_by_rank),
        samples_s=tuple(float(s) for s in samples_s))


@dataclass(kw_only=True)
class MeasureResult:
    """A sweep, complete or not; `to_dict` is the JSON written by ``--out``."""

    op: str
    backend: str
    dtype: str
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
        return [f"rank {rank}: {w} wrong element{'s' * (w != 1)} at {_size_text(r.size_bytes)}"
                for r in self.results for rank, w in enumerate(r.wrong_by_rank or ()) if w]

    def to_dict(self) -> dict[str, Any]:
        return {"tool": "shardbudget", "version": _version("shardbudget"), "env": self.env,
                "op": self.op, "world_size": self.world_size, "n_nodes": self.n_nodes,
                "backend": self.backend, "dtype": self.dtype, "iters": self.iters,
                "warmup": self.warmup, "check": self.check, "notes": list(self.notes),
                "results": [r.to_dict() for r in self.results],
                "complete": self.complete, "error": self.error}


class MeasureRunError(MeasureError):
    """A run that started but did not finish cleanly; `.result` holds what was measured."""

    exit_code = 1

    def __init__(self, message: str, result: MeasureResult):
        super().__init__(message)
        self.result = result


def _size_text(size_bytes: int) -> str:
    text = format_bytes(size_bytes)
    return text if text == f"{size_bytes} B" else f"{text} ({size_bytes} B)"


def _version(dist_name: str) -> str:
    try:
        return metadata.version(dist_name)
    except metadata.PackageNotFoundError:
        return "unknown"


def write_json_atomic(path: str | os.PathLike, payload: dict[str, Any]) -> None:
    """Write to a temp file in the same directory, then rename over `path` (never half a file)."""
    from ..atomic import write_atomic
    write_atomic(path, json.dumps(payload, indent=1) + "\n")


# --- the nccl-tests style table ---------------------------------------------------------------

_COLUMNS = ("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9}  {:>7}  {:>7}  {:>6}")


def format_table_header() -> str:
    names = _COLUMNS.format("size", "count", "type", "redop", "root", "time", "algbw", "busbw",
                            "#wrong")
    units = _COLUMNS.format("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "")
    return "#" + names[1:] + "\n#" + units[1:].rstrip()


def format_table_row(row: SizeResult, *, op: str, dtype: str) -> str:
    """One line in nccl-tests' column layout; GB/s are 1e9 bytes/s as there."""
    time_us = row.median_s * 1e6
    return _COLUMNS.format(
        row.size_bytes, row.count, DTYPES[dtype].nccl_name, redop_name(op), -1,
        f"{time_us:.2f}" if time_us < 1e5 else f"{time_us:.0f}",
        f"{row.algbw_bytes_per_s / 1e9:.2f}", f"{row.busbw_bytes_per_s / 1e9:.2f}",
        "N/A" if row.wrong is None else row.wrong)


def format_table(result: MeasureResult) -> str:
    rows = [format_table_row(r, op=result.op, dtype=result.dtype) for r in result.results]
    return "\n".join([format_table_header(), *rows])


# --- validation before any work ---------------------------------------------------------------

_HOST_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"(?=.{{1,253}}\.?$){_HOST_LABEL}(?:\.{_HOST_LABEL})*\.?")


def check_host(addr: str, source: str = "master address") -> str:
    """Accept an IP address or an RFC 1123 hostname; anything else never reaches a socket."""
    try:
        return str(ipaddress.ip_address(addr))
    except ValueError:
        pass
    if not _HOSTNAME.fullmatch(addr):
        raise MeasureError(f"{source} {addr!r} is not a hostname or an IP address")
    return addr


def _is_loopback(addr: str) -> bool:
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return addr == "localhost"


def free_port(addr: str) -> int:
    """Ask the kernel for a free TCP port on `addr` (the rendezvous store will bind it)."""
    with socket.socket(_family(addr), socket.SOCK_STREAM) as sock:
        sock.bind((addr, 0))
        return sock.getsockname()[1]


def check_port_free(addr: str, port: int) -> None:
    if not 0 < port < 65536:
        raise MeasureError(f"port {port} is not a TCP port (1..65535)")
    with socket.socket(_family(addr), socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR as the rendezvous store sets it: only a listening socket makes bind fail,
        # not connections lingering in TIME_WAIT.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((addr, port))
        except OSError as exc:
            raise MeasureError(f"port {port} on {addr} is already in use ({exc.strerror}); pick "
                               "another or leave the port out to use a free one") from None


def _family(addr: str) -> int:
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def _check_out_path(out: str | None, force: bool) -> None:
    if out is None:
        return
    path = Path(out)
    if path.is_dir():
        raise MeasureError(f"output {out!r} is a directory; give a file name like results.json")
    if path.exists() and not force:
        raise MeasureError(f"output {out!r} exists; pass force=True (--force) to overwrite it")
    if not path.parent.is_dir():
        raise MeasureError(f"the directory of output {out!r} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise MeasureError(f"cannot write to the directory of output {out!r}")


def _check_args(backend: str, op: str, dtype: str, iters: int, warmup: int, check: bool,
                timeout_s: float, sizes_bytes: list[float], world_size: int) -> None:
    def one_of(what: str, value: str, known: tuple[str, ...] | list[str]) -> None:
        if value not in known:
            raise MeasureError(f"{what} {value!r} is not one of {', '.join(known)}{did_you_mean(value, known)}")

    one_of("backend", backend, BACKENDS)
    one_of("op", op, OPS)
    one_of("dtype", dtype, list(DTYPES))
    if world_size < 2:
        raise MeasureError(f"a collective needs at least 2 ranks, got {world_size}")
    if iters < 1 or warmup < 0:
        raise MeasureError(f"iters ({iters}) must be at least 1 and warmup ({warmup}) at least 0")
    if not timeout_s > 0:
        raise MeasureError(f"timeout ({timeout_s} s) must be greater than zero")
    if not sizes_bytes or any(not (s > 0 and math.isfinite(s)) for s in sizes_bytes):
        raise MeasureError(f"sizes must be a non-empty list of positive byte counts, "
                           f"got {sizes_bytes}")
    if check and check_max_value(op, world_size) > DTYPES[dtype].max_exact:
        raise MeasureError(f"{dtype} cannot hold the check values of {op} on {world_size} ranks "
                           f"(up to {check_max_value(op, world_size)}); use a wider dtype")


def _torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


def _check_cuda(backend: str, gpus_needed: int) -> None:
    if backend != "nccl":
        return
    import torch  # only NCCL needs the parent to look at devices

    found = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if found < gpus_needed:
        raise MeasureError(f"backend 'nccl' needs {gpus_needed} CUDA GPU(s) on this node, torch "
                           f"{torch.__version__} sees {found}; use --backend gloo on CPUs")


# --- faults (test hook) -----------------------------------------------------------------------

@dataclass(frozen=True)
class Fault:
    kind: str
    rank: int
    size_bytes: int | None  # None: every size

    def hits(self, kind: str, rank: int, size_bytes: int) -> bool:
        return (self.kind == kind and self.rank == rank
                and self.size_bytes in (None, size_bytes))


def parse_faults(text: str | None) -> list[Fault]:
    """'crash@1:1KiB,wrong-reduction@0' -> [Fault('crash', 1, 1024), Fault(...)]."""
    faults = []
    for item in filter(None, (p.strip() for p in (text or "").split(","))):
        match = re.fullmatch(r"([a-z-]+)@(\d+)(?::(.+))?", item)
        if not match or match[1] not in FAULT_KINDS:
            raise MeasureError(f"{FAULT_ENV} item {item!r} must look like KIND@RANK[:SIZE] with "
                               f"KIND one of {', '.join(FAULT_KINDS)}")
        size = int(parse_bytes(match[3], what=f"{FAULT_ENV} size")) if match[3] else None
        faults.append(Fault(match[1], int(match[2]), size))
    return faults


# --- launchers --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Launch:
    """Where this process sits when an external launcher started it."""

    name: str  # "torchrun" or "slurm"
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    master_addr: str
    master_port: int


def detect_launcher(environ: dict[str, str] | None = None) -> Launch | None:
    env = dict(os.environ if environ is None else environ)
    try:
        if all(k in env for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")):
            world = int(env["WORLD_SIZE"])
            return Launch("torchrun", int(env["RANK"]), world, int(env.get("LOCAL_RANK", 0)),
                          int(env.get("LOCAL_WORLD_SIZE", world)),
                          check_host(env["MASTER_ADDR"], "MASTER_ADDR"), int(env["MASTER_PORT"]))
        # SLURM_STEP_NUM_TASKS is set by srun only: a shell inside salloc is not a rank.
        if "SLURM_PROCID" in env and "SLURM_STEP_NUM_TASKS" in env:
            world = int(env["SLURM_STEP_NUM_TASKS"])
            return Launch("slurm", int(env["SLURM_PROCID"]), world,
                          int(env.get("SLURM_LOCALID", 0)),
                          int(env.get("SLURM_STEP_TASKS_PER_NODE", "1").split("(")[0]),
                          _slurm_master_addr(env), _slurm_master_port(env))
    except ValueError as exc:
        raise MeasureError(f"launcher environment is malformed: {exc}") from None
    return None


def is_reporting_rank() -> bool:
    """True locally and on rank 0 of a launcher: the one process that prints and saves."""
    try:
        launch = detect_launcher()
    except MeasureError:
        return True
    return launch is None or launch.rank == 0


def _slurm_master_addr(env: dict[str, str]) -> str:
    if "MASTER_ADDR" in env:
        return check_host(env["MASTER_ADDR"], "MASTER_ADDR")
    nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST", "")
    if nodelist and not re.search(r"[\[,]", nodelist):
        return check_host(nodelist, "SLURM node")
    try:  # 'gpu[01-04]' -> 'gpu01'; scontrol is the one tool that expands Slurm's host lists
        out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                             text=True, timeout=10, check=True).stdout.split()
        return check_host(out[0], "SLURM node")
    except (OSError, subprocess.SubprocessError, IndexError):
        raise MeasureError(f"cannot find the first node of {nodelist!r}; set MASTER_ADDR") from None


def _slurm_master_port(env: dict[str, str]) -> int:
    if "MASTER_PORT" in env:
        return int(env["MASTER_PORT"])
    # Every rank must agree without talking: derive the port from the job id.
    return 20000 + int(env.get("SLURM_JOB_ID", "0")) % 20000


# --- the configuration one rank runs with -----------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class RankConfig:
    """Everything a worker needs; crosses the process boundary as JSON."""

    backend: str
    op: str
    dtype: str
    sizes_bytes: list[int]
    iters: int
    warmup: int
    check: bool
    rank: int
    world_size: int
    local_rank: int
    init_method: str  # "tcp://host:port", or "env://" under torchrun (its agent owns the store)
    pg_timeout_s: float
    report_all_ranks: bool  # in-process launcher mode: every rank keeps the results
    faults: str

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RankConfig:
        return cls(**json.loads(text))


def _tcp_init(addr: str, port: int) -> str:
    return f"tcp://[{addr}]:{port}" if ":" in addr else f"tcp://{addr}:{port}"


# --- bookkeeping shared by both modes ---------------------------------------------------------

class _Recorder:
    """Collects completed sizes, saves them after each one, drives progress and the callback."""

    def __init__(self, result: MeasureResult, plan: list[PlannedSize],
                 on_size: Callable[[SizeResult], None] | None, progress: bool):
        self.result, self.plan, self.on_size = result, plan, on_size
        self._bar = _Progress(len(plan), result.op) if progress else None
        try:
            self.save()  # claims the output name early: an unwritable file fails before any work
        except OSError as exc:
            self.close()
            raise MeasureError(f"cannot write output {result.out_path!r}: {exc.strerror}") from None

    def started(self, index: int) -> None:
        if self._bar:
            self._bar.update(index, self.plan[index].size_bytes)

    def hosts(self, hosts: list[str]) -> None:
        unique = list(dict.fromkeys(hosts))
        self.result.n_nodes = len(unique)
        self.result.env.update(hosts=unique, n_nodes=len(unique))

    def completed(self, index: int, samples_s: list[float],
                  wrong_by_rank: list[int] | None) -> None:
        row = summarize(self.plan[index], samples_s, self.result.op, self.result.world_size,
                        wrong_by_rank)
        self.result.results.append(row)
        self.save()
        if self._bar:
            self._bar.update(index + 1, None)
        if self.on_size:
            self.on_size(row)

    def close(self) -> None:
        if self._bar:
            self._bar.close()
            self._bar = None

    def finish(self, error: str | None) -> MeasureResult:
        self.close()
        self.result.complete = len(self.result.results) == len(self.plan)
        self.result.error = error
        self.save()
        return self.result

    def save(self) -> None:
        if self.result.out_path:
            write_json_atomic(self.result.out_path, self.result.to_dict())

    def kept(self) -> str:
        done = f"{len(self.result.results)} of {len(self.plan)} sizes completed"
        return done + (f" and kept in {self.result.out_path}" if self.result.out_path else "")


class _Progress:
    """A rich progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, op: str):
        self._bar = None
        if not sys.stderr.isatty():
            return
        from rich.console import Console
        from rich.progress import Progress

        # Redirect stdout through the bar only when it shares the terminal; a redirected stdout
        # (a table piped to a file) must stay untouched.
        self._bar = Progress(console=Console(stderr=True), transient=True,
                             redirect_stdout=sys.stdout.isatty(), redirect_stderr=False)
        self._task = self._bar.add_task(op, total=total)
        self._op = op
        self._bar.start()

    def update(self, done: int, size_bytes: int | None) -> None:
        if self._bar:
            text = f"{self._op} {format_bytes(size_bytes)}" if size_bytes else self._op
            self._bar.update(self._task, completed=done, description=text)

    def close(self) -> None:
        if self._bar:
            self._bar.stop()


# --- local mode: spawn and supervise one process per rank -------------------------------------

@dataclass
class _RankState:
    ready: bool = False
    index: int = -1  # last size index this rank started
    done: bool = False
    error: str | None = None
    error_t: float | None = None
    exit_code: int | None = None
    exit_t: float | None = None


class _Failure(Exception):
    pass


class _LocalRanks:
    """One worker process per rank; their protocol lines arrive on one queue as events."""

    def __init__(self) -> None:
        self.events: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self.stderr: list[Any] = []
        self.procs: list[subprocess.Popen[bytes]] = []
        self.threads: list[threading.Thread] = []

    def start(self, configs: list[RankConfig], env: dict[str, str]) -> None:
        for cfg in configs:
            err = tempfile.TemporaryFile()
            self.stderr.append(err)
            proc = subprocess.Popen(
                [sys.executable, "-m", "shardbudget.measure.worker", cfg.to_json()],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=env,
                start_new_session=True)  # Ctrl-C reaches the parent only; it stops the ranks
            self.procs.append(proc)
            thread = threading.Thread(target=self._read, args=(cfg.rank, proc), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _read(self, rank: int, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace")
            if line.startswith(EVENT_PREFIX):
                event = json.loads(line[len(EVENT_PREFIX):])
                self.events.put((time.monotonic(), {**event, "rank": rank}))
        code = proc.wait()
        self.events.put((time.monotonic(), {"ev": "exit", "rank": rank, "code": code}))

    def next_event(self, wait_s: float) -> tuple[float, dict[str, Any]] | None:
        try:
            return self.events.get(timeout=wait_s)
        except queue.Empty:
            return None

    def stderr_tail(self, rank: int) -> str:
        err = self.stderr[rank]
        err.seek(0)
        lines = [ln for ln in err.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1].strip() if lines else ""

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs:
            proc.wait()
        for thread in self.threads:
            thread.join(timeout=5)
        for err in self.stderr:
            err.close()


class _Supervisor:
    """Turns worker events into bookkeeping and decides when a run has failed or hung."""

    GRACE_S = 0.5  # after a first failure, let the others arrive so the first cause is named

    def __init__(self, ranks: _LocalRanks, recorder: _Recorder, world_size: int, timeout_s: float):
        self.ranks, self.recorder, self.timeout_s = ranks, recorder, timeout_s
        self.state = [_RankState() for _ in range(world_size)]

    def run(self) -> None:
        last_progress_t = time.monotonic()
        while not all(s.done and s.exit_code == 0 for s in self.state):
            got = self.ranks.next_event(0.1)
            if got:
                last_progress_t = got[0]
                self._handle(*got)
            if self._failed():
                self._drain(self.GRACE_S)
                raise _Failure(self._death_message())
            limit_s = self.timeout_s + (0 if self._all_ready() else STARTUP_ALLOWANCE_S)
            if time.monotonic() - last_progress_t > limit_s:
                raise _Failure(self._hang_message(limit_s))

    def _handle(self, t: float, ev: dict[str, Any]) -> None:
        st = self.state[ev["rank"]]
        kind = ev["ev"]
        if kind == "ready":
            st.ready = True
            if ev["rank"] == 0:
                self.recorder.hosts(ev["hosts"])
        elif kind == "start":
            st.index = ev["index"]
            if ev["rank"] == 0:
                self.recorder.started(ev["index"])
        elif kind == "result":
            self.recorder.completed(ev["index"], ev["samples_s"], ev["wrong_by_rank"])
        elif kind == "done":
            st.done = True
        elif kind == "error":
            st.error, st.error_t = ev["message"], t
        elif kind == "exit":
            st.exit_code, st.exit_t = ev["code"], t

    def _failed(self) -> bool:
        return any(s.error or (s.exit_code is not None and (s.exit_code != 0 or not s.done))
                   for s in self.state)

    def _drain(self, wait_s: float) -> None:
        end = time.monotonic() + wait_s
        while (left := end - time.monotonic()) > 0:
            got = self.ranks.next_event(left)
            if got:
                self._handle(*got)

    def _all_ready(self) -> bool:
        return all(s.ready for s in self.state)

    def _where(self, rank: int) -> str:
        st = self.state[rank]
        if not st.ready:
            return "during start-up"
        if st.index < 0:
            return "before the first size"
        return f"at size {_size_text(self.recorder.plan[st.index].size_bytes)}"

    def _death_message(self) -> str:
        # A rank that died without explaining itself (a signal, a bare exit) is the likelier first
        # cause: its peers then fail with "connection closed" errors of their own.
        def order(rank: int) -> tuple[int, float]:
            st = self.state[rank]
            silent = st.error is None
            return (0 if silent else 1, (st.exit_t if silent else st.error_t) or math.inf)

        failed = [r for r, s in enumerate(self.state)
                  if s.error or (s.exit_code is not None and (s.exit_code != 0 or not s.done))]
        rank = min(failed, key=order)
        st = self.state[rank]
        if st.error:
            return f"rank {rank} failed {self._where(rank)}: {st.error}"
        how = _exit_text(st.exit_code)
        tail = self.ranks.stderr_tail(rank)
        return f"rank {rank} {how} {self._where(rank)}" + (f" ({tail})" if tail else "")

    def _hang_message(self, limit_s: float) -> str:
        stuck = [r for r, s in enumerate(self.state) if not s.ready]
        if stuck:
            return (f"rank{'s' * (len(stuck) > 1)} {_ranks_text(stuck)} did not start within "
                    f"{limit_s:g} s (importing torch or the rendezvous hung)")
        lowest = min(s.index for s in self.state)
        behind = [r for r, s in enumerate(self.state) if s.index == lowest]
        if len(behind) < len(self.state):
            waiting = self.recorder.plan[max(s.index for s in self.state)].size_bytes
            return (f"rank{'s' * (len(behind) > 1)} {_ranks_text(behind)} hung: no progress for "
                    f"{limit_s:g} s, while the other ranks wait at size {_size_text(waiting)}")
        return (f"all ranks stalled {self._where(0)}: no progress for {limit_s:g} s "
                "(a collective never completed)")


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _ranks_text(ranks: list[int]) -> str:
    return ", ".join(str(r) for r in ranks)


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"died (killed by {signal.Signals(-code).name})"
        except ValueError:
            return f"died (signal {-code})"
    if code == 0:
        return "exited early without reporting"
    return f"died (exit code {code})"


def _worker_env(master_addr: str, world_size: int) -> dict[str, str]:
    env = dict(os.environ)
    src_dir = str(Path(__file__).resolve().parents[2])  # the workers import this very package
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src_dir, env.get("PYTHONPATH")]))
    env.setdefault("OMP_NUM_THREADS", "1")  # as torchrun does: P ranks must not oversubscribe
    if _is_loopback(master_addr) and "GLOO_SOCKET_IFNAME" not in env:
        loopback = [name for _, name in socket.if_nameindex() if name.startswith("lo")]
        if loopback:  # gloo binds the hostname's address by default, which may not be local
            env["GLOO_SOCKET_IFNAME"] = loopback[0]
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)  # the ranks get their place from RankConfig, not a stale launcher
    return env


def _run_local(base: dict[str, Any], world_size: int, master_addr: str, master_port: int,
               timeout_s: float, recorder: _Recorder) -> None:
    configs = [RankConfig(**base, rank=r, world_size=world_size, local_rank=r,
                          init_method=_tcp_init(master_addr, master_port),
                          # the parent is the watchdog; the ranks' own timeout is a backstop
                          pg_timeout_s=timeout_s + STARTUP_ALLOWANCE_S,
                          report_all_ranks=False) for r in range(world_size)]
    ranks = _LocalRanks()
    try:
        ranks.start(configs, _worker_env(master_addr, world_size))
        _Supervisor(ranks, recorder, world_size, timeout_s).run()
    finally:
        ranks.stop()


# --- launcher mode: this process is one rank --------------------------------------------------

def _run_launched(base: dict[str, Any], launch: Launch, timeout_s: float,
                  recorder: _Recorder) -> None:
    from . import worker  # imports torch

    init = "env://" if launch.name == "torchrun" else _tcp_init(launch.master_addr,
                                                               launch.master_port)
    cfg = RankConfig(**base, rank=launch.rank, world_size=launch.world_size,
                     local_rank=launch.local_rank, init_method=init, pg_timeout_s=timeout_s,
                     report_all_ranks=True)
    where = {"index": -1}

    def emit(ev: dict[str, Any]) -> None:
        if ev["ev"] == "ready":
            recorder.hosts(ev["hosts"])
        elif ev["ev"] == "start":
            where["index"] = ev["index"]
            recorder.started(ev["index"])
        elif ev["ev"] == "result":
            recorder.completed(ev["index"], ev["samples_s"], ev["wrong_by_rank"])

    try:
        worker.run_rank(cfg, emit)
    except Exception as exc:
        at = (f"at size {_size_text(cfg.sizes_bytes[where['index']])}" if where["index"] >= 0
              else "before the first size")
        # Under a launcher a rank sees only its own error; the launcher's log names a dead peer.
        raise _Failure(f"rank {launch.rank} stopped {at}: {_first_line(exc)} (if a peer died or "
                       f"hung, {launch.name}'s log names it)") from exc


# --- the public entry point -------------------------------------------------------------------

def run_measure(*, backend: str = "gloo", nproc: int | None = None, op: str = "all-reduce",
                sizes_bytes: list[float], dtype: str = "float32", iters: int = 20,
                warmup: int = 5, check: bool = False, out: str | None = None,
                force: bool = False, timeout_s: float = 120.0, master_addr: str = "127.0.0.1",
                master_port: int | None = None, progress: bool = True,
                on_size: Callable[[SizeResult], None] | None = None) -> MeasureResult:
    """Time one collective over a sweep of sizes on `nproc` ranks; see the module docstring.

    `nproc` defaults to 2 locally and to the launcher's world size under torchrun / srun (giving a
    different number there is an error). `on_size` is called with each completed row on the
    reporting rank (rank 0), e.g. to print the table as it grows. Raises `MeasureError` before any
    work for bad input, and `MeasureRunError` (with `.result`, partial or failing the check) when
    a run fails; Ctrl-C saves what was measured and re-raises KeyboardInterrupt.
    """
    launch = detect_launcher()
    world_size = _world_size(nproc, launch)
    _check_args(backend, op, dtype, iters, warmup, check, timeout_s, sizes_bytes, world_size)
    faults = os.environ.get(FAULT_ENV, "")
    parse_faults(faults)  # a typo'd hook must fail loudly, not measure a healthy run
    if not _torch_installed():
        raise MeasureError(TORCH_MISSING)
    reporting = launch is None or launch.rank == 0
    if reporting:
        _check_out_path(out, force)
    if launch is None:
        master_addr = check_host(master_addr)
        if master_port is None:
            master_port = free_port(master_addr)
        else:
            check_port_free(master_addr, master_port)
    _check_cuda(backend, world_size if launch is None else launch.local_rank + 1)

    plan, notes = plan_sizes(sizes_bytes, op, dtype, world_size)
    result = MeasureResult(op=op, backend=backend, dtype=dtype, world_size=world_size,
                           n_nodes=1, iters=iters, warmup=warmup, check=check, notes=notes,
                           out_path=out if reporting else None,
                           env=_environment(backend, world_size, launch))
    # Every rank keeps the rows (they are all-reduced); only the reporting one prints and saves.
    recorder = _Recorder(result, plan, on_size if reporting else None, progress and reporting)
    base = dict(backend=backend, op=op, dtype=dtype, sizes_bytes=[p.size_bytes for p in plan],
                iters=iters, warmup=warmup, check=check, faults=faults)
    return _execute(base, world_size, launch, master_addr, master_port, timeout_s, recorder)


def _execute(base: dict[str, Any], world_size: int, launch: Launch | None, master_addr: str,
             master_port: int | None, timeout_s: float, recorder: _Recorder) -> MeasureResult:
    try:
        if launch is None:
            assert master_port is not None
            _run_local(base, world_size, master_addr, master_port, timeout_s, recorder)
        else:
            _run_launched(base, launch, timeout_s, recorder)
    except _Failure as exc:
        message = f"{exc}; {recorder.kept()}"
        raise MeasureRunError(message, recorder.finish(message)) from None
    except KeyboardInterrupt:
        recorder.finish("interrupted (Ctrl-C)")
        raise
    finally:
        recorder.close()  # whatever escaped, the terminal gets its cursor back
    wrong = recorder.result.failed_checks
    if wrong:
        message = "check failed: " + "; ".join(wrong)
        raise MeasureRunError(message, recorder.finish(message))
    return recorder.finish(None)


def _command_line() -> str:
    if not sys.argv or not sys.argv[0]:
        return ""
    program = Path(sys.argv[0])
    head = program.name
    if head == "__main__.py":  # `python -m shardbudget.measure` leaves .../measure/__main__.py here
        head = f"python -m {program.parent.parent.name}.{program.parent.name}"
    return " ".join([head, shlex.join(sys.argv[1:])]).strip()


def _world_size(nproc: int | None, launch: Launch | None) -> int:
    if launch is None:
        return 2 if nproc is None else int(nproc)
    if nproc is not None and nproc != launch.world_size:
        raise MeasureError(f"{launch.name} provides a world size of {launch.world_size}, but "
                           f"{nproc} ranks were requested; drop --nproc or relaunch with {nproc}")
    return launch.world_size


def _environment(backend: str, world_size: int, launch: Launch | None) -> dict[str, Any]:
    return {"torch": _version("torch"), "backend": backend, "hosts": [socket.gethostname()],
            "world_size": world_size, "n_nodes": 1,
            "launcher": launch.name if launch else "local",
            "command": _command_line(),
            "time_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "python": platform.python_version()}
