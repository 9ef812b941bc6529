"""Estimators of the engines' custom all-reduce kernels (launch, per peer, one- and two-shot
efficiencies, the two-shot's second barrier, the multi-node NVLink kernels) on their measured rows.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from ..comm.collectives import candidates, make_group
from ..comm.custom_kernels import KERNEL_OF, mnnvl, read_class, two_shot_extra_s
from ..comm.lines import pick
from ..fabric.ring_path import ring_path
from ..engines.allreduce import allreduce_ranges_for
from ..fabric.hardware import Catalog
from .fit_nccl import _line_fit
from .samples import Sample


_EFF = {"one-shot": "one_shot_efficiency", "two-shot": "two_shot_efficiency"}


@dataclass
class _Points:
    """One engine's rows, sorted by what they measure (fit_engines)."""

    floors: dict[str, dict[int, list[float]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    """[generation][GPUs] -> one-shot times at <= 4 KiB: the launch and per-peer floor."""
    shots: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    """[one-shot / two-shot] -> (seconds at the model's efficiency, time beyond the latency), pooled."""
    by_gpus: dict[tuple[str, int], list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    two_by_arch: dict[str, list[tuple[int, float, float]]] = field(default_factory=lambda: defaultdict(list))
    one_by_arch: dict[tuple[str, int], list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    across: dict[tuple[str, int], list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    """Across an NVL72's trays (the multi-node NVLink kernels), by kernel and GPU count."""
    across_floor: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    across_cap: dict[int, float] = field(default_factory=dict)
    """[GPUs] -> the GPU's NVLink line rate per direction over the ring's busbw: the most a kernel's
    share of the ring busbw can be (its bytes cross the GPU's own ports)."""


def fit_engines(rows: Sequence[tuple[str, Sample]], catalog: Catalog) -> dict[str, dict]:
    """Per engine: launch per GPU generation (512 B-4 KiB one-shot rows, less per_peer x (g-2)),
    per_peer (median over generations of the floor's slope in g), one- and two-shot efficiencies
    (rows whose bandwidth term is at least their latency: algbw over the model's). A row of an older
    release with a preset of its own (trtllm-1.0) fits its engine's kernels (KERNEL_OF), the kernel
    that ran it told by its own release's rule."""
    out: dict[str, dict] = {}
    for engine in sorted({KERNEL_OF.get(e, e) for e, _ in rows}):
        if engine not in catalog.engines:
            continue
        k = catalog.engines[engine]
        pts = _engine_points(engine, k, rows, catalog)
        fit = _floor_fit(pts.floors, k.per_peer_s)
        for algo, key in _EFF.items():
            _shot_fit(fit, algo, key, pts)
        floor = _line_fit([(g - 2, statistics.median(v)) for g, v in pts.across_floor.items()])
        if floor is not None and floor[1] >= 0:
            fit["mnnvl_launch_s"], fit["mnnvl_per_peer_s"] = floor
        if pts.across:
            fit.update(_fit_mnnvl(pts.across, pts.across_cap))
        out[engine] = fit
    return out


def _engine_points(engine: str, k, rows: Sequence[tuple[str, Sample]], catalog: Catalog) -> _Points:
    """The rows of `engine`'s kernels (KERNEL_OF), each where the model runs one-shot or two-shot."""
    pts = _Points()
    for e, x in rows:
        if KERNEL_OF.get(e, e) != engine:
            continue
        s = catalog.system(x.system)
        group = make_group(s, gpus=x.gpus, catalog=catalog)
        c = pick(candidates(group, "all-reduce", e), x.size_bytes)
        if c.algorithm not in ("one-shot", "two-shot"):
            continue
        if mnnvl(group, k):
            # across an NVL72's trays: the engine's multi-node NVLink kernels, fitted apart
            if c.algorithm == "one-shot" and x.size_bytes <= 4096:
                pts.across_floor[x.gpus].append(x.time_s)
            elif x.size_bytes >= 65536:
                pts.across[(c.algorithm, x.gpus)].append(_transfer_point(k, c, x, group))
                path = ring_path(s, x.gpus)
                pts.across_cap[x.gpus] = path.peak_bytes_per_s / path.busbw_bytes_per_s
            continue
        if c.algorithm == "one-shot" and x.size_bytes <= 4096:
            pts.floors[s.gpu.arch][x.gpus].append(x.time_s)
        elif x.size_bytes >= 65536:
            # (seconds per byte at the model's efficiency, time beyond the one-shot latency)
            base_latency = c.latency_s - (two_shot_extra_s(group, k) if c.algorithm == "two-shot" else 0.0)
            eff = k.efficiency(1 if c.algorithm == "one-shot" else 2, x.gpus, read_class(s, x.gpus))
            point = (x.size_bytes / c.algbw_bytes_per_s * eff, x.time_s - base_latency)
            pts.shots[c.algorithm].append(point)
            pts.by_gpus[(c.algorithm, x.gpus)].append(point)
            if c.algorithm == "one-shot" and _rule_kind(e, group, x.size_bytes) == "one-shot":
                pts.one_by_arch[(read_class(s, x.gpus), x.gpus)].append(point)
            if c.algorithm == "two-shot":
                pts.two_by_arch[s.gpu.arch].append((x.gpus, *point))
    return pts


def _floor_fit(floors: Mapping[str, Mapping[int, list[float]]], per_peer_default: float) -> dict:
    """per_peer_s (the median over generations of the floor's slope in GPUs) and launch_s per generation."""
    slopes = []
    for by_g in floors.values():
        fit = _line_fit([(g - 2, statistics.median(v)) for g, v in by_g.items()])
        if fit is not None:
            slopes.append(max(0.0, fit[1]))
    per_peer = float(statistics.median(slopes)) if slopes else per_peer_default
    launch = {
        a: float(statistics.median(t - per_peer * (g - 2) for g, v in by_g.items() for t in v))
        for a, by_g in floors.items()
    }
    return {"per_peer_s": per_peer, "launch_s": launch}


def _shot_fit(fit: dict, algo: str, key: str, pts: _Points) -> None:
    """One kernel's efficiency table into `fit`: time beyond the latency = extra + (n / algbw at
    efficiency 1) / efficiency, least squares pooled for the extra and the default, then the slope
    alone by GPU count; the one-shot's by generation, the two-shot's second barrier by generation."""
    line = _line_fit(pts.shots.get(algo, []))
    if line is None or line[1] <= 0:
        return
    extra = max(0.0, line[0]) if algo == "two-shot" else 0.0
    table = {"default": min(1.0, 1 / line[1])}
    for (a, g), points in pts.by_gpus.items():
        if a == algo and len(points) >= 3:
            slope = sum(x * (y - extra) for x, y in points) / sum(x * x for x, y in points)
            if slope > 0:
                table[str(g)] = min(1.0, 1 / slope)
    fit[key] = MappingProxyType(table)
    if algo == "one-shot":
        fit["one_shot_efficiency_by_arch"] = _one_shot_by_arch(pts.one_by_arch)
    if algo == "two-shot":
        # the second barrier per GPU generation: its rows' time beyond the pooled efficiency's
        # transfer, median (one constant for all priced H100 TP4 at 17.7 us where vLLM measures 11.4)
        fit["two_shot_extra_s"] = MappingProxyType(
            {"default": extra}
            | {
                a: max(0.0, float(statistics.median(y - x / table.get(str(g), table["default"]) for g, x, y in rows)))
                for a, rows in pts.two_by_arch.items()
                if len(rows) >= 3
            }
        )


def _transfer_point(k, c, x: Sample, group) -> tuple[float, float]:
    """(seconds of transfer at efficiency 1, time beyond the kernel's latency) for the engine's
    multi-node NVLink kernels on `group`; a two-shot's latency holds its second Lamport stage
    (custom_kernels.two_shot_extra_s)."""
    shots = 1 if c.algorithm == "one-shot" else 2
    eff = k.efficiency(shots, x.gpus, group.system.gpu.arch, mnnvl=True)
    return x.size_bytes / c.algbw_bytes_per_s * eff, x.time_s - c.latency_s


def _fit_mnnvl(points: Mapping[tuple[str, int], list[tuple[float, float]]], caps: Mapping[int, float]) -> dict:
    """The multi-node NVLink kernels' own rates (TensorRT-LLM's MNNVL one-shot and two-shot, which
    measured_comm.csv times on GB300 across trays): each kernel's share of the ring busbw by GPU
    count, the slope through the origin of the time beyond the kernel's latency. The two-shot's
    second stage is not fitted: a line's intercept over 256 KiB-512 MiB rows came out 0 (the 1 us
    stage is lost in ms-long rows), which priced the two-shot below the one-shot at their switch
    where the rows rise (5.11 us at 128 KiB one-shot, 6.08 at 256 KiB two-shot on 8 GPUs); the
    stage is one NVLink LL step (custom_kernels.two_shot_extra_s).

    A share is capped where the GPU's ports bind (`caps`: NVLink line rate per direction over the
    ring's busbw, 900 / 680 GB/s = 1.32 on an NVL72), not at the ring's busbw: the one-shot's rows
    past its launch give 2.2x the ring busbw (GB300, 8 GPUs: 4.55 us at 64 KiB, 5.11 at 128 KiB;
    the launch rows overlap its transfer), and every rank receives its g - 1 peers' n through its
    own links whatever the group's size, so the one-shot's share pooled over every group size (8 and
    16 GPUs) stands for the sizes not measured (32-72 GPUs). Capped at 1.0, it had priced the one-shot
    at 32-72 GPUs above the two-shot at flashinfer's switch (1 MiB of group data: 8.03 -> 7.98 us at
    32 KiB on 32 GPUs). The two-shot's unmeasured sizes keep 1.0 (its 16-GPU 0.72 is the kernel's,
    not extrapolated)."""
    fit: dict = {}
    cap = min(caps.values(), default=1.0)
    for algo, key in (("one-shot", "mnnvl_one_shot_efficiency"), ("two-shot", "mnnvl_two_shot_efficiency")):
        table, pooled = {}, []
        for (a, g), pts in sorted(points.items()):
            if a != algo:
                continue
            pooled += pts
            if len({x for x, _ in pts}) >= 2:
                slope = sum(x * y for x, y in pts) / sum(x * x for x, _ in pts)
                if slope > 0:
                    table[str(g)] = min(caps.get(g, 1.0), 1 / slope)
        default = 1.0
        if algo == "one-shot" and len({x for x, _ in pooled}) >= 2:
            slope = sum(x * y for x, y in pooled) / sum(x * x for x, _ in pooled)
            default = min(cap, 1 / slope) if slope > 0 else 1.0
        if table:
            fit[key] = MappingProxyType({"default": default} | table)
    return fit


def _rule_kind(engine: str, group, msg_bytes: float) -> str:
    """What the engine's whole rule (engines/*.toml, by release) runs at this size: a row the kernel
    limits of custom_allreduce.toml call one-shot may be the symmetric-memory path in the release
    measured (vLLM 0.19 on 2 B200s: one-shot below 2 MiB only). Token rules read at hidden 8192."""
    r = allreduce_ranges_for(engine, group, 16384.0)
    return (r.kinds + r.at_edge)[int(r.kind_index(np.array([msg_bytes]))[0])]


def _one_shot_by_arch(points: Mapping[tuple[str, int], list[tuple[float, float]]]) -> MappingProxyType:
    """One-shot's share of the ring busbw per GPU generation and count: the slope through the origin
    of (transfer at efficiency 1, time beyond the latency) over that generation's rows (two or more
    sizes): each generation's kernel reads its peers over its own NVLink at its own rate."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (arch, g), pts in points.items():
        if len({x for x, _ in pts}) >= 2:
            slope = sum(x * y for x, y in pts) / sum(x * x for x, _ in pts)
            if slope > 0:
                out[arch][str(g)] = min(1.0, 1 / slope)
    return MappingProxyType({a: MappingProxyType(t) for a, t in sorted(out.items())})
