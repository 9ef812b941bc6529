"""One vocabulary of options (issue 24): every option two commands share has one name, one type and
one help, defined once in cli/args.py; every option has help; the old spellings still work, hidden,
for one release; one overwrite rule for every file a command writes; one rule for catalog names."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
import typer

from shardbudget import cli
from shardbudget.calibrate.paths import RAW
from shardbudget.cli import app as app_mod, args
from shardbudget.decide.request import request

FIX = Path(__file__).resolve().parents[1] / "fixtures"

# Flags whose meaning differs by command in one declared way, each variant defined in args.py:
# --system one or several; --dtype the weights' or the message's elements; --nodes one count or one per system;
# --batch: plan's several batches or deploy's one batch for every option;
# --rate lab's emulated link rate (bits/s) or deploy's request rate (requests/s, issue 23's `deploy --rate`).
VARIANTS = {"--system": 2, "--dtype": 2, "--nodes": 2, "--batch": 2, "--rate": 2}


def _commands():
    group = typer.main.get_command(app_mod.full_app())
    return {name: group.commands[name] for name in app_mod.COMMANDS}


def _options(cmd):
    return [p for p in cmd.params if p.param_type_name == "option" and p.name != "help"]


def test_every_visible_option_of_every_command_has_help():
    missing = [
        f"{name} {o.opts[0]}"
        for name, cmd in _commands().items()
        for o in _options(cmd)
        if not o.hidden and not (o.help or "").strip()
    ]
    assert not missing, f"options without help: {missing}"


def test_shared_options_have_one_name_type_and_help():
    seen: dict[str, set] = {}
    for name, cmd in _commands().items():
        for o in _options(cmd):
            if o.hidden:
                continue
            flag = max(o.opts, key=len)
            seen.setdefault(flag, set()).add((type(o.type).__name__, o.multiple, o.help))
    wrong = {flag: sorted(map(str, kinds)) for flag, kinds in seen.items() if len(kinds) > VARIANTS.get(flag, 1)}
    assert not wrong, f"one flag, several meanings: {wrong}"
    # and each command spells a shared idea with the shared flag
    assert {"--size", "--gpus", "--force", "--out", "--plot", "--json", "--catalog"} <= set(seen)


def test_deploy_takes_plans_pricing_options():
    """Issue 24: what changes how plan prices a step, deploy takes too, under the same flag, type and
    help (the test above holds them equal wherever two commands share one); report takes the engine,
    the TTFT budget and --json."""
    flags = {name: {f for o in _options(cmd) if not o.hidden for f in o.opts} for name, cmd in _commands().items()}
    pricing = {
        "--impl",
        "--overlap",
        "--sequence-parallel",
        "--memory",
        "--jitter",
        "--engine",
        "--dtype",
        "--kv-dtype",
        "--gpu-memory-utilization",
        "--ttft-budget",
        "--nccl",
        "--nccl-symmetric",
        "--catalog",
    }
    assert pricing <= flags["plan"] and pricing <= flags["deploy"], pricing - flags["deploy"]
    assert {"--engine", "--ttft-budget", "--json"} <= flags["report"]
    jitter = [o for name in ("plan", "deploy") for o in _options(_commands()[name]) if "--jitter" in o.opts]
    assert len(jitter) == 2 and len({(type(o.type).__name__, o.multiple, o.help) for o in jitter}) == 1
    assert jitter[0].multiple and "p99" in jitter[0].help


def test_deploy_accepts_plans_pp_all_and_sweeps_every_pp_degree_anyway(capsys):
    """plan sweeps the PP degrees that fill the nodes unless --pp-all; deploy always sweeps every split
    of the GPUs, so plan's habit `deploy --pp-all` is accepted (hidden) and changes nothing."""
    argv = ["deploy", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--gpus", "8", "--context", "4096", "--json"]
    assert cli.main(argv) == 0
    plain = capsys.readouterr().out
    assert cli.main([*argv, "--pp-all"]) == 0
    out = capsys.readouterr()
    assert out.out == plain and out.err == ""
    assert {"1xTP2/PP4", "1xTP1/PP8", "1xTP4/PP2"} <= {
        o["label"] if "label" in o else f"{o['replicas']}xTP{o['tp']}/PP{o['pp']}" for o in json.loads(plain)["options"]
    }


def test_old_spellings_are_hidden_aliases(tmp_path, capsys):
    for name, old in (("measure", "--nproc"), ("measure", "--sizes"), ("lab", "--ranks"), ("lab", "--sizes")):
        flags = {f for o in _options(_commands()[name]) if o.hidden for f in o.opts}
        assert old in flags, (name, old)
    assert cli.main(["measure", "--nproc", "0"]) == 2  # accepted as --gpus, then refused as --gpus 0 is
    err = capsys.readouterr().err
    assert "warning: --nproc is now --gpus" in err and "at least 2 ranks, got 0" in err


def test_a_default_is_written_once_in_defaults_py():
    """Issue 32: the defaults of a request live in shardbudget/defaults.py alone. No function under
    src/ spells one as a literal for a parameter of that name (a budget of 0.030 or a context of
    4096 typed again), and cli/args.py takes them from there, so the CLI and the library cannot drift."""
    import ast

    from shardbudget import defaults

    named = {
        "budget_s": defaults.BUDGET_S,
        "context": defaults.CONTEXT_TOKENS,
        "input_len": defaults.INPUT_TOKENS,
        "output_len": defaults.OUTPUT_TOKENS,
        "engine": defaults.DEFAULT_ENGINE,
        "comm_threshold": defaults.COMM_THRESHOLD,
        "knee_threshold": defaults.KNEE_THRESHOLD,
        "draft_tokens": defaults.DRAFT_TOKENS,
        "acceptance": defaults.ACCEPTANCE,
    }
    src = Path(args.__file__).resolve().parents[1]
    typed = []
    for path in sorted(src.rglob("*.py")):
        if path.name == "defaults.py":
            continue
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            params = fn.args.args[len(fn.args.args) - len(fn.args.defaults) :] + fn.args.kwonlyargs
            values = fn.args.defaults + fn.args.kw_defaults
            for a, v in zip(params, values):
                if (
                    isinstance(v, ast.Constant)
                    and a.arg in named
                    and v.value == named[a.arg]
                    and not isinstance(v.value, bool)
                ):
                    typed.append(f"{path.relative_to(src)}:{fn.lineno} {fn.name}({a.arg}={v.value!r})")
    assert not typed, "defaults typed again (use shardbudget.defaults):\n" + "\n".join(typed)
    assert args.DEFAULT_ENGINE is defaults.DEFAULT_ENGINE and args.DEPLOY_MAX_BATCH is defaults.DEPLOY_MAX_BATCH
    for engine in defaults.ENGINE_NAMES:  # --engine's help lists every engine, in plan and deploy alike
        assert engine in args.EngineOpt.__metadata__[0].help


def test_the_command_listing_is_each_commands_own_summary(capsys):
    for name, cmd in _commands().items():
        assert inspect.cleandoc(cmd.callback.__doc__ or "").splitlines()[0] == app_mod.SUMMARIES[name], name
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in app_mod.COMMANDS)


def test_version(capsys):
    from shardbudget import __version__

    assert cli.main(["--version"]) == 0 and capsys.readouterr().out.strip() == f"shardbudget {__version__}"
    assert cli.main(["plan", "--version"]) == 2  # a group option, not a command's


# --- one overwrite rule: an existing file is replaced only with --force -----------------------

WRITERS = [
    ["allreduce", "-s", "hgx-h100", "--size", "1MiB", "--plot", "{f}.png"],
    ["report", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--budget-steps", "0", "--out", "{f}.html"],
    ["demo", "--out", "{f}.html"],
    [
        "fit",
        str(RAW / "nccl_03_mi300x_1node.txt"),
        "--name",
        "ow-fit",
        "--base-system",
        "mi300x",
        "--no-holdout",
        "--out",
        "{f}.toml",
    ],
    [
        "topo",
        str(FIX / "topo" / "rtx5090_2gpu_p2p.txt"),
        "--name",
        "ow-topo",
        "--gpu",
        "rtx-pro-6000",
        "--out",
        "{f}.toml",
    ],
    ["measure", "--gpus", "2", "--size", "8B", "--out", "{f}.json"],
    ["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--plot", "{f}.svg"],
]


@pytest.mark.parametrize("argv", WRITERS, ids=lambda a: a[0])
def test_every_file_a_command_writes_is_replaced_only_with_force(argv, tmp_path, capsys):
    target = tmp_path / "mine"
    argv = [a.replace("{f}", str(target)) for a in argv]
    path = Path(next(a for a in argv if a.startswith(str(target))))
    path.write_text("a file the user wants to keep")
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "exists; pass --force to overwrite it" in err and len(err.splitlines()) == 1
    assert path.read_text() == "a file the user wants to keep"


def test_force_replaces(tmp_path, capsys):
    path = tmp_path / "fig.png"
    path.write_text("old")
    assert cli.main(["allreduce", "-s", "hgx-h100", "--size", "1MiB", "--plot", str(path), "--force"]) == 0
    assert path.read_bytes()[:4] == b"\x89PNG"


# --- one rule for names: a catalog name means one thing -------------------------------------------


def test_no_command_may_redefine_a_catalog_name(tmp_path, capsys):
    dupe = tmp_path / "dupe.toml"
    dupe.write_text(
        '[systems.hgx-h100]\ndescription = "mine"\ngpu = "h100-sxm"\ngpus_per_node = 8\n'
        'topology = "switch"\nintra_fabric = "nvswitch-gen3"\nsource = "me"\n'
    )
    assert cli.main(["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--catalog", str(dupe)]) == 2
    assert "[systems.hgx-h100] redefines a built-in entry" in capsys.readouterr().err
    raw = str(RAW / "nccl_03_mi300x_1node.txt")
    assert cli.main(["fit", raw, "--name", "mi300x", "--base-system", "mi300x", "--no-holdout"]) == 2
    assert "already a catalog system" in capsys.readouterr().err
    assert (
        cli.main(["topo", str(FIX / "topo" / "rtx5090_2gpu_p2p.txt"), "--name", "hgx-h100", "--gpu", "rtx-pro-6000"])
        == 2
    )
    assert "hgx-h100" in capsys.readouterr().err


def test_report_and_demo_take_the_engine(tmp_path, capsys):
    """report --engine / demo --engine (issue 24): the report's plans, header and settings are the
    engine's: under sglang the plans name SGLang 0.5.23 and pick what `plan --engine sglang` picks."""
    import json

    from shardbudget.decide.planner import plan

    out = tmp_path / "r.html"
    assert (
        cli.main(
            [
                "report",
                "-m",
                "llama-3.1-8b",
                "-s",
                "hgx-h100",
                "-b",
                "1",
                "--engine",
                "sglang",
                "--budget-steps",
                "0",
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["engine"] == "sglang"
    assumptions = doc["plans"][0]["assumptions"]
    assert (assumptions["engine"], assumptions["engine_version"]) == ("sglang", "0.5.23")
    expected = plan(request("llama-3.1-8b", "hgx-h100", batches=[1], budget_s=0.030, engine="sglang")).results[0]
    best = doc["plans"][0]["results"][0]
    assert best["best_plan"] == expected.best_plan
    assert "engine sglang" in out.read_text(encoding="utf-8")
    # an unknown engine is one line and exit 2; nothing is written
    assert (
        cli.main(
            ["report", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--engine", "vllmm", "--out", str(tmp_path / "x.html")]
        )
        == 2
    )
    assert "unknown engine 'vllmm'" in capsys.readouterr().err and not (tmp_path / "x.html").exists()


def test_demo_engine_reaches_its_plans(tmp_path, capsys, monkeypatch):
    from shardbudget.decide import report_answers

    seen = {}
    real = report_answers.answer_report

    def spy(req, *a, **kw):
        seen["engine"] = req.scenario.engine
        return real(req.at((1,)), *a, **{**kw, "budget_steps": 0})

    monkeypatch.setattr(report_answers, "answer_report", spy)
    assert cli.main(["demo", "--engine", "trtllm", "--out", str(tmp_path / "d.html")]) == 0
    assert seen["engine"] == "trtllm" and "engine trtllm" in capsys.readouterr().out


def test_report_takes_the_ttft_budget(tmp_path, capsys):
    """report --ttft-budget (issue 24): the report's plans are plan's under the same TTFT budget
    (Llama-3.1-8B on HGX H100, batch 1, 4096-token prompts: TTFT tens of ms, so a 1 ms budget fails
    every row's TTFT and changes the best plan's verdict against the report without it)."""
    import json

    from shardbudget.decide.planner import plan

    out = tmp_path / "r.html"
    argv = ["report", "-m", "llama-3.1-8b", "-s", "hgx-h100", "-b", "1", "--budget-steps", "0", "--json"]
    assert cli.main(argv + ["--ttft-budget", "1ms", "--out", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    expected = plan(request("llama-3.1-8b", "hgx-h100", batches=[1], budget_s=0.030, ttft_budget_s=0.001)).to_dict()
    assert doc["settings"]["ttft_budget_s"] == 0.001 and doc["plans"][0]["ttft_budget_s"] == 0.001
    assert json.dumps(doc["plans"][0]["results"], sort_keys=True) == json.dumps(
        args.jsonable(expected["results"]), sort_keys=True
    )
    assert '<td class="l">TTFT budget</td><td class="l">1 ms</td>' in out.read_text(encoding="utf-8")
    assert cli.main(argv + ["--out", str(tmp_path / "s.html")]) == 0
    assert "TTFT budget" not in (tmp_path / "s.html").read_text(encoding="utf-8")
    free = json.loads(capsys.readouterr().out)
    assert free["plans"][0]["results"] != doc["plans"][0]["results"]
    assert cli.main(argv + ["--ttft-budget", "7200s", "--out", str(tmp_path / "x.html")]) == 2
    assert "at most 3600 s" in capsys.readouterr().err


# --- issue 32: one option group behind every planning command -------------------------------------

PLANNING_GROUPS = {
    "plan": ("FABRIC", "STEP", "BUDGETS"),
    "deploy": ("FABRIC", "STEP", "BUDGETS"),
    "explain": ("FABRIC", "STEP", "BUDGETS"),
    "report": ("FABRIC", "STEP", "BUDGETS"),
    "compare": ("FABRIC",),
}
MINIMAL = {
    "plan": ["-m", "llama-3.1-8b", "-s", "hgx-h100"],
    "deploy": ["-m", "llama-3.1-8b", "-s", "hgx-h100", "--gpus", "8"],
    "explain": ["-m", "llama-3.1-8b", "-s", "hgx-h100"],
    "report": ["-m", "llama-3.1-8b", "-s", "hgx-h100"],
    "compare": ["-m", "llama-3.1-8b", "-s", "hgx-h100"],
}
NON_DEFAULT = {
    "FABRIC": ["--engine", "sglang", "--impl", "nccl", "--nccl", "2.28", "--nccl-symmetric"],
    "STEP": [
        "--dtype",
        "fp8",
        "--kv-dtype",
        "fp8",
        "--overlap",
        "tbo",
        "--sequence-parallel",
        "--gpu-memory-utilization",
        "0.8",
    ],
    "BUDGETS": ["--budget", "40ms", "--ttft-budget", "3s"],
}


def _group_fields(name: str) -> list[str]:
    from dataclasses import fields

    from shardbudget.cli import options

    return [f.name for f in fields(getattr(options, name))]


def test_every_planning_command_takes_each_shared_group_whole_and_alike():
    """The groups of cli/options.py reach every planning command with one name, type, default and
    help: the command's click option for each field is the same object description everywhere."""
    seen: dict[str, set] = {}
    for command, groups in PLANNING_GROUPS.items():
        params = {p.name: p for p in _commands()[command].params}
        for group in groups:
            for field in _group_fields(group):
                assert field in params, f"{command} lacks {group}'s {field}"
                p = params[field]
                seen.setdefault(field, set()).add(
                    (tuple(p.opts), type(p.type).__name__, p.multiple, repr(p.default), p.help)
                )
    assert {field for field, kinds in seen.items() if len(kinds) > 1} == set()
    assert len(seen) == sum(len(_group_fields(g)) for g in ("FABRIC", "STEP", "BUDGETS"))


@pytest.mark.parametrize("command", sorted(PLANNING_GROUPS))
def test_every_shared_option_reaches_the_request(command, monkeypatch, capsys):
    """Given every shared option at a value other than its default, each planning command builds a
    Request that carries every one of them (captured as it is built, before any pricing)."""
    import importlib

    from shardbudget.cli import options
    from shardbudget.errors import ShardbudgetError

    seen = []

    def capture(*a, **kw):
        seen.append(options.build_request(*a, **kw))
        raise ShardbudgetError("captured")

    module = importlib.import_module(f"shardbudget.cli.{app_mod.COMMANDS[command]}")
    monkeypatch.setattr(module, "build_request", capture)
    argv = [command, *MINIMAL[command], *(flag for g in PLANNING_GROUPS[command] for flag in NON_DEFAULT[g])]
    assert cli.main(argv) == 2 and "captured" in capsys.readouterr().err
    sc, b = seen[0].scenario, seen[0].budgets
    assert (sc.engine, sc.impl, sc.catalog.nccl.version[:2], sc.catalog.nccl.symmetric) == (
        "sglang",
        "nccl",
        (2, 28),
        True,
    )
    if "STEP" in PLANNING_GROUPS[command]:
        assert (sc.dtype, sc.kv_dtype, sc.precision.kv_dtype) == ("fp8", "fp8", "fp8")
        assert (sc.settings.overlap, sc.settings.sequence_parallel, sc.settings.memory_utilization) == (
            "tbo",
            True,
            0.8,
        )
        assert (b.budget_s, b.ttft_budget_s) == (0.040, 3.0)
