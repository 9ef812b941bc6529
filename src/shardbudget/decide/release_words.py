"""The NCCL release a plan is priced at, in the words of its header: the catalog's release (or
--nccl's) or the one the engine's pinned release installs, and why. plan, deploy, allreduce and the
report print the same words (one computation)."""

from __future__ import annotations

from ..engines.presets import load_engine
from ..engines.release import engine_catalog
from ..fabric.hardware import Catalog


def nccl_words(catalog: Catalog, engine: str | None = None) -> str:
    """'2.27 (vllm 0.19.0 ships 2.27.5)': the release whose rules price NCCL under `engine`
    (engines.release: the one the engine installs, unless --nccl named one) and why; '2.30' where
    the engine names none; '2.29 (--nccl; vllm 0.19.0 ships 2.27.5)' where --nccl overrides it."""
    preset = load_engine(engine) if engine else None
    nccl = engine_catalog(catalog, engine).nccl
    words = f"{nccl.version[0]}.{nccl.version[1]}" + (", symmetric buffers" if nccl.symmetric else "")
    why = (["--nccl"] if nccl.stated else []) + (
        [f"{preset.name} {preset.version} ships {preset.nccl}"] if preset is not None and preset.nccl else []
    )
    return words + (f" ({'; '.join(why)})" if why else "")


__all__ = ["nccl_words"]
