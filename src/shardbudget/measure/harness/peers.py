"""Which peer is gone: the words a surviving rank uses after a collective failed under a launcher.

Locally the parent watches every rank and names the one that died (`local`). Under torchrun or
srun there is no such parent: each rank only sees its own error, and that error names at best an
address ("Read error [10.0.0.2]:41234: Connection reset by peer"), often a neighbour that failed
because of the real culprit. So each rank (`worker`) counts up a key in the rendezvous store every
`protocol.HEARTBEAT_S`, writes the size it is starting, and on its way out records that it failed
(and why). The rank that fails then reads them all (`PeerReport`): a peer whose count stood still
for `protocol.SILENCE_S` and that left no failure behind is **lost** (its process or node died);
one that never started the failing size **hung** before it; the rest failed in turn. Where the
store itself is unreachable (it lived on the lost node), the addresses in the error are matched to
the ranks' addresses gathered at start-up.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

_ADDRESS = re.compile(r"\[([0-9A-Fa-f:.]+)\]|(?<![\w.:])((?:[0-9]{1,3}\.){3}[0-9]{1,3})(?![\w.])")
_BOILERPLATE = re.compile(r"\.\s+This is typically caused by.*$")  # gloo's advice after the cause


@dataclass(frozen=True)
class PeerReport:
    """What the store said after a failure (see the module docstring)."""

    store_ok: bool
    lost: tuple[int, ...] = ()
    failed: tuple[int, ...] = ()
    at: dict[int, int] = field(default_factory=dict)
    """rank -> index of the last size it started."""
    store_error: str = ""
    store_host: str = ""
    """Where the store listened (MASTER_ADDR or the tcp:// host): an unreachable store names its node."""
    silence_s: float = 0.0


def short_error(text: str) -> str:
    """The first line of an exception text, without gloo's 'This is typically caused by ...' advice."""
    lines = text.strip().splitlines()
    return _BOILERPLATE.sub("", lines[0] if lines else "").strip()


def describe(
    report: PeerReport | None, *, rank: int, index: int, error: str, hosts: Sequence[str], addrs: Sequence[str | None]
) -> str:
    """'lost rank 1 (node-b, 10.0.0.2): no heartbeat for 2.5 s' or '' when nothing can be said."""
    if report is not None and report.store_ok:
        if report.lost:
            return (
                f"lost rank{'s' * (len(report.lost) > 1)} {_who(report.lost, hosts, addrs)}: "
                f"no heartbeat for {report.silence_s:g} s"
            )
        behind = sorted(r for r in range(len(hosts)) if r != rank and report.at.get(r, -1) < index)
        if behind:
            return f"rank{'s' * (len(behind) > 1)} {_who(behind, hosts, addrs)} never started this size (hung?)"
        return ""
    named, parts = ranks_at_addresses(error, addrs, exclude=rank), []
    if report is not None:  # the store is down: its node, and any other rank the error names
        holders = [
            r
            for r in range(len(hosts))
            if r != rank and report.store_host and report.store_host in (hosts[r], addrs[r] if r < len(addrs) else None)
        ]
        parts.append(_store_down(holders, hosts, addrs))
        named = [r for r in named if r not in holders]
    if named:
        parts.append(f"the error names rank{'s' * (len(named) > 1)} {_who(named, hosts, addrs)}")
    return "; ".join(parts)


def _store_down(holders: Sequence[int], hosts: Sequence[str], addrs: Sequence[str | None]) -> str:
    """The store is gone; `holders` are the ranks on the node whose address (or host name) it listened
    on, known whether or not the collective's error (or the launcher's SIGTERM) names an address."""
    if not holders:
        return "the rendezvous store is unreachable (its node may be down)"
    return (
        f"the rendezvous store is unreachable (it ran on the node of rank{'s' * (len(holders) > 1)} "
        f"{_who(holders, hosts, addrs)}, which may be down)"
    )


def ranks_at_addresses(text: str, addrs: Sequence[str | None], *, exclude: int) -> list[int]:
    """Ranks (other than `exclude`) whose address appears in `text`."""
    found = set()
    for m in _ADDRESS.finditer(text):
        try:
            found.add(str(ipaddress.ip_address(m.group(1) or m.group(2))))
        except ValueError:
            continue
    return [r for r, a in enumerate(addrs) if a is not None and a in found and r != exclude]


def node_count(hosts: Sequence[str], addrs: Sequence[str | None] | None) -> int:
    """Nodes the ranks ran on: distinct (hostname, address) pairs. Network namespaces on one machine
    share its hostname but not their addresses; real nodes differ in both."""
    if not addrs or len(addrs) != len(hosts):
        return len(set(hosts))
    return len(set(zip(hosts, addrs)))


def _who(ranks: Sequence[int], hosts: Sequence[str], addrs: Sequence[str | None]) -> str:
    parts = []
    for r in ranks:
        where = [x for x in (hosts[r] if r < len(hosts) else None, addrs[r] if r < len(addrs) else None) if x]
        parts.append(f"{r} ({', '.join(where)})" if where else str(r))
    return ", ".join(parts)
