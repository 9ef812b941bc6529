"""The NCCL release an engine's collectives are priced at: the one its pinned release installs
(engines/*.toml [engine] nccl: vLLM 0.19.0's torch pins 2.27.5), unless --nccl names another. What
runs is what the engine's wheel brings, not the newest NCCL; every view (plan, deploy, explain,
allreduce --impl ENGINE, the report) prices the same release through this one function."""

from __future__ import annotations

from ..comm.versions import at_shipped
from ..fabric.hardware import Catalog
from .presets import load_engine


def engine_catalog(catalog: Catalog, engine: str | None) -> Catalog:
    """`catalog` priced at the NCCL release `engine` installs (the catalog's own for an engine whose
    preset names none, or where --nccl stated one)."""
    return at_shipped(catalog, load_engine(engine).nccl if engine else None)


__all__ = ["engine_catalog"]
