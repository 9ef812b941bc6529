"""`shardbudget check RESULT.json` on serving benchmarks (issue 39), as a user runs it: published runs
the model prices within its band pass (exit 0); runs with a known problem fail (exit 1) naming it
first (a misconfigured TP, eager mode, a slow fabric); bad input is one line and exit 2. The files
and what each holds: tests/fixtures/serving/README.md. Priced figures are the served-step model's
(benchmarks/serving_accuracy.py prices the same runs; docs/accuracy.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shardbudget import cli

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "serving"


def run_json(capsys, *argv) -> tuple[int, dict]:
    code = cli.main(["check", *map(str, argv), "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "name, argv, tool, published_ms",
    [
        ("vllm_gptoss_h100_tp8_c4.json", ["-s", "hgx-h100", "-m", "gpt-oss-120b"], "vllm bench serve", 3.72),
        ("sglang_dsr1_b200_tp8_c4.jsonl", ["-s", "hgx-b200", "-m", "deepseek-v3"], "sglang bench_serving", 8.76),
        (
            "genai_perf_llama70b_2xh100_c5.json",
            ["-s", "hgx-h100", "-m", "llama-3.1-70b", "--tp", "2", "--dtype", "fp8", "--engine", "trtllm"],
            "genai-perf",
            21.83,
        ),
        ("trtllm_dsr1_h200_tp8ep8_c4.json", ["-s", "hgx-h200", "-m", "deepseek-v3"], "trtllm-bench", 13.82),
    ],
)
def test_published_runs_priced_within_the_band_pass(capsys, name, argv, tool, published_ms):
    code, d = run_json(capsys, FIX / name, *argv)
    (c,) = d["checks"]
    assert (code, d["exit_code"], d["outcome"], c["verdict"]) == (0, 0, "PASS", "ok")
    assert c["run"]["tool"] == tool
    (m,) = c["metrics"]  # the files carry the mean TPOT / ITL their sources publish, nothing else
    assert m["measured"] == pytest.approx(published_ms * 1e-3)
    assert 1 / 1.25 <= m["ratio"] <= 1.25 and m["ratio"] == pytest.approx(m["measured"] / m["predicted"])
    assert c["causes"] == []


def test_a_misconfigured_tp_is_named_and_explained(capsys):
    """gpt-oss-120b at TP2 (15.21 ms, published) checked against the TP8 plan: the file's own TP2,
    re-priced, explains it."""
    code, d = run_json(
        capsys, FIX / "vllm_gptoss_h100_tp2_c64.json", "-s", "hgx-h100", "-m", "gpt-oss-120b", "--tp", "8"
    )
    (c,) = d["checks"]
    assert (code, c["verdict"], c["plan"]) == (1, "slow", "TP8")
    assert c["metrics"][0]["ratio"] > 1.9  # TP8 is priced 7.6 ms at 64 in flight
    top = c["causes"][0]
    assert top["kind"] == "setting" and top["explains"] and "the file ran TP2" in top["text"]
    # and without --tp the plan is the file's own: the same run passes
    code, d = run_json(capsys, FIX / "vllm_gptoss_h100_tp2_c64.json", "-s", "hgx-h100", "-m", "gpt-oss-120b")
    assert (code, d["checks"][0]["plan"]) == (0, "TP2")


def test_eager_mode_recorded_in_the_file_is_named(capsys):
    code, d = run_json(capsys, FIX / "vllm_gptoss_h100_tp8_c4_eager.json", "-s", "hgx-h100", "-m", "gpt-oss-120b")
    top = d["checks"][0]["causes"][0]
    assert code == 1 and top["kind"] == "setting" and top["explains"]
    assert "without CUDA graphs" in top["text"]


def test_a_slow_fabric_ranks_communication_first(capsys):
    """The planted run: the TP all-reduces 8x as long as priced (README). Communication needs x7.8,
    within its spread; kernels would need x1.6, beyond theirs; host x27."""
    code, d = run_json(capsys, FIX / "sglang_dsr1_b200_tp8_c4_slow_fabric.jsonl", "-s", "hgx-b200", "-m", "deepseek-v3")
    causes = d["checks"][0]["causes"]
    assert code == 1 and causes[0]["kind"] == "communication" and causes[0]["explains"]
    assert "nvswitch" in causes[0]["text"] and "all-reduce" in causes[0]["text"]
    assert not any(c["explains"] for c in causes if c["kind"] in ("kernels", "host"))
    # the file says CUDA graphs were on: eager mode is not offered as a cause
    assert not any(c["kind"] == "eager" for c in causes)


def test_a_kv_cache_too_small_for_the_concurrency(capsys):
    """The planted run (README): 64 clients on a cache of 16 requests. TPOT is fast (16 run at once),
    TTFT and throughput slow (the rest wait); the cause names the capacity and, re-priced at 16 in
    flight, explains the TPOT."""
    code, d = run_json(capsys, FIX / "sglang_dsr1_b200_tp8_c64_small_kv.jsonl", "-s", "hgx-b200", "-m", "deepseek-v3")
    (c,) = d["checks"]
    verdicts = {(m["metric"], m["stat"]): m["verdict"] for m in c["metrics"]}
    assert verdicts == {("TPOT", "mean"): "fast", ("TTFT", "mean"): "slow", ("output tok/s", "mean"): "slow"}
    top = c["causes"][0]
    assert code == 1 and top["kind"] == "memory" and top["explains"]
    assert "holds 32768 tokens, 16 requests of 2048" in top["text"]


def test_the_slow_cross_node_vllm_run(capsys):
    """vLLM TP16 on two H100 nodes (44.7 ms published, SGLang 32.5 on the same GPUs): slow, and the
    TP all-reduce over InfiniBand is among the causes that would explain it."""
    code, d = run_json(capsys, FIX / "vllm_dsr1_2xh100_tp16_c32.json", "-s", "hgx-h100", "-m", "deepseek-v3")
    (c,) = d["checks"]
    assert code == 1 and c["verdict"] == "slow" and c["plan"] == "TP16"
    comm = [x for x in c["causes"] if x["kind"] == "communication"]
    assert comm and comm[0]["explains"] and "ib-ndr between nodes" in comm[0]["text"]


def test_text_report_and_its_last_line(capsys):
    code = cli.main(
        ["check", str(FIX / "vllm_gptoss_h100_tp2_c64.json"), "-s", "hgx-h100", "-m", "gpt-oss-120b", "--tp", "8"]
    )
    out = capsys.readouterr().out
    assert code == 1 and out.rstrip().endswith("check: FAIL (exit 1)")
    assert "TPOT mean" in out and "SLOW" in out and "1. the file ran TP2" in out
    assert max(map(len, out.splitlines())) <= 100


def test_a_serving_option_with_an_nccl_log_is_refused(tmp_path, capsys):
    log = tmp_path / "ar.log"
    log.write_text("#       size    count  type\n")
    assert cli.main(["check", str(log), "-s", "hgx-h100", "--tp", "8"]) == 2
    assert "--tp: not an option for nccl-tests logs" in capsys.readouterr().err


def test_plot_draws_measured_over_priced(tmp_path, capsys):
    """--plot: one panel per run, the title the finding (the metric the causes explain)."""
    from shardbudget.decide.serving_check import check_serving
    from shardbudget.report.fig_serving import serving_figure

    path = FIX / "vllm_gptoss_h100_tp2_c64.json"
    out = tmp_path / "serving.png"
    assert cli.main(["check", str(path), "-s", "hgx-h100", "-m", "gpt-oss-120b", "--tp", "8", "--plot", str(out)]) == 1
    assert out.stat().st_size > 1000 and f"wrote {out}" in capsys.readouterr().err
    fig = serving_figure(check_serving([path], system="hgx-h100", model="gpt-oss-120b"))  # the file's TP2: ok
    assert fig._suptitle.get_text().startswith("Every metric within its band")
    assert cli.main(["check", str(path), "-s", "hgx-h100", "-m", "gpt-oss-120b", "--plot", str(out)]) == 2
    assert "pass --force to overwrite it" in capsys.readouterr().err  # the one overwrite rule


def test_json_shape_is_stable(capsys):
    _, d = run_json(capsys, FIX / "vllm_gptoss_h100_tp8_c4.json", "-s", "hgx-h100", "-m", "gpt-oss-120b")
    assert set(d) == {"kind", "exit_code", "outcome", "tolerance", "ttft_tolerance", "checks"}
    assert set(d["checks"][0]) == {
        "run",
        "model",
        "system",
        "engine",
        "plan",
        "batch",
        "batch_basis",
        "replicas",
        "input_len",
        "output_len",
        "verdict",
        "priced",
        "metrics",
        "causes",
        "notes",
    }
    assert set(d["checks"][0]["priced"]) >= {"tpot_s", "decode_step_s", "ttft_s", "comm_s", "allreduce"}


@pytest.mark.parametrize(
    "name, argv, words",
    [
        (
            "vllm_llmd_l40s_llama32_3b_10qps.json",
            ["-s", "l40s-pcie-nps1-degraded"],
            ["model 'meta-llama/Llama-3.2-3B-Instruct' is not one shardbudget can load", "give --model"],
        ),
        (
            "genai_perf_llama70b_2xh100_c5.json",
            ["-s", "hgx-h100", "-m", "llama-3.1-70b"],
            ["does not record its tensor-parallel degree; give --tp"],
        ),
        (
            "vllm_gptoss_h100_tp8_c4.json",
            ["-s", "hgx-h100", "-m", "gpt-oss-120b", "--tolerance", "0"],
            ["tolerance must be a positive number"],
        ),
        (
            "vllm_gptoss_h100_tp8_c4.json",
            ["-s", "hgx-h100", "-m", "gpt-oss-120b", "--tp", "16", "--nodes", "1"],
            ["TP16 needs 16 GPUs"],
        ),
        (
            "vllm_gptoss_h100_tp8_c4.json",
            ["-s", "hgx-h100", "-m", "gpt-oss-120b", "--gpus", "8"],
            ["--gpus: not an option for a serving benchmark's result"],
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, name, argv, words):
    assert cli.main(["check", str(FIX / name), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    for w in words:
        assert w in err


def test_check_parses_each_file_once(capsys, monkeypatch):
    """The dispatch's parse is the one the check uses: each file's JSON is decoded once, and a
    second file is read by the serving reader alone."""
    from shardbudget.measure.logs import serving_formats

    calls = []
    real = serving_formats.json_objects
    monkeypatch.setattr(serving_formats, "json_objects", lambda text: calls.append(len(text)) or real(text))
    path = FIX / "vllm_gptoss_h100_tp8_c4.json"
    code, d = run_json(capsys, path, path, "-s", "hgx-h100", "-m", "gpt-oss-120b")
    assert code == 0 and len(d["checks"]) == 2
    assert calls == [path.stat().st_size] * 2
