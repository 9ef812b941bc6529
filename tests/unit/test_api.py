"""The public API is pinned: `import shardbudget` exports exactly these names."""

import shardbudget

EXPECTED = {
    "Catalog", "CatalogError", "CheckResult", "Cost", "Efficiency", "Fabric", "GPU", "MeasureError", "ModelConfig", "Plan",
    "PlanError", "PlanResult", "PlanSettings", "Precision", "ShardbudgetError", "StepTime", "System", "UnitError", "UnknownNameError",
    "__version__", "check_logs", "collective_cost", "compare_systems", "crossover_bytes", "decode_step", "engine_efficiency",
    "explain", "list_models", "load_catalog", "load_model", "make_group", "plan", "required_fabric", "sweep",
}


def test_exported_members():
    assert set(shardbudget.__all__) == EXPECTED
    for name in EXPECTED:
        assert hasattr(shardbudget, name), name


def test_library_mirrors_cli():
    r = shardbudget.plan("llama-3.1-8b", "hgx-h100", batches=[1, 8], budget_s=0.02)
    d = r.to_dict()
    assert [x["batch"] for x in d["results"]] == [1, 8]
    c = shardbudget.collective_cost("all-reduce", 16384, "hgx-h100")
    assert c.to_dict()["time_s"] == c.time_s
