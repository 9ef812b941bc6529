"""Fitting measurements into a profile, and using the profile."""

import math
from dataclasses import replace

import pytest

from shardbudget.comm.collectives import collective_cost, sweep
from shardbudget.errors import MeasureError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.measure.analysis.fit import fit_profile, write_profile
from shardbudget.measure.logs.read import MeasurementSet, Sample, read_log


def _synthetic(system="hgx-h100", scale_bw=0.8, counts=(2, 4, 8)):
    """Samples from the model itself with 80% of the bandwidth: the fit must find 0.8."""
    cat = load_catalog()
    samples = []
    sizes = [2.0**k for k in range(3, 31, 2)]
    for p in counts:
        for c in sweep("all-reduce", sizes, system, gpus=p, catalog=cat):
            t = c.latency_s + c.bandwidth_s / scale_bw
            samples.append(
                Sample(
                    op="all-reduce",
                    msg_bytes=c.msg_bytes,
                    time_s=t,
                    algbw_bytes_per_s=c.msg_bytes / t,
                    busbw_bytes_per_s=0.0,
                    n_ranks=p,
                    n_nodes=1,
                    in_place=False,
                    graph=False,
                    dtype="float",
                    redop="sum",
                    source="synthetic",
                )
            )
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


def test_a_fit_prints_the_same_on_any_machine(data_dir):
    """Issue 35: docs/measure.md's fit of this log printed 48613.42 us at 8 GiB on one machine and 48613.43
    on another: the solver stops anywhere on a flat minimum (~1e-8 of each parameter), and that
    prediction sat on a rounding edge. Fitted parameters keep FIT_DIGITS (4) significant digits, so a
    log whose times move by a rounding error (1e-12, as another machine's arithmetic does) fits the
    same profile and prints the same table, to the last digit."""
    ms = read_log(data_dir / "raw" / "nccl_03_mi300x_1node.txt")
    nudged = replace(
        ms, samples=tuple(replace(s, time_s=s.time_s * (1 + 1e-12 * (i % 3 - 1))) for i, s in enumerate(ms.samples))
    )
    a, b = (fit_profile([m], name="my-mi300x", base_system="mi300x", holdout=False) for m in (ms, nudged))
    assert a.params == b.params
    assert (a.params.intra_bytes_per_s, a.params.intra_hop_scale, a.params.base_scale) == (309.6e9, 1.166, 0.8431)
    assert [r.predicted_s for r in a.residuals] == [r.predicted_s for r in b.residuals]
    assert max(a.residuals, key=lambda r: r.msg_bytes).predicted_s * 1e6 == pytest.approx(48616.80, abs=0.005)


def test_fit_refuses_bad_requests():
    with pytest.raises(MeasureError, match="already a catalog system"):
        fit_profile([_synthetic()], name="hgx-h100", base_system="hgx-h100")
    # a name is one in any case: HGX-H100 would be refused when the profile is loaded back (issue 32)
    with pytest.raises(
        MeasureError,
        match=r"'HGX-H100' is already a catalog system \('hgx-h100': names are "
        r"compared ignoring case\)",
    ):
        fit_profile([_synthetic()], name="HGX-H100", base_system="hgx-h100")
    empty = MeasurementSet(samples=(), source="e.txt", tool="nccl-tests", env={}, warnings=())
    with pytest.raises(MeasureError, match="at least 3"):
        fit_profile([empty], name="x", base_system="hgx-h100")


def test_fit_warns_when_the_data_is_not_the_base_system():
    """Timings of milliseconds per call (a CPU transport) forced onto an NVSwitch model push it to its limits."""
    samples = tuple(
        Sample(
            op="all-reduce",
            msg_bytes=float(n),
            time_s=5e-3 + n / 7e8,
            algbw_bytes_per_s=0.0,
            busbw_bytes_per_s=0.0,
            n_ranks=2,
            n_nodes=1,
            in_place=False,
            graph=False,
            dtype="float",
            redop="sum",
            source="gloo",
        )
        for n in (8, 64, 512, 4096, 32768, 262144, 2097152)
    )
    ms = MeasurementSet(samples=samples, source="gloo.json", tool="shardbudget", env={}, warnings=())
    r = fit_profile([ms], name="cpu", base_system="hgx-h100", holdout=False)
    assert r.params.at_bound


# --- fit that knows the topology (issue 12 item 6) ------------------------------------------


def test_a_two_node_socket_run_blames_the_network_not_the_nvswitch(data_dir):
    """nccl_09: 2 x 8 H200 over NCCL's socket transport (NCCL_IB_DISABLE=1), NCCL_ALGO=ring. Before,
    the fit lowered the NVSwitch to 67 GB/s; the data cannot see it (every sample crosses the nodes)."""
    base = load_catalog().system("hgx-h200")
    r = fit_profile(
        [read_log(data_dir / "raw" / "nccl_09_h200_2node_socket_ring.txt")], name="h200-sock", base_system="hgx-h200"
    )
    p = r.params
    assert p.intra_bytes_per_s == pytest.approx(base.intra_fabric.achievable_bytes_per_s, rel=1e-9)
    assert "intra_bw" not in p.fitted
    assert "nic_bw" in p.fitted and p.nic_seen == "ring link" and "socket transport" in p.network
    # by hand: a 2-node ring crosses each node boundary once per direction, so its busbw plateau
    # (92.2-92.4 GB/s at 1-16 GiB in the log) is the network's per-node rate: 8 NICs x 11.5 GB/s
    assert p.nic_bytes_per_s * base.nics_per_node == pytest.approx(92.3e9, rel=0.05)
    assert {x.algorithm for x in r.residuals} == {"ring"}  # the run's NCCL_ALGO=ring
    assert r.median_abs_error < 0.10
    assert "not seen by the data" in r.headline() and any("kept at nvswitch-gen3" in n for n in r.notes)


def test_nvls_samples_fit_the_link_and_say_so(data_dir):
    """nccl_20: one 8-GPU NVLS run at 8 GiB (busbw 476.96 GB/s) and a noisy 2-node run. The held-out
    error for 8 GPUs was 629% (the 2-node rows had lowered the NVSwitch to 52 GB/s)."""
    r = fit_profile([read_log(data_dir / "raw" / "nccl_20_h200_misc.txt")], name="h200-misc", base_system="hgx-h200")
    p = r.params
    assert p.intra_seen == "NVLS" and "intra_bw" in p.fitted
    nvls = next(x for x in r.residuals if x.nodes == 1)
    assert nvls.algorithm == "nvls" and nvls.rel_error == pytest.approx(0.0, abs=0.01)
    assert "NVLS busbw 477" in r.headline() or "NVLS busbw 478" in r.headline()
    assert p.intra_bytes_per_s == pytest.approx(365e9, rel=0.02)  # the catalog's, within the one sample's noise
    assert r.heldout[8] < 0.05 and not [w for w in r.warnings if w.startswith("held out")]


def test_heldout_error_above_25_percent_is_a_warning():
    """8-GPU runs 1.6x slower at every size than the 2- and 4-GPU runs predict: held out, 8 GPUs are
    predicted with |error| 1 - 1/1.6 = 37.5%."""
    ms = _synthetic(counts=(2, 4, 8))
    samples = tuple(replace(x, time_s=x.time_s * 1.6) if x.n_ranks == 8 else x for x in ms.samples)
    r = fit_profile([replace(ms, samples=samples)], name="h100-mixed", base_system="hgx-h100")
    assert r.heldout[8] == pytest.approx(0.375, abs=0.05)
    assert any(w.startswith("held out: 8 GPUs") and "above 25%" in w for w in r.warnings)
    assert not any(
        w.startswith("held out") for w in fit_profile([_synthetic()], name="ok", base_system="hgx-h100").warnings
    )


def test_synthetic_two_node_runs_recover_the_nic_and_keep_the_nvswitch():
    """Samples priced by the model itself on 2 x hgx-h100 whose NICs run at half their catalog rate."""
    from shardbudget.measure.analysis.fit import Params, _variant

    cat = load_catalog()
    base = cat.system("hgx-h100")
    half = Params(base.intra_fabric.achievable_bytes_per_s, 1.0, 1.0, 0.5 * base.nic_fabric.achievable_bytes_per_s, 1.0)
    truth = _variant(base, half, name="truth", sources="synthetic", catalog=cat)
    samples = tuple(
        Sample(
            op="all-reduce",
            msg_bytes=c.msg_bytes,
            time_s=c.time_s,
            algbw_bytes_per_s=c.algbw_bytes_per_s,
            busbw_bytes_per_s=0.0,
            n_ranks=16,
            n_nodes=2,
            in_place=False,
            graph=False,
            dtype="float",
            redop="sum",
            source="synthetic",
        )
        # every 2x, as nccl-tests sweeps by default (-f 2): every 4x, the uncapped tree LL lets the
        # latency scales trade against the NIC (24.72 GB/s for 23, base scale at its bound)
        for c in sweep("all-reduce", [2.0**k for k in range(3, 31)], truth, nodes=2, catalog=cat)
    )
    ms = MeasurementSet(samples=samples, source="two.txt", tool="nccl-tests", env={}, warnings=())
    r = fit_profile([ms], name="h100-half-net", base_system="hgx-h100", holdout=False)
    assert r.params.intra_bytes_per_s == pytest.approx(base.intra_fabric.achievable_bytes_per_s, rel=1e-9)
    assert r.params.nic_bytes_per_s == pytest.approx(half.nic_bytes_per_s, rel=0.05)
    assert "intra_bw" not in r.params.fitted and r.median_abs_error < 0.05


def test_forced_algorithms_are_read_from_the_log_notes():
    from shardbudget.measure.analysis.fit import _forced

    run = {"annotations": {"algo_or_note": "all_reduce_perf -g 8; NCCL_ALGO=Ring,Tree; NCCL_PROTO=Simple"}}
    assert _forced(run, {}) == (("ring", "tree"), ("simple",), False)
    assert _forced({"command": "NCCL_IB_DISABLE=1 NCCL_ALGO=^NVLS ./all_reduce_perf"}, {}) == ((), (), True)


# Every single-system log of data/raw, with the catalog system it was measured on.
FITTED_LOGS = {
    "nccl_01_a3mega_2node.txt": "hgx-h100",
    "nccl_02_h100_1node_8gpu_large.txt": "hgx-h100",
    "nccl_03_mi300x_1node.txt": "mi300x",
    "nccl_05_mi325x_multinode.txt": "mi325x",
    "nccl_06_mi355x_2node_pollara.txt": "mi355x",
    "nccl_07_l40s_2node_socket.txt": "l40s-pcie-nps1-degraded",
    "nccl_08_l40s_2node_2gpu_rdma.txt": "l40s-pcie-nps1-degraded",
    "nccl_09_h200_2node_socket_ring.txt": "hgx-h200",
    "nccl_10_rtx4090_docker_2gpu.txt": "rtx4090-pcie",
    "nccl_11_rtx4090_docker_4gpu.txt": "rtx4090-pcie",
    "nccl_12_rtx4090_k8s_2gpu.txt": "rtx4090-pcie",
    "nccl_14_coreweave_h100_64gpu_sharp.txt": "hgx-h100",
    "nccl_15_coreweave_gb200.txt": "gb200-nvl72",
    "nccl_16_gcm_a100.txt": "hgx-a100",
    "nccl_17_h100_2node_dgx0607.txt": "hgx-h100",
    "nccl_18_h100_2node_readme.txt": "hgx-h100",
    "nccl_20_h200_misc.txt": "hgx-h200",
}
# Where the fit's own table has a region outside check's tolerance, check says so too: a3mega's
# 4 mid sizes at 1.9x (an algorithm switch the model places elsewhere), the dgx06/07 run the data
# README flags as misconfigured, the noisy h200 run. (The GB200 log's 4-GPU trays are read as its
# NVLink domains by fit and check alike since issue 34: its fit is physical and passes its own check.)
# `fit` does not refit LL's per-line staging across nodes (nccl.toml ll_net_proxy_line_ns): the L40S
# socket run (NCCL_IB_DISABLE=1) keeps its base's RoCE, so LL at 4-128 KiB is priced 17-43% slow;
# the MI355X run's mid sizes had moved from 1.23x to 1.25x, onto check's edge; since the tree's LL
# line across nodes runs past llMaxBw (nccl_algos._tree_line) its fitted profile passes its own
# check. The noisy h200 run now passes.
FIT_MISSES = {
    "nccl_01_a3mega_2node.txt",
    "nccl_17_h100_2node_dgx0607.txt",
    "nccl_07_l40s_2node_socket.txt",
}


UNPHYSICAL_FITS: set[str] = set()


@pytest.mark.parametrize("log", sorted(FITTED_LOGS))
def test_check_of_a_fitted_log_against_its_own_profile_agrees_with_the_fit(data_dir, tmp_path, log):
    """The profile written reproduces the fit's own table (issue 24: a 4090 profile said 0.09375 GB/s
    while its table predicted 3.74 GB/s): `check` of the log against it prices every size as the
    fit's table did, and passes wherever the fit itself is within tolerance."""
    from shardbudget.measure.analysis.check import check_logs

    path = data_dir / "raw" / log
    r = fit_profile(
        [read_log(path)], name="own", base_system=FITTED_LOGS[log], holdout=False, force=log in UNPHYSICAL_FITS
    )
    cat = load_catalog([str(write_profile(r, tmp_path / "own.toml"))])
    result = check_logs([path], system="own", catalog=cat)
    fitted = {(x.ranks, x.msg_bytes): x.predicted_s for x in r.residuals}
    compared = 0
    for t in result.tables:
        for size in (c for region in t.regions for c in region.sizes):
            if (t.ranks, size.msg_bytes) in fitted:
                assert size.predicted_s == pytest.approx(fitted[t.ranks, size.msg_bytes], rel=1e-6)
                compared += 1
    assert compared >= 3
    assert result.exit_code == (1 if log in FIT_MISSES else 0), log


def test_a_pcie_box_fit_moves_the_links_its_rings_run_on(data_dir, tmp_path):
    """GeForce 4090s stage every hop through host memory (SHM): the fitted bandwidth scales those
    links, so a 2 GiB all-reduce on 2 GPUs is priced near its measured 957.7 ms (nccl_10's last row),
    and the headline says what the rings reach instead of a link they never touch."""
    logs = [
        read_log(data_dir / "raw" / f) for f in ("nccl_10_rtx4090_docker_2gpu.txt", "nccl_11_rtx4090_docker_4gpu.txt")
    ]
    r = fit_profile(logs, name="my-4090f", base_system="rtx4090-pcie", holdout=False)
    cat = load_catalog([str(write_profile(r, tmp_path / "p.toml"))])
    t = collective_cost("all-reduce", 2 * 2**30, "my-4090f", gpus=2, catalog=cat).time_s
    assert t == pytest.approx(0.9577, rel=0.10)
    assert "at 2 GPUs (shm)" in r.headline() and "93.75 MB/s" not in r.headline()


# --- physical bounds (issue 33, item 12) -----------------------------------------------------


def _scaled(ms: MeasurementSet, factor: float) -> MeasurementSet:
    return replace(ms, samples=tuple(replace(s, time_s=s.time_s * factor) for s in ms.samples))


def test_a_profile_faster_than_the_datasheet_is_refused_with_the_bound(tmp_path):
    """Times of 0.01-0.16 us (every time / 2000 of a healthy run) once fitted an NVLink of 12,329 GB/s
    that loaded without a word; now the fit names the bound and writes nothing."""
    from shardbudget import cli

    fast = _scaled(_synthetic(scale_bw=1.0), 1 / 2000)
    assert min(s.time_s for s in fast.samples) < 0.01e-6 and max(s.time_s for s in fast.samples) > 1e-6
    with pytest.raises(
        MeasureError,
        match=r"not physical: the fitted intra-node bandwidth .* is above nvswitch-gen3's "
        r"datasheet 450 GB/s per direction \(bound: x1.05 of it\).*pass --force",
    ):
        fit_profile([fast], name="fast", base_system="hgx-h100", holdout=False)
    forced = fit_profile([fast], name="fast", base_system="hgx-h100", holdout=False, force=True)
    assert forced.warnings[0].startswith("not physical: the fitted intra-node bandwidth")
    assert any("below the physical floor of 1 µs" in w for w in forced.warnings)
    log = tmp_path / "fast.log"
    rows = "\n".join(
        f"{int(s.msg_bytes):12d} {max(1, int(s.msg_bytes) // 4):13d} float sum -1 {s.time_s * 1e6:.4f} 0 0 0 "
        f"{s.time_s * 1e6:.4f} 0 0 0"
        for s in fast.samples
        if s.n_ranks == 8
    )
    log.write_text("@n_gpus: 8\n@n_nodes: 1\n@collective: all_reduce\n" + rows + "\n")
    out = tmp_path / "fast.toml"
    assert cli.main(["fit", str(log), "--name", "fast", "--base-system", "hgx-h100", "--out", str(out)]) == 2
    assert not out.exists()


def test_a_profile_faster_than_the_latency_floor_is_refused():
    """Latency alone: small sizes only (up to 4 KiB, no size sees the bandwidth), every time / 50: the
    fit predicts an 8 B all-reduce in a fraction of a microsecond."""
    quick = _scaled(
        replace(
            _synthetic(scale_bw=1.0), samples=tuple(s for s in _synthetic(scale_bw=1.0).samples if s.msg_bytes <= 4096)
        ),
        1 / 50,
    )
    with pytest.raises(MeasureError, match=r"below the physical floor of 1 µs for one collective between GPUs"):
        fit_profile([quick], name="quick", base_system="hgx-h100", holdout=False)


def test_healthy_fits_stay_within_the_bounds():
    r = fit_profile([_synthetic()], name="h100-slow", base_system="hgx-h100", holdout=False)
    assert not any(w.startswith("not physical") for w in r.warnings)
