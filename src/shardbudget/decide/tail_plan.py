"""The p99 ITL of a plan's rows and deploy's options, from collective jitter someone measured (`--jitter LOG`).

A plan row's ITL is a mean. Where a log has per-iteration times (nccl-tests ``-I 1``, text or
``-J`` JSON; shardbudget measure's JSON, which keeps every iteration), each collective of the step
gets the jitter measured nearest its size and group, scaled to the model's mean for that call
(`tail.CallStats.scaled`: the measured shape, coefficient of variation and skew, around the
modelled time), and the token's p99 is their convolution plus the rest of the step taken as fixed
(`tail.itl_tail`; the composition rule and its Monte-Carlo check are in tail.py).

What the log says nothing about is not invented: a call of an op the log did not time (say the
all-to-all of a MoE step when only all_reduce_perf ran) keeps its mean, and `Jitter.describe`
says which ops were measured.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import PlanError
from ..measure.logs.records import Sample
from ..measure.logs.read import read_logs
from ..step.tail import CallStats, call_at_size, p99_itl_s

QUANTILE = 0.99


@dataclass(frozen=True)
class Jitter:
    """The per-iteration samples of some logs, by op."""

    samples: tuple[Sample, ...]
    sources: tuple[str, ...]

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(sorted({str(s.op) for s in self.samples}))

    def describe(self) -> str:
        ranks = sorted({s.n_ranks for s in self.samples})
        return (
            f"p99 from per-iteration times of {', '.join(self.ops)} at {'/'.join(map(str, ranks))} ranks "
            f"({', '.join(self.sources)}); other collectives at their mean; calls independent (tail.py)"
        )

    def call(self, op: str, ranks: int, msg_bytes: float, count: int, mean_s: float) -> CallStats:
        """One kind of call of the step: the jitter measured for `op` at the rank count nearest
        `ranks` and the size nearest `msg_bytes`, around `mean_s`; fixed at `mean_s` if none."""
        timed = [s for s in self.samples if str(s.op) == str(op)]
        if timed and mean_s > 0:
            nearest = min({s.n_ranks for s in timed}, key=lambda n: (abs(math.log(n / max(ranks, 1))), -n))
            call = call_at_size([s for s in timed if s.n_ranks == nearest], msg_bytes, count=count, mean_s=mean_s)
            if call is not None:
                return call
        return CallStats(count=count, mean_s=max(mean_s, 1e-12), variance_s2=0.0, third_moment_s3=0.0, family="fixed")

    def row_p99s(self, step_model, batches: Sequence[int], context: float, itls_s: Sequence[float]) -> list[float]:
        """`step_p99_itl_s` at each batch of a compiled step whose mean ITLs are `itls_s`."""
        return [step_p99_itl_s(step_model, int(b), context, float(t), self) for b, t in zip(batches, itls_s)]


def read_jitter(paths: Iterable[str | os.PathLike]) -> Jitter:
    """The samples with per-iteration times in `paths`; a PlanError if none has any."""
    paths = [str(p) for p in paths]
    sets = read_logs(paths)
    samples = tuple(s for ms in sets for s in ms.samples if s.per_iter is not None)
    if not samples:
        raise PlanError(
            f"--jitter {', '.join(paths)}: no per-iteration times in the log; run nccl-tests with "
            "-I 1 (and -J FILE for JSON), or shardbudget measure, whose JSON keeps every iteration"
        )
    return Jitter(samples=samples, sources=tuple(os.path.basename(p) for p in paths))


def step_p99_itl_s(
    step_model, batch: int, context: float, itl_s: float, jitter: Jitter, quantile: float = QUANTILE
) -> float:
    """The `quantile` of one token's ITL for a compiled step (step.StepModel) at `batch`: its
    collectives with measured jitter, the rest of `itl_s` fixed."""
    groups = step_model.groups
    calls = []
    for c in step_model.collective_calls(batch, context):
        group = groups.get(c.group)
        ranks = group.ranks if group is not None else 1
        calls.append(jitter.call(c.op, ranks, c.msg_bytes, c.count, c.time_s))
    rest_s = max(itl_s - math.fsum(c.count * c.mean_s for c in calls), 0.0)
    return p99_itl_s(rest_s, calls, quantile)
