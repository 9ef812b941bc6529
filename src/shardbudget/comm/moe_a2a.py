"""MoE dispatch and combine as the engines run them: NCCL's all-to-all, or DeepEP's two kinds of kernel.

NCCL's all-to-all (`nccl_algos.alltoall`) is grouped send/recv to every peer: each (token, expert)
copy crosses the link it must, intra-node and network traffic overlapping. DeepEP (deepseek-ai/DeepEP,
catalog/moe_a2a.toml) has two modes whose traffic differs:

* **normal** (prefill; vLLM `deepep_high_throughput`, SGLang `--deepep-mode normal`): hierarchical.
  A token bound for several GPUs of one node crosses the network once, to the GPU of the same local
  rank there, which forwards it over NVLink. Per GPU the network carries each token once per *remote
  node* its experts reach, NVLink once per *GPU* they reach. The kernels run on a fixed share of the
  SMs, so they reach a share of the links' rates.
* **low_latency** (decode; vLLM `deepep_low_latency`, SGLang `--deepep-mode low_latency`): every
  (token, expert) copy is written straight into the expert's GPU, one-sided (IBGDA RDMA writes across
  nodes, NVLink stores inside the NVLink domain): no ring, no forwarding, no de-duplication, and a
  fixed floor per call (a signalled write and the receiver's poll). Dispatch sends FP8.

With `g` GPUs of the group per NVLink domain (a node; a whole NVL72 rack), `p` in all, `N = p / g`
domains and `k` experts per token (a message `n` = a GPU's tokens x k x hidden x activation bytes, the
all-to-all send buffer that `model.comms.dispatch_bytes` sizes), one call takes

    t = floor + n * wire * max(nvl_part / (nvlink_rate * share), net_part / (nic_rate * share))

    low_latency: nvl_part = (g - 1) / p,  net_part = (p - g) / p                 (every copy)
    normal:      nvl_part = D_gpu (g - 1) / g / k,  net_part = D_node (N - 1) / N / k

where D_node = G (1 - (1 - 1/G)^k) is the expected number of nodes a token's k experts reach when
they are spread over G = min(N, node_limit) nodes, and D_gpu = Gg (1 - (1 - 1/Gg)^k) the GPUs they
reach; `wire` is 1 for the BF16 combine and (1 + 4/128) / 2 for an FP8 dispatch (hidden bytes and one
fp32 scale per 128, against two bytes per element). The rates are the catalog's achievable ones of
the system (the fabric's NVLink rate per GPU, the GPU's share of its node's NICs), so the same line
prices an HGX node, an NVL72 rack and RDMA across nodes.

A plan inserts dispatch and combine as two all-to-all calls of the same size (`CollectiveCall`
count 2): `pair_line` is one of them, the mean of the two (dispatch FP8, combine BF16), so that two
of it are exactly dispatch + combine.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..datacache import read_builtin
from ..datafile import Table, key, parse_toml, read_record
from ..errors import PlanError, UnknownNameError
from .lines import Candidate, Group
from .nccl_algos import alltoall, intra, nic_bytes_per_s

MODES = ("normal", "low_latency")
BACKENDS = ("nccl", "deepep", "deepep-normal", "deepep-ll")
"""How a plan's MoE all-to-all runs: nccl (the engine's default over NCCL: its all-to-all, or, where
the preset's moe_dispatch says so, an all-gather and a reduce-scatter: step/price_comm.py); deepep (SGLang's --deepep-mode auto:
normal for prefill, low-latency for decode); deepep-normal; deepep-ll (low latency)."""
BACKEND_WORDS = {
    "nccl": "the engine's default over NCCL (all-to-all; vLLM and SGLang gather every rank's tokens and reduce-scatter the outputs under DP attention)",
    "deepep": "DeepEP, normal kernels in prefill, low-latency in decode (SGLang's --deepep-mode auto)",
    "deepep-normal": "DeepEP's normal kernels (hierarchical: the network once per node, then NVLink)",
    "deepep-ll": "DeepEP's low-latency kernels (one-sided writes of every copy, FP8 dispatch)",
}
"""What each backend runs, in words (the headers of plan's table)."""
ALGORITHMS = ("deepep-normal", "deepep-ll")
"""The `--algo` names of DeepEP's lines for an all-to-all (`allreduce --op all-to-all`)."""
FP8_WIRE = (1 + 4 / 128) / 2
"""Bytes of an FP8 token (hidden bytes + hidden/128 fp32 scales) per byte of the same BF16 token."""
NVFP4_WIRE = (0.5 + 1 / 16) / 2
"""Bytes of an NVFP4 token (half a byte per element and one FP8 scale per 16) per byte of BF16."""
DISPATCH_WIRE = {"fp8": FP8_WIRE, "nvfp4": NVFP4_WIRE}
"""Experts' dtype -> bytes of a token quantized to their input format before the dispatch, per
byte of BF16 (W8A8 FP8, W4A4 NVFP4); other experts (BF16, MXFP4 / INT4 weight-only) take BF16."""
REFERENCE_TOPK = 8
"""Experts per token where a bare all-to-all names no model (`allreduce --op all-to-all`): DeepSeek-V3's 8."""


@dataclass(frozen=True, kw_only=True)
class DeepEPMode:
    """One of DeepEP's two kinds of kernel (catalog/moe_a2a.toml)."""

    name: str
    floor_s: float = key("floor", "seconds")
    """Time of a call that moves nothing: launch, a signalled write and the receiver's poll, seconds."""
    nvlink_share: float = key("nvlink_share", "fraction")
    """Share of the fabric's achievable NVLink rate per GPU the kernels reach."""
    rdma_share: float = key("rdma_share", "fraction")
    """Share of the GPU's achievable NIC rate the kernels reach."""
    dispatch_fp8: bool = key("dispatch_fp8", "flag")
    """Dispatch sends FP8 tokens (and their scales), combine BF16."""
    floor_estimate: bool = key("floor_estimate", "flag", default=False)
    """The floor is an estimate, not read off a measurement."""
    source: str = key("source", "text")


@lru_cache(maxsize=1)
def deepep_modes() -> dict[str, DeepEPMode]:
    """DeepEP's modes from catalog/moe_a2a.toml, by name (`MODES`)."""
    top = Table(parse_toml(read_builtin("catalog/moe_a2a.toml"), "catalog/moe_a2a.toml"), "", "catalog/moe_a2a.toml")
    modes = {m: read_record(DeepEPMode, top.table(m), name=m) for m in MODES}
    top.done()
    return modes


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise UnknownNameError("MoE all-to-all", backend, BACKENDS)
    return backend


def mode_for(backend: str, phase: str) -> str | None:
    """The DeepEP mode a backend runs in a phase (None: NCCL's all-to-all)."""
    check_backend(backend)
    if backend == "nccl":
        return None
    if backend == "deepep":  # SGLang's --deepep-mode auto: normal for prefill, low_latency for decode
        return "normal" if phase == "prefill" else "low_latency"
    return "normal" if backend == "deepep-normal" else "low_latency"


def expected_distinct(k: int, bins: int) -> float:
    """Expected distinct bins that k picks spread uniformly over `bins` reach: bins (1 - (1 - 1/bins)^k)."""
    return bins * (1.0 - (1.0 - 1.0 / bins) ** k) if bins > 1 else 1.0


@dataclass(frozen=True)
class Split:
    """Where one byte of a call's message goes: over NVLink and over the network, per GPU."""

    nvl_part: float
    net_part: float


def split(group: Group, mode: str, topk: int, node_limit: int | None = None) -> Split:
    """The parts of the message each GPU sends over NVLink and the network (module docstring)."""
    p, g = group.ranks, group.gpus_per_node
    n = group.nodes
    if mode == "low_latency":
        return Split((g - 1) / p, (p - g) / p)
    reach = min(n, node_limit) if node_limit else n
    d_node = expected_distinct(topk, reach)
    d_gpu = expected_distinct(topk, reach * g)
    return Split(d_gpu * (g - 1) / g / topk, d_node * (n - 1) / n / topk)


def available(group: Group) -> str | None:
    """Why DeepEP cannot run on the group (None: it can): its intra-node kernels need NVLink."""
    path = intra(group)
    if path is not None and path.nccl_link != "nvlink":
        return f"DeepEP's kernels need NVLink between the GPUs of a node; {group.system.name} has none"
    return None


def seconds_per_byte(group: Group, mode: str, topk: int, node_limit: int | None = None) -> float:
    """Seconds per byte of the message (before the wire factor): the busier of NVLink and the NICs."""
    m = deepep_modes()[mode]
    parts = split(group, mode, topk, node_limit)
    path = intra(group)
    nvl = parts.nvl_part / (path.busbw_bytes_per_s * m.nvlink_share) if path is not None and parts.nvl_part else 0.0
    net = 0.0
    if parts.net_part:
        net = parts.net_part / (nic_bytes_per_s(group) / group.gpus_per_node * m.rdma_share)
    return max(nvl, net)


def call_s(group: Group, mode: str, msg_bytes: float, *, phase: str, topk: int, node_limit: int | None = None) -> float:
    """One dispatch (phase="dispatch") or combine call of `msg_bytes` (BF16 copies) in one mode."""
    if phase not in ("dispatch", "combine"):
        raise PlanError(f"a DeepEP call is a dispatch or a combine, not {phase!r}")
    m = deepep_modes()[mode]
    wire = FP8_WIRE if phase == "dispatch" and m.dispatch_fp8 else 1.0
    return m.floor_s + msg_bytes * wire * seconds_per_byte(group, mode, topk, node_limit)


def pair_line(group: Group, mode: str, topk: int, node_limit: int | None = None) -> Candidate | None:
    """One of a dispatch + combine pair, their mean, as a line (None where DeepEP cannot run)."""
    # a Group compares without its catalog, whose NCCL release decides GPUDirect RDMA (the NIC rate)
    return _pair_line(group, group.catalog, mode, topk, node_limit)


@lru_cache(maxsize=4096)
def _pair_line(group: Group, catalog, mode: str, topk: int, node_limit: int | None) -> Candidate | None:
    if group.ranks < 2 or available(group) is not None:
        return None
    m = deepep_modes()[mode]
    wire = ((FP8_WIRE if m.dispatch_fp8 else 1.0) + 1.0) / 2
    spb = wire * seconds_per_byte(group, mode, topk, node_limit)
    name = "deepep-ll" if mode == "low_latency" else "deepep-normal"
    return Candidate(name, "-", m.floor_s, 1.0 / spb if spb > 0 else float("inf"), impl="deepep")


def moe_lines(group: Group, backend: str, phase: str, topk: int) -> tuple[Candidate, ...]:
    """The line a plan's MoE all-to-all runs on `group` in `phase` under `backend`: NCCL's, or
    DeepEP's mode for the phase; NCCL's where DeepEP cannot run (no NVLink inside the node). One
    tuple per (group, catalog, ...): the step's price memo keys on it."""
    return _moe_lines(group, group.catalog, backend, phase, topk)


@lru_cache(maxsize=4096)
def _moe_lines(group: Group, catalog, backend: str, phase: str, topk: int) -> tuple[Candidate, ...]:
    mode = mode_for(backend, phase)
    line = pair_line(group, mode, topk) if mode is not None else None
    return (line,) if line is not None else (alltoall(group),)


__all__ = [
    "ALGORITHMS",
    "BACKENDS",
    "DeepEPMode",
    "DISPATCH_WIRE",
    "FP8_WIRE",
    "NVFP4_WIRE",
    "MODES",
    "REFERENCE_TOPK",
    "Split",
    "available",
    "call_s",
    "check_backend",
    "deepep_modes",
    "expected_distinct",
    "mode_for",
    "moe_lines",
    "pair_line",
    "seconds_per_byte",
    "split",
]
