"""The inference engines' custom all-reduce kernels: one-shot and two-shot through peer memory.

vLLM (custom_all_reduce), SGLang and TensorRT-LLM ship kernels in which every rank reads its peers'
buffers directly over NVLink or PCIe P2P and reduces locally: one-shot reads all p-1 peers' full
buffers (one barrier), two-shot reduce-scatters then all-gathers through peer memory (two barriers).
`impl="custom"` is the generic kernel of catalog/nccl.toml [nccl.custom]; an engine's name selects
its own kernels and thresholds. An engine runs its kernel whenever the message qualifies (priority
0), NCCL otherwise.
"""

from __future__ import annotations

from ..defaults import DEFAULT_ENGINE
from .op import busbw_factor
from .lines import Candidate, Group
from ..fabric.nccl_constants import EngineKernels
from .nccl_algos import intra_hop_s, nvls
from ..fabric.ring_path import ring_path

ENGINES = ("vllm", "sglang", "trtllm", "trtllm-1.0", "vllm-0.19", "sglang-0.5.14")
IMPLS = ("nccl", "custom") + ENGINES
"""nccl: NCCL alone; custom: the generic kernel ([nccl.custom]); an engine: its own kernels and rules
(catalog/custom_allreduce.toml), NCCL above them; an older release (trtllm-1.0): its engine's kernels
under its own limits (`engine_kernels`)."""


def engine_kernels(catalog, impl: str) -> EngineKernels | None:
    """The kernels `impl` runs, with its limits: an engine's own catalog entry, or for an older release
    (`KERNEL_OF`) its engine's kernels and costs under the release's limits ([engines.X.releases])."""
    e = catalog.engines.get(KERNEL_OF.get(impl, impl))
    return e.for_release(impl) if e is not None and impl in e.releases else e


def custom_allreduce_allowed(group: Group, impl: str = "custom") -> str | None:
    """Why the engines' custom one-/two-shot kernels cannot run here, or None if they can."""
    e = engine_kernels(group.catalog, impl)
    if e is not None:
        return _engine_allowed(group, e)
    custom = group.catalog.nccl.custom
    if group.nodes > 1:
        return "custom all-reduce kernels work inside one NVLink/P2P domain only, not across nodes"
    if group.hosts > 1:
        return _host_words(group, "custom all-reduce kernels")
    path = ring_path(group.system, group.gpus_per_node)
    if not path.p2p:
        return f"custom all-reduce needs GPU peer-to-peer access, which {path.name} does not give"
    if group.system.topology in ("pcie", "pairs") and group.gpus_per_node > 2:
        return "custom all-reduce over PCIe is limited to 2 GPUs (vLLM disables it beyond)"
    if group.gpus_per_node not in custom.world_sizes:
        sizes = ", ".join(str(w) for w in custom.world_sizes)
        return f"custom all-reduce supports {sizes} GPUs, not {group.gpus_per_node}"
    return None


def _host_words(group: Group, what: str) -> str:
    s = group.system
    return (
        f"{what} need every rank on one host ({s.host_gpus} GPUs of {s.name}: vLLM's "
        f"in_the_same_node_as); {group.gpus_per_node} GPUs span {group.hosts} hosts"
    )


def mnnvl(group: Group, e: EngineKernels) -> bool:
    """The engine's multi-node NVLink kernel runs here: ranks on several hosts of one NVLink domain
    with Grace (aarch64) hosts, as TensorRT-LLM's MNNVLAllReduce.is_mnnvl requires."""
    s = group.system
    return (
        bool(e.mnnvl_max_bytes)
        and group.nodes == 1
        and group.hosts > 1
        and s.cpu is not None
        and s.cpu.vendor == "arm"
        and ring_path(s, group.gpus_per_node).nccl_link == "nvlink"
    )


def custom_candidates(group: Group, impl: str) -> list[Candidate]:
    """The kernels `impl` runs for an all-reduce on `group` (none where they cannot run)."""
    e = engine_kernels(group.catalog, impl)
    if e is not None:
        return _engine_kernels(group, e)
    return [c for c in (_custom(group, 1), _custom(group, 2)) if c is not None]


def _engine_allowed(group: Group, e: EngineKernels) -> str | None:
    s, g = group.system, group.gpus_per_node
    if group.nodes > 1:
        return f"{e.name}'s custom all-reduce works inside one NVLink domain only, not across nodes"
    if group.hosts > 1:
        if mnnvl(group, e):
            return None
        return (
            _host_words(group, f"{e.name}'s custom all-reduce kernels")
            if e.single_host
            else (f"{e.name}'s all-reduce kernels reach other hosts only over multi-node NVLink with Grace hosts")
        )
    if g not in e.world_sizes:
        return f"{e.name}'s custom all-reduce supports {', '.join(map(str, e.world_sizes))} GPUs, not {g}"
    path = ring_path(s, g)
    if not path.p2p:
        return f"{e.name}'s custom all-reduce needs GPU peer-to-peer access, which {path.name} does not give"
    if path.nccl_link != "nvlink" and g > e.pcie_max_gpus:
        return (
            f"{e.name} runs its custom all-reduce on at most {e.pcie_max_gpus} PCIe-only GPUs"
            if e.pcie_max_gpus
            else f"{e.name}'s custom all-reduce needs NVLink"
        )
    return None


def read_class(system, gpus: int) -> str:
    """Whose rate a one-shot's reads of its peers run at (the key of one_shot_efficiency_by_arch):
    through an NVSwitch the GPU generation's kernel (0.72 of the ring's busbw on 2 H100s: 269 GB/s,
    measured_comm.csv vLLM 0.19.0, 12.4 us at 2 MiB, 20.2 us at 4 MiB), over one point-to-point link
    ("link": PCIe P2P, or the one NVLink bridge or xGMI link between two GPUs) the link's rate,
    whatever the generation, since every generation's kernel reads faster than such a link carries:
    L40S's rows, 0.93 of the ring's busbw, stand for every such pair. The generation's NVSwitch
    share had priced 2 RTX PRO 6000s on PCIe 5 at B200's 0.24 (12 GB/s of 48) and two bridged
    H100 PCIe at 83 GB/s of the bridge's 116."""
    path = ring_path(system, gpus)
    return "link" if path.nccl_link == "pci" or (gpus == 2 and system.topology != "switch") else system.gpu.arch


def _kernel_lines(group: Group, e: EngineKernels) -> tuple[float, float, float]:
    """(latency, one-shot algbw, two-shot algbw) of the engine's kernels on `group`: launch and a
    2-GPU barrier, then one more flag per further peer; one-shot reads the p-1 peers' whole
    buffers, two-shot moves 2(p-1)/p of n each way."""
    g, arch, mn = group.gpus_per_node, group.system.gpu.arch, mnnvl(group, e)
    busbw = ring_path(group.system, g).busbw_bytes_per_s
    latency = e.latency_for(arch, g, mn)
    cls = read_class(group.system, g)
    # an engine that never measured a link-bound pair (TensorRT-LLM: no PCIe) keeps its generation's
    cls = cls if str(g) in e.one_shot_efficiency_by_arch.get(cls, {}) else arch
    one_bw = e.efficiency(1, g, cls, mnnvl=mn) * busbw / (g - 1)
    if g == 2 and e.two_shot_pair_extra_s is not None and not mn:
        # two ranks: the two-shot's reduce-scatter reads n/2 from the one peer and its all-gather
        # writes n/2 back, the one-shot's n over the same link: the one-shot's rate
        return latency, one_bw, one_bw
    return latency, one_bw, e.efficiency(2, g, mnnvl=mn) * busbw / busbw_factor("all-reduce", g)


def _engine_kernels(group: Group, e: EngineKernels) -> list[Candidate]:
    """One-shot below the engine's one-shot limit, two-shot from there to its buffer size (the
    engine's source decides by size, not by time: priority 0 in that window)."""
    if _engine_allowed(group, e) is not None:
        return []
    g, arch = group.gpus_per_node, group.system.gpu.arch
    latency, one_bw, two_bw = _kernel_lines(group, e)
    limit, one_limit = e.limit_bytes(g), min(e.one_shot_limit_bytes(g, arch), e.limit_bytes(g))
    if mnnvl(group, e):
        # across hosts the engine's multi-node NVLink kernels, with their own limits: one-shot while
        # message x GPUs is at most the threshold (`<=`, flashinfer trtllm_mnnvl_ar.py select_strategy;
        # GB300's TRTLLM_MNNVL_oneshot rows end at 128 KiB on 8 GPUs and 64 KiB on 16, 1 MiB each)
        limit = e.mnnvl_max_bytes
        one_limit = min(e.mnnvl_one_shot_group_bytes / g + 1, limit)
    # the sources test `bytes < limit`; messages are whole multiples of 16 bytes, so limit - 1 is exact
    out = [Candidate("one-shot", "ll", latency, one_bw, max_bytes=one_limit - 1, priority=0, impl="custom")]
    if one_limit < limit:
        out.append(
            Candidate(
                "two-shot",
                "ll",
                latency + two_shot_extra_s(group, e),
                two_bw,
                min_bytes=one_limit,
                max_bytes=limit - 1,
                priority=0,
                impl="custom",
            )
        )
    return out


def two_shot_extra_s(group: Group, e: EngineKernels) -> float:
    """What the engine's two-shot adds to its one-shot's fixed cost on `group`. Across an NVL72's
    trays (TensorRT-LLM's MNNVL kernels) without a fitted figure, one more Lamport stage: the
    two-shot (mnnvlAllreduceKernels.cu twoshotAllreduceKernel) scatters each token to its owner,
    which polls its local buffer for the peers' copies (-0.0 sentinels, no barrier), reduces and
    multicasts the sum, which every rank polls again; the one-shot is the first store and poll
    alone. A stage is one store over NVLink and a poll of the receiver's memory, what an NCCL LL
    ring step is (data and flag in one store): the generation's measured NVLink LL step
    (nccl_algos.intra_hop_s), not the single-node two-shot's two barriers (10.4 us on Blackwell)."""
    arch, g = group.system.gpu.arch, group.gpus_per_node
    if mnnvl(group, e) and e.mnnvl_two_shot_extra_s is None:
        return intra_hop_s(group, ring_path(group.system, g), "ring", "ll", True)
    return e.two_shot_extra_for(arch, mnnvl(group, e), g)


def _custom(group: Group, shots: int) -> Candidate | None:
    if custom_allreduce_allowed(group) is not None:
        return None
    custom = group.catalog.nccl.custom
    p = group.gpus_per_node
    path = ring_path(group.system, p)
    # kernel start, one barrier per shot, then one hop over the link (all in seconds)
    latency = custom.launch_s + shots * custom.sync_s + path.hop_latency_s["ll"]
    if shots == 1:
        # one-shot: each rank reads all p-1 peers' full buffers and reduces locally
        algbw = path.busbw_bytes_per_s / (p - 1)
        return Candidate(
            "one-shot",
            "ll",
            latency,
            algbw,
            custom.one_shot_max_bytes if p > 2 else custom.max_bytes,
            priority=0,
            impl="custom",
        )
    # two-shot: reduce-scatter then all-gather through peer memory, 2(p-1)/p of n each way
    algbw = path.busbw_bytes_per_s / busbw_factor("all-reduce", p)
    return Candidate("two-shot", "ll", latency, algbw, custom.max_bytes, priority=0, impl="custom")


# Presets whose custom kernel is another engine's (engines/*.toml): vLLM's kernel in its older and
# eager configurations and in 0.19 (vllm-0.19: the release its costs are fitted on), SGLang's in its 0.4
# release line (the same REDUCE_CASE kernel) and 0.5.14 (CustomAllReduceV2 under 0.5.14's limits), TensorRT-LLM's
# in 1.0 (the same allReduceFusionKernels one-shot / two-shot, under 1.0's token rule).
KERNEL_OF = {
    "eager": "vllm",
    "vllm-v0": "vllm",
    "vllm-0.5": "vllm",
    "vllm-0.6": "vllm",
    "vllm-0.9": "vllm",
    "vllm-0.19": "vllm",
    "sglang-0.4": "sglang",
    "sglang-0.5.14": "sglang",
    "trtllm-1.0": "trtllm",
}


def custom_candidate(group: Group, shots: int, *, engine: str = DEFAULT_ENGINE) -> Candidate | None:
    """The engine's one-shot (shots = 1) or two-shot kernel on `group`, whatever the size (the
    engine preset's rule has already chosen it; engines/allreduce.py): the engine's fitted launch,
    per-peer barrier and efficiency (catalog/custom_allreduce.toml), else the generic kernel of
    [nccl.custom]; None where it cannot run."""
    e = group.catalog.engines.get(KERNEL_OF.get(engine, engine))
    if e is None or _engine_allowed(group, e) is not None:
        return _custom(group, shots)
    latency, one_bw, two_bw = _kernel_lines(group, e)
    if shots == 1:
        return Candidate("one-shot", "ll", latency, one_bw, priority=0, impl="custom")
    return Candidate("two-shot", "ll", latency + two_shot_extra_s(group, e), two_bw, priority=0, impl="custom")


def symm_mem_candidate(group: Group, *, engine: str = DEFAULT_ENGINE, multimem: bool = True) -> Candidate | None:
    """torch symmetric-memory all-reduce as vLLM's SymmMemCommunicator runs it: the input copied into
    the symmetric buffer, the all-reduce there (multimem: NVLS in-switch reduction; else torch's
    two-shot through peer memory), the result copied out. The all-reduce's launch and barrier are
    the engine's one-shot's (torch's kernel signals every peer the same way), and across an NVL72's
    hosts too (fabric handles, pytorch#159319); each copy is one more kernel
    (`symm_mem_copy_us`) and reads and writes n of HBM. None without NVLS (multimem) or P2P."""
    e = group.catalog.engines.get(KERNEL_OF.get(engine, engine))
    full = nvls(group)
    if e is None or group.nodes > 1 or (multimem and full is None):
        return None
    path = ring_path(group.system, group.gpus_per_node)
    if not path.p2p:
        return None
    latency, _, two_bw = _kernel_lines(group, e)
    if multimem:
        algbw, kind = full.algbw_bytes_per_s, "symm-mem"
    else:
        algbw, kind, latency = two_bw, "symm-mem", latency + e.two_shot_extra_for(group.system.gpu.arch)
    copies_s_per_byte = 2 * 2 / group.system.gpu.mem_bytes_per_s  # two copies, each reads and writes n
    return Candidate(
        kind, "ll", latency + 2 * e.symm_mem_copy_s, 1 / (1 / algbw + copies_s_per_byte), priority=0, impl="custom"
    )


def runs_custom_kernel(group: Group, impl: str, msg_bytes: float) -> bool:
    """Whether `impl`'s source runs its own kernel for this all-reduce (group size, P2P, NVLink,
    buffer limit); elsewhere its all-reduce is NCCL."""
    return any(c.accepts(msg_bytes) for c in custom_candidates(group, impl))
