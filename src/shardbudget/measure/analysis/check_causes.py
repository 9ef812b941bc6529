"""Why a checked region is off: the likely cause, from NCCL's own words where the log has them, else
from the shape of the curve (then said to be a guess).

Causes, each with what it does to an all_reduce_perf curve and how it is recognised:

| kind | effect | from the log (INFO lines, NCCL_* settings) | from the shape (a guess) |
|---|---|---|---|
| socket | multi-node plateau far below the NICs | "Using network Socket", "via NET/Socket", NCCL_IB_DISABLE=1, NCCL_NET=Socket | plateau below 0.35 of predicted |
| p2p-disabled | PCIe box at SHM speed | "via SHM" and no "via P2P", NCCL_P2P_DISABLE=1, NCCL_P2P_LEVEL=LOC | plateau at the model's SHM-only path |
| nic-down | plateau at (k-1)/k of the NICs' rate | fewer NICs on "NET/IB : Using" than the system has | plateau within 5 % of the model with j <= k/4 NICs fewer |
| gdr-off | multi-node plateau lower | NET/IB connections without /GDRDMA, "GPU Direct RDMA Disabled", NCCL_NET_GDR_LEVEL=LOC | multi-node plateau 0.35..1 of predicted, nothing else matching |
| nvls-off | NVSwitch plateau at ring speed | no NVLS in INFO lines that show connections, "0 nvls channels", NCCL_NVLS_ENABLE=0 | plateau at the model's ring/tree speed |
| fewer-channels | plateau scaled by channels / usual | "Channel 00/04" (or "4 coll channels") below `USUAL_CHANNELS`, NCCL_MAX_NCHANNELS | single-node plateau slow, nothing else matching |
| nccl-algo / nccl-proto | the curve of the forced algorithm / protocol | NCCL_ALGO / NCCL_PROTO set | - |
| erratic | the ratio jumps 3x or more between neighbouring sizes | - | two such jumps or more |
| overhead | latency floor slow, plateau normal | - | always a guess |

Expected ratios of the model-based causes are the model's own what-ifs (`_whatif`): the same sizes
priced on a variant of the system (P2P off, fewer NICs) or with the algorithms NCCL would be left
with, divided by the normal prediction.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...comm.collectives import candidates, make_group
from ...fabric.hardware import System
from ...comm.lines import Candidate, Group, pick
from ..logs.nccl_info import NcclSettings
from ...comm.nccl_algos import nvls
from ...units import format_bytes

PLATEAU, LATENCY, MID = "bandwidth plateau", "latency floor", "mid sizes"
SOCKET_BELOW = 0.35
"""A multi-node plateau below this share of the predicted busbw is guessed to be the Socket transport:
a NIC down costs 1/k, GDR off typically a third to a half (NVIDIA/nccl#707-type reports), sockets more."""
NIC_MATCH = 0.05
"""How close (relative) a plateau must be to the model with j NICs fewer to be called a NIC down."""
JUMP = 3.0
"""Neighbouring sizes whose ratios to the model differ this many times make a jump (a clean run's
ratio drifts by 1.8x at most between neighbours in data/raw; noisy ones jump 4-60x)."""

USUAL_CHANNELS: dict[tuple[str, str | None], tuple[int, str]] = {
    ("nvswitch", "hopper"): (
        16,
        "NVIDIA/nccl#1453 (3 x 8 H100: 'Channel 00/16'), #892 (H800: '16 coll "
        "channels'), #1429 (Hopper's 18 NVLinks set the channel count)",
    ),
    ("pcie", None): (
        2,
        "NCCL's PCIe rings: 'Channel 00/02' and '4 coll channels' on 2-8 PCIe GPUs "
        "(tinygrad/open-gpu-kernel-modules#17, NVIDIA/nccl#1706)",
    ),
}
"""The fewest ring channels NCCL normally builds on a fabric kind (and GPU architecture; None: any)."""

_NCCL_ALGOS = {"ring": "ring", "tree": "tree", "nvls": "nvls", "nvlstree": "hierarchical"}
_NCCL_PROTOS = {"ll": "ll", "ll128": "ll128", "simple": "simple"}


@dataclass(frozen=True, kw_only=True)
class Cause:
    kind: str
    region: str
    text: str
    guess: bool
    """True when read from the curve's shape alone; False when the log says so."""
    evidence: tuple[str, ...] = ()
    """The log lines it rests on ('line 12: NCCL INFO ...')."""
    expected_ratio: float | None = None
    """The model's measured / predicted time ratio under this cause, where it has one."""

    def to_dict(self) -> dict:
        return {**self.__dict__, "evidence": list(self.evidence)}


@dataclass(frozen=True, kw_only=True)
class TableFacts:
    """What `diagnose` looks at: the group, the checked sizes and regions, NCCL's settings."""

    group: Group
    op: str
    sizes: tuple[Any, ...]
    """check.SizeCheck rows, by size."""
    regions: tuple[Any, ...]
    """check.RegionCheck rows."""
    settings: NcclSettings
    tolerance: float

    def region(self, name: str):
        return next(r for r in self.regions if r.region == name)

    @property
    def multi_node(self) -> bool:
        return self.group.nodes > 1

    @property
    def system(self) -> System:
        return self.group.system


def diagnose(f: TableFacts) -> tuple[Cause, ...]:
    """Likely causes of the regions that are off, the most likely first."""
    out: list[Cause] = []
    if (e := erratic(f)) is not None:
        out.append(e)
    plateau, latency, mid = f.region(PLATEAU), f.region(LATENCY), f.region(MID)
    if plateau.verdict == "slow":
        out += _plateau_slow(f, plateau.median_ratio)
    if latency.verdict == "slow":
        out += _latency_slow(f, latency.median_ratio)
    if mid.verdict == "slow" and not out:
        out.append(_mid_slow(f, mid.median_ratio))
    fast = [r for r in f.regions if r.verdict == "fast"]
    if fast:
        out.append(_fast(f, fast))
    seen: set[str] = set()
    return tuple(c for c in out if not (c.kind in seen or seen.add(c.kind)))


# --- what the model says each cause costs ----------------------------------------------------


def _whatif(
    f: TableFacts,
    sizes: Sequence[float],
    *,
    system: System | None = None,
    keep: Callable[[Candidate], bool] | None = None,
) -> float | None:
    """Median over `sizes` of (time on the variant) / (normal time), by the model; None if the
    variant has nothing to run."""
    g = f.group
    alt_group = g if system is None else make_group(system, nodes=g.nodes, gpus=g.ranks, catalog=g.catalog)
    base = candidates(g, f.op)
    alt = [c for c in candidates(alt_group, f.op) if keep is None or keep(c)]
    if not alt or not sizes:
        return None
    return statistics.median(float(pick(alt, n).time_s(n)) / float(pick(base, n).time_s(n)) for n in sizes)


def _sizes(f: TableFacts, region: str) -> list[float]:
    return [s.msg_bytes for s in f.region(region).sizes]


def _near(measured: float, expected: float | None, rel: float) -> bool:
    return expected is not None and abs(math.log(measured / expected)) <= math.log(1 + rel)


def _has_nvls(f: TableFacts) -> bool:
    """The node can run NVLS and the prediction uses it (directly or as NVLSTree) on the plateau."""
    one = Group(f.system, 1, f.group.gpus_per_node, f.group.catalog)
    uses = {s.algorithm for s in f.region(PLATEAU).sizes}
    return f.group.gpus_per_node >= 3 and nvls(one) is not None and bool(uses & {"nvls", "hierarchical"})


def _expects_p2p(f: TableFacts) -> bool:
    return f.group.gpus_per_node > 1


def _p2p_off_system(s: System) -> System | None:
    """The system with the GPUs' P2P off (NCCL_P2P_DISABLE=1 / a driver without P2P): PCIe boxes only."""
    if s.pcie is None or s.topology not in ("pcie", "pairs"):
        return None
    return replace(s, name=f"{s.name} (P2P off)", pcie=replace(s.pcie, gpu_p2p=False))


def _usual_channels(s: System) -> tuple[int, str] | None:
    kind = s.intra_fabric.kind
    return USUAL_CHANNELS.get((kind, s.gpu.arch)) or USUAL_CHANNELS.get((kind, None))


def _fmt(r: float | None) -> str:
    return "?" if r is None else f"{r:.2f}x"


def _busbw(ratio: float) -> str:
    return f"{1 / ratio:.2f} of the predicted busbw"


def _ev(st: NcclSettings, *keys: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(st.evidence[k] for k in keys if st.evidence.get(k)))


def _said(st: NcclSettings, *keys: str) -> str:
    """' (NCCL_IB_DISABLE=1, line 3)' for the first key the log shows, '' if none."""
    for k in keys:
        where = st.evidence.get(k, "")
        if where:
            line = where.split(":", 1)[0]
            return f" ({k}={st.env[k]}, {line})" if k in st.env else f" ({line})"
    return ""


def _guess_note(st: NcclSettings) -> str:
    if st.info_lines:
        return "a guess from the shape: NCCL's INFO lines show nothing that explains it"
    return "a guess from the shape: the log has no NCCL INFO lines; rerun with NCCL_DEBUG=INFO to know"


# --- the plateau -----------------------------------------------------------------------------


def _plateau_slow(f: TableFacts, ratio: float) -> list[Cause]:
    told = _plateau_from_settings(f, ratio)
    # of several stated causes, those whose model cost matches the measurement go first (a stated
    # cause the model cannot price, such as sockets or GDR, keeps its place)
    told.sort(key=lambda c: c.expected_ratio is not None and not _near(ratio, c.expected_ratio, f.tolerance / 2))
    return told if told else [_plateau_from_shape(f, ratio)]


def _told(
    st: NcclSettings, kind: str, region: str, keys: tuple[str, ...], text: str, expected: float | None = None
) -> Cause:
    """A cause the log states: its text names the setting and line, its evidence quotes them."""
    return Cause(
        kind=kind,
        region=region,
        guess=False,
        evidence=_ev(st, *keys),
        expected_ratio=expected,
        text=text + _said(st, *keys),
    )


def _plateau_from_settings(f: TableFacts, ratio: float) -> list[Cause]:
    """Causes the log states, in order of how much they cost."""
    st, s, out = f.settings, f.system, []
    sizes, at = _sizes(f, PLATEAU), f"plateau at {_busbw(ratio)}"
    socket = (st.network or "").lower() == "socket" or "net-socket" in st.transports
    if f.multi_node and socket:
        out.append(
            _told(
                st,
                "socket",
                PLATEAU,
                ("NCCL_IB_DISABLE", "NCCL_NET", "network", "via-net-socket", "socket"),
                f"network: NCCL ran over its Socket (TCP) transport, not IB/RoCE RDMA: {at}",
            )
        )
    p2p_env = st.env_flag("P2P_DISABLE") == "1" or (st.env_flag("P2P_LEVEL") or "").upper() in ("LOC", "0")
    shm_only = "shm" in st.transports and "p2p" not in st.transports
    if _expects_p2p(f) and (p2p_env or shm_only):
        variant = _p2p_off_system(s)
        expected = _whatif(f, sizes, system=variant) if variant else None
        model = f" (the model's SHM path: {_busbw(expected)})" if expected else ""
        out.append(
            _told(
                st,
                "p2p-disabled",
                PLATEAU,
                ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "via-shm"),
                f"P2P disabled: GPUs connect via SHM (host memory), not P2P/IPC: {at}{model}",
                expected,
            )
        )
    if f.multi_node and not socket and st.nics is not None and st.nics < s.nics_per_node:
        expected = _whatif(f, sizes, system=replace(s, nics_per_node=st.nics))
        model = f", the model with {st.nics} NICs: {_busbw(expected)}" if expected else ""
        out.append(
            _told(
                st,
                "nic-down",
                PLATEAU,
                ("nics", "NCCL_IB_HCA"),
                f"a NIC down: NCCL uses {st.nics} of the {s.nics_per_node} NICs per node: {at}{model}",
                expected,
            )
        )
    if f.multi_node and not socket and st.gdr is False:
        out.append(
            _told(
                st,
                "gdr-off",
                PLATEAU,
                ("gdr_disabled", "NCCL_NET_GDR_LEVEL", "via-net"),
                f"GDR off: network transfers are staged through host memory (no GDRDMA on NCCL's "
                f"NET connections): {at}",
            )
        )
    out += _nvls_and_channels_from_settings(f, ratio, sizes)
    out += _forced_algo(f, ratio, sizes, PLATEAU)
    return out


def _nvls_and_channels_from_settings(f: TableFacts, ratio: float, sizes: list[float]) -> list[Cause]:
    st, out, at = f.settings, [], f"plateau at {_busbw(ratio)}"
    if _has_nvls(f) and st.nvls is False:
        expected = _whatif(f, sizes, keep=lambda c: c.algorithm in ("ring", "tree"))
        model = f" (ring/tree speed: {_busbw(expected)})" if expected else ""
        if st.version and tuple(int(x) for x in st.version.split("+")[0].split(".")[:2]) < (2, 17):
            model += f"; NCCL {st.version.split('+')[0]} predates NVLS (2.17)"
        out.append(
            _told(
                st,
                "nvls-off",
                PLATEAU,
                ("NCCL_NVLS_ENABLE", "nvls_off", "nvls_channels", "channels"),
                f"NVLS off: NVSwitch system but NCCL's INFO lines show no NVLS: {at}{model}",
                expected,
            )
        )
    usual = _usual_channels(f.system)
    cap = st.env_flag("MAX_NCHANNELS") or st.env_flag("MAX_NRINGS")
    channels = st.channels if st.channels is not None else (int(cap) if cap and cap.isdigit() else None)
    if channels is not None and usual is not None and channels < usual[0]:
        out.append(
            _told(
                st,
                "fewer-channels",
                PLATEAU,
                ("channels", "coll_channels", "NCCL_MAX_NCHANNELS", "NCCL_MAX_NRINGS"),
                f"fewer channels: NCCL ran {channels} channels, {usual[0]} is usual on "
                f"{f.system.intra_fabric.kind}: {at} ({channels}/{usual[0]} = {channels / usual[0]:.2f} "
                f"expected)",
                usual[0] / channels,
            )
        )
    return out


def _algo_filter(st: NcclSettings) -> tuple[str, Callable[[Candidate], bool]] | None:
    """NCCL_ALGO / NCCL_PROTO as a filter on the model's candidates ('^X' excludes X)."""
    rules = []
    for var, table, attr in (("NCCL_ALGO", _NCCL_ALGOS, "algorithm"), ("NCCL_PROTO", _NCCL_PROTOS, "protocol")):
        value = st.env.get(var)
        if not value:
            continue
        neg = value.startswith("^")
        names = {table.get(v.strip().lower()) for v in value.lstrip("^").split(",")} - {None}
        if names or neg:
            rules.append((f"{var}={value}", attr, names, neg))
    if not rules:
        return None

    def keep(c: Candidate) -> bool:
        return all((getattr(c, attr) in names) != neg for _, attr, names, neg in rules)

    return ", ".join(r[0] for r in rules), keep


def _forced_algo(f: TableFacts, ratio: float, sizes: list[float], region: str) -> list[Cause]:
    rule = _algo_filter(f.settings)
    if rule is None:
        return []
    label, keep = rule
    expected = _whatif(f, sizes, keep=keep)
    if expected is None or expected <= 1 + f.tolerance / 2 or not _near(ratio, expected, f.tolerance):
        return []  # set, but it neither costs much nor explains what was measured
    return [
        _told(
            f.settings,
            "nccl-algo",
            region,
            ("NCCL_ALGO", "NCCL_PROTO"),
            f"{label} set: the model with only those gives {_fmt(expected)} the normal time, measured {_fmt(ratio)}",
            expected,
        )
    ]


def _plateau_from_shape(f: TableFacts, ratio: float) -> Cause:
    sizes, s, note = _sizes(f, PLATEAU), f.system, _guess_note(f.settings)
    if f.multi_node and s.nics_per_node >= 2:
        best = None
        # one or two NICs of eight: more missing at once is rarer than the other causes of a slow plateau
        for down in range(1, max(1, s.nics_per_node // 4) + 1):
            expected = _whatif(f, sizes, system=replace(s, nics_per_node=s.nics_per_node - down))
            if _near(ratio, expected, NIC_MATCH) and (best is None or abs(math.log(ratio / expected)) < best[0]):
                best = (abs(math.log(ratio / expected)), down, expected)
        if best is not None:
            _, down, expected = best
            k = s.nics_per_node
            return Cause(
                kind="nic-down",
                region=PLATEAU,
                guess=True,
                expected_ratio=expected,
                text=f"a NIC down? plateau at {_busbw(ratio)}, as with {k - down} of {k} NICs "
                f"({_busbw(expected)}) ({note})",
            )
    if _has_nvls(f):
        expected = _whatif(f, sizes, keep=lambda c: c.algorithm in ("ring", "tree"))
        if _near(ratio, expected, f.tolerance / 2):
            return Cause(
                kind="nvls-off",
                region=PLATEAU,
                guess=True,
                expected_ratio=expected,
                text=f"NVLS off? plateau at {_busbw(ratio)}, ring/tree speed is {_busbw(expected)} ({note})",
            )
    variant = _p2p_off_system(s) if _expects_p2p(f) else None
    expected = _whatif(f, sizes, system=variant) if variant else None
    if expected is not None and expected > 1 + f.tolerance / 2 and _near(ratio, expected, f.tolerance / 2):
        return Cause(
            kind="p2p-disabled",
            region=PLATEAU,
            guess=True,
            expected_ratio=expected,
            text=f"P2P disabled? plateau at {_busbw(ratio)}, the model's SHM-only path gives "
            f"{_busbw(expected)} ({note})",
        )
    return _plateau_fallback(f, ratio, note)


def _plateau_fallback(f: TableFacts, ratio: float, note: str) -> Cause:
    if f.multi_node and 1 / ratio < SOCKET_BELOW:
        return Cause(
            kind="socket",
            region=PLATEAU,
            guess=True,
            text=f"network at Socket speed? plateau at {_busbw(ratio)}, far below the NICs: NCCL may "
            f"be on its Socket (TCP) transport, not IB/RoCE ({note})",
        )
    if f.multi_node:
        return Cause(
            kind="gdr-off",
            region=PLATEAU,
            guess=True,
            text=f"GDR off or a slow network? plateau at {_busbw(ratio)} across nodes ({note})",
        )
    usual = _usual_channels(f.system)
    channels = f" (about {round(usual[0] / ratio)} of the usual {usual[0]})" if usual and usual[0] >= 4 else ""
    link = (
        "a GPU on a slower PCIe link (x8, or an older generation: nvidia-smi -q, 'Link')"
        if f.system.intra_fabric.kind == "pcie"
        else "a slow link"
    )
    return Cause(
        kind="fewer-channels",
        region=PLATEAU,
        guess=True,
        text=f"fewer channels or {link}? plateau at {_busbw(ratio)}, as if NCCL ran "
        f"{1 / ratio:.2f} of its channels{channels} ({note})",
    )


# --- the other regions -----------------------------------------------------------------------


def _latency_slow(f: TableFacts, ratio: float) -> list[Cause]:
    forced = _forced_algo(f, ratio, _sizes(f, LATENCY), LATENCY)
    if forced:
        return forced
    net = " or the network's per-hop latency" if f.multi_node else ""
    return [
        Cause(
            kind="overhead",
            region=LATENCY,
            guess=True,
            text=f"latency floor at {_fmt(ratio)} the predicted time: per-call overhead above the model's "
            f"(host launch without CUDA graphs, CPU affinity, busy proxy threads, another NCCL "
            f"version){net} ({_guess_note(f.settings)})",
        )
    ]


def _mid_slow(f: TableFacts, ratio: float) -> Cause:
    ends = "" if any(f.region(r).verdict == "no sizes" for r in (LATENCY, PLATEAU)) else " while both ends are normal"
    return Cause(
        kind="mid-sizes",
        region=MID,
        guess=True,
        text=f"mid sizes at {_fmt(ratio)} the predicted time{ends}: NCCL switches "
        f"algorithm or protocol at other sizes than the model (NCCL_ALGO/NCCL_PROTO, a tuner "
        f"plugin), or the run was contended ({_guess_note(f.settings)})",
    )


def _fast(f: TableFacts, regions: Sequence[Any]) -> Cause:
    which = ", ".join(f"{r.region} {_fmt(r.median_ratio)}" for r in regions)
    return Cause(
        kind="faster",
        region=regions[0].region,
        guess=True,
        text=f"faster than the model ({which} the predicted time): the catalog entry is conservative "
        f"for this cluster (newer NCCL, SHARP, more NICs) or the log is of another system; "
        f"`shardbudget fit` calibrates a profile from it",
    )


def erratic(f: TableFacts) -> Cause | None:
    """Neighbouring sizes whose measured / predicted ratios differ JUMP-fold, twice or more: a noisy
    or contended run (one jump is often the first size's warm-up)."""
    r = [s.ratio for s in f.sizes]
    jumps = [f.sizes[i] for i in range(1, len(r)) if max(r[i], r[i - 1]) > JUMP * min(r[i], r[i - 1])]
    if len(jumps) < 2:
        return None
    at = ", ".join(format_bytes(s.msg_bytes) for s in jumps[:4]) + (" ..." if len(jumps) > 4 else "")
    return Cause(
        kind="erratic",
        region=jumps[0].region,
        guess=False,
        text=f"erratic: the ratio to the model jumps {JUMP:g}x or more between neighbouring sizes "
        f"{len(jumps)} times (at {at}): a noisy or contended run; rerun it on idle nodes before "
        f"reading more into it",
    )


__all__ = ["Cause", "TableFacts", "USUAL_CHANNELS", "diagnose", "erratic"]
