"""The collective harness on real gloo processes over loopback.

Every run starts real ranks, each importing torch (a few seconds on a 2-core box), so a handful of
runs are shared between tests through module-scoped fixtures; sizes and iterations are kept small.
Expected numbers are ones a reader can check by hand: nccl-tests' busbw factors, the element
counts of each size, and the sums the --check patterns must produce.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shardbudget import cli
from shardbudget.comm.op import busbw_factor
from shardbudget.errors import MeasureError
from shardbudget.measure.harness import preflight, run as harness_run
from shardbudget.measure.__main__ import main
from shardbudget.measure.harness.run import FAULT_ENV, MeasureRunError, plan_sizes, run_measure
from shardbudget.measure.logs.read import read_log

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(
    not HAS_TORCH, reason="torch is not installed; pip install 'shardbudget[measure]' to run real collectives"
)
pytestmark = pytest.mark.timeout(180)

LAUNCHER_VARS = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "SLURM_PROCID",
    "SLURM_STEP_NUM_TASKS",
    FAULT_ENV,
)
RESULT_KEYS = {
    "bytes",
    "requested_bytes",
    "count",
    "time_s",
    "median_s",
    "min_s",
    "p99_s",
    "algbw_bytes_per_s",
    "busbw_bytes_per_s",
    "wrong",
    "wrong_by_rank",
    "samples_s",
}
FAST = dict(iters=5, warmup=2, progress=False)


@contextlib.contextmanager
def local_env(**extra: str):
    """No launcher variables (the test itself might run under one) plus `extra`."""
    with pytest.MonkeyPatch.context() as mp:
        for key in LAUNCHER_VARS:
            mp.delenv(key, raising=False)
        for key, value in extra.items():
            mp.setenv(key, value)
        yield mp


@pytest.fixture(autouse=True)
def _no_launcher():
    with local_env():
        yield


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


# --- shared runs ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli_allreduce_3(tmp_path_factory):
    """`python -m shardbudget.measure --check` (in process) on 3 ranks, 8 B / 8 KiB / 8 MiB, with
    rank 2 corrupting its all-reduce result at 8 KiB only (one run serves several tests)."""
    out = tmp_path_factory.mktemp("cli") / "results.json"
    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        local_env(**{FAULT_ENV: "wrong-reduction@2:8KiB"}),
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        rc = main(
            [
                "--nproc",
                "3",
                "--sizes",
                "8B:8MiB:1024",
                "--iters",
                "5",
                "--warmup",
                "2",
                "--check",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
    return rc, stdout.getvalue(), stderr.getvalue(), read_json(out)


# --- healthy runs -----------------------------------------------------------------------------


@needs_torch
def test_cli_writes_every_sample_in_the_documented_shape(cli_allreduce_3):
    *_, data = cli_allreduce_3
    assert {
        "tool",
        "version",
        "env",
        "op",
        "world_size",
        "n_nodes",
        "backend",
        "dtype",
        "results",
        "complete",
        "error",
    } <= set(data)
    assert {"torch", "backend", "hosts", "world_size", "n_nodes", "command", "time_utc", "python"} <= set(data["env"])
    assert (data["tool"], data["op"], data["backend"], data["dtype"]) == (
        "shardbudget",
        "all-reduce",
        "gloo",
        "fp32",
    )  # dtypes' canonical name
    assert (data["world_size"], data["n_nodes"], data["complete"]) == (3, 1, True)
    assert data["env"]["hosts"] == [socket.gethostname()]
    for row in data["results"]:
        assert set(row) == RESULT_KEYS
        assert len(row["samples_s"]) == 5
        assert row["min_s"] <= row["median_s"] <= row["p99_s"] <= max(row["samples_s"])
        assert row["time_s"] == row["median_s"] == sorted(row["samples_s"])[2]  # median of 5


@needs_torch
def test_sizes_are_the_requested_sweep_in_order_with_float32_counts(cli_allreduce_3):
    *_, data = cli_allreduce_3
    sizes = [r["bytes"] for r in data["results"]]
    assert sizes == [8, 8192, 8 * 2**20] == sorted(sizes)
    assert [r["count"] for r in data["results"]] == [2, 2048, 2 * 2**20]  # 4 bytes per float32
    # an 8 MiB all-reduce moves 1000x the bytes of 8 KiB; on any machine it takes longer
    assert data["results"][2]["time_s"] > data["results"][1]["time_s"]


@needs_torch
def test_three_rank_all_reduce_busbw_is_algbw_times_4_over_3(cli_allreduce_3):
    *_, data = cli_allreduce_3
    for row in data["results"]:
        assert row["algbw_bytes_per_s"] == pytest.approx(row["bytes"] / row["time_s"], rel=1e-12)
        # 2(n-1)/n with n = 3
        assert row["busbw_bytes_per_s"] == pytest.approx(row["algbw_bytes_per_s"] * 4 / 3, rel=1e-12)


@needs_torch
def test_cli_prints_the_nccl_tests_table(cli_allreduce_3):
    _, stdout, _, data = cli_allreduce_3
    lines = stdout.splitlines()
    header = next(ln for ln in lines if ln.startswith("#") and "busbw" in ln)
    assert header.split()[1:] == ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"]
    rows = [ln.split() for ln in lines if ln and not ln.startswith("#")]
    assert [r[:5] for r in rows] == [[str(b), str(b // 4), "float", "sum", "-1"] for b in (8, 8192, 8 * 2**20)]
    for row, result in zip(rows, data["results"]):
        assert float(row[5]) == pytest.approx(result["time_s"] * 1e6, abs=0.01)  # microseconds
        assert float(row[7]) == pytest.approx(result["busbw_bytes_per_s"] / 1e9, abs=0.006)
    assert [r[8] for r in rows] == ["0", "1", "0"]  # the corrupted element at 8 KiB
    assert "# Out of bounds values : 1 FAILED" in lines


@needs_torch
def test_check_catches_a_wrong_reduction_and_names_rank_and_size(cli_allreduce_3):
    rc, _, stderr, data = cli_allreduce_3
    assert rc == 1
    assert "check failed: rank 2: 1 wrong element at 8 KiB (8192 B)" in stderr
    # 3 ranks each send rank+1; any rank whose sum is not 6 is counted, per rank
    assert [r["wrong_by_rank"] for r in data["results"]] == [[0, 0, 0], [0, 0, 1], [0, 0, 0]]
    assert data["complete"] is True and "rank 2" in data["error"]


@needs_torch
def test_all_gather_three_ranks_passes_the_check(tmp_path):
    result = run_measure(
        nproc=3, op="all-gather", sizes_bytes=[8, 4096], check=True, out=str(tmp_path / "ag.json"), **FAST
    )
    # 'bytes' is the gathered output; it must split into 3 equal float32 chunks, so 8 B -> 12 B
    # (3 x 1 element) and 4096 B -> 4104 B (3 x 342 elements); 'count' is per rank
    assert [(r.size_bytes, r.count) for r in result.results] == [(12, 1), (4104, 342)]
    assert [r.wrong_by_rank for r in result.results] == [(0, 0, 0), (0, 0, 0)]
    for r in result.results:
        assert r.busbw_bytes_per_s == pytest.approx(r.algbw_bytes_per_s * 2 / 3, rel=1e-12)
    assert "8 B -> 12 B" in result.notes[0]
    data = read_json(tmp_path / "ag.json")
    assert (data["complete"], data["error"], data["op"]) == (True, None, "all-gather")


@needs_torch
def test_shardbudget_measure_runs_bf16_with_the_same_header_and_table(tmp_path, capsys):
    out = tmp_path / "bf16.json"
    rc = cli.main(
        [
            "measure",
            "--dtype",
            "bf16",
            "--size",
            "8B,1KiB",
            "--iters",
            "3",
            "--warmup",
            "1",
            "--check",
            "--out",
            str(out),
            "--no-progress",
            "--master-addr",
            "127.0.0.1",
            "--timeout",
            "60s",
        ]
    )
    stdout, stderr = capsys.readouterr()
    assert (rc, stderr) == (0, "")
    lines = stdout.splitlines()
    assert lines[0].startswith("# shardbudget all-reduce on gloo, bf16, 2 sizes, 3 iters;")
    rows = [ln.split() for ln in lines if ln and not ln.startswith("#")]
    # 2 bytes per bf16 element; nccl-tests calls the type bfloat16; rank+1 sums to 3 exactly
    assert [r[:5] + r[8:] for r in rows] == [
        ["8", "4", "bfloat16", "sum", "-1", "0"],
        ["1024", "512", "bfloat16", "sum", "-1", "0"],
    ]
    data = read_json(out)
    assert data["dtype"] == "bf16"
    assert [s.dtype for s in read_log(out).samples] == ["bf16", "bf16"]  # the log reader takes it


# --- faults -----------------------------------------------------------------------------------


@needs_torch
def test_killed_rank_fails_the_run_and_keeps_completed_sizes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "crash@1:8KiB")
    out = tmp_path / "partial.json"
    rc = main(["--sizes", "8B,8KiB,64KiB", "--iters", "3", "--warmup", "1", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "rank 1 died (killed by SIGKILL) at size 8 KiB (8192 B)" in err
    data = read_json(out)
    assert data["complete"] is False and "rank 1" in data["error"] and "8 KiB" in data["error"]
    assert [r["bytes"] for r in data["results"]] == [8]


@needs_torch
def test_hung_rank_is_stopped_within_the_timeout(tmp_path, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "hang@1:8KiB")
    done_at = []
    timeout_s = 2.0
    with pytest.raises(MeasureRunError) as info:
        run_measure(
            sizes_bytes=[8, 8192],
            timeout_s=timeout_s,
            out=str(tmp_path / "h.json"),
            on_size=lambda row: done_at.append(time.monotonic()),
            **FAST,
        )
    stopped_after_s = time.monotonic() - done_at[-1]
    # the parent polls every 0.1 s, then kills the ranks; 2.5 s covers that on a loaded 2-core
    # box, and is far below the ranks' own gloo timeout (timeout + 30 s) it must not wait for
    assert timeout_s <= stopped_after_s + 0.2 and stopped_after_s < timeout_s + 2.5
    assert "rank 1 hung" in str(info.value) and "8 KiB" in str(info.value)
    data = read_json(tmp_path / "h.json")
    assert data["complete"] is False and [r["bytes"] for r in data["results"]] == [8]


# --- under a launcher: the process is a rank ---------------------------------------------------


@needs_torch
def test_under_torchrun_style_env_each_process_is_one_rank(tmp_path):
    port = preflight.free_port("127.0.0.1")
    out = tmp_path / "launched.json"
    procs = []
    for rank in range(2):
        env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
        env.update(
            RANK=str(rank),
            WORLD_SIZE="2",
            LOCAL_RANK=str(rank),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            OMP_NUM_THREADS="1",
        )
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "shardbudget.measure",
                    "--sizes",
                    "8B,1KiB",
                    "--iters",
                    "3",
                    "--warmup",
                    "1",
                    "--check",
                    "--out",
                    str(out),
                    "--no-progress",
                    "--timeout",
                    "60s",
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert "busbw" in outputs[0][0] and outputs[1][0] == ""  # only rank 0 prints
    data = read_json(out)
    assert data["env"]["launcher"] == "torchrun" and data["world_size"] == 2
    assert (data["complete"], data["error"]) == (True, None)
    assert [r["bytes"] for r in data["results"]] == [8, 1024]
    for row in data["results"]:
        assert row["wrong_by_rank"] == [0, 0]  # each rank sent rank+1; both hold 3
        # all-reduce on 2 ranks: 2(n-1)/n = 1, so busbw equals algbw
        assert row["busbw_bytes_per_s"] == pytest.approx(row["algbw_bytes_per_s"], rel=1e-12)


def _launched_ranks(tmp_path: Path, *, fault: str, extra: list[str]) -> list[subprocess.Popen]:
    port = preflight.free_port("127.0.0.1")
    procs = []
    for rank in range(2):
        env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
        env.update(
            RANK=str(rank),
            WORLD_SIZE="2",
            LOCAL_RANK=str(rank),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            OMP_NUM_THREADS="1",
            **{FAULT_ENV: fault},
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "shardbudget.measure", "--iters", "3", "--warmup", "1", "--no-progress", *extra],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    return procs


@needs_torch
def test_under_a_launcher_a_hung_peer_is_named_by_its_progress(tmp_path):
    # No parent watches the ranks: rank 0 learns from the store that rank 1 never started 1 KiB
    # (its heartbeat goes on: it is alive, stuck before the size).
    out = tmp_path / "hung.json"
    procs = _launched_ranks(
        tmp_path, fault="hang@1:1KiB", extra=["--sizes", "8B,1KiB,8KiB", "--timeout", "4s", "--out", str(out)]
    )
    try:
        _, err = procs[0].communicate(timeout=120)
    finally:
        procs[1].kill()
        procs[1].communicate(timeout=30)
    assert procs[0].returncode == 1
    assert "rank 0 stopped at size 1 KiB (1024 B): rank 1 (" in err and "never started this size (hung?)" in err
    data = read_json(out)
    assert data["complete"] is False and [r["bytes"] for r in data["results"]] == [8]
    assert "never started this size" in data["error"]


@needs_torch
def test_under_a_launcher_a_dead_peer_is_named_by_its_heartbeat(tmp_path):
    out = tmp_path / "dead.json"
    procs = _launched_ranks(
        tmp_path, fault="crash@1:1KiB", extra=["--sizes", "8B,1KiB,8KiB", "--timeout", "30s", "--out", str(out)]
    )
    outputs = [p.communicate(timeout=120) for p in procs]
    assert procs[0].returncode == 1 and procs[1].returncode == -9
    err = outputs[0][1]
    assert "rank 0 stopped at size 1 KiB (1024 B): lost rank 1 (" in err and "no heartbeat for 2.5 s" in err
    assert [r["bytes"] for r in read_json(out)["results"]] == [8]


# --- refused before any work ------------------------------------------------------------------


@needs_torch
def test_port_in_use_is_refused(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(MeasureError, match=f"port {port} on 127.0.0.1 is already in use"):
            run_measure(sizes_bytes=[8], master_port=port, out=str(tmp_path / "x.json"), **FAST)
    assert not (tmp_path / "x.json").exists()


def test_existing_output_is_refused_and_left_unchanged(tmp_path, capsys):
    out = tmp_path / "results.json"
    out.write_text("precious\n")
    rc = main(["--sizes", "8B", "--out", str(out), "--no-progress"])
    assert rc == 2
    assert "exists" in capsys.readouterr().err
    assert out.read_text() == "precious\n"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(nproc=1), "at least 2 ranks, got 1"),
        (dict(op="broadcast"), "collective 'broadcast' is not supported here"),
        (dict(dtype="fp8"), "dtype 'fp8' has no torch.distributed collectives"),
        (dict(dtype="bf61"), "unknown dtype 'bf61'; did you mean 'bf16'"),
        (dict(master_addr="127.0.0.1; rm -rf /"), "not a hostname or an IP address"),
        (dict(dtype="int8", nproc=16, op="all-to-all", check=True), "int8 cannot hold"),
    ],
)
def test_bad_requests_are_one_line_errors(kwargs, message):
    with pytest.raises(MeasureError, match=message):
        run_measure(sizes_bytes=[8], **{**FAST, **kwargs})


def test_world_size_the_launcher_does_not_provide_is_refused(monkeypatch):
    for key, value in dict(
        RANK="0", WORLD_SIZE="2", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT="29500"
    ).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(MeasureError, match="world size of 2, but 4 ranks were requested"):
        run_measure(nproc=4, sizes_bytes=[8], **FAST)


def test_master_addr_from_the_environment_is_validated(monkeypatch):
    for key, value in dict(RANK="0", WORLD_SIZE="2", MASTER_ADDR="host:29500/evil", MASTER_PORT="29500").items():
        monkeypatch.setenv(key, value)
    with pytest.raises(MeasureError, match="MASTER_ADDR 'host:29500/evil' is not a hostname"):
        run_measure(sizes_bytes=[8], **FAST)


@needs_torch
def test_nccl_without_gpus_is_refused():
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        pytest.skip("this machine has GPUs; the refusal is for CPU-only hosts")
    with pytest.raises(MeasureError, match="backend 'nccl' needs 2 CUDA GPU"):
        run_measure(backend="nccl", sizes_bytes=[8], **FAST)


def test_missing_torch_gives_the_install_hint(monkeypatch):
    monkeypatch.setattr(harness_run, "_torch_installed", lambda: False)
    with pytest.raises(MeasureError) as info:
        run_measure(sizes_bytes=[8], **FAST)
    assert str(info.value) == (
        "torch is not installed; pip install 'shardbudget[measure]' (CPU: pip install torch==2.13.0)"
    )


def test_a_typo_in_the_fault_hook_is_refused(monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "crsh@1")
    with pytest.raises(MeasureError, match="KIND@RANK"):
        run_measure(sizes_bytes=[8], **FAST)


@pytest.mark.parametrize(
    "argv",
    [
        ["--timeout", "5"],  # a bare number: seconds or minutes? refused in both
        ["--master-addr", "no such host!"],
        ["--no-progress", "--gpus", "1"],
        ["--dtype", "fp8", "--port", "29500"],
        ["--op", "broadcast"],
        ["--gpus", "two"],
    ],
)
def test_both_front_ends_refuse_alike(argv, capsys):
    """`shardbudget measure` (typer, the vocabulary every command shares) and `python -m
    shardbudget.measure` (argparse, what torchrun starts) take the same options and refuse the same
    input with one line and exit 2."""
    rc_module = main(argv)
    module = capsys.readouterr()
    rc_cli = cli.main(["measure", *argv])
    typer_cmd = capsys.readouterr()
    assert rc_module == rc_cli == 2
    for err in (module.err, typer_cmd.err):
        assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert module.out == typer_cmd.out == ""
    if argv != ["--gpus", "two"]:  # a bad int is refused by each parser in its own words
        assert module.err == typer_cmd.err


def test_measure_help_lists_every_option_in_both_front_ends(capsys):
    assert main(["--help"]) == 0
    module = capsys.readouterr().out
    assert cli.main(["measure", "--help"]) == 0
    typer_cmd = capsys.readouterr().out
    for option in (
        "--backend",
        "--gpus",
        "--op",
        "--size",
        "--dtype",
        "--iters",
        "--warmup",
        "--check",
        "--out",
        "--force",
        "--timeout",
        "--master-addr",
        "--port",
        "--no-progress",
    ):
        assert option in module and option in typer_cmd


def test_importing_the_harness_does_not_import_torch():
    code = "import sys, shardbudget.measure.harness.run, shardbudget.measure.__main__; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# --- sizes and factors, by hand ----------------------------------------------------------------


def test_sizes_round_up_to_whole_elements_per_chunk():
    plan, notes = plan_sizes([6, 8, 1024], "all-reduce", "float32", 4)
    assert [(p.size_bytes, p.count) for p in plan] == [(8, 2), (1024, 256)]  # 6 B -> 2 floats
    assert "6 B -> 8 B" in notes[0] and "measured once" in notes[1]
    plan, _ = plan_sizes([1024], "reduce-scatter", "float16", 3)
    # input of 3 chunks of 171 halves = 1026 B; count is the per-rank output (171)
    assert [(p.size_bytes, p.count) for p in plan] == [(1026, 171)]
    plan, _ = plan_sizes([4096], "all-to-all", "float32", 4)
    assert [(p.size_bytes, p.count) for p in plan] == [(4096, 256)]  # 1024 floats, 256 per peer


def test_busbw_factors_match_nccl_tests_performance_md():
    assert busbw_factor("all-reduce", 8) == pytest.approx(1.75)  # 2·7/8
    for op in ("all-gather", "reduce-scatter", "all-to-all"):
        assert busbw_factor(op, 8) == pytest.approx(0.875)  # 7/8
