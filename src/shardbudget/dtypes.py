"""Element types: one table for weights, activations, the KV cache, message counts and the harness.

Each type has one canonical name (the short one engines and `--dtype` use: bf16, fp16, fp8, ...)
and the spellings met elsewhere (torch's `bfloat16`, nccl-tests' `half`, C's `float`). Sizes are
bytes per element as floats: int4 packs two weights per byte, 0.5, never integer-divided to 0.

The block-scaled 4-bit formats count their scales in `elem_bytes`, because at 4 bits the scales are
a visible share of the bytes (OCP Microscaling Formats (MX) v1.0 spec; NVIDIA Blackwell NVFP4):
  * mxfp4: FP4 (E2M1) elements in blocks of 32 sharing one 8-bit E8M0 scale:
    4 + 8 / 32 = 4.25 bits = 0.53125 bytes per element
    (https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf);
  * nvfp4: FP4 (E2M1) elements in blocks of 16 sharing one FP8 (E4M3) scale, plus one FP32 scale per
    tensor (negligible): 4 + 8 / 16 = 4.5 bits = 0.5625 bytes
    (https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/).
Formats whose groups the checkpoint chooses keep their scales out of `elem_bytes`: the checkpoint's
quantization_config prices them per weight (`model/quant.py`, "Scales"): FP8 block-wise (DeepSeek-V3:
one FP32 scale per 128 x 128 block, 0.024 %), int4 AWQ / GPTQ with group size 128 (an FP16 scale and
a 4-bit zero point per 128 weights, +5 %), Kimi-K2.5's int4 in groups of 32 with bf16 scales (+12.5 %).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import UnknownNameError


@dataclass(frozen=True, kw_only=True)
class DType:
    name: str
    """Canonical name."""
    aliases: tuple[str, ...] = ()
    elem_bytes: float
    """Bytes per element (0.5 for int4)."""
    is_float: bool
    torch_name: str | None = None
    """`torch.<name>` for the harness; None where torch.distributed cannot reduce it."""
    nccl_name: str | None = None
    """What nccl-tests prints in its "type" column."""
    max_exact: int = 0
    """Largest integer the type holds exactly (bounds the harness's --check values)."""


TABLE: tuple[DType, ...] = (
    DType(
        name="fp32",
        aliases=("float32", "float"),
        elem_bytes=4.0,
        is_float=True,
        torch_name="float32",
        nccl_name="float",
        max_exact=2**24,
    ),
    DType(
        name="fp64",
        aliases=("float64", "double"),
        elem_bytes=8.0,
        is_float=True,
        torch_name="float64",
        nccl_name="double",
        max_exact=2**53,
    ),
    DType(
        name="bf16",
        aliases=("bfloat16",),
        elem_bytes=2.0,
        is_float=True,
        torch_name="bfloat16",
        nccl_name="bfloat16",
        max_exact=256,
    ),
    DType(
        name="fp16",
        aliases=("float16", "half"),
        elem_bytes=2.0,
        is_float=True,
        torch_name="float16",
        nccl_name="half",
        max_exact=2048,
    ),
    DType(
        name="fp8",
        aliases=("float8", "fp8_e4m3", "f8e4m3"),
        elem_bytes=1.0,
        is_float=True,
        nccl_name="f8e4m3",
        max_exact=16,
    ),
    DType(name="int8", elem_bytes=1.0, is_float=False, torch_name="int8", nccl_name="int8", max_exact=127),
    DType(name="uint8", elem_bytes=1.0, is_float=False, torch_name="uint8", nccl_name="uint8", max_exact=255),
    DType(name="int32", elem_bytes=4.0, is_float=False, torch_name="int32", nccl_name="int32", max_exact=2**31 - 1),
    DType(name="int64", elem_bytes=8.0, is_float=False, torch_name="int64", nccl_name="int64", max_exact=2**63 - 1),
    DType(name="int4", elem_bytes=0.5, is_float=False, max_exact=7),
    # GPTQ's 2- and 3-bit weights, packed into int32 words (3-bit: 32 weights in three words, exactly)
    DType(name="int3", elem_bytes=3 / 8, is_float=False, max_exact=3),
    DType(name="int2", elem_bytes=2 / 8, is_float=False, max_exact=1),
    # E2M1 holds 0, 0.5, 1, 1.5, 2, 3, 4, 6: every integer up to 4 exactly.
    DType(name="fp4", aliases=("fp4_e2m1", "e2m1"), elem_bytes=0.5, is_float=True, max_exact=4),
    DType(name="mxfp4", elem_bytes=4.25 / 8, is_float=True, max_exact=4),
    DType(name="nvfp4", elem_bytes=4.5 / 8, is_float=True, max_exact=4),
)

_BY_NAME: dict[str, DType] = {n: d for d in TABLE for n in (d.name, *d.aliases)}

WEIGHT_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "int3", "int2", "fp4", "mxfp4", "nvfp4")
"""What a model's weights, activations or KV cache can be stored in."""

FP4_DTYPES = ("fp4", "mxfp4", "nvfp4")
"""The 4-bit floating-point formats (E2M1 elements), which only FP4 tensor cores compute in."""


def dtype(name: object, allowed: tuple[str, ...] | None = None) -> DType:
    """The element type a spelling names (case-insensitive), if it is one of `allowed` canonical
    names; else an UnknownNameError listing what is accepted."""
    found = _BY_NAME.get(name.lower()) if isinstance(name, str) else None
    if found is None or (allowed is not None and found.name not in allowed):
        known = sorted(n for n, d in _BY_NAME.items() if allowed is None or d.name in allowed)
        raise UnknownNameError("dtype", str(name), known)
    return found


def canonical(name: object, allowed: tuple[str, ...] | None = None) -> str:
    """'bfloat16' -> 'bf16', 'half' -> 'fp16'."""
    return dtype(name, allowed).name


def dtype_bytes(name: object) -> float:
    """Bytes per element of a dtype (bf16 -> 2.0, int4 -> 0.5)."""
    return dtype(name).elem_bytes


__all__ = ["DType", "FP4_DTYPES", "TABLE", "WEIGHT_DTYPES", "canonical", "dtype", "dtype_bytes"]
