"""GPUDirect RDMA on or off as NCCL decides (paths.cc ncclTopoCheckGdr), and the host-staged path
priced where it is off (comm/net_path.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shardbudget.comm.collectives import make_group, sweep
from shardbudget.comm.nccl_algos import net_hop_s, nic_bytes_per_s
from shardbudget.comm.net_path import STAGED_SHARE, describe, gdr, staged
from shardbudget.errors import CatalogError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.fabric.nccl_constants import parse_version

GiB = 1 << 30

# NVIDIA/nccl#1579 (2025-01-20): two GH200 nodes, (4) 200 Gb/s ports each, NCCL 2.24.3,
# all_reduce_perf at 2048M, in-place busbw: 79.72 GB/s by default (GDR off: the NIC hangs off the
# Grace CPU, distance PHB > PXB) and 96.07 GB/s with NCCL_NET_GDR_LEVEL=SYS.
GH200 = """
[systems.gh200-2x]
description = "GH200 nodes of NVIDIA/nccl#1579: 1 GPU each, 4x 200 Gb/s InfiniBand on the Grace CPU"
gpu = "h100-sxm"
gpus_per_node = 1
topology = "single"
intra_fabric = "nvswitch-gen3"
cpu = "grace"
nic_fabric = "ib-hdr"
nics_per_node = 4
rail_optimized = true
source = "https://github.com/NVIDIA/nccl/issues/1579"
"""


def _at(catalog, version: tuple[int, int]):
    return replace(catalog, nccl=replace(catalog.nccl, version=version))


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


@pytest.mark.parametrize(
    "system, path, on",
    [
        ("hgx-h100", "pxb", True),  # NIC under the GPU's PCIe switch
        ("gb200-nvl72", "p2c", True),  # NIC on Grace, GPU over C2C: NET_GDR_C2C on from 2.27
        ("l40s-pcie-nps1-degraded", "phb", False),  # NICs on a CPU root port: PHB > PXB
        ("rtx-pro-6000-pcie", "pxb", True),
    ],
)
def test_gdr_follows_the_gpu_nic_distance(cat, system, path, on):
    s = cat.system(system)
    assert s.nic_path == path
    assert gdr(s, cat.nccl) is on
    assert staged(s, cat.nccl) is (not on)


def test_c2c_gdr_is_off_before_2_27(cat):
    """paths.cc: NCCL_PARAM(NetGdrC2c, "NET_GDR_C2C", 0) at v2.26.2, 1 from v2.27.3."""
    s = cat.system("gb200-nvl72")
    assert not gdr(s, _at(cat, (2, 26)).nccl)
    assert gdr(s, _at(cat, (2, 27)).nccl)
    assert "NET_GDR_C2C" in describe(s, _at(cat, (2, 26)).nccl)


def test_socket_transport_is_not_staged_twice(cat):
    """A TCP NIC's measured figure already holds its copies through the host."""
    tcp = replace(cat.system("l40s-pcie-nps1-degraded"), nic_fabric=cat.fabric("tcp-100"))
    assert not gdr(tcp, cat.nccl) and not staged(tcp, cat.nccl)


def test_staged_bandwidth_and_hop_by_hand(cat):
    """l40s-pcie-nps1-degraded, 2 nodes x 8 GPUs: 4 shared RoCE 200G NICs at 83% (host-staged), under half of
    each socket's root complex (EPYC NPS1: host_bandwidth per socket); one more PCIe hop per
    network step (tuning.cc hwLat PCI ring Simple 5.7 us)."""
    s = cat.system("l40s-pcie-nps1-degraded")
    group = make_group(s, nodes=2, catalog=cat)
    nic = s.nic_fabric.achievable_bytes_per_s
    expected = min(4 * nic * STAGED_SHARE, 2 * s.cpu.host_bytes_per_s / 2)
    assert nic_bytes_per_s(group) == pytest.approx(expected, rel=1e-12)
    assert net_hop_s(group, "simple", "ring", True) == pytest.approx(s.nic_fabric.hop_latency_s["simple"] + 5.7e-6)


def test_gh200_staged_and_gdr_within_5_percent_of_nccl_1579(tmp_path):
    path = tmp_path / "gh200.toml"
    path.write_text(GH200, encoding="utf-8")
    cat = load_catalog([str(path)])
    busbw = {}
    for version in ((2, 24), (2, 27)):  # 2.24: GDR off on C2C, as the default run
        c = sweep("all-reduce", [2 * GiB], "gh200-2x", nodes=2, gpus=2, catalog=_at(cat, version))[0]
        busbw[version] = c.busbw_bytes_per_s / 1e9
    assert busbw[(2, 24)] == pytest.approx(79.72, rel=0.05)
    assert busbw[(2, 27)] == pytest.approx(96.07, rel=0.05)
    assert busbw[(2, 24)] / busbw[(2, 27)] == pytest.approx(79.72 / 96.07, rel=0.01)


@pytest.mark.parametrize("text, parsed", [("2.27", (2, 27)), ("2.26.2", (2, 26)), ("v2.28.3-1", (2, 28))])
def test_nccl_version_parses(text, parsed):
    assert parse_version(text) == parsed


@pytest.mark.parametrize("text", ["2", "two.27", "3.0"])
def test_nccl_version_refuses_nonsense(text):
    with pytest.raises(CatalogError, match="NCCL version"):
        parse_version(text)
