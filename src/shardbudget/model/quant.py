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
the LM head in the torch_dtype (vLLM skips `lm_head` for all of them). A compressed-tensors `ignore`
list that leaves attention unquantized while the routed experts are not ignored makes the scope the
experts alone (Kimi-K2.5: `re:.*self_attn.*`, `re:.*shared_experts.*` and the dense MLP ignored;
compressed-tensors matches `re:` entries with `re.match` on the module's name, others by name). A
method the reader does not know is named in a warning (`Checkpoint.warnings`) and the weights fall
back to the torch_dtype.

Scales. A quantized weight carries its share of the scales (and zero points) it is decoded with,
read from the same config, priced as bytes per weight beside the element (`Checkpoint.scale_bytes`,
what the dtype's `elem_bytes` does not already hold; MXFP4 and NVFP4 fix their blocks and hold
theirs, `dtypes.py`):

  group of g weights   (scale + zero point) / g: compressed-tensors `strategy` "group" with its
                       `group_size` (Kimi-K2.5: int4, g = 32, one bf16 scale: 4 + 16 / 32 = 4.5 bits
                       per weight, 0.5625 B), AWQ and GPTQ `group_size` (default 128, one fp16
                       scale; a zero point of `bits` bits packed into int32 words where asymmetric:
                       AWQ `zero_point` (default true); GPTQ always stores `qzeros`, and a `g_idx`
                       int32 per input row);
  one per channel      (scale + zero point) / the row's length, taken at the hidden size
                       (fbgemm_fp8, compressed-tensors "channel", GPTQ `group_size` -1);
  2-D block a x b      scale / (a x b): FP8 `weight_block_size` [128, 128], one FP32
                       `weight_scale_inv` per block (DeepSeek-V3: 4 / 16384 = 0.024 %);
  one per tensor       nothing per weight (FP8 per-tensor, ModelOpt FP8).
The scale's type: compressed-tensors' `scale_dtype` where written; else the torch_dtype for
weight-only integers (vLLM CompressedTensorsWNA16 allocates `weight_scale` in the params dtype) and
FP32 for W8A8 (vLLM CompressedTensorsW8A8Fp8 / Int8, Fp8LinearMethod: float32 scales); FP16 for AWQ
and GPTQ (their `scales` tensors); bitsandbytes NF4 one FP32 absmax per 64 weights, or with
`bnb_4bit_use_double_quant` an 8-bit absmax per 64 and an FP32 per 256 blocks.
"""

from __future__ import annotations

import re
import reprlib
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..dtypes import canonical, dtype, dtype_bytes
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
    scale_bytes: float = 0.0
    """Bytes of scales and zero points per quantized weight, beyond `weight_dtype`'s element size
    (module docstring, "Scales"): 0.0625 for int4 in groups of 32 with bf16 scales."""
    scale_words: str = ""
    """The scales in words ("one bf16 scale per 32 weights"); "" when unquantized."""
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


class _Format(NamedTuple):
    """What one method's config says: element types, and the scales' bytes per weight in words."""

    weights: str
    activations: str | None
    scale_bytes: float = 0.0
    scale_words: str = ""


class _Ctx(NamedTuple):
    """What a method's reader needs beside its config: the torch_dtype (its scales' default type)
    and the row length a per-channel scale is shared by (the hidden size)."""

    torch: str
    in_features: int


_SCALE_TYPES = {"float32": 4.0, "float16": 2.0, "bfloat16": 2.0, "float8_e4m3fn": 1.0, "float8_e8m0fnu": 1.0}
"""compressed-tensors' `scale_dtype` (a torch dtype's name) -> bytes of one scale."""


def _short_name(scale_b: float, torch: str) -> str:
    return {4.0: "fp32", 1.0: "8-bit"}.get(scale_b, torch if torch in ("bf16", "fp16") else "16-bit")


def _grouped(
    weights: str, act: str | None, *, group: int, scale_b: float, scale: str, zero_bits: float = 0.0, extra: float = 0.0
) -> _Format:
    """A scale (and a zero point of `zero_bits`) per `group` weights; `extra`: bytes per weight more."""
    zero = f" and a {zero_bits:g}-bit zero point" if zero_bits else ""
    return _Format(
        weights, act, (scale_b + zero_bits / 8) / group + extra, f"one {scale} scale{zero} per {group} weights"
    )


def _per_channel(
    weights: str,
    act: str | None,
    *,
    in_features: int,
    scale_b: float,
    scale: str,
    zero_bits: float = 0.0,
    extra: float = 0.0,
) -> _Format:
    zero = f" and a {zero_bits:g}-bit zero point" if zero_bits else ""
    return _Format(
        weights, act, (scale_b + zero_bits / 8) / in_features + extra, f"one {scale} scale{zero} per output channel"
    )


def _per_tensor(weights: str, act: str | None, scale: str = "fp32") -> _Format:
    return _Format(weights, act, 0.0, f"one {scale} scale per tensor")


def _in_dtype(weights: str, act: str | None) -> _Format:
    block = {"mxfp4": "one E8M0 scale per 32", "nvfp4": "one FP8 scale per 16 and an FP32 per tensor"}
    return _Format(weights, act, 0.0, f"scales in the {weights} format ({block.get(weights, 'its blocks')})")


def _positive_int(q: dict, key: str, default: int) -> int:
    value = q.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value == 0 or value < -1:
        raise ValueError(f"{key} {reprlib.repr(value)}")
    return value


def _fp8(q: dict, ctx: _Ctx) -> _Format:
    # activation_scheme is "dynamic" or "static"; either way the GEMM inputs are FP8.
    block = q.get("weight_block_size")
    if block is None:
        return _per_tensor("fp8", "fp8")
    if (
        not isinstance(block, list)
        or len(block) != 2
        or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)
    ):
        raise ValueError(f"weight_block_size {reprlib.repr(block)}")
    # one FP32 weight_scale_inv per block (DeepSeek-V3; vLLM Fp8LinearMethod's float32 block scales)
    return _Format("fp8", "fp8", 4.0 / (block[0] * block[1]), f"one fp32 scale per {block[0]}x{block[1]} block")


def _fbgemm_fp8(q: dict, ctx: _Ctx) -> _Format:
    return _per_channel("fp8", "fp8", in_features=ctx.in_features, scale_b=4.0, scale="fp32")


INT_BITS = {2: "int2", 3: "int3", 4: "int4", 8: "int8"}
"""GPTQ / AWQ weight bits -> dtype: the widths vLLM's and transformers' GPTQConfig accept."""


class BadBits(ValueError):
    """A `bits` value no engine reads: refused (CatalogError), not priced as something else."""


def _int_bits(q: dict, *keys: str) -> str:
    key = next((k for k in keys if q.get(k) is not None), None)
    if key is None:
        return "int4"  # AWQ's default; GPTQ checkpoints always write bits
    value = q[key]
    # 8.0 == 8 passes the engines' `bits in [2, 3, 4, 8]`; "8", True or NaN do not
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value in INT_BITS:
        return INT_BITS[int(value)]
    raise BadBits(
        f"quantization_config.{key} {reprlib.repr(value)}: expected the number of bits per weight, "
        f"one of {', '.join(map(str, INT_BITS))} (as vLLM and transformers read GPTQ / AWQ)"
    )


def _awq(q: dict, ctx: _Ctx) -> _Format:
    weights = _int_bits(q, "bits", "w_bit")
    group = _positive_int(q, "group_size", _positive_int(q, "q_group_size", 128))
    zero = dtype_bytes(weights) * 8 if q.get("zero_point", True) is not False else 0.0
    if group == -1:
        return _per_channel(weights, None, in_features=ctx.in_features, scale_b=2.0, scale="fp16", zero_bits=zero)
    return _grouped(weights, None, group=group, scale_b=2.0, scale="fp16", zero_bits=zero)


def _gptq(q: dict, ctx: _Ctx) -> _Format:
    # GPTQ stores `qzeros` whether or not `sym`, and one int32 `g_idx` per input row (4 / out bytes)
    weights = _int_bits(q, "bits")
    group, zero, g_idx = _positive_int(q, "group_size", 128), dtype_bytes(weights) * 8, 4.0 / ctx.in_features
    if group == -1:
        return _per_channel(
            weights, None, in_features=ctx.in_features, scale_b=2.0, scale="fp16", zero_bits=zero, extra=g_idx
        )
    return _grouped(weights, None, group=group, scale_b=2.0, scale="fp16", zero_bits=zero, extra=g_idx)


def _bitsandbytes(q: dict, ctx: _Ctx) -> _Format:
    # NF4: one absmax per 64 weights (FP32; double quantization: 8-bit, with an FP32 per 256 blocks);
    # LLM.int8(): one FP32 scale per row.
    if q.get("load_in_8bit") is True:
        return _per_channel("int8", None, in_features=ctx.in_features, scale_b=4.0, scale="fp32")
    if q.get("bnb_4bit_use_double_quant") is True:
        return _Format(
            "int4", None, 1.0 / 64 + 4.0 / (64 * 256), "one 8-bit absmax per 64 weights and an fp32 per 256 blocks"
        )
    return _grouped("int4", None, group=64, scale_b=4.0, scale="fp32")


def _modelopt(q: dict, ctx: _Ctx) -> _Format:
    inner = q.get("quantization") if isinstance(q.get("quantization"), dict) else q
    algo = str(inner.get("quant_algo", "")).upper()
    if algo.startswith("FP8"):
        return _per_tensor("fp8", "fp8")
    if algo == "NVFP4":
        return _in_dtype("nvfp4", "nvfp4")
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


def _tensor_scales(spec: dict, weights: str, act: str | None, ctx: _Ctx) -> _Format:
    """The scales of a compressed-tensors weights spec, by its `strategy` (module docstring)."""
    if weights in ("mxfp4", "nvfp4"):
        return _in_dtype(weights, act)
    named = spec.get("scale_dtype")
    if named is not None and str(named).removeprefix("torch.") not in _SCALE_TYPES:
        raise ValueError(f"scale_dtype {reprlib.repr(named)}")
    default = 4.0 if act is not None or weights == "fp8" else dtype_bytes(ctx.torch)
    scale_b = _SCALE_TYPES[str(named).removeprefix("torch.")] if named is not None else default
    scale = _short_name(scale_b, ctx.torch)
    zero = 0.0 if spec.get("symmetric", True) is not False else float(spec.get("num_bits", 8))
    # no strategy written: compressed-tensors' QuantizationArgs infers it from group_size (none:
    # tensor; -1: channel; positive: group)
    strategy = spec.get("strategy") or ("tensor" if spec.get("group_size") is None else "group")
    if strategy == "group":
        group = _positive_int(spec, "group_size", 0)
        if group == -1:
            strategy = "channel"
        elif group < 1:
            raise ValueError(f"group_size {reprlib.repr(spec.get('group_size'))}")
        else:
            return _grouped(weights, act, group=group, scale_b=scale_b, scale=scale, zero_bits=zero)
    if strategy == "channel":
        return _per_channel(weights, act, in_features=ctx.in_features, scale_b=scale_b, scale=scale, zero_bits=zero)
    if strategy == "block":
        block = spec.get("block_structure")
        if (
            not isinstance(block, list)
            or len(block) != 2
            or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)
        ):
            raise ValueError(f"block_structure {reprlib.repr(block)}")
        return _Format(
            weights, act, scale_b / (block[0] * block[1]), f"one {scale} scale per {block[0]}x{block[1]} block"
        )
    if strategy in ("tensor", "tensor_group"):
        return _per_tensor(weights, act, scale)
    raise ValueError(f"strategy {reprlib.repr(strategy)}")


def _compressed_tensors(q: dict, ctx: _Ctx) -> _Format:
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise ValueError("no config_groups")
    first = next(iter(groups.values()))
    if not isinstance(first, dict):
        raise ValueError("config_groups entry is not an object")
    act = _tensor_format(first.get("input_activations"), "input_activations")
    weights = _tensor_format(first.get("weights"), "weights")
    if weights is None:
        return _Format(ctx.torch, act)
    return _tensor_scales(first["weights"], weights, act, ctx)


def _mxfp4(q: dict, ctx: _Ctx) -> _Format:
    return _in_dtype("mxfp4", None)


# quant_method -> reader (weights, activations or None for weight-only, scales) and the scope.
_METHODS = {
    "fp8": (_fp8, "linear"),
    "fbgemm_fp8": (_fbgemm_fp8, "linear"),
    "compressed-tensors": (_compressed_tensors, "linear"),
    "awq": (_awq, "linear"),
    "awq_marlin": (_awq, "linear"),
    "gptq": (_gptq, "linear"),
    "gptq_marlin": (_gptq, "linear"),
    "bitsandbytes": (_bitsandbytes, "linear"),
    "modelopt": (_modelopt, "linear"),
    "mxfp4": (_mxfp4, "experts"),
}
KNOWN_METHODS = tuple(sorted(_METHODS))

_PROBES = {
    "attention": ("model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.o_proj"),
    "experts": (
        "model.layers.1.mlp.experts.0.gate_proj",
        "model.layers.1.mlp.experts.0.down_proj",
        "model.layers.1.block_sparse_moe.experts.0.w1",
    ),
}
"""Module names in the Hugging Face layout that an `ignore` list is tried on: a layer's attention
and its routed experts (DeepSeek / Qwen `mlp.experts.N`, Mixtral `block_sparse_moe.experts.N`)."""


def _ignored(entries: list, name: str) -> bool:
    """compressed-tensors' rule: `re:PATTERN` by re.match on the module's name, else the name itself."""
    for entry in entries:
        if not isinstance(entry, str) or len(entry) > 500:
            continue
        if entry.startswith("re:"):
            try:
                if re.match(entry[3:], name):
                    return True
            except re.error:
                continue
        elif entry == name:
            return True
    return False


def _scope(q: dict, method: str, scope: str) -> str:
    """`experts` where a compressed-tensors `ignore` list leaves every attention module and no
    routed expert unquantized (Kimi-K2.5), else the method's own scope."""
    entries = q.get("ignore")
    if method.lower() != "compressed-tensors" or not isinstance(entries, list):
        return scope
    attention = all(_ignored(entries, n) for n in _PROBES["attention"])
    experts = any(_ignored(entries, n) for n in _PROBES["experts"])
    return "experts" if attention and not experts else scope


OVERRIDE_SCALES = {"int8": 128, "int4": 128, "int3": 128, "int2": 128}
"""`--dtype` with an integer type and no checkpoint to read: AWQ's and GPTQ's default group of 128
weights, one fp16 scale and a zero point of the weight's bits each. FP8 is per tensor as vLLM's
online `--quantization fp8` quantizes; MXFP4 and NVFP4 hold their scales."""


def override_scales(weights: str) -> tuple[float, str]:
    """(bytes per weight, words) of the scales a `--dtype` weight is priced with (`OVERRIDE_SCALES`)."""
    if weights in OVERRIDE_SCALES:
        f = _grouped(
            weights, None, group=OVERRIDE_SCALES[weights], scale_b=2.0, scale="fp16", zero_bits=dtype_bytes(weights) * 8
        )
        return f.scale_bytes, f.scale_words
    return 0.0, ""


def read_checkpoint(
    raw: dict, *, text: dict | None = None, where: str = "config.json", in_features: int = 4096
) -> Checkpoint:
    """The checkpoint precision of a config.json (`where` names it). `text` is the nested text_config of
    a multimodal checkpoint: torch_dtype and quantization_config are read from the top level first,
    then there. `in_features`: the row length a per-channel scale is shared by (the hidden size). A
    method or field it does not read becomes a warning and the torch_dtype; a GPTQ / AWQ `bits` that
    no engine reads is a CatalogError (module docstring)."""
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
        warnings.append(
            f"quantization_config quant_method {shown} is not one shardbudget reads "
            f"(known: {', '.join(KNOWN_METHODS)}); weights priced as {torch}"
        )
        return Checkpoint(torch_dtype=torch, weight_dtype=torch, warnings=tuple(warnings))
    reader, scope = _METHODS[method.lower()]
    try:
        found = reader(q, _Ctx(torch, max(int(in_features), 1)))
    except BadBits as exc:
        raise CatalogError(f"{where}: {exc}") from None
    except (ValueError, TypeError, UnknownNameError) as exc:
        what = reprlib.repr(str(exc))[1:-1]  # bounded: the message may quote a hostile value
        warnings.append(
            f"quantization_config {method!r} has {what}, which shardbudget does not read; weights priced as {torch}"
        )
        return Checkpoint(torch_dtype=torch, quant_method=method, weight_dtype=torch, warnings=tuple(warnings))
    dtype(found.weights)  # the table knows every name the readers return
    return Checkpoint(
        torch_dtype=torch,
        quant_method=method,
        weight_dtype=found.weights,
        scope=_scope(q, method, scope),
        activation_dtype=found.activations,
        scale_bytes=found.scale_bytes,
        scale_words=found.scale_words,
        warnings=tuple(warnings),
    )


__all__ = ["Checkpoint", "INT_BITS", "KNOWN_METHODS", "OVERRIDE_SCALES", "SCOPES", "override_scales", "read_checkpoint"]
