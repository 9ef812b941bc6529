"""Fitting measurements into a profile, and using the profile."""

import math

import pytest

from shardbudget.collectives import collective_cost, sweep
from shardbudget.errors import MeasureError
from shardbudget.hardware import load_catalog
from shardbudget.measure.fit import fit_profile, write_profile
from shardbudget.measure.logs import MeasurementSet, Sample, read_log


def _synthetic(system="hgx-h100", scale_bw=0.8, counts=(2, 4, 8)):
    """Samples from the model itself with 80% of the bandwidth: the fit must find 0.8."""
    cat = load_catalog()
    samples = []
    sizes = [2.0 ** k for k in range(3, 31, 2)]
    for p in counts:
        for c in sweep("all-reduce", sizes, system, gpus=p, catalog=cat):
            t = c.latency_s + c.bandwidth_s / scale_bw
            samples.append(Sample(op="all-reduce", msg_bytes=c.msg_bytes, time_s=t,
                                  algbw_bytes_per_s=c.msg_bytes / t, busbw_bytes_per_s=0.0, n_ranks=p,
                                  n_nodes=1, in_place=False, graph=False, dtype="float", redop="sum",
                                  source="synthetic"))
    return MeasurementSet(samples=tuple(samples), source="synthetic.txt", tool="nccl-tests", env={}, warnings=())


def test_fit_recovers_a_bandwidth_change():
    base = load_catalog().system("hgx-h100")
    r = fit_profile([_synthetic()], name="h100-slow", base_system="hgx-h100")
    assert r.params.intra_bytes_per_s == pytest.approx(0.8 * base.intra_fabric.achievable_bytes_per_s, rel=0.1)
    assert r.median_abs_error < 0.05
    assert set(r.heldout) == {2, 4, 8} and max(r.heldout.values()) < 0.15


def test_profile_round_trips_through_the_catalog(tmp_path):
    r = fit_profile([_synthetic()], name="h100-slow", base_system="hgx-h100", holdout=False)
    path = write_profile(r, tmp_path / "p.toml")
    cat = load_catalog([str(path)])
    system = cat.system("h100-slow")
    assert system.gpus_per_node == 8 and system.gpu.name == "h100-sxm"
    big = collective_cost("all-reduce", 1 << 30, "h100-slow", catalog=cat)
    ref = collective_cost("all-reduce", 1 << 30, "hgx-h100")
    assert big.time_s > ref.time_s
    with pytest.raises(MeasureError, match="exists"):
        write_profile(r, path)


def test_fit_on_a_real_log(data_dir):
    ms = read_log(data_dir / "raw" / "nccl_03_mi300x_1node.txt")
    r = fit_profile([ms], name="my-mi300x", base_system="mi300x")
    assert r.median_abs_error < 0.15
    assert all(math.isfinite(x.predicted_s) for x in r.residuals)


def test_fit_refuses_bad_requests():
    with pytest.raises(MeasureError, match="already a catalog system"):
        fit_profile([_synthetic()], name="hgx-h100", base_system="hgx-h100")
    empty = MeasurementSet(samples=(), source="e.txt", tool="nccl-tests", env={}, warnings=())
    with pytest.raises(MeasureError, match="at least 3"):
        fit_profile([empty], name="x", base_system="hgx-h100")


def test_fit_warns_when_the_data_is_not_the_base_system():
    """Timings of milliseconds per call (a CPU transport) forced onto an NVSwitch model push it to its limits."""
    samples = tuple(Sample(op="all-reduce", msg_bytes=float(n), time_s=5e-3 + n / 7e8, algbw_bytes_per_s=0.0,
                           busbw_bytes_per_s=0.0, n_ranks=2, n_nodes=1, in_place=False, graph=False, dtype="float",
                           redop="sum", source="gloo") for n in (8, 64, 512, 4096, 32768, 262144, 2097152))
    ms = MeasurementSet(samples=samples, source="gloo.json", tool="shardbudget", env={}, warnings=())
    r = fit_profile([ms], name="cpu", base_system="hgx-h100", holdout=False)
    assert r.params.at_bound
