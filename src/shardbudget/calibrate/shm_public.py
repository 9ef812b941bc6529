"""data/shm_public.csv: public all-reduce rings whose every hop is host-staged (NCCL's SHM transport:
no P2P between the GPUs), one row per figure a public thread states, with its source and date.

What a held-out fold (calibrate.loso) knows of a PCIe box's SHM hop before it sees any of that
box's rows (calibrate.fallback.held_out): the bus bandwidth of these rings inside one socket, by PCIe
generation. A ring's busbw is what each of its hops carries, so a one-socket row measures one SHM
hop of its host. Rows naming a catalog system (`system`) are left out of that system's own fold.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .paths import DATA

PATH = DATA / "shm_public.csv"


@dataclass(frozen=True)
class ShmRow:
    source: str
    hardware: str
    cpu: str
    pcie_gen: int
    gpus: int
    sockets: int
    """CPU sockets the ring spans (2: it crosses the socket link)."""
    busbw_bytes_per_s: float
    system: str
    """The catalog system this box is, blank where none."""


@lru_cache(maxsize=1)
def load_rows(path: Path = PATH) -> tuple[ShmRow, ...]:
    with open(path, newline="", encoding="utf-8") as f:
        return tuple(
            ShmRow(
                r["source"],
                r["hardware"],
                r["cpu"],
                int(r["pcie_gen"]),
                int(r["n_gpus"]),
                int(r["sockets"]),
                float(r["busbw_GBps"]) * 1e9,
                r["system"],
            )
            for r in csv.DictReader(f)
            if r["transport"] == "SHM"
        )


def one_socket_hops(pcie_gen: int, without: str | None = None) -> list[float]:
    """Per host (source and hardware), the largest busbw of its one-socket SHM rings on PCIe
    generation `pcie_gen`, bytes/s: what one SHM hop carries on each public host (a host's several
    sizes are one observation; its largest is its bandwidth, the smaller sizes still carry latency).
    Rows of the catalog system `without` are left out."""
    best: dict[tuple[str, str], float] = {}
    for r in load_rows():
        if r.pcie_gen == pcie_gen and r.sockets == 1 and r.gpus >= 2 and (without is None or r.system != without):
            key = (r.source.split(" ")[0], r.hardware)
            best[key] = max(best.get(key, 0.0), r.busbw_bytes_per_s)
    return sorted(best.values())
