"""The step model against the decode measurements added with the engine presets (shardbudget.calibrate.decode).

Dense decode is validated in test_decode_tp.py. MoE decode: Qwen3-30B-A3B on A100 is -5% at a 128-token
context and -12% at 8K: the fused-MoE call is vLLM's measured one (catalog/kernels.toml, vLLM PR #19049,
within 7% at batch 1-64 in test_kernels), and what the step misses grows with the context, i.e. lies in
attention (it was +9% .. +1% while the call was also charged its top-k / sort / sum twice).
DeepSeek-V3: TensorRT-LLM's unoptimised EP8/TP8 baseline on B200 (its kernels slower than the floors,
which follow the optimised ones) runs 30-60% slower than predicted, the known gap pinned with its size
so that an improvement or a regression shows. SGLang TP16 over two H100 nodes (July 2025) is priced
under its release's preset, sglang-0.4, whose one fitted number (the fused-MoE call's floor) comes from
another measurement of that release line (8x H200, sglang#3582): held out, within 15%.
vLLM's 2024 V0 engine (dense, under vllm-0.5 / vllm-0.6): the rows its round trips are fitted on within
3%, vllm#6913's batch-32 row held out within 10% (test_vllm_2024.py says how).
"""

import pytest

from shardbudget.calibrate.decode import measurement_cases, predicted_s, summary

CASES = measurement_cases()


@pytest.fixture(scope="module")
def pairs():
    return {c.name: (predicted_s(c), c.measured_s) for c in CASES}


def test_every_case_reads_one_row():
    assert len(CASES) == 12 and all(c.measured_s > 0 for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_decode_cases(pairs, case):
    pred, meas = pairs[case.name]
    err = pred / meas - 1
    bounds = (-0.13, 0.10) if case.model == "qwen3-30b-a3b" else (-0.60, -0.30)  # deepseek-v3 trtllm: the known gap
    if case.engine == "sglang-0.4":
        bounds = (-0.15, 0.15)  # held out from the preset's fit (engines/sglang-0.4.toml)
    if case.engine in ("vllm-0.5", "vllm-0.6"):
        bounds = (-0.03, 0.03) if case.name.endswith("(fit)") else (-0.10, 0.10)
    assert bounds[0] <= err <= bounds[1], f"predicted {pred * 1e3:.2f} ms vs measured {meas * 1e3:.2f} ms"


def test_qwen3_moe_a100_median(pairs):
    qwen = [pairs[c.name] for c in CASES if c.model == "qwen3-30b-a3b"]
    median, _ = summary(qwen)
    assert median <= 0.09, median
