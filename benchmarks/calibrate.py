"""Fit the model's measured constants from the public tables, and apply a set of them to a catalog.

    python benchmarks/calibrate.py            # fit on every system, print the constants beside the catalog's

Every constant here is fitted by a closed-form estimator on a named subset of rows, so that
benchmarks/loso.py can refit them without one system and predict that system with what is left:

  ring_efficiency[g]        single-node ring busbw at >= 128 MiB over the fabric's achievable figure,
                            median over the NVLink systems (g = 2, 4)
  arch[gen] LL floor        NCCL all-reduce at <= 8 KiB: t = baseLat + offset + 2(g-1) x hop x scale,
                            least squares over g = 2, 4, 8 (offset only on PCIe-only generations)
  arch[gen] Simple floor    the same line through the ring Simple rows below 32 MiB; LL128 takes
                            the LL parameters
  arch[gen] LL128 step      where XLA's NVL72 all-gather rings (33-72 GPUs) run LL128: the median
                            of (t - n / bw - LL128's base) / (g - 1) over tuning.cc's 1.9 us
                            (fit_ll128_hop; Blackwell only, the others keep LL's factor)
  NVLS small fixed cost     a[gen] + b log2(g): NVLS small-message rows' (t - n / bw), HGX 4-8 GPUs
                            (measured_comm) and XLA's GB200 NVL72 table at 8-72 GPUs less its launch
                            (tests/validation/xla_nvl72.py): b by least squares over every row,
                            a[gen] the median of (t - n / bw - b log2 g) of its rows
  nvls efficiency[fabric]   NVLS rows at >= 128 MiB: algbw over link x g/(g+1), median
  PCIe platform figures     large-message rings of PCIe systems: the ring's bottleneck (ring_path.py)
                            names the constant it measures: a host path (busbw x its uses), a
                            host-staged socket crossing, a P2P fabric

A constant whose rows are all held out falls back: a GPU generation's floors to a fit on its own
generation's nccl-tests tables (switch and PCIe boxes; LL and Simple rows that are latency-bound;
measured at one group size only, the other generations' mean line scaled to it: _scaled_floor),
else to the mean of the other generations'; a fabric's NVLS efficiency to its generation's; a
CPU's host path to no limit and its socket stream to its socket link; an engine's launch and
two-shot barrier on a generation without engine rows whose NCCL floor was measured, to the other
NVLink generations' cost per NCCL floor times its floor (engine_fallback); TensorRT-LLM's multi-node
NVLink kernels (GB300 only) to the single-node one-shot's floor, the ring's busbw and, for the
two-shot's second Lamport stage, one NVLink LL step (custom_kernels.two_shot_extra_s); a host-staged (SHM) fabric to
the median of what one-socket SHM rings carry on the other hosts of its PCIe generation, public
(tests/validation/data/shm_public.csv) and fitted (fit_shm_hop): shm_prior; a PCIe box's one-shot
kernels to the link's rate where each engine's slowest NVLink throughput is above it
(pcie_kernel_efficiency); a fabric to its catalog estimate.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))

from shardbudget.comm.op import busbw_factor  # noqa: E402
from shardbudget.comm.collectives import candidates, make_group, sweep  # noqa: E402
from shardbudget.fabric.hardware import CPU, Catalog, Fabric, System
from shardbudget.fabric.catalog import load_catalog  # noqa: E402
from shardbudget.comm.lines import pick  # noqa: E402
from shardbudget.comm.nccl_algos import nvls_small  # noqa: E402
from shardbudget.comm.custom_kernels import KERNEL_OF, mnnvl, read_class, two_shot_extra_s  # noqa: E402
from shardbudget.comm.versions import at_stated  # noqa: E402
from shardbudget.fabric.nccl_constants import ArchFloor  # noqa: E402
from shardbudget.fabric.ring_path import ring_path  # noqa: E402

US = 1e-6
LARGE = 128 * 2**20
HUGE = 2**30


def load_module(name: str):
    """tests/validation/<name>.py as a module (the loaders the validation tests use)."""
    path = ROOT / "tests" / "validation" / f"{name}.py"
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
        return sys.modules[name]
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Sample:
    """One measured NCCL all-reduce (either table), reduced to what the estimators need."""

    system: str
    gpus: int
    nodes: int
    size_bytes: float
    time_s: float
    algo: str = "auto"
    source: str = ""
    nccl: str | None = None
    """The NCCL release the row was measured with, where its table says (measured_comm.csv, or the
    release a nccl_tests.csv row states)."""


def samples(data_dir: Path | None = None) -> list[Sample]:
    """Single- and multi-node NCCL all-reduce rows of measured_comm.csv and nccl_tests.csv."""
    mc = load_module("measured_comm")
    measured = load_module("measured")
    out = [Sample(r.system, r.gpus, 1, r.size_bytes, r.time_s, source="measured_comm", nccl=r.version)
           for r in mc.select(mc.load_rows(data_dir), library="nccl", op="all-reduce")]
    for r in measured.load_rows(data_dir):
        if r.kept and r.op == "all-reduce" and r.variant is None:
            out.append(Sample(r.system, r.gpus, r.nodes, r.size_bytes, r.time_s, r.algo, r.source_id, nccl=r.nccl))
    return out


def xla_samples(data_dir: Path | None = None) -> list[Sample]:
    """XLA's GB200 NVL72 all-reduce rows (8-72 GPUs), less XLA's launch: only fit_nvls_small reads
    them (their large sizes are whole-executable times of replica groups side by side)."""
    xla = load_module("xla_nvl72")
    return [Sample(xla.SYSTEM, r.gpus, 1, r.size_bytes, r.time_s, source="xla") for r in xla.load_rows(data_dir)]


def xla_all_gather_samples(data_dir: Path | None = None) -> list[Sample]:
    """XLA's GB200 NVL72 all-gather rows of 33-72 GPUs, less XLA's launch: rings only (NCCL offers
    NVLS for an all-gather of at most 32 local ranks, xla_nvl72.NVLS_ALL_GATHER_MAX_GPUS); only
    fit_ll128_hop reads them."""
    xla = load_module("xla_nvl72")
    return [Sample(xla.SYSTEM, r.gpus, 1, r.size_bytes, r.time_s, source="xla-all-gather")
            for r in xla.load_rows(data_dir, min_gpus=xla.NVLS_ALL_GATHER_MAX_GPUS + 1, op="all-gather")]


# --- constants and how they enter a catalog ---------------------------------------------------

@dataclass
class Calibration:
    ring_efficiency: dict[int, float] = field(default_factory=dict)
    arch: dict[str, ArchFloor] = field(default_factory=dict)
    nvls_link_efficiency: dict[str, float] = field(default_factory=dict)
    nvls_decay_per_rank: float | None = None
    nvls_small_per_doubling_s: float | None = None
    shm_ll_bandwidth_fraction: float | None = None
    engines: dict[str, dict] = field(default_factory=dict)
    fabric_achievable: dict[str, float] = field(default_factory=dict)
    cpu_host: dict[str, float] = field(default_factory=dict)
    cpu_stream: dict[str, float] = field(default_factory=dict)
    shm_hop: dict[str, float] = field(default_factory=dict)
    nccl_floor: dict[str, float] = field(default_factory=dict)
    """[GPU generation] -> its 2-GPU NCCL floor as modelled, median over the systems of its engine
    rows (what the engines' fixed costs are scaled by where a generation has no engine rows)."""
    nccl_floor_link: dict[str, str] = field(default_factory=dict)
    """[GPU generation] -> the NCCL link class (nvlink, pci) that floor crosses."""
    kernel_cap: dict[str, float] = field(default_factory=dict)
    """[engine] -> its slowest one-shot kernel throughput on NVLink, bytes/s (kernel_caps)."""
    notes: list[str] = field(default_factory=list)


def apply(catalog: Catalog, cal: Calibration) -> Catalog:
    """The catalog with these constants in place (new entries; the original is untouched)."""
    nccl = catalog.nccl
    arch = dict(nccl.arch)
    arch.update(cal.arch)
    nvls = dict(nccl.nvls_link_efficiency)
    nvls.update(cal.nvls_link_efficiency)
    ring_eff = dict(nccl.ring_efficiency)
    ring_eff.update(cal.ring_efficiency)
    nccl = replace(nccl, arch=MappingProxyType(arch), nvls_link_efficiency=MappingProxyType(nvls),
                   ring_efficiency=MappingProxyType(ring_eff),
                   nvls_decay_per_rank=nccl.nvls_decay_per_rank if cal.nvls_decay_per_rank is None else cal.nvls_decay_per_rank,
                   nvls_small_latency_per_doubling_s=(nccl.nvls_small_latency_per_doubling_s
                                                      if cal.nvls_small_per_doubling_s is None
                                                      else cal.nvls_small_per_doubling_s),
                   shm_ll_bandwidth_fraction=(nccl.shm_ll_bandwidth_fraction if cal.shm_ll_bandwidth_fraction is None
                                              else cal.shm_ll_bandwidth_fraction))
    fabrics = {n: (replace(f, achievable_bytes_per_s=min(cal.fabric_achievable[n], f.bytes_per_s))
                   if n in cal.fabric_achievable else f) for n, f in catalog.fabrics.items()}
    cpus = {}
    for n, c in catalog.cpus.items():
        host = cal.cpu_host.get(n, c.host_bytes_per_s)
        stream = min(cal.cpu_stream.get(n, c.socket_stream_bytes_per_s), c.socket_link_bytes_per_s)
        cpus[n] = replace(c, host_bytes_per_s=host, socket_stream_bytes_per_s=stream)
    systems = {n: _remap(s, fabrics, cpus) for n, s in catalog.systems.items()}
    engines = dict(catalog.engines)
    for name, fit in cal.engines.items():
        changes = dict(fit)
        if "launch_s" in changes:
            changes["launch_s"] = MappingProxyType(dict(changes["launch_s"]))
        engines[name] = replace(engines[name], **changes)
    return Catalog(fabrics=fabrics, gpus=catalog.gpus, systems=systems, nccl=nccl, sources=catalog.sources,
                   cpus=cpus, engines=engines)


def _remap(s: System, fabrics: Mapping[str, Fabric], cpus: Mapping[str, CPU]) -> System:
    def fab(f):
        return fabrics.get(f.name, f) if f is not None else None
    pcie = s.pcie
    if pcie is not None:
        pcie = replace(pcie, host_bridge=fab(pcie.host_bridge), shm=fab(pcie.shm), switch_uplink=fab(pcie.switch_uplink),
                       cross_socket=fab(pcie.cross_socket))
    return replace(s, intra_fabric=fab(s.intra_fabric), fallback_fabric=fab(s.fallback_fabric),
                   socket_fabric=fab(s.socket_fabric), nic_fabric=fab(s.nic_fabric),
                   cpu=cpus.get(s.cpu.name, s.cpu) if s.cpu is not None else None, pcie=pcie)


# --- estimators ------------------------------------------------------------------------------

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
        if (x.nodes != 1 or x.algo not in ("auto", "ring") or x.gpus not in (2, 4) or x.size_bytes < 2 * LARGE
                or s.topology != "switch"):
            continue
        group, c = _chosen(catalog, x)
        if x.algo == "ring":
            c = min((k for k in candidates(group, "all-reduce") if k.algorithm == "ring"),
                    key=lambda k: k.select_time_s(x.size_bytes))
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


def fit_floors(xs: Sequence[Sample], catalog: Catalog, *, rows: str = "measured_comm",
               shape: ArchFloor | None = None) -> dict[str, ArchFloor]:
    """Per GPU generation: LL (and LL128) and Simple offsets on baseLat and factors on the NVLink hop
    rows; NVLS's small-message fixed cost per rank. `rows`: "measured_comm" (the sweeps made for
    this, LL at <= 8 KiB), or "nccl_tests": the published single-node tables of switch and PCIe
    boxes, LL and Simple rows whose bandwidth term is at most their latency term (their sizes are
    sparser, so a size cut would leave too few); what a generation without sweeps is fitted on.
    A generation measured over NVLink at one group size only (H200's published table: 8 GPUs)
    fixes one point of its floor line, not the line: with `shape` (the other generations' mean,
    pooled_floor) it takes that line scaled to its own point (_scaled_floor), else NCCL's hop."""
    nccl = catalog.nccl
    by: dict[tuple[str, str], dict[int, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    pcie_offsets: dict[tuple[str, str], list[float]] = defaultdict(list)
    sweeps = rows == "measured_comm"
    for x in _single(xs):
        s = catalog.system(x.system)
        if (x.source == "measured_comm") != sweeps or x.gpus < 2 or (not sweeps and s.topology == "mesh"):
            continue
        group, c = _chosen(catalog, x)
        arch = s.gpu.arch
        residual = x.time_s - x.size_bytes / c.algbw_bytes_per_s
        if c.algorithm != "ring":
            continue
        # latency-dominated rows only: LL at <= 8 KiB, Simple where its bandwidth term is at most
        # as large as its latency term (else the residual is mostly bandwidth noise)
        bandwidth_bound = x.size_bytes / c.algbw_bytes_per_s > max(residual, 0.0)
        if (c.protocol == "ll" and (x.size_bytes > 8192 if sweeps else bandwidth_bound)) or (
                c.protocol == "simple" and bandwidth_bound):
            continue
        if c.protocol == "ll128":
            continue
        path = ring_path(s, x.gpus)
        steps = 2 * (x.gpus - 1)
        base = nccl.base_latency_s["ring"][c.protocol]
        if path.nccl_link == "nvlink":
            # residual - base = offset + steps * hop * scale: collect (steps * hop, residual - base)
            by[(arch, c.protocol)][x.gpus].append((steps * path.hop_latency_s[c.protocol], residual - base))
        else:
            pcie_offsets[(arch, c.protocol)].append(residual - base - steps * path.hop_latency_s[c.protocol])
    out: dict[str, ArchFloor] = {}
    for arch in {k[0] for k in by} | {k[0] for k in pcie_offsets}:
        offset, scale = {}, {}
        for proto in ("ll", "simple"):
            pts = [(statistics.median(p[0] for p in v), statistics.median(p[1] for p in v))
                   for v in by.get((arch, proto), {}).values()]
            fit = _line_fit(pts)
            if fit is not None and fit[1] > 0:
                offset[proto], scale[proto] = fit[0], fit[1]
            elif pts and shape is not None:  # one group size: the others' line, scaled to it
                base = nccl.base_latency_s["ring"][proto]
                offset[proto], scale[proto] = _scaled_floor(pts[0], base, shape.base_offset_s[proto],
                                                            shape.nvlink_hop_scale[proto])
            elif pts:  # one group size, nothing to shape it: offset only, NCCL's hop
                offset[proto], scale[proto] = statistics.median(p[1] - p[0] for p in pts), 1.0
            elif pcie_offsets.get((arch, proto)):
                offset[proto], scale[proto] = statistics.median(pcie_offsets[(arch, proto)]), 1.0
        if "ll" not in offset:
            continue
        offset.setdefault("simple", offset["ll"])
        scale.setdefault("simple", 1.0)
        offset["ll128"], scale["ll128"] = offset["ll"], scale["ll"]
        out[arch] = ArchFloor(base_offset_s=MappingProxyType(offset), nvlink_hop_scale=MappingProxyType(scale),
                              source="benchmarks/calibrate.py fit_floors")
    return out


def fit_ll128_hop(xs: Sequence[Sample], catalog: Catalog) -> dict[str, float]:
    """[GPU generation] -> the factor on NCCL's NVLink LL128 ring step (hwLat 1.9 us) that the
    all-gather rows `xs` (xla_all_gather_samples) give where NCCL's estimate runs ring LL128: the
    median of (t - n / algbw - LL128's base) / (g - 1), over 1.9 us. An all-gather's ring has g - 1
    steps, so a 72-GPU one holds 71 of them: the step, not the launch, sets its intercept. XLA's
    GB200 rows at 36-72 GPUs give 0.8-1.4 us a step (median 1.20), near an LL step on Blackwell
    (0.6 x 2.25 = 1.35 us), not NCCL's 1.9 us times LL's factor (4.3 us, which priced LL128 above
    Simple and made the time fall at NCCL's LL128 -> Simple switch). A generation without such rows
    keeps LL's factor (fit_floors)."""
    from shardbudget.comm.nccl_algos import base_latency_s
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
    return ArchFloor(base_offset_s=MappingProxyType(offset), nvlink_hop_scale=MappingProxyType(scale),
                     nvls_small_latency_s=float(np.mean(bases)) if bases else 0.0,
                     source="mean of the other generations' fits")


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
            rows = [(g, e) for g, v in by_g.items() for e, n in v if n >= HUGE] or \
                   [(g, e) for g, v in by_g.items() for e, _ in v]
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


def fit_pcie(xs: Sequence[Sample], catalog: Catalog, structure: Catalog | None = None
             ) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Invert the PCIe rings' bottlenecks: (fabric achievable, CPU host path, CPU socket stream).
    Which link a ring's busbw measures is read from `structure` (the built-in catalog: the box as
    it is built); the number from the rows."""
    structure = structure or catalog
    fab: dict[str, list[float]] = defaultdict(list)
    host: dict[str, list[float]] = defaultdict(list)
    stream: dict[str, list[float]] = defaultdict(list)
    for x in _single(xs):
        s = catalog.system(x.system)
        if s.topology not in ("pcie",) or s.pcie.legacy or x.size_bytes < 64 * 2**20 or x.gpus < 2:
            continue
        group, c = _chosen(catalog, x)
        busbw = x.size_bytes / (x.time_s - c.latency_s) * busbw_factor("all-reduce", x.gpus)
        s = structure.system(x.system)
        path = ring_path(s, x.gpus)
        hops = [h for h in _hops(s, x.gpus)]
        if path.bottleneck.startswith("host"):
            uses = float(path.bottleneck.split("shared by ")[1].split()[0])
            host[s.cpu.name].append(busbw * uses)
        elif any(h.transport == "shm" and h.ceiling_bytes_per_s == s.cpu.socket_stream_bytes_per_s
                 and s.cpu.socket_stream_bytes_per_s == path.busbw_bytes_per_s for h in hops):
            stream[s.cpu.name].append(busbw)
        else:
            name = path.bottleneck.split("(")[-1].rstrip(")")
            if name in catalog.fabrics:
                fab[name].append(busbw)
    med = lambda d: {k: float(statistics.median(v)) for k, v in d.items()}  # noqa: E731
    return med(fab), med(host), med(stream)


def fit_shm_hop(xs: Sequence[Sample], catalog: Catalog) -> dict[str, float]:
    """Per system, the bus bandwidth of its host-staged (SHM) rings inside one socket at >= 64 MiB,
    median: what one SHM hop carries on that box, whichever of its links binds (RTX 4090 3.7 GB/s,
    L40S 4 GPUs 5.2). A box whose SHM rows are all held out takes shm_prior (held_out)."""
    out: dict[str, list[float]] = defaultdict(list)
    for x in _single(xs):
        s = catalog.system(x.system)
        if s.topology != "pcie" or x.size_bytes < 64 * 2**20 or x.gpus < 2:
            continue
        hops = _hops(s, x.gpus)
        if any(h.transport != "shm" or any(link.startswith("sock") for link, _ in h.uses) for h in hops):
            continue
        group, c = _chosen(catalog, x)
        out[x.system].append(x.size_bytes / (x.time_s - c.latency_s) * busbw_factor("all-reduce", x.gpus))
    return {k: float(statistics.median(v)) for k, v in out.items()}


def fit_shm_ll(xs: Sequence[Sample], catalog: Catalog) -> float | None:
    """LL's share of an SHM ring's Simple bandwidth: LL rows whose bandwidth term is at least twice
    their latency, median of measured LL busbw over the ring's busbw."""
    ratios = []
    for x in _single(xs):
        s = catalog.system(x.system)
        if x.gpus < 2 or "shm" not in ring_path(s, x.gpus).transports:
            continue
        group, c = _chosen(catalog, x)
        if c.algorithm != "ring" or c.protocol != "ll" or x.time_s < 3 * c.latency_s:
            continue
        busbw = x.size_bytes / (x.time_s - c.latency_s) * busbw_factor("all-reduce", x.gpus)
        ratios.append(busbw / ring_path(s, x.gpus).busbw_bytes_per_s)
    return float(statistics.median(ratios)) if ratios else None


def engine_samples(data_dir: Path | None = None) -> list[tuple[str, Sample]]:
    """(engine preset, row) for measured_comm.csv's engine all-reduce rows under CUDA graphs; the preset
    is the row's release's (measured_comm.release_preset: TensorRT-LLM 1.0.0 rows are trtllm-1.0's)."""
    mc = load_module("measured_comm")
    return [(r.library, Sample(r.system, r.gpus, 1, r.size_bytes, r.time_s, source="measured_comm"))
            for r in mc.load_rows(data_dir) if r.library != "nccl" and r.mode == "graph" and not _older_kernel_nccl(mc, r)]


def _older_kernel_nccl(mc, r) -> bool:
    """A row NCCL ran in a release older than the preset's rule: SGLang before 0.5.12 (A100's newest
    rows are 0.5.10) ran sgl-kernel's kernel to 8 MiB and NCCL above, where 0.5.14's CustomAllReduceV2
    (sgl-project/sglang#24363, default from 0.5.12) runs its two-shot to 16 MiB: such rows are
    not the kernel's, and its 0.5.14 limits would fit them as two-shot rows."""
    return r.library == "sglang" and mc._version_key(r.version) < (0, 5, 12) and r.size_bytes > 8 * 2 ** 20


_EFF = {"one-shot": "one_shot_efficiency", "two-shot": "two_shot_efficiency"}


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
        floors: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        shots: dict[str, list[tuple[float, float]]] = defaultdict(list)
        by_gpus: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
        two_by_arch: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
        one_by_arch: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
        across: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
        across_floor: dict[int, list[float]] = defaultdict(list)
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
                    across_floor[x.gpus].append(x.time_s)
                elif x.size_bytes >= 65536:
                    across[(c.algorithm, x.gpus)].append(_transfer_point(k, c, x, group))
                continue
            if c.algorithm == "one-shot" and x.size_bytes <= 4096:
                floors[s.gpu.arch][x.gpus].append(x.time_s)
            elif x.size_bytes >= 65536:
                # (seconds per byte at the model's efficiency, time beyond the one-shot latency)
                base_latency = c.latency_s - (two_shot_extra_s(group, k) if c.algorithm == "two-shot" else 0.0)
                eff = k.efficiency(1 if c.algorithm == "one-shot" else 2, x.gpus, read_class(s, x.gpus))
                point = (x.size_bytes / c.algbw_bytes_per_s * eff, x.time_s - base_latency)
                shots[c.algorithm].append(point)
                by_gpus[(c.algorithm, x.gpus)].append(point)
                if c.algorithm == "one-shot" and _rule_kind(e, group, x.size_bytes) == "one-shot":
                    one_by_arch[(read_class(s, x.gpus), x.gpus)].append(point)
                if c.algorithm == "two-shot":
                    two_by_arch[s.gpu.arch].append((x.gpus, *point))
        slopes = []
        for by_g in floors.values():
            fit = _line_fit([(g - 2, statistics.median(v)) for g, v in by_g.items()])
            if fit is not None:
                slopes.append(max(0.0, fit[1]))
        per_peer = float(statistics.median(slopes)) if slopes else k.per_peer_s
        launch = {a: float(statistics.median(t - per_peer * (g - 2) for g, v in by_g.items() for t in v))
                  for a, by_g in floors.items()}
        fit = {"per_peer_s": per_peer, "launch_s": launch}
        # time beyond the latency = extra + (n / algbw at efficiency 1) / efficiency: least squares,
        # pooled for the extra and the default, then the slope alone by GPU count
        for algo, key in _EFF.items():
            line = _line_fit(shots.get(algo, []))
            if line is None or line[1] <= 0:
                continue
            extra = max(0.0, line[0]) if algo == "two-shot" else 0.0
            table = {"default": min(1.0, 1 / line[1])}
            for (a, g), pts in by_gpus.items():
                if a == algo and len(pts) >= 3:
                    slope = sum(x * (y - extra) for x, y in pts) / sum(x * x for x, y in pts)
                    if slope > 0:
                        table[str(g)] = min(1.0, 1 / slope)
            fit[key] = MappingProxyType(table)
            if algo == "one-shot":
                fit["one_shot_efficiency_by_arch"] = _one_shot_by_arch(one_by_arch)
            if algo == "two-shot":
                # the second barrier per GPU generation: its rows' time beyond the pooled
                # efficiency's transfer, median (one constant for all priced H100 TP4 at 17.7 us
                # where vLLM measures 11.4)
                fit["two_shot_extra_s"] = MappingProxyType({"default": extra} | {
                    a: max(0.0, float(statistics.median(y - x / table.get(str(g), table["default"])
                                                        for g, x, y in pts)))
                    for a, pts in two_by_arch.items() if len(pts) >= 3})
        floor = _line_fit([(g - 2, statistics.median(v)) for g, v in across_floor.items()])
        if floor is not None and floor[1] >= 0:
            fit["mnnvl_launch_s"], fit["mnnvl_per_peer_s"] = floor
        if across:
            fit.update(_fit_mnnvl(across))
        out[engine] = fit
    return out


def _transfer_point(k, c, x: Sample, group) -> tuple[float, float]:
    """(seconds of transfer at efficiency 1, time beyond the kernel's latency) for the engine's
    multi-node NVLink kernels on `group`; a two-shot's latency holds its second Lamport stage
    (custom_kernels.two_shot_extra_s)."""
    shots = 1 if c.algorithm == "one-shot" else 2
    eff = k.efficiency(shots, x.gpus, group.system.gpu.arch, mnnvl=True)
    return x.size_bytes / c.algbw_bytes_per_s * eff, x.time_s - c.latency_s


def _fit_mnnvl(points: Mapping[tuple[str, int], list[tuple[float, float]]]) -> dict:
    """The multi-node NVLink kernels' own rates (TensorRT-LLM's MNNVL one-shot and two-shot, which
    measured_comm.csv times on GB300 across trays): each kernel's share of the ring busbw by GPU
    count, the slope through the origin of the time beyond the kernel's latency. The two-shot's
    second stage is not fitted: a line's intercept over 256 KiB-512 MiB rows came out 0 (the 1 us
    stage is lost in ms-long rows), which priced the two-shot below the one-shot at their switch
    where the rows rise (5.11 us at 128 KiB one-shot, 6.08 at 256 KiB two-shot on 8 GPUs); the
    stage is one NVLink LL step (custom_kernels.two_shot_extra_s)."""
    fit: dict = {}
    for algo, key in (("one-shot", "mnnvl_one_shot_efficiency"), ("two-shot", "mnnvl_two_shot_efficiency")):
        table = {}
        for (a, g), pts in sorted(points.items()):
            if a == algo and len({x for x, _ in pts}) >= 2:
                slope = sum(x * y for x, y in pts) / sum(x * x for x, _ in pts)
                if slope > 0:
                    table[str(g)] = min(1.0, 1 / slope)
        if table:
            fit[key] = MappingProxyType({"default": 1.0} | table)
    return fit


def _rule_kind(engine: str, group, msg_bytes: float) -> str:
    """What the engine's whole rule (engines/*.toml, by release) runs at this size: a row the kernel
    limits of custom_allreduce.toml call one-shot may be the symmetric-memory path in the release
    measured (vLLM 0.19 on 2 B200s: one-shot below 2 MiB only). Token rules read at hidden 8192."""
    from shardbudget.engines.allreduce import allreduce_ranges_for
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


def _hops(s: System, g: int):
    from shardbudget.fabric.ring_path import ring_hops
    return ring_hops(s, g)


def calibrate(xs: Sequence[Sample], base: Catalog | None = None, rounds: int = 2,
              engine_rows: Sequence[tuple[str, Sample]] = (), xla: Sequence[Sample] = (),
              xla_all_gather: Sequence[Sample] = ()) -> Calibration:
    """Fit every constant on `xs` (and the engines' on `engine_rows`, NVLS's small-message cost
    also on `xla`, LL128's NVLink step on `xla_all_gather`), starting from `base`."""
    base = base or load_catalog()
    cal = Calibration()
    cat = base
    structure = load_catalog()
    for _ in range(rounds):
        fab, host, stream = fit_pcie(xs, cat, structure)
        cal.fabric_achievable, cal.cpu_host, cal.cpu_stream = fab, host, stream
        cal.shm_hop = fit_shm_hop(xs, cat)
        cat = apply(base, cal)
        cal.ring_efficiency = fit_ring_efficiency(xs, cat) or cal.ring_efficiency
        cat = apply(base, cal)
        # a generation without sweeps (or whose sweeps are held out) is fitted on its own
        # generation's published tables before it falls back to the other generations' mean
        sweeps = fit_floors(xs, cat)
        cal.arch = {**fit_floors(xs, cat, rows="nccl_tests", shape=pooled_floor(sweeps)), **sweeps}
        cat = apply(base, cal)
        for arch, scale in fit_ll128_hop(xla_all_gather, cat).items():
            if arch in cal.arch:
                f = cal.arch[arch]
                cal.arch[arch] = replace(f, nvlink_hop_scale=MappingProxyType({**f.nvlink_hop_scale, "ll128": scale}))
        cat = apply(base, cal)
        small, cal.nvls_small_per_doubling_s = fit_nvls_small(list(xs) + list(xla), cat)
        cal.arch = {a: replace(f, nvls_small_latency_s=small.get(a, 0.0)) for a, f in cal.arch.items()}
        cat = apply(base, cal)
        cal.nvls_link_efficiency, cal.nvls_decay_per_rank = fit_nvls(xs, cat, xla)
        cat = apply(base, cal)
        cal.shm_ll_bandwidth_fraction = fit_shm_ll(xs, cat)
        cat = apply(base, cal)
        if engine_rows:
            for _ in range(2):  # the efficiencies depend on which kernel runs, which is fixed by size
                cal.engines = fit_engines(engine_rows, cat)
                cat = apply(base, cal)
            by_arch: dict[str, list[float]] = defaultdict(list)
            for system in sorted({x.system for _, x in engine_rows}):
                arch = cat.system(system).gpu.arch
                by_arch[arch].append(nccl_floor_s(cat, system))
                cal.nccl_floor_link[arch] = ring_path(cat.system(system), 2).nccl_link
            cal.nccl_floor = {a: float(statistics.median(v)) for a, v in by_arch.items()}
            cal.kernel_cap = kernel_caps(cal, cat, sorted({x.system for _, x in engine_rows}))
    return cal


def kernel_caps(cal: Calibration, catalog: Catalog, systems: Sequence[str]) -> dict[str, float]:
    """Per engine, the slowest one-shot kernel measured anywhere, bytes/s: its fitted share of the
    ring busbw (one_shot_efficiency_by_arch) times that ring's busbw, over the systems with engine
    rows and their GPU counts. On NVLink the share is the kernel's own limit (its blocks' loads
    and stores: vLLM at 2 GPUs 0.24 of B200's ring, 0.72 of H100's, 0.88 of A100's); in bytes/s it
    is a throughput the kernel reaches on any link at least as fast."""
    caps: dict[str, float] = {}
    for name, fit in cal.engines.items():
        by_arch = fit.get("one_shot_efficiency_by_arch", {})
        rates = [eff * ring_path(catalog.system(system), int(g)).busbw_bytes_per_s
                 for system in systems if catalog.system(system).topology != "pcie"
                 for g, eff in by_arch.get(catalog.system(system).gpu.arch, {}).items()
                 if int(g) <= catalog.system(system).gpus_per_node]
        if rates:
            caps[name] = float(min(rates))
    return caps


def pcie_kernel_efficiency(cal: Calibration, catalog: Catalog, system: str) -> None:
    """A held-out PCIe box's one-shot kernels (P2P through the host bridge, ~20 GB/s on Gen4): each
    engine's share of the ring busbw is min(1, its slowest NVLink throughput (kernel_caps) / this
    ring's busbw): a kernel that moves 100+ GB/s over NVLink is bound by the PCIe link, not by
    itself, so it runs at the link's rate (in sample: vLLM and SGLang at 0.93 of the L40S's NCCL
    ring). Without this the fold took the NVLink generations' pooled share at 2 GPUs (vLLM 0.52)."""
    s = catalog.system(system)
    key = read_class(s, 2)  # "link" on a PCIe box: the key its own rows fit in sample
    for name, cap in cal.kernel_cap.items():
        fit = cal.engines.get(name)
        if fit is None or key in fit.get("one_shot_efficiency_by_arch", {}):
            continue
        table = {str(g): min(1.0, cap / ring_path(s, g).busbw_bytes_per_s) for g in (2, 4, 8) if g <= s.gpus_per_node}
        fit["one_shot_efficiency_by_arch"] = MappingProxyType(dict(fit["one_shot_efficiency_by_arch"]) | {
            key: MappingProxyType(table)})
        cal.notes.append(f"{name} {key}: one-shot at the PCIe link's rate (kernel cap {cap / 1e9:.0f} GB/s)")


def nccl_floor_s(catalog: Catalog, system: str) -> float:
    """NCCL all-reduce of 512 B on 2 GPUs of `system` as `catalog` prices it: the generation's
    kernel launch and one flag round trip each way over its link."""
    return sweep("all-reduce", [512.0], system, gpus=2, catalog=catalog)[0].time_s


def engine_fallback(cal: Calibration, catalog: Catalog, system: str) -> None:
    """A GPU generation without engine rows (its one box held out): each engine's launch and
    two-shot second barrier, the fixed costs of a custom kernel (start, flag writes to the peers
    over NVLink and the wait for theirs), scaled from the generations with rows by the ratio of
    the NCCL floors, which are the same chain of kernel start and flag round trips over the same
    link: the mean over the generations whose floors cross this system's link class (NVLink; a
    PCIe box's NCCL floor goes through host memory where the kernel reads its peer over P2P) of
    cost / floor, times this system's floor as `catalog` (without its rows) models it. In sample,
    vLLM's 2-GPU launch is 0.48 (A100), 0.65 (H100), 0.70 (B200) of the NCCL floor, SGLang's
    0.48, 0.38, 0.40, TensorRT-LLM's 0.39, 0.42, 0.48."""
    arch = catalog.system(system).gpu.arch
    link = ring_path(catalog.system(system), 2).nccl_link
    floors = {a: f for a, f in cal.nccl_floor.items() if a != arch and cal.nccl_floor_link.get(a) == link}
    mine = nccl_floor_s(catalog, system)
    for name, fit in cal.engines.items():
        launch = dict(fit["launch_s"])
        ratios = [launch[a] / f for a, f in floors.items() if a in launch]
        if arch not in launch and ratios:
            launch[arch] = float(np.mean(ratios)) * mine
            fit["launch_s"] = launch
            cal.notes.append(f"{name} {arch}: launch {launch[arch] / US:.2f} us from the NCCL floor ratio")
        extra = dict(fit.get("two_shot_extra_s", {}))
        ratios = [extra[a] / f for a, f in floors.items() if a in extra]
        if extra and arch not in extra and ratios:
            extra[arch] = float(np.mean(ratios)) * mine
            fit["two_shot_extra_s"] = MappingProxyType(extra)


def neutral(catalog: Catalog) -> Catalog:
    """The catalog with every constant this module fits put back to what it is without data:
    NCCL's tables for the floors, no small-ring or NVLS size penalty, NCCL's own NVLS efficiency
    (tuning.cc nvlsEfficiency), LL's NCCL share over SHM, no host-path limit and the socket link
    for a socket stream, the PCIe fabrics' estimates (root-complex P2P at 2/3 of the link, a
    host-staged copy at 1/5), the engines at the generic kernel's cost. A leave-one-out fold starts
    here, so nothing the held-out system measured leaks into its prediction."""
    nccl = catalog.nccl
    nvls = dict(nccl.nvls_link_efficiency)
    for fabric, _ in list(nvls.items()):
        gen = "hopper" if "gen3" in fabric else "blackwell"
        nvls[fabric] = nccl.nvls_nccl_efficiency.get(gen, 0.74)
    nccl = replace(nccl, arch=MappingProxyType({}), ring_efficiency=MappingProxyType({}),
                   nvls_link_efficiency=MappingProxyType(nvls), nvls_decay_per_rank=0.0,
                   shm_ll_bandwidth_fraction=nccl.protocol_bandwidth_fraction["ll"])
    fabrics = dict(catalog.fabrics)
    for name in FITTED_FABRICS:
        f = fabrics[name]
        share = 2 / 3 if f.p2p else 1 / 5
        fabrics[name] = replace(f, achievable_bytes_per_s=f.bytes_per_s * share)
    cpus = {n: replace(c, host_bytes_per_s=float("inf"), socket_stream_bytes_per_s=c.socket_link_bytes_per_s)
            for n, c in catalog.cpus.items()}
    generic = nccl.custom
    ones = MappingProxyType({"default": 1.0})
    engines = {n: replace(e, launch_s=MappingProxyType({"any": generic.launch_s + generic.sync_s}), per_peer_s=0.0,
                          two_shot_extra_s=MappingProxyType({"default": generic.sync_s}), one_shot_efficiency=ones,
                          one_shot_efficiency_by_arch=MappingProxyType({}),
                          two_shot_efficiency=ones, mnnvl_one_shot_efficiency=ones, mnnvl_two_shot_efficiency=ones,
                          mnnvl_two_shot_extra_s=None, mnnvl_launch_s=None, mnnvl_per_peer_s=None)
               for n, e in catalog.engines.items()}
    systems = {n: _remap(s, fabrics, cpus) for n, s in catalog.systems.items()}
    return Catalog(fabrics=fabrics, gpus=catalog.gpus, systems=systems, nccl=nccl, sources=catalog.sources,
                   cpus=cpus, engines=engines)


FITTED_FABRICS = ("pcie4-hostbridge", "pcie4-no-p2p")
"""The fabrics whose achievable figure fit_pcie measures (the rest cite their own sources)."""


def _shm_fabric(s: System) -> Fabric | None:
    return s.pcie.shm if s.topology == "pcie" and s.pcie is not None else None


def pcie_generation(catalog: Catalog, fabric: Fabric) -> int | None:
    """The PCIe generation whose link (the catalog's pcie3..pcie6) runs at this fabric's peak."""
    return next((g for g in range(3, 7) if f"pcie{g}" in catalog.fabrics
                 and catalog.fabrics[f"pcie{g}"].bytes_per_s == fabric.bytes_per_s), None)


def shm_prior(cal: Calibration, base: Catalog, system: str) -> float | None:
    """What one SHM hop of `system` carries before any of its rows is seen: the median, over the
    hosts of its PCIe generation, of their one-socket host-staged ring busbw: the public hosts of
    tests/validation/data/shm_public.csv (less any row of `system`) and the boxes fitted in this
    fold (fit_shm_hop). Gen4: A10G on AWS g5 (EPYC Rome, NPS1) 3.10 GB/s beside the fitted RTX 4090
    3.74 / L40S 5.15; Gen5: RTX PRO 6000 on EPYC Turin 37.6, RTX 5090 on Xeon 8480+ 35. None when
    no host of that generation is known (the neutral 1/5-of-the-link estimate stays)."""
    gen = pcie_generation(base, _shm_fabric(base.system(system)))
    if gen is None:
        return None
    public = load_module("shm_public").one_socket_hops(gen, without=system)
    fitted = [v for k, v in cal.shm_hop.items()
              if k != system and pcie_generation(base, _shm_fabric(base.system(k))) == gen]
    pool = public + fitted
    return float(statistics.median(pool)) if pool else None


def held_out(cal: Calibration, base: Catalog, system: str) -> Calibration:
    """Fallbacks for what the held-out system's rows alone determined (see the module doc): its GPU
    generation's floors, when neither its sweeps nor its generation's published tables are left,
    become the other generations' mean."""
    s = base.system(system)
    shm = _shm_fabric(s)
    if shm is not None and shm.name not in cal.fabric_achievable:
        # an SHM hop is NCCL's one transport through host memory (shm.cc): what the SHM rings of
        # one socket carry on the other hosts of its PCIe generation, public (shm_prior) and fitted
        prior = shm_prior(cal, base, system)
        if prior is not None:
            cal.fabric_achievable[shm.name] = prior
            cal.notes.append(f"{shm.name}: SHM hop {prior / 1e9:.2f} GB/s from the other hosts of its PCIe generation")
    arch = s.gpu.arch
    measured = arch in cal.arch
    if not measured and s.topology != "mesh":
        pooled = pooled_floor(cal.arch)
        if pooled is not None:
            cal.arch[arch] = pooled
            cal.notes.append(f"{arch}: floors pooled from {', '.join(sorted(cal.arch))}")
    if s.topology == "pcie" and cal.kernel_cap:
        pcie_kernel_efficiency(cal, apply(base, cal), system)
    if measured and cal.nccl_floor and s.topology != "mesh":
        # the engines' costs follow the generation's NCCL floor only where that floor was measured
        # (a pooled floor says nothing of the generation; its engines keep the others' mean)
        engine_fallback(cal, apply(base, cal), system)
    return cal


def _table(t) -> str:
    if not t:
        return "-"
    return "{ " + ", ".join(f'{"default" if k == "default" else repr(k)} = {v:.3f}' for k, v in
                            sorted(t.items(), key=lambda kv: (kv[0] != "default", kv[0].zfill(3)))) + " }"


def describe(cal: Calibration) -> list[str]:
    lines = ["ring_efficiency: " + ", ".join(f"{g} GPUs {v:.3f}" for g, v in sorted(cal.ring_efficiency.items()))]
    for arch, f in sorted(cal.arch.items()):
        lines.append(f"arch {arch:10} base_offset_us " + ", ".join(f"{p} {f.base_offset_s[p] / US:+.2f}" for p in ("ll", "ll128", "simple"))
                     + "  nvlink_hop_scale " + ", ".join(f"{p} {f.nvlink_hop_scale[p]:.2f}" for p in ("ll", "ll128", "simple"))
                     + f"  nvls_small_latency_us {f.nvls_small_latency_s / US:.2f}")
    lines += [f"nvls_link_efficiency {k}: {v:.3f}" for k, v in sorted(cal.nvls_link_efficiency.items())]
    lines += [f"nvls_decay_per_rank {cal.nvls_decay_per_rank:.5f}"]
    if cal.nvls_small_per_doubling_s is not None:
        lines += [f"nvls_small_latency_per_doubling_us {cal.nvls_small_per_doubling_s / US:.2f}"]
    if cal.shm_ll_bandwidth_fraction is not None:
        lines += [f"shm_ll_bandwidth_fraction {cal.shm_ll_bandwidth_fraction:.3f}"]
    for name, fit in sorted(cal.engines.items()):
        launch = ", ".join(f"{a} = {v / US:.2f}" for a, v in sorted(fit["launch_s"].items()))
        lines.append(f"engine {name}: launch_us {{ {launch} }} per_peer_us {fit['per_peer_s'] / US:.3f} "
                     f"one_shot_efficiency {_table(fit.get('one_shot_efficiency'))} "
                     f"two_shot_efficiency {_table(fit.get('two_shot_efficiency'))} "
                     "one_shot_efficiency_by_arch { " + ", ".join(
                         f"{a} = {_table(t)}" for a, t in fit.get("one_shot_efficiency_by_arch", {}).items()) + " } "
                     "two_shot_extra_us { " + ", ".join(f"{a} = {v / US:.2f}" for a, v in
                                                         sorted(fit.get("two_shot_extra_s", {}).items())) + " }"
                     + (f" mnnvl_one_shot_efficiency {_table(fit.get('mnnvl_one_shot_efficiency'))}"
                        f" mnnvl_two_shot_efficiency {_table(fit.get('mnnvl_two_shot_efficiency'))}"
                        f" mnnvl_launch_us {fit.get('mnnvl_launch_s', 0.0) / US:.2f}"
                        f" mnnvl_per_peer_us {fit.get('mnnvl_per_peer_s', 0.0) / US:.3f}"
                        if "mnnvl_two_shot_efficiency" in fit else ""))
    lines += [f"fabric {k} achievable {v / 1e9:.2f} GB/s" for k, v in sorted(cal.fabric_achievable.items())]
    lines += [f"cpu {k} host_bandwidth {v / 1e9:.2f} GB/s" for k, v in sorted(cal.cpu_host.items())]
    lines += [f"cpu {k} socket_stream_bandwidth {v / 1e9:.2f} GB/s" for k, v in sorted(cal.cpu_stream.items())]
    return lines


if __name__ == "__main__":
    cal = calibrate(samples(), engine_rows=engine_samples(), xla=xla_samples(), xla_all_gather=xla_all_gather_samples())
    print("\n".join(describe(cal)))
