"""An engine's newer all-reduce kernels, run before its older custom kernel where they are eligible:
a size rule per CUDA capability and world size (SGLang 0.5.12 and later: the JIT-compiled
CustomAllReduceV2, `TunedCustom`; vLLM 0.34: FlashInfer's all-reduce, `FlashInferAllReduce`), and the
[capability][world size] -> bytes tables the presets write them in (`sizes_by_world`).

SGLang 0.5.14 (sglang-0.5.14 wheel, srt/distributed/device_communicators/custom_all_reduce.py
dispatch_custom_allreduce; custom_all_reduce_v2.py) runs CustomAllReduceV2 on CUDA by default
(SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2 = True, srt/environ.py; sgl-project/sglang#24363) where
can_use_custom_all_reduce_v2 holds: one host, a world size of its table, P2P, and every pair on
NVLink (`full_nvlink is True`, two GPUs included). Elsewhere (two PCIe GPUs, ROCm) the older
CustomAllreduce and its rule stay. Inside V2: one-shot (push, then pull) while the message is at
most its world size's threshold (`<=`), two-shot above, up to the 16 MiB pull buffer (`<=`); larger
messages leave the custom kernel. The thresholds are one table for SM 10.x (B200-tuned) and one for
every other capability (H200-tuned) in 0.5.14; 0.5.23 tunes SM 9.0 and SM 10.x apart and gives every
other capability 1 MiB (engines/sglang.toml).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from ..datafile import Table, key, world_size
from ..errors import CatalogError
from ..fabric.catalog import builtin_archs


def capability(arch: str | None) -> str | None:
    """The engines' tables are keyed by CUDA compute capability ("9.0", "10.3"), as vLLM's are; a
    generation's name stands for its first capability (hopper -> 9.0, blackwell -> 10.0; catalog/archs.toml)."""
    return _capabilities().get(arch, arch) if arch else arch


@lru_cache(maxsize=1)
def _capabilities() -> Mapping[str, str]:
    """[generation] -> its first compute capability, or its own name where it has none (AMD)."""
    return MappingProxyType({name: a.capability or name for name, a in builtin_archs().items()})


def sizes_by_world(t: Table, name: str) -> Mapping[str, Mapping[int, float]]:
    """[capability] -> {world size: bytes} from tables like `[x."9.0"] 2 = "64 MiB"`."""
    out: dict[str, Mapping[int, float]] = {}
    for arch, _ in t.table(name).entries():
        sub = t.table(name).table(arch)
        out[capability(arch)] = MappingProxyType({world_size(ws, sub.at(ws)): sub.size(ws) for ws, _ in sub.entries()})
    return MappingProxyType(out)


@dataclass(frozen=True, kw_only=True)
class FlashInferAllReduce:
    """FlashInfer's all-reduce, first in vLLM 0.34's order where it runs (flashinfer_all_reduce.py):
    CUDA, one host, every pair on NVLink, a world size of its capability's table, message <= its
    limit; one-shot to `one_shot_max`, two-shot above. Priced by `kernel`'s fitted costs (the
    engine whose kernel FlashInfer ports: TensorRT-LLM's Lamport one-shot / two-shot)."""

    default_enabled: bool = key("default_enabled")
    kernel: str = key("kernel")
    """The engine of catalog/custom_allreduce.toml whose kernel costs price it."""
    needs_nvlink: bool = key("needs_nvlink", default=True)
    max_bytes: Mapping[str, Mapping[int, float]] = key("max_bytes", sizes_by_world)
    """[capability][world size] -> largest message (inclusive), bytes."""
    one_shot_max: Mapping[str, Mapping[int, float]] = key("one_shot_max", sizes_by_world)
    """[capability][world size] -> largest one-shot message (inclusive), bytes."""
    source: str = key("source")

    def shot(
        self, world_size: int, msg_bytes: float, arch: str | None, *, nvlink: bool, p2p: bool, hosts: int
    ) -> str | None:
        """'flashinfer-one-shot' / 'flashinfer-two-shot' where it takes the message, else None."""
        limit = self.max_bytes.get(arch or "", {}).get(world_size)
        if (
            not self.default_enabled
            or limit is None
            or hosts > 1
            or not p2p
            or (self.needs_nvlink and not nvlink)
            or msg_bytes > limit
        ):
            return None
        one = self.one_shot_max.get(arch or "", {}).get(world_size, limit)
        return "flashinfer-one-shot" if msg_bytes <= one else "flashinfer-two-shot"

    def edges(self) -> set[float]:
        return {b for table in (self.max_bytes, self.one_shot_max) for per in table.values() for b in per.values()}


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
