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
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache

import numpy as np

from . import transformer as tf
from .collectives import Candidate, Group, make_group, times_and_latencies_s, times_s
from .collectives import candidates as _candidates
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
    """Fraction of dense BF16 tensor-core peak reached by GEMMs and attention."""
    flops_fp8: float = 0.60
    """Fraction of dense FP8 peak reached by FP8 GEMMs (cuBLAS FP8 reaches a smaller share of its
    doubled peak than BF16 does of its own)."""
    memory: float = 0.80
    """Fraction of HBM/GDDR peak bandwidth reached by memory-bound kernels."""
    kernel_launch_s: float = 1.5e-6
    """Per-kernel gap between back-to-back kernels under CUDA graphs, seconds."""
    overlap: bool = False
    """Overlap communication with compute (off for decode: the all-reduce sits between matmuls)."""
    sequence_parallel: bool = False
    """Megatron sequence parallelism: each TP all-reduce becomes a reduce-scatter + all-gather (off for
    decode, where it doubles the per-layer latency terms; it pays for prefill memory)."""
    memory_utilization: float = 0.90
    """Share of GPU memory the engine may use (vLLM's gpu_memory_utilization default)."""
    workspace_bytes: float = 2.0e9
    """Per-GPU memory for CUDA context, NCCL buffers, activations and graphs, bytes."""
    step_overhead_s: float = 1.0e-3
    """Host work per step outside the GPU's critical path: scheduling, sampling, output handling."""
    overhead_per_seq_s: float = 20e-6
    """Host work per sequence per step (sampling, detokenisation, scheduler bookkeeping)."""
    host_per_kernel_s: float = 0.0
    """Host time to launch one kernel when the engine does not replay CUDA graphs (eager mode)."""
    host_per_collective_s: float = 0.0
    """Extra host time per collective and per peer in eager mode (Python + NCCL enqueue, rank skew)."""

    def to_dict(self) -> dict:
        return asdict(self)


# Engine presets. A decode step's time is max(GPU time, host launch time) + step overhead: with CUDA
# graphs the host replays the whole step at once; in eager mode it launches every kernel itself and
# becomes the bottleneck once TP makes each kernel short. Fitted on ../shared/data/decode_tp.csv:
# "graphs" on vLLM V1 / SGLang rows (B200, GB200 Llama-70B TP4), "vllm-v0" on vLLM 0.7.2 QwQ-32B
# (TP2-8, A100), "eager" on TGI CodeLlama-34B (A100/H100, TP1-4: no gain past TP2).
ENGINES: dict[str, dict] = {
    "graphs": {},
    "vllm-v0": {"step_overhead_s": 6.0e-3, "overhead_per_seq_s": 0.2e-3},
    "eager": {"kernel_launch_s": 3.0e-6, "host_per_kernel_s": 37e-6, "host_per_collective_s": 35e-6,
              "step_overhead_s": 3.0e-3},
}


def engine_efficiency(engine: str, **overrides) -> Efficiency:
    """The Efficiency of a named engine preset, with field overrides."""
    if engine not in ENGINES:
        from .errors import UnknownNameError
        raise UnknownNameError("engine", engine, ENGINES)
    return Efficiency(**{**ENGINES[engine], **overrides})


@dataclass(frozen=True)
class Plan:
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    """Data-parallel attention inside the TP group (1, or tp for MoE models with ep = tp)."""

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    def label(self) -> str:
        return (f"TP{self.tp}" + (f" PP{self.pp}" if self.pp > 1 else "") + (f" EP{self.ep}" if self.ep > 1 else "")
                + (f" DP-attention{self.dp}" if self.dp > 1 else ""))


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
        # FP8 checkpoints run W8A8 GEMMs on the FP8 tensor cores (vLLM, TRT-LLM); int8/int4 weights
        # are weight-only (dequantised to BF16 in the GEMM), so they keep the BF16 rate
        fp8 = self.weight_dtype == "fp8" or self.act_dtype == "fp8"
        self.flops_per_s = (gpu.fp8_flops_per_s * self.eff.flops_fp8 if fp8
                            else gpu.bf16_flops_per_s * self.eff.flops)
        self.bytes_per_s = gpu.mem_bytes_per_s * self.eff.memory
        self._tp = tp_group(self.system, self.plan, self.catalog) if self.plan.tp > 1 else None
        self._pp = pp_group(self.system, self.plan, self.catalog) if self.plan.pp > 1 else None
        self._ops, self._nonaffine = self._compile_ops()
        self._calls = self._compile_calls()
        # eager launches: every rank enqueues each collective itself and waits for the slowest one,
        # so the host cost of a collective grows with the ranks it has to line up (p - 1 peers)
        tp_calls = sum(c for c, _, _ in self._calls) + sum(c for c, _, _ in self._head_calls)
        pp_calls = self.plan.pp - 1 if self._pp is not None else 0
        self._host_collective_units = (tp_calls - pp_calls) * (self.plan.tp - 1) + pp_calls

    # The work of a step, as lists of (count, op-probe function)
    def _layer_ops(self, kind: str, t: float, L: float) -> list[tf.Op]:
        return tf.layer_work(self.model, kind, tokens=t, context=L, tp=self.plan.tp, ep=self.plan.ep,
                             weight_dtype=self.weight_dtype, act_dtype=self.act_dtype,
                             kv_dtype=self.kv_dtype, phase=self.phase, attn_dp=self.plan.dp)

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
        # One layer_work call per probe point, shared by every op of the layer: compile time is
        # part of the planner's throughput (benchmarks/speed.py), and layer_work dominates it.
        probes: dict[tuple[str, float, float], list[tf.Op]] = {}

        def layer_ops(kind: str, t: float, L: float) -> list[tf.Op]:
            key = (kind, t, L)
            if key not in probes:
                probes[key] = self._layer_ops(kind, t, fix_L(L))
            return probes[key]

        # Data-parallel attention in decode: the attention side runs on the busiest rank's
        # u = ceil(batch / dp) sequences, which is affine in u, so those ops are fitted in (u, u·L)
        # by probing whole multiples of dp, and evaluated on u (see `_local`).
        dp = self.plan.dp if self.phase == "decode" else 1
        local: list[tuple[float, _Coeffs]] = []
        for kind, count in tf.layer_kinds(self.model).items():
            ops = layer_ops(kind, 1.0, 0.0)  # (1, 0) is one of _affine's probes
            on_rank = _local_mask(ops) if dp > 1 else [False] * len(ops)
            for i in range(len(ops)):
                if on_rank[i]:
                    fl, ok1 = _affine(lambda u, L: layer_ops(kind, u * dp, L)[i].flops)
                    by, ok2 = _affine(lambda u, L: layer_ops(kind, u * dp, L)[i].bytes)
                    if ok1 and ok2:
                        local.append((count, _Coeffs(fl, by)))
                        continue
                fl, ok1 = _affine(lambda t, L: layer_ops(kind, t, L)[i].flops)
                by, ok2 = _affine(lambda t, L: layer_ops(kind, t, L)[i].bytes)
                if ok1 and ok2 and not on_rank[i]:
                    affine.append((count, _Coeffs(fl, by)))
                else:
                    nonaffine.append((count, kind, i))
        self._local = local
        # head ops: coefficients in (rows, t) stored as c0 + c1·rows + c2·t
        head: list[_Coeffs] = []
        h11, h21, h12 = self._head_ops(1.0, 1.0), self._head_ops(2.0, 1.0), self._head_ops(1.0, 2.0)
        for i in range(len(h11)):
            parts = []
            for attr in ("flops", "bytes"):
                f11 = getattr(h11[i], attr)
                f21 = getattr(h21[i], attr)
                f12 = getattr(h12[i], attr)
                c1, c2 = f21 - f11, f12 - f11
                parts.append((f11 - c1 - c2, c1, c2))
            head.append(_Coeffs(*parts))
        self._head = head
        self._nonaffine_fit = self._fit_nonaffine(nonaffine, layer_ops)
        self._nonaffine_t_only = self._nonaffine_fit is None and self._depends_on_t_only(nonaffine, layer_ops)
        return affine, nonaffine

    @staticmethod
    def _depends_on_t_only(nonaffine: list[tuple[float, str, int]], layer_ops) -> bool:
        """True when the non-affine ops (MoE experts hit) do not change with the context at fixed
        tokens, so they may be evaluated once per distinct token count."""
        for t, L1, L2 in ((1.0, 0.0, 1024.0), (300.0, 1.0, 5000.0)):
            for _, kind, i in nonaffine:
                a, b = layer_ops(kind, t, L1)[i], layer_ops(kind, t, L2)[i]
                if (a.flops, a.bytes) != (b.flops, b.bytes):
                    return False
        return True

    def _experts_hit(self, t):
        """transformer.expected_experts_hit for an array of token counts (checked against it in
        `_fit_nonaffine`, which falls back to per-t evaluation if the two ever disagree)."""
        e, k = self.model.num_experts, self.model.experts_per_token
        return e / self.plan.ep * (1.0 - (1.0 - k / e) ** t)

    def _fit_nonaffine(self, nonaffine: list[tuple[float, str, int]], layer_ops):
        """Each op `_affine` could not fit, as c0 + c1·t + c2·t·L + c3·hit(t), so it is evaluated
        as arrays instead of once per distinct (batch, context) in Python.

        Two kinds of op land here. Prefill attention: it is affine in t and t·L, but `_affine`'s
        probes at L = 0 are clamped to L = 1 in prefill, so it fails the check; here every probe
        has L >= 1. MoE expert GEMMs: their weight reads scale with hit(t), the expected number of
        distinct experts a step touches (transformer.expected_experts_hit), the one non-affine
        term of a layer. Three probes at other (t, L) must agree to 1e-9; otherwise None, and
        `_nonaffine_time` evaluates layer_work per distinct point, as before.
        """
        if not nonaffine:
            return None
        moe = self.model.is_moe
        if moe:
            for t in (1.0, 3.0, 1000.0):
                exact = tf.expected_experts_hit(self.model, t, ep=self.plan.ep)
                if not math.isclose(float(self._experts_hit(np.float64(t))), exact, rel_tol=1e-12):
                    return None
        hit = (lambda t: float(self._experts_hit(np.float64(t)))) if moe else (lambda t: 0.0)
        checks = ((5.0, 300.0), (300.0, 1.0), (4096.0, 2000.0))
        out = []
        for _, kind, i in nonaffine:
            coeffs = []
            for attr in ("flops", "bytes"):
                f = lambda t, L: getattr(layer_ops(kind, t, L)[i], attr)  # noqa: E731
                uses_L = f(1.0, 1.0) != f(1.0, 1025.0)
                # one probe per basis function: 1, t, then t·L and hit(t) where they apply
                pts = [(1.0, 1.0), (2.0, 1.0)] + ([(1.0, 1025.0)] if uses_L else []) + ([(16.0, 1.0)] if moe else [])
                cols = [lambda t, L: 1.0, lambda t, L: t]
                cols += [lambda t, L: t * L] if uses_L else []
                cols += [lambda t, L: hit(t)] if moe else []
                a = np.array([[col(t, L) for col in cols] for t, L in pts])
                try:
                    c = np.linalg.solve(a, np.array([f(t, L) for t, L in pts]))
                except np.linalg.LinAlgError:
                    return None
                c = [float(x) for x in c]
                c0, c1 = c[0], c[1]
                c2 = c[2] if uses_L else 0.0
                c3 = c[-1] if moe else 0.0
                for t, L in checks:
                    want = f(t, L)
                    if not math.isclose(c0 + c1 * t + c2 * t * L + c3 * hit(t), want, rel_tol=1e-9, abs_tol=1e-6):
                        return None
                coeffs.append((c0, c1, c2, c3))
            out.append(tuple(coeffs))
        return out

    def _layer_ops_multi(self, nonaffine, t: float, L: float) -> list[tuple[float, float]]:
        """(flops, bytes) of each non-affine op at (t, L), one layer_work call per layer kind."""
        by_kind: dict[str, list[tf.Op]] = {}
        out = []
        for _, kind, i in nonaffine:
            if kind not in by_kind:
                by_kind[kind] = self._layer_ops(kind, t, L)
            op = by_kind[kind][i]
            out.append((op.flops, op.bytes))
        return out

    def _compile_calls(self) -> list[tuple[float, float, tuple[Candidate, ...]]]:
        """Per collective: (calls per step, message bytes per token, the candidates that price it)."""
        out = []
        priced: dict[tuple[str, str, str], tuple[Candidate, ...]] = {}

        def candidates(group: Group, op: str, impl: str) -> tuple[Candidate, ...]:
            # The same (group, op) recurs in every layer: price its candidates once.
            key = ("tp" if group is self._tp else "pp", op, impl)
            if key not in priced:
                priced[key] = _candidates(group, op, impl)
            return priced[key]

        self._head_calls: list[tuple[float, float, tuple[Candidate, ...]]] = []
        if self._tp is not None:
            for kind, count in tf.layer_kinds(self.model).items():
                for call in tf.collectives_for_layer(self.model, kind, tokens=1.0, tp=self.plan.tp, ep=self.plan.ep,
                                                     act_dtype=self.act_dtype,
                                                     sequence_parallel=self.eff.sequence_parallel,
                                                     attn_dp=self.plan.dp):
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
        """Arrays of step time and its parts for broadcastable arrays of batch and context.

        Each term is computed on the smallest shape it depends on and broadcast when added: in
        decode the weight reads, GEMMs and every collective depend on the batch only, so a
        batch x context grid pays the full-grid price only for the attention/KV terms. The
        arithmetic per element is the same as term-by-term on the full grid, so results are
        bit-identical to it; the ops `_fit_nonaffine` fits agree with per-point layer_work to
        ~1e-14 relative.
        """
        b = np.asarray(batch, dtype=float)
        L = np.asarray(context, dtype=float)
        t = b if self.phase == "decode" else b * L  # tokens in the step
        shape = np.broadcast(t, L).shape
        tL = None
        compute = np.zeros(shape)
        n_kernels = 0.0
        for count, c in self._ops:
            if c.flops[2] == 0.0 and c.bytes[2] == 0.0:  # no t·L term: a function of t alone
                fl = c.flops[0] + c.flops[1] * t if c.flops[1] != 0.0 else c.flops[0]
                by = c.bytes[0] + c.bytes[1] * t if c.bytes[1] != 0.0 else c.bytes[0]
            else:
                if tL is None:
                    tL = t * L
                fl = c.flops[0] + c.flops[1] * t + c.flops[2] * tL
                by = c.bytes[0] + c.bytes[1] * t + c.bytes[2] * tL
            compute = compute + count * self._op_time(fl, by)
            n_kernels += count
        if self._local:
            u = np.ceil(b / self.plan.dp - 1e-9)  # sequences on the busiest attention rank
            uL = u * L
            for count, c in self._local:
                fl = c.flops[0] + c.flops[1] * u + c.flops[2] * uL
                by = c.bytes[0] + c.bytes[1] * u + c.bytes[2] * uL
                compute = compute + count * self._op_time(fl, by)
                n_kernels += count
        for c in self._head:
            fl = c.flops[0] + c.flops[1] * b + c.flops[2] * t
            by = c.bytes[0] + c.bytes[1] * b + c.bytes[2] * t
            compute = compute + self._op_time(fl, by)
            n_kernels += 1
        if self._nonaffine:
            compute = compute + self._nonaffine_time(b, L)
        n_kernels += sum(count for count, _, _ in self._nonaffine)
        # Collectives: message bytes scale with t (body) or b (logits), never with the context.
        small = np.broadcast(t, b).shape
        comm_small = np.zeros(small)
        comm_lat_small = np.zeros(small)
        calls = 0.0
        scaled = [(c, m * t, k) for c, m, k in self._calls] + [(c, m * b, k) for c, m, k in self._head_calls]
        for count, msg, cands in scaled:
            msg = np.broadcast_to(msg, small)
            tc, lat = times_and_latencies_s(cands, msg)
            comm_small = comm_small + count * tc
            comm_lat_small = comm_lat_small + count * lat
            calls += count
        comm = np.broadcast_to(comm_small, shape).copy()
        comm_lat = np.broadcast_to(comm_lat_small, shape).copy()
        gpu = np.maximum(compute, comm) if self.eff.overlap else compute + comm
        if self.eff.overlap:
            # report the communication left on the critical path, so the parts still add up
            exposed = gpu - compute
            comm_lat = np.where(comm > 0, comm_lat * exposed / np.where(comm > 0, comm, 1.0), 0.0)
            comm = exposed
        # eager engines launch every kernel from the host; the step cannot beat the launch loop
        host = n_kernels * self.eff.host_per_kernel_s + self._host_collective_units * self.eff.host_per_collective_s
        seqs = b if self.phase == "decode" else np.ones_like(b)
        total = np.maximum(gpu, host) + self.eff.step_overhead_s + self.eff.overhead_per_seq_s * seqs
        return {"total_s": total, "compute_s": compute, "comm_s": comm, "comm_latency_s": comm_lat,
                "other_s": total - compute - comm,
                "launch_s": np.full(shape, n_kernels * self.eff.kernel_launch_s), "calls": calls}

    def _nonaffine_time(self, b: np.ndarray, L: np.ndarray) -> np.ndarray:
        """Time of the ops `_affine` could not fit (prefill attention, MoE experts), broadcastable
        to b x L."""
        shape = np.broadcast(b, L).shape
        if not self._nonaffine:
            return np.zeros(shape)
        t = b if self.phase == "decode" else b * L
        if self._nonaffine_fit is not None:
            hit = self._experts_hit(t) if self.model.is_moe else None
            tL = None
            total = np.zeros(np.shape(t))
            for (count, _, _), coeffs in zip(self._nonaffine, self._nonaffine_fit):
                fl_by = []
                for c0, c1, c2, c3 in coeffs:
                    v = c0 + c1 * t
                    if c2 != 0.0:
                        tL = t * L if tL is None else tL
                        v = v + c2 * tL
                    if c3 != 0.0:
                        v = v + c3 * hit
                    fl_by.append(v)
                total = total + count * self._op_time(*fl_by)
            return total
        if self._nonaffine_t_only:
            # One layer_work evaluation per distinct token count.
            keys, inverse = np.unique(t, return_inverse=True)
            per_key = np.empty(keys.shape)
            for j, tv in enumerate(keys):
                total = 0.0
                for (count, _, _), (fl, by) in zip(self._nonaffine, self._layer_ops_multi(self._nonaffine, float(tv), 64.0)):
                    total += count * float(self._op_time(fl, by))
                per_key[j] = total
            return per_key[inverse.reshape(np.shape(t))]
        out = np.zeros(shape)
        bb, LL = np.broadcast_arrays(b, L)
        for key in np.unique(np.stack([bb.ravel(), LL.ravel()], axis=1), axis=0):
            bv, Lv = float(key[0]), float(key[1])
            tv = bv if self.phase == "decode" else bv * Lv
            mask = (bb == bv) & (LL == Lv)
            total = 0.0
            for (count, _, _), (fl, by) in zip(self._nonaffine, self._layer_ops_multi(self._nonaffine, tv, Lv)):
                total += count * float(self._op_time(fl, by))
            out[mask] += total
        return out

    def step(self, batch: int, context: float) -> StepTime:
        r = self.evaluate(batch, context)
        return StepTime(total_s=float(r["total_s"]), compute_s=float(r["compute_s"]), comm_s=float(r["comm_s"]),
                        other_s=float(r["other_s"]),
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


def _local_mask(ops: list[tf.Op]) -> list[bool]:
    """Which ops of a layer run on a data-parallel attention rank's own tokens: everything up to the
    post-attention norm, and the closing residual add (transformer.layer_work's order)."""
    names = [op.name for op in ops]
    last = names.index("post_attn_norm") if "post_attn_norm" in names else -1
    return [i <= last or name == "mlp_residual" for i, name in enumerate(names)]


@lru_cache(maxsize=1024)
def compile_step(model: tf.ModelConfig, system: System, plan: Plan, catalog: Catalog, impl: str = "nccl",
                 weight_dtype: str = "bf16", act_dtype: str = "bf16", kv_dtype: str | None = None,
                 phase: str = "decode", eff: Efficiency = Efficiency()) -> StepModel:
    return StepModel(model, system, plan, catalog, impl, weight_dtype, act_dtype, kv_dtype, phase, eff)


def memory_bytes_per_gpu(model: tf.ModelConfig, plan: Plan, *, batch: int, context: float,
                         weight_dtype: str = "bf16", kv_dtype: str = "bf16", eff: Efficiency = Efficiency()) -> float:
    """Weights + KV cache for batch x context + workspace, bytes per GPU."""
    weights = tf.weight_bytes_per_gpu(model, tp=plan.tp, pp=plan.pp, ep=plan.ep, weight_dtype=weight_dtype,
                                      attn_dp=plan.dp)
    kv = tf.kv_cache_bytes_per_gpu(model, batch=batch, context=context, tp=plan.tp, pp=plan.pp, kv_dtype=kv_dtype,
                                   attn_dp=plan.dp)
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
