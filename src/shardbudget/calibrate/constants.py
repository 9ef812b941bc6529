"""The fitted constants (`Calibration`) and how they enter a catalog (`apply`), and the catalog with
every fitted constant put back to its no-data value (`neutral`), where a held-out fold starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ..fabric.hardware import CPU, Catalog, Fabric, System
from ..fabric.nccl_constants import ArchFloor

US = 1e-6
LARGE = 128 * 2**20
HUGE = 2**30


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
    nccl = replace(
        nccl,
        arch=MappingProxyType(arch),
        nvls_link_efficiency=MappingProxyType(nvls),
        ring_efficiency=MappingProxyType(ring_eff),
        nvls_decay_per_rank=nccl.nvls_decay_per_rank if cal.nvls_decay_per_rank is None else cal.nvls_decay_per_rank,
        nvls_small_latency_per_doubling_s=(
            nccl.nvls_small_latency_per_doubling_s
            if cal.nvls_small_per_doubling_s is None
            else cal.nvls_small_per_doubling_s
        ),
        shm_ll_bandwidth_fraction=(
            nccl.shm_ll_bandwidth_fraction if cal.shm_ll_bandwidth_fraction is None else cal.shm_ll_bandwidth_fraction
        ),
    )
    fabrics = {
        n: (
            replace(f, achievable_bytes_per_s=min(cal.fabric_achievable[n], f.bytes_per_s))
            if n in cal.fabric_achievable
            else f
        )
        for n, f in catalog.fabrics.items()
    }
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
    return Catalog(
        fabrics=fabrics,
        gpus=catalog.gpus,
        systems=systems,
        nccl=nccl,
        sources=catalog.sources,
        cpus=cpus,
        engines=engines,
    )


def _remap(s: System, fabrics: Mapping[str, Fabric], cpus: Mapping[str, CPU]) -> System:
    def fab(f):
        return fabrics.get(f.name, f) if f is not None else None

    pcie = s.pcie
    if pcie is not None:
        pcie = replace(
            pcie,
            host_bridge=fab(pcie.host_bridge),
            shm=fab(pcie.shm),
            switch_uplink=fab(pcie.switch_uplink),
            cross_socket=fab(pcie.cross_socket),
        )
    return replace(
        s,
        intra_fabric=fab(s.intra_fabric),
        fallback_fabric=fab(s.fallback_fabric),
        socket_fabric=fab(s.socket_fabric),
        nic_fabric=fab(s.nic_fabric),
        cpu=cpus.get(s.cpu.name, s.cpu) if s.cpu is not None else None,
        pcie=pcie,
    )


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
    nccl = replace(
        nccl,
        arch=MappingProxyType({}),
        ring_efficiency=MappingProxyType({}),
        nvls_link_efficiency=MappingProxyType(nvls),
        nvls_decay_per_rank=0.0,
        shm_ll_bandwidth_fraction=nccl.protocol_bandwidth_fraction["ll"],
    )
    fabrics = dict(catalog.fabrics)
    for name in FITTED_FABRICS:
        f = fabrics[name]
        share = 2 / 3 if f.p2p else 1 / 5
        fabrics[name] = replace(f, achievable_bytes_per_s=f.bytes_per_s * share)
    cpus = {
        n: replace(c, host_bytes_per_s=float("inf"), socket_stream_bytes_per_s=c.socket_link_bytes_per_s)
        for n, c in catalog.cpus.items()
    }
    generic = nccl.custom
    ones = MappingProxyType({"default": 1.0})
    engines = {
        n: replace(
            e,
            launch_s=MappingProxyType({"any": generic.launch_s + generic.sync_s}),
            per_peer_s=0.0,
            two_shot_extra_s=MappingProxyType({"default": generic.sync_s}),
            one_shot_efficiency=ones,
            one_shot_efficiency_by_arch=MappingProxyType({}),
            two_shot_efficiency=ones,
            mnnvl_one_shot_efficiency=ones,
            mnnvl_two_shot_efficiency=ones,
            mnnvl_two_shot_extra_s=None,
            mnnvl_launch_s=None,
            mnnvl_per_peer_s=None,
        )
        for n, e in catalog.engines.items()
    }
    systems = {n: _remap(s, fabrics, cpus) for n, s in catalog.systems.items()}
    return Catalog(
        fabrics=fabrics,
        gpus=catalog.gpus,
        systems=systems,
        nccl=nccl,
        sources=catalog.sources,
        cpus=cpus,
        engines=engines,
    )


FITTED_FABRICS = ("pcie4-hostbridge", "pcie4-no-p2p-pod")
"""The fabrics whose achievable figure fit_pcie measures (the rest cite their own sources)."""
