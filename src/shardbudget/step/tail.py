"""Tail latency of one token: the p99 of the inter-token latency (ITL) from collective jitter.

One decode step (one token) runs its compute and, on the critical path, a fixed list of
collectives: under tensor parallelism 2 all-reduces per layer (after attention and after the MLP),
plus the LM head's. Each call's time varies from token to token (a late rank, a preempted proxy
thread, a congested link); nccl-tests ``-I 1`` and the harness record that per iteration
(`measure.logs.records.IterStats`). The question is the p99 of the *sum*, and the p99 of a sum of
n calls is not n x the p99 of one: a token in which every one of 160 calls hits its own p99 is far
rarer than 1 in 100.

How the calls compose is `step.tail_sum`'s docstring: independent calls, convolved.

Synchronised collectives and correlation
----------------------------------------
A collective ends when its slowest rank does. nccl-tests' per-iteration times and the harness's are
already the slowest rank's per iteration (the maximum over GPUs, then over processes), so they are
used as they are; per-rank times would have to be maximised over ranks first. Independence between
the calls of one token is the assumption to watch: calls that slow down together (a noisy neighbour
for a whole token) have a fatter tail. `TailEstimate.correlated_s` is the other extreme, every call
at its own quantile at once (what adding the p99s assumes); the truth lies between, near the
independent value when jitter comes from per-call events.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist


from ..errors import PlanError
from ..measure.logs.records import IterStats, Sample
from .tail_sum import convolved_quantile, gamma_quantile

FAMILIES = ("fixed", "shifted-exponential", "lognormal", "samples")
_LN100_MINUS_1 = math.log(100.0) - 1.0  # (p99 − mean) / θ of an exponential tail
_Z99 = NormalDist().inv_cdf(0.99)
METHODS = ("convolution", "cumulants")


@dataclass(frozen=True, kw_only=True)
class CallStats:
    """One kind of collective call in a token: how many, and its time per call (seconds)."""

    count: int
    """Calls of this kind per token (e.g. 2 x layers all-reduces)."""
    mean_s: float
    variance_s2: float
    """Variance of one call's time, s²."""
    third_moment_s3: float
    """Third central moment of one call's time, s³ (the skew: 0 for symmetric jitter)."""
    family: str
    """One of `FAMILIES`: how the per-call distribution was obtained."""
    params: tuple[float, ...] = ()
    """shifted-exponential: (shift_s, scale_s); lognormal: (mu_ln, sigma_ln); samples: the times (s)."""

    def quantile_s(self, q: float) -> float:
        """One call's q-quantile under its family (nearest rank, as nccl-tests, for samples)."""
        if self.family == "shifted-exponential":
            shift, scale = self.params
            return shift - scale * math.log1p(-q)
        if self.family == "lognormal":
            mu, sigma = self.params
            return math.exp(mu + sigma * NormalDist().inv_cdf(q))
        if self.family == "samples":
            ordered = sorted(self.params)
            return ordered[min(len(ordered) - 1, max(0, math.ceil(len(ordered) * q) - 1))]
        return self.mean_s

    def scaled(self, mean_s: float) -> CallStats:
        """The same shape (coefficient of variation, skewness) around another mean: a measured
        call's jitter applied to a modelled call of another size."""
        r = _positive(mean_s, "mean_s") / self.mean_s
        params = self.params
        if self.family == "lognormal":
            params = (params[0] + math.log(r), params[1])
        elif self.family != "fixed":
            params = tuple(p * r for p in params)
        return replace(
            self,
            mean_s=mean_s,
            variance_s2=self.variance_s2 * r**2,
            third_moment_s3=self.third_moment_s3 * r**3,
            params=params,
        )

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "params"}
        d["p99_s"] = self.quantile_s(0.99)
        return d


@dataclass(frozen=True, kw_only=True)
class TailEstimate:
    """The ITL of one token, seconds: mean, spread and a quantile under the composition rule."""

    quantile: float
    mean_s: float
    stddev_s: float
    skewness: float
    quantile_s: float
    """The ITL's `quantile` with independent calls (the module docstring's rule)."""
    correlated_s: float
    """Compute plus every call at its own `quantile` at once: fully correlated calls."""
    calls: tuple[CallStats, ...]
    method: str = "convolution"
    """How `quantile_s` was composed: one of `METHODS`."""

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "calls"}
        d["calls"] = [c.to_dict() for c in self.calls]
        return d


# --- one kind of call ------------------------------------------------------------------------


def call_from_p99(count: int, mean_s: float, p99_s: float) -> CallStats:
    """A call known by its mean and p99 only: shifted exponential, lognormal when heavier-tailed."""
    count, mean_s = _count(count), _positive(mean_s, "mean_s")
    if not (isinstance(p99_s, (int, float)) and math.isfinite(p99_s)) or p99_s < mean_s * (1 - 1e-12):
        raise PlanError(f"p99 {p99_s!r} s of a call is below its mean {mean_s:g} s; expected p99 >= mean")
    excess = p99_s - mean_s
    if excess <= 1e-12 * mean_s:
        return CallStats(count=count, mean_s=mean_s, variance_s2=0.0, third_moment_s3=0.0, family="fixed")
    scale = excess / _LN100_MINUS_1
    if scale <= mean_s:  # the floor (mean − scale) is not negative
        return CallStats(
            count=count,
            mean_s=mean_s,
            variance_s2=scale**2,
            third_moment_s3=2 * scale**3,
            family="shifted-exponential",
            params=(mean_s - scale, scale),
        )
    ratio_ln = math.log(p99_s / mean_s)
    if ratio_ln > _Z99**2 / 2:
        raise PlanError(
            f"p99 {p99_s:g} s is {p99_s / mean_s:.1f} x the mean {mean_s:g} s: more than "
            f"{math.exp(_Z99**2 / 2):.1f} x, a tail one p99 cannot describe; give the "
            "per-iteration samples (call_from_samples)"
        )
    sigma = _Z99 - math.sqrt(_Z99**2 - 2 * ratio_ln)  # mean = e^(mu + s²/2), p99 = e^(mu + z s)
    w = math.exp(sigma**2)
    variance = (w - 1) * mean_s**2
    third = (w + 2) * (w - 1) ** 1.5 * mean_s**3  # skewness (w + 2)·√(w − 1) times σ³
    return CallStats(
        count=count,
        mean_s=mean_s,
        variance_s2=variance,
        third_moment_s3=third,
        family="lognormal",
        params=(math.log(mean_s) - sigma**2 / 2, sigma),
    )


def call_from_samples(count: int, samples_s: Sequence[float]) -> CallStats:
    """A call known by its per-iteration times (slowest rank per iteration): sample moments."""
    times = [float(t) for t in samples_s]
    if not times or any(not (math.isfinite(t) and t > 0) for t in times):
        raise PlanError("per-iteration samples must be a non-empty list of positive seconds")
    n = len(times)
    mean = math.fsum(times) / n
    variance = math.fsum((t - mean) ** 2 for t in times) / n
    third = math.fsum((t - mean) ** 3 for t in times) / n
    return CallStats(
        count=_count(count),
        mean_s=mean,
        variance_s2=variance,
        third_moment_s3=third,
        family="samples",
        params=tuple(times),
    )


def call_from_iter_stats(count: int, stats: IterStats, *, mean_s: float | None = None) -> CallStats:
    """From a log's per-iteration statistics: its times where it has them, else its mean and p99.

    `mean_s` stands in for a mean the statistics lack (nccl-tests' text columns: pass the sample's
    ``time_s``)."""
    if len(stats.times_s) > stats.skipped:
        return call_from_samples(count, stats.times_s[stats.skipped :])
    mean = stats.mean_s if stats.mean_s is not None else mean_s
    if mean is None or stats.p99_s is None:
        raise PlanError("per-iteration statistics need times, or a mean and a p99")
    return call_from_p99(count, mean, max(stats.p99_s, mean))


def call_at_size(
    samples: Sequence[Sample], msg_bytes: float, *, count: int, mean_s: float | None = None
) -> CallStats | None:
    """The jitter measured at the size nearest `msg_bytes` (in log size), scaled to `mean_s` if
    given (e.g. the model's time for this call); None where no sample has per-iteration data."""
    timed = [s for s in samples if s.per_iter is not None and not s.in_place]
    timed = timed or [s for s in samples if s.per_iter is not None]
    if not timed:
        return None
    target = math.log(max(float(msg_bytes), 1.0))
    nearest = min(timed, key=lambda s: abs(math.log(max(s.msg_bytes, 1.0)) - target))
    call = call_from_iter_stats(count, nearest.per_iter, mean_s=nearest.time_s)  # type: ignore[arg-type]
    return call if mean_s is None else call.scaled(mean_s)


# --- a token ---------------------------------------------------------------------------------

CallSpec = CallStats | tuple[int, float, float]
"""A `CallStats`, or (count, mean_s, p99_s) for `call_from_p99`."""


def itl_tail(
    mean_compute_s: float, calls: Sequence[CallSpec], quantile: float = 0.99, *, method: str = "convolution"
) -> TailEstimate:
    """The ITL's mean, spread and `quantile` for `mean_compute_s` of compute (taken as fixed; give
    compute jitter as one more call of count 1) plus `calls`; see the module docstring.

    `method` "convolution" (default) composes the calls' distributions exactly on a grid;
    "cumulants" is the three-cumulant shifted gamma, kept as the cheaper cross-check."""
    compute = _non_negative(mean_compute_s, "mean_compute_s")
    if isinstance(quantile, bool) or not isinstance(quantile, (int, float)) or not 0 < quantile < 1:
        raise PlanError(f"quantile {quantile!r} must lie strictly between 0 and 1 (0.99 for p99)")
    if method not in METHODS:
        raise PlanError(f"method {method!r} is not one of {', '.join(METHODS)}")
    stats = tuple(c if isinstance(c, CallStats) else _tuple_call(c) for c in calls)
    k1 = compute + math.fsum(c.count * c.mean_s for c in stats)
    k2 = math.fsum(c.count * c.variance_s2 for c in stats)
    k3 = math.fsum(c.count * c.third_moment_s3 for c in stats)
    sd = math.sqrt(k2)
    skew = k3 / sd**3 if sd > 0 else 0.0
    correlated = compute + math.fsum(c.count * c.quantile_s(quantile) for c in stats)
    q_s = (
        compute + convolved_quantile(stats, quantile)
        if method == "convolution"
        else gamma_quantile(k1, k2, k3, quantile)
    )
    return TailEstimate(
        quantile=float(quantile),
        mean_s=k1,
        stddev_s=sd,
        skewness=skew,
        quantile_s=q_s,
        correlated_s=correlated,
        calls=stats,
        method=method,
    )


def p99_itl_s(mean_compute_s: float, calls: Sequence[CallSpec], quantile: float = 0.99) -> float:
    """The p99 (or `quantile`) of one token's ITL, seconds: `itl_tail(...).quantile_s`.

    ``p99_itl_s(8e-3, [(160, 20e-6, 35e-6), (1, 30e-6, 60e-6)])`` is 8 ms of compute plus 160
    all-reduces of mean 20 µs / p99 35 µs and one LM-head collective of 30 / 60 µs."""
    return itl_tail(mean_compute_s, calls, quantile).quantile_s


def _tuple_call(spec: object) -> CallStats:
    if not (isinstance(spec, (tuple, list)) and len(spec) == 3):
        raise PlanError(f"a call is a CallStats or (count, mean_s, p99_s), got {spec!r}")
    return call_from_p99(*spec)


def _count(count: object) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise PlanError(f"call count {count!r} must be a whole number >= 0")
    return count


def _positive(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise PlanError(f"{name} {value!r} must be a positive number of seconds")
    return float(value)


def _non_negative(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value >= 0):
        raise PlanError(f"{name} {value!r} must be a number of seconds >= 0")
    return float(value)


__all__ = [
    "FAMILIES",
    "METHODS",
    "CallSpec",
    "CallStats",
    "TailEstimate",
    "call_at_size",
    "call_from_iter_stats",
    "call_from_p99",
    "call_from_samples",
    "itl_tail",
    "p99_itl_s",
]
