"""The `[kernels]` table of an engine preset: which kernels price the decode floors (names only),
the model_type@arch rules that turn the engine's fused calls on, per-arch call floors, and the MoE
dispatch the engine runs by default under DP attention (read by presets.read_engine)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..datafile import Table
from ..errors import UnknownNameError
from ..fabric.catalog import builtin_archs

MOE_DISPATCH = ("all-to-all", "allgather-reducescatter")
"""`[kernels] moe_dispatch`: the engine's default MoE dispatch under DP attention (EnginePreset)."""
KERNEL_ROLES = ("moe", "attention_mha_gqa", "attention_mla")
"""[kernels]: which kernels price the decode floors in catalog/kernels.toml, by role (names only)."""


def rules(t: Table, name: str) -> tuple[str, ...]:
    """A list of model_type@arch rules, each checked for its '@'."""
    found = t.raw(name, types=list)
    if not all(isinstance(r, str) and "@" in r for r in found):
        raise t.fail(name, f"expected a list of 'model_type@arch' strings, got {found!r}")
    return tuple(found)


def moe_dispatch(kernels: Table | None) -> str:
    """[kernels] moe_dispatch (one of MOE_DISPATCH, with its moe_dispatch_source), else all-to-all."""
    if kernels is None or not kernels.has("moe_dispatch"):
        return "all-to-all"
    value = kernels.text("moe_dispatch")
    if value not in MOE_DISPATCH:
        raise UnknownNameError(f"moe_dispatch in {kernels.where}", value, MOE_DISPATCH)
    kernels.text("moe_dispatch_source")
    return value


def per_arch_seconds(table: Table | None, name: str) -> Mapping[str, float]:
    """An optional [arch] -> time sub-table, in seconds (empty when absent); `basis` and `source` notes."""
    t = table.opt_table(name) if table is not None else None
    if t is None:
        return MappingProxyType({})
    known = builtin_archs()
    out = {}
    for arch, _ in t.entries():
        if arch not in known:
            raise UnknownNameError(f"GPU generation in {t.where}", arch, known)
        out[arch] = t.seconds(arch)
    t.done()
    return MappingProxyType(out)


__all__ = ["KERNEL_ROLES", "MOE_DISPATCH", "moe_dispatch", "per_arch_seconds", "rules"]
