"""Where a collective's time may fall as its message grows: the measured steps (issue 20).

A library switches kernel at a size: an engine by a fixed rule (vLLM below 256 KiB one-shot, TensorRT-LLM
by its token table), NCCL by its own estimate (tuning.cc). Where the kernel above the switch is faster
there, the real time falls at the switch. The model has such a fall only where the measured curve of
the same system, GPU count and library release has it too (MEASURED below: measured_comm.csv; on an
NVL72 beyond its 4 measured GB300 GPUs, XLA's all-gather table, xla_series); every other fall is a
defect, listed in KNOWN with what the data say, each held by its own strict xfail so that the list
cannot go stale, and the properties (tests/unit/test_physics.py, tests/validation/test_collective_
monotonic.py) fail on any fall listed in neither.

How a fall is measured: the tables are octave-spaced (256 KiB, 512 KiB, ...), so a fall inside an
octave shows only in the two kernels' own rows: the two rows below the switch (the lower kernel),
extended along their straight line (t = latency + n / algbw, the model's own form) to the switch,
lie above the two rows at and above it (the upper kernel), extended back to it. A fall smaller than
NOISE (the spread of repeated rows in these tables) is no fall.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from shardbudget.comm.lines import pick

sys.path.insert(0, str(Path(__file__).resolve().parent / "validation"))

NOISE = 0.01
"""A measured fall must exceed 1% to count (repeats of one size in measured_comm.csv differ by 1-5%)."""


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
                () if self.op == "all-reduce" else (self.op,))
        return (self.system, self.gpus, self.impl, self.before, self.after, self.edge_bytes)


def _name(c) -> str:
    return f"{c.algorithm}/{c.protocol}"


def nccl_switch(system: str, gpus: int, lines, lo: float, hi: float, impl: str = "nccl",
                op: str = "all-reduce") -> Switch | None:
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
    import numpy as np
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


# --- the measurements ------------------------------------------------------------------------------

MEASURED_COMM = {"hgx-a100": "a100_sxm", "hgx-h100": "h100_sxm", "hgx-b200": "b200_sxm", "hgx-b300": "b300_sxm",
                 "gb300-nvl72": "gb300", "l40s-pcie": "l40s"}


SAME_ENGINE_KERNELS = {"hgx-h200": "hgx-h100", "hgx-h20": "hgx-h100"}
"""Systems whose engine all-reduce (vLLM, SGLang, TensorRT-LLM kernels, and the NCCL they fall back
to) is measured on another: H200 and H20 are GH100 GPUs on the same NVLink 4 (18 links, 900 GB/s)
and third-generation NVSwitch as H100 (catalog/systems.toml), so the same kernels cross the same
rule edges at the same cost there (the model prices them alike: custom_allreduce.toml is keyed by
generation and the ring's busbw is the fabric's). Their steps are H100's rows (engines only; NCCL's
own choice is left to its own tables)."""

SAME_RELEASE = {("vllm", "a100_sxm"): "0.14.0", ("vllm", "l40s"): "0.14.0"}
"""Where vLLM's pinned release (0.19.0) runs the same kernels by the same rule as the release
measured: on SM 8.0 and 8.9 there is no symmetric-memory path (vllm.toml symm_mem archs 9.0, 10.0,
10.3), and custom_all_reduce's kernels and thresholds did not change from 0.14.0 to 0.19.0 (the
H100 rows of the two releases agree within 5% at every size the custom kernel runs in both:
tests/validation/test_engine_edges.py test_vllm_0_14_rows_stand_for_0_19)."""


@lru_cache(maxsize=None)
def series(system: str, gpus: int, impl: str, op: str = "all-reduce") -> tuple[str, dict[int, float]]:
    """(source, {bytes: us}) measured for this system, GPU count, library (at the release the model
    follows: an engine's preset version exactly; NCCL's newest table) and op; empty where there is none."""
    import measured_comm as mc
    if system == "rtx4090-pcie" and impl == "nccl" and op == "all-reduce":
        import measured
        rows = [r for r in measured.load_rows() if r.kept and r.source_id == "kalavai-4090" and r.op == "all-reduce"
                and r.catalog_system == system and r.gpus == gpus and r.time_s]
        return ("nccl_tests.csv kalavai-client scripts/README.md (Kubernetes pod)",
                {int(r.size_bytes): r.time_s * 1e6 for r in rows})
    stand_in = SAME_ENGINE_KERNELS.get(system) if impl != "nccl" else None
    if (stand_in or system) not in MEASURED_COMM:
        return xla_series(system, gpus, impl, op)
    key = MEASURED_COMM[stand_in or system]
    library, mode = ("vllm", "eager") if impl == "eager" else (impl, "" if impl == "nccl" else "graph")
    pin = mc.pinned_version("vllm" if impl == "eager" else impl)
    pin = SAME_RELEASE.get((library, key), pin)
    rows = [r for r in mc.load_rows() if r.key == key and r.library == library and r.mode == mode
            and r.op == op and r.gpus == gpus and (pin is None or r.version == pin)]
    if not rows:
        return xla_series(system, gpus, impl, op)
    label = {"nccl": "NCCL", "vllm": "vLLM_custom_graph", "sglang": "SGLang_CustomAllReduce_graph",
             "trtllm": "TRTLLM", "trtllm-1.0": "TRTLLM", "eager": "vLLM_custom_eager"}[impl]
    what = "" if op == "all-reduce" else f" {op}"
    whose = f" (for {system}: SAME_ENGINE_KERNELS)" if stand_in else ""
    return (f"measured_comm.csv {key} {label} {rows[0].version}{what}{whose}",
            {int(r.size_bytes): r.time_s * 1e6 for r in rows})


def xla_series(system: str, gpus: int, impl: str, op: str) -> tuple[str, dict[int, float]]:
    """An NVL72's NCCL all-gather in XLA's table (xla_nvl72: GB200 sm_100_GB200, GB300 sm_103), where
    measured_comm.csv has no rows (it stops at 4 GB300 GPUs): whole executables, the collective plus
    XLA's launch, the same few us on either side of a switch. Its reduce-scatter rows are no NCCL
    time (1.3-2 us at 72 GPUs) and are not read."""
    if system not in NVL72_XLA or impl != "nccl" or op != "all-gather":
        return ("", {})
    import xla_nvl72
    rows = [r for r in xla_nvl72.load_rows(min_gpus=gpus, op=op, system=system) if r.gpus == gpus]
    if not rows:
        return ("", {})
    return (f"xla_collective_perf_table.csv {xla_nvl72.DEVICES[system]} all-gather (NCCL + XLA launch)",
            {int(r.size_bytes): r.xla_time_s * 1e6 for r in rows})


@lru_cache(maxsize=None)
def mnnvl_series(gpus: int, kernel: str) -> dict[int, float]:
    """TensorRT-LLM's MNNVL one-shot or two-shot rows on GB300 trays (measured_comm.csv times each
    kernel apart: TRTLLM_MNNVL_oneshot / _twoshot)."""
    import csv
    import measured_comm as mc
    with mc.find_file(None).open(newline="") as f:
        return {int(r["bytes"]): float(r["time_us"]) for r in csv.DictReader(f)
                if r["library"] == f"TRTLLM_MNNVL_{kernel}" and int(r["num_gpus"]) == gpus
                and r["lib_version"] == mc.pinned_version("trtllm")}


def measured_at_edge(s: Switch) -> tuple[float, float, str] | None:
    """(lower kernel's rows at the edge, upper kernel's rows at the edge, the rows quoted), each side's
    two nearest rows extended along their line; None where the table has no two rows each side.
    Where the table times the two kernels apart (MNNVL), each side reads its own kernel's rows."""
    if s.impl == "trtllm" and s.before.startswith("one-shot/") and s.system == "gb300-nvl72":
        source = f"measured_comm.csv gb300 TRTLLM_MNNVL_oneshot / _twoshot {series(s.system, 2, 'trtllm')[0][-9:]}"
        lo_t, hi_t = mnnvl_series(s.gpus, "oneshot"), mnnvl_series(s.gpus, "twoshot")
        below = [n for n in sorted(lo_t) if n <= s.edge_bytes][-2:]
    else:
        source, lo_t = series(s.system, s.gpus, s.impl, s.op)
        hi_t = lo_t
        below = [n for n in sorted(lo_t) if n < s.edge_bytes][-2:]
    above = [n for n in sorted(hi_t) if n >= s.edge_bytes][:2]
    if len(below) < 2 or len(above) < 2:
        return None

    def at(t: dict[int, float], a: int, b: int) -> float:
        return t[a] + (t[b] - t[a]) * (s.edge_bytes - a) / (b - a)
    quoted = ", ".join([f"{lo_t[n]:.2f} us at {n} B" for n in below] + [f"{hi_t[n]:.2f} us at {n} B" for n in above])
    return at(lo_t, *below), at(hi_t, *above), f"{source}, {s.gpus} GPUs: {quoted}"


def measured_fall(s: Switch) -> bool:
    m = measured_at_edge(s)
    return m is not None and m[0] > m[1] * (1 + NOISE)
def model_switch(key: tuple) -> tuple[Switch, float, float]:
    """The model's switch of a MEASURED / KNOWN key and its time (us) just below and at the edge:
    NCCL's found on a 1/256-octave grid, an engine's at its edge for 4, 8 or 16 KiB per token (the
    hidden sizes 2048-8192 of the properties' models)."""
    import numpy as np
    from shardbudget.comm.collectives import candidates, make_group
    from shardbudget.comm.lines import times_and_latencies_s
    from shardbudget.engines.allreduce import allreduce_ranges_for, engine_allreduce_s
    system, gpus, impl = key[:3]
    group = make_group(system, nodes=1, gpus=gpus)
    if impl == "nccl":
        op = key[5] if len(key) > 5 else "all-reduce"
        lines = candidates(group, op, "nccl")
        sizes = 2.0 ** np.arange(8, 31, 1 / 256)
        t, _ = times_and_latencies_s(lines, sizes)
        for i in range(len(sizes) - 1):
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
SCAN_BYTES_PER_TOKEN = (4096.0, 8192.0, 16384.0)
SCAN_NCCL_OPS = ("all-reduce", "all-gather", "reduce-scatter")
NVL72_XLA = ("gb200-nvl72", "gb300-nvl72")

NVL72_STEPS = {
    ("gb200-nvl72", 16, "nccl", "ring/ll", "nvls/simple"):
        "XLA GB200 table (xla_nvl72.load_rows), 16 GPUs: 49.0 us at 64 KiB, 40.7 us at 128 KiB (ring LL -> NVLS)",
    ("gb300-nvl72", 16, "nccl", "ring/ll", "nvls/simple"):
        "the same NVL72 fabric and NCCL choice as gb200-nvl72 (XLA sm_103 16 GPUs: 51.2 -> 41.6 us)",
}
"""NCCL switches beyond 8 GPUs and the measurement that has the same step (test_collective_monotonic.test_nvl72_steps_are_in_the_data)."""


def scan() -> dict[tuple, tuple[Switch, float, float]]:
    """Every switch at which the model's time falls: NCCL's choice (all-reduce, all-gather,
    reduce-scatter) and each engine's all-reduce rule (vllm,
    sglang, trtllm, eager, trtllm-1.0 at 4, 8 and 16 KiB per token) on every system at 2-72 GPUs, 256 B to 1 GiB
    on a 1/256-octave grid; key -> (switch, us before, us after). NCCL's ring LL -> NVLS at 16 NVL72
    GPUs is NVL72_STEPS's (XLA's table, not measured_comm)."""
    import numpy as np
    from shardbudget.comm.collectives import candidates, make_group
    from shardbudget.comm.lines import times_and_latencies_s
    from shardbudget.engines.allreduce import allreduce_ranges_for, engine_allreduce_s
    from shardbudget.fabric.catalog import load_catalog
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
    for name in sorted(cat.systems):
        for g in (g for g in SCAN_GPUS if g <= cat.system(name).gpus_per_node):
            group = make_group(name, nodes=1, gpus=g, catalog=cat)
            for op in SCAN_NCCL_OPS:
                lines = candidates(group, op, "nccl")
                t, _ = times_and_latencies_s(lines, sizes)
                for i in falls(t):
                    add(nccl_switch(name, g, lines, sizes[i], sizes[i + 1], op=op), t[i], t[i + 1])
            for engine in ("vllm", "sglang", "trtllm", "eager", "trtllm-1.0"):
                for per_token in SCAN_BYTES_PER_TOKEN:
                    ranges = allreduce_ranges_for(engine, group, per_token)
                    t, _ = engine_allreduce_s(ranges, sizes)
                    for i in falls(t):
                        add(engine_switch(name, g, engine, ranges, sizes[i], sizes[i + 1]), t[i], t[i + 1])
    return found


def tables() -> str:
    """MEASURED and KNOWN as this module holds them, from scan() and the data (see __main__)."""
    measured, known = [], []
    for key, (sw, _, _) in sorted(scan().items(), key=lambda kv: str(kv[0])):
        m = measured_at_edge(sw)
        if measured_fall(sw):
            measured.append(f"    {key!r}:\n        {m[2]!r},")
        else:
            why = "no rows measured at this release" if m is None else \
                f"measured {m[0]:.2f} -> {m[1]:.2f} us at the edge, no fall"
            known.append(f"    {key!r}: {why!r},")
    return "\n".join(["MEASURED = {", *measured, "}", "KNOWN = {", *known, "}"])


MEASURED = {
    ('gb200-nvl72', 16, 'nccl', 'nvls/simple', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_100_GB200 all-gather (NCCL + XLA launch), 16 GPUs: 57.72 us at 8388608 B, 80.42 us at 16777216 B, 116.16 us at 33554432 B, 182.86 us at 67108864 B',
    ('gb200-nvl72', 36, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_100_GB200 all-gather (NCCL + XLA launch), 36 GPUs: 72.38 us at 9437184 B, 104.02 us at 18874368 B, 113.90 us at 37748736 B, 176.66 us at 75497472 B',
    ('gb200-nvl72', 64, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_100_GB200 all-gather (NCCL + XLA launch), 64 GPUs: 122.26 us at 16777216 B, 184.00 us at 33554432 B, 193.73 us at 67108864 B, 309.10 us at 134217728 B',
    ('gb200-nvl72', 72, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_100_GB200 all-gather (NCCL + XLA launch), 72 GPUs: 136.51 us at 18874368 B, 206.23 us at 37748736 B, 225.46 us at 75497472 B, 348.60 us at 150994944 B',
    ('gb300-nvl72', 16, 'nccl', 'nvls/simple', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_103 all-gather (NCCL + XLA launch), 16 GPUs: 57.39 us at 8388608 B, 79.82 us at 16777216 B, 114.87 us at 33554432 B, 179.74 us at 67108864 B',
    ('gb300-nvl72', 2, 'eager', 'one-shot', 'nccl', 8388608):
        'measured_comm.csv gb300 vLLM_custom_eager 0.19.0, 2 GPUs: 40.91 us at 2097152 B, 64.91 us at 4194304 B, 64.16 us at 8388608 B, 63.77 us at 16777216 B',
    ('gb300-nvl72', 36, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_103 all-gather (NCCL + XLA launch), 36 GPUs: 71.41 us at 9437184 B, 102.57 us at 18874368 B, 112.55 us at 37748736 B, 173.55 us at 75497472 B',
    ('gb300-nvl72', 64, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_103 all-gather (NCCL + XLA launch), 64 GPUs: 119.85 us at 16777216 B, 175.94 us at 33554432 B, 187.19 us at 67108864 B, 296.25 us at 134217728 B',
    ('gb300-nvl72', 72, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'):
        'xla_collective_perf_table.csv sm_103 all-gather (NCCL + XLA launch), 72 GPUs: 133.85 us at 18874368 B, 197.07 us at 37748736 B, 215.38 us at 75497472 B, 331.92 us at 150994944 B',
    ('hgx-a100', 8, 'eager', 'one-shot', 'two-shot', 262144):
        'measured_comm.csv a100_sxm vLLM_custom_eager 0.14.0, 8 GPUs: 44.74 us at 65536 B, 45.26 us at 131072 B, 44.63 us at 262144 B, 44.76 us at 524288 B',
    ('hgx-a100', 8, 'trtllm-1.0', 'one-shot', 'nccl', 2097152):
        'measured_comm.csv a100_sxm TRTLLM 1.0.0, 8 GPUs: 28.25 us at 524288 B, 83.22 us at 1048576 B, 53.59 us at 2097152 B, 75.86 us at 4194304 B',
    ('hgx-b200', 4, 'trtllm', 'one-shot', 'nccl', 8000000):
        'measured_comm.csv b200_sxm TRTLLM 1.3.0rc20, 4 GPUs: 14.58 us at 2097152 B, 26.79 us at 4194304 B, 47.12 us at 8388608 B, 72.70 us at 16777216 B',
    ('hgx-b200', 4, 'trtllm', 'two-shot', 'nccl', 8000000):
        'measured_comm.csv b200_sxm TRTLLM 1.3.0rc20, 4 GPUs: 14.58 us at 2097152 B, 26.79 us at 4194304 B, 47.12 us at 8388608 B, 72.70 us at 16777216 B',
    ('hgx-b200', 8, 'eager', 'symm-mem-multimem', 'nccl', 134217728):
        'measured_comm.csv b200_sxm vLLM_custom_eager 0.19.0, 8 GPUs: 126.29 us at 33554432 B, 251.17 us at 67108864 B, 427.70 us at 134217728 B, 788.11 us at 268435456 B',
    ('hgx-b200', 8, 'sglang', 'one-shot', 'two-shot', 737280):
        'measured_comm.csv b200_sxm SGLang_CustomAllReduce_graph 0.5.14, 8 GPUs: 8.48 us at 262144 B, 11.56 us at 524288 B, 14.97 us at 1048576 B, 18.91 us at 2097152 B',
    ('hgx-b200', 8, 'trtllm', 'one-shot', 'two-shot', 4194304):
        'measured_comm.csv b200_sxm TRTLLM 1.3.0rc20, 8 GPUs: 17.78 us at 1048576 B, 30.38 us at 2097152 B, 39.42 us at 4194304 B, 55.36 us at 8388608 B',
    ('hgx-b200', 8, 'vllm', 'symm-mem-multimem', 'nccl', 134217728):
        'measured_comm.csv b200_sxm vLLM_custom_graph 0.19.0, 8 GPUs: 110.72 us at 33554432 B, 222.48 us at 67108864 B, 396.08 us at 134217728 B, 715.31 us at 268435456 B',
    ('hgx-b200', 8, 'vllm', 'two-shot', 'symm-mem-multimem', 1048576):
        'measured_comm.csv b200_sxm vLLM_custom_graph 0.19.0, 8 GPUs: 25.95 us at 262144 B, 26.05 us at 524288 B, 16.67 us at 1048576 B, 20.72 us at 2097152 B',
    ('hgx-b300', 2, 'eager', 'one-shot', 'nccl', 8388608):
        'measured_comm.csv b300_sxm vLLM_custom_eager 0.19.0, 2 GPUs: 27.37 us at 2097152 B, 39.35 us at 4194304 B, 45.55 us at 8388608 B, 58.15 us at 16777216 B',
    ('hgx-b300', 4, 'trtllm', 'one-shot', 'nccl', 8000000):
        'measured_comm.csv b300_sxm TRTLLM 1.3.0rc20, 4 GPUs: 14.39 us at 2097152 B, 26.22 us at 4194304 B, 47.16 us at 8388608 B, 72.31 us at 16777216 B',
    ('hgx-b300', 4, 'trtllm', 'two-shot', 'nccl', 8000000):
        'measured_comm.csv b300_sxm TRTLLM 1.3.0rc20, 4 GPUs: 14.39 us at 2097152 B, 26.22 us at 4194304 B, 47.16 us at 8388608 B, 72.31 us at 16777216 B',
    ('hgx-b300', 8, 'trtllm', 'one-shot', 'two-shot', 4194304):
        'measured_comm.csv b300_sxm TRTLLM 1.3.0rc20, 8 GPUs: 17.41 us at 1048576 B, 29.84 us at 2097152 B, 39.34 us at 4194304 B, 55.52 us at 8388608 B',
    ('hgx-b300', 8, 'vllm', 'two-shot', 'symm-mem-multimem', 4194304):
        'measured_comm.csv b300_sxm vLLM_custom_graph 0.19.0, 8 GPUs: 27.26 us at 1048576 B, 29.22 us at 2097152 B, 25.39 us at 4194304 B, 38.22 us at 8388608 B',
    ('hgx-h100', 2, 'eager', 'symm-mem-two-shot', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0, 2 GPUs: 97.60 us at 16777216 B, 188.68 us at 33554432 B, 293.73 us at 67108864 B, 556.56 us at 134217728 B',
    ('hgx-h100', 2, 'vllm', 'symm-mem-two-shot', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0, 2 GPUs: 82.30 us at 16777216 B, 158.44 us at 33554432 B, 246.87 us at 67108864 B, 465.34 us at 134217728 B',
    ('hgx-h100', 4, 'eager', 'symm-mem-multimem', 'nccl', 33554432):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0, 4 GPUs: 62.57 us at 8388608 B, 113.93 us at 16777216 B, 201.41 us at 33554432 B, 376.57 us at 67108864 B',
    ('hgx-h100', 4, 'trtllm', 'one-shot', 'two-shot', 4194304):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20, 4 GPUs: 12.91 us at 1048576 B, 26.13 us at 2097152 B, 39.74 us at 4194304 B, 63.75 us at 8388608 B',
    ('hgx-h100', 4, 'vllm', 'symm-mem-multimem', 'nccl', 33554432):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0, 4 GPUs: 53.23 us at 8388608 B, 98.75 us at 16777216 B, 173.69 us at 33554432 B, 325.03 us at 67108864 B',
    ('hgx-h100', 8, 'eager', 'symm-mem-multimem', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0, 8 GPUs: 107.55 us at 16777216 B, 207.98 us at 33554432 B, 362.41 us at 67108864 B, 663.03 us at 134217728 B',
    ('hgx-h100', 8, 'trtllm', 'nccl', 'two-shot', 2097152):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20, 8 GPUs: 17.60 us at 524288 B, 25.96 us at 1048576 B, 35.49 us at 2097152 B, 51.90 us at 4194304 B',
    ('hgx-h100', 8, 'trtllm', 'one-shot', 'nccl', 1048576):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20, 8 GPUs: 10.17 us at 262144 B, 17.60 us at 524288 B, 25.96 us at 1048576 B, 35.49 us at 2097152 B',
    ('hgx-h100', 8, 'trtllm', 'two-shot', 'nccl', 8000000):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20, 8 GPUs: 35.49 us at 2097152 B, 51.90 us at 4194304 B, 79.43 us at 8388608 B, 122.32 us at 16777216 B',
    ('hgx-h100', 8, 'vllm', 'symm-mem-multimem', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0, 8 GPUs: 92.37 us at 16777216 B, 177.75 us at 33554432 B, 320.88 us at 67108864 B, 574.62 us at 134217728 B',
    ('hgx-h20', 2, 'eager', 'symm-mem-two-shot', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0 (for hgx-h20: SAME_ENGINE_KERNELS), 2 GPUs: 97.60 us at 16777216 B, 188.68 us at 33554432 B, 293.73 us at 67108864 B, 556.56 us at 134217728 B',
    ('hgx-h20', 2, 'vllm', 'symm-mem-two-shot', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0 (for hgx-h20: SAME_ENGINE_KERNELS), 2 GPUs: 82.30 us at 16777216 B, 158.44 us at 33554432 B, 246.87 us at 67108864 B, 465.34 us at 134217728 B',
    ('hgx-h20', 4, 'eager', 'symm-mem-multimem', 'nccl', 33554432):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0 (for hgx-h20: SAME_ENGINE_KERNELS), 4 GPUs: 62.57 us at 8388608 B, 113.93 us at 16777216 B, 201.41 us at 33554432 B, 376.57 us at 67108864 B',
    ('hgx-h20', 4, 'trtllm', 'one-shot', 'two-shot', 4194304):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h20: SAME_ENGINE_KERNELS), 4 GPUs: 12.91 us at 1048576 B, 26.13 us at 2097152 B, 39.74 us at 4194304 B, 63.75 us at 8388608 B',
    ('hgx-h20', 4, 'vllm', 'symm-mem-multimem', 'nccl', 33554432):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0 (for hgx-h20: SAME_ENGINE_KERNELS), 4 GPUs: 53.23 us at 8388608 B, 98.75 us at 16777216 B, 173.69 us at 33554432 B, 325.03 us at 67108864 B',
    ('hgx-h20', 8, 'eager', 'symm-mem-multimem', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0 (for hgx-h20: SAME_ENGINE_KERNELS), 8 GPUs: 107.55 us at 16777216 B, 207.98 us at 33554432 B, 362.41 us at 67108864 B, 663.03 us at 134217728 B',
    ('hgx-h20', 8, 'trtllm', 'nccl', 'two-shot', 2097152):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h20: SAME_ENGINE_KERNELS), 8 GPUs: 17.60 us at 524288 B, 25.96 us at 1048576 B, 35.49 us at 2097152 B, 51.90 us at 4194304 B',
    ('hgx-h20', 8, 'trtllm', 'one-shot', 'nccl', 1048576):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h20: SAME_ENGINE_KERNELS), 8 GPUs: 10.17 us at 262144 B, 17.60 us at 524288 B, 25.96 us at 1048576 B, 35.49 us at 2097152 B',
    ('hgx-h20', 8, 'trtllm', 'two-shot', 'nccl', 8000000):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h20: SAME_ENGINE_KERNELS), 8 GPUs: 35.49 us at 2097152 B, 51.90 us at 4194304 B, 79.43 us at 8388608 B, 122.32 us at 16777216 B',
    ('hgx-h20', 8, 'vllm', 'symm-mem-multimem', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0 (for hgx-h20: SAME_ENGINE_KERNELS), 8 GPUs: 92.37 us at 16777216 B, 177.75 us at 33554432 B, 320.88 us at 67108864 B, 574.62 us at 134217728 B',
    ('hgx-h200', 2, 'eager', 'symm-mem-two-shot', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_eager 0.19.0 (for hgx-h200: SAME_ENGINE_KERNELS), 2 GPUs: 97.60 us at 16777216 B, 188.68 us at 33554432 B, 293.73 us at 67108864 B, 556.56 us at 134217728 B',
    ('hgx-h200', 2, 'vllm', 'symm-mem-two-shot', 'nccl', 67108864):
        'measured_comm.csv h100_sxm vLLM_custom_graph 0.19.0 (for hgx-h200: SAME_ENGINE_KERNELS), 2 GPUs: 82.30 us at 16777216 B, 158.44 us at 33554432 B, 246.87 us at 67108864 B, 465.34 us at 134217728 B',
    ('hgx-h200', 4, 'trtllm', 'one-shot', 'two-shot', 4194304):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h200: SAME_ENGINE_KERNELS), 4 GPUs: 12.91 us at 1048576 B, 26.13 us at 2097152 B, 39.74 us at 4194304 B, 63.75 us at 8388608 B',
    ('hgx-h200', 8, 'trtllm', 'nccl', 'two-shot', 2097152):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h200: SAME_ENGINE_KERNELS), 8 GPUs: 17.60 us at 524288 B, 25.96 us at 1048576 B, 35.49 us at 2097152 B, 51.90 us at 4194304 B',
    ('hgx-h200', 8, 'trtllm', 'one-shot', 'nccl', 1048576):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h200: SAME_ENGINE_KERNELS), 8 GPUs: 10.17 us at 262144 B, 17.60 us at 524288 B, 25.96 us at 1048576 B, 35.49 us at 2097152 B',
    ('hgx-h200', 8, 'trtllm', 'two-shot', 'nccl', 8000000):
        'measured_comm.csv h100_sxm TRTLLM 1.3.0rc20 (for hgx-h200: SAME_ENGINE_KERNELS), 8 GPUs: 35.49 us at 2097152 B, 51.90 us at 4194304 B, 79.43 us at 8388608 B, 122.32 us at 16777216 B',
    ('l40s-pcie', 2, 'eager', 'one-shot', 'nccl', 8388608):
        'measured_comm.csv l40s vLLM_custom_eager 0.14.0, 2 GPUs: 123.66 us at 2097152 B, 238.16 us at 4194304 B, 454.82 us at 8388608 B, 902.24 us at 16777216 B',
    ('l40s-pcie', 2, 'vllm', 'one-shot', 'nccl', 8388608):
        'measured_comm.csv l40s vLLM_custom_graph 0.14.0, 2 GPUs: 116.82 us at 2097152 B, 229.41 us at 4194304 B, 449.95 us at 8388608 B, 891.88 us at 16777216 B',
    ('l40s-pcie', 4, 'nccl', 'ring/ll', 'ring/simple'):
        'measured_comm.csv l40s NCCL 2.27.3, 4 GPUs: 57.72 us at 131072 B, 109.70 us at 262144 B, 163.00 us at 524288 B, 268.30 us at 1048576 B',
    ('l40s-pcie', 4, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'):
        'measured_comm.csv l40s NCCL 2.27.3 all-gather, 4 GPUs: 36.15 us at 131072 B, 66.63 us at 262144 B, 98.57 us at 524288 B, 154.60 us at 1048576 B',
    ('l40s-pcie', 4, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'):
        'measured_comm.csv l40s NCCL 2.27.3 reduce-scatter, 4 GPUs: 36.75 us at 131072 B, 67.37 us at 262144 B, 108.70 us at 524288 B, 152.40 us at 1048576 B',
    ('l40s-pcie', 8, 'nccl', 'ring/ll', 'ring/simple'):
        'measured_comm.csv l40s NCCL 2.27.3, 8 GPUs: 426.00 us at 262144 B, 502.60 us at 524288 B, 863.20 us at 1048576 B, 2618.20 us at 2097152 B',
    ('l40s-pcie', 8, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'):
        'measured_comm.csv l40s NCCL 2.27.3 all-gather, 8 GPUs: 315.50 us at 262144 B, 619.80 us at 524288 B, 509.90 us at 1048576 B, 1489.60 us at 2097152 B',
    ('l40s-pcie', 8, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'):
        'measured_comm.csv l40s NCCL 2.27.3 reduce-scatter, 8 GPUs: 333.30 us at 262144 B, 629.60 us at 524288 B, 540.00 us at 1048576 B, 1232.80 us at 2097152 B',
    ('rtx4090-pcie', 2, 'nccl', 'ring/ll', 'ring/simple'):
        'nccl_tests.csv kalavai-client scripts/README.md (Kubernetes pod), 2 GPUs: 64.38 us at 131072 B, 97.63 us at 262144 B, 161.80 us at 524288 B, 300.60 us at 1048576 B',
}
"""Switch.key -> the measured rows that fall there too (test_physics.test_the_measured_steps_are_in_the_data:
each side extended to the edge falls by more than NOISE, and the model falls there)."""

KNOWN = {
    ('gb200-nvl72', 16, 'nccl', 'nvls/simple', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb200-nvl72', 32, 'nccl', 'nvls/simple', 'ring/ll128', 'all-gather'): 'measured 282.49 -> 283.62 us at the edge, no fall',
    ('gb200-nvl72', 32, 'nccl', 'nvls/simple', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb200-nvl72', 32, 'trtllm', 'one-shot/ll', 'two-shot/ll', 32769): 'no rows measured at this release',
    ('gb200-nvl72', 32, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 32769): 'no rows measured at this release',
    ('gb200-nvl72', 36, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb200-nvl72', 36, 'trtllm', 'one-shot/ll', 'two-shot/ll', 29128): 'no rows measured at this release',
    ('gb200-nvl72', 36, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 29128): 'no rows measured at this release',
    ('gb200-nvl72', 4, 'nccl', 'ring/ll', 'ring/ll128'): 'no rows measured at this release',
    ('gb200-nvl72', 4, 'trtllm', 'one-shot', 'nccl', 8000000): 'no rows measured at this release',
    ('gb200-nvl72', 4, 'trtllm', 'two-shot', 'nccl', 8000000): 'no rows measured at this release',
    ('gb200-nvl72', 64, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb200-nvl72', 64, 'trtllm', 'one-shot/ll', 'two-shot/ll', 16385): 'no rows measured at this release',
    ('gb200-nvl72', 64, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 16385): 'no rows measured at this release',
    ('gb200-nvl72', 72, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb200-nvl72', 72, 'trtllm', 'one-shot/ll', 'two-shot/ll', 14564): 'no rows measured at this release',
    ('gb200-nvl72', 72, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 14564): 'no rows measured at this release',
    ('gb200-nvl72', 8, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'): 'measured 36.82 -> 47.98 us at the edge, no fall',
    ('gb200-nvl72', 8, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb200-nvl72', 8, 'vllm', 'symm-mem-multimem', 'nccl', 134217728): 'no rows measured at this release',
    ('gb300-nvl72', 16, 'nccl', 'nvls/simple', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb300-nvl72', 32, 'nccl', 'nvls/simple', 'ring/ll128', 'all-gather'): 'measured 273.36 -> 279.66 us at the edge, no fall',
    ('gb300-nvl72', 32, 'nccl', 'nvls/simple', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb300-nvl72', 32, 'trtllm', 'one-shot/ll', 'two-shot/ll', 32769): 'no rows measured at this release',
    ('gb300-nvl72', 32, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 32769): 'no rows measured at this release',
    ('gb300-nvl72', 36, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb300-nvl72', 36, 'trtllm', 'one-shot/ll', 'two-shot/ll', 29128): 'no rows measured at this release',
    ('gb300-nvl72', 36, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 29128): 'no rows measured at this release',
    ('gb300-nvl72', 4, 'nccl', 'ring/ll', 'ring/ll128'): 'measured 39.93 -> 80.83 us at the edge, no fall',
    ('gb300-nvl72', 4, 'trtllm', 'one-shot', 'nccl', 8000000): 'measured 48.18 -> 47.71 us at the edge, no fall',
    ('gb300-nvl72', 4, 'trtllm', 'two-shot', 'nccl', 8000000): 'measured 48.18 -> 47.71 us at the edge, no fall',
    ('gb300-nvl72', 64, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb300-nvl72', 64, 'trtllm', 'one-shot/ll', 'two-shot/ll', 16385): 'no rows measured at this release',
    ('gb300-nvl72', 64, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 16385): 'no rows measured at this release',
    ('gb300-nvl72', 72, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('gb300-nvl72', 72, 'trtllm', 'one-shot/ll', 'two-shot/ll', 14564): 'no rows measured at this release',
    ('gb300-nvl72', 72, 'trtllm-1.0', 'one-shot/ll', 'two-shot/ll', 14564): 'no rows measured at this release',
    ('gb300-nvl72', 8, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'): 'measured 36.30 -> 39.90 us at the edge, no fall',
    ('gb300-nvl72', 8, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'no rows measured at this release',
    ('h100-pcie', 2, 'trtllm', 'one-shot', 'nccl', 16000000): 'no rows measured at this release',
    ('hgx-a100', 2, 'trtllm', 'one-shot', 'nccl', 16000000): 'no rows measured at this release',
    ('hgx-a100', 4, 'trtllm', 'one-shot', 'two-shot', 2097152): 'no rows measured at this release',
    ('hgx-a100', 4, 'trtllm', 'one-shot', 'two-shot', 4194304): 'no rows measured at this release',
    ('hgx-a100', 8, 'trtllm', 'nccl', 'two-shot', 2097152): 'no rows measured at this release',
    ('hgx-a100', 8, 'trtllm', 'one-shot', 'nccl', 1048576): 'no rows measured at this release',
    ('hgx-a100', 8, 'trtllm', 'two-shot', 'nccl', 8000000): 'no rows measured at this release',
    ('hgx-a100', 8, 'trtllm-1.0', 'one-shot', 'nccl', 1048576): 'measured 52.19 -> 83.22 us at the edge, no fall',
    ('hgx-a100', 8, 'trtllm-1.0', 'one-shot', 'nccl', 524288): 'measured 25.40 -> 28.25 us at the edge, no fall',
    ('hgx-a100', 8, 'vllm', 'one-shot', 'two-shot', 262144): 'measured 17.19 -> 17.13 us at the edge, no fall',
    ('hgx-b200', 4, 'nccl', 'ring/ll', 'ring/ll128'): 'measured 40.88 -> 80.80 us at the edge, no fall',
    ('hgx-b200', 8, 'eager', 'two-shot', 'symm-mem-multimem', 1048576): 'measured 34.42 -> 38.04 us at the edge, no fall',
    ('hgx-b200', 8, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'): 'measured 48.23 -> 96.63 us at the edge, no fall',
    ('hgx-b200', 8, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'measured 48.16 -> 91.16 us at the edge, no fall',
    ('hgx-b300', 4, 'nccl', 'ring/ll', 'ring/ll128'): 'measured 40.33 -> 79.75 us at the edge, no fall',
    ('hgx-b300', 8, 'nccl', 'ring/ll', 'ring/ll128', 'all-gather'): 'measured 48.20 -> 94.66 us at the edge, no fall',
    ('hgx-b300', 8, 'nccl', 'ring/ll', 'ring/ll128', 'reduce-scatter'): 'measured 47.98 -> 90.73 us at the edge, no fall',
    ('hgx-b300', 8, 'sglang', 'one-shot', 'two-shot', 737280): 'measured 14.15 -> 14.30 us at the edge, no fall',
    ('hgx-h100', 8, 'trtllm-1.0', 'one-shot', 'nccl', 1048576): 'no rows measured at this release',
    ('hgx-h100', 8, 'trtllm-1.0', 'one-shot', 'nccl', 2097152): 'no rows measured at this release',
    ('hgx-h20', 8, 'trtllm-1.0', 'one-shot', 'nccl', 1048576): 'no rows measured at this release',
    ('hgx-h20', 8, 'trtllm-1.0', 'one-shot', 'nccl', 2097152): 'no rows measured at this release',
    ('hgx-h200', 8, 'trtllm-1.0', 'one-shot', 'nccl', 1048576): 'no rows measured at this release',
    ('hgx-h200', 8, 'trtllm-1.0', 'one-shot', 'nccl', 2097152): 'no rows measured at this release',
    ('hgx-h800', 2, 'eager', 'one-shot', 'symm-mem-two-shot', 8388608): 'no rows measured at this release',
    ('hgx-h800', 2, 'trtllm', 'one-shot', 'nccl', 16000000): 'no rows measured at this release',
    ('hgx-h800', 2, 'vllm', 'one-shot', 'symm-mem-two-shot', 8388608): 'no rows measured at this release',
    ('hgx-h800', 4, 'eager', 'one-shot', 'two-shot', 524288): 'no rows measured at this release',
    ('hgx-h800', 4, 'eager', 'symm-mem-multimem', 'nccl', 33554432): 'no rows measured at this release',
    ('hgx-h800', 4, 'nccl', 'nvls/simple', 'ring/simple'): 'no rows measured at this release',
    ('hgx-h800', 4, 'sglang', 'one-shot', 'two-shot', 393216): 'no rows measured at this release',
    ('hgx-h800', 4, 'trtllm', 'one-shot', 'two-shot', 2097152): 'no rows measured at this release',
    ('hgx-h800', 4, 'trtllm', 'one-shot', 'two-shot', 4194304): 'no rows measured at this release',
    ('hgx-h800', 4, 'trtllm', 'two-shot', 'nccl', 8000000): 'no rows measured at this release',
    ('hgx-h800', 4, 'vllm', 'one-shot', 'two-shot', 524288): 'no rows measured at this release',
    ('hgx-h800', 4, 'vllm', 'symm-mem-multimem', 'nccl', 33554432): 'no rows measured at this release',
    ('hgx-h800', 8, 'eager', 'one-shot', 'symm-mem-multimem', 262144): 'no rows measured at this release',
    ('hgx-h800', 8, 'eager', 'symm-mem-multimem', 'nccl', 67108864): 'no rows measured at this release',
    ('hgx-h800', 8, 'sglang', 'one-shot', 'two-shot', 163840): 'no rows measured at this release',
    ('hgx-h800', 8, 'sglang', 'two-shot', 'nccl', 16777216): 'no rows measured at this release',
    ('hgx-h800', 8, 'trtllm', 'one-shot', 'nccl', 1048576): 'no rows measured at this release',
    ('hgx-h800', 8, 'trtllm', 'two-shot', 'nccl', 8000000): 'no rows measured at this release',
    ('hgx-h800', 8, 'trtllm-1.0', 'one-shot', 'nccl', 1048576): 'no rows measured at this release',
    ('hgx-h800', 8, 'trtllm-1.0', 'one-shot', 'nccl', 2097152): 'no rows measured at this release',
    ('hgx-h800', 8, 'trtllm-1.0', 'one-shot', 'nccl', 524288): 'no rows measured at this release',
    ('hgx-h800', 8, 'vllm', 'one-shot', 'symm-mem-multimem', 262144): 'no rows measured at this release',
    ('hgx-h800', 8, 'vllm', 'symm-mem-multimem', 'nccl', 67108864): 'no rows measured at this release',
    ('l40s-pcie', 2, 'nccl', 'ring/ll', 'ring/simple'): 'measured 31.27 -> 37.96 us at the edge, no fall',
    ('l40s-pcie', 2, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'): 'measured 20.54 -> 30.05 us at the edge, no fall',
    ('l40s-pcie', 2, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'): 'measured 20.33 -> 28.37 us at the edge, no fall',
    ('l40s-pcie', 2, 'sglang', 'one-shot', 'nccl', 8388608): 'measured 458.88 -> 456.71 us at the edge, no fall',
    ('l40s-pcie-p2p', 2, 'eager', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('l40s-pcie-p2p', 2, 'sglang', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('l40s-pcie-p2p', 2, 'vllm', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi300x', 2, 'eager', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi300x', 2, 'sglang', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi300x', 2, 'vllm', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi300x', 4, 'sglang', 'one-shot', 'two-shot', 524288): 'no rows measured at this release',
    ('mi300x', 8, 'sglang', 'one-shot', 'two-shot', 262144): 'no rows measured at this release',
    ('mi325x', 2, 'eager', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi325x', 2, 'sglang', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi325x', 2, 'vllm', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi325x', 4, 'sglang', 'one-shot', 'two-shot', 524288): 'no rows measured at this release',
    ('mi325x', 8, 'sglang', 'one-shot', 'two-shot', 262144): 'no rows measured at this release',
    ('mi355x', 2, 'eager', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi355x', 2, 'sglang', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi355x', 2, 'vllm', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('mi355x', 4, 'sglang', 'one-shot', 'two-shot', 524288): 'no rows measured at this release',
    ('rtx-pro-6000-2s-epyc', 2, 'nccl', 'ring/ll', 'ring/simple'): 'no rows measured at this release',
    ('rtx-pro-6000-2s-epyc', 2, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'): 'no rows measured at this release',
    ('rtx-pro-6000-2s-epyc', 2, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'): 'no rows measured at this release',
    ('rtx4090-pcie', 2, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'): 'no rows measured at this release',
    ('rtx4090-pcie', 2, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'): 'no rows measured at this release',
    ('rtx4090-pcie', 4, 'nccl', 'ring/ll', 'ring/simple'): 'no rows measured at this release',
    ('rtx4090-pcie', 4, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'): 'no rows measured at this release',
    ('rtx4090-pcie', 4, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 2, 'eager', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 2, 'sglang', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 2, 'vllm', 'one-shot', 'nccl', 8388608): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 4, 'nccl', 'ring/ll', 'ring/simple'): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 4, 'nccl', 'ring/ll', 'ring/simple', 'all-gather'): 'no rows measured at this release',
    ('rtx4090-pcie-p2p', 4, 'nccl', 'ring/ll', 'ring/simple', 'reduce-scatter'): 'no rows measured at this release',
}
"""Switch.key -> why the model's fall there is not a measured one: defects to fix (issue 20), each held by a
strict xfail (test_physics.test_a_known_fall_is_still_there), so that a fixed one must leave the list."""

if __name__ == "__main__":
    # After a pricing change: `python tests/measured_steps.py` prints both tables as the model and the
    # data now have them; paste them above and read the diff (a KNOWN entry that went is a fixed fall).
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    print(tables())
