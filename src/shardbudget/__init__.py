"""shardbudget: how far can a transformer be tensor-parallel sharded before the interconnect, not
the GPUs, sets its per-token latency?

Everything the CLI does is one import away; results are plain dataclasses with `.to_dict()`.
Glossary of units and two-meaning words: `shardbudget.units`.
"""

import importlib

# Names are imported on first use (PEP 562): `shardbudget plan` then loads the planner and not
# check, explain or compare, whose imports are start-up time the command does not need. The layers
# are packages (fabric, comm, model, engines, measure, step, decide, report, cli): see CONTRIBUTING.md.
_WHERE = {
    "CheckResult": "measure.analysis.check",
    "check_logs": "measure.analysis.check",
    "ServingCheckResult": "decide.serving_check",
    "check_serving": "decide.serving_check",
    "Cost": "comm.collectives",
    "collective_cost": "comm.collectives",
    "crossover_bytes": "comm.collectives",
    "make_group": "comm.collectives",
    "sweep": "comm.collectives",
    "compare_systems": "decide.compare",
    "CatalogError": "errors",
    "MeasureError": "errors",
    "PlanError": "errors",
    "ShardbudgetError": "errors",
    "UnitError": "errors",
    "UnknownNameError": "errors",
    "explain": "decide.questions",
    "Catalog": "fabric.hardware",
    "Fabric": "fabric.hardware",
    "GPU": "fabric.hardware",
    "System": "fabric.hardware",
    "load_catalog": "fabric.catalog",
    "ModelConfig": "model",
    "Plan": "model",
    "Precision": "model",
    "list_models": "model",
    "load_model": "model",
    "PlanResult": "decide.planner",
    "plan": "decide.planner",
    "required_fabric": "decide.planner",
    "Efficiency": "step.settings",
    "PlanSettings": "step.settings",
    "engine_efficiency": "step.settings",
    "StepTime": "step.compose",
    "decode_step": "step.scenario",
    "Scenario": "step.scenario",
    "scenario": "step.scenario",
    "Request": "decide.request",
    "request": "decide.request",
    "Budgets": "decide.request",
    "Workload": "decide.request",
    "deploy": "decide.deploy",
    "DeployResult": "decide.deploy",
    "Pricing": "decide.cost",
}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'shardbudget' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


__version__ = "0.1.0"

__all__ = [
    "Budgets",
    "Catalog",
    "CatalogError",
    "CheckResult",
    "Cost",
    "DeployResult",
    "Efficiency",
    "Fabric",
    "GPU",
    "MeasureError",
    "ModelConfig",
    "Plan",
    "PlanError",
    "PlanResult",
    "PlanSettings",
    "Precision",
    "Pricing",
    "Request",
    "Scenario",
    "ServingCheckResult",
    "ShardbudgetError",
    "StepTime",
    "System",
    "UnitError",
    "UnknownNameError",
    "Workload",
    "__version__",
    "check_logs",
    "check_serving",
    "collective_cost",
    "compare_systems",
    "crossover_bytes",
    "decode_step",
    "deploy",
    "engine_efficiency",
    "explain",
    "list_models",
    "load_catalog",
    "load_model",
    "make_group",
    "plan",
    "request",
    "required_fabric",
    "scenario",
    "sweep",
]
