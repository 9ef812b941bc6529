"""NCCL's NVLS all-gather / reduce-scatter (comm/nvls_gather.py): where NCCL's own estimate runs it,
checked against NVIDIA/nccl's source (5067397c: tuning.cc ncclTopoTuneModel, enqueue.cc
updateCollCostTable, device.h NCCL_MAX_NVLS_ARITY 32), measured_comm.csv's 8-GPU HGX rows and XLA's
GB200 NVL72 all-gather rows (xla_nvl72.py: 3 us of XLA launch taken off)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from shardbudget.comm.collectives import candidates, collective_cost, make_group
from shardbudget.comm.lines import pick
from shardbudget.comm.versions import at_nccl
from shardbudget.errors import PlanError
from shardbudget.fabric.catalog import load_catalog

from shardbudget.calibrate import xla_nvl72
from shardbudget.calibrate.measured_comm import find_file

SIZES = 2.0 ** np.arange(9, 34, 0.25)


def _nvls(system: str, gpus: int, op: str = "all-gather", catalog=None):
    return next(c for c in candidates(make_group(system, gpus=gpus, catalog=catalog), op) if c.algorithm == "nvls")


def test_nccl_estimate_by_hand_on_8_b200s():
    """tuning.cc: latency hwLat NVLink NVLS Simple 25 us; bandwidth 721.8 GB/s (NCCL's NVLink rate) x
    nvlsEfficiency Blackwell 0.74 x 15/16 x (ppn-1)/ppn 7/8 = 438.3 GB/s, not converted to algbw.
    The time: 900 GB/s x the 8-GPU NVLS efficiency 0.606 / (1 + 0.000687 x 7) = 542.8 GB/s after
    11.69 + 7.49 log2(8) = 34.16 us (the small-message NVLS cost)."""
    c = _nvls("hgx-b200", 8)
    assert c.protocol == "simple"
    assert c.select_latency_s == pytest.approx(25e-6)
    assert c.select_algbw_bytes_per_s == pytest.approx(721.8e9 * 0.74 * 15 / 16 * 7 / 8, rel=2e-3)
    assert c.algbw_bytes_per_s == pytest.approx(900e9 * 0.606 / (1 + 0.000687 * 7), rel=2e-3)
    assert c.latency_s == pytest.approx(34.16e-6, rel=5e-3)
    assert _nvls("hgx-b200", 8, "reduce-scatter").select_algbw_bytes_per_s == c.select_algbw_bytes_per_s


@pytest.mark.parametrize("nccl", ["2.30", "2.27"])
@pytest.mark.parametrize("system", ["hgx-h100", "hgx-b200", "hgx-b300"])
@pytest.mark.parametrize("op", ["all-gather", "reduce-scatter"])
def test_nccl_never_picks_nvls_on_8_gpus(system, op, nccl):
    """At 8 GPUs NVLS's 25 us and (ppn-1)/ppn rate lose to the ring at every size from 512 B to
    8 GiB: LL (10.8 us) below, LL128 (27.3 us at 0.92 x 8/7 of the rate) above. So measured_comm's
    2.29.2 step at 16 MiB on B200 (44 -> 102 us) is not NVLS."""
    group = make_group(system, gpus=8, catalog=at_nccl(load_catalog(), nccl))
    cands = candidates(group, op)
    assert any(c.algorithm == "nvls" for c in cands)
    assert {pick(cands, n).algorithm for n in SIZES} == {"ring"}


def test_no_nvls_gather_above_32_ranks():
    """enqueue.cc: NVLS serves an op other than all-reduce only up to NCCL_MAX_NVLS_ARITY = 32."""
    assert any(c.algorithm == "nvls" for c in candidates(make_group("gb200-nvl72", gpus=32), "all-gather"))
    assert not any(c.algorithm == "nvls" for c in candidates(make_group("gb200-nvl72", gpus=36), "all-gather"))
    with pytest.raises(PlanError, match="NCCL_MAX_NVLS_ARITY"):
        collective_cost("all-gather", 2**24, "gb200-nvl72", gpus=36, algo="nvls")


def test_b200_16_mib_rows_of_2_27_and_2_28_are_the_ring():
    """measured_comm.csv b200_sxm, 8 GPUs, 16 MiB (half and int8): all-gather 51.1-53.2 us at NCCL
    2.27.5 and 2.28.9, reduce-scatter 51.5-55.4 us; the model's ring LL128 (46.0 us) within 20%."""
    path = find_file()
    with path.open(newline="") as f:
        rows = [
            r
            for r in csv.DictReader(f)
            if r["system"] == "b200_sxm"
            and r["library"] == "NCCL"
            and r["num_gpus"] == "8"
            and r["bytes"] == str(2**24)
            and r["lib_version"] in ("2.27.5", "2.28.9")
            and r["op"] in ("all_gather", "reduce_scatter")
        ]
    assert len(rows) == 8
    for r in rows:
        c = collective_cost(r["op"].replace("_", "-"), 2**24, "hgx-b200", gpus=8)
        assert (c.algorithm, c.protocol) == ("ring", "ll128")
        assert c.time_s * 1e6 == pytest.approx(float(r["time_us"]), rel=0.20)


@pytest.fixture(scope="module")
def xla_rows():
    return xla_nvl72.load_rows(min_gpus=16, op="all-gather")


@pytest.mark.parametrize("gpus, lo, hi, tolerance", [(16, 2**23, 2**26, 0.12), (32, 2**24, 2**28, 0.20)])
def test_xla_gb200_all_gather_runs_nvls(xla_rows, gpus, lo, hi, tolerance):
    """XLA's GB200 all-gather rows at 16 GPUs, 8-64 MiB (50.7-176.9 us after launch), and 32 GPUs,
    16-256 MiB (87.5-574.7 us), are NVLS: the ring LL128 was 26-32% short there. Priced with NCCL
    2.27's estimate (no nvlsEfficiency), whose switch to the ring lands where the rows change slope
    (16 GPUs: 139 MB, rows between 67 and 134 MB; 32 GPUs: 460 MB, rows between 268 and 537 MB);
    2.28's estimate would leave NVLS at 24 and 79 MB, which the rows contradict."""
    cat = at_nccl(load_catalog(), "2.27")
    checked = [r for r in xla_rows if r.gpus == gpus and lo <= r.size_bytes <= hi]
    assert len(checked) >= 4
    for r in checked:
        c = collective_cost("all-gather", r.size_bytes, "gb200-nvl72", gpus=gpus, catalog=cat)
        assert c.algorithm == "nvls", r
        assert c.time_s == pytest.approx(r.time_s, rel=tolerance), r
    past = [r for r in xla_rows if r.gpus == gpus and r.size_bytes >= 4 * hi]
    assert past and all(
        collective_cost("all-gather", r.size_bytes, "gb200-nvl72", gpus=gpus, catalog=cat).algorithm == "ring"
        for r in past
    )
