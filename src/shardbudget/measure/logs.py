"""Read the collective benchmarks people already have into measurement records.

Formats are told apart by content, never by file extension:

* **nccl-tests / rccl-tests text output** (``all_reduce_perf``, ``all_gather_perf``, ...), as it is
  found in the wild: ``NCCL INFO``/``WARN`` lines and shell noise anywhere, shell prompts and
  ``\\``-continued command lines, several runs pasted into one file, a run cut short, the old layouts
  (no ``root`` column, a float ``error`` column instead of ``#wrong``), rccl-tests' in-place-only
  tables (``-O 0``) and nccl-tests' blank out-of-place columns (trace replay).
  The ``@key: value`` lines of the hand transcriptions in ``shared/data/raw`` are read as annotations
  (``@collective``, ``@n_gpus``, ``@n_nodes``, ``@algo_or_note``, ``@section``, ...); an annotation
  after data rows starts a new table.
* **shardbudget's own JSON**, written by the harness (``"tool": "shardbudget"``).

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
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MeasureError
from ..units import format_bytes

OPS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "reduce", "send/recv")
TOOLS = ("nccl-tests", "rccl-tests", "shardbudget")

# Spellings met in binaries, annotations and JSON, keyed by the letters alone ("all_reduce",
# "AllReduce", "all-reduce" -> "allreduce").
_OP_KEYS = {"allreduce": "all-reduce", "allgather": "all-gather", "reducescatter": "reduce-scatter",
            "alltoall": "all-to-all", "broadcast": "broadcast", "reduce": "reduce",
            "sendrecv": "send/recv", "p2p": "send/recv"}

# Relative disagreement between a file's algbw/busbw and ours above which we warn; the file's
# values are rounded to 0.01 GB/s, so only values of at least _BW_CHECK_MIN_GBPS are compared.
_BW_TOLERANCE = 0.02
_BW_CHECK_MIN_GBPS = 0.5
_MAX_FILE_BYTES = 256 * 2**20  # a log of 256 MiB is not a log

_EXAMPLE_ROW = "'  8  2  float  sum  -1  10.2  0.00  0.00  0'"


# --- ops and the busbw factor ----------------------------------------------------------------

def normalize_op(name: str) -> str:
    """'all_reduce', 'AllReduce', 'all_reduce_perf' -> 'all-reduce'; anything else is a MeasureError."""
    op = _op_or_none(name)
    if op is None:
        close = difflib.get_close_matches(str(name), OPS, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise MeasureError(f"unknown collective {name!r}{hint} (expected one of {', '.join(OPS)})")
    return op


def _op_or_none(name: object) -> str | None:
    if not isinstance(name, str):
        return None
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    key = re.sub(r"perf(mpi)?$", "", key)
    return _OP_KEYS.get(key)


def busbw_factor(op: str, n_ranks: int) -> float:
    """busbw / algbw for `op` on `n_ranks` ranks, as nccl-tests ``doc/PERFORMANCE.md`` defines it.

    The factor is the share of the message each rank's link must carry in an optimal algorithm, so
    that busbw can be held against a link's peak whatever the rank count:

    * all-reduce ``2(n-1)/n``: a reduce-scatter then an all-gather, each moving (n-1)/n of the data;
    * all-gather, reduce-scatter, all-to-all ``(n-1)/n``: each rank receives (or sends) the n-1
      pieces it does not own;
    * broadcast, reduce, send/recv ``1``: every byte crosses each link once.

    With one rank nccl-tests prints busbw 0 for all-reduce and the (n-1)/n ops; we do the same.
    """
    op = normalize_op(op)
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or n_ranks < 1:
        raise MeasureError(f"n_ranks {n_ranks!r} must be a whole number of ranks, 1 or more")
    from ..collectives import busbw_factor as factor  # the one definition; "reduce" counts as broadcast
    return factor(op, n_ranks)


# --- records ---------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Sample:
    """One timed collective at one message size, in SI units."""

    op: str
    """One of `OPS`."""
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


# --- entry points ----------------------------------------------------------------------------

def read_log(path: str | os.PathLike, *, default_op: str = "all-reduce",
             n_ranks: int | None = None) -> MeasurementSet:
    """Read one nccl-tests / rccl-tests log or shardbudget JSON file.

    `default_op` is used (with a warning) for tables whose log never names the collective;
    `n_ranks` overrides the world size for every table (for logs that do not show it).
    """
    source = str(path) if isinstance(path, (str, os.PathLike)) else repr(path)
    text = _read_text(path, source)
    return parse_log_text(text, source=source, default_op=default_op, n_ranks=n_ranks)


def read_logs(paths: Iterable[str | os.PathLike], *, default_op: str = "all-reduce",
              n_ranks: int | None = None) -> list[MeasurementSet]:
    """`read_log` on each path, in order."""
    return [read_log(p, default_op=default_op, n_ranks=n_ranks) for p in paths]


def parse_log_text(text: str | bytes, *, source: str = "<text>", default_op: str = "all-reduce",
                   n_ranks: int | None = None) -> MeasurementSet:
    """Like `read_log`, for text already in memory; `source` names it in messages."""
    default_op = normalize_op(default_op)
    if n_ranks is not None:
        busbw_factor(default_op, n_ranks)  # validates n_ranks with the same message
    if isinstance(text, (bytes, bytearray)):
        text = _decode(bytes(text), source)
    if not isinstance(text, str):
        raise MeasureError(f"{source}: expected text, got {type(text).__name__}")
    text = _ANSI.sub("", text.lstrip("\ufeff"))
    if not text.strip():
        raise MeasureError(f"{source}: the file is empty (expected nccl-tests output or shardbudget JSON)")
    head = text.lstrip()[:1]
    # '[' may also start mpirun --tag-output lines ("[1,0]<stdout>: ..."), which are text.
    if head == "{" or (head == "[" and not _LINE_PREFIX.match(text.lstrip())):
        return _parse_json(text, source, default_op, n_ranks)
    return _parse_text(text, _Options(source, default_op, n_ranks))


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
    parts.append(f"{format_bytes(sizes[0])}..{format_bytes(sizes[-1])}" if len(sizes) > 1
                 else format_bytes(sizes[0]))
    parts.append(f"{len(sizes)} size{'s' if len(sizes) != 1 else ''}")
    if any(x.graph for x in s):
        parts.append("CUDA graphs")
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


def _read_text(path: object, source: str) -> str:
    try:
        p = Path(path)  # type: ignore[arg-type]
        if p.is_dir():
            raise MeasureError(f"{source}: is a directory, expected a log file")
        if p.stat().st_size > _MAX_FILE_BYTES:
            raise MeasureError(f"{source}: larger than {format_bytes(_MAX_FILE_BYTES)}; "
                               "expected a benchmark log")
        data = p.read_bytes()
    except FileNotFoundError:
        raise MeasureError(f"{source}: no such file (expected an nccl-tests log or shardbudget JSON)") from None
    except (OSError, TypeError, ValueError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise MeasureError(f"{source}: cannot be read ({reason})") from None
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
        raise MeasureError(f"{source}: looks like a binary file, expected nccl-tests text output "
                           "or shardbudget JSON")
    return text


# --- shardbudget JSON ------------------------------------------------------------------------

def _parse_json(text: str, source: str, default_op: str, n_ranks: int | None) -> MeasurementSet:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        where = f" at line {e.lineno}" if isinstance(e, json.JSONDecodeError) else ""
        raise MeasureError(f"{source}: starts like JSON but is not valid JSON{where}") from None
    if not (isinstance(data, dict) and data.get("tool") == "shardbudget"
            and isinstance(data.get("results"), list)):
        hint = (" (this looks like nccl-tests' own -J JSON; give its text output instead)"
                if isinstance(data, dict) and "config" in data else "")
        raise MeasureError(f"{source}: JSON of another shape; expected shardbudget's "
                           f"{{\"tool\": \"shardbudget\", \"results\": [...]}}{hint}")
    warnings: list[str] = []
    op = _json_op(data, source, default_op, warnings)
    ranks = n_ranks or _positive_int(data.get("world_size", data.get("n_ranks")))
    if ranks is None:
        raise MeasureError(f"{source}: no usable \"world_size\" (expected a whole number >= 1)")
    if data.get("complete") is False:
        why = data.get("error") if isinstance(data.get("error"), str) else "no reason given"
        warnings.append(f"{source}: the run did not complete ({why}); read the sizes it finished")
    samples = [s for i, r in enumerate(data["results"])
               if (s := _json_sample(data, r, i, op, ranks, source, warnings)) is not None]
    if not samples:
        raise MeasureError(f"{source}: no usable results (expected items like "
                           "{\"bytes\": 8, \"time_s\": 1.2e-05})")
    samples.sort(key=lambda x: x.msg_bytes)
    return MeasurementSet(samples=tuple(samples), source=source, tool="shardbudget",
                          env=_json_env(data), warnings=tuple(warnings))


def _json_op(data: dict, source: str, default_op: str, warnings: list[str]) -> str:
    raw = data.get("op")
    if raw is None:
        warnings.append(f"{source}: no \"op\"; assumed {default_op}")
        return default_op
    op = _op_or_none(raw)
    if op is None:
        raise MeasureError(f"{source}: \"op\" {raw!r} is not a collective (expected one of {', '.join(OPS)})")
    return op


def _json_env(data: dict) -> dict:
    env = dict(data["env"]) if isinstance(data.get("env"), dict) else {}
    for key in ("version", "backend", "world_size", "n_nodes", "dtype"):
        if key in data and not isinstance(data[key], (dict, list)):
            env.setdefault("tool_version" if key == "version" else key, data[key])
    return env


def _json_sample(data: dict, r: object, i: int, op: str, ranks: int, source: str,
                 warnings: list[str]) -> Sample | None:
    where = f"{source}:results[{i}]"
    if not isinstance(r, dict):
        warnings.append(f"{where}: not an object; skipped")
        return None
    msg_bytes = _finite(r.get("bytes", r.get("msg_bytes", r.get("size"))))
    time_s = _finite(r.get("time_s", r.get("median_s")))
    if msg_bytes is None or msg_bytes < 0 or time_s is None or time_s <= 0 or \
            not math.isfinite(2 * msg_bytes / time_s):  # busbw is at most 2x bytes/time
        warnings.append(f"{where}: needs \"bytes\" >= 0 and \"time_s\" (or \"median_s\") > 0; skipped")
        return None
    if _positive_int(r.get("wrong")):
        warnings.append(f"{where}: {r['wrong']} wrong element(s) reported by the harness's check; skipped")
        return None
    algbw = msg_bytes / time_s
    busbw = algbw * busbw_factor(op, ranks)
    given = _finite(r.get("busbw_bytes_per_s"))
    if given and busbw and abs(given - busbw) > _BW_TOLERANCE * busbw:
        warnings.append(f"{where}: busbw_bytes_per_s {given:.4g} differs from bytes/time x factor "
                        f"{busbw:.4g} by more than 2%")
    redop = r.get("redop", data.get("redop"))
    return Sample(op=op, msg_bytes=float(msg_bytes), time_s=float(time_s), algbw_bytes_per_s=algbw,
                  busbw_bytes_per_s=busbw, n_ranks=ranks, n_nodes=_positive_int(data.get("n_nodes")),
                  in_place=bool(r.get("in_place", data.get("in_place", False))),
                  graph=bool(data.get("graph", False)), dtype=str(r.get("dtype", data.get("dtype", "?"))),
                  redop=redop if isinstance(redop, str) else None, source=where)


def _finite(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = _num(value.strip())
    if isinstance(value, (int, float)):
        try:
            f = float(value)
        except OverflowError:
            return None
        return f if math.isfinite(f) else None
    return None


def _positive_int(value: object) -> int | None:
    if isinstance(value, str) and _UINT.fullmatch(value.strip()):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value


# --- nccl-tests text: tokens -----------------------------------------------------------------

_UINT = re.compile(r"[0-9]{1,19}")  # 19 digits: more than any size column holds; keeps int() cheap
_SINT = re.compile(r"-?[0-9]{1,19}")
_FLOAT = re.compile(r"[-+]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][-+]?[0-9]{1,3})?")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,40}")
_WRONG = re.compile(r"(N/A|[-+]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][-+]?[0-9]{1,3})?)(\*?)")
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{2}:[0-9]{2}:[0-9]{2}")  # -T timestamps
# Prefixes launchers put before every line: `srun --label` "12: ", `mpirun --tag-output` "[1,0]<stdout>:".
_LINE_PREFIX = re.compile(r"^\s*(?:[0-9]{1,6}:\s|\[[0-9]{1,6},[0-9]{1,6}\]<std(?:out|err)>:)")
_TOKEN = re.compile(r"\S+")
# nccl-tests pads blank out-of-place columns with 32 spaces; a normal gap is at most 2 + 7.
_BLANK_COLUMNS_GAP = 20


def _num(token: str) -> float | None:
    if not _FLOAT.fullmatch(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


@dataclass
class _Row:
    """One data line of an nccl-tests table, as printed."""

    lineno: int
    size: int
    dtype: str
    redop: str | None
    has_root: bool
    halves: list[tuple[float, float, float, str]]  # (time_us, algbw_GBps, busbw_GBps, #wrong)
    cut: bool  # fewer or stranger fields than a whole row: the line was cut or mangled
    blank_first: bool  # the first columns are blank: only in-place results follow


def _parse_row(line: str, lineno: int, expect_root: bool | None) -> _Row | None:
    """A data row, or None if the line is not one (noise, headers, INFO lines)."""
    spans = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(line)]
    toks = [t for t, _, _ in spans]
    if len(toks) < 2 or not (_UINT.fullmatch(toks[0]) and _UINT.fullmatch(toks[1])):
        return None
    if len(toks) < 3:
        return _Row(lineno, int(toks[0]), "?", None, False, [], True, False)
    if not _WORD.fullmatch(toks[2]):
        return None
    i = 3
    redop = toks[i] if i < len(toks) and _WORD.fullmatch(toks[i]) else None
    i += redop is not None
    rest = toks[i:]
    while rest and _STAMP.fullmatch(rest[-1]):
        rest.pop()
    has_root = _has_root(rest, expect_root)
    body_at = i + has_root  # index (in toks) of the first time field
    body = rest[1:] if has_root else rest
    halves, cut = _read_halves(body)
    blank_first = (len(halves) == 1 and body_at < len(spans)
                   and spans[body_at][1] - spans[body_at - 1][2] >= _BLANK_COLUMNS_GAP)
    return _Row(lineno, int(toks[0]), toks[2], redop, has_root, halves, cut, blank_first)


def _has_root(rest: list[str], expect_root: bool | None) -> bool:
    if not rest or not _SINT.fullmatch(rest[0]):
        return False
    if len(rest) % 4 == 1:  # root + whole groups of (time, algbw, busbw, #wrong)
        return True
    if len(rest) % 4 == 0 and len(rest) <= 8:
        return False
    # A cut row: trust the table's layout, else nccl-tests' usual root of -1.
    return expect_root if expect_root is not None else rest[0] == "-1"


def _read_halves(body: list[str]) -> tuple[list[tuple[float, float, float, str]], bool]:
    halves = []
    for k in range(0, min(len(body) - len(body) % 4, 8), 4):
        t, a, b, w = body[k:k + 4]
        nums = (_num(t), _num(a), _num(b))
        if None in nums or not _WRONG.fullmatch(w):
            return halves, True
        halves.append((nums[0], nums[1], nums[2], w))  # type: ignore[arg-type]
    cut = not body or len(body) % 4 != 0 or len(body) > 8
    return halves, cut


# --- nccl-tests text: run context ------------------------------------------------------------

_BINARY = re.compile(r"(?:^|(?<=[\s/'\"=(]))([A-Za-z][A-Za-z_]*?)_perf(?:_mpi)?(?=$|[\s:;,'\")])")
_LAUNCHERS = {"mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun", "srun", "jsrun", "aprun",
              "flux", "torchrun"}
_MPI_FAMILY = {"mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun"}
_RANK_LINE = re.compile(r"#\s*Rank\s+([0-9]{1,7})\s+(?:Group\s+-?[0-9]+\s+)?Pid\s+[0-9]+\s+on\s+(\S+)"
                        r"\s+device\s+[0-9]+\s+\[[^\]]*\]\s*(.*)")
_VERSION = re.compile(r"\b([NR]CCL) version\s*:?\s*v?([0-9]+\.[0-9]+\.[0-9]+(?:\+[\w.]+)?)")
_ANNOTATED_VERSION = re.compile(r"\b([NR]CCL)\s+v?([0-9]+\.[0-9]+\.[0-9]+(?:\+[\w.]+)?)")
_TESTS_VERSION = re.compile(r"#\s*nccl-tests version\s+(\S+)(?:.*nccl-library=([0-9]{1,9}))?")


@dataclass(frozen=True)
class _Launch:
    """What one command line says about the world size."""

    ranks: int | None
    nodes: int | None
    graph: bool


@dataclass
class _Ctx:
    """What the lines before (and among) a table's rows say about its run."""

    binary: str | None = None
    command: str | None = None
    launch: _Launch | None = None
    header: dict = field(default_factory=dict)  # from '# nThread 1 nGpus 8 ... graph: 0'
    ranks: dict = field(default_factory=dict)  # rank -> (hostname, device name)
    rank_lines: int = 0
    nccl_version: str | None = None
    tests_version: str | None = None
    library_version: str | None = None  # decoded from nccl-tests' 'nccl-library=22703'
    graph_text: bool = False
    placements: tuple[str, ...] | None = None  # from the column header: ("out", "in"), ("in",), ...
    columns: dict = field(default_factory=dict)  # root / error-column / cputime flags of the header

    def is_empty(self) -> bool:
        return not (self.binary or self.launch or self.header or self.ranks)


@dataclass
class _Table:
    ctx: _Ctx
    annotations: dict
    rows: list[_Row] = field(default_factory=list)
    footer_busbw_GBps: float | None = None


def _library_version(code: str) -> str:
    """nccl-tests prints NCCL_VERSION_CODE: 22703 -> '2.27.3' (since 2.9), 2708 -> '2.7.8' before."""
    n = int(code)
    if n >= 10000:
        return f"{n // 10000}.{n % 10000 // 100}.{n % 100}"
    return f"{n // 1000}.{n % 1000 // 100}.{n % 100}"


def _parse_command(text: str) -> _Launch | None:
    """World size from 'mpirun -np 16 -npernode 8 ./all_reduce_perf -b 8 -e 8G -g 1'; None if no command."""
    m = _BINARY.search(text)
    if not m:
        return None
    before, after = text[:m.start()].split(), text[m.end():].split()
    test = _test_flags(after)
    launcher = next((t for t in before if os.path.basename(t) in _LAUNCHERS), None)
    if launcher is None and not test:
        return None  # a mention of the binary, not a command line
    graph = (_positive_int(test.get("G")) or 0) > 0
    per_process = (_positive_int(test.get("t")) or 1) * (_positive_int(test.get("g")) or 1)
    if launcher is None:
        return _Launch(ranks=per_process, nodes=1, graph=graph)
    procs, nodes = _launcher_counts(before[before.index(launcher):], os.path.basename(launcher))
    return _Launch(ranks=procs * per_process if procs else None, nodes=nodes, graph=graph)


def _test_flags(tokens: list[str]) -> dict[str, str]:
    """'-g 8 -f2 --cudagraph=1' -> {'g': '8', 'f': '2', 'G': '1'} (flags of the nccl-tests binary)."""
    longs = {"ngpus": "g", "nthreads": "t", "cudagraph": "G", "check": "c", "datatype": "d", "op": "o"}
    out: dict[str, str] = {}
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if m := re.fullmatch(r"--([a-z_]+)(?:=(\S*))?", tok):
            if m.group(1) in longs:
                out[longs[m.group(1)]] = m.group(2) if m.group(2) is not None else nxt
        elif m := re.fullmatch(r"-([A-Za-z])(\S*)", tok):
            out[m.group(1)] = m.group(2) or nxt
    return out


def _launcher_counts(tokens: list[str], launcher: str) -> tuple[int | None, int | None]:
    """(processes, nodes) from launcher flags; None where the command does not say."""
    procs = nodes = per_node = None
    hosts: set[str] = set()
    for i, tok in enumerate(tokens):
        name, eq, val = tok.partition("=")
        if not eq:
            m = re.fullmatch(r"(-[nN])([0-9]+)", tok)  # srun -N2 -n16
            name, val = (m.group(1), m.group(2)) if m else (tok, tokens[i + 1] if i + 1 < len(tokens) else "")
        if name in ("-np", "--np", "-n", "--ntasks"):
            procs = _positive_int(val) or procs
        elif name in ("-npernode", "--npernode", "-ppn", "--ntasks-per-node", "--nproc_per_node"):
            per_node = _positive_int(val) or per_node
        elif name == "-N":  # Open MPI: processes per node; srun: nodes
            if launcher in _MPI_FAMILY:
                per_node = _positive_int(val) or per_node
            else:
                nodes = _positive_int(val) or nodes
        elif name in ("--nnodes", "--nodes"):
            nodes = _positive_int(val) or nodes
        elif name == "--map-by" and (m := re.fullmatch(r"ppr:([0-9]+):node\S*", val)):
            per_node = _positive_int(m.group(1))
        elif name in ("-H", "--host", "-host"):
            hosts = {h.split(":")[0] for h in val.split(",") if h}
    if procs is None and nodes and per_node:
        procs = nodes * per_node
    if nodes is None and hosts:
        nodes = len(hosts)
    if nodes is None and procs and per_node and procs % per_node == 0:
        nodes = procs // per_node
    return procs, nodes


# --- nccl-tests text: scanning ---------------------------------------------------------------

@dataclass(frozen=True)
class _Options:
    source: str
    default_op: str
    n_ranks: int | None


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, line) with shell '\\' continuations joined and '> ' quote marks removed."""
    out: list[tuple[int, str]] = []
    start, parts = 0, []  # a command being continued over several lines
    for n, raw in enumerate(text.splitlines(), start=1):
        line = _LINE_PREFIX.sub("", raw)
        if line.lstrip().startswith(">"):  # markdown quote
            line = re.sub(r"^\s*(?:>\s?)+", "", line)
        if not parts:
            start = n
        if line.rstrip().endswith("\\") and not line.lstrip().startswith("#"):
            parts.append(line.rstrip()[:-1].strip())
            continue
        parts.append(line if len(parts) == 0 else line.strip())
        out.append((start, " ".join(parts)))
        parts = []
    if parts:
        out.append((start, " ".join(parts)))
    return out


class _Scanner:
    """Walks the lines once, cutting them into tables and the context each table ran in."""

    def __init__(self) -> None:
        self.tables: list[_Table] = []
        self.table: _Table | None = None
        self.ctx = _Ctx()
        self.annotations: dict[str, str] = {}
        self.rccl = False
        self.last_row_line = 0

    def feed(self, lineno: int, line: str) -> None:
        s = line.strip()
        if not s:
            return
        if s.startswith("@"):
            self._annotation(s)
            return
        expect_root = self.table.rows[-1].has_root if self.table and self.table.rows else \
            self.ctx.columns.get("root")
        row = _parse_row(line, lineno, expect_root)
        if row is not None:
            self._row(row)
        elif s.startswith("#"):
            self._comment(s)
        else:
            self._other(s)

    def finish(self) -> list[_Table]:
        self._close()
        return self.tables

    def _row(self, row: _Row) -> None:
        if self.table is None:
            self.table = _Table(ctx=self.ctx, annotations=dict(self.annotations))
        self.table.rows.append(row)
        self.last_row_line = row.lineno

    def _close(self) -> None:
        """End the open table (if any); what follows describes the next run."""
        if self.table is not None:
            self.tables.append(self.table)
            self.table = None
            self.ctx = _Ctx()

    def _annotation(self, s: str) -> None:
        self._close()
        key, _, value = s[1:].partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "source":
            self.annotations.pop("section", None)
        self.annotations[key] = value
        self.rccl |= "rccl" in value.lower()

    def _comment(self, s: str) -> None:
        self.rccl |= "rccl" in s.lower() or "AMD Instinct" in s
        if re.match(r"#\s*(Out of bounds values|Avg bus bandwidth)", s):
            self._footer(s)
        elif m := _RANK_LINE.match(s):
            self._new_run_line()
            self.ctx.ranks[int(m.group(1))] = (m.group(2), m.group(3).strip())
            self.ctx.rank_lines += 1
        elif re.match(r"#\s*nThread\b", s):
            self._new_run_line()
            self._header(s)
        elif m := _TESTS_VERSION.match(s):
            self._new_run_line()
            self.ctx.tests_version = m.group(1)
            if m.group(2):
                self.ctx.library_version = _library_version(m.group(2))
        elif m := re.match(r"#\s*Collective test starting:\s*(\S+)", s):
            self._new_run_line()
            self.ctx.binary = m.group(1)
        elif re.search(r"\b(out-of-place|in-place)\b", s) and "size" not in s:
            self._new_run_line()
            self.ctx.placements = ("out", "in") if "out-of-place" in s and "in-place" in s else \
                ("out",) if "out-of-place" in s else ("in",)
        elif re.match(r"#\s*size\b", s) or re.match(r"#\s*bytes\s+N\b", s):
            self._new_run_line()
            self._columns(s)
        elif not re.match(r"#\s*Collective test concluded", s):
            self._other(s.lstrip("#").strip())

    def _other(self, s: str) -> None:
        """Anything else: versions, CUDA-graph notes, command lines; noise is ignored."""
        self.rccl |= "rccl" in s.lower()
        if m := _VERSION.search(s):
            self.ctx.nccl_version = self.ctx.nccl_version or m.group(2)
            self.rccl |= m.group(1) == "RCCL"
        if re.search(r"(?i)using cuda graphs?\b", s):
            self.ctx.graph_text = True
        if "NCCL INFO" in s or "NCCL WARN" in s or not (m := _BINARY.search(s)):
            return
        launch = _parse_command(s)
        if launch is not None:
            self._new_run_line()
            self.ctx.binary, self.ctx.command, self.ctx.launch = m.group(1), s, launch
        elif self.ctx.binary is None:
            self.ctx.binary = m.group(1)

    def _new_run_line(self) -> None:
        """A header-type line after rows means a new run starts."""
        if self.table is not None and self.table.rows:
            self._close()

    def _footer(self, s: str) -> None:
        if m := re.search(r"Avg bus bandwidth\s*:\s*(\S+)", s):
            last = self.table or (self.tables[-1] if self.tables else None)
            if last is not None and last.footer_busbw_GBps is None:
                last.footer_busbw_GBps = _num(m.group(1))
        self._close()

    def _header(self, s: str) -> None:
        for key in ("nThread", "nGpus", "graph", "validation"):
            if m := re.search(rf"\b{key}:?\s+(-?[0-9]{{1,9}})\b", s):
                self.ctx.header[key] = int(m.group(1))

    def _columns(self, s: str) -> None:
        names = s.lstrip("#").split()
        times = [n for n in names if n in ("time", "cputime")]
        self.ctx.columns = {"root": "root" in names, "error": "error" in names or "res" in names,
                            "cputime": "cputime" in names}
        if len(times) >= 2:
            self.ctx.placements = ("out", "in")
        elif self.ctx.placements is None:
            self.ctx.placements = ("out",)


def _scan(text: str) -> tuple[list[_Table], bool, int]:
    scanner = _Scanner()
    for lineno, line in _logical_lines(text):
        scanner.feed(lineno, line)
    return scanner.finish(), scanner.rccl, scanner.last_row_line


# --- nccl-tests text: from tables to samples -------------------------------------------------

@dataclass(frozen=True)
class _Run:
    op: str
    n_ranks: int
    n_nodes: int | None
    graph: bool


def _parse_text(text: str, opts: _Options) -> MeasurementSet:
    tables, rccl, last_row_line = _scan(text)
    if not any(h for t in tables for r in t.rows for h in r.halves):
        raise MeasureError(f"{opts.source}: no nccl-tests data rows found (expected lines like {_EXAMPLE_ROW})")
    warnings: list[str] = []
    samples: list[Sample] = []
    runs: list[dict] = []
    prev: _Run | None = None
    skipped: list[str] = []
    for table in tables:
        try:
            run = _resolve_run(table, prev, opts, warnings)
        except MeasureError as e:
            skipped.append(str(e))
            warnings.append(f"{e}; table skipped")
            continue
        if run is None:
            continue
        index = len(runs)
        got = _table_samples(table, run, index, opts.source, last_row_line, warnings)
        if got:
            samples.extend(got)
            runs.append(_run_env(table, run, index))
            prev = run
    if not samples:
        raise MeasureError(skipped[0] if skipped else warnings[0] if warnings else
                           f"{opts.source}: no usable nccl-tests data rows (expected lines like {_EXAMPLE_ROW})")
    return MeasurementSet(samples=tuple(samples), source=opts.source,
                          tool="rccl-tests" if rccl else "nccl-tests",
                          env=_file_env(runs), warnings=tuple(warnings))


def _resolve_run(table: _Table, prev: _Run | None, opts: _Options, warnings: list[str]) -> _Run | None:
    where = f"{opts.source}:{table.rows[0].lineno}"
    op = _resolve_op(table, prev, opts, where, warnings)
    if op is None:
        return None
    n_ranks = _resolve_ranks(table, op, prev, opts, where, warnings)
    return _Run(op=op, n_ranks=n_ranks, n_nodes=_resolve_nodes(table, n_ranks, prev),
                graph=_resolve_graph(table, prev))


def _annotated_binary(ann: dict) -> str | None:
    m = _BINARY.search(ann.get("algo_or_note", ""))
    return m.group(1) if m else None


def _resolve_op(table: _Table, prev: _Run | None, opts: _Options, where: str,
                warnings: list[str]) -> str | None:
    for name in (table.ctx.binary, table.annotations.get("collective"), _annotated_binary(table.annotations)):
        if name:
            op = _op_or_none(name)
            if op is None:
                warnings.append(f"{where}: {name!r} is not a collective shardbudget models "
                                f"({', '.join(OPS)}); its table was skipped")
            return op
    if prev is not None and table.ctx.is_empty():
        warnings.append(f"{where}: this table does not name its collective; assumed {prev.op} "
                        "like the table before")
        return prev.op
    warnings.append(f"{where}: the log does not name the collective (no *_perf binary); "
                    f"assumed {opts.default_op}")
    return opts.default_op


def _resolve_ranks(table: _Table, op: str, prev: _Run | None, opts: _Options, where: str,
                   warnings: list[str]) -> int:
    ctx = table.ctx
    if ctx.rank_lines > len(ctx.ranks):
        warnings.append(f"{where}: the same rank number appears on several '# Rank' lines: the processes "
                        "may not have formed one communicator (nccl-tests built without MPI?)")
    for n in (opts.n_ranks, _positive_int(table.annotations.get("n_gpus")),
              max(ctx.ranks) + 1 if ctx.ranks else None, ctx.launch.ranks if ctx.launch else None):
        if n:
            return n
    if prev is not None and ctx.is_empty():
        warnings.append(f"{where}: no header for this table; assumed {prev.n_ranks} ranks like the table before")
        return prev.n_ranks
    if n := _ranks_from_ratio(op, table.rows):
        warnings.append(f"{where}: no '# Rank' lines or command line; {n} ranks inferred from the "
                        "file's busbw/algbw ratio")
        return n
    if ctx.header.get("nGpus"):
        n = max(1, ctx.header["nGpus"]) * max(1, ctx.header.get("nThread", 1))
        warnings.append(f"{where}: no '# Rank' lines; assumed one process with nThread x nGpus = {n} ranks")
        return n
    raise MeasureError(f"{where}: cannot tell how many ranks ran this table (no '# Rank' lines, "
                       "command line or usable busbw); pass n_ranks=")


def _ranks_from_ratio(op: str, rows: list[_Row]) -> int | None:
    """The n whose busbw factor matches the file's busbw/algbw, where the rounding allows telling n apart."""
    if op in ("broadcast", "reduce", "send/recv"):
        return None  # factor 1 for every n
    halves = [h for r in rows for h in r.halves if h[1] >= 1.0]
    if not halves:
        return None
    _, algbw, busbw, _ = max(halves, key=lambda h: h[1])
    ratio, slack = busbw / algbw, 0.02 / algbw  # both printed to 0.01 GB/s
    scale = 2.0 if op == "all-reduce" else 1.0
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


def _resolve_nodes(table: _Table, n_ranks: int, prev: _Run | None) -> int | None:
    ctx = table.ctx
    hosts = {h for h, _ in ctx.ranks.values()}
    for n in (_positive_int(table.annotations.get("n_nodes")), len(hosts) or None,
              ctx.launch.nodes if ctx.launch else None):
        if n:
            return n
    if n_ranks == 1:
        return 1
    return prev.n_nodes if prev is not None and ctx.is_empty() else None


def _resolve_graph(table: _Table, prev: _Run | None) -> bool:
    ctx = table.ctx
    if ctx.header.get("graph", 0) > 0 or ctx.graph_text or (ctx.launch is not None and ctx.launch.graph):
        return True
    note = _parse_command(table.annotations.get("algo_or_note", ""))
    if note is not None and note.graph:
        return True
    return prev.graph if prev is not None and ctx.is_empty() else False


def _placements(table: _Table, row: _Row) -> tuple[str, ...]:
    if len(row.halves) == 2:
        return ("out", "in")
    if row.blank_first or table.ctx.placements == ("in",):
        return ("in",)
    return ("out",)


def _table_samples(table: _Table, run: _Run, index: int, source: str, last_row_line: int,
                   warnings: list[str]) -> list[Sample]:
    where = f"{source}:{table.rows[0].lineno}"
    old_error = table.ctx.columns.get("error", False) or not any(r.has_root for r in table.rows)
    samples: list[Sample] = []
    wrong = bad_time = 0
    off: list[str] = []
    truncated_at = None
    factor = busbw_factor(run.op, run.n_ranks)
    two_placements = table.ctx.placements == ("out", "in") or any(len(r.halves) == 2 for r in table.rows)
    for row in table.rows:
        if row.cut and row.lineno == last_row_line:
            truncated_at = row.lineno
        else:
            _note_odd_row(row, two_placements, source, warnings)
        for placement, half in zip(_placements(table, row), row.halves):
            if _is_wrong(half[3], old_error):
                wrong += 1
            elif half[0] <= 0 or not math.isfinite(2 * row.size / (half[0] / 1e6)):  # 0, or so small
                bad_time += 1  # that busbw (at most 2x size/time) overflows a float
            else:
                samples.append(_sample(row, placement, half, run, factor, index, source))
                off.extend(_bandwidth_disagreements(samples[-1], half))
    if truncated_at is not None:
        upto = f"; kept rows up to {format_bytes(max(s.msg_bytes for s in samples))}" if samples else ""
        warnings.append(f"{source}:{truncated_at}: the last row is cut mid-line (truncated file?){upto}")
    if wrong:
        warnings.append(f"{where}: dropped {wrong} result(s) with '#wrong' != 0 (nccl-tests found "
                        "corrupted data)")
    if bad_time:
        warnings.append(f"{where}: dropped {bad_time} result(s) with a time of 0 us (or too small to divide by)")
    if off:
        warnings.append(f"{where}: {len(off)} algbw/busbw value(s) differ by more than 2% from "
                        f"size/time with {run.op} on {run.n_ranks} ranks (first: {off[0]}); "
                        "is the rank count or the op right?")
    _check_order(samples, where, warnings)
    _check_footer(table, samples, where, warnings)
    if table.ctx.columns.get("cputime"):
        warnings.append(f"{where}: times are CPU-side launch times (-C 1), not completion times")
    samples.sort(key=lambda s: s.msg_bytes)  # stable: out-of-place stays before in-place
    return samples


def _is_wrong(token: str, old_error: bool) -> bool:
    """True when nccl-tests reported wrong elements; old layouts print a max relative error instead."""
    m = _WRONG.fullmatch(token)
    if m is None or m.group(1) == "N/A":
        return False
    if m.group(2):  # rccl-tests marks errors above its threshold with '*'
        return True
    value = float(m.group(1))
    return False if old_error else value != 0


def _note_odd_row(row: _Row, two_placements: bool, source: str, warnings: list[str]) -> None:
    where = f"{source}:{row.lineno}"
    if row.cut:
        what = "read its first columns only" if row.halves else "skipped it"
        warnings.append(f"{where}: malformed data row ({what})")
    elif len(row.halves) == 1 and not row.blank_first and two_placements:
        warnings.append(f"{where}: only one set of time/algbw/busbw columns where the table has "
                        "out-of-place and in-place; read as out-of-place")


def _sample(row: _Row, placement: str, half: tuple[float, float, float, str], run: _Run,
            factor: float, index: int, source: str) -> Sample:
    time_s = half[0] / 1e6  # nccl-tests prints microseconds
    algbw = row.size / time_s
    return Sample(op=run.op, msg_bytes=float(row.size), time_s=time_s, algbw_bytes_per_s=algbw,
                  busbw_bytes_per_s=algbw * factor, n_ranks=run.n_ranks,
                  n_nodes=run.n_nodes, in_place=placement == "in", graph=run.graph, dtype=row.dtype,
                  redop=row.redop if row.redop not in (None, "none") else None,
                  source=f"{source}:{row.lineno}", run=index)


def _bandwidth_disagreements(s: Sample, half: tuple[float, float, float, str]) -> list[str]:
    """The file's algbw/busbw (GB/s) where they differ from ours: a wrong rank count or op, or a typo."""
    out = []
    for name, file_GBps, ours in (("algbw", half[1], s.algbw_bytes_per_s),
                                  ("busbw", half[2], s.busbw_bytes_per_s)):
        if file_GBps >= _BW_CHECK_MIN_GBPS and abs(ours / 1e9 - file_GBps) > _BW_TOLERANCE * file_GBps:
            out.append(f"{s.source} {name} {file_GBps:g} GB/s in the file, {ours / 1e9:.4g} derived")
    return out


def _check_order(samples: list[Sample], where: str, warnings: list[str]) -> None:
    last: dict[tuple, float] = {}
    for s in samples:
        key = (s.dtype, s.redop, s.in_place)
        if s.msg_bytes < last.get(key, -1.0):
            warnings.append(f"{s.source}: sizes go down within one table (rows pasted out of order, or "
                            "a repeated sweep); kept all rows, sorted by size")
            return
        last[key] = s.msg_bytes


def _check_footer(table: _Table, samples: list[Sample], where: str, warnings: list[str]) -> None:
    """A real log (it has the '# nThread' header) ends each table with '# Avg bus bandwidth'."""
    if table.ctx.header and table.footer_busbw_GBps is None and samples:
        largest = format_bytes(max(s.msg_bytes for s in samples))
        warnings.append(f"{where}: no '# Avg bus bandwidth' footer after this table: the run may "
                        f"have stopped early (last size {largest})")


# --- env -------------------------------------------------------------------------------------

def _run_env(table: _Table, run: _Run, index: int) -> dict:
    ctx, ann = table.ctx, table.annotations
    version = ctx.nccl_version or ctx.library_version
    if version is None:
        m = _ANNOTATED_VERSION.search(" ".join(ann.get(k, "") for k in ("hardware", "algo_or_note", "source")))
        version = m.group(2) if m else None
    info = {"run": index, "line": table.rows[0].lineno, "op": run.op, "n_ranks": run.n_ranks,
            "n_nodes": run.n_nodes, "graph": run.graph, "nccl_version": version,
            "nccl_tests_version": ctx.tests_version, "command": ctx.command,
            "hostnames": sorted({h for h, _ in ctx.ranks.values()}),
            "devices": sorted({d for _, d in ctx.ranks.values() if d}),
            "header": dict(ctx.header),
            "avg_busbw_bytes_per_s": None if table.footer_busbw_GBps is None else table.footer_busbw_GBps * 1e9,
            "annotations": dict(ann)}
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
