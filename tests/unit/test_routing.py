"""The busiest expert-parallel rank (model.routing): checked by hand where it can be."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import Plan, load_model
from shardbudget.model.routing import _pool, busiest_rank
from shardbudget.step.scenario import decode_step


def test_deepseek_tokens_land_on_at_most_four_of_eight_ranks():
    """n_group 8, topk_group 4: with EP8 (one 32-expert group per rank) a token's 8 experts sit on
    at most 4 ranks, so one rank gets at least 2 of them (the mean rank gets 1)."""
    cfg = load_model("deepseek-v3")
    assert (cfg.expert_groups, cfg.expert_groups_per_token) == (8, 4)
    ranks = _pool(256, 8, 8, 4) // 32
    touched = np.array([len(set(r)) for r in ranks])
    assert touched.max() <= 4 and (np.bincount(ranks[0], minlength=8).max() >= 2)
    load, spread = busiest_rank(256, 8, 8, 1, groups=8, groups_per_token=4)
    assert 2.0 <= float(load) <= 8.0 and float(load) == pytest.approx(float(spread))
    # without the group rule the same 8 experts spread over more ranks: a lighter busiest rank
    assert float(busiest_rank(256, 8, 8, 1)[0]) < float(load)


def test_two_ranks_by_hand():
    """Qwen3-235B (128 experts, top-8), EP2, one token: rank 0 gets X ~ Hypergeometric(128, 64, 8)
    experts, the busiest max(X, 8 - X): E = 4 + E|X - 4| = 5.06 by the pmf; mean 4."""
    pmf = [math.comb(64, x) * math.comb(64, 8 - x) / math.comb(128, 8) for x in range(9)]
    exact = sum(p * max(x, 8 - x) for x, p in enumerate(pmf)) / 4
    assert exact == pytest.approx(1.2647, abs=0.0001)
    assert float(busiest_rank(128, 8, 2, 1)[0]) == pytest.approx(exact, rel=0.03)


def test_the_excess_shrinks_with_the_batch():
    """A large step loads every rank alike: the factors fall towards 1 (and are 1 without EP)."""
    t = np.array([1.0, 8.0, 64.0, 4096.0, 1e6])
    load, spread = busiest_rank(256, 8, 8, t, groups=8, groups_per_token=4)
    assert np.all(np.diff(load) < 0) and np.all(np.diff(spread) <= 0)
    assert load[-1] < 1.01 and spread[-1] < 1.01
    assert busiest_rank(256, 8, 1, t) == (1.0, 1.0)


def test_ep_pays_for_its_busiest_rank_at_batch_one():
    """DeepSeek-V3 FP8 on 8x H200 at batch 1: EP8's busiest rank reads ~3 experts' weights where TP8
    experts read 8 slices of 1/8, so EP8 is priced slower than TP8 experts (InferenceX TRT-LLM 1.1:
    13.82 vs 13.80 ms at concurrency 4, ISL/OSL 1024, a tie the mean-rank model priced 15% apart)."""
    cat = load_catalog()
    tp8 = decode_step("deepseek-v3", "hgx-h200", Plan(8), batch=1, context=1536, engine="trtllm", catalog=cat)
    ep8 = decode_step("deepseek-v3", "hgx-h200", Plan(8, 1, 8), batch=1, context=1536, engine="trtllm", catalog=cat)
    assert ep8.total_s > tp8.total_s
