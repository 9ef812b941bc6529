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
from dataclasses import MISSING, dataclass, fields
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from ..datacache import cached, read_builtin
from ..datafile import Table, key, parse_toml, read_record
from ..errors import CatalogError, UnknownNameError
from ..fabric.catalog import builtin_archs

WHERE = "catalog/kernels.toml"

_SHAPE_KEYS = {"m", "n", "k", "tokens", "context", "heads", "active_experts"}


@dataclass(frozen=True, kw_only=True)
class KernelFloor:
    op_kind: str
    arch: str
    floor_s: float = key("floor", "seconds")
    """Shortest time of one such kernel at decode, however little work, seconds."""
    floor_per_active_expert_s: float | None = key("floor_per_active_expert", "seconds", default=None)
    """Grouped MoE only: floor per expert that receives tokens, seconds (archs without `call_fixed`)."""
    call_fixed_s: float | None = key("call_fixed", "seconds", default=None)
    """Grouped MoE only: the fused call's time beyond streaming its experts' weights, added to that
    traffic and split over the call's two GEMM ops: t = call_fixed + weight bytes / rate, as measured
    calls over 1 to 126 active experts lie (the call's top-k, sort, activation and sum are inside it
    and cost nothing of their own: OpPricer.moe_call_whole). None: max(roofline, floor) as for other
    kernels."""
    call_fixed_quantized_s: float | None = key("call_fixed_quantized", "seconds", default=None)
    """Grouped MoE only: `call_fixed` of the call whose experts run FP8 / FP4 GEMMs, where it was measured
    apart (the call quantises both GEMMs' inputs and reads the weights' scales); None: `call_fixed`."""
    memory_rate_bytes_per_s: float | None = key("memory_rate", "rate", default=None)
    """Grouped MoE only: the most weight bytes/s the call's small-M GEMMs stream on this generation,
    measured (a rate, not a fraction: H100 and H200 stream alike, their SMs and not their HBM set it);
    a GPU whose own peak x memory_efficiency is lower keeps its own. None: memory_efficiency of the peak."""
    memory_efficiency: float | None = key("memory_efficiency", "fraction", default=None)
    """Achieved / peak HBM bandwidth when memory-bound (None: not a bandwidth-priced op)."""
    compute_efficiency: float | None = key("compute_efficiency", "fraction", default=None)
    """Achieved / peak dense FLOP/s when compute-bound."""
    quantized_flops_per_s: float | None = key("quantized_compute", "flops", default=None)
    """The most FP8 FLOP/s this kernel's quantized GEMMs reach when compute-bound, measured (FP4
    GEMMs: scaled by the GPU's FP4 / FP8 peaks); a GPU whose own rate is lower (H20) keeps its own.
    None: Efficiency.flops_fp8 / flops_fp4 of the peak, as dense GEMMs."""
    estimate: bool = key("estimate", default=False)
    basis: str = key("basis")
    source: str = key("source")


@dataclass(frozen=True, kw_only=True)
class Tiles:
    n: int = key("n", "integer")
    """Output-column tile (elements)."""
    k_bf16: int = key("k_bf16", "integer")
    k_fp8: int = key("k_fp8", "integer")
    """Reduction tile (elements) for 16-bit and 8-bit operands."""
    estimate: bool = key("estimate", default=False)
    source: str = key("source")


@dataclass(frozen=True, kw_only=True)
class Launch:
    graph_s: float = key("graph", "seconds")
    """Gap between dependent kernels inside a CUDA graph, seconds."""
    eager_s: float = key("eager", "seconds")
    """Host launch cost per kernel without graphs, seconds."""
    estimate: bool = key("estimate", default=False)
    basis: str = key("basis", default="")
    source: str = key("source")


def _read(cls, t: Table, **given):
    """One entry; the basis and source it must give are text, not blank."""
    entry = read_record(cls, t, **given)
    blank = [
        f.name
        for f in fields(cls)
        if f.name in ("basis", "source") and f.default is MISSING and not getattr(entry, f.name).strip()
    ]
    if blank:
        raise t.fail(blank[0], "must say where the number comes from")
    return entry


def read_kernels(raw: dict[str, Any], where: str = WHERE) -> dict[str, Any]:
    """Validate a parsed kernels file: {'archs', 'op_kinds', 'floors', 'tiles', 'launch', 'measurements'}.
    Every table is read strictly (datafile): a key no record declares is refused with its place."""
    top = Table(raw, "", where)
    meta = top.table("meta")
    archs, op_kinds = meta.texts("archs"), meta.texts("op_kinds")
    partial = meta.texts("partial_op_kinds", ())
    meta.done()
    known = builtin_archs()
    for arch in archs:
        if arch not in known:
            raise UnknownNameError(f"GPU generation in {meta.at('archs')}", arch, known)
    floors = _read_floors(top.table("ops"), archs, op_kinds, partial)
    tiles = {arch: _read(Tiles, t.table(arch)) for t in [top.table("tiles")] for arch, _ in t.entries()}
    launch = {arch: _read(Launch, t.table(arch)) for t in [top.table("launch")] for arch, _ in t.entries()}
    for name, table in (("tiles", tiles), ("launch", launch)):
        absent = [a for a in archs if a not in table]
        if absent:
            raise CatalogError(f"{where}: [{name}] has no entry for {', '.join(absent)}")
    measurements = tuple(
        _measurement(Table(m, f"measurements[{i}]", where)) for i, m in enumerate(top.raw("measurements", [], list))
    )
    top.done()
    return {
        "archs": archs,
        "op_kinds": op_kinds,
        "partial_op_kinds": partial,
        "floors": MappingProxyType(floors),
        "tiles": MappingProxyType(tiles),
        "launch": MappingProxyType(launch),
        "measurements": measurements,
    }


def _measurement(t: Table) -> MappingProxyType:
    """A measured kernel time quoted beside the floors (tests/unit/test_kernels.py checks them)."""
    row = {k: t.text(k) for k in ("op_kind", "arch", "gpu", "what", "source")}
    row.update(time=t.raw("time", types=str), time_s=t.seconds("time"))
    t.done()
    return MappingProxyType(row)


def _read_floors(ops: Table, archs: tuple, op_kinds: tuple, partial: tuple = ()) -> dict[tuple[str, str], KernelFloor]:
    """[ops.<kind>.<arch>] tables: one floor per (arch, op kind), none missing but for the op kinds
    only some archs run (`partial_op_kinds`)."""
    floors: dict[tuple[str, str], KernelFloor] = {}
    for op_kind, _ in ops.entries():
        if op_kind not in op_kinds:
            raise UnknownNameError(f"op kind in {ops.where}", op_kind, op_kinds)
        per_arch = ops.table(op_kind)
        for arch, _ in per_arch.entries():
            if arch not in archs:
                raise UnknownNameError(f"arch in {per_arch.where}", arch, archs)
            floors[(arch, op_kind)] = _read(KernelFloor, per_arch.table(arch), op_kind=op_kind, arch=arch)
    missing = [f"{a}/{o}" for a in archs for o in op_kinds if (a, o) not in floors and o not in partial]
    if missing:
        raise CatalogError(f"{ops.file}: no floor for {', '.join(missing)}")
    return floors


@lru_cache(maxsize=1)
def load_kernels() -> dict[str, Any]:
    """The built-in kernel catalog (read once)."""
    text = read_builtin(WHERE)
    return cached("kernels", [text], lambda: _read_text(text))


def _read_text(text: str) -> dict[str, Any]:
    return read_kernels(parse_toml(text, WHERE))


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
