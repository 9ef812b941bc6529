"""A measurement beside the model: the runs of an nccl-tests log (or a harness JSON) grouped, and the
model's time at each of their sizes, ranks and nodes, priced once here so that the report's tables
and the measured-versus-predicted figure only read them.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ..comm.collectives import OPS, make_group, sweep
from ..comm.op import op_or_none
from ..errors import ShardbudgetError
from ..fabric.catalog import load_catalog
from ..fabric.hardware import Catalog, System
from ..measure.logs.records import MeasurementSet, Sample
from .compare import effective_impl


@dataclass(frozen=True, kw_only=True)
class MeasuredRun:
    """One run of a log (one op on one rank and node count) with the model's times beside it."""

    label: str
    """'run 0: all-reduce, 8 ranks on 1 node'."""
    samples: tuple[Sample, ...]
    """Out-of-place samples, smallest message first."""
    predicted_s: tuple[float, ...] | None
    """The model's time per sample; None where the model cannot place the run on the system."""


@dataclass(frozen=True, kw_only=True)
class MeasuredEntry:
    """A measurement file compared with the model of one system."""

    path: str
    measurement: MeasurementSet
    system: str
    runs: tuple[MeasuredRun, ...]

    @property
    def name(self) -> str:
        return os.path.basename(self.path) or self.path


def measured_groups(ms: MeasurementSet) -> list[tuple[str, list]]:
    """Out-of-place samples (nccl-tests' first columns) grouped per run: (label, samples)."""
    samples = [s for s in ms.samples if not s.in_place] or list(ms.samples)
    groups: dict[tuple, list] = {}
    for s in samples:
        groups.setdefault((s.run, s.op, s.n_ranks, s.n_nodes), []).append(s)
    out = []
    for (run, op, ranks, nodes), ss in groups.items():
        where = f"{ranks} ranks" + (f" on {nodes} node{'s' if nodes != 1 else ''}" if nodes else "")
        out.append((f"run {run}: {op}, {where}", sorted(ss, key=lambda s: s.msg_bytes)))
    return out


def predict_samples(samples, sysm: System, *, impl: str = "nccl", catalog: Catalog) -> list[float] | None:
    """The model's time for each sample's size, rank and node count; None where it cannot place them
    on `sysm` (more ranks than the nodes hold, an op the model does not price)."""
    s0 = samples[0]
    op = op_or_none(s0.op)
    if op not in OPS:  # 'reduce' (nccl-tests reduce_perf) has no cost model
        return None
    nodes = s0.n_nodes or max(1, math.ceil(s0.n_ranks / sysm.gpus_per_node))
    try:
        group = make_group(sysm, nodes=nodes, gpus=s0.n_ranks, catalog=catalog)
        return [
            c.time_s
            for c in sweep(
                op,
                [max(1.0, s.msg_bytes) for s in samples],
                sysm,
                nodes=nodes,
                gpus=s0.n_ranks,
                impl=effective_impl(group, impl),
                catalog=catalog,
            )
        ]
    except ShardbudgetError:
        return None


def measured_entry(
    ms: MeasurementSet, system: str, *, path: str | None = None, impl: str = "nccl", catalog: Catalog | None = None
) -> MeasuredEntry:
    """`ms` beside the model of `system` at the same sizes, ranks and nodes."""
    catalog = catalog or load_catalog()
    sysm, runs = catalog.system(system), []
    for label, samples in measured_groups(ms):
        pred = predict_samples(samples, sysm, impl=impl, catalog=catalog)
        runs.append(
            MeasuredRun(label=label, samples=tuple(samples), predicted_s=tuple(pred) if pred is not None else None)
        )
    return MeasuredEntry(
        path=str(path if path is not None else ms.source), measurement=ms, system=system, runs=tuple(runs)
    )


__all__ = ["MeasuredEntry", "MeasuredRun", "measured_entry", "measured_groups", "predict_samples"]
