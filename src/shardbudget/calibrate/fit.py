"""`calibrate`: every constant fitted on the rows, in the order they depend on each other, from a base
catalog (the built-in one, or `constants.neutral` for a held-out fold); `fit_all`, on the repository's data.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from ..fabric.catalog import load_catalog
from ..fabric.hardware import Catalog
from ..fabric.ring_path import ring_path
from .constants import Calibration, apply
from .fallback import kernel_caps, nccl_floor_s
from .fit_engines import fit_engines
from .fit_nccl import fit_floors, fit_ll128_hop, fit_nvls, fit_nvls_small, fit_ring_efficiency, pooled_floor
from .fit_pcie import fit_pcie, fit_shm_hop, fit_shm_ll
from .samples import Sample, engine_samples, samples, xla_all_gather_samples, xla_samples


def calibrate(
    xs: Sequence[Sample],
    base: Catalog | None = None,
    rounds: int = 2,
    engine_rows: Sequence[tuple[str, Sample]] = (),
    xla: Sequence[Sample] = (),
    xla_all_gather: Sequence[Sample] = (),
) -> Calibration:
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


def fit_all(data_dir: Path | None = None, base: Catalog | None = None) -> Calibration:
    """Every constant fitted on the measurements of `data_dir` (the repository's data/), as the
    built-in catalog holds them."""
    return calibrate(
        samples(data_dir),
        base=base,
        engine_rows=engine_samples(data_dir),
        xla=xla_samples(data_dir),
        xla_all_gather=xla_all_gather_samples(data_dir),
    )
