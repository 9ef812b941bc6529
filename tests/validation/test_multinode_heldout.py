"""Multi-node all-reduce on data the model never saw (issue 20, fault 7: target median <= 20%).

Every multi-node nccl-tests row of nccl_tests.csv (2+ hosts; an NVL72 rack is 18 trays) predicted by
constants fitted without its system (benchmarks/loso.py held_out: the same folds `make bench`
prints). Figures at this commit, by `python benchmarks/loso.py` (row 'all rows, held out'):

    system        rows  median    p90
    gb200-nvl72     17   20.8%  68.2%   (the 20-rack rows, below)
    hgx-a100        26    2.4%  20.1%
    hgx-h100        11    7.8%  12.1%
    hgx-h200         2    5.6%   5.6%
    l40s-pcie       31    3.8%  13.6%
    all             87    6.1%  22.7%

Tolerances: 1.5 points on a median, 3 on a p90 (a constant moved by another fold's fit moves
these a little; a structural change moves them by more and should restate them here).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(Path(__file__).parent))
import loso  # noqa: E402
import measured  # noqa: E402

# (median, p90) of |predicted / measured - 1| per held-out system, at this commit
EXPECTED = {
    "gb200-nvl72": (0.208, 0.682),
    "hgx-a100": (0.024, 0.201),
    "hgx-h100": (0.078, 0.121),
    "hgx-h200": (0.056, 0.056),
    "l40s-pcie": (0.038, 0.136),
}
POOLED = (0.061, 0.227)
MEDIAN_TOL, P90_TOL = 0.015, 0.03
TARGET_MEDIAN = 0.20


@pytest.fixture(scope="module")
def held_out(data_dir):
    return loso.held_out("multi", data_dir)


def test_the_multi_node_rows_are_the_expected_systems(held_out):
    assert {s: len(e) for s, e in held_out.items()} == {
        "gb200-nvl72": 17, "hgx-a100": 26, "hgx-h100": 11, "hgx-h200": 2, "l40s-pcie": 31}


def test_pooled_held_out_multi_node_meets_the_issue_target(held_out):
    errs = [e for v in held_out.values() for e in v]
    median, p90 = loso.summary(errs)
    assert median <= TARGET_MEDIAN
    assert median == pytest.approx(POOLED[0], abs=MEDIAN_TOL)
    assert p90 == pytest.approx(POOLED[1], abs=P90_TOL)


@pytest.mark.parametrize("system", sorted(EXPECTED))
def test_held_out_per_system(held_out, system):
    median, p90 = loso.summary(held_out[system])
    assert median == pytest.approx(EXPECTED[system][0], abs=MEDIAN_TOL)
    assert p90 == pytest.approx(EXPECTED[system][1], abs=P90_TOL)
    if system != "gb200-nvl72":
        assert median <= TARGET_MEDIAN


def test_gb200_twenty_racks_is_the_known_gap(data_dir):
    """CoreWeave's 20-rack GB200 run (coreweave/nccl-tests README at cb865533, NCCL 2.26.2, 1440
    GPUs, 512 MiB-16 GiB) is a straight line t = a + n / B (least squares) with a = 4.8 ms and B = 215 GB/s
    algbw, where the 2-rack run (144 GPUs) has a = 1.04 ms and B = 419 GB/s (one rack: 0.58 ms, 438). The model prices both as
    NVLSTree (NVLS in the rack, a tree of each GPU's slice between racks), whose latency does not
    grow with the rank count, so it misses the 20-rack rows by 55-75% (low). A 4.8 ms intercept is
    what a 1440-rank ring pays: 2 x 1439 steps x 1.7 us. Which algorithm NCCL 2.26.2 ran there is not
    stated (the job's yaml says only 'can also try NCCL_ALGO=NVLSTREE'); until it is known the rows
    stay in the score and this test pins the gap, so a change that closes it restates it here."""
    rows = [r for r in measured.load_rows(data_dir)
            if r.kept and r.source_id == "coreweave-gb200" and r.nodes in (2, 20)]
    line = {}
    for nodes in (2, 20):
        xs = [r.size_bytes for r in rows if r.nodes == nodes]
        ys = [r.time_s for r in rows if r.nodes == nodes]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        line[nodes] = (my - slope * mx, 1 / slope)  # intercept (s), algbw (B/s)
    assert line[20][0] == pytest.approx(4.83e-3, rel=0.02)
    assert line[20][1] == pytest.approx(215e9, rel=0.02)
    assert line[2][0] == pytest.approx(1.04e-3, rel=0.02)
    assert line[2][1] == pytest.approx(419e9, rel=0.02)
    assert line[20][0] / (2 * (1440 - 1)) == pytest.approx(1.68e-6, rel=0.02)
    compared = measured.predict([r for r in rows if r.nodes == 20])
    assert all(-0.76 <= c.rel_error <= -0.53 for c in compared)
    assert all(c.algorithm == "hierarchical" for c in compared)
