"""`shardbudget lab`'s comparison on synthetic runs (the lab itself needs root: tests/integration/test_lab.py)."""

import pytest

from shardbudget.measure.harness.lab import _compare, format_lab


def _runs(alpha_s, b_bytes_per_s, sizes, ranks=2):
    k = 2 * (ranks - 1) / ranks  # each rank sends 2(p-1)/p of the message
    return [{"results": [{"bytes": n, "time_s": alpha_s + k * n / b_bytes_per_s} for n in sizes]}] * 3


def test_a_fit_on_latency_bound_sizes_only_warns_that_b_is_extrapolated():
    # 8 B .. 8 KiB at alpha 50 us, B 1 GB/s: the largest size spends 8.2 us on the wire (< alpha)
    small = [8 * 4**i for i in range(6)] + [8192]
    result = _compare(2, [("unshaped", None)], {"unshaped": _runs(50e-6, 1e9, small)}, netem=False, files=[])
    assert len(result.warnings) == 1 and "latency-bound" in result.warnings[0]
    assert "is extrapolated, not measured" in result.warnings[0] and "--size 8B:64MiB" in result.warnings[0]
    text = format_lab(result)
    assert "# warning: every size" in text and "(B extrapolated: see the warning)" in text


def test_a_fit_that_sees_the_bandwidth_does_not_warn():
    sizes = [8 * 4**i for i in range(11)]  # up to 8 MiB: 8.4 ms on the wire at 1 GB/s
    result = _compare(2, [("unshaped", None)], {"unshaped": _runs(50e-6, 1e9, sizes)}, netem=False, files=[])
    assert result.warnings == ()
    assert result.unshaped_bytes_per_s == pytest.approx(1e9, rel=0.02)
