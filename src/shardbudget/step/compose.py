"""Time of one decode or prefill step under a parallel plan: roofline compute + collectives.

    step time = Σ_ops count · [max(FLOPs / achievable FLOP/s, bytes / achievable bytes/s) + launch]
              + Σ_collectives count · time(op, message bytes, group)        (priced by `collectives`)

evaluated directly on broadcast numpy arrays of batch sizes (shape (B, 1)) and context lengths
(shape (1, C)): `model.step_work` gives every op's FLOPs and bytes and every collective's message as
arrays, and each term keeps the smallest shape it depends on until the final sum, so a grid pays
the full-grid price only for the attention / KV terms.

The ops are priced by `step.price_ops`, the collectives by `step.price_comm`; this module composes
them with the host, the ranks' skew and the per-step overheads, and keeps what PP degrees share.

Decode runs one token for each of `batch` sequences that have `context` tokens cached; prefill runs
`batch` prompts of `context` tokens. Pipeline stages run one after the other for a single step, so
PP adds stage-boundary send/recv to the latency and divides memory, not time.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from functools import cached_property, lru_cache

import numpy as np

from . import overlap
from ..comm.collectives import Group
from ..engines.allreduce import AllReduceRanges
from ..engines.presets import load_engine
from ..engines.release import engine_catalog
from ..fabric.hardware import Catalog, System
from ..model import CollectiveCall, ModelConfig, Plan, Precision, StepWork, pipeline_calls, step_work
from .price_comm import CommPricer, merged
from .price_ops import OpPricer, engine_op_pricer
from .records import AllReduceCall, PricedCall, StepArrays, allreduce_calls
from .settings import DEFAULT_ENGINE, Efficiency, PlanSettings, engine_efficiency


@dataclass(frozen=True)
class StepTime:
    """One step's time and what it is made of, all in seconds."""

    total_s: float
    compute_s: float
    comm_s: float
    other_s: float
    """Host-bound time and per-step overhead: total minus compute minus communication."""
    launch_s: float
    comm_calls: int
    comm_latency_s: float
    """Part of comm_s that is the collectives' latency terms (the rest is bandwidth)."""

    @property
    def comm_share(self) -> float:
        return self.comm_s / self.total_s if self.total_s > 0 else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["comm_share"] = self.comm_share
        return d


@dataclass(frozen=True, kw_only=True)
class StepModel:
    """Decode (or prefill) time of one model on one system under one plan, on arrays."""

    model: ModelConfig
    system: System
    plan: Plan
    catalog: Catalog
    impl: str | None = None
    """nccl or custom forces that implementation for every all-reduce; None lets `engine` decide."""
    engine: str = DEFAULT_ENGINE
    precision: Precision = Precision()
    phase: str = "decode"
    eff: Efficiency = Efficiency()
    settings: PlanSettings = PlanSettings()

    def __post_init__(self) -> None:
        self.plan.check(self.model)
        load_engine(self.engine)  # an unknown engine fails here, with "did you mean"

    @cached_property
    def ops(self) -> OpPricer:
        return engine_op_pricer(
            self.model,
            self.system,
            self.plan,
            precision=self.precision,
            eff=self.eff,
            engine=self.engine,
            impl=self.impl,
            moe_a2a=self.settings.moe_a2a,
        )

    @cached_property
    def comms(self) -> CommPricer:
        return CommPricer(
            model=self.model,
            system=self.system,
            plan=self.plan,
            catalog=self.catalog,
            impl=self.impl,
            engine=self.engine,
            precision=self.precision,
            moe_a2a=self.settings.moe_a2a,
            phase=self.phase,
        )

    @property
    def groups(self) -> dict[str, Group | None]:
        """The ranks each CollectiveCall.group names (expert ranks are the TP group)."""
        return self.comms.groups

    @property
    def allreduce_ranges(self) -> AllReduceRanges | None:
        """Which kernel the engine runs for the TP all-reduce at each size (None without TP)."""
        return self.comms.allreduce_ranges

    @property
    def rates(self) -> tuple[float, float]:
        """Achievable (FLOP/s, HBM bytes/s) of one GPU for this precision."""
        return self.ops.rates

    def work(self, batch, context) -> StepWork:
        return step_work(
            self.model,
            self.plan,
            batch=batch,
            context=context,
            phase=self.phase,
            precision=self.precision,
            sequence_parallel=self.settings.sequence_parallel,
        )

    def evaluate(self, batch, context) -> StepArrays:
        """Step time and its parts for broadcastable arrays of batch and context."""
        b, L = np.asarray(batch, dtype=float), np.asarray(context, dtype=float)
        shape = np.broadcast(b, L).shape
        full, n_kernels, calls = self._gpu_parts(b, L, shape)
        half = self._gpu_parts(np.ceil(b / 2), L, shape)[0] if self.settings.overlap == "tbo" else None
        gpu, compute, comm, comm_lat = overlap.exposed(
            self.settings.overlap, full, half=half, layers=self.model.num_layers, batch=b
        )
        # eager engines launch every kernel from the host; the step cannot beat the launch loop, and
        # every collective waits for the slowest rank's host
        host = (
            n_kernels * self.eff.host_per_kernel_s
            + _host_collective_units(calls, self.plan.tp) * self.eff.host_per_collective_s
        )
        # whether the GPU or the hosts set the pace, each collective starts when the slowest rank's
        # host has launched it: the skew adds to either, and is time spent in communication
        skew = self._rank_skew_s(calls)
        comm = comm + skew
        seqs = b if self.phase == "decode" else np.ones_like(b)
        # the host's round trip per scheduler call, shared by the decode steps of one call (multi-step);
        # the per-sequence work (each token's output processing) is every step's, done while the GPU runs
        # another step where the engine overlaps it (overlap schedulers, vLLM 0.6's async output processor)
        steps = self.settings.scheduler_steps if self.phase == "decode" else 1
        per_seq = self.eff.overhead_per_seq_s * seqs
        busy = np.maximum(gpu, host)
        busy = np.maximum(busy, per_seq) if self.eff.per_seq_overlapped else busy + per_seq
        total = busy + skew + self.eff.step_overhead_s / steps
        return StepArrays(
            total_s=total,
            compute_s=compute,
            comm_s=comm,
            comm_latency_s=comm_lat,
            other_s=total - compute - comm,
            launch_s=np.full(shape, n_kernels * self.eff.kernel_launch_s),
            calls=float(sum(c.count for c in calls)),
        )

    def _rank_skew_s(self, calls: list[CollectiveCall]) -> float:
        """Σ over TP / EP collectives of sigma x E[max of p standard normals] (see Efficiency)."""
        if self.eff.host_jitter_s == 0.0 or self.plan.tp < 2:
            return 0.0
        tp_calls = sum(c.count for c in calls if c.group != "pp")
        return tp_calls * self.eff.host_jitter_s * expected_max_of_normals(self.plan.tp)

    def _gpu_parts(self, b: np.ndarray, L: np.ndarray, shape: tuple) -> tuple[overlap.GpuParts, int, list]:
        """Compute (and its GEMM part) and communication of a step of `b` sequences, on `shape`:
        the stage-free step's (`_stage`, shared by every PP degree) plus the sends between stages."""
        compute, gemm, n_kernels, calls, comm, comm_lat = self._stage._layer_parts(b, L, shape)
        if self.plan.pp > 1:
            sends = merged(
                pipeline_calls(self.model, self.plan, batch=b, context=L, phase=self.phase, precision=self.precision)
            )
            send_s, send_lat = self.comms.comm_s(sends, shape)
            calls, comm, comm_lat = calls + sends, comm + send_s, comm_lat + send_lat
        parts = overlap.GpuParts(compute_s=compute, gemm_s=gemm, comm_s=comm, comm_latency_s=comm_lat)
        return parts, n_kernels, calls

    @cached_property
    def _stage(self) -> StepModel:
        """This step at PP 1. Pipeline stages add only their sends (model.pipeline_calls): the ops
        and the TP/EP collectives of every layer, and so their prices, are the same for every PP
        degree of a TP x EP x DP plan, and are computed once for all of them."""
        if self.plan.pp == 1:
            return self
        return compile_step(
            self.model,
            self.system,
            replace(self.plan, pp=1),
            self.catalog,
            impl=self.impl,
            engine=self.engine,
            precision=self.precision,
            phase=self.phase,
            eff=self.eff,
            settings=self.settings,
        )

    @cached_property
    def _layer_prices(self) -> dict:
        return {}

    def _layer_parts(self, b: np.ndarray, L: np.ndarray, shape: tuple) -> tuple:
        """(compute, GEMM part, kernels, merged calls, comm, comm latency) of the step's layers, head
        and embedding: remembered for the last few (batch, context) arrays it was asked for."""
        key = (b.tobytes(), b.shape, L.tobytes(), L.shape, shape)
        memo = self._layer_prices
        if key not in memo:
            work = self.work(b, L)
            compute, gemm = self.ops.compute_s(work, shape)
            calls = merged(work.calls)
            comm, comm_lat = self.comms.comm_s(calls, shape)
            for a in (compute, gemm, comm, comm_lat):
                a.setflags(write=False)  # shared between PP degrees: nobody may change them in place
            if len(memo) >= _LAYER_MEMO:
                memo.pop(next(iter(memo)))
            memo[key] = (compute, gemm, sum(count for count, _ in work.ops), calls, comm, comm_lat)
        return memo[key]

    def step(self, batch: int, context: float) -> StepTime:
        r = self.evaluate(batch, context)
        return StepTime(
            total_s=float(r.total_s),
            compute_s=float(r.compute_s),
            comm_s=float(r.comm_s),
            other_s=float(r.other_s),
            launch_s=float(r.launch_s),
            comm_calls=int(r.calls),
            comm_latency_s=float(r.comm_latency_s),
        )

    def collective_calls(self, batch: int, context: float) -> list[PricedCall]:
        """The collectives of one step with their message sizes and times."""
        rows = []
        for call in merged(self.work(np.asarray(float(batch)), np.asarray(float(context))).calls):
            msg = float(call.msg_bytes)
            t, _ = self.comms.call_s(call, np.array([msg]))
            rows.append(
                PricedCall(op=call.op.value, group=call.group, count=call.count, msg_bytes=msg, time_s=float(t[0]))
            )
        return rows

    def tp_allreduces(self, batch, context: float) -> list[AllReduceCall | None]:
        """The chief TP all-reduce at each batch of `batch` at one context, as this step prices it:
        from the calls `evaluate` listed for the same arrays (remembered), the kernel the engine runs."""
        b, L = np.atleast_1d(np.asarray(batch, dtype=float)), np.asarray(float(context))
        return allreduce_calls(self, self._stage._layer_parts(b, L, b.shape)[3], b)


_LAYER_MEMO = 8
"""(batch, context) arrays whose layer prices a StepModel keeps: a sweep asks for a few (decode
batches, the prefill prompt, two-batch overlap's halves), each for every PP degree."""


@lru_cache(maxsize=256)
def expected_max_of_normals(p: int) -> float:
    """E[max of p independent standard normals]: 0, 0.564, 0.846, 1.029, ..., 1.424 for p = 1..8,
    by numerical integration of max's density p φ(x) Φ(x)^(p-1)."""
    x = np.linspace(-8.0, 8.0, 16001)
    phi = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = np.cumsum(phi) * (x[1] - x[0])
    return float(np.sum(x * p * phi * cdf ** (p - 1)) * (x[1] - x[0]))


def _host_collective_units(calls: list[CollectiveCall], tp: int) -> float:
    """Collectives the host launches per step without CUDA graphs: each costs its enqueue once per
    rank, in parallel on every rank (no per-peer term: no mechanism makes the host pay per peer)."""
    return float(sum(c.count for c in calls))


@lru_cache(maxsize=1024)
def compile_step(
    model: ModelConfig,
    system: System,
    plan: Plan,
    catalog: Catalog,
    *,
    impl: str | None = None,
    engine: str = DEFAULT_ENGINE,
    precision: Precision = Precision(),
    phase: str = "decode",
    eff: Efficiency | None = None,
    settings: PlanSettings = PlanSettings(),
) -> StepModel:
    """A cached StepModel: its groups and collective candidates are built once per configuration.
    `eff` defaults to the engine preset's (settings.engine_efficiency); NCCL is the engine's (engines.release)."""
    return StepModel(
        model=model,
        system=system,
        plan=plan,
        catalog=engine_catalog(catalog, engine),
        impl=impl,
        engine=engine,
        precision=precision,
        phase=phase,
        eff=eff or engine_efficiency(engine),
        settings=settings,
    )


__all__ = ["StepModel", "StepTime", "compile_step"]
