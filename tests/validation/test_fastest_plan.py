"""The plan the tool prices fastest against the plan measured fastest (issue 21's target: >= 90% of
the comparable cases).

A comparable case is one model on one GPU type under one engine, dtype and workload (ISL / OSL,
concurrency) measured under two or more plans (TP degree, EP vs TP experts), whose measured times
differ by more than 5% (closer ones are ties: no fastest to agree on). The cases are those of
shardbudget.calibrate.serving (printed by benchmarks/serving_accuracy.py): the plan pairs of
data/serving_measurements.csv (each row with its source, data/README.md) and the TP sweeps of
data/decode_tp.csv (calibrate.decode.TP_CASES). Every case here is checked to name the public source of its rows.
"""

from __future__ import annotations

import pytest

from shardbudget.calibrate import serving as sa
from shardbudget.fabric.catalog import load_catalog

IX_B200_FP4 = "actions/runs/23552373331"
"""InferenceX run of SGLang 0.5.9 on 8x B200: DeepSeek-R1 NVFP4 at TP4 EP4 and TP8 EP8."""


@pytest.fixture(scope="module")
def table():
    return sa.priced_table(load_catalog())[0]


@pytest.fixture(scope="module")
def cases(table):
    return sa.fastest_plan_cases(table)


def test_enough_comparable_cases(cases):
    assert len(cases) >= 15, [c for c, _ in cases]


def test_priced_fastest_is_measured_fastest(cases):
    agree = sum(ok for _, ok in cases) / len(cases)
    misses = [c for c, ok in cases if not ok]
    assert agree >= 0.90, f"{100 * agree:.1f}% agree; misses: {misses}"


def test_every_serving_plan_row_names_its_source(table):
    """The serving rows that form plan comparisons each carry a public source (a URL)."""
    keys = {}
    for t in table:
        key = (t["model"], t["gpu"], t["engine"], t["dtype"], t["input_len"], t["output_len"], t["concurrency"])
        keys.setdefault(key, []).append(t)
    compared = [t for rows in keys.values() if len({r["plan"] for r in rows}) > 1 for t in rows]
    assert len(compared) >= 26
    assert all(t["source"].startswith("https://github.com/") for t in compared)


def test_b200_fp4_tp8_ep8_measured_faster_than_tp4_ep4(table):
    """The InferenceX pair (one run, one image): TP8 EP8 is measured 7.5-23% faster than TP4 EP4 at
    every workload and concurrency 4-64, and priced faster too."""
    rows = [t for t in table if IX_B200_FP4 in t["source"] and t["dtype"] == "nvfp4"]
    assert len(rows) == 28
    pairs = {}
    for t in rows:
        pairs.setdefault((t["input_len"], t["output_len"], t["concurrency"]), {})[t["plan"]] = t
    both = [p for p in pairs.values() if len(p) == 2]
    assert len(both) == 13
    for p in both:
        tp4, tp8 = p["TP4 EP4"], p["TP8 EP8"]
        assert 1.07 <= tp4["meas"] / tp8["meas"] <= 1.35, (tp4["meas"], tp8["meas"])
        assert tp4["pred"] > tp8["pred"], (tp4["pred"], tp8["pred"])
