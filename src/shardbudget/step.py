"""Time of one decode or prefill step under a parallel plan: roofline compute + collectives.

    step time = Σ_layers Σ_ops [max(FLOPs / achievable FLOP/s, bytes / achievable bytes/s) + launch]
              + Σ collectives on the critical path (priced by `collectives`)

Decode runs one token for each of `batch` sequences that have `context` tokens cached; prefill runs
a prompt of `context` tokens. Pipeline stages run one after the other for a single step, so PP
adds stage-boundary send/recv to the latency and divides memory, not time.

For sweeps, a `StepModel` is compiled once per (model, system, plan) and then evaluated on numpy
arrays of batch sizes and context lengths: every op's FLOPs and bytes are affine in (tokens,
tokens x context), so three probes of `transformer.layer_work` give its coefficients. Ops that are
not affine (MoE expert weights, read once per distinct expert hit) are re-evaluated per batch size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache

import numpy as np

from . import transformer as tf
from .collectives import Candidate, Group, candidates, make_group, times_s
from .errors import PlanError
from .hardware import Catalog, System, load_catalog


@dataclass(frozen=True, kw_only=True)
class Efficiency:
    """Achievable fractions of the GPU's peaks and fixed per-kernel costs.

    Defaults are measured figures: large BF16 GEMMs reach ~70% of dense peak on H100 (cuBLAS, as in
    NVIDIA's and others' published GEMM benchmarks); weight streaming in decode reaches ~80% of HBM
    peak (gpt-fast reports 1,000+ GB/s of 2,000 on A100-PCIe at batch 1 with int8; vLLM/TRT-LLM
    decode kernels 75-85%); with CUDA graphs each kernel adds ~1.5 us of launch gap.
    """

    flops: float = 0.70
    """Fraction of dense tensor-core peak reached by GEMMs and attention."""
    memory: float = 0.80
    """Fraction of HBM/GDDR peak bandwidth reached by memory-bound kernels."""
    kernel_launch_s: float = 1.5e-6
    """Per-kernel gap between back-to-back kernels under CUDA graphs, seconds."""
    overlap: bool = False
    """Overlap communication with compute (off for decode: the all-reduce sits between matmuls)."""
    memory_utilization: float = 0.90
    """Share of GPU memory the engine may use (vLLM's gpu_memory_utilization default)."""
    workspace_bytes: float = 2.0e9
    """Per-GPU memory for CUDA context, NCCL buffers, activations and graphs, bytes."""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Plan:
    tp: int = 1
    pp: int = 1
    ep: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    def label(self) -> str:
        return f"TP{self.tp}" + (f" PP{self.pp}" if self.pp > 1 else "") + (f" EP{self.ep}" if self.ep > 1 else "")


@dataclass(frozen=True)
class StepTime:
    """One step's time and what it is made of, all in seconds."""

    total_s: float
    compute_s: float
    comm_s: float
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


# --- compiled step model --------------------------------------------------------------------

@dataclass(frozen=True)
class _Coeffs:
    """FLOPs and bytes of an op (or message bytes of a collective) as c0 + c1·t + c2·t·L."""

    flops: tuple[float, float, float]
    bytes: tuple[float, float, float]


def _affine(f) -> tuple[tuple[float, float, float], bool]:
    """Fit c0 + c1·t + c2·t·L from probes of f(t, L); report whether a 4th probe agrees."""
    f10, f20, f1L = f(1.0, 0.0), f(2.0, 0.0), f(1.0, 1024.0)
    c1 = f20 - f10
    c0 = f10 - c1
    c2 = (f1L - f10) / 1024.0
    check = f(5.0, 300.0)
    pred = c0 + 5 * c1 + 5 * 300 * c2
    return (c0, c1, c2), math.isclose(check, pred, rel_tol=1e-9, abs_tol=1e-6)


@dataclass
class StepModel:
    """Decode (or prefill) time of one model on one system under one plan, vectorised."""

    model: tf.ModelConfig
    system: System
    plan: Plan
    catalog: Catalog
    impl: str = "nccl"
    weight_dtype: str = "bf16"
    act_dtype: str = "bf16"
    kv_dtype: str | None = None
    phase: str = "decode"
    eff: Efficiency = field(default_factory=Efficiency)

    def __post_init__(self) -> None:
        gpu = self.system.gpu
        fp8 = self.weight_dtype in ("fp8", "int8", "int4") and self.act_dtype == "fp8"
        self.flops_per_s = (gpu.fp8_flops_per_s if fp8 else gpu.bf16_flops_per_s) * self.eff.flops
        self.bytes_per_s = gpu.mem_bytes_per_s * self.eff.memory
        self._tp = tp_group(self.system, self.plan, self.catalog) if self.plan.tp > 1 else None
        self._pp = pp_group(self.system, self.plan, self.catalog) if self.plan.pp > 1 else None
        self._ops, self._nonaffine = self._compile_ops()
        self._calls = self._compile_calls()

    # The work of a step, as lists of (count, op-probe function)
    def _layer_ops(self, kind: str, t: float, L: float) -> list[tf.Op]:
        return tf.layer_work(self.model, kind, tokens=t, context=L, tp=self.plan.tp, ep=self.plan.ep,
                             weight_dtype=self.weight_dtype, act_dtype=self.act_dtype,
                             kv_dtype=self.kv_dtype, phase=self.phase)

    def _head_ops(self, rows: float, t: float) -> list[tf.Op]:
        """Embedding of all `t` tokens, then final norm + LM head on `rows` (decode: every token;
        prefill: only each prompt's last token needs logits)."""
        emb, _ = tf.embedding_work(self.model, tokens=t, tp=self.plan.tp, weight_dtype=self.weight_dtype,
                                   act_dtype=self.act_dtype)
        ops, _ = tf.lm_head_work(self.model, tokens=rows, tp=self.plan.tp, weight_dtype=self.weight_dtype,
                                 act_dtype=self.act_dtype)
        return emb + ops

    def _compile_ops(self):
        """Layer ops as (layers it repeats in, coefficients in t and t·L), head ops in (rows, t),
        and the ops that need recomputing per batch size."""
        affine: list[tuple[float, _Coeffs]] = []
        nonaffine: list[tuple[float, str, int]] = []
        fix_L = (lambda L: max(L, 1.0)) if self.phase == "prefill" else (lambda L: L)
        for kind, count in tf.layer_kinds(self.model).items():
            for i in range(len(self._layer_ops(kind, 1.0, 1.0))):
                fl, ok1 = _affine(lambda t, L: self._layer_ops(kind, t, fix_L(L))[i].flops)
                by, ok2 = _affine(lambda t, L: self._layer_ops(kind, t, fix_L(L))[i].bytes)
                if ok1 and ok2:
                    affine.append((count, _Coeffs(fl, by)))
                else:
                    nonaffine.append((count, kind, i))
        # head ops: coefficients in (rows, t) stored as c0 + c1·rows + c2·t
        head: list[_Coeffs] = []
        for i in range(len(self._head_ops(1.0, 1.0))):
            parts = []
            for attr in ("flops", "bytes"):
                f11 = getattr(self._head_ops(1.0, 1.0)[i], attr)
                f21 = getattr(self._head_ops(2.0, 1.0)[i], attr)
                f12 = getattr(self._head_ops(1.0, 2.0)[i], attr)
                c1, c2 = f21 - f11, f12 - f11
                parts.append((f11 - c1 - c2, c1, c2))
            head.append(_Coeffs(*parts))
        self._head = head
        return affine, nonaffine

    def _compile_calls(self) -> list[tuple[float, float, tuple[Candidate, ...]]]:
        """Per collective: (calls per step, message bytes per token, the candidates that price it)."""
        out = []
        self._head_calls: list[tuple[float, float, tuple[Candidate, ...]]] = []
        if self._tp is not None:
            for kind, count in tf.layer_kinds(self.model).items():
                for call in tf.collectives_for_layer(self.model, kind, tokens=1.0, tp=self.plan.tp, ep=self.plan.ep,
                                                     act_dtype=self.act_dtype):
                    out.append((count * call.count, call.msg_bytes, candidates(self._tp, call.op, self.impl)))
            _, head_calls = tf.lm_head_work(self.model, tokens=1.0, tp=self.plan.tp, act_dtype=self.act_dtype)
            _, emb_calls = tf.embedding_work(self.model, tokens=1.0, tp=self.plan.tp, act_dtype=self.act_dtype)
            for call in emb_calls:
                out.append((call.count, call.msg_bytes, candidates(self._tp, call.op, self.impl)))
            for call in head_calls:  # per row of logits: scales with the batch, not the prompt
                self._head_calls.append((call.count, call.msg_bytes, candidates(self._tp, call.op, "nccl")))
        if self._pp is not None:
            for call in tf.pp_collectives(self.model, tokens=1.0, pp=self.plan.pp, act_dtype=self.act_dtype):
                out.append((call.count, call.msg_bytes, candidates(self._pp, call.op, "nccl")))
        return out

    # --- evaluation ---
    def _op_time(self, flops, nbytes):
        return np.maximum(flops / self.flops_per_s, nbytes / self.bytes_per_s) + self.eff.kernel_launch_s

    def evaluate(self, batch, context) -> dict[str, np.ndarray]:
        """Arrays of step time and its parts for broadcastable arrays of batch and context."""
        b = np.asarray(batch, dtype=float)
        L = np.asarray(context, dtype=float)
        t = b if self.phase == "decode" else b * L  # tokens in the step
        tL = t * L
        compute = np.zeros(np.broadcast(t, L).shape)
        n_kernels = 0.0
        for count, c in self._ops:
            fl = c.flops[0] + c.flops[1] * t + c.flops[2] * tL
            by = c.bytes[0] + c.bytes[1] * t + c.bytes[2] * tL
            compute = compute + count * self._op_time(fl, by)
            n_kernels += count
        for c in self._head:
            fl = c.flops[0] + c.flops[1] * b + c.flops[2] * t
            by = c.bytes[0] + c.bytes[1] * b + c.bytes[2] * t
            compute = compute + self._op_time(fl, by)
            n_kernels += 1
        compute = compute + self._nonaffine_time(b, L)
        n_kernels += sum(count for count, _, _ in self._nonaffine)
        comm = np.zeros_like(compute)
        comm_lat = np.zeros_like(compute)
        calls = 0.0
        scaled = [(c, m * t, k) for c, m, k in self._calls] + [(c, m * b, k) for c, m, k in self._head_calls]
        for count, msg, cands in scaled:
            msg = np.broadcast_to(msg, compute.shape)
            tc = times_s(cands, msg)
            comm = comm + count * tc
            comm_lat = comm_lat + count * _latency_part(cands, msg)
            calls += count
        total = np.maximum(compute, comm) if self.eff.overlap else compute + comm
        return {"total_s": total, "compute_s": compute, "comm_s": comm, "comm_latency_s": comm_lat,
                "launch_s": np.full(compute.shape, n_kernels * self.eff.kernel_launch_s), "calls": calls}

    def _nonaffine_time(self, b: np.ndarray, L: np.ndarray) -> np.ndarray:
        if not self._nonaffine:
            return np.zeros(np.broadcast(b, L).shape)
        out = np.zeros(np.broadcast(b, L).shape)
        bb, LL = np.broadcast_arrays(b, L)
        for key in np.unique(np.stack([bb.ravel(), LL.ravel()], axis=1), axis=0):
            bv, Lv = float(key[0]), float(key[1])
            t = bv if self.phase == "decode" else bv * Lv
            mask = (bb == bv) & (LL == Lv)
            total = 0.0
            for count, kind, i in self._nonaffine:
                op = self._layer_ops(kind, t, Lv)[i]
                total += count * float(self._op_time(op.flops, op.bytes))
            out[mask] += total
        return out

    def step(self, batch: int, context: float) -> StepTime:
        r = self.evaluate(batch, context)
        return StepTime(total_s=float(r["total_s"]), compute_s=float(r["compute_s"]), comm_s=float(r["comm_s"]),
                        launch_s=float(r["launch_s"]), comm_calls=int(r["calls"]),
                        comm_latency_s=float(r["comm_latency_s"]))

    def collective_calls(self, batch: int, context: float) -> list[dict]:
        """The collectives of one step with their message sizes and times (for reports)."""
        t = batch if self.phase == "decode" else batch * context
        rows = []
        scaled = [(c, m * t, k) for c, m, k in self._calls] + [(c, m * batch, k) for c, m, k in self._head_calls]
        for count, msg, cands in scaled:
            rows.append({"count": count, "msg_bytes": msg, "time_s": float(times_s(cands, np.array([msg]))[0])})
        return rows


def _latency_part(cands: Sequence[Candidate], msg: np.ndarray) -> np.ndarray:
    """Latency term of the candidate `times_s` picks at each size."""
    best_t = np.full(msg.shape, np.inf)
    lat = np.zeros(msg.shape)
    for c in cands:
        t = c.latency_s + msg / c.algbw_bytes_per_s
        better = (msg <= c.max_bytes) & (t < best_t)
        best_t = np.where(better, t, best_t)
        lat = np.where(better, c.latency_s, lat)
    return lat


@lru_cache(maxsize=1024)
def compile_step(model: tf.ModelConfig, system: System, plan: Plan, catalog: Catalog, impl: str = "nccl",
                 weight_dtype: str = "bf16", act_dtype: str = "bf16", kv_dtype: str | None = None,
                 phase: str = "decode", eff: Efficiency = Efficiency()) -> StepModel:
    return StepModel(model, system, plan, catalog, impl, weight_dtype, act_dtype, kv_dtype, phase, eff)


def memory_bytes_per_gpu(model: tf.ModelConfig, plan: Plan, *, batch: int, context: float,
                         weight_dtype: str = "bf16", kv_dtype: str = "bf16", eff: Efficiency = Efficiency()) -> float:
    """Weights + KV cache for batch x context + workspace, bytes per GPU."""
    weights = tf.weight_bytes_per_gpu(model, tp=plan.tp, pp=plan.pp, ep=plan.ep, weight_dtype=weight_dtype)
    kv = tf.kv_cache_bytes_per_gpu(model, batch=batch, context=context, tp=plan.tp, pp=plan.pp, kv_dtype=kv_dtype)
    return weights + kv + eff.workspace_bytes


def decode_step(model: str | tf.ModelConfig, system: str | System, plan: Plan = Plan(), *, batch: int = 1,
                context: float = 4096, nodes: int = 1, impl: str = "nccl", weight_dtype: str = "bf16",
                act_dtype: str = "bf16", kv_dtype: str | None = None, eff: Efficiency = Efficiency(),
                catalog: Catalog | None = None, phase: str = "decode") -> StepTime:
    """One decode (or prefill) step's time: the library entry point for a single configuration."""
    catalog = catalog or load_catalog()
    cfg = tf.load_model(model) if isinstance(model, str) else model
    sysm = catalog.system(system) if isinstance(system, str) else system
    if plan.gpus > nodes * sysm.gpus_per_node:
        raise PlanError(f"{plan.label()} needs {plan.gpus} GPUs but {nodes} x {sysm.name} has "
                        f"{nodes * sysm.gpus_per_node}")
    sm = compile_step(cfg, sysm, plan, catalog, impl, weight_dtype, act_dtype, kv_dtype, phase, eff)
    return sm.step(batch, context)


__all__ = ["Efficiency", "Plan", "StepModel", "StepTime", "compile_step", "decode_step", "memory_bytes_per_gpu",
           "replace"]
