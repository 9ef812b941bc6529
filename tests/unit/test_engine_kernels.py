"""The engines' custom all-reduce: when each engine's source runs its kernels (catalog/engines.toml)."""

import pytest

from shardbudget.comm.collectives import collective_cost, custom_allreduce_allowed, make_group
from shardbudget.errors import UnknownNameError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.decide.request import request


def algo(system, n, impl, gpus=None):
    return collective_cost("all-reduce", n, system, gpus=gpus, impl=impl).algorithm


def test_vllm_thresholds_from_its_source():
    # csrc/custom_all_reduce.cuh: 2 GPUs one-shot; full NVLink <= 4 GPUs one-shot < 512 KiB,
    # <= 8 GPUs < 256 KiB, else two-shot; custom_all_reduce.py: max_size 8 MiB, then NCCL
    assert algo("hgx-h100", 4 << 20, "vllm", gpus=2) == "one-shot"
    assert algo("hgx-h100", 256 << 10, "vllm", gpus=4) == "one-shot"
    assert algo("hgx-h100", 512 << 10, "vllm", gpus=4) == "two-shot"
    assert algo("hgx-h100", (256 << 10) - 16, "vllm") == "one-shot"
    assert algo("hgx-h100", 256 << 10, "vllm") == "two-shot"
    assert algo("hgx-h100", 16 << 20, "vllm") not in ("one-shot", "two-shot")


def test_pcie_rules():
    # vLLM/SGLang: at most 2 PCIe-only GPUs (and only with P2P); TensorRT-LLM needs NVLink
    assert algo("l40s-pcie-nps1-degraded", 64 << 10, "vllm", gpus=2) == "one-shot"
    assert algo("l40s-pcie-nps1-degraded", 64 << 10, "vllm", gpus=4) == "ring"
    assert algo("l40s-pcie-nps1-degraded", 64 << 10, "trtllm", gpus=2) == "ring"
    assert "peer-to-peer" in custom_allreduce_allowed(make_group("rtx4090-pcie", gpus=2), "vllm")


def test_nvl72_trays():
    # vLLM/SGLang stay inside one host (a 4-GPU tray); TensorRT-LLM's MNNVL kernels span trays
    assert algo("gb300-nvl72", 64 << 10, "vllm", gpus=4) == "one-shot"
    assert algo("gb300-nvl72", 64 << 10, "vllm", gpus=8) != "one-shot"
    assert algo("gb300-nvl72", 64 << 10, "trtllm", gpus=8) == "one-shot"
    assert algo("gb300-nvl72", 64 << 20, "trtllm", gpus=8) == "two-shot"  # no 8 MB workspace limit


def test_measured_floors():
    # measured_comm.csv graph rows at 512 B-4 KiB (aiconfigurator-core 0.12.0): 8x H100 vLLM 0.24
    # 4.68 us, SGLang 0.5.14 3.53 us, TensorRT-LLM 1.3.0rc20 3.23 us; 2x B200 vLLM 6.87 us
    for impl, measured in (("vllm", 4.68e-6), ("sglang", 3.53e-6), ("trtllm", 3.23e-6)):
        t = collective_cost("all-reduce", 1024, "hgx-h100", impl=impl).time_s
        assert t == pytest.approx(measured, rel=0.12), impl
    assert collective_cost("all-reduce", 1024, "hgx-b200", gpus=2, impl="vllm").time_s == pytest.approx(
        6.87e-6, rel=0.05
    )


def test_unknown_engine():
    with pytest.raises(UnknownNameError, match="did you mean"):
        collective_cost("all-reduce", 1024, "hgx-h100", impl="vlm")


# --- the per-host rule, the same in allreduce, plan and deploy (issue 20, fault 3) -------------


def _plan_kinds(engine, tp, system="gb200-nvl72"):
    from shardbudget.decide.planner import plan as run_plan

    r = run_plan(request("llama-3.1-70b", system, batches=[1], engine=engine))
    return r.assumptions.allreduce[f"TP{tp}"]


def test_nvl72_host_is_a_compute_tray():
    s = load_catalog().system("gb200-nvl72")
    assert (s.gpus_per_node, s.host_gpus) == (72, 4)
    assert make_group("gb200-nvl72", gpus=8).hosts == 2
    assert make_group("gb200-nvl72", gpus=72).hosts == 18
    assert make_group("hgx-h100", gpus=8).hosts == 1


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_per_host_rule_in_allreduce_and_plan(engine):
    """vLLM's and SGLang's custom kernel need one host (in_the_same_node_as): on 4 GPUs of an NVL72
    it runs, on 8 (two trays) it does not, in `allreduce --impl` and in the plan's rule alike."""
    assert custom_allreduce_allowed(make_group("gb200-nvl72", gpus=4), engine) is None
    why = custom_allreduce_allowed(make_group("gb200-nvl72", gpus=8), engine)
    assert "one host" in why and "2 hosts" in why
    assert "one-shot" in _plan_kinds(engine, 4)
    assert "one-shot" not in _plan_kinds(engine, 8) and "two-shot:" not in _plan_kinds(engine, 8)


def test_vllm_symmetric_memory_crosses_trays_trtllm_runs_mnnvl():
    """Beyond a tray vLLM's torch symmetric memory still runs (fabric handles), to world size 8;
    TensorRT-LLM's MNNVL kernel runs at every TP on Grace hosts."""
    assert _plan_kinds("vllm", 8).startswith("vllm: < 128 MiB: symmetric-memory multimem")
    assert _plan_kinds("vllm", 16) == "vllm: NCCL at every size"
    for tp in (8, 16, 32, 64):
        assert "MNNVL" in _plan_kinds("trtllm", tp)
    # one-shot while message x GPUs <= 1 MiB (measured_comm GB300 MNNVL rows: 128 KiB on 8, 64 KiB on 16)
    assert algo("gb200-nvl72", 60 << 10, "trtllm", gpus=16) == "one-shot"
    assert algo("gb200-nvl72", 70 << 10, "trtllm", gpus=16) == "two-shot"
    assert algo("gb200-nvl72", 16 << 10, "trtllm", gpus=72) == "two-shot"


def test_per_host_rule_in_deploy():
    """deploy prices TP8 on an NVL72 with the plan's own rule: its ITL at its batch is the plan's."""
    from shardbudget.decide.deploy import Workload, deploy
    from shardbudget.decide.planner import plan as run_plan

    r = deploy(request("llama-3.1-8b", "gb200-nvl72", engine="vllm", work=Workload(context=4096)), gpus=8)
    opt = next(o for o in r.options if (o.tp, o.pp, o.replicas) == (8, 1, 1))
    result = run_plan(request("llama-3.1-8b", "gb200-nvl72", batches=[opt.max_batch], context=4096, engine="vllm"))
    row = next(x for x in result.results[0].rows if (x.tp, x.pp, x.ep, x.dp) == (8, 1, opt.ep, opt.dp))
    assert opt.itl_s == pytest.approx(row.itl_s, rel=1e-9)


def test_forced_custom_is_labelled_as_priced():
    """plan --impl custom on l40s-pcie-nps1-degraded: 4 GPUs have no P2P, so NCCL is priced and the header says so."""
    from shardbudget.decide.planner import plan as run_plan

    words = run_plan(
        request("llama-3.1-8b", "l40s-pcie-nps1-degraded", batches=[1], impl="custom")
    ).assumptions.allreduce
    assert words["TP2"] == "custom (forced by --impl)"
    assert words["TP4"].startswith("NCCL: --impl custom cannot run here") and "peer-to-peer" in words["TP4"]


def test_deploy_refuses_gpus_spread_over_more_nodes():
    """deploy --gpus 8 --nodes 4 on hgx-h100: the header said 4 nodes while one was priced."""
    from shardbudget.decide.deploy import deploy
    from shardbudget.errors import PlanError

    with pytest.raises(PlanError, match="8 GPUs fill 1 x hgx-h100.*not 4"):
        deploy(request("llama-3.1-8b", "hgx-h100", nodes=4), gpus=8)


def test_nvls_runs_simple_only():
    from shardbudget.errors import PlanError

    with pytest.raises(PlanError, match="NVLS runs the Simple protocol only"):
        collective_cost("all-reduce", 16384, "gb200-nvl72", gpus=72, algo="nvls", protocol="ll")
    with pytest.raises(PlanError, match="NVLS needs NVSwitch"):
        collective_cost("all-reduce", 16384, "hgx-a100", algo="nvls")


def test_trtllm_two_shot_at_two_gpus_is_one_exchange():
    """TensorRT-LLM's two-shot at 2 ranks (allreduce_fusion_kernel_twoshot_sync) moves n/2 each way
    with the one peer, the one-shot's n: priced as the one-shot (catalog two_shot_pair_extra_us 0),
    not with the 7.9 us Hopper barrier fitted on 4 and 8 GPUs, which still applies at TP4."""
    from shardbudget.comm.custom_kernels import custom_candidate
    from shardbudget.comm.lines import times_and_latencies_s
    import numpy as np

    n = np.array([128 << 10], dtype=float)
    pair = make_group("hgx-h100", nodes=1, gpus=2)
    one, two = (times_and_latencies_s([custom_candidate(pair, s, engine="trtllm")], n)[0][0] for s in (1, 2))
    assert two == pytest.approx(one, rel=1e-12)
    # by hand: launch 2.67 us + 131072 B / (0.691 x 2-GPU H100 busbw): measured 3.29 us at 128 KiB
    assert one * 1e6 == pytest.approx(3.29, rel=0.05)
    quad = make_group("hgx-h100", nodes=1, gpus=4)
    one4, two4 = (times_and_latencies_s([custom_candidate(quad, s, engine="trtllm")], n)[0][0] for s in (1, 2))
    assert two4 - one4 > 5e-6  # 4 GPUs: the fitted second barrier (7.89 us on Hopper) stays


def test_vllm_symmetric_memory_on_h100_tp8_against_its_release_rows():
    """torch symmetric memory (multimem) as vLLM 0.19.0 runs it on 8 H100s, against that release's
    rows (measured_comm.csv vLLM_custom_graph 0.19.0 h100_sxm, 8 GPUs), within 7%; at 256 KiB it is
    no faster than the one-shot just below vLLM's switch (the rows rise 10.63 -> 10.70 us there)."""
    from shardbudget.comm.custom_kernels import custom_candidate, symm_mem_candidate
    from shardbudget.comm.lines import times_and_latencies_s
    import numpy as np

    group = make_group("hgx-h100", nodes=1, gpus=8)
    rows = {256 << 10: 10.70, 512 << 10: 11.87, 1 << 20: 14.82, 32 << 20: 177.75}
    t, _ = times_and_latencies_s([symm_mem_candidate(group)], np.array(list(rows), dtype=float))
    assert t * 1e6 == pytest.approx(list(rows.values()), rel=0.07)
    one, _ = times_and_latencies_s([custom_candidate(group, 1)], np.array([float((256 << 10) - 1)]))
    assert t[0] >= one[0]
