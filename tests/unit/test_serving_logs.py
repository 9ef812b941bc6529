"""The readers of serving benchmark results (issue 39): real public files read field by field (the
numbers asserted are the files' own, converted to seconds), each tool told apart by content, and
every malformed file refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shardbudget.errors import MeasureError
from shardbudget.measure.logs.serving_formats import detect, hf_name, is_serving_file, parse_serving_text, read_serving

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "serving"


def test_a_real_vllm_result_is_read_field_by_field():
    """InferenceX's committed `vllm bench serve` JSON (tests/fixtures/serving/README.md)."""
    (run,) = read_serving(FIX / "vllm_inferencex_gptoss_disagg_c4.json")
    assert run.tool == "vllm bench serve"
    assert run.model == "openai/gpt-oss-120b"  # the HF cache path it was served from, read back as the id
    assert (run.concurrency, run.request_rate, run.completed) == (4, None, 40)
    assert (run.input_len, run.output_len) == (40960 / 40, 40960 / 40)
    assert run.latency("tpot") == pytest.approx(8.386647437519565e-3)
    assert run.latency("ttft", "median") == pytest.approx(124.30587713606656e-3)
    assert run.latency("itl", "p99") == pytest.approx(8.548026895150542e-3)
    assert run.latency("e2el") == pytest.approx(8.910336709150579)
    assert run.output_tok_per_s == pytest.approx(459.21607175182197)
    # Little's law: 0.4485 requests/s x 8.910 s in the system = 3.996 in flight (the cap was 4)
    assert run.in_flight == pytest.approx(0.44845319507013864 * 8.910336709150579)
    assert run.settings.tp is None  # nothing in the file says


def test_vllm_metadata_and_an_open_loop_run():
    """The llm-d example: --metadata pairs land at the top level; 10 requests/s without a cap; no
    e2e latency saved (vLLM's default percentile metrics), so the in-flight count is Little's law on
    ttft + (out - 1) x tpot."""
    (run,) = read_serving(FIX / "vllm_llmd_l40s_llama32_3b_10qps.json")
    assert (run.concurrency, run.request_rate) == (None, 10.0)
    assert run.settings.gpu == "4xNVIDIA_L40S"
    out = 81050 / 300
    e2e = 54.577085783294024e-3 + (out - 1) * 13.577995860227945e-3
    assert run.in_flight == pytest.approx(8.325406649602808 * e2e)
    assert 29 < run.in_flight < 31  # ~7.5 per decode replica of the four


def test_a_real_genai_perf_export():
    """perf_analyzer issue #298: inter_token_latency is per request (latency - ttft) / (osl - 1),
    vLLM's TPOT; the load and model from input_config."""
    (run,) = read_serving(FIX / "genai_perf_issue298_trtllm_c100.json")
    assert run.tool == "genai-perf"
    assert (run.model, run.concurrency, run.request_rate) == ("ensemble", 100, None)
    assert run.settings.engine == "trtllm"  # input_config.backend tensorrtllm
    assert run.latency("tpot") == pytest.approx(2.1767344516666665e-3)
    assert run.latency("itl") is None  # no inter_chunk_latency in a genai-perf export
    assert run.latency("ttft", "p99") == pytest.approx(425.02943662e-3)
    assert (run.input_len, run.output_len) == (200.85, 2565.855)
    assert run.in_flight == pytest.approx(17.222547659562533 * 5.767434807386666)


def test_sglang_server_info_gives_the_plan():
    (run,) = read_serving(FIX / "sglang_dsr1_b200_tp8_c4.jsonl")
    s = run.settings
    assert run.tool == "sglang bench_serving"
    assert (s.engine, s.tp, s.pp, s.ep, s.cuda_graphs, s.kv_dtype, s.dp_attention) == (
        "sglang",
        8,
        1,
        1,
        True,
        "auto",
        False,
    )
    assert s.speculative == ""  # speculative_algorithm null: none ran
    assert (run.input_len, run.output_len) == (1024, 1024)  # random dataset, no totals in the file


def test_sglang_jsonl_gives_one_run_per_line_and_reads_capacity():
    line = json.loads((FIX / "sglang_dsr1_b200_tp8_c4.jsonl").read_text())
    second = {
        **line,
        "max_concurrency": 16,
        "concurrency": 15.2,
        "request_throughput": 1.0,
        "server_info": {
            **line["server_info"],
            "disable_cuda_graph": True,
            "internal_states": [{"max_total_num_tokens": 500000}],
        },
    }
    runs = parse_serving_text(json.dumps(line) + "\n" + json.dumps(second) + "\n", "x.jsonl")
    assert [r.index for r in runs] == [1, 2]
    assert runs[1].in_flight == 15.2  # SGLang's own concurrency figure, not Little's law
    assert runs[1].settings.cuda_graphs is False
    assert runs[1].settings.kv_capacity_tokens == 500000


def test_an_sglang_line_of_late_2024_without_request_throughput():
    """datacrunch-research/h200-benchmarks' JSONL (a copy): no request_throughput, no server_info, no
    mean TPOT; the in-flight count is Little's law on completed / duration and the mean e2e latency."""
    runs = read_serving(FIX / "sglang_datacrunch_llama33_70b_4xh200_tp4_online.jsonl")
    assert len(runs) == 7 and [r.request_rate for r in runs] == [1.0, 2.0, 4.0, 8.0, 16.0, 4.0, 8.0]
    run = runs[0]
    assert (run.tool, run.model, run.concurrency, run.completed) == ("sglang bench_serving", None, None, 300)
    assert (run.input_len, run.output_len) == (152612 / 300, 160347 / 300)  # random_range_ratio 0: not 1024
    assert run.latency("itl", "median") == pytest.approx(13.638956006616354e-3)
    assert run.latency("tpot") is None and run.latency("ttft") is None
    assert run.in_flight == pytest.approx(300 / 298.3675805060193 * 7.840616212638561)
    assert run.settings.tp is None and run.settings.engine == "sglang"


def test_trtllm_bench_report():
    (run,) = read_serving(FIX / "trtllm_dsr1_h200_tp8ep8_c4.json")
    s = run.settings
    assert run.tool == "trtllm-bench"
    assert (s.engine, s.tp, s.pp, s.ep, s.gpu, s.speculative) == ("trtllm", 8, 1, 8, "NVIDIA H200", "")
    assert run.latency("tpot") == pytest.approx(13.82e-3)
    assert (run.in_flight, run.input_len, run.output_len) == (4.0, 1024.0, 1024.0)


def test_a_real_aiperf_0_10_export():
    """anud18/qwen36-vllm-aiperf-benchmark's profile_export_aiperf.json (AIPerf 0.10.0, schema 1.3;
    trimmed, README): the model in input_config.models.items, the load in the profiling phase (the
    warm-up phase is excluded from results), inter_token_latency per request (vLLM's TPOT) and
    inter_chunk_latency (every gap: vLLM's ITL), in ms."""
    (run,) = read_serving(FIX / "aiperf_qwen36_nvfp4_5090_chatbot_c4.json")
    assert (run.tool, run.model, run.concurrency, run.request_rate) == ("aiperf", "qwen3.6-nvfp4", 4, None)
    assert (run.input_len, run.output_len) == (515.8125, 204.78125)
    assert run.latency("tpot") == pytest.approx(6.74376905272837e-3)
    assert run.latency("itl", "median") == pytest.approx(5.6854911050476185e-3)
    assert run.latency("ttft", "p99") == pytest.approx(234.56491185e-3)
    assert run.output_tok_per_s == pytest.approx(538.5320453113063)
    assert run.in_flight == pytest.approx(2.6297917671237303 * 1.48438162621875)  # 3.90 of the 4 allowed


def test_an_aiperf_open_loop_phase_gives_the_rate():
    doc = json.loads((FIX / "aiperf_qwen36_nvfp4_5090_chatbot_c4.json").read_text())
    doc["input_config"]["phases"] = [
        {"name": "warmup", "type": "poisson", "exclude_from_results": True, "requests": 16, "rate": 0.8},
        {"name": "profiling", "type": "poisson", "requests": 96, "rate": 0.8},
    ]
    (run,) = parse_serving_text(json.dumps(doc))
    assert (run.concurrency, run.request_rate) == (None, 0.8)


def test_units_of_an_aiperf_metric_are_honoured():
    doc = {
        "time_to_first_token": {"unit": "s", "avg": 0.25},
        "inter_token_latency": {"unit": "us", "avg": 9000},
        "input_config": {"endpoint": {"model_names": ["Qwen/Qwen3-32B"]}, "loadgen": {"concurrency": 8}},
    }
    (run,) = parse_serving_text(json.dumps(doc))
    assert run.tool == "aiperf"
    assert (run.model, run.concurrency) == ("Qwen/Qwen3-32B", 8)
    assert run.latency("ttft") == 0.25 and run.latency("tpot") == pytest.approx(9e-3)


def test_the_tools_are_told_apart_by_content():
    assert detect({"mean_ttft_ms": 1, "model_id": "m"}) == "vllm bench serve"
    assert detect({"mean_ttft_ms": 1, "mean_e2e_latency_ms": 2}) == "sglang bench_serving"
    assert detect({"time_to_first_token": {"unit": "ms", "avg": 1}}) == "genai-perf"
    assert detect({"world_info": {}, "performance": {}, "request_info": {}}) == "trtllm-bench"
    assert detect({"time": [1, 2]}) is None and detect([1]) is None
    assert hf_name("/models/models--Qwen--Qwen3-32B/snapshots/abc/") == "Qwen/Qwen3-32B"


def test_an_nccl_tests_log_is_not_a_serving_result(tmp_path):
    log = tmp_path / "ar.log"
    log.write_text("# nThread 1 nGpus 8\n#       size    count  type\n")
    assert not is_serving_file(log)
    assert is_serving_file(FIX / "vllm_gptoss_h100_tp8_c4.json")
    assert not is_serving_file(tmp_path / "missing.json")


@pytest.mark.parametrize(
    "text, words",
    [
        ("{not json", "not JSON"),
        ('{"hello": 1}', "not a serving benchmark's result"),
        ('{"mean_ttft_ms": "fast", "model_id": "m"}', "mean_ttft_ms is 'fast', not a number"),
        ('{"mean_ttft_ms": -3, "model_id": "m"}', "not a finite non-negative number"),
        ('{"mean_ttft_ms": 3, "model_id": "m", "max_concurrency": 2.5}', "max_concurrency is 2.5, not a whole number"),
        ('{"model_id": "m", "mean_ttft_ms": null, "median_ttft_ms": null}', "without any latency"),
        ('{"time_to_first_token": {"unit": "parsecs", "avg": 1}}', "in 'parsecs'"),
    ],
)
def test_malformed_results_are_refused_in_one_line(text, words):
    with pytest.raises(MeasureError, match=words) as err:
        parse_serving_text(text, "r.json")
    assert "\n" not in str(err.value) and str(err.value).startswith("r.json")
