"""Engine presets: what vLLM, SGLang and TensorRT-LLM run in a decode step (data in `*.toml`).

See `shardbudget.engines.presets` for the loader, `shardbudget.engines.rules` for the all-reduce
selection rules, and
`shardbudget.engines.allreduce` for those rules as size ranges.
"""

from .allreduce import allreduce_ranges
from .memory_default import default_memory_fraction
from .presets import ALLREDUCE_KINDS, ENGINE_NAMES, EnginePreset, load_engine
from .rules import allreduce_choice

__all__ = [
    "ALLREDUCE_KINDS",
    "ENGINE_NAMES",
    "EnginePreset",
    "allreduce_choice",
    "allreduce_ranges",
    "default_memory_fraction",
    "load_engine",
]
