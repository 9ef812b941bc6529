"""Every command fits an 80- and a 120-column terminal without cutting a number or a name (issue 24:
`plan` printed "0.…" and "la…", `deploy` "8xT…", `fabrics` ~260 columns whatever the width).
Tables take short headers, fold into further tables or wrap their free text; nothing is elided."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardbudget import cli

DATA = Path(__file__).resolve().parents[1] / "fixtures"

COMMANDS = [
    ["fabrics", "--systems"],
    ["models"],
    ["allreduce", "-s", "hgx-h100", "--size", "8B:1GiB:16"],
    ["compare", "-s", "hgx-h100", "-s", "h100-pcie", "-s", "l40s-pcie"],
    ["plan", "-m", "llama-3.1-70b", "-s", "hgx-h100", "-b", "1", "-b", "64", "--memory"],
    ["plan", "-m", "deepseek-v3", "-s", "hgx-h200", "--nodes", "2"],
    ["plan", "-m", "llama-4-scout", "-s", "hgx-h200", "--nodes", "2"],
    ["deploy", "-m", "llama-3.1-70b", "-s", "hgx-h100", "--gpus", "16"],
    ["deploy", "-m", "qwen3-30b-a3b", "-s", "hgx-h100", "--gpus", "8", "--all"],
    ["explain", "-m", "llama-3.1-8b"],
    ["topo", str(DATA / "topo" / "rtx5090_2gpu_p2p.txt"), "--name", "w5090", "--gpu-spec",
     str(DATA / "topo" / "rtx5090_gpu_spec.toml")],
]


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a[:3]))
def test_every_command_fits_the_terminal_without_eliding(argv, columns, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(columns))
    code = cli.main(argv)
    out = capsys.readouterr().out
    assert code == 0, out[-500:]
    assert "…" not in out, next(line for line in out.splitlines() if "…" in line)
    for line in out.splitlines():  # table rows and borders never run past the terminal
        if line[:1] in "┏┃┡│└":
            assert len(line) <= columns, line


@pytest.mark.parametrize("log,system", [("nccl_03_mi300x_1node.txt", "mi300x"),
                                        ("nccl_15_coreweave_gb200.txt", "gb200-nvl72")])
def test_check_and_fit_do_not_elide_either(log, system, data_dir, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    path = str(data_dir / "raw" / log)
    assert cli.main(["check", path, "-s", system]) in (0, 1)
    assert cli.main(["fit", path, "--name", "w-fit", "--base-system", system, "--no-holdout"]) == 0
    assert "…" not in capsys.readouterr().out
