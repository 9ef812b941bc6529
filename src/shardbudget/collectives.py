"""Cost of one collective on a system: t = latency term + bandwidth term, per algorithm and protocol.

The model follows NCCL's own tuning model (src/graph/tuning.cc, constants in catalog/nccl.toml):
every (algorithm, protocol) pair is a straight line in the message size,

    t(n) = base_latency[algo][proto] + steps * hop_latency[link][proto]  +  n / algbw

and `auto` picks the fastest valid pair at each size, as NCCL does. The bandwidth term uses the
fabric's *achievable* bus bandwidth (a measured nccl-tests busbw where one exists), scaled by the
protocol's efficiency, and converted to algorithm bandwidth with the nccl-tests factors:

    all-reduce: busbw = algbw * 2(p-1)/p      all-gather / reduce-scatter / all-to-all: (p-1)/p

The textbook ring all-reduce 2(p-1)·α + 2(p-1)/p · n/B is the Simple-protocol ring on a system whose
base latency is zero (`base_latency = "0 us"` in a user catalog): see `textbook_ring_allreduce_s`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import numpy as np

from .collective_op import CollectiveOp, busbw_factor, parse_op
from .errors import PlanError, UnknownNameError
from .hardware import PROTOCOLS, Catalog, System, load_catalog
from .nccl_constants import NcclConstants
from .topology import Path, ring_path

# The operations this model prices (reduce is measured by nccl-tests but never inserted by a plan).
OPS = tuple(op for op in CollectiveOp if op is not CollectiveOp.REDUCE)
ALGORITHMS = ("ring", "tree", "nvls", "one-shot", "two-shot", "hierarchical", "direct")
IMPLS = ("nccl", "custom")


def normalize_op(op: str) -> CollectiveOp:
    """An operation this model can price, from any spelling (collective_op.parse_op)."""
    return parse_op(op, OPS)


# --- who takes part, and over which links ---------------------------------------------------

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


def make_group(system: System | str, *, nodes: int = 1, gpus: int | None = None,
               catalog: Catalog | None = None) -> Group:
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
        raise PlanError(f"{gpus} GPUs requested but {nodes} x {system.name} has {total} "
                        f"({system.gpus_per_node} per node); add --nodes")
    if gpus % nodes:
        raise PlanError(f"{gpus} GPUs cannot be spread evenly over {nodes} nodes")
    if nodes > 1 and system.nic_fabric is None:
        raise PlanError(f"system {system.name!r} has no scale-out network; it cannot span {nodes} nodes")
    return Group(system=system, nodes=nodes, gpus_per_node=gpus // nodes, catalog=catalog)


def intra_path(system: System, g: int) -> Path:
    """The ring over g GPUs of one node, derived from the node's topology (topology.ring_path:
    per-hop transport, shared links counted; computed once per (system, g))."""
    return ring_path(system, g)


def nic_bytes_per_s(group: Group) -> float:
    """Scale-out bandwidth per node per direction usable by the group's GPUs on that node.

    Rail-optimised nodes give each GPU its own NIC(s): using g of G GPUs uses g/G of the NICs
    (at least one). Shared NICs (no rails) are reachable from every GPU."""
    s = group.system
    if s.nic_fabric is None:
        return 0.0
    nics = s.nics_per_node
    if s.rail_optimized:
        nics = max(1.0, nics * group.gpus_per_node / s.gpus_per_node)
    else:
        # a shared NIC is still reached through a GPU's own PCIe slot: g GPUs drive at most g NICs
        nics = min(nics, group.gpus_per_node)
    return nics * s.nic_fabric.achievable_bytes_per_s


# --- candidates: one straight line t = latency + n / algbw per (algorithm, protocol) ---------

@dataclass(frozen=True)
class Candidate:
    algorithm: str
    protocol: str
    latency_s: float
    algbw_bytes_per_s: float
    max_bytes: float = math.inf
    """Largest message the implementation accepts (custom kernels stop at a buffer size)."""

    def time_s(self, msg_bytes):
        return self.latency_s + msg_bytes / self.algbw_bytes_per_s


def _nccl(group: Group) -> NcclConstants:
    return group.catalog.nccl


def _base_latency_s(group: Group, algo: str, proto: str) -> float:
    if group.system.base_latency_s is not None:
        return group.system.base_latency_s
    return _nccl(group).base_latency_s[algo][proto] * group.system.base_latency_scale


def _protocol_busbw(group: Group, raw_busbw: float, proto: str) -> float:
    """The bus bandwidth a protocol reaches on a link of `raw_busbw` (Simple) bytes/s."""
    nccl = _nccl(group)
    busbw = raw_busbw * nccl.protocol_bandwidth_fraction[proto]
    if proto == "ll":
        caps = nccl.ll_max_bytes_per_s.get(group.system.gpu.arch, nccl.ll_max_bytes_per_s["ampere"])
        busbw = min(busbw, caps[min(group.nodes, 3) - 1])
    return busbw


def _inter_hop_s(group: Group, proto: str, algo: str = "ring") -> float:
    """One step over the scale-out network. tuning.cc prices a tree's network step higher than a
    ring's (hwLat NET tree LL 5.0 vs ring 2.7 us: a tree node waits on two children), and uses the
    tree figure for rings too when each node holds one rank (ppn == 1: every step is a network
    step with no NVLink hop to hide behind). A fabric's own hop_latency is its ring figure; the
    tree's extra is added to it. `algo="p2p"` (send/recv, all-to-all) takes the fabric's figure."""
    nic = group.system.nic_fabric
    if nic is None:
        return 0.0
    hop = nic.hop_latency_s[proto]
    if algo == "tree" or (algo == "ring" and group.gpus_per_node == 1):
        net = _nccl(group).hw_latency_s["net"]
        # never below the ring figure: a user catalog may set the ring row above the tree row
        hop += max(0.0, net["tree"][proto] - net["ring"][proto])
    return hop


def _ring(group: Group, op: str, proto: str) -> Candidate:
    p, n_nodes = group.ranks, group.nodes
    steps = 2 * (p - 1) if op == "all-reduce" else p - 1
    inter_steps = (2 if op == "all-reduce" else 1) * (n_nodes - 1)
    intra_steps = steps - inter_steps
    busbw = math.inf
    intra_hop = 0.0
    if group.gpus_per_node > 1:
        path = intra_path(group.system, group.gpus_per_node)
        busbw, intra_hop = path.busbw_bytes_per_s, path.hop_latency_s[proto]
    if n_nodes > 1:
        # Each ring leaves every node once: the node's NICs carry busbw * (their count) in total.
        busbw = min(busbw, nic_bytes_per_s(group))
        overhead = _nccl(group).net_overhead_s * (3 if proto == "simple" else 1)
        intra_hop = max(intra_hop, overhead)
    latency = (_base_latency_s(group, "ring", proto) + intra_steps * intra_hop
               + inter_steps * _inter_hop_s(group, proto))
    if n_nodes > 1 and op == "all-reduce" and proto == "simple":
        # tuning.cc "plateau effect of ring": multi-node Simple ring all-reduce latency x1.4 (x1.9
        # before sm80) once a rank's share per channel passes 64 B, i.e. wherever Simple is chosen
        plateau = _nccl(group).ring_plateau_factor
        latency *= plateau.get(group.system.gpu.arch, plateau["default"])
    algbw = _protocol_busbw(group, busbw, proto) / busbw_factor(op, p)
    return Candidate("ring", proto, latency, algbw)


def _tree(group: Group, proto: str) -> Candidate:
    """NCCL's double binary tree across nodes, a chain inside each node (all-reduce only)."""
    g, n_nodes = group.gpus_per_node, group.nodes
    busbw, intra_hop = math.inf, 0.0
    if g > 1:
        path = intra_path(group.system, g)
        busbw, intra_hop = path.busbw_bytes_per_s, path.hop_latency_s[proto]
    if n_nodes > 1:
        busbw = min(busbw, nic_bytes_per_s(group))
    # tuning.cc: Tree+LL bus bandwidth / 3.8, Tree+LL128 * 120/128 (7/9 on one node), Simple * 0.92
    scale = {"ll": 1 / 3.8, "ll128": 120 / 128 if n_nodes > 1 else 7 / 9, "simple": 0.92}[proto]
    busbw = busbw * scale
    if proto == "ll":
        busbw = _protocol_busbw(group, busbw * 2, "ll")  # the LL cap, not the LL halving again
    latency = _base_latency_s(group, "tree", proto) + 2 * (
        (g - 1) * intra_hop + math.ceil(math.log2(n_nodes)) * _inter_hop_s(group, proto, "tree"))
    return Candidate("tree", proto, latency, busbw * 0.5)  # the tree moves n up and n down


def nvls_efficiency(system: System, catalog: Catalog) -> float | None:
    """Share of the per-direction NVLink rate an NVLS all-reduce sustains on this switch fabric:
    the fabric's own figure, else the calibrated table by fabric name, else by GPU generation;
    None where NVLS is not available."""
    if system.intra_fabric.nvls_efficiency is not None:
        return system.intra_fabric.nvls_efficiency
    table = catalog.nccl.nvls_link_efficiency
    return table.get(system.intra_fabric.name, table.get(system.gpu.arch))


def _nvls(group: Group) -> Candidate | None:
    """NVLink SHARP: the switch reduces (multimem.ld_reduce) and multicasts (multimem.st).

    Each GPU owns 1/g of the message. Its link sends n (the switch pulls every GPU's copy of every
    slice) plus n/g (its reduced slice, stored once to the multicast address), and receives n/g (its
    reduced slice) plus n (every slice, multicast back): n(1 + 1/g) each way, so
    algbw = efficiency x link rate x g/(g+1). Measured NVLS runs fit one efficiency per fabric across
    5-8 GPUs (nccl_tests.csv: H100 NCCL_ALGO=NVLS 0.68-0.69, H200 0.68, B200 0.60)."""
    s, g = group.system, group.gpus_per_node
    eff = nvls_efficiency(group.system, group.catalog)
    if group.nodes != 1 or g < 2 or eff is None or not intra_path(s, g).nvls:
        return None
    nccl = _nccl(group)
    latency = nccl.nvls_latency_s + nccl.nvls_latency_per_rank_s * g
    return Candidate("nvls", "simple", latency, s.intra_fabric.bytes_per_s * eff * g / (g + 1))


def _nvls_small(group: Group) -> Candidate | None:
    """NVLS below a few hundred MiB: NCCL's own fixed cost (hwLat NVLink NVLS 25 us, tuning.cc) at a
    fraction of the full rate, because NCCL gives small messages fewer channels and smaller chunks.
    `pick` takes the faster of this line and `_nvls`'s, so together they trace NVLS's ramp to full
    bandwidth: short fixed cost for MiB messages, full rate (and a longer pipeline fill) for GiBs."""
    full = _nvls(group)
    if full is None:
        return None
    latency = _nccl(group).hw_latency_s["nvlink"]["nvls"]["simple"]
    fraction = _nccl(group).nvls_small_algbw_fraction
    return Candidate("nvls", "simple", latency, full.algbw_bytes_per_s * fraction)


def custom_allreduce_allowed(group: Group) -> str | None:
    """Why the engines' custom one-/two-shot kernels cannot run here, or None if they can."""
    custom = _nccl(group).custom
    if group.nodes > 1 and (group.system.intra_fabric.kind != "nvl72"
                            or group.nodes * group.system.gpus_per_node > group.system.domain_gpus):
        return "custom all-reduce kernels work inside one NVLink/P2P domain only, not across nodes"
    path = intra_path(group.system, group.gpus_per_node)
    if not path.p2p:
        return f"custom all-reduce needs GPU peer-to-peer access, which {path.name} does not give"
    if group.system.topology in ("pcie", "pairs") and group.gpus_per_node > 2:
        return "custom all-reduce over PCIe is limited to 2 GPUs (vLLM disables it beyond)"
    if group.gpus_per_node not in custom.world_sizes:
        sizes = ", ".join(str(w) for w in custom.world_sizes)
        return f"custom all-reduce supports {sizes} GPUs, not {group.gpus_per_node}"
    return None


def _custom(group: Group, shots: int) -> Candidate | None:
    if custom_allreduce_allowed(group) is not None:
        return None
    custom = _nccl(group).custom
    p = group.gpus_per_node
    path = intra_path(group.system, p)
    # kernel start, one barrier per shot, then one hop over the link (all in seconds)
    latency = custom.launch_s + shots * custom.sync_s + path.hop_latency_s["ll"]
    if shots == 1:
        # one-shot: each rank reads all p-1 peers' full buffers and reduces locally
        algbw = path.busbw_bytes_per_s / (p - 1)
        return Candidate("one-shot", "ll", latency, algbw, custom.one_shot_max_bytes if p > 2 else custom.max_bytes)
    # two-shot: reduce-scatter then all-gather through peer memory, 2(p-1)/p of n each way
    algbw = path.busbw_bytes_per_s / busbw_factor("all-reduce", p)
    return Candidate("two-shot", "ll", latency, algbw, custom.max_bytes)


def _hierarchical(group: Group, op: str, small: bool = False) -> Candidate | None:
    """Intra-node reduce-scatter, inter-node all-reduce of n/g per GPU on its own rail, intra-node
    all-gather. Where the node has NVLS this is NCCL's NVLSTree, whose stages are pipelined (built on
    the small-message NVLS line when `small`); elsewhere the three run one after the other
    (TensorRT-LLM's multi-node all-reduce), and `small` gives nothing."""
    g, n_nodes = group.gpus_per_node, group.nodes
    if op != "all-reduce" or n_nodes < 2 or g < 2:
        return None
    intra = Group(group.system, 1, g, group.catalog)
    inter = Group(group.system, n_nodes, 1, group.catalog)
    # each GPU's slice is 1/g of the message and its NIC share is 1/g of the node's NICs
    per_gpu_nic = nic_bytes_per_s(group) / g
    nvls = _nvls_small(intra) if small else _nvls(intra)
    if small and nvls is None:
        return None
    if nvls is not None:
        # NCCL's NVLSTree: NVLS reduce inside the node, each GPU's 1/g slice all-reduced between the
        # nodes on its own rail, NVLS multicast back. The stages work on successive chunks at the
        # same time, so the slowest stage sets the bandwidth and the latencies add. Between two nodes
        # a slice crosses the network once each way; a tree over more nodes sends and receives it
        # twice (tuning.cc: NVLSTree interBw x2 for nNodes <= 2).
        inter_ar = min((c for c in candidates(inter, "all-reduce") if c.protocol == "simple"),
                       key=lambda c: c.latency_s)
        inter_algbw = g * per_gpu_nic / (1 if n_nodes <= 2 else 2)
        return Candidate("hierarchical", "simple", nvls.latency_s + inter_ar.latency_s,
                         min(nvls.algbw_bytes_per_s, inter_algbw))
    rs = best_line(candidates(intra, "reduce-scatter"))
    ag = best_line(candidates(intra, "all-gather"))
    ar = min((c for c in candidates(inter, "all-reduce")), key=lambda c: c.latency_s)
    inter_algbw = _protocol_busbw(inter, per_gpu_nic, ar.protocol) / busbw_factor("all-reduce", n_nodes)
    latency = rs.latency_s + ar.latency_s + ag.latency_s
    seconds_per_byte = 1 / rs.algbw_bytes_per_s + 1 / (g * inter_algbw) + 1 / ag.algbw_bytes_per_s
    return Candidate("hierarchical", ar.protocol, latency, 1 / seconds_per_byte)


def best_line(cands: Sequence[Candidate]) -> Candidate:
    """The candidate with the best bandwidth (for composite algorithms' large-message parts)."""
    return max(cands, key=lambda c: c.algbw_bytes_per_s)


def _alltoall(group: Group) -> Candidate:
    """NCCL all-to-all = grouped send/recv to every peer; intra and inter traffic overlap."""
    p, g, n_nodes = group.ranks, group.gpus_per_node, group.nodes
    hop = intra_path(group.system, g).hop_latency_s["simple"] if g > 1 else 0.0
    latency = _base_latency_s(group, "ring", "simple") + hop + (
        _inter_hop_s(group, "simple", "p2p") if n_nodes > 1 else 0.0)
    seconds_per_byte = 0.0
    if g > 1:  # (g-1)/p of the message goes to peers in the node
        seconds_per_byte = (g - 1) / p / intra_path(group.system, g).busbw_bytes_per_s
    if n_nodes > 1:  # (p-g)/p leaves the node through this GPU's share of the NICs
        seconds_per_byte = max(seconds_per_byte, (p - g) / p / (nic_bytes_per_s(group) / g))
    return Candidate("direct", "simple", latency, 1 / seconds_per_byte)


def _sendrecv(group: Group, proto: str) -> Candidate:
    if group.nodes > 1:
        bw, hop = group.system.nic_fabric.achievable_bytes_per_s, _inter_hop_s(group, proto, "p2p")
    else:
        path = intra_path(group.system, max(2, group.gpus_per_node))
        bw, hop = path.busbw_bytes_per_s, path.hop_latency_s[proto]
    return Candidate("direct", proto, _base_latency_s(group, "ring", proto) + hop,
                     _protocol_busbw(group, bw, proto))


def _broadcast(group: Group, proto: str) -> Candidate:
    ring = _ring(group, "all-gather", proto)  # same p-1 pipeline hops, one copy of n per link
    return Candidate("ring", proto, ring.latency_s, ring.algbw_bytes_per_s * busbw_factor("all-gather", group.ranks))


def ll128_enabled(group: Group) -> bool:
    """NCCL turns LL128 on by default only where it is tested safe (tuning.cc ncclTopoTuneModel):
    every intra-node hop over NVLink (typeIntra <= PATH_NVB) and, across nodes, NICs next to the GPUs
    (typeInter <= PATH_PXB: rail-optimised NICs under the GPU's PCIe switch). PCIe-only boxes and
    shared NICs behind the CPU run LL and Simple only."""
    s = group.system
    if group.gpus_per_node > 1 and intra_path(s, group.gpus_per_node).nccl_link != "nvlink":
        return False
    return group.nodes == 1 or s.rail_optimized


def protocols(group: Group) -> tuple[str, ...]:
    return PROTOCOLS if ll128_enabled(group) else tuple(p for p in PROTOCOLS if p != "ll128")


@lru_cache(maxsize=65536)
def candidates(group: Group, op: str, impl: str = "nccl") -> tuple[Candidate, ...]:
    """Every (algorithm, protocol) the implementation could use for `op` on `group`."""
    if group.ranks < 2:
        return (Candidate("none", "none", 0.0, math.inf),)
    out: list[Candidate | None] = []
    if op in ("all-reduce", "reduce-scatter", "all-gather"):
        out += [_ring(group, op, p) for p in protocols(group)]
    if op == "all-reduce":
        if group.nodes > 1:
            out += [_tree(group, p) for p in protocols(group)]
        out += [_nvls(group), _nvls_small(group), _hierarchical(group, op), _hierarchical(group, op, small=True)]
        if impl == "custom":
            out += [_custom(group, 1), _custom(group, 2)]
    elif op == "all-to-all":
        out.append(_alltoall(group))
    elif op == "broadcast":
        out += [_broadcast(group, p) for p in protocols(group)]
    elif op == "send/recv":
        out += [_sendrecv(group, p) for p in protocols(group)]
    return tuple(c for c in out if c is not None)


def explicit_candidates(group: Group, op: str, impl: str, algo: str, protocol: str) -> tuple[Candidate, ...]:
    """Candidates filtered by a user's --algo / --protocol, with a clear error where none remain."""
    if algo not in ("auto",) + ALGORITHMS:
        raise UnknownNameError("algorithm", algo, ("auto",) + ALGORITHMS)
    if protocol not in ("auto",) + PROTOCOLS:
        raise UnknownNameError("protocol", protocol, ("auto",) + PROTOCOLS)
    pool = candidates(group, op, "custom" if algo in ("one-shot", "two-shot") else impl)
    if algo == "tree" and op == "all-reduce" and group.nodes == 1:
        pool = pool + tuple(_tree(group, p) for p in protocols(group))
    chosen = tuple(c for c in pool if (algo == "auto" or c.algorithm == algo)
                   and (protocol == "auto" or c.protocol == protocol))
    if not chosen:
        raise PlanError(_why_not(group, op, algo, protocol))
    return chosen


def _why_not(group: Group, op: str, algo: str, protocol: str) -> str:
    where = f"{op} on {group.ranks} GPUs of {group.system.name} ({group.nodes} node(s))"
    if algo == "nvls":
        return f"NVLS needs NVSwitch with in-switch reduction inside one node; not available for {where}"
    if algo in ("one-shot", "two-shot"):
        return f"{algo} all-reduce is not possible for {where}: {custom_allreduce_allowed(group)}"
    if algo == "hierarchical":
        return f"hierarchical all-reduce needs 2+ nodes with 2+ GPUs each; not {where}"
    if protocol == "ll128" and not ll128_enabled(group):
        return (f"NCCL enables LL128 only over NVLink inside the node and rail NICs between nodes; "
                f"not for {where}")
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

    @property
    def latency_share(self) -> float:
        return self.latency_s / self.time_s if self.time_s > 0 else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["latency_share"] = self.latency_share
        return d


def pick(cands: Sequence[Candidate], msg_bytes: float) -> Candidate:
    """The fastest candidate that accepts a message of this size (NCCL's tuner does the same)."""
    valid = [c for c in cands if msg_bytes <= c.max_bytes] or list(cands)
    return min(valid, key=lambda c: c.time_s(msg_bytes))


def _cost(group: Group, op: str, msg_bytes: float, c: Candidate) -> Cost:
    bandwidth_s = msg_bytes / c.algbw_bytes_per_s if math.isfinite(c.algbw_bytes_per_s) else 0.0
    time_s = c.latency_s + bandwidth_s
    algbw = msg_bytes / time_s if time_s > 0 else math.inf
    return Cost(op=op, msg_bytes=msg_bytes, ranks=group.ranks, nodes=group.nodes,
                algorithm=c.algorithm, protocol=c.protocol, time_s=time_s, latency_s=c.latency_s,
                bandwidth_s=bandwidth_s, algbw_bytes_per_s=algbw,
                busbw_bytes_per_s=algbw * busbw_factor(op, group.ranks) if group.ranks > 1 else 0.0,
                crossover_bytes=c.latency_s * c.algbw_bytes_per_s)


def collective_cost(op: str, msg_bytes: float, system: System | str, *, nodes: int = 1,
                    gpus: int | None = None, algo: str = "auto", protocol: str = "auto",
                    impl: str = "nccl", catalog: Catalog | None = None) -> Cost:
    """Price one collective of `msg_bytes` per rank (nccl-tests' "size") on `gpus` GPUs."""
    return sweep(op, [msg_bytes], system, nodes=nodes, gpus=gpus, algo=algo, protocol=protocol,
                 impl=impl, catalog=catalog)[0]


def sweep(op: str, sizes_bytes: Iterable[float], system: System | str, *, nodes: int = 1,
          gpus: int | None = None, algo: str = "auto", protocol: str = "auto", impl: str = "nccl",
          catalog: Catalog | None = None) -> list[Cost]:
    op = normalize_op(op)
    if impl not in IMPLS:
        raise UnknownNameError("implementation", impl, IMPLS)
    group = make_group(system, nodes=nodes, gpus=gpus, catalog=catalog)
    cands = explicit_candidates(group, op, impl, algo, protocol) if group.ranks > 1 else candidates(group, op)
    out = []
    for n in sizes_bytes:
        if not (isinstance(n, (int, float)) and math.isfinite(n) and n > 0):
            raise PlanError(f"message size must be a positive number of bytes, got {n!r}")
        out.append(_cost(group, op, float(n), pick(cands, float(n))))
    return out


def times_s(cands: Sequence[Candidate], msg_bytes: np.ndarray) -> np.ndarray:
    """Vectorised `pick(...).time_s`: the fastest valid candidate's time for each size."""
    return times_and_latencies_s(cands, msg_bytes)[0]


def times_and_latencies_s(cands: Sequence[Candidate], msg_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised `pick`: for each size, the chosen candidate's total time and its latency term.

    Like `pick`, only candidates that accept the size compete; where none does, all do."""
    msg_bytes = np.asarray(msg_bytes, dtype=float)
    best_t = np.full(msg_bytes.shape, np.inf)
    best_lat = np.zeros(msg_bytes.shape)
    any_t = np.full(msg_bytes.shape, np.inf)
    any_lat = np.zeros(msg_bytes.shape)
    for c in cands:
        t = c.latency_s + msg_bytes / c.algbw_bytes_per_s
        better = (msg_bytes <= c.max_bytes) & (t < best_t)
        best_t, best_lat = np.where(better, t, best_t), np.where(better, c.latency_s, best_lat)
        faster = t < any_t
        any_t, any_lat = np.where(faster, t, any_t), np.where(faster, c.latency_s, any_lat)
    valid = np.isfinite(best_t)
    return np.where(valid, best_t, any_t), np.where(valid, best_lat, any_lat)


def crossover_bytes(group: Group, op: str, impl: str = "nccl", algo: str = "auto",
                    protocol: str = "auto") -> float:
    """Smallest message at which the chosen algorithm's bandwidth term exceeds its latency term."""
    cands = explicit_candidates(group, op, impl, algo, protocol)
    lo, hi = 1.0, 2.0 ** 45
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
