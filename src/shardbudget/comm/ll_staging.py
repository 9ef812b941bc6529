"""LL's store-and-forward through host memory at each network step (comm/lines.LLNetStaging).

NCCL keeps LL send buffers in host memory even with GPUDirect RDMA (transport/net.cc) and its proxy
posts a step only after reading the flags of every line of one channel's share, so a network step
waits for that share where an NVLink hop forwards line by line.
"""

from __future__ import annotations

from ..fabric.hardware import RDMA_NIC_KINDS
from .lines import Group, LLNetStaging

LL_THREADS = 512
"""NCCL_LL_MAX_NTHREADS: an LL channel's threads (device.h)."""
LL_THREAD_THRESHOLD = 8
"""NCCL_LL_THREAD_THRESHOLD (comm.h): bytes per thread below which NCCL drops a channel."""
MAX_CHANNELS = 32
"""NCCL's MAXCHANNELS (device.h, 2.x): the most channels a ring or tree call splits over."""


def ll_staging(group: Group, algo: str, op: str, proto: str, line_s: float) -> LLNetStaging | None:
    """The staging of `algo`'s network steps on the critical path: tree 2 log2i(N) steps, ring
    all-reduce 2 (N - 1) (tuning.cc's counts), `line_s` per 16-byte line (nccl.toml
    ll_net_proxy_line_ns). Only NCCL's RDMA transports: a socket transport stages every protocol,
    which its measured figures already hold."""
    nic = group.system.nic_fabric
    if proto != "ll" or group.nodes < 2 or nic is None or nic.kind not in RDMA_NIC_KINDS or line_s <= 0:
        return None
    if algo == "tree":
        steps, chunks = 2 * (group.nodes.bit_length() - 1), 1.0  # log2i: floor(log2), as NCCL's log2Down
    else:
        steps = (2 if op == "all-reduce" else 1) * (group.nodes - 1)
        chunks = float(group.ranks)  # tuning.cc: the ring's LL threshold x nRanks; a step is 1/nRanks
    return LLNetStaging(steps, line_s, LL_THREADS * LL_THREAD_THRESHOLD * chunks, MAX_CHANNELS, chunks)
