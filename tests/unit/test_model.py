"""model: HF config reader, parameter accounting, per-GPU work and collectives.

Every number here can be checked by hand or against the figure its vendor publishes.
"""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardbudget.errors import CatalogError, PlanError, UnknownNameError
from shardbudget.dtypes import dtype_bytes
from shardbudget.model.comms import embedding_collectives, lm_head_collectives
from shardbudget.model.layers import LayerKind
from shardbudget.model import (
    CollectiveCall,
    active_params,
    collectives_for_layer,
    config_from_dict,
    embedding_ops,
    expected_experts_hit,
    kv_bytes_per_token,
    kv_cache_bytes_per_gpu,
    layer_kinds,
    layer_work,
    list_models,
    lm_head_ops,
    load_model,
    pp_collectives,
    total_params,
    weight_bytes_per_gpu,
)

REQUIRED = [
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "qwen3-32b",
    "qwen2.5-72b",
    "mixtral-8x7b",
    "mixtral-8x22b",
    "deepseek-v3",
]


def load_raw(name: str) -> dict:
    """The catalog JSON of a model, as a dict (to derive broken variants from)."""
    from importlib import resources

    return json.loads((resources.files("shardbudget") / "catalog" / "models" / f"{name}.json").read_text())


def write_json(tmp_path, obj, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(obj))
    return path


# ---------------------------------------------------------------------------------------------
# Catalog
# ---------------------------------------------------------------------------------------------


def test_catalog_ships_required_models_with_sources():
    assert set(REQUIRED) | set(NEW) <= set(list_models())
    for name in list_models():
        source = load_raw(name)["_source"]
        assert source.startswith("https://huggingface.co/") and source.endswith("/config.json"), name


NEW = ["gpt-oss-120b", "gemma-3-27b", "qwen3-235b-a22b", "llama-4-scout", "mistral-7b-v0.1"]


@pytest.mark.parametrize("name", REQUIRED + NEW + ["llama-3.2-1b", "qwen3-30b-a3b"])
def test_every_catalog_model_loads(name):
    cfg = load_model(name)
    assert cfg.name == name and cfg.num_layers > 0


def test_defaults_are_filled_visibly():
    cfg = load_model("llama-3.1-8b")  # no head_dim in the file: hidden / heads
    assert cfg.head_dim == 4096 // 32 == 128
    raw = {k: v for k, v in load_raw("llama-3.1-8b").items() if k != "num_key_value_heads"}
    assert config_from_dict(raw, name="mha").num_kv_heads == 32  # absent -> MHA


# ---------------------------------------------------------------------------------------------
# Parameter accounting vs published totals
# ---------------------------------------------------------------------------------------------

# (model, published total, published active per token, whether that vendor counts the embedding)
PUBLISHED = [
    ("llama-3.1-8b", 8.03e9, None, True),  # Meta model card: 8B; HF safetensors 8.03B
    ("llama-3.1-70b", 70.6e9, None, True),  # HF safetensors: 70.6B
    ("llama-3.1-405b", 405.9e9, None, True),  # HF safetensors: 406B (405.9)
    ("qwen2.5-72b", 72.7e9, None, True),  # Qwen2.5-72B model card: 72.7B
    ("qwen3-32b", 32.8e9, None, True),  # Qwen3-32B model card: 32.8B
    ("mixtral-8x7b", 46.7e9, 12.9e9, True),  # Mistral: 46.7B total, 12.9B active per token
    ("mixtral-8x22b", 141e9, 39e9, True),  # Mistral: 141B total, 39B active
    ("deepseek-v3", 671e9, 37e9, False),  # DeepSeek-V3 report: 671B total, 37B activated
    ("gpt-oss-120b", 116.83e9, 5.13e9, False),  # gpt-oss model card (arXiv 2508.10925) Table 1: 116.83B / 5.13B
    ("qwen3-235b-a22b", 235e9, 22e9, True),  # Qwen3-235B-A22B card: 235B total, 22B activated
    ("llama-4-scout", 109e9, 17e9, True),  # Meta: 17B active, 109B total (with its vision tower, not counted: -1.1 %)
    ("gemma-3-27b", 27.016e9, None, True),  # Gemma 3 report Table 1: 1,416M embedding + 25,600M non-embedding
    ("mistral-7b-v0.1", 7.24e9, None, True),  # HF safetensors: 7.24B
]


@pytest.mark.parametrize("name, total, active, with_embedding", PUBLISHED)
def test_parameter_totals_match_published(name, total, active, with_embedding):
    cfg = load_model(name)
    assert total_params(cfg) == pytest.approx(total, rel=0.015)
    if active is not None:
        assert active_params(cfg, include_embedding=with_embedding) == pytest.approx(active, rel=0.015)


def test_exact_llama_counts_match_the_checkpoints():
    # Sums of the tensor shapes in the published safetensors (HF "model size").
    assert total_params(load_model("llama-3.1-8b")) == 8_030_261_248
    assert total_params(load_model("llama-3.1-70b")) == 70_553_706_496
    assert total_params(load_model("llama-3.2-1b")) == 1_235_814_400  # tied: matrix counted once


def test_deepseek_active_matches_its_weight_doc():
    # DeepSeek-V3 README_WEIGHTS.md: 36.6B activated in the main model (output head included,
    # embedding and MTP excluded).
    active = active_params(load_model("deepseek-v3"), include_embedding=False)
    assert active == pytest.approx(36.6e9, rel=0.005)


def test_new_models_non_embedding_counts():
    # Gemma 3 report Table 1: 25,600M non-embedding parameters in the 27B text decoder.
    gemma = load_model("gemma-3-27b")
    assert total_params(gemma) - gemma.vocab_size * gemma.hidden_size == pytest.approx(25_600e6, rel=0.001)
    # Qwen3-235B-A22B card: 234B non-embedding (embedding and LM head: 2 x 151936 x 4096 = 1.24B).
    qwen = load_model("qwen3-235b-a22b")
    assert total_params(qwen) - 2 * qwen.vocab_size * qwen.hidden_size == pytest.approx(234e9, rel=0.005)
    # Mistral-7B v0.1: model.safetensors.index.json total_size 14,483,464,192 bytes of bf16
    assert total_params(load_model("mistral-7b-v0.1")) == 7_241_732_096


def test_qwen3_moe_counts():
    # Qwen3-30B-A3B card: 30.5B total, 29.9B non-embedding, "3.3B activated" (two digits).
    cfg = load_model("qwen3-30b-a3b")
    embedding = 2 * cfg.vocab_size * cfg.hidden_size
    assert total_params(cfg) == pytest.approx(30.5e9, rel=0.005)
    assert total_params(cfg) - embedding == pytest.approx(29.9e9, rel=0.005)
    assert active_params(cfg) == pytest.approx(3.3e9, rel=0.02)


def test_dense_model_is_fully_active():
    cfg = load_model("qwen3-32b")
    assert active_params(cfg) == total_params(cfg)


def test_layer_kinds():
    # first_k_dense_replace
    assert layer_kinds(load_model("deepseek-v3")) == {LayerKind("dense"): 3, LayerKind("moe"): 58}
    assert layer_kinds(load_model("mixtral-8x7b")) == {LayerKind("moe"): 32}
    assert layer_kinds(load_model("llama-3.1-8b")) == {LayerKind("dense"): 32}


# ---------------------------------------------------------------------------------------------
# dtypes and KV bytes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, size", [("bf16", 2), ("fp16", 2), ("fp8", 1), ("int8", 1), ("int4", 0.5), ("fp32", 4)])
def test_dtype_bytes(name, size):
    assert dtype_bytes(name) == size


def test_unknown_dtype():
    with pytest.raises(UnknownNameError, match="fp6"):
        dtype_bytes("fp6")


def test_kv_bytes_per_token_by_hand():
    assert kv_bytes_per_token(load_model("llama-3.1-70b"), "bf16") == 2 * 80 * 8 * 128 * 2 == 327_680
    assert kv_bytes_per_token(load_model("llama-3.1-8b"), "fp8") == 2 * 32 * 8 * 128 * 1
    # MLA caches one latent per token per layer: kv_lora_rank + qk_rope_head_dim
    assert kv_bytes_per_token(load_model("deepseek-v3"), "bf16") == 61 * (512 + 64) * 2 == 70_272


def test_kv_cache_per_gpu_replicates_heads_beyond_kv_heads():
    cfg = load_model("llama-3.1-70b")
    at_tp8 = kv_cache_bytes_per_gpu(cfg, batch=4, context=1000, tp=8)
    assert at_tp8 == 4 * 1000 * 80 * 2 * 1 * 128 * 2  # one KV head per rank
    assert kv_cache_bytes_per_gpu(cfg, batch=4, context=1000, tp=16) == at_tp8  # replicated, not split
    assert kv_cache_bytes_per_gpu(cfg, batch=4, context=1000, tp=8, pp=2) == at_tp8 / 2


def test_mla_cache_is_replicated_on_every_tp_rank():
    cfg = load_model("deepseek-v3")
    one = kv_cache_bytes_per_gpu(cfg, batch=1, context=4096, tp=1)
    assert kv_cache_bytes_per_gpu(cfg, batch=1, context=4096, tp=8) == one == 4096 * 70_272


# ---------------------------------------------------------------------------------------------
# Work per GPU
# ---------------------------------------------------------------------------------------------


def flops(ops, kind=None):
    return sum(op.flops for op in ops if kind is None or op.kind == kind)


def test_one_llama_8b_layer_gemm_flops_by_hand():
    ops = layer_work(load_model("llama-3.1-8b"), 0, tokens=1, context=0, tp=1)
    # QKV 4096 x (32 + 2*8)*128, O 4096 x 4096, gate+up+down 3 x 4096 x 14336; 2 FLOPs per weight.
    assert flops(ops, "gemm") == 2 * (4096 * 6144 + 4096 * 4096 + 3 * 4096 * 14336) == 436_207_616


def test_llama_8b_decode_flops_are_twice_the_active_params():
    cfg = load_model("llama-3.1-8b")
    per_layer = flops(layer_work(cfg, 0, tokens=1, context=1, tp=1))
    head_ops = lm_head_ops(cfg, tokens=1, tp=1)
    total = cfg.num_layers * per_layer + flops(head_ops)
    # Every weight but the embedding lookup does one multiply-add per token.
    assert total == pytest.approx(2 * active_params(cfg, include_embedding=False), rel=0.01)


def test_batch_1_decode_reads_every_weight_once():
    cfg = load_model("llama-3.1-8b")
    step = cfg.num_layers * sum(op.bytes for op in layer_work(cfg, 0, tokens=1, context=1, tp=1))
    head_ops = lm_head_ops(cfg, tokens=1, tp=1)
    step += sum(op.bytes for op in head_ops)
    weights = 2 * (total_params(cfg) - cfg.vocab_size * cfg.hidden_size)  # embedding: one row
    assert step == pytest.approx(weights, rel=0.01)


def test_tp_splits_gemm_flops():
    cfg = load_model("llama-3.1-70b")
    one = flops(layer_work(cfg, 0, tokens=8, context=100, tp=1), "gemm")
    assert flops(layer_work(cfg, 0, tokens=8, context=100, tp=8), "gemm") == pytest.approx(one / 8)


def test_decode_attention_reads_the_cache():
    cfg = load_model("llama-3.1-70b")
    ops = {op.name: op for op in layer_work(cfg, 0, tokens=4, context=1000, tp=8)}
    # 4 sequences x 1000 cached tokens x (K and V of 1 head x 128) x 2 bytes, plus Q/O/new K,V
    cache = 4 * 1000 * 2 * 1 * 128 * 2
    io = 4 * 8 * 128 * 2 * 2 + 4 * 2 * 128 * 2
    assert ops["attention"].bytes == cache + io
    assert ops["attention"].flops == 4 * 4 * 8 * 128 * 1000  # QK^T and PV, 8 local heads


def test_replicated_kv_heads_are_in_the_bytes():
    # Llama-3.1-70B has 8 KV heads: at tp=16 each KV head lives on two ranks.
    cfg = load_model("llama-3.1-70b")
    ops = {op.name: op for op in layer_work(cfg, 0, tokens=1, context=1000, tp=16)}
    qkv_width = (64 // 16 + 2 * 1) * 128  # 4 query heads + one K and one V head per rank
    assert ops["qkv_proj"].bytes == 8192 * qkv_width * 2 + (8192 + qkv_width) * 2
    cache = 1000 * 2 * 1 * 128 * 2  # the whole cache of that one KV head, not half of it
    io = 4 * 128 * 2 * 2 + 2 * 128 * 2  # read Q, write O, append the new K and V
    assert ops["attention"].bytes == cache + io


def test_prefill_counts_the_causal_half():
    cfg = load_model("llama-3.1-8b")
    prompt = 1024
    pre = {op.name: op for op in layer_work(cfg, 0, tokens=prompt, context=prompt, tp=1, phase="prefill")}
    # sum over query i of (i + 1) keys = P (P + 1) / 2, 2 * 2 * head_dim FLOPs per pair per head
    assert pre["attention"].flops == 4 * 32 * 128 * prompt * (prompt + 1) / 2


def test_int4_weights_are_half_of_int8():
    cfg = load_model("llama-3.1-70b")
    int8 = weight_bytes_per_gpu(cfg, tp=4, weight_dtype="int8")
    int4 = weight_bytes_per_gpu(cfg, tp=4, weight_dtype="int4")
    assert int4 > 0 and int4 == pytest.approx(int8 / 2)
    gemm8 = layer_work(cfg, 0, tokens=1, context=0, tp=1, weight_dtype="int8")[1]
    gemm4 = layer_work(cfg, 0, tokens=1, context=0, tp=1, weight_dtype="int4")[1]
    assert gemm4.name == "qkv_proj" and 0 < gemm4.bytes < gemm8.bytes


def test_weight_bytes_per_gpu():
    cfg = load_model("llama-3.1-8b")
    assert weight_bytes_per_gpu(cfg, tp=1) == 2 * total_params(cfg)
    assert weight_bytes_per_gpu(cfg, tp=2) == pytest.approx(total_params(cfg), rel=0.001)
    tied = load_model("llama-3.2-1b")
    assert weight_bytes_per_gpu(tied, tp=1) == 2 * total_params(tied)
    # pp=2: 8 layers per stage; the first holds the embedding, the last the LM head + norm
    big = load_model("llama-3.1-405b")
    halves = weight_bytes_per_gpu(big, tp=8, pp=2)
    assert weight_bytes_per_gpu(big, tp=8) / 2 < halves < weight_bytes_per_gpu(big, tp=8) / 2 * 1.01


def test_expert_parallel_weights():
    cfg = load_model("deepseek-v3")
    ep8 = weight_bytes_per_gpu(cfg, tp=8, ep=8, weight_dtype="fp8")
    assert ep8 == pytest.approx(total_params(cfg) / 8, rel=0.05)  # experts dominate, split 8 ways


# ---------------------------------------------------------------------------------------------
# MoE
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, k", [("mixtral-8x7b", 2), ("deepseek-v3", 8), ("qwen3-30b-a3b", 8)])
def test_batch_1_hits_exactly_k_experts(name, k):
    cfg = load_model(name)
    assert expected_experts_hit(cfg, 1) == pytest.approx(k)
    assert expected_experts_hit(cfg, 1, ep=2) == pytest.approx(k / 2)
    assert expected_experts_hit(cfg, 100_000) == pytest.approx(cfg.num_experts)


def test_moe_decode_reads_only_the_hit_experts():
    cfg = load_model("mixtral-8x7b")
    ops = {op.name: op for op in layer_work(cfg, 0, tokens=1, context=0, tp=1)}
    expert_weight_bytes = 2 * 3 * 4096 * 14336 * 2  # k = 2 experts, gate/up/down, bf16
    read = ops["expert_gate_up"].bytes + ops["expert_down"].bytes
    assert read == pytest.approx(expert_weight_bytes, rel=0.001)
    assert ops["expert_gate_up"].flops + ops["expert_down"].flops == 2 * 2 * 3 * 4096 * 14336


def test_deepseek_dense_and_moe_layers_differ():
    cfg = load_model("deepseek-v3")
    dense = {op.name for op in layer_work(cfg, 0, tokens=1, context=10, tp=8)}
    moe = {op.name for op in layer_work(cfg, 3, tokens=1, context=10, tp=8)}
    assert "mlp_gate_up" in dense and "expert_gate_up" not in dense
    assert {"router", "expert_gate_up", "shared_expert_gate_up"} <= moe


def test_mla_decode_uses_the_latent_cache():
    cfg = load_model("deepseek-v3")
    ops = {op.name: op for op in layer_work(cfg, 3, tokens=2, context=1000, tp=8)}
    cache = 2 * 1000 * (512 + 64) * 2  # each sequence reads its own latents, replicated per rank
    assert ops["attention"].bytes > cache
    assert ops["attention"].bytes < cache * 1.05
    assert {"q_absorb", "v_up"} <= set(ops)


# ---------------------------------------------------------------------------------------------
# Collectives
# ---------------------------------------------------------------------------------------------


def test_tp_all_reduces_per_layer():
    cfg = load_model("llama-3.1-70b")
    calls = collectives_for_layer(cfg, 0, tokens=16, tp=8)
    assert calls == [CollectiveCall("all-reduce", 16 * 8192 * 2, "tp", 2)]  # after O and after down
    assert collectives_for_layer(cfg, 0, tokens=16, tp=1) == []


def test_sequence_parallel_splits_each_all_reduce():
    cfg = load_model("llama-3.1-70b")
    calls = collectives_for_layer(cfg, 0, tokens=16, tp=8, sequence_parallel=True)
    assert calls == [
        CollectiveCall("reduce-scatter", 16 * 8192 * 2, "tp", 2),
        CollectiveCall("all-gather", 16 * 8192 * 2, "tp", 2),
    ]


def test_expert_parallel_inside_the_tp_group_needs_only_all_reduces():
    """TP8 with EP8 and tensor-parallel attention: every rank holds every token, so the routed and
    shared experts' outputs are summed by one all-reduce after attention's, as vLLM's FusedMoE and
    TensorRT-LLM's EP8/TP8 run it; only data-parallel attention (or ep > tp) dispatches by all-to-all."""
    cfg = load_model("deepseek-v3")
    hidden = 64 * 7168 * 2
    assert collectives_for_layer(cfg, 10, tokens=64, tp=8, ep=8) == [CollectiveCall("all-reduce", hidden, "tp", 2)]
    assert collectives_for_layer(cfg, 10, tokens=64, tp=8, ep=8) == collectives_for_layer(cfg, 10, tokens=64, tp=8)
    dp = collectives_for_layer(cfg, 10, tokens=64, tp=8, ep=8, attn_dp=8)
    assert [c.op for c in dp] == ["all-to-all"]


def test_expert_parallel_all_to_all():
    cfg = load_model("deepseek-v3")
    calls = collectives_for_layer(cfg, 10, tokens=64, tp=1, ep=8, act_dtype="fp8")
    assert calls == [CollectiveCall("all-to-all", 64 * 8 * 7168 * 1 / 8, "ep", 2)]
    with_tp = collectives_for_layer(cfg, 10, tokens=64, tp=8, ep=8)
    assert CollectiveCall("all-reduce", 64 * 7168 * 2, "tp", 2) in with_tp  # O + shared experts
    # the three dense first layers keep the plain tp all-reduces
    assert collectives_for_layer(cfg, 0, tokens=64, tp=8, ep=8) == [
        CollectiveCall("all-reduce", 64 * 7168 * 2, "tp", 2)
    ]


def test_lm_head_embedding_and_pipeline_collectives():
    cfg = load_model("llama-3.1-8b")
    assert lm_head_collectives(cfg, tokens=4, tp=4) == [CollectiveCall("all-gather", 4 * 128256 * 2, "tp", 1)]
    assert lm_head_ops(cfg, tokens=4, tp=4)[-1].flops == 2 * 4 * 4096 * 128256 / 4
    assert embedding_collectives(cfg, tokens=4, tp=4) == [CollectiveCall("all-reduce", 4 * 4096 * 2, "tp", 1)]
    assert embedding_ops(cfg, tokens=4, tp=4)[0].bytes == 4 * 4096 * 2 / 4 + 4 * 4096 * 2
    assert pp_collectives(cfg, tokens=4, pp=4) == [CollectiveCall("send/recv", 4 * 4096 * 2, "pp", 3)]


# ---------------------------------------------------------------------------------------------
# Plan errors quote the numbers
# ---------------------------------------------------------------------------------------------


def test_tp_must_divide_heads():
    with pytest.raises(PlanError, match=r"tp \(6\) must divide num_attention_heads \(64\)"):
        layer_work(load_model("llama-3.1-70b"), 0, tokens=1, context=1, tp=6)


def test_tp_must_divide_or_be_a_multiple_of_kv_heads():
    # Mixtral-8x22B: 48 query heads, 8 KV heads; tp=12 divides 48 but neither divides nor is a
    # multiple of 8.
    with pytest.raises(PlanError, match=r"tp \(12\).*num_key_value_heads \(8\)"):
        weight_bytes_per_gpu(load_model("mixtral-8x22b"), tp=12)


@pytest.mark.parametrize(
    "call",
    [
        lambda: layer_work(load_model("llama-3.1-8b"), 0, tokens=1, context=1, tp=1, ep=2),
        lambda: layer_work(load_model("mixtral-8x7b"), 0, tokens=1, context=1, tp=1, ep=3),
        lambda: layer_work(load_model("llama-3.1-8b"), 32, tokens=1, context=1, tp=1),
        lambda: layer_work(load_model("llama-3.1-8b"), "moe", tokens=1, context=1, tp=1),
        lambda: layer_work(load_model("llama-3.1-8b"), 0, tokens=0, context=1, tp=1),
        lambda: layer_work(load_model("llama-3.1-8b"), 0, tokens=1, context=1, tp=0),
        lambda: layer_work(load_model("llama-3.1-8b"), 0, tokens=1, context=1, tp=1, phase="train"),
        lambda: weight_bytes_per_gpu(load_model("llama-3.2-1b"), tp=1, pp=17),
        lambda: layer_work(load_model("llama-3.1-8b"), 0, tokens=10**400, context=1, tp=1),
        lambda: layer_work(load_model("llama-3.1-8b"), 0, tokens=float("nan"), context=1, tp=1),
    ],
)
def test_impossible_plans_raise_plan_error(call):
    with pytest.raises(PlanError):
        call()


# ---------------------------------------------------------------------------------------------
# Loading and bad configs
# ---------------------------------------------------------------------------------------------


def test_load_by_folder_and_by_file(tmp_path):
    write_json(tmp_path, load_raw("qwen3-32b"))
    by_folder, by_file = load_model(tmp_path), load_model(str(tmp_path / "config.json"))
    assert by_folder.hidden_size == by_file.hidden_size == 5120
    assert by_folder.name == tmp_path.name


def test_unknown_model_suggests_the_closest():
    with pytest.raises(UnknownNameError, match="llama-3.1-8b"):
        load_model("llama-3.1-8")


def test_missing_file_is_a_catalog_error(tmp_path):
    with pytest.raises(CatalogError, match="no model config"):
        load_model(str(tmp_path / "nope.json"))
    with pytest.raises(CatalogError, match="cannot read"):
        load_model(tmp_path)  # a folder without config.json


def test_missing_field_is_named(tmp_path):
    raw = load_raw("llama-3.1-8b")
    del raw["num_hidden_layers"]
    with pytest.raises(CatalogError, match="config.json is missing 'num_hidden_layers'"):
        load_model(write_json(tmp_path, raw))


def _variant(base: str, **changes):
    raw = load_raw(base)
    for key, value in changes.items():
        if value is _DELETE:
            raw.pop(key, None)
        else:
            raw[key] = value
    return raw


_DELETE = object()

BAD = [
    ("zero layers", _variant("llama-3.1-8b", num_hidden_layers=0), "num_hidden_layers"),
    ("negative vocab", _variant("llama-3.1-8b", vocab_size=-5), "vocab_size"),
    ("float where int", _variant("llama-3.1-8b", hidden_size=4096.5), "hidden_size"),
    ("string where int", _variant("llama-3.1-8b", hidden_size="4096"), "hidden_size"),
    ("bool as number", _variant("llama-3.1-8b", num_attention_heads=True), "num_attention_heads"),
    ("huge int", _variant("llama-3.1-8b", hidden_size=10**40), "hidden_size"),
    ("hidden not divisible", _variant("llama-3.1-8b", hidden_size=4100), "hidden_size"),
    ("kv does not divide heads", _variant("llama-3.1-8b", num_key_value_heads=5), "num_key_value_heads"),
    ("non-bool tie", _variant("llama-3.1-8b", tie_word_embeddings=1), "tie_word_embeddings"),
    ("encoder-decoder", {**_variant("llama-3.1-8b", model_type="t5"), "is_encoder_decoder": True}, "encoder-decoder"),
    ("unsupported family", _variant("llama-3.1-8b", model_type="bert", architectures=["BertModel"]), "model_type"),
    ("no family", _variant("llama-3.1-8b", model_type=_DELETE, architectures=_DELETE), "model_type"),
    ("bad architectures", _variant("llama-3.1-8b", model_type=_DELETE, architectures="Llama"), "architectures"),
    ("nested architectures", _variant("llama-3.1-8b", model_type=_DELETE, architectures=[["x"]]), "architectures"),
    ("k > experts", _variant("mixtral-8x7b", num_experts_per_tok=9), "num_experts_per_tok"),
    ("bad mlp_only_layers", _variant("qwen3-30b-a3b", mlp_only_layers=[0, 48]), "mlp_only_layers"),
    ("first dense > layers", _variant("deepseek-v3", first_k_dense_replace=62), "first_k_dense_replace"),
    ("missing MLA rank", _variant("deepseek-v3", kv_lora_rank=_DELETE), "kv_lora_rank"),
    ("list", [1, 2, 3], "JSON object"),
]


@pytest.mark.parametrize("label, raw, field", BAD, ids=[b[0] for b in BAD])
def test_bad_configs_raise_catalog_error_naming_the_field(tmp_path, label, raw, field):
    with pytest.raises(CatalogError, match=field) as info:
        load_model(write_json(tmp_path, raw))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "text", ['{"hidden_size": NaN}', '{"hidden_size": Infinity}', "", "{", "[" * 100_000, "1" * 10_000]
)
def test_malformed_json_raises_catalog_error(tmp_path, text):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(CatalogError):
        load_model(path)


def test_nan_in_a_required_field(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(load_raw("llama-3.1-8b")).replace('"hidden_size": 4096', '"hidden_size": NaN'))
    with pytest.raises(CatalogError, match="hidden_size.*nan"):
        load_model(path)


def test_binary_garbage(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(CatalogError, match="not UTF-8"):
        load_model(path)


# Fuzzing: whatever the file holds, only the project's own errors come out.

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)
FIELDS = [
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "tie_word_embeddings",
    "model_type",
    "architectures",
    "num_local_experts",
    "num_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "n_routed_experts",
    "first_k_dense_replace",
    "moe_layer_freq",
    "mlp_only_layers",
    "decoder_sparse_step",
    "kv_lora_rank",
    "q_lora_rank",
    "max_position_embeddings",
    "shared_expert_intermediate_size",
    "n_shared_experts",
]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _load_only_own_errors(path):
    try:
        cfg = load_model(path)
    except (CatalogError, UnknownNameError):
        return
    # what loads is usable at tp=1
    assert math.isfinite(total_params(cfg)) and weight_bytes_per_gpu(cfg, tp=1) > 0
    assert all(math.isfinite(op.bytes) for op in layer_work(cfg, 0, tokens=1, context=1, tp=1))
    assert collectives_for_layer(cfg, 0, tokens=1, tp=1) == []


@FUZZ
@given(value=json_values)
def test_fuzz_random_json(tmp_path, value):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(value))
    _load_only_own_errors(path)


@FUZZ
@given(data=st.binary(max_size=300))
def test_fuzz_random_bytes(tmp_path, data):
    path = tmp_path / "config.json"
    path.write_bytes(data)
    _load_only_own_errors(path)


@FUZZ
@given(
    base=st.sampled_from(["llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b"]),
    changes=st.dictionaries(st.sampled_from(FIELDS), json_values | st.integers(-3, 300), max_size=3),
)
def test_fuzz_mutated_real_configs(tmp_path, base, changes):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**load_raw(base), **changes}))
    _load_only_own_errors(path)


@FUZZ
@given(name=st.text(max_size=40))
def test_fuzz_names(name):
    try:
        load_model(name)
    except (CatalogError, UnknownNameError):
        pass
