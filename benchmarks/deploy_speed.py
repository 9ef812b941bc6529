"""Speed of `shardbudget deploy` on 64 GPUs, beside aiconfigurator's `cli default` sweep (issue 13).

(a) Wall time of one `shardbudget deploy ... --gpus 64` call, interpreter start-up included, for a
    dense model (llama-3.1-70b on hgx-h100) and a MoE model (deepseek-v3 on hgx-h200): every split
    of 64 GPUs into replicas x TP x PP x EP x DP-attention, batches 1 to 1024. The installed console
    script runs as a subprocess, one warm-up run, then the median of several runs (CPU time, user +
    sys, reported beside it: on a shared machine wall time includes waiting for a core). Target:
    < 1 s each.
(b) Where that time goes, timed in one fresh process: interpreter start-up, imports (numpy; typer
    and rich; the library modules `deploy` needs; the rest of `shardbudget.cli`), then the CLI call
    with the library's parts wrapped by exclusive timers (catalog, splits, step-model evaluation split
    into op listing / compute / collectives, memory, the Pareto front, launch lines, tables). Wall
    and CPU per phase. Reported, not a target.
(c) aiconfigurator (PyPI `aiconfigurator`, pinned, in its own venv benchmarks/.venv-aiconfigurator,
    made by run_all.py) `cli default` for the closest model and system it ships: Meta-Llama-3.1-70B
    on h100_sxm and DeepSeek-V3 on h200_sxm, 64 GPUs, backend vllm (shardbudget's default engine),
    ISL 2048 / OSL 256 / TPOT 30 ms / TTFT 2000 ms, which shardbudget is given too (--input-len 2048
    --output-len 256 --budget 30ms --ttft-budget 2s). Its console script is timed as a subprocess,
    start-up included, exactly as a user runs it. The wall-time ratio (aiconfigurator / shardbudget)
    is a target: >= 1x. Its default sweeps aggregated and disaggregated serving; so does
    shardbudget's `deploy` (issue 38: the prefill:decode splits searched beside the uniform options).
(d) The split search's cost (issue 38): `deploy --gpus N` as it runs by default (the splits searched)
    against `--disaggregate off` (the uniform options alone, the answer before the search) at 8, 72,
    512 and 4,096 GPUs, each a subprocess, the median CPU time (user + sys) of several runs; the
    ratio is a target: <= SEARCH_RATIO_TARGET.

Nothing of aiconfigurator is imported into this process or copied into the repository: only its
console script's wall time, exit status and the summary lines it prints are read.

Usage: python benchmarks/deploy_speed.py [--out FILE] [--quick] [--aiconfigurator-python PATH] [--aic-runs N]
`--breakdown-worker CASE` is the in-process timer of (b), run in a fresh subprocess.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench_cli import shardbudget_cli as _cli  # benchmarks/ is this script's sys.path[0]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
AIC_VENV = HERE / ".venv-aiconfigurator"
AIC_VERSION = "0.12.0"

WALL_TARGET_S = 1.0  # one `deploy --gpus 64` call, start-up included (issue 13)
RATIO_TARGET = 1.0  # aiconfigurator wall / shardbudget wall
SEARCH_RATIO_TARGET = 1.5  # deploy with the split search / --disaggregate off, CPU time (issue 38)
SEARCH_CASES = [  # (model, system, GPUs): deploy's default answer at each size, searched or not
    ("llama-3.1-70b", "hgx-h100", 8),
    ("deepseek-v3", "gb200-nvl72", 72),
    ("deepseek-v3", "gb200-nvl72", 512),
    ("deepseek-v3", "gb200-nvl72", 4096),
]
AIC_TIMEOUT_S = 1200.0  # one aiconfigurator run (the MoE sweep takes ~3 minutes here)

WORKLOAD = ["--budget", "30ms", "--ttft-budget", "2s", "--input-len", "2048", "--output-len", "256"]
AIC_WORKLOAD = [
    "--total-gpus",
    "64",
    "--backend",
    "vllm",
    "--isl",
    "2048",
    "--osl",
    "256",
    "--ttft",
    "2000",
    "--tpot",
    "30",
]
CASES = {
    "dense": {
        "model": "llama-3.1-70b",
        "system": "hgx-h100",
        "aic_model": "meta-llama/Meta-Llama-3.1-70B",
        "aic_system": "h100_sxm",
    },
    "moe": {
        "model": "deepseek-v3",
        "system": "hgx-h200",
        "aic_model": "deepseek-ai/DeepSeek-V3",
        "aic_system": "h200_sxm",
    },
}


def deploy_argv(case: str) -> list[str]:
    c = CASES[case]
    return ["deploy", "--model", c["model"], "--system", c["system"], "--gpus", "64", "--engine", "vllm", *WORKLOAD]


def aic_argv(case: str) -> list[str]:
    c = CASES[case]
    return ["cli", "default", "--model", c["aic_model"], "--system", c["aic_system"], *AIC_WORKLOAD]


def target(name: str, value, unit: str, goal: float, higher_is_better: bool, **detail) -> dict:
    """One target record as run_all.py reads it (the same shape as speed.py's)."""
    passed = value is not None and (value >= goal if higher_is_better else value < goal)
    return {
        "name": name,
        "value": value,
        "unit": unit,
        "target": f"{'>=' if higher_is_better else '<'} {goal:g}",
        "passed": bool(passed),
        **detail,
    }


def _child_env() -> dict:
    """This environment for a timed child, without PYTHONDONTWRITEBYTECODE: with it set (as some
    shells and CI runners do) every start compiles each module from source again, ~0.4 s for
    shardbudget's, which no installed copy pays (pip compiles the .pyc files; a source checkout
    writes them on its first run, the warm-up here)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed_run(
    cmd: list[str], *, env: dict | None = None, cwd: str | None = None, timeout: float | None = None
) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall s, CPU s of the child and its children, the finished process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, proc


def _summary(walls: list[float], cpus: list[float]) -> dict:
    return {
        "wall_s_median": statistics.median(walls),
        "cpu_s_median": statistics.median(cpus),
        "walls_s": walls,
        "cpus_s": cpus,
    }


# --- (a) shardbudget deploy wall time ------------------------------------------------------


def deploy_wall(case: str, runs: int) -> dict:
    cmd, env = _cli() + deploy_argv(case), _child_env()
    timed_run(cmd, env=env)  # warm the page cache and write the .pyc files
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu, proc = timed_run(cmd, env=env)
        if proc.returncode:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
        walls.append(wall)
        cpus.append(cpu)
    s = _summary(walls, cpus)
    shown = sum(1 for line in proc.stdout.splitlines() if line.startswith("│"))
    more = re.search(r"^(\d+) more options", proc.stdout, re.M)  # the table shows the best 20; all are priced
    options = shown + (int(more.group(1)) if more else 0)
    best = next((line for line in proc.stdout.splitlines() if line.startswith("On 64 GPUs")), "")
    c = CASES[case]
    print(
        f"(a) {case}: `shardbudget {' '.join(deploy_argv(case))}`: {options} options; median wall "
        f"{s['wall_s_median']:.3f} s over {runs} runs (min {min(walls):.3f}, max {max(walls):.3f}); "
        f"median CPU {s['cpu_s_median']:.3f} s"
    )
    print(f"    {best[:160]}{'...' if len(best) > 160 else ''}")
    return target(
        f"deploy 64 GPUs wall, {case} ({c['model']}, {c['system']})",
        s["wall_s_median"],
        "s",
        WALL_TARGET_S,
        False,
        runs=runs,
        options=options,
        command="shardbudget " + " ".join(deploy_argv(case)),
        **s,
    )


# --- (b) where the time goes ---------------------------------------------------------------


class _Phases:
    """Exclusive wall and CPU time per named phase: a phase's time excludes the phases it calls."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self._stack: list[list[float]] = []

    def wrap(self, name: str, fn):
        def timed(*args, **kwargs):
            self._stack.append([0.0, 0.0])
            w0, c0 = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                dw, dc = time.perf_counter() - w0, time.process_time() - c0
                child_w, child_c = self._stack.pop()
                self.wall[name] += dw - child_w
                self.cpu[name] += dc - child_c
                if self._stack:
                    self._stack[-1][0] += dw
                    self._stack[-1][1] += dc

        return timed

    def add(self, name: str, w0: float, c0: float) -> None:
        self.wall[name] += time.perf_counter() - w0
        self.cpu[name] += time.process_time() - c0


def _instrument(ph: _Phases) -> None:
    """Wrap the library functions `deploy` spends its time in (by the names the callers look up)."""
    from shardbudget import cli
    from shardbudget.cli import command_io
    from shardbudget.decide import deploy
    from shardbudget.step import compose as step, price_comm, price_ops, scenario
    from shardbudget.report import tables

    cli.main = ph.wrap("typer: parse options, dispatch", cli.main)
    command_io.load_catalogs = ph.wrap("catalog load", command_io.load_catalogs)
    # cli imports deploy() inside the command, by module attribute: wrapping the attribute times it
    deploy.deploy = ph.wrap("deploy(): its own arithmetic (batch search, options, sort, verdict)", deploy.deploy)
    deploy.splits = ph.wrap("splits (valid plans)", deploy.splits)
    scenario.compile_step = ph.wrap("StepModel set-up", scenario.compile_step)  # Scenario.step: every view's steps
    step.StepModel.evaluate = ph.wrap("evaluate: array arithmetic, overlap, host", step.StepModel.evaluate)
    step.StepModel.work = ph.wrap("evaluate: per-layer ops and collectives listed", step.StepModel.work)
    price_ops.OpPricer.compute_s = ph.wrap("evaluate: op times (roofline, floors)", price_ops.OpPricer.compute_s)
    price_comm.CommPricer.comm_s = ph.wrap("evaluate: collective times", price_comm.CommPricer.comm_s)
    step.StepModel._layer_parts = ph.wrap(
        "evaluate: layers priced (once per TP x EP x DP, shared by PP)", step.StepModel._layer_parts
    )
    deploy.memory_need = ph.wrap("memory per GPU", deploy.memory_need)
    deploy.pareto_front = ph.wrap("Pareto front", deploy.pareto_front)
    deploy.build_launches = ph.wrap("launch lines", deploy.build_launches)
    tables.print_deploy = ph.wrap("tables (rich)", tables.print_deploy)


def _breakdown_worker(case: str) -> None:
    """Runs in a fresh interpreter: imports in groups, then one CLI call under the phase timers."""
    import contextlib
    import io

    ph = _Phases()
    w0, c0 = time.perf_counter(), time.process_time()
    import numpy  # noqa: F401

    ph.add("import numpy", w0, c0)
    w0, c0 = time.perf_counter(), time.process_time()
    import rich.console  # noqa: F401
    import rich.table  # noqa: F401
    import typer  # noqa: F401

    ph.add("import typer, rich", w0, c0)
    w0, c0 = time.perf_counter(), time.process_time()
    import shardbudget.decide.deploy  # noqa: F401
    import shardbudget.report.tables  # noqa: F401

    ph.add("import shardbudget: what deploy needs", w0, c0)
    w0, c0 = time.perf_counter(), time.process_time()
    import shardbudget.cli.deploy  # noqa: F401

    ph.add("import shardbudget.cli: the app and the deploy command", w0, c0)
    _instrument(ph)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = shardbudget.cli.main(deploy_argv(case))
    print(json.dumps({"rc": rc, "wall_s": dict(ph.wall), "cpu_s": dict(ph.cpu), "stdout_chars": len(out.getvalue())}))


def interpreter_start(runs: int = 5) -> tuple[float, float]:
    """Median (wall, CPU) of `python -c pass` with this interpreter and its site-packages."""
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu, _proc = timed_run([sys.executable, "-c", "pass"], env=_child_env())
        walls.append(wall)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus)


def breakdown(case: str, runs: int) -> dict:
    """Median over `runs` fresh processes of each phase's wall and CPU time."""
    start_wall, start_cpu = interpreter_start()
    walls, cpus = defaultdict(list), defaultdict(list)
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--breakdown-worker", case],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=_child_env(),
        )
        if proc.returncode:
            raise RuntimeError(f"breakdown worker failed: {proc.stderr[-2000:]}")
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        for name, v in got["wall_s"].items():
            walls[name].append(v)
            cpus[name].append(got["cpu_s"][name])
    rows = [("interpreter start-up (python -c pass)", start_wall, start_cpu)]
    rows += [(name, statistics.median(walls[name]), statistics.median(cpus[name])) for name in walls]
    total_w, total_c = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"(b) {case}: where the time goes (median of {runs} fresh processes; exclusive times)")
    print(f"    {'phase':<72} {'wall s':>7} {'CPU s':>7} {'share':>6}")
    for name, w, c in rows:
        print(f"    {name:<72} {w:7.3f} {c:7.3f} {100 * w / total_w:5.1f}%")
    print(f"    {'sum':<72} {total_w:7.3f} {total_c:7.3f}")
    return {
        "case": case,
        "runs": runs,
        "phases": [{"phase": n, "wall_s": w, "cpu_s": c} for n, w, c in rows],
        "sum_wall_s": total_w,
        "sum_cpu_s": total_c,
    }


# --- (c) aiconfigurator --------------------------------------------------------------------


def _aic_env() -> dict:
    """The user's environment without ours: no PYTHONPATH into shardbudget's src, no thread pins,
    its .pyc files used as for shardbudget (see _child_env)."""
    return {
        k: v
        for k, v in _child_env().items()
        if k != "PYTHONPATH" and not k.startswith(("OPENBLAS_", "OMP_", "MKL_", "SHARDBUDGET_"))
    }


def aic_version(python: Path) -> str | None:
    proc = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('aiconfigurator'))"],
        capture_output=True,
        text=True,
        env=_aic_env(),
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def _aic_summary(text: str) -> dict:
    """The lines of its own report worth repeating: its sweep time, result counts, its choice."""
    got: dict = {}
    m = re.search(r"All experiments completed in ([0-9.]+) seconds", text)
    if m:
        got["sweep_s"] = float(m.group(1))
    got["results"] = {k: int(n) for k, n in re.findall(r"Experiment (\w+) completed with (\d+) results", text)}
    m = re.search(r"Best Experiment Chosen: (.*)", text)
    if m:
        got["chosen"] = m.group(1).strip()
    return got


def aic_wall(case: str, python: Path, runs: int) -> dict:
    """Median wall and CPU of aiconfigurator's console script over `runs` runs; raises on failure."""
    exe = python.parent / "aiconfigurator"
    cmd = [str(exe), *aic_argv(case)]
    walls, cpus, summary = [], [], {}
    for _ in range(runs):
        scratch = tempfile.mkdtemp(prefix="aic-")  # it may write files into its working folder
        try:
            wall, cpu, proc = timed_run(cmd, env=_aic_env(), cwd=scratch, timeout=AIC_TIMEOUT_S)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if proc.returncode:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise RuntimeError(f"`aiconfigurator {' '.join(aic_argv(case))}` exited {proc.returncode}:\n{tail}")
        walls.append(wall)
        cpus.append(cpu)
        summary = _aic_summary(proc.stdout + proc.stderr)
    return {**_summary(walls, cpus), "runs": runs, "command": "aiconfigurator " + " ".join(aic_argv(case)), **summary}


def aic_ratio(case: str, ours: dict, python: Path | None, runs: int) -> dict:
    """aiconfigurator's wall time over shardbudget's for the same question, as a target record."""
    c = CASES[case]
    name = f"aiconfigurator / deploy wall, {case} ({c['aic_model']}, {c['aic_system']})"
    if python is None or not Path(python).exists():
        why = (
            f"no venv at {AIC_VENV.relative_to(ROOT)} (benchmarks/run_all.py creates it: "
            f"pip install aiconfigurator=={AIC_VERSION}; offline, that install fails)"
        )
        print(f"(c) aiconfigurator, {case}: {why}: not measured")
        return target(name, None, "x", RATIO_TARGET, True, error=why)
    version = aic_version(Path(python))
    if version is None:
        why = f"{python} cannot import aiconfigurator: not measured"
        print(f"(c) aiconfigurator, {case}: {why}")
        return target(name, None, "x", RATIO_TARGET, True, error=why)
    try:
        theirs = aic_wall(case, Path(python), runs)
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
        print(
            f"(c) aiconfigurator {version}, {case}: the run failed, not measured:\n    "
            + str(exc).replace("\n", "\n    ")
        )
        return target(name, None, "x", RATIO_TARGET, True, error=str(exc)[-1500:], aiconfigurator_version=version)
    ratio = theirs["wall_s_median"] / ours["wall_s_median"]
    cpu_ratio = theirs["cpu_s_median"] / ours["cpu_s_median"]
    note = "" if version == AIC_VERSION else f" (pinned {AIC_VERSION}; the venv has {version})"
    print(
        f"(c) aiconfigurator {version}{note}, {case}: `{theirs['command']}`: median wall {theirs['wall_s_median']:.1f} s "
        f"over {runs} run(s), CPU {theirs['cpu_s_median']:.1f} s; its own sweep timer "
        f"{theirs.get('sweep_s', float('nan')):.1f} s; results {theirs.get('results', {})}"
    )
    if theirs.get("chosen"):
        print(f"    it chose: {theirs['chosen']}")
    print(
        f"    shardbudget deploy: median wall {ours['wall_s_median']:.3f} s, CPU {ours['cpu_s_median']:.3f} s "
        f"-> aiconfigurator takes {ratio:,.0f}x the wall time ({cpu_ratio:,.0f}x the CPU time)"
    )
    return target(
        name,
        ratio,
        "x",
        RATIO_TARGET,
        True,
        cpu_ratio=cpu_ratio,
        aiconfigurator_version=version,
        aiconfigurator=theirs,
        shardbudget_wall_s=ours["wall_s_median"],
        shardbudget_cpu_s=ours["cpu_s_median"],
    )


# --- (d) the split search's cost ------------------------------------------------------------


def search_cost(model: str, system: str, gpus: int, runs: int) -> dict:
    """deploy's default (the splits searched) against --disaggregate off: median CPU and wall."""
    base = ["deploy", "--model", model, "--system", system, "--gpus", str(gpus), *WORKLOAD[:4]]
    env, got = _child_env(), {}
    for name, extra in (("searched", []), ("off", ["--disaggregate", "off"])):
        cmd = _cli() + base + extra
        timed_run(cmd, env=env)  # warm
        walls, cpus = [], []
        for _ in range(runs):
            wall, cpu, proc = timed_run(cmd, env=env)
            if proc.returncode not in (0, 1):
                raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
            walls.append(wall)
            cpus.append(cpu)
        got[name] = {
            **_summary(walls, cpus),
            "layout": next((line for line in proc.stdout.splitlines() if line.startswith("Layout:")), "aggregated"),
        }
    ratio = got["searched"]["cpu_s_median"] / got["off"]["cpu_s_median"]
    print(
        f"(d) {model} on {gpus} GPUs of {system}: searched CPU {got['searched']['cpu_s_median']:.2f} s "
        f"(wall {got['searched']['wall_s_median']:.2f}), off {got['off']['cpu_s_median']:.2f} s "
        f"(wall {got['off']['wall_s_median']:.2f}): {ratio:.2f}x; {got['searched']['layout'][:120]}"
    )
    return target(
        f"deploy split search cost, {model} on {gpus} x {system} GPUs",
        ratio,
        "x",
        SEARCH_RATIO_TARGET,
        False,
        runs=runs,
        searched=got["searched"],
        off=got["off"],
    )


def _versions() -> dict[str, str]:
    """The start-up cost depends on these (typer 0.29 imports pydantic to coerce parameters)."""
    from importlib.metadata import PackageNotFoundError, version

    got = {}
    for name in ("numpy", "typer", "rich", "pydantic"):
        try:
            got[name] = version(name)
        except PackageNotFoundError:
            got[name] = "absent"
    return got


def main(argv: list[str] | None = None) -> int:
    from shardbudget.atomic import write_json_atomic  # the project's one atomic writer

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write the target records here (JSON)")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="fewer runs, aiconfigurator on the dense case only (a smoke run, not the measurement)",
    )
    ap.add_argument(
        "--aiconfigurator-python",
        type=Path,
        default=AIC_VENV / "bin" / "python",
        help="python of the aiconfigurator venv",
    )
    ap.add_argument(
        "--aic-runs",
        type=int,
        default=None,
        help="aiconfigurator runs per case (default 3 dense, 1 MoE: one MoE sweep takes minutes)",
    )
    ap.add_argument("--no-aiconfigurator", action="store_true", help="skip (c)")
    ap.add_argument("--breakdown-worker", metavar="CASE", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.breakdown_worker:
        _breakdown_worker(args.breakdown_worker)
        return 0
    runs = 3 if args.quick else 9
    versions = _versions()
    print(
        f"deploy_speed: python {sys.version.split()[0]}, {os.cpu_count()} CPUs, unpinned (a normal start-up, "
        f".pyc files cached); " + ", ".join(f"{k} {v}" for k, v in versions.items())
    )
    targets, breakdowns = [], []
    for case in CASES:
        ours = deploy_wall(case, runs)
        targets.append(ours)
        breakdowns.append(breakdown(case, runs=3 if args.quick else 5))
        if args.no_aiconfigurator or (args.quick and case != "dense"):
            continue
        aic_runs = args.aic_runs or (1 if args.quick or case == "moe" else 3)
        targets.append(aic_ratio(case, ours, args.aiconfigurator_python, aic_runs))
    for model, system, gpus in SEARCH_CASES:
        targets.append(search_cost(model, system, gpus, 1 if args.quick else 3))
    if args.out:
        write_json_atomic(
            args.out, {"benchmark": "deploy_speed", "versions": versions, "targets": targets, "breakdown": breakdowns}
        )
    return 0 if all(t["passed"] for t in targets) else 1


if __name__ == "__main__":
    sys.exit(main())
