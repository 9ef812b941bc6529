"""nccl-tests / rccl-tests text, read line by line into tables and the run context around each.

`scan` walks the lines once; `nccl_tables` turns what it finds into samples.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .records import UINT, num, positive_int


# --- nccl-tests text: tokens -----------------------------------------------------------------

_SINT = re.compile(r"-?[0-9]{1,19}")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,40}")
WRONG = re.compile(r"(N/A|[-+]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][-+]?[0-9]{1,3})?)(\*?)")
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{2}:[0-9]{2}:[0-9]{2}")  # -T timestamps
# Prefixes launchers put before every line:
# * `srun --label`: "12: ";
# * Open MPI 4 `mpirun --tag-output`: "[1,0]<stdout>:", after `--timestamp-output`'s
#   "Thu May  7 10:39:20 2020" where both are given (open-mpi/ompi#7710);
# * Open MPI 5 / PRRTE `--output tag`, `tag-fullname`, `tag-detailed` and `rank`: "[jobid,rank]<stdout>:"
#   with the jobid a namespace where it has no '@' ("[prterun-f5n18-100629@1,0]<stdout>: ",
#   openpmix/prrte#1405), "[jobid,rank][hostname:pid]<stdout>:" and "[rank]<stdout>" (prrte#1406);
# * MPICH / Intel MPI `mpiexec -prepend-rank` (`-l`): "[0] " (pmodels/mpich#1114).
_MPI_STAMP = r"(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4})?"
LINE_PREFIX = re.compile(
    r"^\s*(?:[0-9]{1,6}:\s"
    rf"|{_MPI_STAMP}\[[\w.@-]{{1,120}},[0-9]{{1,7}}\](?:\[[\w.:-]{{1,120}}\])?<std(?:out|err|diag)>:?"
    r"|\[[0-9]{1,7}\]<std(?:out|err|diag)>:?"
    r"|\[[0-9]{1,7}\] )"
)
_TOKEN = re.compile(r"\S+")
# nccl-tests pads blank out-of-place columns with 32 spaces; a normal gap is at most 2 + 7.
_BLANK_COLUMNS_GAP = 20
# printf's spellings of what is not a finite number ("nan", "-nan", "inf"), and numbers past a double
_NONFINITE = re.compile(r"[-+]?(?:nan|inf|infinity)", re.IGNORECASE)
_HUGE = re.compile(r"[-+]?[0-9]{1,30}(?:\.[0-9]{0,30})?[eE]\+?[0-9]{3,4}")
_FOOTER = re.compile(r"#?\s*(Out of bounds values|Avg bus bandwidth)\s*:")


@dataclass
class Row:
    """One data line of an nccl-tests table, as printed."""

    lineno: int
    size: int
    dtype: str
    redop: str | None
    has_root: bool
    halves: list[tuple[float, float, float, str]]  # (time_us, algbw_GBps, busbw_GBps, #wrong)
    cut: bool  # fewer or stranger fields than a whole row: the line was cut or mangled
    blank_first: bool  # the first columns are blank: only in-place results follow
    per_iter: list[tuple[float, float, float, float]] = field(default_factory=list)
    """Per half, with -I 1: (i_min_us, i_max_us, i_p99_us, i_cv_pct), the slowest rank per iteration."""


def _parse_row(line: str, lineno: int, expect_root: bool | None, per_iter: bool = False) -> Row | None:
    """A data row, or None if the line is not one (noise, headers, INFO lines).

    With `per_iter` (the table's header has nccl-tests' -I columns) each half is eight columns:
    time, algbw, busbw, #wrong, i_min, i_max, i_p99, i_cv% (``writeResultHeader``, ``src/util.cu``).
    """
    spans = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(line)]
    toks = [t for t, _, _ in spans]
    if len(toks) < 2 or not (UINT.fullmatch(toks[0]) and UINT.fullmatch(toks[1])):
        return None
    if len(toks) < 3:
        return Row(lineno, int(toks[0]), "?", None, False, [], True, False)
    if not _WORD.fullmatch(toks[2]):
        return None
    i = 3
    redop = toks[i] if i < len(toks) and _WORD.fullmatch(toks[i]) else None
    i += redop is not None
    rest = toks[i:]
    while rest and _STAMP.fullmatch(rest[-1]):
        rest.pop()
    width = 8 if per_iter else 4
    has_root = _has_root(rest, expect_root, width)
    body_at = i + has_root  # index (in toks) of the first time field
    body = rest[1:] if has_root else rest
    halves, stats, cut = _read_halves(body, width)
    blank_first = (
        len(halves) == 1 and body_at < len(spans) and spans[body_at][1] - spans[body_at - 1][2] >= _BLANK_COLUMNS_GAP
    )
    return Row(lineno, int(toks[0]), toks[2], redop, has_root, halves, cut, blank_first, stats)


def _has_root(rest: list[str], expect_root: bool | None, width: int = 4) -> bool:
    if not rest or not _SINT.fullmatch(rest[0]):
        return False
    if len(rest) % width == 1:  # root + whole groups of (time, algbw, busbw, #wrong[, 4 x -I])
        return True
    if len(rest) % width == 0 and len(rest) <= 2 * width:
        # a whole row without root, or one cut after its busbw where the table's rows have root: a cut
        # row must not shift its columns (its busbw read as '#wrong' would be corrupted data)
        return bool(expect_root)
    # A cut row: trust the table's layout, else nccl-tests' usual root of -1.
    return expect_root if expect_root is not None else rest[0] == "-1"


def _value(token: str) -> float | None:
    """A number as a table prints it, the non-finite ones too (nan, inf, 1e400): a row of those is an
    impossible row, reported as such (`nccl_tables`), not a malformed one."""
    value = num(token)
    if value is None and (_NONFINITE.fullmatch(token) or _HUGE.fullmatch(token)):
        return float(token)
    return value


def _read_halves(
    body: list[str], width: int = 4
) -> tuple[list[tuple[float, float, float, str]], list[tuple[float, float, float, float]], bool]:
    halves, stats = [], []
    for k in range(0, min(len(body) - len(body) % width, 2 * width), width):
        t, a, b, w = body[k : k + 4]
        nums = (_value(t), _value(a), _value(b))
        extra = [num(x) for x in body[k + 4 : k + width]]
        if None in nums or not WRONG.fullmatch(w) or None in extra:
            return halves, stats, True
        halves.append((nums[0], nums[1], nums[2], w))  # type: ignore[arg-type]
        if extra:
            stats.append(tuple(extra))  # type: ignore[arg-type]
    cut = not body or len(body) % width != 0 or len(body) > 2 * width
    return halves, stats, cut


# --- nccl-tests text: run context ------------------------------------------------------------

BINARY = re.compile(r"(?:^|(?<=[\s/'\"=(]))([A-Za-z][A-Za-z_]*?)_perf(?:_mpi)?(?=$|[\s:;,'\")])")
_LAUNCHERS = {"mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun", "srun", "jsrun", "aprun", "flux", "torchrun"}
_MPI_FAMILY = {"mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun"}
_RANK_LINE = re.compile(
    r"#\s*Rank\s+([0-9]{1,7})\s+(?:Group\s+-?[0-9]+\s+)?Pid\s+[0-9]+\s+on\s+(\S+)"
    r"\s+device\s+[0-9]+\s+\[[^\]]*\]\s*(.*)"
)
_VERSION = re.compile(r"\b([NR]CCL) version\s*:?\s*v?([0-9]+\.[0-9]+\.[0-9]+(?:\+[\w.]+)?)")
ANNOTATED_VERSION = re.compile(r"\b([NR]CCL)\s+v?([0-9]+\.[0-9]+\.[0-9]+(?:\+[\w.]+)?)")
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
class Table:
    ctx: _Ctx
    annotations: dict
    rows: list[Row] = field(default_factory=list)
    footer_busbw_GBps: float | None = None
    out_of_bounds: int | None = None
    """nccl-tests' '# Out of bounds values : N OK|FAILED': wrong elements over the whole run (-c 1)."""


def library_version(code: str) -> str:
    """nccl-tests prints NCCL_VERSION_CODE: 22703 -> '2.27.3' (since 2.9), 2708 -> '2.7.8' before."""
    n = int(code)
    if n >= 10000:
        return f"{n // 10000}.{n % 10000 // 100}.{n % 100}"
    return f"{n // 1000}.{n % 1000 // 100}.{n % 100}"


def parse_command(text: str) -> _Launch | None:
    """World size from 'mpirun -np 16 -npernode 8 ./all_reduce_perf -b 8 -e 8G -g 1'; None if no command."""
    m = BINARY.search(text)
    if not m:
        return None
    before, after = text[: m.start()].split(), text[m.end() :].split()
    test = _test_flags(after)
    launcher = next((t for t in before if os.path.basename(t) in _LAUNCHERS), None)
    if launcher is None and not test:
        return None  # a mention of the binary, not a command line
    graph = (positive_int(test.get("G")) or 0) > 0
    per_process = (positive_int(test.get("t")) or 1) * (positive_int(test.get("g")) or 1)
    if launcher is None:
        return _Launch(ranks=per_process, nodes=1, graph=graph)
    procs, nodes = _launcher_counts(before[before.index(launcher) :], os.path.basename(launcher))
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
            procs = positive_int(val) or procs
        elif name in ("-npernode", "--npernode", "-ppn", "--ntasks-per-node", "--nproc_per_node"):
            per_node = positive_int(val) or per_node
        elif name == "-N":  # Open MPI: processes per node; srun: nodes
            if launcher in _MPI_FAMILY:
                per_node = positive_int(val) or per_node
            else:
                nodes = positive_int(val) or nodes
        elif name in ("--nnodes", "--nodes"):
            nodes = positive_int(val) or nodes
        elif name == "--map-by" and (m := re.fullmatch(r"ppr:([0-9]+):node\S*", val)):
            per_node = positive_int(m.group(1))
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
class Options:
    source: str
    default_op: str
    n_ranks: int | None


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, line) with shell '\\' continuations joined and '> ' quote marks removed."""
    out: list[tuple[int, str]] = []
    start, parts = 0, []  # a command being continued over several lines
    for n, raw in enumerate(text.splitlines(), start=1):
        line = LINE_PREFIX.sub("", raw)
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
        self.tables: list[Table] = []
        self.table: Table | None = None
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
        expect_root = self.table.rows[-1].has_root if self.table and self.table.rows else self.ctx.columns.get("root")
        row = _parse_row(line, lineno, expect_root, bool(self.ctx.columns.get("per_iter")))
        if row is not None:
            self._row(row)
        elif s.startswith("#"):
            self._comment(s)
        else:
            self._other(s)

    def finish(self) -> list[Table]:
        self._close()
        return self.tables

    def _row(self, row: Row) -> None:
        if self.table is None:
            self.table = Table(ctx=self.ctx, annotations=dict(self.annotations))
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
        elif m := re.match(r"#\s*Per-Iteration Report\b(?:.*summary skips first ([0-9]{1,9}))?", s):
            self.ctx.header["per_iter_skip"] = int(m.group(1) or 0)
        elif re.match(r"#\s*nThread\b", s):
            self._new_run_line()
            self._header(s)
        elif m := _TESTS_VERSION.match(s):
            self._new_run_line()
            self.ctx.tests_version = m.group(1)
            if m.group(2):
                self.ctx.library_version = library_version(m.group(2))
        elif m := re.match(r"#\s*Collective test starting:\s*(\S+)", s):
            self._new_run_line()
            self.ctx.binary = m.group(1)
        elif re.search(r"\b(out-of-place|in-place)\b", s) and "size" not in s:
            self._new_run_line()
            self.ctx.placements = (
                ("out", "in")
                if "out-of-place" in s and "in-place" in s
                else ("out",)
                if "out-of-place" in s
                else ("in",)
            )
        elif re.match(r"#\s*size\b", s) or re.match(r"#\s*bytes\s+N\b", s):
            self._new_run_line()
            self._columns(s)
        elif not re.match(r"#\s*Collective test concluded", s):
            self._other(s.lstrip("#").strip())

    def _other(self, s: str) -> None:
        """Anything else: versions, CUDA-graph notes, command lines, old releases' footer lines without
        '#'; noise is ignored."""
        if _FOOTER.match(s) and ((self.table is not None and self.table.rows) or self.tables):
            self._footer(s)
            return
        self.rccl |= "rccl" in s.lower()
        if m := _VERSION.search(s):
            self.ctx.nccl_version = self.ctx.nccl_version or m.group(2)
            self.rccl |= m.group(1) == "RCCL"
        if re.search(r"(?i)using cuda graphs?\b", s):
            self.ctx.graph_text = True
        if "NCCL INFO" in s or "NCCL WARN" in s or not (m := BINARY.search(s)):
            return
        launch = parse_command(s)
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
        last = self.table or (self.tables[-1] if self.tables else None)
        if last is not None and (m := re.search(r"Avg bus bandwidth\s*:\s*(\S+)", s)):
            if last.footer_busbw_GBps is None:
                last.footer_busbw_GBps = num(m.group(1))
        if last is not None and (m := re.search(r"Out of bounds values\s*:\s*([0-9]{1,19})", s)):
            last.out_of_bounds = int(m.group(1))
        self._close()

    def _header(self, s: str) -> None:
        for key in ("nThread", "nGpus", "graph", "validation", "(?<!warmup )iters"):
            if m := re.search(rf"\b{key}:?\s+(-?[0-9]{{1,9}})\b", s):
                self.ctx.header[key.split(")")[-1]] = int(m.group(1))

    def _columns(self, s: str) -> None:
        names = s.lstrip("#").split()
        times = [n for n in names if n in ("time", "cputime")]
        self.ctx.columns = {
            "root": "root" in names,
            "error": "error" in names or "res" in names,
            "cputime": "cputime" in names,
            "per_iter": "i_min" in names,
        }
        if len(times) >= 2:
            self.ctx.placements = ("out", "in")
        elif self.ctx.placements is None:
            self.ctx.placements = ("out",)


def scan(text: str) -> tuple[list[Table], bool, int]:
    scanner = _Scanner()
    for lineno, line in _logical_lines(text):
        scanner.feed(lineno, line)
    return scanner.finish(), scanner.rccl, scanner.last_row_line
