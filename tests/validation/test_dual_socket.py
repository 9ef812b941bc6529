"""Dual-socket PCIe boxes: the degraded EPYC-in-NPS1 profile (l40s-pcie-nps1-degraded) beside a healthy dual-socket
EPYC (rtx-pro-6000-2s-epyc), each against the measurement it names (issue 20, item 6).

- l40s-pcie-nps1-degraded: measured_comm.csv l40s NCCL 2.27.3, 8 GPUs at 128-512 MiB all-reduce busbw 1.45 GB/s,
  one EPYC host in NPS1 mode (host-staged streams interleave in the CPU, NVIDIA/nccl#1285, fixed
  there by NPS4).
- rtx-pro-6000-2s-epyc: NVIDIA/nccl PR #2036, dual EPYC 9575F with 8x RTX PRO 6000: 8-GPU ring
  busbw 21.12 GB/s average (23.86 peak), 2-GPU same-socket 37.90, 2-GPU cross-socket 32.18.
"""

import pytest

from shardbudget.comm.collectives import sweep
from shardbudget.fabric.catalog import load_catalog

MiB = 2**20


def busbw_gbps(system: str, gpus: int, size: float = 512 * MiB) -> float:
    return sweep("all-reduce", [size], system, gpus=gpus)[0].busbw_bytes_per_s / 1e9


def test_degraded_nps1_profile_is_named_and_keeps_its_measurement():
    cat = load_catalog()
    # the name says it (the loader refuses a `degraded` entry whose name does not), and so does the entry
    assert "NPS1" in cat.systems["l40s-pcie-nps1-degraded"].degraded
    assert "NPS1" in cat.cpus["epyc-nps1-degraded"].degraded
    assert busbw_gbps("l40s-pcie-nps1-degraded", 8) == pytest.approx(1.45, rel=0.05)


def test_healthy_dual_socket_epyc_from_nccl_pr_2036():
    cat = load_catalog()
    assert cat.systems["rtx-pro-6000-2s-epyc"].description.startswith("HEALTHY")
    assert not cat.systems["rtx-pro-6000-2s-epyc"].degraded and not cat.cpus["epyc-turin"].degraded
    # 8 GPUs: the ring crosses the sockets twice; one host-staged stream across carries 21.1 GB/s
    assert busbw_gbps("rtx-pro-6000-2s-epyc", 8) == pytest.approx(21.12, rel=0.10)
    # 2 GPUs of one socket (P2P through the root complexes, allowed on AMD for <= 2 GPUs): 37.90
    assert busbw_gbps("rtx-pro-6000-2s-epyc", 2) == pytest.approx(37.90, rel=0.10)
    # the healthy box is 14x the degraded one at 8 GPUs
    assert busbw_gbps("rtx-pro-6000-2s-epyc", 8) > 10 * busbw_gbps("l40s-pcie-nps1-degraded", 8)
