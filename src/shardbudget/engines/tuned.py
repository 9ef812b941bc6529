"""An engine's tuned custom all-reduce: a size rule per CUDA capability and world size, in front of
the engine's older kernel (SGLang 0.5.12 and later: the JIT-compiled CustomAllReduceV2).

SGLang 0.5.14 (sglang-0.5.14 wheel, srt/distributed/device_communicators/custom_all_reduce.py
dispatch_custom_allreduce; custom_all_reduce_v2.py) runs CustomAllReduceV2 on CUDA by default
(SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2 = True, srt/environ.py; sgl-project/sglang#24363) where
can_use_custom_all_reduce_v2 holds: one host, a world size of its table, P2P, and every pair on
NVLink (`full_nvlink is True`, two GPUs included). Elsewhere (two PCIe GPUs, ROCm) the older
CustomAllreduce and its rule stay. Inside V2: one-shot (push, then pull) while the message is at
most its world size's threshold (`<=`), two-shot above, up to the 16 MiB pull buffer (`<=`); larger
messages leave the custom kernel. The thresholds are one table for SM 10.x (B200-tuned) and one for
every other capability (H200-tuned).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import CatalogError


@dataclass(frozen=True, kw_only=True)
class TunedCustom:
    """The tuned kernel's rule (preset `[allreduce.custom.tuned]`)."""

    world_sizes: tuple[int, ...]
    max_bytes: float
    """Largest message (inclusive) the kernel takes; larger go on in the engine's order."""
    one_shot_max: Mapping[str, Mapping[int, float]]
    """[capability or "default"][world size] -> largest one-shot message (inclusive), bytes."""
    source: str

    def eligible(self, world_size: int, nvlink: bool, p2p: bool, hosts: int, arch: str | None) -> bool:
        """CUDA only ("" is a GPU without a compute capability: AMD's), every pair on NVLink."""
        return arch != "" and nvlink and p2p and hosts == 1 and world_size in self.world_sizes

    def shot(self, world_size: int, msg_bytes: float, arch: str | None) -> str:
        table = self.one_shot_max.get(arch or "", self.one_shot_max["default"])
        return "one-shot" if msg_bytes <= table[world_size] else "two-shot"

    def edges(self) -> set[float]:
        return {self.max_bytes} | {b for per in self.one_shot_max.values() for b in per.values()}


def load_tuned(t, sizes_by_world) -> TunedCustom:
    """From a preset's `datafile.Table` (presets.py): world_sizes, max_bytes, one_shot_max, source;
    `sizes_by_world` reads the [capability][world size] -> bytes table."""
    one_shot = sizes_by_world(t, "one_shot_max")
    ws = t.world_sizes("world_sizes")
    for arch, per in one_shot.items():
        if set(per) != set(ws):
            raise CatalogError(f"{t.at('one_shot_max')}.{arch} must give every world size of {list(ws)}")
    if "default" not in one_shot:
        raise CatalogError(f"{t.at('one_shot_max')} needs a 'default' table")
    tuned = TunedCustom(world_sizes=ws, max_bytes=t.size("max_bytes"), one_shot_max=one_shot, source=t.text("source"))
    t.done()
    return tuned
