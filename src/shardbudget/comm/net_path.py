"""The path between a GPU and its NIC: GPUDirect RDMA, or staged through host memory.

NCCL lets a NIC read and write GPU memory directly (GPUDirect RDMA, "GDR") only when the two are
close enough (src/graph/paths.cc ncclTopoCheckGdr): their path type (`System.nic_path`, NCCL's
PATH_PIX .. PATH_SYS) must be at most NCCL_NET_GDR_LEVEL, PATH_PXB by default (GPU and NIC behind
PCIe switches, not through a CPU). On Grace hosts the NIC hangs off the CPU the GPU reaches over
NVLink-C2C (PATH_P2C): NCCL_NET_GDR_C2C lets GDR through there, on by default from 2.27 (paths.cc at
v2.27.3: NCCL_PARAM(NetGdrC2c, ..., 1); 0 at v2.26.2, where CoreWeave's GB200 scripts set it to 1).
The NIC must speak RDMA (`RDMA_NIC_KINDS`); a socket transport always copies through the host.

Without GDR every network byte is staged: the GPU copies it into a host bounce buffer and the NIC
reads it from there (receives the reverse). That costs
* bandwidth: measured 0.83 of the GDR figure (`STAGED_SHARE`: NVIDIA/nccl#1579, two GH200 nodes with
  4x 200 Gb/s each, NCCL 2.24.3, all_reduce_perf 2 GiB busbw 79.72 GB/s staged vs 96.07 with
  NCCL_NET_GDR_LEVEL=SYS), and no more than the CPU's root complex carries: each staged byte passes
  it twice (into host memory and out of it), so a socket's NICs share half its `host_bytes_per_s`;
* latency: one more PCIe crossing per network step, priced at tuning.cc's PCI ring hop (hwLat PCI).
"""

from __future__ import annotations

from ..fabric.hardware import NIC_PATHS, RDMA_NIC_KINDS, System
from ..fabric.nccl_constants import NcclConstants

GDR_LEVEL = "pxb"
"""NCCL_NET_GDR_LEVEL's default (paths.cc: netGdrLevel = PATH_PXB)."""
GDR_C2C_DEFAULT_FROM = (2, 27)
"""First release with NCCL_NET_GDR_C2C=1 by default (paths.cc v2.27.3; 0 at v2.26.2)."""
STAGED_SHARE = 79.72 / 96.07
"""Share of the GDR bandwidth a host-staged NIC reaches (NVIDIA/nccl#1579, GH200, 2 nodes)."""


def gdr(system: System, nccl: NcclConstants) -> bool:
    """Whether NCCL runs GPUDirect RDMA between this system's GPUs and NICs."""
    nic = system.nic_fabric
    if nic is None or nic.kind not in RDMA_NIC_KINDS:
        return False
    if system.nic_path == "p2c":  # the C2C exception, NET_GDR_C2C
        return nccl.version >= GDR_C2C_DEFAULT_FROM
    return NIC_PATHS.index(system.nic_path) <= NIC_PATHS.index(GDR_LEVEL)


def staged(system: System, nccl: NcclConstants) -> bool:
    """Network bytes staged through host memory that GDR would have moved directly (a socket
    transport's own staging is in its measured figures, so it is not counted again)."""
    nic = system.nic_fabric
    return nic is not None and nic.kind in RDMA_NIC_KINDS and not gdr(system, nccl)


def node_nic_bytes_per_s(system: System, nccl: NcclConstants, nics: float) -> float:
    """What `nics` of the node's NICs carry per direction, achievable, over the path NCCL takes."""
    if system.nic_fabric is None:
        return 0.0
    rate = nics * system.nic_fabric.achievable_bytes_per_s
    if not staged(system, nccl):
        return rate
    rate *= STAGED_SHARE
    cpu = system.cpu
    if cpu is not None:
        sockets = system.pcie.sockets if system.pcie is not None and not system.pcie.legacy else 1
        # the NICs in use spread over the sockets; each staged byte crosses a root complex twice
        rate = min(rate, max(1.0, min(sockets, nics)) * cpu.host_bytes_per_s / 2)
    return rate


def staged_hop_s(system: System, nccl: NcclConstants, proto: str) -> float:
    """Latency a network step adds when staged: one more PCIe crossing (tuning.cc hwLat PCI ring)."""
    if not staged(system, nccl):
        return 0.0
    return nccl.hw_latency_s["pci"]["ring"][proto]


def describe(system: System, nccl: NcclConstants) -> str:
    """One line for a multi-node table: which path the network bytes take, and why."""
    if system.nic_fabric is None:
        return ""
    if system.nic_fabric.kind not in RDMA_NIC_KINDS:
        return f"{system.nic_fabric.name} is a socket transport: every byte goes through host memory"
    path = system.nic_path.upper()
    if gdr(system, nccl):
        return f"GPUDirect RDMA (GPU-NIC path {path})"
    why = (
        f"NCCL {nccl.version[0]}.{nccl.version[1]} leaves NCCL_NET_GDR_C2C off"
        if system.nic_path == "p2c"
        else f"{path} is beyond NCCL_NET_GDR_LEVEL {GDR_LEVEL.upper()}"
    )
    return (
        f"host-staged, no GPUDirect RDMA (GPU-NIC path {path}: {why}): "
        f"{STAGED_SHARE:.0%} of the NIC rate, +1 PCIe hop per network step"
    )


__all__ = ["GDR_LEVEL", "describe", "STAGED_SHARE", "gdr", "node_nic_bytes_per_s", "staged", "staged_hop_s"]
