"""A fitted system as a catalog profile, and the node scaling the fit applies.

The fit moves one intra-node bandwidth. Which link a ring runs on depends on the node: NVLink on an
NVSwitch box, but on a PCIe box a hop may go P2P through the host bridge, or through host memory
(SHM) where the driver refuses P2P (GeForce), across the socket link, or up a switch's uplink. A
fit that moved only the system's named fabric would move nothing on such a box (the ring never
touches it; issue 24: a 4090 profile printed "93.75 MB/s", the scan's lower end, and its own table
predicted 3.74 GB/s). So the fitted bandwidth scales every intra-node link and host path of the node
by one ratio (`scale_node`): a node uniformly faster or slower than the catalog says.

The profile written then holds every link the fitted system uses (each scaled fabric, the scaled
CPU, the PCIe tree naming them), so that `--catalog profile.toml` loads back the system the fit's
table was computed with: `load_profile_system` is that round trip, and tests hold it.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path

import tomli_w

from ...atomic import check_output_path, write_atomic
from ...errors import MeasureError
from ...fabric.hardware import CPU, Fabric, System
from ...quoting import one_line


def scale_node(base: System, ratio: float, *, name: str, sources: str, intra: Fabric) -> System:
    """`base` with `intra` as its intra-node fabric and every other intra-node link (the pairs'
    fallback, the socket fabric, the PCIe tree's host bridge, SHM, switch uplink and socket crossing)
    and the CPU's host and socket rates scaled by `ratio`. NCCL's own view of the links (its
    nccl_bandwidth, by which it chooses) is kept: a measurement does not change NCCL's topology."""
    copies: dict[int, Fabric] = {id(base.intra_fabric): intra}

    def scaled(f: Fabric | None) -> Fabric | None:
        if f is None:
            return None
        if id(f) not in copies:
            copies[id(f)] = replace(
                f,
                name=f"{name}-{f.name}",
                bytes_per_s=f.bytes_per_s * ratio,
                achievable_bytes_per_s=f.achievable_bytes_per_s * ratio,
                figure="measured",
                achievable_source=f"scaled x{ratio:.4g} with the fitted intra-node link ({sources})",
            )
        return copies[id(f)]

    tree = base.pcie
    if tree is not None:
        tree = replace(
            tree,
            host_bridge=scaled(tree.host_bridge),
            shm=scaled(tree.shm),
            switch_uplink=scaled(tree.switch_uplink),
            cross_socket=scaled(tree.cross_socket),
        )
    cpu = base.cpu
    if cpu is not None:
        cpu = replace(
            cpu,
            name=f"{name}-{cpu.name}",
            socket_link_bytes_per_s=cpu.socket_link_bytes_per_s * ratio,
            socket_stream_bytes_per_s=cpu.socket_stream_bytes_per_s * ratio,
            host_bytes_per_s=cpu.host_bytes_per_s * ratio,
            source=f"{cpu.source}; host and socket rates scaled x{ratio:.4g} by the fit ({sources})",
        )
    return replace(
        base,
        intra_fabric=intra,
        fallback_fabric=scaled(base.fallback_fabric),
        socket_fabric=scaled(base.socket_fabric),
        pcie=tree,
        cpu=cpu,
    )


# --- writing --------------------------------------------------------------------------------


def _rate(x: float) -> str:
    return f"{x / 1e9:.9g} GB/s"


def _fabric_table(f: Fabric) -> dict:
    t = {
        "kind": f.kind,
        "description": f"{f.description} (fitted)",
        "nccl_link": f.nccl_link,
        "bandwidth": _rate(f.bytes_per_s),
        "achievable_bandwidth": _rate(f.achievable_bytes_per_s),
        "nccl_bandwidth": _rate(f.nccl_bytes_per_s),
        "hop_latency": {k: f"{v * 1e6:.9g} us" for k, v in f.hop_latency_s.items()},
        "in_switch_reduction": f.in_switch_reduction,
        "p2p": f.p2p,
        "links_per_gpu": f.links_per_gpu,
        "figure": "measured",
        "source": f.source,
        "achievable_source": f.achievable_source,
    }
    if f.nvls_efficiency is not None:
        t["nvls_efficiency"] = f.nvls_efficiency
    if f.achievable_gpus is not None:
        t["achievable_gpus"] = f.achievable_gpus
    return t


def _cpu_table(c: CPU) -> dict:
    t = {
        "description": f"{c.description} (fitted)",
        "vendor": c.vendor,
        "socket_link_bandwidth": _rate(c.socket_link_bytes_per_s),
        "nccl_socket_link_bandwidth": _rate(c.nccl_socket_link_bytes_per_s),
        "socket_stream_bandwidth": _rate(c.socket_stream_bytes_per_s),
        "socket_latency": f"{c.socket_latency_s * 1e6:.9g} us",
        "net_overhead": f"{c.net_overhead_s * 1e6:.9g} us",
        "source": c.source,
    }
    if math.isfinite(c.host_bytes_per_s):
        t["host_bandwidth"] = _rate(c.host_bytes_per_s)
    return t


def profile_toml(result) -> dict:
    """The catalog tables of a FitResult's system: every fabric it names, its CPU and PCIe tree."""
    s = result.system
    fabrics: dict[str, dict] = {}

    def ref(f: Fabric | None) -> str | None:
        if f is None:
            return None
        if f.name.startswith(result.name):  # a fitted copy; the others (an unfitted NIC) stay the catalog's
            fabrics[f.name] = _fabric_table(f)
        return f.name

    doc = {
        "meta": {
            "tool": "shardbudget fit",
            "base_system": result.base_system,
            "median_abs_error": result.median_abs_error,
            "worst_abs_error": result.worst_abs_error,
            "measurements": list(result.sources),
        }
    }
    sys_t = {
        "description": f"{s.description} -- fitted profile",
        "gpu": s.gpu.name,
        "gpus_per_node": s.gpus_per_node,
        "topology": s.topology,
        "intra_fabric": ref(s.intra_fabric),
        "gpus_per_socket": s.gpus_per_socket,
        "nics_per_node": s.nics_per_node,
        "rail_optimized": s.rail_optimized,
        "domain_gpus": s.domain_gpus,
        "base_latency_scale": s.base_latency_scale,
        "profile_source": s.profile_source,
        "source": s.source,
    }
    if s.gpus_per_host is not None and s.gpus_per_host != s.gpus_per_node:
        sys_t["gpus_per_host"] = s.gpus_per_host
    if s.base_latency_s is not None:
        sys_t["base_latency"] = f"{s.base_latency_s * 1e6:.9g} us"
    for key, fab in (
        ("fallback_fabric", s.fallback_fabric),
        ("socket_fabric", s.socket_fabric),
        ("nic_fabric", s.nic_fabric),
    ):
        if fab is not None:
            sys_t[key] = ref(fab)
    cpus = {}
    if s.cpu is not None:
        cpus[s.cpu.name] = _cpu_table(s.cpu)
        sys_t["cpu"] = s.cpu.name
    tree = s.pcie
    if tree is not None and not tree.legacy:  # a legacy tree is derived again from the fields above
        pcie = {
            "sockets": tree.sockets,
            "gpus_per_switch": tree.gpus_per_switch,
            "host_bridge": ref(tree.host_bridge),
            "shm": ref(tree.shm),
            "nics_per_switch": tree.nics_per_switch,
            "p2p_level": tree.p2p_level,
            "source": tree.source,
        }
        if tree.switch_uplink is not None:
            pcie["switch_uplink"] = ref(tree.switch_uplink)
        if tree.gpu_p2p is not None:
            pcie["gpu_p2p"] = tree.gpu_p2p
        sys_t["pcie"] = pcie
    doc["fabrics"] = fabrics
    if cpus:
        doc["cpus"] = cpus
    doc["systems"] = {s.name: sys_t}
    return doc


def check_profile_path(path: str | os.PathLike, *, force: bool = False) -> Path:
    """Where a profile may be written, checked before any work is done (and again when writing)."""
    return check_output_path(path, what="the profile", force=force, error=MeasureError)


def write_profile(result, path: str | os.PathLike, *, force: bool = False) -> Path:
    path = check_profile_path(path, force=force)
    text = tomli_w.dumps(profile_toml(result))
    # a comment only a line break ends: the names in it as one line (quoting.one_line)
    header = (
        "# "
        + one_line(f"shardbudget profile {result.name}: {result.base_system} with constants fitted on measurements")
        + "\n"
    )
    try:
        write_atomic(path, header + text, force=force)
    except OSError as err:
        raise MeasureError(f"cannot write {path}: {err.strerror or err}") from None
    return path
