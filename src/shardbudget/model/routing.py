"""Where routed tokens land: the busiest expert-parallel rank's load, under the model's routing rule.

A step waits for its busiest expert-parallel rank, not the average one. With `ep` ranks each
holding E/ep consecutive experts (vLLM's and SGLang's default expert placement), a step of n tokens
sends n x k (token, expert) pairs; on average every rank gets n k / ep of them and reads the
weights of E/ep x (1 - (1 - k/E)^n) distinct experts (`ops.expected_experts_hit`). The busiest
rank gets more of both, and routing constraints make it worse: DeepSeek-V3 picks its k = 8 experts
inside topk_group = 4 of n_group = 8 groups of 32 experts (`noaux_tc`, modeling_deepseek.py
MoEGate), so with EP8 (one group per rank) a token's 8 experts land on at most 4 ranks, at least
2 on one of them, where the average rank gets 1.

`busiest_rank_factors` gives, per step of n tokens, E[max over ranks] / mean of both quantities
under routing with independent uniform scores (each token's top-k of random scores, the group
rule applied to them as the model's gate applies it), estimated once per (E, k, groups, ep) by a
seeded simulation at n = 1, 2, 4, ..., 256 and carried beyond as 1 + c / sqrt(n) (the spread of a
sum of n independent tokens). Real routers are skewed, which only raises the busiest rank's load:
these factors are a lower bound.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

SIM_TOKENS = tuple(2**i for i in range(9))
"""Step sizes (tokens) simulated; beyond the last the excess over the mean falls as 1 / sqrt(n)."""
POOL = 1024
"""Single-token routing decisions drawn once per (E, k, groups); steps draw their tokens from them."""
SAMPLES = 128
"""Simulated steps per step size (more for small steps: POOL // n, at least this)."""


@lru_cache(maxsize=32)
def _pool(experts: int, k: int, groups: int, groups_per_token: int) -> np.ndarray:
    """(POOL, k) expert ids chosen by tokens with independent uniform scores: the top
    `groups_per_token` groups by the sum of their two best scores (DeepSeek-V3's group score;
    V2's group max orders groups alike here), then the top k experts inside them."""
    rng = np.random.default_rng(20250101)
    scores = rng.random((POOL, experts))
    if groups > 1 and groups_per_token < groups:
        per = scores.reshape(POOL, groups, experts // groups)
        best_two = np.partition(per, -2, axis=2)[:, :, -2:].sum(axis=2)
        dropped = np.argsort(best_two, axis=1)[:, : groups - groups_per_token]
        np.put_along_axis(per, dropped[:, :, None], -1.0, axis=1)  # masked groups cannot be picked
        scores = per.reshape(POOL, experts)
    return np.argpartition(-scores, k - 1, axis=1)[:, :k]


@lru_cache(maxsize=64)
def busiest_rank_factors(
    experts: int, k: int, ep: int, groups: int = 1, groups_per_token: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log2 n, E[max]/mean of (token, expert) pairs per rank, E[max]/mean of distinct experts hit
    per rank) at n = SIM_TOKENS, for `ep` ranks of E/ep consecutive experts (module doc)."""
    pool = _pool(experts, k, groups, groups_per_token)
    rng = np.random.default_rng(7)
    per_rank = experts // ep
    load, spread = [], []
    for n in SIM_TOKENS:
        m = max(SAMPLES, POOL // n)
        chosen = pool[rng.integers(0, POOL, size=(m, n))].reshape(m, n * k)
        row = np.arange(m)[:, None]
        pairs = np.bincount((row * ep + chosen // per_rank).ravel(), minlength=m * ep).reshape(m, ep)
        hit = np.zeros((m, experts), dtype=bool)
        hit[row, chosen] = True
        distinct = hit.reshape(m, ep, per_rank).sum(axis=2)
        load.append(pairs.max(axis=1).mean() / (n * k / ep))
        spread.append(distinct.max(axis=1).mean() / distinct.mean())
    return np.log2(np.asarray(SIM_TOKENS, dtype=float)), np.asarray(load), np.asarray(spread)


def _factor(log_n: np.ndarray, table: np.ndarray, tokens) -> np.ndarray | float:
    """The table at `tokens` (interpolated in log2 n), 1 + excess(last) sqrt(last / n) beyond it."""
    t = np.maximum(np.asarray(tokens, dtype=float), 1.0)
    last = 2.0 ** log_n[-1]
    inside = np.interp(np.log2(t), log_n, table)
    beyond = 1.0 + (table[-1] - 1.0) * np.sqrt(last / t)
    return np.where(t <= last, inside, beyond)


def busiest_rank(
    experts: int, k: int, ep: int, tokens, *, groups: int = 1, groups_per_token: int = 1
) -> tuple[np.ndarray | float, np.ndarray | float]:
    """(pairs factor, distinct-experts factor) of the busiest of `ep` ranks over the average one for
    a step of `tokens` tokens (arrays broadcast); (1, 1) without expert parallelism."""
    if ep <= 1:
        return 1.0, 1.0
    log_n, load, spread = busiest_rank_factors(experts, k, ep, groups, groups_per_token)
    return _factor(log_n, load, tokens), _factor(log_n, spread, tokens)


__all__ = ["busiest_rank", "busiest_rank_factors"]
