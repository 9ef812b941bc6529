"""The prior a held-out PCIe box's SHM hop starts from (calibrate.fallback.shm_prior), pinned to
the public rows of data/shm_public.csv (issue 20: the l40s-pcie-nps1-degraded and rtx4090-pcie folds no longer take
the other box's figure alone).

By hand, from the sources:
- Gen4, one socket: AWS g5.48xlarge, 4x A10G on EPYC Rome in NPS1, NCCL 2.18.5 (pytorch#127077):
  29388800 B in 14207 us -> algbw 2.069 GB/s, busbw x 2(4-1)/4 = 3.10 GB/s.
- Gen5, one socket: 4x RTX PRO 6000 on EPYC Turin (NVIDIA/nccl PR #2080, stock SHM) 37.64 GB/s at
  128 MiB; 4x RTX 5090 on Xeon 8480+ (NVIDIA/nccl#1639) 35 GB/s. Their median 36.3 is the catalog's
  pcie5-no-p2p 35 GB/s within 5%.
- The folds: l40s-pcie-nps1-degraded held out takes median(3.10 public, 3.74 fitted RTX 4090) = 3.42 GB/s (its own
  4-GPU rings carry 5.15); rtx4090-pcie held out takes median(3.10, 5.15 fitted L40S) = 4.12 (its own
  2-GPU ring 3.74). Gen4 SHM hosts span 3.10-5.15 (1.66x), Gen5 35-37.6: the generation alone does
  not fix a Gen4 host's hop to better than +-25% (the L40S box is the fastest Gen4 host known).
"""

from __future__ import annotations


import pytest

from shardbudget.calibrate import loso, shm_public
from shardbudget.calibrate.fit_pcie import pcie_generation

from shardbudget.fabric.catalog import load_catalog  # noqa: E402

GB = 1e9


def test_rows_are_independent_of_the_scored_boxes():
    rows = shm_public.load_rows()
    assert len(rows) == 5
    assert all(r.source.startswith("https://github.com/") for r in rows)
    # none of them is a row of a system loso.py scores: the prior carries nothing of a held-out box
    assert {r.system for r in rows} == {""}


def test_a10g_row_recomputes_from_size_and_time():
    (a10g,) = [r for r in shm_public.load_rows() if "A10G" in r.hardware]
    algbw = 29388800 / 14207e-6
    assert a10g.busbw_bytes_per_s == pytest.approx(algbw * 2 * 3 / 4, rel=0.01)


def test_one_socket_hops_by_generation():
    assert shm_public.one_socket_hops(4) == pytest.approx([3.10 * GB])
    assert shm_public.one_socket_hops(5) == pytest.approx([35 * GB, 37.64 * GB])  # one value per host
    assert shm_public.one_socket_hops(3) == []


def test_catalog_gen5_shm_hop_matches_public_hosts():
    cat = load_catalog()
    hops = shm_public.one_socket_hops(5)
    assert cat.fabrics["pcie5-no-p2p"].achievable_bytes_per_s == pytest.approx(sum(hops) / len(hops), rel=0.05)
    assert pcie_generation(cat, cat.fabrics["pcie5-no-p2p"]) == 5
    assert pcie_generation(cat, cat.fabrics["pcie4-shm"]) == 4


@pytest.mark.parametrize("system, prior_gbps", [("l40s-pcie-nps1-degraded", 3.42), ("rtx4090-pcie", 4.12)])
def test_held_out_fold_takes_the_generation_prior(data_dir, system, prior_gbps):
    fold = loso.fit_without(system, data_dir)
    shm = load_catalog().system(system).pcie.shm
    assert fold.fabric_achievable[shm.name] == pytest.approx(prior_gbps * GB, rel=0.02)
