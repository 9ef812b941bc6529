"""The fabric what-ifs of `explain`'s first question: the user's GPU, engine and plan on other fabrics.

Built from the catalog, changing only how the GPUs are joined:

* on NVSwitch: the catalog's switch system of the same GPU generation (hgx-h100's nvswitch-gen3 for
  any Hopper part), with the user's GPU in it;
* on PCIe with P2P: every GPU under PCIe switches of one CPU root complex (as `l40s-pcie-p2p`), at
  the GPU's own PCIe generation (its generation's `pcie_gen`, catalog/archs.toml), P2P on;
* on PCIe without P2P: every GPU on its own root port of one healthy CPU with P2P off, so that NCCL
  stages every hop through host memory (SHM), as the GeForce boxes do, at the generation's
  `pcieN-no-p2p` figure: one hop inside one socket of a healthy host (catalog/host_staged.toml), the
  same platform at every generation (the P2P tree with P2P off would queue all eight hops' copies on
  one switch uplink: a pathological box, not a reference);
* across two nodes: the same TP group split over two nodes of the user's system, half its GPUs
  each, over its NICs (the NICs per GPU kept).

Each is a `System` the planner prices like any catalog entry; none is a measured box, and every
label says "what-if". The PCIe what-ifs run on a healthy host (`healthy_cpu`): a degraded profile's
CPU (EPYC in NPS1) would price the fabric's what-if with its own host's collapse (issue 34).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..fabric.hardware import CPU, Catalog, PcieTree, System
from ..fabric.topo_build import PCIE_GEN
from ..comm.collectives import intra_path


@dataclass(frozen=True)
class FabricCase:
    """One system a fabric comparison prices: a catalog entry, or a what-if built from one."""

    label: str
    """What the row says: 'hgx-h100 (nvswitch-gen3)', 'h100-sxm on PCIe Gen5, P2P (what-if)'."""
    system: System
    nodes: int = 1
    whatif: bool = False

    @property
    def fabric(self) -> str:
        """The links the TP group's calls cross."""
        s = self.system
        if self.nodes > 1:
            return f"{s.nics_per_node}x {s.nic_fabric.name} between {self.nodes} nodes"
        return s.intra_fabric.name if s.topology == "switch" else _ring_name(s)


def _ring_name(s: System) -> str:
    return intra_path(s, s.gpus_per_node).name if s.gpus_per_node > 1 else s.intra_fabric.name


def nvswitch_template(system: System, catalog: Catalog) -> System | None:
    """The catalog's NVSwitch system of the GPU's generation (None: there is none, e.g. AMD, Ada)."""
    same = [
        s
        for s in catalog.systems.values()
        if s.topology == "switch"
        and s.gpu.arch == system.gpu.arch
        and s.intra_fabric.kind == "nvswitch"
        and s.gpus_per_node <= 8
    ]
    return min(same, key=lambda s: (s.gpu is not system.gpu, s.name), default=None)


def pcie_gen(system: System) -> int:
    return PCIE_GEN.get(system.gpu.name, system.gpu.generation.pcie_gen)


REFERENCE_CPU = "xeon-spr"
"""The host of the catalog's healthy PCIe reference (l40s-pcie-switch): what a what-if runs on where
the user's system names no CPU or a degraded one."""


def healthy_cpu(system: System, catalog: Catalog) -> CPU | None:
    """The system's CPU, unless the catalog marks it degraded (then the reference host's)."""
    if system.cpu is not None and not system.cpu.degraded:
        return system.cpu
    return catalog.cpus.get(REFERENCE_CPU)


def _pcie_whatif(system: System, catalog: Catalog, *, p2p: bool) -> System | None:
    """The user's GPUs under PCIe switches of one root complex at their PCIe generation, P2P on or off."""
    gen = pcie_gen(system)
    names = {k: f"pcie{gen}{suffix}" for k, suffix in (("link", ""), ("bridge", "-hostbridge"), ("shm", "-no-p2p"))}
    if any(n not in catalog.fabrics for n in names.values()):
        return None
    cpu = healthy_cpu(system, catalog)
    if cpu is None:
        return None
    n = system.gpus_per_node
    link = catalog.fabric(names["link"])
    if p2p:
        tree = PcieTree(
            sockets=1,
            gpus_per_switch=n,
            host_bridge=catalog.fabric(names["bridge"]),
            shm=catalog.fabric(names["shm"]),
            switch_uplink=link,
            nics_per_switch=0,
            p2p_level="auto",
            gpu_p2p=True,
            source="what-if: one root complex, every GPU under its PCIe switches",
        )
        words, where = "P2P", "switches"
    else:
        # every GPU on its own root port of one healthy CPU, so each hop is the generation's one-socket SHM hop
        # (host_staged.toml), not eight hops' copies queued on one switch uplink (3 GB/s at Gen4)
        tree = PcieTree(
            sockets=1,
            gpus_per_switch=1,
            host_bridge=catalog.fabric(names["bridge"]),
            shm=catalog.fabric(names["shm"]),
            switch_uplink=None,
            nics_per_switch=0,
            p2p_level="auto",
            gpu_p2p=False,
            source="what-if: every GPU on its own root port of one CPU, P2P off",
        )
        words, where = "no P2P (SHM through host memory)", "root ports of one healthy host"
    return dataclasses.replace(
        system,
        name=f"{system.gpu.name} on PCIe Gen{gen}, {words}",
        description=f"what-if: {n}x {system.gpu.name} on PCIe Gen{gen} {where}, {words}",
        topology="pcie",
        intra_fabric=link,
        fallback_fabric=None,
        socket_fabric=None,
        gpus_per_socket=n,
        domain_gpus=n,
        cpu=cpu,
        pcie=tree,
        degraded="",
        source=f"what-if built from the catalog's pcie{gen} fabrics",
    )


def two_nodes(system: System, tp: int) -> System | None:
    """`system` cut into nodes of tp / 2 GPUs, NICs per GPU kept: a TP group of `tp` over two nodes."""
    half = tp // 2
    if system.nic_fabric is None or tp < 2 or tp % 2 or half > system.gpus_per_node:
        return None
    per_socket = math.gcd(system.gpus_per_socket, half)
    tree = system.pcie
    if tree is not None:
        tree = dataclasses.replace(
            tree,
            sockets=half // per_socket,
            gpus_per_switch=math.gcd(tree.gpus_per_switch, per_socket),
            nics_per_switch=0 if math.gcd(tree.gpus_per_switch, per_socket) < 2 else tree.nics_per_switch,
        )
    nics = max(1, system.nics_per_node * half // system.gpus_per_node)
    unit = "racks" if system.intra_fabric.kind == "nvl72" else "nodes"  # an NVL72's node is its rack
    return dataclasses.replace(
        system,
        name=f"{system.name} as 2 {unit} x {half} GPUs",
        description=f"what-if: {system.name} with {half} GPUs per node",
        gpus_per_node=half,
        gpus_per_socket=per_socket,
        domain_gpus=half,
        nics_per_node=nics,
        pcie=tree,
        gpus_per_host=math.gcd(system.host_gpus, half),
    )


def fabric_cases(system: System, catalog: Catalog, tp: int) -> list[FabricCase]:
    """`system` itself, then its GPU on the other fabrics (module docstring) that differ from its own."""
    cases = [FabricCase(f"{system.name} ({FabricCase('', system).fabric})", system)]
    if system.topology != "switch":
        t = nvswitch_template(system, catalog)
        if t is not None:
            s = dataclasses.replace(
                t,
                name=f"{system.gpu.name} on {t.intra_fabric.name}",
                gpu=system.gpu,
                description=f"what-if: {t.name} with {system.gpu.name} GPUs",
            )
            cases.append(
                FabricCase(f"{system.gpu.name} on {t.intra_fabric.name} of {t.name} (what-if)", s, whatif=True)
            )
    # a what-if the system already is is left out: P2P where every hop of its own TP ring is P2P, no
    # P2P where every hop is host-staged on the healthy hop of its generation (a dual-root box does both,
    # and a degraded host or a slower SHM hop is not the healthy path: both what-ifs are shown)
    own = set(intra_path(system, tp).transports) if system.topology == "pcie" and tp > 1 else set()
    healthy_shm = (
        system.pcie is not None and system.pcie.shm.name == f"pcie{pcie_gen(system)}-no-p2p" and not system.degraded
    )
    for p2p in (True, False):
        same = bool(own) and (own <= {"p2p"} if p2p else (own <= {"shm"} and healthy_shm))
        s = _pcie_whatif(system, catalog, p2p=p2p) if not same else None
        if s is not None and s.gpus_per_node >= tp:
            cases.append(FabricCase(f"{s.name} (what-if)", s, whatif=True))
    split = two_nodes(system, tp)
    if split is not None:
        unit = "racks" if system.intra_fabric.kind == "nvl72" else "nodes"  # an NVL72's node is its rack
        cases.append(
            FabricCase(
                f"{system.name}, TP{tp} over 2 {unit} x {tp // 2} GPUs, "
                f"{split.nics_per_node}x {system.nic_fabric.name} each (what-if)",
                split,
                nodes=2,
                whatif=True,
            )
        )
    return cases


__all__ = ["REFERENCE_CPU", "FabricCase", "fabric_cases", "healthy_cpu", "nvswitch_template", "pcie_gen", "two_nodes"]
