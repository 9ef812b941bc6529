"""How much communication a mechanism hides behind compute: never max(compute, comm) for dependent ops.

A decode layer's all-reduce sits between two matmuls that need its result, so by default nothing
overlaps (`none`): GPU time = compute + communication. Two mechanisms that real engines use hide
part of it, each priced from what it does:

tbo    two-batch (micro-batch) overlap, as SGLang's --enable-two-batch-overlap and DeepSeek's
       inference system run MoE decode: the batch is split into two micro-batches that alternate,
       one's collectives running while the other computes. Each micro-batch reads every weight
       again, so compute is 2 x compute(ceil(b / 2)); per layer the two phases cost
       max(compute_half, comm_half) each, plus one layer's worth of the smaller as pipeline fill:
           gpu = 2 max(C_h, M_h) + min(C_h, M_h) / layers.
       A batch of 1 cannot be split: no overlap.
fused  GEMM + collective kernels (TransformerEngine userbuffers / PyTorch async-TP / TRT-LLM
       fused GEMM-all-reduce): the collective's transfer is chunked under the GEMMs next to it, but
       its latency (launch, synchronisation, hops) is not: exposed = latency + max(0, transfer - GEMM).
The exposed communication is what the step reports as comm_s, so compute + comm + host still add up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UnknownNameError

OVERLAPS = ("none", "tbo", "fused")


@dataclass(frozen=True)
class GpuParts:
    """One step's GPU time split as the overlap mechanisms need it, seconds (arrays)."""

    compute_s: np.ndarray
    gemm_s: np.ndarray
    """Part of compute_s spent in GEMMs (what fused collectives hide under)."""
    comm_s: np.ndarray
    comm_latency_s: np.ndarray


def check_overlap(mode: str) -> str:
    if mode not in OVERLAPS:
        raise UnknownNameError("overlap mechanism", str(mode), OVERLAPS)
    return mode


def _scaled_latency(comm_lat: np.ndarray, comm: np.ndarray, exposed: np.ndarray) -> np.ndarray:
    """The latency share of what stays exposed, in proportion."""
    return np.where(comm > 0, comm_lat * exposed / np.where(comm > 0, comm, 1.0), 0.0)


def exposed(
    mode: str, full: GpuParts, *, half: GpuParts | None = None, layers: int = 1, batch=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(gpu_s, compute_s, exposed comm_s, its latency part) under one mechanism."""
    check_overlap(mode)
    if mode == "none":
        return full.compute_s + full.comm_s, full.compute_s, full.comm_s, full.comm_latency_s
    if mode == "fused":
        transfer = full.comm_s - full.comm_latency_s
        comm = full.comm_latency_s + np.maximum(0.0, transfer - full.gemm_s)
        return full.compute_s + comm, full.compute_s, comm, full.comm_latency_s
    c_h, m_h = half.compute_s, half.comm_s
    gpu = 2 * np.maximum(c_h, m_h) + np.minimum(c_h, m_h) / layers
    compute = 2 * c_h
    comm = np.maximum(gpu - compute, 0.0)
    split = np.asarray(batch) >= 2
    return (
        np.where(split, gpu, full.compute_s + full.comm_s),
        np.where(split, compute, full.compute_s),
        np.where(split, comm, full.comm_s),
        np.where(split, _scaled_latency(2 * half.comm_latency_s, 2 * m_h, comm), full.comm_latency_s),
    )


__all__ = ["GpuParts", "OVERLAPS", "check_overlap", "exposed"]
