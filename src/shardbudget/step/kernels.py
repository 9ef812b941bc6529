"""Kernel floors, efficiencies, tile sizes and launch gaps per op kind and GPU generation.

Data: `catalog/kernels.toml`, every entry with a `source` (estimates flagged, with their basis).
The step model prices one small-batch decode op as

    max(roofline_s, floor_s(arch, op_kind, ...)) + launch_s(arch)

with the roofline using peak bandwidth x `memory_efficiency` and peak FLOP/s x
`compute_efficiency`, and GEMM shapes padded to the arch's tile (`tile_quantization_factor`):
at high TP each shard's GEMM is small and a ragged N or K does the padded tile's work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from .. import units
from ..datacache import cached, read_builtin
from ..errors import CatalogError, UnknownNameError

WHERE = "catalog/kernels.toml"

_SHAPE_KEYS = {"m", "n", "k", "tokens", "context", "heads", "active_experts"}


@dataclass(frozen=True, kw_only=True)
class KernelFloor:
    op_kind: str
    arch: str
    floor_s: float
    """Shortest time of one such kernel at decode, however little work, seconds."""
    floor_per_active_expert_s: float | None
    """Grouped MoE only: floor per expert that receives tokens, seconds (archs without `call_fixed`)."""
    call_fixed_s: float | None = None
    """Grouped MoE only: the fused call's time beyond streaming its experts' weights, added to that
    traffic and split over the call's two GEMM ops: t = call_fixed + weight bytes / rate, as measured
    calls over 1 to 126 active experts lie (the call's top-k, sort, activation and sum are inside it
    and cost nothing of their own: OpPricer.moe_call_whole). None: max(roofline, floor) as for other
    kernels."""
    call_fixed_quantized_s: float | None = None
    """Grouped MoE only: `call_fixed` of the call whose experts run FP8 / FP4 GEMMs, where it was measured
    apart (the call quantises both GEMMs' inputs and reads the weights' scales); None: `call_fixed`."""
    memory_rate_bytes_per_s: float | None = None
    """Grouped MoE only: the most weight bytes/s the call's small-M GEMMs stream on this generation,
    measured (a rate, not a fraction: H100 and H200 stream alike, their SMs and not their HBM set it);
    a GPU whose own peak x memory_efficiency is lower keeps its own. None: memory_efficiency of the peak."""
    memory_efficiency: float | None
    """Achieved / peak HBM bandwidth when memory-bound (None: not a bandwidth-priced op)."""
    compute_efficiency: float | None
    """Achieved / peak dense FLOP/s when compute-bound."""
    quantized_flops_per_s: float | None = None
    """The most FP8 FLOP/s this kernel's quantized GEMMs reach when compute-bound, measured (FP4
    GEMMs: scaled by the GPU's FP4 / FP8 peaks); a GPU whose own rate is lower (H20) keeps its own.
    None: Efficiency.flops_fp8 / flops_fp4 of the peak, as dense GEMMs."""
    estimate: bool
    basis: str
    source: str


@dataclass(frozen=True, kw_only=True)
class Tiles:
    n: int
    """Output-column tile (elements)."""
    k_bf16: int
    k_fp8: int
    """Reduction tile (elements) for 16-bit and 8-bit operands."""
    estimate: bool
    source: str


@dataclass(frozen=True, kw_only=True)
class Launch:
    graph_s: float
    """Gap between dependent kernels inside a CUDA graph, seconds."""
    eager_s: float
    """Host launch cost per kernel without graphs, seconds."""
    estimate: bool
    source: str


def _fraction(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise CatalogError(f"{where}: expected a fraction in (0, 1], got {value!r}")
    return float(value)


def _seconds(entry: dict, key: str, where: str) -> float:
    if key not in entry:
        raise CatalogError(f"{where} is missing {key!r}")
    return units.parse_seconds(entry[key], what=f"{where}.{key}", allow_zero=True)


def _text(entry: dict, key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise CatalogError(f"{where} is missing {key!r} (text)")
    return value


def read_kernels(raw: dict[str, Any], where: str = WHERE) -> dict[str, Any]:
    """Validate a parsed kernels file: {'archs', 'op_kinds', 'floors', 'tiles', 'launch', 'measurements'}."""
    try:
        archs, op_kinds = tuple(raw["meta"]["archs"]), tuple(raw["meta"]["op_kinds"])
        ops, tiles_raw, launch_raw = raw["ops"], raw["tiles"], raw["launch"]
    except KeyError as err:
        raise CatalogError(f"{where} is missing {err.args[0]!r}") from None
    partial = tuple(raw["meta"].get("partial_op_kinds", ()))
    floors = _read_floors(ops, archs, op_kinds, where, partial)
    tiles = {arch: _read_tiles(entry, f"{where} [tiles.{arch}]") for arch, entry in tiles_raw.items()}
    launch = {arch: Launch(graph_s=_seconds(e, "graph", f"{where} [launch.{arch}]"),
                           eager_s=_seconds(e, "eager", f"{where} [launch.{arch}]"),
                           estimate=bool(e.get("estimate", False)),
                           source=_text(e, "source", f"{where} [launch.{arch}]"))
              for arch, e in launch_raw.items()}
    for name, table in (("tiles", tiles), ("launch", launch)):
        absent = [a for a in archs if a not in table]
        if absent:
            raise CatalogError(f"{where}: [{name}] has no entry for {', '.join(absent)}")
    measurements = tuple(MappingProxyType({**m, "time_s": _seconds(m, "time", f"{where} [[measurements]]")})
                         for m in raw.get("measurements", []))
    return {"archs": archs, "op_kinds": op_kinds, "partial_op_kinds": partial, "floors": MappingProxyType(floors),
            "tiles": MappingProxyType(tiles), "launch": MappingProxyType(launch), "measurements": measurements}


def _read_floors(ops: dict, archs: tuple, op_kinds: tuple, where: str,
                 partial: tuple = ()) -> dict[tuple[str, str], KernelFloor]:
    """[ops.<kind>.<arch>] tables: one floor per (arch, op kind), none missing but for the op kinds
    only some archs run (`partial_op_kinds`)."""
    floors: dict[tuple[str, str], KernelFloor] = {}
    for op_kind, per_arch in ops.items():
        if op_kind not in op_kinds:
            raise UnknownNameError(f"op kind in {where} [ops]", op_kind, op_kinds)
        for arch, entry in per_arch.items():
            here = f"{where} [ops.{op_kind}.{arch}]"
            if arch not in archs:
                raise UnknownNameError(f"arch in {here}", arch, archs)
            per_expert = entry.get("floor_per_active_expert")
            floors[(arch, op_kind)] = KernelFloor(
                op_kind=op_kind, arch=arch, floor_s=_seconds(entry, "floor", here),
                floor_per_active_expert_s=(_seconds(entry, "floor_per_active_expert", here)
                                           if per_expert is not None else None),
                call_fixed_s=_seconds(entry, "call_fixed", here) if "call_fixed" in entry else None,
                call_fixed_quantized_s=(_seconds(entry, "call_fixed_quantized", here)
                                        if "call_fixed_quantized" in entry else None),
                memory_rate_bytes_per_s=(units.parse_rate(entry["memory_rate"], what=f"{here}.memory_rate")
                                         if "memory_rate" in entry else None),
                memory_efficiency=_fraction(entry.get("memory_efficiency"), f"{here}.memory_efficiency"),
                compute_efficiency=_fraction(entry.get("compute_efficiency"), f"{here}.compute_efficiency"),
                quantized_flops_per_s=(units.parse_flops(entry["quantized_compute"], what=f"{here}.quantized_compute")
                                       if "quantized_compute" in entry else None),
                estimate=bool(entry.get("estimate", False)), basis=_text(entry, "basis", here),
                source=_text(entry, "source", here))
    missing = [f"{a}/{o}" for a in archs for o in op_kinds if (a, o) not in floors and o not in partial]
    if missing:
        raise CatalogError(f"{where}: no floor for {', '.join(missing)}")
    return floors


def _read_tiles(entry: dict, here: str) -> Tiles:
    sizes = [entry.get(k) for k in ("n", "k_bf16", "k_fp8")]
    if not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes):
        raise CatalogError(f"{here}: n, k_bf16, k_fp8 must be whole numbers > 0, got {sizes}")
    return Tiles(n=sizes[0], k_bf16=sizes[1], k_fp8=sizes[2], estimate=bool(entry.get("estimate", False)),
                 source=_text(entry, "source", here))


@lru_cache(maxsize=1)
def load_kernels() -> dict[str, Any]:
    """The built-in kernel catalog (read once)."""
    text = read_builtin(WHERE)
    return cached("kernels", [text], lambda: _read_text(text))


def _read_text(text: str) -> dict[str, Any]:
    import tomllib  # only when the table is built, not when the cache has it
    try:
        return read_kernels(tomllib.loads(text))
    except tomllib.TOMLDecodeError as err:
        raise CatalogError(f"{WHERE}: not valid TOML ({err})") from None


def kernel(arch: str, op_kind: str) -> KernelFloor:
    """The catalog entry for one op kind on one GPU generation."""
    data = load_kernels()
    if arch not in data["archs"]:
        raise UnknownNameError("GPU generation", arch, data["archs"])
    if op_kind not in data["op_kinds"]:
        raise UnknownNameError("op kind", op_kind, data["op_kinds"])
    if (arch, op_kind) not in data["floors"]:
        raise UnknownNameError(f"op kind on {arch}", op_kind, sorted(o for a, o in data["floors"] if a == arch))
    return data["floors"][(arch, op_kind)]


def floor_s(arch: str, op_kind: str, **shape: int) -> float:
    """Minimum time of one decode kernel of `op_kind` on `arch`, seconds.

    Shape keywords (m, n, k, tokens, context, heads, active_experts) are accepted for every op kind;
    only grouped MoE uses one: the floor grows with the experts that receive tokens,
    max(floor, floor_per_active_expert x active_experts), where the arch has a per-expert floor (a
    `call_fixed` arch prices the call as its fixed part plus its weight traffic instead: price_ops).
    """
    unknown = set(shape) - _SHAPE_KEYS
    if unknown:
        raise UnknownNameError("shape argument", sorted(unknown)[0], sorted(_SHAPE_KEYS))
    entry = kernel(arch, op_kind)
    experts = shape.get("active_experts")
    if experts is not None and entry.floor_per_active_expert_s is not None:
        if experts < 0:
            raise ValueError(f"active_experts ({experts}) must be >= 0")
        return max(entry.floor_s, entry.floor_per_active_expert_s * experts)
    return entry.floor_s


def launch_s(arch: str, *, graphs: bool = True) -> float:
    """Launch gap added per kernel: inside a CUDA graph, or the host launch without one, seconds."""
    data = load_kernels()
    if arch not in data["launch"]:
        raise UnknownNameError("GPU generation", arch, data["archs"])
    entry = data["launch"][arch]
    return entry.graph_s if graphs else entry.eager_s


def tile_quantization_factor(arch: str, n: int, k: int, *, weight_bytes: float = 2.0) -> float:
    """Work done / work asked for a GEMM shard of N output columns and K reduction depth.

    N is padded to the arch's N tile and K to its K tile (the 8-bit tile for 1-byte weights), so a
    TP shard of N = 7168 / 8 = 896 on Hopper (tile 128) wastes nothing, N = 1000 does 1024/1000.
    """
    data = load_kernels()
    if arch not in data["tiles"]:
        raise UnknownNameError("GPU generation", arch, data["archs"])
    if n < 1 or k < 1:
        raise ValueError(f"GEMM dimensions must be >= 1, got n={n}, k={k}")
    tiles = data["tiles"][arch]
    tk = tiles.k_fp8 if weight_bytes <= 1 else tiles.k_bf16
    padded = math.ceil(n / tiles.n) * tiles.n * math.ceil(k / tk) * tk  # elements the kernel computes
    return padded / (n * k)
