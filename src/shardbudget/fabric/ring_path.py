"""The path a ring over g GPUs of one node takes: per hop, its PCIe distance, transport and shared links.

NCCL connects consecutive ranks of a ring by the first transport that works (src/transport/*.cc):

  P2P  over NVLink, or over PCIe when the GPUs are no further apart than NCCL_P2P_LEVEL (default PXB:
       through PCIe switches, never through a CPU host bridge; SYS on AMD CPUs with at most 2 GPUs,
       src/graph/paths.cc ncclTopoCheckP2p) and the driver allows P2P (not on GeForce);
  NET  through the GPUs' own NICs when both sit under the GPUs' PCIe switches and NCCL's topology
       rates that path faster than the GPU-to-GPU one (paths.cc ncclTopoCheckNet, checked first);
  SHM  otherwise: the sender writes into host memory next to the receiver, which reads it back.

Each hop carries the ring's full rate b. Links that several hops cross in the same direction share
their capacity: b <= capacity / (sum of the hops' uses of it). The ring's bus bandwidth is the
smallest b over its hops. Uses per byte: a GPU's traffic through a switch uplink counts once (x1.2
through an Intel root complex, which splits P2P into 64 B TLPs: topo.h INTEL_P2P_OVERHEAD); a P2P hop
through a root complex passes that socket's host path once, an SHM hop twice (the extra copy: write
into host memory, read back), plus once on the sending socket when the hop crosses the socket link.

GPUs are filled in index order: gpus_per_node / sockets per socket, gpus_per_switch per switch, as
nvidia-smi numbers them by PCI bus. Everything here is computed once per (system, g) and cached.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from .hardware import PROTOCOLS, Fabric, System

# NCCL path types between two GPUs, nearest first (src/graph/topo.h PATH_*; nvidia-smi's NODE is
# NCCL's PHB: through a CPU, same socket).
PATH_ORDER = {"loc": 0, "nvl": 1, "pix": 2, "pxb": 3, "phb": 4, "sys": 5}
INTEL_P2P_OVERHEAD = 6 / 5
"""topo.h: Intel CPUs convert GPU P2P traffic into 64 B PCIe TLPs, so it takes 6/5 of the bandwidth."""
TRANSPORTS = ("nvlink", "p2p", "shm", "net")


@dataclass(frozen=True)
class Hop:
    """One ring hop src -> dst and what it uses."""

    src: int
    dst: int
    path: str
    """NCCL path type: nvl, pix, phb or sys."""
    transport: str
    """One of TRANSPORTS."""
    fabric: Fabric
    """The transport's fabric: its achievable rate caps one stream, its hop latency is the hop's."""
    ceiling_bytes_per_s: float
    """The most this hop carries on its own (the fabric, and a socket crossing's per-stream limit)."""
    uses: tuple[tuple[str, float], ...]
    """(shared link, uses per byte carried) for every shared link on the way."""
    extra_latency_s: float = 0.0


@dataclass(frozen=True)
class Path:
    """A ring over the GPUs of one node, reduced to what the cost model needs."""

    name: str
    busbw_bytes_per_s: float
    """Achievable bus bandwidth per GPU per direction: the slowest hop, sharing counted."""
    peak_bytes_per_s: float
    hop_latency_s: Mapping[str, float]
    """Mean per-hop latency around the ring, per protocol."""
    nccl_link: str
    """nvlink when every hop is NVLink (NCCL's NVLINK latency rows), else pci."""
    nvls: bool
    p2p: bool
    """Every hop is GPU-to-GPU (NVLink or PCIe P2P): what the engines' custom kernels need."""
    nccl_busbw_bytes_per_s: float = 0.0
    """The same ring's bandwidth as NCCL's topology rates its links (what NCCL chooses by)."""
    transports: tuple[str, ...] = ()
    """Transport of each hop, in ring order."""
    bottleneck: str = ""
    """What sets busbw: a hop's own transport, or a shared link and how many uses it carries."""


# --- where each GPU sits --------------------------------------------------------------------


def _per_socket(s: System) -> int:
    return max(1, s.gpus_per_node // s.pcie.sockets)


def socket_of(s: System, gpu: int) -> int:
    return gpu // _per_socket(s)


def switch_of(s: System, gpu: int) -> int:
    """Index of the PCIe switch above the GPU (a GPU on its own root port is its own 'switch')."""
    return gpu // s.pcie.gpus_per_switch


def nvlinked(s: System, a: int, b: int) -> bool:
    if s.topology in ("switch", "mesh", "single"):
        return True
    return s.topology == "pairs" and a // 2 == b // 2


def path_type(s: System, a: int, b: int) -> str:
    if nvlinked(s, a, b):
        return "nvl"
    if s.pcie.gpus_per_switch > 1 and switch_of(s, a) == switch_of(s, b):
        return "pix"
    return "phb" if socket_of(s, a) == socket_of(s, b) else "sys"


def p2p_level(s: System, g: int) -> str:
    """The effective NCCL_P2P_LEVEL for a communicator of g GPUs on this node."""
    level = s.pcie.p2p_level
    if level != "auto":
        return level
    # paths.cc: PXB by default; AMD CPUs allow P2P between any pair when the node has <= 2 GPUs
    return "sys" if s.cpu is not None and s.cpu.vendor == "amd" and g <= 2 else "pxb"


def pcie_link(s: System) -> Fabric:
    """The GPUs' PCIe fabric: P2P under one switch (the pcie system's link, or the pairs' fallback)."""
    return s.fallback_fabric if s.topology == "pairs" and s.fallback_fabric is not None else s.intra_fabric


def _nccl_path_bw(s: System, path: str) -> float:
    """The GPU-to-GPU bandwidth NCCL's own topology assigns (the slowest link: the GPU's PCIe link,
    the switch uplink, the socket link as topo.h rates it)."""
    bw = pcie_link(s).nccl_bytes_per_s
    if path in ("phb", "sys") and s.pcie.switch_uplink is not None:
        bw = min(bw, s.pcie.switch_uplink.nccl_bytes_per_s)
    if path == "sys" and s.cpu is not None:
        bw = min(bw, s.cpu.nccl_socket_link_bytes_per_s)
    return bw


def _net_is_faster(s: System, path: str) -> bool:
    """paths.cc ncclTopoCheckNet: both GPUs reach a NIC under their own switch, at a rate above the
    GPU-to-GPU path's."""
    if s.pcie.nics_per_switch == 0 or s.nic_fabric is None or path in ("nvl", "pix"):
        return False
    net = min(pcie_link(s).nccl_bytes_per_s, s.nic_fabric.bytes_per_s)
    return net > _nccl_path_bw(s, path)


# --- one hop ----------------------------------------------------------------------------------


def hop(s: System, g: int, a: int, b: int) -> Hop:
    """The transport and shared links of the ring hop a -> b in a communicator of g GPUs."""
    path = path_type(s, a, b)
    if path == "nvl":
        return Hop(a, b, path, "nvlink", s.intra_fabric, s.intra_fabric.achievable_bytes_per_s, ())
    tree, link = s.pcie, pcie_link(s)
    if tree.legacy:
        fabric = tree.cross_socket if path == "sys" and tree.cross_socket is not None else link
        transport = "p2p" if fabric.p2p else "shm"
        return Hop(a, b, path, transport, fabric, fabric.achievable_bytes_per_s, ())
    sa, sb = socket_of(s, a), socket_of(s, b)
    if _net_is_faster(s, path):
        nic = s.nic_fabric
        # each switch's NICs carry its GPUs' traffic out and in
        uses = (
            (f"nic{switch_of(s, a)}>", 1 / tree.nics_per_switch),
            (f"nic{switch_of(s, b)}<", 1 / tree.nics_per_switch),
        )
        return Hop(a, b, path, "net", nic, nic.achievable_bytes_per_s, uses)
    driver = s.gpu.pcie_p2p if tree.gpu_p2p is None else tree.gpu_p2p
    p2p = driver and link.p2p and PATH_ORDER[path] <= PATH_ORDER[p2p_level(s, g)]
    if p2p and path == "pix":
        return Hop(a, b, path, "p2p", link, link.achievable_bytes_per_s, ())
    intel = s.cpu is not None and s.cpu.vendor == "intel"
    uses: list[tuple[str, float]] = []
    if tree.switch_uplink is not None:
        tlp = INTEL_P2P_OVERHEAD if (p2p and intel) else 1.0
        uses += [(f"up{switch_of(s, a)}>", tlp), (f"up{switch_of(s, b)}<", tlp)]
    ceiling = (tree.host_bridge if p2p else tree.shm).achievable_bytes_per_s
    extra = 0.0
    if sa != sb:
        uses += [(f"host{sa}", 1.0), (f"sock{sa}>{sb}", 1.0)]
        extra = s.cpu.socket_latency_s
        if not p2p:
            ceiling = min(ceiling, s.cpu.socket_stream_bytes_per_s)
    # a P2P hop passes the receiving socket's host path once; an SHM hop writes into its memory and
    # reads back out (twice). A P2P hop across sockets already counted the sender's pass above.
    if p2p:
        uses += [] if sa != sb else [(f"host{sb}", 1.0)]
    else:
        uses += [(f"host{sb}", 2.0)]
    fabric = tree.host_bridge if p2p else tree.shm
    return Hop(a, b, path, "p2p" if p2p else "shm", fabric, ceiling, tuple(uses), extra)


def _nccl_hop_bw(s: System, h: Hop) -> float:
    if h.transport == "nvlink" or s.pcie.legacy:
        return h.fabric.nccl_bytes_per_s
    if h.transport == "net":
        return min(pcie_link(s).nccl_bytes_per_s, s.nic_fabric.bytes_per_s)
    return _nccl_path_bw(s, h.path)


def _capacity(s: System, link: str) -> float:
    if link.startswith("host"):
        return s.cpu.host_bytes_per_s if s.cpu else math.inf
    if link.startswith("sock"):
        return s.cpu.socket_link_bytes_per_s if s.cpu else math.inf
    if link.startswith("up"):
        return s.pcie.switch_uplink.achievable_bytes_per_s
    if link.startswith("nic"):
        return s.nic_fabric.achievable_bytes_per_s
    raise ValueError(link)


def ring_hops(s: System, g: int) -> tuple[Hop, ...]:
    """Hops of a ring over GPUs 0..g-1 in index order (NCCL's search finds this order on a tree
    filled by index: each switch, then each socket, is crossed as few times as possible)."""
    return tuple(hop(s, g, i, (i + 1) % g) for i in range(g))


@lru_cache(maxsize=4096)
def ring_path(s: System, g: int) -> Path:
    """The ring over g GPUs of one node of `s`, with its bandwidth derived from the hops."""
    hops = ring_hops(s, g)
    load: dict[str, float] = {}
    for h in hops:
        for link, n in h.uses:
            load[link] = load.get(link, 0.0) + n
    busbw, bottleneck = math.inf, ""
    for h in hops:
        if h.ceiling_bytes_per_s < busbw:
            busbw, bottleneck = h.ceiling_bytes_per_s, f"{h.transport} hop {h.src}->{h.dst} ({h.fabric.name})"
        for link, _ in h.uses:
            share = _capacity(s, link) / load[link]
            if share < busbw:
                busbw, bottleneck = share, f"{link} shared by {load[link]:g} uses"
    # peak: the same ring on vendor peak rates, never below the achievable figure
    peak = max(busbw, min(h.fabric.bytes_per_s for h in hops))
    if s.topology == "mesh" and s.gpus_per_node > 1:
        # xGMI is point-to-point: g GPUs use only the links among themselves, g-1 of each GPU's
        # gpus_per_node-1 links (MI300X: 2 GPUs share one 64 GB/s link)
        share = (g - 1) / (s.gpus_per_node - 1)
        busbw, peak = busbw * share, peak * share
    nccl_bw = min(_nccl_hop_bw(s, h) for h in hops)
    if s.topology == "mesh" and s.gpus_per_node > 1:
        nccl_bw *= (g - 1) / (s.gpus_per_node - 1)
    latency = {p: sum(h.fabric.hop_latency_s[p] + h.extra_latency_s for h in hops) / len(hops) for p in PROTOCOLS}
    names = sorted({h.fabric.name for h in hops})
    return Path(
        name="+".join(names),
        busbw_bytes_per_s=busbw,
        peak_bytes_per_s=peak,
        hop_latency_s=latency,
        nccl_busbw_bytes_per_s=nccl_bw,
        nccl_link="nvlink" if all(h.fabric.nccl_link == "nvlink" for h in hops) else "pci",
        nvls=s.topology == "switch" and all(h.fabric.in_switch_reduction for h in hops),
        p2p=all(h.transport in ("nvlink", "p2p") for h in hops),
        transports=tuple(h.transport for h in hops),
        bottleneck=bottleneck,
    )
