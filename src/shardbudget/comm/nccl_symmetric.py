"""NCCL's symmetric-memory kernels (2.27 and later): all-reduce on buffers every rank registered
as one window (ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC), reached by loads and stores
instead of NCCL's channels and proxies.

Where they run: NCCL 2.27+, one NVLink domain whose GPUs all reach each other directly
(init.cc v2.27.3: symmetricSupport = isAllDirectP2p && nNodes == 1 && NCCL_WIN_ENABLE && cuMem),
bf16 / fp16 / fp32 sums. Who turns them on: the caller registers its buffers, so it is the
engine's switch (vLLM VLLM_USE_NCCL_SYMM_MEM=1, SGLang --enable-symm-mem, TensorRT-LLM's
NCCL_SYMMETRIC strategy; engines/*.toml [allreduce] nccl_symmetric), or `--nccl-symmetric`. When
registered, NCCL 2.27 takes a symmetric kernel whenever one exists ("For now just always use
symmetric if available", enqueue.cc v2.27.3), which is priority 0 here.

Which kernel: NCCL's own model (symmetric.cc queryModel at v2.27.3, unchanged in sym_kernels.cc
queryModel_lsa at v2.30.7): t = baseLat + busBytes / bw, bw = softmin(blocks x smBw x mult, peak,
smBw), with per-kernel bus bytes:

    AGxLL_R          every rank gathers every input with LL flags: p n x 9
    AGxLLMC_R        the same through the switch's multicast (NVLS)  x mult 1.1
    RSxLD_AGxST      reduce-scatter by loads, all-gather by stores: 2 n (p-1)/p
    RSxLDMC_AGxSTMC  the same through multimem (NVLS): n/p + n at mult p, 16 (Hopper) or 32
                     (Blackwell) blocks over the ranks

(NCCL's two rows, cudaArch < 1000 and Blackwell, are each generation's `[archs.<name>.nccl_symmetric]`
in catalog/archs.toml: baseLat LL 4.5 us else 7.8 / LL 11 else 19.5 us; smBw 65 / 55 GiB/s; peak 480 /
1000 GiB/s for multimem, 320 / 600 otherwise). NCCL takes the kernel its model says is fastest;
here the fastest of the lines priced as below, the same model with one scale on its latencies.
The time: NCCL's base latencies scaled so that its LL kernel lands on the generation's measured
floor (the generation's `floor`: NVIDIA/nccl#1940, 8 GPUs at 8 B, ~2.3 us on H200 / H800 and ~3 us
on B200 with NCCL 2.27; NCCL itself calls its model "too inaccurate", enqueue.cc), and NCCL's
bandwidths capped by what the links carry (the multimem kernel by the NVLS line, the load/store
kernel by the ring's bus bandwidth): no public sweep of these kernels is there to fit on.
"""

from __future__ import annotations

import math

from .lines import Candidate, Group
from .nccl_algos import nvls
from .op import busbw_factor
from ..fabric.hardware import NcclSymmetric
from ..fabric.ring_path import ring_path

SYMMETRIC_FROM = (2, 27)
"""First NCCL release with the symmetric kernels."""
GIB_PER_US = (1 << 30) / 1e6  # symmetric.cc: GBps = (1<<30)/1.e6, bytes per microsecond
LL_BUS_FACTOR = 9.0  # symmetric.cc LL_BusFactor: "2X the bytes, plus some processing, plus no unrolling"
MAX_BLOCKS = 64  # symmetric.h ncclSymMaxBlocks
LL_MAX_BUS_BYTES = 2 << 30  # LL kernels count elements in 32 bits (symmetric.cc ncclSymPickKernel)


def _softmin(x: float, ceiling: float, softness: float) -> float:
    """symmetric.cc softmin."""
    return ceiling - softness * math.log1p((math.exp(ceiling / softness) - 1) * math.exp(-x / softness))


def _kernels(p: int, model: NcclSymmetric, nvls: bool) -> list[tuple[str, bool, float, float, float]]:
    """(name, LL, bus bytes per message byte, bandwidth in bytes/us, NCCL's base latency in us)."""
    sm_bw = model.sm_bw_gibps * GIB_PER_US
    peak, peak_mc = model.peak_gibps, model.multimem_peak_gibps
    nvls_blocks = -(-model.multimem_blocks // p)
    rows = [
        ("AGxLL_R", True, p * LL_BUS_FACTOR, 1.0, MAX_BLOCKS, peak),
        ("RSxLD_AGxST", False, 2 * (p - 1) / p, 1.0, MAX_BLOCKS, peak),
    ]
    if nvls:
        rows += [
            ("AGxLLMC_R", True, p * LL_BUS_FACTOR, 1.1, MAX_BLOCKS, peak),
            ("RSxLDMC_AGxSTMC", False, 1 / p + 1, float(p), nvls_blocks, peak_mc),
        ]
    out = []
    for name, ll, bus, mult, blocks, top in rows:
        bw = _softmin(blocks * sm_bw * mult, top * GIB_PER_US, sm_bw)
        base = model.ll_base_latency_us if ll else model.base_latency_us
        out.append((name, ll, bus, bw, base))
    return out


def symmetric_available(group: Group) -> str | None:
    """None where NCCL can run its symmetric kernels on the group, else why not."""
    nccl = group.catalog.nccl
    if nccl.version < SYMMETRIC_FROM:
        return f"NCCL {nccl.version[0]}.{nccl.version[1]} has no symmetric kernels (from 2.27)"
    if group.nodes > 1:
        return "NCCL's symmetric kernels work inside one NVLink domain (init.cc: nNodes == 1)"
    path = ring_path(group.system, group.gpus_per_node)
    if not path.p2p or path.nccl_link != "nvlink":
        return "NCCL's symmetric kernels need every GPU to reach every other directly (isAllDirectP2p)"
    return None


def symmetric_candidates(group: Group) -> list[Candidate]:
    """NCCL's symmetric all-reduce kernels on `group` (empty where they cannot run)."""
    if group.gpus_per_node < 2 or symmetric_available(group) is not None:
        return []
    s, g = group.system, group.gpus_per_node
    model = s.gpu.generation.nccl_symmetric  # catalog/archs.toml
    path = ring_path(s, g)
    kernels = _kernels(g, model, path.nvls)
    # NCCL's base latencies keep their order (LL below the rest), scaled onto the measured floor
    scale = model.floor_s / kernels[0][4]
    # what the links carry: multimem no faster than NVLS, loads/stores no faster than the ring's
    # busbw over 2(p-1)/p (NCCL's peaks are estimates, 480-1000 GiB/s, above any NVLink)
    full = nvls(group)
    physical = {
        "RSxLDMC_AGxSTMC": full.algbw_bytes_per_s if full is not None else math.inf,
        "RSxLD_AGxST": path.busbw_bytes_per_s / busbw_factor("all-reduce", g),
    }
    out = []
    for name, ll, bus, bw, base in kernels:
        estimate = bw * 1e6 / bus  # bytes of message per second, as NCCL's model has it
        out.append(
            Candidate(
                f"symmetric-{name}",
                "ll" if ll else "simple",
                base * scale,
                min(estimate, physical.get(name, math.inf)),
                max_bytes=LL_MAX_BUS_BYTES - 1 if ll else math.inf,
                priority=0,
            )
        )
    return out


__all__ = ["SYMMETRIC_FROM", "symmetric_available", "symmetric_candidates"]
