"""Issue 38, build 2: fewer GPUs than given, where no split of all of them meets the budgets.

`deploy --gpus 3` for Llama-3.1-70B on hgx-h100 (30 ms ITL): no split of 3 GPUs meets it (3xTP1 does
not fit, TP1/PP3 runs at 54.8 ms), TP2 on two of them runs at 29.5 ms: that is the answer, with the
GPU left said in the table, the verdict and the JSON. Where a split of all the GPUs meets the
budgets (8 GPUs), nothing changes; where nothing meets even on fewer, neither does the refusal.
"""

from __future__ import annotations

import json

import pytest

from shardbudget import cli
from shardbudget.decide.deploy import deploy, partial_splits
from shardbudget.decide.request import request
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import load_model


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_three_gpus_run_tp2_and_say_one_is_left(capsys):
    rc = cli.main(["deploy", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--gpus", "3"])
    out = capsys.readouterr().out
    assert rc == 0
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert rows[0].split("│")[1].strip() == "1xTP2 (1 left)"
    assert "On 3 GPUs of hgx-h100, 1xTP2 on 2 of them (1 GPU left: no split of all 3 meets the budgets)" in out
    assert "CUDA_VISIBLE_DEVICES=0,1 vllm serve" in out
    rc = cli.main(["deploy", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--gpus", "3", "--json"])
    data = json.loads(capsys.readouterr().out)
    best = data["best"]
    assert (best["replicas"], best["tp"], best["pp"], best["gpus_left"]) == (1, 2, 1, 1)
    assert best["itl_s"] == pytest.approx(0.02842, abs=5e-5) and best["meets_budget"]  # vLLM 0.34.0 (0.19.0: 29.52 ms)
    # per GPU it runs on: its tokens/s over 2 GPUs, not 3
    assert best["tokens_per_s_per_gpu"] == pytest.approx(best["tokens_per_s"] / 2)


def test_a_split_of_every_gpu_that_meets_the_budgets_is_unchanged(cat):
    result = deploy(request("llama-3.1-70b", "hgx-h100", catalog=cat), gpus=8)
    assert result.best.label() == "1xTP8" and result.best.gpus_left == 0
    assert all(o.gpus_left == 0 for o in result.options)  # no partial option is even priced


def test_nothing_meets_on_fewer_either_keeps_the_refusal(cat):
    result = deploy(request("llama-3.1-405b", "hgx-h100", catalog=cat), gpus=3)
    assert result.best is None and all(o.gpus_left == 0 for o in result.options)
    assert result.verdict.startswith("No split of 3 GPUs of hgx-h100 fits")


@pytest.mark.parametrize("gpus", [3, 7, 12, 20])
def test_partial_splits_leave_gpus_and_straddle_no_node(cat, gpus):
    system, cfg = cat.system("hgx-h100"), load_model("llama-3.1-70b")
    gpn = system.gpus_per_node
    found = partial_splits(cfg, system, gpus)
    assert found
    for replicas, plan in found:
        used = replicas * plan.gpus
        assert 0 < used < gpus
        if plan.gpus <= gpn:  # in-node replicas placed whole in each node, and the part-filled last one
            whole, rest = divmod(gpus, gpn)
            assert replicas <= whole * (gpn // plan.gpus) + rest // plan.gpus
        else:
            assert plan.gpus % gpn == 0
    assert len(found) == len(set(found))
    shapes = {(r, p.tp, p.pp) for r, p in found}
    expected = {3: (1, 2, 1), 7: (3, 2, 1), 12: (1, 8, 1), 20: (4, 4, 1)}[gpus]  # e.g. 20: 2 nodes of TP4 pairs
    assert expected in shapes, shapes
