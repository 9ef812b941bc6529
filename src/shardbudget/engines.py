"""The inference engines' custom all-reduce kernels: one-shot and two-shot through peer memory.

vLLM (custom_all_reduce), SGLang and TensorRT-LLM ship kernels in which every rank reads its peers'
buffers directly over NVLink or PCIe P2P and reduces locally: one-shot reads all p-1 peers' full
buffers (one barrier), two-shot reduce-scatters then all-gathers through peer memory (two barriers).
`impl="custom"` is the generic kernel of catalog/nccl.toml [nccl.custom]; an engine's name selects
its own kernels and thresholds. An engine runs its kernel whenever the message qualifies (priority
0), NCCL otherwise.
"""

from __future__ import annotations

from .collective_op import busbw_factor
from .lines import Candidate, Group
from .topology import ring_path

IMPLS = ("nccl", "custom")


def custom_allreduce_allowed(group: Group, impl: str = "custom") -> str | None:
    """Why the engines' custom one-/two-shot kernels cannot run here, or None if they can."""
    custom = group.catalog.nccl.custom
    if group.nodes > 1 and (group.system.intra_fabric.kind != "nvl72"
                            or group.nodes * group.system.gpus_per_node > group.system.domain_gpus):
        return "custom all-reduce kernels work inside one NVLink/P2P domain only, not across nodes"
    path = ring_path(group.system, group.gpus_per_node)
    if not path.p2p:
        return f"custom all-reduce needs GPU peer-to-peer access, which {path.name} does not give"
    if group.system.topology in ("pcie", "pairs") and group.gpus_per_node > 2:
        return "custom all-reduce over PCIe is limited to 2 GPUs (vLLM disables it beyond)"
    if group.gpus_per_node not in custom.world_sizes:
        sizes = ", ".join(str(w) for w in custom.world_sizes)
        return f"custom all-reduce supports {sizes} GPUs, not {group.gpus_per_node}"
    return None


def custom_candidates(group: Group, impl: str) -> list[Candidate]:
    """The kernels `impl` runs for an all-reduce on `group` (none where they cannot run)."""
    return [c for c in (_custom(group, 1), _custom(group, 2)) if c is not None]


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
        return Candidate("one-shot", "ll", latency, algbw, custom.one_shot_max_bytes if p > 2 else custom.max_bytes,
                         priority=0)
    # two-shot: reduce-scatter then all-gather through peer memory, 2(p-1)/p of n each way
    algbw = path.busbw_bytes_per_s / busbw_factor("all-reduce", p)
    return Candidate("two-shot", "ll", latency, algbw, custom.max_bytes, priority=0)
