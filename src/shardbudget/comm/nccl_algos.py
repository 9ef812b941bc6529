"""NCCL's algorithms as straight lines: ring, tree, NVLS, NVLSTree, all-to-all, send/recv, broadcast.

Each (algorithm, protocol) line is built twice from the same formulas of tuning.cc
(ncclTopoTuneModel, ncclTopoGetAlgoTime):

* as NCCL estimates it, from its own tables (catalog/nccl.toml, quoted) and the bandwidths its
  topology assigns to links (topo.h; `Fabric.nccl_bytes_per_s`, `Path.nccl_busbw_bytes_per_s`): this
  is what NCCL compares to choose the line, so it is the line's selection estimate;
* as it runs, with the measured floors of the GPU generation (`NcclConstants.arch`), the fabrics'
  achievable bandwidths and the ring's small-group efficiency: this is the time reported.

Latency of a ring all-reduce over p ranks on N nodes (steps = 2(p-1), 2(N-1) of them between nodes):

    base[ring][proto] + (steps - inter) * intra_hop[proto] + inter * net_hop[proto]

and of a tree all-reduce: base[tree][proto] + 2((p/N - 1) intra_tree_hop + log2i(N) net_tree_hop),
log2i being floor(log2). Bandwidth terms: bus bandwidth -> algorithm bandwidth with nccl-tests'
factors (ring: busbw / (2(p-1)/p); tree: busbw / 2, since it moves n up and n down).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from .op import busbw_factor
from ..fabric.hardware import PROTOCOLS, Catalog, System
from .lines import Candidate, Group
from .ll_staging import ll_staging
from .net_path import node_nic_bytes_per_s, staged_hop_s
from .nccl_graph import NVLS_MAX_HEADS, nvls_graph, nvls_graph_busbw, ring_ll128_cap
from ..fabric.nccl_constants import NcclConstants
from ..fabric.ring_path import Path, ring_path

# tuning.cc: a tree step moves busBw * 0.92 of the ring's rate, then its protocol's share
TREE_BW_FACTOR = 0.92
TREE_PROTOCOL_FACTOR = {"ll": 1 / 3.8, "ll128": 120 / 128, "simple": 1.0}
TREE_LL128_ONE_NODE = 7 / 9
# NCCL's NVLS bandwidth estimate runs nChannels - 1 of nChannels channels' worth (tuning.cc); NVLS
# graphs have 16 channels or more on HGX, so (n-1)/n is taken at 16.
NVLS_CHANNELS = 16
# What one NVLSTree pipeline step holds (enqueue.cc v2.26.2 calls it concurrentOps x chunkSize):
# nvlsChannels channels (the generation's `nvls_channels`, catalog/archs.toml: transport/nvls.cc
# NVLS_NCHANNELS_SM90 16, _SM100 32) x nHeads heads (one per NVLS graph channel, at most
# NCCL_MAX_NVLS_ARITY = 32, device.h) x a chunk of NCCL_NVLS_CHUNKSIZE 128 KiB, 64 KiB from 4 nodes
# (NVLSTREE_MAX_CHUNKSIZE's default)
NVLS_TREE_CHUNK_BYTES = 128 * 1024
NVLS_TREE_CHUNK_BYTES_4_NODES = 64 * 1024
# First release that runs LL128 through a GPU-NIC path over NVLink-C2C (tuning.cc v2.27.3
# NCCL_LL128_C2C = 1; v2.26.2 admits typeInter <= PXN only)
LL128_C2C_FROM = (2, 27)
# First release whose NVLS estimate carries nvlsEfficiency and the ring's bus-to-algorithm ratio
# (tuning.cc v2.28.3, NVIDIA/nccl f1308997; v2.27.7 takes 5/6 of the graph's rate as algbw)
NVLS_EFFICIENCY_FROM = (2, 28)


def nccl(group: Group) -> NcclConstants:
    return group.catalog.nccl


def log2i(n: int) -> int:
    """floor(log2(n)) for n >= 1, as NCCL's log2i (bitops.h log2Down)."""
    return n.bit_length() - 1


def intra(group: Group) -> Path | None:
    return ring_path(group.system, group.gpus_per_node) if group.gpus_per_node > 1 else None


def nic_bytes_per_s(group: Group, rate: str = "achievable") -> float:
    """Scale-out bandwidth per node per direction usable by the group's GPUs on that node.

    Rail-optimised nodes give each GPU its own NIC(s): using g of G GPUs uses g/G of the NICs
    (at least one). Shared NICs (no rails) are reachable from every GPU. `rate="nccl"`: the NICs'
    line rate, as NCCL's topology counts them; else what they carry, host-staged where GDR is off
    (comm/net_path.py)."""
    s = group.system
    if s.nic_fabric is None:
        return 0.0
    nics = group_nics(group)
    if rate == "nccl":
        return nics * s.nic_fabric.bytes_per_s
    # achievable: through GPUDirect RDMA, or staged through host memory where NCCL turns GDR off
    return node_nic_bytes_per_s(s, nccl(group), nics)


def group_nics(group: Group) -> float:
    """NICs per node the group's GPUs reach: g/G of a rail-optimised node's (at least one); a shared
    NIC is still reached through a GPU's own PCIe slot, so g GPUs drive at most g NICs."""
    s = group.system
    if s.rail_optimized:
        return max(1.0, s.nics_per_node * group.gpus_per_node / s.gpus_per_node)
    return min(s.nics_per_node, group.gpus_per_node)


def nvls_heads(group: Group) -> int:
    """NVLS heads per node: the GPUs that carry NVLSTree's network stage, each through its own NIC.

    NCCL's NVLS graph (search.cc v2.26.2 ncclTopoCompute / ncclTopoSearchRecNet) makes one head per
    NIC on a GPU close to it, never two on one GPU, at most min(NCCL_MAX_NVLS_ARITY = 32, GPUs);
    on a GB200 rack (72 GPUs, 72 NICs) it searches down its speed list until 32 heads fit the GPUs'
    NVLink (32 x 20 GB/s of 18 x 40), so 32 of the rack's 72 NICs carry the tree."""
    return max(1, min(NVLS_MAX_HEADS, group.gpus_per_node, int(group_nics(group))))


def net_overhead_s(group: Group) -> float:
    """tuning.cc getNetOverhead: per-step network post overhead of this node's CPU vendor."""
    cpu = group.system.cpu
    return cpu.net_overhead_s if cpu is not None else nccl(group).net_overhead_s


def ll_cap(group: Group) -> float:
    """tuning.cc llMaxBws: LL's bus-bandwidth ceiling; on one node by GPU generation (every generation
    of the catalog has its row: fabric/catalog.py refuses one without), across nodes by CPU vendor
    (AMD rows for AMD, the Intel row for every other vendor)."""
    caps = nccl(group).ll_max_bytes_per_s
    if group.nodes == 1:
        return caps["one_node"][group.system.gpu.arch]
    cpu = group.system.cpu
    row = caps["amd" if cpu is not None and cpu.vendor == "amd" else "intel"]
    return row[0 if group.nodes == 2 else 1]


def base_latency_s(group: Group, algo: str, proto: str, real: bool) -> float:
    s = group.system
    if s.base_latency_s is not None:
        return s.base_latency_s
    base = nccl(group).base_latency_s[algo][proto]
    if real:
        base += nccl(group).arch_floor(s.gpu.arch).base_offset_s[proto]
    return base * s.base_latency_scale


def intra_hop_s(group: Group, path: Path, algo: str, proto: str, real: bool) -> float:
    """One step between two GPUs of a node. NCCL's estimate takes its hwLat row of the link class;
    the real hop is the path's own figure (ring row), scaled on NVLink by the GPU generation's
    measured floor, and for a tree by tuning.cc's tree-to-ring ratio of that link class."""
    rows = nccl(group).hw_latency_s[path.nccl_link]
    if not real:
        return rows[algo][proto]
    hop = path.hop_latency_s[proto]
    if algo == "ring" and path.nccl_link == "nvlink":
        hop *= nccl(group).arch_floor(group.system.gpu.arch).nvlink_hop_scale[proto]
    if algo != "ring" and rows["ring"][proto] > 0:
        # the tree's own rows (tuning.cc hwLat TREE), which NCCL measured for its chains: the
        # generation's ring-step factor is not applied to them
        hop *= rows[algo][proto] / rows["ring"][proto]
    return hop


def net_hop_s(group: Group, proto: str, algo: str, real: bool) -> float:
    """One step over the scale-out network. tuning.cc prices a tree's network step higher than a
    ring's (hwLat NET tree LL 5.0 vs ring 2.7 us: a tree node waits on two children), and uses the
    tree figure for rings too when each node holds one rank (ppn == 1: every step is a network
    step with no NVLink hop to hide behind). A fabric's own hop_latency is its ring figure; the
    tree's extra is added to it. `algo="p2p"` (send/recv, all-to-all) takes the fabric's figure."""
    nic = group.system.nic_fabric
    if nic is None:
        return 0.0
    net = nccl(group).hw_latency_s["net"]
    tree = algo == "tree" or (algo == "ring" and group.gpus_per_node == 1)
    if not real:
        return net["tree" if tree else "ring"][proto] if algo != "p2p" else net["ring"][proto]
    hop = nic.hop_latency_s[proto] + staged_hop_s(group.system, nccl(group), proto)
    if tree:
        # never below the ring figure: a user catalog may set the ring row above the tree row
        hop += max(0.0, net["tree"][proto] - net["ring"][proto])
    return hop


def ring_efficiency(group: Group, path: Path) -> float:
    """Share of its fabric's ring figure a single-node ring of fewer GPUs reaches (measured: 2-GPU
    rings run below the 8-GPU busbw the NVSwitch fabrics quote; catalog/nccl.toml ring_efficiency).
    Only where the fabric says its figure is a ring of more GPUs (`achievable_gpus`)."""
    measured_on = group.system.intra_fabric.achievable_gpus
    if group.nodes > 1 or path.nccl_link != "nvlink" or measured_on is None or group.gpus_per_node >= measured_on:
        return 1.0
    return nccl(group).ring_efficiency.get(group.gpus_per_node, 1.0)


# --- ring ----------------------------------------------------------------------------------------


def _ring_line(group: Group, op: str, proto: str, real: bool) -> tuple[float, float]:
    p, n_nodes = group.ranks, group.nodes
    steps = 2 * (p - 1) if op == "all-reduce" else p - 1
    inter_steps = (2 if op == "all-reduce" else 1) * (n_nodes - 1)
    busbw, hop = math.inf, 0.0
    path = intra(group)
    if path is not None:
        busbw = path.busbw_bytes_per_s * ring_efficiency(group, path) if real else path.nccl_busbw_bytes_per_s
        hop = intra_hop_s(group, path, "ring", proto, real)
    if n_nodes > 1:
        # each ring leaves every node once: the node's NICs carry busbw * (their count) in total
        busbw = min(busbw, nic_bytes_per_s(group, "achievable" if real else "nccl"))
        hop = max(hop, net_overhead_s(group) * (3 if proto == "simple" else 1))
    latency = (
        base_latency_s(group, "ring", proto, real)
        + (steps - inter_steps) * hop
        + inter_steps * net_hop_s(group, proto, "ring", real)
    )
    if n_nodes > 1 and op == "all-reduce" and proto == "simple":
        # tuning.cc "plateau effect of ring": multi-node Simple ring all-reduce latency x1.4 (x1.9
        # before sm80) once a rank's share per channel passes 64 B, i.e. wherever Simple is chosen
        plateau = nccl(group).ring_plateau_factor
        latency *= plateau.get(group.system.gpu.arch, plateau["default"])
    busbw = protocol_busbw(group, busbw, proto, real)
    if not real and proto == "ll128" and n_nodes == 1:
        busbw = min(busbw, ring_ll128_cap(group, path))
    return latency, busbw / busbw_factor(op, p)


def protocol_busbw(group: Group, busbw: float, proto: str, real: bool = False) -> float:
    """A ring's bus bandwidth under a protocol (tuning.cc: LL min(llMaxBw, 0.5 x), LL128 0.92 x).
    llMaxBw is NCCL's estimate of where LL saturates; inside one node LL runs at half the link rate
    above it (measured_comm.csv: 8x H100 at 1 MiB 0.5 x 370 GB/s busbw, not 141), so the real line
    drops the cap there."""
    fraction = nccl(group).protocol_bandwidth_fraction[proto]
    if (
        real
        and proto == "ll"
        and group.gpus_per_node > 1
        and "shm" in ring_path(group.system, group.gpus_per_node).transports
    ):
        # over host memory the path's round trips, not its bytes, bind: LL's inline flags cost
        # little (measured: 2x RTX 4090 LL at 0.5-1 MiB 3.5 GB/s beside Simple's 3.74)
        fraction = nccl(group).shm_ll_bandwidth_fraction
    busbw *= fraction
    if proto == "ll" and not (real and group.nodes == 1 and chooses_by_nccl_tables(group)):
        busbw = min(busbw, ll_cap(group))
    return busbw


def chooses_by_nccl_tables(group: Group) -> bool:
    """NCCL's tables are NVIDIA's; RCCL (AMD GPUs) chooses by tables of its own that we do not
    have, tuned on its platforms, so there the fastest real line is taken to be RCCL's choice."""
    return group.system.gpu.generation.nccl_tables


def _line(
    algo: str, proto: str, group: Group, real: tuple[float, float], estimate: tuple[float, float], **kw
) -> Candidate:
    if not chooses_by_nccl_tables(group):
        return Candidate(algo, proto, *real, **kw)
    return Candidate(algo, proto, *real, select_latency_s=estimate[0], select_algbw_bytes_per_s=estimate[1], **kw)


def ring(group: Group, op: str, proto: str) -> Candidate:
    return _line(
        "ring",
        proto,
        group,
        _ring_line(group, op, proto, real=True),
        _ring_line(group, op, proto, real=False),
        ll_staging=ll_staging(group, "ring", op, proto, nccl(group).ll_net_proxy_line_s),
    )


# --- tree ----------------------------------------------------------------------------------------


def _tree_line(group: Group, proto: str, real: bool) -> tuple[float, float]:
    g, n_nodes = group.gpus_per_node, group.nodes
    busbw, hop = math.inf, 0.0
    path = intra(group)
    if path is not None:
        busbw = path.busbw_bytes_per_s if real else path.nccl_busbw_bytes_per_s
        hop = intra_hop_s(group, path, "tree", proto, real)
    if n_nodes > 1:
        busbw = min(busbw, nic_bytes_per_s(group, "achievable" if real else "nccl"))
    # tuning.cc: Tree all-reduce busBw * 0.92, then LL / 3.8 (capped by llMaxBw), LL128 * 120/128
    # (7/9 on one node)
    busbw *= TREE_BW_FACTOR
    if proto == "ll128" and n_nodes == 1:
        busbw *= TREE_LL128_ONE_NODE
    else:
        busbw *= TREE_PROTOCOL_FACTOR[proto]
    if proto == "ll" and not real:
        # llMaxBw is NCCL's estimate of where LL saturates, not a rate the tree meets: the measured
        # tree LL rows across nodes rise at 2-3x the capped rate (nccl-tests#309, 2 and 4 nodes of
        # H100 at 16-128 KiB: +6.1 and +7.4 us where the cap priced +11 and +21), as LL inside one
        # node runs past it (protocol_busbw); the real line keeps the link's LL rate
        busbw = min(busbw, ll_cap(group))
    latency = base_latency_s(group, "tree", proto, real) + 2 * (
        (g - 1) * hop + log2i(n_nodes) * net_hop_s(group, proto, "tree", real)
    )
    return latency, busbw * 0.5  # the tree moves n up and n down


def tree(group: Group, proto: str) -> Candidate:
    """NCCL's double binary tree across nodes, a chain inside each node (all-reduce only). Its
    bandwidth carries tuning.cc's treeCorrectionFactor by message size, in NCCL's estimate and in
    the time alike: NCCL applies it because "trees are not perfectly sticking to the model". NCCL's
    estimate reads it by power-of-two bucket; the time reads it as the curve the buckets sample
    (lines.Candidate._factor), so a tree's time does not fall where a bucket steps up."""
    return _line(
        "tree",
        proto,
        group,
        _tree_line(group, proto, real=True),
        _tree_line(group, proto, real=False),
        bw_factors=nccl(group).tree_correction[proto],
        ll_staging=ll_staging(group, "tree", "all-reduce", proto, nccl(group).ll_net_proxy_line_s),
    )


# --- NVLS ----------------------------------------------------------------------------------------


def nvls_efficiency(system: System, catalog: Catalog, gpus: int | None = None) -> float | None:
    """Share of the per-direction NVLink rate an NVLS all-reduce sustains on this switch fabric:
    the fabric's own figure, else the calibrated table by fabric name, else by GPU generation;
    None where NVLS is not available. With `gpus`, the share g ranks reach: the switch reduces and
    multicasts for every rank of the group, e / (1 + k (g - 1)) with the calibrated k per rank
    (an NVL72's 72-GPU NVLS runs at 0.50 of the link where its 4-GPU one runs at 0.61)."""
    if system.intra_fabric.nvls_efficiency is not None:
        eff = system.intra_fabric.nvls_efficiency
    else:
        table = catalog.nccl.nvls_link_efficiency
        eff = table.get(system.intra_fabric.name, table.get(system.gpu.arch))
    if eff is None or gpus is None:
        return eff
    return eff / (1 + catalog.nccl.nvls_decay_per_rank * (gpus - 1))


def _nvls_estimate(group: Group, g: int) -> tuple[float, float]:
    """NCCL's NVLS all-reduce estimate: latency hwLat NVLink NVLS (25 us); from 2.28 the NVLS graph's
    rate (nvls_graph_busbw) x 2 (all-reduce pipelines two operations) as a bus bandwidth, before
    2.28 its channels x speed x 5/6 as the algorithm bandwidth (tuning.cc v2.27.7). Both agree with
    what NCCL 2.27.7 chose on 4-8 B200s at 8 GiB (stas00: ring at 4-5 GPUs, NVLS at 6-8)."""
    c = nccl(group)
    if c.version < NVLS_EFFICIENCY_FROM:
        channels, speed = nvls_graph(group, g)
        return c.hw_latency_s["nvlink"]["nvls"]["simple"], channels * speed * 5 / 6
    busbw = nvls_graph_busbw(group, g, c.nvls_nccl_efficiency.get(group.system.gpu.arch, 0.0)) * 2
    return c.hw_latency_s["nvlink"]["nvls"]["simple"], busbw / busbw_factor("all-reduce", g)


def nvls(group: Group) -> Candidate | None:
    """NVLink SHARP: the switch reduces (multimem.ld_reduce) and multicasts (multimem.st).

    Each GPU owns 1/g of the message. Its link sends n (the switch pulls every GPU's copy of every
    slice) plus n/g (its reduced slice, stored once to the multicast address), and receives n/g (its
    reduced slice) plus n (every slice, multicast back): n(1 + 1/g) each way, so
    algbw = efficiency x link rate x g/(g+1). Measured NVLS runs fit one efficiency per fabric across
    5-8 GPUs (nccl_tests.csv: H100 NCCL_ALGO=NVLS 0.68-0.69, H200 0.68, B200 0.60)."""
    s, g = group.system, group.gpus_per_node
    eff = nvls_efficiency(s, group.catalog, g)
    # NCCL runs rings, not NVLS, on 2 GPUs (measured_comm.csv: 2x H100 at 512 MiB reach 320 GB/s,
    # above the 0.68 x 450 x 2/3 = 204 GB/s NVLS could carry; 2x B200 534 vs 360)
    if group.nodes != 1 or g < 3 or eff is None or not ring_path(s, g).nvls:
        return None
    c = nccl(group)
    sel_lat, sel_bw = _nvls_estimate(group, g)
    return Candidate(
        "nvls",
        "simple",
        c.nvls_latency_s + c.nvls_latency_per_rank_s * g,
        s.intra_fabric.bytes_per_s * eff * g / (g + 1),
        select_latency_s=sel_lat,
        select_algbw_bytes_per_s=sel_bw,
    )


def nvls_small(group: Group) -> Candidate | None:
    """NVLS below a few hundred MiB: a fixed cost at a fraction of the full rate, because NCCL gives
    small messages fewer channels and smaller chunks. NCCL's estimate is the same line as `nvls`'s
    (hwLat NVLink NVLS 25 us, tuning.cc); of the two, the faster runs, so together they trace NVLS's
    ramp to full bandwidth.

    The fixed cost is a + b log2(g): it grows with the group, but ever more slowly (the kernel ends
    when the last of g ranks has signalled, and measured NVL72 rows add about as much from 16 to 32
    GPUs as from 36 to 72: XLA's GB200 table, 40 -> 50 -> 54 us). A per-rank slope fitted at 8 GPUs
    priced 72 at 351 us, 7x the measurement. a per GPU generation and b are fitted by
    `python -m shardbudget.calibrate` (fit_floors, fit_nvls_small); a generation without a fit takes
    tuning.cc's flat 25 us."""
    full = nvls(group)
    if full is None:
        return None
    c = nccl(group)
    base = c.arch_floor(group.system.gpu.arch).nvls_small_latency_s
    g = group.gpus_per_node
    latency = (
        base + c.nvls_small_latency_per_doubling_s * math.log2(g)
        if base
        else c.hw_latency_s["nvlink"]["nvls"]["simple"]
    )
    return Candidate(
        "nvls",
        "simple",
        latency,
        full.algbw_bytes_per_s * c.nvls_small_algbw_fraction,
        select_latency_s=full.select_latency_s,
        select_algbw_bytes_per_s=full.select_algbw_bytes_per_s,
    )


# --- hierarchical (NVLSTree, or reduce-scatter + all-reduce + all-gather) ------------------------


def best_line(cands: Sequence[Candidate]) -> Candidate:
    """The candidate with the best bandwidth (for composite algorithms' large-message parts)."""
    return max(cands, key=lambda c: c.algbw_bytes_per_s)


def nvls_tree_step_bytes(group: Group) -> float:
    """Bytes in one step of NVLSTree's pipeline across a node: nvlsChannels x nHeads x chunk. A step
    goes up the tree between nodes and down again, one network level at a time (each chunk is one
    step, sent whole: enqueue.cc nstepsPerLoop = 1), so a message of many steps first fills 2 log2i(N)
    levels (the count tuning.cc gives NVLSTree's latency) at the pipeline's rate B: 2 log2i(N) x
    step / B, 0.62 ms on 2 GB200 racks (134 MB at 433 GB/s) and 1.24 ms on 20 (67 MB x 8). CoreWeave's
    runs (NCCL 2.26.2) hold 0.46 ms and 4.25 ms more than one rack's intercept (1 rack t = 0.58 ms
    + n/438 GB/s, 2 racks 1.04 + n/419, 20 racks 4.83 + n/215): 0.23 and 0.53 ms per level, a step of
    96 and 114 MB at their own rates. The small-message line (below one step) is left as it was:
    no measured multi-node NVLSTree row lies there."""
    chunk = NVLS_TREE_CHUNK_BYTES if group.nodes < 4 else NVLS_TREE_CHUNK_BYTES_4_NODES
    return group.system.gpu.generation.nvls_channels * nvls_heads(group) * chunk


def _nvls_tree_intra_estimate(group: Group) -> float:
    """NCCL's estimate of NVLSTree's intra-node stage, algbw: its graph is searched with the network
    (heads on NICs, the inter speed array), which is not modelled; taken at the NVLink rate x
    nvlsEfficiency x 15/16 x 2 (16 channels), as NCCL's one-domain graph reaches at 8 GPUs."""
    c, g = nccl(group), group.gpus_per_node
    busbw = (
        group.system.intra_fabric.nccl_bytes_per_s
        * c.nvls_nccl_efficiency.get(group.system.gpu.arch, 0.0)
        * (NVLS_CHANNELS - 1)
        / NVLS_CHANNELS
        * 2
    )
    return busbw / busbw_factor("all-reduce", g)


def hierarchical(
    group: Group, op: str, candidates: Callable[[Group, str], Sequence[Candidate]], small: bool = False
) -> Candidate | None:
    """Intra-node reduce-scatter, inter-node all-reduce of n/g per GPU on its own rail, intra-node
    all-gather. Where the node has NVLS this is NCCL's NVLSTree, whose stages are pipelined (built on
    the small-message NVLS line when `small`); elsewhere the three run one after the other
    (TensorRT-LLM's multi-node all-reduce), and `small` gives nothing. NCCL does not run the
    sequential form: it competes on its real time."""
    g, n_nodes = group.gpus_per_node, group.nodes
    if op != "all-reduce" or n_nodes < 2 or g < 2:
        return None
    one_node = Group(group.system, 1, g, group.catalog)
    inter = Group(group.system, n_nodes, 1, group.catalog)
    switch = nvls_small(one_node) if small else nvls(one_node)
    if small and switch is None:
        return None
    if switch is not None:
        # NCCL's NVLSTree: NVLS reduce inside the node, each head's 1/heads slice all-reduced between
        # the nodes through the head's own NIC, NVLS multicast back. The stages work on successive
        # chunks at the same time, so the slowest stage sets the bandwidth and the latencies add.
        # Between two nodes a slice crosses the network once each way; in the double binary tree of
        # more nodes (connect.cc ncclGetDtree) a node with two children receives and sends it twice
        # (tuning.cc: NVLSTree interBw / 2 for nNodes > 2).
        inter_ar = min(
            (c for c in candidates(inter, "all-reduce") if c.protocol == "simple"), key=lambda c: c.latency_s
        )
        tree = (1 if n_nodes <= 2 else 2) * group_nics(group) / nvls_heads(group)
        inter_algbw = nic_bytes_per_s(group) / tree
        # NCCL's estimate: NVLS intra latency + 2 log2i(N) network steps (tuning.cc NVLSTree)
        sel_lat = (
            nccl(group).hw_latency_s["nvlink"]["nvls_tree"]["simple"]
            + 2 * log2i(n_nodes) * nccl(group).hw_latency_s["net"]["nvls_tree"]["simple"]
        )
        sel_bw = min(_nvls_tree_intra_estimate(one_node), nic_bytes_per_s(group, "nccl") / tree)
        bw = min(switch.algbw_bytes_per_s, inter_algbw)
        latency = switch.latency_s + inter_ar.latency_s
        if not small:  # a message of many pipeline steps first fills the tree (nvls_tree_step_bytes)
            latency += 2 * log2i(n_nodes) * nvls_tree_step_bytes(group) / bw
        return Candidate(
            "hierarchical", "simple", latency, bw, select_latency_s=sel_lat, select_algbw_bytes_per_s=sel_bw
        )
    rs = best_line(candidates(one_node, "reduce-scatter"))
    ag = best_line(candidates(one_node, "all-gather"))
    ar = min((c for c in candidates(inter, "all-reduce")), key=lambda c: c.latency_s)
    # each GPU's slice is 1/g of the message and its NIC share is 1/g of the node's NICs
    per_gpu_nic = nic_bytes_per_s(group) / g
    inter_algbw = protocol_busbw(inter, per_gpu_nic, ar.protocol) / busbw_factor("all-reduce", n_nodes)
    latency = rs.latency_s + ar.latency_s + ag.latency_s
    seconds_per_byte = 1 / rs.algbw_bytes_per_s + 1 / (g * inter_algbw) + 1 / ag.algbw_bytes_per_s
    return Candidate("hierarchical", ar.protocol, latency, 1 / seconds_per_byte)


# --- all-to-all, send/recv, broadcast --------------------------------------------------------


def alltoall(group: Group) -> Candidate:
    """NCCL all-to-all = grouped send/recv to every peer; intra and inter traffic overlap."""
    p, g, n_nodes = group.ranks, group.gpus_per_node, group.nodes
    path = intra(group)
    hop = intra_hop_s(group, path, "ring", "simple", True) if path is not None else 0.0
    latency = (
        base_latency_s(group, "ring", "simple", True)
        + hop
        + (net_hop_s(group, "simple", "p2p", True) if n_nodes > 1 else 0.0)
    )
    seconds_per_byte = 0.0
    if path is not None:  # (g-1)/p of the message goes to peers in the node
        seconds_per_byte = (g - 1) / p / path.busbw_bytes_per_s
    if n_nodes > 1:  # (p-g)/p leaves the node through this GPU's share of the NICs
        seconds_per_byte = max(seconds_per_byte, (p - g) / p / (nic_bytes_per_s(group) / g))
    return Candidate("direct", "simple", latency, 1 / seconds_per_byte)


def sendrecv(group: Group, proto: str) -> Candidate:
    if group.nodes > 1:
        bw, hop = node_nic_bytes_per_s(group.system, nccl(group), 1), net_hop_s(group, proto, "p2p", True)
    else:
        path = ring_path(group.system, max(2, group.gpus_per_node))
        bw, hop = path.busbw_bytes_per_s, intra_hop_s(group, path, "ring", proto, True)
    return Candidate(
        "direct", proto, base_latency_s(group, "ring", proto, True) + hop, protocol_busbw(group, bw, proto)
    )


def broadcast(group: Group, proto: str) -> Candidate:
    line = ring(group, "all-gather", proto)  # same p-1 pipeline hops, one copy of n per link
    k = busbw_factor("all-gather", group.ranks)
    if line.select_latency_s is None:
        return Candidate("ring", proto, line.latency_s, line.algbw_bytes_per_s * k)
    return Candidate(
        "ring",
        proto,
        line.latency_s,
        line.algbw_bytes_per_s * k,
        select_latency_s=line.select_latency_s,
        select_algbw_bytes_per_s=line.select_algbw_bytes_per_s * k,
    )


def ll128_enabled(group: Group) -> bool:
    """NCCL turns LL128 on by default only where it is tested safe (tuning.cc ncclTopoTuneModel):
    every intra-node hop over NVLink (typeIntra <= PATH_NVB) and, across nodes, NICs next to the GPUs
    (typeInter <= PATH_PXB: rail-optimised NICs under the GPU's PCIe switch). PCIe-only boxes and
    shared NICs behind the CPU run LL and Simple only."""
    s = group.system
    if group.gpus_per_node > 1 and ring_path(s, group.gpus_per_node).nccl_link != "nvlink":
        return False
    if group.nodes > 1 and s.nic_path == "p2c":
        # a NIC behind the Grace CPU: PATH_PHB up to 2.26 (no P2C type; LL128 needs <= PXN), PATH_P2C
        # from 2.27, which NCCL_LL128_C2C (default 1) admits (tuning.cc v2.26.2 / v2.27.3)
        return nccl(group).version >= LL128_C2C_FROM
    return group.nodes == 1 or s.rail_optimized


def protocols(group: Group) -> tuple[str, ...]:
    return PROTOCOLS if ll128_enabled(group) else tuple(p for p in PROTOCOLS if p != "ll128")
