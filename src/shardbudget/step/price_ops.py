"""Pricing the ops of a step: each op's roofline at its kernel's achievable fractions of peak, the
kernel's floor, GEMMs padded to the arch's tiles, and a launch per kernel.

    op time = max(FLOPs / achievable FLOP/s, bytes / achievable bytes/s, floor) + launches · launch

Floors, efficiencies and tiles are data (`catalog/kernels.toml`, read by `step.kernels`); the
achievable fractions without a kernel entry are the engine's `Efficiency` defaults.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ..dtypes import FP4_DTYPES
from ..engines.presets import load_engine
from ..fabric.hardware import System
from ..model import Precision, StepWork
from .kernels import load_kernels, tile_quantization_factor
from .settings import Efficiency

TILED_KERNELS = ("dense_gemm", "grouped_moe_gemm")
MOE_FLOOR_EXPERTS = 16
"""Experts beyond which a fused-MoE call's per-expert overhead no longer adds up: the catalog's
per-expert floor is measured at <= 8 experts per call (Qwen3-30B-A3B top-8: 40 us), while calls
over many experts stream their weights at the kernel's bandwidth efficiency (Mixtral, all experts
at large batch, vLLM PR #24700), which the roofline prices. Estimate."""


@dataclass(frozen=True, kw_only=True)
class OpPricer:
    """Op times on one GPU for one precision and engine."""

    system: System
    precision: Precision
    eff: Efficiency
    fused_allreduce_norm: bool
    """The engine runs all-reduce + residual + RMSNorm as one kernel (and there is a TP all-reduce):
    the norms and adds after an all-reduce cost nothing of their own."""
    fused_norm_quant: bool = False
    """The engine quantises a GEMM's FP8 input inside the norm or activation that writes it
    (`Fusions.norm_quant`): such GEMMs (`Op.norm_input`) run no quant kernel of their own."""
    fused_moe_routing: bool = False
    """The engine's MoE kernel routes, runs both grouped GEMMs and sums in one call (TRT-LLM-gen,
    kernels.toml fused_moe_routed): the routing / align / activation / combine ops cost nothing of
    their own and the grouped GEMMs are priced as that call."""
    moe_call_floor_s: float | None = None
    """The engine release's own floor of one fused-MoE call (`EnginePreset.moe_call_floor`), in place
    of the catalog's grouped_moe_gemm floor; None: the catalog's."""

    @cached_property
    def moe_call_whole(self) -> bool:
        """The MoE's routing, sort, activation, sum and FP8 input quantisation run inside one call whose
        time its two grouped GEMM ops carry: the TRT-LLM-gen fused call, or a generation whose
        grouped_moe_gemm entry prices the measured call as call_fixed + weight bytes / rate."""
        entry = kernel_entry(self.system.gpu.arch, "grouped_moe_gemm")
        return self.fused_moe_routing or (entry is not None and entry.call_fixed_s is not None)

    @cached_property
    def rates(self) -> tuple[float, float]:
        """Achievable (FLOP/s, HBM bytes/s) of one GPU for this precision's GEMMs: the dense FP4 peak
        for FP4 GEMMs on FP4 tensor cores, the FP8 peak for FP8 ones, else the 16-bit peak."""
        gpu, eff = self.system.gpu, self.eff
        if self.precision.uses_fp4_gemms and gpu.fp4_flops_per_s:
            flops = gpu.fp4_flops_per_s * eff.flops_fp4
        elif self.precision.uses_fp8_gemms:
            flops = gpu.fp8_flops_per_s * eff.flops_fp8
        else:
            flops = gpu.bf16_flops_per_s * eff.flops
        return flops, gpu.mem_bytes_per_s * eff.memory

    @cached_property
    def _fp4_over_fp8(self) -> float:
        """How much faster this precision's quantized GEMMs run than FP8 ones at peak (FP4 cores: 2-3x)."""
        gpu = self.system.gpu
        fp4 = self.precision.uses_fp4_gemms and gpu.fp4_flops_per_s
        return gpu.fp4_flops_per_s / gpu.fp8_flops_per_s if fp4 else 1.0

    def op_s(self, op) -> np.ndarray | float:
        """max(roofline, the kernel's floor) + launch: the roofline at the kernel's own achievable
        fractions of peak (catalog/kernels.toml; the Efficiency defaults where it has none), GEMMs
        padded to the arch's tiles; FP8 GEMMs add their activation-quantisation kernel unless the
        engine fuses it into the norm or activation that writes their input."""
        _, bound, quant, launches = self._terms(op)
        return (bound + quant) + launches * self.eff.kernel_launch_s

    def op_parts(self, op) -> tuple[np.ndarray | float, np.ndarray | float]:
        """`op_s` as (work, fixed): the roofline of the op's FLOPs and bytes, which shrinks where TP
        shards them, and what does not depend on them: the floor's excess over the roofline, the FP8
        activation-quantisation kernel and the launches (`explain`'s second question)."""
        roof, bound, quant, launches = self._terms(op)
        return roof, (bound - roof) + quant + launches * self.eff.kernel_launch_s

    def _terms(self, op) -> tuple:
        """(roofline, max(roofline, floor), FP8 quantisation floor, launches) of one op."""
        arch = self.system.gpu.arch
        fused_call = self.fused_moe_routing and op.kernel == "grouped_moe_gemm"
        entry = kernel_entry(arch, "fused_moe_routed" if fused_call else op.kernel)
        fp8 = self.precision.uses_fp8_gemms and op.kind == "gemm" and op.quantized
        flops_per_s, bytes_per_s = self._kernel_rates(entry, fp8)
        flops = op.flops
        if op.kernel in TILED_KERNELS:
            flops = flops * tile_factor(arch, *op.shape_nk)
        roof = np.maximum(flops / flops_per_s, op.bytes / bytes_per_s)
        if entry is not None and entry.call_fixed_s is not None and not fused_call:
            t = np.maximum(flops / flops_per_s, self._call_fixed_s(entry, op) / 2 + op.bytes / bytes_per_s)
            if self.moe_call_floor_s is not None:  # the engine release's own call floor, shared by its GEMMs
                t = np.maximum(t, self.moe_call_floor_s / 2)
        else:
            t = (
                np.maximum(roof, _floor_s(entry, op, None if fused_call else self.moe_call_floor_s))
                if entry is not None
                else roof
            )
        launches, quant = (1.0 if op.launches else 0.0), 0.0
        in_call = op.kernel == "grouped_moe_gemm" and self.moe_call_whole
        if fp8 and op.kernel in TILED_KERNELS and not (self.fused_norm_quant and op.norm_input) and not in_call:
            q = kernel_entry(arch, "act_quant_fp8")
            quant, launches = (q.floor_s if q else 0.0), launches + 1.0
        return roof, t, quant, launches

    def _call_fixed_s(self, entry, op) -> float:
        """The fused-MoE call's fixed part: the quantized call's where the experts' weights are not 16-bit
        (scales read, inputs quantised or weights dequantised in the call) and the generation measured
        it apart, else `call_fixed`."""
        quantized = op.quantized and self.precision.expert_dtype not in ("bf16", "fp16", "fp32")
        if quantized and entry.call_fixed_quantized_s is not None:
            return entry.call_fixed_quantized_s
        return entry.call_fixed_s

    def _kernel_rates(self, entry, quantized: bool) -> tuple[float, float]:
        """(FLOP/s, bytes/s) for one kernel: its catalogued fractions of peak, else the defaults.
        Quantized GEMMs run at the FP4 peak (FP4 GEMMs where the GPU has FP4 tensor cores) or the
        FP8 one; every other op (attention, norms, the unquantized router) at the 16-bit peak."""
        gpu, eff = self.system.gpu, self.eff
        mem = entry.memory_efficiency if entry is not None and entry.memory_efficiency else eff.memory
        bytes_per_s = gpu.mem_bytes_per_s * mem
        if entry is not None and entry.memory_rate_bytes_per_s:
            bytes_per_s = min(bytes_per_s, entry.memory_rate_bytes_per_s)
        if quantized:
            flops_per_s = self.rates[0]
            if entry is not None and entry.quantized_flops_per_s:
                flops_per_s = min(flops_per_s, entry.quantized_flops_per_s * self._fp4_over_fp8)
        else:
            ce = entry.compute_efficiency if entry is not None and entry.compute_efficiency else eff.flops
            flops_per_s = gpu.bf16_flops_per_s * ce
        return flops_per_s, bytes_per_s

    def compute_s(self, work: StepWork, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
        """Σ count · op time (`op_s`), each shape summed apart and broadcast once; and the GEMMs'
        part of it. Residual adds and norms fused into the all-reduce, and routing ops inside a
        fused MoE call (`moe_call_whole`), cost nothing of their own."""
        by_shape: dict[tuple[str, tuple], np.ndarray] = {}
        for count, op in work.ops:
            if (op.after_allreduce and self.fused_allreduce_norm) or (op.in_fused_moe and self.moe_call_whole):
                continue
            t = count * self.op_s(op)
            key = (op.kind == "gemm", np.shape(t))
            by_shape[key] = by_shape[key] + t if key in by_shape else t
        total, gemm = np.zeros(shape), np.zeros(shape)
        for (is_gemm, _), part in by_shape.items():
            total = total + part
            gemm = gemm + part if is_gemm else gemm
        return total, gemm


def engine_op_pricer(
    model,
    system: System,
    plan,
    *,
    precision: Precision,
    eff: Efficiency,
    engine: str,
    impl: str | None,
    moe_a2a: str = "nccl",
) -> OpPricer:
    """The op prices of a step, with what the engine fuses on this GPU for this model (its preset's
    rules): all-reduce + residual + RMSNorm (with a TP all-reduce the engine chooses), the MoE's routing,
    FP8 input quantisation inside the norm that writes it."""
    one_node = plan.dp == 1 and plan.gpus <= system.gpus_per_node
    preset = load_engine(engine)
    fp4_experts = precision.uses_fp4_gemms and precision.expert_dtype in FP4_DTYPES
    ar, moe = preset.fused_for(
        model.model_type,
        system.gpu.arch,
        one_node=one_node,
        quantized=precision.uses_fp8_gemms or precision.uses_fp4_gemms,
        fp4_experts=fp4_experts,
        deepep=plan.ep > 1 and moe_a2a.startswith("deepep"),
    )
    # the TRT-LLM-gen fused MoE kernels are built for SM 10.x alone (FlashInfer's trtllm_*_moe,
    # vLLM's is_device_capability_family(100) checks): SM 12.x Blackwell runs the engines' other MoE
    moe = moe and system.gpu.sm.startswith("10.")
    return OpPricer(
        system=system,
        precision=precision,
        eff=eff,
        fused_allreduce_norm=plan.tp > 1 and impl is None and ar,
        fused_moe_routing=moe,
        fused_norm_quant=preset.fusions.norm_quant,
        moe_call_floor_s=preset.moe_call_floor.get(system.gpu.arch),
    )


def _floor_s(entry, op, call_floor_s: float | None = None):
    """The kernel's floor; a fused-MoE call's floor (the engine release's own where it has one) grows
    with its active experts, shared by its two GEMMs."""
    if entry.floor_per_active_expert_s is None:
        return entry.floor_s
    experts = np.minimum(op.active_experts, MOE_FLOOR_EXPERTS / 2)
    return np.maximum((call_floor_s or entry.floor_s) / 2, entry.floor_per_active_expert_s * experts)


@lru_cache(maxsize=256)
def kernel_entry(arch: str, kernel: str | None):
    """The catalog's floor and efficiencies for a kernel on a GPU generation (None: not catalogued)."""
    if kernel is None:
        return None
    return load_kernels()["floors"].get((arch, kernel))


@lru_cache(maxsize=65536)
def tile_factor(arch: str, n: float, k: float) -> float:
    """Work done / asked for a GEMM shard padded to the arch's tiles (1 where there are no tiles)."""
    if arch not in load_kernels()["tiles"] or n < 1 or k < 1:
        return 1.0
    return tile_quantization_factor(arch, int(math.ceil(n)), int(math.ceil(k)))
