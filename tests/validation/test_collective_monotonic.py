"""A collective (all-reduce; NCCL's all-gather and reduce-scatter) takes no less time for a larger
message, for every system, GPU count and implementation, except at the kernel switches whose measured curve falls too (issue 20).

`auto` runs NCCL's own choice (README, Collectives): where NCCL's estimate switches line later
than the real crossover, the time falls at the switch. An engine switches kernel at sizes its source
names (engines/rules.py), priced as `plan` and `allreduce --impl ENGINE` price it (engines/
allreduce.py). A fall is allowed only at a switch listed in data/falls.csv (calibrate/falls.py): MEASURED (the
rows each side of it, extended to the edge, fall too; test_physics checks each against the data) or
KNOWN (a defect: the list `python -m shardbudget.calibrate --report` prints, held current by
test_physics). On an NVL72, NCCL's ring LL ->
NVLS switch at 16 GPUs is measured by XLA's table (NVL72_STEPS).
"""

from __future__ import annotations

import csv
import numpy as np
import pytest

from shardbudget.comm.collectives import candidates, make_group, times_and_latencies_s
from shardbudget.engines.allreduce import allreduce_ranges_for, engine_allreduce_s
from shardbudget.fabric.catalog import load_catalog

from shardbudget.calibrate import xla_nvl72
from shardbudget.calibrate.falls import known, measured
from shardbudget.calibrate.switches import NVL72_STEPS, engine_switch, nccl_switch

SIZES = 2.0 ** np.arange(8, 31, 0.25)  # 256 B .. 1 GiB, four per octave
ENGINES = ("vllm", "sglang", "trtllm", "trtllm-1.0")


def _cases():
    cat = load_catalog()
    for name, s in cat.systems.items():
        for g in sorted({g for g in (2, 4, 8, 16, 32, 36, 64, 72) if g <= s.gpus_per_node}):
            yield pytest.param(name, g, id=f"{name}-{g}")


def _falls(t: np.ndarray) -> np.ndarray:
    return np.where(t[1:] < t[:-1] * (1 - 1e-9))[0]


@pytest.mark.parametrize(("system", "gpus"), list(_cases()))
def test_time_does_not_fall_with_size(system, gpus):
    cat = load_catalog()
    group = make_group(system, gpus=gpus, catalog=cat)
    for impl, op in (
        ("nccl", "all-reduce"),
        ("custom", "all-reduce"),
        ("nccl", "all-gather"),
        ("nccl", "reduce-scatter"),
    ):
        lines = candidates(group, op, impl)
        t, _ = times_and_latencies_s(lines, SIZES)
        for i in _falls(t):
            switch = nccl_switch(system, gpus, lines, SIZES[i], SIZES[i + 1], op=op)
            assert (
                switch is not None and switch.impl == "nccl" and switch.key in {**measured(), **known(), **NVL72_STEPS}
            ), (
                f"{impl} {op} on {gpus} GPUs of {system}: {t[i] * 1e6:.2f} us at {SIZES[i]:.0f} B, "
                f"{t[i + 1] * 1e6:.2f} us at {SIZES[i + 1]:.0f} B ({switch})"
            )
    for engine in ENGINES:
        ranges = allreduce_ranges_for(engine, group, 16384.0)
        t, _ = engine_allreduce_s(ranges, SIZES)
        for i in _falls(t):
            switch = engine_switch(system, gpus, engine, ranges, SIZES[i], SIZES[i + 1])
            assert switch is not None and switch.key in {**measured(), **known(), **NVL72_STEPS}, (
                f"{engine} on {gpus} GPUs of {system}: {t[i] * 1e6:.2f} us at {SIZES[i]:.0f} B, "
                f"{t[i + 1] * 1e6:.2f} us at {SIZES[i + 1]:.0f} B ({switch})"
            )


def test_nvl72_steps_are_in_the_data():
    """The NVL72 steps allowed above are in XLA's table (the test cannot pass on a stale list), and
    the model switches there from ring LL to NVLS."""
    at = {r.size_bytes: r.time_s for r in xla_nvl72.load_rows() if r.gpus == 16}
    assert at[65536] > at[131072]
    assert (
        f"{at[65536] * 1e6:.1f} us at 64 KiB, {at[131072] * 1e6:.1f} us at 128 KiB"
        in NVL72_STEPS[("gb200-nvl72", 16, "nccl", "ring/ll", "nvls/simple")]
    )
    with xla_nvl72.path().open(newline="") as f:
        sm103 = {
            int(r["tensor_bytes"]): float(r["time_us_derived"])
            for r in csv.DictReader(f)
            if (r["device_key"], r["opcode"], r["devices_per_group"]) == ("sm_103", "all-reduce", "16")
        }
    assert sm103[65536] > sm103[131072]
    assert (
        f"{sm103[65536]:.1f} -> {sm103[131072]:.1f} us"
        in NVL72_STEPS[("gb300-nvl72", 16, "nccl", "ring/ll", "nvls/simple")]
    )
    for system in ("gb200-nvl72", "gb300-nvl72"):
        lines = candidates(make_group(system, gpus=16), "all-reduce", "nccl")
        switch = nccl_switch(system, 16, lines, 65536.0, 131072.0)
        assert switch is not None and switch.key in NVL72_STEPS
