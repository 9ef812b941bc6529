"""NCCL's graph search on one NVLink switch (comm/nccl_graph.py), held to what NCCL is measured to run.

* stas00/ml-engineering's SHARP table (nccl_tests.csv, AWS p6-b200, NCCL 2.27.7, 8 GiB) says which
  algorithm NCCL ran at each group size: "NCCL picks Ring" at 4 and 5 GPUs, "NCCL picks NVLS" at 6,
  7 and 8. NCCL's estimate chooses by the graphs' channels x speed, so this pins the NVLS graph.
* measured_comm.csv's b200_sxm rows at three releases: 4 GPUs, 8 MiB take 48.1 us (2.27.5), 48.6
  (2.28.9) and 84.9 (2.29.2); 16 MiB 77.0, 77.8 and 95.8. v2.29.2 cut Blackwell's
  perChMaxRingLL128Bws from 2 x 36.7 to 34.5 GB/s a channel (tuning.cc), which ranks the 16-channel
  ring's LL128 (552 GB/s) below Simple (720): NCCL runs Simple there. The same cap makes 8 B200s'
  and B300s' all-gather jump from 44 us at 8 MiB to 100-102 us at 16 MiB under 2.29.2.
"""

from __future__ import annotations

import pytest

from shardbudget.comm.collectives import intra_path, make_group, sweep
from shardbudget.comm.nccl_graph import nvls_graph, ring_graph
from shardbudget.comm.versions import at_stated
from shardbudget.fabric.catalog import load_catalog

GB = 1e9
MiB = 2**20


@pytest.mark.parametrize(
    "system, gpus, channels, speed_gbps",
    [
        ("hgx-b200", 4, 4, 90),  # 5 x 90 <= 721.8 GB/s (the array's fastest)
        ("hgx-b200", 8, 8, 80),  # 9 x 90 > 721.8, 9 x 80 fits
        ("hgx-h100", 8, 8, 40),  # 9 x 50 > 370.8, 9 x 40 fits
        ("gb200-nvl72", 16, 16, 40),  # 17 x 45 > 721.8
        ("gb200-nvl72", 72, 32, 20),  # 32 heads at most: 33 x 24 > 721.8
    ],
)
def test_nvls_graph_by_hand(system, gpus, channels, speed_gbps):
    """One channel per GPU (at most 32); each loads every link with its speed, its head's twice."""
    assert nvls_graph(make_group(system, gpus=gpus), gpus) == (channels, speed_gbps * GB)


@pytest.mark.parametrize(
    "system, channels, speed_gbps",
    [
        ("hgx-b200", 16, 45),  # 8 x 90 (720 of 721.8), doubled at half speed
        ("hgx-h100", 12, 30),  # 6 x 60 (360 of 370.8), doubled
        ("hgx-a100", 12, 20),  # 6 x 40 (240), doubled: sm80 doubles at any channel count from 25 GB/s
    ],
)
def test_ring_graph_by_hand(system, channels, speed_gbps):
    group = make_group(system, gpus=8)
    assert ring_graph(group, intra_path(group.system, 8)) == (channels, speed_gbps * GB)


@pytest.mark.parametrize("gpus, algorithm", [(4, "ring"), (5, "ring"), (6, "nvls"), (7, "nvls"), (8, "nvls")])
def test_nccl_2_27_picks_what_stas00_saw_on_b200(gpus, algorithm):
    """stas00's p6-b200 table at 8 GiB, NCCL 2.27.7: the default run's algorithm by group size."""
    catalog = at_stated(load_catalog(), "2.27.7")
    cost = sweep("all-reduce", [8 * 2**30], "hgx-b200", gpus=gpus, catalog=catalog)[0]
    assert cost.algorithm == algorithm


@pytest.mark.parametrize(
    "version, size_mib, measured_us, protocol, tolerance",
    [
        ("2.27.5", 8, 48.1, "ll128", 0.15),
        ("2.27.5", 16, 77.0, "ll128", 0.25),
        ("2.28.9", 8, 48.6, "ll128", 0.15),
        ("2.28.9", 16, 77.8, "ll128", 0.25),
        ("2.29.2", 8, 84.9, "simple", 0.10),
        ("2.29.2", 16, 95.8, "simple", 0.10),
    ],
)
def test_the_2_29_ll128_cap_hands_4_b200s_to_simple(version, size_mib, measured_us, protocol, tolerance):
    """measured_comm.csv b200_sxm, 4 GPUs: LL128 up to 2.28, Simple in 2.29 (its step at 8 MiB)."""
    catalog = at_stated(load_catalog(), version)
    cost = sweep("all-reduce", [size_mib * MiB], "hgx-b200", gpus=4, catalog=catalog)[0]
    assert (cost.algorithm, cost.protocol) == ("ring", protocol)
    assert cost.time_s * 1e6 == pytest.approx(measured_us, rel=tolerance)


@pytest.mark.parametrize("system, measured_us", [("hgx-b200", 102.1), ("hgx-b300", 100.5)])
def test_the_2_29_ll128_cap_explains_the_8_gpu_all_gather_step(system, measured_us):
    """measured_comm.csv, 8 GPUs, all-gather of 16 MiB under NCCL 2.29.2 (8 MiB: 44 us). Priced at
    the catalog's release (cap 40 GB/s: LL128 at 46 us) it was 55% short."""
    cost = sweep("all-gather", [16 * MiB], system, gpus=8, catalog=at_stated(load_catalog(), "2.29.2"))[0]
    assert cost.protocol == "simple"
    assert cost.time_s * 1e6 == pytest.approx(measured_us, rel=0.10)
    master = sweep("all-gather", [16 * MiB], system, gpus=8)[0]
    assert master.protocol == "ll128"


def test_releases_set_their_own_tables_both_ways():
    """at_nccl to an older release and back gives the catalog's tables again (73.4 -> 40 GB/s a
    channel; sm100's speed array without, then with, 45 GB/s)."""
    from shardbudget.comm.versions import at_nccl

    catalog = load_catalog()
    old = at_nccl(catalog, "2.27")
    assert old.nccl.ring_ll128_per_channel_bytes_per_s["blackwell"] == 73.4 * GB
    assert 45 * GB not in old.nccl.search_speeds("blackwell")
    back = at_nccl(old, "2.30")
    assert back.nccl.ring_ll128_per_channel_bytes_per_s == catalog.nccl.ring_ll128_per_channel_bytes_per_s
    assert back.nccl.search_speeds("blackwell") == catalog.nccl.search_speeds("blackwell")
    assert at_nccl(catalog, "2.29").nccl.ring_ll128_per_channel_bytes_per_s["blackwell"] == 34.5 * GB
