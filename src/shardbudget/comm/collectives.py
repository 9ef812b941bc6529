"""Cost of one collective on a system: t = latency term + bandwidth term, per algorithm and protocol.

The model follows NCCL's own tuning model (src/graph/tuning.cc, constants in catalog/nccl.toml):
every (algorithm, protocol) pair is a straight line in the message size (nccl_algos),

    t(n) = base_latency[algo][proto] + steps * hop_latency[link][proto]  +  n / algbw

and `auto` runs, at each size, the line NCCL's own estimate of the same formulas says is fastest
(lines.pick), timed with the measured figures: the fabrics' *achievable* bus bandwidth, each GPU
generation's small-message floors, the node's topology (ring_path.ring_path: transports and shared
links per ring hop). Bus bandwidth converts to algorithm bandwidth with the nccl-tests factors:

    all-reduce: busbw = algbw * 2(p-1)/p      all-gather / reduce-scatter / all-to-all: (p-1)/p

The engines' custom all-reduce kernels (engines.py) join the lines with `impl="custom"` or an engine's
name. The textbook ring all-reduce 2(p-1)·α + 2(p-1)/p · n/B is the Simple-protocol ring on a system
whose base latency is zero (`base_latency = "0 us"` in a user catalog): see `textbook_ring_allreduce_s`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache

from .op import CollectiveOp, busbw_factor, parse_op
from .custom_kernels import IMPLS, custom_allreduce_allowed, custom_candidates
from ..errors import PlanError, UnknownNameError
from ..fabric.hardware import PROTOCOLS, Catalog, System
from ..fabric.catalog import load_catalog
from .nccl_symmetric import symmetric_candidates
from .nvls_gather import NVLS_MAX_ARITY, nvls_gather
from .lines import Candidate, Group, pick, times_and_latencies_s  # noqa: F401 (re-exported)
from .nccl_algos import (
    alltoall,
    broadcast,
    hierarchical,
    ll128_enabled,
    nvls,
    nvls_efficiency,  # noqa: F401
    nvls_small,
    protocols,
    ring,
    sendrecv,
    tree,
)
from ..fabric.ring_path import Path, ring_path
from . import moe_a2a

# The operations this model prices (reduce is measured by nccl-tests but never inserted by a plan).
OPS = tuple(op for op in CollectiveOp if op is not CollectiveOp.REDUCE)
ALGORITHMS = ("ring", "tree", "nvls", "one-shot", "two-shot", "hierarchical", "direct") + moe_a2a.ALGORITHMS


def normalize_op(op: str) -> CollectiveOp:
    """An operation this model can price, from any spelling (collective_op.parse_op)."""
    return parse_op(op, OPS)


# --- who takes part, and over which links ---------------------------------------------------


def make_group(
    system: System | str, *, nodes: int = 1, gpus: int | None = None, catalog: Catalog | None = None
) -> Group:
    """Validate a GPU count against the nodes: `gpus` defaults to every GPU of the nodes."""
    catalog = catalog or load_catalog()
    system = catalog.system(system) if isinstance(system, str) else system
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise PlanError(f"nodes must be a whole number of at least 1, got {nodes!r}")
    total = nodes * system.gpus_per_node
    gpus = total if gpus is None else gpus
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise PlanError(f"gpus must be a whole number of at least 1, got {gpus!r}")
    if gpus > total:
        raise PlanError(
            f"{gpus} GPUs requested but {nodes} x {system.name} has {total} "
            f"({system.gpus_per_node} per node); add --nodes"
        )
    if gpus % nodes:
        raise PlanError(f"{gpus} GPUs cannot be spread evenly over {nodes} nodes")
    if nodes > 1 and system.nic_fabric is None:
        raise PlanError(f"system {system.name!r} has no scale-out network; it cannot span {nodes} nodes")
    return Group(system=system, nodes=nodes, gpus_per_node=gpus // nodes, catalog=catalog)


def require_peers(group: Group, what: str) -> Group:
    """`group` where `what` (a command that prints a collective's time and bandwidth) needs one: a
    collective on one GPU moves no data, so its algbw would print as infinite and a ratio of two such
    times divide by zero. The same rule and words as `measure` (a collective needs at least 2 ranks)."""
    if group.ranks < 2:
        asked = (
            f"--gpus {group.ranks}"
            if group.ranks < group.nodes * group.system.gpus_per_node
            else f"{group.system.name} has {group.system.gpus_per_node} GPU per node"
        )
        raise PlanError(
            f"{what}: a collective needs at least 2 GPUs, got {group.ranks} ({asked}): on one GPU it moves "
            "no data, so it has no time or bandwidth to show"
        )
    return group


def intra_path(system: System, g: int) -> Path:
    """The ring over g GPUs of one node, derived from the node's topology (ring_path.ring_path:
    per-hop transport, shared links counted; computed once per (system, g))."""
    return ring_path(system, g)


def candidates(group: Group, op: str, impl: str = "nccl") -> tuple[Candidate, ...]:
    """Every (algorithm, protocol) the implementation could use for `op` on `group`."""
    # a Group compares without its catalog; two catalogs may share systems yet differ in NCCL's
    # constants (--nccl VERSION), so the catalog (hashed by identity) is part of the key
    return _candidates(group, op, impl, group.catalog)


@lru_cache(maxsize=65536)
def _candidates(group: Group, op: str, impl: str, catalog: Catalog) -> tuple[Candidate, ...]:
    if group.ranks < 2:
        return (Candidate("none", "none", 0.0, math.inf),)
    out: list[Candidate | None] = []
    if op in ("all-reduce", "reduce-scatter", "all-gather"):
        out += [ring(group, op, p) for p in protocols(group)]
    if op in ("reduce-scatter", "all-gather"):
        out.append(nvls_gather(group, op))
    if op == "all-reduce":
        if group.nodes > 1:
            out += [tree(group, p) for p in protocols(group)]
        out += [
            nvls(group),
            nvls_small(group),
            hierarchical(group, op, candidates),
            hierarchical(group, op, candidates, small=True),
        ]
        if group.catalog.nccl.symmetric:
            out += symmetric_candidates(group)
        if impl != "nccl":
            out += custom_candidates(group, impl)
    elif op == "all-to-all":
        out.append(alltoall(group))
    elif op == "broadcast":
        out += [broadcast(group, p) for p in protocols(group)]
    elif op == "send/recv":
        out += [sendrecv(group, p) for p in protocols(group)]
    return tuple(c for c in out if c is not None)


def explicit_candidates(group: Group, op: str, impl: str, algo: str, protocol: str) -> tuple[Candidate, ...]:
    """Candidates filtered by a user's --algo / --protocol, with a clear error where none remain."""
    if algo not in ("auto",) + ALGORITHMS:
        raise UnknownNameError("algorithm", algo, ("auto",) + ALGORITHMS)
    if protocol not in ("auto",) + PROTOCOLS:
        raise UnknownNameError("protocol", protocol, ("auto",) + PROTOCOLS)
    if algo in moe_a2a.ALGORITHMS:
        # DeepEP's dispatch + combine pair (comm/moe_a2a.py): an all-to-all run by other kernels than
        # NCCL's, never chosen by `auto`; a bare all-to-all routes each token to DeepSeek-V3's 8 experts
        mode = "low_latency" if algo == "deepep-ll" else "normal"
        line = moe_a2a.pair_line(group, mode, moe_a2a.REFERENCE_TOPK) if op == "all-to-all" else None
        if line is None or protocol not in ("auto", line.protocol):
            raise PlanError(_why_not(group, op, impl, algo, protocol))
        return (line,)
    pool = candidates(group, op, "custom" if algo in ("one-shot", "two-shot") and impl == "nccl" else impl)
    if algo == "tree" and op == "all-reduce" and group.nodes == 1:
        pool = pool + tuple(tree(group, p) for p in protocols(group))
    chosen = tuple(
        c for c in pool if (algo == "auto" or c.algorithm == algo) and (protocol == "auto" or c.protocol == protocol)
    )
    if not chosen:
        raise PlanError(_why_not(group, op, impl, algo, protocol))
    return chosen


def _why_not(group: Group, op: str, impl: str, algo: str, protocol: str) -> str:
    where = f"{op} on {group.ranks} GPUs of {group.system.name} ({group.nodes} node(s))"
    if (
        algo == "nvls"
        and protocol not in ("auto", "simple")
        and any(c.algorithm == "nvls" for c in candidates(group, op))
    ):
        return f"NVLS runs the Simple protocol only (NCCL has no LL or LL128 NVLS kernels); not {protocol} for {where}"
    if algo == "nvls" and op != "all-reduce" and group.gpus_per_node > NVLS_MAX_ARITY:
        return f"NCCL runs NVLS {op} on at most {NVLS_MAX_ARITY} ranks (NCCL_MAX_NVLS_ARITY); not {where}"
    if algo == "nvls":
        return f"NVLS needs NVSwitch with in-switch reduction inside one node; not available for {where}"
    if algo in ("one-shot", "two-shot"):
        return f"{algo} all-reduce is not possible for {where}: {custom_allreduce_allowed(group, impl)}"
    if algo in moe_a2a.ALGORITHMS:
        if op != "all-to-all":
            return f"{algo} runs MoE dispatch and combine, an all-to-all; not {op}"
        why = moe_a2a.available(group)
        if why:
            return f"{algo} is not possible for {where}: {why}"
        return f"{algo} runs DeepEP's own kernels, which have no NCCL protocol; not {protocol} for {where}"
    if algo == "hierarchical":
        return f"hierarchical all-reduce needs 2+ nodes with 2+ GPUs each; not {where}"
    if protocol == "ll128" and not ll128_enabled(group):
        return f"NCCL enables LL128 only over NVLink inside the node and rail NICs between nodes; not for {where}"
    return f"no {algo} algorithm with protocol {protocol} for {where}"


# --- results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cost:
    """One collective's time, split into its latency and bandwidth terms."""

    op: str
    msg_bytes: float
    ranks: int
    nodes: int
    algorithm: str
    protocol: str
    time_s: float
    latency_s: float
    bandwidth_s: float
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float
    crossover_bytes: float
    """Message size where this algorithm's bandwidth term equals its latency term."""
    impl: str = "nccl"
    """The library that runs the chosen algorithm: nccl or custom."""

    @property
    def latency_share(self) -> float:
        return self.latency_s / self.time_s if self.time_s > 0 else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["latency_share"] = self.latency_share
        return d


def cost_of(group: Group, op: str, msg_bytes: float, c: Candidate) -> Cost:
    """One line's price for one size, as a `Cost` (the row of an nccl-tests-like table)."""
    bandwidth_s = msg_bytes / c.algbw_bytes_per_s if math.isfinite(c.algbw_bytes_per_s) else 0.0
    if c.ll_staging is not None:  # grows with the size until a channel's share stops growing
        bandwidth_s += c.ll_staging.extra_s(msg_bytes)
    time_s = c.latency_s + bandwidth_s
    algbw = msg_bytes / time_s if time_s > 0 else math.inf
    return Cost(
        op=op,
        msg_bytes=msg_bytes,
        ranks=group.ranks,
        nodes=group.nodes,
        algorithm=c.algorithm,
        protocol=c.protocol,
        time_s=time_s,
        latency_s=c.latency_s,
        bandwidth_s=bandwidth_s,
        algbw_bytes_per_s=algbw,
        busbw_bytes_per_s=algbw * busbw_factor(op, group.ranks) if group.ranks > 1 else 0.0,
        crossover_bytes=c.latency_s * c.algbw_bytes_per_s,
        impl=c.impl,
    )


def collective_cost(
    op: str,
    msg_bytes: float,
    system: System | str,
    *,
    nodes: int = 1,
    gpus: int | None = None,
    algo: str = "auto",
    protocol: str = "auto",
    impl: str = "nccl",
    catalog: Catalog | None = None,
) -> Cost:
    """Price one collective of `msg_bytes` per rank (nccl-tests' "size") on `gpus` GPUs."""
    return sweep(
        op, [msg_bytes], system, nodes=nodes, gpus=gpus, algo=algo, protocol=protocol, impl=impl, catalog=catalog
    )[0]


def sweep(
    op: str,
    sizes_bytes: Iterable[float],
    system: System | str,
    *,
    nodes: int = 1,
    gpus: int | None = None,
    algo: str = "auto",
    protocol: str = "auto",
    impl: str = "nccl",
    catalog: Catalog | None = None,
) -> list[Cost]:
    op = normalize_op(op)
    if impl not in IMPLS:
        raise UnknownNameError("implementation", impl, IMPLS)
    group = make_group(system, nodes=nodes, gpus=gpus, catalog=catalog)
    cands = explicit_candidates(group, op, impl, algo, protocol) if group.ranks > 1 else candidates(group, op)
    out = []
    for n in sizes_bytes:
        if not (isinstance(n, (int, float)) and math.isfinite(n) and n > 0):
            raise PlanError(f"message size must be a positive number of bytes, got {n!r}")
        out.append(cost_of(group, op, float(n), pick(cands, float(n))))
    return out


def crossover_bytes(group: Group, op: str, impl: str = "nccl", algo: str = "auto", protocol: str = "auto") -> float:
    """Smallest message at which the chosen algorithm's bandwidth term exceeds its latency term."""
    cands = explicit_candidates(group, op, impl, algo, protocol)
    lo, hi = 1.0, 2.0**45
    if _bw_dominates(cands, lo):
        return lo
    if not _bw_dominates(cands, hi):
        return math.inf
    for _ in range(60):  # bisection in log space
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if _bw_dominates(cands, mid) else (mid, hi)
    return hi


def _bw_dominates(cands: Sequence[Candidate], n: float) -> bool:
    c = pick(cands, n)
    return n / c.algbw_bytes_per_s >= c.latency_s


def textbook_ring_allreduce_s(msg_bytes: float, ranks: int, alpha_s: float, link_bytes_per_s: float) -> float:
    """2(p-1)·α + 2(p-1)/p · n/B: p-1 reduce-scatter and p-1 all-gather steps, each moving n/p."""
    p = ranks
    return 2 * (p - 1) * alpha_s + 2 * (p - 1) / p * msg_bytes / link_bytes_per_s
