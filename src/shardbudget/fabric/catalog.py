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
from ..errors import CatalogError
from . import nccl_constants
from .hardware import (ARCHS, CPU, CPU_VENDORS, FABRIC_KINDS, FIGURES, GPU, NCCL_LINKS, NIC_PATHS, P2P_LEVELS, PROTOCOLS,
                       TOPOLOGIES, Catalog, Fabric, PcieTree, System, lookup)
from .nccl_constants import NcclConstants


class _Entry:
    """A TOML table being read, which names itself in every error."""

    def __init__(self, where: str, table: Any):
        if not isinstance(table, dict):
            raise CatalogError(f"{where}: expected a table of fields, got {type(table).__name__}")
        self.where, self.table = where, table
        self.used: set[str] = set()

    def raw(self, key: str, default: Any = ..., types: type | tuple = object) -> Any:
        self.used.add(key)
        if key not in self.table:
            if default is ...:
                raise CatalogError(f"{self.where}: missing field '{key}'")
            return default
        value = self.table[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in _astuple(types)):
            raise CatalogError(f"{self.where}.{key}: expected {_typename(types)}, got {value!r}")
        return value

    def text(self, key: str, default: Any = ...) -> str:
        return self.raw(key, default, str)

    def choice(self, key: str, allowed: Iterable[str], default: Any = ...) -> str:
        value = self.text(key, default)
        if value not in allowed:
            raise CatalogError(f"{self.where}.{key}: {value!r} is not one of {', '.join(allowed)}")
        return value

    def integer(self, key: str, default: Any = ..., minimum: int = 1, maximum: int = 100_000) -> int:
        value = self.raw(key, default, int)
        if value < minimum:
            raise CatalogError(f"{self.where}.{key}: {value} must be at least {minimum}")
        if value > maximum:  # no node or link count is this large; a typo would exhaust memory later
            raise CatalogError(f"{self.where}.{key}: {value} must be at most {maximum}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        return self.raw(key, default, bool)

    def quantity(self, key: str, parser, default: Any = ...) -> float:
        value = self.raw(key, default, (str, int, float))
        if key not in self.table and default is not ...:
            return default
        try:
            return parser(value, what=f"{self.where}.{key}")
        except units.UnitError as err:
            raise CatalogError(str(err)) from None

    def check_unknown(self) -> None:
        if extra := sorted(set(self.table) - self.used):
            raise CatalogError(f"{self.where}: unknown field(s) {', '.join(extra)}")


def _astuple(types: type | tuple) -> tuple:
    return types if isinstance(types, tuple) else (types,)


def _typename(types: type | tuple) -> str:
    return " or ".join({str: "a string", int: "an integer", float: "a number", bool: "true/false",
                        dict: "a table", object: "a value"}.get(t, t.__name__) for t in _astuple(types))


def _rate(entry: _Entry, key: str, direction_key: str, default: Any = ...) -> float:
    """A rate field plus the field saying whether it is per direction or the sum of both."""
    if default is not ... and key not in entry.table:
        return default
    value = entry.raw(key, types=(str,))
    direction = entry.choice(direction_key, units.DIRECTIONS, "per-direction")
    try:
        return units.vendor_rate_to_bytes_per_s(value, direction)
    except units.UnitError as err:
        raise CatalogError(f"{entry.where}.{key}: {err}") from None


def _hop_latencies(entry: _Entry, nccl_link: str, nccl: NcclConstants) -> dict[str, float]:
    defaults = nccl.ring_hop_s(nccl_link)
    given = entry.raw("hop_latency", {}, dict)
    out: dict[str, float] = {}
    for proto in PROTOCOLS:
        if proto in given:
            out[proto] = entry_quantity(entry, f"hop_latency.{proto}", given[proto])
        elif proto in defaults:
            out[proto] = defaults[proto]
        else:
            raise CatalogError(f"{entry.where}: hop_latency.{proto} is missing and NCCL's table has "
                               f"no default for link class {nccl_link!r}")
    unknown = set(given) - set(PROTOCOLS)
    if unknown:
        raise CatalogError(f"{entry.where}.hop_latency: unknown protocol(s) {', '.join(sorted(unknown))}"
                           f" (expected {', '.join(PROTOCOLS)})")
    return out


def entry_quantity(entry: _Entry, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise CatalogError(f"{entry.where}.{key}: expected a time such as '0.6 us', got {value!r}")
    try:
        return units.parse_seconds(value, what=f"{entry.where}.{key}")
    except units.UnitError as err:
        raise CatalogError(str(err)) from None


def _read_fabric(name: str, table: Any, nccl: NcclConstants) -> Fabric:
    e = _Entry(f"fabrics.{name}", table)
    nccl_link = e.choice("nccl_link", NCCL_LINKS)
    peak = _rate(e, "bandwidth", "bandwidth_direction")
    links = e.integer("links_per_gpu", 1)
    per_link = _rate(e, "link_bandwidth", "bandwidth_direction", None)
    achievable = _rate(e, "achievable_bandwidth", "achievable_direction", peak)
    if achievable > peak * 1.0001:
        raise CatalogError(f"fabrics.{name}: achievable_bandwidth ({units.format_rate(achievable)}) "
                           f"exceeds the peak bandwidth ({units.format_rate(peak)})")
    fabric = Fabric(
        name=name, kind=e.choice("kind", FABRIC_KINDS), description=e.text("description", ""),
        bytes_per_s=peak, achievable_bytes_per_s=achievable,
        hop_latency_s=_hop_latencies(e, nccl_link, nccl), nccl_link=nccl_link,
        in_switch_reduction=e.flag("in_switch_reduction", False), p2p=e.flag("p2p", True),
        nvls_efficiency=_fraction(e, "nvls_efficiency"),
        links_per_gpu=links, per_link_bytes_per_s=per_link,
        figure=e.choice("figure", FIGURES, "peak"), source=_source(e),
        achievable_source=e.text("achievable_source", ""), latency_source=e.text("latency_source", ""),
        nccl_bytes_per_s=_rate(e, "nccl_bandwidth", "bandwidth_direction", achievable),
        achievable_gpus=e.raw("achievable_gpus", None, int),
    )
    e.text("nccl_source", "")  # where the NCCL figure comes from, for the reader
    e.check_unknown()
    return fabric


def _source(e: _Entry) -> str:
    src = e.text("source")
    if not src.strip():
        raise CatalogError(f"{e.where}.source: must name where the numbers come from")
    return src


def _read_gpu(name: str, table: Any) -> GPU:
    e = _Entry(f"gpus.{name}", table)
    bf16 = e.quantity("bf16_dense", units.parse_flops)
    gpu = GPU(
        name=name, description=e.text("description", ""), arch=e.choice("arch", ARCHS),
        memory_bytes=e.quantity("memory", _bytes_with_unit),
        mem_bytes_per_s=e.quantity("memory_bandwidth", units.parse_rate),
        bf16_flops_per_s=bf16, fp8_flops_per_s=e.quantity("fp8_dense", units.parse_flops, bf16),
        fp4_flops_per_s=e.quantity("fp4_dense", units.parse_flops, 0.0),
        memory_smi=e.text("memory_smi", ""), memory_source=e.text("memory_source", ""),
        pcie_p2p=e.flag("pcie_p2p", True), figure=e.choice("figure", FIGURES, "peak"),
        compute_capability=e.text("compute_capability", ""), source=_source(e),
    )
    e.check_unknown()
    return gpu


# NCCL's per-step network post overhead by CPU vendor (tuning.cc getNetOverhead: Intel 1 us, AMD 2 us,
# anything else 1 us).
_NET_OVERHEAD_S = {"intel": 1e-6, "amd": 2e-6}


def _read_cpu(name: str, table: Any) -> CPU:
    e = _Entry(f"cpus.{name}", table)
    link = _rate(e, "socket_link_bandwidth", "bandwidth_direction")
    nccl_link = _rate(e, "nccl_socket_link_bandwidth", "bandwidth_direction", link)
    vendor = e.choice("vendor", CPU_VENDORS)
    cpu = CPU(
        name=name, description=e.text("description", ""), vendor=vendor,
        socket_link_bytes_per_s=link, nccl_socket_link_bytes_per_s=nccl_link,
        socket_stream_bytes_per_s=_rate(e, "socket_stream_bandwidth", "bandwidth_direction", link),
        host_bytes_per_s=_rate(e, "host_bandwidth", "bandwidth_direction", float("inf")),
        socket_latency_s=e.quantity("socket_latency", _seconds_or_zero, 0.0),
        net_overhead_s=e.quantity("net_overhead", _seconds_or_zero, _NET_OVERHEAD_S.get(vendor, 1e-6)),
        source=_source(e),
    )
    for key in ("socket_link_source", "host_source", "latency_source"):  # provenance, for the reader
        e.text(key, "")
    e.check_unknown()
    if cpu.socket_stream_bytes_per_s > cpu.socket_link_bytes_per_s * 1.0001:
        raise CatalogError(f"cpus.{name}: socket_stream_bandwidth ({units.format_rate(cpu.socket_stream_bytes_per_s)})"
                           f" exceeds socket_link_bandwidth ({units.format_rate(cpu.socket_link_bytes_per_s)})")
    return cpu


def _read_pcie(where: str, table: Any, fabrics: Mapping[str, Fabric]) -> PcieTree:
    e = _Entry(where, table)

    def fab(key: str, default: Any = ...) -> Fabric | None:
        name = e.raw(key, default, str)
        return None if name is None else lookup("fabric", name, fabrics, f"{where}.{key}")

    tree = PcieTree(
        sockets=e.integer("sockets", 1, maximum=8), gpus_per_switch=e.integer("gpus_per_switch", 1, maximum=64),
        host_bridge=fab("host_bridge"), shm=fab("shm"), switch_uplink=fab("switch_uplink", None),
        nics_per_switch=e.integer("nics_per_switch", 0, minimum=0, maximum=16),
        p2p_level=e.choice("p2p_level", P2P_LEVELS, "auto"), gpu_p2p=e.raw("gpu_p2p", None, bool),
        source=_source(e),
    )
    e.check_unknown()
    for key, f in (("host_bridge", tree.host_bridge), ("shm", tree.shm), ("switch_uplink", tree.switch_uplink)):
        if f is not None and f.kind != "pcie":
            raise CatalogError(f"{where}.{key}: fabric {f.name!r} is a {f.kind} link, expected a pcie one")
    return tree


def _legacy_pcie(topology: str, gpus_per_node: int, gpus_per_socket: int, intra: Fabric,
                 fallback: Fabric | None, socket: Fabric | None) -> PcieTree:
    """The tree a legacy entry (no [pcie] table) describes: each socket's GPUs under one switch, every
    PCIe hop on the entry's PCIe fabric, P2P wherever that fabric allows it, and `socket_fabric`
    standing for the socket crossing. It prices rings exactly as the catalog did before the tree."""
    link = fallback if topology == "pairs" and fallback is not None else intra
    return PcieTree(sockets=max(1, gpus_per_node // gpus_per_socket), gpus_per_switch=gpus_per_socket,
                    host_bridge=link, shm=link, switch_uplink=None, nics_per_switch=0, p2p_level="sys",
                    legacy=True, cross_socket=socket, source="derived from the entry's legacy fields")


def _read_system(name: str, table: Any, fabrics: Mapping[str, Fabric], gpus: Mapping[str, GPU],
                 cpus: Mapping[str, CPU] | None = None) -> System:
    e = _Entry(f"systems.{name}", table)
    gpus_per_node = e.integer("gpus_per_node")
    topology = e.choice("topology", TOPOLOGIES)
    nic_name = e.raw("nic_fabric", None, str)
    fallback = e.raw("fallback_fabric", None, str)
    socket = e.raw("socket_fabric", None, str)
    if topology == "pairs" and fallback is None:
        raise CatalogError(f"systems.{name}: topology 'pairs' needs a fallback_fabric (the PCIe path)")
    cpu_name = e.raw("cpu", None, str)
    cpu = lookup("CPU", cpu_name, cpus or {}, f"{e.where}.cpu") if cpu_name else None
    pcie_table = e.raw("pcie", None, dict)
    pcie = _read_pcie(f"{e.where}.pcie", pcie_table, fabrics) if pcie_table is not None else None
    system = System(
        name=name, description=e.text("description", ""),
        gpu=lookup("GPU", e.text("gpu"), gpus, f"{e.where}.gpu"), gpus_per_node=gpus_per_node, topology=topology,
        intra_fabric=lookup("fabric", e.text("intra_fabric"), fabrics, f"{e.where}.intra_fabric"),
        fallback_fabric=lookup("fabric", fallback, fabrics, f"{e.where}.fallback_fabric") if fallback else None,
        socket_fabric=lookup("fabric", socket, fabrics, f"{e.where}.socket_fabric") if socket else None,
        gpus_per_socket=e.integer("gpus_per_socket", gpus_per_node // pcie.sockets if pcie else gpus_per_node),
        nic_fabric=lookup("fabric", nic_name, fabrics, f"{e.where}.nic_fabric") if nic_name else None,
        nics_per_node=e.integer("nics_per_node", 0, minimum=0),
        rail_optimized=e.flag("rail_optimized", True),
        domain_gpus=e.integer("domain_gpus", gpus_per_node),
        source=_source(e),
        base_latency_s=e.quantity("base_latency", _seconds_or_zero, None),
        base_latency_scale=_positive_float(e, "base_latency_scale"),
        profile_source=e.text("profile_source", ""),
        cpu=cpu, pcie=pcie, gpus_per_host=e.integer("gpus_per_host", gpus_per_node),
        nic_path=e.choice("nic_path", NIC_PATHS, _default_nic_path(topology, cpu, pcie, e.flag("rail_optimized", True))),
    )
    e.check_unknown()
    if system.pcie is None:
        system = replace(system, pcie=_legacy_pcie(topology, gpus_per_node, system.gpus_per_socket,
                                                   system.intra_fabric, system.fallback_fabric, system.socket_fabric))
    _validate_system(system)
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


def _fraction(e: _Entry, key: str) -> float | None:
    value = e.raw(key, None, (int, float))
    if value is not None and not (0 < value <= 1):
        raise CatalogError(f"{e.where}.{key}: {value!r} must be a fraction in (0, 1]")
    return None if value is None else float(value)


def _positive_float(e: _Entry, key: str) -> float:
    value = e.raw(key, 1.0, (int, float))
    if not (0 < value < 1e6):
        raise CatalogError(f"{e.where}.{key}: {value!r} must be a positive number")
    return float(value)


def _seconds_or_zero(value: Any, what: str) -> float:
    return units.parse_seconds(value, what=what, allow_zero=True)


def _bytes_with_unit(value: Any, what: str) -> float:
    return units.parse_bytes(value, what=what, bare_ok=False)  # the catalog writes every unit out


def _validate_system(s: System) -> None:
    where = f"systems.{s.name}"
    if s.gpus_per_node % s.gpus_per_socket:
        raise CatalogError(f"{where}: gpus_per_socket ({s.gpus_per_socket}) must divide gpus_per_node "
                           f"({s.gpus_per_node})")
    if s.domain_gpus < s.gpus_per_node or s.domain_gpus % s.gpus_per_node:
        raise CatalogError(f"{where}: domain_gpus ({s.domain_gpus}) must be a multiple of gpus_per_node "
                           f"({s.gpus_per_node})")
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
            raise CatalogError(f"{where}.pcie: gpus_per_switch ({tree.gpus_per_switch}) must divide the GPUs of "
                               f"one socket ({per_socket})")
        if tree.gpus_per_switch > 1 and tree.switch_uplink is None:
            raise CatalogError(f"{where}.pcie: {tree.gpus_per_switch} GPUs per switch need a switch_uplink fabric")
        if tree.nics_per_switch and (tree.gpus_per_switch < 2 or s.nic_fabric is None):
            raise CatalogError(f"{where}.pcie: nics_per_switch ({tree.nics_per_switch}) needs GPUs behind a switch "
                               f"(gpus_per_switch >= 2) and a nic_fabric")
        if s.cpu is None and (tree.sockets > 1 or s.topology in ("pcie", "pairs")):
            raise CatalogError(f"{where}: a [pcie] tree with GPU traffic through the CPU needs a cpu ([cpus] entry)")
        if tree.sockets * per_socket != s.gpus_per_node or s.gpus_per_socket != per_socket:
            raise CatalogError(f"{where}: gpus_per_socket ({s.gpus_per_socket}) disagrees with the tree's "
                               f"{tree.sockets} sockets of {per_socket} GPUs")


USER_TOML_MAX_BYTES = 16 * 2**20
"""A user's catalog TOML larger than this is not a catalog (the built-in one is ~100 KB)."""


def _read_toml(path: Path | str, text: str | None = None) -> dict:
    try:
        raw = text if text is not None else _read_user_toml(path)
    except UnicodeDecodeError as err:
        raise CatalogError(f"{path}: cannot read catalog file ({err.__class__.__name__})") from None
    import tomllib  # only when a catalog is built, not when the cache has it
    try:
        return tomllib.loads(raw)
    except tomllib.TOMLDecodeError as err:
        raise CatalogError(f"{path}: not valid TOML ({err})") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise CatalogError(f"{path}: not valid TOML: arrays or inline tables nested too deeply to read (thousands "
                           "of levels); a catalog nests a few") from None


def _read_user_toml(path: Path | str) -> str:
    from ..atomic import read_user_file  # a user's file only: `plan` starts without it
    return read_user_file(path, what="a catalog TOML file", limit=USER_TOML_MAX_BYTES, error=CatalogError,
                          missing=f"{path}: no such catalog file").decode("utf-8")


def _builtin_texts() -> list[tuple[str, str]]:
    return [(f"catalog/{n}", read_builtin(f"catalog/{n}"))
            for n in ("nccl.toml", "fabrics.toml", "gpus.toml", "cpus.toml", "systems.toml", "custom_allreduce.toml")]


_SECTIONS = ("nccl", "fabrics", "gpus", "cpus", "systems", "engines")


NAMED_SECTIONS = ("fabrics", "gpus", "cpus", "systems")
"""Sections whose entries are names a command takes: each name is defined once."""


def _merge(docs: list[tuple[str, dict]]) -> dict[str, dict]:
    """Later files add entries. A name means one thing: an entry of a user file that takes the name
    of a built-in entry or of an earlier file's is refused (issue 24: `--catalog` silently redefined
    hgx-h100 while `fit --name hgx-h100` was refused). NCCL constants and the engines' kernel
    tables are overlays by design: a user file may set them."""
    merged: dict[str, dict] = {s: {} for s in _SECTIONS}
    origin: dict[tuple[str, str], str] = {}
    for where, doc in docs:
        unknown = set(doc) - set(_SECTIONS) - {"meta"}
        if unknown:
            raise CatalogError(f"{where}: unknown section(s) {', '.join(sorted(unknown))} "
                               f"(expected {', '.join(_SECTIONS[1:])})")
        for section in _SECTIONS:
            part = doc.get(section, {})
            if not isinstance(part, dict):
                raise CatalogError(f"{where}: [{section}] must be a table")
            if section == "nccl" and merged["nccl"]:  # built-in nccl.toml is read first
                nccl_constants.overlay(merged["nccl"], part, f"{where}: nccl")
                continue
            if section in NAMED_SECTIONS:
                for name in part:
                    if (section, name) in origin:
                        first = origin[section, name]
                        kind = "a built-in" if first.startswith("catalog/") else f"{first}'s"
                        raise CatalogError(f"{where}: [{section}.{name}] redefines {kind} entry of that name; a name "
                                           f"means one thing: give yours another name (e.g. {name}-mine)")
                    origin[section, name] = where
            merged[section].update(part)
    return merged


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
    docs = [(where, _read_toml(where, text)) for where, text in builtin]
    docs += [(p, _read_toml(p)) for p in extra]
    merged = _merge(docs)
    nccl = nccl_constants.read_nccl(merged["nccl"])
    fabrics = {n: _read_fabric(n, t, nccl) for n, t in merged["fabrics"].items()}
    gpus = {n: _read_gpu(n, t) for n, t in merged["gpus"].items()}
    cpus = {n: _read_cpu(n, t) for n, t in merged["cpus"].items()}
    systems = {n: _read_system(n, t, fabrics, gpus, cpus) for n, t in merged["systems"].items()}
    engines = nccl_constants.read_engines(merged["engines"])
    return Catalog(fabrics=fabrics, gpus=gpus, systems=systems, nccl=nccl, sources=extra, cpus=cpus,
                   engines=engines)
