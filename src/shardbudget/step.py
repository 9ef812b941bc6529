"""Time of one decode or prefill step under a parallel plan: roofline compute + collectives.

    step time = Σ_ops count · [max(FLOPs / achievable FLOP/s, bytes / achievable bytes/s) + launch]
              + Σ_collectives count · time(op, message bytes, group)        (priced by `collectives`)

evaluated directly on broadcast numpy arrays of batch sizes (shape (B, 1)) and context lengths
(shape (1, C)): `model.step_work` gives every op's FLOPs and bytes and every collective's message as
arrays, and each term keeps the smallest shape it depends on until the final sum, so a grid pays
the full-grid price only for the attention / KV terms.

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
from .collective_op import CollectiveOp
from .collectives import Group, candidates, make_group, times_and_latencies_s
from .engines.allreduce import AllReduceRanges, allreduce_ranges_for, engine_allreduce_s
from .engines.presets import load_engine
from .kernels import load_kernels, tile_quantization_factor
from .errors import PlanError
from .hardware import Catalog, System, load_catalog
from .model import (CollectiveCall, ModelConfig, Plan, Precision, StepWork, hidden_message_bytes, load_model,
                    pipeline_calls, step_work)
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


# --- placing the groups on nodes ------------------------------------------------------------

def tp_group(system: System, plan: Plan, catalog: Catalog) -> Group:
    """TP ranks fill a node first; TP beyond one node spans whole nodes over the scale-out network."""
    gpn = system.gpus_per_node
    if plan.tp <= gpn:
        return make_group(system, nodes=1, gpus=plan.tp, catalog=catalog)
    if plan.tp % gpn:
        raise PlanError(f"tp ({plan.tp}) larger than a node ({gpn} GPUs) must be a multiple of it")
    return make_group(system, nodes=plan.tp // gpn, gpus=plan.tp, catalog=catalog)


def pp_group(system: System, plan: Plan, catalog: Catalog) -> Group:
    """Neighbouring stages: in the same node while tp x pp fits in one, else across the network."""
    same_node = plan.tp * plan.pp <= system.gpus_per_node
    return make_group(system, nodes=1 if same_node else 2, gpus=2, catalog=catalog)


# --- the step model -------------------------------------------------------------------------

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
    def groups(self) -> dict[str, Group | None]:
        """The ranks each CollectiveCall.group names (expert ranks are the TP group)."""
        tp = tp_group(self.system, self.plan, self.catalog) if self.plan.tp > 1 else None
        pp = pp_group(self.system, self.plan, self.catalog) if self.plan.pp > 1 else None
        return {"tp": tp, "ep": tp, "pp": pp}

    @cached_property
    def rates(self) -> tuple[float, float]:
        """Achievable (FLOP/s, HBM bytes/s) of one GPU for this precision."""
        gpu, eff = self.system.gpu, self.eff
        flops = gpu.fp8_flops_per_s * eff.flops_fp8 if self.precision.uses_fp8_gemms else gpu.bf16_flops_per_s * eff.flops
        return flops, gpu.mem_bytes_per_s * eff.memory

    def work(self, batch, context) -> StepWork:
        return step_work(self.model, self.plan, batch=batch, context=context, phase=self.phase,
                         precision=self.precision, sequence_parallel=self.settings.sequence_parallel)

    def evaluate(self, batch, context) -> dict[str, np.ndarray]:
        """Arrays of step time and its parts for broadcastable arrays of batch and context."""
        b, L = np.asarray(batch, dtype=float), np.asarray(context, dtype=float)
        shape = np.broadcast(b, L).shape
        full, n_kernels, calls = self._gpu_parts(b, L, shape)
        half = self._gpu_parts(np.ceil(b / 2), L, shape)[0] if self.settings.overlap == "tbo" else None
        gpu, compute, comm, comm_lat = overlap.exposed(self.settings.overlap, full, half=half,
                                                        layers=self.model.num_layers, batch=b)
        # eager engines launch every kernel from the host; the step cannot beat the launch loop, and
        # every collective waits for the slowest rank's host
        host = n_kernels * self.eff.host_per_kernel_s + _host_collective_units(calls, self.plan.tp) * \
            self.eff.host_per_collective_s
        # whether the GPU or the hosts set the pace, each collective starts when the slowest rank's
        # host has launched it: the skew adds to either, and is time spent in communication
        skew = self._rank_skew_s(calls)
        comm = comm + skew
        seqs = b if self.phase == "decode" else np.ones_like(b)
        total = np.maximum(gpu, host) + skew + self.eff.step_overhead_s + self.eff.overhead_per_seq_s * seqs
        return {"total_s": total, "compute_s": compute, "comm_s": comm, "comm_latency_s": comm_lat,
                "other_s": total - compute - comm, "launch_s": np.full(shape, n_kernels * self.eff.kernel_launch_s),
                "calls": float(sum(c.count for c in calls))}

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
            sends = _merged(pipeline_calls(self.model, self.plan, batch=b, context=L, phase=self.phase,
                                           precision=self.precision))
            send_s, send_lat = self._comm_s(sends, shape)
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
        return compile_step(self.model, self.system, replace(self.plan, pp=1), self.catalog, impl=self.impl,
                            engine=self.engine, precision=self.precision, phase=self.phase, eff=self.eff,
                            settings=self.settings)

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
            compute, gemm = self._compute_s(work, shape)
            calls = _merged(work.calls)
            comm, comm_lat = self._comm_s(calls, shape)
            for a in (compute, gemm, comm, comm_lat):
                a.setflags(write=False)  # shared between PP degrees: nobody may change them in place
            if len(memo) >= _LAYER_MEMO:
                memo.pop(next(iter(memo)))
            memo[key] = (compute, gemm, sum(count for count, _ in work.ops), calls, comm, comm_lat)
        return memo[key]

    @cached_property
    def _fused_allreduce_norm(self) -> bool:
        """The engine runs all-reduce + residual + RMSNorm as one kernel (and there is a TP all-reduce)."""
        return self.plan.tp > 1 and self.impl is None and load_engine(self.engine).allreduce.fused_residual_rmsnorm

    def _op_s(self, op) -> np.ndarray | float:
        """max(roofline, the kernel's floor) + launch: the roofline at the kernel's own achievable
        fractions of peak (catalog/kernels.toml; the Efficiency defaults where it has none), GEMMs
        padded to the arch's tiles; FP8 GEMMs add their activation-quantisation kernel."""
        flops_per_s, bytes_per_s = self.rates
        entry = _kernel_entry(self.system.gpu.arch, op.kernel)
        peak = self.system.gpu
        fp8 = self.precision.uses_fp8_gemms and op.kind == "gemm"
        if entry is not None and entry.memory_efficiency:
            bytes_per_s = peak.mem_bytes_per_s * entry.memory_efficiency
        if entry is not None and entry.compute_efficiency and not fp8:
            flops_per_s = peak.bf16_flops_per_s * entry.compute_efficiency
        flops = op.flops
        if op.kernel in _TILED:
            flops = flops * _tile_factor(self.system.gpu.arch, *op.shape_nk)
        t = np.maximum(flops / flops_per_s, op.bytes / bytes_per_s)
        if entry is not None:
            floor = entry.floor_s
            if entry.floor_per_active_expert_s is not None:  # the call's floor, shared by its two GEMMs
                experts = np.minimum(op.active_experts, MOE_FLOOR_EXPERTS / 2)
                floor = np.maximum(entry.floor_s / 2, entry.floor_per_active_expert_s * experts)
            t = np.maximum(t, floor)
        launches = 1.0 if op.launches else 0.0
        if fp8 and op.kernel in _TILED:
            quant = _kernel_entry(self.system.gpu.arch, "act_quant_fp8")
            t, launches = t + (quant.floor_s if quant else 0.0), launches + 1.0
        return t + launches * self.eff.kernel_launch_s

    def _compute_s(self, work: StepWork, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
        """Σ count · op time (`_op_s`), each shape summed apart and broadcast once; and the GEMMs'
        part of it. Residual adds and norms fused into the all-reduce (engines that fuse them) cost
        nothing of their own."""
        by_shape: dict[tuple[str, tuple], np.ndarray] = {}
        for count, op in work.ops:
            if op.after_allreduce and self._fused_allreduce_norm:
                continue
            t = count * self._op_s(op)
            key = (op.kind == "gemm", np.shape(t))
            by_shape[key] = by_shape[key] + t if key in by_shape else t
        total, gemm = np.zeros(shape), np.zeros(shape)
        for (is_gemm, _), part in by_shape.items():
            total = total + part
            gemm = gemm + part if is_gemm else gemm
        return total, gemm

    def _comm_s(self, calls: list[CollectiveCall], shape: tuple) -> tuple[np.ndarray, np.ndarray]:
        """Time and latency part of every collective, priced on its message array."""
        comm, lat = np.zeros(()), np.zeros(())
        for call in calls:
            t, latency = self._call_s(call, np.asarray(call.msg_bytes, dtype=float))
            comm, lat = comm + call.count * t, lat + call.count * latency
        return np.broadcast_to(comm, shape).copy(), np.broadcast_to(lat, shape).copy()

    def _call_s(self, call: CollectiveCall, msg_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One call's (time, latency part): the engine's all-reduce rule for TP all-reduces, NCCL's
        tuner (or the forced implementation) for everything else."""
        group = self.groups[call.group]
        if self.impl is None and call.op == CollectiveOp.ALL_REDUCE and call.group == "tp":
            return _priced(engine_allreduce_s, self.allreduce_ranges, msg_bytes)
        return _priced(times_and_latencies_s, candidates(group, call.op, self.impl or "nccl"), msg_bytes)

    @cached_property
    def allreduce_ranges(self) -> AllReduceRanges | None:
        """Which kernel the engine runs for the TP all-reduce at each size (None without TP)."""
        group = self.groups["tp"]
        if group is None:
            return None
        per_token = float(hidden_message_bytes(self.model, 1.0, self.precision.activations))
        return allreduce_ranges_for(self.engine, group, per_token)

    def step(self, batch: int, context: float) -> StepTime:
        r = self.evaluate(batch, context)
        return StepTime(total_s=float(r["total_s"]), compute_s=float(r["compute_s"]), comm_s=float(r["comm_s"]),
                        other_s=float(r["other_s"]), launch_s=float(r["launch_s"]), comm_calls=int(r["calls"]),
                        comm_latency_s=float(r["comm_latency_s"]))

    def collective_calls(self, batch: int, context: float) -> list[dict]:
        """The collectives of one step with their message sizes and times (for reports)."""
        rows = []
        for call in _merged(self.work(np.asarray(float(batch)), np.asarray(float(context))).calls):
            msg = float(call.msg_bytes)
            t, _ = self._call_s(call, np.array([msg]))
            rows.append({"op": call.op.value, "group": call.group, "count": call.count, "msg_bytes": msg,
                         "time_s": float(t[0])})
        return rows


_TILED = ("dense_gemm", "grouped_moe_gemm")
_LAYER_MEMO = 8
"""(batch, context) arrays whose layer prices a StepModel keeps: a sweep asks for a few (decode
batches, the prefill prompt, two-batch overlap's halves), each for every PP degree."""
MOE_FLOOR_EXPERTS = 16
"""Experts beyond which a fused-MoE call's per-expert overhead no longer adds up: the catalog's
per-expert floor is measured at <= 8 experts per call (Qwen3-30B-A3B top-8: 40 us), while calls
over many experts stream their weights at the kernel's bandwidth efficiency (Mixtral, all experts
at large batch, vLLM PR #24700), which the roofline prices. Estimate."""


_PRICES: dict[tuple, tuple] = {}
_PRICES_MAX = 512
"""Collective prices remembered, by (line set, message array): the plans of one sweep that share a
TP group (every EP and DP variant, every replica count) send the same messages over it."""


def _priced(price, lines, msg_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """price(lines, msg_bytes), remembered. `lines` (NCCL's candidates or an engine's all-reduce
    ranges) come from lru caches, so one object stands for one group and op: it is the key, and
    is kept beside the result so that its id cannot be reused while the entry lives."""
    key = (price, id(lines), msg_bytes.tobytes(), msg_bytes.shape)
    hit = _PRICES.get(key)
    if hit is not None and hit[0] is lines:
        return hit[1]
    result = price(lines, msg_bytes)
    for a in result:
        if isinstance(a, np.ndarray):
            a.setflags(write=False)  # shared: nobody may change it in place
    if len(_PRICES) >= _PRICES_MAX:
        _PRICES.pop(next(iter(_PRICES)))
    _PRICES[key] = (lines, result)
    return result


@lru_cache(maxsize=256)
def _kernel_entry(arch: str, kernel: str | None):
    """The catalog's floor and efficiencies for a kernel on a GPU generation (None: not catalogued)."""
    if kernel is None:
        return None
    return load_kernels()["floors"].get((arch, kernel))


@lru_cache(maxsize=65536)
def _tile_factor(arch: str, n: float, k: float) -> float:
    """Work done / asked for a GEMM shard padded to the arch's tiles (1 where there are no tiles)."""
    if arch not in load_kernels()["tiles"] or n < 1 or k < 1:
        return 1.0
    return tile_quantization_factor(arch, int(math.ceil(n)), int(math.ceil(k)))


@lru_cache(maxsize=256)
def expected_max_of_normals(p: int) -> float:
    """E[max of p independent standard normals]: 0, 0.564, 0.846, 1.029, ..., 1.424 for p = 1..8,
    by numerical integration of max's density p φ(x) Φ(x)^(p-1)."""
    x = np.linspace(-8.0, 8.0, 16001)
    phi = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = np.cumsum(phi) * (x[1] - x[0])
    return float(np.sum(x * p * phi * cdf ** (p - 1)) * (x[1] - x[0]))


def _merged(calls: list[CollectiveCall]) -> list[CollectiveCall]:
    """Calls of the same op, group and message size as one call with their counts summed (dense and
    MoE layers insert the same all-reduce): each distinct collective is priced once."""
    out: list[CollectiveCall] = []
    for call in calls:
        for i, seen in enumerate(out):
            if (seen.op, seen.group) == (call.op, call.group) and np.array_equal(seen.msg_bytes, call.msg_bytes):
                out[i] = CollectiveCall(seen.op, seen.msg_bytes, seen.group, seen.count + call.count)
                break
        else:
            out.append(call)
    return out


def _host_collective_units(calls: list[CollectiveCall], tp: int) -> float:
    """Collectives the host launches per step without CUDA graphs: each costs its enqueue once per
    rank, in parallel on every rank (no per-peer term: no mechanism makes the host pay per peer)."""
    return float(sum(c.count for c in calls))


@lru_cache(maxsize=1024)
def compile_step(model: ModelConfig, system: System, plan: Plan, catalog: Catalog, *, impl: str | None = None,
                 engine: str = DEFAULT_ENGINE, precision: Precision = Precision(), phase: str = "decode",
                 eff: Efficiency | None = None, settings: PlanSettings = PlanSettings()) -> StepModel:
    """A cached StepModel: its groups and collective candidates are built once per configuration.
    `eff` defaults to the engine preset's (settings.engine_efficiency)."""
    return StepModel(model=model, system=system, plan=plan, catalog=catalog, impl=impl, engine=engine,
                     precision=precision, phase=phase, eff=eff or engine_efficiency(engine), settings=settings)


def decode_step(model: str | ModelConfig, system: str | System, plan: Plan = Plan(), *, batch: int = 1,
                context: float = 4096, nodes: int = 1, impl: str | None = None, engine: str = DEFAULT_ENGINE,
                precision: Precision = Precision(), eff: Efficiency | None = None,
                settings: PlanSettings = PlanSettings(), catalog: Catalog | None = None,
                phase: str = "decode") -> StepTime:
    """One decode (or prefill) step's time: the library entry point for a single configuration."""
    catalog = catalog or load_catalog()
    cfg = load_model(model) if isinstance(model, str) else model
    sysm = catalog.system(system) if isinstance(system, str) else system
    if plan.gpus > nodes * sysm.gpus_per_node:
        raise PlanError(f"{plan.label()} needs {plan.gpus} GPUs but {nodes} x {sysm.name} has "
                        f"{nodes * sysm.gpus_per_node}")
    return compile_step(cfg, sysm, plan, catalog, impl=impl, engine=engine, precision=precision, phase=phase,
                        eff=eff, settings=settings).step(batch, context)


__all__ = ["StepModel", "StepTime", "compile_step", "decode_step", "pp_group", "tp_group"]
