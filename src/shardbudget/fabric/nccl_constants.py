"""NCCL's tuning constants and the engines' custom all-reduce constants, typed and in SI units.

`catalog/nccl.toml` writes times in microseconds (`*_us` keys, as tuning.cc does) and bandwidths in
GB/s (`*_gbps`); `read_nccl` turns them into one frozen `NcclConstants` of seconds and bytes/s,
so no caller converts units or reads by string key. A user catalog may change single constants
(`overlay`): each must exist and keep its built-in shape.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ..datafile import Table
from ..errors import CatalogError, UnknownNameError

US = 1e-6  # seconds per microsecond
GB = 1e9  # bytes per GB


@dataclass(frozen=True, kw_only=True)
class CustomAllReduce:
    """The inference engines' one-shot / two-shot all-reduce kernels (vLLM custom_all_reduce,
    TensorRT-LLM, SGLang): each rank reads its peers' buffers directly over NVLink / P2P."""

    launch_s: float
    """Kernel start with CUDA graphs (no host launch on the critical path), seconds."""
    sync_s: float
    """One barrier (a flag written to and read from every peer), seconds; one per shot."""
    max_bytes: float
    """Largest message the engine sends through its kernels; larger falls back to NCCL."""
    one_shot_max_bytes: float
    """Above this two-shot is used for 4+ GPUs."""
    world_sizes: tuple[int, ...]
    """Group sizes the kernels support."""
    source: str


@dataclass(frozen=True, kw_only=True)
class EngineKernels:
    """One inference engine's custom all-reduce (catalog/engines.toml): when its source runs the
    one-shot and two-shot kernels, and what they cost (fitted on the engines' measured rows)."""

    name: str
    version: str
    world_sizes: tuple[int, ...]
    max_bytes: Mapping[str, float]
    """[GPU count or "default"] -> largest message the custom kernel takes, bytes."""
    one_shot_max_bytes: Mapping[str, float]
    one_shot_max_bytes_by_arch: Mapping[str, Mapping[str, float]]
    pcie_max_gpus: int
    single_host: bool
    """The kernel needs every rank on one host (vLLM / SGLang: `in_the_same_node_as`)."""
    launch_s: Mapping[str, float]
    """[GPU generation] -> 2-GPU one-shot latency, seconds; generations not listed: their mean."""
    per_peer_s: float
    two_shot_extra_s: Mapping[str, float]
    """[GPU generation or "default"] -> two-shot's second barrier and pass, seconds."""
    one_shot_efficiency: Mapping[str, float]
    """[GPU count or "default"] -> one-shot reads (p-1) n per GPU at this share of the ring's busbw."""
    one_shot_efficiency_by_arch: Mapping[str, Mapping[str, float]] = field(default_factory=lambda: MappingProxyType({}))
    """[GPU generation][GPU count] -> the same share measured on that generation (its kernel's reads
    over its own NVLink: 0.94 of the ring busbw on 8 H100s, 0.67 on 8 B200s); counts not listed
    there take `one_shot_efficiency`."""
    two_shot_efficiency: Mapping[str, float]
    """[GPU count or "default"] -> two-shot's share of the ring busbw for its 2(p-1)/p n per GPU."""
    mnnvl_one_shot_group_bytes: float
    """Across the hosts of one NVLink domain (multi-node NVLink kernels): one-shot while message x
    GPUs is below this, bytes."""
    mnnvl_max_bytes: float
    """Largest message of the multi-node NVLink kernels; 0: the engine has none."""
    mnnvl_one_shot_efficiency: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({"default": 1.0}))
    mnnvl_two_shot_efficiency: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({"default": 1.0}))
    """[GPU count or "default"] -> the multi-node NVLink kernels' share of the ring busbw (their own
    kernels, fitted on their own rows; 1.0 without rows)."""
    mnnvl_two_shot_extra_s: float | None = None
    """The multi-node NVLink two-shot's second barrier, seconds; None: the single-node kernel's."""
    mnnvl_launch_s: float | None = None
    mnnvl_per_peer_s: float | None = None
    """The multi-node NVLink kernels' floor, launch_s + per_peer_s (g - 2) as the single-node
    kernel's but their own (each rank writes its data and flag into every peer's buffer: no
    separate barrier round); None: the single-node kernel's."""
    two_shot_pair_extra_s: float | None = None
    """At 2 GPUs the two-shot's extra over the one-shot, seconds, its rate then the one-shot's (one
    exchange each way with the one peer); None: `two_shot_extra_s` and the two-shot's own rate."""
    symm_mem_copy_s: float = 0.0
    """One copy kernel's fixed cost on the torch symmetric-memory path (input into the symmetric
    buffer, result out of it), seconds."""
    releases: Mapping[str, Mapping[str, Mapping[str, float]]] = field(default_factory=lambda: MappingProxyType({}))
    """[older preset (trtllm-1.0)] -> its own `max_bytes` and `one_shot_max_bytes` (by GPU count), and
    `one_shot_max_bytes_by_arch` where its release tuned them by generation (sglang-0.5.14):
    an older release runs these kernels, at these costs, under another rule (`for_release`)."""
    source: str

    def for_release(self, preset: str) -> EngineKernels:
        """These kernels as the older release `preset` runs them: its limits, these costs."""
        limits = self.releases[preset]
        return replace(
            self,
            name=preset,
            max_bytes=limits["max_bytes"],
            one_shot_max_bytes=limits["one_shot_max_bytes"],
            one_shot_max_bytes_by_arch=limits.get("one_shot_max_bytes_by_arch", MappingProxyType({})),
            releases=MappingProxyType({}),
        )

    def _by_gpus(self, table: Mapping[str, float], gpus: int) -> float:
        return float(table.get(str(gpus), table.get("default", 0.0)))

    def limit_bytes(self, gpus: int) -> float:
        return self._by_gpus(self.max_bytes, gpus)

    def one_shot_limit_bytes(self, gpus: int, arch: str) -> float:
        return self._by_gpus(self.one_shot_max_bytes_by_arch.get(arch, self.one_shot_max_bytes), gpus)

    def efficiency(self, shots: int, gpus: int, arch: str | None = None, mnnvl: bool = False) -> float:
        if mnnvl:
            return self._by_gpus(self.mnnvl_one_shot_efficiency if shots == 1 else self.mnnvl_two_shot_efficiency, gpus)
        if shots == 1 and str(gpus) in self.one_shot_efficiency_by_arch.get(arch, {}):
            return float(self.one_shot_efficiency_by_arch[arch][str(gpus)])
        return self._by_gpus(self.one_shot_efficiency if shots == 1 else self.two_shot_efficiency, gpus)

    def two_shot_extra_for(self, arch: str, mnnvl: bool = False, gpus: int = 0) -> float:
        if mnnvl and self.mnnvl_two_shot_extra_s is not None:
            return self.mnnvl_two_shot_extra_s
        if gpus == 2 and self.two_shot_pair_extra_s is not None:
            return self.two_shot_pair_extra_s
        t = self.two_shot_extra_s
        return t.get(arch, t.get("default", sum(t.values()) / len(t)))

    def latency_for(self, arch: str, gpus: int, mnnvl: bool = False) -> float:
        """Launch and barriers of the kernel on `gpus` GPUs of generation `arch`."""
        if mnnvl and self.mnnvl_launch_s is not None:
            return self.mnnvl_launch_s + (self.mnnvl_per_peer_s or 0.0) * (gpus - 2)
        return self.launch_for(arch) + self.per_peer_s * (gpus - 2)

    def launch_for(self, arch: str) -> float:
        if arch in self.launch_s:
            return self.launch_s[arch]
        return sum(self.launch_s.values()) / len(self.launch_s)


def _by_gpu_table(value: Any) -> Mapping[str, float]:
    """A number, or a table by GPU count with a "default"."""
    if isinstance(value, dict):
        if "default" not in value:
            raise ValueError("a table by GPU count needs a 'default'")
        return _frozen(value)
    return MappingProxyType({"default": float(value)})


def _us_or_none(e: Table, key: str) -> float | None:
    value = e.number(key, None)
    return None if value is None else value * US


def _by_arch(value: Any, scale: float) -> Mapping[str, float]:
    """A number, or a table by GPU generation (with a "default" for the others)."""
    if isinstance(value, dict):
        return _frozen(value, scale)
    return MappingProxyType({"default": float(value) * scale})


_NUM = (int, float)
_TABLE_OR_NUM = (dict, int, float)


def read_engines(tables: Iterable[tuple[str, Table]]) -> dict[str, EngineKernels]:
    """The engines' kernel tables (`[engines.<name>]` of catalog/custom_allreduce.toml and user files),
    each refused where it holds a key this reader does not know."""
    out = {}
    for name, e in tables:
        try:
            out[name] = _engine(e, name)
        except (TypeError, ValueError) as err:
            if isinstance(err, CatalogError):
                raise
            raise CatalogError(f"{e.where}: {err}") from None
        if not out[name].launch_s:
            raise CatalogError(f"{e.at('launch_us')}: needs at least one GPU generation")
    return out


def _engine(e: Table, name: str) -> EngineKernels:
    releases = e.raw("releases", {}, dict)
    kernels = EngineKernels(
        name=name,
        version=str(e.raw("version", types=(str, int, float))),
        world_sizes=e.world_sizes("world_sizes"),
        max_bytes=_frozen(e.raw("max_bytes", types=_TABLE_OR_NUM)),
        one_shot_max_bytes=_frozen(e.raw("one_shot_max_bytes", types=_TABLE_OR_NUM)),
        one_shot_max_bytes_by_arch=_frozen(e.raw("one_shot_max_bytes_by_arch", {}, dict)),
        pcie_max_gpus=e.count("pcie_max_gpus"),
        single_host=e.flag("single_host", False),
        launch_s=_frozen(e.raw("launch_us", types=dict), US),
        per_peer_s=e.number("per_peer_us") * US,
        two_shot_extra_s=_by_arch(e.raw("two_shot_extra_us", types=_TABLE_OR_NUM), US),
        symm_mem_copy_s=e.number("symm_mem_copy_us", 0.0) * US,
        two_shot_pair_extra_s=_us_or_none(e, "two_shot_pair_extra_us"),
        one_shot_efficiency=_by_gpu_table(e.raw("one_shot_efficiency", types=_TABLE_OR_NUM)),
        one_shot_efficiency_by_arch=_frozen(e.raw("one_shot_efficiency_by_arch", {}, dict)),
        two_shot_efficiency=_by_gpu_table(e.raw("two_shot_efficiency", types=_TABLE_OR_NUM)),
        mnnvl_one_shot_group_bytes=e.number("mnnvl_one_shot_group_bytes", 0.0),
        mnnvl_max_bytes=e.number("mnnvl_max_bytes", 0.0),
        mnnvl_one_shot_efficiency=_by_gpu_table(e.raw("mnnvl_one_shot_efficiency", 1.0, _TABLE_OR_NUM)),
        mnnvl_two_shot_efficiency=_by_gpu_table(e.raw("mnnvl_two_shot_efficiency", 1.0, _TABLE_OR_NUM)),
        mnnvl_two_shot_extra_s=_us_or_none(e, "mnnvl_two_shot_extra_us"),
        mnnvl_launch_s=_us_or_none(e, "mnnvl_launch_us"),
        mnnvl_per_peer_s=_us_or_none(e, "mnnvl_per_peer_us"),
        releases=MappingProxyType(
            {r: _release_limits(Table(v, f"{e.path}.releases.{r}", e.file)) for r, v in releases.items()}
        ),
        source=e.text("source"),
    )
    e.done()
    return kernels


def _release_limits(t: Table) -> Mapping[str, Mapping[str, float]]:
    limits = {k: _frozen(t.raw(k, types=_TABLE_OR_NUM)) for k in ("max_bytes", "one_shot_max_bytes")}
    if t.has("one_shot_max_bytes_by_arch"):
        limits["one_shot_max_bytes_by_arch"] = _frozen(t.raw("one_shot_max_bytes_by_arch", types=dict))
    limits = MappingProxyType(limits)
    t.done()
    return limits


@dataclass(frozen=True, kw_only=True)
class ArchFloor:
    """What one GPU generation's measured small-message times add to NCCL's tables: the kernel
    launch and completion of its collectives (an offset on every base latency) and the cost of one
    LL/LL128/Simple step over its NVLink (a factor on tuning.cc's NVLink hop rows)."""

    base_offset_s: Mapping[str, float]
    """[protocol] -> seconds added to tuning.cc's baseLat (negative: faster than the table)."""
    nvlink_hop_scale: Mapping[str, float]
    """[protocol] -> factor on tuning.cc's NVLink hwLat (ring and tree rows alike)."""
    nvls_small_latency_s: float = 0.0
    """Fixed cost of NVLS below a few hundred MiB, less its growth with the group (the intercept
    at one GPU of `nvls_small_latency_s + per_doubling x log2(GPUs)`), seconds (0: tuning.cc's flat
    25 us)."""
    source: str = ""


NEUTRAL_FLOOR = ArchFloor(
    base_offset_s=MappingProxyType({"ll": 0.0, "ll128": 0.0, "simple": 0.0}),
    nvlink_hop_scale=MappingProxyType({"ll": 1.0, "ll128": 1.0, "simple": 1.0}),
    source="NCCL's tables as they are",
)


@dataclass(frozen=True, kw_only=True)
class NcclConstants:
    """tuning.cc's tables (quoted) and our calibrated constants (fitted, each documented in the TOML)."""

    source: str
    base_latency_s: Mapping[str, Mapping[str, float]]
    """[algorithm][protocol] -> per-call base latency, seconds (tuning.cc baseLat)."""
    hw_latency_s: Mapping[str, Mapping[str, Mapping[str, float]]]
    """[link class][algorithm][protocol] -> per-hop latency, seconds (tuning.cc hwLat)."""
    ll_max_bytes_per_s: Mapping[str, Any]
    """llMaxBws, bytes/s: "one_node" -> [GPU generation] -> cap; "intel" / "amd" -> (2 nodes, >= 3
    nodes) caps, which tuning.cc indexes by CPU vendor (AMD rows for AMD, Intel's for the rest)."""
    tree_correction: Mapping[str, tuple[float, ...]]
    """[protocol] -> tuning.cc treeCorrectionFactor by floor(log2(bytes / 64)), 64 B to 256 MiB."""
    nvls_nccl_efficiency: Mapping[str, float]
    """[GPU generation] -> tuning.cc nvlsEfficiency (NCCL's own NVLS estimate, used to choose it)."""
    search_speeds_bytes_per_s: Mapping[str, tuple[float, ...]]
    """[GPU generation or 'default'] -> search.cc's intra-node per-channel speeds, bytes/s, fastest first."""
    ring_ll128_per_channel_bytes_per_s: Mapping[str, float]
    """[GPU generation] -> tuning.cc perChMaxRingLL128Bws (one node), bytes/s per ring channel."""
    arch: Mapping[str, ArchFloor]
    """[GPU generation] -> measured floors; generations not listed use NCCL's tables unchanged."""
    shm_ll_bandwidth_fraction: float
    """Share of a host-staged (SHM) ring's Simple bandwidth the LL protocol reaches."""
    ring_efficiency: Mapping[int, float]
    """[GPUs] -> share of the achievable link rate a single-node ring of that many GPUs reaches."""
    protocol_bandwidth_fraction: Mapping[str, float]
    """[protocol] -> share of the link's Simple bandwidth the protocol carries as data."""
    nvls_link_efficiency: Mapping[str, float]
    """[fabric name or GPU generation] -> share of the per-direction NVLink rate NVLS sustains."""
    nvls_decay_per_rank: float
    """NVLS efficiency falls as e / (1 + k (g - 1)) with the group's size g; this is k."""
    nvls_latency_s: float
    nvls_latency_per_rank_s: float
    nvls_small_algbw_fraction: float
    nvls_small_latency_per_doubling_s: float
    """What NVLS's small-message fixed cost adds each time the group doubles, seconds."""
    ring_plateau_factor: Mapping[str, float]
    """[GPU generation or 'default'] -> multi-node Simple ring all-reduce latency factor."""
    net_overhead_s: float
    """Per intra step of an inter-node ring (tuning.cc getNetOverhead), seconds (x3 for Simple)."""
    ll_net_proxy_line_s: float
    """Proxy time per LL line of a network step held in host memory (comm/lines.LLNetStaging), seconds."""
    custom: CustomAllReduce
    version: tuple[int, int] = (2, 30)
    """The NCCL release (major, minor) whose rules apply where they changed between releases."""
    symmetric: bool = False
    """Buffers registered as symmetric windows: NCCL runs its symmetric kernels where they exist."""
    tables_version: tuple[int, int] = (2, 30)
    """The release the tables were read at (nccl.toml version), which at_nccl leaves: what an
    engine that names no release of its own is priced at."""
    stated: bool = False
    """The release was named (--nccl, or the measurement being priced states it): the one an engine
    installs does not replace it (comm.versions.at_shipped)."""

    def arch_floor(self, arch: str) -> ArchFloor:
        return self.arch.get(arch, NEUTRAL_FLOOR)

    def search_speeds(self, arch: str) -> tuple[float, ...]:
        """search.cc's intra-node speed array of a GPU generation, bytes/s, fastest first."""
        return self.search_speeds_bytes_per_s.get(arch, self.search_speeds_bytes_per_s["default"])

    def ring_hop_s(self, link: str) -> Mapping[str, float]:
        """[protocol] -> ring hop latency of an NCCL link class (nvlink, pci, net), seconds."""
        return self.hw_latency_s.get(link, {}).get("ring", {})


def _frozen(tree: Any, scale: float = 1.0) -> Any:
    """Nested tables as read-only mappings, numbers times `scale`, lists as tuples."""
    if isinstance(tree, dict):
        return MappingProxyType({k: _frozen(v, scale) for k, v in tree.items()})
    if isinstance(tree, list):
        return tuple(_frozen(v, scale) for v in tree)
    if isinstance(tree, (int, float)) and not isinstance(tree, bool):
        return float(tree) * scale
    return tree


def read_nccl(raw: Mapping[str, Any], where: str = "catalog/nccl.toml") -> NcclConstants:
    """The typed constants of a merged [nccl] table (built-in plus user overlays); a key this reader
    does not know is refused, as in every data file (datafile)."""
    t = Table(raw, "nccl", where)
    cal, custom = t.table("calibrated"), t.table("custom")
    version = parse_version(str(t.raw("version", "2.30", (str, int, float))), where)
    nccl = NcclConstants(
        source=t.text("source"),
        base_latency_s=_frozen(t.raw("base_latency_us", types=dict), US),
        hw_latency_s=_frozen(t.raw("hw_latency_us", types=dict), US),
        ll_max_bytes_per_s=_frozen(t.raw("ll_max_bw_gbps", types=dict), GB),
        tree_correction=_frozen(t.raw("tree_correction_factor", types=dict)),
        nvls_nccl_efficiency=_frozen(t.raw("nvls_efficiency", types=dict)),
        search_speeds_bytes_per_s=_frozen(t.raw("search_speeds_gbps", types=dict), GB),
        ring_ll128_per_channel_bytes_per_s=_frozen(t.raw("ring_ll128_per_channel_gbps", types=dict), GB),
        arch=MappingProxyType({a: _floor(cal.table("arch").table(a)) for a in cal.raw("arch", types=dict)}),
        ring_efficiency=MappingProxyType({int(k): float(v) for k, v in cal.raw("ring_efficiency", types=dict).items()}),
        shm_ll_bandwidth_fraction=cal.number("shm_ll_bandwidth_fraction"),
        protocol_bandwidth_fraction=_frozen(t.raw("protocol_bandwidth_fraction", types=dict)),
        nvls_link_efficiency=_frozen(cal.raw("nvls_link_efficiency", types=dict)),
        nvls_decay_per_rank=cal.number("nvls_decay_per_rank"),
        nvls_latency_s=cal.number("nvls_latency_us") * US,
        nvls_latency_per_rank_s=cal.number("nvls_latency_per_rank_us") * US,
        nvls_small_algbw_fraction=cal.number("nvls_small_algbw_fraction"),
        nvls_small_latency_per_doubling_s=cal.number("nvls_small_latency_per_doubling_us") * US,
        ring_plateau_factor=_frozen(cal.raw("ring_plateau_factor", types=dict)),
        net_overhead_s=cal.number("net_overhead_us") * US,
        ll_net_proxy_line_s=cal.number("ll_net_proxy_line_ns") * 1e-9,
        version=version,
        tables_version=version,
        custom=CustomAllReduce(
            launch_s=custom.number("launch_us") * US,
            sync_s=custom.number("sync_us") * US,
            max_bytes=custom.number("max_bytes"),
            one_shot_max_bytes=custom.number("one_shot_max_bytes"),
            world_sizes=custom.world_sizes("world_sizes"),
            source=custom.text("source"),
        ),
    )
    for table in (custom, cal, t):
        table.done()
    return nccl


def parse_version(text: str, where: str = "--nccl") -> tuple[int, int]:
    """'2.27', '2.27.3' or '2.27.3-1' -> (2, 27): the rules this model follows change by minor release."""
    parts = text.strip().lstrip("v").split("-")[0].split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise CatalogError(f"{where}: NCCL version {text!r} is not like 2.27 or 2.27.3") from None
    if major != 2 or not 0 <= minor < 100:
        raise CatalogError(f"{where}: NCCL version {text!r}: only NCCL 2.x releases are modelled")
    return major, minor


def _floor(t: Table) -> ArchFloor:
    floor = ArchFloor(
        base_offset_s=_frozen(t.raw("base_offset_us", types=dict), US),
        nvlink_hop_scale=_frozen(t.raw("nvlink_hop_scale", types=dict)),
        nvls_small_latency_s=t.number("nvls_small_latency_us", 0.0) * US,
        source=t.text("source", ""),
    )
    t.done()
    return floor


def overlay(base: dict, over: dict, where: str, generations: Iterable[str] = ()) -> None:
    """A user file changes single NCCL constants and the rest keep their built-in values; each
    constant it names must exist and keep its built-in shape (table, string, number >= 0, list).
    A table whose rows are GPU generations takes a row for a generation a catalog file describes
    (`generations`, folded), shaped as its other rows: a new generation's constants."""
    generations = frozenset(generations)
    for key, value in over.items():
        here, old = f"{where}.{key}", base.get(key, ...)
        if old is ... and _new_generation_row(base, key, generations):
            old = next(v for k, v in base.items() if k != "default")
            if isinstance(old, dict):  # a table of its own (calibrated.arch.<generation>): read_nccl checks it
                if not isinstance(value, dict):
                    raise CatalogError(f"{here}: expected a table, got {value!r}")
                base[key] = value
                continue
        if old is ...:
            raise UnknownNameError(f"NCCL constant in {where}", key, base)
        if isinstance(old, dict):
            if not isinstance(value, dict):
                raise CatalogError(f"{here}: expected a table, got {value!r}")
            overlay(old, value, here, generations)
            continue
        if not _same_shape(old, value, signed="offset" in here):
            raise CatalogError(f"{here}: expected {_shape(old)} like the built-in {old!r}, got {value!r}")
        base[key] = value


def _new_generation_row(base: dict, key: str, generations: frozenset[str]) -> bool:
    rows = [k for k in base if k != "default"]
    return bool(rows) and key.casefold() in generations and all(k.casefold() in generations for k in rows)


def _positive(old: Any) -> bool:
    """A bandwidth or fraction that is positive built in stays positive (it is divided by)."""
    olds = old if isinstance(old, list) else [old]
    return all(isinstance(o, (int, float)) and o > 0 for o in olds)


def _same_shape(old: Any, value: Any, signed: bool = False) -> bool:
    """`signed`: an offset, which may be negative."""
    if isinstance(old, (str, bool)):
        return type(value) is type(old)
    olds = old if isinstance(old, list) else [old]
    items = value if isinstance(value, list) else [value]
    positive = _positive(old) and not signed
    numbers_ok = bool(items) and all(
        isinstance(v, (int, float))
        and not isinstance(v, bool)
        and math.isfinite(v)
        and (signed or (v > 0 if positive else v >= 0))
        for v in items
    )
    # a per-node-count row of floats keeps its length (it is indexed); a set of ints need not
    length_ok = len(items) == len(olds) or all(type(o) is int for o in olds)
    return isinstance(value, list) == isinstance(old, list) and numbers_ok and length_ok


def _shape(old: Any) -> str:
    named = {str: "a string", bool: "true or false"}.get(type(old))
    if named:
        return named
    kind = "a list of finite numbers " if isinstance(old, list) else "a finite number "
    return kind + ("> 0" if _positive(old) else ">= 0")


__all__ = [
    "ArchFloor",
    "parse_version",
    "CustomAllReduce",
    "EngineKernels",
    "read_engines",
    "NcclConstants",
    "overlay",
    "read_nccl",
]
