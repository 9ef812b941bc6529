"""shardbudget: how far can a transformer be tensor-parallel sharded before the interconnect, not
the GPUs, sets its per-token latency?

Everything the CLI does is one import away; results are plain dataclasses with `.to_dict()`.
Glossary of units and two-meaning words: `shardbudget.units`.
"""

from .collectives import Cost, collective_cost, crossover_bytes, make_group, sweep
from .errors import CatalogError, MeasureError, PlanError, ShardbudgetError, UnitError, UnknownNameError
from .hardware import Catalog, Fabric, GPU, System, load_catalog

__version__ = "0.1.0"

__all__ = [
    "Catalog", "CatalogError", "Cost", "Fabric", "GPU", "MeasureError", "PlanError", "ShardbudgetError",
    "System", "UnitError", "UnknownNameError", "__version__", "collective_cost", "crossover_bytes",
    "load_catalog", "make_group", "sweep",
]
