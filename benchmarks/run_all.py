"""Run every benchmark, print one table of the issue's targets, exit non-zero if any is missed.

    python benchmarks/run_all.py [--quick] [--only speed,accuracy,...]

Runs, each as its own subprocess so one cannot skew another's timing or memory:
    speed.py     planner throughput, `shardbudget plan` wall time, llm-analysis time ratio
    startup.py   start-up: `plan`, `--help`, `plan --help`, medians of 9 cold runs against `import numpy`
    deploy_speed.py  `shardbudget deploy --gpus 64` wall time (dense and MoE), where it goes, the
                 split search's cost at 8-4,096 GPUs (searched / --disaggregate off), and
                 aiconfigurator's `cli default` sweep for the same model and system (wall-time ratio)
    accuracy.py  the collective model against published nccl-tests / rccl-tests timings
    loso.py      leave-one-system-out: constants refitted without each system, that system predicted
    serving_accuracy.py  served TPOT against public serving benchmarks (per engine, GPU, model family),
                 fastest-plan agreement, no measured run called "does not fit"
    known_defects.py the model's known defects: kernel switches where its time falls and no
                 measurement does (the list tests/unit/test_physics.py holds true)
    fuzz.py      hostile inputs through the library and CLI
    soak.py      long harness runs and a million planner configurations under a memory bound
(each only if the file exists). Before speed.py it makes the llm-analysis venv
(benchmarks/.venv-llm-analysis, `pip install llm-analysis==LLM_ANALYSIS_VERSION`) and before
deploy_speed.py the aiconfigurator venv (benchmarks/.venv-aiconfigurator, `pip install
aiconfigurator==AIC_VERSION`), each only if it is missing: neither tool goes into the project's own
venv. A venv that cannot be made (offline) is reported, and its comparison reads "not measured".

Targets: a script may report its own target records by writing {"targets": [...]} as JSON to the
path in $SHARDBUDGET_BENCH_RESULTS (speed.py does, via --out); each record has name, value, unit,
target (text) and passed. A script may add "tables", the rows behind its targets, kept in its run's
record (scripts/bench_docs.py makes docs/accuracy.md and docs/benchmarks.md from them). A script
that writes none is one target: it must exit 0 (the scripts exit non-zero when one of their targets
is missed). A script that exits non-zero although every record
passed adds a failing record for its exit status. The table and the per-script output tails go to
benchmarks/results.json, written atomically.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results.json"
LLM_ANALYSIS_VENV = HERE / ".venv-llm-analysis"
LLM_ANALYSIS_VERSION = "0.2.2"
AIC_VENV = HERE / ".venv-aiconfigurator"
AIC_VERSION = "0.12.0"  # keep equal to deploy_speed.AIC_VERSION

# script -> extra arguments for a --quick run (a smoke run; its numbers are not the measurement)
SCRIPTS = {
    "speed": ["--quick"],
    "startup": ["--runs", "3"],
    "deploy_speed": ["--quick"],
    "accuracy": [],
    "loso": [],
    "decode_accuracy": [],
    "serving_accuracy": [],
    "known_defects": [],
    "fuzz": ["--n", "2000"],
    "soak": ["--quick"],
    "engine_parsers": [],
}


def ensure_venv(venv: Path, requirement: str, module: str) -> Path | None:
    """The python of a benchmark-only venv with `requirement` installed, creating the venv if it is
    missing or cannot import `module`; None (with the reason printed) if that fails."""
    python = venv / "bin" / "python"
    if python.exists():
        check = subprocess.run(
            [str(python), "-c", f"import {module}"], capture_output=True, text=True, env=_clean_env()
        )
        if check.returncode == 0:
            return python
        print(f"run_all: {venv} exists but cannot import {module}; reinstalling", flush=True)
    else:
        print(f"run_all: creating {venv} with {requirement} (once; a few minutes)", flush=True)
        # the base interpreter, not this venv's: the new venv must not see the project's packages
        base = getattr(sys, "_base_executable", sys.executable)
        made = subprocess.run([base, "-m", "venv", str(venv)], capture_output=True, text=True)
        if made.returncode:
            print(f"run_all: could not create the venv: {made.stderr.strip()[-500:]}", flush=True)
            return None
    pip = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", requirement],
        capture_output=True,
        text=True,
        env=_clean_env(),
    )
    if pip.returncode:
        err = "\n".join(line for line in pip.stderr.splitlines() if not line.startswith("WARNING"))
        print(f"run_all: pip install {requirement} failed (offline?): {err.strip()[-800:]}", flush=True)
        return None
    return python


def _clean_env() -> dict:
    """This environment without PYTHONPATH: the project's src must not leak into another tool's venv."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def ensure_llm_analysis_venv() -> Path | None:
    """The llm-analysis venv's python, creating the venv if it is missing; None if that fails."""
    return ensure_venv(LLM_ANALYSIS_VENV, f"llm-analysis=={LLM_ANALYSIS_VERSION}", "llm_analysis.analysis")


def ensure_aic_venv() -> Path | None:
    """The aiconfigurator venv's python, creating the venv if it is missing; None if that fails."""
    return ensure_venv(AIC_VENV, f"aiconfigurator=={AIC_VERSION}", "aiconfigurator")


def run_script(name: str, quick: bool, tool_python: Path | None) -> dict:
    """Run benchmarks/<name>.py, streaming its output; return its records and exit status."""
    path = HERE / f"{name}.py"
    fd, results_path = tempfile.mkstemp(prefix=f"bench-{name}-", suffix=".json")
    os.close(fd)
    os.unlink(results_path)  # present afterwards only if the script wrote it
    cmd = [sys.executable, str(path)] + (SCRIPTS[name] if quick else [])
    if name == "speed":
        cmd += ["--out", results_path]
        if tool_python is not None:
            cmd += ["--llm-analysis-python", str(tool_python)]
    if name == "deploy_speed":
        # None: the venv could not be made; a path that does not exist makes the script say so
        cmd += ["--out", results_path, "--aiconfigurator-python", str(tool_python or AIC_VENV / "missing")]
    env = dict(os.environ, SHARDBUDGET_BENCH_RESULTS=results_path, PYTHONUNBUFFERED="1")
    print(f"\n=== {path.name} {' '.join(cmd[2:])}".rstrip(), flush=True)
    tail: deque[str] = deque(maxlen=25)
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    load = os.getloadavg()[0]  # other work on the cores skews the timings: the record says how much
    t0 = time.perf_counter()
    with subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            tail.append(line.rstrip("\n"))
        rc = proc.wait()
    wall_s = time.perf_counter() - t0
    targets: list[dict] = []
    tables: dict = {}
    try:
        with open(results_path) as fh:
            written = json.load(fh)
        targets = list(written.get("targets", []))
        tables = dict(written.get("tables", {}))
        os.unlink(results_path)
    except FileNotFoundError:
        pass
    except (json.JSONDecodeError, AttributeError, TypeError) as exc:
        targets = [
            {
                "name": f"{name}.py results file",
                "value": None,
                "unit": "",
                "target": "valid JSON",
                "passed": False,
                "error": str(exc),
            }
        ]
    for t in targets:
        t.setdefault("script", f"{name}.py")
    if not targets or (rc != 0 and all(t.get("passed") for t in targets)):
        targets.append(
            {
                "name": f"{name}.py exit status",
                "value": rc,
                "unit": "",
                "target": "0",
                "passed": rc == 0,
                "script": f"{name}.py",
            }
        )
    return {
        "script": f"{name}.py",
        "started": started,
        "load_1min": load,
        "returncode": rc,
        "wall_s": wall_s,
        "targets": targets,
        "tables": tables,
        "output_tail": list(tail),
    }


def _fmt(value, unit: str) -> str:
    if value is None:
        return "not measured"
    if isinstance(value, float):
        if unit == "%":
            return f"{value:.1f} %"  # as the accuracy scripts print their percentages
        if unit in ("configs/s",):
            return f"{value:,.0f} {unit}"
        if unit == "x":
            return f"{value:,.0f}x"
        return f"{value:.3g} {unit}".strip()
    return f"{value} {unit}".strip()


def _goal(target, unit: str) -> str:
    goal = str(target)
    if not any(ch.isdigit() for ch in goal):
        return goal  # "reported": no threshold, no unit
    return f"{goal}x" if unit == "x" else f"{goal} {unit}".strip()


def _cpu_model() -> str | None:
    """The CPU's model name (Linux's /proc/cpuinfo), None where it cannot be read."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            return next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), None)
    except OSError:
        return None


def summary(runs: list[dict]) -> str:
    rows = [("target", "measured", "goal", "")]
    for run in runs:
        for t in run["targets"]:
            unit = t.get("unit", "")
            rows.append(
                (
                    t["name"],
                    _fmt(t.get("value"), unit),
                    _goal(t.get("target", ""), unit),
                    "PASS" if t.get("passed") else "MISS",
                )
            )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from shardbudget.atomic import write_json_atomic  # the project's one atomic writer

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: smaller grids and inputs; not the measurement")
    ap.add_argument("--only", default=",".join(SCRIPTS), help="comma-separated subset of " + ", ".join(SCRIPTS))
    args = ap.parse_args(argv)
    wanted = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SCRIPTS]
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(unknown)}; expected some of {', '.join(SCRIPTS)}")
    runs = []
    for name in SCRIPTS:
        if name not in wanted:
            continue
        if not (HERE / f"{name}.py").exists():
            print(f"\n=== {name}.py: not present, skipped", flush=True)
            continue
        tool_python = (
            ensure_llm_analysis_venv() if name == "speed" else ensure_aic_venv() if name == "deploy_speed" else None
        )
        runs.append(run_script(name, args.quick, tool_python))
    table = summary(runs)
    ok = bool(runs) and all(t.get("passed") for r in runs for t in r["targets"])
    print("\n=== summary" + (" (--quick: a smoke run, not the measurement)" if args.quick else ""))
    print(table)
    print(f"\n{'all targets met' if ok else 'TARGET MISSED'}; details in {RESULTS.relative_to(ROOT)}")
    write_json_atomic(
        RESULTS,
        {
            "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "quick": args.quick,
            "machine": {
                "python": platform.python_version(),
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "processor": _cpu_model() or platform.processor() or platform.machine(),
            },
            "all_passed": ok,
            "targets": [t for r in runs for t in r["targets"]],
            "runs": runs,
        },
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
