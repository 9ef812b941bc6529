"""Multi-node all-reduce on data the model never saw (issue 20, fault 7: target median <= 20%).

Every multi-node nccl-tests row of nccl_tests.csv (2+ hosts; an NVL72 rack is 18 trays) predicted by
constants fitted without its system (calibrate.loso.held_out_errors: the same folds `make bench`
prints). Figures at this commit, by `python benchmarks/loso.py` (row 'all rows, held out'):

    system        rows  median    p90
    gb200-nvl72     17   14.7%  59.6%   (the 20-rack rows, below)
    hgx-a100        26    2.8%  20.1%
    hgx-h100        61    6.9%  22.9%   (nccl-tests#309 2 and 4 nodes, tree LL at 1-128 KiB: below)
    hgx-h200         2    5.6%   5.6%
    l40s-pcie-nps1-degraded       31    3.8%  13.6%
    all            137    6.5%  24.3%

Before the tree's LL line ran past llMaxBw in its real time (test_tree_ll_across_nodes_runs_past_
nccls_ll_ceiling) hgx-h100 was 7.0% / 22.8% and all 7.0% / 24.3%.

Before NVLSTree's pipeline fill (comm/nccl_algos.py nvls_tree_step_bytes) gb200-nvl72 was 20.8% /
68.2% (2 racks 17-22% low), hgx-h100 7.8% / 12.1%, all 6.1% / 22.7%.

LL's network step is store-and-forward through host memory (comm/lines.LLNetStaging, catalog
nccl.toml ll_net_proxy_line_ns = 8, read off nccl-tests#309's 2-node run). Without it hgx-h100 was
7.5% / 26.8% and tree LL at 1-128 KiB 15-28% fast at 2 and 4 nodes (median 21.0% and 20.6%); with it
0.9% at 2 nodes (in sample) and 9.1% slow at 4 nodes (the check: 2 log2i(4) = 4 steps over-count).

Tolerances: 1.5 points on a median, 3 on a p90 (a constant moved by another fold's fit moves
these a little; a structural change moves them by more and should restate them here).
"""

from __future__ import annotations


import pytest

from shardbudget.calibrate import loso
from shardbudget.calibrate import nccl_tests as measured

# (median, p90) of |predicted / measured - 1| per held-out system, at this commit
EXPECTED = {
    "gb200-nvl72": (0.155, 0.596),
    "hgx-a100": (0.028, 0.201),
    "hgx-h100": (0.070, 0.229),
    "hgx-h200": (0.056, 0.056),
    "l40s-pcie-nps1-degraded": (0.038, 0.136),
}
POOLED = (0.065, 0.243)
MEDIAN_TOL, P90_TOL = 0.015, 0.03
TARGET_MEDIAN = 0.20


@pytest.fixture(scope="module")
def held_out(data_dir):
    return loso.held_out_errors("multi", data_dir)


def test_the_multi_node_rows_are_the_expected_systems(held_out):
    assert {s: len(e) for s, e in held_out.items()} == {
        "gb200-nvl72": 17,
        "hgx-a100": 26,
        "hgx-h100": 61,
        "hgx-h200": 2,
        "l40s-pcie-nps1-degraded": 31,
    }


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
    assert median <= TARGET_MEDIAN


def test_gb200_twenty_racks_is_the_known_gap(data_dir):
    """CoreWeave's 20-rack GB200 run (coreweave/nccl-tests README at cb865533, NCCL 2.26.2, 1440
    GPUs, 512 MiB-16 GiB) is a straight line t = a + n / B (least squares) with a = 4.8 ms and B = 215 GB/s
    algbw, where the 2-rack run (144 GPUs) has a = 1.04 ms and B = 419 GB/s (one rack: 0.58 ms, 438).

    What NCCL 2.26.2 runs there is NVLSTree, by its own estimate (test_nccl_2_26_runs_nvls_tree_across_
    gb200_racks): 137 us + n / 508 GB/s against ring's 14.3 ms and tree's 688 us. So the 4.8 ms is
    not a ring's 2 x 1439 steps (1.7 us each would fit it, but NCCL never picks that ring). The model
    prices NVLSTree: NVLS in the rack (445.7 GB/s), a double binary tree of racks through the 32 heads'
    NICs (32 x 46 / 2 = 736 GB/s: test_nvls_tree_network_stage_is_not_the_20_rack_bound) and a pipeline
    filling 2 log2i(N) = 8 levels of 32 channels x 32 heads x 64 KiB = 67 MB (1.2 ms). Neither the
    halved slope nor the other ~3.5 ms follows from NCCL's source: the DBT's 2x per interior node
    would halve the rate only if the rack's tree carried ~430 GB/s (9.3 NICs, where NCCL's NVLS
    graph has 32 heads); at the measured 215 GB/s the same fill is 2.5 ms, and the intercept's growth
    from 2 to 20 racks (0.46 -> 4.25 ms over one rack's) is 9x where the tree's depth grows 4x (it is
    near the ranks' 10x). Later releases touch exactly this path (2.27.3: NVLS channels 32 -> 24 on
    Blackwell with several NVLink domains, 16 NICs between MNNVL domains; 2.28.3: NVLSTree tuning
    data for GB200), but the 2.26.2 source does not say what limits it, so the 20-rack rows stay
    51-65% low and this test pins the gap: a change that closes it restates it here."""
    rows = [
        r for r in measured.load_rows(data_dir) if r.kept and r.source_id == "coreweave-gb200" and r.nodes in (2, 20)
    ]
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
    assert all(-0.68 <= c.rel_error <= -0.50 for c in compared)  # shipped catalog: -51 to -65%
    assert all(c.algorithm == "hierarchical" for c in compared)


@pytest.mark.parametrize(
    "nodes, ring_us, tree_us, nvls_tree_us",
    [
        # by hand from tuning.cc v2.26.2 (the CoreWeave runs' release), 72 ranks per node:
        # ring Simple (8.4 + (2(p-1) - 2(N-1)) x 3.4 + 2(N-1) x 14) x 1.4 plateau,
        # tree Simple 8.4 + 2 (71 x 4.0 + log2i(N) x 14), NVLSTree 25 + 2 log2i(N) x 14
        (2, (8.4 + 284 * 3.4 + 2 * 14) * 1.4, 8.4 + 2 * (71 * 4.0 + 1 * 14), 25 + 2 * 1 * 14),
        (20, (8.4 + 2840 * 3.4 + 38 * 14) * 1.4, 8.4 + 2 * (71 * 4.0 + 4 * 14), 25 + 2 * 4 * 14),
    ],
)
def test_nccl_2_26_runs_nvls_tree_across_gb200_racks(nodes, ring_us, tree_us, nvls_tree_us):
    """What NCCL 2.26.2 runs on 2 and 20 GB200 racks. With MNNVL a rack's 72 GPUs are one NCCL node
    (topo.cc fuses the clique's topology; init.cc counts nodes by ring graph), so 144 GPUs are 2 nodes
    and 1440 are 20. NVLS proper is off across nodes without CollNet (tuning.cc: 'Disable ... NVLS
    if collnet is not supported'; 2.26.2 turns CollNet on only with NCCL_COLLNET_ENABLE=1, init.cc,
    which CoreWeave's GB200 job files do not set), LL128 is off through Grace's
    NICs (test_ll128_across_gb200_racks_by_release), which leaves ring, tree (LL, Simple) and
    NVLSTree. NCCL's own estimates: ring 1.40 ms / 14.3 ms of latency (2 x 1439 steps at 3.4 us on
    NVLink: the 1440-rank ring the 20-rack intercept recalls is never chosen), tree 604 / 688 us,
    NVLSTree 53 / 137 us, with the best bandwidth too: NVLSTree runs at every measured size."""
    from shardbudget.comm.collectives import candidates, make_group, pick
    from shardbudget.comm.versions import at_nccl
    from shardbudget.fabric.catalog import load_catalog

    group = make_group("gb200-nvl72", nodes=nodes, catalog=at_nccl(load_catalog(), "2.26"))
    lines = candidates(group, "all-reduce")
    est = {(c.algorithm, c.protocol): c.select_latency_s for c in lines}
    assert sorted(est) == [
        ("hierarchical", "simple"),
        ("ring", "ll"),
        ("ring", "simple"),
        ("tree", "ll"),
        ("tree", "simple"),
    ]
    assert est[("ring", "simple")] == pytest.approx(ring_us * 1e-6, rel=1e-9)
    assert est[("tree", "simple")] == pytest.approx(tree_us * 1e-6, rel=1e-9)
    assert est[("hierarchical", "simple")] == pytest.approx(nvls_tree_us * 1e-6, rel=1e-9)
    nvls_tree = max((c for c in lines if c.algorithm == "hierarchical"), key=lambda c: c.algbw_bytes_per_s)
    assert all(
        nvls_tree.select_algbw_bytes_per_s > c.select_algbw_bytes_per_s
        for c in lines
        if c.algorithm in ("ring", "tree")
    )
    for size in (512 * 2**20, 2**30, 4 * 2**30, 16 * 2**30):
        assert pick(lines, size).algorithm == "hierarchical"


def test_nvls_tree_network_stage_is_not_the_20_rack_bound():
    """NVLSTree's network stage goes through the NVLS heads' NICs: one per head, 32 heads on a GB200
    rack (NCCL_MAX_NVLS_ARITY; the graph search steps down to 20 GB/s a head so that 32 fit the
    GPUs' 18 x 40 GB/s NVLink), 8 on an HGX H100 node (one per rail NIC). A node with two children in
    the double binary tree of more than 2 nodes sends and receives each byte twice (tuning.cc
    NVLSTree bwInter / 2). On 20 racks that is 32 x 46 GB/s / 2 = 736 GB/s, above NVLS's 445.7 GB/s
    in the rack: as NCCL 2.26.2 uses them the NICs cannot make the measured 215 GB/s (that would be
    9.3 NICs of 46 GB/s, or each of the 32 heads' NICs at 29% of its rate). On 8 H100 nodes the
    same rule binds: 8 x 46 / 2 = 184 GB/s (CoreWeave's 8-node H100 rows, run with SHARP, which is
    not modelled, measure 180-195 GB/s algbw at 0.5-8 GiB)."""
    from shardbudget.comm import nccl_algos as A
    from shardbudget.comm.collectives import candidates, make_group

    for system, nodes, heads, node_nics in (
        ("gb200-nvl72", 20, 32, 72),
        ("gb200-nvl72", 2, 32, 72),
        ("hgx-h100", 8, 8, 8),
        ("hgx-h100", 2, 8, 8),
    ):
        group = make_group(system, nodes=nodes)
        assert (A.nvls_heads(group), A.group_nics(group)) == (heads, node_nics)
        full = max(
            (c for c in candidates(group, "all-reduce") if c.algorithm == "hierarchical"),
            key=lambda c: c.algbw_bytes_per_s,
        )
        tree = 1 if nodes <= 2 else 2
        network = heads * 46e9 / tree
        one_node = A.nvls(make_group(system, gpus=group.gpus_per_node))
        assert full.algbw_bytes_per_s == pytest.approx(min(network, one_node.algbw_bytes_per_s), rel=1e-9)
    assert make_group("gb200-nvl72").system.nic_fabric.achievable_bytes_per_s == 46e9
    assert 32 * 46e9 / 2 == pytest.approx(736e9) and A.nvls(make_group("gb200-nvl72")).algbw_bytes_per_s < 736e9


@pytest.mark.parametrize(
    "system, nodes, gpus, step_bytes",
    [
        ("gb200-nvl72", 2, 144, 32 * 32 * 128 * 1024),  # SM100: 32 NVLS channels, 32 heads (NCCL_MAX_NVLS_ARITY)
        ("gb200-nvl72", 20, 1440, 32 * 32 * 64 * 1024),  # 64 KiB chunks from 4 nodes (NVLSTREE_MAX_CHUNKSIZE)
        ("hgx-h100", 2, 16, 16 * 8 * 128 * 1024),  # SM90: 16 channels, one head per GPU (8 rail NICs)
    ],
)
def test_nvls_tree_fills_its_levels(system, nodes, gpus, step_bytes):
    """The large-message NVLSTree line pays 2 log2i(N) pipeline steps of channels x heads x chunk
    (enqueue.cc v2.26.2 concurrentOps x chunkSize) at its own rate, on top of NVLS + the network."""
    from shardbudget.comm import nccl_algos as A
    from shardbudget.comm.collectives import candidates, make_group
    from shardbudget.comm.lines import Group

    group = make_group(system, nodes=nodes, gpus=gpus)
    assert A.nvls_tree_step_bytes(group) == step_bytes
    full = [c for c in candidates(group, "all-reduce") if c.algorithm == "hierarchical"][0]
    one_node = Group(group.system, 1, group.gpus_per_node, group.catalog)
    inter = Group(group.system, nodes, 1, group.catalog)
    inter_lat = min(c.latency_s for c in candidates(inter, "all-reduce") if c.protocol == "simple")
    fill = 2 * A.log2i(nodes) * step_bytes / full.algbw_bytes_per_s
    assert full.latency_s == pytest.approx(A.nvls(one_node).latency_s + inter_lat + fill, rel=1e-12)
    # by hand: 2 racks 2 x 134.2 MB / 445.7 GB/s = 0.60 ms; 20 racks 8 x 67.1 MB / 445.7 GB/s = 1.20 ms
    if system == "gb200-nvl72":
        assert fill == pytest.approx(0.62e-3 if nodes == 2 else 1.24e-3, rel=0.02)


def test_two_node_h100_at_64_mib_follows_the_measured_line(data_dir):
    """The README's 2-node H100 example at 64 MiB, below the measured sizes: the 2-node rows
    (h100-readme-2node, 256 MiB-8 GiB) are t = 220.5 us + n / 251.2 GB/s by least squares, 487.7 us
    at 64 MiB. The NVLSTree line with its pipeline fill (2 steps of 16 x 8 x 128 KiB at 264 GB/s,
    127 us) gives 486 us; without the fill it gave 363 (-26%). Within 5%."""
    from shardbudget.comm.collectives import collective_cost

    rows = [r for r in measured.load_rows(data_dir) if r.kept and r.source_id == "h100-readme-2node"]
    xs, ys = [r.size_bytes for r in rows], [r.time_s for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    line_64 = my + slope * (64 * 2**20 - mx)
    assert line_64 == pytest.approx(487.7e-6, rel=0.005)
    cost = collective_cost("all-reduce", 64 * 2**20, "hgx-h100", nodes=2, gpus=16)
    assert cost.algorithm == "hierarchical"
    assert cost.time_s == pytest.approx(line_64, rel=0.05)


def test_tree_ll_across_nodes_runs_past_nccls_ll_ceiling(data_dir):
    """nccl-tests#309 (NCCL 2.26.2, 2 and 4 nodes of 8 H100, auto: tree LL at 16-128 KiB). Its 4-node
    rows rise 7.4 us from 16 to 128 KiB (about 15 GB/s); with llMaxBw's ceiling (NCCL's estimate of
    where LL saturates, 20.4 GB/s of bus bandwidth beyond 2 nodes) in the real line they priced
    6-12% slow (12.3% at 128 KiB). The real line keeps the link's LL rate, NCCL's estimate the
    ceiling: the 4-node rows within 6% (3.7, 3.1, 1.1, -5.4%). The 2-node rows, which LL's network
    staging (ll_net_proxy_line_ns) was read off with the ceiling in place, move from -2.0..3.7% to
    -10.5..-1.9% (128 KiB the farthest): within 11%."""
    rows = [
        r
        for r in measured.load_rows(data_dir)
        if r.kept
        and r.source_id == "nccl-tests#309"
        and r.op == "all-reduce"
        and r.nodes in (2, 4)
        and 16384 <= r.size_bytes <= 131072
    ]
    compared = measured.predict(rows)
    assert len(compared) == 8
    assert all((c.algorithm, c.protocol) == ("tree", "ll") for c in compared), compared
    errors = {(c.row.nodes, int(c.row.size_bytes)): c.rel_error for c in compared}
    assert all(abs(e) <= (0.06 if nodes == 4 else 0.11) for (nodes, _), e in errors.items()), errors
