"""`shardbudget check` on synthetic nccl-tests logs written from the model itself: a healthy run passes;
a degraded one (a NIC down, GDR off, sockets, P2P off, fewer channels, NVLS off, a forced protocol, a
noisy run) fails with that cause, told by NCCL's INFO lines where the log has them and guessed from
the curve's shape where it has not. Each degraded log is the model's own curve with the degradation
applied, so the numbers asserted are checkable by hand: a plateau at 7/8 is a time ratio of 8/7."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from shardbudget import cli
from shardbudget.measure.analysis.check import REGIONS, check_text, verdict_of
from shardbudget.comm.collectives import explicit_candidates, make_group
from shardbudget.comm.lines import pick
from shardbudget.errors import MeasureError, PlanError, UnknownNameError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.measure.logs.nccl_info import read_settings

CAT = load_catalog()
SIZES = [8 * 4**k for k in range(16)]  # 8 B .. 8 GiB


def times_us(system, *, nodes=1, gpus=None, bw_scale=1.0, lat_scale=1.0, algo="auto", protocol="auto"):
    """The model's times, the bandwidth term divided by bw_scale (a plateau at bw_scale of normal):
    each size priced by the line `pick` chooses, as check (and fit) price it (Candidate.time_s, tree
    correction factor included)."""
    group = make_group(system, nodes=nodes, gpus=gpus, catalog=CAT)
    cands = explicit_candidates(group, "all-reduce", "nccl", algo, protocol)
    out = []
    for n in SIZES:
        c = pick(cands, n)
        out.append((c.latency_s * lat_scale + (c.time_s(n) - c.latency_s) / bw_scale) * 1e6)
    return out


def nccl_log(t_us, *, ranks, nodes, info=(), device="NVIDIA H100 80GB HBM3") -> str:
    """An all_reduce_perf log as nccl-tests prints it, NCCL's INFO lines (if any) before the table."""
    per = ranks // nodes
    out = [
        f"# nThread 1 nGpus 1 minBytes 8 maxBytes {SIZES[-1]} step: 4(factor) warmup iters: 5 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    out += [
        f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on {'node-' + str(r // per):>10} device {r % per:2d} "
        f"[0x{r:02x}] {device}"
        for r in range(ranks)
    ]
    out += [line if "NCCL version" in line else f"node-0:1000:1100 [0] NCCL INFO {line}" for line in info]
    out += [
        "#",
        "#                                                              out-of-place                       in-place",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
    ]
    for size, t in zip(SIZES, t_us):
        alg = size / t / 1e3
        bus = alg * 2 * (ranks - 1) / ranks
        half = f"{t:10.2f} {alg:7.2f} {bus:7.2f}      0"
        out.append(f"{size:12d} {size // 4:13d}     float     sum      -1 {half} {half}")
    out += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.0", "#"]
    return "\n".join(out) + "\n"


def check(text, system, **kw):
    return check_text(text, system=system, source="synthetic.log", **kw)


IB8 = " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(8))
IB7 = " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(7))
HEALTHY_2NODE = [
    "NCCL version 2.21.5+cuda12.4",
    "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
    f"NET/IB : Using {IB8} ; OOB eth0:10.0.0.1<0>",
    "Using network IB",
    "comm 0x55d0 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0",
    "Channel 00/16 :    0   7   6   5   4   3   2   1   8  15  14  13  12  11  10   9",
    "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
    "Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/0/GDRDMA",
]


# --- the INFO line reader ------------------------------------------------------------------------


def test_settings_are_read_from_nccl_info_lines():
    text = nccl_log(
        times_us("hgx-a100", nodes=2),
        ranks=16,
        nodes=2,
        info=HEALTHY_2NODE
        + [
            "NVLS multicast support is not available on dev 0",
            "NCCL_ALGO set by environment to Ring",
            "16 coll channels, 16 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
        ],
    )
    st = read_settings(text)
    assert (st.version, st.channels, st.nics, st.network, st.net_plugin, st.n_nodes) == (
        "2.21.5+cuda12.4",
        16,
        8,
        "IB",
        "internal",
        2,
    )
    assert st.transports == ("p2p", "net") and st.gdr is True and st.nvls is False
    assert st.env == {"NCCL_ALGO": "Ring"} and st.evidence["NCCL_ALGO"].startswith("line ")


def test_settings_from_command_lines_and_old_formats():
    st = read_settings(
        "mpirun -np 2 -x NCCL_IB_DISABLE=1 -x NCCL_MAX_NCHANNELS=4 ./all_reduce_perf -b 8\n"
        "h:1:2 [0] NCCL INFO Channel 00 : 0[18000] -> 1[1b000] via SHM/direct/direct\n"
        "h:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
    )
    assert st.env == {"NCCL_IB_DISABLE": "1", "NCCL_MAX_NCHANNELS": "4"}
    assert st.network == "Socket" and st.transports == ("shm",) and st.nvls is False  # connections, no NVLS
    empty = read_settings("# nThread 1 nGpus 8\n")
    assert (empty.info_lines, empty.nvls, empty.gdr, empty.channels) == (0, None, None, None)


# --- healthy runs pass; the verdict's arithmetic ------------------------------------------------


@pytest.mark.parametrize(
    ("system", "nodes", "gpus"),
    [
        ("hgx-h100", 1, 8),
        ("hgx-h200", 2, 16),
        ("hgx-a100", 2, 16),
        ("l40s-pcie-nps1-degraded", 1, 4),
        ("mi300x", 1, 8),
        ("rtx4090-pcie", 1, 2),
        ("gb200-nvl72", 1, 72),
    ],
)
def test_the_models_own_curve_passes_in_every_region(system, nodes, gpus):
    result = check(nccl_log(times_us(system, nodes=nodes, gpus=gpus), ranks=gpus, nodes=nodes), system)
    t = result.tables[0]
    assert result.exit_code == 0 and t.causes == () and (t.ranks, t.nodes) == (gpus, nodes)
    for r in t.regions:
        assert r.median_ratio is None or r.median_ratio == pytest.approx(1.0, abs=0.01)  # 2-decimal times


def test_regions_split_by_the_predicted_latency_share():
    t = check(nccl_log(times_us("hgx-h100"), ranks=8, nodes=1), "hgx-h100").tables[0]
    for r in t.regions:
        for s in r.sizes:
            assert (s.latency_share >= 0.75) == (r.region == "latency floor")
            assert (s.latency_share <= 0.25) == (r.region == "bandwidth plateau")
    assert [r.region for r in t.regions] == list(REGIONS)
    assert t.regions[0].sizes[0].msg_bytes == 8 and t.regions[2].sizes[-1].msg_bytes == SIZES[-1]


def test_tolerance_is_symmetric_in_log_space():
    assert [verdict_of(r, 0.25) for r in (1.25, 1.26, 0.8, 0.79, None)] == ["ok", "slow", "ok", "fast", "no sizes"]


def test_a_uniformly_slow_run_fails_at_30_percent_and_passes_at_40():
    text = nccl_log([t * 1.3 for t in times_us("hgx-h100")], ranks=8, nodes=1)
    assert check(text, "hgx-h100").exit_code == 1
    assert all(
        r.verdict == "slow" and r.median_ratio == pytest.approx(1.3, rel=0.01)
        for r in check(text, "hgx-h100").tables[0].regions
    )
    assert check(text, "hgx-h100", tolerance=0.4).exit_code == 0


# --- causes the INFO lines state ------------------------------------------------------------------


def test_a_nic_down_told_by_net_ib_and_guessed_from_a_7_of_8_plateau():
    slow = times_us("hgx-a100", nodes=2, bw_scale=7 / 8)
    told = check(
        nccl_log(slow, ranks=16, nodes=2, info=[i.replace(IB8, IB7) for i in HEALTHY_2NODE]), "hgx-a100", tolerance=0.1
    ).tables[0]
    assert told.regions[2].verdict == "slow" and told.regions[2].median_ratio == pytest.approx(8 / 7, rel=0.01)
    assert told.cause.kind == "nic-down" and not told.cause.guess
    assert "NCCL uses 7 of the 8 NICs" in told.cause.text and "NET/IB : Using" in told.cause.evidence[0]
    assert told.cause.expected_ratio == pytest.approx(8 / 7, rel=0.01)  # the model with 7 NICs agrees
    guessed = check(nccl_log(slow, ranks=16, nodes=2), "hgx-a100", tolerance=0.1).tables[0]
    assert guessed.cause.kind == "nic-down" and guessed.cause.guess
    assert guessed.cause.text.startswith("a NIC down? plateau at 0.88 of the predicted busbw, as with 7 of 8 NICs")
    assert "a guess" in guessed.cause.text
    # at the default 25 % a missing NIC of eight is within tolerance: the check passes
    assert check(nccl_log(slow, ranks=16, nodes=2), "hgx-a100").exit_code == 0


def test_gdr_off_told_by_net_ib_without_gdrdma():
    info = [i.replace("/GDRDMA", "") for i in HEALTHY_2NODE] + ["NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'"]
    t = check(nccl_log(times_us("hgx-a100", nodes=2, bw_scale=0.6), ranks=16, nodes=2, info=info), "hgx-a100").tables[0]
    assert t.cause.kind == "gdr-off" and not t.cause.guess and "GDR off" in t.cause.text
    assert t.settings.gdr is False
    guessed = check(nccl_log(times_us("hgx-a100", nodes=2, bw_scale=0.6), ranks=16, nodes=2), "hgx-a100").tables[0]
    assert guessed.cause.kind == "gdr-off" and guessed.cause.guess
    assert re.search(r"GDR off or a slow network\? plateau at 0\.6\d of the predicted busbw", guessed.cause.text)


def test_sockets_told_by_using_network_socket_and_guessed_below_a_third():
    info = [
        "NET/Socket : Using [0]eth0:10.0.0.1<0>",
        "Using network Socket",
        "Channel 00/0 : 7[7] -> 8[0] [send] via NET/Socket/0",
    ]
    slow = times_us("hgx-h100", nodes=2, bw_scale=0.2)
    t = check(nccl_log(slow, ranks=16, nodes=2, info=info), "hgx-h100", nodes=2).tables[0]
    assert t.cause.kind == "socket" and not t.cause.guess
    assert t.cause.text.startswith("network: NCCL ran over its Socket (TCP) transport")
    guessed = check(nccl_log(slow, ranks=16, nodes=2), "hgx-h100").tables[0]
    assert guessed.cause.kind == "socket" and guessed.cause.guess and "Socket speed?" in guessed.cause.text


def test_p2p_disabled_told_by_via_shm_and_guessed_from_the_shm_curve():
    system = CAT.system("l40s-pcie-p2p")
    no_p2p = replace(system, pcie=replace(system.pcie, gpu_p2p=False))
    shm = times_us(no_p2p)
    info = [
        "NCCL_P2P_DISABLE set by environment to 1",
        "Channel 00/02 :    0   1   2   3   4   5   6   7",
        "Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",
    ]
    t = check(nccl_log(shm, ranks=8, nodes=1, info=info, device="NVIDIA L40S"), "l40s-pcie-p2p").tables[0]
    assert t.regions[2].median_ratio == pytest.approx(4.0, rel=0.02)  # the model's SHM path is 4x slower
    assert t.cause.kind == "p2p-disabled" and not t.cause.guess and "via SHM" in t.cause.text
    assert "NCCL_P2P_DISABLE=1" in t.cause.text
    guessed = check(nccl_log(shm, ranks=8, nodes=1, device="NVIDIA L40S"), "l40s-pcie-p2p").tables[0]
    assert guessed.cause.kind == "p2p-disabled" and guessed.cause.guess


def test_fewer_channels_told_by_channel_00_04():
    info = [
        "NVLS multicast support is available on dev 0",
        "Channel 00/04 :    0   1   2   3   4   5   6   7",
        "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
    ]
    t = check(nccl_log(times_us("hgx-h100", bw_scale=4 / 16), ranks=8, nodes=1, info=info), "hgx-h100").tables[0]
    assert t.settings.channels == 4 and t.settings.nvls is True
    assert t.cause.kind == "fewer-channels" and not t.cause.guess
    assert "NCCL ran 4 channels, 16 is usual" in t.cause.text and t.cause.expected_ratio == 4.0
    assert t.regions[2].median_ratio == pytest.approx(4.0, rel=0.05)


def test_nvls_off_told_by_info_lines_without_nvls_and_guessed_at_ring_speed():
    ring = times_us("hgx-h100", algo="ring")
    info = ["Channel 00/16 :    0   1   2   3   4   5   6   7", "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read"]
    t = check(nccl_log(ring, ranks=8, nodes=1, info=info), "hgx-h100", tolerance=0.15).tables[0]
    assert t.cause.kind == "nvls-off" and not t.cause.guess and t.settings.nvls is False
    assert t.cause.expected_ratio == pytest.approx(t.regions[2].median_ratio, rel=0.02)
    guessed = check(nccl_log(ring, ranks=8, nodes=1), "hgx-h100", tolerance=0.15).tables[0]
    assert guessed.cause.kind == "nvls-off" and guessed.cause.guess and "ring/tree speed" in guessed.cause.text


def test_nccl_proto_simple_explains_a_slow_latency_floor():
    simple = times_us("hgx-h100", protocol="simple")
    t = check(nccl_log(simple, ranks=8, nodes=1, info=["NCCL_PROTO set by environment to Simple"]), "hgx-h100").tables[
        0
    ]
    assert t.regions[0].verdict == "slow" and t.regions[2].verdict == "ok"
    assert t.cause.kind == "nccl-algo" and t.cause.region == "latency floor" and "NCCL_PROTO=Simple" in t.cause.text
    plain = check(nccl_log(simple, ranks=8, nodes=1), "hgx-h100").tables[0]
    assert plain.cause.kind == "overhead" and plain.cause.guess


def test_a_noisy_run_is_called_erratic():
    t_us = times_us("hgx-h100")
    for i in (5, 9):  # two sizes 6x slow: the medians hold, a note says the run is jumpy
        t_us[i] *= 6
    t = check(nccl_log(t_us, ranks=8, nodes=1), "hgx-h100").tables[0]
    assert t.ok and any(n.startswith("erratic: ") and "4 times" in n for n in t.notes)  # each spike: two jumps
    for i in (12, 14):  # and now half the plateau too: it fails, and erratic is the first cause
        t_us[i] *= 6
    t = check(nccl_log(t_us, ranks=8, nodes=1), "hgx-h100").tables[0]
    assert not t.ok and t.cause.kind == "erratic" and "8 times" in t.cause.text


def test_faster_than_the_model_says_so():
    t = check(nccl_log(times_us("hgx-h100", bw_scale=2.0), ranks=8, nodes=1), "hgx-h100").tables[0]
    assert t.regions[2].verdict == "fast" and t.cause.kind == "faster" and "shardbudget fit" in t.cause.text


def test_info_lines_belong_to_the_table_they_precede():
    good = nccl_log(times_us("hgx-h100"), ranks=8, nodes=1)
    bad = nccl_log(
        times_us("hgx-h100", bw_scale=0.25),
        ranks=8,
        nodes=1,
        info=["NVLS multicast support is available on dev 0", "Channel 00/04 :    0   1   2   3"],
    )
    result = check(good + bad, "hgx-h100")
    first, second = result.tables
    assert first.ok and first.settings.channels is None
    assert not second.ok and second.cause.kind == "fewer-channels"
    # a table left out by --gpus keeps its INFO lines: they do not reach the next table
    four = nccl_log(times_us("hgx-h100", gpus=4), ranks=4, nodes=1, info=["Channel 00/02 :    0   1   2   3"])
    kept = check(four + good, "hgx-h100", gpus=8).tables
    assert len(kept) == 1 and kept[0].settings.channels is None and kept[0].settings.info_lines == 0


# --- requests and bad input -----------------------------------------------------------------------


def test_gpus_selects_tables_and_refuses_a_log_without_that_count():
    text = nccl_log(times_us("hgx-h100"), ranks=8, nodes=1) + nccl_log(times_us("hgx-h100", gpus=4), ranks=4, nodes=1)
    assert [t.ranks for t in check(text, "hgx-h100").tables] == [8, 4]
    assert [t.ranks for t in check(text, "hgx-h100", gpus=4).tables] == [4]
    with pytest.raises(MeasureError, match="synthetic.log is a log of 4 and 8 GPUs, not --gpus 2"):
        check(text, "hgx-h100", gpus=2)


def test_nodes_override_and_inference_are_noted():
    text = nccl_log(times_us("gb200-nvl72", gpus=72), ranks=72, nodes=18)  # 18 trays of 4 GPUs
    t = check(text, "gb200-nvl72", nodes=1).tables[0]
    assert t.ok and t.nodes == 1 and "the log says 18 nodes; checked as 1 (--nodes)" in t.notes
    with pytest.raises(PlanError, match="does not fit hgx-h100"):
        check(nccl_log(times_us("hgx-h100"), ranks=8, nodes=1), "hgx-h100", nodes=3)


@pytest.mark.parametrize(
    ("kw", "error", "text"),
    [
        ({"system": "hgx-h10"}, UnknownNameError, "did you mean 'hgx-h100'"),
        ({"system": "hgx-h100", "tolerance": 0}, PlanError, "--tolerance must be a fraction above 0"),
        ({"system": "hgx-h100", "gpus": 0}, PlanError, "--gpus must be a whole number"),
    ],
)
def test_bad_requests(kw, error, text):
    with pytest.raises(error, match=text):
        check_text(nccl_log(times_us("hgx-h100"), ranks=8, nodes=1), **kw)


def test_cli_exit_codes_text_and_json(tmp_path, capsys):
    good, bad = tmp_path / "good.log", tmp_path / "bad.log"
    good.write_text(nccl_log(times_us("hgx-h100"), ranks=8, nodes=1))
    bad.write_text(nccl_log(times_us("hgx-h100", bw_scale=0.25), ranks=8, nodes=1))
    assert cli.main(["check", str(good), "--system", "HGX-H100"]) == 0
    out = capsys.readouterr().out
    assert "bandwidth plateau: OK" in out and out.rstrip().endswith(
        "check: OK: every region within ±25 % of hgx-h100 (exit 0)"
    )
    assert cli.main(["check", str(good), str(bad), "--system", "hgx-h100"]) == 1
    out = capsys.readouterr().out
    assert out.count("\ncause: ") == 1 and "FAIL: 1 of 2 table(s)" in out
    assert cli.main(["check", str(bad), "--system", "hgx-h100", "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["exit_code"] == 1 and d["tables"][0]["cause"]["kind"] == "fewer-channels"
    assert {"region", "verdict", "median_ratio", "sizes"} <= set(d["tables"][0]["regions"][2])
    assert cli.main(["check", str(good), "--system", "hgx-h100", "--gpus", "4"]) == 2
    assert capsys.readouterr().err == "error: good.log is a log of 8 GPUs, not --gpus 4\n"


def test_a_log_whose_nodes_are_nvl72_trays_is_read_as_its_nvlink_domains(data_dir):
    """nccl_15 (CoreWeave GB200): 72 ranks on 18 'nodes' of 4 GPUs, the racks' compute trays (issue 34:
    it failed FAST 0.24x by default and passed only with --nodes 1 --gpus 72). A log whose nodes hold
    gb200-nvl72's 4-GPU hosts is read as that many NVLink domains by default, said in a note: one rack
    of 72 is within 1.00x, two racks of 144 within 1.02x; --nodes 18 still prices each tray as a node."""
    from shardbudget.measure.analysis.check import check_logs

    log = data_dir / "raw" / "nccl_15_coreweave_gb200.txt"
    result = check_logs([log], system="gb200-nvl72", gpus=72)
    t = result.tables[0]
    assert (t.ranks, t.nodes) == (72, 1) and t.ok and result.exit_code == 0
    assert any("18 nodes of 4 GPUs are gb200-nvl72's 4-GPU hosts" in n and "--nodes 18" in n for n in t.notes)
    two = check_logs([log], system="gb200-nvl72", gpus=144).tables[0]
    assert (two.ranks, two.nodes) == (144, 2) and two.ok
    trays = check_logs([log], system="gb200-nvl72", nodes=18, gpus=72).tables[0]
    assert trays.nodes == 18 and not trays.ok
    # a log of 2 GPUs on each of 2 L40S boxes really crossed the network: a note, no such cause
    l40s = check_logs([data_dir / "raw" / "nccl_08_l40s_2node_2gpu_rdma.txt"], system="l40s-pcie-nps1-degraded").tables[
        0
    ]
    assert any("2 GPUs per node" in n for n in l40s.notes) and all(c.kind != "node-shape" for c in l40s.causes)


def test_a_run_on_some_gpus_of_one_node_is_not_a_node_mismatch(data_dir, capsys):
    """Issue 24, item 2 re-checked: a 2-GPU run on one 8-GPU RTX 4090 box crossed no network; it was
    noted as '1 nodes of 2 GPUs, every ring crossing the network'. The GB200 log's first run passes
    by default and as `--nodes 1 --gpus 72`, and `--nodes 1` alone names --gpus."""
    from shardbudget.measure.analysis.check import check_logs

    one = check_logs([data_dir / "raw" / "nccl_10_rtx4090_docker_2gpu.txt"], system="rtx4090-pcie").tables[0]
    assert (one.ranks, one.nodes) == (2, 1) and not any("GPUs per node" in n or "1 nodes" in n for n in one.notes)
    gb = data_dir / "raw" / "nccl_15_coreweave_gb200.txt"
    assert check_logs([gb], system="gb200-nvl72").tables[0].cause is None
    assert cli.main(["check", str(gb), "--system", "gb200-nvl72", "--nodes", "1", "--gpus", "72"]) == 0
    capsys.readouterr()
    assert cli.main(["check", str(gb), "--system", "gb200-nvl72", "--nodes", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "give --gpus to check one run of the log, or --nodes 2" in err
