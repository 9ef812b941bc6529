"""The engines' custom all-reduce: when each engine's source runs its kernels (catalog/engines.toml)."""

import pytest

from shardbudget.comm.collectives import collective_cost, custom_allreduce_allowed, make_group
from shardbudget.errors import UnknownNameError


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
    assert algo("l40s-pcie", 64 << 10, "vllm", gpus=2) == "one-shot"
    assert algo("l40s-pcie", 64 << 10, "vllm", gpus=4) == "ring"
    assert algo("l40s-pcie", 64 << 10, "trtllm", gpus=2) == "ring"
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
    assert collective_cost("all-reduce", 1024, "hgx-b200", gpus=2, impl="vllm").time_s == pytest.approx(6.87e-6, rel=0.05)


def test_unknown_engine():
    with pytest.raises(UnknownNameError, match="did you mean"):
        collective_cost("all-reduce", 1024, "hgx-h100", impl="vlm")
