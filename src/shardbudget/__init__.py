"""shardbudget: how far can a transformer be tensor-parallel sharded before the interconnect, not
the GPUs, sets its per-token latency?

Everything the CLI does is one import away; results are plain dataclasses with `.to_dict()`.
Glossary of units and two-meaning words: `shardbudget.units`.
"""

from .check import CheckResult, check_logs
from .collectives import Cost, collective_cost, crossover_bytes, make_group, sweep
from .compare import compare_systems
from .errors import CatalogError, MeasureError, PlanError, ShardbudgetError, UnitError, UnknownNameError
from .explain import explain
from .hardware import Catalog, Fabric, GPU, System, load_catalog
from .model import ModelConfig, Plan, Precision, list_models, load_model
from .planner import PlanResult, plan, required_fabric
from .settings import Efficiency, PlanSettings, engine_efficiency
from .step import StepTime, decode_step

__version__ = "0.1.0"

__all__ = [
    "Catalog", "CatalogError", "CheckResult", "Cost", "Efficiency", "Fabric", "GPU", "MeasureError", "ModelConfig", "Plan",
    "PlanError", "PlanResult", "PlanSettings", "Precision", "ShardbudgetError", "StepTime", "System", "UnitError", "UnknownNameError",
    "__version__", "check_logs", "collective_cost", "compare_systems", "crossover_bytes", "decode_step", "engine_efficiency",
    "explain", "list_models", "load_catalog", "load_model", "make_group", "plan", "required_fabric", "sweep",
]
