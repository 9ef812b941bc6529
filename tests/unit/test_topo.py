"""`shardbudget topo`: a node's topology as a system profile. The fixtures are real public outputs (each
cites its source in its header); the synthetic matrices below are small edits of that format."""

from pathlib import Path

import pytest

from shardbudget.comm.collectives import collective_cost
from shardbudget.errors import CatalogError, UnknownNameError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.fabric.topo_profile import infer_profile, topo_profile, validate_profile, write_topo_profile
from shardbudget.fabric.topo_read import parse_topology_text, read_topology_files
from shardbudget.fabric.ring_path import ring_path

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "topo"
SIZES = (8, 4096, 1 << 20, 64 << 20, 512 << 20)

# 4 GPUs, two per PCIe switch, one switch per socket (the shape of the catalog's rtx4090-pcie)
SMALL = """\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity
GPU0\t X \tPIX\tSYS\tSYS\t0-15\t0
GPU1\tPIX\t X \tSYS\tSYS\t0-15\t0
GPU2\tSYS\tSYS\t X \tPIX\t16-31\t1
GPU3\tSYS\tSYS\tPIX\t X \t16-31\t1
"""


def _profile_catalog(profile, tmp_path):
    path = write_topo_profile(profile, tmp_path / f"{profile.name}.toml")
    return load_catalog([str(path)])


def _ratio(cat, mine: str, ref: str, gpus: int, size: int) -> float:
    return (
        collective_cost("all-reduce", size, mine, gpus=gpus, catalog=cat).time_s
        / collective_cost("all-reduce", size, ref, gpus=gpus, catalog=cat).time_s
    )


# --- the four fixtures the issue asks for ----------------------------------------------------


def test_hgx_h100_nv18_is_an_nvswitch_with_rail_nics(tmp_path):
    topo = read_topology_files([FIX / "h100_hgx_nv18.txt"])
    m = topo.matrix
    assert m.gpus == 8 and {m.nvlinks[a][b] for a in range(8) for b in range(8) if a != b} == {18}
    assert len(m.nics) == 8 and m.numa == (0, 0, 0, 0, 1, 1, 1, 1) and m.legend_nvlink
    assert topo.gpu_names == ("NVIDIA H100 80GB HBM3",) * 8
    p = infer_profile(topo, name="my-h100")
    s = p.system
    assert (s["gpu"], s["topology"], s["intra_fabric"]) == ("h100-sxm", "switch", "nvswitch-gen3")  # GPU from the name
    assert (s["nics_per_node"], s["rail_optimized"], s["pcie"]["sockets"]) == (8, True, 2)
    cat = _profile_catalog(p, tmp_path)
    for g in (2, 4, 8):  # the same box as the built-in, so the same price
        for n in SIZES:
            assert _ratio(cat, "my-h100", "hgx-h100", g, n) == pytest.approx(1.0, abs=1e-9)
    assert collective_cost("all-reduce", 1 << 30, "my-h100", nodes=2, catalog=cat).algorithm == "hierarchical"


def test_l40s_dual_socket_prices_like_the_builtin(tmp_path):
    with pytest.raises(CatalogError, match="does not name the GPU model.*--gpu"):
        topo_profile([FIX / "l40s_8gpu_dual_socket.txt"], name="my-l40s")
    # the input names no CPU: it is taken from the healthy built-in of the same GPU, never the degraded one
    healthy = topo_profile([FIX / "l40s_8gpu_dual_socket.txt"], name="my-l40s", gpu="l40s")
    assert healthy.system["cpu"] == "xeon-spr"
    assert "cpu: xeon-spr (not in the input; from built-in l40s-pcie-p2p, same GPU)" in healthy.notes
    assert not any("degraded" in w for w in healthy.warnings)
    # named, the degraded EPYC-in-NPS1 host prices the box as the built-in measured on it, and says so
    p = topo_profile([FIX / "l40s_8gpu_dual_socket.txt"], name="my-l40s", gpu="l40s", cpu="epyc-nps1-degraded")
    assert any("cpu epyc-nps1-degraded is a degraded host profile" in w for w in p.warnings), p.warnings
    s = p.system
    assert (s["topology"], s["intra_fabric"], s["cpu"]) == ("pcie", "pcie4", "epyc-nps1-degraded")
    assert s["pcie"] == {
        "sockets": 2,
        "gpus_per_switch": 1,
        "host_bridge": "pcie4-hostbridge",
        "shm": "pcie4-shm",
        "p2p_level": "auto",
        "source": s["pcie"]["source"],
    }
    assert (s["nics_per_node"], s["rail_optimized"]) == (1, False)  # NIC0 is SYS to every GPU: shared
    cat = _profile_catalog(p, tmp_path)
    for g in (2, 4, 8):
        for n in SIZES:
            assert _ratio(cat, "my-l40s", "l40s-pcie-nps1-degraded", g, n) == pytest.approx(1.0, abs=0.03)
    # by hand: 8 GPUs, every hop SHM, the two socket crossings at the EPYC's 1.45 GB/s per stream
    big = collective_cost("all-reduce", 512 << 20, "my-l40s", gpus=8, catalog=cat)
    assert big.busbw_bytes_per_s == pytest.approx(1.45e9, rel=0.02)
    assert ring_path(cat.system("my-l40s"), 8).transports == ("shm",) * 8


def test_rtx4090_box_tab_separated(tmp_path):
    topo = read_topology_files([FIX / "rtx4090_8gpu_tabs.txt"])
    assert topo.matrix.gpus == 8 and topo.matrix.nics == () and topo.matrix.numa == (0,) * 4 + (1,) * 4
    p = infer_profile(topo, name="my-4090", gpu="rtx4090")
    assert p.system["pcie"]["shm"] == "pcie4-no-p2p"  # GeForce: NCCL stages through host memory
    cat = _profile_catalog(p, tmp_path)
    path = ring_path(cat.system("my-4090"), 4)
    # four GPUs of one socket, each hop at a healthy Gen4 host's SHM hop: 18 GB/s (host_staged.gen4-1s-root-ports,
    # NVIDIA/nccl#1603), not the 3.74 GB/s of a pair across the sockets in a pod (issue 34)
    assert path.transports == ("shm",) * 4 and path.busbw_bytes_per_s == pytest.approx(18e9)


def test_two_gpus_on_an_nvlink_bridge_get_a_bridge_fabric(tmp_path):
    p = topo_profile([FIX / "two_gpu_nvlink_bridge.txt"], name="my-pair", gpu="a100-pcie")
    s = p.system
    assert (s["topology"], s["intra_fabric"], s["fallback_fabric"]) == ("pairs", "my-pair-nvlink", "pcie4")
    fab = p.fabrics["my-pair-nvlink"]
    assert (fab["links_per_gpu"], fab["bandwidth"], fab["achievable_bandwidth"]) == (3, "75 GB/s", "60 GB/s")
    assert any("does not say which CPU" in w for w in p.warnings)
    cat = _profile_catalog(p, tmp_path)
    # by hand: NV3 x NCCL's SM80_NVLINK_BW 20 GB/s = 60 GB/s per direction; a 2-GPU ring's busbw
    assert ring_path(cat.system("my-pair"), 2).busbw_bytes_per_s == pytest.approx(60e9)
    big = collective_cost("all-reduce", 1 << 30, "my-pair", catalog=cat)
    assert big.busbw_bytes_per_s == pytest.approx(60e9, rel=0.02)


# --- the other inputs: P2P matrix, NCCL XML, topo -mp --------------------------------------------


def test_p2p_matrix_gns_turns_pcie_p2p_off(tmp_path):
    topo = read_topology_files([FIX / "rtx5090_2gpu_p2p.txt"])
    assert topo.p2p.status == (("X", "GNS"), ("GNS", "X")) and topo.matrix.paths[0][1] == "phb"
    p = infer_profile(topo, name="my-5090", gpu="rtx-pro-6000")
    assert p.system["pcie"]["gpu_p2p"] is False
    assert any("GNS" in n for n in p.notes)


def test_a_gpu_the_catalog_lacks_comes_in_with_gpu_spec(tmp_path):
    """The RTX 5090 is not in the catalog: --gpu rtx5090 says how to describe it, --gpu-spec takes a
    filled-in template, and the profile written carries the GPU, so the profile alone loads."""
    with pytest.raises(UnknownNameError, match="unknown GPU .rtx5090..*--gpu-spec FILE.*--gpu-spec-template"):
        topo_profile([FIX / "rtx5090_2gpu_p2p.txt"], name="my-5090", gpu="rtx5090")
    p = topo_profile([FIX / "rtx5090_2gpu_p2p.txt"], name="my-5090", gpu_spec=FIX / "rtx5090_gpu_spec.toml")
    assert p.system["gpu"] == "rtx5090" and "rtx5090" in p.gpus
    cat = _profile_catalog(p, tmp_path)  # the profile alone, without the spec file
    system = cat.system("my-5090")
    assert system.gpu.memory_bytes == 32607 * 2**20 and system.gpu.pcie_p2p is False
    # GNS: both hops staged through host memory, as the 4090 box is
    assert ring_path(system, 2).transports == ("shm", "shm")


def test_gpu_spec_errors_are_one_line(tmp_path):
    from shardbudget.fabric.topo_profile import GPU_SPEC_TEMPLATE

    template = tmp_path / "t.toml"
    template.write_text(GPU_SPEC_TEMPLATE)
    with pytest.raises(CatalogError, match="fill in every <...>"):
        topo_profile([FIX / "rtx5090_2gpu_p2p.txt"], name="x", gpu_spec=template)
    builtin = tmp_path / "b.toml"
    builtin.write_text((FIX / "rtx5090_gpu_spec.toml").read_text().replace("[gpus.rtx5090]", "[gpus.rtx4090]"))
    with pytest.raises(CatalogError, match=r"\[gpus.rtx4090\] redefines a built-in entry"):
        topo_profile([FIX / "rtx5090_2gpu_p2p.txt"], name="x", gpu_spec=builtin)
    with pytest.raises(CatalogError, match="no such file"):
        topo_profile([FIX / "rtx5090_2gpu_p2p.txt"], name="x", gpu_spec=tmp_path / "missing.toml")
    with pytest.raises(CatalogError, match="name different GPUs"):
        topo_profile([FIX / "rtx5090_2gpu_p2p.txt"], name="x", gpu="h100-sxm", gpu_spec=FIX / "rtx5090_gpu_spec.toml")


def test_p2p_ok_under_one_switch_only_lowers_the_level_to_pix():
    matrix = """\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity
GPU0\t X \tPIX\tPXB\tPXB\t0-31\t0
GPU1\tPIX\t X \tPXB\tPXB\t0-31\t0
GPU2\tPXB\tPXB\t X \tPIX\t0-31\t0
GPU3\tPXB\tPXB\tPIX\t X \t0-31\t0
"""
    p2p = " \tGPU0\tGPU1\tGPU2\tGPU3\n GPU0\tX\tOK\tCNS\tCNS\n GPU1\tOK\tX\tCNS\tCNS\n GPU2\tCNS\tCNS\tX\tOK\n GPU3\tCNS\tCNS\tOK\tX\n"
    topo = parse_topology_text(matrix + "\n" + p2p + "\nLegend:\n  OK   = Status Ok\n")
    p = infer_profile(topo, name="pix-only", gpu="l40s")
    assert p.system["pcie"]["p2p_level"] == "pix" and p.system["pcie"]["gpus_per_switch"] == 2
    validate_profile(p)


def test_nccl_p2p_level_in_the_file_sets_the_level():
    topo = parse_topology_text(SMALL + "\nNCCL_P2P_LEVEL=SYS\n")
    p = infer_profile(topo, name="lvl", gpu="l40s")
    assert p.system["pcie"]["p2p_level"] == "sys" and p.system["pcie"]["gpus_per_switch"] == 2
    assert p.system["pcie"]["switch_uplink"] == "pcie4"


def test_nccl_topology_xml_alone(tmp_path):
    topo = read_topology_files([FIX / "p5_48xl_nccl_topo.xml"])
    x = topo.xml
    assert len(x.gpus) == 8 and len(x.nics) == 32 and {n.bits_per_s for n in x.nics} == {100e9}
    assert x.cpus[0] == ("AuthenticAMD", 25, 17) and {g.pcie_gen for g in x.gpus} == {5}
    assert len({g.switch for g in x.gpus}) == 8  # one GPU per PCIe switch, 4 NICs beside it
    p = infer_profile(topo, name="p5", gpu="h100-sxm")
    s = p.system
    assert (s["nic_fabric"], s["nics_per_node"], s["rail_optimized"], s["cpu"]) == (
        "efa",
        32,
        True,
        "epyc-nps1-degraded",
    )
    assert s["topology"] == "pcie" and any("lists no NVLink" in w for w in p.warnings)


def test_matrix_and_xml_together(tmp_path):
    """The XML adds what the matrix cannot show (NIC speed, CPU model, PCIe generation). The two
    fixtures are different machines with the same shape: 8 GPUs, one rail per GPU."""
    p = topo_profile([FIX / "h100_hgx_nv18.txt", FIX / "p5_48xl_nccl_topo.xml"], name="hx")
    s = p.system
    assert (s["topology"], s["nic_fabric"], s["nics_per_node"], s["cpu"]) == ("switch", "efa", 8, "epyc-genoa")


def test_topo_mp_output_is_flagged():
    lines = (FIX / "h100_hgx_nv18.txt").read_text().splitlines()
    no_nv = "\n".join(s for s in lines if "NV#" not in s)  # what `topo -mp`'s legend looks like
    p = infer_profile(parse_topology_text(no_nv), name="mp")
    assert any("topo -mp" in w and "PCIe paths only" in w for w in p.warnings)
    p = infer_profile(parse_topology_text("$ nvidia-smi topo -mp\n" + SMALL), name="mp2", gpu="l40s")
    assert any("topo -mp" in w for w in p.warnings)
    assert not infer_profile(parse_topology_text(SMALL), name="m", gpu="l40s").warnings


# --- shapes and names ----------------------------------------------------------------------------


def test_nvlink_mesh_and_partial_nvlink():
    mesh = """\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity
GPU0\t X \tNV4\tNV4\tNV4\t0-31\t0
GPU1\tNV4\t X \tNV4\tNV4\t0-31\t0
GPU2\tNV4\tNV4\t X \tNV4\t0-31\t0
GPU3\tNV4\tNV4\tNV4\t X \t0-31\t0
"""
    p = infer_profile(parse_topology_text(mesh), name="mesh", gpu="a100-sxm")
    assert p.system["topology"] == "mesh" and p.fabrics["mesh-nvlink"]["links_per_gpu"] == 12  # 4 x 3 peers
    validate_profile(p)
    partial = (
        mesh.replace("\tNV4\tNV4\t0-31", "\tSYS\tSYS\t0-31", 1)
        .replace("GPU2\tNV4", "GPU2\tSYS")
        .replace("GPU3\tNV4", "GPU3\tSYS")
    )
    with pytest.raises(CatalogError, match="NVLinks join some GPU pairs"):
        infer_profile(parse_topology_text(partial), name="partial", gpu="a100-sxm")


def test_gpu_names_from_nvidia_smi_l():
    text = (
        "GPU 0: NVIDIA L40S (UUID: GPU-1)\nGPU 1: NVIDIA L40S (UUID: GPU-2)\nGPU 2: NVIDIA L40S (UUID: GPU-3)\n"
        "GPU 3: NVIDIA L40S (UUID: GPU-4)\n" + SMALL
    )
    assert infer_profile(parse_topology_text(text), name="n", gpu=None).system["gpu"] == "l40s"
    mixed = text.replace("GPU 3: NVIDIA L40S", "GPU 3: NVIDIA L4")
    with pytest.raises(CatalogError, match="different GPUs"):
        infer_profile(parse_topology_text(mixed), name="n")
    other = text.replace("NVIDIA L40S", "NVIDIA GeForce RTX 5090")
    with pytest.raises(CatalogError, match="'NVIDIA GeForce RTX 5090' is not in the catalog.*--gpu"):
        infer_profile(parse_topology_text(other), name="n")
    with pytest.raises(UnknownNameError, match="did you mean 'l40s'"):
        infer_profile(parse_topology_text(SMALL), name="n", gpu="l40")
    p = infer_profile(parse_topology_text(text), name="n", gpu="l4")
    assert any("overrides the input's GPU" in w for w in p.warnings)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace("GPU2\tSYS\tSYS\t X \tPIX\t16-31\t1", "GPU2\tSYS"),
            r":4: row GPU2 has 1 entries, the header 4",
        ),
        (
            lambda t: t.replace("GPU2\tSYS\tSYS\t X \tPIX", "GPU2\tSYS\tSYS\t X "),
            r":4: GPU2/GPU3: '16-31' is not a topology",
        ),
        (
            lambda t: t.replace("GPU1\tPIX\t X \tSYS", "GPU1\tPIX\t X \tFOO"),
            r":3: GPU1/GPU2: 'FOO' is not a topology entry",
        ),
        (lambda t: t.replace("GPU1\tPIX\t X \tSYS", "GPU1\tSYS\t X \tSYS"), "GPU0-GPU1 and GPU1-GPU0 disagree"),
        (lambda t: t.replace("GPU3\tSYS\tSYS\tPIX\t X ", "GPU3\tSYS\tSYS\tPIX\tPIX"), "must have X in column GPU3"),
        (lambda t: t.replace("GPU3\tSYS\tSYS\tPIX\t X \t16-31\t1\n", ""), "no row for GPU3"),
        (lambda t: t.replace("\tGPU0\tGPU1\tGPU2", "\tGPU0\tGPU2\tGPU1"), "GPU columns must be GPU0, GPU1"),
        (lambda t: "hello\n", "no `nvidia-smi topo -m` matrix"),
    ],
)
def test_malformed_matrix_is_one_clear_error(edit, message):
    with pytest.raises(CatalogError, match=message):
        parse_topology_text(edit(SMALL), source="m.txt")


def test_unequal_numa_domains_and_name_checks(tmp_path):
    odd = (
        SMALL.replace("GPU1\tPIX\t X \tSYS\tSYS\t0-15\t0", "GPU1\tSYS\t X \tSYS\tSYS\t0-15\t0")
        .replace("GPU0\t X \tPIX", "GPU0\t X \tSYS")
        .replace("GPU1\tPIX\t X", "GPU1\tSYS\t X")
    )
    with pytest.raises(CatalogError, match="different numbers of GPUs"):
        infer_profile(
            parse_topology_text(
                odd.replace("GPU1\tSYS\t X \tSYS\tSYS", "GPU1\tSYS\t X \tPIX\tPIX")
                .replace("GPU2\tSYS\tSYS", "GPU2\tSYS\tPIX")
                .replace("GPU3\tSYS\tSYS", "GPU3\tSYS\tPIX")
            ),
            name="odd",
            gpu="l40s",
        )
    with pytest.raises(CatalogError, match="already a catalog system"):
        infer_profile(parse_topology_text(SMALL), name="l40s-pcie-nps1-degraded", gpu="l40s")
    with pytest.raises(CatalogError, match=r"'L40S-PCIe-NPS1-degraded' is already a catalog system \('l40s-pcie-nps1"):
        infer_profile(parse_topology_text(SMALL), name="L40S-PCIe-NPS1-degraded", gpu="l40s")
    with pytest.raises(CatalogError, match=r"'L40S-PCIe' is the old name of catalog system 'l40s-pcie-nps1-degraded'"):
        infer_profile(parse_topology_text(SMALL), name="L40S-PCIe", gpu="l40s")
    p = infer_profile(parse_topology_text(SMALL), name="fine", gpu="l40s")
    write_topo_profile(p, tmp_path / "fine.toml")
    with pytest.raises(CatalogError, match="exists; pass --force"):
        write_topo_profile(p, tmp_path / "fine.toml")
    with pytest.raises(CatalogError, match="expected a .toml file name"):
        write_topo_profile(p, tmp_path / "fine.txt")


def test_p2p_matrix_in_its_own_file_and_mismatched_files(tmp_path):
    text = (FIX / "rtx5090_2gpu_p2p.txt").read_text()
    cut = text.index(" \tGPU0\tGPU1\t\n")
    (tmp_path / "m.txt").write_text(text[:cut])
    (tmp_path / "p.txt").write_text(text[cut:])
    p = topo_profile([tmp_path / "m.txt", tmp_path / "p.txt"], name="two-files", gpu="rtx-pro-6000")
    assert p.system["pcie"]["gpu_p2p"] is False and p.inputs == ("m.txt", "p.txt")
    with pytest.raises(CatalogError, match="the P2P matrix has 2 GPUs, the topology 8"):
        topo_profile([FIX / "l40s_8gpu_dual_socket.txt", tmp_path / "p.txt"], name="x", gpu="l40s")
    with pytest.raises(CatalogError, match="a second matrix table"):
        topo_profile([FIX / "l40s_8gpu_dual_socket.txt", FIX / "rtx4090_8gpu_tabs.txt"], name="x", gpu="l40s")
