"""XLA's measured GB200 NVL72 all-reduce table (data/xla_collective_perf_table.csv), as the
time of one NCCL all-reduce on an NVL72.

One loader for the calibration (calibrate.samples) and the validation tests (test_nvl72.py). The table is the
only public small-message NVL72 measurement at 8 to 72 GPUs (nccl_15_coreweave_gb200.txt starts at
512 MiB). Choices, each deliberate:

- Rows are whole XLA executables: one all-reduce plus XLA's launch. The data README gives ~15 us of
  launch for the 8-GPU sm_90 table. The NVL72 table's own 4-GPU rows bound it there: one compute
  tray is the same four GPUs as a GB300 tray, whose NCCL all-reduce measured_comm.csv times at
  15.1-16.1 us (512 B-16 KiB, NCCL 2.29.2), and XLA gives 16.5-18.6 us for 1-16 KiB at 4 GPUs. So
  `XLA_LAUNCH_S` = 3 us here; with 15 us the 4-GPU all-reduce would take 3.5 us, half of NVIDIA's
  "routinely under 8 us" for GB200 at <= 1 KB (nvidia/nccl-tests#333). The 8-GPU rows, 25-28 us
  after it, then agree with HGX B200's measured 8-GPU ring (25.6-27.7 us at 512 B-16 KiB).
- Groups of 8 to 72 GPUs (devices_per_group), the same table for every group count (the rows are
  replica groups run side by side: 18 groups of 4, 2 of 36, one of 72).
- A row more than 1.6x both neighbours in size is a glitch and dropped (72 GPUs: 1152 B 115 us
  between 57.6 and 57.6; 73728 B 110 us between 55.0 and 58.7).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .paths import data_file

XLA_LAUNCH_S = 3e-6
SYSTEM = "gb200-nvl72"
DEVICE_KEY = "sm_100_GB200"
DEVICES = {"gb200-nvl72": "sm_100_GB200", "gb300-nvl72": "sm_103"}
"""Catalog system -> the table's device key (sm_103: "Blackwell Ultra, GB300-class NVL72")."""
NVLS_ALL_GATHER_MAX_GPUS = 32
"""NCCL offers NVLS for all-gather / reduce-scatter only up to NCCL_MAX_NVLS_ARITY local ranks
(src/include/device.h: 32; enqueue.cc updateCollCostTable skips NVLS for a non-all-reduce above it):
an all-gather of 33 to 72 NVL72 GPUs is a ring, whichever its protocol."""
SOURCE = (
    "xla_collective_perf_table.csv (ROCm/xla collective_interpolator_data.h at d02afb4f, "
    "device sm_100_GB200, all-reduce)"
)


@dataclass(frozen=True)
class XlaRow:
    gpus: int
    size_bytes: float
    xla_time_s: float

    @property
    def time_s(self) -> float:
        """The all-reduce alone: the executable less XLA's launch."""
        return self.xla_time_s - XLA_LAUNCH_S


def path(data_dir: Path | None = None) -> Path:
    """data/xla_collective_perf_table.csv (or the one in `data_dir`)."""
    return data_file("xla_collective_perf_table.csv", data_dir)


@lru_cache(maxsize=16)
def load_rows(
    data_dir: Path | None = None, min_gpus: int = 8, op: str = "all-reduce", system: str = SYSTEM
) -> tuple[XlaRow, ...]:
    """`system`'s rows of `op` (all-reduce, all-gather: `tensor_bytes` is nccl-tests' size, the
    gathered output; XLA's reduce-scatter rows, 1.3-2 us at 72 GPUs, are no NCCL time and are not
    read) at `min_gpus` GPUs or more, glitches dropped, sorted."""
    by_g: dict[int, list[XlaRow]] = {}
    with path(data_dir).open(newline="") as f:
        for r in csv.DictReader(f):
            if r["device_key"] != DEVICES[system] or r["opcode"] != op or not r["time_us_derived"]:
                continue
            g = int(r["devices_per_group"])
            if g >= min_gpus:
                by_g.setdefault(g, []).append(XlaRow(g, float(r["tensor_bytes"]), float(r["time_us_derived"]) * 1e-6))
    out = []
    for g, rows in by_g.items():
        rows.sort(key=lambda x: x.size_bytes)
        for i, x in enumerate(rows):
            near = [rows[j].xla_time_s for j in (i - 1, i + 1) if 0 <= j < len(rows)]
            if len(near) == 2 and all(x.xla_time_s > 1.6 * t for t in near):
                continue
            out.append(x)
    return tuple(sorted(out, key=lambda x: (x.gpus, x.size_bytes)))
