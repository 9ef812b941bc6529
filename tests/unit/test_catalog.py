import re
from pathlib import Path

import pytest

from shardbudget.errors import CatalogError, UnknownNameError
from shardbudget.fabric.catalog import load_catalog

REQUIRED_SYSTEMS = [
    "hgx-a100",
    "hgx-h100",
    "hgx-h200",
    "hgx-b200",
    "gb200-nvl72",
    "h100-pcie",
    "l40s-pcie-nps1-degraded",
    "rtx-pro-6000-pcie",
    "rtx4090-pcie",
    "mi300x",
]


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_required_systems_exist(cat):
    assert set(REQUIRED_SYSTEMS) <= set(cat.systems)


def test_every_entry_has_a_source(cat):
    for entry in [*cat.fabrics.values(), *cat.gpus.values(), *cat.systems.values()]:
        assert entry.source.strip(), entry.name


def test_achievable_never_exceeds_peak(cat):
    for f in cat.fabrics.values():
        assert 0 < f.achievable_bytes_per_s <= f.bytes_per_s, f.name


@pytest.mark.parametrize(
    "name, per_direction",
    [
        ("nvlink4", 450e9),  # "900 GB/s" bidirectional
        ("nvlink5", 900e9),  # "1800 GB/s" bidirectional
        ("ib-ndr", 50e9),  # 400 Gb/s in bits
        ("ib-hdr", 25e9),
        ("roce-400", 50e9),
        ("pcie5", 63e9),
    ],
)
def test_vendor_rates_converted(cat, name, per_direction):
    assert cat.fabric(name).bytes_per_s == pytest.approx(per_direction)


def test_nvlink_per_link_times_links(cat):
    f = cat.fabric("nvlink4")
    assert f.per_link_bytes_per_s * f.links_per_gpu == pytest.approx(f.bytes_per_s)


def test_hop_latency_defaults_to_nccl_table(cat):
    # tuning.cc NVLINK ring row: LL 0.6 us, LL128 1.9 us, Simple 3.4 us
    assert cat.fabric("nvswitch-gen3").hop_latency_s == pytest.approx({"ll": 0.6e-6, "ll128": 1.9e-6, "simple": 3.4e-6})
    assert cat.fabric("ib-ndr").hop_latency_s["simple"] == pytest.approx(14e-6)


def test_unknown_system_suggests(cat):
    with pytest.raises(UnknownNameError, match="did you mean 'hgx-h100'"):
        cat.system("hgx-h10")


def _user(tmp_path, text, name="user.toml"):
    p = tmp_path / name  # load_catalog keeps what it read by path: a new text, a new name
    p.write_text(text)
    return str(p)


def test_user_catalog_adds_a_system(tmp_path):
    path = _user(
        tmp_path,
        """
[fabrics.my-link]
kind = "nvlink"
nccl_link = "nvlink"
bandwidth = "100 GB/s"
source = "my lab"
[systems.my-box]
gpu = "h100-sxm"
gpus_per_node = 4
topology = "switch"
intra_fabric = "my-link"
source = "my lab"
""",
    )
    cat = load_catalog([path])
    assert cat.system("my-box").intra_fabric.bytes_per_s == 100e9
    assert "hgx-h100" in cat.systems


@pytest.mark.parametrize(
    "text, message",
    [
        ("[fabrics.x]\nkind='nvlink'\nnccl_link='nvlink'\nbandwidth='100 GB/s'\n", "missing field 'source'"),
        ("[fabrics.x]\nkind='nvlink'\nnccl_link='nvlink'\nbandwidth='100 parsecs'\nsource='a'\n", "unit"),
        ("[fabrics.x]\nkind='warp'\nnccl_link='nvlink'\nbandwidth='1 GB/s'\nsource='a'\n", "is not one of"),
        ("[fabrics.x]\nkind='nvlink'\nnccl_link='nvlink'\nbandwidth=450\nsource='a'\n", "expected a string"),
        (
            "[fabrics.x]\nkind='nvlink'\nnccl_link='nvlink'\nbandwidth='1 GB/s'\nachievable_bandwidth='2 GB/s'\nsource='a'\n",
            "exceeds",
        ),
        (
            "[fabrics.x]\nkind='nvlink'\nnccl_link='nvlink'\nbandwidth='1 GB/s'\nsource='a'\nbandwith='2 GB/s'\n",
            "unknown field",
        ),
        (
            "[systems.y]\ngpu='h100'\ngpus_per_node=8\ntopology='switch'\nintra_fabric='nvlink4'\nsource='a'\n",
            "did you mean",
        ),
        (
            "[systems.y]\ngpu='h100-sxm'\ngpus_per_node=0\ntopology='switch'\nintra_fabric='nvlink4'\nsource='a'\n",
            "at least 1",
        ),
        ("[systems.y\n", "not valid TOML"),
        ("[warp]\nx=1\n", "unknown section"),
    ],
)
def test_bad_user_catalogs(tmp_path, text, message):
    load_catalog.__wrapped__ if hasattr(load_catalog, "__wrapped__") else None
    with pytest.raises((CatalogError, UnknownNameError), match=message):
        load_catalog([_user(tmp_path, text)])


def test_missing_catalog_file(tmp_path):
    with pytest.raises(CatalogError, match="no such catalog file"):
        load_catalog([str(tmp_path / "nope.toml")])


@pytest.mark.parametrize(
    "name, mib",
    [("h20", 97871), ("h800", 81559), ("h100-sxm", 81559), ("h200", 143771), ("b200", 183359), ("a100-sxm", 81920)],
)
def test_memory_is_what_nvidia_smi_reports(cat, name, mib):
    """The capacity is nvidia-smi's Memory-Usage total, in MiB, quoted in memory_smi (issue 21)."""
    gpu = cat.gpus[name]
    assert gpu.memory_bytes == mib * 2**20
    assert f"{mib}MiB" in gpu.memory_smi.replace(" ", "")


def test_every_gpu_says_where_its_memory_comes_from(cat):
    """A device-reported line with its source, or an explicit 'none found' and the datasheet figure."""
    for name, gpu in cat.gpus.items():
        assert gpu.memory_smi and gpu.memory_source, name
        if not gpu.memory_smi.startswith("none found"):
            digits = gpu.memory_smi.replace(" ", "")
            reported = f"{gpu.memory_bytes / 2**20:.0f}MiB" in digits or f"{gpu.memory_bytes:.0f}" in digits
            assert reported, (name, gpu.memory_smi)


def test_fp4_peaks(cat):
    """GPUs of a generation with FP4 tensor cores (catalog/archs.toml fp4_tensor_cores) have a dense
    FP4 peak: twice the FP8 one on B200 / GB200 (HGX B200: FP4 144 vs FP8 72 PFLOPS sparse for 8
    GPUs), three times on B300 (108 dense FP4 vs 36 dense FP8 PFLOPS for 8); the others have none."""
    for name, gpu in cat.gpus.items():
        assert (gpu.fp4_flops_per_s > gpu.fp8_flops_per_s) == gpu.generation.fp4_tensor_cores, name
    assert cat.gpus["b200"].fp4_flops_per_s == pytest.approx(2 * cat.gpus["b200"].fp8_flops_per_s)
    assert cat.gpus["b300"].fp4_flops_per_s == pytest.approx(3 * cat.gpus["b300"].fp8_flops_per_s)


# --- the strict reader (issue 32): the file, the table, the nearest known key ---------------------

MY_FABRIC = "[fabrics.my-link]\nkind = 'nvlink'\nnccl_link = 'nvlink'\nbandwidth = '100 GB/s'\nsource = 'my lab'\n"
MY_SYSTEM = (
    "[systems.my-box]\ngpu = 'h100-sxm'\ngpus_per_node = 4\ntopology = 'switch'\n"
    "intra_fabric = 'nvlink4'\nsource = 'my lab'\n"
)


def test_a_misspelt_key_names_the_file_the_table_and_the_key(tmp_path):
    path = _user(tmp_path, MY_FABRIC.replace("bandwidth = ", "bandwith = '1 GB/s'\nbandwidth = "))
    with pytest.raises(CatalogError) as err:
        load_catalog([path])
    assert str(err.value) == f"{path}: fabrics.my-link: unknown field 'bandwith'; did you mean 'bandwidth'?"
    path = _user(
        tmp_path,
        MY_SYSTEM + "[systems.my-box.pcie]\nsockets = 1\nhost_bridge = 'pcie5-hostbridge'\n"
        "shm = 'pcie5-hostbridge'\np2p_levle = 'sys'\nsource = 'x'\n",
    )
    with pytest.raises(
        CatalogError,
        match=r"user.toml: systems.my-box.pcie: unknown field 'p2p_levle'; "
        r"did you mean 'p2p_level'\?",
    ):
        load_catalog([path])


def test_a_misspelt_key_in_a_nested_or_engine_table_is_refused(tmp_path):
    path = _user(tmp_path, MY_FABRIC.replace("source =", "hop_latency = { ll = '1 us', ll182 = '2 us' }\nsource ="))
    with pytest.raises(CatalogError, match=r"fabrics.my-link.hop_latency: unknown field 'll182'; did you mean 'll128'"):
        load_catalog([path])
    cat = load_catalog()
    assert cat.engines["vllm"].world_sizes  # the built-in engine tables read strictly too
    text = (Path(__file__).parents[2] / "src/shardbudget/catalog/custom_allreduce.toml").read_text()
    start = text.index("[engines.vllm]")
    table = text[start : text.index("\n[", start + 1)].replace("per_peer_us", "per_peer_uss", 1)
    with pytest.raises(CatalogError, match=r"engines.vllm: unknown field 'per_peer_uss'; did you mean 'per_peer_us'"):
        load_catalog([_user(tmp_path, table)])


def test_notes_stand_beside_fields_but_must_be_text(tmp_path):
    cat = load_catalog([_user(tmp_path, MY_FABRIC + "bandwidth_basis = 'datasheet'\nnote = 'ok'\n")])
    assert cat.fabric("my-link").bytes_per_s == 100e9
    with pytest.raises(CatalogError, match=r"fabrics.my-link.bandwidth_note: a note \('bandwidth_note'\) is text"):
        load_catalog([_user(tmp_path, MY_FABRIC + "bandwidth_note = 3\n", "note.toml")])


def test_a_name_that_differs_from_a_built_in_only_in_case_is_refused(tmp_path):
    """`[systems.HGX-H100]` beside the built-in hgx-h100 would shadow it for `-s HGX-H100`."""
    path = _user(tmp_path, MY_SYSTEM.replace("my-box", "HGX-H100"))
    with pytest.raises(CatalogError) as err:
        load_catalog([path])
    assert str(err.value).startswith(
        f"{path}: [systems.HGX-H100] redefines a built-in entry 'hgx-h100' (names are compared ignoring case)"
    )
    with pytest.raises(CatalogError, match=r"\[fabrics.NVLink4\] redefines a built-in entry 'nvlink4'"):
        load_catalog([_user(tmp_path, MY_FABRIC.replace("my-link", "NVLink4"), "fab.toml")])
    with pytest.raises(CatalogError, match=r"\[archs.Hopper\] redefines a built-in entry 'hopper'"):
        load_catalog([_user(tmp_path, "[archs.Hopper]\nvendor = 'nvidia'\n", "arch.toml")])


@pytest.mark.parametrize(
    "name, message",
    [
        ('"bad\\nname"', "contains the control character '\\n'"),
        ('"esc\\u001b[31m"', "contains the control character '\\x1b'"),
        ('"-rf"', "starts with '-'"),
        ('" padded"', "starts or ends with a space"),
    ],
)
def test_a_catalog_name_cannot_carry_control_characters_or_a_leading_dash(tmp_path, name, message):
    with pytest.raises(CatalogError, match=re.escape(message)):
        load_catalog([_user(tmp_path, MY_SYSTEM.replace("[systems.my-box]", f"[systems.{name}]"))])


def test_names_are_looked_up_in_any_case_and_printed_as_the_catalog_spells_them(cat, tmp_path):
    assert cat.system("HGX-H100").name == "hgx-h100" and cat.gpu("H100-SXM").name == "h100-sxm"
    assert cat.fabric("NVLink4").name == "nvlink4" and cat.arch("Hopper").name == "hopper"
    user = load_catalog(
        [_user(tmp_path, MY_SYSTEM.replace("'h100-sxm'", "'H100-SXM'").replace("'nvlink4'", "'NVLINK4'"))]
    )
    box = user.system("my-box")
    assert (box.gpu.name, box.intra_fabric.name) == ("h100-sxm", "nvlink4")
    with pytest.raises(UnknownNameError, match="unknown system 'HGX-H10'; did you mean 'hgx-h100'"):
        cat.system("HGX-H10")


# --- GPU generations (catalog/archs.toml) ----------------------------------------------------------

GPU_OF = (
    "[gpus.my-gpu]\narch = '{arch}'\nmemory = '100 GiB'\nmemory_bandwidth = '4 TB/s'\n"
    "bf16_dense = '1000 TFLOP/s'\nsource = 'mine'\n"
)


def test_a_gpu_of_a_generation_the_catalog_does_not_describe_is_refused(tmp_path):
    path = _user(tmp_path, GPU_OF.format(arch="rubin"))
    with pytest.raises(CatalogError) as err:
        load_catalog([path])
    assert str(err.value) == (
        f"{path}: gpus.my-gpu.arch: GPU generation 'rubin' is not described in the "
        "catalog (it describes volta, ampere, ada, hopper, blackwell, cdna3, cdna4); "
        "add an [archs.rubin] table with its facts and their sources"
    )


RUBIN = """[archs.rubin]
vendor = "nvidia"
capability = "11.0"
fp8_tensor_cores = true
fp4_tensor_cores = true
pcie_gen = 6
nvls_channels = 32
source = "mine"
[archs.rubin.nccl_symmetric]
sm_bw_gibps = 55
peak_gibps = 600
multimem_peak_gibps = 1000
multimem_blocks = 32
ll_base_latency_us = 11.0
base_latency_us = 19.5
floor = "3 us"
source = "mine"
"""


def test_a_user_file_describes_a_new_generation(tmp_path):
    """A generation is data: its table, and its row in NCCL's per-generation LL cap, which a user
    file may add for a generation it describes (NCCL's table has none for it otherwise)."""
    with pytest.raises(CatalogError, match=r"archs.rubin: NCCL's one-node LL cap has no row for 'rubin'"):
        load_catalog([_user(tmp_path, RUBIN + GPU_OF.format(arch="rubin"))])
    nccl = "[nccl.ll_max_bw_gbps]\none_node = { rubin = 282.0 }\n"
    cat = load_catalog([_user(tmp_path, RUBIN + nccl + GPU_OF.format(arch="Rubin"), "rubin.toml")])
    gpu = cat.gpu("my-gpu")
    assert (gpu.arch, gpu.sm, gpu.generation.fp4_tensor_cores, gpu.generation.pcie_gen) == ("rubin", "11.0", True, 6)
    assert cat.nccl.ll_max_bytes_per_s["one_node"]["rubin"] == 282e9
    with pytest.raises(
        CatalogError, match=r"archs.rubin: unknown field 'fp8_tensorcores'; did you mean 'fp8_tensor_cores'"
    ):
        load_catalog([_user(tmp_path, RUBIN.replace("fp8_tensor_cores", "fp8_tensorcores") + nccl, "typo.toml")])
    with pytest.raises(UnknownNameError, match=r"NCCL constant in .*ll_max_bw_gbps.one_node"):
        load_catalog([_user(tmp_path, nccl, "row-alone.toml")])  # a row for a generation no file describes


def test_every_generation_fact_has_its_source(cat):
    facts = ("fp8_tensor_cores", "fp4_tensor_cores", "pcie_gen", "nvls_channels")
    for name, arch in cat.archs.items():
        given = [
            k
            for k in facts + ("capability", "nvlink_link_bandwidth", "nccl_nvlink_link_bandwidth", "nvswitch_fabric")
            if k in facts or getattr(arch, _FIELD.get(k, k))
        ]
        missing = [k for k in given if not arch.sources.get(k)]
        assert not missing and arch.source and arch.nccl_symmetric.source, (name, missing)
    # the facts that were Python constants before (issue 32), as the code read them
    assert {n: a.capability for n, a in cat.archs.items() if a.capability} == {
        "volta": "7.0",
        "ampere": "8.0",
        "ada": "8.9",
        "hopper": "9.0",
        "blackwell": "10.0",
    }
    assert [n for n, a in cat.archs.items() if a.fp8_tensor_cores] == ["ada", "hopper", "blackwell", "cdna3", "cdna4"]
    assert [n for n, a in cat.archs.items() if a.fp4_tensor_cores] == ["blackwell", "cdna4"]
    assert {n: a.pcie_gen for n, a in cat.archs.items()} == {
        "volta": 3,
        "ampere": 4,
        "ada": 4,
        "hopper": 5,
        "blackwell": 5,
        "cdna3": 5,
        "cdna4": 5,
    }
    assert {
        n: a.nccl_nvlink_link_bytes_per_s / 1e9 for n, a in cat.archs.items() if a.nccl_nvlink_link_bytes_per_s
    } == {"volta": 20.0, "ampere": 20.0, "hopper": 20.6, "blackwell": 40.1}
    assert [n for n, a in cat.archs.items() if a.vendor == "amd"] == ["cdna3", "cdna4"]
    assert (cat.archs["hopper"].nccl_symmetric.floor_s, cat.archs["blackwell"].nccl_symmetric.floor_s) == (
        2.3e-6,
        3.0e-6,
    )


_FIELD = {
    "nvlink_link_bandwidth": "nvlink_link_bytes_per_s",
    "nccl_nvlink_link_bandwidth": "nccl_nvlink_link_bytes_per_s",
}
