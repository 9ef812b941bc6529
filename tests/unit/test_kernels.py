"""Kernel floors and efficiencies, pinned to the published measurements they come from."""

import pytest

from shardbudget.step import kernels
from shardbudget.errors import CatalogError, UnknownNameError

US = 1e-6


def test_every_arch_has_every_op_kind_with_a_source():
    data = kernels.load_kernels()
    for arch in data["archs"]:
        for op in data["op_kinds"]:
            entry = kernels.kernel(arch, op)
            assert entry.source and entry.basis and entry.floor_s >= 0


def test_grouped_moe_floor_matches_vllm_benchmark_moe_on_h100():
    # vLLM PR #24700: Qwen3-30B-A3B fp8 tp=1 on H100, batch 1 (8 active experts): 40.44 us
    assert kernels.floor_s("hopper", "grouped_moe_gemm", active_experts=8) == pytest.approx(40.44 * US, rel=0.02)
    assert kernels.floor_s("hopper", "grouped_moe_gemm", active_experts=1) == pytest.approx(8 * US)
    measured = {m["what"]: m["time_s"] for m in kernels.load_kernels()["measurements"]}
    assert any(abs(t - 40.44 * US) < 1e-9 for t in measured.values())


def test_dense_gemm_floor_below_the_smallest_published_decode_gemm():
    # DeepGEMM FP8 M=64 N=7168 K=2048 at 295 TFLOPS -> 2*64*7168*2048/295e12 = 6.37 us on H800
    t_derived = 2 * 64 * 7168 * 2048 / 295e12
    assert t_derived == pytest.approx(6.37 * US, rel=0.01)
    assert kernels.floor_s("hopper", "dense_gemm", m=64, n=7168, k=2048) < t_derived
    # between the median bandwidth of DeepGEMM's six M=64 rows, (2320 + 2455) / 2 = 2388 GB/s of
    # 3350 GB/s, and the best decode GEMV of vLLM PR #47712 (0.81 of peak)
    assert 2388 / 3350 <= kernels.kernel("hopper", "dense_gemm").memory_efficiency <= 0.81


def test_flashmla_efficiencies():
    mla = kernels.kernel("hopper", "attention_decode_mla")
    assert mla.memory_efficiency == pytest.approx(3000 / 3350, abs=0.01)    # 3000 GB/s on H800 (3.35 TB/s)
    assert mla.compute_efficiency == pytest.approx(660 / 990, abs=0.01)     # 660 TFLOPS of 990


def test_tile_quantisation():
    # Hopper N tile 128: a TP8 shard of 7168 columns (896) is whole tiles; 1000 pads to 1024
    assert kernels.tile_quantization_factor("hopper", 896, 7168) == 1.0
    assert kernels.tile_quantization_factor("hopper", 1000, 1024) == pytest.approx(1024 / 1000)
    # FP8 K tile 128: K = 1000 is not a multiple of 128 and pads to 1024
    assert kernels.tile_quantization_factor("hopper", 128, 1000, weight_bytes=1) == pytest.approx(1024 / 1000)


def test_launch_gaps():
    assert kernels.launch_s("hopper") == pytest.approx(1.5 * US)
    assert kernels.launch_s("hopper", graphs=False) > kernels.launch_s("hopper")


def test_unknown_names():
    with pytest.raises(UnknownNameError, match="did you mean 'hopper'"):
        kernels.floor_s("hoper", "dense_gemm")
    with pytest.raises(UnknownNameError, match="op kind"):
        kernels.floor_s("hopper", "dense_gem")
    with pytest.raises(UnknownNameError, match="shape argument"):
        kernels.floor_s("hopper", "dense_gemm", batch=1)


def test_missing_floor_is_a_catalog_error():
    import tomllib
    from importlib import resources
    raw = tomllib.loads((resources.files("shardbudget") / "catalog" / "kernels.toml").read_text())
    del raw["ops"]["rmsnorm"]["ada"]
    with pytest.raises(CatalogError, match="no floor for ada/rmsnorm"):
        kernels.read_kernels(raw)


@pytest.mark.parametrize("arch, measured_us", [("ampere", 109.21), ("blackwell", 39.61)])
def test_grouped_moe_floor_matches_vllm_benchmark_moe(arch, measured_us):
    # vLLM PR #19049 (A100-PCIE-40GB) and #31448 (B200): an E=128, N=768, top-8 MoE at batch 1 with
    # the default fused_moe config; the floor of 8 active experts is the measured call, as on hopper
    assert kernels.floor_s(arch, "grouped_moe_gemm", active_experts=8) == pytest.approx(measured_us * US, rel=0.01)
    measured = [m for m in kernels.load_kernels()["measurements"] if m["arch"] == arch
                and m["op_kind"] == "grouped_moe_gemm"]
    assert any(abs(m["time_s"] - measured_us * US) < 1e-9 for m in measured)


@pytest.mark.parametrize("tokens, measured_us", [(1024, 536.33), (2048, 911.64), (4096, 1647.57)])
def test_prefill_fused_moe_call_matches_vllm_benchmark_moe(tokens, measured_us):
    """A prefill-sized fused-experts call (vLLM PR #24700, Qwen3-30B-A3B FP8 on H100, main branch:
    536.33 / 911.64 / 1647.57 us at 1024 / 2048 / 4096 tokens) runs its FP8 GEMMs at 188 TFLOP/s (0.095 of the
    FP8 peak), not a dense GEMM's 0.6: the call's ops as the step prices them (two grouped GEMMs, the
    activation, the weighted sum, the token sort) come within 15%."""
    import numpy as np
    from shardbudget.fabric.catalog import load_catalog
    from shardbudget.model import Plan, Precision, load_model, step_work
    from shardbudget.step.price_ops import OpPricer
    from shardbudget.step.settings import engine_efficiency
    fp8 = Precision(weights="fp8")
    work = step_work(load_model("qwen3-30b-a3b"), Plan(1), batch=1.0, context=float(tokens), phase="prefill",
                     precision=fp8)
    pricer = OpPricer(system=load_catalog().system("hgx-h100"), precision=fp8, eff=engine_efficiency("vllm"),
                      fused_allreduce_norm=False)
    call = sum(float(np.asarray(pricer.op_s(op)).ravel()[0]) for _, op in work.ops
               if op.name.startswith("expert_") or op.name == "moe_align")
    assert call == pytest.approx(measured_us * US, rel=0.15)
    assert kernels.kernel("hopper", "grouped_moe_gemm").quantized_flops_per_s == pytest.approx(
        2 * 4096 * 8 * (2048 * 1536 + 768 * 2048) / 1647.57e-6, rel=0.01)


def test_fp8_input_quant_fused_into_norms_where_the_engine_compiles():
    """Nemotron-3 Nano FP8 decode at TP2 on B200: with the engine's norm + quant fusion (vLLM -O2,
    engines/vllm.toml [fusions]) the 99 dense GEMMs whose input a norm or activation writes (23 Mamba
    in/out projections x 2, 23 shared experts' up/down x 2, 6 qkv, the LM head; all FP8 here) lose
    their act_quant_fp8 kernel: 99 x (2.5 us floor + 1.5 us launch) = 396 us. o_proj (6) and the
    fused-MoE calls (46) keep it."""
    import numpy as np
    from shardbudget.engines.presets import load_engine
    from shardbudget.fabric.catalog import load_catalog
    from shardbudget.model import Plan, Precision, load_model, step_work
    from shardbudget.step.price_ops import OpPricer
    from shardbudget.step.settings import engine_efficiency
    fp8 = Precision(weights="fp8")
    work = step_work(load_model("nemotron-3-nano-30b-a3b"), Plan(2), batch=1.0, context=2304.0, phase="decode",
                     precision=fp8)
    system, eff = load_catalog().system("hgx-b200"), engine_efficiency("vllm")
    fused, plain = (OpPricer(system=system, precision=fp8, eff=eff, fused_allreduce_norm=False, fused_norm_quant=f)
                    for f in (True, False))
    saved = sum(count * float(np.asarray(plain.op_s(op)) - np.asarray(fused.op_s(op))) for count, op in work.ops)
    assert saved == pytest.approx(99 * (2.5 + 1.5) * US, rel=1e-6)
    assert load_engine("vllm").fusions.norm_quant and not load_engine("sglang").fusions.norm_quant
    assert not load_engine("eager").fusions.norm_quant
