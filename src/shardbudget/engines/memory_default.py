"""The memory fraction an engine takes by default on a GPU: a constant (vLLM, TensorRT-LLM) or, for
SGLang, computed at launch from the GPU's memory and the plan as its server_args.py does."""

from __future__ import annotations

from typing import Any

from .. import units
from ..errors import CatalogError
from .presets import EnginePreset, _Table


def default_memory_fraction(preset: EnginePreset, gpu_memory_bytes: float, *, tp: int = 1, pp: int = 1) -> float:
    """The engine's default memory fraction for a GPU of `gpu_memory_bytes` (as nvidia-smi reports).

    vLLM / TensorRT-LLM: the file's constant (0.9). SGLang: mem_fraction_static computed as
    server_args.py does, (gpu_mem - reserved) / gpu_mem, rounded to 3 decimals, with reserved from
    chunked prefill size, CUDA-graph batch limit and TP x PP (without DP attention).
    """
    rules = preset.memory.rules
    if not preset.memory.computed_default:
        return preset.memory.fraction
    where = f"engines/{preset.name}.toml [memory]"
    t = _Table(dict(rules), where)
    mib = 2.0 ** 20
    gpu_mib = gpu_memory_bytes / mib
    chunked = _by_memory(rules["chunked_prefill_by_memory"], gpu_memory_bytes, "tokens", where)
    graphs = _Table(dict(preset.raw["cuda_graphs"]), f"engines/{preset.name}.toml [cuda_graphs]")
    bs = _by_memory(graphs.get("max_batch_by_memory")["rows"], gpu_memory_bytes,
                    "tp_lt_4" if tp < 4 else "tp_ge_4", graphs.where)
    reserved = (t.size("reserved_base") + t.size("reserved_per_chunked_prefill_token") * max(chunked, 2048)
                + t.size("reserved_per_cuda_graph_bs") * bs + t.size("reserved_per_tp_pp_over_8") * tp * pp / 8)
    if gpu_memory_bytes > t.size("reserved_min_large_gpu_above"):
        reserved = max(reserved, t.size("reserved_min_large_gpu"))
    return round((gpu_mib - reserved / mib) / gpu_mib, 3)


def _by_memory(rows: list[dict[str, Any]], gpu_memory_bytes: float, key: str, where: str) -> int:
    for row in rows:
        r = _Table(row, where)
        if gpu_memory_bytes < r.size("below"):
            return r.count(key)
    raise CatalogError(f"{where}: no row covers {units.format_bytes(gpu_memory_bytes)} of GPU memory")
