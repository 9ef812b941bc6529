import pytest

from shardbudget.errors import CatalogError, UnknownNameError
from shardbudget.fabric.catalog import load_catalog

REQUIRED_SYSTEMS = ["hgx-a100", "hgx-h100", "hgx-h200", "hgx-b200", "gb200-nvl72", "h100-pcie", "l40s-pcie",
                    "rtx-pro-6000-pcie", "rtx4090-pcie", "mi300x"]


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


@pytest.mark.parametrize("name, per_direction", [
    ("nvlink4", 450e9),         # "900 GB/s" bidirectional
    ("nvlink5", 900e9),         # "1800 GB/s" bidirectional
    ("ib-ndr", 50e9),           # 400 Gb/s in bits
    ("ib-hdr", 25e9),
    ("roce-400", 50e9),
    ("pcie5", 63e9),
])
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


def _user(tmp_path, text):
    p = tmp_path / "user.toml"
    p.write_text(text)
    return str(p)


def test_user_catalog_adds_a_system(tmp_path):
    path = _user(tmp_path, """
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
""")
    cat = load_catalog([path])
    assert cat.system("my-box").intra_fabric.bytes_per_s == 100e9
    assert "hgx-h100" in cat.systems


@pytest.mark.parametrize("text, message", [
    ("[fabrics.x]\nkind='nvlink'\nnccl_link='nvlink'\nbandwidth='100 GB/s'\n", "missing field 'source'"),
    ("[fabrics.x]\nkind='nvlink'\nnccl_link='nvlink'\nbandwidth='100 parsecs'\nsource='a'\n", "unit"),
    ("[fabrics.x]\nkind='warp'\nnccl_link='nvlink'\nbandwidth='1 GB/s'\nsource='a'\n", "is not one of"),
    ("[fabrics.x]\nkind='nvlink'\nnccl_link='nvlink'\nbandwidth=450\nsource='a'\n", "expected a string"),
    ("[fabrics.x]\nkind='nvlink'\nnccl_link='nvlink'\nbandwidth='1 GB/s'\nachievable_bandwidth='2 GB/s'\nsource='a'\n", "exceeds"),
    ("[fabrics.x]\nkind='nvlink'\nnccl_link='nvlink'\nbandwidth='1 GB/s'\nsource='a'\nbandwith='2 GB/s'\n", "unknown field"),
    ("[systems.y]\ngpu='h100'\ngpus_per_node=8\ntopology='switch'\nintra_fabric='nvlink4'\nsource='a'\n", "did you mean"),
    ("[systems.y]\ngpu='h100-sxm'\ngpus_per_node=0\ntopology='switch'\nintra_fabric='nvlink4'\nsource='a'\n", "at least 1"),
    ("[systems.y\n", "not valid TOML"),
    ("[warp]\nx=1\n", "unknown section"),
])
def test_bad_user_catalogs(tmp_path, text, message):
    load_catalog.__wrapped__ if hasattr(load_catalog, "__wrapped__") else None
    with pytest.raises((CatalogError, UnknownNameError), match=message):
        load_catalog([_user(tmp_path, text)])


def test_missing_catalog_file(tmp_path):
    with pytest.raises(CatalogError, match="no such catalog file"):
        load_catalog([str(tmp_path / "nope.toml")])


@pytest.mark.parametrize("name, mib", [("h20", 97871), ("h800", 81559), ("h100-sxm", 81559), ("h200", 143771),
                                       ("b200", 183359), ("a100-sxm", 81920)])
def test_memory_is_what_nvidia_smi_reports(cat, name, mib):
    """The capacity is nvidia-smi's Memory-Usage total, in MiB, quoted in memory_smi (issue 21)."""
    gpu = cat.gpus[name]
    assert gpu.memory_bytes == mib * 2 ** 20
    assert f"{mib}MiB" in gpu.memory_smi.replace(" ", "")


def test_every_gpu_says_where_its_memory_comes_from(cat):
    """A device-reported line with its source, or an explicit 'none found' and the datasheet figure."""
    for name, gpu in cat.gpus.items():
        assert gpu.memory_smi and gpu.memory_source, name
        if not gpu.memory_smi.startswith("none found"):
            digits = gpu.memory_smi.replace(" ", "")
            reported = f"{gpu.memory_bytes / 2 ** 20:.0f}MiB" in digits or f"{gpu.memory_bytes:.0f}" in digits
            assert reported, (name, gpu.memory_smi)


def test_fp4_peaks(cat):
    """GPUs with FP4 tensor cores (model.precision.FP4_TENSOR_CORE_ARCHS) have a dense FP4 peak:
    twice the FP8 one on B200 / GB200 (HGX B200: FP4 144 vs FP8 72 PFLOPS sparse for 8 GPUs), three
    times on B300 (108 dense FP4 vs 36 dense FP8 PFLOPS for 8); the others have none."""
    from shardbudget.model.precision import FP4_TENSOR_CORE_ARCHS
    for name, gpu in cat.gpus.items():
        assert (gpu.fp4_flops_per_s > gpu.fp8_flops_per_s) == (gpu.arch in FP4_TENSOR_CORE_ARCHS), name
    assert cat.gpus["b200"].fp4_flops_per_s == pytest.approx(2 * cat.gpus["b200"].fp8_flops_per_s)
    assert cat.gpus["b300"].fp4_flops_per_s == pytest.approx(3 * cat.gpus["b300"].fp8_flops_per_s)
