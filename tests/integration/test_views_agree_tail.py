"""`plan --jitter` and `deploy --jitter` give one figure (issue 24): the ITL's p99 from the same
per-iteration log, priced by one function (decide.tail_plan, Jitter.row_p99s) at each option's own
decode batch.

* decode only (`--context`): deploy's p99 at batch b is plan's row's p99 at batch b, to 1e-9;
* served (`--input-len/--output-len`, deploy's default): deploy's ITL is plan's TPOT, and its p99
  sits above it by what plan's p99 sits above plan's decode ITL (the mixed-in prompts are a fixed
  share; the decode step's collectives jitter), at the batch deploy chose for that option;
* the table prints the JSON's numbers; without a log there is no column and the keys are null.

The log is an nccl-tests -J document (tests/nccl_json_writer.py, nccl-tests' own schema) with
per-iteration times drawn from a seeded shifted exponential, as tests/unit/test_tail_plan.py's.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from shardbudget.cli.app import main
from shardbudget.fabric.catalog import load_catalog

from nccl_json_writer import document, dumps, per_iter_block, placement, result
from shardbudget.calibrate.paths import RAW

CAT = load_catalog()
SIZES = [8 << (2 * i) for i in range(13)]  # 8 B .. 128 MiB, every factor 4


def _log(path, *, ranks: int = 8, cv: float = 0.5, seed: int = 3):
    rng = np.random.default_rng(seed)
    rows = []
    for size in SIZES:
        mean = 10.0 + size / 200e3  # us: a 10 us floor and 200 GB/s
        times = list(mean - cv * mean + rng.exponential(cv * mean, 400))
        m = sum(times) / len(times)
        half = placement(m, size / m / 1e3, size / m / 1e3 * 2 * (ranks - 1) / ranks)
        rows.append(
            result(
                size,
                max(size // 4, 1),
                "float",
                "sum",
                out=half,
                inp=half,
                out_iter=per_iter_block(times),
                in_iter=per_iter_block(times),
            )
        )
    path.write_text(dumps(document(op="all-reduce", results=rows, processes=["node-a"], ngpus=ranks, per_iter=True)))
    return str(path)


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    return _log(tmp_path_factory.mktemp("jitter") / "ar.json")


def _json(capsys, *argv: str, codes=(0,)) -> dict:
    code = main(list(argv))
    out = capsys.readouterr()
    assert code in codes, out.err
    return json.loads(out.out)


def _plan_rows(capsys, model, system, nodes, batch, log, *extra) -> dict:
    d = _json(
        capsys,
        "plan",
        "-m",
        model,
        "-s",
        system,
        "--nodes",
        str(nodes),
        "--batch",
        str(batch),
        "--pp-all",
        "--budget",
        "none",
        "--jitter",
        log,
        "--json",
        *extra,
    )
    return {(r["tp"], r["pp"], r["ep"], r["dp"]): r for r in d["results"][0]["rows"]}


DECODE = [
    ("llama-3.1-70b", "hgx-h100", 8, 8),
    ("qwen3-30b-a3b", "hgx-h200", 8, 64),
    ("mixtral-8x7b", "hgx-h100", 16, 16),
    ("llama-3.1-8b", "l40s-pcie-nps1-degraded", 8, 1),
]


@pytest.mark.parametrize("model, system, gpus, batch", DECODE)
def test_deploy_p99_at_a_batch_is_plans(model, system, gpus, batch, log, capsys):
    """deploy --context 4096 --batch b: every option's p99 is plan's row's at batch b (a PP replica's
    micro-batch is b, as plan's row), to 1e-9; the mean ITL too."""
    d = _json(
        capsys,
        "deploy",
        "-m",
        model,
        "-s",
        system,
        "--gpus",
        str(gpus),
        "--context",
        "4096",
        "--batch",
        str(batch),
        "--budget",
        "none",
        "--jitter",
        log,
        "--json",
        codes=(0, 1),
    )
    assert d["tail"].startswith("p99 from per-iteration times of all-reduce at 8 ranks (ar.json)")
    checked = 0
    for o in d["options"]:
        per_replica = o["tp"] * o["pp"] * o["dp"] if o["ep"] == 1 else o["tp"] * o["pp"]
        rows = _plan_rows(
            capsys,
            model,
            system,
            max(1, per_replica // CAT.system(system).gpus_per_node),
            batch,
            log,
            "--context",
            "4096",
        )
        row = rows.get((o["tp"], o["pp"], o["ep"], o["dp"]))
        if row is None:  # a plan this node count's sweep does not list
            continue
        assert o["itl_s"] == pytest.approx(row["itl_s"], rel=1e-12)
        assert o["itl_p99_s"] == pytest.approx(row["itl_p99_s"], rel=1e-9)
        assert o["itl_p99_s"] >= o["itl_s"] * (1 - 1e-12)
        checked += 1
    assert checked >= 2, d["options"]
    # with tensor parallelism some option's all-reduces jitter: its p99 is above its mean
    assert any(o["itl_p99_s"] > o["itl_s"] * 1.001 for o in d["options"] if o["tp"] > 1)


SERVED = [("llama-3.1-70b", "hgx-h100", 8), ("qwen3-32b", "hgx-h200", 8)]


@pytest.mark.parametrize("model, system, gpus", SERVED)
def test_deploy_p99_at_each_options_own_batch_is_plans(model, system, gpus, log, capsys):
    """deploy (served, each option at its largest batch within 30 ms): at that batch, deploy's TPOT and
    ITL are plan's, and deploy's p99 ITL is plan's (the same decode step, its collectives, the same
    log); the options at different batches get different tails."""
    served = ["--input-len", "2048", "--output-len", "256"]
    d = _json(
        capsys,
        "deploy",
        "-m",
        model,
        "-s",
        system,
        "--gpus",
        str(gpus),
        "--budget",
        "30ms",
        *served,
        "--jitter",
        log,
        "--json",
    )
    excess = {}
    for o in d["options"]:
        if not o["max_batch"]:
            continue
        b = o["max_batch"] // o["pp"]
        row = _plan_rows(capsys, model, system, 1, b, log, *served)[(o["tp"], o["pp"], o["ep"], o["dp"])]
        assert o["tpot_s"] == pytest.approx(row["tpot_s"], rel=1e-12) and o["itl_s"] == pytest.approx(
            row["itl_s"], rel=1e-12
        )
        assert o["itl_p99_s"] == pytest.approx(row["itl_p99_s"], rel=1e-12)
        excess[(o["tp"], b)] = o["itl_p99_s"] - o["itl_s"]
    assert len(excess) >= 2 and len({round(x, 12) for x in excess.values()}) >= 2, excess


def test_table_prints_the_jsons_p99_and_no_log_no_column(log, capsys):
    argv = ["deploy", "-m", "llama-3.1-70b", "-s", "hgx-h100", "--gpus", "8", "--all"]
    d = _json(capsys, *argv, "--jitter", log, "--json")
    assert main([*argv, "--jitter", log]) == 0
    text = capsys.readouterr().out
    assert "# p99 from per-iteration times of all-reduce at 8 ranks (ar.json)" in text
    header = next(line for line in text.splitlines() if "ITL ms" in line)
    assert header.index("ITL ms") < header.index("TPOT ms") < header.index("p99 ITL ms") < header.index("TTFT ms")
    rows = [
        [c.strip() for c in line.strip("│").split("│")]
        for line in text.splitlines()
        if line.startswith("│") and line.count("│") > 5
    ]
    assert len(rows) == len(d["options"])
    for cells, o in zip(rows, d["options"]):
        assert cells[0] == f"{o['replicas']}x" + cells[0].split("x", 1)[1]
        assert cells[2:5] == [f"{o['itl_s'] * 1e3:.2f}", f"{o['tpot_s'] * 1e3:.2f}", f"{o['itl_p99_s'] * 1e3:.2f}"]
    plain = _json(capsys, *argv, "--json")
    assert plain["tail"] is None and all(o["itl_p99_s"] is None for o in plain["options"])
    # the budget judges the mean TPOT, as plan's verdicts do: the log adds a column, not a different choice
    assert [(o["max_batch"], o["meets_budget"]) for o in plain["options"]] == [
        (o["max_batch"], o["meets_budget"]) for o in d["options"]
    ]
    assert main(argv) == 0 and "p99" not in capsys.readouterr().out


def test_load_and_disaggregated_deployments_carry_the_tail(log, capsys):
    d = _json(capsys, "deploy", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--rate", "5", "--jitter", log, "--json")
    opts = d["deploy"]["options"]
    assert d["deploy"]["tail"] and all(o["itl_p99_s"] >= o["itl_s"] * (1 - 1e-12) for o in opts)
    d = _json(
        capsys,
        "deploy",
        "-m",
        "llama-3.1-70b",
        "-s",
        "hgx-h100",
        "--gpus",
        "8",
        "--disaggregate",
        "4:4",
        "--jitter",
        log,
        "--json",
        codes=(0, 1),
    )
    assert all(o["itl_p99_s"] is not None and o["itl_p99_s"] >= o["itl_s"] * (1 - 1e-12) for o in d["options"])


def test_jitter_with_speculation_or_without_times_is_one_line(log, capsys):
    assert (
        main(
            [
                "deploy",
                "-m",
                "llama-3.1-70b",
                "-s",
                "hgx-h100",
                "--gpus",
                "8",
                "--speculative",
                "eagle",
                "--jitter",
                log,
            ]
        )
        == 2
    )
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "--jitter with --speculative" in out.err
    raw = RAW / "nccl_02_h100_1node_8gpu_large.txt"  # a real all_reduce_perf log, without -I
    assert main(["deploy", "-m", "llama-3.1-70b", "-s", "hgx-h100", "--gpus", "8", "--jitter", str(raw)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "no per-iteration times" in out.err


@pytest.mark.parametrize("columns", [80, 120])
def test_the_p99_column_fits_the_terminal(columns, log, capsys, monkeypatch):
    """The p99 column folds like the others (tests/integration/test_terminal_width.py): no number
    elided, no table line past the terminal."""
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["deploy", "-m", "deepseek-v3", "-s", "hgx-h200", "--gpus", "16", "--jitter", log]) == 0
    out = capsys.readouterr().out
    assert "…" not in out and any(line.startswith("┃") and "p99" in line for line in out.splitlines())
    assert all(len(line) <= columns for line in out.splitlines() if line[:1] in "┏┃┡│└")
