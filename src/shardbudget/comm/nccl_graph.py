"""NCCL's graph search as it runs inside one NVLink switch domain: how many channels its ring and
NVLS graphs get, at what speed each. NCCL's estimate (tuning.cc) prices its algorithms from these
(nChannels x bwIntra), so they decide which line NCCL picks (comm/nccl_algos.py); the time a line
takes is priced from the fabrics' measured rates, not from here.

Read from NVIDIA/nccl src/graph/search.cc (ncclTopoCompute, ncclTopoSearchTryNvls,
ncclTopoDupChannels; the same at v2.27.7, v2.29.2 and 5067397c) and tuning.cc."""

from __future__ import annotations

import math

from .lines import Group
from ..fabric.ring_path import Path

# device.h NCCL_MAX_NVLS_ARITY: an NVLS graph has at most this many channels (heads)
NVLS_MAX_HEADS = 32
# search.cc: a ring graph has at most MAXCHANNELS/2 channels; ncclTopoDupChannels doubles a graph
# whose speed is at least 25 GB/s, above sm80 (ccMin > 80) only at 50 GB/s or with at most 4 channels
RING_MAX_CHANNELS = 32
DUP_SPEED = 50e9
DUP_MIN_SPEED = 25e9
DUP_ANY_COUNT_MAX_CC = 80


def compute_capability(sm: str) -> int | None:
    """A CUDA compute capability as NCCL compares it ("9.0" -> 90, "10.3" -> 103); None without one (AMD)."""
    major, _, minor = sm.partition(".")
    return int(major) * 10 + int(minor or 0) if major.isdigit() and (minor or "0").isdigit() else None


def nvls_graph(group: Group, g: int) -> tuple[int, float]:
    """NCCL's NVLS graph inside one NVLink domain of g GPUs: (channels, bytes/s per channel).

    search.cc ncclTopoCompute: one channel per GPU, at most NCCL_MAX_NVLS_ARITY (32), all of them
    forced (minChannels = maxChannels on one node), never duplicated; ncclTopoSearchTryNvls takes a
    channel's speed from every GPU's link each way, twice from its head's, so the g channels load
    each link with (channels + 1) x speed: the speed is the first of the generation's intra array
    that fits. HGX B200: 4 x 90 GB/s at 4 GPUs, 8 x 80 at 8; NCCL's estimate puts NVLS behind the
    ring at 4 GPUs and ahead of it at 8."""
    channels = min(NVLS_MAX_HEADS, g)
    link = group.system.intra_fabric.nccl_bytes_per_s
    speeds = group.catalog.nccl.search_speeds(group.system.gpu.arch)
    speed = next((v for v in speeds if v * (channels + 1) <= link), speeds[-1])
    return channels, speed


def nvls_graph_busbw(group: Group, g: int, efficiency: float) -> float:
    """tuning.cc's NVLS rate: the graph's channels x speed x nvlsEfficiency x (nCh-1)/nCh."""
    channels, speed = nvls_graph(group, g)
    return channels * speed * efficiency * (channels - 1) / channels


def ring_graph(group: Group, path: Path) -> tuple[int, float]:
    """NCCL's ring graph on one NVLink switch: (channels, bytes/s per channel).

    search.cc ncclTopoCompute, as it runs on a switch, where a ring channel takes its speed from
    every GPU's link: from the first speed of the generation's array at most the link rate, each
    speed gives floor(link / speed) channels (at most MAXCHANNELS/2 = 32); lower speeds are tried
    while they are over 0.49 of the best so far, the first best total kept (ties keep fewer
    channels); ncclTopoDupChannels then doubles the channels at half the speed where the speed is
    50 GB/s or more (or 25 or more with at most 4 channels, or on sm80 and older).
    HGX H100: 6 x 60 -> 12 x 30 GB/s; HGX B200: 8 x 90 -> 16 x 45."""
    link = path.nccl_busbw_bytes_per_s
    best_channels, best_speed = 0, 0.0
    for speed in group.catalog.nccl.search_speeds(group.system.gpu.arch):
        if speed > link:
            continue
        if best_speed and speed / best_speed <= 0.49:
            break
        channels = min(RING_MAX_CHANNELS, int(link // speed))
        if channels * speed > best_channels * best_speed:
            best_channels, best_speed = channels, speed
    cc = compute_capability(group.system.gpu.sm)
    old_sm = cc is not None and cc <= DUP_ANY_COUNT_MAX_CC
    if best_speed >= DUP_SPEED or (best_speed >= DUP_MIN_SPEED and (best_channels <= 4 or old_sm)):
        doubled = min(2 * best_channels, RING_MAX_CHANNELS)
        best_speed /= -(-doubled // best_channels)
        best_channels = doubled
    return best_channels, best_speed


def ring_ll128_cap(group: Group, path: Path | None) -> float:
    """tuning.cc: a ring's LL128 estimate is at most its channels x perChMaxRingLL128Bw. Priced on
    one NVLink switch (ring_graph); other rings are left uncapped."""
    if path is None or path.nccl_link != "nvlink" or group.system.intra_fabric.kind not in ("nvswitch", "nvl72"):
        return math.inf
    per_channel = group.catalog.nccl.ring_ll128_per_channel_bytes_per_s.get(group.system.gpu.arch)
    if per_channel is None:
        return math.inf
    channels, _ = ring_graph(group, path)
    # no speed of the array fits the link (a user fabric under 18 GB/s): NCCL falls back to one
    # channel at 0.1 GB/s, and its estimate is not this model's to guess
    return channels * per_channel if channels else math.inf


__all__ = ["nvls_graph", "nvls_graph_busbw", "ring_graph", "ring_ll128_cap"]
