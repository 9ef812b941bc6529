"""The rules that map every row of data/nccl_tests.csv onto a catalog system, or drop it with the reason.

Each group of rows has one `Rule` in `RULES`: *kept* (a catalog system, a node and GPU count, the
algorithm to force where the run forced one) or *dropped* with the reason written next to it; a row
no rule matches is an error (`nccl_tests.load_rows`). Rows whose scale-out network is not their
system's default NIC are priced with a user-catalog variant built here (`VARIANTS`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..fabric.catalog import load_catalog
from ..fabric.hardware import Catalog

MiB = 1 << 20


# --- user-catalog variants for rows whose network is not the system's default NIC -------------

VARIANTS: dict[str, str] = {
    # schmaustech/nvidia-tools-image run 1: 2 nodes x 1 L40S, NCCL_IB_DISABLE=1 -> NCCL's socket
    # transport over one Ethernet interface. The catalog's tcp-100 fabric describes that transport.
    "l40s-pcie-nps1-degraded-tcp": """
[systems.l40s-pcie-nps1-degraded-tcp]
description = "l40s-pcie-nps1-degraded nodes joined by NCCL's TCP socket transport over one 100 GbE interface"
gpu = "l40s"
gpus_per_node = 8
topology = "pcie"
intra_fabric = "pcie4"
socket_fabric = "pcie4-cross-socket"
gpus_per_socket = 4
nic_fabric = "tcp-100"
nics_per_node = 1
rail_optimized = false
source = "nccl_tests.csv: schmaustech/nvidia-tools-image run 1 (NCCL_IB_DISABLE=1, one SR-IOV interface)"
""",
    # NVIDIA/nccl#652: 32 nodes x 8 A100 with "InfiniBand HDR, 4 HCAs per node (total of 100 GB/s)",
    # half the HDR NICs of the catalog's HGX A100 (8); two GPUs share each NIC.
    "hgx-a100-4hdr": """
[systems.hgx-a100-4hdr]
description = "HGX A100 8-GPU with 4x HDR 200 Gb/s per node (NVIDIA/nccl#652)"
gpu = "a100-sxm"
gpus_per_node = 8
topology = "switch"
intra_fabric = "nvswitch-gen2"
gpus_per_socket = 4
nic_fabric = "ib-hdr"
nics_per_node = 4
rail_optimized = true
source = "https://github.com/NVIDIA/nccl/issues/652 (4 HCAs per node, 'total of 100 GB/s bandwidth')"
""",
    # stas00 p5en.48xlarge runs: AWS EFA v3, 16 x 200 Gb/s = 3200 Gb/s per node (AWS's p5en spec);
    # the catalog's efa fabric is the 100 Gb/s interface of p5, so a 200 Gb/s one is declared here
    # with the same latency and the same 88% of line rate.
    "hgx-h200-efa": """
[fabrics.efa-v3-200]
kind = "efa"
description = "AWS EFA v3 interface, 200 Gb/s (p5en: 16 per node), SRD transport"
nccl_link = "net"
bandwidth = "200 Gb/s"
achievable_bandwidth = "22 GB/s"
achievable_source = "as the catalog's efa fabric: 88% of line rate"
hop_latency = { ll = "8.0 us", ll128 = "10.0 us", simple = "20.0 us" }
latency_source = "as the catalog's efa fabric"
source = "https://aws.amazon.com/ec2/instance-types/p5/ (p5en: 3200 Gbps EFAv3)"

[systems.hgx-h200-efa]
description = "AWS p5en.48xlarge: HGX H200 8-GPU, 16x 200 Gb/s EFA v3"
gpu = "h200"
gpus_per_node = 8
topology = "switch"
intra_fabric = "nvswitch-gen3"
gpus_per_socket = 4
nic_fabric = "efa-v3-200"
nics_per_node = 16
rail_optimized = true
source = "https://aws.amazon.com/ec2/instance-types/p5/"
""",
}


@lru_cache(maxsize=None)
def variant_file(name: str) -> str:
    """A user-catalog file holding the named variant (written once per process)."""
    directory = Path(tempfile.mkdtemp(prefix="shardbudget-variants-"))
    path = directory / f"{name}.toml"
    path.write_text(VARIANTS[name], encoding="utf-8")
    return str(path)


def variant_catalog(name: str | None, extra: Sequence[str] = ()) -> Catalog:
    """The built-in catalog plus `extra` user files, plus the named variant when a row needs one."""
    return load_catalog([*extra, *([variant_file(name)] if name else [])])


# --- the rules: every group of rows in nccl_tests.csv, kept or dropped, and why ----------------


@dataclass(frozen=True)
class Rule:
    source_id: str
    """Short name of the source (one validation test each)."""
    source: str
    """Substring of the CSV's `source` column."""
    hardware: str = ""
    """Substring of `hardware` (where one source has several machines)."""
    note: str = ""
    """Substring of `algo_or_note` (where one source has several runs)."""
    gpus: int | None = None
    """Only rows with this n_gpus (where a run table lists several GPU counts)."""
    system: str | None = None
    nodes: int | None = None
    """Our node count when it is not the CSV's n_nodes (an NVL72 rack is one of our nodes)."""
    algo: str = "auto"
    variant: str | None = None
    note_kept: str = ""
    """Anything about the mapping a reader should know (assumed network, SHARP not modelled...)."""
    drop: str = ""
    """Reason the rows are not compared; empty for kept rows."""
    drop_below_bytes: float = 0.0
    """Drop the rows below this size (CUDA-graph timings), with `drop_small_reason`."""
    drop_small_reason: str = ""

    def matches(self, r: dict) -> bool:
        return (
            self.source in r["source"]
            and self.hardware in r["hardware"]
            and self.note in r["algo_or_note"]
            and (self.gpus is None or int(r["n_gpus"]) == self.gpus)
        )


NOT_NCCL_TESTS = "torch-level benchmark: its time includes framework overhead, not one NCCL call"
GRAPH = (
    "timed inside a CUDA graph (-G 1): no host launch, which our latencies include; "
    "kept only at >= 1 MiB where launch is < 1% of the time"
)

STAS00_A100 = (
    "not what the other A100 tables time: `all_reduce_perf -g 8` drives all 8 GPUs from one "
    "thread (nccl-tests' GPUs-per-thread mode: each call is a group of 8 launches from one host "
    "thread), NCCL version not stated; 32 KiB-4 MiB take 44-102 us, 1.7-2.7x measured_comm.csv's "
    "8x A100 (NCCL 2.27.3) at the same sizes, and 32-256 MiB run 15-23% slower than gcm's 8x A100 "
    "(NCCL 2.16.2); kept at >= 512 MiB, where it and gcm's table agree within 2%"
)

RULES: tuple[Rule, ...] = (
    # ---- single node, NVSwitch --------------------------------------------------------------
    Rule(
        "h100-readme-1node",
        "'# Single Node NCCL Test' README",
        system="hgx-h100",
        note_kept="default algorithm (NVLS at these sizes)",
    ),
    Rule("gcm-a100", "facebookresearch/gcm", hardware="8x NVIDIA A100-SXM4-80GB (NCCL 2.16", system="hgx-a100"),
    Rule(
        "gcm-a100",
        "facebookresearch/gcm",
        hardware="2 nodes x 8x NVIDIA A100",
        system="hgx-a100",
        note_kept="inter-node network not stated (FAIR cluster): predicted with the catalog's 8x HDR",
    ),
    Rule(
        "stas00-a100",
        "stas00/ml-engineering",
        hardware="8x A100 (single node",
        system="hgx-a100",
        drop_below_bytes=512 * MiB,
        drop_small_reason=STAS00_A100,
        note_kept="author removed the in-place columns; out-of-place assumed",
    ),
    Rule("stas00-sharp", "section 'SHARP'", hardware="H200", note="torch all_reduce_bench", drop=NOT_NCCL_TESTS),
    Rule(
        "stas00-sharp",
        "section 'SHARP'",
        hardware="H200",
        note="NCCL_NVLS_ENABLE=0",
        system="hgx-h200",
        algo="ring",
        note_kept="NCCL_NVLS_ENABLE=0: predicted with algo=ring",
    ),
    Rule("stas00-sharp", "section 'SHARP'", hardware="H200", note="NCCL_NVLS_ENABLE=1", system="hgx-h200"),
    Rule("stas00-sharp", "section 'SHARP'", hardware="H200", note="default", system="hgx-h200"),
    Rule("stas00-sharp", "section 'SHARP'", hardware="H200", note="-z 1; all-gather", system="hgx-h200"),
    Rule("stas00-sharp", "section 'SHARP'", hardware="H200", note="-z 1; reduce-scatter", system="hgx-h200"),
    Rule(
        "stas00-sharp",
        "section 'SHARP'",
        hardware="B200",
        note="NCCL_NVLS_ENABLE=0",
        system="hgx-b200",
        algo="ring",
        note_kept="NCCL_NVLS_ENABLE=0: predicted with algo=ring",
    ),
    Rule("stas00-sharp", "section 'SHARP'", hardware="B200", note="default", system="hgx-b200"),
    Rule("stas00-h200-2.30", "section 'How the calls are timed'", note="nccl-tests all_reduce_perf", system="hgx-h200"),
    Rule("stas00-h200-2.30", "section 'How the calls are timed'", note="all_reduce_bench.py", drop=NOT_NCCL_TESTS),
    Rule(
        "azure-nd-h200",
        "Azure ND H200 v5",
        system="hgx-h200",
        note_kept="NCCL_MIN_NCHANNELS=32 raises the channel count, not the algorithm (NVLS either way)",
    ),
    Rule(
        "nccl-tests#212",
        "nccl-tests/issues/212",
        drop="a statement of approximate peak bandwidth ('~480', 'about 250'), not a measured row",
    ),
    Rule(
        "nccl#1455",
        "nccl/issues/1455",
        note="NCCL_ALGO=RING",
        system="hgx-h100",
        algo="ring",
        note_kept="NCCL_ALGO=RING; sizes 2-4 GB taken as 4 GiB and busbw 365-370 as 367.5 GB/s "
        "(time is proportional to size there)",
    ),
    Rule(
        "nccl#1455",
        "nccl/issues/1455",
        note="NCCL_ALGO=NVLS",
        gpus=2,
        drop="NCCL_ALGO=NVLS at 2-4 GPUs reports the "
        "ring's busbw (~370 GB/s); which algorithm actually ran is ambiguous",
    ),
    Rule(
        "nccl#1455",
        "nccl/issues/1455",
        note="NCCL_ALGO=NVLS",
        gpus=3,
        drop="NCCL_ALGO=NVLS at 2-4 GPUs reports the "
        "ring's busbw (~370 GB/s); which algorithm actually ran is ambiguous",
    ),
    Rule(
        "nccl#1455",
        "nccl/issues/1455",
        note="NCCL_ALGO=NVLS",
        gpus=4,
        drop="NCCL_ALGO=NVLS at 2-4 GPUs reports the "
        "ring's busbw (~370 GB/s); which algorithm actually ran is ambiguous",
    ),
    Rule(
        "nccl#1455",
        "nccl/issues/1455",
        note="NCCL_ALGO=NVLS",
        system="hgx-h100",
        algo="nvls",
        note_kept="NCCL_ALGO=NVLS: predicted with algo=nvls; reporter-approximate busbw; 2-4 GB taken as 4 GiB",
    ),
    Rule("mscclpp-ndmv4", "microsoft/mscclpp", note="MSCCL++ AllReduce", drop="MSCCL++ kernels, not NCCL"),
    Rule(
        "mscclpp-ndmv4",
        "microsoft/mscclpp",
        note="NCCL AllReduce",
        system="hgx-a100",
        drop_below_bytes=MiB,
        drop_small_reason=GRAPH,
        note_kept="Azure NDm A100 v4 (8x HDR 200 Gb/s per node, the catalog's default); in-place columns",
    ),
    Rule("nccl#1374", "nccl/issues/1374", drop="H800 (NVLink cut to 400 GB/s) is not a catalog system"),
    Rule(
        "nccl-tests#178",
        "nccl-tests/issues/178",
        drop="A100 pairs joined by NVLink without NVSwitch (and a mixed NVLink/PCIe triple) are not a catalog system",
    ),
    # ---- single node, PCIe / xGMI ------------------------------------------------------------
    Rule("nccl-tests#194", "nccl-tests/issues/194", system="h100-pcie"),
    Rule("rccl-mi300x", "AAC8 Kubernetes", system="mi300x"),
    Rule(
        "kalavai-4090",
        "section Benchmark interconnectivity across GPUs, Docker run",
        drop="flagged in the data README: the slow RTX 4090 Docker runs (~2 GB/s: 2.2 GB/s busbw on 2 "
        "GPUs, 1.7 GB/s algbw on 4), half the same host's Kubernetes run",
    ),
    Rule(
        "kalavai-4090",
        "section Benchmark interconnectivity across GPUs, Kubernetes pod",
        system="rtx4090-pcie",
        note_kept="P2P status not stated; consumer 4090s have no P2P, as the catalog's pcie4-no-p2p assumes",
    ),
    Rule(
        "nccl#1530",
        "nccl/issues/1530",
        note="NCCL_ALGO=TREE",
        system="rtx4090-pcie",
        algo="tree",
        note_kept="NCCL_ALGO=TREE: predicted with algo=tree",
    ),
    Rule(
        "nccl#1530",
        "nccl/issues/1530",
        note="NCCL_BUFFSIZE",
        system="rtx4090-pcie",
        note_kept="NCCL_BUFFSIZE changes the staging buffer only; the 8 B row is latency",
    ),
    Rule("nccl#428", "nccl/issues/428", drop="Tesla T4 is not a catalog system"),
    Rule("pytorch#127077", "pytorch/pytorch/issues/127077", drop="A10G (AWS g5) is not a catalog system"),
    Rule(
        "nccl#1639",
        "nccl/issues/1639",
        drop="RTX 5090 is not a catalog system (and a forced NCCL_NTHREADS / NCCL_MIN_NCHANNELS run)",
    ),
    # ---- multi-node ---------------------------------------------------------------------------
    Rule(
        "a3mega",
        "lessizzmore/create-a3mega",
        drop="GCP A3 Mega network (GPUDirect-TCPXO) is not in the "
        "catalog and the file states neither NIC speed nor latency: a variant would be fitted to the "
        "very rows it is judged on",
    ),
    Rule(
        "rccl-mi325x",
        "AAC11 MI325X",
        drop="MI325X is not a catalog system (and NCCL_ALGO=Ring over Broadcom RoCE NICs of unstated speed)",
    ),
    Rule("rccl-mi355x", "AAC14 MI355X", drop="MI355X / Pollara 400 is not a catalog system"),
    Rule(
        "schmaustech-l40s",
        "schmaustech/nvidia-tools-image",
        note="-g 1; NCCL_IB_DISABLE=1",
        system="l40s-pcie-nps1-degraded",
        variant="l40s-pcie-nps1-degraded-tcp",
        note_kept="TCP socket transport (NCCL_IB_DISABLE=1): predicted with variant l40s-pcie-nps1-degraded-tcp (tcp-100)",
    ),
    Rule(
        "schmaustech-l40s",
        "schmaustech/nvidia-tools-image",
        note="-g 2 (2 procs x 2 GPUs)",
        drop="two SR-IOV RDMA virtual functions (mlx5_2, mlx5_8) of unstated speed instead of the "
        "catalog's 4x 200 GbE; no published number to build a variant from",
    ),
    Rule(
        "schmaustech-h200",
        "schmaustech/nvidia-tools-image",
        note="NCCL_ALGO=ring; NCCL_IB_DISABLE=1",
        drop="socket transport over one shared interface of unstated speed (not the catalog's 8x NDR); "
        "no published number to build a variant from",
    ),
    Rule(
        "coreweave-h100-sharp",
        "nccl-test-distributed-h100-64-sharp",
        system="hgx-h100",
        note_kept="InfiniBand NDR as the catalog, with SHARP (CollNet) enabled, which we do not model: "
        "predicted as NCCL without SHARP",
    ),
    Rule(
        "coreweave-gb200",
        "coreweave/nccl-tests",
        hardware="GB200 NVL72",
        note="Single Rack",
        system="gb200-nvl72",
        nodes=1,
        note_kept="one NVL72 rack = one of our nodes (72 GPUs)",
    ),
    Rule(
        "coreweave-gb200",
        "coreweave/nccl-tests",
        hardware="GB200 NVL72",
        note="2 Racks",
        system="gb200-nvl72",
        nodes=2,
        note_kept="2 racks over InfiniBand (catalog: 1x NDR per GPU)",
    ),
    Rule(
        "coreweave-gb200",
        "coreweave/nccl-tests",
        hardware="GB200 NVL72",
        note="20 Racks",
        system="gb200-nvl72",
        nodes=20,
        note_kept="20 racks over InfiniBand (catalog: 1x NDR per GPU)",
    ),
    Rule(
        "dgx-06-07",
        "dgx-06",
        drop="flagged in the data README: the dgx-06/07 2-node H100 run is "
        "erratic at 8 KB-64 MB (misconfigured or contended)",
    ),
    Rule(
        "h100-readme-2node",
        "'# Multiple Nodes NCCL Test' README",
        system="hgx-h100",
        note_kept="8 HCAs per node of unstated speed: predicted with the catalog's 8x NDR 400 Gb/s",
    ),
    Rule(
        "nccl-tests#309",
        "nccl-tests/issues/309",
        system="hgx-h100",
        note_kept="Dell XE9680: 8x CX-7 NDR 400 Gb/s per node as the catalog, NCCL 2.26.2, default algorithm; "
        "the 4-node run is 4 VMs with a topology file",
    ),
    Rule("nccl#1244", "nccl/issues/1244", drop="H20 is not a catalog system (and NCCL_ALGO=NVLSTree)"),
    Rule(
        "nccl#652",
        "nccl/issues/652",
        system="hgx-a100",
        variant="hgx-a100-4hdr",
        note_kept="4 HDR HCAs per node (stated): predicted with variant hgx-a100-4hdr",
    ),
    Rule(
        "nccl-tests#150",
        "nccl-tests/issues/150",
        system="hgx-a100",
        note_kept="A100 80GB, one GPU per node, over HDR: hgx-a100 nodes=2 gpus=2",
    ),
    Rule("nccl#378", "nccl/issues/378", drop="V100 is not a catalog system"),
    Rule(
        "go-fixture-h200",
        "sampleNCCLOutput",
        drop="noisy capture (2 B, 256 KB, 8 MB, 32 MB rows off by "
        "10-25x; marked erratic in the data) and network not stated",
    ),
    Rule(
        "nccl#1031",
        "nccl/issues/1031",
        drop="a reporter's summary busbw with no message size, from a thread about underperforming RoCE",
    ),
    Rule("nccl-tests#153", "nccl-tests/issues/153", drop="H800 with 8x 100 Gb/s is not a catalog system"),
    Rule("nccl#1250", "nccl/issues/1250", drop="torch.distributed call timed on the host, one iteration"),
    Rule(
        "dgx-spark",
        "Dual-DGX-Sparks",
        drop="DGX Spark (GB10) is not a catalog system; flagged in the data README (too few channels)",
    ),
    Rule("stas00-b200-4node", "section 'all_reduce benchmark'", drop=NOT_NCCL_TESTS),
    Rule("stas00-b200", "section 'Inter-node speed depends on intra-node speed'", drop=NOT_NCCL_TESTS),
    Rule("stas00-h200-torch", "section 'Real network throughput' (same table", drop=NOT_NCCL_TESTS),
    Rule(
        "stas00-p5en",
        "Understanding why inter-node network",
        note="nvlstree",
        drop="NCCL_ALGO=allreduce:nvlstree forces NVLSTree, an algorithm we do not model",
    ),
    Rule(
        "stas00-p5en",
        "Understanding why inter-node network",
        note="allreduce:ring",
        system="hgx-h200",
        variant="hgx-h200-efa",
        algo="ring",
        note_kept="AWS p5en EFA (16x 200 Gb/s): variant hgx-h200-efa; NCCL_ALGO=allreduce:ring -> algo=ring",
    ),
    Rule(
        "stas00-p5en",
        "Understanding why inter-node network",
        note="tuner picks Ring",
        system="hgx-h200",
        variant="hgx-h200-efa",
        algo="ring",
        note_kept="AWS p5en EFA (16x 200 Gb/s): variant hgx-h200-efa; the row states the tuner ran Ring, so algo=ring",
    ),
)
