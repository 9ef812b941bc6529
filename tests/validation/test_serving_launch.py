"""How the public serving runs were launched (issue 36): InferenceX runs an FP8 KV cache on B200
and under TensorRT-LLM, and its client draws each prompt and output length uniformly from
[int(0.8 L), L], a mean of 0.9 L. shardbudget.calibrate.serving prices each row so
(data/serving_launch.csv, every row naming the launch script and commit it was
read from); a row without a launch line keeps the engine's auto KV cache and its stated lengths."""

from __future__ import annotations

import csv
import re
import statistics

import pytest

from shardbudget.calibrate import serving as sa
from shardbudget.calibrate.paths import DATA
from shardbudget.fabric.catalog import load_catalog


def test_every_launch_line_names_its_script_at_a_commit():
    rows = list(csv.DictReader((DATA / "serving_launch.csv").open(newline="")))
    assert rows
    for r in rows:
        assert (
            re.search(r"github\.com/SemiAnalysisAI/InferenceX/blob/[0-9a-f]{40}/", r["source"])
            or "benchmark-tmpl.yml as above" in r["source"]
        ), r
        assert r["kv_dtype"] in ("fp8", "auto") and float(r["random_range_ratio"]) == pytest.approx(0.8)


@pytest.mark.parametrize(
    "engine, system, dtype, kv, scale",
    [
        ("sglang", "hgx-b200", "nvfp4", "fp8", 0.9),  # dsr1_fp4_b200.sh: --kv-cache-dtype fp8_e4m3
        ("trtllm", "hgx-h200", "fp8", "fp8", 0.9),  # dsr1_fp8_h200_trt.sh: kv_cache_config dtype fp8
        ("vllm", "hgx-h100", "mxfp4", None, 0.9),  # gptoss_fp4_h100.sh: vLLM's auto KV cache
    ],
)
def test_an_inferencex_row_is_priced_as_launched(engine, system, dtype, kv, scale):
    row = {
        "source": "https://github.com/SemiAnalysisAI/InferenceX-app/... run",
        "engine": engine,
        "system": system,
        "dtype": dtype,
    }
    assert sa.launch(row) == (kv, pytest.approx(scale))


def test_a_row_of_another_source_keeps_its_stated_launch():
    row = {
        "source": "https://github.com/tenstorrent/tt-inference-server/issues/356",
        "engine": "sglang",
        "system": "hgx-h100",
        "dtype": "fp8",
    }
    assert sa.launch(row) == (None, 1.0)


def test_launch_lines_take_the_over_count_out_of_long_outputs():
    """The FP8 KV cache halves what MLA decode reads per cached token, which the 1k/8k rows at
    concurrency 32-64 carry most: their median error falls by more than 5 points. No row's prediction
    rises by more than 0.5% (a shorter prompt spreads its prefill's fixed costs over fewer tokens:
    +0.3% at most at 1k/1k, where the smaller cache saves little)."""
    cat = load_catalog()
    now = {id_(t): t for t in sa.priced_table(cat)[0]}
    then = {id_(t): t for t in sa.priced_table(cat, as_stated=True)[0]}
    assert now.keys() == then.keys()
    assert all(now[k]["pred"] <= then[k]["pred"] * 1.005 for k in now)
    long = [
        k
        for k, t in now.items()
        if t["output_len"] == "8192"
        and t["concurrency"] >= 32
        and "InferenceX" in t["source"]
        and t["gpu"] == "hgx-b200"
    ]
    assert len(long) >= 6
    assert (
        statistics.median(abs(then[k]["err"]) for k in long) - statistics.median(abs(now[k]["err"]) for k in long)
        > 0.05
    )


def id_(t: dict) -> tuple:
    return (t["source"], t["plan"], t["dtype"], t["input_len"], t["output_len"], t["concurrency"], t["meas"])
