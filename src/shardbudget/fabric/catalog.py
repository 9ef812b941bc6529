"""The hardware catalog read from TOML and validated: fabrics, GPUs, CPUs and systems, NCCL's
constants and the engines' kernels.

The catalog files (`catalog/fabrics.toml`, `gpus.toml`, `systems.toml`, ...) hold every number with
its unit written out ("450 GB/s", "0.6 us") and a `source`; this module turns them into the frozen
dataclasses of `fabric.hardware`. Users add their own entries with a TOML file of the same format
(`--catalog my.toml`); they are validated with the same messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from .. import units
from ..datacache import cached, read_builtin
from ..datafile import Table, check_name, find, fold, parse_toml, read_record, read_toml_file
from ..errors import CatalogError
from . import nccl_constants
from .hardware import (
    CPU,
    CPU_VENDORS,
    FABRIC_KINDS,
    FIGURES,
    GPU,
    NCCL_LINKS,
    NIC_PATHS,
    P2P_LEVELS,
    PROTOCOLS,
    TOPOLOGIES,
    Arch,
    Catalog,
    Fabric,
    GpuPower,
    HostStaged,
    NicPower,
    PcieTree,
    System,
    SystemCost,
    current_name,
    lookup,
)
from .nccl_constants import NcclConstants


def _rate(entry: Table, key: str, direction_key: str, default: Any = ...) -> float:
    """A rate field plus the field saying whether it is per direction or the sum of both."""
    if default is not ... and not entry.has(key):
        return default
    value = entry.raw(key, types=(str,))
    direction = entry.choice(direction_key, units.DIRECTIONS, "per-direction")
    try:
        return units.vendor_rate_to_bytes_per_s(value, direction)
    except units.UnitError as err:
        raise entry.fail(key, str(err)) from None


def _hop_latencies(entry: Table, nccl_link: str, nccl: NcclConstants) -> dict[str, float]:
    defaults = nccl.ring_hop_s(nccl_link)
    given = entry.opt_table("hop_latency")
    out: dict[str, float] = {}
    for proto in PROTOCOLS:
        if given is not None and given.has(proto):
            out[proto] = given.quantity(proto, units.parse_seconds)
        elif proto in defaults:
            out[proto] = defaults[proto]
        else:
            raise CatalogError(
                f"{entry.where}: hop_latency.{proto} is missing and NCCL's table has "
                f"no default for link class {nccl_link!r}"
            )
    if given is not None:
        given.done()
    return out


def _read_fabric(e: Table, name: str, nccl: NcclConstants, host_staged: Mapping[str, HostStaged]) -> Fabric:
    nccl_link = e.choice("nccl_link", NCCL_LINKS)
    peak = _rate(e, "bandwidth", "bandwidth_direction")
    links = e.integer("links_per_gpu", 1)
    per_link = _rate(e, "link_bandwidth", "bandwidth_direction", None)
    staged = _staged_row(e, host_staged)
    achievable = staged.busbw_bytes_per_s if staged else _rate(e, "achievable_bandwidth", "achievable_direction", peak)
    if achievable > peak * 1.0001:
        raise CatalogError(
            f"{e.where}: achievable_bandwidth ({units.format_rate(achievable)}) "
            f"exceeds the peak bandwidth ({units.format_rate(peak)})"
        )
    fabric = Fabric(
        name=name,
        kind=e.choice("kind", FABRIC_KINDS),
        description=e.text("description", ""),
        bytes_per_s=peak,
        achievable_bytes_per_s=achievable,
        hop_latency_s=_hop_latencies(e, nccl_link, nccl),
        nccl_link=nccl_link,
        in_switch_reduction=e.flag("in_switch_reduction", False),
        p2p=e.flag("p2p", True),
        nvls_efficiency=_fraction(e, "nvls_efficiency"),
        links_per_gpu=links,
        per_link_bytes_per_s=per_link,
        figure=e.choice("figure", FIGURES, "peak"),
        source=_source(e),
        achievable_source=(
            f"host_staged.{staged.name}: {staged.source}" if staged else e.text("achievable_source", "")
        ),
        latency_source=e.text("latency_source", ""),
        nccl_bytes_per_s=_rate(e, "nccl_bandwidth", "bandwidth_direction", achievable),
        achievable_gpus=e.raw("achievable_gpus", None, int),
        host_staged=staged.name if staged else "",
    )
    e.done()  # nccl_source: where the NCCL figure comes from, a note for the reader
    return fabric


def _staged_row(e: Table, rows: Mapping[str, HostStaged]) -> HostStaged | None:
    """The host-staged path (`[host_staged.<name>]`) a fabric's achievable figure is: one SHM hop inside
    one socket of a healthy platform, so that every generation's figure is of the same platform (a
    socket crossing or a degraded host is the CPU entry's, not the fabric's)."""
    if not e.has("host_staged"):
        return None
    for clash in ("achievable_bandwidth", "achievable_source"):
        if e.has(clash):
            raise e.fail(clash, "the fabric names a host_staged row, which is its achievable figure and its source")
    row = lookup("host-staged path", e.text("host_staged"), rows, e.at("host_staged"))
    if row.sockets != 1 or row.degraded:
        raise e.fail(
            "host_staged",
            f"host_staged.{row.name} is {'degraded' if row.degraded else 'a ring across sockets'}:"
            " a fabric's figure is one hop inside one socket of a healthy host",
        )
    return row


def _source(e: Table) -> str:
    src = e.text("source")
    if not src.strip():
        raise e.fail("source", "must name where the numbers come from")
    return src


def _read_gpu(e: Table, name: str, archs: Mapping[str, Arch]) -> GPU:
    arch = _generation(e, archs)
    bf16 = e.quantity("bf16_dense", units.parse_flops)
    gpu = GPU(
        name=name,
        description=e.text("description", ""),
        arch=arch.name,
        generation=arch,
        memory_bytes=e.quantity("memory", _bytes_with_unit),
        mem_bytes_per_s=e.quantity("memory_bandwidth", units.parse_rate),
        bf16_flops_per_s=bf16,
        fp8_flops_per_s=e.quantity("fp8_dense", units.parse_flops, bf16),
        fp4_flops_per_s=e.quantity("fp4_dense", units.parse_flops, 0.0),
        memory_smi=e.text("memory_smi", ""),
        memory_source=e.text("memory_source", ""),
        pcie_p2p=e.flag("pcie_p2p", True),
        figure=e.choice("figure", FIGURES, "peak"),
        compute_capability=e.text("compute_capability", ""),
        source=_source(e),
    )
    e.done()
    return gpu


def _generation(e: Table, archs: Mapping[str, Arch]) -> Arch:
    """The GPU's generation, which the catalog must describe (`[archs.<name>]`): a generation it does
    not know is refused, never priced as another one."""
    arch = e.text("arch")
    known = find(arch, archs)
    if known is None:
        raise e.fail(
            "arch",
            f"GPU generation {arch!r} is not described in the catalog (it describes "
            f"{', '.join(archs)}); add an [archs.{arch}] table with its facts and their sources",
        )
    return archs[known]


# NCCL's per-step network post overhead by CPU vendor (tuning.cc getNetOverhead: Intel 1 us, AMD 2 us,
# anything else 1 us).
_NET_OVERHEAD_S = {"intel": 1e-6, "amd": 2e-6}


def _read_cpu(e: Table, name: str) -> CPU:
    link = _rate(e, "socket_link_bandwidth", "bandwidth_direction")
    nccl_link = _rate(e, "nccl_socket_link_bandwidth", "bandwidth_direction", link)
    vendor = e.choice("vendor", CPU_VENDORS)
    cpu = CPU(
        name=name,
        description=e.text("description", ""),
        vendor=vendor,
        socket_link_bytes_per_s=link,
        nccl_socket_link_bytes_per_s=nccl_link,
        socket_stream_bytes_per_s=_rate(e, "socket_stream_bandwidth", "bandwidth_direction", link),
        host_bytes_per_s=_rate(e, "host_bandwidth", "bandwidth_direction", float("inf")),
        socket_latency_s=e.quantity("socket_latency", _seconds_or_zero, 0.0),
        net_overhead_s=e.quantity("net_overhead", _seconds_or_zero, _NET_OVERHEAD_S.get(vendor, 1e-6)),
        source=_source(e),
        degraded=_degraded(e, name),
    )
    e.done()  # socket_link_source, host_source, latency_source: provenance, notes for the reader
    if cpu.socket_stream_bytes_per_s > cpu.socket_link_bytes_per_s * 1.0001:
        raise CatalogError(
            f"{e.where}: socket_stream_bandwidth ({units.format_rate(cpu.socket_stream_bytes_per_s)})"
            f" exceeds socket_link_bandwidth ({units.format_rate(cpu.socket_link_bytes_per_s)})"
        )
    return cpu


def _degraded(e: Table, name: str) -> str:
    """`degraded`: why the profile is degraded and what it was measured on. Its name must say so, so
    that every view that prints the name prints the word (issue 34: the demo's PCIe box was a
    degraded one and nothing said it)."""
    why = e.text("degraded", "")
    if e.has("degraded") and not why.strip():
        raise e.fail("degraded", "must say why the profile is degraded and where it was measured")
    if why and "degraded" not in name.lower():
        raise e.fail("degraded", f"a degraded profile's name says so: rename {name!r} (e.g. {name}-degraded)")
    return why


def _read_pcie(e: Table, fabrics: Mapping[str, Fabric]) -> PcieTree:
    def fab(key: str, default: Any = ...) -> Fabric | None:
        name = e.raw(key, default, str)
        return None if name is None else lookup("fabric", name, fabrics, e.at(key))

    tree = PcieTree(
        sockets=e.integer("sockets", 1, maximum=8),
        gpus_per_switch=e.integer("gpus_per_switch", 1, maximum=64),
        host_bridge=fab("host_bridge"),
        shm=fab("shm"),
        switch_uplink=fab("switch_uplink", None),
        nics_per_switch=e.integer("nics_per_switch", 0, minimum=0, maximum=16),
        p2p_level=e.choice("p2p_level", P2P_LEVELS, "auto"),
        gpu_p2p=e.raw("gpu_p2p", None, bool),
        source=_source(e),
    )
    e.done()
    for key, f in (("host_bridge", tree.host_bridge), ("shm", tree.shm), ("switch_uplink", tree.switch_uplink)):
        if f is not None and f.kind != "pcie":
            raise CatalogError(f"{e.at(key)}: fabric {f.name!r} is a {f.kind} link, expected a pcie one")
    return tree


def _legacy_pcie(
    topology: str,
    gpus_per_node: int,
    gpus_per_socket: int,
    intra: Fabric,
    fallback: Fabric | None,
    socket: Fabric | None,
) -> PcieTree:
    """The tree a legacy entry (no [pcie] table) describes: each socket's GPUs under one switch, every
    PCIe hop on the entry's PCIe fabric, P2P wherever that fabric allows it, and `socket_fabric`
    standing for the socket crossing. It prices rings exactly as the catalog did before the tree."""
    link = fallback if topology == "pairs" and fallback is not None else intra
    return PcieTree(
        sockets=max(1, gpus_per_node // gpus_per_socket),
        gpus_per_switch=gpus_per_socket,
        host_bridge=link,
        shm=link,
        switch_uplink=None,
        nics_per_switch=0,
        p2p_level="sys",
        legacy=True,
        cross_socket=socket,
        source="derived from the entry's legacy fields",
    )


def _read_system(
    e: Table,
    name: str,
    fabrics: Mapping[str, Fabric],
    gpus: Mapping[str, GPU],
    cpus: Mapping[str, CPU] | None = None,
    renamed: Mapping[str, str] | None = None,
) -> System:
    gpus_per_node = e.integer("gpus_per_node")
    topology = e.choice("topology", TOPOLOGIES)
    nic_name = e.raw("nic_fabric", None, str)
    fallback = e.raw("fallback_fabric", None, str)
    socket = e.raw("socket_fabric", None, str)
    if topology == "pairs" and fallback is None:
        raise CatalogError(f"{e.where}: topology 'pairs' needs a fallback_fabric (the PCIe path)")
    cpu_name = e.raw("cpu", None, str)
    cpu = (
        lookup("CPU", current_name(cpu_name, cpus or {}, renamed or {}, "CPU"), cpus or {}, e.at("cpu"))
        if cpu_name
        else None
    )
    pcie_table = e.opt_table("pcie")
    pcie = _read_pcie(pcie_table, fabrics) if pcie_table is not None else None
    system = System(
        name=name,
        description=e.text("description", ""),
        gpu=lookup("GPU", e.text("gpu"), gpus, e.at("gpu")),
        gpus_per_node=gpus_per_node,
        topology=topology,
        intra_fabric=lookup("fabric", e.text("intra_fabric"), fabrics, e.at("intra_fabric")),
        fallback_fabric=lookup("fabric", fallback, fabrics, e.at("fallback_fabric")) if fallback else None,
        socket_fabric=lookup("fabric", socket, fabrics, e.at("socket_fabric")) if socket else None,
        gpus_per_socket=e.integer("gpus_per_socket", gpus_per_node // pcie.sockets if pcie else gpus_per_node),
        nic_fabric=lookup("fabric", nic_name, fabrics, e.at("nic_fabric")) if nic_name else None,
        nics_per_node=e.integer("nics_per_node", 0, minimum=0),
        rail_optimized=e.flag("rail_optimized", True),
        domain_gpus=e.integer("domain_gpus", gpus_per_node),
        source=_source(e),
        base_latency_s=e.quantity("base_latency", _seconds_or_zero, None),
        base_latency_scale=_positive_float(e, "base_latency_scale"),
        profile_source=e.text("profile_source", ""),
        cpu=cpu,
        pcie=pcie,
        gpus_per_host=e.integer("gpus_per_host", gpus_per_node),
        nic_path=e.choice(
            "nic_path", NIC_PATHS, _default_nic_path(topology, cpu, pcie, e.flag("rail_optimized", True))
        ),
        # a node on a degraded host is degraded: its own reason, else its CPU's
        degraded=_degraded(e, name)
        or (f"on CPU {cpu.name}: {cpu.degraded}" if cpu is not None and cpu.degraded else ""),
    )
    e.done()
    if system.pcie is None:
        system = replace(
            system,
            pcie=_legacy_pcie(
                topology,
                gpus_per_node,
                system.gpus_per_socket,
                system.intra_fabric,
                system.fallback_fabric,
                system.socket_fabric,
            ),
        )
    _validate_system(system, e.where)
    return system


def _default_nic_path(topology: str, cpu: CPU | None, pcie: PcieTree | None, rails: bool) -> str:
    """Where a system's NICs sit when its entry does not say: on a Grace host, behind the CPU that
    the GPU reaches over NVLink-C2C (P2C); under the GPUs' own PCIe switches where the tree puts
    them there or the node has one NIC per GPU on its own rail (HGX: GPU and NIC share a switch,
    PXB at most); elsewhere on a CPU root port (PHB)."""
    if cpu is not None and cpu.name == "grace":
        return "p2c"
    if (pcie is not None and pcie.nics_per_switch) or (rails and topology in ("switch", "mesh")):
        return "pxb"
    return "phb"


def _fraction(e: Table, key: str) -> float | None:
    value = e.raw(key, None, (int, float))
    if value is not None and not (0 < value <= 1):
        raise e.fail(key, f"{value!r} must be a fraction in (0, 1]")
    return None if value is None else float(value)


def _positive_float(e: Table, key: str) -> float:
    value = e.raw(key, 1.0, (int, float))
    if not (0 < value < 1e6):
        raise e.fail(key, f"{value!r} must be a positive number")
    return float(value)


def _seconds_or_zero(value: Any, what: str) -> float:
    return units.parse_seconds(value, what=what, allow_zero=True)


def _bytes_with_unit(value: Any, what: str) -> float:
    return units.parse_bytes(value, what=what, bare_ok=False)  # the catalog writes every unit out


def _validate_system(s: System, where: str) -> None:
    if s.gpus_per_node % s.gpus_per_socket:
        raise CatalogError(
            f"{where}: gpus_per_socket ({s.gpus_per_socket}) must divide gpus_per_node ({s.gpus_per_node})"
        )
    if s.domain_gpus < s.gpus_per_node or s.domain_gpus % s.gpus_per_node:
        raise CatalogError(
            f"{where}: domain_gpus ({s.domain_gpus}) must be a multiple of gpus_per_node ({s.gpus_per_node})"
        )
    if s.gpus_per_node % s.host_gpus:
        raise CatalogError(f"{where}: gpus_per_host ({s.host_gpus}) must divide gpus_per_node ({s.gpus_per_node})")
    if s.nic_fabric is not None and s.nics_per_node < 1:
        raise CatalogError(f"{where}: nic_fabric {s.nic_fabric.name!r} is set but nics_per_node is 0")
    if s.topology == "pairs" and s.gpus_per_node % 2:
        raise CatalogError(f"{where}: topology 'pairs' needs an even gpus_per_node, got {s.gpus_per_node}")
    tree = s.pcie
    if tree is not None and not tree.legacy:
        if s.gpus_per_node % tree.sockets:
            raise CatalogError(f"{where}.pcie: sockets ({tree.sockets}) must divide gpus_per_node ({s.gpus_per_node})")
        per_socket = s.gpus_per_node // tree.sockets
        if per_socket % tree.gpus_per_switch:
            raise CatalogError(
                f"{where}.pcie: gpus_per_switch ({tree.gpus_per_switch}) must divide the GPUs of "
                f"one socket ({per_socket})"
            )
        if tree.gpus_per_switch > 1 and tree.switch_uplink is None:
            raise CatalogError(f"{where}.pcie: {tree.gpus_per_switch} GPUs per switch need a switch_uplink fabric")
        if tree.nics_per_switch and (tree.gpus_per_switch < 2 or s.nic_fabric is None):
            raise CatalogError(
                f"{where}.pcie: nics_per_switch ({tree.nics_per_switch}) needs GPUs behind a switch "
                f"(gpus_per_switch >= 2) and a nic_fabric"
            )
        if s.cpu is None and (tree.sockets > 1 or s.topology in ("pcie", "pairs")):
            raise CatalogError(f"{where}: a [pcie] tree with GPU traffic through the CPU needs a cpu ([cpus] entry)")
        if tree.sockets * per_socket != s.gpus_per_node or s.gpus_per_socket != per_socket:
            raise CatalogError(
                f"{where}: gpus_per_socket ({s.gpus_per_socket}) disagrees with the tree's "
                f"{tree.sockets} sockets of {per_socket} GPUs"
            )


def _builtin_texts() -> list[tuple[str, str]]:
    return [
        (f"catalog/{n}", read_builtin(f"catalog/{n}"))
        for n in (
            "nccl.toml",
            "archs.toml",
            "host_staged.toml",
            "fabrics.toml",
            "gpus.toml",
            "cpus.toml",
            "systems.toml",
            "custom_allreduce.toml",
            "prices.toml",
        )
    ]


_SECTIONS = (
    "nccl",
    "archs",
    "host_staged",
    "fabrics",
    "gpus",
    "cpus",
    "systems",
    "engines",
    "gpu_power",
    "system_costs",
    "nic_power",
)

OVERLAYS = ("engines", "gpu_power", "system_costs", "nic_power")
"""Sections a later file may set again for a name, under its own spelling: the engines' kernel
tables, and the prices and powers of catalog/prices.toml (a price is the user's own: a negotiated
GPU-hour, a measured board power)."""


NAMED_SECTIONS = ("archs", "host_staged", "fabrics", "gpus", "cpus", "systems", "engines")
"""Sections whose entries are names: each name is defined once, compared ignoring case (a user's
[systems.HGX-H100] is the built-in hgx-h100's name). The engines' kernel tables alone may be
replaced by a user file, under the built-in entry's own spelling."""


class _Merged:
    """The catalog's sections merged over its files: each named entry with the file it came from."""

    def __init__(self) -> None:
        self.sections: dict[str, dict[str, Any]] = {s: {} for s in _SECTIONS}
        self.origin: dict[tuple[str, str], tuple[str, str]] = {}  # (section, folded name) -> (file, name)
        self.renamed: list[tuple[str, dict]] = []  # (file, its [renamed] table)

    def tables(self, section: str) -> list[tuple[str, Table]]:
        """(name, table) of a section's entries, each table naming its file and place."""
        return [
            (name, Table(data, f"{section}.{name}", self.origin[section, fold(name)][0]))
            for name, data in self.sections[section].items()
        ]

    def add(self, where: str, section: str, part: dict) -> None:
        for name, data in part.items():
            check_name(name, f"{where}: [{section}.{name}]")
            first = self.origin.get((section, fold(name)))
            if first is not None and not (section in OVERLAYS and first[1] == name):
                kind = "a built-in" if first[0].startswith("catalog/") else f"{first[0]}'s"
                same = "" if first[1] == name else f" {first[1]!r} (names are compared ignoring case)"
                raise CatalogError(
                    f"{where}: [{section}.{name}] redefines {kind} entry{same or ' of that name'}; a name "
                    f"means one thing: give yours another name (e.g. {name}-mine)"
                )
            self.origin[section, fold(name)] = (where, name)
            self.sections[section][name] = data


def _merge(docs: list[tuple[str, dict]]) -> _Merged:
    """Later files add entries. A name means one thing: an entry of a user file that takes the name
    of a built-in entry or of an earlier file's, in any case, is refused (issue 24: `--catalog`
    silently redefined hgx-h100 while `fit --name hgx-h100` was refused; issue 32: [systems.HGX-H100]
    beside hgx-h100). NCCL constants and the engines' kernel tables are overlays by design: a user
    file may set them."""
    merged = _Merged()
    generations = {fold(n) for _, doc in docs if isinstance(doc.get("archs"), dict) for n in doc["archs"]}
    for where, doc in docs:
        unknown = set(doc) - set(_SECTIONS) - {"meta", "renamed"}
        if unknown:
            raise CatalogError(
                f"{where}: unknown section(s) {', '.join(sorted(unknown))} (expected {', '.join(_SECTIONS[1:])})"
            )
        for section in _SECTIONS:
            part = doc.get(section, {})
            if not isinstance(part, dict):
                raise CatalogError(f"{where}: [{section}] must be a table")
            if section == "nccl" and merged.sections["nccl"]:  # built-in nccl.toml is read first
                nccl_constants.overlay(merged.sections["nccl"], part, f"{where}: nccl", generations)
            elif section == "nccl":
                merged.sections["nccl"].update(part)
            else:
                merged.add(where, section, part)
        if "renamed" in doc:
            merged.renamed.append((where, doc["renamed"]))
    return merged


RENAMED_SECTIONS = ("systems", "cpus")
"""Sections whose old names a `[renamed.<section>]` table may keep for one release."""


def _renamed(merged: _Merged, tables: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """`[renamed.<section>] "old" = "new"` of the sections in `tables`: an old name still taken, with a
    warning (Catalog.system), until the next release. The new name must be an entry; the old one no
    entry, in any case."""
    out: dict[str, dict[str, str]] = {s: {} for s in tables}
    for where, data in merged.renamed:
        top = Table(data, "renamed", where)
        for section, part in top.entries():
            if section not in RENAMED_SECTIONS:
                raise top.fail(
                    section, f"names of [{section}] cannot be renamed here (only {', '.join(RENAMED_SECTIONS)})"
                )
            t = top.table(section)
            if section not in tables:  # read in a later pass
                continue
            for old, new in t.entries():
                check_name(old, f"{t.where}.{old}")
                if not isinstance(new, str) or find(new, tables[section]) is None:
                    raise t.fail(old, f"renamed to {new!r}, which is no entry of [{section}]")
                if find(old, tables[section]) is not None or find(old, out[section]) is not None:
                    raise t.fail(old, f"{old!r} is still the name of an entry: it cannot also be an old name")
                out[section][old] = find(new, tables[section])
            t.done()
        top.done()
    return out


def builtin_archs() -> Mapping[str, Arch]:
    """The built-in catalog's GPU generations (catalog/archs.toml): the engine presets key their
    per-generation tables by them."""
    return load_catalog().archs


def load_catalog(extra: Iterable[str | Path] = ()) -> Catalog:
    """The built-in catalog plus any user TOML files (later files override earlier entries)."""
    extra = tuple(dict.fromkeys(str(p) for p in extra))  # a file given twice is read once
    return _load_cached(extra)


@lru_cache(maxsize=16)
def _load_cached(extra: tuple[str, ...]) -> Catalog:
    builtin = _builtin_texts()
    if not extra:  # the built-in catalog alone: built once per content (datacache)
        return cached("catalog", (text for _, text in builtin), lambda: _build(builtin, ()))
    return _build(builtin, extra)


def _build(builtin: list[tuple[str, str]], extra: tuple[str, ...]) -> Catalog:
    docs = [(where, parse_toml(text, where)) for where, text in builtin]
    docs += [(p, read_toml_file(p)) for p in extra]
    merged = _merge(docs)
    nccl = nccl_constants.read_nccl(merged.sections["nccl"])
    archs = {n: _read_arch(t, n, nccl) for n, t in merged.tables("archs")}
    host_staged = {n: read_record(HostStaged, t, name=n) for n, t in merged.tables("host_staged")}
    for row in host_staged.values():
        if row.degraded and "degraded" not in row.name.lower():
            raise CatalogError(f"host_staged.{row.name}: a degraded platform's name says so (e.g. {row.name}-degraded)")
    fabrics = {n: _read_fabric(t, n, nccl, host_staged) for n, t in merged.tables("fabrics")}
    for arch in archs.values():  # the generation's NVSwitch names a fabric of the catalog
        if arch.nvswitch_fabric:
            lookup("fabric", arch.nvswitch_fabric, fabrics, f"archs.{arch.name}.nvswitch_fabric")
    gpus = {n: _read_gpu(t, n, archs) for n, t in merged.tables("gpus")}
    cpus = {n: _read_cpu(t, n) for n, t in merged.tables("cpus")}
    renamed_cpus = _renamed(merged, {"cpus": cpus})["cpus"]  # systems may name a CPU by its old name
    systems = {n: _read_system(t, n, fabrics, gpus, cpus, renamed_cpus) for n, t in merged.tables("systems")}
    renamed = _renamed(merged, {"systems": systems, "cpus": cpus})
    engines = nccl_constants.read_engines(merged.tables("engines"))
    return Catalog(
        fabrics=fabrics,
        gpus=gpus,
        systems=systems,
        nccl=nccl,
        sources=extra,
        cpus=cpus,
        engines=engines,
        archs=archs,
        host_staged=host_staged,
        renamed=renamed,
        gpu_power=_priced(merged, "gpu_power", GpuPower, gpus, "GPU"),
        system_costs=_priced(merged, "system_costs", SystemCost, systems, "system"),
        nic_power=_priced(merged, "nic_power", NicPower, fabrics, "fabric"),
    )


def _priced(merged: _Merged, section: str, record: type, known: Mapping[str, Any], kind: str) -> dict:
    """A section of prices.toml read into its records, keyed by the catalog's own spelling of the
    GPU, system or fabric each names (which must exist); every number finite and above 0 (a price
    or a power of 0 or less is a typo, never free hardware)."""
    out = {}
    for name, t in merged.tables(section):
        entry = lookup(kind, name, known, t.where)
        value = read_record(record, t)
        for f in ("load_watts", "usd_per_gpu_hour", "switch_watts_per_node", "watts_per_nic"):
            number = getattr(value, f, None)
            if number is not None and not number > 0:
                raise t.fail(f, f"{number!r} must be above 0")
        if not value.source.strip():
            raise t.fail("source", "must name where the numbers come from")
        out[entry.name] = value
    return out


def _read_arch(t: Table, name: str, nccl: NcclConstants) -> Arch:
    """One GPU generation's facts (`[archs.<name>]`), and the row NCCL's per-generation LL cap
    (tuning.cc llMaxBws) has for it, without which a one-node LL ring could not be priced."""
    sources = {k[: -len("_source")]: v for k, v in t.data.items() if k.endswith("_source") and isinstance(v, str)}
    arch = read_record(Arch, t, name=name, sources=sources)  # a dict, as Fabric.hop_latency_s: asdict copies it
    if name not in nccl.ll_max_bytes_per_s["one_node"]:
        raise CatalogError(
            f"{t.where}: NCCL's one-node LL cap has no row for {name!r}: add it to "
            f"[nccl.ll_max_bw_gbps] one_node (tuning.cc llMaxBws, by compute capability)"
        )
    return arch
