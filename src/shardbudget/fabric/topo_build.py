"""The catalog entries a topology is described with: fabrics, CPU, NICs and P2P for `topo`'s profile.

`topo_profile` decides the shape (NVLink, NUMA domains, PCIe switches); this module names the catalog entries
that price it, each choice with the reason it was made, in `Facts.notes`. The tables below are data
with their sources; a choice the input cannot support is taken from the built-in system of the same
GPU (`template`) and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import CatalogError
from .hardware import GPU, Catalog, System
from .topo_read import TopoInput

MAX_NVLINKS_PER_GPU = 18
"""src/graph/xml.cc ncclTopoGetXmlFromGpu: maxNvLinks 18 from sm90 (12 on sm80, 6 on sm70)."""
PCIE_GEN = {"a100-sxm": 4, "a100-pcie": 4, "l40s": 4, "l4": 4, "rtx4090": 4}
"""Host PCIe generation where it differs from the generation's (catalog/archs.toml `pcie_gen`;
NVIDIA datasheets: A100 and the Ada boards are PCIe Gen4 x16)."""
NIC_BY_SPEED = {
    "ib": {100: "ib-edr", 200: "ib-hdr", 400: "ib-ndr", 800: "ib-xdr"},
    "efa": {100: "efa", 200: "efa-v3", 400: "efa-v4"},
}
"""NIC fabric by (family, Gbit/s): EFA devices are named rdmap* / efa*; every other RDMA NIC is taken
for InfiniBand at its line rate (RoCE is indistinguishable in NCCL's XML: use --nic-fabric)."""
INTEL_CPUS = {85: "xeon-icx", 106: "xeon-icx", 143: "xeon-spr", 207: "xeon-emr", 173: "xeon-gnr", 174: "xeon-gnr"}
"""Intel family 6 model -> catalog CPU (Skylake/Cascade Lake 0x55 and Ice Lake 0x6A share NCCL's
SKL_QPI_BW; Sapphire Rapids 0x8F, Emerald Rapids 0xCF, Granite Rapids 0xAD/0xAE; topo.cc)."""
XEON_GEN = {"2": "xeon-icx", "3": "xeon-icx", "4": "xeon-spr", "5": "xeon-emr"}
"""Xeon Scalable model numbers: the second digit is the generation (8480+: 4th, Sapphire Rapids)."""
_NEAR = ("pix", "pxb")


@dataclass
class Facts:
    """What inference has found so far; becomes the profile."""

    n: int
    gpu: GPU
    topology: str = "pcie"
    nvlinks: int = 0
    """NV# per pair (pairs, mesh, switch)."""
    domains: list[int] = field(default_factory=list)
    """NUMA domain of each GPU."""
    gpus_per_switch: int = 1
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def sockets(self) -> int:
        return max(self.domains) + 1 if self.domains else 1


def pcie_gen(topo: TopoInput, gpu: GPU) -> tuple[int, str]:
    gens = [g.pcie_gen for g in (topo.xml.gpus if topo.xml else ()) if g.pcie_gen]
    if gens:
        return max(3, min(6, max(gens))), "the NCCL topology XML's GPU link_speed"
    return PCIE_GEN.get(gpu.name, gpu.generation.pcie_gen), f"{gpu.name}'s host interface"


def pcie_fabrics(topo: TopoInput, facts: Facts, catalog: Catalog) -> dict:
    """The [pcie] table's fabrics, by PCIe generation; SHM without P2P where the driver refuses it."""
    gen, why = pcie_gen(topo, facts.gpu)
    shm = f"pcie{gen}-shm" if facts.gpu.pcie_p2p and f"pcie{gen}-shm" in catalog.fabrics else f"pcie{gen}-no-p2p"
    out = {"link": f"pcie{gen}", "host_bridge": f"pcie{gen}-hostbridge", "shm": shm}
    facts.notes.append(f"PCIe Gen{gen} (from {why}): {', '.join(out.values())}")
    return out


# --- CPU ---------------------------------------------------------------------------------------


def choose_cpu(topo: TopoInput, facts: Facts, catalog: Catalog, template: System | None, requested: str | None) -> str:
    if requested is not None:
        name = catalog.cpu(requested).name  # the current name, where an old one was given
        facts.notes.append(f"cpu: {name} (--cpu)")
        return _said_if_degraded(catalog, name, facts)
    pcie_box = facts.topology in ("pcie", "pairs")
    for found, why in (
        (_cpu_from_xml(topo, pcie_box), "the NCCL topology XML's <cpu>"),
        (_cpu_from_name(topo, pcie_box), f"lscpu's model {topo.cpu_model!r}"),
    ):
        if found and found in catalog.cpus:
            facts.notes.append(f"cpu: {found} (from {why})")
            return _said_if_degraded(catalog, found, facts)
    if template is not None and template.cpu is not None:
        facts.notes.append(f"cpu: {template.cpu.name} (not in the input; from built-in {template.name}, same GPU)")
        return _said_if_degraded(catalog, template.cpu.name, facts)
    facts.warnings.append(
        "the input does not say which CPU the node has: assuming xeon-spr (Intel Sapphire Rapids); pass --cpu NAME"
    )
    return "xeon-spr"


def _said_if_degraded(catalog: Catalog, cpu: str, facts: Facts) -> str:
    """`cpu`, with a warning where the catalog marks it degraded: the profile inherits it."""
    why = catalog.cpu(cpu).degraded
    if why:
        facts.warnings.append(
            f"cpu {cpu} is a degraded host profile ({why}); the profile is priced on it: "
            "name it so, or pass --cpu for a healthy host (epyc-turin: a dual-socket EPYC measured healthy)"
        )
    return cpu


def _amd(family: int | None, pcie_box: bool) -> str:
    if family == 23:
        return "epyc-rome"
    # GPU traffic through an EPYC host (Milan and later) as measured on the l40s box in NPS1, the BIOS
    # default (cpus.toml epyc-nps1-degraded: the profile says it is degraded, and choose_cpu warns);
    # on NVLink boxes only NCCL's AMD_BW matters
    return "epyc-nps1-degraded" if pcie_box else "epyc-genoa"


def _cpu_from_xml(topo: TopoInput, pcie_box: bool) -> str | None:
    if topo.xml is None or not topo.xml.cpus:
        return None
    vendor, family, model = topo.xml.cpus[0]
    if vendor == "GenuineIntel" and family == 6:
        return INTEL_CPUS.get(model)
    if vendor == "AuthenticAMD":
        return _amd(family, pcie_box)
    return "grace" if vendor.lower().startswith("arm") else None


def _cpu_from_name(topo: TopoInput, pcie_box: bool) -> str | None:
    name = topo.cpu_model or ""
    if m := re.search(r"EPYC\s+7\d\d(\d)", name):
        return _amd(23 if m.group(1) == "2" else 25, pcie_box)
    if "EPYC" in name or topo.cpu_vendor == "amd":
        return _amd(25, pcie_box)
    if re.search(r"Xeon\(R\)\s+6\d{3}[PE]\b|Xeon\s+6\b", name):
        return "xeon-gnr"
    if m := re.search(r"Xeon.*?\b[3-9]([2-5])\d\d[A-Z+]*\b", name):
        return XEON_GEN[m.group(1)]
    if "Grace" in name or "Neoverse-V2" in name:
        return "grace"
    return "xeon-spr" if topo.cpu_vendor == "intel" else None


# --- NICs ----------------------------------------------------------------------------------------


def choose_nics(
    topo: TopoInput, facts: Facts, catalog: Catalog, template: System | None, requested: str | None
) -> dict:
    """nic_fabric, nics_per_node, rail_optimized and nics_per_switch for the profile."""
    none = {"nics_per_node": 0, "rail_optimized": False, "nics_per_switch": 0}
    count, rail, per_switch = _nic_layout(topo, facts)
    fabric = _nic_fabric(topo, facts, catalog, template, requested)
    if not count:
        if fabric is None or template is None or template.nic_fabric is None:
            facts.notes.append("NICs: none in the input: the profile has no scale-out network")
            return none
        count, rail = template.nics_per_node, template.rail_optimized
        facts.notes.append(
            f"NICs: none in the input (nvidia-smi lists RDMA devices only); {count} as built-in {template.name}"
        )
    elif fabric is None:
        facts.warnings.append(
            f"the input shows {count} NIC(s) but not their speed: pass --nic-fabric NAME; "
            f"the profile has no scale-out network"
        )
        return none
    else:
        facts.notes.append(
            f"NICs: {count}, "
            + (
                "each GPU with its own NIC under its PCIe switch: rail-optimised"
                if rail
                else "not under every GPU's switch: shared by all GPUs"
            )
        )
    return {"nic_fabric": fabric, "nics_per_node": count, "rail_optimized": rail, "nics_per_switch": per_switch}


def _nic_layout(topo: TopoInput, facts: Facts) -> tuple[int, bool, int]:
    """(NIC count, rail-optimised, NICs under each GPU switch) as the input shows them."""
    n, m, xml = facts.n, topo.matrix, topo.xml
    if m is not None and m.nics:
        local = [[k for k, p in enumerate(m.nic_paths) if p[g] in _NEAR] for g in range(n)]
        compute = {k for ks in local for k in ks}
        count, rail = len(compute) or len(m.nics), all(local)
    elif xml is not None and xml.nics:
        count = len(xml.nics)
        rail = all(any(c.switch == g.switch for c in xml.nics) for g in xml.gpus)
        compute = {c.name for c in xml.nics if c.switch in {g.switch for g in xml.gpus}}
    else:
        return 0, False, 0
    switches = n // facts.gpus_per_switch
    per_switch = len(compute) // switches if facts.gpus_per_switch > 1 and rail and len(compute) % switches == 0 else 0
    return count, rail, per_switch


def _nic_fabric(
    topo: TopoInput, facts: Facts, catalog: Catalog, template: System | None, requested: str | None
) -> str | None:
    if requested is not None:
        f = catalog.fabric(requested)
        if f.nccl_link != "net":
            raise CatalogError(f"--nic-fabric {requested!r} is a {f.kind} link, not a network (expected e.g. ib-ndr)")
        facts.notes.append(f"NIC fabric: {requested} (--nic-fabric)")
        return requested
    nets = topo.xml.nics if topo.xml else ()
    if nets:
        gbps = round(max(c.bits_per_s for c in nets) / 1e9)
        family = "efa" if all(c.name.startswith(("rdmap", "efa")) for c in nets) else "ib"
        name = NIC_BY_SPEED[family].get(gbps)
        if name:
            facts.notes.append(f"NIC fabric: {name} ({gbps} Gb/s {family.upper()} in the NCCL topology XML)")
            return name
        facts.warnings.append(f"no catalog {family.upper()} fabric runs at {gbps} Gb/s: pass --nic-fabric NAME")
    if template is not None and template.nic_fabric is not None:
        facts.notes.append(
            f"NIC fabric: {template.nic_fabric.name} (speed not in the input; from built-in {template.name}, same GPU)"
        )
        return template.nic_fabric.name
    return None


# --- P2P ---------------------------------------------------------------------------------------


def p2p_stops_under_one_switch(topo: TopoInput) -> bool:
    """P2P only between GPUs under one switch (PIX), not across switches (PXB): NCCL_P2P_LEVEL=PIX in
    the file, or a `topo -p2p` matrix with PIX pairs OK and PXB pairs refused."""
    if topo.p2p_level == "pix":
        return True
    if topo.p2p is None or topo.matrix is None or topo.p2p_level:
        return False
    by_path: dict[str, set[str]] = {}
    n = topo.matrix.gpus
    for a in range(n):
        for b in range(a + 1, n):
            by_path.setdefault(topo.matrix.paths[a][b], set()).add(topo.p2p.status[a][b])
    return "OK" in by_path.get("pix", set()) and "pxb" in by_path and "OK" not in by_path["pxb"]


def choose_p2p(topo: TopoInput, facts: Facts) -> dict:
    """p2p_level (NCCL_P2P_LEVEL) and gpu_p2p (the driver's answer) for the [pcie] table."""
    out: dict = {"p2p_level": topo.p2p_level or "auto"}
    if topo.p2p_level:
        facts.notes.append(f"P2P level: {topo.p2p_level} (NCCL_P2P_LEVEL / NCCL_P2P_DISABLE in the input)")
    if topo.p2p is None:
        return out
    n, m = facts.n, topo.matrix
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if m is None or m.paths[a][b] != "nvl"]
    if not pairs:
        facts.notes.append("P2P matrix: every GPU pair is NVLink (P2P over NVLink)")
        return out
    status = {(a, b): topo.p2p.status[a][b] for a, b in pairs}
    if not any(s == "OK" for s in status.values()):
        why = sorted({s for s in status.values()})
        facts.notes.append(
            f"P2P: `topo -p2p` says no PCIe pair can ({', '.join(why)}: "
            + (
                "the GPU's driver refuses it, as GeForce drivers do"
                if "GNS" in why
                else "the chipset or topology refuses it"
            )
            + "): NCCL stages every PCIe hop through host memory"
        )
        out["gpu_p2p"] = False
        return out
    if not facts.gpu.pcie_p2p:
        facts.notes.append("P2P: `topo -p2p` says OK although this GPU's driver normally refuses it (a patched driver)")
        out["gpu_p2p"] = True
    if p2p_stops_under_one_switch(topo):
        out["p2p_level"] = "pix"
        facts.notes.append("P2P: OK under one switch (PIX) only, not across switches (PXB): level PIX")
    far = sorted({m.paths[a][b] for (a, b), s in status.items() if s == "OK"} & {"phb", "node", "sys"}) if m else []
    if far:
        facts.notes.append(
            f"P2P: the driver allows it through the host ({', '.join(far).upper()}), but NCCL's "
            f"default level (PXB) does not use it; NCCL_P2P_LEVEL=SYS would"
        )
    return out


# --- NVLink fabrics -----------------------------------------------------------------------------


def switch_fabric(facts: Facts, catalog: Catalog, template: System | None) -> str:
    if template is not None and template.topology == "switch" and template.intra_fabric.links_per_gpu == facts.nvlinks:
        name = template.intra_fabric.name
        facts.notes.append(f"NVSwitch fabric: {name} (as built-in {template.name}, same GPU, NV{facts.nvlinks})")
        return name
    name = facts.gpu.generation.nvswitch_fabric  # catalog/archs.toml
    if not name:
        raise CatalogError(f"no NVSwitch fabric in the catalog for {facts.gpu.arch} GPUs ({facts.gpu.name})")
    if catalog.fabric(name).links_per_gpu != facts.nvlinks:
        facts.warnings.append(
            f"NV{facts.nvlinks} per pair but {name} has {catalog.fabric(name).links_per_gpu} "
            f"links per GPU: its bandwidth may not be this box's"
        )
    facts.notes.append(f"NVSwitch fabric: {name} ({facts.gpu.arch})")
    return name


def bridge_fabric(facts: Facts, catalog: Catalog, template: System | None, name: str) -> tuple[str, dict]:
    """An NVLink bridge (pairs) or point-to-point mesh: a built-in fabric with the same link count,
    else a new one from NVIDIA's per-link rate and NCCL's per-link figure."""
    links = facts.nvlinks if facts.topology == "pairs" else facts.nvlinks * (facts.n - 1)
    if template is not None and template.topology == facts.topology and template.intra_fabric.links_per_gpu == links:
        facts.notes.append(f"NVLink fabric: {template.intra_fabric.name} (as built-in {template.name}, same GPU)")
        return template.intra_fabric.name, {}
    arch, gen = facts.gpu.arch, facts.gpu.generation
    if gen.nvlink_link_bytes_per_s is None or gen.nccl_nvlink_link_bytes_per_s is None:
        raise CatalogError(f"{facts.gpu.name} ({arch}) has no NVLink generation the catalog knows")
    # GB/s per link per direction (catalog/archs.toml: NVLink's signalling rate, NCCL's topo.h figure)
    per, nccl = gen.nvlink_link_bytes_per_s / 1e9, gen.nccl_nvlink_link_bytes_per_s / 1e9
    what = "bridge" if facts.topology == "pairs" else "mesh"
    table = {
        "kind": "nvlink",
        "nccl_link": "nvlink",
        "links_per_gpu": links,
        "description": f"NVLink {what} of {links} link(s) per GPU ({facts.gpu.name}), from nvidia-smi NV{facts.nvlinks}",
        "link_bandwidth": f"{per:g} GB/s",
        "bandwidth": f"{per * links:g} GB/s",
        "achievable_bandwidth": f"{nccl * links:.4g} GB/s",
        "nccl_bandwidth": f"{nccl * links:.4g} GB/s",
        "achievable_source": f"estimate: NCCL's own {nccl:g} GB/s per link (topo.h, {arch}) x {links}; no measurement of this box",
        "nccl_source": "NCCL src/graph/topo.h (5067397c) SMxx_NVLINK_BW per link",
        "source": "https://www.nvidia.com/en-us/data-center/nvlink/ (per-link rate per direction)",
    }
    facts.notes.append(
        f"NVLink fabric: new {name}-nvlink, {links} link(s) x {per:g} GB/s per direction "
        f"(achievable taken as NCCL's {nccl:g} GB/s per link)"
    )
    return f"{name}-nvlink", {f"{name}-nvlink": table}
