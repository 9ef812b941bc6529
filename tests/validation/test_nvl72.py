"""NCCL all-reduce on a GB200 NVL72 at 8 to 72 GPUs against XLA's measured table (xla_nvl72.py says
what was timed and why 3 us of launch is taken off), and the measured bump at 16 GPUs."""

from __future__ import annotations


import pytest

from shardbudget.comm.collectives import collective_cost

from shardbudget.calibrate import xla_nvl72  # shared with the calibration (calibrate.samples)
from shardbudget.calibrate.fit_nccl import fit_ll128_hop
from shardbudget.calibrate.samples import xla_all_gather_samples

TOLERANCE = 0.25
"""The issue's bound for 16 KiB-1 MiB; today's worst row is 19% (18 GPUs, 18 KiB)."""


@pytest.fixture(scope="module")
def rows():
    return xla_nvl72.load_rows()


@pytest.mark.parametrize("gpus", [8, 16, 18, 32, 36, 64, 72])
def test_small_allreduce_within_25_percent(rows, gpus):
    """16 KiB-1.2 MiB: every row of this group size within 25% (source: xla_nvl72.SOURCE)."""
    checked = [r for r in rows if r.gpus == gpus and 16 * 1024 <= r.size_bytes <= 1.2 * 2**20]
    assert len(checked) >= 6
    errors = {
        r.size_bytes: collective_cost("all-reduce", r.size_bytes, xla_nvl72.SYSTEM, gpus=gpus).time_s / r.time_s - 1
        for r in checked
    }
    worst = max(errors, key=lambda n: abs(errors[n]))
    assert abs(errors[worst]) <= TOLERANCE, f"{gpus} GPUs at {worst:.0f} B: {errors[worst]:+.0%}"


def test_72_gpus_is_not_seven_times_the_measurement():
    """Fault 1 of issue 20: 16 KiB on 72 GPUs was 351 us; XLA measures 51.2 us at 18 KiB (less 3 us
    launch: 48 us)."""
    t = collective_cost("all-reduce", 16 * 1024, xla_nvl72.SYSTEM, gpus=72).time_s
    assert 40e-6 < t < 62e-6


def test_16_gpus_bump_is_nccls_choice(rows):
    """At 16 GPUs the measured time falls from 64 KiB (52.0 us) to 128 KiB (43.7 us): NCCL's estimate
    keeps ring LL (24.6 us by tuning.cc) ahead of NVLS (25 us) for small messages, and ring LL over
    15 NVLink steps is slower than NVLS. The model, which runs NCCL's choice, has the same step."""
    at = {r.size_bytes: r.time_s for r in rows if r.gpus == 16}
    assert at[65536] > at[131072] * 1.1
    small = collective_cost("all-reduce", 65536, xla_nvl72.SYSTEM, gpus=16)
    large = collective_cost("all-reduce", 131072, xla_nvl72.SYSTEM, gpus=16)
    assert (small.algorithm, small.protocol) == ("ring", "ll")
    assert large.algorithm == "nvls"
    assert small.time_s > large.time_s * 1.05


# --- all-gather: LL128's NVLink step on Blackwell ------------------------------------------------

LL128_TOLERANCE = 0.10
"""The LL128 all-gather rows of the NVL72 rings: GB200's at 36-72 GPUs are what fit_ll128_hop
fits (worst 4% today), GB200's at 8 and GB300's (sm_103) at 8 and 36-72 are held out (worst 8%).
With LL128's step at NCCL's 1.9 us x LL's 2.25 they were +20% to +100%."""


def _ll128_errors(system: str, gpus: int) -> dict[float, float]:
    rows = [r for r in xla_nvl72.load_rows(min_gpus=gpus, op="all-gather", system=system) if r.gpus == gpus]
    out = {}
    for r in rows:
        c = collective_cost("all-gather", r.size_bytes, system, gpus=gpus)
        if (c.algorithm, c.protocol) == ("ring", "ll128"):
            out[r.size_bytes] = c.time_s / r.time_s - 1
    return out


@pytest.mark.parametrize("system", ["gb200-nvl72", "gb300-nvl72"])
@pytest.mark.parametrize("gpus", [8, 36, 64, 72])
def test_ll128_all_gather_rings_within_10_percent(system, gpus):
    """Where NCCL's estimate runs ring LL128, each XLA all-gather row (less 3 us launch) within 10%.
    Not at 16-32 GPUs: NCCL may run NVLS all-gather there (up to NCCL_MAX_NVLS_ARITY = 32 ranks),
    which the model does not price, and XLA's rows run 25-30% above the LL128 ring. Two rows or more:
    master's LL128 cap (40 GB/s x 16 channels, nccl_graph.ring_ll128_cap) hands the largest to Simple."""
    errors = _ll128_errors(system, gpus)
    assert len(errors) >= 2
    worst = max(errors, key=lambda n: abs(errors[n]))
    assert abs(errors[worst]) <= LL128_TOLERANCE, f"{system} {gpus} GPUs at {worst:.0f} B: {errors[worst]:+.0%}"


def test_ll128_step_costs_what_an_ll_step_costs_on_nvl72():
    """The worked row of nccl.toml: 72 GB200s, all-gather of 150994944 B, XLA 345.6 us. The ring LL128
    line is 14.13 us + 71 steps x 1.20 us + n / 634 GB/s = 337.4 us, 340.4 us with XLA's 3 us
    launch (within 2%). With NCCL's 1.9 us x LL's factor 2.25 it was 555.7 us (+61%). LL128 now costs
    less than Simple where NCCL's estimate leaves it for Simple (no fall there), and the step is
    within 15% of LL's measured 1.35 us."""
    c = collective_cost("all-gather", 150994944, "gb200-nvl72", gpus=72)
    assert (c.algorithm, c.protocol) == ("ring", "ll128")
    assert c.time_s * 1e6 + 3.0 == pytest.approx(345.6, rel=0.02)
    step_s = (c.latency_s - 14.13e-6) / 71
    assert step_s == pytest.approx(1.35e-6, rel=0.15)
    simple = collective_cost("all-gather", 150994944, "gb200-nvl72", gpus=72, protocol="simple")
    assert c.time_s < simple.time_s


def test_blackwell_ll128_factor_is_its_stated_fit():
    """nccl.toml's Blackwell LL128 factor (0.632) is what calibrate.fit_nccl.fit_ll128_hop gives
    on XLA's GB200 all-gather rings of 36-72 GPUs (75 rows), to 0.005."""
    from shardbudget.fabric.catalog import load_catalog

    xs = xla_all_gather_samples()
    assert {x.gpus for x in xs} == {36, 64, 72}
    cat = load_catalog()
    fitted = fit_ll128_hop(xs, cat)["blackwell"]
    assert fitted == pytest.approx(cat.nccl.arch_floor("blackwell").nvlink_hop_scale["ll128"], abs=0.005)
    assert fitted == pytest.approx(0.632, abs=0.005)
