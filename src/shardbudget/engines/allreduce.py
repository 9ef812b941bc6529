"""The all-reduce an engine runs on a group, priced: the engine's rule (presets.allreduce_choice) turned
into size ranges once per (engine, group, token size), each range priced by its kernel's candidates.

The engine, not NCCL's tuner, decides which kernel runs: vLLM sends an 8-GPU NVSwitch all-reduce below
256 KiB to its one-shot kernel whatever NCCL would have picked. Within NCCL's range NCCL's own choice
(fastest algorithm x protocol) stands.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..comm.collectives import Candidate, Cost, Group, candidates, cost_of, intra_path, pick, times_and_latencies_s
from ..comm.custom_kernels import custom_candidate, custom_candidates, symm_mem_candidate
from ..units import format_bytes
from .presets import EnginePreset, load_engine
from .rules import allreduce_choice

KIND_WORDS = {
    "none": "no collective",
    "one-shot": "one-shot",
    "two-shot": "two-shot",
    "flashinfer-one-shot": "FlashInfer one-shot",
    "flashinfer-two-shot": "FlashInfer two-shot",
    "symm-mem-multimem": "symmetric-memory multimem",
    "symm-mem-two-shot": "symmetric-memory two-shot",
    "mnnvl": "MNNVL",
    "nccl": "NCCL",
}


@dataclass(frozen=True)
class AllReduceRanges:
    """Which kernel runs for a message of each size: kinds[k] for edges[k-1] < size < edges[k], and
    at_edge[k] for size == edges[k] (a rule's own boundary, e.g. vLLM's strict 'below 256 KiB')."""

    engine: str
    edges: tuple[float, ...]
    kinds: tuple[str, ...]
    at_edge: tuple[str, ...]
    pools: dict
    """kind -> candidates that price it (NCCL's keep its own tuner's choice among them)."""

    def kind_index(self, msg_bytes: np.ndarray) -> np.ndarray:
        """For each size, its position in `kinds` (or len(kinds) + k for an exact edge k)."""
        edges = np.asarray(self.edges, dtype=float)
        k = np.searchsorted(edges, msg_bytes, side="left")
        if not len(edges):  # one kind at every size (tgi: NCCL only): no edge to land on
            return k
        exact = (k < len(edges)) & (edges[np.minimum(k, len(edges) - 1)] == msg_bytes)
        return np.where(exact, len(self.kinds) + k, k)

    def describe(self) -> str:
        """'all-reduce < 256 KiB: one-shot; <= 64 MiB: symmetric-memory multimem; larger: NCCL'."""
        spans: list[list] = []  # [upper edge, kind], consecutive ranges of one kind merged
        for hi, kind in zip(list(self.edges) + [math.inf], self.kinds):
            if spans and spans[-1][1] == kind:
                spans[-1][0] = hi
            else:
                spans.append([hi, kind])
        symmetric = any(c.algorithm.startswith("symmetric") for c in self.pools.get("nccl", ()))
        words = dict(KIND_WORDS, nccl="NCCL (symmetric kernels)") if symmetric else KIND_WORDS
        if len(spans) == 1:
            return f"{words[spans[0][1]]} at every size"
        parts = [f"< {format_bytes(hi)}: {words[kind]}" for hi, kind in spans[:-1]]
        return "; ".join(parts + [f"larger: {words[spans[-1][1]]}"])


def _group_facts(group: Group) -> dict:
    path = intra_path(group.system, group.gpus_per_node) if group.gpus_per_node > 1 else None
    nvlink = path is not None and path.nccl_link == "nvlink" and path.p2p and group.nodes == 1
    cpu = group.system.cpu
    # TensorRT-LLM's is_mnnvl: several hosts of one NVLink domain, aarch64 (Grace) hosts
    mnnvl = nvlink and group.hosts > 1 and cpu is not None and cpu.vendor == "arm"
    return {
        "nvlink": nvlink,
        "p2p": bool(path and path.p2p),
        "arch": group.system.gpu.sm,
        "nodes": group.nodes,
        "multicast": bool(path and path.nvls),
        "hosts": group.hosts,
        "mnnvl": mnnvl,
        "nccl_symmetric": group.catalog.nccl.symmetric,
    }


def _pool(group: Group, kind: str, engine: str) -> tuple[Candidate, ...]:
    if kind == "nccl":
        return candidates(group, "all-reduce", "nccl")
    if kind == "mnnvl":
        # the engine's multi-node NVLink kernels: one-shot, then two-shot, by their own limits
        lines = tuple(custom_candidates(group, engine))
        return lines or candidates(group, "all-reduce", "nccl")
    if kind in ("one-shot", "two-shot"):
        c = custom_candidate(group, 1 if kind == "one-shot" else 2, engine=engine)
    elif kind.startswith("flashinfer-"):
        # FlashInfer's port of TensorRT-LLM's Lamport kernels: priced by the kernel it ports
        fi = load_engine(engine).allreduce.flashinfer
        c = custom_candidate(group, 1 if kind == "flashinfer-one-shot" else 2, engine=fi.kernel)
    else:
        c = symm_mem_candidate(group, engine=engine, multimem=kind == "symm-mem-multimem")
    # where the model cannot price the engine's kernel on this group, NCCL's tuner stands in
    return (c,) if c is not None else candidates(group, "all-reduce", "nccl")


def allreduce_ranges_for(engine: str, group: Group, bytes_per_token: float) -> AllReduceRanges:
    """The engine's size ranges on `group` for a TP all-reduce of `bytes_per_token` per token."""
    # a Group compares without its catalog; NCCL's version and symmetric switch live there
    return _ranges_for(engine, group, bytes_per_token, group.catalog)


@lru_cache(maxsize=4096)
def _ranges_for(engine: str, group: Group, bytes_per_token: float, catalog) -> AllReduceRanges:
    preset = load_engine(engine)
    facts = _group_facts(group)
    if group.ranks < 2:
        return AllReduceRanges(engine, (), ("none",), (), {"none": candidates(group, "all-reduce")})
    edges = sorted(_edges(preset, bytes_per_token))

    def choice(n: float) -> str:
        tokens = max(1, int(n // bytes_per_token)) if bytes_per_token else None
        return allreduce_choice(
            preset,
            group.ranks,
            n,
            facts["nvlink"],
            facts["p2p"],
            arch=facts["arch"],
            nodes=facts["nodes"],
            tokens=tokens,
            multicast=facts["multicast"],
            hosts=facts["hosts"],
            mnnvl=facts["mnnvl"],
            nccl_symmetric=facts["nccl_symmetric"],
        )

    bounds = [0.0] + edges + [math.inf]
    kinds = [choice((lo + hi) / 2 if math.isfinite(hi) else lo * 2 + 1) for lo, hi in zip(bounds, bounds[1:])]
    at_edge = [choice(e) for e in edges]
    pools = {k: _pool(group, k, engine) for k in set(kinds) | set(at_edge)}
    return AllReduceRanges(engine, tuple(edges), tuple(kinds), tuple(at_edge), pools)


def _edges(preset: EnginePreset, bytes_per_token: float) -> set[float]:
    """Every size at which the engine's choice may change (byte limits, and token limits in bytes)."""
    out: set[float] = set()
    custom, symm = preset.allreduce.custom, preset.allreduce.symm_mem
    if custom is not None:
        out |= {custom.max_bytes} | {b for _, b in custom.one_shot_below}
        out |= {b for per in custom.max_bytes_with_symm_mem.values() for b in per.values()}
        out |= {custom.max_bytes_two_gpus} if custom.max_bytes_two_gpus else set()
        out |= custom.tuned.edges() if custom.tuned is not None else set()
        if custom.strategy is not None and bytes_per_token:
            # TensorRT-LLM's table changes kernel only where floor(log2(tokens)) steps
            out |= {2**k * bytes_per_token for k in range(16)}
        if custom.nccl_above_tokens is not None and bytes_per_token:
            # TensorRT-LLM 1.0: its token thresholds (the last token at the edge itself)
            limits = (custom.nccl_above_tokens, custom.one_shot_max_tokens)
            out |= {t * bytes_per_token for t in limits if t is not None}
    if symm is not None:
        out |= {b for per in symm.max_bytes.values() for b in per.values()}
    if preset.allreduce.mnnvl is not None:
        out.add(preset.allreduce.mnnvl.max_bytes)
    if preset.allreduce.nccl_symm is not None:
        out |= {b for span in preset.allreduce.nccl_symm.custom_preferred.values() for b in span}
    if preset.allreduce.flashinfer is not None:
        out |= preset.allreduce.flashinfer.edges()
    return {e for e in out if e > 0}


def allreduce_ranges(
    preset: EnginePreset,
    world_size: int,
    *,
    nvlink: bool,
    p2p: bool,
    arch: str | None = None,
    nodes: int = 1,
    tokens: int | None = None,
    max_bytes: float = 2.0**30,
) -> tuple[tuple[float, str], ...]:
    """The choice as size ranges for a plan header: ((upper bytes, kind), ...), last upper = inf.

    E.g. vLLM, 8x H100: ((256 KiB, 'one-shot'), (64 MiB, 'symm-mem-multimem'), (inf, 'nccl')),
    read as "< 256 KiB one-shot; up to 64 MiB symmetric memory; larger NCCL". Exact boundaries are
    the thresholds of the preset; whether a boundary itself belongs below or above follows each
    rule (vLLM's custom kernel takes messages strictly below its limit).
    """
    edges = sorted({e for e in _edges(preset, 0.0) if 0 < e < max_bytes} | {max_bytes})
    ranges: list[tuple[float, str]] = []
    lo = 0.0
    for hi in edges + [math.inf]:
        probe = (lo + hi) / 2 if math.isfinite(hi) else lo * 2 + 1
        kind = allreduce_choice(preset, world_size, probe, nvlink, p2p, arch=arch, nodes=nodes, tokens=tokens)
        if ranges and ranges[-1][1] == kind:
            ranges[-1] = (hi, kind)
        else:
            ranges.append((hi, kind))
        lo = hi
    return tuple(ranges)


def engine_allreduce_s(ranges: AllReduceRanges, msg_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(time, latency part) of the engine's all-reduce for each message size."""
    msg_bytes = np.asarray(msg_bytes, dtype=float)
    if len(ranges.kinds) == 1:
        return times_and_latencies_s(ranges.pools[ranges.kinds[0]], msg_bytes)
    index = ranges.kind_index(msg_bytes)
    t, lat = np.zeros(msg_bytes.shape), np.zeros(msg_bytes.shape)
    for kind in set(ranges.kinds) | set(ranges.at_edge):
        positions = [i for i, k in enumerate(ranges.kinds) if k == kind]
        positions += [len(ranges.kinds) + i for i, k in enumerate(ranges.at_edge) if k == kind]
        mask = np.isin(index, positions)
        if mask.any():
            # the MNNVL kernels keep their own one-shot / two-shot limits; elsewhere the rule chose
            pool = ranges.pools[kind] if kind == "mnnvl" else _unlimited(ranges.pools[kind])
            tk, lk = times_and_latencies_s(pool, msg_bytes)
            t, lat = np.where(mask, tk, t), np.where(mask, lk, lat)
    return t, lat


def engine_costs(ranges: AllReduceRanges, group: Group, sizes_bytes) -> list[Cost]:
    """The engine's all-reduce at each size as `Cost` rows (`allreduce --impl ENGINE`): the kernel
    its rule runs there (one-shot, two-shot, symmetric memory, MNNVL or NCCL's own choice), priced by
    the same lines as `engine_allreduce_s`, so the table and a plan agree."""
    sizes = np.asarray(list(sizes_bytes), dtype=float)
    index = ranges.kind_index(sizes)
    out = []
    for n, i in zip(sizes, index):
        kind = ranges.kinds[i] if i < len(ranges.kinds) else ranges.at_edge[i - len(ranges.kinds)]
        pool = ranges.pools[kind] if kind in ("mnnvl", "none") else _unlimited(ranges.pools[kind])
        out.append(cost_of(group, "all-reduce", float(n), pick(pool, float(n))))
    return out


def _unlimited(pool: tuple[Candidate, ...]) -> tuple[Candidate, ...]:
    """The engine's rule already chose the kernel by size: its buffer limit no longer filters."""
    return tuple(c if c.impl == "nccl" else dataclasses.replace(c, max_bytes=math.inf, min_bytes=0.0) for c in pool)


__all__ = [
    "AllReduceRanges",
    "KIND_WORDS",
    "allreduce_ranges",
    "allreduce_ranges_for",
    "engine_allreduce_s",
    "engine_costs",
]
