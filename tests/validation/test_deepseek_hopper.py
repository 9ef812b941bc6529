"""DeepSeek-V3 / R1 decode at concurrency 1-8 on 8 and 16 Hopper GPUs against public runs (issue 34).

Every row of data/ (data/README.md names each source) with DeepSeek-V3/R1 on hgx-h100 / hgx-h200
at concurrency <= 8, priced as shardbudget.calibrate.serving prices it for
benchmarks/serving_accuracy.py (the served TPOT at batch = concurrency, under the preset of the
row's engine release, `release_engine`):

  tenstorrent/tt-inference-server#356   DeepSeek-R1-0528 FP8, 2 x 8 H100 over InfiniBand, TP16,
                                        concurrency 1: SGLang (2025-07-09, 7 rows, ISL 128-8192,
                                        23.1-24.0 ms) under sglang-0.4; vLLM (2025-07-17, 25.9 ms)
                                        under vllm-0.9
  InferenceX (SemiAnalysisAI)           DeepSeek-R1 FP8, 8x H200, TensorRT-LLM, TP8 with EP1 and
                                        EP8, concurrency 4 and 8, ISL/OSL 1k/1k, 1k/8k, 8k/1k

Before issue 34 the vLLM row was priced with today's vLLM (0.19.0): 11.07 ms against 25.9 (-57%),
the gap the issue names for SGLang's row under today's SGLang (12.0 ms against 23.2). Both rows ran
the era's Triton fused-MoE call at small batch (vLLM's fused_moe.py, which SGLang 0.4 adapted), whose
floor the sglang-0.4 preset fits on another measurement (sgl-project/sglang#3582) and vllm-0.9 reuses
unchanged: the vLLM row is held out of every fit. Each row must lie within 20%.
"""

from __future__ import annotations

import pytest

from shardbudget.calibrate import serving as sa
from shardbudget.fabric.catalog import load_catalog

TOLERANCE = 0.20
HOPPER_SYSTEMS = ("hgx-h100", "hgx-h200")


def _rows() -> list[dict]:
    return [
        r
        for r in sa._rows()
        if r["model"] == "deepseek-v3"
        and r["system"] in HOPPER_SYSTEMS
        and int(r["concurrency"]) <= 8
        and int(r["tp"]) in (8, 16)
    ]


ROWS = _rows()


def _name(r: dict) -> str:
    return (
        f"{r['engine']} {r['system']} TP{r['tp']} EP{r['ep'] or 1} {r['input_len']}/{r['output_len']} "
        f"c{r['concurrency']}"
    )


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_the_cited_rows_are_there():
    """17 rows from two independent sources, each under the preset of its release."""
    engines = sorted({r["engine"] for r in ROWS})
    assert len(ROWS) == 17 and engines == ["sglang-0.4", "trtllm", "vllm-0.9"], [_name(r) for r in ROWS]
    assert {int(r["tp"]) for r in ROWS} == {8, 16}
    assert all("github.com/" in r["source"] for r in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=_name)
def test_within_20_percent(row, catalog):
    pred, fits = sa.predict(row, catalog)
    meas = float(row["value"]) * 1e-3
    assert fits, "a measured configuration is called 'does not fit'"
    assert abs(pred / meas - 1) <= TOLERANCE, f"predicted {pred * 1e3:.2f} ms vs measured {meas * 1e3:.2f} ms"


def test_vllm_july_2025_is_its_release_not_todays(catalog):
    """The same row under today's vLLM is the issue's gap: the release's MoE call is what differs."""
    (row,) = [r for r in ROWS if r["engine"] == "vllm-0.9"]
    today, _ = sa.predict({**row, "engine": "vllm"}, catalog)
    then, _ = sa.predict(row, catalog)
    meas = float(row["value"]) * 1e-3
    assert today / meas - 1 < -0.5 and abs(then / meas - 1) <= 0.10
