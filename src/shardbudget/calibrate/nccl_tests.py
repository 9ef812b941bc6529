"""Published nccl-tests / rccl-tests timings, mapped onto shardbudget's systems.

One loader for the calibration (calibrate.samples), the validation tests (tests/validation/
test_nccl_tests.py) and the accuracy benchmark (benchmarks/accuracy.py). It reads data/nccl_tests.csv
and classifies every row, deliberately, by one entry of nccl_rules.RULES: either *kept* (a catalog system, a node
and GPU count, the algorithm to force where the run forced one, and a measured time) or *dropped*
with the reason written next to it. A row no rule matches is an error, so a new row in the data
cannot slip into (or out of) the comparison silently.

What counts as a measurement here:
- nccl-tests / rccl-tests `all_reduce_perf`-style rows only: they time one host-launched NCCL call.
  torch-level benchmarks (stas00's `all_reduce_bench.py`, host-timed torch calls) include framework
  overhead and are dropped; so are MSCCL++ and other libraries' kernels.
- Rows forced to a non-default algorithm are kept only when we force the same algorithm in the
  prediction (NCCL_NVLS_ENABLE=0 -> algo="ring", NCCL_ALGO=TREE -> algo="tree", NCCL_ALGO=NVLS ->
  algo="nvls"); an algorithm we do not model (NVLSTree, CollNet) drops the row.
- Where a row gives only busbw, time is derived as size / (busbw / factor) with nccl-tests' busbw
  factor (all-reduce 2(p-1)/p, all-gather / reduce-scatter (p-1)/p); `derived` says so.
- Rows timed inside a CUDA graph (`-G 1`) skip the host launch that our base latencies include: kept
  only at sizes >= 1 MiB, where the launch (a few us) is below 1% of the time.
- A row whose scale-out network is not its system's default NIC is predicted with a user-catalog
  variant built here (VARIANTS, numbers and source stated) or dropped with the reason.

xla_collective_perf_table.csv is not compared against: its times are whole XLA executables (the
README notes an 8-GPU sm_90 floor about twice nccl-tests'), three of its five device keys do not name
the product (sm_90 covers H100, H200, H800 and H20; gfx942 covers MI300X and MI325X; sm_103 is not a
catalog system), and on B200 even its largest all-reduce runs at 73% of nccl-tests' busbw (8 GPUs:
614 GB/s at 2 GiB vs 838 GB/s at 8 GiB). Its GB200 rows serve only as a cross-check of the shape of
NVL72's NVLS line, quoted in catalog/nccl.toml.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..comm.collectives import busbw_factor, sweep
from ..comm.versions import at_stated
from .nccl_rules import RULES, VARIANTS, Rule, variant_catalog, variant_file  # noqa: F401 (re-exported)
from .paths import data_file

GiB = 1 << 30


# --- rows -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    line: int
    """Line in nccl_tests.csv (1 = header)."""
    csv_nodes: int
    """Hosts in the run as the CSV counts them (an NVL72 rack is 18 compute trays)."""
    source_id: str
    source: str
    hardware: str
    op: str
    n_gpus: int
    size_bytes: float | None
    time_s: float | None
    derived: str
    """How time_s was obtained when the row gives no time ("" when it does)."""
    system: str | None
    nodes: int
    gpus: int
    algo: str
    variant: str | None
    kept: bool
    reason: str
    """Why the row is dropped, or what a reader should know about a kept row's mapping."""
    nccl: str | None = None
    """The NCCL release the row states (hardware, fabric or note: "NCCL 2.27.7"), None if it does not."""

    @property
    def multi_node(self) -> bool:
        """More than one host. An NVL72 rack is one of our nodes but 18 hosts (trays) joined by
        NVLink switches: it counts as multi-node, not as a single-node system."""
        return self.csv_nodes > 1

    @property
    def catalog_system(self) -> str | None:
        return self.variant or self.system


def _number(text: str) -> tuple[float | None, str]:
    """A CSV cell as a number; a range 'a-b' becomes its midpoint (say so); blank or prose -> None."""
    text = text.strip().lstrip("~")
    if not text:
        return None, ""
    m = re.fullmatch(r"([\d.]+)\s*-\s*([\d.]+)", text)
    if m:
        lo, hi = float(m[1]), float(m[2])
        return (lo + hi) / 2, f"range {text} taken as its midpoint"
    try:
        return float(text), ""
    except ValueError:
        return None, ""


def _size(text: str) -> tuple[float | None, str]:
    text = text.strip()
    if re.fullmatch(r"\d+", text):
        return float(text), ""
    if text == "2-4 GB":  # nccl#1455: -b 2G -e 4G, one busbw quoted for the range
        return float(4 * GiB), "size range 2-4 GB taken as 4 GiB"
    return None, ""


def _op(collective: str) -> str:
    return collective.replace("_", "-")


def _row(line: int, r: dict, rule: Rule) -> Row:
    size, size_note = _size(r["size_bytes"])
    n_gpus, csv_nodes = int(r["n_gpus"]), int(r["n_nodes"])
    nodes = rule.nodes or csv_nodes
    op = _op(r["collective"])
    time_us, time_note = _number(r["time_us"])
    busbw, bus_note = _number(r["busbw_GBps"])
    algbw, _ = _number(r["algbw_GBps"])
    derived, time_s = "", None
    if time_us is not None and not time_note:
        time_s = time_us * 1e-6
    elif size is not None and busbw:
        time_s = size / (busbw * 1e9 / busbw_factor(op, n_gpus))
        derived = f"time = size / (busbw {busbw:g} GB/s / {busbw_factor(op, n_gpus):.4g})"
    elif size is not None and algbw:
        time_s = size / (algbw * 1e9)
        derived = f"time = size / algbw {algbw:g} GB/s"
    notes = "; ".join(n for n in (size_note, bus_note) if n)
    derived = "; ".join(n for n in (derived, notes) if n)
    kept, reason = not rule.drop, rule.drop or rule.note_kept
    if kept and (size is None or time_s is None or not math.isfinite(time_s) or time_s <= 0):
        kept, reason = False, "no message size or no time/bandwidth in the row"
    if kept and size is not None and size < rule.drop_below_bytes:
        kept, reason = False, rule.drop_small_reason
    return Row(
        line=line,
        csv_nodes=csv_nodes,
        source_id=rule.source_id,
        source=r["source"],
        hardware=r["hardware"],
        op=op,
        n_gpus=n_gpus,
        size_bytes=size,
        time_s=time_s,
        derived=derived,
        system=rule.system,
        nodes=nodes,
        gpus=n_gpus,
        algo=rule.algo,
        variant=rule.variant,
        kept=kept,
        reason=reason,
        nccl=stated_nccl(r),
    )


NCCL_STATED = re.compile(r"NCCL[ _]v?(\d+\.\d+(?:\.\d+)?)")


def stated_nccl(r: dict) -> str | None:
    """The NCCL release a row states in its hardware, fabric or note columns."""
    for column in ("hardware", "fabric", "algo_or_note"):
        m = NCCL_STATED.search(r.get(column) or "")
        if m:
            return m.group(1)
    return None


class UnclassifiedRow(ValueError):
    pass


def load_rows(data_dir: Path | str | None = None) -> list[Row]:
    """Every row of data/nccl_tests.csv, kept or dropped by its rule (see RULES)."""
    return list(_load(str(data_file("nccl_tests.csv", data_dir))))


@lru_cache(maxsize=4)
def _load(path: str) -> tuple[Row, ...]:
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for line, r in enumerate(csv.DictReader(f), start=2):
            rule = next((x for x in RULES if x.matches(r)), None)
            if rule is None:
                raise UnclassifiedRow(
                    f"nccl_tests.csv line {line}: no rule for source {r['source'][:80]!r}, "
                    f"hardware {r['hardware'][:60]!r}; add one to RULES (keep or drop, with why)"
                )
            out.append(_row(line, r, rule))
    return tuple(out)


# --- predictions and errors -------------------------------------------------------------------


@dataclass(frozen=True)
class Compared:
    row: Row
    predicted_s: float
    algorithm: str
    protocol: str

    @property
    def rel_error(self) -> float:
        """(predicted - measured) / measured: positive = we predict slower than measured."""
        return (self.predicted_s - self.row.time_s) / self.row.time_s


def predict(rows: Iterable[Row], extra_catalogs: Sequence[str] = ()) -> list[Compared]:
    """Our time for each kept row, with the row's system, GPUs, nodes and forced algorithm, under the
    NCCL release the row states (comm/versions.at_stated).
    `extra_catalogs`: user catalog files layered on the built-in one (to try other constants)."""
    out = []
    for row in rows:
        if not row.kept:
            continue
        catalog = at_stated(variant_catalog(row.variant, tuple(extra_catalogs)), row.nccl)
        cost = sweep(
            row.op, [row.size_bytes], row.catalog_system, nodes=row.nodes, gpus=row.gpus, algo=row.algo, catalog=catalog
        )[0]
        out.append(Compared(row, cost.time_s, cost.algorithm, cost.protocol))
    return out


PCIE_SYSTEMS = frozenset({"h100-pcie", "l40s-pcie-nps1-degraded", "rtx-pro-6000-pcie", "rtx4090-pcie"})

TARGETS: dict[str, tuple[float, float]] = {"single-node": (0.10, 0.25), "multi-node": (0.20, math.inf)}
"""The issue's targets, (median, p90) of |relative error| of time over all sizes and GPU counts
present: single-node systems (NVSwitch and PCIe together) median <= 10% and p90 <= 25%; multi-node
median <= 20%."""


def category(row: Row) -> str:
    """Which target a row counts toward."""
    return "multi-node" if row.multi_node else "single-node"


def fabric_class(row: Row) -> str:
    """Finer grouping for the report: the scale-up fabric of single-node rows (MI300X's xGMI mesh is
    grouped with NVSwitch: a scale-up fabric inside one box, not PCIe)."""
    if row.multi_node:
        return "multi-node"
    return "single-node PCIe" if row.system in PCIE_SYSTEMS else "single-node NVSwitch/xGMI"


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), q in [0, 100]."""
    v = sorted(values)
    if not v:
        return math.nan
    k = (len(v) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    p90: float
    """Median and 90th percentile of |relative error|."""


def summarize(compared: Sequence[Compared]) -> Summary:
    errs = [abs(c.rel_error) for c in compared]
    return Summary(len(errs), percentile(errs, 50), percentile(errs, 90))


def by(compared: Iterable[Compared], key) -> dict:
    out: dict = {}
    for c in compared:
        out.setdefault(key(c), []).append(c)
    return out
