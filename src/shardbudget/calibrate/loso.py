"""Leave-one-system-out validation of the collective model (benchmarks/loso.py prints it, `make bench`).

For every system with rows in measured_comm.csv or nccl_tests.csv: start from the catalog with every
fitted constant put back to its no-data value (constants.neutral), fit them all on the other
systems' rows (fit.calibrate; a GPU generation left without rows takes the others' mean),
predict the held-out system, and score per system |predicted - measured| / measured time of

  NCCL all-reduce   single node, 512 B-512 MiB (measured_comm.csv at 2/4/8 GPUs and the system's
                    nccl_tests.csv rows)
  custom all-reduce the engines' custom kernels under CUDA graphs (measured_comm.csv): the rows where
                    the engine's source runs its own kernel (engines.toml's group sizes, P2P,
                    NVLink and buffer limits); above those the engines call NCCL through their own
                    communicators, which is not a custom kernel and is not scored
  multi-node        nccl_tests.csv rows over 2+ hosts (variants as nccl_rules.VARIANTS)

against the issue's targets (NCCL median <= 10%, p90 <= 25%; custom median <= 12%, p90 <= 30%;
multi-node median <= 15%, `TARGETS`). `row_lines` lists every single-node NCCL row of a fold with
its measured and held-out predicted time, the error and the line that ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..comm.collectives import make_group, sweep
from ..comm.custom_kernels import runs_custom_kernel
from ..comm.versions import at_stated, stated_release
from ..engines.releases import ENGINE_WORDS, line_of, preset_for
from ..fabric.catalog import load_catalog
from ..fabric.hardware import Catalog
from . import measured_comm, nccl_tests
from .constants import Calibration, apply, neutral
from .fallback import held_out
from .fit import calibrate
from .nccl_rules import variant_catalog
from .samples import engine_samples, samples, xla_all_gather_samples, xla_samples

MAX_BYTES = 512 * 2**20
TARGETS = {"nccl": (0.10, 0.25), "custom": (0.12, 0.30), "multi": (0.15, None)}
LABELS = {"nccl": "NCCL all-reduce (1 node)", "custom": "custom all-reduce (graph)", "multi": "multi-node"}


@dataclass(frozen=True)
class Case:
    """One measured time to predict."""

    metric: str
    system: str
    gpus: int
    nodes: int
    size_bytes: float
    time_s: float
    impl: str = "nccl"
    algo: str = "auto"
    variant: str | None = None
    nccl: str | None = None
    """The NCCL release the row was measured with (or states), priced at its rules."""
    release: str = ""
    """The release the row states, in words ('NCCL 2.29.2', 'vllm-0.19 (vLLM 0.14.0)')."""
    lacks: str | None = None
    """Why the catalog has no rules of that release's own (priced by the nearest), None where it has."""


def cases(data_dir: Path | None) -> list[Case]:
    catalog = load_catalog()
    out = []
    for r in measured_comm.load_rows(data_dir):
        if r.op != "all-reduce" or r.size_bytes > MAX_BYTES:
            continue
        if r.library == "nccl":
            words, lacks = stated_release(catalog, r.version)
            out.append(
                Case("nccl", r.system, r.gpus, 1, r.size_bytes, r.time_s, nccl=r.version, release=words, lacks=lacks)
            )
        elif r.mode == "graph" and runs_custom_kernel(
            make_group(r.system, gpus=r.gpus, catalog=catalog), r.library, r.size_bytes
        ):
            out.append(
                Case(
                    "custom",
                    r.system,
                    r.gpus,
                    1,
                    r.size_bytes,
                    r.time_s,
                    impl=r.library,
                    **engine_release(r.library, r.version),
                )
            )
    for r in nccl_tests.load_rows(data_dir):
        if r.kept and r.op == "all-reduce":
            words, lacks = stated_release(catalog, r.nccl)
            out.append(
                Case(
                    "multi" if r.multi_node else "nccl",
                    r.system,
                    r.gpus,
                    r.nodes,
                    r.size_bytes,
                    r.time_s,
                    algo=r.algo,
                    variant=r.variant,
                    nccl=r.nccl,
                    release=words,
                    lacks=lacks,
                )
            )
    return out


@lru_cache(maxsize=8)
def _variant_base(variant: str | None) -> Catalog:
    return variant_catalog(variant)


def fold_catalog(cal: Calibration, variant: str | None) -> Catalog:
    return apply(neutral(_variant_base(variant)), cal)


def engine_release(preset: str, version: str) -> dict:
    """A measured_comm.csv engine row's release in words, and why no preset was read at it (the
    preset of the oldest release at or after it prices it: engines/releases.preset_for)."""
    line = line_of(preset)
    if line is None:
        return {"release": f"{preset} ({version})", "lacks": None}
    choice = preset_for(line, version)
    return {
        "release": f"{preset} ({ENGINE_WORDS[line]} {version})",
        "lacks": None if choice.exact else f"no preset read at {version}: priced by {choice.preset}",
    }


def case_errors(cal: Calibration, rows: list[Case]) -> list[tuple[Case, float]]:
    """Each case with its |predicted - measured| / measured under `cal`."""
    out = []
    catalogs: dict[str | None, Catalog] = {}
    for c in rows:
        if c.variant not in catalogs:
            catalogs[c.variant] = fold_catalog(cal, c.variant)
        system = c.variant or c.system
        cost = sweep(
            "all-reduce",
            [c.size_bytes],
            system,
            nodes=c.nodes,
            gpus=c.gpus,
            algo=c.algo,
            impl=c.impl,
            catalog=at_stated(catalogs[c.variant], c.nccl),
        )[0]
        out.append((c, abs(cost.time_s / c.time_s - 1)))
    return out


def errors(cal: Calibration, rows: list[Case]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {k: [] for k in TARGETS}
    for c, e in case_errors(cal, rows):
        out[c.metric].append(e)
    return out


def release_records(held: list[tuple[Case, float]]) -> list[dict]:
    """The held-out errors per metric and stated release: rows, median, p90, and why the catalog
    lacks that release's own rules (None where it has them)."""
    groups: dict[tuple, list[float]] = {}
    for c, e in held:
        groups.setdefault((c.metric, c.release, c.lacks), []).append(e)
    return [
        {
            "metric": m,
            "release": rel,
            "lacks": lacks,
            "rows": len(errs),
            "median": summary(errs)[0],
            "p90": summary(errs)[1],
        }
        for (m, rel, lacks), errs in sorted(groups.items(), key=lambda kv: kv[0][:2])
    ]


def release_lines(held: list[tuple[Case, float]]) -> list[str]:
    lines = [
        "Per release the rows state, held out ([lacks]: no rules of that release's own; priced by the nearest)",
        f"  {'metric':8} {'release':34} {'n':>5} {'median':>8} {'p90':>8}",
    ]
    for r in release_records(held):
        lines.append(
            f"  {r['metric']:8} {r['release']:34} {r['rows']:>5} {r['median']:>8.1%} {r['p90']:>8.1%}"
            + (f"  [lacks] {r['lacks']}" if r["lacks"] else "")
        )
    return lines


def row_lines(cal: Calibration, rows: list[Case]) -> list[str]:
    """Each single-node NCCL case held out: GPUs, size, measured, predicted, error, the line that ran."""
    out = []
    for c in sorted((c for c in rows if c.metric == "nccl"), key=lambda c: (c.gpus, c.algo, c.size_bytes)):
        cost = sweep(
            "all-reduce",
            [c.size_bytes],
            c.variant or c.system,
            nodes=c.nodes,
            gpus=c.gpus,
            algo=c.algo,
            impl=c.impl,
            catalog=at_stated(fold_catalog(cal, c.variant), c.nccl),
        )[0]
        out.append(
            f"    {c.gpus:>3} GPUs {c.algo:5} {c.size_bytes:>12.0f} B  measured {c.time_s * 1e6:>10.1f} us  "
            f"predicted {cost.time_s * 1e6:>10.1f} us  {cost.time_s / c.time_s - 1:>+7.1%}  "
            f"{cost.algorithm}/{cost.protocol}"
        )
    return out


def summary(errs: list[float]) -> tuple[float, float] | None:
    if not errs:
        return None
    return nccl_tests.percentile(errs, 50), nccl_tests.percentile(errs, 90)


def held_out_errors(metric: str, data_dir: Path | None) -> dict[str, list[float]]:
    """|predicted - measured| / measured of every `metric` row, each system predicted by constants
    fitted without it, by system (pool the lists for the figure over every system)."""
    rows = [c for c in cases(data_dir) if c.metric == metric]
    return {
        s: errors(fit_without(s, data_dir), [c for c in rows if c.system == s])[metric]
        for s in sorted({c.system for c in rows})
    }


def fit_without(system: str | None, data_dir: Path | None) -> Calibration:
    xs = [x for x in samples(data_dir) if x.system != system]
    eng = [(e, x) for e, x in engine_samples(data_dir) if x.system != system]
    base = neutral(load_catalog())
    # XLA's GB200 NVL72 table (not a system's nccl-tests or measured_comm rows: whole XLA executables,
    # used only for shapes, NVLS's growth with the group) enters every fold as it enters the calibration
    cal = calibrate(
        xs, base=base, engine_rows=eng, xla=xla_samples(data_dir), xla_all_gather=xla_all_gather_samples(data_dir)
    )
    return held_out(cal, base, system) if system else cal
