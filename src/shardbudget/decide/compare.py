"""Systems side by side at the message sizes that matter: what decode and prefill really send."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..comm.collectives import (
    Cost,
    crossover_bytes,
    custom_allreduce_allowed,
    make_group,
    normalize_op,
    require_peers,
    sweep,
)
from ..fabric.hardware import System
from ..model import ModelConfig, hidden_message_bytes
from ..units import format_rate, format_seconds
from .request import Request


@dataclass(frozen=True)
class CompareRow:
    msg_bytes: float
    label: str
    costs: tuple[Cost, ...]

    @property
    def ratio(self) -> float:
        times = [c.time_s for c in self.costs]
        return max(times) / min(times)


# compare --plot: 8 B to 4 GiB, 113 sizes (a factor of 2^(29/112) apart: smooth on a log axis)
CURVE_MIN_BYTES, CURVE_MAX_BYTES, CURVE_POINTS = 8, 2**32, 113


@dataclass(frozen=True)
class CompareResult:
    op: str
    gpus: int
    nodes: int
    systems: tuple[str, ...]
    crossovers: tuple[float, ...]
    notes: tuple[str, ...]
    rows: tuple[CompareRow, ...] = field(default=())
    impl: str = "nccl"
    """The implementation asked for ('nccl' or 'custom'); where a system cannot run custom kernels
    its costs are NCCL's (`effective_impl`)."""
    curves: tuple[tuple[Cost, ...], ...] = field(default=(), compare=False, repr=False)
    """Per system: the collective over 8 B to 4 GiB (CURVE_*), priced as the rows are, for the figure."""

    @property
    def gpus_label(self) -> str:
        return f"{self.gpus} GPUs over {self.nodes} node(s)"

    def to_dict(self) -> dict:
        return {
            "op": self.op,
            "gpus": self.gpus,
            "nodes": self.nodes,
            "impl": self.impl,
            "systems": list(self.systems),
            "crossover_bytes": dict(zip(self.systems, self.crossovers)),
            "rows": [
                {
                    "bytes": r.msg_bytes,
                    "label": r.label,
                    "ratio": r.ratio,
                    "costs": {s: c.to_dict() for s, c in zip(self.systems, r.costs)},
                }
                for r in self.rows
            ],
        }


def decode_message_sizes(cfg: ModelConfig, batches: Sequence[int], act_dtype: str = "bf16") -> list[tuple[float, str]]:
    """TP all-reduce message per decode step (model.hidden_message_bytes: batch x hidden x activation
    bytes, per rank), and a 4096-token prefill's."""
    out = [(float(hidden_message_bytes(cfg, b, act_dtype)), f"decode {cfg.name} batch {b}") for b in batches]
    out.append((float(hidden_message_bytes(cfg, 4096, act_dtype)), f"prefill {cfg.name} 4096 tokens"))
    return out


def compare_systems(
    req: Request,
    systems: Sequence[str | System] | None = None,
    *,
    gpus: int | None = None,
    op: str = "all-reduce",
    extra_sizes: tuple[float, ...] = (8.0, 1 << 20, 1 << 30),
    curves: bool = False,
) -> CompareResult:
    """`op` on each of `systems` (default: the request's) over the request's nodes, at the messages
    its model sends per decode step at its batches, priced at the NCCL release its engine installs
    with its implementation (NCCL unless it forces the engines' custom kernels); with `curves`, also
    over 8 B to 4 GiB for the figure."""
    sc = req.scenario
    catalog, nodes, impl = sc.catalog, sc.node_count, sc.impl or "nccl"
    op = normalize_op(op)
    entries = [s if isinstance(s, System) else catalog.system(s) for s in (systems or [sc.system])]
    if gpus is None:  # compare like with like: the GPU count every system can provide
        gpus = min(nodes * s.gpus_per_node for s in entries)
    groups = [require_peers(make_group(s, nodes=nodes, gpus=gpus, catalog=catalog), "compare") for s in entries]
    sizes = decode_message_sizes(sc.model, req.batches, sc.precision.activations)
    sizes += [(n, "reference") for n in extra_sizes if all(n != m for m, _ in sizes)]
    sizes.sort(key=lambda x: x[0])
    per_system = [
        sweep(
            op, [n for n, _ in sizes], g.system, nodes=nodes, gpus=gpus, impl=effective_impl(g, impl), catalog=catalog
        )
        for g in groups
    ]
    rows = tuple(CompareRow(n, label, tuple(costs[i] for costs in per_system)) for i, (n, label) in enumerate(sizes))
    curve_sizes = [float(s) for s in np.geomspace(CURVE_MIN_BYTES, CURVE_MAX_BYTES, CURVE_POINTS)] if curves else []
    lines = (
        tuple(
            tuple(
                sweep(op, curve_sizes, g.system, nodes=nodes, gpus=gpus, impl=effective_impl(g, impl), catalog=catalog)
            )
            for g in groups
        )
        if curves
        else ()
    )
    crossovers = tuple(crossover_bytes(g, op, effective_impl(g, impl)) for g in groups)
    notes = tuple(
        f"latency floor {format_seconds(per_system[i][0].latency_s)}, "
        f"large-message busbw {format_rate(per_system[i][-1].busbw_bytes_per_s)}"
        + (f"; degraded: {entries[i].degraded}" if entries[i].degraded else "")
        for i in range(len(groups))
    )
    return CompareResult(
        op=op,
        gpus=gpus,
        nodes=nodes,
        systems=tuple(s.name for s in entries),
        crossovers=crossovers,
        notes=notes,
        rows=rows,
        impl=impl,
        curves=lines,
    )


def effective_impl(group, impl: str) -> str:
    """The implementation `group` runs: `--impl custom` falls back to NCCL where the hardware cannot
    run custom kernels."""
    return impl if impl == "nccl" or custom_allreduce_allowed(group) is None else "nccl"


__all__ = ["CompareResult", "CompareRow", "compare_systems", "decode_message_sizes", "effective_impl"]
