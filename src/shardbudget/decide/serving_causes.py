"""The likely causes of a serving run that is off (serving_check's module docstring has the order):
the settings the file records re-priced, memory, the step's parts by the factor each would need, and
eager mode where the file does not say."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..dtypes import canonical
from ..errors import ShardbudgetError
from ..measure.logs.serving import ServingRun
from ..model import Plan
from ..step.scenario import scenario
from ..units import format_bytes, format_decimal_bytes, format_seconds
from .planner import plan_rows
from .request import Request
from .verdicts import Row

PART_SPREAD = {"communication": 10.0, "host": 3.0, "prefill": 3.0, "kernels": 1.5}
"""How many times its priced time a part of the step plausibly takes on a real run: a collective on
a degraded or fallen-back fabric (NVLink to PCIe, an InfiniBand link down, TCP instead of RDMA: x3
to x20), host time under a busy CPU or Python loop (x1.5 to x3), the mixed prompts with a larger
chunk or a prompt-heavy mix (x2 to x3), kernels within their measured efficiencies (x1.5: the step's
floors are calibrated on measured rows). A part's score is log(needed factor) / log(spread): under
1, that part alone can explain the excess."""
EAGER_ENGINE = "eager"
"""engines/eager.toml: vLLM with --enforce-eager, every kernel launched by the host."""


@dataclass(frozen=True, kw_only=True)
class Cause:
    kind: str
    """setting, memory, communication, host, kernels, prefill, eager, speculative."""
    text: str
    explains: bool
    """Re-priced with it the run is within the band, or the part's needed factor is plausible."""
    score: float
    """Rank key, lower first."""

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def verdict_of(ratio: float, band: float) -> str:
    return "ok" if 1 / (1 + band) <= ratio <= 1 + band else ("slow" if ratio > 1 else "fast")


def priced_row(req: Request, p: Plan, b: float) -> Row:
    """The planner's row of plan `p` at `b` requests in flight under the request's workload."""
    return plan_rows(req, p, np.asarray([b], dtype=float))[0]


def _kv(value: str | None) -> str | None:
    """A KV-cache dtype as the catalog names it; None for the engines' 'auto' or a name it lacks."""
    if not value or value.lower() == "auto":
        return None
    try:
        return canonical(value.lower().replace("fp8_e4m3", "fp8").replace("fp8_e5m2", "fp8"))
    except ShardbudgetError:
        return None


def file_settings(run: ServingRun, req: Request, p: Plan) -> list[tuple[str, str, Request, Plan]]:
    """The settings the file records that differ from what was priced: (kind, words, the request
    and plan with the file's setting)."""
    s, out = run.settings, []
    filed = Plan(
        s.tp or p.tp,
        s.pp or p.pp,
        s.ep or p.ep,
        (s.tp or p.tp) if s.dp_attention else (1 if s.dp_attention is False else p.dp),
    )
    if filed != p:
        out.append(("setting", f"the file ran {filed.label()}, the plan priced is {p.label()}", req, filed))
    if s.cuda_graphs is False and req.scenario.engine != EAGER_ENGINE:
        out.append(
            (
                "setting",
                "the file ran without CUDA graphs (eager mode), the plan priced has them",
                req.with_engine(EAGER_ENGINE),
                p,
            )
        )
    kv, priced_kv = _kv(s.kv_dtype), req.scenario.precision.kv or req.scenario.precision.activations
    if kv is not None and kv != priced_kv:
        try:
            alt = replace(req, scenario=_with_kv(req, kv))
        except ShardbudgetError:
            alt = None
        if alt is not None:
            out.append(("setting", f"the file's KV cache is {s.kv_dtype}, the plan priced {priced_kv}", alt, p))
    return out


def _with_kv(req: Request, kv: str):
    sc = req.scenario
    return scenario(
        sc.model,
        sc.system,
        nodes=sc.nodes,
        engine=sc.engine,
        dtype=sc.dtype,
        kv_dtype=kv,
        impl=sc.impl,
        settings=sc.settings,
        catalog=sc.catalog,
        eff=sc.eff,
    )


def setting_notes(run: ServingRun, req: Request, p: Plan) -> tuple[str, ...]:
    """What the file says of its server, in words, for the report."""
    s, words = run.settings, []
    for name, v in (
        ("TP", s.tp),
        ("PP", s.pp),
        ("EP", s.ep),
        ("CUDA graphs", s.cuda_graphs),
        ("KV dtype", s.kv_dtype),
        ("KV capacity", s.kv_capacity_tokens),
        ("GPU", s.gpu),
        ("speculative decoding", s.speculative or None),
    ):
        if v is not None:
            words.append(f"{name} {'on' if v is True else 'off' if v is False else v}")
    return (f"the file records: {', '.join(words)}",) if words else ("the file records no server settings",)


# --- ranking ----------------------------------------------------------------------------------------


def causes_of(run: ServingRun, req: Request, p: Plan, row: Row, *, b: float, off, metrics, tol: float) -> tuple:
    """The likely causes of the metric `off` (a MetricCheck), most likely first (module docstring).
    An output throughput off is judged as the mean TPOT it implies (the priced TPOT times the ratio:
    a request's tokens take that much longer), so every cause compares seconds with seconds."""
    if off.metric == "output tok/s":
        off = replace(off, metric="TPOT", stat="mean", measured=row.tpot_s * off.ratio, predicted=row.tpot_s)
    measured, slow = off.measured, off.verdict == "slow"
    priced_of = _priced_as(off.metric, off.stat)
    causes = [
        _repriced(kind, words, alt_req, alt_p, b=b, measured=measured, priced_of=priced_of, tol=tol, rank=0.0)
        for kind, words, alt_req, alt_p in file_settings(run, req, p)
    ]
    causes += _memory(run, req, p, row, b, measured=measured, priced_of=priced_of, tol=tol)
    if slow:
        causes += _parts(run, row, req, p, off, metrics)
        if run.settings.cuda_graphs is None and req.scenario.engine != EAGER_ENGINE:
            eager = _repriced(
                "eager",
                "no CUDA graphs (eager mode), which the file does not rule out",
                req.with_engine(EAGER_ENGINE),
                p,
                b=b,
                measured=measured,
                priced_of=priced_of,
                tol=tol,
                rank=0.5,
            )
            causes.append(eager if eager.explains else replace(eager, score=3.0 + eager.score))
    else:
        if run.settings.speculative:
            causes.append(
                Cause(
                    kind="speculative",
                    explains=True,
                    score=0.1,
                    text=f"speculative decoding ({run.settings.speculative}) yields several tokens "
                    f"per step; the check prices plain decode",
                )
            )
        causes += _parts(run, row, req, p, off, metrics)
    return tuple(sorted(causes, key=lambda c: (not c.explains, c.score)))


def _priced_as(metric: str, stat: str):
    """Which of a row's numbers a metric is compared with (serving_check.compare)."""
    if metric == "TTFT":
        return lambda r: r.ttft_s
    if metric == "ITL" and stat == "median":
        return lambda r: r.itl_s
    return lambda r: r.tpot_s


def _repriced(
    kind: str,
    words: str,
    alt_req: Request,
    alt_p: Plan,
    *,
    b: float,
    measured: float,
    priced_of,
    tol: float,
    rank: float,
) -> Cause:
    try:
        alt = priced_row(alt_req, alt_p, b)
    except ShardbudgetError as err:
        return Cause(kind=kind, text=f"{words} (not re-priced: {err})", explains=False, score=2.0 + rank)
    t = priced_of(alt)
    ratio = measured / t
    explains = verdict_of(ratio, tol) == "ok"
    return Cause(
        kind=kind,
        explains=explains,
        score=rank + abs(math.log(ratio)),
        text=f"{words}: priced so, {format_seconds(t)} (measured/priced x{ratio:.2f})"
        + ("; that explains it" if explains else ""),
    )


def _memory(
    run: ServingRun, req: Request, p: Plan, row: Row, b: float, *, measured: float, priced_of, tol: float
) -> list[Cause]:
    """The KV cache of b requests does not fit: the server runs fewer at once (their TPOT, faster
    than b's) and the rest wait (TTFT, throughput). Where the file records the cache's capacity, the
    run is re-priced at the requests it holds."""
    work, out = req.workload, []
    per_request = work.input_len + work.output_len
    tokens = b * per_request
    if not row.fits_memory:
        kv = (row.memory or {}).get("kv_cache", 0.0)
        out.append(
            Cause(
                kind="memory",
                explains=True,
                score=0.2,
                text=f"memory: {b:.0f} requests of {per_request} tokens need "
                f"{format_decimal_bytes(row.mem_bytes_per_gpu)} per GPU ({format_decimal_bytes(kv)} "
                f"of KV cache) under {p.label()}, more than the engine may take: the server "
                f"preempts or queues requests",
            )
        )
    cap = run.settings.kv_capacity_tokens
    if cap is not None and cap < tokens:
        held = max(cap // per_request, 1)
        words = (
            f"memory: the server's KV cache holds {cap} tokens, {held} requests of {per_request}; "
            f"{b:.0f} in flight need {tokens:.0f}, so the rest wait (TTFT) and {held} run at once"
        )
        cause = _repriced(
            "memory", words, req, p, b=float(held), measured=measured, priced_of=priced_of, tol=tol, rank=0.0
        )
        out.append(replace(cause, explains=True, score=min(cause.score, 0.2)))
    return out


def _parts(run: ServingRun, row: Row, req: Request, p: Plan, off, metrics) -> list[Cause]:
    """Each part of the priced step by how much it would have to change to explain the difference."""
    priced = _priced_as(off.metric, off.stat)(row)
    excess = off.measured - priced
    prefill = max((row.tpot_s or row.itl_s) - row.itl_s, 0.0) if off.metric != "TTFT" else 0.0
    parts = {"communication": row.comm_s, "host": row.other_s, "kernels": row.compute_s, "prefill": prefill}
    if off.metric == "ITL" and off.stat == "median":
        parts["prefill"] = 0.0
    median_ok = any(m.metric == "ITL" and m.stat == "median" and m.verdict == "ok" for m in metrics)
    out = []
    for kind, t in parts.items():
        if t <= 0:
            continue
        factor = 1.0 + excess / t
        if factor <= 0.05:  # a fast run no part can explain by shrinking
            continue
        spread = PART_SPREAD[kind]
        score = abs(math.log(factor)) / math.log(spread)
        if kind == "prefill" and median_ok and excess > 0:
            score *= 0.25  # the decode steps alone are on time: the mixed prompts are what is slow
        out.append(
            Cause(
                kind=kind,
                explains=score <= 1.0,
                score=1.0 + score,
                text=f"{_part_words(kind, row, req, p)}: {format_seconds(t)} of the priced step; "
                f"x{factor:.2f} would explain it",
            )
        )
    return out


def _part_words(kind: str, row: Row, req: Request, p: Plan) -> str:
    sysm = req.system
    if kind == "communication":
        ar = row.allreduce
        fabric = (
            sysm.intra_fabric.name
            if p.gpus <= sysm.gpus_per_node or sysm.nic_fabric is None
            else f"{sysm.nic_fabric.name} between nodes"
        )
        if ar is None:
            return f"communication ({p.label()}, {fabric})"
        return (
            f"communication: the {ar.words} TP all-reduce of {format_bytes(ar.msg_bytes)}, {ar.count} per "
            f"token, on {fabric}"
        )
    return {
        "host": "host time (scheduling, sampling, launches, per-step overhead)",
        "kernels": "kernels (GEMMs, attention, MoE at their achievable rates and floors)",
        "prefill": "the other requests' prompts mixed into the decode steps (chunked prefill)",
    }[kind]


__all__ = [
    "Cause",
    "EAGER_ENGINE",
    "PART_SPREAD",
    "causes_of",
    "file_settings",
    "priced_row",
    "setting_notes",
    "verdict_of",
]
