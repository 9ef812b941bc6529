"""What an engine fuses on a GPU for a model (issue 21): SGLang runs DeepSeek-V3's MoE on Blackwell as
one TRT-LLM-gen call (routing, both grouped GEMMs, finalize) and fuses all-reduce + residual + RMSNorm
there; elsewhere the routing ops stay separate kernels."""

import dataclasses

import numpy as np
import pytest

from shardbudget.step.scenario import precision_for, scenario
from shardbudget.engines.presets import load_engine
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import Plan, load_model
from shardbudget.step.compose import compile_step
from shardbudget.step.price_ops import kernel_entry
from shardbudget.step.served import served_curve
from shardbudget.step.settings import PlanSettings, engine_efficiency

CAT = load_catalog()
MB = 1e6


def _step(model, system, engine, tp=8, ep=1, dtype=None):
    cfg, sysm = load_model(model), CAT.system(system)
    prec = precision_for(cfg, sysm, dtype)[0] if dtype else precision_for(cfg, sysm)[0]
    return compile_step(cfg, sysm, Plan(tp, 1, ep), CAT, engine=engine, precision=prec, eff=engine_efficiency(engine))


def test_fused_moe_call_reproduces_flashinfer_trtllm_gen_calls():
    # flashinfer PR #5301 (B300, TRTLLM MXFP8, routing + experts + finalize): 1 / 4 / 8 tokens with
    # 2 / 7 / 10 active local experts of 3 x 7168 x 2048 B = 44 MB -> 38.2 / 79.2 / 99.2 us
    entry = kernel_entry("blackwell", "fused_moe_routed")
    bw = 8e12 * entry.memory_efficiency
    for experts, measured_us in ((2, 38.2), (7, 79.2), (10, 99.2)):
        priced = 2 * entry.floor_s + experts * 3 * 7168 * 2048 / bw
        assert priced == pytest.approx(measured_us * 1e-6, rel=0.10)
    assert kernel_entry("hopper", "fused_moe_routed") is None  # an SM100 kernel only


def test_sglang_rules_from_server_args():
    sglang = load_engine("sglang")
    assert sglang.fused_for("deepseek_v3", "blackwell", one_node=True, quantized=True) == (True, True)
    assert sglang.fused_for("deepseek_v3", "blackwell", one_node=True, quantized=False) == (True, False)
    assert sglang.fused_for("deepseek_v3", "blackwell", one_node=False, quantized=True) == (False, True)
    assert sglang.fused_for("deepseek_v3", "hopper", one_node=True, quantized=True) == (False, False)
    assert sglang.fused_for("qwen3_moe", "blackwell", one_node=True, quantized=False) == (False, True)
    # vLLM 0.34.0 fuses the all-reduce + RMSNorm at -O2 on Hopper and Blackwell (config/vllm.py
    # enable_allreduce_rms_fusion); 0.19.0 did not
    assert load_engine("vllm").fused_for("deepseek_v3", "blackwell", one_node=True, quantized=True) == (True, True)
    assert load_engine("vllm-0.19").fused_for("deepseek_v3", "blackwell", one_node=True, quantized=True) == (
        False,
        False,
    )
    assert load_engine("trtllm").fused_for("llama", "hopper", one_node=True, quantized=False) == (True, False)


def test_vllm_runs_fp4_experts_as_the_trtllm_gen_call_on_sm100_only():
    # vLLM's NVFP4 oracle tries FLASHINFER_TRTLLM first; its MXFP4 default on SM 10.x is
    # SM100_FI_MXFP4_BF16: both the TRT-LLM-gen routed call, for any model type
    vllm = load_engine("vllm")
    assert vllm.fused_for("kimi_k2", "blackwell", one_node=True, quantized=True, fp4_experts=True)[1]
    assert vllm.fused_for("gpt_oss", "blackwell", one_node=True, quantized=True, fp4_experts=True)[1]
    # 0.34.0's BF16 and FP8 oracles put FLASHINFER_TRTLLM first on SM 10.x too (0.19.0: Triton)
    assert vllm.fused_for("deepseek_v3", "blackwell", one_node=True, quantized=True)[1]  # FP8 experts
    assert vllm.fused_for("qwen3_moe", "blackwell", one_node=True, quantized=False)[1]  # BF16 experts
    assert not load_engine("vllm-0.19").fused_for("deepseek_v3", "blackwell", one_node=True, quantized=True)[1]
    # on Hopper the FlashInfer backends sit behind Triton (BF16) and block FP8 under TP runs Triton
    assert not vllm.fused_for("deepseek_v3", "hopper", one_node=True, quantized=True, fp4_experts=True)[1]
    assert not vllm.fused_for("qwen3_moe", "hopper", one_node=True, quantized=False)[1]
    # over DeepEP the FP8 kernels need DeepEP v2's layout (TrtLlmFp8ExpertsModular): FP4 alone keeps it
    assert not vllm.fused_for("deepseek_v3", "blackwell", one_node=True, quantized=True, deepep=True)[1]
    assert vllm.fused_for("kimi_k2", "blackwell", one_node=True, quantized=True, fp4_experts=True, deepep=True)[1]
    assert load_engine("sglang").fused_for("qwen3_moe", "blackwell", one_node=True, quantized=False, deepep=True)[1]
    cfg, sysm = load_model("deepseek-v3"), CAT.system("hgx-b200")
    prec = precision_for(cfg, sysm, "fp8")[0]
    for a2a, fused in (("nccl", True), ("deepep-ll", False)):
        step = compile_step(
            cfg, sysm, Plan(8, 1, 8), CAT, engine="vllm", precision=prec, settings=PlanSettings(moe_a2a=a2a)
        )
        assert step.ops.fused_moe_routing is fused, a2a
    nvfp4 = _step("deepseek-v3", "hgx-b200", "vllm", dtype="nvfp4")
    assert nvfp4.ops.fused_moe_routing
    assert _step("deepseek-v3", "hgx-b200", "vllm", dtype="fp8").ops.fused_moe_routing
    assert not _step("deepseek-v3", "hgx-b200", "vllm-0.19", dtype="fp8").ops.fused_moe_routing
    # RTX PRO 6000 is Blackwell at SM 12.0: no TRT-LLM-gen MoE there (CUTLASS / Marlin instead)
    assert not _step("qwen3.5-397b-a17b", "rtx-pro-6000-pcie", "vllm", tp=4, dtype="nvfp4").ops.fused_moe_routing
    # per DeepSeek MoE layer at batch 4 the Triton block-FP8 call's fixed part (43 us) is gone:
    # the TRT-LLM-gen call reads the same FP4 bytes for 11 us per GEMM at least
    work = nvfp4.work(np.asarray(4.0), np.asarray(1100.0))
    triton = dataclasses.replace(nvfp4.ops, fused_moe_routing=False)
    saved = float(triton.compute_s(work, ())[0] - nvfp4.ops.compute_s(work, ())[0]) / 58
    assert 20e-6 < saved < 60e-6, saved


def test_fused_call_drops_the_routing_kernels_on_b200_only():
    fused = _step("deepseek-v3", "hgx-b200", "sglang")
    assert fused.ops.fused_moe_routing and fused.ops.fused_allreduce_norm
    assert not _step("deepseek-v3", "hgx-b200", "vllm-0.19").ops.fused_moe_routing
    assert not _step("deepseek-v3", "hgx-h200", "sglang").ops.fused_moe_routing
    work = fused.work(np.asarray(4.0), np.asarray(1100.0))
    moe_layers = sum(c for c, op in work.ops if op.name == "topk")
    assert moe_layers == 58
    unfused = _step("deepseek-v3", "hgx-b200", "vllm-0.19")
    # per MoE layer the TRT-LLM-gen call's fixed part (22 us, flashinfer#5301) against the Triton
    # call's that vLLM 0.19 runs (43 us with FP8 experts, sglang#11816): more than 20 us per layer at
    # batch 4 (35 us with the fused norms and the two calls' streaming rates)
    saved = float(unfused.ops.compute_s(work, ())[0] - fused.ops.compute_s(work, ())[0])
    assert saved / moe_layers > 20e-6


@pytest.mark.parametrize(
    "isl,osl,conc,measured_ms,tol",
    [
        (1024, 1024, 4, 8.760, 0.12),  # InferenceX run 23552373331, SGLang v0.5.9, B200, FP8 TP8
        (1024, 8192, 8, 10.323, 0.12),
        (1024, 1024, 64, 22.529, 0.15),
    ],
)
def test_sglang_b200_served_tpot_against_inferencex(isl, osl, conc, measured_ms, tol):
    sc = scenario("deepseek-v3", "hgx-b200", engine="sglang", catalog=CAT)
    tpot = float(served_curve(sc, Plan(8), batch=float(conc), input_len=isl, output_len=osl).tpot_s)
    assert tpot == pytest.approx(measured_ms * 1e-3, rel=tol)
