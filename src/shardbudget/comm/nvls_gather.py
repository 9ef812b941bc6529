"""NCCL's NVLS all-gather and reduce-scatter: the switch multicasts (multimem.st) or reduces
(multimem.ld_reduce) one pass, inside one NVLink domain of at most 32 ranks.

Where NCCL runs it, from its source at the catalog's commit (NVIDIA/nccl 5067397c):

* src/device/all_gather.h and reduce_scatter.h have an NCCL_ALGO_NVLS / NCCL_PROTO_SIMPLE kernel
  (Simple only: tuning.cc skips every other protocol for NVLS);
* enqueue.cc updateCollCostTable offers NVLS to an op other than all-reduce only up to
  NCCL_MAX_NVLS_ARITY = 32 local ranks (device.h), and across nodes only through CollNet, which
  tuning.cc disables unless NCCL_COLLNET_ENABLE is set: one node (one NVLink domain) here;
* NCCL picks it by its own estimate (tuning.cc ncclTopoTuneModel, lines 307-323, 377 and 424-425
  at 5067397c; enqueue.cc updateCollCostTable lines 2004-2006): latency hwLat NVLink NVLS
  Simple (25 us, no base latency), bandwidth the NVLS graph's rate x nvlsEfficiency[arch] x
  (nCh-1)/nCh x (ppn-1)/ppn, and, unlike the ring, that bus bandwidth is *not* converted to an
  algorithm bandwidth for all-gather / reduce-scatter ("a != NCCL_ALGO_RING" skips the ratio).

Its rate is taken as the NVLink rate x 15/16 (16 channels), not nccl_graph.nvls_graph's channels x
speed as the all-reduce's estimate is: XLA's GB200 all-gather rows change slope where that rate puts
NCCL's switch to the ring at 16 and 32 GPUs, and the graph's 16 x 40 GB/s would put it below 64 MiB.

That estimate carries about half of the ring's rate (8 HGX B200s: 722 x 0.74 x 15/16 x 7/8 =
438 GB/s against ring LL128's 722 x 0.92 x 8/7 = 759 GB/s) for a 25 us latency the ring's LL and
LL128 beat up to 8 GPUs (14 + 7 x 1.9 = 27.3 us, LL 10.8 us): at 8 GPUs or fewer NCCL never picks
it, whatever the size. From 16 ranks the ring's p - 1 steps cost more than NVLS's flat 25 us, and
NCCL runs NVLS for medium messages (XLA's GB200 NVL72 all-gather rows at 16 and 32 GPUs).

As it runs: each GPU's link carries n one way (it receives every slice, multicast; or the switch
pulls every slice of its copy to reduce) and n/g the other, so algbw = the NVLS efficiency g ranks
reach x the link rate (the all-reduce moves n(1 + 1/g) each way at the same efficiency). The fixed
cost is the all-reduce's small-message NVLS cost a + b log2(g) (nccl_algos.nvls_small): the same
kernels' rank synchronisation. No new parameter.
"""

from __future__ import annotations

from .lines import Candidate, Group
from .nccl_algos import NVLS_CHANNELS, nccl, nvls, nvls_efficiency, nvls_small
from .versions import NVLS_GATHER_EFFICIENCY_FROM

# device.h: NVLS serves an op other than all-reduce only up to this many local ranks
NVLS_MAX_ARITY = 32


def nvls_gather(group: Group, op: str) -> Candidate | None:
    """NCCL's NVLS all-gather or reduce-scatter on one NVLink domain of 3 to 32 GPUs (None elsewhere).
    `op` is "all-gather" or "reduce-scatter"; n is nccl-tests' size (the gathered buffer)."""
    g = group.gpus_per_node
    if op not in ("all-gather", "reduce-scatter") or g > NVLS_MAX_ARITY or nvls(group) is None:
        return None
    s, c = group.system, nccl(group)
    # NCCL's estimate (tuning.cc): the NVLS busbw, (ppn-1)/ppn of it, left as the algorithm bandwidth;
    # before 2.28 without nvlsEfficiency, capped at 0.9 x the graph's inter rate (= its intra on one node)
    if c.version >= NVLS_GATHER_EFFICIENCY_FROM:
        share = c.nvls_nccl_efficiency.get(s.gpu.arch, 0.0) * (NVLS_CHANNELS - 1) / NVLS_CHANNELS * (g - 1) / g
    else:
        share = min((g - 1) / g, 0.9)
    if share <= 0:
        return None
    sel_bw = s.intra_fabric.nccl_bytes_per_s * share
    latency = nvls_small(group).latency_s
    return Candidate(
        "nvls",
        "simple",
        latency,
        s.intra_fabric.bytes_per_s * nvls_efficiency(s, group.catalog, g),
        select_latency_s=c.hw_latency_s["nvlink"]["nvls"]["simple"],
        select_algbw_bytes_per_s=sel_bw,
    )
