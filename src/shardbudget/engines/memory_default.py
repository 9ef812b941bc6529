"""The memory fraction an engine takes by default on a GPU: a constant (vLLM, TensorRT-LLM) or, for
SGLang, computed at launch from the GPU's memory and the plan as its server_args.py does."""

from __future__ import annotations

from .. import units
from ..errors import CatalogError
from .presets import EnginePreset


def default_memory_fraction(preset: EnginePreset, gpu_memory_bytes: float, *, tp: int = 1, pp: int = 1) -> float:
    """The engine's default memory fraction for a GPU of `gpu_memory_bytes` (as nvidia-smi reports).

    vLLM / TensorRT-LLM: the file's constant (0.9). SGLang: mem_fraction_static computed as
    server_args.py does, (gpu_mem - reserved) / gpu_mem, rounded to 3 decimals, with reserved from
    chunked prefill size, CUDA-graph batch limit and TP x PP (without DP attention).
    """
    rule = preset.memory.reserve
    if rule is None:
        return preset.memory.fraction
    mib = 2.0**20
    gpu_mib = gpu_memory_bytes / mib
    chunked = _by_memory(rule.chunked_prefill_by_memory, gpu_memory_bytes, 1, f"engines/{preset.name}.toml: memory")
    bs = _by_memory(
        preset.cuda_graphs.max_batch_by_memory,
        gpu_memory_bytes,
        1 if tp < 4 else 2,
        f"engines/{preset.name}.toml: cuda_graphs.max_batch_by_memory",
    )
    reserved = (
        rule.reserved_base_bytes
        + rule.reserved_per_chunked_prefill_token_bytes * max(chunked, 2048)
        + rule.reserved_per_cuda_graph_bs_bytes * bs
        + rule.reserved_per_tp_pp_over_8_bytes * tp * pp / 8
    )
    if gpu_memory_bytes > rule.reserved_min_large_gpu_above_bytes:
        reserved = max(reserved, rule.reserved_min_large_gpu_bytes)
    return round((gpu_mib - reserved / mib) / gpu_mib, 3)


def _by_memory(rows: tuple[tuple, ...], gpu_memory_bytes: float, column: int, where: str) -> int:
    """The value in `column` of the first (below bytes, ...) row whose bound the GPU's memory is under."""
    for row in rows:
        if gpu_memory_bytes < row[0]:
            return row[column]
    raise CatalogError(f"{where}: no row covers {units.format_bytes(gpu_memory_bytes)} of GPU memory")
