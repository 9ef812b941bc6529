"""`shardbudget check RESULT.json --model M --system S`: is this serving benchmark normal? (issue 39)

A run read by `measure.logs.serving_formats` (vllm bench serve, SGLang bench_serving, AIPerf /
genai-perf, trtllm-bench) is priced as `plan --input-len/--output-len` prices a plan: the planner's
row of the same plan (`planner.plan_rows`: the served TPOT with the other requests' prompts mixed in,
the decode step, TTFT, memory) at the run's concurrency per replica and its mean prompt and output
lengths. Then, per metric, measured / predicted:

* mean and median TPOT, mean ITL against the served TPOT; median ITL against the decode step alone
  (most gaps carry no prompt chunk); output tokens/s against replicas x b x output_len / (TTFT +
  (output_len - 1) x TPOT): **ok** within ``1/(1+tol) <= ratio <= 1+tol`` (tol 0.25 by default:
  the served model's p90 error on the public runs of docs/accuracy.md is 21 %), else slow / fast;
* mean TTFT with its own, wider band (tol 1.0: x2 either way; a TTFT also carries queueing and the
  client's own ramp-up, which the model does not price);
* p99s are shown beside the means, not judged: the model prices a run's mean step.

The concurrency b is the client's cap (max_concurrency) unless the run held fewer requests in flight
(Little's law on its own throughput and latency), which is then used; an open-loop run (a request
rate) is priced at its measured mean in flight. Everything per replica: `--replicas R` divides it.

When a metric is slow, the likely causes are ranked:
1. a setting the file records that differs from the plan priced (its TP / PP / EP, CUDA graphs off,
   its KV-cache dtype): the run re-priced with the file's setting, first where that explains it;
2. memory: the KV cache of b requests of input + output tokens does not fit beside the weights (or
   exceeds the server's recorded KV capacity): requests are preempted or queued;
3. the step's parts, each by how much it would have to grow to explain the excess, against how far
   that part plausibly strays (`PART_SPREAD`): communication (the collective, its size and fabric),
   kernels (roofline and floors), host time (launches, scheduling), the mixed prompts (prefill
   interference; first when the median ITL is within its band while the mean TPOT is not);
   and, where the file does not say, no CUDA graphs (the run re-priced in eager mode).
A fast run names what the file shows that the model does not price (speculative decoding, a setting
that differs) before the parts that may be over-priced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .. import defaults
from ..errors import PlanError, ShardbudgetError
from ..fabric.catalog import load_catalog
from ..measure.logs.serving import ServingRun
from ..measure.logs.serving_formats import read_serving
from ..model import Plan, load_model
from ..units import format_seconds
from .planner import valid_plans
from .serving_causes import Cause, causes_of, priced_row, setting_notes, verdict_of
from .request import Request, Workload, request
from .verdicts import Row

DEFAULT_TTFT_TOLERANCE = defaults.CHECK_TTFT_TOLERANCE


@dataclass(frozen=True, kw_only=True)
class MetricCheck:
    metric: str
    """TPOT, ITL, TTFT or output tok/s."""
    stat: str
    measured: float
    predicted: float
    band: float
    verdict: str
    """ok, slow or fast."""

    @property
    def ratio(self) -> float:
        """How much slower than priced (> 1 slow): measured / predicted time, or predicted / measured
        throughput."""
        if self.metric == "output tok/s":
            return self.predicted / self.measured
        return self.measured / self.predicted

    def to_dict(self) -> dict:
        return {**self.__dict__, "ratio": self.ratio}


@dataclass(frozen=True, kw_only=True)
class ServingCheck:
    """One run checked (module docstring)."""

    run: ServingRun
    model: str
    system: str
    engine: str
    plan: str
    batch: float
    batch_basis: str
    replicas: int
    input_len: int
    output_len: int
    row: Row
    metrics: tuple[MetricCheck, ...]
    causes: tuple[Cause, ...]
    notes: tuple[str, ...]

    @property
    def verdict(self) -> str:
        off = [m.verdict for m in self.metrics if m.verdict != "ok"]
        return "ok" if not off else ("slow" if "slow" in off else "fast")

    def to_dict(self) -> dict:
        r = self.row
        priced = {
            "tpot_s": r.tpot_s,
            "decode_step_s": r.itl_s,
            "ttft_s": r.ttft_s,
            "compute_s": r.compute_s,
            "comm_s": r.comm_s,
            "other_s": r.other_s,
            "fits_memory": r.fits_memory,
            "mem_bytes_per_gpu": r.mem_bytes_per_gpu,
            "allreduce": r.allreduce.to_dict() if r.allreduce else None,
        }
        return {
            "run": self.run.to_dict(),
            "model": self.model,
            "system": self.system,
            "engine": self.engine,
            "plan": self.plan,
            "batch": self.batch,
            "batch_basis": self.batch_basis,
            "replicas": self.replicas,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "verdict": self.verdict,
            "priced": priced,
            "metrics": [m.to_dict() for m in self.metrics],
            "causes": [c.to_dict() for c in self.causes],
            "notes": list(self.notes),
        }


@dataclass(frozen=True, kw_only=True)
class ServingCheckResult:
    checks: tuple[ServingCheck, ...]
    tolerance: float
    ttft_tolerance: float

    @property
    def exit_code(self) -> int:
        return 0 if all(c.verdict == "ok" for c in self.checks) else 1

    @property
    def outcome(self) -> str:
        return "PASS" if self.exit_code == 0 else "FAIL"

    def to_dict(self) -> dict:
        return {
            "kind": "serving",
            "exit_code": self.exit_code,
            "outcome": self.outcome,
            "tolerance": self.tolerance,
            "ttft_tolerance": self.ttft_tolerance,
            "checks": [c.to_dict() for c in self.checks],
        }


@dataclass(frozen=True, kw_only=True)
class Asked:
    """What the command line says of the run; None: take it from the file."""

    tp: int | None = None
    pp: int | None = None
    ep: int | None = None
    dp: int | None = None
    replicas: int = 1
    concurrency: float | None = None
    input_len: int | None = None
    output_len: int | None = None


# --- the run's workload and plan ------------------------------------------------------------------


def batch_of(run: ServingRun, asked: Asked) -> tuple[float, str]:
    """Requests in flight per replica and how that was chosen (module docstring)."""
    if asked.concurrency is not None:
        b, basis = asked.concurrency, f"--concurrency {asked.concurrency:g}"
    elif run.concurrency is not None and (run.in_flight is None or run.in_flight >= 0.9 * run.concurrency):
        b, basis = float(run.concurrency), f"the client's max concurrency {run.concurrency}"
    elif run.in_flight is not None:
        b, basis = run.in_flight, f"{run.in_flight:.1f} in flight on average (Little's law on the run)"
    else:
        raise PlanError(
            f"{run.label}: the file states neither a concurrency nor a throughput and latency to "
            f"tell the requests in flight; give --concurrency"
        )
    if asked.replicas > 1:
        basis += f", over {asked.replicas} replicas"
    return max(b / asked.replicas, 1.0), basis


def lengths_of(run: ServingRun, asked: Asked) -> tuple[int, int]:
    def pick(given, measured, name):
        if given is not None:
            return given
        if measured is None or measured < 1:
            raise PlanError(f"{run.label}: the file does not state the mean {name.replace('-', ' ')}; give --{name}")
        return max(int(round(measured)), 1)

    return pick(asked.input_len, run.input_len, "input-len"), pick(asked.output_len, run.output_len, "output-len")


def plan_of(run: ServingRun, asked: Asked, req: Request) -> Plan:
    """The plan priced: the command line's, each degree not given taken from the file."""
    s = run.settings
    tp = asked.tp or s.tp
    if tp is None:
        raise PlanError(f"{run.label}: the file does not record its tensor-parallel degree; give --tp")
    ep = asked.ep or s.ep or 1
    dp = asked.dp or (tp if s.dp_attention else 1)
    p = Plan(tp, asked.pp or s.pp or 1, ep, dp).check(req.model)
    total = req.scenario.node_count * req.system.gpus_per_node
    if p.gpus > total:
        raise PlanError(
            f"{p.label()} needs {p.gpus} GPUs; {req.system.name} x {req.scenario.node_count} has {total} (give --nodes)"
        )
    if p not in valid_plans(req.model, req.system, req.scenario.node_count, pp_all=True):
        raise PlanError(f"{p.label()} is not a plan shardbudget prices for {req.model.name} on {req.system.name}")
    return p


# --- the comparison ---------------------------------------------------------------------------------


def compare(
    run: ServingRun, row: Row, *, b: float, out_len: int, replicas: int, tol: float, ttft_tol: float
) -> tuple[MetricCheck, ...]:
    """Measured against priced, metric by metric (module docstring)."""
    tpot, step, ttft = row.tpot_s, row.itl_s, row.ttft_s
    pairs = [
        ("TPOT", "mean", run.latency("tpot"), tpot, tol),
        ("TPOT", "median", run.latency("tpot", "median"), tpot, tol),
        ("ITL", "mean", run.latency("itl"), tpot, tol),
        ("ITL", "median", run.latency("itl", "median"), step, tol),
        ("TTFT", "mean", run.latency("ttft"), ttft, ttft_tol),
    ]
    if run.output_tok_per_s:
        e2e = ttft + (out_len - 1) * tpot
        pairs.append(("output tok/s", "mean", run.output_tok_per_s, replicas * b * out_len / e2e, tol))
    out = []
    for metric, stat, measured, predicted, band in pairs:
        if measured is None or not measured or not predicted:
            continue
        m = MetricCheck(metric=metric, stat=stat, measured=measured, predicted=predicted, band=band, verdict="ok")
        out.append(replace(m, verdict=verdict_of(m.ratio, band)))
    return tuple(out)


def primary(metrics: tuple[MetricCheck, ...]) -> MetricCheck | None:
    """The metric the causes explain: the first off among mean TPOT, mean ITL, median TPOT, the rest."""
    order = [
        ("TPOT", "mean"),
        ("ITL", "mean"),
        ("TPOT", "median"),
        ("ITL", "median"),
        ("output tok/s", "mean"),
        ("TTFT", "mean"),
    ]
    off = [m for key in order for m in metrics if (m.metric, m.stat) == key and m.verdict != "ok"]
    return off[0] if off else None


def check_run(
    run: ServingRun,
    req: Request,
    asked: Asked,
    *,
    tol: float = defaults.CHECK_TOLERANCE,
    ttft_tol: float = DEFAULT_TTFT_TOLERANCE,
) -> ServingCheck:
    """One run against the plan the request and the file describe (module docstring)."""
    b, basis = batch_of(run, asked)
    in_len, out_len = lengths_of(run, asked)
    req = replace(req, workload=Workload(input_len=in_len, output_len=out_len))
    req.check_length(req.workload)
    p = plan_of(run, asked, req)
    row = priced_row(req, p, b)
    metrics = compare(run, row, b=b, out_len=out_len, replicas=asked.replicas, tol=tol, ttft_tol=ttft_tol)
    if not metrics:
        raise PlanError(f"{run.label}: no latency the model prices (TPOT, ITL, TTFT) in the file")
    off = primary(metrics)
    causes = causes_of(run, req, p, row, b=b, off=off, metrics=metrics, tol=tol) if off else ()
    notes = setting_notes(run, req, p) + _p99_note(run)
    return ServingCheck(
        run=run,
        model=req.model.name,
        system=req.system.name,
        engine=req.scenario.engine,
        plan=p.label(),
        batch=b,
        batch_basis=basis,
        replicas=asked.replicas,
        input_len=in_len,
        output_len=out_len,
        row=row,
        metrics=metrics,
        causes=causes,
        notes=notes,
    )


def _p99_note(run: ServingRun) -> tuple[str, ...]:
    parts = [f"{m.upper()} {format_seconds(v)}" for m in ("ttft", "tpot", "itl") if (v := run.latency(m, "p99"))]
    return (f"p99 (shown, not judged: the model prices a run's mean step): {', '.join(parts)}",) if parts else ()


def check_options(asked: Asked, tol: float, ttft_tol: float) -> None:
    """Refuse a band or replica count that is no number (one line, before any file is read)."""
    for name, v in (("tolerance", tol), ("TTFT tolerance", ttft_tol)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise PlanError(f"{name} must be a positive number, got {v!r}")
    if isinstance(asked.replicas, bool) or not isinstance(asked.replicas, int) or asked.replicas < 1:
        raise PlanError(f"replicas must be a whole number of at least 1, got {asked.replicas!r}")


def check_runs(
    runs,
    req: Request,
    asked: Asked = Asked(),
    *,
    tol: float = defaults.CHECK_TOLERANCE,
    ttft_tol: float = DEFAULT_TTFT_TOLERANCE,
) -> ServingCheckResult:
    """Every run against one request (a library caller's own)."""
    check_options(asked, tol, ttft_tol)
    return ServingCheckResult(
        checks=tuple(check_run(r, req, asked, tol=tol, ttft_tol=ttft_tol) for r in runs),
        tolerance=tol,
        ttft_tolerance=ttft_tol,
    )


def check_serving(paths, *, system: str, **options) -> ServingCheckResult:
    """Read each serving benchmark result file and check every run in it (module docstring): the
    library's `check` for serving runs. `options`: those of `check_serving_runs` (model and engine
    default to what the file names)."""
    return check_serving_runs([run for path in paths for run in read_serving(path)], system=system, **options)


def check_serving_runs(
    runs,
    *,
    system: str,
    model: str | None = None,
    engine: str | None = None,
    nodes: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    catalog=None,
    asked: Asked = Asked(),
    tol: float = defaults.CHECK_TOLERANCE,
    ttft_tol: float = DEFAULT_TTFT_TOLERANCE,
) -> ServingCheckResult:
    """`check_serving` on runs already read (check's dispatch parses each file once and passes its
    `ServingRun`s here): each run priced under its own model, engine and node count."""
    check_options(asked, tol, ttft_tol)
    checks = []
    for run in runs:
        name = model or run.model
        if not name:
            raise PlanError(f"{run.label}: the file does not name its model; give --model")
        eng = engine or run.settings.engine or defaults.DEFAULT_ENGINE
        try:
            cfg = load_model(name)
        except ShardbudgetError as err:
            if model:
                raise
            raise PlanError(
                f"{run.label}: the file's model {name!r} is not one shardbudget can load ({err}); "
                f"give --model (a catalog name or a config.json)"
            ) from None
        n = nodes or max(1, -(-_gpus(run, asked) // catalog_system(catalog, system).gpus_per_node))
        req = request(cfg, system, nodes=n, engine=eng, dtype=dtype, kv_dtype=kv_dtype, catalog=catalog)
        checks.append(check_run(run, req, asked, tol=tol, ttft_tol=ttft_tol))
    return ServingCheckResult(checks=tuple(checks), tolerance=tol, ttft_tolerance=ttft_tol)


def _gpus(run: ServingRun, asked: Asked) -> int:
    return (asked.tp or run.settings.tp or 1) * (asked.pp or run.settings.pp or 1)


def catalog_system(catalog, name: str):
    return (catalog or load_catalog()).system(name)


__all__ = [
    "Asked",
    "Cause",
    "DEFAULT_TTFT_TOLERANCE",
    "MetricCheck",
    "ServingCheck",
    "ServingCheckResult",
    "check_run",
    "check_runs",
    "check_serving",
    "compare",
    "verdict_of",
]
