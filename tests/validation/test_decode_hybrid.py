"""Decode ITL of the new layer kinds against public measurements (decode_measurements.csv).

Linear attention (Gated DeltaNet): Qwen3.5-397B-A17B on 4x RTX PRO 6000 Blackwell, vLLM 0.17.0rc1
TP4, speculation off, one request decoding after a cached prefix of 0 or 128k tokens
(voipmonitor/rtx6kpro, the row's source). Two checkpoints: AWQ INT4 and NVIDIA's NVFP4; the
predictions run in the same weight format (embedding and LM head bf16). Within 25 % of each, and
the measured context penalty (0 -> 128k costs 4-8 %) is matched within 10 points: 15 of the 60
layers read a growing KV cache, the other 45 a fixed state.
No public batch-1 decode measurement of a Mamba-2 (Nemotron-H) or DSA (DeepSeek-V3.2, GLM-5)
model with its hardware, engine and TP named was found; those kinds are checked by hand in
tests/unit/test_model_hybrid.py only.
"""

import pytest

from decode_cases import Case, predicted_s
from shardbudget.model import Plan, Precision

SOURCE = "voipmonitor/rtx6kpro"
FORMATS = {"int4": "AWQ MTP OFF", "nvfp4": "nvidia MTP OFF"}


def _cases() -> list[Case]:
    out = []
    for dtype, table in FORMATS.items():
        for ctx, label in ((0, "ctx 0"), (131072, "ctx 128k")):
            rows = [r for r in _rows() if table in r["source"] and label + "," in r["source"]]
            assert len(rows) == 1
            measured = 1.0 / float(rows[0]["value"])
            out.append(Case(f"qwen3.5-397b-a17b rtx-pro-6000 TP4 {dtype} {label}", SOURCE, "qwen3.5-397b-a17b",
                            "rtx-pro-6000-pcie", Plan(4), 1, ctx + 256, "vllm", measured, True,
                            precision=Precision(weights=dtype, head_weights="bf16")))
    return out


def _rows():
    import csv

    from decode_cases import MEASUREMENTS
    return [r for r in csv.DictReader(MEASUREMENTS.open(newline="")) if SOURCE in r["source"]]


CASES = _cases()


def test_four_rows_are_read():
    assert len(CASES) == 4 and len(_rows()) == 4


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_linear_attention_decode_within_25_percent(case):
    pred = predicted_s(case)
    assert pred / case.measured_s - 1 == pytest.approx(0, abs=0.25), \
        f"predicted {pred * 1e3:.2f} ms vs measured {case.measured_s * 1e3:.2f} ms"


@pytest.mark.parametrize("dtype", FORMATS)
def test_long_context_costs_a_hybrid_little(dtype):
    short, long = (c for c in CASES if c.name.split()[3] == dtype)
    measured = long.measured_s / short.measured_s - 1   # AWQ 104 -> 96 tok/s: 8 %; NVFP4 79 -> 75: 5 %
    predicted = predicted_s(long) / predicted_s(short) - 1
    assert 0 < predicted and abs(predicted - measured) <= 0.10
