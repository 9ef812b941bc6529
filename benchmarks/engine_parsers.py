"""Every server line deploy prints, parsed by the engine's own argument parser at its pinned release.

`make test` checks the lines against the flag tables in engines/*.toml (read from the engines'
sources); this script checks them against the real parsers, where an engine installs on this CPU
machine: each engine in its own venv (benchmarks/.venvs/<engine>), `pip install --no-deps` of the
pinned release plus what its parser module imports. SGLang 0.5.23 (the default preset): `ServerArgs.add_cli_args` on an
argparse parser (sglang/srt/server_args.py), and the router lines by sglang-router 0.3.2's
`RouterArgs.add_cli_args` (sglang_router/router_args.py, the parser of `python3 -m
sglang_router.launch_router`); vLLM 0.34.0 (the default preset): `make_arg_parser` of `vllm serve`
(vllm/entrypoints/common/cli_args.py at 0.34.0, openai/cli_args.py before), the model passed as --model. Parsing only: no server starts
and no GPU is needed. An engine that does not install is reported as such (not a failure of the
lines). TensorRT-LLM's multi-node wrappers (mpirun ... trtllm-llmapi-launch trtllm-serve ...) are
run by the system's Open MPI mpirun with --do-not-launch (it parses and maps the ranks, starting
nothing). vLLM's disaggregated proxy (a file in its repository's tests, not a package) and
TensorRT-LLM 1.3.0rc20 itself (not on PyPI) do not install here: their lines are checked by the flag
tables alone.

    python benchmarks/engine_parsers.py [--engines sglang,vllm,mpirun] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENVS = ROOT / ".venvs"
PINS = {"sglang": ["sglang==0.5.23", "sglang-router==0.3.2"], "vllm": ["vllm==0.34.0"]}
EXTRA = {  # what the parser modules import, beyond the engine itself (pure-Python wheels)
    "sglang": [
        "torch==2.13.0",
        "numpy",
        "psutil",
        "requests",
        "pydantic",
        "transformers==5.19.0",
        "orjson",
        "packaging",
        "aiohttp",
        "fastapi",
        "uvicorn",
        "uvloop",
        "pyzmq",
        "setproctitle",
        "msgspec",
        "pillow",
        "tqdm",
        "pybase64",
        "IPython",
        "triton",
        "openai",
        "xgrammar",
        "partial_json_parser",
        "sentencepiece",
        "dill",
        "setproctitle",
    ],
    "vllm": [
        "torch==2.13.0",
        "numpy",
        "psutil",
        "requests",
        "pydantic",
        "transformers>=5.16.1,<5.23.0",
        "msgspec",
        "cachetools",
        "cloudpickle",
        "pyzmq",
        "fastapi",
        "uvicorn",
        "openai",
        "prometheus_client",
        "tqdm",
        "regex",
        "sentencepiece",
        "blake3",
        "cbor2",
        "gguf",
        "pybase64",
        "typing_extensions",
        "openai-harmony",
        "partial-json-parser",
        "diskcache",
        "einops",
        "py-cpuinfo",
        "tokenizers",
        "pillow",
        "watchfiles",
        "lark",
        "python-json-logger",
        "six",
        "setproctitle",
        "prometheus-fastapi-instrumentator",
        "aiohttp",
        "pyyaml",
        "ijson",
        "anthropic",
        "uvloop",
        # 0.34.0's first parse reads its config dataclasses' annotations: the structured-output
        # backends' types among them (its own pins)
        "llguidance>=1.7.0,<1.8.0",
        "xgrammar==0.2.8",
        "outlines_core==0.2.14",
        "lm-format-enforcer==0.11.3",
    ],
}
WORKER = r"""
import argparse, json, shlex, sys
engine, lines = sys.argv[1], json.load(sys.stdin)
if engine == "sglang":
    # torchvision has no build for this CPU torch: the modules sglang's model configs import from it
    # are stubbed before anything imports them (the parser never calls them; transformers 5 then
    # takes torchvision as present, so its image-processor registry loads)
    import importlib.machinery, types
    class _Any(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Any(f"{self.__name__}.{name}")
    for n in ("torchvision", "torchvision.transforms", "torchvision.transforms.functional", "torchvision.io",
              "torchvision.transforms.v2", "torchvision.transforms.v2.functional", "torchvision.ops",
              "torchvision.models"):
        m = _Any(n); m.__spec__ = importlib.machinery.ModuleSpec(n, None); m.__version__ = "0.28.0"; m.__path__ = []
        sys.modules[n] = m
    from sglang.srt.server_args import ServerArgs
    from sglang_router.router_args import RouterArgs
    def parse(argv, program):
        p = argparse.ArgumentParser()
        (RouterArgs if program == "router" else ServerArgs).add_cli_args(p)
        return p.parse_args(argv)
else:
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform
    platforms._current_platform = CpuPlatform()  # no GPU here: the parser's defaults as on a CPU build
    try:
        from vllm.entrypoints.common.cli_args import make_arg_parser  # 0.34: moved from openai/
    except ImportError:
        from vllm.entrypoints.openai.cli_args import make_arg_parser
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # before 0.12
        from vllm.utils import FlexibleArgumentParser
    def parse(argv, program):
        return make_arg_parser(FlexibleArgumentParser()).parse_args(["--model", argv[0], *argv[1:]])
out = []
for program, argv in lines:
    try:
        parse(argv, program); out.append(None)
    except SystemExit as e:
        out.append(f"argparse exit {e.code}")
    except Exception as e:
        out.append(f"{type(e).__name__}: {e}")
print(json.dumps(out))
"""


PARSED = {"sglang": ("serve", "router"), "vllm": ("serve",), "mpirun": ("mpirun",)}
"""The programs whose own parser installs here, per engine."""


def _ip(word: str) -> str:
    """A word with each node's placeholder as an example address of its own (10.0.0.<i + 1>)."""
    return re.sub(r"\$NODE(\d+)_IP", lambda m: f"10.0.0.{int(m.group(1)) + 1}", word)


def server_lines(engine: str) -> list[tuple[str, list[str]]]:
    """(program, words after the command) of every step deploy prints for a spread of requests
    whose program's parser installs (PARSED); for "mpirun", TensorRT-LLM's multi-node wrappers
    with the command they start."""
    import dataclasses

    from shardbudget.decide.deploy import Workload, deploy
    from shardbudget.decide.request import request
    from shardbudget.decide.launch import build_launches
    from shardbudget.fabric.catalog import load_catalog
    from shardbudget.model import load_model
    from shardbudget.step.settings import PlanSettings
    from shardbudget.step.speculative import Speculation

    cat = load_catalog()
    requests = [
        ("llama-3.1-70b", "hgx-h100", 8, {}),
        ("llama-3.1-70b", "hgx-h100", 64, {}),
        ("llama-3.1-70b", "l40s-pcie-nps1-degraded", 8, {"budget_s": 0.1}),
        ("llama-3.1-70b", "hgx-h100", 8, {"dtype": "fp8", "kv_dtype": "fp8", "engine": "eager"}),
        ("llama-3.1-70b", "hgx-h100", 16, {"disaggregate": (4, 12), "budget_s": 0.05}),
        ("deepseek-v3", "hgx-h200", 32, {"budget_s": 0.1}),
        (
            "deepseek-v3",
            "hgx-h200",
            16,
            {
                "budget_s": 0.05,
                "workload": Workload(speculation=Speculation(method="mtp", draft_tokens=2, acceptance=0.8)),
            },
        ),
        (
            "llama-3.1-70b",
            "hgx-h100",
            8,
            {"workload": Workload(speculation=Speculation(method="eagle", draft_tokens=3, acceptance=0.7))},
        ),
        ("llama-3.1-405b", "hgx-h100", 16, {"budget_s": 0.1}),
        ("deepseek-v3", "hgx-h200", 24, {"budget_s": 0.1, "disaggregate": (8, 16)}),
        # the priced MoE all-to-all on the lines (--all2all-backend; --moe-a2a-backend, --deepep-mode)
        ("deepseek-v3", "hgx-h200", 32, {"budget_s": 0.1, "settings": PlanSettings(moe_a2a="deepep-normal")}),
        (
            "deepseek-v3",
            "gb200-nvl72",
            72,
            {
                "budget_s": 0.03,
                "ttft_budget_s": 2.0,
                "disaggregate": (40, 32),
                "settings": PlanSettings(moe_a2a="deepep"),
            },
        ),
        (
            "llama-3.1-70b",
            "hgx-h100",
            8,
            {
                "workload": Workload(
                    speculation=Speculation(method="draft", draft_tokens=3, acceptance=0.7, draft_model="llama-3.1-8b")
                )
            },
        ),
    ]
    out = []
    for model, system, gpus, kw in requests:
        question = {k: kw.pop(k) for k in ("disaggregate",) if k in kw}
        r = deploy(request(model, system, catalog=cat, work=kw.pop("workload", None), **kw), gpus=gpus, **question)
        results = [r] + [dataclasses.replace(r, best=o) for o in r.options if o.meets_budget and o is not r.best][:6]
        for one in results:
            launches, _ = build_launches(one, load_model(model), cat.system(system), cat)
            if engine == "mpirun" and "trtllm" in launches:
                la = launches["trtllm"]
                out += [("mpirun", [*s.wrapper[1:], la.commands[s.program], *s.argv]) for s in la.steps if s.wrapper]
            elif engine in launches:
                out += [(s.program, list(s.argv)) for s in launches[engine].steps if s.program in PARSED[engine]]
    return [(program, [_ip(w) for w in argv]) for program, argv in out]


def check_mpirun(lines: list[tuple[str, list[str]]]) -> tuple[str, list]:
    """Open MPI's own mpirun (the system's, e.g. Debian's openmpi-bin) on each wrapper with
    --do-not-launch: it parses the options and maps the ranks onto the hosts without starting them
    (--allow-run-as-root for this machine's root user only). A line passes when mpirun exits 0 and
    maps -np ranks."""
    errors = []
    for program, argv in lines:
        np_ = int(argv[argv.index("-np") + 1]) if "-np" in argv else 0
        r = subprocess.run(
            ["mpirun", "--allow-run-as-root", "--do-not-launch", *argv], capture_output=True, text=True, timeout=60
        )
        ranks = (r.stdout + r.stderr).count("Process rank:")
        if r.returncode or ranks != np_:
            errors.append(f"mpirun exit {r.returncode}, {ranks} of {np_} ranks mapped")
        else:
            errors.append(None)
    return "system " + subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout.splitlines()[
        0
    ], errors


def install(engine: str) -> tuple[Path | None, str]:
    env_dir = VENVS / engine
    py = env_dir / "bin" / "python"
    if not py.exists():
        venv.create(env_dir, with_pip=True)
    pip = [str(py), "-m", "pip", "install", "-q"]
    steps = [
        pip + ["--no-deps", *PINS[engine]],
        pip + EXTRA[engine],
        [str(py), "-m", "pip", "uninstall", "-y", "-q", "torchvision"],
    ]
    for cmd in steps:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1500)
        if r.returncode:
            return None, f"pip failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}"
    return py, "installed " + " ".join(PINS[engine])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", default="sglang,vllm,mpirun")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    targets, failed = [], 0
    for engine in args.engines.split(","):
        lines = server_lines(engine)
        if engine == "mpirun":
            if shutil.which("mpirun") is None:
                print(
                    f"mpirun: not installed here (apt-get install openmpi-bin); {len(lines)} lines checked only "
                    f"by the flag tables"
                )
                continue
            how, results = check_mpirun(lines)
        else:
            py, how = install(engine)
            if py is None:
                print(f"{engine}: not installed here ({how}); {len(lines)} lines checked only by the flag tables")
                continue
            r = subprocess.run(
                [str(py), "-c", WORKER, engine],
                input=json.dumps(lines),
                capture_output=True,
                text=True,
                timeout=900,
                env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
            )
            if r.returncode:
                print(f"{engine}: {how}, but its parser did not import: {r.stderr.strip().splitlines()[-1:]}")
                continue
            results = json.loads(r.stdout.strip().splitlines()[-1])
        errors = [(argv, e) for argv, e in zip(lines, results) if e]
        failed += len(errors)
        kinds = ", ".join(f"{sum(1 for p, _ in lines if p == k)} {k}" for k in PARSED[engine])
        print(f"{engine}: {how}; {len(lines) - len(errors)} of {len(lines)} printed lines parse ({kinds})")
        for (program, argv), e in errors[:5]:
            print(f"  {e}: {program} {' '.join(argv)[:200]}")
        targets.append(
            {
                "name": f"{engine} lines parse",
                "value": len(lines) - len(errors),
                "unit": "lines",
                "target": len(lines),
                "passed": not errors,
            }
        )
    if args.out or os.environ.get("SHARDBUDGET_BENCH_RESULTS"):
        Path(args.out or os.environ["SHARDBUDGET_BENCH_RESULTS"]).write_text(json.dumps({"targets": targets}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT.parent / "src"))
    sys.exit(main())
