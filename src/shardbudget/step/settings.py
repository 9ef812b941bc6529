"""What a step costs beyond FLOPs and bytes (`Efficiency`, per engine) and how a plan is run
(`PlanSettings`): two different things, kept apart.

`Efficiency` holds achievable fractions of the GPU's peaks and fixed per-kernel and per-step costs:
properties of the hardware and of the engine that drives it. `PlanSettings` holds the choices a user
makes for one deployment: overlap, sequence parallelism, how much memory the engine may take.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..comm.moe_a2a import check_backend
from ..defaults import DEFAULT_ENGINE, MOE_A2A
from ..engines.presets import load_engine
from ..errors import PlanError
from .overlap import check_overlap


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
    flops_fp4: float = 0.42
    """Fraction of the dense FP4 peak reached by NVFP4 / MXFP4 GEMMs: vLLM's CUTLASS NVFP4 GEMM
    reaches 3779-3904 TFLOP/s at M = 8192-16384 (N 6144, K 4096; its activation quantisation aside,
    priced as its own kernel) of the B200's 9000 dense (https://github.com/vllm-project/vllm/pull/20646,
    bench_nvfp4_gemm.py 'nvfp4-noquant'; the same table's BF16 reaches 1421 of 2250, 0.63)."""
    memory: float = 0.80
    """Fraction of HBM/GDDR peak bandwidth reached by memory-bound kernels."""
    kernel_launch_s: float = 1.5e-6
    """Per-kernel gap between back-to-back kernels under CUDA graphs, seconds."""
    step_overhead_s: float = 1.0e-3
    """Host work per step outside the GPU's critical path: scheduling, sampling, output handling."""
    overhead_per_seq_s: float = 20e-6
    """Host work per sequence per step (sampling, detokenisation, scheduler bookkeeping)."""
    per_seq_overlapped: bool = False
    """The engine does a step's per-sequence host work while the GPU computes another step ([host]
    overlap_scheduler: SGLang's and TensorRT-LLM's overlap schedulers, vLLM 0.6's asynchronous output
    processor), so the step is the longer of the two."""
    host_per_kernel_s: float = 0.0
    """Host time to launch one kernel when the engine does not replay CUDA graphs (eager mode)."""
    host_per_collective_s: float = 0.0
    """Extra host time per collective without CUDA graphs (enqueue, the custom kernel's input copy)."""
    host_jitter_s: float = 0.0
    """Without CUDA graphs: the standard deviation of one rank's host time between two collectives.
    Every collective waits for the slowest of its p ranks, sigma x E[max of p standard normals]
    longer on average (0 for p = 1, 0.56 sigma for 2, 1.03 for 4, 1.42 for 8)."""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class PlanSettings:
    """How one deployment runs its plan."""

    overlap: str = "none"
    """How communication overlaps compute (`overlap.OVERLAPS`): none (decode's all-reduce sits
    between dependent matmuls), tbo (two-batch overlap) or fused (GEMM + collective kernels)."""
    sequence_parallel: bool = False
    """Megatron sequence parallelism: each TP all-reduce becomes a reduce-scatter + all-gather (off for
    decode, where it doubles the per-layer latency terms; it pays for prefill memory)."""
    memory_utilization: float | None = None
    """Share of GPU memory the engine may use (--gpu-memory-utilization); None: the engine's default
    (vLLM 0.9 of the device, SGLang's computed mem_fraction_static, TRT-LLM 0.9 of what is free)."""
    workspace_bytes: float | None = None
    """One figure for everything but weights and KV, bytes; None: the engine's own components
    (activation peak, CUDA-graph pool, communication buffers, CUDA context; memory.py)."""
    moe_a2a: str = MOE_A2A
    """What runs the MoE dispatch and combine (comm/moe_a2a.py BACKENDS): nccl, deepep (normal for
    prefill, low-latency for decode, as SGLang's --deepep-mode auto), deepep-normal or deepep-ll."""
    scheduler_steps: int = 1
    """Decode steps per scheduler call (multi-step scheduling, vLLM 0.5.5-0.8's --num-scheduler-steps):
    the host's round trip (scheduler, input preparation, the sampled tokens' copy to the host: the
    engine's per_step) is paid once per that many steps, the GPU's work and each token's output
    processing (per_seq) every step (vllm-project/vllm#6854). 1, every engine's default."""

    def __post_init__(self) -> None:
        check_overlap(self.overlap)
        check_backend(self.moe_a2a)
        u = self.memory_utilization
        if u is not None and (isinstance(u, bool) or not isinstance(u, (int, float)) or not 0 < u <= 1):
            raise PlanError(f"--gpu-memory-utilization must be in (0, 1], got {u!r}")
        n = self.scheduler_steps
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise PlanError(f"--scheduler-steps must be a whole number >= 1, got {n!r}")
        if self.workspace_bytes is not None and not self.workspace_bytes >= 0:
            raise PlanError(f"workspace must be a non-negative number of bytes, got {self.workspace_bytes!r}")

    def to_dict(self) -> dict:
        return asdict(self)


EAGER_KERNEL_GAP_S = 3.0e-6
"""GPU idle time between host-launched kernels when the host keeps ahead (no CUDA graphs): the
launch latency itself; the host's own launch cost is `host_per_kernel_s`."""


def engine_efficiency(engine: str = DEFAULT_ENGINE, **overrides) -> Efficiency:
    """The step costs an engine preset (engines/<engine>.toml) states: with CUDA graphs the host
    replays the whole step and each kernel adds its in-graph gap; without, the host launches every
    kernel itself and becomes the bottleneck once TP makes kernels short."""
    host = load_engine(engine).host
    graphs = load_engine(engine).cuda_graphs.decode
    values = {
        "kernel_launch_s": host.per_kernel_launch_s if graphs else EAGER_KERNEL_GAP_S,
        "step_overhead_s": host.per_step_s,
        "overhead_per_seq_s": host.per_seq_s,
        "per_seq_overlapped": host.overlap_scheduler,
        "host_per_kernel_s": 0.0 if graphs else host.per_kernel_launch_s,
        "host_per_collective_s": 0.0 if graphs else host.per_collective_s,
        "host_jitter_s": 0.0 if graphs else host.jitter_s,
    }
    return Efficiency(**{**values, **overrides})


__all__ = ["DEFAULT_ENGINE", "Efficiency", "PlanSettings", "engine_efficiency"]
