"""Engine presets: what vLLM, SGLang and TensorRT-LLM run in a decode step (data in `*.toml`).

See `shardbudget.engines.presets` for the loader and the all-reduce selection rules, and
`shardbudget.engines.allreduce` for those rules as size ranges.
"""

from .allreduce import allreduce_ranges
from .presets import ALLREDUCE_KINDS, ENGINE_NAMES, EnginePreset, allreduce_choice, default_memory_fraction, load_engine

__all__ = ["ALLREDUCE_KINDS", "ENGINE_NAMES", "EnginePreset", "allreduce_choice", "allreduce_ranges",
           "default_memory_fraction", "load_engine"]
