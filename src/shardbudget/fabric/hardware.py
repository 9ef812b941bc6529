"""What the hardware catalog holds: GPU generations, fabrics (links), GPUs, CPUs and systems (nodes),
as frozen dataclasses of SI floats, and the `Catalog` that looks them up by name (in any case).

`fabric.catalog` reads them from the TOML files, where every number has its unit written out and a
`source`. See `units` for the glossary (per-direction vs bidirectional, Gbit vs GB).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ..datafile import find, key
from ..errors import RenamedName, UnknownNameError
from .nccl_constants import EngineKernels, NcclConstants

PROTOCOLS = ("ll", "ll128", "simple")
FABRIC_KINDS = ("nvlink", "nvswitch", "nvl72", "pcie", "infiniband", "roce", "efa", "ethernet", "xgmi", "tcp")
NCCL_LINKS = ("nvlink", "pci", "net")  # the rows of NCCL's hwLat table (src/graph/tuning.cc)
FIGURES = ("peak", "measured", "achievable")
TOPOLOGIES = ("switch", "pairs", "pcie", "mesh", "single")
VENDORS = ("nvidia", "amd")
CPU_VENDORS = ("intel", "amd", "arm", "ibm")
P2P_LEVELS = ("auto", "loc", "nvl", "pix", "pxb", "phb", "sys")
NIC_PATHS = ("pix", "pxb", "p2c", "phb", "sys")
"""NCCL's path types from a GPU to its nearest NIC, nearest first (src/include/graph.h PATH_PIX ..
PATH_SYS): one PCIe switch, several switches, the CPU reached over C2C then PCIe (Grace), the CPU's
root complex, across sockets. GPUDirect RDMA is on or off by this distance (comm/net_path.py)."""
RDMA_NIC_KINDS = ("infiniband", "roce", "efa")
"""NIC fabrics NCCL drives through its IB / libfabric plugins, which can DMA GPU memory; a socket
(TCP) transport always stages through host memory, which its measured figures already hold."""
"""NCCL_P2P_LEVEL values (src/graph/paths.cc): P2P is used up to this PCIe distance. "auto" is NCCL's
default: PXB (through PCIe switches, never through a CPU host bridge), or SYS on AMD CPUs when the
communicator has at most 2 GPUs on the node."""


@dataclass(frozen=True, kw_only=True, eq=False)
class NcclSymmetric:
    """NCCL's model of its symmetric-memory all-reduce kernels on one generation (symmetric.cc
    queryModel at v2.27.3, sym_kernels.cc queryModel_lsa at v2.30.7: one row for cudaArch < 1000 and
    one for Blackwell), in NCCL's own units, and the measured small-message floor its latencies are
    scaled onto (comm/nccl_symmetric.py)."""

    sm_bw_gibps: float = key("sm_bw_gibps", "number")
    """smBw: what one block moves, GiB/s."""
    peak_gibps: float = key("peak_gibps", "number")
    """peakBw of the load/store kernels, GiB/s."""
    multimem_peak_gibps: float = key("multimem_peak_gibps", "number")
    """peakBw of the multimem (NVLS) kernels, GiB/s."""
    multimem_blocks: int = key("multimem_blocks", "integer")
    """nMaxBlocksNvls before the division by the ranks."""
    ll_base_latency_us: float = key("ll_base_latency_us", "number")
    base_latency_us: float = key("base_latency_us", "number")
    """baseLat of the LL kernels and of the others, microseconds."""
    floor_s: float = key("floor", "seconds")
    """The measured time of the LL kernel at 8 B on 8 GPUs, seconds."""
    source: str = key("source")


@dataclass(frozen=True, kw_only=True, eq=False)  # identity: catalog entries are hashed in caches
class Arch:
    """One GPU generation (`[archs.<name>]` of catalog/archs.toml): what the model needs to know about
    it that no single GPU entry says, each fact with its source (`sources`). A GPU of a generation the
    catalog does not describe is refused when the catalog loads."""

    name: str
    description: str = key("description", default="")
    vendor: str = key("vendor", "choice", allowed=VENDORS)
    """nvidia or amd: AMD GPUs run RCCL, which chooses by tables of its own, and ROCm images."""
    capability: str = key("capability", default="")
    """The generation's first CUDA compute capability ("9.0"), for GPU entries that name none; ""
    where there is none (AMD)."""
    fp8_tensor_cores: bool = key("fp8_tensor_cores")
    fp4_tensor_cores: bool = key("fp4_tensor_cores")
    """The tensor cores multiply FP8 / FP4 operands (else weights of that width run as 16-bit)."""
    pcie_gen: int = key("pcie_gen", "integer", maximum=7)
    """The host PCIe generation of its parts, where a GPU entry does not say (`topo`)."""
    nvlink_link_bytes_per_s: float | None = key("nvlink_link_bandwidth", "rate", default=None)
    """One NVLink link's signalling rate per direction, bytes/s; None: no NVLink."""
    nccl_nvlink_link_bytes_per_s: float | None = key("nccl_nvlink_link_bandwidth", "rate", default=None)
    """What NCCL's topology assigns one NVLink link (topo.h SMxx_NVLINK_BW), bytes/s."""
    nvswitch_fabric: str = key("nvswitch_fabric", default="")
    """The catalog fabric of this generation's NVSwitch ("" where the catalog has none)."""
    nvls_channels: int = key("nvls_channels", "integer")
    """NVLS channels per communicator (transport/nvls.cc NVLS_NCHANNELS_SM90 / _SM100), which sets
    how much one NVLSTree pipeline step holds."""
    nccl_symmetric: NcclSymmetric = key("nccl_symmetric", NcclSymmetric)
    sources: Mapping[str, str] = field(default_factory=dict)
    """[fact] -> where it comes from: the table's `<fact>_source` notes."""
    source: str = key("source")

    @property
    def nccl_tables(self) -> bool:
        """NCCL's tables choose its algorithm here; RCCL (AMD) chooses by tables of its own."""
        return self.vendor == "nvidia"


@dataclass(frozen=True, kw_only=True, eq=False)  # identity: catalog entries are hashed in caches
class Fabric:
    """One kind of link between GPUs (or a GPU's NIC), as a GPU sees it."""

    name: str
    kind: str
    """One of FABRIC_KINDS."""
    description: str
    bytes_per_s: float
    """Vendor peak bandwidth per GPU (or per NIC port), **per direction**, bytes/s."""
    achievable_bytes_per_s: float
    """Achievable bus bandwidth per GPU per direction with the Simple protocol, bytes/s (a measured
    nccl-tests busbw where one exists; what the collective model uses for large messages)."""
    hop_latency_s: Mapping[str, float]
    """Per-step latency of a ring/tree hop over this link, per NCCL protocol (ll, ll128, simple), s.
    Defaults to NCCL's hwLat row for `nccl_link` where the catalog gives none."""
    nccl_link: str
    """Which NCCL link class its hops belong to: nvlink, pci or net."""
    in_switch_reduction: bool = False
    """NVLink SHARP (NVLS): the switch reduces, so all-reduce moves each byte once each way."""
    p2p: bool = True
    """GPUs can load/store each other's memory over it (what one-/two-shot custom kernels need)."""
    nvls_efficiency: float | None = None
    """Share of the link rate NVLS reaches (None: catalog/nccl.toml's calibrated table)."""
    links_per_gpu: int = 1
    per_link_bytes_per_s: float | None = None
    """Per-link, per-direction rate for multi-link fabrics (NVLink), bytes/s."""
    figure: str = "peak"
    """Whether `bytes_per_s` is a vendor peak or a measured figure."""
    source: str
    achievable_source: str = ""
    latency_source: str = ""
    achievable_gpus: int | None = None
    """GPUs of the ring `achievable_bytes_per_s` was measured on, where it is a ring figure: smaller
    rings reach nccl.calibrated.ring_efficiency of it. None: the figure holds for every group."""
    nccl_bytes_per_s: float = 0.0
    """What NCCL's topology assigns this link per GPU per direction (topo.h: SM90_NVLINK_BW x links,
    PCIe width x speed / 80, ...), bytes/s: NCCL chooses algorithms by it. The loader defaults it to
    the achievable figure."""
    host_staged: str = ""
    """The `[host_staged.<name>]` row `achievable_bytes_per_s` is (an SHM fabric: one hop inside one
    socket of a healthy host), "" where the fabric states its own figure."""


@dataclass(frozen=True, kw_only=True, eq=False)  # identity: catalog entries are hashed in caches
class GPU:
    name: str
    description: str
    arch: str
    """The generation's name, a key of `Catalog.archs`."""
    generation: Arch
    """The generation's facts (`[archs.<arch>]`)."""
    memory_bytes: float
    """Device memory, bytes (GB = 1e9 as datasheets state, GiB where the vendor means GiB)."""
    mem_bytes_per_s: float
    """Peak HBM / GDDR bandwidth, bytes/s."""
    bf16_flops_per_s: float
    """Dense (no sparsity) BF16 tensor-core peak, FLOP/s."""
    fp8_flops_per_s: float
    """Dense FP8 tensor-core peak, FLOP/s (equal to bf16 where the GPU has no FP8)."""
    fp4_flops_per_s: float = 0.0
    """Dense FP4 (NVFP4 / MXFP4) tensor-core peak, FLOP/s; 0 where the GPU has no FP4 tensor cores."""
    memory_smi: str = ""
    """The line of nvidia-smi (or rocm-smi) output the memory capacity was read from."""
    memory_source: str = ""
    """Where that line was published (URL)."""
    pcie_p2p: bool = True
    """The driver allows peer-to-peer over PCIe (NVML p2pStatus OK). GeForce drivers report it
    unsupported, so NCCL stages every PCIe hop through host memory (SHM)."""
    figure: str = "peak"
    compute_capability: str = ""
    """CUDA compute capability ("9.0", "10.3"): the engines tune their all-reduce tables by it (vLLM's
    SM 10.3 rows for B300 / GB300 differ from SM 10.0's); "" where the catalog does not say."""
    source: str

    @property
    def sm(self) -> str:
        """The compute capability, or the generation's first one where the entry names none."""
        return self.compute_capability or self.generation.capability


@dataclass(frozen=True, kw_only=True, eq=False)  # identity: catalog entries are hashed in caches
class CPU:
    """The host platform of a node: CPU vendor (NCCL's rules depend on it) and the two shared paths
    GPU traffic takes through it when it cannot go GPU to GPU: each socket's root complex to host
    memory, and the link between sockets. Every rate is per direction."""

    name: str
    description: str
    vendor: str
    """One of CPU_VENDORS: NCCL's P2P default, LL bandwidth caps and network overhead depend on it."""
    socket_link_bytes_per_s: float
    """GPU traffic crossing from one socket to the other, all flows together, bytes/s."""
    socket_stream_bytes_per_s: float
    """The most one host-staged stream (one ring hop through host memory) carries across the socket
    link, bytes/s (equal to the link where nothing smaller is measured)."""
    nccl_socket_link_bytes_per_s: float
    """What NCCL's own topology assumes for the socket link (topo.h *_QPI_BW / AMD_BW), bytes/s: NCCL
    uses it to choose between transports."""
    host_bytes_per_s: float
    """GPU DMA through one socket's root complex to host memory or to another root port, all GPUs
    of that socket together, bytes/s. A P2P hop through the host bridge passes it once, a host-staged
    (SHM) hop twice: written into host memory, read back out."""
    socket_latency_s: float
    """Extra per-hop latency of a hop that crosses the socket link, seconds."""
    net_overhead_s: float
    """NCCL's per-step network post overhead on this CPU (tuning.cc getNetOverhead), seconds."""
    source: str
    degraded: str = ""
    """Why this platform profile is degraded (a BIOS setting, a container, ...) and the measurement it
    rests on; "" for a healthy one. A degraded profile's name says so (the loader holds it)."""


DEGRADED_WORDS = "is a degraded profile, not a reference"
"""What a header says of a degraded system (step.scenario.degraded_note; the views find the note by it
to put it in their header)."""


HOST_ATTACH = ("root-ports", "switches", "not-stated")
"""How the GPUs of a host-staged ring hang off their CPU: each on its own CPU root port, or under
PCIe switches (whose uplinks the staged copies cross)."""
NUMA_MODES = ("nps1", "nps2", "nps4", "one-node", "not-stated")
"""The host's NUMA mode where the source states it: AMD EPYC's NUMA nodes per socket (NPS1, the BIOS
default, interleaves every GPU's host-memory traffic across the socket's memory controllers:
NVIDIA/nccl#1285), "one-node" where the ring's GPUs sit on one NUMA node and nothing more is said."""


@dataclass(frozen=True, kw_only=True, eq=False)  # identity: catalog entries are hashed in caches
class HostStaged:
    """One measured (or estimated) host-staged path: an all-reduce ring whose every hop NCCL stages
    through host memory (SHM), on one platform (`[host_staged.<name>]` of catalog/host_staged.toml).
    A ring's bus bandwidth is what each of its hops carries, so `busbw_bytes_per_s` is one SHM hop of
    that platform. The PCIe fabrics and CPU entries that price host-staged hops name the row their
    figure is, so that two generations compare on the same platform."""

    name: str
    description: str = key("description", default="")
    pcie_gen: int = key("pcie_gen", "integer", minimum=1, maximum=7)
    sockets: int = key("sockets", "integer", maximum=8)
    """CPU sockets the ring spans: 1 (every hop inside one socket), 2 (it crosses the socket link)."""
    numa: str = key("numa", "choice", allowed=NUMA_MODES)
    attach: str = key("attach", "choice", allowed=HOST_ATTACH)
    cpu: str = key("cpu")
    """The host's CPUs as the source names them (text: the platform, not a catalog entry)."""
    gpus: int = key("gpus", "integer", maximum=72)
    """GPUs of the measured ring."""
    environment: str = key("environment", "choice", allowed=("bare-metal", "container", "vm", "not-stated"))
    busbw_bytes_per_s: float = key("busbw", "rate")
    """The ring's all-reduce bus bandwidth (nccl-tests' busbw), per direction, bytes/s."""
    measured: bool = key("measured")
    """A figure read from the source (true), or an estimate derived from other rows (false: `basis`)."""
    degraded: str = key("degraded", default="")
    """Why this platform is slow where it is ("" for a healthy one): never a reference."""
    source: str = key("source")


@dataclass(frozen=True, kw_only=True, eq=False)  # identity: catalog entries are hashed in caches
class PcieTree:
    """How the GPUs of a node hang off its CPUs: `sockets` CPUs with gpus_per_node / sockets GPUs each,
    filled in index order; `gpus_per_switch` GPUs share one PCIe switch (1: every GPU on its own CPU
    root port). P2P between GPUs under one switch (PIX) uses the system's PCIe fabric (`intra_fabric`
    of a pcie system, `fallback_fabric` between NVLink pairs); the fabrics here are the other
    transports NCCL can pick between two GPUs."""

    sockets: int
    gpus_per_switch: int
    host_bridge: Fabric
    """P2P routed through a CPU root complex (PHB; SYS where the P2P level allows it)."""
    shm: Fabric
    """NCCL's SHM transport: the sender writes into host memory, the receiver reads it back."""
    switch_uplink: Fabric | None
    """A switch's link to its CPU root port, shared by its GPUs' traffic to the CPU (None: no switch)."""
    nics_per_switch: int
    """NICs under each GPU switch (NCCL routes GPU-to-GPU traffic over them when that is faster)."""
    p2p_level: str
    """One of P2P_LEVELS (NCCL_P2P_LEVEL)."""
    gpu_p2p: bool | None = None
    """Overrides the GPU's driver P2P support (a patched driver, or a VM that hides it); None: the GPU's."""
    legacy: bool = False
    """Derived from an entry without [pcie]: no CPU model; `cross_socket` is every socket crossing."""
    cross_socket: Fabric | None = None
    source: str = ""


@dataclass(frozen=True, kw_only=True, eq=False)  # identity: catalog entries are hashed in caches
class System:
    """One node type: its GPUs, how they are wired inside the node, and its scale-out network."""

    name: str
    description: str
    gpu: GPU
    gpus_per_node: int
    topology: str
    """switch: every GPU one hop from every other through a switch (NVSwitch, NVL72);
    pairs: NVLink-bridged pairs, everything else over `fallback_fabric` (PCIe);
    pcie: a PCIe tree, `gpus_per_socket` per CPU socket, crossing sockets over `fallback_fabric`;
    mesh: point-to-point links between every pair (AMD xGMI); single: one GPU."""
    intra_fabric: Fabric
    fallback_fabric: Fabric | None
    """Second intra-node path: PCIe between NVLink-bridged pairs."""
    socket_fabric: Fabric | None
    """The path between GPUs on different CPU sockets (None: same as inside a socket)."""
    gpus_per_socket: int
    nic_fabric: Fabric | None
    nics_per_node: int
    rail_optimized: bool
    """Each GPU has its own NIC on its own rail: inter-node rings/trees use all NICs in parallel."""
    nic_path: str = "pxb"
    """One of NIC_PATHS: how far a GPU is from its NIC, as NCCL's topology types it; GPUDirect RDMA
    is used only up to NCCL_NET_GDR_LEVEL (comm/net_path.py)."""
    domain_gpus: int
    """GPUs reachable over `intra_fabric` without the NICs: 8 for HGX, 72 for NVL72."""
    source: str
    base_latency_s: float | None = None
    """Replaces NCCL's per-call base latency when set: 0 gives an idealised link (textbook model)."""
    base_latency_scale: float = 1.0
    """Multiplies NCCL's base latencies (a fitted profile's measure of its software stack)."""
    profile_source: str = ""
    """For fitted profiles: the measurements the constants came from."""
    cpu: CPU | None = None
    """The host platform (None: a legacy entry whose socket crossing is `socket_fabric` alone)."""
    pcie: PcieTree | None = None
    """The PCIe tree; the loader derives one from the legacy fields where the entry has none."""
    gpus_per_host: int | None = None
    """GPUs one host (one OS, one process launcher) holds when a node is larger than a host: an NVL72
    rack is one NVLink node of 18 compute trays, each a host of 4 GPUs. None: the whole node."""
    degraded: str = ""
    """Why this node profile is degraded and where it was measured ("" for a healthy one): kept so that
    the rows measured on it are priced on it, never a reference. Its name says so (the loader holds
    it), so every view that prints the name prints the word."""

    @property
    def host_gpus(self) -> int:
        """GPUs of one host: the kernels that need a shared host (vLLM's custom all-reduce checks
        `in_the_same_node_as`) stop here."""
        return self.gpus_per_host or self.gpus_per_node

    @property
    def nic_bytes_per_s(self) -> float:
        return self.nic_fabric.achievable_bytes_per_s if self.nic_fabric else 0.0


@dataclass(frozen=True, kw_only=True)
class GpuPower:
    """`[gpu_power.<gpu>]` of catalog/prices.toml: what one board draws under load."""

    load_watts: float = key("load_watts", "number")
    """Board power under load, W: the datasheet's TDP (max power)."""
    date: str = key("date")
    source: str = key("source")


@dataclass(frozen=True, kw_only=True)
class SystemCost:
    """`[system_costs.<system>]`: the price of one of its GPUs by the hour, and the power of the
    node's own GPU switches; either may be absent (None: not known)."""

    usd_per_gpu_hour: float | None = key("usd_per_gpu_hour", "number", default=None)
    """US dollars for one GPU of the system for one hour, on demand (the node around it included)."""
    switch_watts_per_node: float | None = key("switch_watts_per_node", "number", default=None)
    """The node's GPU switches (NVLink switch trays), W, counted once per node held."""
    date: str = key("date")
    source: str = key("source")


@dataclass(frozen=True, kw_only=True)
class NicPower:
    """`[nic_power.<fabric>]`: one scale-out link of that fabric, NIC side and switch side."""

    watts_per_nic: float = key("watts_per_nic", "number")
    date: str = key("date")
    source: str = key("source")


@dataclass(frozen=True, eq=False)  # identity hash: a loaded catalog is a cache key
class Catalog:
    fabrics: Mapping[str, Fabric]
    gpus: Mapping[str, GPU]
    systems: Mapping[str, System]
    nccl: NcclConstants
    sources: tuple[str, ...] = ()
    cpus: Mapping[str, CPU] = field(default_factory=dict)
    engines: Mapping[str, EngineKernels] = field(default_factory=dict)
    archs: Mapping[str, Arch] = field(default_factory=dict)
    host_staged: Mapping[str, HostStaged] = field(default_factory=dict)
    renamed: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """section -> old name -> new name: names renamed within a release, still taken with a warning
    (`[renamed.<section>]` of the catalog files)."""
    gpu_power: Mapping[str, GpuPower] = field(default_factory=dict)
    system_costs: Mapping[str, SystemCost] = field(default_factory=dict)
    nic_power: Mapping[str, NicPower] = field(default_factory=dict)

    def arch(self, name: str) -> Arch:
        return lookup("GPU generation", name, self.archs)

    def cpu(self, name: str) -> CPU:
        return lookup("CPU", current_name(name, self.cpus, self.renamed.get("cpus", {}), "CPU"), self.cpus)

    def fabric(self, name: str) -> Fabric:
        return lookup("fabric", name, self.fabrics)

    def gpu(self, name: str) -> GPU:
        return lookup("GPU", name, self.gpus)

    def system(self, name: str) -> System:
        return lookup(
            "system", current_name(name, self.systems, self.renamed.get("systems", {}), "system"), self.systems
        )


def current_name(name: str, table: Mapping[str, Any], renamed: Mapping[str, str], kind: str) -> str:
    """`name`, or the name it was renamed to where the table has no entry of that name, with a
    `RenamedName` warning that says why when the new entry is degraded (the old name goes in the next
    release)."""
    if not renamed or find(name, table) is not None:
        return name
    old = find(name, renamed)
    if old is None:
        return name
    new = renamed[old]
    why = getattr(table.get(new), "degraded", "")
    warnings.warn(
        f"{kind} {old!r} is now {new!r}"
        + (f", a degraded profile: {why}" if why else "")
        + f"; the name {old!r} goes in the next release",
        RenamedName,
        stacklevel=3,
    )
    return new


def lookup(kind: str, name: str, table: Mapping[str, Any], where: str = ""):
    """The entry `name` names, in any case ('HGX-H100' is hgx-h100: a catalog holds no two names that
    differ in case alone), or a one-line error with the closest names."""
    found = find(name, table)
    if found is not None:
        return table[found]
    err = UnknownNameError(kind, name, table.keys())
    if where:  # a catalog entry naming another: say which entry and field
        err.args = (f"{where}: {err.args[0]}",)
    raise err


def to_dict(obj: Any) -> dict:
    return asdict(obj)  # a catalog entry as plain JSON-ready data, nested entries included
