"""The NCCL release a plan is priced at, in the words of its header: the catalog's release (or
--nccl's) and, where the engine's pinned release installs another, that one and the flag that prices
it. plan and deploy print the same words (one computation)."""

from __future__ import annotations

from ..engines.presets import load_engine
from ..fabric.hardware import Catalog
from ..fabric.nccl_constants import parse_version


def nccl_words(catalog: Catalog, engine: str | None = None) -> str:
    """'2.30' (or '2.27, symmetric buffers'): the release whose rules price NCCL here (--nccl), and
    the one the engine's pinned release installs where that differs, with the flag that prices it
    ('2.30 (vllm 0.19.0 ships 2.27.5: --nccl 2.27)')."""
    nccl = catalog.nccl
    words = f"{nccl.version[0]}.{nccl.version[1]}" + (", symmetric buffers" if nccl.symmetric else "")
    preset = load_engine(engine) if engine else None
    if preset is not None and preset.nccl and parse_version(preset.nccl) != nccl.version:
        minor = ".".join(preset.nccl.split(".")[:2])
        words += f" ({preset.name} {preset.version} ships {preset.nccl}: --nccl {minor})"
    return words


__all__ = ["nccl_words"]
