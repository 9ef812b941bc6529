"""Read what a node says about its own topology: `nvidia-smi topo -m`, `nvidia-smi topo -p2p r` and an
NCCL topology XML (NCCL_TOPO_DUMP_FILE / NCCL_TOPO_FILE), as people paste them.

Formats are told apart by content, never by file extension, and several may share one file (an
issue report with `nvidia-smi -L`, `topo -m` and `topo -p2p r` one after the other):

* **`nvidia-smi topo -m`**: a header line `GPU0 GPU1 ... NIC0 ... CPU Affinity NUMA Affinity GPU NUMA ID`
  (tabs or spaces, any indentation), one row per device. GPU-to-GPU cells are `X` (self), `NV#` (# bonded
  NVLinks), `PIX` (at most one PCIe bridge), `PXB` (several bridges, no host bridge), `PHB` (through a
  CPU host bridge), `NODE` (between host bridges of one NUMA node), `SYS` (across the SMP interconnect
  between NUMA nodes) and the pre-2017 `SOC` (= SYS). NIC columns are `NIC0..` (their legend `NIC0:
  mlx5_0` follows) or, in old drivers, the device names themselves.
  `nvidia-smi topo -mp` prints the same matrix for PCIe paths only: NVLink is invisible there. It is
  recognised by its command line or by a legend without the `NV#` line, and flagged.
* **`nvidia-smi topo -p2p r|w|rw|n|a`**: the same shape with cells `OK`, `CNS` (chipset not supported),
  `GNS` (GPU not supported: GeForce drivers), `TNS` (topology), `NS`, `DR` (disabled by regkey), `U`.
* **NCCL topology XML** (`<system version="1">`): `<cpu vendor familyid modelid>` holding `<pci>` trees;
  a `<pci>` with a `<gpu dev sm>` child is a GPU, with `<nvlink target count tclass>` children (tclass
  0x068000: to an NVSwitch); `<nic><net name speed>` are NICs (speed in Mbit/s, src/graph/topo.cc).
* **GPU names**: `nvidia-smi -L` (`GPU 0: NVIDIA H100 80GB HBM3 (UUID: ...)`), vLLM's and SGLang's
  environment reports (`GPU 0: NVIDIA L40S`, `GPU 0,1,2,3: NVIDIA H200`), nccl-tests' device lines.
* **Host hints**: `lscpu`'s `Vendor ID` / `Model name`; `NCCL_P2P_LEVEL=` / `NCCL_P2P_DISABLE=1`.

Everything a malformed file can cause is a one-line `CatalogError` naming the file and line.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

from ..atomic import read_user_file
from ..errors import CatalogError

PATHS = ("nvl", "pix", "pxb", "phb", "node", "sys")
"""nvidia-smi's GPU-to-device paths, nearest first (nvidia-smi topo legend)."""
_CELL = {"PIX": "pix", "PXB": "pxb", "PHB": "phb", "NODE": "node", "SYS": "sys", "SOC": "sys"}
_NV = re.compile(r"NV(\d{1,3})")
P2P_STATUS = ("OK", "CNS", "GNS", "TNS", "NS", "DR", "U")
_TAIL = {"CPU", "NUMA", "GPU"}  # first words of "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"
_MAX_BYTES = 16 * 2**20
_MAX_GPUS = 128


@dataclass(frozen=True)
class Matrix:
    """One `nvidia-smi topo -m` matrix."""

    line: int
    paths: tuple[tuple[str, ...], ...]
    """paths[a][b]: one of PATHS between GPU a and GPU b ("x" on the diagonal)."""
    nvlinks: tuple[tuple[int, ...], ...]
    """nvlinks[a][b]: the # of NV# (0 where the path is not NVLink)."""
    nics: tuple[str, ...]
    """NIC column labels, as the header spells them (NIC0, mlx5_0, ...)."""
    nic_paths: tuple[tuple[str, ...], ...]
    """nic_paths[n][g]: path from NIC n to GPU g (one of PATHS but nvl)."""
    numa: tuple[int | None, ...]
    legend: bool = False
    legend_nvlink: bool = False
    """The legend has the `NV#` line (`topo -m`); `topo -mp` prints its legend without it."""

    @property
    def gpus(self) -> int:
        return len(self.paths)


@dataclass(frozen=True)
class P2pMatrix:
    """One `nvidia-smi topo -p2p` matrix: status[a][b] in P2P_STATUS ("X" on the diagonal)."""

    line: int
    status: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class XmlGpu:
    dev: int
    busid: str
    sm: int | None
    cpu: int
    """Index of the <cpu> (NUMA node) the GPU hangs off."""
    switch: str
    """Bus id of the nearest enclosing <pci> (its PCIe switch; its own bus id on a root port)."""
    pcie_gen: int | None
    nvlink_switch: int
    """NVLinks to NVSwitches (tclass 0x068000, or NVML's hidden fffffff:ff:ff target)."""
    nvlink_peers: tuple[tuple[str, int], ...]
    """(peer bus id, NVLinks) for direct GPU-to-GPU NVLinks."""


@dataclass(frozen=True)
class XmlNic:
    name: str
    bits_per_s: float
    cpu: int
    switch: str


@dataclass(frozen=True)
class XmlTopology:
    line: int
    cpus: tuple[tuple[str, int | None, int | None], ...]
    """(vendor, familyid, modelid) per <cpu>, as NCCL records them."""
    gpus: tuple[XmlGpu, ...]
    nics: tuple[XmlNic, ...]


@dataclass(frozen=True)
class TopoInput:
    """Everything the files said, merged; `infer_profile` in `topo_profile` turns it into a system profile."""

    sources: tuple[str, ...]
    matrix: Matrix | None = None
    p2p: P2pMatrix | None = None
    xml: XmlTopology | None = None
    gpu_names: tuple[str, ...] = ()
    """GPU names the files print (one per GPU index where they say which)."""
    cpu_vendor: str | None = None
    cpu_model: str | None = None
    p2p_level: str | None = None
    """NCCL_P2P_LEVEL (or loc for NCCL_P2P_DISABLE=1) the files set, in P2P_LEVELS spelling."""
    pci_only: bool = False
    """The matrix is `nvidia-smi topo -mp` output: PCIe only, NVLink invisible."""
    warnings: tuple[str, ...] = field(default_factory=tuple)


# --- files -----------------------------------------------------------------------------------


def read_topology_files(paths) -> TopoInput:
    """Read one or more files (any mix of the formats above) into one `TopoInput`."""
    parts = [_read_one(Path(p)) for p in paths]
    if not parts:
        raise CatalogError("no topology file given (expected `nvidia-smi topo -m` output)")
    return merge_inputs(parts)


def parse_topology_text(text: str, *, source: str = "<text>") -> TopoInput:
    """Like `read_topology_files` for text in memory; `source` names it in messages."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    matrix, p2p = _tables(lines, source)
    xml = _xml(text, source)
    names, vendor, model, level = _hints(lines)
    legend_only_pci = matrix is not None and matrix.legend and not matrix.legend_nvlink
    pci_only = bool(re.search(r"topo\s+(-mp\b|--matrix_pci)", text)) or legend_only_pci
    if matrix is None and p2p is None and xml is None:
        raise CatalogError(
            f"{source}: no `nvidia-smi topo -m` matrix, `topo -p2p` matrix or NCCL topology XML "
            f"found (expected a header line such as 'GPU0  GPU1  CPU Affinity')"
        )
    return TopoInput(
        sources=(source,),
        matrix=matrix,
        p2p=p2p,
        xml=xml,
        gpu_names=names,
        cpu_vendor=vendor,
        cpu_model=model,
        p2p_level=level,
        pci_only=pci_only,
    )


def merge_inputs(parts: list[TopoInput]) -> TopoInput:
    """One input from several files: each kind of table may come from one file only."""

    def one(kind: str):
        found = [(p.sources[0], getattr(p, kind)) for p in parts if getattr(p, kind) is not None]
        if len(found) > 1:
            raise CatalogError(
                f"{found[1][0]}: a second {kind} table (the first is in {found[0][0]}); give one per node"
            )
        return found[0][1] if found else None

    names = next((p.gpu_names for p in parts if p.gpu_names), ())
    return TopoInput(
        sources=tuple(s for p in parts for s in p.sources),
        matrix=one("matrix"),
        p2p=one("p2p"),
        xml=one("xml"),
        gpu_names=names,
        cpu_vendor=next((p.cpu_vendor for p in parts if p.cpu_vendor), None),
        cpu_model=next((p.cpu_model for p in parts if p.cpu_model), None),
        p2p_level=next((p.p2p_level for p in parts if p.p2p_level), None),
        pci_only=any(p.pci_only and p.matrix is not None for p in parts),
        warnings=tuple(w for p in parts for w in p.warnings),
    )


def _read_one(path: Path) -> TopoInput:
    source = str(path)
    data = read_user_file(path, what="`nvidia-smi topo -m` output", limit=_MAX_BYTES, error=CatalogError)
    if b"\x00" in data:
        raise CatalogError(f"{source}: looks like a binary file, expected `nvidia-smi topo -m` text")
    return parse_topology_text(data.decode("utf-8", errors="replace").lstrip("\ufeff"), source=source)


# --- matrices --------------------------------------------------------------------------------


def _tables(lines: list[str], source: str) -> tuple[Matrix | None, P2pMatrix | None]:
    """The first topology matrix and the first P2P matrix in the lines."""
    matrix = p2p = None
    i = 0
    while i < len(lines):
        toks = lines[i].split()
        if len(toks) >= 2 and toks[0] == "GPU0" and toks[1] != "X" and not lines[i].lstrip().startswith("#"):
            header, rows, end = _collect(lines, i)
            cells = {c for r in rows for c in r[1][1:]}
            if cells and cells <= set(P2P_STATUS) | {"X"} and ({"OK"} & cells or cells & {"CNS", "GNS", "TNS", "NS"}):
                p2p = p2p or _p2p_matrix(header, rows, source, i + 1)
            elif matrix is None:
                matrix = _topo_matrix(header, rows, lines[end : end + 40], source, i + 1)
            i = end
        else:
            i += 1
    return matrix, p2p


def _collect(lines: list[str], start: int) -> tuple[list[str], list[tuple[int, list[str]]], int]:
    """Header tokens and the rows under it, up to the legend or the first line that is not a row."""
    header = lines[start].split()
    labels = set(header)
    rows, i = [], start + 1
    while i < len(lines):
        toks = lines[i].split()
        if not toks:
            if rows:
                break
            i += 1
            continue
        if toks[0] not in labels:
            break
        rows.append((i + 1, toks))
        i += 1
    return header, rows, i


def _columns(header: list[str], source: str, line: int) -> list[str]:
    cols = []
    for tok in header:
        if tok in _TAIL:
            break
        cols.append(tok)
    gpus = [c for c in cols if re.fullmatch(r"GPU\d+", c)]
    if gpus != [f"GPU{k}" for k in range(len(gpus))] or cols[: len(gpus)] != gpus:
        raise CatalogError(
            f"{source}:{line}: GPU columns must be GPU0, GPU1, ... first in the header, got {' '.join(cols[:12])}"
        )
    if len(gpus) > _MAX_GPUS:
        raise CatalogError(f"{source}:{line}: {len(gpus)} GPU columns; at most {_MAX_GPUS} GPUs per node")
    return cols


def _cell(tok: str, where: str) -> tuple[str, int]:
    if tok == "X":
        return "x", 0
    m = _NV.fullmatch(tok)
    if m:
        return "nvl", int(m.group(1))
    if tok in _CELL:
        return _CELL[tok], 0
    raise CatalogError(f"{where}: {tok!r} is not a topology entry (expected X, NV#, PIX, PXB, PHB, NODE or SYS)")


def _topo_matrix(
    header: list[str], rows: list[tuple[int, list[str]]], after: list[str], source: str, line: int
) -> Matrix:
    cols = _columns(header, source, line)
    n = sum(1 for c in cols if c.startswith("GPU"))
    by_label: dict[str, tuple[int, list[str]]] = {}
    for lineno, toks in rows:
        if toks[0] in by_label:
            raise CatalogError(f"{source}:{lineno}: second row for {toks[0]}")
        if len(toks) - 1 < len(cols):
            raise CatalogError(
                f"{source}:{lineno}: row {toks[0]} has {len(toks) - 1} entries, the header "
                f"{len(cols)} device columns ({' '.join(cols)})"
            )
        by_label[toks[0]] = (lineno, toks)
    missing = [f"GPU{k}" for k in range(n) if f"GPU{k}" not in by_label]
    if missing:
        raise CatalogError(f"{source}:{line}: the matrix has no row for {', '.join(missing)}")
    paths, nvl, numa = [], [], []
    for g in range(n):
        lineno, toks = by_label[f"GPU{g}"]
        cells = [_cell(t, f"{source}:{lineno}: GPU{g}/{c}") for t, c in zip(toks[1:], cols)]
        if cells[g][0] != "x" or any(c[0] == "x" for k, c in enumerate(cells[:n]) if k != g):
            raise CatalogError(f"{source}:{lineno}: row GPU{g} must have X in column GPU{g} and only there")
        if any(c[0] == "nvl" for c in cells[n:]):
            raise CatalogError(f"{source}:{lineno}: row GPU{g}: NV# towards a NIC is not a PCIe path")
        paths.append(tuple(c[0] for c in cells[:n]) + tuple(c[0] for c in cells[n:]))
        nvl.append(tuple(c[1] for c in cells[:n]))
        extra = toks[1 + len(cols) :]
        numa.append(int(extra[1]) if len(extra) >= 2 and extra[1].isdigit() else None)
    _check_symmetric(paths, nvl, n, source, by_label)
    legend = any(s.strip().startswith("Legend") for s in after)
    return Matrix(
        line=line,
        paths=tuple(p[:n] for p in paths),
        nvlinks=tuple(nvl),
        nics=tuple(cols[n:]),
        nic_paths=tuple(tuple(paths[g][n + k] for g in range(n)) for k in range(len(cols) - n)),
        numa=tuple(numa),
        legend=legend,
        legend_nvlink=any("NV#" in s for s in after),
    )


def _check_symmetric(paths, nvl, n: int, source: str, by_label) -> None:
    for a in range(n):
        for b in range(a + 1, n):
            if paths[a][b] != paths[b][a] or nvl[a][b] != nvl[b][a]:
                lineno = by_label[f"GPU{b}"][0]
                raise CatalogError(
                    f"{source}:{lineno}: GPU{a}-GPU{b} and GPU{b}-GPU{a} disagree "
                    f"({_spell(paths[a][b], nvl[a][b])} vs {_spell(paths[b][a], nvl[b][a])})"
                )


def _spell(path: str, links: int) -> str:
    return f"NV{links}" if path == "nvl" else path.upper()


def _p2p_matrix(header: list[str], rows: list[tuple[int, list[str]]], source: str, line: int) -> P2pMatrix:
    cols = _columns(header, source, line)
    n = len(cols)
    status = []
    for g in range(n):
        row = next((r for r in rows if r[1][0] == f"GPU{g}"), None)
        if row is None or len(row[1]) - 1 < n:
            raise CatalogError(f"{source}:{line}: the P2P matrix has no complete row for GPU{g}")
        cells = row[1][1 : n + 1]
        bad = [c for c in cells if c not in P2P_STATUS and c != "X"]
        if bad:
            raise CatalogError(f"{source}:{row[0]}: {bad[0]!r} is not a P2P status (expected {', '.join(P2P_STATUS)})")
        status.append(tuple(cells))
    return P2pMatrix(line=line, status=tuple(status))


# --- names and hints -------------------------------------------------------------------------

_SMI_L = re.compile(r"^\s*GPU\s+(\d+(?:\s*,\s*\d+)*)\s*:\s*(.+?)\s*(?:\(UUID:.*)?$")
_RANK = re.compile(r"#\s*Rank\s+\d+\b.*?\bdevice\s+(\d+)\s+\[[^\]]*\]\s+(.+?)\s*$")
_LEVELS = {"LOC": "loc", "NVL": "nvl", "PIX": "pix", "PXB": "pxb", "PHB": "phb", "NODE": "phb", "SYS": "sys"}


def _hints(lines: list[str]) -> tuple[tuple[str, ...], str | None, str | None, str | None]:
    named: dict[int, str] = {}
    vendor = model = level = None
    for s in lines:
        m = _SMI_L.match(s) or _RANK.search(s)
        if m and not re.match(r"^\s*GPU\s+\d+.*\bCompute\b", s):
            for k in re.split(r"\s*,\s*", m.group(1).strip()):
                named.setdefault(int(k), m.group(2).strip())
        if (v := re.match(r"^\s*Vendor ID:\s*(\S+)", s)) and vendor is None:
            vendor = {"GenuineIntel": "intel", "AuthenticAMD": "amd", "ARM": "arm"}.get(v.group(1))
        if (v := re.match(r"^\s*Model name:\s*(.+?)\s*$", s)) and model is None:
            model = v.group(1)
        if (v := re.search(r"\bNCCL_P2P_LEVEL=(\w+)", s)) and v.group(1).upper() in _LEVELS:
            level = _LEVELS[v.group(1).upper()]
        if re.search(r"\bNCCL_P2P_DISABLE=1\b", s):
            level = "loc"
    names = tuple(named[k] for k in sorted(named)) if named and sorted(named) == list(range(len(named))) else ()
    return names, vendor, model, level


# --- NCCL topology XML ----------------------------------------------------------------------

_NVSWITCH_CLASS = "0x068000"  # src/graph/topo.h PCI_NVSWITCH_CLASS
_MAX_PCI_DEPTH = 32  # <pci> inside <pci>: a node has a few levels of PCIe switches, never dozens
_HIDDEN_NVSWITCH = "fffffff:ffff:ff"  # xml.cc: NVML hides the NVSwitch on some platforms


def _xml(text: str, source: str) -> XmlTopology | None:
    m = re.search(r"<system\b.*?</system>", text, re.S)
    if m is None:
        return None
    line = text[: m.start()].count("\n") + 1
    if "<!ENTITY" in m.group(0) or "<!DOCTYPE" in m.group(0):
        raise CatalogError(f"{source}:{line}: NCCL topology XML with a DTD or entities is not accepted")
    try:
        root = ElementTree.fromstring(m.group(0))
    except ElementTree.ParseError as err:
        raise CatalogError(f"{source}:{line}: NCCL topology XML is malformed ({err})") from None
    cpus, gpus, nics = [], [], []
    for c, cpu in enumerate(root.iter("cpu")):
        cpus.append((cpu.get("vendor", ""), _int(cpu.get("familyid")), _int(cpu.get("modelid"))))
        _walk(cpu, c, [], gpus, nics, source, line)
    gpus.sort(key=lambda g: g.dev)
    if len({g.dev for g in gpus}) != len(gpus):
        raise CatalogError(f"{source}:{line}: NCCL topology XML lists the same <gpu dev> twice")
    return XmlTopology(line=line, cpus=tuple(cpus), gpus=tuple(gpus), nics=tuple(nics))


def _walk(node, cpu: int, stack: list, gpus: list, nics: list, source: str, line: int) -> None:
    """Depth-first over the <pci> elements under `node`; `stack` holds node and the <pci> above it, so
    a device's PCIe switch is the <pci> enclosing its own <pci> (its own bus id on a CPU root port)."""
    if len(stack) > _MAX_PCI_DEPTH:  # the walk recurses once per level: a bound, not a RecursionError
        raise CatalogError(
            f"{source}:{line}: NCCL topology XML nests <pci> more than {_MAX_PCI_DEPTH} deep; a node's "
            "PCIe tree has a few levels of switches"
        )
    for child in node:
        if child.tag == "pci":
            gpu = child.find("gpu")
            if gpu is not None:
                gpus.append(_xml_gpu(child, gpu, cpu, stack, source, line))
            _walk(child, cpu, stack + [child], gpus, nics, source, line)
        elif child.tag == "nic":
            own = stack[-2] if len(stack) >= 2 else (stack[-1] if stack else None)
            switch = own.get("busid", "") if own is not None else f"cpu{cpu}"
            nics += [_xml_net(net, cpu, switch) for net in child.findall("net")]


def _xml_gpu(pci, gpu, cpu: int, stack: list, source: str, line: int) -> XmlGpu:
    dev = _int(gpu.get("dev"))
    if dev is None or dev < 0:
        raise CatalogError(f"{source}:{line}: NCCL topology XML <gpu> without a dev number")
    to_switch, peers = 0, []
    for link in gpu.findall("nvlink"):
        count = _int(link.get("count")) or 0
        target = link.get("target", "").lower()
        if link.get("tclass", "").lower() == _NVSWITCH_CLASS or target.startswith("fffffff"):
            to_switch += count
        else:
            peers.append((target, count))
    busid = pci.get("busid", "").lower()
    return XmlGpu(
        dev=dev,
        busid=busid,
        sm=_int(gpu.get("sm")),
        cpu=cpu,
        switch=(stack[-1].get("busid", "").lower() if stack else busid),
        pcie_gen=_gen(pci.get("link_speed", "")),
        nvlink_switch=to_switch,
        nvlink_peers=tuple(peers),
    )


def _xml_net(net, cpu: int, switch: str) -> XmlNic:
    mbps = _int(net.get("speed")) or 0  # Mbit/s (topo.cc: net->net.bw = mbps / 8000 GB/s)
    return XmlNic(name=net.get("name", ""), bits_per_s=mbps * 1e6, cpu=cpu, switch=switch.lower())


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text, 0)
    except ValueError:
        return None


def _gen(link_speed: str) -> int | None:
    """PCIe generation from NCCL's link_speed ("32.0 GT/s PCIe"): 2.5/5/8/16/32/64 GT/s = Gen1..6."""
    m = re.match(r"\s*([0-9.]+)\s*GT/s", link_speed)
    if not m:
        return None
    return {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}.get(float(m.group(1)))


def source_name(path: str | os.PathLike) -> str:
    return os.path.basename(str(path))
