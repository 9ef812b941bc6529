"""What a held-out fold does for the constants only the held-out system's rows determined (the
package docstring lists each fallback): a GPU generation's floors pooled, the engines' costs scaled
by the NCCL floors, a PCIe box's one-shot kernels at the link's rate, an SHM hop from its PCIe
generation's other hosts.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from types import MappingProxyType

import numpy as np

from ..comm.collectives import sweep
from ..comm.custom_kernels import read_class
from ..fabric.hardware import Catalog
from ..fabric.ring_path import ring_path
from . import shm_public
from .constants import US, Calibration, apply
from .fit_nccl import pooled_floor
from .fit_pcie import _shm_fabric, pcie_generation


def kernel_caps(cal: Calibration, catalog: Catalog, systems: Sequence[str]) -> dict[str, float]:
    """Per engine, the slowest one-shot kernel measured anywhere, bytes/s: its fitted share of the
    ring busbw (one_shot_efficiency_by_arch) times that ring's busbw, over the systems with engine
    rows and their GPU counts. On NVLink the share is the kernel's own limit (its blocks' loads
    and stores: vLLM at 2 GPUs 0.24 of B200's ring, 0.72 of H100's, 0.88 of A100's); in bytes/s it
    is a throughput the kernel reaches on any link at least as fast."""
    caps: dict[str, float] = {}
    for name, fit in cal.engines.items():
        by_arch = fit.get("one_shot_efficiency_by_arch", {})
        rates = [
            eff * ring_path(catalog.system(system), int(g)).busbw_bytes_per_s
            for system in systems
            if catalog.system(system).topology != "pcie"
            for g, eff in by_arch.get(catalog.system(system).gpu.arch, {}).items()
            if int(g) <= catalog.system(system).gpus_per_node
        ]
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
        fit["one_shot_efficiency_by_arch"] = MappingProxyType(
            dict(fit["one_shot_efficiency_by_arch"]) | {key: MappingProxyType(table)}
        )
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


def shm_prior(cal: Calibration, base: Catalog, system: str) -> float | None:
    """What one SHM hop of `system` carries before any of its rows is seen: the median, over the
    hosts of its PCIe generation, of their one-socket host-staged ring busbw: the public hosts of
    data/shm_public.csv (less any row of `system`) and the boxes fitted in this
    fold (fit_shm_hop). Gen4: A10G on AWS g5 (EPYC Rome, NPS1) 3.10 GB/s beside the fitted RTX 4090
    3.74 / L40S 5.15; Gen5: RTX PRO 6000 on EPYC Turin 37.6, RTX 5090 on Xeon 8480+ 35. None when
    no host of that generation is known (the neutral 1/5-of-the-link estimate stays)."""
    gen = pcie_generation(base, _shm_fabric(base.system(system)))
    if gen is None:
        return None
    public = shm_public.one_socket_hops(gen, without=system)
    fitted = [
        v for k, v in cal.shm_hop.items() if k != system and pcie_generation(base, _shm_fabric(base.system(k))) == gen
    ]
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
