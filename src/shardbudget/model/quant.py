"""The checkpoint's own precision: `torch_dtype` and `quantization_config`, read as engines read them.

A quantization_config names a method (`quant_method`) and, per method, the element type of the
quantized weights, which tensors it covers and whether the activations are quantized too:

  fp8                 FP8 E4M3 (or E5M2) weights, per-tensor or block-wise (`weight_block_size`,
                      DeepSeek-V3: 128 x 128 blocks, one FP32 scale each); activations quantized on
                      the fly (`activation_scheme` dynamic / static): W8A8. vLLM `Fp8Config`.
  fbgemm_fp8          FP8 weights per channel, dynamic FP8 activations (Meta's Llama 3.1 405B FP8).
  compressed-tensors  llm-compressor's format: `config_groups` give the weights' and input
                      activations' `num_bits` and `type` (int / float); NVFP4 is 4-bit float in
                      groups of 16. vLLM `CompressedTensorsConfig`.
  awq, gptq           int4 (or int8; GPTQ also int3, int2) weights in groups (`group_size`, usually
                      128), 16-bit activations: weight-only (vLLM AWQ / GPTQ / Marlin kernels).
                      `bits` (AWQ: `w_bit`) is read as vLLM's GPTQConfig and transformers' GPTQConfig
                      check it, `bits in [2, 3, 4, 8]`: the number 8 or 8.0; a string ("8"), NaN, a
                      boolean or another number is refused (`CatalogError`, naming the file and key),
                      never priced as int4; an absent `bits` is 4, AWQ's default.
  bitsandbytes        NF4 / int8 weights, weight-only.
  modelopt            NVIDIA ModelOpt: `quant_algo` FP8 (W8A8) or NVFP4 (W4A4).
  mxfp4               MXFP4 routed experts only; attention, router, embedding and LM head stay in
                      the torch_dtype (gpt-oss `modules_to_not_convert`; transformers Mxfp4
                      integration and vLLM `Mxfp4Config` quantize the MoE experts only).

Every method except mxfp4 quantizes the linear layers of the decoder and leaves the embedding and
the LM head in the torch_dtype (vLLM skips `lm_head` for all of them). A method the reader does not
know is named in a warning (`Checkpoint.warnings`) and the weights fall back to the torch_dtype.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from typing import Any

from ..dtypes import canonical, dtype
from ..errors import CatalogError, UnknownNameError

SCOPES = ("none", "linear", "experts")
"""Which weights the checkpoint's format covers: none (unquantized); linear (every linear layer of
the decoder: attention, MLP, experts, shared experts); experts (the routed experts only)."""

_TORCH_DTYPES = ("bf16", "fp16", "fp32")


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    """The precision the checkpoint stores its weights in (what config.json says)."""

    torch_dtype: str = "bf16"
    """Canonical dtype of the unquantized tensors and of the activations (`torch_dtype`, or `dtype`
    as newer transformers write it; absent -> bf16, the dtype of every catalog checkpoint)."""
    quant_method: str = ""
    """`quantization_config.quant_method` as written ("" when the checkpoint is not quantized)."""
    weight_dtype: str = "bf16"
    """Canonical dtype of the quantized weights (the torch_dtype when unquantized)."""
    scope: str = "none"
    """One of SCOPES: which weights `weight_dtype` applies to."""
    activation_dtype: str | None = None
    """Dtype the format feeds its GEMMs (fp8 for W8A8 FP8, nvfp4 for W4A4); None: weight-only."""
    warnings: tuple[str, ...] = ()
    """One line per part of the config the reader could not use, and what it did instead."""

    @property
    def expert_dtype(self) -> str:
        """Dtype of the routed experts' weights."""
        return self.weight_dtype if self.scope in ("linear", "experts") else self.torch_dtype

    @property
    def linear_dtype(self) -> str:
        """Dtype of the other linear layers (attention, dense MLP, shared experts)."""
        return self.weight_dtype if self.scope == "linear" else self.torch_dtype


def _torch_dtype(raw: dict, warnings: list[str]) -> str:
    value = raw.get("torch_dtype") if raw.get("torch_dtype") is not None else raw.get("dtype")
    if value is None:
        return "bf16"
    try:
        name = canonical(value, _TORCH_DTYPES)
    except UnknownNameError:
        warnings.append(f"torch_dtype {reprlib.repr(value)} is not bfloat16, float16 or float32; priced as bf16")
        return "bf16"
    return name


def _fp8(q: dict) -> tuple[str, str | None]:
    # activation_scheme is "dynamic" or "static"; either way the GEMM inputs are FP8.
    return "fp8", "fp8"


INT_BITS = {2: "int2", 3: "int3", 4: "int4", 8: "int8"}
"""GPTQ / AWQ weight bits -> dtype: the widths vLLM's and transformers' GPTQConfig accept."""


class BadBits(ValueError):
    """A `bits` value no engine reads: refused (CatalogError), not priced as something else."""


def _int_bits(q: dict, *keys: str) -> tuple[str, str | None]:
    key = next((k for k in keys if q.get(k) is not None), None)
    if key is None:
        return "int4", None  # AWQ's default; GPTQ checkpoints always write bits
    value = q[key]
    # 8.0 == 8 passes the engines' `bits in [2, 3, 4, 8]`; "8", True or NaN do not
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value in INT_BITS:
        return INT_BITS[int(value)], None
    raise BadBits(f"quantization_config.{key} {reprlib.repr(value)}: expected the number of bits per weight, "
                  f"one of {', '.join(map(str, INT_BITS))} (as vLLM and transformers read GPTQ / AWQ)")


def _bitsandbytes(q: dict) -> tuple[str, str | None]:
    # NF4 stores 4-bit codes plus one absmax per 64 weights; load_in_8bit is LLM.int8().
    return ("int8" if q.get("load_in_8bit") is True else "int4"), None


def _modelopt(q: dict) -> tuple[str, str | None]:
    inner = q.get("quantization") if isinstance(q.get("quantization"), dict) else q
    algo = str(inner.get("quant_algo", "")).upper()
    if algo.startswith("FP8"):
        return "fp8", "fp8"
    if algo == "NVFP4":
        return "nvfp4", "nvfp4"
    raise ValueError(f"quant_algo {inner.get('quant_algo')!r}")


def _tensor_format(spec: Any, where: str) -> str | None:
    """A compressed-tensors weights / input_activations spec -> canonical dtype (None if absent)."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise ValueError(f"{where} is not an object")
    bits, kind = spec.get("num_bits"), spec.get("type", "int")
    if kind == "float" and bits == 8:
        return "fp8"
    if kind == "float" and bits == 4:
        return {16: "nvfp4", 32: "mxfp4"}.get(spec.get("group_size"), "fp4")
    if kind == "int" and bits in (4, 8):
        return "int4" if bits == 4 else "int8"
    raise ValueError(f"{where} {bits}-bit {kind}")


def _compressed_tensors(q: dict) -> tuple[str, str | None]:
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise ValueError("no config_groups")
    first = next(iter(groups.values()))
    if not isinstance(first, dict):
        raise ValueError("config_groups entry is not an object")
    return (_tensor_format(first.get("weights"), "weights") or "bf16",
            _tensor_format(first.get("input_activations"), "input_activations"))


def _mxfp4(q: dict) -> tuple[str, str | None]:
    return "mxfp4", None


# quant_method -> (weight dtype, activation dtype or None for weight-only), and the scope.
_METHODS = {
    "fp8": (_fp8, "linear"), "fbgemm_fp8": (_fp8, "linear"),
    "compressed-tensors": (_compressed_tensors, "linear"),
    "awq": (lambda q: _int_bits(q, "bits", "w_bit"), "linear"),
    "awq_marlin": (lambda q: _int_bits(q, "bits", "w_bit"), "linear"),
    "gptq": (lambda q: _int_bits(q, "bits"), "linear"), "gptq_marlin": (lambda q: _int_bits(q, "bits"), "linear"),
    "bitsandbytes": (_bitsandbytes, "linear"), "modelopt": (_modelopt, "linear"),
    "mxfp4": (_mxfp4, "experts"),
}
KNOWN_METHODS = tuple(sorted(_METHODS))


def read_checkpoint(raw: dict, *, text: dict | None = None, where: str = "config.json") -> Checkpoint:
    """The checkpoint precision of a config.json (`where` names it). `text` is the nested text_config of
    a multimodal checkpoint: torch_dtype and quantization_config are read from the top level first,
    then there. A method or field it does not read becomes a warning and the torch_dtype; a GPTQ / AWQ
    `bits` that no engine reads is a CatalogError (module docstring)."""
    warnings: list[str] = []
    sources = [raw] + ([text] if text else [])
    top = next((s for s in sources if s.get("torch_dtype") is not None or s.get("dtype") is not None), raw)
    torch = _torch_dtype(top, warnings)
    q = next((s["quantization_config"] for s in sources if s.get("quantization_config") is not None), None)
    if q is None:
        return Checkpoint(torch_dtype=torch, weight_dtype=torch, warnings=tuple(warnings))
    method = q.get("quant_method") if isinstance(q, dict) else None
    if not isinstance(method, str) or method.lower() not in _METHODS:
        shown = reprlib.repr(method) if isinstance(q, dict) else f"a {type(q).__name__}"
        warnings.append(f"quantization_config quant_method {shown} is not one shardbudget reads "
                        f"(known: {', '.join(KNOWN_METHODS)}); weights priced as {torch}")
        return Checkpoint(torch_dtype=torch, weight_dtype=torch, warnings=tuple(warnings))
    reader, scope = _METHODS[method.lower()]
    try:
        weights, activations = reader(q)
    except BadBits as exc:
        raise CatalogError(f"{where}: {exc}") from None
    except (ValueError, TypeError, UnknownNameError) as exc:
        what = reprlib.repr(str(exc))[1:-1]  # bounded: the message may quote a hostile value
        warnings.append(f"quantization_config {method!r} has {what}, which shardbudget does not read; "
                        f"weights priced as {torch}")
        return Checkpoint(torch_dtype=torch, quant_method=method, weight_dtype=torch, warnings=tuple(warnings))
    dtype(weights)  # the table knows every name the readers return
    return Checkpoint(torch_dtype=torch, quant_method=method, weight_dtype=weights, scope=scope,
                      activation_dtype=activations, warnings=tuple(warnings))


__all__ = ["Checkpoint", "INT_BITS", "KNOWN_METHODS", "SCOPES", "read_checkpoint"]
