"""Kernel floors and efficiencies, pinned to the published measurements they come from."""

import pytest

from shardbudget.step import kernels
from shardbudget.errors import CatalogError, UnknownNameError

US = 1e-6


def test_every_arch_has_every_op_kind_with_a_source():
    data = kernels.load_kernels()
    for arch in data["archs"]:
        for op in data["op_kinds"]:
            if op in data["partial_op_kinds"] and (arch, op) not in data["floors"]:
                with pytest.raises(UnknownNameError):
                    kernels.kernel(arch, op)
                continue
            entry = kernels.kernel(arch, op)
            assert entry.source and entry.basis and entry.floor_s >= 0


def test_grouped_moe_reference_rows_are_kept():
    measured = {m["what"]: m["time_s"] for m in kernels.load_kernels()["measurements"]}
    for t_us in (40.44, 31.70, 109.21, 39.61):
        assert any(abs(t - t_us * US) < 1e-9 for t in measured.values()), t_us


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
    assert mla.memory_efficiency == pytest.approx(3000 / 3350, abs=0.01)  # 3000 GB/s on H800 (3.35 TB/s)
    assert mla.compute_efficiency == pytest.approx(660 / 990, abs=0.01)  # 660 TFLOPS of 990


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


def _kernels_raw() -> dict:
    import tomllib
    from importlib import resources

    return tomllib.loads((resources.files("shardbudget") / "catalog" / "kernels.toml").read_text())


@pytest.mark.parametrize(
    "table, typo, near",
    [
        ("ops.dense_gemm.hopper", "memory_efficency", "memory_efficiency"),
        ("tiles.hopper", "k_fp88", "k_fp8"),
        ("launch.ada", "graphh", "graph"),
        ("meta", "op_kind", "op_kinds"),
    ],
)
def test_a_misspelt_kernel_key_is_refused_with_its_place(table, typo, near):
    """issue 32: the kernel table is read as strictly as the catalog; a misspelt key never leaves a
    floor at its default."""
    raw = _kernels_raw()
    part = raw
    for k in table.split("."):
        part = part[k]
    part[typo] = part[near]
    with pytest.raises(CatalogError) as err:
        kernels.read_kernels(raw)
    assert str(err.value) == f"catalog/kernels.toml: {table}: unknown field '{typo}'; did you mean '{near}'?"


def test_kernel_generations_are_the_catalogs():
    raw = _kernels_raw()
    raw["meta"]["archs"].append("rubin")
    with pytest.raises(UnknownNameError, match=r"unknown GPU generation in catalog/kernels.toml: meta.archs 'rubin'"):
        kernels.read_kernels(raw)
    raw = _kernels_raw()
    raw["ops"]["rmsnorm"]["ada"]["basis"] = " "
    with pytest.raises(CatalogError, match=r"ops.rmsnorm.ada.basis: must say where the number comes from"):
        kernels.read_kernels(raw)


def _moe_call_s(model, system, dtype, tp, ep, batch, hbm_bytes_per_s=None):
    """One MoE layer's fused-experts call as the step prices it at decode (OpPricer.compute_s): top-k,
    the sort of tokens by expert, both grouped GEMMs, the activation and the weighted sum, what
    benchmark_moe.py times; where the arch prices the call whole its GEMM ops carry all of it."""
    import dataclasses
    import numpy as np
    from shardbudget.fabric.catalog import load_catalog
    from shardbudget.model import Plan, Precision, load_model, step_work
    from shardbudget.step.price_ops import OpPricer
    from shardbudget.step.settings import engine_efficiency

    prec = Precision(weights=dtype)
    system = load_catalog().system(system)
    if hbm_bytes_per_s:
        system = dataclasses.replace(system, gpu=dataclasses.replace(system.gpu, mem_bytes_per_s=hbm_bytes_per_s))
    work = step_work(
        load_model(model), Plan(tp, 1, ep), batch=float(batch), context=1.0, phase="decode", precision=prec
    )
    pricer = OpPricer(system=system, precision=prec, eff=engine_efficiency("vllm"), fused_allreduce_norm=False)
    moe = ("topk", "moe_align", "expert_gate_up", "expert_act", "expert_down", "expert_combine")
    return sum(
        float(np.ravel(pricer.op_s(op))[0])
        for _, op in work.ops
        if op.name in moe and not (op.in_fused_moe and pricer.moe_call_whole)
    )


MOE_CALLS = [
    # vLLM PR #24700, Qwen3-30B-A3B FP8 tp=1 on H100 ('PR' column): experts of 4.7 MB, 8-126 active
    (
        "qwen3-30b-a3b",
        "hgx-h100",
        "fp8",
        1,
        None,
        (1, 2, 4, 8, 16, 24, 32, 48, 64),
        (40.44, 56.15, 78.10, 118.64, 164.64, 193.48, 210.07, 230.59, 237.26),
    ),
    # SGLang PR #11730, Qwen3-235B-A22B FP8 --tp-size 8 on H200, untuned: TP8 slices of 2.4 MB
    ("qwen3-235b-a22b", "hgx-h200", "fp8", 8, None, (1, 2, 4, 8, 16, 32), (31.70, 36.56, 49.67, 66.87, 92.36, 124.99)),
    # vLLM PR #19049, Qwen3-30B-A3B BF16 on A100-PCIE-40GB (1.555 TB/s), default config
    (
        "qwen3-30b-a3b",
        "hgx-a100",
        "bf16",
        1,
        1.555e12,
        (1, 2, 4, 8, 16, 24, 32, 48, 64),
        (109.21, 159.81, 268.89, 403.13, 611.19, 730.19, 808.53, 885.97, 917.45),
    ),
    # vLLM PR #31448, Qwen3-Omni-30B-A3B's MoE (Qwen3-30B-A3B's shape) BF16 tp=1 on B200, default config
    ("qwen3-30b-a3b", "hgx-b200", "bf16", 1, None, (1, 2, 4), (39.61, 51.87, 73.18)),
    # SGLang PR #11816, DeepSeek-R1 block FP8 --tp 8 on B200, Triton 'Before' table: TP8 slices of 5.5 MB
    ("deepseek-v3", "hgx-b200", "fp8", 8, None, (1, 2, 4, 8, 16, 24), (52.65, 60.35, 79.09, 95.47, 138.68, 175.80)),
]


@pytest.mark.parametrize(
    "model, system, dtype, tp, hbm, batches, measured_us", MOE_CALLS, ids=lambda v: v if isinstance(v, str) else None
)
def test_fused_moe_call_matches_benchmark_moe_tables(model, system, dtype, tp, hbm, batches, measured_us):
    """The whole measured call, from 8 to 126 active experts and from 2.4 MB slices to 9.4 MB experts,
    within 10% at every batch: the GEMMs cost call_fixed + their weight bytes / rate, not a floor per
    expert (which priced a TP8 slice like a whole expert and the call's top-k / sort / sum twice)."""
    for batch, t_us in zip(batches, measured_us):
        assert _moe_call_s(model, system, dtype, tp, 1, batch, hbm) == pytest.approx(t_us * US, rel=0.10), batch


def test_blackwell_prices_the_call_whole_at_its_measured_fixed_parts():
    # BF16 call: vLLM #31448 (24 us); FP8 call: SGLang #11816 (43 us, both GEMMs' inputs quantised in it)
    entry = kernels.kernel("blackwell", "grouped_moe_gemm")
    assert entry.call_fixed_s == pytest.approx(24 * US) and entry.call_fixed_quantized_s == pytest.approx(43 * US)
    assert entry.floor_per_active_expert_s is None
    # hopper and ampere were fitted on FP8 and BF16 calls together: one fixed part
    assert kernels.kernel("hopper", "grouped_moe_gemm").call_fixed_quantized_s is None


def test_tp_sharded_experts_cost_each_rank_its_slice():
    """Qwen3-235B FP8 on H200 at TP2: with the experts TP-sharded each rank streams half of every
    expert hit; with EP2 the busiest rank streams whole experts, more than half of those hit (8 of 128
    experts per token: 5.1 on the busiest of two ranks at batch 1, not 4). EP's call is 10-13% slower
    at batch 1-4 and the gap closes as every expert is hit: within 2% at batch 64 and 256."""
    ratio = {
        b: _moe_call_s("qwen3-235b-a22b", "hgx-h200", "fp8", 2, 2, b)
        / _moe_call_s("qwen3-235b-a22b", "hgx-h200", "fp8", 2, 1, b)
        for b in (1, 2, 4, 16, 64, 256)
    }
    assert all(1.08 <= ratio[b] <= 1.16 for b in (1, 2, 4)), ratio
    assert ratio[1] > ratio[16] > ratio[64] and ratio[16] > 1.0, ratio
    assert ratio[64] == pytest.approx(1.0, abs=0.02) and ratio[256] == pytest.approx(1.0, abs=0.02), ratio


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
    work = step_work(
        load_model("qwen3-30b-a3b"), Plan(1), batch=1.0, context=float(tokens), phase="prefill", precision=fp8
    )
    pricer = OpPricer(
        system=load_catalog().system("hgx-h100"),
        precision=fp8,
        eff=engine_efficiency("vllm"),
        fused_allreduce_norm=False,
    )
    call = sum(
        float(np.asarray(pricer.op_s(op)).ravel()[0])
        for _, op in work.ops
        if op.name.startswith("expert_") or op.name == "moe_align"
    )
    assert call == pytest.approx(measured_us * US, rel=0.15)
    assert kernels.kernel("hopper", "grouped_moe_gemm").quantized_flops_per_s == pytest.approx(
        2 * 4096 * 8 * (2048 * 1536 + 768 * 2048) / 1647.57e-6, rel=0.01
    )


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
    work = step_work(
        load_model("nemotron-3-nano-30b-a3b"), Plan(2), batch=1.0, context=2304.0, phase="decode", precision=fp8
    )
    system, eff = load_catalog().system("hgx-b200"), engine_efficiency("vllm")
    fused, plain = (
        OpPricer(system=system, precision=fp8, eff=eff, fused_allreduce_norm=False, fused_norm_quant=f)
        for f in (True, False)
    )
    saved = sum(count * float(np.asarray(plain.op_s(op)) - np.asarray(fused.op_s(op))) for count, op in work.ops)
    assert saved == pytest.approx(99 * (2.5 + 1.5) * US, rel=1e-6)
    assert load_engine("vllm").fusions.norm_quant and not load_engine("sglang").fusions.norm_quant
    assert not load_engine("eager").fusions.norm_quant
