"""The public API is pinned: `import shardbudget` exports exactly these names."""

import contextlib
import io
import json
from pathlib import Path

import shardbudget
from shardbudget import cli
from shardbudget.cli.args import jsonable


def _cli_json(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*argv, "--json"]) == 0
    return json.dumps(json.loads(out.getvalue()))


EXPECTED = {
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
}


def test_exported_members():
    assert set(shardbudget.__all__) == EXPECTED
    for name in EXPECTED:
        assert hasattr(shardbudget, name), name


def test_library_check_serving_mirrors_cli():
    """check on a serving benchmark (issue 39): the library's record is what --json prints."""
    path = Path(__file__).resolve().parents[1] / "fixtures" / "serving" / "vllm_gptoss_h100_tp8_c4.json"
    r = shardbudget.check_serving([path], system="hgx-h100", model="gpt-oss-120b")
    assert isinstance(r, shardbudget.ServingCheckResult) and r.exit_code == 0
    assert jsonable(r.to_dict()) == json.loads(_cli_json("check", str(path), "-s", "hgx-h100", "-m", "gpt-oss-120b"))


def test_library_mirrors_cli():
    r = shardbudget.plan(shardbudget.request("llama-3.1-8b", "hgx-h100", batches=[1, 8], budget_s=0.02))
    d = r.to_dict()
    assert jsonable(d) == json.loads(
        _cli_json("plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "-b", "1", "-b", "8", "--budget", "20ms")
    )
    assert [x["batch"] for x in d["results"]] == [1, 8]
    c = shardbudget.collective_cost("all-reduce", 16384, "hgx-h100")
    assert c.to_dict()["time_s"] == c.time_s


def test_no_public_name_is_shadowed_by_a_submodule():
    """Importing a submodule sets an attribute of that name on the package, so a public function
    must not share its name with a module: after the CLI (which imports nearly every module) is
    loaded, every exported name is still the function or class it was."""
    import inspect
    import subprocess
    import sys

    code = (
        "import shardbudget as sb, shardbudget.cli, inspect, sys; "
        "bad = [n for n in sb.__all__ if inspect.ismodule(getattr(sb, n))]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not any(inspect.ismodule(getattr(shardbudget, n)) for n in shardbudget.__all__)
