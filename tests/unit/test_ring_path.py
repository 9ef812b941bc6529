"""The intra-node topology: which transport each ring hop takes and which links the hops share."""

import pytest

from shardbudget.errors import CatalogError, UnknownNameError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.fabric.ring_path import p2p_level, path_type, ring_path


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_l40s_collapse_comes_from_the_transports(cat):
    """2 GPUs: P2P through the AMD root complex (NCCL allows it for <= 2 GPUs on AMD) at the
    hostbridge rate, 20.1 GB/s. 4 GPUs: P2P stops at PXB, so every hop goes through host memory, two
    passes of the socket's 41.1 GB/s host path each: 41.1 / 8 = 5.14 GB/s. 8 GPUs: two hops cross the
    sockets at 1.45 GB/s per host-staged stream. (measured_comm.csv l40s NCCL 2.27.3 all-reduce busbw
    at 512 MiB: 20.1, 5.16, 1.45 GB/s)"""
    s = cat.system("l40s-pcie-nps1-degraded")
    two, four, eight = (ring_path(s, g) for g in (2, 4, 8))
    assert two.transports == ("p2p", "p2p") and two.busbw_bytes_per_s == pytest.approx(20.1e9)
    assert set(four.transports) == {"shm"} and four.busbw_bytes_per_s == pytest.approx(41.1e9 / 8)
    assert "host0 shared by 8" in four.bottleneck
    assert eight.busbw_bytes_per_s == pytest.approx(1.45e9)
    assert not four.p2p and two.p2p


def test_nccl_p2p_level_rules(cat):
    amd, intel = cat.system("l40s-pcie-nps1-degraded"), cat.system("h100-pcie")
    assert p2p_level(amd, 2) == "sys" and p2p_level(amd, 3) == "pxb"
    assert p2p_level(intel, 2) == "pxb"
    assert path_type(amd, 0, 1) == "phb" and path_type(amd, 3, 4) == "sys"
    assert path_type(intel, 0, 1) == "nvl" and path_type(intel, 1, 2) == "pix" and path_type(intel, 3, 4) == "sys"


def test_geforce_driver_disables_p2p_and_a_patched_driver_restores_it(cat):
    assert set(ring_path(cat.system("rtx4090-pcie"), 2).transports) == {"shm"}
    assert ring_path(cat.system("rtx4090-pcie-p2p"), 2).transports == ("p2p", "p2p")
    # the patched driver does not change NCCL's level: between switches it is still SHM
    assert ring_path(cat.system("rtx4090-pcie-p2p"), 4).transports == ("p2p", "shm", "p2p", "shm")


def test_net_across_sockets_where_the_nic_sits_under_the_gpu_switch(cat):
    # RTX PRO Server: CX8 switch with 2 GPUs and its NIC; across the sockets NCCL's topology rates the
    # NIC (min(48, 100) GB/s) above the GPU-to-GPU path (min(48, 48, 22) GB/s) and uses NET
    hops = ring_path(cat.system("rtx-pro-6000-pcie"), 8).transports
    assert hops == ("p2p", "shm", "p2p", "net", "p2p", "shm", "p2p", "net")


def test_nvswitch_rings_are_all_nvlink(cat):
    p = ring_path(cat.system("hgx-h100"), 8)
    assert set(p.transports) == {"nvlink"} and p.nccl_link == "nvlink" and p.nvls
    assert p.busbw_bytes_per_s == cat.fabric("nvswitch-gen3").achievable_bytes_per_s


def _user(tmp_path, text):
    p = tmp_path / "user.toml"
    p.write_text(text)
    return str(p)


LEGACY = """
[systems.old-box]
gpu = "l40s"
gpus_per_node = 8
topology = "pcie"
intra_fabric = "pcie4"
socket_fabric = "pcie4-cross-socket"
gpus_per_socket = 4
source = "a catalog written before the PCIe tree"
"""


def test_legacy_entries_price_as_before(tmp_path):
    # no [pcie] table: the slowest of the entry's own fabrics, as the catalog always did
    s = load_catalog([_user(tmp_path, LEGACY)]).system("old-box")
    assert s.pcie.legacy
    assert ring_path(s, 4).busbw_bytes_per_s == pytest.approx(24e9)
    assert ring_path(s, 8).busbw_bytes_per_s == pytest.approx(10e9)


BOX = """
[systems.my-box]
gpu = "l40s"
gpus_per_node = 8
topology = "pcie"
intra_fabric = "pcie4"
cpu = "epyc-nps1-degraded"
source = "my lab"
[systems.my-box.pcie]
sockets = 2
gpus_per_switch = 4
switch_uplink = "pcie4"
host_bridge = "pcie4-hostbridge"
shm = "pcie4-shm"
source = "nvidia-smi topo -m"
"""


def test_a_user_tree(tmp_path):
    s = load_catalog([_user(tmp_path, BOX)]).system("my-box")
    assert s.gpus_per_socket == 4
    assert ring_path(s, 4).transports == ("p2p",) * 4


@pytest.mark.parametrize(
    "change, message",
    [
        (("gpus_per_switch = 4", "gpus_per_switch = 3"), "gpus_per_switch \\(3\\) must divide"),
        (('switch_uplink = "pcie4"\n', ""), "need a switch_uplink"),
        (('cpu = "epyc-nps1-degraded"\n', ""), "needs a cpu"),
        (('cpu = "epyc-nps1-degraded"', 'cpu = "epyc-nps1-degarded"'), "did you mean 'epyc-nps1-degraded'"),
        (('shm = "pcie4-shm"', 'shm = "nvlink4"'), "expected a pcie one"),
        (("sockets = 2", "sockets = 3"), "sockets \\(3\\) must divide"),
        (('source = "nvidia-smi topo -m"', 'source = "x"\np2p_level = "far"'), "is not one of"),
        (('source = "nvidia-smi topo -m"', 'source = "x"\nnics_per_switch = 1'), "and a nic_fabric"),
    ],
)
def test_bad_trees(tmp_path, change, message):
    text = BOX.replace(*change)
    assert text != BOX
    with pytest.raises((CatalogError, UnknownNameError), match=message):
        load_catalog([_user(tmp_path, text)])


def test_bad_cpu(tmp_path):
    bad = '[cpus.x]\nvendor = "intel"\nsocket_link_bandwidth = "10 GB/s"\nsocket_stream_bandwidth = "20 GB/s"\nsource = "a"\n'
    with pytest.raises(CatalogError, match="exceeds socket_link_bandwidth"):
        load_catalog([_user(tmp_path, bad)])
    with pytest.raises(CatalogError, match="is not one of"):
        load_catalog([_user(tmp_path, bad.replace("intel", "via"))])
