"""Who takes part in a collective, the straight lines that price it, and how one line is chosen.

Every implementation of a collective (an NCCL algorithm and protocol, an engine's custom kernel) is a
`Candidate`: a line t(n) = latency + n / algbw, valid for messages in [min_bytes, max_bytes].
Two things are kept apart, as they are in reality:

* the time a line takes (`latency_s`, `algbw_bytes_per_s`: measured-calibrated), and
* how the library chooses it: NCCL picks the line its own tuning model says is fastest
  (tuning.cc's tables and topology bandwidths: `select_latency_s`, `select_algbw_bytes_per_s`), which
  is not always the line that really is fastest; an engine runs its custom kernel whenever the size
  qualifies (a lower `priority` wins before times are compared).

A line without its own selection estimate is chosen by its real time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..fabric.hardware import Catalog, System


@dataclass(frozen=True)
class Group:
    """The ranks of one collective: `gpus_per_node` GPUs on each of `nodes` nodes of `system`."""

    system: System
    nodes: int
    gpus_per_node: int
    catalog: Catalog = field(repr=False, compare=False, hash=False)

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def hosts(self) -> int:
        """Hosts the group spans, its GPUs packed onto the fewest (an NVL72's trays of 4)."""
        per = self.system.host_gpus
        return self.nodes * -(-self.gpus_per_node // per)


@dataclass(frozen=True)
class LLNetStaging:
    """LL's store-and-forward at each network step (NCCL transport/net.cc): LL send buffers live in
    host memory even with GPUDirect RDMA (protoLoc: LL -> LOC_HOSTMEM), and the proxy thread posts a
    step's send only once it has read every 16-byte line's two flags there. So each network step on
    the critical path waits for its whole step of lines to be read back by the CPU, where an NVLink
    hop forwards line by line. A step is what one channel carries: NCCL gives each channel at least
    nt x threshold bytes (enqueue.cc: nc-- while nBytes < nc x nt x threshold), a ring one of its
    `chunks` (ranks) of that."""

    steps: float
    """Network steps on the critical path (tree: 2 log2i(nodes); ring: 2 (nodes - 1))."""
    line_s: float
    """Proxy time per LL line of a step."""
    split_bytes: float
    """nt x threshold x chunks: the bytes per channel below which NCCL drops a channel."""
    max_channels: float
    chunks: float = 1.0

    def extra_s(self, msg_bytes):
        n = np.asarray(msg_bytes, dtype=float)
        # NCCL's channel count floor(n / split) makes a saw-tooth between split and 2 x split per
        # channel; its lower edge (n / (n / split)) is taken, which keeps the time rising with n
        nc = np.clip(n / self.split_bytes, 1.0, self.max_channels)
        lines = np.ceil(n / nc / self.chunks / LL_LINE_DATA_BYTES)
        out = self.steps * self.line_s * lines
        return float(out) if np.ndim(out) == 0 else out


LL_LINE_DATA_BYTES = 8
"""Data bytes in one LL line (union ncclLLFifoLine: data1, flag1, data2, flag2 of 4 bytes)."""


@dataclass(frozen=True)
class Candidate:
    algorithm: str
    protocol: str
    latency_s: float
    algbw_bytes_per_s: float
    max_bytes: float = math.inf
    """Largest message the implementation accepts (custom kernels stop at a buffer size)."""
    min_bytes: float = 0.0
    """Smallest message it is used for (an engine's two-shot above its one-shot limit)."""
    select_latency_s: float | None = None
    """NCCL's own estimate of this line's latency, by which NCCL chooses (None: the real one)."""
    select_algbw_bytes_per_s: float | None = None
    priority: int = 1
    """Lines of a lower priority that accept the size win before times are compared."""
    bw_factors: tuple[float, ...] | None = None
    """Bandwidth factor by floor(log2(n / 64)), for n from 64 B (tuning.cc treeCorrectionFactor): in
    NCCL's estimate by bucket, in the real time as a curve through the buckets' middles (`_factor`)."""
    impl: str = "nccl"
    """Which library runs it: nccl, or custom (an engine's one-/two-shot or symmetric-memory kernel)."""
    ll_staging: LLNetStaging | None = None
    """LL's per-step store-and-forward over the network, in the real time only (NCCL's estimate,
    by which it chooses, does not have it)."""

    def _factor(self, msg_bytes, smooth: bool = False):
        """NCCL's bandwidth factor for this size: by its bucket floor(log2(n / 64)) as NCCL's estimate
        reads it; `smooth`, the same table as a curve in log2(n), through each bucket's value at its
        geometric middle (64 x 2^(k + 1/2) B) and 1.0 outside the table, for the real time."""
        if self.bw_factors is None:
            return 1.0
        n = np.asarray(msg_bytes, dtype=float)
        if smooth:
            # the buckets sample a rate that does not jump at a power of two: a line's real time
            # read off the steps would fall at each step up (tree LL128 0.6 -> 0.8 at 4 MiB, a
            # 13% fall); between middles the factor moves at most 0.2 an octave, which keeps
            # n / factor rising wherever the factor is above 0.2 / ln 2 (every table value is 0.4+)
            k = len(self.bw_factors)
            x = np.log2(np.maximum(n, 1.0) / 64.0)
            factor = np.interp(x, np.arange(-0.5, k + 1.0), (1.0,) + tuple(self.bw_factors) + (1.0,))
            return float(factor) if np.ndim(factor) == 0 else factor
        k = np.floor(np.log2(np.maximum(n, 1.0) / 64.0)).astype(int)
        table = np.asarray(self.bw_factors + (1.0,))
        factor = np.where((k >= 0) & (k < len(self.bw_factors)), table[np.clip(k, 0, len(self.bw_factors))], 1.0)
        return float(factor) if np.ndim(factor) == 0 else factor

    def time_s(self, msg_bytes):
        t = self.latency_s + msg_bytes / (self.algbw_bytes_per_s * self._factor(msg_bytes, smooth=True))
        return t if self.ll_staging is None else t + self.ll_staging.extra_s(msg_bytes)

    def select_time_s(self, msg_bytes):
        """The time the chooser believes this line takes."""
        if self.select_latency_s is None:
            return self.time_s(msg_bytes)
        return self.select_latency_s + msg_bytes / (self.select_algbw_bytes_per_s * self._factor(msg_bytes))

    def accepts(self, msg_bytes) -> bool:
        return self.min_bytes <= msg_bytes <= self.max_bytes


def pick(cands: Sequence[Candidate], msg_bytes: float) -> Candidate:
    """The line that runs for this size: among the lines that accept it (all of them if none does),
    the lowest priority, then the one its chooser estimates fastest; lines the chooser cannot tell
    apart (NVLS's small- and large-message lines share NCCL's one estimate) by their real time."""
    valid = [c for c in cands if c.accepts(msg_bytes)] or list(cands)
    top = min(c.priority for c in valid)
    return min((c for c in valid if c.priority == top), key=lambda c: (c.select_time_s(msg_bytes), c.time_s(msg_bytes)))


def times_s(cands: Sequence[Candidate], msg_bytes: np.ndarray) -> np.ndarray:
    """Vectorised `pick(...).time_s`."""
    return times_and_latencies_s(cands, msg_bytes)[0]


def _line(c: Candidate, msg: np.ndarray, select: bool) -> np.ndarray:
    """A line's real (or estimated) time for every size, without the method-call overhead."""
    lat, bw = (c.select_latency_s, c.select_algbw_bytes_per_s) if select else (c.latency_s, c.algbw_bytes_per_s)
    t = lat + msg / (bw * c._factor(msg, smooth=not select)) if c.bw_factors is not None else lat + msg * (1.0 / bw)
    if c.ll_staging is not None and not select:
        t = t + c.ll_staging.extra_s(msg)
    return t


def times_and_latencies_s(cands: Sequence[Candidate], msg_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised `pick`: for each size, the chosen line's total time and its latency term.

    Lines are ranked as `pick` ranks them: priority classes in order, within a class the lines that
    accept the size by the chooser's estimate, ties (equal estimates) going to the faster real line;
    where no line of any class accepts a size, every line competes by priority and estimate."""
    msg = np.asarray(msg_bytes, dtype=float)
    out_t = np.full(msg.shape, np.inf)
    out_lat = np.zeros(msg.shape)
    done = np.zeros(msg.shape, dtype=bool)
    for strict in (True, False):
        for prio in sorted({c.priority for c in cands}):
            best_k = np.full(msg.shape, np.inf)
            best_t = np.full(msg.shape, np.inf)
            best_lat = np.zeros(msg.shape)
            for c in cands:
                if c.priority != prio:
                    continue
                t = _line(c, msg, False)
                # 1e-9 of the real time breaks ties between lines sharing one estimate; it cannot
                # reorder estimates that differ by more than a part in 1e9
                k = t if c.select_latency_s is None else _line(c, msg, True) + 1e-9 * t
                if strict and (c.min_bytes > 0 or c.max_bytes < math.inf):
                    k = np.where((msg >= c.min_bytes) & (msg <= c.max_bytes), k, np.inf)
                better = k < best_k
                best_k = np.where(better, k, best_k)
                best_t = np.where(better, t, best_t)
                best_lat = np.where(better, c.latency_s, best_lat)
            take = ~done & np.isfinite(best_k)
            out_t = np.where(take, best_t, out_t)
            out_lat = np.where(take, best_lat, out_lat)
            done |= take
        if done.all():
            break
    return out_t, out_lat


__all__ = ["Candidate", "Group", "LLNetStaging", "pick", "times_and_latencies_s", "times_s"]
