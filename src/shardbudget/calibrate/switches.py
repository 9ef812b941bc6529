"""Where a collective's time may fall as its message grows: the measured steps (issue 20).

A library switches kernel at a size: an engine by a fixed rule (vLLM below 256 KiB one-shot, TensorRT-LLM
by its token table), NCCL by its own estimate (tuning.cc). Where the kernel above the switch is faster
there, the real time falls at the switch. The model has such a fall only where the measured curve of
the same system, GPU count and library release has it too (MEASURED below: measured_comm.csv; on an
NVL72 beyond its 4 measured GB300 GPUs, XLA's all-gather table, xla_series); every other fall is a
defect, listed as KNOWN (data/falls.csv, read by falls.py) with what the data say: the known defects `python -m
shardbudget.calibrate --report` prints. tests/unit/test_physics.py holds both lists to what a full
scan meets (a fall in neither fails, a listed fall that is gone fails), and the properties
(tests/unit/test_physics.py, tests/validation/test_collective_monotonic.py) fail on any fall listed
in neither.

The groups are those the tool prices: 2-72 GPUs inside one node, and 2, 4 and 8 whole nodes of each
system with a scale-out network; a switch's `gpus` above the node's size names whole nodes (16 on an
HGX is 2 nodes of 8, 144 on an NVL72 2 racks of 72: switch_group).

How a fall is measured: the tables are octave-spaced (256 KiB, 512 KiB, ...), so a fall inside an
octave shows only in the two kernels' own rows: the two rows below the switch (the lower kernel),
extended along their straight line (t = latency + n / algbw, the model's own form) to the switch,
lie above the two rows at and above it (the upper kernel), extended back to it. A fall smaller than
NOISE (the spread of repeated rows in these tables) is no fall.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..comm.collectives import candidates, make_group
from ..comm.lines import pick, times_and_latencies_s
from ..engines.allreduce import allreduce_ranges_for, engine_allreduce_s
from ..fabric.catalog import load_catalog


SCAN_ENGINES = ("vllm", "vllm-0.19", "sglang", "sglang-0.5.14", "trtllm", "eager", "trtllm-1.0")
"""The engine presets whose rule edges are scanned: the defaults and the releases measured_comm.csv's
rows were taken at (vllm-0.19, sglang-0.5.14, trtllm, trtllm-1.0)."""


@dataclass(frozen=True)
class Switch:
    """One kernel switch of the model: on `gpus` GPUs of `system`, `impl` (nccl, or an engine) goes
    from kernel `before` to `after` at `edge_bytes` (an engine's rule edge; NCCL's estimate crossover)."""

    system: str
    gpus: int
    impl: str
    before: str
    after: str
    edge_bytes: int
    op: str = "all-reduce"

    @property
    def key(self) -> tuple:
        """NCCL's crossover is where its estimate says, one per (group, op, pair of lines): keyed
        without its bytes (and without the op for an all-reduce); an engine's edge is a size its rule
        names (TensorRT-LLM's moves with the hidden size)."""
        if self.impl == "nccl":
            return (self.system, self.gpus, "nccl", self.before, self.after) + (
                () if self.op == "all-reduce" else (self.op,)
            )
        return (self.system, self.gpus, self.impl, self.before, self.after, self.edge_bytes)


def _name(c) -> str:
    return f"{c.algorithm}/{c.protocol}"


def nccl_switch(
    system: str, gpus: int, lines, lo: float, hi: float, impl: str = "nccl", op: str = "all-reduce"
) -> Switch | None:
    """The line the choice among `lines` leaves and the one it takes between lo and hi, and where (to a
    byte): NCCL's by its estimate, TensorRT-LLM's MNNVL kernels by their limits."""
    a, b = pick(lines, lo), pick(lines, hi)
    if (a.algorithm, a.protocol) == (b.algorithm, b.protocol):
        return None
    while hi - lo > 1:
        mid = (lo + hi) / 2
        if (pick(lines, mid).algorithm, pick(lines, mid).protocol) == (a.algorithm, a.protocol):
            lo = mid
        else:
            hi = mid
    return Switch(system, gpus, impl, _name(a), _name(b), int(math.ceil(hi)), op)


def engine_switch(system: str, gpus: int, engine: str, ranges, lo: float, hi: float) -> Switch | None:
    """The engine's rule edge in (lo, hi] and the kernels either side; inside NCCL's range, NCCL's own
    switch."""
    names = ranges.kinds + ranges.at_edge
    ka, kb = (names[int(i)] for i in ranges.kind_index(np.array([lo, hi])))
    if ka == kb == "nccl":
        return nccl_switch(system, gpus, ranges.pools["nccl"], lo, hi)
    if ka == kb == "mnnvl":  # TensorRT-LLM's MNNVL one-shot, then two-shot, by their own limits
        return nccl_switch(system, gpus, ranges.pools["mnnvl"], lo, hi, impl=engine)
    edges = [e for e in ranges.edges if lo <= e <= hi]
    if not edges or ka == kb:
        return None
    return Switch(system, gpus, engine, ka, kb, int(edges[0]))


def switch_group(system: str, gpus: int, catalog=None):
    """The group a switch's `gpus` name: inside one node up to its size, else whole nodes (the
    multi-node groups the scan prices: 2, 4 and 8 nodes of every GPU)."""
    catalog = catalog or load_catalog()
    per_node = catalog.system(system).gpus_per_node
    nodes = 1 if gpus <= per_node else gpus // per_node
    return make_group(system, nodes=nodes, gpus=gpus, catalog=catalog)


def model_switch(key: tuple) -> tuple[Switch, float, float]:
    """The model's switch of a MEASURED / KNOWN key and its time (us) just below and at the edge:
    NCCL's found on a 1/256-octave grid, an engine's at its edge for 4, 8 or 16 KiB per token (the
    hidden sizes 2048-8192 of the properties' models)."""
    system, gpus, impl = key[:3]
    group = switch_group(system, gpus)
    if impl == "nccl":
        op = key[5] if len(key) > 5 else "all-reduce"
        lines = candidates(group, op, "nccl")
        sizes = 2.0 ** np.arange(8, 31, 1 / 256)
        t, _ = times_and_latencies_s(lines, sizes)
        # where the time falls first (a listed switch falls: found at once), then every step
        falls = np.where(np.diff(t) < -1e-9 * t[1:])[0]
        for i in (*falls, *range(len(sizes) - 1)):
            s = nccl_switch(system, gpus, lines, sizes[i], sizes[i + 1], op=op)
            if s is not None and s.key == key:
                return s, t[i] * 1e6, t[i + 1] * 1e6
        raise LookupError(f"{key}: the model has no such switch")
    edge = key[-1]
    for bytes_per_token in (4096.0, 8192.0, 16384.0):
        ranges = allreduce_ranges_for(impl, group, bytes_per_token)
        for at in (float(edge), float(edge) + 1.0):  # the kernel at the edge itself, then above it
            s = engine_switch(system, gpus, impl, ranges, float(edge) - 1.0, at)
            if s is not None and s.key == key:
                t, _ = engine_allreduce_s(ranges, np.array([float(edge) - 1.0, at]))
                return s, t[0] * 1e6, t[1] * 1e6
    raise LookupError(f"{key}: the model has no such switch")


SCAN_GPUS = (2, 4, 8, 16, 32, 36, 64, 72)
SCAN_NODES = (2, 4, 8)
"""Multi-node groups: 2, 4 and 8 whole nodes of every system with a scale-out network (a key's `gpus`
is then nodes x GPUs per node: 16-64 on an HGX, 144-576 on an NVL72)."""
SCAN_BYTES_PER_TOKEN = (4096.0, 8192.0, 16384.0)
SCAN_NCCL_OPS = ("all-reduce", "all-gather", "reduce-scatter")
NVL72_XLA = ("gb200-nvl72", "gb300-nvl72")

NVL72_STEPS = {
    (
        "gb200-nvl72",
        16,
        "nccl",
        "ring/ll",
        "nvls/simple",
    ): "XLA GB200 table (xla_nvl72.load_rows), 16 GPUs: 49.0 us at 64 KiB, 40.7 us at 128 KiB (ring LL -> NVLS)",
    (
        "gb300-nvl72",
        16,
        "nccl",
        "ring/ll",
        "nvls/simple",
    ): "the same NVL72 fabric and NCCL choice as gb200-nvl72 (XLA sm_103 16 GPUs: 51.2 -> 41.6 us)",
}
"""NCCL switches beyond 8 GPUs and the measurement that has the same step (test_collective_monotonic.test_nvl72_steps_are_in_the_data)."""


def _scan_groups(cat):
    """(system, GPUs, group) the scan prices: SCAN_GPUS inside each node, then SCAN_NODES whole nodes
    of each system with a scale-out network."""
    for name in sorted(cat.systems):
        s = cat.system(name)
        for g in (g for g in SCAN_GPUS if g <= s.gpus_per_node):
            yield name, g, make_group(name, nodes=1, gpus=g, catalog=cat)
        if s.nic_fabric is not None:
            for nodes in SCAN_NODES:
                yield name, nodes * s.gpus_per_node, make_group(name, nodes=nodes, catalog=cat)


def scan() -> dict[tuple, tuple[Switch, float, float]]:
    """Every switch at which the model's time falls: NCCL's choice (all-reduce, all-gather,
    reduce-scatter) and each engine's all-reduce rule (vllm,
    sglang, trtllm, eager, trtllm-1.0 at 4, 8 and 16 KiB per token) on every system at 2-72 GPUs of one
    node and on 2, 4 and 8 whole nodes of each system with a network (_scan_groups), 256 B to 1 GiB
    on a 1/256-octave grid; key -> (switch, us before, us after). An engine whose rule runs NCCL at
    every size (every engine across nodes) adds nothing to NCCL's own all-reduce and is not timed
    again. NCCL's ring LL -> NVLS at 16 NVL72 GPUs is NVL72_STEPS's (XLA's table, not measured_comm)."""
    cat = load_catalog()
    sizes = 2.0 ** np.arange(8, 31, 1 / 256)
    found: dict[tuple, tuple[Switch, float, float]] = {}

    def falls(t):
        return np.where(np.diff(t) < -1e-9 * t[1:])[0]

    def add(sw: Switch | None, ta: float, tb: float) -> None:
        if sw is None:
            raise AssertionError("a fall with no switch")
        if sw.gpus == 16 and sw.system in NVL72_XLA and sw.impl == "nccl" and sw.after == "nvls/simple":
            return
        found.setdefault(sw.key, (sw, ta * 1e6, tb * 1e6))

    for name, g, group in _scan_groups(cat):
        for op in SCAN_NCCL_OPS:
            lines = candidates(group, op, "nccl")
            t, _ = times_and_latencies_s(lines, sizes)
            for i in falls(t):
                add(nccl_switch(name, g, lines, sizes[i], sizes[i + 1], op=op), t[i], t[i + 1])
        for engine in SCAN_ENGINES:
            for per_token in SCAN_BYTES_PER_TOKEN:
                ranges = allreduce_ranges_for(engine, group, per_token)
                if set(ranges.kinds) | set(ranges.at_edge) == {"nccl"}:
                    continue  # NCCL's own all-reduce at every size: its falls are scanned above
                t, _ = engine_allreduce_s(ranges, sizes)
                for i in falls(t):
                    add(engine_switch(name, g, engine, ranges, sizes[i], sizes[i + 1]), t[i], t[i + 1])
    return found
