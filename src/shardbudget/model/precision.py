"""The precision a checkpoint runs in on a GPU, as engines choose it by default.

`default_precision(cfg, gpu)` starts from the checkpoint's own precision (`cfg.checkpoint`:
torch_dtype and quantization_config), lets `--dtype` / `--kv-dtype` override it, and then asks
what the GPU's tensor cores can compute in:

  * FP8 GEMMs (W8A8) need FP8 tensor cores (the generation's `fp8_tensor_cores`, catalog/archs.toml:
    Ada, Hopper, Blackwell, AMD CDNA 3 / 4). Elsewhere
    (Ampere: A100) engines run FP8 checkpoints weight-only, dequantising to BF16 inside the GEMM
    ("Turing/Ampere GPUs are supported for W8A16 (weight-only FP8) utilizing Marlin kernels",
    https://docs.vllm.ai/en/stable/features/quantization/fp8/): FP8 bytes, BF16 FLOP rate.
  * FP4 GEMMs (MXFP4, NVFP4) need FP4 tensor cores (`fp4_tensor_cores`: Blackwell, 5th-generation
    Tensor Cores with FP4; AMD CDNA 4, MI350 series, MXFP4).
    Hopper runs gpt-oss's MXFP4 experts weight-only (W4A16: vLLM's Marlin / Triton MXFP4 MoE).
  * int8 / int4 weights (AWQ, GPTQ, bitsandbytes) are weight-only on every GPU here.
  * The KV cache defaults to `auto`, the activation dtype, as vLLM's `--kv-cache-dtype auto`
    ("If auto, will use model data type", https://docs.vllm.ai/en/v0.10.2/api/vllm/config/cache.html).

Every such decision comes back as a one-line note, so the planner can say what it priced.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from ..dtypes import FP4_DTYPES, WEIGHT_DTYPES, canonical, dtype_bytes
from .config import ModelConfig
from .quant import override_scales
from .work import Precision

_SIXTEEN_BIT = ("bf16", "fp16")


class _Generation(Protocol):
    fp8_tensor_cores: bool
    fp4_tensor_cores: bool


class _GPU(Protocol):
    name: str
    arch: str
    generation: _Generation


def _activation_dtype(cfg: ModelConfig, notes: list[str]) -> str:
    """Engines run the activations in the checkpoint's 16-bit dtype; an fp32 checkpoint is served in
    bf16 (vLLM `--dtype auto` downcasts float32 to a 16-bit type)."""
    torch = cfg.checkpoint.torch_dtype
    if torch in _SIXTEEN_BIT:
        return torch
    notes.append(f"{cfg.name} is stored in {torch}; served with bf16 activations, as vLLM's --dtype auto does")
    return "bf16"


def _served(stored: str, act: str) -> str:
    """Unquantized tensors are served in the activation dtype (an fp32 checkpoint runs in bf16)."""
    return act if stored in _SIXTEEN_BIT + ("fp32",) else stored


def _checkpoint_dtypes(cfg: ModelConfig, act: str) -> tuple[str, str, str, str | None]:
    """(linear weights, routed experts, embedding / LM head, wanted GEMM dtype) of the checkpoint.
    FP4 formats want FP4 GEMMs wherever FP4 tensor cores exist, whatever the activation scheme."""
    ck = cfg.checkpoint
    if ck.scope == "none":
        return act, act, act, None
    wanted = ck.weight_dtype if ck.weight_dtype in FP4_DTYPES else ck.activation_dtype
    return _served(ck.linear_dtype, act), _served(ck.expert_dtype, act), act, wanted


def _describe(cfg: ModelConfig) -> str:
    ck = cfg.checkpoint
    if ck.scope == "none":
        return f"{ck.torch_dtype} checkpoint"
    what = "experts" if ck.scope == "experts" else "weights"
    bits = 8 * (dtype_bytes(ck.weight_dtype) + ck.scale_bytes)
    scales = f", {ck.scale_words}: {bits:.3g} bits per weight" if ck.scale_words else ""
    return f"{ck.weight_dtype} {what} ({ck.quant_method}{scales})"


def _scales(cfg: ModelConfig, linear: str, experts: str, override: str | None) -> tuple[float, float]:
    """Bytes per weight of the linear layers' and the routed experts' scales: the checkpoint's
    (`quant.Checkpoint.scale_bytes`) on the weights it quantized, `quant.override_scales` under --dtype."""
    if override is not None:
        return (override_scales(override)[0],) * 2
    ck = cfg.checkpoint
    quantized = {ck.linear_dtype, ck.expert_dtype} - set(_SIXTEEN_BIT + ("fp32",))
    return (
        ck.scale_bytes if linear in quantized and ck.scope == "linear" else 0.0,
        ck.scale_bytes if experts in quantized and ck.scope != "none" else 0.0,
    )


def _computable(wanted: str | None, act: str, gpu: _GPU, notes: list[str]) -> str:
    """The GEMM dtype the GPU runs `wanted` in: `wanted` if its tensor cores have it, else the
    activation dtype with the weights dequantised in the GEMM (weight-only), with a note."""
    if wanted is None or wanted in _SIXTEEN_BIT + ("fp32",):
        return act
    if wanted in FP4_DTYPES:
        if gpu.generation.fp4_tensor_cores:
            notes.append(f"{wanted} GEMMs on {gpu.name}'s FP4 tensor cores, at its dense FP4 peak")
            return wanted
        notes.append(
            f"{gpu.name} ({gpu.arch}) has no FP4 tensor cores: {wanted} weights run weight-only, "
            f"dequantised to {act} in the GEMM (W4A16), at the {act} peak"
        )
        return act
    if wanted == "fp8":
        if gpu.generation.fp8_tensor_cores:
            return "fp8"
        notes.append(
            f"{gpu.name} ({gpu.arch}) has no FP8 tensor cores: fp8 weights run weight-only, "
            f"dequantised to {act} in the GEMM (W8A16, vLLM's FP8 Marlin), at the {act} peak"
        )
        return act
    # int8 / int4 / int3 / int2: the catalog has no integer peaks; priced weight-only at the 16-bit rate
    return act


def default_precision(
    cfg: ModelConfig, gpu: _GPU, dtype_override: str | None = None, kv_override: str | None = None
) -> tuple[Precision, tuple[str, ...]]:
    """The `Precision` an engine runs `cfg` in on `gpu` by default, and one-line notes on what was
    decided (checkpoint format, weight-only fallbacks, the KV-cache dtype, reader warnings).

    dtype_override (`--dtype`): every weight in that dtype, the checkpoint's format ignored.
    kv_override (`--kv-dtype`): the KV-cache dtype; None or "auto": the activation dtype.
    Raises UnknownNameError for a dtype name it does not know.
    """
    notes = list(cfg.warnings)
    act = _activation_dtype(cfg, notes)
    if dtype_override is not None:
        weights = canonical(dtype_override, WEIGHT_DTYPES)
        linear = experts = head = weights
        wanted = weights if weights == "fp8" or weights in FP4_DTYPES else None
        if cfg.checkpoint.scope != "none" or weights != cfg.checkpoint.torch_dtype:
            notes.append(
                f"--dtype {weights} prices every weight in {weights}, not as {cfg.name} ships them ({_describe(cfg)})"
            )
    else:
        linear, experts, head, wanted = _checkpoint_dtypes(cfg, act)
        if cfg.checkpoint.scope != "none":
            notes.append(f"{cfg.name} ships {_describe(cfg)}; embedding and LM head in {head}")
    compute = _computable(wanted, act, gpu, notes)
    kv = None if kv_override is None or kv_override.lower() == "auto" else canonical(kv_override, WEIGHT_DTYPES)
    if kv is None:
        notes.append(f"KV cache auto: {act}, the activation dtype (the engines' KV-cache dtype 'auto')")
    linear_scales, expert_scales = _scales(cfg, linear, experts, weights if dtype_override is not None else None)
    if dtype_override is not None and linear_scales:
        notes.append(f"--dtype {weights}: {override_scales(weights)[1]} (AWQ's and GPTQ's default group)")
    # Fields equal to what they default to stay None, so equal precisions compare (and cache) equal.
    precision = Precision(
        weights=linear,
        activations=act,
        kv=kv,
        expert_weights=None if experts == linear else experts,
        head_weights=None if head == linear else head,
        weight_scale_bytes=linear_scales,
        expert_scale_bytes=None if expert_scales == linear_scales else expert_scales,
    )
    if compute != precision.compute_dtype:
        precision = replace(precision, compute=compute)
    return precision, tuple(notes)


__all__ = ["default_precision"]
