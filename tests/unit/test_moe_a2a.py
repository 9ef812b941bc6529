"""MoE dispatch and combine lines (comm/moe_a2a.py): where the bytes go in each DeepEP mode, which
mode a backend runs, and how a plan's all-to-all is priced under each."""

from __future__ import annotations

import numpy as np
import pytest

from shardbudget.comm import moe_a2a
from shardbudget.comm.collectives import collective_cost, make_group
from shardbudget.comm.nccl_algos import alltoall
from shardbudget.errors import PlanError, UnknownNameError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import CollectiveCall, Plan, load_model
from shardbudget.model.comms import A2A
from shardbudget.step.compose import compile_step
from shardbudget.step.settings import PlanSettings


def test_expected_distinct_by_hand():
    assert moe_a2a.expected_distinct(8, 1) == 1.0
    assert moe_a2a.expected_distinct(8, 2) == pytest.approx(2 * (1 - 0.5**8))  # 1.992
    assert moe_a2a.expected_distinct(1, 16) == pytest.approx(1.0)


def test_low_latency_sends_every_copy_where_its_expert_is():
    one = moe_a2a.split(make_group("hgx-h100"), "low_latency", 8)
    assert (one.nvl_part, one.net_part) == (pytest.approx(7 / 8), 0.0)
    four = moe_a2a.split(make_group("hgx-h100", nodes=4), "low_latency", 8)
    assert (four.nvl_part, four.net_part) == (pytest.approx(7 / 32), pytest.approx(24 / 32))


def test_normal_mode_crosses_the_network_once_per_node():
    """2 nodes, top-8: low latency sends half of the 8 copies over the network, normal one per token
    (the other node is reached by 0.996 of tokens): 4x less network traffic."""
    two = make_group("hgx-h100", nodes=2)
    ll, normal = moe_a2a.split(two, "low_latency", 8), moe_a2a.split(two, "normal", 8)
    assert normal.net_part == pytest.approx(2 * (1 - 0.5**8) / 2 / 8)
    assert ll.net_part / normal.net_part == pytest.approx(4.0, rel=0.01)


def test_backend_modes():
    assert moe_a2a.mode_for("nccl", "decode") is None
    assert moe_a2a.mode_for("deepep", "prefill") == "normal"
    assert moe_a2a.mode_for("deepep", "decode") == "low_latency"
    assert moe_a2a.mode_for("deepep-ll", "prefill") == "low_latency"
    assert moe_a2a.mode_for("deepep-normal", "decode") == "normal"
    with pytest.raises(UnknownNameError, match="did you mean 'deepep-ll'"):
        moe_a2a.mode_for("deepep-lowlat", "decode")
    with pytest.raises(UnknownNameError):
        PlanSettings(moe_a2a="pplx")


def test_pair_line_is_the_mean_of_dispatch_and_combine():
    group = make_group("hgx-h100", nodes=4)
    n = 7.3e6
    line = moe_a2a.pair_line(group, "low_latency", 8)
    both = sum(moe_a2a.call_s(group, "low_latency", n, phase=p, topk=8) for p in ("dispatch", "combine"))
    assert 2 * line.time_s(n) == pytest.approx(both)
    # dispatch is FP8: (1 + 4/128) / 2 of the combine's bytes, the same floor
    d, c = (moe_a2a.call_s(group, "low_latency", n, phase=p, topk=8) - 35e-6 for p in ("dispatch", "combine"))
    assert d / c == pytest.approx(moe_a2a.FP8_WIRE)
    with pytest.raises(PlanError, match="dispatch or a combine"):
        moe_a2a.call_s(group, "low_latency", n, phase="both", topk=8)


def test_nvl72_rack_runs_over_nvlink_and_racks_over_rdma():
    """On one GB200 NVL72 every copy travels over NVLink (682 GB/s achievable); a second rack sends half
    over its GPU's 400 Gb/s NIC, about 7x slower per byte."""
    rack = moe_a2a.pair_line(make_group("gb200-nvl72", gpus=64), "low_latency", 8)
    racks = moe_a2a.pair_line(make_group("gb200-nvl72", nodes=2), "low_latency", 8)
    assert rack.algbw_bytes_per_s / racks.algbw_bytes_per_s > 5


def test_no_deepep_without_nvlink_and_the_engine_runs_nccl():
    group = make_group("l40s-pcie-switch")
    assert "NVLink" in moe_a2a.available(group)
    assert moe_a2a.pair_line(group, "low_latency", 8) is None
    assert moe_a2a.moe_lines(group, "deepep", "decode", 8) == (alltoall(group),)


def test_cli_line_names_deepep_and_nccl_stays_auto():
    a = collective_cost("all-to-all", 1 << 20, "hgx-h100", nodes=2, algo="deepep-ll")
    assert (a.algorithm, a.impl) == ("deepep-ll", "deepep")
    assert collective_cost("all-to-all", 1 << 20, "hgx-h100", nodes=2).algorithm == "direct"


@pytest.mark.parametrize(
    "backend,phase,mode",
    [("deepep-ll", "decode", "low_latency"), ("deepep", "prefill", "normal"), ("nccl", "decode", None)],
)
def test_a_plans_moe_all_to_all_is_priced_by_its_backend(backend, phase, mode):
    """DeepSeek-V3 TP8/EP8/DP8 (data-parallel attention) on one HGX H200: its MoE layers'
    dispatch + combine at the backend's line; the dense layers' all-gather untouched. Under nccl,
    TensorRT-LLM's, which keeps NCCL's all-to-all (vLLM and SGLang gather and reduce-scatter:
    test_moe_dispatch.py)."""
    cfg = load_model("deepseek-v3")
    catalog = load_catalog()
    plan = Plan(tp=8, ep=8, dp=8)
    step = compile_step(
        cfg,
        catalog.system("hgx-h200"),
        plan,
        catalog,
        phase=phase,
        settings=PlanSettings(moe_a2a=backend),
        engine="trtllm" if backend == "nccl" else "vllm",
    )
    group = step.groups["ep"]
    msg = np.array([3.0e6])
    t, _ = step.comms.call_s(CollectiveCall(A2A, msg, "ep", 2), msg)
    line = alltoall(group) if mode is None else moe_a2a.pair_line(group, mode, cfg.experts_per_token)
    assert float(t[0]) == pytest.approx(line.time_s(3.0e6))
