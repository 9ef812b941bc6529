"""Weight scales priced from the checkpoint's own quantization_config (issue 34, part A).

Kimi-K2.5's routed experts are int4 in groups of 32 with one bf16 scale each (4.5 bits per
weight); the tool counted 0.5 byte and no scales, and priced attention, the shared experts and the
dense MLP as int4 too, so TP4 on four H200s "fit" where about 149 GB per GPU is needed.
"""

from __future__ import annotations

import json

import pytest

from shardbudget.model import Plan, config_from_dict, default_precision, layer_kinds, layer_work, load_model
from shardbudget.model.params import expert_params, total_params, weight_bytes_per_gpu
from shardbudget.fabric.catalog import load_catalog
from shardbudget.step.memory import fits, memory_need
from shardbudget.step.scenario import scenario

MODELS = "src/shardbudget/catalog/models"
H = 4096  # llama-3.1-8b's hidden size: the row a per-channel scale is shared by


def raw(name: str) -> dict:
    with open(f"{MODELS}/{name}.json") as f:
        return json.load(f)


def _ck(qc):
    base = {k: v for k, v in raw("llama-3.1-8b").items() if k != "torch_dtype"} | {"quantization_config": qc}
    return config_from_dict(base, name="q").checkpoint


def _ct(weights, activations=None, **top):
    return {
        "quant_method": "compressed-tensors",
        **top,
        "config_groups": {"group_0": {"weights": weights, "input_activations": activations, "targets": ["Linear"]}},
    }


INT4_G128 = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}
FP8_ACT = {"num_bits": 8, "type": "float", "dynamic": True}

# (config, bytes of scales per weight, words): each by hand from the format's tensors
SCALE_CASES = [
    # DeepSeek-V3: one FP32 weight_scale_inv per 128 x 128 block
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, 4 / 128**2, "one fp32 scale per 128x128 block"),
    ({"quant_method": "fp8", "activation_scheme": "static"}, 0.0, "one fp32 scale per tensor"),
    ({"quant_method": "fbgemm_fp8"}, 4 / H, "one fp32 scale per output channel"),
    (_ct({"num_bits": 8, "type": "float", "strategy": "channel"}, FP8_ACT), 4 / H, "one fp32 scale per output channel"),
    (
        _ct({"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]}, FP8_ACT),
        4 / 128**2,
        "one fp32 scale per 128x128 block",
    ),
    (_ct({"num_bits": 8, "type": "float", "strategy": "tensor"}, FP8_ACT), 0.0, "one fp32 scale per tensor"),
    # W4A16: the scale in the torch_dtype (bf16), symmetric: no zero point
    (_ct(INT4_G128), 2 / 128, "one bf16 scale per 128 weights"),
    # no strategy written: a group_size makes it "group", as compressed-tensors' QuantizationArgs infers
    (_ct({"num_bits": 4, "type": "int", "group_size": 64}), 2 / 64, "one bf16 scale per 64 weights"),
    (_ct({"num_bits": 4, "type": "int", "group_size": -1}), 2 / H, "one bf16 scale per output channel"),
    (_ct({**INT4_G128, "symmetric": False}), (2 + 0.5) / 128, "one bf16 scale and a 4-bit zero point per 128 weights"),
    (_ct({**INT4_G128, "group_size": 32, "scale_dtype": "torch.float32"}), 4 / 32, "one fp32 scale per 32 weights"),
    (
        _ct({"num_bits": 8, "type": "int", "strategy": "channel"}, {"num_bits": 8, "type": "int"}),
        4 / H,
        "one fp32 scale per output channel",
    ),
    # NVFP4: the FP8 scale per 16 is in the dtype (4.5 bits), the FP32 global per tensor negligible
    (_ct({"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}), 0.0, "scales in the nvfp4"),
    (
        {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
        (2 + 0.5) / 128,
        "one fp16 scale and a 4-bit zero point per 128 weights",
    ),
    ({"quant_method": "awq", "w_bit": 4, "q_group_size": 64, "zero_point": False}, 2 / 64, "one fp16 scale per 64"),
    # GPTQ: qzeros always, and one int32 g_idx per input row
    ({"quant_method": "gptq", "bits": 4, "group_size": 128}, (2 + 0.5) / 128 + 4 / H, "per 128 weights"),
    ({"quant_method": "gptq", "bits": 8, "group_size": -1}, (2 + 1) / H + 4 / H, "per output channel"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, 4 / 64, "one fp32 scale per 64 weights"),
    (
        {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_use_double_quant": True},
        1 / 64 + 4 / (64 * 256),
        "8-bit absmax per 64",
    ),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, 4 / H, "per output channel"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, 0.0, "scales in the nvfp4 format"),
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, 0.0, "one fp32 scale per tensor"),
]


@pytest.mark.parametrize("qc, scale_bytes, words", SCALE_CASES, ids=[str(c[0])[:70] for c in SCALE_CASES])
def test_every_format_prices_its_scales(qc, scale_bytes, words):
    ck = _ck(qc)
    assert ck.warnings == () and ck.scope == "linear"
    assert ck.scale_bytes == pytest.approx(scale_bytes, rel=1e-12, abs=0) and words in ck.scale_words


@pytest.mark.parametrize(
    "qc, named",
    [
        (_ct({**INT4_G128, "scale_dtype": "torch.int7"}), "scale_dtype"),
        (_ct({**INT4_G128, "group_size": 0}), "group_size"),
        (_ct({**INT4_G128, "strategy": "diagonal"}), "strategy"),
        ({"quant_method": "fp8", "weight_block_size": [128]}, "weight_block_size"),
        ({"quant_method": "awq", "bits": 4, "group_size": "128"}, "group_size"),
    ],
)
def test_scales_it_cannot_read_warn_and_fall_back(qc, named):
    ck = _ck(qc)
    assert ck.scope == "none" and ck.weight_dtype == "bf16" and ck.scale_bytes == 0.0
    (warning,) = ck.warnings
    assert named in warning and "\n" not in warning


def test_kimi_k25_routed_experts_are_int4_in_groups_of_32_with_bf16_scales():
    """moonshotai/Kimi-K2.5 config.json (catalog/models/kimi-k2.5.json, its `_source`): one
    compressed-tensors group, int4, `strategy` group, `group_size` 32, symmetric, and `ignore` naming
    self_attn, shared_experts and the dense MLP. The same is stated by lightseekorg/tokenspeed#444
    ("INT4 (compressed-tensors W4A16, group-size 32, symmetric) ... Only the routed experts are
    quantized (attn / shared / dense / lm_head / vision stay bf16)") and by ISTA-DASLab's
    Kimi-K2.5-2Bit-GSQ model card ("compressed from ~4.5 bpp")."""
    cfg = load_model("kimi-k2.5")
    ck = cfg.checkpoint
    assert (ck.weight_dtype, ck.scope, ck.expert_dtype, ck.linear_dtype) == ("int4", "experts", "int4", "bf16")
    assert ck.scale_bytes == 2 / 32 and 8 * (0.5 + ck.scale_bytes) == 4.5
    p, notes = default_precision(cfg, load_catalog().gpus["h200"])
    assert (p.weights, p.expert_dtype, p.weight_scale_bytes, p.expert_scales) == ("bf16", "int4", 0.0, 0.0625)
    assert any("one bf16 scale per 32 weights: 4.5 bits per weight" in n for n in notes)


def test_kimi_k25_weights_and_tp4_on_h200_no_longer_fits():
    """By hand: 60 MoE layers x 384 experts at 0.5625 B per weight, everything else bf16 (the
    embedding and LM head too): about 594 GB, 149-150 GB per GPU at TP4, against 516.7 GB (and a TP4
    that fit) when int4 was 0.5 B with no scales over attention as well."""
    cfg = load_model("kimi-k2.5")
    sc = scenario(cfg, "hgx-h200")
    experts = 60 * 384 * expert_params(cfg)
    by_hand = experts * 0.5625 + (total_params(cfg) - experts) * 2
    d = sc.precision.memory_dtypes
    assert weight_bytes_per_gpu(cfg, tp=1, **{k: v for k, v in d.items() if k != "kv_dtype"}) == pytest.approx(
        by_hand, rel=1e-9
    )
    assert by_hand / 1e9 == pytest.approx(594.2, abs=0.5)
    gpu = sc.system.gpu
    for tp, fit in ((4, False), (8, True)):
        need = memory_need(cfg, Plan(tp=tp), precision=sc.precision, engine="vllm", batch=1, context=4096)
        assert bool(fits(need, gpu, engine="vllm", plan=Plan(tp=tp))) is fit
    assert (
        149e9
        < memory_need(cfg, Plan(tp=4), precision=sc.precision, engine="vllm", batch=1, context=4096).weights
        < 151e9
    )


def test_the_expert_gemms_read_the_scales_with_the_weights():
    """A decode step reads each hit expert's scales with its weights: the routed-expert GEMMs grow by
    0.0625 B per weight (their weights counted from the same op in bf16), nothing else does."""
    cfg = load_model("kimi-k2.5")
    p = scenario(cfg, "hgx-h200").precision
    moe = next(k for k in layer_kinds(cfg) if k.ffn == "moe")
    kw = dict(tokens=1, context=1024, tp=8, weight_dtype=p.weights)

    def ops(**more):
        return {op.name: op.bytes for op in layer_work(cfg, moe, **kw, **more)}

    bare, wide = ops(expert_dtype="int4"), ops(expert_dtype="bf16")
    scaled = ops(expert_dtype="int4", weight_scale_bytes=p.weight_scale_bytes, expert_scale_bytes=p.expert_scales)
    grown = {n for n in bare if scaled[n] != bare[n]}
    assert grown == {"expert_gate_up", "expert_down"}
    for n in grown:
        weights = (wide[n] - bare[n]) / (2.0 - 0.5)  # the op's expert weights, by their bytes
        assert scaled[n] - bare[n] == pytest.approx(weights * 0.0625, rel=1e-9)


def test_dtype_override_prices_awq_gptq_default_groups():
    cfg = load_model("llama-3.1-8b")
    p, notes = default_precision(cfg, load_catalog().gpus["h100-sxm"], dtype_override="int4")
    assert p.weight_scale_bytes == (2 + 0.5) / 128 and p.expert_scales == p.weight_scale_bytes
    assert any("one fp16 scale and a 4-bit zero point per 128 weights" in n for n in notes)
    fp8, _ = default_precision(cfg, load_catalog().gpus["h100-sxm"], dtype_override="fp8")
    assert fp8.weight_scale_bytes == 0.0  # per tensor, as vLLM's online --quantization fp8


def test_an_ignore_list_that_keeps_attention_makes_the_scope_linear():
    keep_attention = _ct({**INT4_G128, "group_size": 32}, ignore=["lm_head", "re:.*shared_experts.*"])
    assert _ck(keep_attention).scope == "linear"
    bad_regex = _ct(INT4_G128, ignore=["re:(", "re:.*self_attn.*"])
    assert _ck(bad_regex).scope == "experts"


# Every quantized checkpoint of the catalog (catalog/models/*.json, each with its `_source`): the
# scales its own quantization_config gives, bytes per quantized weight beyond the element.
CATALOG_SCALES = {
    "deepseek-v3": ("fp8", "linear", 4 / 128**2),  # weight_block_size [128, 128], FP32 weight_scale_inv
    "deepseek-v3.2": ("fp8", "linear", 4 / 128**2),
    "mimo-v2-flash": ("fp8", "linear", 4 / 128**2),
    "minimax-m2.5": ("fp8", "linear", 4 / 128**2),
    "gpt-oss-120b": ("mxfp4", "experts", 0.0),  # E8M0 per 32 inside mxfp4's 4.25 bits
    "kimi-k2.5": ("int4", "experts", 2 / 32),  # one bf16 scale per 32, symmetric
}


def test_every_quantized_catalog_checkpoint_prices_its_scales():
    import glob
    import os

    quantized = set()
    for path in glob.glob(f"{MODELS}/*.json"):
        r = raw(os.path.basename(path)[:-5])
        if r.get("quantization_config") or (r.get("text_config") or {}).get("quantization_config"):
            quantized.add(os.path.basename(path)[:-5])
    assert quantized == set(CATALOG_SCALES)
    for name, (weights, scope, scale_bytes) in CATALOG_SCALES.items():
        ck = load_model(name).checkpoint
        assert (ck.weight_dtype, ck.scope, ck.warnings) == (weights, scope, ()), name
        assert ck.scale_bytes == pytest.approx(scale_bytes, rel=1e-12, abs=0) and ck.scale_words, name


def test_a_published_awq_config():
    """hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4 config.json's quantization_config (AutoAWQ
    GEMM: 4 bits, group 128, zero point): an fp16 scale and a packed 4-bit zero per 128 weights, 4.156
    bits per weight."""
    qc = {
        "bits": 4,
        "group_size": 128,
        "modules_to_not_convert": None,
        "quant_method": "awq",
        "version": "gemm",
        "zero_point": True,
    }
    ck = _ck(qc)
    assert ck.scale_bytes == (2 + 0.5) / 128 and 8 * (0.5 + ck.scale_bytes) == pytest.approx(4.15625)
