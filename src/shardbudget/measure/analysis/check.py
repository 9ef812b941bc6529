"""Is this nccl-tests result normal for this system? Measured against predicted, per size and per region.

`check_logs` reads nccl-tests / rccl-tests logs (or shardbudget JSON), prices every measured size with
`collectives.collective_cost` at the log's GPU and node counts (out-of-place time, nccl-tests'
reference column; in-place where a table has nothing else), and judges three regions of each table:

* **latency floor**: sizes where the predicted latency term is at least 75 % of the time;
* **bandwidth plateau**: sizes where it is at most 25 % (the bandwidth term dominates: busbw is
  within 25 % of its asymptote);
* **mid sizes**: the rest.

A region's ratio is the median over its sizes of measured / predicted time (> 1: slower than the
model). It is **ok** within the tolerance, ``1/(1+tol) <= ratio <= 1+tol`` (symmetric in log space: a
run 25 % slow and one 25 % fast are off by the same amount), else **slow** or **fast**. The likely
cause of a region that is off comes from `check_causes`: first from the settings NCCL printed in the
log (`measure.nccl_info`), else from the shape of the curve, said to be a guess.

Whatever the ratios, a table is not certified when its log shows corrupted, impossible, truncated or
dropped rows, or when no size is left in any region (`check_rows`).

`CheckResult.exit_code` is 0 when every table is certified and every region of every table is within
tolerance, and 1 otherwise; bad input (unknown system, unreadable log, a log of another GPU count
than asked) raises a `ShardbudgetError` (exit 2 in the CLI), so the command can gate a cluster
bring-up in CI.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .check_causes import Cause, TableFacts, diagnose, erratic
from .check_rows import device_note, outcome, own_problems, plateau_note, plausible
from ...comm.collectives import OPS, make_group
from ...comm.op import busbw_factor
from ...errors import MeasureError, PlanError
from ...fabric.hardware import Catalog, System
from ...fabric.catalog import load_catalog
from .fit import counts_trays, forced_by, nccl_line
from ...defaults import CHECK_TOLERANCE as DEFAULT_TOLERANCE
from ..logs.records import LogProblem, NoUsableRows
from ..logs.read import MeasurementSet, Sample, parse_log_text, read_log_text
from ..logs.nccl_info import NcclSettings, settings_for
from ...units import format_bytes, format_rate, format_seconds

REGIONS = ("latency floor", "mid sizes", "bandwidth plateau")
LATENCY_FLOOR_SHARE = 0.75
"""Predicted latency term / time at or above which a size belongs to the latency floor."""
PLATEAU_SHARE = 0.25
"""... at or below which it belongs to the bandwidth plateau (busbw within 25 % of its asymptote)."""


# --- results ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SizeCheck:
    """One measured size beside its prediction."""

    msg_bytes: float
    measured_s: float
    predicted_s: float
    latency_share: float
    """Predicted latency term / predicted time: which region the size is in."""
    measured_busbw_bytes_per_s: float
    predicted_busbw_bytes_per_s: float
    algorithm: str
    protocol: str
    region: str

    @property
    def ratio(self) -> float:
        """measured / predicted time (> 1: slower than the model)."""
        return self.measured_s / self.predicted_s

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["ratio"] = self.ratio
        return d


@dataclass(frozen=True, kw_only=True)
class RegionCheck:
    region: str
    """One of REGIONS."""
    sizes: tuple[SizeCheck, ...]
    median_ratio: float | None
    """Median measured / predicted time over the region's sizes (None: no size in the region)."""
    verdict: str
    """ok, slow, fast, or 'no sizes'."""

    @property
    def off(self) -> bool:
        return self.verdict in ("slow", "fast")

    @property
    def ok(self) -> bool:
        """Within tolerance; a region with no sizes is not ok (nor off: it was not checked)."""
        return self.verdict == "ok"

    def to_dict(self) -> dict:
        return {
            "region": self.region,
            "verdict": self.verdict,
            "median_ratio": self.median_ratio,
            "sizes": [s.to_dict() for s in self.sizes],
        }


@dataclass(frozen=True, kw_only=True)
class TableCheck:
    """One table of one log (one run: op, GPU count), checked."""

    source: str
    run: int
    op: str
    ranks: int
    nodes: int
    system: str
    column: str
    """'out-of-place', or 'in-place' where the table has no out-of-place times."""
    regions: tuple[RegionCheck, ...]
    causes: tuple[Cause, ...]
    """Likely causes, the most likely first; empty when every region is ok."""
    settings: NcclSettings
    notes: tuple[str, ...] = ()
    problems: tuple[LogProblem, ...] = ()
    """What forbids certifying the table whatever its ratios (check_rows): corrupted, impossible,
    truncated or dropped rows of its run."""

    @property
    def ok(self) -> bool:
        """No problem, some size checked, and every region with sizes within tolerance."""
        return not self.problems and any(r.ok for r in self.regions) and not any(r.off for r in self.regions)

    @property
    def cause(self) -> Cause | None:
        return self.causes[0] if self.causes else None

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "run": self.run,
            "op": str(self.op),
            "ranks": self.ranks,
            "nodes": self.nodes,
            "system": self.system,
            "column": self.column,
            "ok": self.ok,
            "regions": [r.to_dict() for r in self.regions],
            "cause": self.cause.to_dict() if self.cause else None,
            "causes": [c.to_dict() for c in self.causes],
            "settings": self.settings.to_dict(),
            "notes": list(self.notes),
            "problems": [p.to_dict() for p in self.problems],
        }


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    system: str
    tolerance: float
    tables: tuple[TableCheck, ...]
    problems: tuple[LogProblem, ...] = ()
    """The logs' problems that belong to no checked table (a file whose every row was dropped, a
    table of another GPU count than --gpus): they fail the check too."""
    warnings: tuple[str, ...] = ()
    """Every reader warning of every log, one line each (problems included)."""

    @property
    def ok(self) -> bool:
        return bool(self.tables) and not self.problems and all(t.ok for t in self.tables)

    @property
    def exit_code(self) -> int:
        """0: certified, every region within tolerance; 1: not (bad input never gets this far: exit 2)."""
        return 0 if self.ok else 1

    @property
    def outcome(self) -> str:
        return outcome(self.ok, self.tables, self.problems, tolerance=_pct(self.tolerance), system=self.system)

    def to_dict(self) -> dict:
        return {
            "system": self.system,
            "tolerance": self.tolerance,
            "ok": self.ok,
            "exit_code": self.exit_code,
            "outcome": self.outcome,
            "tables": [t.to_dict() for t in self.tables],
            "problems": [p.to_dict() for p in self.problems],
            "warnings": list(self.warnings),
        }


# --- entry points ----------------------------------------------------------------------------


def check_logs(
    paths: Iterable[str | os.PathLike],
    *,
    system: str,
    catalog: Catalog | None = None,
    nodes: int | None = None,
    gpus: int | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> CheckResult:
    """Check every table of every log against `system`.

    `nodes` is the node count the model uses (default: what the log says, else what NCCL's INFO
    lines say, else as few nodes as hold the ranks); `gpus` keeps only the tables of that GPU count
    and refuses a log that has none.
    """
    catalog = catalog or load_catalog()
    sys_ = catalog.system(system)
    _check_request(nodes, gpus, tolerance)
    texts, unusable, n = [], [], 0
    for p in paths:
        n += 1
        text = read_log_text(p)  # read once, within the readers' bound: a FIFO or /dev/zero is refused
        try:
            texts.append((parse_log_text(text, source=str(p)), text))  # malformed: a MeasureError
        except NoUsableRows as err:  # every row dropped: corrupted or impossible data is a verdict
            if not any(q.kind != "dropped" for q in err.problems):
                raise
            unusable += err.problems
    if not n:
        raise MeasureError("check needs at least one log file")
    return _check(texts, sys_, catalog, nodes=nodes, gpus=gpus, tolerance=tolerance, unusable=unusable)


def check_text(
    text: str,
    *,
    system: str,
    source: str = "<text>",
    catalog: Catalog | None = None,
    nodes: int | None = None,
    gpus: int | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> CheckResult:
    """`check_logs` for a log already in memory."""
    catalog = catalog or load_catalog()
    sys_ = catalog.system(system)
    _check_request(nodes, gpus, tolerance)
    try:
        ms = parse_log_text(text, source=source)
    except NoUsableRows as err:
        if not any(q.kind != "dropped" for q in err.problems):
            raise
        return _check([], sys_, catalog, nodes=nodes, gpus=gpus, tolerance=tolerance, unusable=list(err.problems))
    return _check([(ms, text)], sys_, catalog, nodes=nodes, gpus=gpus, tolerance=tolerance)


def _check_request(nodes: object, gpus: object, tolerance: object) -> None:
    for name, value in (("--nodes", nodes), ("--gpus", gpus)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise PlanError(f"{name} must be a whole number of at least 1, got {value!r}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not (0 < tolerance < 10):
        raise PlanError(f"--tolerance must be a fraction above 0 (0.25: within 25 %), got {tolerance!r}")


def _check(
    sets: Sequence[tuple[MeasurementSet, str]],
    system: System,
    catalog: Catalog,
    *,
    nodes: int | None,
    gpus: int | None,
    tolerance: float,
    unusable: Sequence[LogProblem] = (),
) -> CheckResult:
    tables, loose, warnings = [], list(unusable), [p.text for p in unusable]
    for ms, text in sets:
        spans = _line_spans(ms)
        checked = set()
        for run, samples, column in _runs(ms, gpus):
            settings = settings_for(text, *spans.get(run, (1, None)))
            if settings.version is None:
                version = next((r.get("nccl_version") for r in ms.env.get("runs", []) if r.get("run") == run), None)
                settings = replace(settings, version=version or ms.env.get("nccl_version"))
            tables.append(
                _check_table(ms, run, samples, column, settings, system, catalog, nodes=nodes, tolerance=tolerance)
            )
            checked.add(run)
        loose += [p for p in ms.problems if p.run not in checked]
        warnings += ms.warnings
    return CheckResult(
        system=system.name,
        tolerance=float(tolerance),
        tables=tuple(tables),
        problems=tuple(loose),
        warnings=tuple(warnings),
    )


def _line_spans(ms: MeasurementSet) -> dict[int, tuple[int, int | None]]:
    """run -> (first line, last line) of the text that belongs to it: from the line after the previous
    table's last row to its own last row (the last table: to the end). NCCL prints its INFO lines
    while a communicator is set up, before the rows it explains. Every run of the file counts, kept
    or not, so a skipped table's lines never reach its neighbour."""
    last: dict[int, int] = {}
    for s in ms.samples:
        line = s.source.rsplit(":", 1)[-1]
        if line.isdigit():
            last[s.run] = max(last.get(s.run, 0), int(line))
    spans, start = {}, 1
    ordered = sorted(last.items(), key=lambda kv: kv[1])
    for i, (run, end) in enumerate(ordered):
        spans[run] = (start, end if i + 1 < len(ordered) else None)
        start = end + 1
    return spans


def _runs(ms: MeasurementSet, gpus: int | None) -> list[tuple[int, list[Sample], str]]:
    """(run, its samples of one column, which column) per checkable table, in file order."""
    by_run: dict[int, list[Sample]] = {}
    for s in ms.samples:
        by_run.setdefault(s.run, []).append(s)
    counts = sorted({v[0].n_ranks for v in by_run.values()})
    out = []
    for run, samples in by_run.items():
        if gpus is not None and samples[0].n_ranks != gpus:
            continue
        if samples[0].op not in OPS or samples[0].n_ranks < 2:
            continue
        out_of_place = [s for s in samples if not s.in_place]
        chosen = out_of_place or samples
        out.append((run, sorted(chosen, key=lambda s: s.msg_bytes), "out-of-place" if out_of_place else "in-place"))
    name = os.path.basename(ms.source)
    if gpus is not None and not out:
        raise MeasureError(f"{name} is a log of {' and '.join(map(str, counts))} GPUs, not --gpus {gpus}")
    if not out:
        raise MeasureError(
            f"{name}: no table of a collective shardbudget prices with 2 or more ranks "
            f"(found {', '.join(sorted({str(s.op) for s in ms.samples}))} on "
            f"{', '.join(map(str, counts))} ranks)"
        )
    return out


# --- one table -------------------------------------------------------------------------------


def _nodes(
    samples: Sequence[Sample], settings: NcclSettings, system: System, nodes: int | None
) -> tuple[int, list[str]]:
    """The node count to model, and a note where it is not the log's own."""
    ranks, logged = samples[0].n_ranks, samples[0].n_nodes
    if nodes is not None:
        note = [f"the log says {logged} nodes; checked as {nodes} (--nodes)"] if logged and logged != nodes else []
        return nodes, note
    if logged and counts_trays(ranks, logged, system):
        domains = max(1, math.ceil(ranks / system.gpus_per_node))
        return domains, [
            f"the log's {logged} nodes of {ranks // logged} GPUs are {system.name}'s {system.host_gpus}-GPU "
            f"hosts (compute trays), {system.gpus_per_node // system.host_gpus} to an NVLink domain: checked as {domains} node(s) of "
            f"{system.gpus_per_node}, as NCCL runs them (--nodes {logged} prices each tray as a node)"
        ]
    if logged:
        return logged, []
    if settings.n_nodes:
        return settings.n_nodes, [f"nodes from NCCL's INFO lines: {settings.n_nodes}"]
    n = max(1, math.ceil(ranks / system.gpus_per_node))
    return n, [
        f"the log does not say how many nodes; assumed {n} ({ranks} ranks, "
        f"{system.gpus_per_node} GPUs per {system.name} node; give --nodes if not)"
    ]


def _check_table(
    ms: MeasurementSet,
    run: int,
    samples: list[Sample],
    column: str,
    settings: NcclSettings,
    system: System,
    catalog: Catalog,
    *,
    nodes: int | None,
    tolerance: float,
) -> TableCheck:
    op, ranks = samples[0].op, samples[0].n_ranks
    n_nodes, notes = _nodes(samples, settings, system, nodes)
    where = f"{os.path.basename(ms.source)} (run {run}, {ranks} ranks)"
    try:
        group = make_group(system, nodes=n_nodes, gpus=ranks, catalog=catalog)
    except PlanError as err:
        if nodes is not None and ranks > nodes * system.gpus_per_node:  # --nodes for one run of a log of several
            raise PlanError(
                f"{where} does not fit {nodes} x {system.name} (--nodes {nodes}, {system.gpus_per_node} "
                f"GPUs per node): give --gpus to check one run of the log, or --nodes "
                f"{math.ceil(ranks / system.gpus_per_node)} for this one"
            ) from None
        raise PlanError(f"{where} does not fit {system.name}: {err}") from None
    algos, protos, _ = forced_by(ms, run)
    if algos or protos:
        notes.append(
            f"the run forces {' '.join(f'{k}={v}' for k, v in (('NCCL_ALGO', ','.join(algos)), ('NCCL_PROTO', ','.join(protos))) if v)}: "
            f"predicted with that choice"
        )
    kept, impossible = plausible(_dedupe(samples), catalog, run, ms.source)
    sizes = tuple(_size_check(s, system, catalog, n_nodes, (algos, protos)) for s in kept)
    regions = tuple(_region(name, [c for c in sizes if c.region == name], tolerance) for name in REGIONS)
    facts = TableFacts(group=group, op=str(op), sizes=sizes, regions=regions, settings=settings, tolerance=tolerance)
    causes = diagnose(facts) if any(r.off for r in regions) else ()
    shape = _node_shape(samples, system, nodes)
    if shape is not None:
        notes.append(shape)
        if causes and samples[0].n_ranks // samples[0].n_nodes == system.host_gpus < system.gpus_per_node:
            # the log counts the system's hosts (NVL72's 4-GPU compute trays) as nodes, where the
            # catalog's node is the whole NVLink domain: the mismatch, not the catalog, may explain it
            causes = (_node_cause(samples, system, catalog, n_nodes, tolerance, shape),) + tuple(causes)
    if not causes and (noisy := erratic(facts)) is not None:  # every median within tolerance, but jumpy
        notes.append(noisy.text)
    notes += device_note(ms, run, system) + plateau_note(regions, sizes)
    return TableCheck(
        source=ms.source,
        run=run,
        op=str(op),
        ranks=ranks,
        nodes=n_nodes,
        system=system.name,
        column=column,
        regions=regions,
        causes=tuple(causes),
        settings=settings,
        notes=tuple(notes),
        problems=own_problems(ms.problems, run) + tuple(impossible),
    )


def _node_shape(samples: Sequence[Sample], system: System, nodes: int | None) -> str | None:
    """A note where the log's GPUs per node differ from the system's (None where they agree, where
    --nodes overrides the log, or where one node ran on some of its GPUs: a 2-GPU run of an 8-GPU box
    crosses no network): GB200 NVL72 logs count 4-GPU trays as nodes, while the catalog's node is
    the 72-GPU NVLink domain."""
    ranks, logged = samples[0].n_ranks, samples[0].n_nodes
    if nodes is not None or not logged or ranks % logged or ranks // logged == system.gpus_per_node:
        return None
    if counts_trays(ranks, logged, system):  # read as the NVLink domain's trays (_nodes)
        return None
    if logged == 1 and ranks < system.gpus_per_node:
        return None
    per_node = ranks // logged
    return (
        f"the log has {per_node} GPUs per node ({ranks} ranks on {logged} nodes); {system.name} has "
        f"{system.gpus_per_node}: checked as {logged} nodes of {per_node} GPUs, every ring crossing the network"
    )


def _node_cause(
    samples: Sequence[Sample], system: System, catalog: Catalog, n_nodes: int, tolerance: float, shape: str
) -> Cause:
    """The node-shape mismatch as the first cause, with what the table reads as whole nodes of the system."""
    ranks, gpn = samples[0].n_ranks, system.gpus_per_node
    alt = max(1, math.ceil(ranks / gpn))
    words = shape.split(";")[0]
    if alt == n_nodes or (alt > 1 and ranks % gpn):
        return Cause(
            kind="node-shape",
            region="",
            guess=False,
            text=f"{words}, not {gpn} as {system.name}; check the logs with a system of {ranks // n_nodes} GPUs per node",
        )
    ratios = [s.time_s / _size_check(s, system, catalog, alt).predicted_s for s in _dedupe(samples)]
    med = statistics.median(ratios)
    return Cause(
        kind="node-shape",
        region="",
        guess=False,
        expected_ratio=med,
        text=f"{words}, not {gpn} as {system.name}: as {alt} node(s) of {gpn} (`--nodes {alt} --gpus {ranks}`) the "
        f"table is {med:.2f}x the predicted time ({verdict_of(med, tolerance)}); the log's nodes are "
        f"{system.name}'s {system.host_gpus}-GPU hosts (trays), its node the whole NVLink domain",
    )


def _dedupe(samples: Sequence[Sample]) -> list[Sample]:
    """One sample per size (several dtypes or repeated rows: the first)."""
    seen: dict[float, Sample] = {}
    for s in samples:
        seen.setdefault(s.msg_bytes, s)
    return list(seen.values())


def _size_check(s: Sample, system: System, catalog: Catalog, nodes: int, forced: tuple = ((), ())) -> SizeCheck:
    # priced as `fit` prices it (one computation): the line NCCL runs, among those the run forced
    c = nccl_line(system, catalog, s.op, s.msg_bytes, ranks=s.n_ranks, nodes=nodes, algos=forced[0], protos=forced[1])
    t = c.time_s(s.msg_bytes)
    share = c.latency_s / t if t > 0 else 1.0
    region = REGIONS[0] if share >= LATENCY_FLOOR_SHARE else REGIONS[2] if share <= PLATEAU_SHARE else REGIONS[1]
    busbw = s.msg_bytes / t * busbw_factor(s.op, s.n_ranks) if t > 0 else 0.0
    return SizeCheck(
        msg_bytes=s.msg_bytes,
        measured_s=s.time_s,
        predicted_s=t,
        latency_share=share,
        measured_busbw_bytes_per_s=s.busbw_bytes_per_s,
        predicted_busbw_bytes_per_s=busbw,
        algorithm=c.algorithm,
        protocol=c.protocol,
        region=region,
    )


def verdict_of(ratio: float | None, tolerance: float) -> str:
    """ok within [1/(1+tol), 1+tol] of the prediction, else slow or fast; 'no sizes' for None."""
    if ratio is None:
        return "no sizes"
    if ratio > 1 + tolerance:
        return "slow"
    if ratio < 1 / (1 + tolerance):
        return "fast"
    return "ok"


def _region(name: str, sizes: list[SizeCheck], tolerance: float) -> RegionCheck:
    ratio = statistics.median(c.ratio for c in sizes) if sizes else None
    return RegionCheck(region=name, sizes=tuple(sizes), median_ratio=ratio, verdict=verdict_of(ratio, tolerance))


# --- text -----------------------------------------------------------------------------------


def format_check(result: CheckResult) -> str:
    """The terminal report: per table a block per region (one row per size), one cause line, the
    settings NCCL showed, and a last line with the outcome."""
    out: list[str] = []
    for t in result.tables:
        out += _format_table(t, result.tolerance) + [""]
    shown = {p.text for t in result.tables for p in t.problems}
    extra = [f"problem: {p.text}" for p in result.problems if p.text not in shown]
    shown |= {p.text for p in result.problems}
    extra += [f"warning: {w}" for w in dict.fromkeys(result.warnings) if w not in shown]
    if extra:
        out += extra + [""]
    out.append(f"check: {result.outcome} (exit {result.exit_code})")
    return "\n".join(out)


def _ratio(x: float) -> str:
    """1.23x; a ratio below 0.01 keeps three significant digits (0.0042x, never 0.00x)."""
    return f"{x:.2f}x" if x >= 0.01 else f"{x:.2g}x"


def _pct(tolerance: float) -> str:
    return f"\u00b1{tolerance * 100:g} %"


def _format_table(t: TableCheck, tolerance: float) -> list[str]:
    version = f", NCCL {t.settings.version.split('+')[0]}" if t.settings.version else ""
    out = [
        f"== {os.path.basename(t.source)}, run {t.run}: {t.op} on {t.ranks} GPUs, {t.nodes} node(s) of "
        f"{t.system} ({t.column} times){version}"
    ]
    out += [f"problem: {p.text}" for p in t.problems]
    for r in t.regions:
        if not r.sizes:
            continue
        bw = f" = {1 / r.median_ratio:.2f} of the predicted busbw" if r.region == REGIONS[2] else ""
        out.append(
            f"{r.region}: {r.verdict.upper()}, median {_ratio(r.median_ratio)} the predicted time{bw} "
            f"({len(r.sizes)} size{'s' if len(r.sizes) != 1 else ''})"
        )
        out.append(
            f"  {'size':>10} {'measured':>11} {'predicted':>11} {'ratio':>7} {'busbw':>11} {'predicted':>11}  model"
        )
        for c in r.sizes:
            mark = "" if verdict_of(c.ratio, tolerance) == "ok" else " *"
            out.append(
                f"  {format_bytes(c.msg_bytes):>10} {format_seconds(c.measured_s):>11} "
                f"{format_seconds(c.predicted_s):>11} {_ratio(c.ratio):>7} {format_rate(c.measured_busbw_bytes_per_s):>11} "
                f"{format_rate(c.predicted_busbw_bytes_per_s):>11}  {c.algorithm}/{c.protocol}{mark}"
            )
    if t.cause is not None:
        out.append(f"cause: {t.cause.text}")
    out.append(f"settings: {settings_summary(t.settings)}")
    out += [f"note: {n}" for n in t.notes]
    return out


def settings_summary(st: NcclSettings) -> str:
    """One line of what NCCL showed: channels, transports, network, NICs, GDR, NVLS, NCCL_* settings."""
    parts = []
    if st.channels is not None:
        parts.append(f"{st.channels} channels")
    if st.transports:
        parts.append("transports " + "/".join(st.transports))
    if st.network:
        parts.append(f"network {st.network}" + (f" ({st.nics} NICs)" if st.nics is not None else ""))
    for name, flag in (("GDR", st.gdr), ("NVLS", st.nvls)):
        if flag is not None:
            parts.append(f"{name} {'on' if flag else 'off'}")
    if st.net_plugin:
        parts.append(f"net plugin {st.net_plugin}")
    if st.env:
        parts.append(", ".join(f"{k}={v}" for k, v in st.env.items()))
    if not st.info_lines:
        parts.append("no NCCL INFO lines (NCCL_DEBUG=INFO shows channels, transports and NICs)")
    return "; ".join(parts) if parts else "nothing"


__all__ = [
    "DEFAULT_TOLERANCE",
    "REGIONS",
    "CheckResult",
    "RegionCheck",
    "SizeCheck",
    "TableCheck",
    "check_logs",
    "check_text",
    "format_check",
    "settings_summary",
    "verdict_of",
]
