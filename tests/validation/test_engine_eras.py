"""An engine release's own preset against measurements of that release (issue 21: "source each engine
era's host cost from measurements of that era").

sglang-0.4 (engines/sglang-0.4.toml) is SGLang 0.4.x (Dec 2024 - Jul 2025). Its one fitted number,
the fused-MoE call's floor at small batch, comes from one measurement of that release line (8x H200,
DeepSeek-V3 at batch 1, sgl-project/sglang#3582: 77 tokens/s with MTP at a 1.76x speed-up; the 8
GPUs hold DeepSeek-V3 FP8 at TP8, so H200 or MI300X: H200 as issue 21 quotes it) on Hopper, and 8x
B200 at batch 1 (sgl-project/sglang#6111, tuned) on Blackwell; every other figure here is held out:

* 2x 8 H100 over InfiniBand, TP16, concurrency 1 and 32 (tt-inference-server#356, July 2025): the
  rows of shardbudget.calibrate.serving and calibrate.decode (test_decode_measurements.py);
* 8x B200 TP8, batch 32 with tuned Triton configs (sgl-project/sglang#6111, May 2025: 1179.25 output
  tokens/s, 27.14 ms per token with the 512-token prompts' prefill in it; decode_measurements.csv):
  the priced decode step lies below it by no more than 20% (the prefill of 32 x 512 tokens is not in
  the step);
* the floor is a floor: at concurrency 32 on the same 16 H100s (~161 of 256 experts receive tokens in
  every layer, each rank streaming its 1/16 of them) what the release adds to sglang.toml's step is
  under a quarter of what it adds at batch 1, where its step is 1.5x or more (the served row at
  concurrency 32, 32.5 ms, is priced in benchmarks/serving_accuracy.py).
"""

import csv

import pytest

from shardbudget.calibrate.decode import MEASUREMENTS
from shardbudget.step.scenario import precision_for
from shardbudget.engines import load_engine
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import Plan, load_model
from shardbudget.step.scenario import decode_step

H200_BATCH1_S = 1 / (77 / 1.76)  # sglang#3582: 77 tokens/s with MTP, 1.76x over batch-1 decode without it


def _pr6111(batch: int) -> float:
    """Seconds per output token of sglang#6111's 'After tuning' row at `batch` (decode_measurements.csv)."""
    rows = [
        r
        for r in csv.DictReader(MEASUREMENTS.open(newline=""))
        if "sglang/pull/6111" in r["source"] and r["note"].startswith("'After tuning'") and r["batch"] == str(batch)
    ]
    assert len(rows) == 1
    return batch / float(rows[0]["value"])


@pytest.fixture(scope="module")
def step():
    cat, cfg = load_catalog(), load_model("deepseek-v3")

    def run(system, tp, batch, context, *, engine="sglang-0.4", nodes=1):
        s = cat.system(system)
        return decode_step(
            cfg,
            s,
            Plan(tp),
            batch=batch,
            context=context,
            engine=engine,
            precision=precision_for(cfg, s)[0],
            nodes=nodes,
        ).total_s

    return run


def test_the_release_line_reads_its_floors_from_its_file():
    p = load_engine("sglang-0.4")
    assert dict(p.moe_call_floor) == pytest.approx({"hopper": 264e-6, "blackwell": 238e-6})
    assert not load_engine("sglang").moe_call_floor
    assert p.fused_moe_routing_auto == () and p.fused_allreduce_norm_auto == ()  # 0.4.x: Triton MoE, no auto fusion


def test_fit_point_h200(step):
    assert step("hgx-h200", 8, 1, 512) == pytest.approx(H200_BATCH1_S, rel=0.03)


def test_fit_point_b200(step):
    assert step("hgx-b200", 8, 1, 768) == pytest.approx(_pr6111(1), rel=0.03)


def test_held_out_b200_batch32_below_the_measured_step_with_prefill(step):
    err = step("hgx-b200", 8, 32, 768) / _pr6111(32) - 1
    assert -0.20 <= err <= 0.0, err


def test_the_floor_hides_once_the_experts_stream(step):
    one = step("hgx-h100", 16, 1, 192, nodes=2) / step("hgx-h100", 16, 1, 192, engine="sglang", nodes=2)
    many = step("hgx-h100", 16, 32, 192, nodes=2) / step("hgx-h100", 16, 32, 192, engine="sglang", nodes=2)
    assert one >= 1.5 and many - 1 <= (one - 1) / 4, (one, many)
