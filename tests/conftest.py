"""Shared fixtures, the test hooks, and the tiers.

Every test is marked with its tier by the folder it lives in, so no test file names its own:
`unit` (tests/unit: formulas, catalog, structure; no subprocess worth waiting for), `integration`
(tests/integration: the CLI, the harness on gloo, the report), `validation` (tests/validation:
against published measurements). `browser` marks the tests that drive Chromium: those that take
the `driver` fixture, or whose body calls a Chromium helper (`tests/browser.py`'s `chromium`,
`test_report.py`'s `_chromium*`). `slow` is set in the files themselves, on tests that take many
seconds (real multi-process runs, long sweeps); `make check` runs `unit and not slow`.
"""

import ast
import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shardbudget.calibrate.paths import DATA

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ROOT / "tests" / "hooks"
# Arms the test hooks (SHARDBUDGET_FAULT) here and in every process the tests start: the console
# script and the measurement ranks inherit PYTHONPATH. An installed build has no tests/hooks folder,
# so the hooks are inert there (tests/hooks/shardbudget_test_hooks.py, measure/harness/protocol.armed_faults).
sys.path.insert(0, str(HOOKS))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HOOKS), os.environ.get("PYTHONPATH")]))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The repository's data/ folder: the public measurements the catalog is calibrated and validated on."""
    return DATA


def run_cli(*args: str, input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the real console script, as a user would."""
    exe = shutil.which("shardbudget", path=str(Path(sys.executable).parent)) or "shardbudget"
    # GNU readline (imported under pytest) exports COLUMNS=80 into the process environment, which
    # the tables honour (tests/integration/test_terminal_width.py): a piped user run has none
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run([exe, *args], capture_output=True, text=True, input=input, timeout=timeout, env=env)


@pytest.fixture
def cli():
    return run_cli


TIERS = ("unit", "integration", "validation")
SLOW_UNIT = {
    "test_atomic.py": ["test_every_reader_of_user_files_refuses_a_fifo_without_hanging"],
    "test_datacache.py": [
        "test_a_plan_from_the_cache_prints_what_a_fresh_process_prints",
        "test_an_edit_in_an_installed_copy_reaches_the_next_run",
    ],
    "test_api.py": ["test_no_public_name_is_shadowed_by_a_submodule"],
    "test_calibrate.py": [
        "test_the_catalog_holds_a_fresh_fit",
        "test_the_check_fails_on_a_catalog_that_drifted",
        "test_the_command_reports_known_defects",
        "test_the_fit_covers_every_fitted_table",
        "test_the_check_names_a_value_that_differs",
        "test_a_written_catalog_agrees_with_its_fit",
        "test_a_rerun_rewrites_only_values_beyond_the_tolerance",
    ],
    "test_explain.py": [
        "test_every_quoted_ratio_is_the_ratio_of_the_quoted_numbers",
        "test_the_gpu_and_the_fabric_add_up_to_the_difference",
    ],
    "test_explain_pcie.py": [
        "test_the_network_answer_says_when_the_network_is_the_faster_fabric",
        "test_the_network_answer_keeps_its_question_where_the_network_is_slower",
    ],
    "test_fit.py": [
        "test_synthetic_two_node_runs_recover_the_nic_and_keep_the_nvswitch",
        "test_a_fit_prints_the_same_on_any_machine",
        "test_check_of_a_fitted_log_against_its_own_profile_agrees_with_the_fit",
        "test_fit_recovers_a_bandwidth_change",
        "test_heldout_error_above_25_percent_is_a_warning",
        "test_nvls_samples_fit_the_link_and_say_so",
        "test_profile_round_trips_through_the_catalog",
    ],
    "test_fuzz.py": [
        "test_catalog_mangled_text",
        "test_catalog_random_toml_text",
        "test_catalog_structures",
        "test_config_mangled_json_on_disk",
        "test_config_random_dicts",
        "test_config_real_with_broken_fields",
        "test_logs",
        "test_size_lists",
        "test_size_ranges",
        "test_units_parsers",
    ],
    "test_launchers.py": ["test_sigterm_is_held_back_while_the_rank_reports_its_failure"],
    "test_logs.py": ["test_fuzz_json_shapes", "test_fuzz_mangled_real_lines"],
    "test_model.py": ["test_fuzz_mutated_real_configs", "test_fuzz_random_json"],
    "test_nccl_json.py": ["test_fit_reads_json_and_text_alike", "test_fuzz_nccl_tests_shapes"],
    "test_physics.py": [
        "test_every_known_fall_still_happens",
        "test_every_fall_of_the_models_itl_is_listed",
        "test_no_plan_is_faster_on_a_worse_fabric",
        "test_the_catalogs_fabric_ladder_orders_every_plan",
        "test_the_known_falls_are_not_measured_ones",
        "test_the_lists_are_what_the_scan_finds",
        "test_the_file_is_what_falls_writes",
        "test_the_measured_steps_are_in_the_data",
    ],
    "test_planner.py": [
        "test_every_shipped_model_plans_on_one_and_two_nodes_of_every_system",
        "test_explain_compares_the_same_gpu_on_two_fabrics_and_agrees_with_plan",
    ],
    "test_quoting.py": [
        "test_one_line_is_always_one_printable_line",
        "test_shell_quote_runs_as_one_word_each",
        "test_yaml_quote_reads_back_as_written",
    ],
    "test_startup_imports.py": ["test_help_loads_no_library", "test_plan_does_not_load", "test_plan_prints_its_plan"],
    "test_structure.py": [
        "test_each_layer_imports_only_the_layers_below_it",
        "test_import_graph_has_no_cycle",
        "test_measure_is_its_parts_and_each_imports_only_those_listed",
        "test_no_view_imports_the_step_model_or_a_pricer",
        "test_the_layer_check_catches_an_upward_import",
        "test_the_view_check_catches_a_view_that_prices",
    ],
    "test_tail.py": [
        "test_other_quantiles_too",
        "test_p99_matches_a_monte_carlo_simulation",
        "test_shifted_exponentials_of_one_kind_sum_to_a_shifted_gamma",
    ],
    "test_units_quick.py": [
        "test_a_grid_of_forms_reads_as_quantiphy_reads_it",
        "test_numbers_print_as_quantiphy_prints_them",
    ],
    "test_verdicts.py": ["test_real_plans_say_what_their_tables_show", "test_verdicts_match_their_table"],
}
"""The unit tests of tests/unit that take a second or more each (all their cases together) on the
2-core machine: property tests over thousands of inputs, sweeps of every model on every system,
fresh processes. They are `slow`, so `make check` (unit and not slow) stays under a minute; `make
test` runs them. Named here rather than in their files; tests/unit/test_tiers.py holds every name to
a test that exists."""
_CALLS_CHROMIUM = re.compile(r"\b_?chromium\w*\(")


@functools.cache
def _browser_tests(path: Path) -> frozenset[str]:
    """The test functions of one module whose body calls a Chromium helper (the module read once)."""
    source = path.read_text(encoding="utf-8")
    lines = source.split("\n")
    return frozenset(
        node.name
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef)
        and node.name.startswith("test")
        and _CALLS_CHROMIUM.search("\n".join(lines[node.lineno : node.end_lineno]))
    )


def _drives_a_browser(item) -> bool:
    if "driver" in getattr(item, "fixturenames", ()):
        return True
    return item.path.suffix == ".py" and getattr(item, "originalname", None) in _browser_tests(item.path)


def pytest_collection_modifyitems(config, items):
    """The tier of every test from its folder, and `browser` where it drives Chromium."""
    for item in items:
        parts = item.path.relative_to(ROOT).parts
        if len(parts) > 1 and parts[0] == "tests" and parts[1] in TIERS:
            item.add_marker(parts[1])
        if parts[:2] == ("tests", "unit") and item.originalname in SLOW_UNIT.get(parts[-1], ()):
            item.add_marker("slow")
        if _drives_a_browser(item):
            item.add_marker("browser")
