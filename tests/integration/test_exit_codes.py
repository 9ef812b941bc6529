"""One exit-code contract for every command (issue 33, item 14): 0 answered, 1 a negative verdict,
2 bad input, 3 internal error (130 interrupted). Every command registered on the app is run with a
bad input (exit 2, one `error:` line) and with an internal error forced into it (exit 3, one
`internal error:` line naming the exception and where to report it, no traceback), so a script can
tell a crash from a verdict. The internal error is forced by replacing the command's function in
this process (a test-only mechanism no installed build has); the measurement fault hook
(SHARDBUDGET_FAULT) is inert unless tests/hooks is on the path (tests/conftest.py)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shardbudget import cli
from shardbudget.cli import app as app_module
from shardbudget.measure.harness import protocol

LOG = """# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#  Rank  0 Group  0 Pid   1000 on     node-0 device  0 [0x00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1001 on     node-0 device  1 [0x01] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
           8             2     float     sum      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.0
"""

# command -> (a bad input, text the one-line error must hold)
BAD = {
    "fabrics": (["fabrics", "--catalog", "missing.toml"], "missing.toml"),
    "allreduce": (["allreduce", "--system", "hgx-h10"], "did you mean 'hgx-h100'"),
    "compare": (["compare", "--system", "hgx-h100", "--system", "l40s-pcei"], "unknown system 'l40s-pcei'"),
    "plan": (["plan", "--model", "llama-3.1-7b", "--system", "hgx-h100"], "unknown model 'llama-3.1-7b'"),
    "deploy": (["deploy", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--gpus", "0"], "--gpus"),
    "explain": (["explain", "--model", "mixtral-8x7"], "unknown model 'mixtral-8x7'"),
    "models": (["models", "--bogus"], "No such option: --bogus"),
    "measure": (["measure", "--size", "30parsecs", "--gpus", "2"], "'30parsecs'"),
    "fit": (["fit", "missing.log", "--name", "mine", "--base-system", "hgx-h100"], "missing.log"),
    "check": (["check", "missing.log", "--system", "hgx-h100"], "missing.log"),
    "topo": (["topo", "missing.txt", "--name", "mine"], "missing.txt"),
    "lab": (["lab", "--rate", "fast"], "'fast'"),
    "report": (["report", "--model", "llama-3.1-7b", "--system", "hgx-h100"], "unknown model 'llama-3.1-7b'"),
    "demo": (["demo", "--out", "demo.txt"], "demo.txt"),
    "engines": (["engines", "--diff", "vllm-0.19", "vllm-0.2"], "unknown engine 'vllm-0.2'"),
}
# command -> arguments that parse (the command's function never runs: it is replaced)
PARSES = {
    "fabrics": ["fabrics"],
    "allreduce": ["allreduce", "-s", "hgx-h100"],
    "compare": ["compare", "-s", "hgx-h100"],
    "plan": ["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100"],
    "deploy": ["deploy", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--gpus", "8"],
    "explain": ["explain"],
    "models": ["models"],
    "measure": ["measure"],
    "fit": ["fit", "run.log", "--name", "mine", "--base-system", "hgx-h100"],
    "check": ["check", "run.log", "--system", "hgx-h100"],
    "topo": ["topo", "topo.txt", "--name", "mine"],
    "lab": ["lab"],
    "report": ["report", "-m", "llama-3.1-8b", "-s", "hgx-h100"],
    "demo": ["demo"],
    "engines": ["engines", "--diff", "vllm-0.19", "vllm"],
}


def _registered() -> list[str]:
    return [app_module._command_name(c) for c in app_module.full_app().registered_commands]


def test_every_registered_command_has_both_cases():
    names = _registered()
    assert len(names) == len(set(names)) >= 14
    assert set(names) == set(BAD) == set(PARSES) == set(app_module.COMMANDS)


@pytest.mark.parametrize("command", sorted(BAD))
def test_bad_input_exits_2_with_one_line(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv, text = BAD[command]
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2, (code, err)
    assert err.startswith("error: ") and err.count("\n") == 1 and text in err, err


def _break(monkeypatch, command: str) -> None:
    """Replace `command`'s function by one that fails as a bug would, keeping its signature (typer reads
    the options from it)."""
    info = next(c for c in app_module.full_app().registered_commands if app_module._command_name(c) == command)

    @functools.wraps(info.callback)
    def broken(*args, **kwargs):
        raise ZeroDivisionError("float division by zero\n  (a second line)")

    monkeypatch.setattr(info, "callback", broken)


@pytest.mark.parametrize("command", sorted(PARSES))
def test_an_internal_error_exits_3_with_one_line(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SHARDBUDGET_DEBUG", raising=False)
    _break(monkeypatch, command)
    code = cli.main(PARSES[command])
    out, err = capsys.readouterr()
    assert code == 3, (code, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("internal error: ZeroDivisionError: float division by zero (a second line)")
    assert "a bug in shardbudget: please report it" in err


def test_the_contract_is_the_one_documented():
    page = (Path(__file__).resolve().parents[2] / "docs" / "commands.md").read_text(encoding="utf-8")
    section = page.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code, word in ((0, "answered"), (1, "negative verdict"), (2, "bad input"), (3, "internal error")):
        assert f"`{code}`" in section and word in section
    assert (app_module.EXIT_OK, app_module.EXIT_VERDICT, app_module.EXIT_BAD_INPUT, app_module.EXIT_INTERNAL) == (
        0,
        1,
        2,
        3,
    )
    assert "2 bad input, 3 a bug" in app_module.SUMMARIES["check"]


def test_verdicts_exit_1(tmp_path, capsys):
    """check FAIL and deploy's nothing-meets are verdicts (1), not bad input and not crashes."""
    slow = tmp_path / "slow.log"
    slow.write_text(LOG.replace("10.00", "900.00"))
    assert cli.main(["check", str(slow), "--system", "hgx-h100"]) == 1
    assert (
        cli.main(
            [
                "deploy",
                "--model",
                "llama-3.1-70b",
                "--system",
                "l40s-pcie-nps1-degraded",
                "--gpus",
                "1",
                "--budget",
                "1ms",
            ]
        )
        == 1
    )
    capsys.readouterr()


def test_the_console_script_exits_3_on_a_bug(tmp_path):
    """The real process: console_main passes main's 3 to the shell."""
    code = (
        "import functools, sys\n"
        "from shardbudget.cli import app\n"
        "info = next(c for c in app.full_app().registered_commands if app._command_name(c) == 'fabrics')\n"
        "orig = info.callback\n"
        "info.callback = functools.wraps(orig)(lambda *a, **k: 1 / 0)\n"
        "sys.argv = ['shardbudget', 'fabrics']\n"
        "from shardbudget.cli import console_main\n"
        "console_main()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "SHARDBUDGET_DEBUG"}
    src = str(Path(cli.__file__).resolve().parents[2])  # the package under test, wherever the process starts
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    assert p.stderr.startswith("internal error: ZeroDivisionError: division by zero") and "Traceback" not in p.stderr


def test_the_fault_hook_is_inert_without_the_test_suites_hook_module(monkeypatch, tmp_path):
    """SHARDBUDGET_FAULT reaches the measurement only where tests/hooks is importable: an installed
    build (no tests/ beside its package) or a path without the folder ignores it."""
    monkeypatch.setenv(protocol.FAULT_ENV, "wrong-reduction@0")
    assert protocol.armed_faults() == "wrong-reduction@0"  # conftest armed it
    hooks = str(Path(__file__).resolve().parents[1] / "hooks")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p).resolve() != Path(hooks).resolve()])
    monkeypatch.delitem(sys.modules, protocol.FAULT_HOOK, raising=False)
    assert protocol.armed_faults() == ""
    # a module of that name elsewhere (a user's own) does not arm it either
    (tmp_path / f"{protocol.FAULT_HOOK}.py").write_text("ARMED = True\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert protocol.armed_faults() == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "--system", "hgx-h100", "--system", "l40s-pcie-nps1-degraded", "--gpus", "1"],
        ["allreduce", "--system", "hgx-h100", "--gpus", "1"],
        ["allreduce", "--system", "hgx-h100", "--gpus", "1", "--json"],
    ],
)
def test_a_collective_on_one_gpu_is_refused_alike(argv, capsys):
    """Issue 33, item 11: compare --gpus 1 ended in ZeroDivisionError (a ratio of two zero times),
    allreduce --gpus 1 printed algbw inf. Both now say what measure says: a collective needs 2 GPUs."""
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        f"error: {argv[0]}: a collective needs at least 2 GPUs, got 1 (--gpus 1): on one GPU it "
        "moves no data, so it has no time or bandwidth to show\n"
    )


def test_a_closed_pipe_is_not_a_verdict(tmp_path):
    """`shardbudget ... | head -1`: click answers EPIPE with exit(1), the code of a negative verdict; it is 130."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(Path(cli.__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")])
        ),
    }
    p = subprocess.Popen(
        [sys.executable, "-m", "shardbudget", "allreduce", "--system", "hgx-h100", "--size", "8B:1TiB"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    p.stdout.close()  # the reader goes away (as head does) before the command, still starting, prints
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err


DEEP = {
    "deep-array.toml": "a = " + "[" * 5000 + "]" * 5000 + "\n",
    "deep-inline.toml": "a = " + "{b = " * 5000 + "1" + "}" * 5000 + "\n",
    "deep.json": "[" * 100_000 + "]" * 100_000,
    "deep-object.json": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "deep-pci.xml": (
        '<system version="1"><cpu numaid="0">'
        + '<pci busid="0000:01:00.0">' * 5000
        + '<pci busid="0000:02:00.0"><gpu dev="0" sm="90"/></pci>'
        + "</pci>" * 5000
        + "</cpu></system>"
    ),
}


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        (
            ["fabrics", "--catalog", "deep-array.toml"],
            "deep-array.toml: not valid TOML: arrays or inline tables nested too deeply",
        ),
        (
            ["fabrics", "--catalog", "deep-inline.toml"],
            "deep-inline.toml: not valid TOML: arrays or inline tables nested too deeply",
        ),
        (["plan", "--model", "deep.json", "--system", "hgx-h100"], "deep.json is not valid JSON: nested too deeply"),
        (
            ["plan", "--model", "deep-object.json", "--system", "hgx-h100"],
            "deep-object.json is not valid JSON: nested too deeply",
        ),
        (
            ["check", "deep.json", "--system", "hgx-h100"],
            "deep.json: starts like JSON but is not valid JSON: nested too deeply",
        ),
        (["fit", "deep-object.json", "--name", "x", "--base-system", "hgx-h100"], "not valid JSON: nested too deeply"),
        (
            ["topo", "deep-pci.xml", "--name", "x", "--gpu", "h100-sxm"],
            "deep-pci.xml:1: NCCL topology XML nests <pci> more than 32 deep",
        ),
        (
            [
                "topo",
                str(Path(__file__).resolve().parents[1] / "fixtures" / "topo" / "rtx5090_2gpu_p2p.txt"),
                "--name",
                "x",
                "--gpu-spec",
                "deep-inline.toml",
            ],
            "--gpu-spec deep-inline.toml: not a TOML file (nested too deeply",
        ),
    ],
)
def test_input_nested_thousands_deep_is_bad_input_not_a_recursion_error(argv, text, tmp_path, monkeypatch, capsys):
    """Issue 33, item 13: TOML or topology XML nested 5,000 deep ended in 'internal error: RecursionError'."""
    for name, body in DEEP.items():
        (tmp_path / name).write_text(body)
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and text in err and "RecursionError" not in err, err
