"""The collective model against published nccl-tests / rccl-tests timings (data/nccl_tests.csv).

Every row is kept or dropped by a rule in shardbudget/calibrate/nccl_rules.py, with the reason. Each kept source gets a
test with its own tolerance on the median and 90th percentile of |predicted - measured| / measured
time, stated below with why it is what it is; the summary tests hold the issue's targets:
single-node systems (NVSwitch, xGMI and PCIe together) median <= 10% and p90 <= 25%; multi-node
median <= 20%. benchmarks/accuracy.py prints the same comparison per system.
"""

from __future__ import annotations


import pytest

from shardbudget.comm.collectives import busbw_factor, candidates, collective_cost, ll128_enabled, make_group


from shardbudget.calibrate import nccl_tests as measured  # shared with benchmarks/accuracy.py

# source_id: (median, p90) tolerance on |relative error| of time, and why.
TOLERANCES: dict[str, tuple[float, float, str]] = {
    "h100-readme-1node": (
        0.06,
        0.10,
        "8x H100 NVLS 256 MiB-2 GiB; NVLS efficiency and intercept fitted on H-series runs",
    ),
    "gcm-a100": (
        0.08,
        0.25,
        "8x A100 32 MiB-1 GiB and 2 nodes; the 2-node 32 MiB row is 32% slow in the run "
        "(NCCL's tree LL128 is modelled faster than it ran)",
    ),
    "stas00-a100": (
        0.02,
        0.025,
        "8x A100 512 MiB-16 GiB (its -g 8 rows below 512 MiB are dropped: measured.py STAS00_A100): within 2%",
    ),
    "stas00-sharp": (
        0.03,
        0.05,
        "H200 / B200 4-8 GPUs at 8-16 GiB, ring and NVLS: the bandwidths these "
        "fabrics' achievable figures and NVLS efficiencies come from",
    ),
    "stas00-h200-2.30": (
        0.05,
        0.20,
        "8x H200 NCCL 2.30.7 32 KiB-16 GiB (busbw only): LL region 2-3 us faster "
        "than measured, LL128 at 4 MiB 19% slow",
    ),
    "azure-nd-h200": (0.03, 0.03, "one 8 GiB NVLS row"),
    "nccl#1455": (
        0.03,
        0.16,
        "8x H100 ring and NVLS 5-8 GPUs at 4 GiB (reporter-approximate busbw); its 2-GPU "
        "ring at 4 GiB (367 GB/s) runs 15% above the 2-GPU ring efficiency measured_comm.csv's "
        "128-512 MiB rows set (0.825 of 365)",
    ),
    "mscclpp-ndmv4": (
        0.05,
        0.25,
        "A100 1 GiB rows: 1, 8 and 16 GPUs; one GPU per node reaches 80% of an HDR "
        "NIC (18.7 GB/s), 20% below 8-GPU nodes' per-rail figure",
    ),
    "nccl-tests#194": (0.02, 0.02, "2x H100 PCIe over the NVLink bridge at 1-4 GiB, the fabric's source"),
    "rccl-mi300x": (
        0.12,
        0.25,
        "8x MI300X 8 B-8 GiB; RCCL is 23 us at 128-512 B but 13.7 us at 1-8 KiB, which no single latency fits",
    ),
    "kalavai-4090": (
        0.08,
        0.20,
        "2x RTX 4090 (Kubernetes run) 8 B-2 GiB, host-staged: the pair crosses the "
        "sockets, its 11-12 us floor is 17% above the 2-GPU model (10 us); LL at 32-64 KiB 15-20% fast",
    ),
    "nccl#1530": (
        0.21,
        0.21,
        "8x RTX 4090 8 B, default and NCCL_ALGO=TREE: 42 us measured, 51 us modelled "
        "(the SHM hop splits the 2- and 8-GPU floors' error, +-17%)",
    ),
    "schmaustech-l40s": (0.05, 0.12, "2 nodes x 1 L40S over TCP sockets 8 B-8 GiB (tcp-100 fitted on it)"),
    "coreweave-h100-sharp": (0.10, 0.12, "8 nodes x 8 H100 with SHARP, predicted without SHARP: 3-7% slow"),
    "coreweave-gb200": (
        0.15,
        0.75,
        "NVL72: 1 rack within 4%, 2 racks within 15%; 20 racks run at half the "
        "modelled bandwidth with a ~5 ms intercept the model does not have (50-72% fast)",
    ),
    "h100-readme-2node": (0.15, 0.20, "2 nodes x 8 H100 NVLSTree 256 MiB-8 GiB: 9-15% fast"),
    "nccl-tests#309": (
        0.07,
        0.36,
        "2 and 4 nodes x 8 H100 over 8x NDR, 8 B-16 GiB: tree LL at 1-128 KiB "
        "within 6% at 2 nodes (the LL proxy's per-line cost is read off it), 5-19% slow at 4; "
        "8, 256 and 512 B rows carry first-call spikes (2-3x)",
    ),
    "nccl#652": (
        0.07,
        0.10,
        "32 nodes x 8 A100, 4x HDR, 4-256 B: NCCL's tree LL latency plus Ampere's "
        "measured launch offset (+1.7 us): 4-7% slow; the LL proxy's per-line cost over 10 network "
        "steps adds 0.1-2.6 us, which the flat measured rows do not show",
    ),
    "nccl-tests#150": (0.20, 0.25, "2 nodes x 1 A100 over HDR, 8-64 B: 19-20 us measured, 16.6 us modelled"),
    "stas00-p5en": (0.08, 0.08, "4 nodes x 8 H200 on EFA, ring at 4 GiB"),
}


@pytest.fixture(scope="module")
def rows(data_dir):
    return measured.load_rows(data_dir)


@pytest.fixture(scope="module")
def compared(rows):
    return measured.predict(rows)


def test_every_row_is_classified_with_a_reason(rows):
    assert len(rows) == 679  # data/nccl_tests.csv as published
    kept = [r for r in rows if r.kept]
    assert 200 <= len(kept) <= 280
    for r in rows:
        assert r.reason or (r.kept and not r.derived.startswith("no")), r
        if r.kept:
            assert r.system and r.time_s > 0 and r.size_bytes > 0
        else:
            assert r.reason, f"line {r.line} dropped without a reason"


def test_flagged_and_non_nccl_rows_are_dropped(rows):
    by_line = {r.line: r for r in rows}
    for r in by_line.values():
        if "dgx-06" in r.source or "torch" in r.source.lower():
            assert not r.kept, r
        if "all_reduce_bench" in r.reason or "torch-level" in r.reason:
            assert not r.kept
    docker_4090 = [r for r in rows if "Docker run" in r.source]
    assert docker_4090 and not any(r.kept for r in docker_4090)
    nvlstree = [r for r in rows if "nvlstree" in r.source.lower() or "NVLSTree" in r.reason]
    assert nvlstree and not any(r.kept for r in nvlstree)


def test_forced_algorithms_are_forced_in_the_prediction(rows, data_dir):
    import csv

    with open(data_dir / "nccl_tests.csv", newline="", encoding="utf-8") as f:
        notes = {line: r["algo_or_note"] for line, r in enumerate(csv.DictReader(f), start=2)}
    for r in rows:
        if not r.kept:
            continue
        note = notes[r.line]
        if "NCCL_NVLS_ENABLE=0" in note or "NCCL_ALGO=RING" in note.upper().replace("ALLREDUCE:", ""):
            assert r.algo == "ring", (r.line, note)
        if "NCCL_ALGO=TREE" in note:
            assert r.algo == "tree", (r.line, note)
        if "NCCL_ALGO=NVLS" in note:
            assert r.algo == "nvls", (r.line, note)


def test_busbw_only_rows_derive_time_from_the_nccl_tests_factor(rows):
    derived = [r for r in rows if r.kept and r.derived.startswith("time = size / (busbw")]
    assert len(derived) >= 40
    r = next(
        r for r in derived if r.op == "all-reduce" and r.gpus == 8 and r.size_bytes == 17179869184 and r.algo == "ring"
    )
    # stas00 SHARP table: 8x H200 ring busbw 367.2 GB/s at 16 GiB -> algbw = 367.2 / (2*7/8)
    assert r.time_s == pytest.approx(17179869184 / (367.2e9 / busbw_factor("all-reduce", 8)))
    assert r.time_s == pytest.approx(81.88e-3, rel=1e-3)


def test_variants_are_used_where_the_network_differs(rows):
    tcp = [r for r in rows if r.kept and "NCCL_IB_DISABLE=1" in r.source + r.reason and r.nodes > 1]
    assert tcp and all(r.variant == "l40s-pcie-nps1-degraded-tcp" for r in tcp)
    efa = [r for r in rows if r.kept and "p5en" in r.hardware]
    assert efa and all(r.variant == "hgx-h200-efa" for r in efa)


def test_every_kept_source_has_a_stated_tolerance(rows):
    assert {r.source_id for r in rows if r.kept} == set(TOLERANCES)


@pytest.mark.parametrize("source_id", sorted(TOLERANCES))
def test_source(compared, source_id):
    max_median, max_p90, why = TOLERANCES[source_id]
    mine = [c for c in compared if c.row.source_id == source_id]
    assert mine, f"no kept rows for {source_id}"
    s = measured.summarize(mine)
    worst = max(mine, key=lambda c: abs(c.rel_error))
    detail = (
        f"{source_id} ({why}): n={s.n} median |err| {s.median:.1%} (<= {max_median:.0%}), "
        f"p90 {s.p90:.1%} (<= {max_p90:.0%}); worst line {worst.row.line}: {worst.row.size_bytes:.0f} B "
        f"measured {worst.row.time_s * 1e6:.1f} us, predicted {worst.predicted_s * 1e6:.1f} us"
    )
    assert s.median <= max_median and s.p90 <= max_p90, detail


@pytest.mark.parametrize("cls", sorted(measured.TARGETS))
def test_issue_targets(compared, cls):
    max_median, max_p90 = measured.TARGETS[cls]
    mine = [c for c in compared if measured.category(c.row) == cls]
    assert len(mine) >= 80
    s = measured.summarize(mine)
    assert s.median <= max_median, f"{cls}: median |err| {s.median:.1%} > {max_median:.0%} over {s.n} rows"
    assert s.p90 <= max_p90, f"{cls}: p90 |err| {s.p90:.1%} > {max_p90:.0%} over {s.n} rows"


# --- the calibrated terms, checked by hand ------------------------------------------------------


def test_nvls_bandwidth_and_fixed_cost_on_hgx_h200():
    # algbw = 0.686 / (1 + 0.000687 x 7) x 450 GB/s x 8/9 = 273.1 GB/s; fixed cost 10 us + 8 us x 8 = 74 us
    full, small = (c for c in candidates(make_group("hgx-h200"), "all-reduce") if c.algorithm == "nvls")
    eff = 0.686 / (1 + 0.000687 * 7)
    assert full.algbw_bytes_per_s == pytest.approx(eff * 450e9 * 8 / 9, rel=1e-3)
    assert full.latency_s == pytest.approx(74e-6)
    # small messages: Hopper's 2.07 us + 7.49 us per doubling of the group (8 GPUs: 24.5 us) at 0.55
    # of that rate; 4 MiB -> 24.5 + 4.19 MB / 150.2 GB/s = 52.5 us (measured 52.4 us: stas00 NCCL
    # 2.30.7 sweep, busbw 139.97 GB/s)
    assert small.latency_s == pytest.approx((2.07 + 7.49 * 3) * 1e-6)
    assert small.algbw_bytes_per_s == pytest.approx(0.55 * full.algbw_bytes_per_s)
    assert collective_cost("all-reduce", 4 * 2**20, "hgx-h200").time_s == pytest.approx(52.5e-6, rel=3e-3)
    # 8 GiB: 74 us + 8 GiB / 273.1 GB/s = 31.53 ms; measured 31.77 ms (stas00 SHARP table, busbw 473.1)
    assert collective_cost("all-reduce", 8 * 2**30, "hgx-h200").time_s == pytest.approx(31.53e-3, rel=1e-3)
    # NCCL chooses NVLS by its own estimate: 25 us; its NVLS graph is 8 channels x 40 GB/s (9 x 40 of the
    # GPU's 370.8: nccl_graph.nvls_graph), busbw 2 x 0.85 x 320 GB/s x 7/8
    assert full.select_latency_s == pytest.approx(25e-6)
    assert full.select_algbw_bytes_per_s == pytest.approx(2 * 0.85 * 320e9 * 7 / 8 / (14 / 8))


def test_ll128_only_over_nvlink():
    assert ll128_enabled(make_group("hgx-h100"))
    assert not ll128_enabled(make_group("l40s-pcie-nps1-degraded"))
    assert not ll128_enabled(make_group("h100-pcie", gpus=4))  # the pairs meet over PCIe
    assert ll128_enabled(make_group("h100-pcie", gpus=2))  # one NVLink bridge


def test_ll128_across_gb200_racks_by_release():
    """A GB200 tray's NICs hang off its Grace CPUs. tuning.cc v2.26.2 enables LL128 across nodes only
    for typeInter <= PXN (that path is PHB there: no P2C type yet); v2.27.3 admits P2C through
    NCCL_LL128_C2C (default 1). Inside one rack every hop is NVLink either way."""
    from shardbudget.comm.versions import at_nccl
    from shardbudget.fabric.catalog import load_catalog

    for version, across in (("2.26", False), ("2.27", True), ("2.30", True)):
        catalog = at_nccl(load_catalog(), version)
        assert ll128_enabled(make_group("gb200-nvl72", nodes=2, catalog=catalog)) is across
        assert ll128_enabled(make_group("gb200-nvl72", catalog=catalog))
        protos = {c.protocol for c in candidates(make_group("gb200-nvl72", nodes=2, catalog=catalog), "all-reduce")}
        assert ("ll128" in protos) is across
    # rail NICs under the GPU's own PCIe switch (PXB) run LL128 in every release
    assert ll128_enabled(make_group("hgx-h100", nodes=2, catalog=at_nccl(load_catalog(), "2.26")))


def test_multi_node_latency_terms_follow_tuning_cc():
    # NCCL's estimate, 2 nodes x 1 A100, ring LL: 6.6 + 2 steps x NET tree LL 5.0 (ppn == 1) = 16.6 us;
    # the time adds Ampere's measured launch offset (+1.71 us): 18.31 us (nccl-tests#150: 19-20 us)
    ring_ll = next(
        c
        for c in candidates(make_group("hgx-a100", nodes=2, gpus=2), "all-reduce")
        if c.algorithm == "ring" and c.protocol == "ll"
    )
    assert ring_ll.select_latency_s == pytest.approx(16.6e-6)
    assert ring_ll.latency_s == pytest.approx(18.31e-6)
    # 32 nodes x 8 A100, tree LL: 6.8 + 2 x (7 x 0.6 + log2i(32) = 5 x 5.0) = 65.2 us (nccl#652: 62.5-71 us)
    tree_ll = next(
        c
        for c in candidates(make_group("hgx-a100", nodes=32), "all-reduce")
        if c.algorithm == "tree" and c.protocol == "ll"
    )
    assert tree_ll.select_latency_s == pytest.approx(65.2e-6)
    assert tree_ll.latency_s == pytest.approx(66.91e-6)
    # log2i is floor(log2): 24 nodes take 4 tree levels, not 5
    tree24 = next(
        c
        for c in candidates(make_group("hgx-a100", nodes=24), "all-reduce")
        if c.algorithm == "tree" and c.protocol == "ll"
    )
    assert tree24.select_latency_s == pytest.approx((6.8 + 2 * (7 * 0.6 + 4 * 5.0)) * 1e-6)
    # 2 nodes x 8 A100 (DGX A100: AMD EPYC, getNetOverhead 2 us, x3 for Simple = 6 us per intra step),
    # ring Simple estimate: (8.4 + 28 x 6 + 2 x 14) x 1.4 (plateau) = 286.16 us
    ring_simple = next(
        c
        for c in candidates(make_group("hgx-a100", nodes=2), "all-reduce")
        if c.algorithm == "ring" and c.protocol == "simple"
    )
    assert ring_simple.select_latency_s == pytest.approx(286.16e-6)


def test_multi_node_ll_caps_follow_the_cpu_vendor():
    # tuning.cc llMaxBws across nodes: AMD rows (22.5 GB/s at 2 nodes) for DGX A100's EPYC, Intel's
    # row (39.0 at 2 nodes, 20.4 beyond) for Xeon hosts, whatever the GPU generation
    from shardbudget.comm.nccl_algos import ll_cap

    assert ll_cap(make_group("hgx-a100", nodes=2)) == pytest.approx(22.5e9)
    assert ll_cap(make_group("hgx-h100", nodes=2)) == pytest.approx(39.0e9)
    assert ll_cap(make_group("hgx-b200", nodes=4)) == pytest.approx(20.4e9)
    assert ll_cap(make_group("hgx-b200")) == pytest.approx(282e9)  # one node: by GPU generation


def test_tree_bandwidth_follows_tuning_cc():
    # Tree all-reduce busBw x 0.92 first, then LL / 3.8, LL128 x 120/128; algbw = busBw / 2; and
    # treeCorrectionFactor by size (Simple at 1 MiB, log2(2^20 / 64) = 14: 0.5)
    g = make_group("hgx-h100", nodes=4)
    tree = {c.protocol: c for c in candidates(g, "all-reduce") if c.algorithm == "tree"}
    bw = min(365e9, 8 * 46e9)  # the node's NVSwitch ring figure or its 8 NDR NICs
    assert tree["simple"].algbw_bytes_per_s == pytest.approx(bw * 0.92 / 2)
    assert tree["ll128"].algbw_bytes_per_s == pytest.approx(bw * 0.92 * 120 / 128 / 2)
    assert tree["ll"].select_algbw_bytes_per_s == pytest.approx(min(8 * 50e9 * 0.92 / 3.8, 20.4e9) / 2)
    n = 2**20
    assert tree["simple"].time_s(n) == pytest.approx(tree["simple"].latency_s + n / (0.5 * bw * 0.92 / 2))
