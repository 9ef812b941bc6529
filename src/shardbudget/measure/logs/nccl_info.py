"""What NCCL says about its own set-up in a log: the ``NCCL INFO`` lines of ``NCCL_DEBUG=INFO`` and the
``NCCL_*=value`` settings on command lines and in notes.

Read from a log's text (`read_settings`), for the lines of one table (`settings_for`). The line
formats, as NCCL 2.x prints them (src/init.cc, src/transport/*.cc, src/transport/net_ib.cc,
net_socket.cc, src/graph/connect.cc), quoted in NVIDIA/nccl issues #1453, #1384, #892, #676, #29 and
tinygrad/open-gpu-kernel-modules#17:

    NCCL version 2.26.5+cuda12.9
    NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ... ; OOB eth0:10.0.0.1<0>
    NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>          NCCL INFO Using network IB | Socket | IBext_v8
    NCCL INFO NET/Plugin : No plugin found (libnccl-net.so)   NCCL INFO P2P plugin IBext_v8
    NCCL INFO comm 0x... rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0
    NCCL INFO NVLS multicast support is available on dev 0     (or: is not available)
    NCCL INFO Channel 00/16 :    0   7   6   5   4   3   2   1  (a ring: 16 channels)
    NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read      (2.12+; older: "Channel 00 : 0[18000] -> ...")
    NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct/direct
    NCCL INFO Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/0/GDRDMA   (no /GDRDMA: through host memory)
    NCCL INFO 16 coll channels, 16 collnet channels, 16 nvls channels, 32 p2p channels, 2 p2p channels per peer
    NCCL INFO NCCL_ALGO set by environment to Ring
    NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'

Every finding keeps the line it came from (`evidence`), so a cause can quote it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

_VERSION = re.compile(r"\bNCCL version\s*:?\s*v?([0-9]+\.[0-9]+\.[0-9]+(?:\+[\w.]+)?)")
_ENV_SET = re.compile(r"NCCL INFO (NCCL_[A-Z0-9_]+) set by environment to ([^\s,]+?)\.?\s*$")
_ENV_ASSIGN = re.compile(r"(?<![A-Za-z0-9_])(NCCL_[A-Z0-9_]+)=(\"[^\"]*\"|'[^']*'|[^\s;,)]+)")
_RING = re.compile(r"NCCL INFO Channel [0-9]+/([0-9]+) :((?:\s+-?[0-9]+)+)\s*$")
_COLL_CHANNELS = re.compile(r"NCCL INFO ([0-9]+) coll channels,(?:.*?([0-9]+) nvls channels)?")
_VIA = re.compile(r"NCCL INFO Channel [0-9]+(?:/[0-9]+)? : .*?\bvia ((P2P|SHM|NET|COLLNET)\S*(?: [a-z]+)?)")
_USING_NET = re.compile(r"NCCL INFO Using network (.+?)\s*$")
_NET_IB = re.compile(r"NCCL INFO NET/(IB|OFI|IBext\w*) : Using (.+?)(?:;\s*OOB.*)?$")
_NET_SOCKET = re.compile(r"NCCL INFO NET/Socket : Using (.+)$")
_NNODES = re.compile(r"NCCL INFO .*\bnRanks [0-9]+ nNodes ([0-9]+)")
_PLUGIN = re.compile(
    r"NCCL INFO (?:P2P plugin (\S+)|NET/Plugin: Loaded net plugin (.+?)(?: \(|$)|"
    r"Plugin Path : (\S+))"
)
_INTERNAL = re.compile(r"NCCL INFO NET/Plugin ?: (?:No plugin found|Could not find: libnccl-net\.so\. Using internal)")


@dataclass(frozen=True, kw_only=True)
class NcclSettings:
    """NCCL's set-up as its log shows it; None (or empty) wherever the log does not say."""

    info_lines: int = 0
    """How many ``NCCL INFO`` lines the text has (0: NCCL_DEBUG was not INFO; everything else below
    then comes from command lines and notes, or is None)."""
    version: str | None = None
    channels: int | None = None
    """Ring channels ("Channel 00/16 : 0 7 6 ..."; else "N coll channels"); the largest communicator's."""
    nvls_channels: int | None = None
    nvls: bool | None = None
    """NVLink SHARP in use: True when an NVLS line appears, False when NCCL says it is unavailable, "0
    nvls channels", NCCL_NVLS_ENABLE=0, or INFO shows connections but never NVLS."""
    transports: tuple[str, ...] = ()
    """Kinds of connection seen ("p2p", "shm", "net", "net-socket", "collnet"), in order of first sight."""
    gdr: bool | None = None
    """GPUDirect RDMA on the network path: True on any ".../GDRDMA" connection, False when NET/IB
    connections never show it or NCCL says "GPU Direct RDMA Disabled"."""
    network: str | None = None
    """"IB", "Socket", "IBext_v8", "AWS Libfabric", ... ("Using network X"; NCCL_IB_DISABLE=1 -> Socket)."""
    nics: int | None = None
    """NICs NCCL uses per node: the fewest any rank lists on its "NET/IB : Using" line."""
    net_plugin: str | None = None
    """"internal", or the plugin NCCL loaded."""
    n_nodes: int | None = None
    env: dict = field(default_factory=dict)
    """NCCL_* settings: "set by environment" INFO lines, and NAME=value on command lines and notes."""
    evidence: dict = field(default_factory=dict)
    """finding -> 'line N: text' it was read from."""

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}

    def env_flag(self, name: str) -> str | None:
        """The value of NCCL_<name> as set (case kept), or None."""
        return self.env.get(f"NCCL_{name}")


def read_settings(text: str, *, lines: Iterable[tuple[int, str]] | None = None) -> NcclSettings:
    """The settings shown in `text` (or in the numbered `lines` of it)."""
    numbered = list(lines) if lines is not None else list(enumerate(text.splitlines(), start=1))
    acc = _Acc()
    for n, line in numbered:
        acc.feed(n, line.rstrip())
    return acc.settings()


def settings_for(text: str, first_line: int, last_line: int | None) -> NcclSettings:
    """The settings of lines first_line..last_line (1-based, inclusive; None: to the end)."""
    all_lines = text.splitlines()
    stop = len(all_lines) if last_line is None else min(last_line, len(all_lines))
    start = max(1, first_line)
    return read_settings("", lines=((n, all_lines[n - 1]) for n in range(start, stop + 1)))


def _quote(n: int, line: str) -> str:
    s = line.strip()
    cut = s.find("NCCL INFO")
    s = s[cut:] if cut >= 0 else s
    return f"line {n}: {s[:120]}"


class _Acc:
    """Findings so far, line by line."""

    def __init__(self) -> None:
        self.info = 0
        self.version: str | None = None
        self.rings: list[int] = []
        self.coll: list[int] = []
        self.nvls_ch: list[int] = []
        self.nvls_seen = self.nvls_off = False
        self.transports: dict[str, None] = {}
        self.net_lines = self.gdr_lines = 0
        self.gdr_disabled = False
        self.network: str | None = None
        self.nic_counts: list[int] = []
        self.plugin: str | None = None
        self.n_nodes: int | None = None
        self.env: dict[str, str] = {}
        self.evidence: dict[str, str] = {}

    def note(self, key: str, n: int, line: str) -> None:
        self.evidence.setdefault(key, _quote(n, line))

    def feed(self, n: int, line: str) -> None:
        if m := _VERSION.search(line):
            self.version = self.version or m.group(1)
            self.note("version", n, line)
        for m in _ENV_ASSIGN.finditer(line):
            self._env(m.group(1), m.group(2).strip("'\""), n, line)
        if "NCCL INFO" not in line:
            return
        self.info += 1
        if m := _ENV_SET.search(line):
            self._env(m.group(1), m.group(2), n, line)
        self._channels(n, line)
        self._transport(n, line)
        self._network(n, line)

    def _env(self, name: str, value: str, n: int, line: str) -> None:
        self.env.setdefault(name, value)
        self.note(name, n, line)

    def _channels(self, n: int, line: str) -> None:
        if m := _RING.search(line):
            self.rings.append(int(m.group(1)))
            self.note("channels", n, line)
        elif m := _COLL_CHANNELS.search(line):
            self.coll.append(int(m.group(1)))
            self.note("coll_channels", n, line)
            if m.group(2) is not None:
                self.nvls_ch.append(int(m.group(2)))
                self.note("nvls_channels", n, line)
        if "NVLS" in line:
            if re.search(r"NVLS multicast support is not available|NVLS.*(?:disabled|not supported)", line):
                self.nvls_off = True
                self.note("nvls_off", n, line)
            else:
                self.nvls_seen = True
                self.note("nvls", n, line)

    def _transport(self, n: int, line: str) -> None:
        m = _VIA.search(line)
        if m:
            kind = m.group(2).lower()
            if kind == "net":
                kind = "net-socket" if m.group(1).startswith("NET/Socket") else "net"
                if kind == "net":
                    self.net_lines += 1
                    self.gdr_lines += "GDRDMA" in m.group(1)
            self.transports.setdefault(kind, None)
            self.note(f"via-{kind}", n, line)
        if "GPU Direct RDMA Disabled" in line:
            self.gdr_disabled = True
            self.note("gdr_disabled", n, line)
        if "/GDRDMA" in line:
            self.note("gdr", n, line)

    def _network(self, n: int, line: str) -> None:
        if m := _USING_NET.search(line):
            self.network = self.network or m.group(1)
            self.note("network", n, line)
        if m := _NET_IB.search(line):
            self.nic_counts.append(
                len(re.findall(r"[A-Za-z][\w.-]*:[0-9]+/(?:IB|RoCE)", m.group(2)))
                or len(re.findall(r"\[[0-9]+\]", m.group(2)))
            )
            self.note("nics", n, line)
        elif m := _NET_SOCKET.search(line):
            self.note("socket", n, line)
        if m := _NNODES.search(line):
            self.n_nodes = max(self.n_nodes or 0, int(m.group(1)))
        if _INTERNAL.search(line):
            self.plugin = self.plugin or "internal"
            self.note("net_plugin", n, line)
        elif m := _PLUGIN.search(line):
            self.plugin = next(g for g in m.groups() if g)
            self.note("net_plugin", n, line)

    def settings(self) -> NcclSettings:
        env = self.env
        nvls = self._nvls()
        network = self.network
        if network is None and (env.get("NCCL_IB_DISABLE") == "1" or env.get("NCCL_NET", "").lower() == "socket"):
            network = "Socket"
            self.evidence.setdefault(
                "network", self.evidence.get("NCCL_IB_DISABLE") or self.evidence.get("NCCL_NET", "")
            )
        if network is None and "socket" in self.evidence and not self.nic_counts:
            network = "Socket"
            self.evidence["network"] = self.evidence["socket"]
        return NcclSettings(
            info_lines=self.info,
            version=self.version,
            channels=max(self.rings) if self.rings else (max(self.coll) if self.coll else None),
            nvls_channels=max(self.nvls_ch) if self.nvls_ch else None,
            nvls=nvls,
            transports=tuple(self.transports),
            gdr=self._gdr(),
            network=network,
            nics=min(self.nic_counts) if self.nic_counts else None,
            net_plugin=self.plugin,
            n_nodes=self.n_nodes,
            env=dict(env),
            evidence=dict(self.evidence),
        )

    def _nvls(self) -> bool | None:
        if self.env.get("NCCL_NVLS_ENABLE") == "0":
            return False
        if self.nvls_seen and not (self.nvls_ch and max(self.nvls_ch) == 0):
            return True
        if self.nvls_off or (self.nvls_ch and max(self.nvls_ch) == 0):
            return False
        connected = bool(self.transports) or bool(self.rings)
        return False if connected else None

    def _gdr(self) -> bool | None:
        level = self.env.get("NCCL_NET_GDR_LEVEL", "").upper()
        if self.gdr_lines:
            return True
        if self.gdr_disabled or level in ("LOC", "0") or self.net_lines:
            return False
        return None


__all__ = ["NcclSettings", "read_settings", "settings_for"]
