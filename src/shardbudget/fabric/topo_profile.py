"""A node's own topology (`nvidia-smi topo -m`, `topo -p2p r`, an NCCL topology XML) as a system profile
in catalog format: `shardbudget topo FILE --name NAME --out NAME.toml`, then `--catalog NAME.toml
--system NAME` in allreduce, plan, deploy and report.

What is inferred, and from what (`topo_read` describes the formats):

* **NVLink**: NV# on every GPU pair with more links per pair than a GPU has in all (k (n-1) > 18,
  NCCL's most NVLinks per GPU, src/graph/xml.cc) is an NVSwitch; NV# on disjoint pairs is NVLink
  bridges (`pairs`); NV# on every pair within a GPU's links is a point-to-point `mesh`.
* **Sockets**: NCCL's CPU nodes are NUMA domains (topo.h: "CPU ... Actually NUMA domains"); GPUs in
  one domain see each other as PIX/PXB/PHB/NODE, across domains as SYS. Where NVLink hides the PCIe
  path, a NIC that is not SYS to both GPUs, then the NUMA Affinity column, tells.
* **PCIe switches**: GPUs of one domain that are PIX/PXB to each other share a switch.
* **NICs**: a NIC PIX/PXB to a GPU is under its switch; every GPU with its own such NIC is
  rail-optimised, otherwise the NICs are shared. Speed from the XML (`<net speed>`), else
  `--nic-fabric`, else the built-in system of the same GPU.
* **P2P** (NCCL_P2P_LEVEL semantics, paths.cc ncclTopoCheckP2p): NCCL's default level is PXB;
  `topo -p2p r` saying no PCIe pair is OK (GNS: a GeForce driver, CNS: the chipset) turns P2P off,
  OK only under one switch lowers the level to PIX; NCCL_P2P_LEVEL / NCCL_P2P_DISABLE in the file
  set it.
* **GPU**: `--gpu`, else the names the file prints (`nvidia-smi -L` ...), else an error that says so.
* **CPU**: `--cpu`, else the XML's vendor/family/model or lscpu's model name, else the built-in
  system of the same GPU, else Sapphire Rapids with a warning.

Everything the input does not say is taken from a built-in catalog entry by name, and the profile
says which (`meta.notes`).
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from ..atomic import check_output_path, read_user_file, write_atomic
from ..datafile import find
from ..errors import CatalogError, UnknownNameError
from ..quoting import check_name, one_line
from .hardware import GPU, Catalog, System
from .catalog import load_catalog
from .topo_build import (
    MAX_NVLINKS_PER_GPU,
    Facts,
    bridge_fabric,
    choose_cpu,
    choose_nics,
    choose_p2p,
    p2p_stops_under_one_switch,
    pcie_fabrics,
    switch_fabric,
)
from .topo_read import TopoInput, read_topology_files, source_name

GPU_NAMES = (
    (r"H100 80GB HBM3|H100 SXM", "h100-sxm"),
    (r"H100 PCIe", "h100-pcie"),
    (r"(?<!G)H200", "h200"),
    (r"\bH20\b(?!-)", "h20"),
    (r"H800", "h800"),
    (r"A100[- ]SXM", "a100-sxm"),
    (r"A100.*PCI[Ee]|A100-PCIE", "a100-pcie"),
    (r"(?<!G)B200", "b200"),
    (r"GB200", "gb200"),
    (r"(?<!G)B300", "b300"),
    (r"GB300", "gb300"),
    (r"L40S", "l40s"),
    (r"\bL4\b", "l4"),
    (r"RTX 4090\b(?! D)", "rtx4090"),
    (r"RTX PRO 6000", "rtx-pro-6000"),
    (r"MI300X", "mi300x"),
    (r"MI325X", "mi325x"),
    (r"MI355X", "mi355x"),
)
"""NVML product names (as `nvidia-smi -L` prints them) -> catalog GPU."""

GPU_SPEC_TEMPLATE = """\
# A GPU the catalog lacks, for `shardbudget topo FILE --gpu-spec THIS.toml` (any --catalog file
# takes it too). Fill in every <...>; each number keeps its unit. `topo` writes the table into the
# profile, so the profile alone is enough for --catalog afterwards.
[gpus.NAME]                            # NAME: the GPU's catalog name, e.g. rtx5090 (not a built-in one)
description = "<vendor and product, memory>"
arch = "<volta | ampere | ada | hopper | blackwell | cdna3 | cdna4>"
memory = "<MiB as nvidia-smi reports the total, e.g. 32607 MiB>"
memory_bandwidth = "<datasheet peak, e.g. 1792 GB/s>"
bf16_dense = "<dense BF16 tensor peak (half the sparsity figure), e.g. 209.5 TFLOP/s>"
fp8_dense = "<dense FP8 tensor peak; delete the line where the GPU has no FP8>"
pcie_p2p = true                        # false for GeForce: the driver refuses PCIe P2P (topo -p2p: GNS)
source = "<where the numbers come from: datasheet URL, nvidia-smi output>"
"""
"""What `shardbudget topo --gpu-spec-template` prints."""

_PCIE_NEAR = ("pix", "pxb")
_SAME_DOMAIN = ("pix", "pxb", "phb", "node")


@dataclass(frozen=True)
class TopoProfile:
    """A system profile in catalog format, inferred from a node's topology."""

    name: str
    system: dict
    """The [systems.NAME] table as written (with its [pcie] table)."""
    fabrics: dict = field(default_factory=dict)
    """New [fabrics.*] tables, for NVLink bridges the catalog has no entry for."""
    gpus: dict = field(default_factory=dict)
    """A [gpus.*] table from --gpu-spec: a GPU the catalog lacks, carried in the profile."""
    notes: tuple[str, ...] = ()
    """What was inferred and from what, one line each."""
    warnings: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "system": self.system,
            "fabrics": self.fabrics,
            "gpus": self.gpus,
            "notes": list(self.notes),
            "warnings": list(self.warnings),
            "inputs": list(self.inputs),
        }

    def toml(self) -> str:
        doc = {
            "meta": {"tool": "shardbudget topo", "inputs": list(self.inputs), "notes": list(self.notes)},
            "systems": {self.name: self.system},
        }
        if self.fabrics:
            doc["fabrics"] = self.fabrics
        if self.gpus:
            doc["gpus"] = self.gpus
        # a comment only a line break ends: the input files' names in it as one line (quoting.one_line)
        head = (
            "# "
            + one_line(
                f"shardbudget topo profile {self.name}: a system in catalog format, inferred from "
                f"{', '.join(self.inputs)}"
            )
            + "\n"
        )
        return head + tomli_w.dumps(doc)


# --- the entry points --------------------------------------------------------------------------


def topo_profile(
    files,
    *,
    name: str,
    gpu: str | None = None,
    cpu: str | None = None,
    nic_fabric: str | None = None,
    catalog: Catalog | None = None,
    gpu_spec: str | os.PathLike | None = None,
) -> TopoProfile:
    """Read topology files and infer a system profile named `name` (see the module docstring). The
    files' names are written into the profile and printed: printable UTF-8 (`quoting.check_name`)."""
    for f in files:
        check_name(source_name(f), "topo input file name", error=CatalogError)
    return infer_profile(
        read_topology_files(files),
        name=name,
        gpu=gpu,
        cpu=cpu,
        nic_fabric=nic_fabric,
        catalog=catalog,
        gpu_spec=gpu_spec,
    )


def infer_profile(
    topo: TopoInput,
    *,
    name: str,
    gpu: str | None = None,
    cpu: str | None = None,
    nic_fabric: str | None = None,
    catalog: Catalog | None = None,
    gpu_spec: str | os.PathLike | None = None,
) -> TopoProfile:
    """The system profile a parsed topology describes (`topo_read.read_topology_files`). `gpu_spec`:
    a TOML file with one [gpus.NAME] table (GPU_SPEC_TEMPLATE) for a GPU the catalog lacks."""
    catalog = catalog or load_catalog()
    _check_name(name, catalog)
    base, spec = catalog, {}
    if gpu_spec is not None:
        catalog, gpu, spec = read_gpu_spec(gpu_spec, catalog, gpu)
    facts = Facts(n=_gpu_count(topo), gpu=_gpu(topo, gpu, catalog))
    if spec:
        facts.notes.append(
            f"gpu: {gpu} defined by --gpu-spec {os.path.basename(str(gpu_spec))}, written into this profile"
        )
    else:
        _gpu_note(topo, facts, gpu)
    facts.warnings += list(topo.warnings)
    if topo.pci_only:
        facts.warnings.append(
            "this is `nvidia-smi topo -mp` output, which shows PCIe paths only: NVLink is "
            "invisible in it; give `nvidia-smi topo -m` for NVLink"
        )
    _nvlink(topo, facts)
    template = _template(catalog, facts.gpu, facts.topology)
    _domains(topo, facts)
    _switches(topo, facts)
    system, fabrics = _system_table(topo, facts, catalog, template, cpu=cpu, nic_fabric=nic_fabric, name=name)
    profile = TopoProfile(
        name=name,
        system=system,
        fabrics=fabrics,
        gpus=spec,
        notes=tuple(facts.notes),
        warnings=tuple(dict.fromkeys(facts.warnings)),
        inputs=tuple(source_name(s) for s in topo.sources),
    )
    validate_profile(profile, base)  # the profile carries the spec's GPU: loaded without the spec file
    return profile


GPU_SPEC_MAX_BYTES = 2**20
"""A --gpu-spec file holds one [gpus.NAME] table: a few hundred bytes."""


def read_gpu_spec(path: str | os.PathLike, catalog: Catalog, gpu: str | None) -> tuple[Catalog, str, dict]:
    """(the catalog with the spec's GPU, its name, its table as written) from a --gpu-spec file: one
    [gpus.NAME] table, read and checked as every catalog GPU is (units, source, a name of its own)."""
    data = read_user_file(
        path,
        what="a --gpu-spec TOML file",
        limit=GPU_SPEC_MAX_BYTES,
        error=CatalogError,
        missing=f"--gpu-spec {path}: no such file (`shardbudget topo --gpu-spec-template` prints one)",
    )
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as err:
        why = "nested too deeply to read" if isinstance(err, RecursionError) else err
        raise CatalogError(
            f"--gpu-spec {path}: not a TOML file ({why}); `shardbudget topo --gpu-spec-template` prints one"
        ) from None
    gpus = doc.get("gpus")
    if set(doc) - {"gpus", "meta"} or not isinstance(gpus, dict) or len(gpus) != 1:
        raise CatalogError(
            f"--gpu-spec {path}: expected exactly one [gpus.NAME] table and nothing else "
            f"(`shardbudget topo --gpu-spec-template` prints one)"
        )
    ((name, table),) = gpus.items()
    if name == "NAME" or "<" in str(table):
        raise CatalogError(f"--gpu-spec {path}: fill in every <...> of the template and its NAME")
    if gpu is not None and gpu != name:
        raise CatalogError(f"--gpu {gpu} and --gpu-spec's [gpus.{name}] name different GPUs: give one")
    return load_catalog([*catalog.sources, str(path)]), name, {name: table}


def _check_name(name: str, catalog: Catalog) -> None:
    if not name or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", name):
        raise CatalogError(f"profile name {name!r} must be letters, digits, '-' or '_' (at most 64)")
    if (same := find(name, catalog.systems)) is not None:  # names are one ignoring case (datafile)
        was = "" if same == name else f" ({same!r}: names are compared ignoring case)"
        raise CatalogError(f"profile name {name!r} is already a catalog system{was}; choose another --name")
    if (old := find(name, catalog.renamed.get("systems", {}))) is not None:  # still taken, for one release
        raise CatalogError(
            f"profile name {name!r} is the old name of catalog system "
            f"{catalog.renamed['systems'][old]!r}; choose another --name"
        )


def _gpu_count(topo: TopoInput) -> int:
    if topo.matrix is not None:
        n = topo.matrix.gpus
    elif topo.xml is not None and topo.xml.gpus:
        n = len(topo.xml.gpus)
    else:
        raise CatalogError(
            f"{topo.sources[0]}: no GPU matrix (`nvidia-smi topo -m`) or NCCL topology XML with "
            f"<gpu> entries; a P2P matrix alone does not describe a node"
        )
    for kind, m in (
        ("P2P matrix", topo.p2p and len(topo.p2p.status)),
        ("NCCL topology XML", topo.xml and topo.xml.gpus and len(topo.xml.gpus)),
    ):
        if m and m != n:
            raise CatalogError(f"the {kind} has {m} GPUs, the topology {n}: give files of the same node")
    return n


def _gpu(topo: TopoInput, requested: str | None, catalog: Catalog) -> GPU:
    names = sorted(set(topo.gpu_names))
    if requested is not None:
        try:
            return catalog.gpu(requested)
        except UnknownNameError as err:
            err.args = (
                f"{err}; for a GPU the catalog lacks, describe it with --gpu-spec FILE "
                f"(`shardbudget topo --gpu-spec-template` prints one)",
            )
            raise err from None
    if not names:
        raise CatalogError(
            "the input does not name the GPU model (the `nvidia-smi topo -m` header never does): "
            "pass --gpu NAME (catalog GPUs: `shardbudget fabrics --systems`), or add `nvidia-smi -L` output to the file"
        )
    if len(names) > 1:
        raise CatalogError(
            f"the input names different GPUs ({'; '.join(names)}): the catalog describes one "
            f"GPU model per node; pass --gpu NAME"
        )
    for pattern, key in GPU_NAMES:
        if re.search(pattern, names[0]) and key in catalog.gpus:
            return catalog.gpus[key]
    raise CatalogError(
        f"the input's GPU {names[0]!r} is not in the catalog: pass --gpu NAME (a catalog GPU, "
        f"or one a --catalog file defines), or describe it with --gpu-spec FILE "
        f"(`shardbudget topo --gpu-spec-template` prints one)"
    )


def _gpu_note(topo: TopoInput, facts: Facts, requested: str | None) -> None:
    named = sorted(set(topo.gpu_names))
    if requested is None:
        facts.notes.append(f"gpu: {facts.gpu.name} from the input's name {named[0]!r}")
        return
    facts.notes.append(f"gpu: {facts.gpu.name} (--gpu)")
    if named and not any(re.search(p, named[0]) and k == facts.gpu.name for p, k in GPU_NAMES):
        facts.warnings.append(f"--gpu {facts.gpu.name} overrides the input's GPU {named[0]!r}")


# --- NVLink, domains, switches ---------------------------------------------------------------


def _nvlink(topo: TopoInput, facts: Facts) -> None:
    """The NVLink shape: switch, pairs, mesh, or none (pcie); `single` for one GPU."""
    n = facts.n
    links = _nvlink_matrix(topo, n)
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if links[a][b]]
    if n == 1:
        facts.topology = "single"
    elif not pairs:
        facts.topology = "pcie"
        facts.notes.append("NVLink: none between the GPUs; PCIe only")
    elif topo.matrix is None and all(g.nvlink_switch for g in topo.xml.gpus):
        facts.topology, facts.nvlinks = "switch", links[0][1]
        facts.notes.append(f"NVLink: every GPU has {facts.nvlinks} NVLinks to NVSwitches (NCCL topology XML)")
    elif len(pairs) == n * (n - 1) // 2 and len({links[a][b] for a, b in pairs}) == 1 and n > 2:
        k = links[0][1]
        facts.nvlinks = k
        facts.topology = "switch" if k * (n - 1) > MAX_NVLINKS_PER_GPU else "mesh"
        why = (
            f"NV{k} on all {len(pairs)} pairs is more than a GPU's {MAX_NVLINKS_PER_GPU} NVLinks: an NVSwitch"
            if facts.topology == "switch"
            else f"NV{k} on all {len(pairs)} pairs: a point-to-point NVLink mesh"
        )
        facts.notes.append(f"NVLink: {why}")
    elif all(sum(1 for b in range(n) if links[a][b]) == 1 for a in range(n)):
        facts.topology, facts.nvlinks = "pairs", max(links[a][b] for a, b in pairs)
        facts.notes.append(f"NVLink: bridged pairs {', '.join(f'GPU{a}-GPU{b} NV{links[a][b]}' for a, b in pairs)}")
        if any(b != a + 1 or a % 2 for a, b in pairs):
            facts.warnings.append(
                "the NVLink pairs are not GPU0-1, GPU2-3, ...: the catalog prices pairs in index "
                "order, so rings are priced as if the pairs were adjacent"
            )
    else:
        raise CatalogError(
            "the NVLinks join some GPU pairs but not as all pairs (NVSwitch / mesh) or disjoint "
            "pairs (bridges): " + ", ".join(f"GPU{a}-GPU{b} NV{links[a][b]}" for a, b in pairs[:8])
        )


def _nvlink_matrix(topo: TopoInput, n: int) -> list[list[int]]:
    if topo.matrix is not None:
        return [list(r) for r in topo.matrix.nvlinks]
    xml = topo.xml
    links = [[0] * n for _ in range(n)]
    by_bus = {g.busid: i for i, g in enumerate(xml.gpus)}
    for a, g in enumerate(xml.gpus):
        for b in range(n):
            if b != a and g.nvlink_switch and xml.gpus[b].nvlink_switch:
                links[a][b] = g.nvlink_switch
        for bus, count in g.nvlink_peers:
            if bus in by_bus:
                links[a][by_bus[bus]] = links[by_bus[bus]][a] = count
    return links


def _domains(topo: TopoInput, facts: Facts) -> None:
    """NUMA domains (NCCL's CPU nodes): union GPUs that are not SYS to each other."""
    n = facts.n
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a in range(n):
        for b in range(a + 1, n):
            if _same_domain(topo, a, b):
                parent[find(b)] = find(a)
    roots = sorted({find(a) for a in range(n)})
    facts.domains = [roots.index(find(a)) for a in range(n)]
    sizes = [facts.domains.count(d) for d in range(len(roots))]
    if (
        topo.xml is not None
        and topo.matrix is None
        and not any(g.nvlink_switch or g.nvlink_peers for g in topo.xml.gpus)
    ):
        facts.warnings.append(
            "the NCCL topology XML lists no NVLink (a hand-written NCCL_TOPO_FILE leaves it to "
            "NVML): the GPUs are taken as PCIe-only; add `nvidia-smi topo -m` if they have NVLink"
        )
    groups = " | ".join(_span([g for g in range(n) if facts.domains[g] == d]) for d in range(len(roots)))
    facts.notes.append(f"sockets (NUMA domains, SYS between them): {len(roots)} ({groups})")
    if len(set(sizes)) > 1:
        raise CatalogError(
            f"the NUMA domains hold different numbers of GPUs ({', '.join(map(str, sizes))}): the "
            f"catalog's PCIe tree has equal sockets filled in GPU order"
        )
    if facts.domains != [g // sizes[0] for g in range(n)]:
        facts.warnings.append("GPU numbering does not fill the sockets in order: the catalog's tree assumes it does")


def _same_domain(topo: TopoInput, a: int, b: int) -> bool:
    m = topo.matrix
    if m is not None and m.paths[a][b] != "nvl":
        return m.paths[a][b] in _SAME_DOMAIN
    if m is not None and m.nics:
        # NVLink hides the PCIe path: a NIC that neither GPU reaches over SYS shares their domain
        return any(p[a] != "sys" and p[b] != "sys" for p in m.nic_paths)
    if m is not None and m.numa[a] is not None and m.numa[b] is not None:
        return m.numa[a] == m.numa[b]
    if topo.xml is not None and topo.xml.gpus:
        return topo.xml.gpus[a].cpu == topo.xml.gpus[b].cpu
    return True


def _switches(topo: TopoInput, facts: Facts) -> None:
    """GPUs of a domain that are PIX/PXB to each other share a PCIe switch (PIX only where P2P stops
    there: the catalog's tree allows P2P inside a switch and never between switches)."""
    n, m = facts.n, topo.matrix
    near = ("pix",) if p2p_stops_under_one_switch(topo) else _PCIE_NEAR
    if m is not None:
        groups = _groups(n, lambda a, b: m.paths[a][b] in near)
    elif topo.xml is not None and topo.xml.gpus:
        sw = [g.switch for g in topo.xml.gpus]
        groups = _groups(n, lambda a, b: sw[a] == sw[b])
    else:
        groups = [[g] for g in range(n)]
    sizes = {len(g) for g in groups}
    per_domain = n // (max(facts.domains) + 1)
    size = min(sizes)
    if len(sizes) > 1 or per_domain % size:
        facts.warnings.append(
            f"PCIe switches hold different numbers of GPUs ({', '.join(map(str, sorted(sizes)))}): taking 1 per switch"
        )
        size = 1
    facts.gpus_per_switch = size
    if facts.topology in ("pcie", "pairs"):
        facts.notes.append(
            "PCIe: each GPU on its own CPU root port (no PIX/PXB between GPUs)"
            if size == 1
            else f"PCIe: {size} GPUs per switch (PIX/PXB to each other)"
        )


def _groups(n: int, joined) -> list[list[int]]:
    out: list[list[int]] = []
    for g in range(n):
        for grp in out:
            if all(joined(g, h) for h in grp):
                grp.append(g)
                break
        else:
            out.append([g])
    return out


def _span(gpus: list[int]) -> str:
    if len(gpus) > 2 and gpus == list(range(gpus[0], gpus[-1] + 1)):
        return f"GPU{gpus[0]}-{gpus[-1]}"
    return ",".join(f"GPU{g}" for g in gpus)


def _template(catalog: Catalog, gpu: GPU, topology: str) -> System | None:
    """The built-in system of the same GPU whose topology is closest, a healthy one before a degraded one
    (issue 34): what the input does not say is taken from it."""
    same = [s for s in catalog.systems.values() if s.gpu is gpu and not s.profile_source]
    if not same:
        return None
    kind = "switch" if topology in ("switch", "mesh") else "pcie"
    return min(
        same,
        key=lambda s: (("switch" if s.topology in ("switch", "mesh") else "pcie") != kind, bool(s.degraded), s.name),
    )


# --- the profile ---------------------------------------------------------------------------

_SHAPE = {
    "switch": "NVSwitch",
    "pairs": "NVLink-bridged pairs",
    "mesh": "NVLink mesh",
    "pcie": "PCIe only",
    "single": "one GPU",
}


def _system_table(
    topo: TopoInput,
    facts: Facts,
    catalog: Catalog,
    template: System | None,
    *,
    cpu: str | None,
    nic_fabric: str | None,
    name: str,
) -> tuple[dict, dict]:
    """The [systems.NAME] table (with its [pcie] tree) and any new fabric it needs."""
    pcie = pcie_fabrics(topo, facts, catalog)
    fabrics: dict = {}
    if facts.topology == "switch":
        intra = switch_fabric(facts, catalog, template)
    elif facts.topology in ("pairs", "mesh"):
        intra, fabrics = bridge_fabric(facts, catalog, template, name)
    else:
        intra = pcie["link"]
    nics = choose_nics(topo, facts, catalog, template, nic_fabric)
    inputs = ", ".join(source_name(s) for s in topo.sources)
    tree = {
        "sockets": facts.sockets,
        "gpus_per_switch": facts.gpus_per_switch,
        "host_bridge": pcie["host_bridge"],
        "shm": pcie["shm"],
    }
    if facts.gpus_per_switch > 1:
        tree["switch_uplink"] = pcie["link"]
    if nics["nics_per_switch"]:
        tree["nics_per_switch"] = nics["nics_per_switch"]
    tree.update(choose_p2p(topo, facts))
    tree["source"] = f"inferred by shardbudget topo from {inputs}"
    system = {
        "description": f"{facts.n}x {facts.gpu.description}, {_SHAPE[facts.topology]}, {facts.sockets} "
        f"NUMA domain(s): from the topology in {inputs}",
        "gpu": facts.gpu.name,
        "gpus_per_node": facts.n,
        "topology": facts.topology,
        "intra_fabric": intra,
    }
    if facts.topology == "pairs":
        system["fallback_fabric"] = pcie["link"]
    system["cpu"] = choose_cpu(topo, facts, catalog, template, cpu)
    if nics.get("nic_fabric"):
        system.update(
            nic_fabric=nics["nic_fabric"], nics_per_node=nics["nics_per_node"], rail_optimized=nics["rail_optimized"]
        )
    system["source"] = (
        f"shardbudget topo from {inputs} (nvidia-smi topo / NCCL topology); what each entry is "
        f"inferred from, or which built-in entry it is taken from, is in meta.notes"
    )
    system["pcie"] = tree
    return system, fabrics


def validate_profile(profile: TopoProfile, catalog: Catalog | None = None) -> System:
    """Load the profile as `--catalog` would, so a profile that is written always loads."""
    catalog = catalog or load_catalog()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{profile.name}.toml"
        path.write_text(profile.toml(), encoding="utf-8")
        try:
            return load_catalog([*catalog.sources, str(path)]).system(profile.name)
        except (CatalogError, UnknownNameError) as err:
            raise CatalogError(f"the inferred profile does not load ({err}); please report this topology") from None


def check_topo_path(path: str | os.PathLike, *, force: bool = False) -> Path:
    """Where a profile may be written, checked before any work is done (and again when writing)."""
    return check_output_path(path, what="the profile", suffixes=(".toml",), force=force, error=CatalogError)


def write_topo_profile(profile: TopoProfile, path: str | os.PathLike, *, force: bool = False) -> Path:
    path = check_topo_path(path, force=force)
    try:
        write_atomic(path, profile.toml(), force=force)
    except OSError as err:
        raise CatalogError(f"cannot write {path}: {err.strerror or err}") from None
    return path
