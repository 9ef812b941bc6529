import pytest

from shardbudget.errors import PlanError, UnknownNameError
from shardbudget.planner import plan, required_fabric
from shardbudget.model import Plan, Precision
from shardbudget.settings import PlanSettings
from shardbudget.step import decode_step


def test_decode_batch1_is_weight_streaming():
    # Llama-3.1-8B bf16 on one H100: ~16.06 GB of weights / (3.35 TB/s x 0.8) = 6.0 ms, plus KV and launches
    st = decode_step("llama-3.1-8b", "hgx-h100", Plan(1), batch=1, context=1024)
    assert 5.5e-3 < st.total_s < 7.5e-3
    assert st.comm_s == 0


def test_tp_halves_compute_but_adds_calls():
    one = decode_step("llama-3.1-70b", "hgx-h100", Plan(4), batch=1, context=4096)
    two = decode_step("llama-3.1-70b", "hgx-h100", Plan(8), batch=1, context=4096)
    assert two.compute_s == pytest.approx(one.compute_s / 2, rel=0.15)
    assert two.comm_calls == one.comm_calls == 2 * 80 + 2
    assert two.comm_s > one.comm_s


def test_pcie_is_sharded_too_far_at_batch_64():
    r = plan("llama-3.1-70b", "l40s-pcie", batches=[64], budget_s=0.05)
    b = r.results[0]
    assert b.min_tp_memory == 8
    tp8 = next(x for x in b.rows if x.tp == 8 and x.pp == 1)
    assert tp8.comm_share > 0.3 and tp8.verdict == "sharded too far"
    assert "sharded too far" in b.verdict


def test_nvswitch_plan_verdicts():
    r = plan("llama-3.1-70b", "hgx-h100", batches=[1], budget_s=0.030)
    b = r.results[0]
    # 141.1 GB of bf16 weights + 0.67 GB KV + 2 GB workspace = 73.2 GB per GPU at TP2, inside
    # 0.9 x 81559 MiB = 77.0 GB as nvidia-smi reports an H100 80GB (it did not fit in 0.9 x 80e9 B)
    assert b.min_tp_memory == 2
    assert b.max_tp_budget == 8 and b.best_tp == 8
    d = r.to_dict()
    assert set(d) >= {"model", "system", "nodes", "context", "budget_s", "results"}
    assert set(d["results"][0]["rows"][0]) >= {"tp", "pp", "ep", "itl_s", "compute_s", "comm_s", "comm_share",
                                               "ttft_s", "mem_bytes_per_gpu", "fits_memory", "meets_budget"}


def test_budget_nobody_meets_says_so():
    r = plan("llama-3.1-405b", "hgx-h100", batches=[1], budget_s=0.001)
    assert r.results[0].max_tp_budget is None


def test_several_tps_too_far_verdict_names_the_fastest_one():
    # TP4 and TP8 both pass a 5% comm threshold; only TP8 is the fastest, and the verb is plural
    r = plan("llama-3.1-70b", "hgx-h100", batches=[1], comm_threshold=0.05).results[0]
    assert "TP4/8 are sharded too far even though TP8 is the fastest option" in r.verdict
    assert "TP4/8 is sharded" not in r.verdict


def test_bad_plans():
    with pytest.raises(PlanError, match="batch"):
        plan("llama-3.1-8b", "hgx-h100", batches=[0])
    with pytest.raises(PlanError, match="exceeds"):
        plan("llama-3.1-8b", "hgx-h100", context=10_000_000)
    with pytest.raises(UnknownNameError, match="did you mean"):
        plan("llama-3.1-7b", "hgx-h100")
    with pytest.raises(PlanError, match="must divide"):
        decode_step("llama-3.1-70b", "hgx-h100", Plan(6))


def test_inverse_question():
    req = required_fabric("llama-3.1-70b", "hgx-h100", tp=16, nodes=2, batch=1, budget_s=0.010)
    assert req.calls_per_step == 162
    assert req.required_latency_per_call_s is None or req.required_latency_per_call_s < req.current_latency_per_call_s * 2
    impossible = required_fabric("llama-3.1-70b", "hgx-h100", tp=2, batch=1, budget_s=0.005)
    assert "no fabric" in impossible.explanation


def test_sequence_parallel_costs_decode_more_latency():
    base = decode_step("llama-3.1-70b", "hgx-h100", Plan(8), batch=1, context=4096)
    sp = decode_step("llama-3.1-70b", "hgx-h100", Plan(8), batch=1, context=4096,
                     settings=PlanSettings(sequence_parallel=True))
    assert sp.comm_calls == base.comm_calls + 2 * 80  # each layer's two all-reduces become two pairs
    assert sp.comm_s > base.comm_s


def test_overlap_hides_communication_behind_compute():
    st = decode_step("llama-3.1-70b", "hgx-h100", Plan(8), batch=1, context=4096, settings=PlanSettings(overlap=True))
    full = decode_step("llama-3.1-70b", "hgx-h100", Plan(8), batch=1, context=4096)
    assert st.total_s == pytest.approx(st.compute_s + st.comm_s + st.other_s)
    assert st.comm_s == pytest.approx(max(0.0, full.comm_s - full.compute_s))  # only the exposed part
    assert st.total_s < full.total_s


def test_skipped_tp_and_kv_replication_are_explained():
    notes = plan("qwq-32b", "hgx-h100", nodes=2, batches=[1]).assumptions["notes"]
    assert "TP16 skipped: tp (16) must divide num_attention_heads (40)" in notes
    notes = plan("llama-3.1-70b", "hgx-h100", nodes=2, batches=[1]).assumptions["notes"]
    assert any(n.startswith("TP16: 8 KV heads for 16 GPUs") for n in notes)


def test_dp_attention_pays_at_large_batch_and_saves_kv_memory():
    # DeepSeek-V3 caches one MLA latent per token that TP attention replicates on every rank:
    # data-parallel attention keeps only each rank's own sequences (8x less KV at dp 8).
    from shardbudget import model as tf
    cfg = tf.load_model("deepseek-v3")
    kv_tp = tf.kv_cache_bytes_per_gpu(cfg, batch=64, context=4096, tp=8)
    kv_dp = tf.kv_cache_bytes_per_gpu(cfg, batch=64, context=4096, tp=8, attn_dp=8)
    assert kv_dp == pytest.approx(kv_tp / 8)
    big_tp = decode_step(cfg, "hgx-h200", Plan(8, 1, 8), batch=256, context=4096, precision=Precision(weights="fp8"))
    big_dp = decode_step(cfg, "hgx-h200", Plan(8, 1, 8, 8), batch=256, context=4096, precision=Precision(weights="fp8"))
    assert big_dp.total_s < big_tp.total_s
    one_tp = decode_step(cfg, "hgx-h200", Plan(8, 1, 8), batch=1, context=4096, precision=Precision(weights="fp8"))
    one_dp = decode_step(cfg, "hgx-h200", Plan(8, 1, 8, 8), batch=1, context=4096, precision=Precision(weights="fp8"))
    assert one_dp.total_s > one_tp.total_s  # one sequence cannot be split across DP ranks
    with pytest.raises(PlanError, match="data-parallel attention"):
        decode_step("llama-3.1-70b", "hgx-h100", Plan(8, 1, 1, 8), batch=8, context=1024)
