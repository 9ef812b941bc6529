"""Estimators of the PCIe boxes' platform figures: the link, host path or socket stream a ring's
busbw measures (`fit_pcie`), what one host-staged (SHM) hop carries per box (`fit_shm_hop`) and LL's
share of an SHM ring's bandwidth (`fit_shm_ll`).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence

from ..comm.op import busbw_factor
from ..fabric.hardware import Catalog, Fabric, System
from ..fabric.ring_path import ring_hops, ring_path
from .fit_nccl import _chosen, _single
from .samples import Sample


def fit_pcie(
    xs: Sequence[Sample], catalog: Catalog, structure: Catalog | None = None
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
        hops = ring_hops(s, x.gpus)
        if path.bottleneck.startswith("host"):
            uses = float(path.bottleneck.split("shared by ")[1].split()[0])
            host[s.cpu.name].append(busbw * uses)
        elif any(
            h.transport == "shm"
            and h.ceiling_bytes_per_s == s.cpu.socket_stream_bytes_per_s
            and s.cpu.socket_stream_bytes_per_s == path.busbw_bytes_per_s
            for h in hops
        ):
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
        hops = ring_hops(s, x.gpus)
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


def _shm_fabric(s: System) -> Fabric | None:
    return s.pcie.shm if s.topology == "pcie" and s.pcie is not None else None


def pcie_generation(catalog: Catalog, fabric: Fabric) -> int | None:
    """The PCIe generation whose link (the catalog's pcie3..pcie6) runs at this fabric's peak."""
    return next(
        (
            g
            for g in range(3, 7)
            if f"pcie{g}" in catalog.fabrics and catalog.fabrics[f"pcie{g}"].bytes_per_s == fabric.bytes_per_s
        ),
        None,
    )
