"""Engine presets: the all-reduce rules and defaults pinned to the engines' sources.

Each expected value quotes the line it comes from (vLLM v0.11.0, SGLang v0.5.x, TensorRT-LLM 1.0;
see src/shardbudget/engines/*.toml for the full citations).
"""

import math

import numpy as np
import pytest

from shardbudget.engines import (
    ALLREDUCE_KINDS,
    ENGINE_NAMES,
    allreduce_choice,
    allreduce_ranges,
    default_memory_fraction,
    load_engine,
)
from shardbudget.datacache import read_builtin
from shardbudget.engines.cli_tables import ROLES, load_cli
from shardbudget.engines.presets import read_engine
from shardbudget.fabric.catalog import load_catalog
from shardbudget.errors import CatalogError, UnknownNameError

KiB, MiB, MB = 1024, 1024**2, 1e6


@pytest.fixture(scope="module")
def vllm():
    return load_engine("vllm-0.19")  # the 0.19 rule these tests quote; 0.34: test_vllm_034_*


def test_every_engine_loads_with_sources():
    for name in ENGINE_NAMES:
        p = load_engine(name)
        assert p.name == name and p.version and p.source.startswith("http")
        assert p.allreduce.source and p.memory.source and load_cli(name).source


def test_unknown_engine_suggests_the_closest():
    with pytest.raises(UnknownNameError, match=r"unknown engine 'vlm'; did you mean 'vllm'"):
        load_engine("vlm")


# --- vLLM custom all-reduce: csrc/custom_all_reduce.cuh REDUCE_CASE, custom_all_reduce.py ----------


@pytest.mark.parametrize(
    "ws, size, kind",
    [
        (8, 128 * KiB, "one-shot"),  # ws <= 8 and bytes < 256 KiB
        (8, 256 * KiB, "two-shot"),  # the test is strict: 256 KiB itself is two-shot
        (8, 8 * MiB - 16, "two-shot"),
        (8, 8 * MiB, "nccl"),  # inp_size < max_size (8192 * 1024) fails at 8 MiB
        (4, 300 * KiB, "one-shot"),  # ws <= 4 and bytes < 512 KiB
        (4, 512 * KiB, "two-shot"),
        (6, 300 * KiB, "two-shot"),  # 6 GPUs fall under the 256 KiB rule
        (2, 4 * MiB, "one-shot"),  # world size 2: always cross_device_reduce_1stage
        (3, 16 * KiB, "nccl"),  # _SUPPORTED_WORLD_SIZES = [2, 4, 6, 8]
    ],
)
def test_vllm_custom_allreduce_thresholds_without_symm_mem(vllm, ws, size, kind):
    # arch=None: no symmetric-memory table (A100, L40S ...), so only custom AR and NCCL remain
    assert allreduce_choice(vllm, ws, size, nvlink=True, p2p=True) == kind


def test_vllm_pcie_rules(vllm):
    # two PCIe GPUs with P2P use the custom kernel; more than two need full NVLink; no P2P -> NCCL
    assert allreduce_choice(vllm, 2, 1 * MiB, nvlink=False, p2p=True) == "one-shot"
    assert allreduce_choice(vllm, 4, 64 * KiB, nvlink=False, p2p=True) == "nccl"
    assert allreduce_choice(vllm, 2, 64 * KiB, nvlink=False, p2p=False) == "nccl"
    assert allreduce_choice(vllm, 8, 64 * KiB, nvlink=True, p2p=True, nodes=2) == "nccl"
    assert allreduce_choice(vllm, 1, 64 * KiB, nvlink=False, p2p=False) == "none"


def test_vllm_symmetric_memory_on_hopper_and_blackwell(vllm):
    # CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"][8] = 256 KiB, SYMM_MEM_ALL_REDUCE_MAX_SIZES["9.0"][8] = 64 MiB,
    # multimem for world sizes [4, 6, 8] on 9.0
    assert allreduce_choice(vllm, 8, 128 * KiB, True, True, arch="hopper") == "one-shot"
    assert allreduce_choice(vllm, 8, 256 * KiB, True, True, arch="hopper") == "symm-mem-multimem"
    assert allreduce_choice(vllm, 8, 64 * MiB, True, True, arch="hopper") == "symm-mem-multimem"
    assert allreduce_choice(vllm, 8, 64 * MiB + 2, True, True, arch="hopper") == "nccl"
    # 2 GPUs on Hopper: custom up to min(8 MiB, 64 MiB), then torch two-shot (2 is not multimem)
    assert allreduce_choice(vllm, 2, 10 * MiB, True, True, arch="hopper") == "symm-mem-two-shot"
    # B200 ("10.0"): custom capped at 1 MiB for 8 GPUs, symmetric memory up to 128 MiB
    assert allreduce_choice(vllm, 8, 512 * KiB, True, True, arch="blackwell") == "two-shot"
    assert allreduce_choice(vllm, 8, 1 * MiB, True, True, arch="blackwell") == "symm-mem-multimem"
    # no multicast (e.g. an NVLink bridge) or VLLM_ALLREDUCE_USE_SYMM_MEM=0: back to custom + NCCL
    assert allreduce_choice(vllm, 8, 1 * MiB, True, True, arch="hopper", multicast=False) == "two-shot"
    assert allreduce_choice(vllm, 8, 1 * MiB, True, True, arch="hopper", symm_mem=False) == "two-shot"


def test_vllm_sm103_tables_for_b300_and_gb300(vllm):
    """vLLM 0.19.0 (PR #37756): SM 10.3 has its own rows. CUSTOM_ALL_REDUCE_MAX_SIZES["10.3"][8] = 4 MiB
    (10.0: 1 MiB), SYMM_MEM_ALL_REDUCE_MAX_SIZES["10.3"][8] = 64 MiB (10.0: 128 MiB), multimem [6, 8]."""
    assert vllm.version == "0.19.0"
    assert allreduce_choice(vllm, 8, 2 * MiB, True, True, arch="10.3") == "two-shot"
    assert allreduce_choice(vllm, 8, 2 * MiB, True, True, arch="10.0") == "symm-mem-multimem"
    assert allreduce_choice(vllm, 8, 4 * MiB, True, True, arch="10.3") == "symm-mem-multimem"
    assert allreduce_choice(vllm, 8, 100 * MiB, True, True, arch="10.3") == "nccl"
    assert allreduce_choice(vllm, 8, 100 * MiB, True, True, arch="10.0") == "symm-mem-multimem"
    # 4 GPUs on 10.3: custom to 4 MiB, then torch two-shot (4 is not a multimem size there) to 32 MiB
    assert allreduce_choice(vllm, 4, 8 * MiB, True, True, arch="10.3") == "symm-mem-two-shot"
    # the catalog's B300 and GB300 carry compute capability 10.3, B200 10.0
    cat = load_catalog()
    assert (cat.gpus["b300"].sm, cat.gpus["gb300"].sm, cat.gpus["b200"].sm) == ("10.3", "10.3", "10.0")


def test_vllm_ranges_for_the_plan_header(vllm):
    inf = math.inf
    assert allreduce_ranges(vllm, 8, nvlink=True, p2p=True, arch="hopper") == (
        (256 * KiB, "one-shot"),
        (64 * MiB, "symm-mem-multimem"),
        (inf, "nccl"),
    )
    assert allreduce_ranges(vllm, 8, nvlink=True, p2p=True) == (
        (256 * KiB, "one-shot"),
        (8 * MiB, "two-shot"),
        (inf, "nccl"),
    )
    assert allreduce_ranges(vllm, 4, nvlink=False, p2p=True) == ((inf, "nccl"),)


# --- SGLang 0.5.14: JIT CustomAllReduceV2 by default on NVLink, the sgl-kernel kernel on 2 PCIe GPUs -


def test_sglang_custom_allreduce_and_defaults():
    sg = load_engine("sglang-0.5.14")
    # custom_all_reduce_v2.py _maybe_init_config, H200 table (every capability but 10.x), 8 GPUs:
    # ModeConfig(160 * KB, 160 * KB): one-shot while bytes <= 160 KiB, two-shot to the 16 MiB buffer
    assert allreduce_choice(sg, 8, 160 * KiB, True, True, arch="hopper") == "one-shot"
    assert allreduce_choice(sg, 8, 160 * KiB + 16, True, True, arch="hopper") == "two-shot"
    assert allreduce_choice(sg, 8, 9 * MiB, True, True, arch="hopper") == "two-shot"  # no symm-mem by default
    assert allreduce_choice(sg, 8, 16 * MiB, True, True, arch="hopper") == "two-shot"  # should_custom_ar: <=
    assert allreduce_choice(sg, 8, 16 * MiB + 16, True, True, arch="hopper") == "nccl"
    # 4 GPUs: push 384 KiB, pull 256 KiB -> one-shot to 384 KiB on Hopper; B200 table 2 MiB, B300 (10.3) too
    assert allreduce_choice(sg, 4, 384 * KiB, True, True, arch="9.0") == "one-shot"
    assert allreduce_choice(sg, 4, 512 * KiB, True, True, arch="9.0") == "two-shot"
    for arch in ("10.0", "10.3"):
        assert allreduce_choice(sg, 4, 2 * MiB, True, True, arch=arch) == "one-shot"
        assert allreduce_choice(sg, 4, 2 * MiB + 16, True, True, arch=arch) == "two-shot"
        assert allreduce_choice(sg, 8, 720 * KiB, True, True, arch=arch) == "one-shot"
        assert allreduce_choice(sg, 8, 720 * KiB + 16, True, True, arch=arch) == "two-shot"
    # V2 needs full NVLink even at 2 GPUs: two PCIe GPUs keep CustomAllreduce (one-shot, <= 8 MiB)
    assert allreduce_choice(sg, 2, 8 * MiB, False, True, arch="8.9") == "one-shot"
    assert allreduce_choice(sg, 2, 8 * MiB + 16, False, True, arch="8.9") == "nccl"
    assert allreduce_choice(sg, 2, 16 * MiB, True, True, arch="9.0") == "one-shot"  # pull INF, 16 MiB buffer
    # sglang-0.4 keeps REDUCE_CASE: 4 GPUs one-shot below 512 KiB, 8 MiB strict
    old = load_engine("sglang-0.4")
    assert allreduce_choice(old, 4, 512 * KiB - 16, True, True, arch="10.0") == "one-shot"
    assert allreduce_choice(old, 4, 512 * KiB, True, True, arch="10.0") == "two-shot"
    assert allreduce_choice(old, 4, 9 * MiB, True, True, arch="10.0") == "nccl"
    assert load_cli("sglang").flag("dp_attention") == "--enable-dp-attention"
    assert load_cli("sglang").flag("max_batch") == "--max-running-requests"


def test_sglang_mem_fraction_static_rule():
    sg = load_engine("sglang-0.5.14")
    mib = 2**20
    # H100 80GB (81559 MiB), TP8: reserved = 512 + 1.5 x 8192 + 2 x 512 + 1024 x 8 / 8 = 14848 MiB
    # (>= the 10 GiB minimum), fraction = (81559 - 14848) / 81559 = 0.818
    assert default_memory_fraction(sg, 81559 * mib, tp=8) == pytest.approx(0.818, abs=1e-9)
    # RTX 4090 (24564 MiB), TP1: 512 + 1.5 x 2048 + 2 x 24 + 128 = 3760 MiB -> 0.847
    assert default_memory_fraction(sg, 24564 * mib, tp=1) == pytest.approx(0.847, abs=1e-9)


# --- TensorRT-LLM AUTO: allreduceOp.cpp selectImplementation + customAllReduceUtils.h table -----------


def test_trtllm_auto_lookup_table():
    """TensorRT-LLM 1.3 (commit 005b299): AllReduceBestStrategyTable, RESIDUAL_RMS_NORM rows.
    SM90 TP8 hidden 8192: {4, 4, 4, 4, 4, 4, 0, ...}: ONESHOT for 1-32 tokens, NCCL from 64."""
    t = load_engine("trtllm")
    assert t.version == "1.3.0rc20"
    h = 8192 * 2  # bytes per token, bf16
    assert allreduce_choice(t, 8, h, True, True, tokens=1, arch="9.0") == "one-shot"
    assert allreduce_choice(t, 8, 32 * h, True, True, tokens=32, arch="9.0") == "one-shot"
    assert allreduce_choice(t, 8, 63 * h, True, True, tokens=63, arch="9.0") == "one-shot"  # floor(log2 63) = 5
    assert allreduce_choice(t, 8, 64 * h, True, True, tokens=64, arch="9.0") == "nccl"
    # SM100 TP8 hidden 8192: {4 x 8, 5, 0 ...}: ONESHOT to 128 tokens, TWOSHOT at 256-511, NCCL from 512;
    # B300's SM 10.3 reads the SM 100 rows (sm_version >= 100 -> 100)
    for arch in ("10.0", "10.3"):
        assert allreduce_choice(t, 8, 128 * h, True, True, tokens=128, arch=arch) == "one-shot"
        assert allreduce_choice(t, 8, 256 * h, True, True, tokens=256, arch=arch) == "two-shot"
        assert allreduce_choice(t, 8, 512 * h, True, True, tokens=512, arch=arch) == "nccl"
    # SM90 TP4 hidden 512 (row "111111211112NNN"): 64 tokens TWOSHOT, 128 ONESHOT
    assert allreduce_choice(t, 4, 64 * 1024, True, True, tokens=64, arch="9.0") == "two-shot"
    assert allreduce_choice(t, 4, 128 * 1024, True, True, tokens=128, arch="9.0") == "one-shot"
    # outside the table (hidden 16384 > 8192): NCCL_SYMMETRIC, priced as NCCL
    assert allreduce_choice(t, 8, 16384 * 2, True, True, tokens=1, arch="9.0") == "nccl"
    # workspace: 16 MB for 2 GPUs, 8 MB above (decimal, inclusive); off NVLink -> NCCL
    assert allreduce_choice(t, 2, 16 * MB + 2, True, True, tokens=489) == "nccl"
    assert allreduce_choice(t, 4, 8 * MB + 2, True, True, tokens=100) == "nccl"
    assert allreduce_choice(t, 2, h, False, True, tokens=1) == "nccl"
    assert t.allreduce.fused_residual_rmsnorm
    with pytest.raises(ValueError, match="tokens"):
        allreduce_choice(t, 8, h, True, True)


def test_trtllm_1_0_rule_by_tokens():
    """TensorRT-LLM 1.0 (engines/trtllm-1.0.toml): allreduceOp.cpp selectImplementation, PR #5432:
    `seq_len > threshold` (128) -> NCCL, else MIN_LATENCY, one-shot at seq_len <= kOneShotMaxToken
    (128); the workspace and NVLink fallbacks as 1.3's. measured_comm.csv a100_sxm TRTLLM 1.0.0
    (hidden 4096, 8 KiB a token): 2 GPUs 1 MiB 11.56 us (128 tokens, the kernel), 2 MiB 47.65 us
    (256 tokens, NCCL's 47.58): the threshold holds at 2 GPUs too."""
    t, new = load_engine("trtllm-1.0"), load_engine("trtllm")
    assert (t.name, t.version) == ("trtllm-1.0", "1.0.0") and t.allreduce.custom.strategy is None
    h = 4096 * 2
    for ws in (2, 4, 8):
        assert allreduce_choice(t, ws, h, True, True, tokens=1, arch="8.0") == "one-shot"
        assert allreduce_choice(t, ws, 128 * h, True, True, tokens=128, arch="8.0") == "one-shot"
        assert allreduce_choice(t, ws, 129 * h, True, True, tokens=129, arch="8.0") == "nccl"
        assert allreduce_choice(t, ws, 256 * h, True, True, tokens=256, arch="8.0") == "nccl"  # >= 2 MiB
    # where 1.3's table runs its kernel: SM90 TP2 hidden 4096 RESIDUAL_RMS_NORM, 256 tokens ONESHOT
    assert allreduce_choice(new, 2, 256 * h, True, True, tokens=256, arch="9.0") == "one-shot"
    assert allreduce_choice(t, 2, 256 * h, True, True, tokens=256, arch="9.0") == "nccl"
    # 8 GPUs at 1 MiB (128 tokens): 1.0 runs its one-shot (83.22 us, NCCL 38.85); 1.3 SM90 TP8 hidden
    # 4096 ({4 x 7, 0, ...}) NCCL from 128 tokens
    assert allreduce_choice(t, 8, 128 * h, True, True, tokens=128, arch="9.0") == "one-shot"
    assert allreduce_choice(new, 8, 128 * h, True, True, tokens=128, arch="9.0") == "nccl"
    # the fallbacks: off NVLink, no P2P, above the workspace, a GPU without a CUDA capability
    assert allreduce_choice(t, 2, h, False, True, tokens=1, arch="8.9") == "nccl"
    assert allreduce_choice(t, 4, 8 * MB + 2, True, True, tokens=100, arch="8.0") == "nccl"
    assert allreduce_choice(t, 8, h, True, True, tokens=1, arch="") == "nccl"
    with pytest.raises(ValueError, match="tokens"):
        allreduce_choice(t, 8, h, True, True, arch="8.0")
    # a plan's ranges on 8 A100s at hidden 4096: one-shot to 128 tokens (1 MiB, inclusive), NCCL above
    from shardbudget.comm.collectives import make_group
    from shardbudget.engines.allreduce import allreduce_ranges_for

    r = allreduce_ranges_for("trtllm-1.0", make_group("hgx-a100", gpus=8), float(h))
    assert r.describe() == "< 1 MiB: one-shot; larger: NCCL"
    index = r.kind_index(np.array([1 * MiB, 1 * MiB + h]))
    assert [(r.kinds + r.at_edge)[i] for i in index] == ["one-shot", "nccl"]


def test_memory_fractions_and_what_they_count(vllm):
    assert vllm.memory.fraction == 0.9 and vllm.memory.fraction_of == "total"
    t = load_engine("trtllm")
    assert t.memory.fraction == 0.9 and t.memory.fraction_of == "free_after_weights"
    # custom all-reduce buffers: 8 MiB meta + 8 MiB IPC buffer + 8 MiB rank data (custom_all_reduce.py)
    assert vllm.memory.custom_ar_buffers_bytes == 24 * MiB
    assert load_engine("eager").memory.cuda_graph_pool_bytes == 0


def test_cuda_graphs_defaults(vllm):
    assert vllm.cuda_graphs.decode and vllm.cuda_graphs.max_batch == 512  # min(2 x 256, 512)
    eager = load_engine("eager")
    assert not eager.cuda_graphs.decode
    assert eager.host.per_kernel_launch_s > vllm.host.per_kernel_launch_s


def test_cli_flags_for_launch_lines():
    assert load_cli("vllm").flag("tensor_parallel") == "--tensor-parallel-size"
    assert load_cli("vllm").flag("expert_parallel") == "--enable-expert-parallel"
    assert load_cli("trtllm").flag("memory_fraction") == "--kv_cache_free_gpu_memory_fraction"
    assert load_engine("trtllm").launcher == "trtllm-serve"
    for name in ENGINE_NAMES:
        cli = load_cli(name)
        assert all(cli.flag(role) for role in ("tensor_parallel", "max_batch", "max_model_len", "memory_fraction"))
    with pytest.raises(
        CatalogError, match=r"engines/tgi.toml: cli has no flag for 'port' \(its roles: tensor_parallel"
    ):
        load_cli("tgi").flag("port")
    assert "port" in ROLES and "flags" not in ROLES and "positional" not in ROLES
    assert load_cli("sglang").programs["router"].package == "sglang-router==0.3.2"
    assert load_cli("sglang").disaggregation.bootstrap_port == 8998
    assert load_cli("sglang").support.images == {"cdna4": "lmsysorg/sglang:v0.5.23-rocm720-mi35x"}


def _raw(name: str) -> dict:
    """A preset file as parsed, to break (the strict reader's tests)."""
    import tomllib

    return tomllib.loads(read_builtin(f"engines/{name}.toml"))


def test_malformed_preset_names_file_and_key(vllm):
    raw = _raw("vllm")
    raw["memory"] = {**raw["memory"], "gpu_memory_utilization": 1.5}
    with pytest.raises(CatalogError, match=r"x.toml: memory.gpu_memory_utilization: expected a fraction in \(0, 1\]"):
        read_engine(raw, "x.toml")
    raw["memory"]["gpu_memory_utilization"] = 0.9
    raw["allreduce"] = {**raw["allreduce"], "order": ["custom", "nvls"]}
    with pytest.raises(UnknownNameError, match="'nvls'"):
        read_engine(raw, "x.toml")


def test_kinds_are_declared(vllm):
    seen = {
        allreduce_choice(vllm, ws, s, True, True, arch=a)
        for ws in (1, 2, 4, 8)
        for s in (1 * KiB, 1 * MiB, 40 * MiB, 1e9)
        for a in (None, "hopper")
    }
    assert seen <= set(ALLREDUCE_KINDS)


def test_sglang_static_fraction_holds_weights_and_kv_alone():
    """SGLang's mem_fraction_static is 'the fraction of the memory used for static allocation (model
    weights and KV cache memory pool)'; its reserve holds the rest. The issue's example, DeepSeek-V3
    FP8 at TP4 on B200 (183,359 MiB) with an 8k prompt at concurrency 16: weights + KV on a GPU over
    the device is what --mem-fraction-static must be (0.93-0.94 by hand: 157.4 + 9.7 GiB of 179.1);
    SGLang's default (0.855: 24 GiB reserved for a 16384-token chunk) cannot hold the weights, so at
    that fraction it does not fit, and without one it fits at the fraction it needs."""
    from shardbudget.step.scenario import precision_for
    from shardbudget.fabric.catalog import load_catalog
    from shardbudget.model import Plan, load_model
    from shardbudget.step.memory import fits, memory_need, raised_fraction, required_fraction

    cfg, gpu = load_model("deepseek-v3"), load_catalog().system("hgx-b200").gpu
    need = memory_need(
        cfg,
        Plan(4),
        precision=precision_for(cfg, load_catalog().system("hgx-b200"))[0],
        engine="sglang",
        batch=16,
        context=9216,
    )
    assert load_engine("sglang").memory.fraction_of == "static"
    assert default_memory_fraction(load_engine("sglang"), gpu.memory_bytes, tp=4) == pytest.approx(0.855)
    static = (need.weights + need.kv_cache) / gpu.memory_bytes
    assert 0.92 < static < 0.94
    assert not fits(need, gpu, engine="sglang", plan=Plan(4), utilization=0.855)
    assert fits(need, gpu, engine="sglang", plan=Plan(4))
    assert required_fraction(need, gpu, engine="sglang", plan=Plan(4)) == pytest.approx(0.94)
    assert float(raised_fraction(need, gpu, engine="sglang", plan=Plan(4))) == pytest.approx(0.94)
    # vLLM's 0.9 counts everything and is judged as it is: nothing raised
    assert np.isnan(raised_fraction(need, gpu, engine="vllm", plan=Plan(4)))


def test_release_floor_table_names_known_generations():
    raw = _raw("sglang-0.4")
    raw["kernels"] = {**raw["kernels"], "moe_call_floor": {"hoper": "230 us", "source": "x"}}
    with pytest.raises(UnknownNameError, match=r"'hoper'; did you mean 'hopper'"):
        read_engine(raw, "x.toml")
    raw["kernels"]["moe_call_floor"] = {"hopper": "230 us", "source": "x"}
    assert dict(read_engine(raw, "x.toml").moe_call_floor) == pytest.approx({"hopper": 230e-6})


# --- the strict reader (issue 32): a misspelt key is refused, never kept at its default ------------


@pytest.mark.parametrize(
    "table, typo, near",
    [
        ("host", "per_stepp", "per_step"),  # the example: per_step kept its default
        ("allreduce.custom", "max_bytez", "max_bytes"),  # ... and max_bytes
        ("cuda_graphs", "max_bach", "max_batch"),
        ("memory", "cuda_contxt", "cuda_context"),
        ("cli", "tensor_paralel", "tensor_parallel"),
        ("cli.programs.router", "packge", "package"),
        ("cli.support", "imagee", "image"),
        ("allreduce.custom.tuned", "max_byte", "max_bytes"),
    ],
)
def test_a_misspelt_preset_key_names_the_file_the_table_and_the_nearest_key(table, typo, near):
    raw = _raw("sglang")
    part = raw
    for k in table.split("."):
        part = part[k]
    part[typo] = part.get(near, "1 us")  # beside the right key, or in its place: refused either way
    with pytest.raises(CatalogError) as err:
        read_engine(raw, "engines/sglang.toml")
    assert str(err.value) == f"engines/sglang.toml: {table}: unknown field '{typo}'; did you mean '{near}'?"
    del part[near]  # the key misspelt alone: still refused as a misspelling, not reported missing
    with pytest.raises(CatalogError, match=f"unknown field '{typo}'; did you mean '{near}'"):
        read_engine(raw, "engines/sglang.toml")


def test_an_unknown_table_or_a_wrongly_typed_value_is_refused():
    raw = _raw("vllm")
    raw["hots"] = {"per_step": "1 us"}
    with pytest.raises(CatalogError, match=r"engines/vllm.toml: unknown field 'hots'; did you mean 'host'\?"):
        read_engine(raw, "engines/vllm.toml")
    raw = _raw("vllm")
    raw["cuda_graphs"]["decode"] = "yes"
    with pytest.raises(CatalogError, match=r"engines/vllm.toml: cuda_graphs.decode: expected true/false, got 'yes'"):
        read_engine(raw, "engines/vllm.toml")
    raw = _raw("vllm")
    raw["host"]["per_step_basis"] = 250
    with pytest.raises(CatalogError, match=r"host.per_step_basis: a note \('per_step_basis'\) is text"):
        read_engine(raw, "engines/vllm.toml")


def test_every_preset_reads_strictly_and_keeps_its_numbers():
    """Each shipped file reads whole under the strict reader, with the values the engines' sources give."""
    for name in ENGINE_NAMES:
        raw = _raw(name)
        assert read_engine(raw, f"engines/{name}.toml").name == name
    sglang = load_engine("sglang")
    assert sglang.memory.computed_default and sglang.memory.reserve.reserved_base_bytes == 512 * MiB
    assert sglang.cuda_graphs.max_batch_by_memory[0] == (20 * 2**30, 8, 8)  # 0.5.23's T4 / 4080 row
    assert load_engine("sglang-0.5.14").cuda_graphs.max_batch_by_memory[0] == (35 * 2**30, 24, 80)
    assert load_engine("vllm").memory.max_num_batched_tokens == 8192 and not load_engine("vllm").memory.computed_default
    assert load_engine("trtllm").memory.allreduce_workspace_bytes == 8e6


def test_engine_names_are_spelt_as_the_presets_name_them():
    """An engine's name names code (its launch builder, its labels): another case is refused with the
    right spelling, not accepted for some uses and refused by others."""
    with pytest.raises(UnknownNameError, match=r"unknown engine 'VLLM'; did you mean 'vllm'"):
        load_engine("VLLM")
    with pytest.raises(UnknownNameError, match=r"unknown engine 'SGLang'; did you mean 'sglang'"):
        load_cli("SGLang")


# --- vLLM 0.34.0 and SGLang 0.5.23 (issue 37): what each release's own source says -----------------


def test_vllm_034_flashinfer_first():
    v = load_engine("vllm")
    assert (v.version, v.nccl) == ("0.34.0", "2.30.7")  # torch 2.14.0 pins nvidia-nccl-cu13 2.30.7
    # FI_ALLREDUCE_FUSION_MAX_SIZE_MB[90][8] = 0.5, _FI_ALLREDUCE_ONE_SHOT_MAX_SIZES_MB[90][8] = 0.5: FlashInfer
    # one-shot to 512 KiB (inclusive); then 0.19's order (custom capped at 256 KiB: symmetric memory to 64 MiB)
    assert allreduce_choice(v, 8, 512 * KiB, True, True, arch="hopper") == "flashinfer-one-shot"
    assert allreduce_choice(v, 8, 512 * KiB + 16, True, True, arch="hopper") == "symm-mem-multimem"
    # [100][4] = 32 MiB max, one-shot to 4 MiB; B300 (103) 8 GPUs: 4 MiB, one-shot to 2 MiB
    assert allreduce_choice(v, 4, 4 * MiB + 16, True, True, arch="10.0") == "flashinfer-two-shot"
    assert allreduce_choice(v, 8, 2 * MiB + 16, True, True, arch="10.3") == "flashinfer-two-shot"
    # no row for Ampere / Ada (SM 8.x) and none without NVLink: the custom kernel as in 0.19
    assert allreduce_choice(v, 8, 64 * KiB, True, True, arch="ampere") == "one-shot"
    assert allreduce_choice(v, 2, 64 * KiB, False, True, arch="hopper") == "one-shot"
    # the all-reduce + RMSNorm fusion pass: any model at TP > 1 on one Hopper / Blackwell node
    assert v.fused_for("llama", "hopper", one_node=True, quantized=False) == (True, False)
    assert v.fused_for("llama", "ampere", one_node=True, quantized=False) == (False, False)
    assert load_engine("vllm-0.19").fused_for("llama", "hopper", one_node=True, quantized=False) == (False, False)
    # resolved_gpu_memory_utilization: 1.0 under the extensible KV cache; get_batch_defaults: 1024 sequences
    assert v.memory.fraction == 1.0 and v.memory.max_num_seqs == 1024


def test_sglang_0523_tuned_tables():
    sg = load_engine("sglang")
    assert (sg.version, sg.nccl) == ("0.5.23", "2.30.7")  # torch 2.14.1 pins nvidia-nccl-cu13 2.30.7
    # _sm90_configs()[8].graph = (128 KiB, 128 KiB, 32 MiB, mc 512 KiB..128 MiB), clipped to the 16 MiB buffer
    assert allreduce_choice(sg, 8, 128 * KiB, True, True, arch="hopper") == "one-shot"
    assert allreduce_choice(sg, 8, 128 * KiB + 16, True, True, arch="hopper") == "two-shot"
    assert allreduce_choice(sg, 8, 16 * MiB + 16, True, True, arch="hopper") == "nccl"
    # _sm100_configs()[4].graph one-shot to 0.625 MiB; every capability but 9.x / 10.x: 1 MiB
    assert allreduce_choice(sg, 4, 640 * KiB + 16, True, True, arch="10.0") == "two-shot"
    assert allreduce_choice(sg, 4, 1 * MiB, True, True, arch="ampere") == "one-shot"
    assert allreduce_choice(sg, 2, 1 * MiB + 16, True, True, arch="ampere") == "two-shot"
    # memory_hook.py: the 20-35 GiB row is 4096 tokens and 48 graph batches at TP < 4: RTX 4090 (24564
    # MiB) TP1 reserves 512 + 1.5 x 4096 + 2 x 48 + 128 = 6880 MiB -> 0.72
    assert default_memory_fraction(sg, 24564 * 2**20, tp=1) == pytest.approx(0.720, abs=1e-9)


def test_release_presets_and_rows():
    from shardbudget.engines.releases import LINES, age_note, diff, preset_for

    for engine, names in LINES.items():
        assert names[-1] == engine and all(n in ENGINE_NAMES for n in names)
    # a row is priced by the oldest preset at or after its release; exact where it was read there
    assert preset_for("vllm", "0.19.0").preset == "vllm-0.19" and preset_for("vllm", "0.19.0").exact
    assert preset_for("vllm", "0.14.0").preset == "vllm-0.19" and not preset_for("vllm", "0.14.0").exact
    assert preset_for("sglang", "v0.5.9 (lmsysorg/sglang:v0.5.9-cu130)").preset == "sglang-0.5.14"
    assert preset_for("sglang", "0.5.23").preset == "sglang"
    assert preset_for("trtllm", "1.0.0").preset == "trtllm-1.0"
    assert preset_for("vllm", "0.40.0").preset == "vllm" and not preset_for("vllm", "0.40.0").exact
    # no release stated: the preset current at the row's date
    assert preset_for("vllm", "not stated", date="2026-03").preset == "vllm-0.19"
    assert preset_for("sglang", "not stated", date="2025-07").preset == "sglang-0.4"
    assert preset_for("eager").preset == "eager"
    assert age_note("vllm-0.19").endswith("15 minor releases newer") and age_note("vllm") is None
    changed = {(c.table, c.field): (c.old, c.new) for c in diff("vllm-0.19", "vllm")}
    assert changed[("engine", "version")] == ("0.19.0", "0.34.0")
    assert changed[("memory", "fraction")] == ("0.9", "1.0")
    assert changed[("allreduce.flashinfer.max_bytes.9.0", "8")] == ("-", "512 KiB")
    assert not diff("vllm", "vllm")
