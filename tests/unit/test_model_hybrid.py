"""The 2026 model families: hybrid linear attention (Gated DeltaNet), state-space layers (Mamba-2),
sparse attention (DSA), per-layer head geometries, multimodal wrappers, and the MTP layer count."""

from __future__ import annotations

import pytest

from shardbudget.model import config_from_dict, load_model


def test_mtp_layers_are_read_under_either_spelling():
    # DeepSeek-V3 config.json: "num_nextn_predict_layers": 1; Qwen3.5 text_config: "mtp_num_hidden_layers".
    assert load_model("deepseek-v3").mtp_layers == 1
    assert load_model("llama-3.1-8b").mtp_layers == 0
    raw = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 100,
        "mtp_num_hidden_layers": 3,
    }
    assert config_from_dict(raw, name="t").mtp_layers == 3
    with pytest.raises(Exception, match="num_nextn_predict_layers"):
        config_from_dict({**raw, "num_nextn_predict_layers": -1}, name="t")


import json  # noqa: E402
from importlib import resources  # noqa: E402

import numpy as np  # noqa: E402

from shardbudget.errors import CatalogError, PlanError  # noqa: E402
from shardbudget.model import (  # noqa: E402
    Plan,
    active_params,
    collectives_for_layer,
    kv_bytes_per_token,
    kv_cache_bytes_per_gpu,
    layer_kinds,
    layer_work,
    total_params,
)
from shardbudget.model.layers import LayerKind  # noqa: E402
from shardbudget.model.params import state_bytes_per_sequence  # noqa: E402
from shardbudget.decide.request import request  # noqa: E402

NEW = [
    "deepseek-v3.2",
    "kimi-k2.5",
    "qwen3.5-27b",
    "qwen3.5-397b-a17b",
    "minimax-m2.5",
    "glm-5",
    "gemma-4-26b-a4b",
    "nemotron-3-nano-30b-a3b",
    "mimo-v2-flash",
]


def _raw(name: str) -> dict:
    return json.loads((resources.files("shardbudget") / "catalog" / "models" / f"{name}.json").read_text())


# (model, published total, tolerance, published active or None, with embedding, source)
PUBLISHED = [
    # DeepSeek-V3.2 card: 685B = DeepSeek-V3's 671B main model + 14B MTP module; V3.2 adds the
    # indexer (61 x 14.0M = 0.85B), so the main model is ~671.9B.
    ("deepseek-v3.2", 671.9e9, 0.01, None, True),
    # NVIDIA technical blog "Build with Kimi K2.5" Table 1: 32.86B active; Kimi K2 report
    # (arXiv 2507.20534): 1.04T total. Our 1.026T is 1.3 % under it: the figure is rounded up.
    ("kimi-k2.5", 1.04e12, 0.015, 32.86e9, True),
    ("qwen3.5-27b", 27e9, 0.01, None, True),  # Qwen3.5-27B card: 27B (text decoder)
    ("qwen3.5-397b-a17b", 397e9, 0.01, 17e9, True),  # card: 397B total, 17B activated (rounded: 2 %)
    ("minimax-m2.5", 229e9, 0.01, None, True),  # MiniMax-M2 card: 229B total
    ("glm-5", 744e9, 0.01, 40e9, False),  # GLM-5 card: 744B total, 40B active
    ("gemma-4-26b-a4b", 25.2e9, 0.01, 3.8e9, True),  # Gemma 4 card: 25.2B total, 3.8B active
    ("nemotron-3-nano-30b-a3b", 31.6e9, 0.01, 3.2e9, False),  # NVIDIA card: 31.6B total, 3.2B active w/o embeddings
    ("mimo-v2-flash", 309e9, 0.01, 15e9, True),  # MiMo-V2-Flash card: 309B total, 15B active (rounded: 3 %)
]


@pytest.mark.parametrize("name, total, tol, active, with_embedding", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_parameter_totals_match_published(name, total, tol, active, with_embedding):
    cfg = load_model(name)
    assert total_params(cfg) == pytest.approx(total, rel=tol)
    if active is not None:  # published actives are rounded to two or three digits
        assert active_params(cfg, include_embedding=with_embedding) == pytest.approx(active, rel=0.035)


def test_every_new_model_ships_its_source():
    for name in NEW:
        raw = _raw(name)
        assert raw["_source"].startswith("https://huggingface.co/") and raw["_source"].endswith("/config.json")
        assert "_transcribed" in raw


def test_shipped_configs_name_a_hugging_face_revision_where_one_was_found():
    """`_commit`: a 40-hex revision of the model's repository that a public source pins, with what
    that source shows (`_commit_evidence`); MiniMax-M2.5's was not found (issue 22, part 2)."""
    import re
    from shardbudget.model import list_models

    found = {name for name in list_models() if "_commit" in _raw(name)}
    assert set(NEW) - found == {"minimax-m2.5"}
    for name in found:
        raw = _raw(name)
        assert re.fullmatch(r"[0-9a-f]{40}", raw["_commit"]) and raw["_commit_evidence"], name


# Per-token KV bytes (bf16, whole model) and per-sequence state bytes, worked by hand.
KV_BY_HAND = {
    # 16 full layers x (K + V) x 4 KV heads x 256 x 2 B; 48 GDN layers hold states instead
    "qwen3.5-27b": (
        16 * 2 * 4 * 256 * 2,
        # 48 layers x (48 value heads x 128 x 128 x 4 B fp32 state + 3 conv taps x (2 x 16 x 128 + 48 x 128) x 2 B)
        48 * (48 * 128 * 128 * 4 + 3 * (2 * 16 * 128 + 48 * 128) * 2),
    ),
    "qwen3.5-397b-a17b": (15 * 2 * 2 * 256 * 2, 45 * (64 * 128 * 128 * 4 + 3 * (2 * 16 * 128 + 64 * 128) * 2)),
    # 6 attention blocks x 2 x 2 KV heads x 128 x 2 B; 23 Mamba blocks x (64 x 64 x 128 x 4 B + 3 x (4096 + 2 x 8 x 128) x 2 B)
    "nemotron-3-nano-30b-a3b": (6 * 2 * 2 * 128 * 2, 23 * (64 * 64 * 128 * 4 + 3 * (4096 + 2 * 8 * 128) * 2)),
    # 61 layers x (512 + 64 latent x 2 B + the indexer's 128 FP8 keys + 4 B scale)
    "deepseek-v3.2": (61 * ((512 + 64) * 2 + 128 + 4), 0),
    "glm-5": (78 * ((512 + 64) * 2 + 128 + 4), 0),
    "kimi-k2.5": (61 * (512 + 64) * 2, 0),
    "minimax-m2.5": (62 * 2 * 8 * 128 * 2, 0),
    # 25 sliding layers x 2 x 8 x 256 x 2 B + 5 global layers x 2 KV heads x 512 x 2 B (K = V: one tensor)
    "gemma-4-26b-a4b": (25 * 2 * 8 * 256 * 2 + 5 * 2 * 512 * 2, 0),
    # 39 sliding layers x 8 KV heads x (192 + 128) x 2 B + 9 full layers x 4 x (192 + 128) x 2 B
    "mimo-v2-flash": (39 * 8 * 320 * 2 + 9 * 4 * 320 * 2, 0),
}


@pytest.mark.parametrize("name", sorted(KV_BY_HAND))
def test_kv_and_state_bytes_by_hand(name):
    per_token, per_sequence = KV_BY_HAND[name]
    cfg = load_model(name)
    assert kv_bytes_per_token(cfg, "bf16") == per_token
    assert state_bytes_per_sequence(cfg, "bf16") == per_sequence


def test_layouts_come_from_the_config_fields():
    kinds = {k.label: n for k, n in layer_kinds(load_model("qwen3.5-27b")).items()}
    assert kinds == {"dense linear": 48, "dense": 16}
    assert {k.label: n for k, n in layer_kinds(load_model("nemotron-3-nano-30b-a3b")).items()} == {
        "mamba": 23,
        "moe only": 23,
        "attention": 6,
    }
    assert {k.label: n for k, n in layer_kinds(load_model("mimo-v2-flash")).items()} == {
        "dense": 1,
        "moe sliding 128": 39,
        "moe": 8,
    }
    assert {k.label: n for k, n in layer_kinds(load_model("deepseek-v3.2")).items()} == {
        "dense sparse 2048": 3,
        "moe sparse 2048": 58,
    }
    assert {k.label: n for k, n in layer_kinds(load_model("gemma-4-26b-a4b")).items()} == {
        "dense+moe sliding 1024": 25,
        "dense+moe": 5,
    }
    # Without layer_types, Qwen3NextConfig's rule: full iff (i + 1) % full_attention_interval == 0.
    raw = _raw("qwen3.5-27b")
    del raw["text_config"]["layer_types"]
    raw["text_config"]["full_attention_interval"] = 2
    assert {k.label: n for k, n in layer_kinds(config_from_dict(raw, name="t")).items()} == {
        "dense linear": 32,
        "dense": 32,
    }


def _bad(name: str, text: bool = False, drop: str | None = None, **fields) -> dict:
    raw = _raw(name)
    target = raw["text_config"] if text else raw
    target.update(fields)
    if drop:
        del target[drop]
    return raw


BAD = [
    ("layer_types too short", _bad("qwen3.5-27b", True, layer_types=["linear_attention"] * 63), "layer_types"),
    ("interval disagrees", _bad("qwen3.5-27b", True, full_attention_interval=8), "full_attention_interval"),
    (
        "interval beyond layers",
        _bad("qwen3.5-27b", True, drop="layer_types", full_attention_interval=80),
        "full_attention_interval",
    ),
    ("pattern too long", _bad("nemotron-3-nano-30b-a3b", hybrid_override_pattern="M" * 53), "hybrid_override_pattern"),
    ("pattern letter", _bad("nemotron-3-nano-30b-a3b", hybrid_override_pattern="X" * 52), "hybrid_override_pattern"),
    ("mimo pattern", _bad("mimo-v2-flash", hybrid_layer_pattern=[1] * 47), "hybrid_layer_pattern"),
    ("topk beyond context", _bad("deepseek-v3.2", index_topk=200_000), "index_topk"),
    ("no ssm state size", _bad("nemotron-3-nano-30b-a3b", drop="ssm_state_size"), "ssm_state_size"),
    ("no linear key dim", _bad("qwen3.5-27b", True, drop="linear_key_head_dim"), "linear_key_head_dim"),
    ("no linear value dim", _bad("qwen3.5-397b-a17b", True, drop="linear_value_head_dim"), "linear_value_head_dim"),
    ("no indexer heads", _bad("glm-5", drop="index_n_heads"), "index_n_heads"),
]


@pytest.mark.parametrize("label, raw, field", BAD, ids=[b[0] for b in BAD])
def test_bad_hybrid_configs_name_the_field(label, raw, field):
    with pytest.raises(CatalogError, match=field) as info:
        config_from_dict(raw, name="bad")
    assert "\n" not in str(info.value)


def test_unknown_model_type_is_read_as_the_family_it_matches():
    by_arch = _bad("deepseek-v3.2", model_type="deepseek_v33")  # architectures still DeepseekV32ForCausalLM
    cfg = config_from_dict(by_arch, name="t")
    assert cfg.model_type == "deepseek_v32" and "read as deepseek_v32" in cfg.warnings[0]
    by_fields = _raw("qwen3.5-397b-a17b")
    by_fields.update(model_type="qwen3_6_moe", architectures=["Qwen3_6MoeForConditionalGeneration"])
    cfg = config_from_dict(by_fields, name="t")
    assert cfg.model_type == "qwen3_5_moe" and "linear_num_value_heads" in cfg.warnings[0]
    assert total_params(cfg) == total_params(load_model("qwen3.5-397b-a17b"))
    unknown = {"model_type": "rwkv7", "architectures": ["Rwkv7ForCausalLM"], "hidden_size": 64}
    with pytest.raises(CatalogError, match="'rwkv7', which shardbudget does not model"):
        config_from_dict(unknown, name="t")


def test_head_counts_that_bound_tp():
    qwen = load_model("qwen3.5-397b-a17b")  # 32 query heads, 2 KV heads, 16 linear key heads
    Plan(tp=16).check(qwen)
    with pytest.raises(PlanError, match=r"tp \(32\) must divide linear_num_key_heads \(16\)"):
        Plan(tp=32).check(qwen)
    nemotron = load_model("nemotron-3-nano-30b-a3b")  # 64 Mamba heads, 8 groups, 32 query heads
    Plan(tp=16).check(nemotron)  # groups replicated over 16 ranks, as vLLM's MambaMixer2 does
    with pytest.raises(PlanError, match=r"tp \(64\) must divide num_attention_heads"):
        Plan(tp=64).check(nemotron)
    mimo = load_model("mimo-v2-flash")  # full layers 4 KV heads, sliding layers 8: both replicable
    Plan(tp=16).check(mimo)


def test_collectives_each_kind_inserts():
    tokens, hidden = 8, 2 * 5120 * 8  # bytes of 8 tokens' hidden states in bf16
    qwen = load_model("qwen3.5-27b")
    linear = collectives_for_layer(qwen, LayerKind("dense", "linear"), tokens=tokens, tp=4)
    assert [(c.op.value, c.count, c.msg_bytes) for c in linear] == [("all-reduce", 2, hidden)]  # out_proj + MLP down
    nemotron = load_model("nemotron-3-nano-30b-a3b")
    for kind in layer_kinds(nemotron):  # one mixer or one FFN per block: one all-reduce each
        assert sum(c.count for c in collectives_for_layer(nemotron, kind, tokens=tokens, tp=2)) == 1
    experts_apart = collectives_for_layer(nemotron, LayerKind("moe", "none"), tokens=tokens, tp=2, ep=4)
    assert sorted(c.op.value for c in experts_apart) == ["all-reduce", "all-to-all"]  # shared expert + dispatch
    gemma = load_model("gemma-4-26b-a4b")  # attention, dense MLP and experts each end in a reduction
    assert sum(c.count for c in collectives_for_layer(gemma, LayerKind("dense+moe"), tokens=tokens, tp=2)) == 3


def _op(ops, name):
    return next(op for op in ops if op.name == name)


def test_state_mixers_decode_work_does_not_grow_with_context():
    for name, op_name in (("qwen3.5-27b", "linear_attention"), ("nemotron-3-nano-30b-a3b", "ssm_scan")):
        cfg = load_model(name)
        kind = next(k for k in layer_kinds(cfg) if k.attention in ("linear", "mamba"))
        short, long = (layer_work(cfg, kind, tokens=4, context=c, tp=1) for c in (1024, 131072))
        assert _op(short, op_name).bytes == _op(long, op_name).bytes
    # Qwen3.5-27B, one GDN layer, batch 4: each sequence reads and writes its fp32 state once:
    # 4 x 2 x 48 x 128 x 128 x 4 B, plus q, k, v, z in and out: 4 x (2 x 2048 + 2 x 6144) x 2 B
    ops = layer_work(load_model("qwen3.5-27b"), LayerKind("dense", "linear"), tokens=4, context=1024, tp=1)
    assert _op(ops, "linear_attention").bytes == 4 * 2 * 48 * 128 * 128 * 4 + 4 * (2 * 2048 + 2 * 6144) * 2


def test_sparse_attention_reads_top_k_latents_and_the_whole_index():
    cfg = load_model("deepseek-v3.2")
    kind = LayerKind("moe", "sparse", 2048)
    short, long = (layer_work(cfg, kind, tokens=1, context=c, tp=8) for c in (1024, 131072))
    latent = (512 + 64) * 2  # bf16 latent per token
    # attention: min(context, 2048) latents (+ this token's), whatever the context beyond the top-k
    assert _op(long, "attention").bytes - _op(short, "attention").bytes == (2048 - 1024) * latent
    # the indexer scores every cached token: 128 FP8 bytes + 4 B of scale each
    assert _op(long, "indexer_scores").bytes - _op(short, "indexer_scores").bytes == (131072 - 1024) * 132


def test_long_context_cache_of_a_hybrid_is_a_fraction_of_full_attention():
    hybrid = load_model("qwen3.5-27b")
    raw = _raw("qwen3.5-27b")
    raw["text_config"]["layer_types"] = ["full_attention"] * 64
    raw["text_config"]["full_attention_interval"] = 1
    full = config_from_dict(raw, name="qwen3.5-27b-all-full")
    ctx = 131072
    h = kv_cache_bytes_per_gpu(hybrid, batch=1, context=ctx, tp=1)
    f = kv_cache_bytes_per_gpu(full, batch=1, context=ctx, tp=1)
    # 16 / 64 of the KV (8.59 GB of 34.4 GB) plus 48 states (0.154 GB)
    assert h == 16 * 2 * 4 * 256 * 2 * ctx + KV_BY_HAND["qwen3.5-27b"][1]
    assert f == 64 * 2 * 4 * 256 * 2 * ctx
    assert h / f == pytest.approx(0.2545, abs=0.001)
    grid = kv_cache_bytes_per_gpu(hybrid, batch=np.array([[1.0], [8.0]]), context=np.array([[1024.0, ctx]]), tp=2)
    assert grid.shape == (2, 2) and grid[1, 1] == 8 * h / 2


def _all_full_twin():
    """Qwen3.5-27B with every layer full attention: the model a hybrid is measured against."""
    raw = _raw("qwen3.5-27b")
    raw["text_config"].update(layer_types=["full_attention"] * 64, full_attention_interval=1)
    return config_from_dict(raw, name="qwen3.5-27b-all-full")


def test_fits_and_deploy_batch_show_the_hybrid_cache_at_128k():
    from shardbudget.decide.deploy import Workload, deploy
    from shardbudget.decide.planner import plan

    def tp2_fits(model):
        rows = plan(request(model, "hgx-h100", batches=(4,), context=131072)).results[0].rows
        return next(r for r in rows if (r.tp, r.pp, r.ep) == (2, 1, 1)).fits_memory

    assert tp2_fits("qwen3.5-27b") and not tp2_fits(_all_full_twin())  # 4 x 128k: 47 GB vs 98 GB per GPU
    work = Workload(input_len=120_000, output_len=8_000)
    batch = {}
    for model in ("qwen3.5-27b", _all_full_twin()):
        options = deploy(request(model, "hgx-h100", work=work, budget_s=None), gpus=2).options
        batch[getattr(model, "name", model)] = next(o.max_batch for o in options if o.label() == "1xTP2")
    # memory binds both: the KV of 16 layers (+ 48 fixed states) against 64 layers' KV
    assert batch["qwen3.5-27b"] >= 4 * batch["qwen3.5-27b-all-full"] > 0


def test_cli_refuses_a_bad_layout_in_one_line(tmp_path, capsys):
    from shardbudget import cli

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_bad("nemotron-3-nano-30b-a3b", hybrid_override_pattern="M" * 51)))
    assert cli.main(["plan", "--model", str(path), "--system", "hgx-h100"]) == 2
    err = capsys.readouterr().err.strip()
    assert "hybrid_override_pattern" in err and "52 layers" in err and len(err.splitlines()) == 1


def test_cli_names_the_assumed_family(tmp_path, capsys):
    from shardbudget import cli

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_bad("minimax-m2.5", model_type="minimax_m3", architectures=["MiniMaxM3ForCausalLM"])))
    assert cli.main(["plan", "--model", str(path), "--system", "hgx-h200", "--batch", "1"]) == 0
    assert "read as minimax_m2" in capsys.readouterr().out
