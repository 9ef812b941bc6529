"""The Pareto front of a deployment sweep: the (tokens/s per user, tokens/s per GPU) points over
every option and batch that no other point beats on both (deploy.py's curves)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def pareto_front(curves: dict, options: Sequence) -> list[dict]:
    """The (tokens/s/user, tokens/s/GPU) points over every plan and batch that no other point beats
    on both, best user speed first (ties in user speed: the higher tokens/s/GPU, then curve order).
    `curves`: option label -> (tokens/s/user, tokens/s/GPU) arrays; `options`: deploy.Option, one per label."""
    by_label = {o.label(): o for o in options}
    labels = list(curves)
    user = np.concatenate([np.asarray(curves[k][0], dtype=float) for k in labels] or [np.zeros(0)])
    per_gpu = np.concatenate([np.asarray(curves[k][1], dtype=float) for k in labels] or [np.zeros(0)])
    which = np.concatenate([np.full(len(curves[k][0]), i) for i, k in enumerate(labels)] or [np.zeros(0, int)])
    index = np.concatenate([np.arange(len(curves[k][0])) for k in labels] or [np.zeros(0, int)])
    order = np.lexsort((-per_gpu, -user))  # stable, as sorting the points in curve order would be
    g = per_gpu[order]
    best_before = np.concatenate([[-math.inf], np.maximum.accumulate(g)[:-1]]) if len(g) else g
    front = []
    for j in order[g > best_before]:  # a point is on the front when it beats every faster one
        o = by_label[labels[which[j]]]
        front.append(
            {
                "tp": o.tp,
                "pp": o.pp,
                "ep": o.ep,
                "dp": o.dp,
                "replicas": o.replicas,
                "batch": o.pp * (int(index[j]) + 1),
                "tokens_per_s_per_user": float(user[j]),
                "tokens_per_s_per_gpu": float(per_gpu[j]),
            }
        )
    return front


__all__ = ["pareto_front"]
