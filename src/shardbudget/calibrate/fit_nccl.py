"""Estimators of NCCL's measured constants: ring efficiency by group size, each GPU generation's
small-message floors (LL, LL128, Simple), NVLS's small-message fixed cost and its efficiency by fabric.
Each a closed-form estimator on a named subset of rows (the package docstring lists them).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

import numpy as np

from ..comm.collectives import candidates, make_group
from ..comm.lines import pick
from ..comm.nccl_algos import base_latency_s, nvls_small
from ..comm.op import busbw_factor
from ..comm.versions import at_stated
from ..fabric.hardware import Catalog
from ..fabric.nccl_constants import ArchFloor
from ..fabric.ring_path import ring_path
from .constants import HUGE, LARGE, US
from .samples import Sample


def _chosen(catalog: Catalog, x: Sample):
    catalog = at_stated(catalog, x.nccl)
    group = make_group(catalog.system(x.system), nodes=x.nodes, gpus=x.gpus, catalog=catalog)
    return group, pick(candidates(group, "all-reduce"), x.size_bytes)


def _single(xs: Iterable[Sample]) -> list[Sample]:
    return [x for x in xs if x.nodes == 1 and x.algo == "auto"]


def fit_ring_efficiency(xs: Sequence[Sample], catalog: Catalog) -> dict[int, float]:
    """Rings (chosen by NCCL, or forced) of 2 and 4 GPUs at >= 256 MiB on NVSwitch systems."""
    ratios: dict[int, list[float]] = defaultdict(list)
    for x in xs:
        s = catalog.system(x.system)
        if (
            x.nodes != 1
            or x.algo not in ("auto", "ring")
            or x.gpus not in (2, 4)
            or x.size_bytes < 2 * LARGE
            or s.topology != "switch"
        ):
            continue
        group, c = _chosen(catalog, x)
        if x.algo == "ring":
            c = min(
                (k for k in candidates(group, "all-reduce") if k.algorithm == "ring"),
                key=lambda k: k.select_time_s(x.size_bytes),
            )
        if c.algorithm != "ring" or c.protocol != "simple":
            continue
        busbw = x.size_bytes / (x.time_s - c.latency_s) * busbw_factor("all-reduce", x.gpus)
        ratios[x.gpus].append(busbw / ring_path(s, x.gpus).busbw_bytes_per_s)
    return {g: float(statistics.median(v)) for g, v in ratios.items()}


def _line_fit(points: list[tuple[float, float]]) -> tuple[float, float] | None:
    """Least squares y = a + b x over (x, y); None with fewer than two distinct x."""
    if len({p[0] for p in points}) < 2:
        return None
    a = np.array([[1.0, p[0]] for p in points])
    (c0, c1), *_ = np.linalg.lstsq(a, np.array([p[1] for p in points]), rcond=None)
    return float(c0), float(c1)


def fit_floors(
    xs: Sequence[Sample], catalog: Catalog, *, rows: str = "measured_comm", shape: ArchFloor | None = None
) -> dict[str, ArchFloor]:
    """Per GPU generation: LL (and LL128) and Simple offsets on baseLat and factors on the NVLink hop
    rows; NVLS's small-message fixed cost per rank. `rows`: "measured_comm" (the sweeps made for
    this, LL at <= 8 KiB), or "nccl_tests": the published single-node tables of switch and PCIe
    boxes, LL and Simple rows whose bandwidth term is at most their latency term (their sizes are
    sparser, so a size cut would leave too few); what a generation without sweeps is fitted on.
    A generation measured over NVLink at one group size only (H200's published table: 8 GPUs)
    fixes one point of its floor line, not the line: with `shape` (the other generations' mean,
    pooled_floor) it takes that line scaled to its own point (_scaled_floor), else NCCL's hop."""
    by, pcie_offsets = _floor_points(xs, catalog, sweeps=rows == "measured_comm")
    out: dict[str, ArchFloor] = {}
    for arch in sorted({k[0] for k in by} | {k[0] for k in pcie_offsets}):
        offset, scale = {}, {}
        for proto in ("ll", "simple"):
            line = _floor_line(
                by.get((arch, proto), {}),
                pcie_offsets.get((arch, proto), []),
                catalog.nccl.base_latency_s["ring"][proto],
                proto,
                shape,
            )
            if line is not None:
                offset[proto], scale[proto] = line
        if "ll" not in offset:
            continue
        offset.setdefault("simple", offset["ll"])
        scale.setdefault("simple", 1.0)
        offset["ll128"], scale["ll128"] = offset["ll"], scale["ll"]
        out[arch] = ArchFloor(
            base_offset_s=MappingProxyType(offset),
            nvlink_hop_scale=MappingProxyType(scale),
            source="shardbudget.calibrate fit_floors",
        )
    return out


def _floor_points(
    xs: Sequence[Sample], catalog: Catalog, *, sweeps: bool
) -> tuple[dict[tuple[str, str], dict[int, list[tuple[float, float]]]], dict[tuple[str, str], list[float]]]:
    """The latency-bound ring rows of fit_floors: over NVLink, (steps x NCCL's hop, residual - base)
    per (generation, protocol) and GPU count; over PCIe, the offsets (residual - base - steps x hop)."""
    by: dict[tuple[str, str], dict[int, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    pcie_offsets: dict[tuple[str, str], list[float]] = defaultdict(list)
    for x in _single(xs):
        s = catalog.system(x.system)
        if (x.source == "measured_comm") != sweeps or x.gpus < 2 or (not sweeps and s.topology == "mesh"):
            continue
        group, c = _chosen(catalog, x)
        residual = x.time_s - x.size_bytes / c.algbw_bytes_per_s
        if c.algorithm != "ring":
            continue
        # latency-dominated rows only: LL at <= 8 KiB, Simple where its bandwidth term is at most
        # as large as its latency term (else the residual is mostly bandwidth noise)
        bandwidth_bound = x.size_bytes / c.algbw_bytes_per_s > max(residual, 0.0)
        if (
            (c.protocol == "ll" and (x.size_bytes > 8192 if sweeps else bandwidth_bound))
            or (c.protocol == "simple" and bandwidth_bound)
            or c.protocol == "ll128"
        ):
            continue
        path = ring_path(s, x.gpus)
        steps = 2 * (x.gpus - 1)
        base = catalog.nccl.base_latency_s["ring"][c.protocol]
        key = (s.gpu.arch, c.protocol)
        if path.nccl_link == "nvlink":
            # residual - base = offset + steps * hop * scale: collect (steps * hop, residual - base)
            by[key][x.gpus].append((steps * path.hop_latency_s[c.protocol], residual - base))
        else:
            pcie_offsets[key].append(residual - base - steps * path.hop_latency_s[c.protocol])
    return by, pcie_offsets


def _floor_line(
    by_gpus: Mapping[int, list[tuple[float, float]]],
    pcie_offsets: Sequence[float],
    base_s: float,
    proto: str,
    shape: ArchFloor | None,
) -> tuple[float, float] | None:
    """(offset, hop scale) of one generation and protocol: a line through the medians of its GPU
    counts over NVLink; at one GPU count, `shape`'s line scaled to it, else an offset on NCCL's hop;
    over PCIe only, the median offset on NCCL's hop."""
    pts = [(statistics.median(p[0] for p in v), statistics.median(p[1] for p in v)) for v in by_gpus.values()]
    fit = _line_fit(pts)
    if fit is not None and fit[1] > 0:
        return fit
    if pts and shape is not None:  # one group size: the others' line, scaled to it
        return _scaled_floor(pts[0], base_s, shape.base_offset_s[proto], shape.nvlink_hop_scale[proto])
    if pts:  # one group size, nothing to shape it: offset only, NCCL's hop
        return statistics.median(p[1] - p[0] for p in pts), 1.0
    if pcie_offsets:
        return statistics.median(pcie_offsets), 1.0
    return None


def fit_ll128_hop(xs: Sequence[Sample], catalog: Catalog) -> dict[str, float]:
    """[GPU generation] -> the factor on NCCL's NVLink LL128 ring step (hwLat 1.9 us) that the
    all-gather rows `xs` (xla_all_gather_samples) give where NCCL's estimate runs ring LL128: the
    median of (t - n / algbw - LL128's base) / (g - 1), over 1.9 us. An all-gather's ring has g - 1
    steps, so a 72-GPU one holds 71 of them: the step, not the launch, sets its intercept. XLA's
    GB200 rows at 36-72 GPUs give 0.8-1.4 us a step (median 1.20), near an LL step on Blackwell
    (0.6 x 2.25 = 1.35 us), not NCCL's 1.9 us times LL's factor (4.3 us, which priced LL128 above
    Simple and made the time fall at NCCL's LL128 -> Simple switch). A generation without such rows
    keeps LL's factor (fit_floors)."""
    hops: dict[str, list[float]] = defaultdict(list)
    for x in xs:
        group = make_group(catalog.system(x.system), nodes=1, gpus=x.gpus, catalog=catalog)
        c = pick(candidates(group, "all-gather"), x.size_bytes)
        if c.algorithm != "ring" or c.protocol != "ll128":
            continue
        base = base_latency_s(group, "ring", "ll128", True)
        step = (x.time_s - x.size_bytes / c.algbw_bytes_per_s - base) / (x.gpus - 1)
        hops[group.system.gpu.arch].append(step / ring_path(group.system, x.gpus).hop_latency_s["ll128"])
    return {arch: float(statistics.median(v)) for arch, v in hops.items() if v}


def _scaled_floor(point: tuple[float, float], base_s: float, offset_s: float, scale: float) -> tuple[float, float]:
    """(offset, hop scale) of the floor line base + offset + x scale (x = the ring's steps x NCCL's
    NVLink hop) that is `k` times the shape's line, k set so that it passes through `point` (x, time
    less base). A ring LL floor is one chain of latencies: the kernel's launch and first flag, then
    one NVLink flag round trip per step, at the generation's clock and NVLink latency, so a faster
    generation is faster in both parts (measured_comm.csv at 2-8 GPUs, NCCL 2.27-2.29: Ampere
    8.3 us + 0.95 us/step, Blackwell 6.7 + 1.35, Hopper 4.9 + 0.77; NCCL's tuning.cc has one
    baseLat and one NVLink hop for every generation, 6.6 + 0.6). One point and the others' mean
    line scaled to it give the line: Hopper from H200's 8-GPU table alone is 0.71 x the Ampere /
    Blackwell mean, 5.3 us + 0.81 us/step, and predicts H100's 2-GPU floor at 6.9 us (measured
    6.4; an offset on NCCL's hop gives 9.5)."""
    x, y = point
    k = (base_s + y) / (base_s + offset_s + scale * x)
    return k * (base_s + offset_s) - base_s, k * scale


def pooled_floor(floors: Mapping[str, ArchFloor]) -> ArchFloor | None:
    """The mean of the generations fitted on NVLink rows: what a generation without rows gets."""
    floors = {a: f for a, f in floors.items() if f.nvlink_hop_scale["ll"] != 1.0}
    if not floors:
        return None

    def mean(get):
        return {p: float(np.mean([get(f)[p] for f in floors.values()])) for p in ("ll", "ll128", "simple")}

    bases = [f.nvls_small_latency_s for f in floors.values() if f.nvls_small_latency_s]
    # a pooled generation has no LL128 rows of its own: its LL128 takes its LL parameters (fit_floors)
    offset, scale = mean(lambda f: f.base_offset_s), mean(lambda f: f.nvlink_hop_scale)
    offset["ll128"], scale["ll128"] = offset["ll"], scale["ll"]
    return ArchFloor(
        base_offset_s=MappingProxyType(offset),
        nvlink_hop_scale=MappingProxyType(scale),
        nvls_small_latency_s=float(np.mean(bases)) if bases else 0.0,
        source="mean of the other generations' fits",
    )


def fit_nvls_small(xs: Sequence[Sample], catalog: Catalog) -> tuple[dict[str, float], float | None]:
    """NVLS's small-message fixed cost a[gen] + b log2(g) (nccl_algos.nvls_small) on the rows where
    the small NVLS line runs, below 16 MiB with a latency under 100 us: b by least squares over the
    rows of the generation measured at the most group sizes (its own a), then a[gen] for each
    generation as the median of its rows' residual less b log2(g)."""
    res: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for x in xs:
        if x.nodes != 1 or x.algo != "auto" or x.size_bytes > 16 * 2**20:
            continue
        group, c = _chosen(catalog, x)
        small = nvls_small(group)
        if c.algorithm != "nvls" or small is None or c.latency_s != small.latency_s or c.latency_s > 100 * US:
            continue
        res[catalog.system(x.system).gpu.arch].append((np.log2(x.gpus), x.time_s - x.size_bytes / c.algbw_bytes_per_s))
    widest = max(res, key=lambda a: len({p[0] for p in res[a]}), default=None)
    fit = _line_fit(res[widest]) if widest is not None else None
    if fit is None or fit[1] <= 0:
        return {}, None
    b = fit[1]
    return {arch: float(statistics.median(r - b * lg for lg, r in pts)) for arch, pts in res.items()}, b


def fit_nvls(xs: Sequence[Sample], catalog: Catalog, xla: Sequence[Sample] = ()) -> tuple[dict[str, float], float]:
    """NVLS efficiency e_f per fabric and its decay k per rank: eff(g) = e_f / (1 + k (g - 1)).
    1 / eff is linear in g - 1 for each fabric; each fabric's points, divided by its own intercept,
    pool into one least-squares slope through (0, 1): k. Pooled that way the widest spans weigh
    most (x^2), so k at 72 GPUs is set where it was measured (XLA's GB200 table, 8-72 GPUs, whose
    scale cancels in the ratio; its level enters no fabric's e_f), not extrapolated from 4-8 GPUs."""
    effs: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for x in list(xs) + [x for x in xla if x.size_bytes >= LARGE]:
        if x.nodes != 1 or x.size_bytes < LARGE or x.algo not in ("auto", "nvls"):
            continue
        s = catalog.system(x.system)
        group, c = _chosen(catalog, x)
        if c.algorithm != "nvls":
            continue
        algbw = x.size_bytes / max(x.time_s - c.latency_s, 0.5 * x.time_s)
        key = s.intra_fabric.name + (" (xla)" if x.source == "xla" else "")
        effs[key][x.gpus].append((algbw / (s.intra_fabric.bytes_per_s * x.gpus / (x.gpus + 1)), x.size_bytes))
    num = den = 0.0
    for by_g in effs.values():
        gs = sorted(by_g)
        if gs and gs[-1] - gs[0] >= 4:
            pts = [(g - 1, 1 / statistics.median(e for e, _ in by_g[g])) for g in gs]
            fit = _line_fit(pts)
            if fit is not None and fit[0] > 0:
                num += sum(dx * (y / fit[0] - 1) for dx, y in pts)
                den += sum(dx * dx for dx, _ in pts)
    k = max(0.0, num / den) if den else catalog.nccl.nvls_decay_per_rank
    out = {}
    for fabric, by_g in effs.items():
        if not fabric.endswith("(xla)"):
            # the rate a line's slope stands for is the largest messages': where a fabric was measured
            # at >= 1 GiB, those rows (8x B200 NVLS at 512 MiB reaches 0.53 of the link, at 8 GiB 0.60)
            rows = [(g, e) for g, v in by_g.items() for e, n in v if n >= HUGE] or [
                (g, e) for g, v in by_g.items() for e, _ in v
            ]
            out[fabric] = float(statistics.median(e * (1 + k * (g - 1)) for g, e in rows))
    return _same_generation(out, catalog), k


def _same_generation(fitted: dict[str, float], catalog: Catalog) -> dict[str, float]:
    """A switch fabric without NVLS rows of its own takes the mean of its GPU generation's fitted
    fabrics (the same NVLink ports and NVSwitch chips), not NCCL's own estimate: held out, a GB200
    rack's nvl72 takes HGX B200's and B300's nvswitch-gen4 (NCCL's 0.74 priced 72-GPU NVLS 25% fast)."""
    gens: dict[str, set[str]] = defaultdict(set)
    for s in catalog.systems.values():
        if s.intra_fabric.name in catalog.nccl.nvls_link_efficiency:
            gens[s.intra_fabric.name].add(s.gpu.arch)
    out = dict(fitted)
    for fabric, archs in gens.items():
        same = [fitted[f] for f, a in gens.items() if f in fitted and a & archs]
        if fabric not in fitted and same:
            out[fabric] = float(np.mean(same))
    return out
