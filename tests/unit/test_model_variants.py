"""Attention variants (sliding windows, alternating and chunked layers), multimodal text configs and
the checkpoint's own precision. Every number can be checked by hand from the config.json it names.
"""

import json
from importlib import resources

import numpy as np
import pytest

from shardbudget.errors import CatalogError, PlanError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import (
    LayerKind,
    Plan,
    Precision,
    config_from_dict,
    default_precision,
    kv_cache_bytes_per_gpu,
    layer_kinds,
    layer_work,
    load_model,
    memory_bytes_per_gpu,
    step_work,
    total_params,
    weight_bytes_per_gpu,
)
from shardbudget.model.layers import attention_keys, cached_tokens
from shardbudget.model.params import expert_params
from shardbudget.step.compose import compile_step
from shardbudget.step.scenario import decode_step


def raw(name: str) -> dict:
    return json.loads((resources.files("shardbudget") / "catalog" / "models" / f"{name}.json").read_text())


def op(ops, name):
    return next(o for o in ops if o.name == name)


# ---------------------------------------------------------------------------------------------
# Sliding windows: Mistral-7B v0.1 (sliding_window 4096 on every layer)
# ---------------------------------------------------------------------------------------------

MISTRAL_KV_PER_TOKEN_LAYER = 2 * 8 * 128 * 2  # K and V, 8 KV heads x 128, bf16: 4096 bytes


def test_mistral_every_layer_is_windowed():
    cfg = load_model("mistral-7b-v0.1")
    assert layer_kinds(cfg) == {LayerKind("dense", "sliding", 4096): 32}


def test_mistral_kv_stops_growing_past_the_window():
    cfg = load_model("mistral-7b-v0.1")
    at = {c: kv_cache_bytes_per_gpu(cfg, batch=1, context=c, tp=1) for c in (1000, 4096, 8192, 32768)}
    assert at[1000] == 1000 * 32 * MISTRAL_KV_PER_TOKEN_LAYER
    assert at[4096] == at[8192] == at[32768] == 4096 * 32 * MISTRAL_KV_PER_TOKEN_LAYER == 536_870_912


def test_mistral_decode_reads_at_most_the_window():
    cfg = load_model("mistral-7b-v0.1")
    short, long = (op(layer_work(cfg, 0, tokens=2, context=c, tp=1), "attention") for c in (4096, 8192))
    assert short.bytes == long.bytes and short.flops == long.flops
    cache = 2 * 4096 * MISTRAL_KV_PER_TOKEN_LAYER  # 2 sequences x 4096 keys
    assert short.bytes == cache + 2 * 32 * 128 * 2 * 2 + 2 * MISTRAL_KV_PER_TOKEN_LAYER  # + Q, O, new K/V
    assert short.flops == 4 * 2 * 32 * 128 * 4096  # QK^T and PV over 4096 keys, 32 heads


def test_window_keys_are_array_arithmetic():
    kind = LayerKind("dense", "sliding", 4096)
    context = np.array([[0.0, 1000.0, 4096.0, 8192.0]])
    assert attention_keys(kind, context, "decode").tolist() == [[0, 1000, 4096, 4096]]
    assert cached_tokens(kind, context).tolist() == [[0, 1000, 4096, 4096]]
    # prefill of 8192 tokens in a 4096 window: (4096 * 4097 / 2 + 4096 * 4096) / 8192 keys per query
    assert attention_keys(kind, np.array([8192.0]), "prefill")[0] == pytest.approx(3072.25)
    # shorter than the window: the causal mean (P + 1) / 2, as for full attention
    assert attention_keys(kind, 1000.0, "prefill") == attention_keys(LayerKind("dense"), 1000.0, "prefill") == 500.5


def test_chunk_keys_restart_each_chunk():
    kind = LayerKind("moe", "chunked", 8192)
    context = np.array([100.0, 8191.0, 8192.0, 10000.0, 20000.0])
    assert attention_keys(kind, context, "decode").tolist() == [100, 8191, 0, 1808, 3616]
    assert cached_tokens(kind, context).tolist() == [100, 8191, 8192, 8192, 8192]
    # prefill of 10000 tokens: one whole chunk (8192 * 8193 / 2) and 1808 more (1808 * 1809 / 2)
    assert attention_keys(kind, 10000.0, "prefill") == pytest.approx((8192 * 8193 / 2 + 1808 * 1809 / 2) / 10000)


def test_step_time_stops_growing_past_the_window_on_a_grid():
    # The whole step on a (batch, context) grid: decode attention is the only context-dependent op,
    # and every Mistral layer reads at most 4096 keys, so 8192 and 32768 cost what 4096 costs.
    catalog = load_catalog()
    model = compile_step(load_model("mistral-7b-v0.1"), catalog.system("hgx-h100"), Plan(2), catalog)
    total = model.evaluate(np.array([[1.0], [8.0], [64.0]]), np.array([[1024.0, 4096.0, 8192.0, 32768.0]])).total_s
    assert total.shape == (3, 4)
    assert np.all(total[:, 0] < total[:, 1]) and np.all(total[:, 1:] == total[:, 1:2])
    one = decode_step("mistral-7b-v0.1", "hgx-h100", Plan(2), batch=8, context=32768, catalog=catalog).total_s
    assert one == pytest.approx(total[1, 3], rel=1e-12)


# ---------------------------------------------------------------------------------------------
# Alternating layers: Gemma 3 (5 local : 1 global), gpt-oss (layer_types), Gemma 2 (even local)
# ---------------------------------------------------------------------------------------------


def test_gemma3_five_local_layers_per_global_one():
    cfg = load_model("gemma-3-27b")
    kinds = layer_kinds(cfg)
    assert kinds == {LayerKind("dense", "sliding", 1024): 52, LayerKind("dense"): 10}
    full = [i for i in range(62) if cfg.layer_kind_at(i) == LayerKind("dense")]
    assert full == [5, 11, 17, 23, 29, 35, 41, 47, 53, 59]  # (i + 1) % 6 == 0


def test_gemma3_kv_by_hand():
    cfg = load_model("gemma-3-27b")
    per_token_layer = 2 * 16 * 128 * 2  # K and V of 16 KV heads x 128, bf16
    kv = kv_cache_bytes_per_gpu(cfg, batch=1, context=32768, tp=1)
    assert kv == per_token_layer * (52 * 1024 + 10 * 32768) == 3_120_562_176
    # pp=2: 31 layers per stage; stage 0 holds the global layers 5..29 (5 of them), stage 1 the other 5
    assert kv_cache_bytes_per_gpu(cfg, batch=1, context=32768, tp=1, pp=2) == per_token_layer * (26 * 1024 + 5 * 32768)


def test_gemma3_text_config_and_family_defaults():
    cfg = load_model("gemma-3-27b")
    # From text_config: 62 layers, head_dim 128; from Gemma3TextConfig's defaults: vocab 262208, tied.
    assert (cfg.num_layers, cfg.head_dim, cfg.hidden_size, cfg.vocab_size) == (62, 128, 5376, 262_208)
    assert cfg.tie_embeddings and cfg.qk_norm and cfg.family.norms_per_layer == 4
    ops = {o.name for o in layer_work(cfg, 0, tokens=1, context=10, tp=1)}
    assert {"post_attn_norm", "pre_ffn_norm", "post_ffn_norm", "qk_norm"} <= ops


GEMMA3_1B = {  # google/gemma-3-1b-it config.json: the text-only Gemma 3, fields at the top level
    "architectures": ["Gemma3ForCausalLM"],
    "model_type": "gemma3_text",
    "head_dim": 256,
    "hidden_size": 1152,
    "intermediate_size": 6912,
    "num_attention_heads": 4,
    "num_hidden_layers": 26,
    "num_key_value_heads": 1,
    "sliding_window": 512,
    "sliding_window_pattern": 6,
    "vocab_size": 262144,
    "torch_dtype": "bfloat16",
}


def test_gemma3_text_only_config():
    cfg = config_from_dict(GEMMA3_1B, name="gemma-3-1b")
    assert layer_kinds(cfg) == {LayerKind("dense", "sliding", 512): 22, LayerKind("dense"): 4}
    assert cfg.tie_embeddings  # Gemma3TextConfig's default
    assert total_params(cfg) == pytest.approx(1.0e9, rel=0.005)  # Google: Gemma 3 1B


def test_gpt_oss_reads_layer_types():
    cfg = load_model("gpt-oss-120b")
    assert layer_kinds(cfg) == {LayerKind("moe", "sliding", 128): 18, LayerKind("moe"): 18}
    assert cfg.layer_kind_at(0).attention == "sliding" and cfg.layer_kind_at(1).attention == "full"
    # without layer_types the family rule gives the same alternation (GptOssConfig's default)
    no_types = {k: v for k, v in raw("gpt-oss-120b").items() if k != "layer_types"}
    assert layer_kinds(config_from_dict(no_types, name="x")) == layer_kinds(cfg)


GEMMA2_9B = {  # google/gemma-2-9b config.json fields that set its shape
    "architectures": ["Gemma2ForCausalLM"],
    "model_type": "gemma2",
    "head_dim": 256,
    "hidden_size": 3584,
    "intermediate_size": 14336,
    "num_attention_heads": 16,
    "num_hidden_layers": 42,
    "num_key_value_heads": 8,
    "sliding_window": 4096,
    "vocab_size": 256000,
    "torch_dtype": "float32",
}


def test_gemma2_alternates_from_layer_0():
    cfg = config_from_dict(GEMMA2_9B, name="gemma-2-9b")
    assert layer_kinds(cfg) == {LayerKind("dense", "sliding", 4096): 21, LayerKind("dense"): 21}
    assert cfg.layer_kind_at(0).attention == "sliding"
    assert total_params(cfg) == pytest.approx(9.24e9, rel=0.005)  # HF safetensors: 9.24B, tied embedding


def test_explicit_layer_types_win_and_bad_ones_are_named():
    all_full = {**raw("mistral-7b-v0.1"), "layer_types": ["full_attention"] * 32}
    assert layer_kinds(config_from_dict(all_full, name="x")) == {LayerKind("dense"): 32}
    for bad in (["full_attention"] * 31, ["linear_attention"] * 32, "full_attention"):
        with pytest.raises(CatalogError, match="layer_types") as info:
            config_from_dict({**raw("mistral-7b-v0.1"), "layer_types": bad}, name="x")
        assert "\n" not in str(info.value)


def test_qwen_windows_only_when_switched_on():
    assert layer_kinds(load_model("qwen2.5-72b")) == {LayerKind("dense"): 80}  # use_sliding_window false
    on = {**raw("qwen2.5-72b"), "use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 70}
    assert layer_kinds(config_from_dict(on, name="x")) == {
        LayerKind("dense"): 70,
        LayerKind("dense", "sliding", 4096): 10,
    }


def test_a_windowed_model_names_its_ambiguous_ffn():
    cfg = load_model("gemma-3-27b")
    with pytest.raises(PlanError, match="dense sliding 1024"):
        layer_work(cfg, "dense", tokens=1, context=1, tp=1)
    ops = layer_work(cfg, LayerKind("dense", "sliding", 1024), tokens=1, context=4000, tp=1)
    assert op(ops, "attention").flops == 4 * 32 * 128 * 1024  # 32 heads over 1024 keys


# ---------------------------------------------------------------------------------------------
# Llama 4 Scout: MoE with a shared expert, chunked attention on 3 of 4 layers
# ---------------------------------------------------------------------------------------------


def test_llama4_scout_layers():
    cfg = load_model("llama-4-scout")
    assert layer_kinds(cfg) == {LayerKind("moe", "chunked", 8192): 36, LayerKind("moe"): 12}
    assert [i for i in range(48) if cfg.layer_kind_at(i).attention == "full"] == list(range(3, 48, 4))
    assert (cfg.num_experts, cfg.experts_per_token, cfg.num_shared_experts) == (16, 1, 1)
    assert cfg.moe_intermediate_size == cfg.shared_expert_intermediate_size == 8192
    assert cfg.intermediate_size == 16384  # intermediate_size_mlp, for dense layers (Maverick has them)
    assert cfg.qk_norm and cfg.family.qk_norm == "l2"


def test_llama4_kv_at_long_context():
    cfg = load_model("llama-4-scout")
    per_token_layer = 2 * 8 * 128 * 2
    assert kv_cache_bytes_per_gpu(cfg, batch=1, context=100_000, tp=1) == per_token_layer * (36 * 8192 + 12 * 100_000)


def test_llama4_maverick_layout_interleaves_dense_layers():
    text = {**raw("llama-4-scout")["text_config"], "interleave_moe_layer_step": 2, "num_local_experts": 128}
    cfg = config_from_dict({**raw("llama-4-scout"), "text_config": text}, name="maverick-like")
    assert cfg.dense_layers == tuple(range(0, 48, 2))  # moe_layers = range(step - 1, layers, step)
    assert {k.ffn for k in layer_kinds(cfg)} == {"dense", "moe"}


def test_text_config_errors_name_the_nested_field():
    broken = {**raw("gemma-3-27b"), "text_config": {**raw("gemma-3-27b")["text_config"], "hidden_size": "big"}}
    with pytest.raises(CatalogError, match="text_config.hidden_size"):
        config_from_dict(broken, name="x")
    with pytest.raises(CatalogError, match="text_config"):
        config_from_dict({**raw("gemma-3-27b"), "text_config": None}, name="x")


# ---------------------------------------------------------------------------------------------
# The checkpoint's own precision
# ---------------------------------------------------------------------------------------------


def test_deepseek_v3_ships_block_fp8():
    ck = load_model("deepseek-v3").checkpoint
    assert (ck.torch_dtype, ck.quant_method, ck.weight_dtype, ck.scope, ck.activation_dtype) == (
        "bf16",
        "fp8",
        "fp8",
        "linear",
        "fp8",
    )
    assert load_model("deepseek-v3").checkpoint_weight_dtype == "fp8"


def test_gpt_oss_ships_mxfp4_experts_only():
    cfg = load_model("gpt-oss-120b")
    ck = cfg.checkpoint
    assert (ck.weight_dtype, ck.scope, ck.expert_dtype, ck.linear_dtype) == ("mxfp4", "experts", "mxfp4", "bf16")
    # gpt-oss model card (arXiv 2508.10925): the 120b checkpoint is 60.8 GiB, MXFP4 experts (4.25
    # bits per weight with their E8M0 scales) and everything else bf16.
    size = weight_bytes_per_gpu(cfg, tp=1, weight_dtype="bf16", expert_dtype="mxfp4", head_dtype="bf16")
    assert size / 2**30 == pytest.approx(60.8, rel=0.005)
    experts = 36 * 128 * expert_params(cfg)
    assert size == pytest.approx((total_params(cfg) - experts) * 2 + experts * 4.25 / 8, rel=1e-9)


def _ck(quantization_config=None, **top):
    base = {k: v for k, v in raw("llama-3.1-8b").items() if k != "torch_dtype"} | top
    if quantization_config is not None:
        base["quantization_config"] = quantization_config
    return config_from_dict(base, name="q").checkpoint


def _ct(weights, activations=None):
    return {
        "quant_method": "compressed-tensors",
        "config_groups": {"group_0": {"weights": weights, "input_activations": activations, "targets": ["Linear"]}},
    }


QUANT_CASES = [
    ({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}, "fp8", "fp8"),
    ({"quant_method": "fbgemm_fp8"}, "fp8", "fp8"),
    (_ct({"num_bits": 8, "type": "float"}, {"num_bits": 8, "type": "float", "dynamic": True}), "fp8", "fp8"),
    (_ct({"num_bits": 8, "type": "float"}), "fp8", None),  # FP8 W8A16
    (_ct({"num_bits": 4, "type": "int", "group_size": 128}), "int4", None),  # W4A16
    (
        _ct({"num_bits": 4, "type": "float", "group_size": 16}, {"num_bits": 4, "type": "float", "group_size": 16}),
        "nvfp4",
        "nvfp4",
    ),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, "int4", None),
    ({"quant_method": "gptq", "bits": 8, "group_size": 128}, "int8", None),
    # bits as vLLM's and transformers' GPTQConfig take it (`bits in [2, 3, 4, 8]`): 8.0 is 8 (issue 33, item 12)
    ({"quant_method": "gptq", "bits": 8.0, "group_size": 128}, "int8", None),
    ({"quant_method": "gptq_marlin", "bits": 3}, "int3", None),
    ({"quant_method": "gptq", "bits": 2}, "int2", None),
    ({"quant_method": "awq", "w_bit": 4.0}, "int4", None),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "int4", None),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4", "nvfp4"),
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, "fp8", "fp8"),
]


@pytest.mark.parametrize("qc, weights, activations", QUANT_CASES, ids=[str(c[0])[:60] for c in QUANT_CASES])
def test_quantization_configs(qc, weights, activations):
    ck = _ck(qc)
    assert (ck.weight_dtype, ck.activation_dtype, ck.scope, ck.warnings) == (weights, activations, "linear", ())


@pytest.mark.parametrize(
    "qc, named",
    [
        ({"quant_method": "hqq", "nbits": 4}, "'hqq'"),
        ({"bits": 4}, "None"),
        ("fp8", "a str"),
        (_ct({"num_bits": 6, "type": "float"}), "6-bit"),
        ({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}, "W4A8_AWQ"),
    ],
)
def test_unknown_quantization_warns_and_falls_back(qc, named):
    ck = _ck(qc, torch_dtype="float16")
    assert ck.weight_dtype == ck.torch_dtype == "fp16" and ck.scope == "none"
    (warning,) = ck.warnings
    assert named in warning and "fp16" in warning and "\n" not in warning


@pytest.mark.parametrize("bits", ["8", "4", float("nan"), float("inf"), True, 5, 8.5, -4, [8], {"v": 8}])
def test_gptq_awq_bits_no_engine_reads_are_refused_not_priced_as_int4(bits):
    """Issue 33, item 12: "8", 8.0 and NaN were all priced as int4 (anything not an int fell back to 4).
    8.0 is read as 8 (test_quantization_configs); a string, NaN, a boolean or another width is refused,
    naming the file and the key, as vLLM's GPTQConfig refuses it ('only 2/3/4/8-bit ... is supported')."""
    base = {k: v for k, v in raw("llama-3.1-8b").items()} | {
        "quantization_config": {"quant_method": "gptq", "bits": bits}
    }
    with pytest.raises(
        CatalogError,
        match=r"^my/config.json: quantization_config.bits .*: expected the number of bits "
        r"per weight, one of 2, 3, 4, 8 \(as vLLM and transformers read GPTQ / AWQ\)$",
    ):
        config_from_dict(base, name="q", where="my/config.json")


def test_int2_and_int3_weights_are_a_quarter_and_three_eighths_of_a_byte():
    from shardbudget.dtypes import dtype_bytes

    assert (dtype_bytes("int2"), dtype_bytes("int3"), dtype_bytes("int4")) == (0.25, 0.375, 0.5)


def test_torch_dtype_spellings():
    assert _ck(torch_dtype="float16").torch_dtype == "fp16"
    assert _ck(dtype="bfloat16").torch_dtype == "bf16"  # newer transformers write "dtype"
    assert _ck().torch_dtype == "bf16" and _ck().warnings == ()
    odd = _ck(torch_dtype="float8")
    assert odd.torch_dtype == "bf16" and "float8" in odd.warnings[0]


# ---------------------------------------------------------------------------------------------
# default_precision: what the GEMMs run in on each GPU
# ---------------------------------------------------------------------------------------------

GPUS = load_catalog().gpus


def test_fp8_checkpoint_on_hopper_runs_w8a8_with_auto_kv():
    p, notes = default_precision(load_model("deepseek-v3"), GPUS["h200"])
    assert (p.weights, p.expert_dtype, p.head_dtype, p.activations, p.kv_dtype, p.compute_dtype) == (
        "fp8",
        "fp8",
        "bf16",
        "bf16",
        "bf16",
        "fp8",
    )
    # one FP32 weight_scale_inv per 128 x 128 block: 4 / 16384 bytes per weight
    assert p == Precision(weights="fp8", head_weights="bf16", weight_scale_bytes=4 / 128**2) and p.uses_fp8_gemms
    assert any("KV cache auto: bf16" in n for n in notes)


def test_fp8_on_a100_is_weight_only_and_says_so():
    p, notes = default_precision(load_model("deepseek-v3"), GPUS["a100-sxm"])
    assert p.weights == "fp8" and p.compute_dtype == "bf16" and not p.uses_fp8_gemms
    assert any("no FP8 tensor cores" in n and "weight-only" in n for n in notes)
    p, notes = default_precision(load_model("llama-3.1-8b"), GPUS["a100-pcie"], dtype_override="fp8")
    assert p.weights == p.head_dtype == "fp8" and p.compute_dtype == "bf16"


def test_mxfp4_experts_weight_only_on_hopper_fp4_on_blackwell():
    cfg = load_model("gpt-oss-120b")
    hopper, notes = default_precision(cfg, GPUS["h100-sxm"])
    assert (hopper.weights, hopper.expert_dtype, hopper.head_dtype, hopper.compute_dtype) == (
        "bf16",
        "mxfp4",
        "bf16",
        "bf16",
    )
    assert any("no FP4 tensor cores" in n for n in notes)
    blackwell, notes = default_precision(cfg, GPUS["b200"])
    assert blackwell.compute_dtype == "mxfp4" and blackwell.uses_fp4_gemms  # at the dense FP4 peak
    assert any("dense FP4 peak" in n for n in notes)


def test_overrides():
    cfg = load_model("deepseek-v3")
    p, notes = default_precision(cfg, GPUS["h100-sxm"], dtype_override="bf16", kv_override="fp8")
    assert (p.weights, p.expert_dtype, p.head_dtype, p.kv_dtype, p.compute_dtype) == ("bf16",) * 3 + ("fp8", "bf16")
    assert any("--dtype bf16" in n for n in notes)
    p, notes = default_precision(load_model("llama-3.1-8b"), GPUS["h100-sxm"], kv_override="auto")
    assert p == Precision() and notes == (
        "KV cache auto: bf16, the activation dtype (the engines' KV-cache dtype 'auto')",
    )


def test_int4_checkpoint_is_weight_only_everywhere():
    cfg = config_from_dict(
        {**raw("llama-3.1-70b"), "quantization_config": {"quant_method": "awq", "bits": 4}}, name="awq"
    )
    for gpu in ("a100-sxm", "h100-sxm", "b200"):
        p, _ = default_precision(cfg, GPUS[gpu])
        assert (p.weights, p.head_dtype, p.compute_dtype) == ("int4", "bf16", "bf16")


def test_unknown_quantization_warning_reaches_the_notes():
    cfg = config_from_dict({**raw("llama-3.1-8b"), "quantization_config": {"quant_method": "hqq"}}, name="hqq")
    p, notes = default_precision(cfg, GPUS["h100-sxm"])
    assert p.weights == "bf16" and "'hqq'" in notes[0]


def test_per_tensor_dtypes_reach_the_step():
    cfg = load_model("gpt-oss-120b")
    p, _ = default_precision(cfg, GPUS["h100-sxm"])
    work = step_work(cfg, Plan(1), batch=1.0, context=1000.0, precision=p)
    up = next(o for _, o in work.ops if o.name == "expert_gate_up")
    qkv = next(o for _, o in work.ops if o.name == "qkv_proj")
    # batch 1 reads 4 experts' gate/up weights (+ biases) at 4.25 bits; q/k/v stay bf16 (+ bias)
    assert up.bytes == pytest.approx(4 * (2880 * 5760 + 5760) * 4.25 / 8 + (4 * 2880 + 4 * 5760) * 2)
    assert qkv.bytes == (2880 * 5120 + 5120) * 2 + (2880 + 5120) * 2


def test_gpt_oss_120b_fits_one_h100_in_its_own_precision():
    # OpenAI: gpt-oss-120b "runs efficiently on a single 80 GB GPU" -- in MXFP4, not in bf16.
    cfg, h100 = load_model("gpt-oss-120b"), GPUS["h100-sxm"]
    usable = 0.9 * h100.memory_bytes  # vLLM's default gpu_memory_utilization
    own, _ = default_precision(cfg, h100)
    bf16, _ = default_precision(cfg, h100, dtype_override="bf16")
    fit = {
        name: memory_bytes_per_gpu(cfg, tp=1, batch=1, context=8192, workspace_bytes=2e9, **p.memory_dtypes)
        for name, p in (("own", own), ("bf16", bf16))
    }
    assert fit["own"] < usable < fit["bf16"]
    kv_per_token_layer = 2 * 8 * 64 * 2  # K and V of 8 KV heads x 64, bf16
    kv = kv_per_token_layer * (18 * 128 + 18 * 8192)  # 18 sliding layers keep 128 tokens
    assert fit["own"] == pytest.approx(65.19e9 + kv + 2e9, rel=1e-4)
