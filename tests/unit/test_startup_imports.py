"""What the `shardbudget` process loads (issue 24 start-up, benchmarks/startup.py): `plan` runs from
the built-in data cache without the libraries and modules only other commands or a first build
need, `--help` and `plan --help` without numpy, rich or the library, and the process tunes its
collector. Each case is a fresh interpreter started as the console script starts, listing
sys.modules when it exits."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PLAN = ["plan", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--batch", "1", "--batch", "64"]

NOT_FOR_PLAN = {
    "quantiphy": "units reads '30ms' and prints numbers itself (tests/unit/test_units_quick.py)",
    "tomllib": "the catalog, kernel table and engine preset come from the data cache",
    "importlib.resources": "package data is read from the package folder (datacache.read_builtin)",
    "hashlib": "the data cache compares what a file was built from, no digest",
    "tempfile": "only writing a file needs it (atomic)",
    "shardbudget.atomic": "only writing a file needs it",
    "matplotlib": "--plot only",
    "scipy": "fit and measure only",
    "shardbudget.report.figures": "--plot only",
    "shardbudget.report.html": "report only",
    "shardbudget.decide.deploy": "deploy only",
    "shardbudget.decide.launch": "deploy only",
    "shardbudget.engines.cli_tables": "deploy only: the presets' [cli] records (the preset plan reads has none)",
    "shardbudget.decide.tail_plan": "--jitter only",
    "shardbudget.step.served": "--input-len/--output-len only",
    "shardbudget.step.speculative": "deploy --speculative only",
    "shardbudget.measure": "measure, fit, check only",
    "shardbudget.fabric.topo_profile": "topo only",
}

NOT_FOR_HELP = ("numpy", "rich", "quantiphy", "shardbudget.decide", "shardbudget.step", "shardbudget.fabric")


def _run(argv: list[str]) -> tuple[str, set[str], str]:
    """(stdout, the modules loaded at exit, gc state) of `shardbudget ARGV` started as the console
    script does (console_main), with bytecode and the data cache on as in an installed copy."""
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('MODULES', ' '.join(sorted(sys.modules)), gc.get_threshold()[0],"
        " gc.get_freeze_count() > 0, file=sys.stderr))\n"
        f"sys.argv = ['shardbudget'] + {argv!r}\n"
        "from shardbudget.cli import console_main\n"
        "console_main()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for _ in range(2):  # the first run may build the data cache; the second is the run measured
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    line = next(x for x in out.stderr.splitlines() if x.startswith("MODULES "))
    *mods, threshold, frozen = line.split()[1:]
    return out.stdout, set(mods), f"{threshold} {frozen}"


@pytest.fixture(scope="module")
def plan_run():
    return _run(PLAN)


def test_plan_prints_its_plan(plan_run):
    stdout, mods, _ = plan_run
    assert "Latency-optimal: TP8" in stdout and "shardbudget.decide.planner" in mods


@pytest.mark.parametrize("module", sorted(NOT_FOR_PLAN))
def test_plan_does_not_load(plan_run, module):
    _, mods, _ = plan_run
    loaded = sorted(m for m in mods if m == module or m.startswith(module + "."))
    assert not loaded, f"`shardbudget plan` loads {loaded}: {NOT_FOR_PLAN[module]}"


@pytest.mark.parametrize("argv", [["--help"], ["plan", "--help"]], ids=" ".join)
def test_help_loads_no_library(argv):
    stdout, mods, _ = _run(argv)
    assert "Usage: shardbudget" in stdout
    loaded = sorted(m for m in mods if m.startswith(NOT_FOR_HELP))
    assert not loaded, f"`shardbudget {' '.join(argv)}` loads {loaded[:8]}"


def test_the_process_tunes_its_collector(plan_run):
    """Start-up's ~33,000 lasting objects are not searched ~85 times during the run, nor once more
    at exit (shardbudget.cli.GC_THRESHOLD)."""
    from shardbudget.cli import GC_THRESHOLD

    assert plan_run[2] == f"{GC_THRESHOLD} True"
