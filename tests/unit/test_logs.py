"""shardbudget.measure.logs.read: reading nccl-tests / rccl-tests logs and shardbudget JSON.

Three kinds of evidence:

* every transcription in ``data/raw/*.txt`` parses, and its out-of-place (size, time) pairs
  are exactly the rows ``data/nccl_tests.csv`` holds for the same source (mapping below);
* numbers a reader can check by hand against those files (busbw = size/time x 2(n-1)/n, ...);
* small synthetic logs written here, one per quirk of real output, and fuzzing: whatever the bytes,
  the reader returns a MeasurementSet or raises MeasureError, never anything else.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter

import pytest
from shardbudget.calibrate.paths import DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardbudget.comm.op import busbw_factor, parse_op
from shardbudget.errors import MeasureError, ShardbudgetError
from shardbudget.measure.logs.read import (
    OPS,
    MeasurementSet,
    Sample,
    parse_log_text,
    read_log,
    read_logs,
    summarize,
)

RAW_FILES = sorted((DATA / "raw").glob("*.txt"))


# --- busbw factor (the one definition, collective_op.busbw_factor, as the reader uses it) --------


@pytest.mark.parametrize(
    ("op", "n", "factor"),
    [
        ("all-reduce", 8, 1.75),  # 2(n-1)/n
        ("all-reduce", 16, 1.875),
        ("all-reduce", 2, 1.0),
        ("all-gather", 8, 0.875),  # (n-1)/n
        ("reduce-scatter", 4, 0.75),
        ("all-to-all", 2, 0.5),
        ("broadcast", 8, 1.0),  # 1
        ("reduce", 8, 1.0),
        ("send/recv", 2, 1.0),
        ("all-reduce", 1, 0.0),  # nccl-tests prints busbw 0 on one rank
        ("all-gather", 1, 0.0),
    ],
)
def test_busbw_factor_follows_nccl_tests_performance_md(op, n, factor):
    assert busbw_factor(op, n) == pytest.approx(factor, rel=1e-12)


def test_busbw_factor_matches_a_published_row():
    # nccl_01 (A3 Mega, 16 ranks), 8 GiB row: algbw 180.71, busbw 338.82 GB/s, both rounded to
    # 0.01 GB/s, so the product may be off by 0.005 x 1.875 + 0.005 = 0.0144.
    assert 180.71 * busbw_factor("all-reduce", 16) == pytest.approx(338.82, abs=0.0144)


NO_OP_JSON = '{"tool": "shardbudget", "world_size": 2, "results": [{"bytes": 8, "time_s": 1e-05}]}'


@pytest.mark.parametrize("name", ["all_reduce", "AllReduce", "allreduce", "all_reduce_perf", "ALL-REDUCE"])
def test_op_spellings(name):
    assert parse_op(name) == "all-reduce"
    assert busbw_factor(name, 8) == 1.75
    log = parse_log_text(NO_OP_JSON, default_op=name)  # the reader takes every spelling
    assert [s.op for s in log.samples] == ["all-reduce"]


def test_unknown_op_and_bad_rank_count_are_measure_errors():
    with pytest.raises(MeasureError, match="did you mean 'all-reduce'"):
        parse_log_text(NO_OP_JSON, default_op="all-reduc")
    for bad in (0, -1, 2.5, True, "8"):
        with pytest.raises(MeasureError, match="n_ranks"):
            parse_log_text(NO_OP_JSON, n_ranks=bad)
    assert set(OPS) == {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "reduce", "send/recv"}


# --- the real transcriptions --------------------------------------------------------------------

# Which raw file holds which `source` rows of nccl_tests.csv (matched by the text below appearing in
# the file's '@source' lines and in the CSV's `source` column), how many out-of-place rows the file
# has, and what part of the original table the file is.
RAW_TO_CSV = {
    "nccl_01_a3mega_2node.txt": (["lessizzmore/create-a3mega-ztan-fork"], 31, "full sweep 8 B..8 GiB"),
    "nccl_02_h100_1node_8gpu_large.txt": (
        ["'# Single Node NCCL Test' README"],
        4,
        "partial: only 256 MiB..2 GiB were run",
    ),
    "nccl_03_mi300x_1node.txt": (["(AAC8 Kubernetes)"], 31, "full sweep 8 B..8 GiB"),
    "nccl_05_mi325x_multinode.txt": (
        ["(AAC11 MI325X Slurm)"],
        12,
        "partial excerpt: 4 runs (1/2/4/8 nodes), only 4..16 GiB (egrep)",
    ),
    "nccl_06_mi355x_2node_pollara.txt": (["(AAC14 MI355X with Pollara 400 Slurm)"], 31, "full sweep"),
    "nccl_07_l40s_2node_socket.txt": (["section NCCL Test Example, run 1"], 31, "full sweep"),
    "nccl_08_l40s_2node_2gpu_rdma.txt": (["section NCCL Test Example, run 2"], 31, "full sweep"),
    "nccl_09_h200_2node_socket_ring.txt": (["section NCCL Test Example, run 3"], 32, "full sweep to 16 GiB"),
    "nccl_10_rtx4090_docker_2gpu.txt": (["Docker run, 2 GPUs"], 29, "full sweep 8 B..2 GiB"),
    "nccl_11_rtx4090_docker_4gpu.txt": (["Docker run, 4 GPUs"], 29, "full sweep 8 B..2 GiB"),
    "nccl_12_rtx4090_k8s_2gpu.txt": (["Kubernetes pod, 2 GPUs"], 29, "full sweep 8 B..2 GiB"),
    "nccl_14_coreweave_h100_64gpu_sharp.txt": (
        ["nccl-test-distributed-h100-64-sharp-mpijob"],
        5,
        "partial excerpt: large sizes only",
    ),
    "nccl_15_coreweave_gb200.txt": (
        ["'Expected Performance / GB200'"],
        17,
        "partial excerpt: 3 runs (1, 2, 20 racks), large sizes only",
    ),
    "nccl_16_gcm_a100.txt": (["facebookresearch/gcm"], 12, "2 test fixtures (1 and 2 nodes), 32 MiB..1 GiB"),
    "nccl_17_h100_2node_dgx0607.txt": (["cnh@dgx-06"], 32, "full sweep; mid sizes erratic (flagged run)"),
    "nccl_18_h100_2node_readme.txt": (["'# Multiple Nodes NCCL Test' README"], 6, "partial: 256 MiB..8 GiB"),
    "nccl_19_issue_excerpts.txt": (
        [
            "nccl/issues/1244",
            "nccl/issues/652",
            "nccl-tests/issues/150",
            "nccl/issues/378",
            "nccl/issues/428",
            "nccl/issues/1530",
            "pytorch/issues/127077",
            "nccl-tests/issues/194",
        ],
        34,
        "partial excerpts: first rows of 10 tables from 8 GitHub issues",
    ),
    "nccl_20_h200_misc.txt": (
        ["'sampleNCCLOutput'", "Azure ND H200 v5"],
        31,
        "a full noisy 2 B..1 GiB sweep, then a single 8 GiB row",
    ),
}


def _csv_rows() -> list[dict]:
    with open(DATA / "nccl_tests.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_the_mapping_covers_every_raw_file():
    assert sorted(RAW_TO_CSV) == [p.name for p in RAW_FILES]


@pytest.mark.parametrize("path", RAW_FILES, ids=lambda p: p.name)
def test_raw_file_matches_its_csv_rows(path):
    keys, n_rows, _what = RAW_TO_CSV[path.name]
    ms = read_log(path)
    file_sources = {r["annotations"]["source"] for r in ms.env["runs"]}
    assert all(any(k in s for s in file_sources) for k in keys)
    rows = [r for r in _csv_rows() if r["source"] in file_sources]
    assert rows and all(any(k in r["source"] for k in keys) for r in rows)
    out_of_place = [s for s in ms.samples if not s.in_place]
    assert len(out_of_place) == len(rows) == n_rows
    # Same (size, time) pairs, with the world size and node count the CSV states for each row.
    got = Counter((s.msg_bytes, round(s.time_s * 1e6, 6), s.n_ranks, s.n_nodes) for s in out_of_place)
    want = Counter((float(r["size_bytes"]), float(r["time_us"]), int(r["n_gpus"]), int(r["n_nodes"])) for r in rows)
    assert got == want


@pytest.mark.parametrize("path", RAW_FILES, ids=lambda p: p.name)
def test_raw_file_busbw_rederives_within_2_percent(path):
    # The reader warns when the file's algbw/busbw differ from size/time x factor(op, n) by > 2%;
    # no real file should trigger it, so op and rank count were read right everywhere.
    ms = read_log(path)
    assert ms.samples and ms.tool in ("nccl-tests", "rccl-tests")
    assert not [w for w in ms.warnings if "differ by more than 2%" in w]
    assert all(s.op == "all-reduce" and s.time_s > 0 and s.source.startswith(str(path)) for s in ms.samples)


def test_hand_checked_row_of_nccl_01():
    # '8589934592 ... 47535 180.71 338.82 0 47743 179.92 337.35 0', 16 ranks on 2 nodes.
    ms = read_log(DATA / "raw" / "nccl_01_a3mega_2node.txt")
    top = [s for s in ms.samples if s.msg_bytes == 8589934592]
    assert [s.in_place for s in top] == [False, True]
    assert top[0].time_s == pytest.approx(47535e-6, rel=1e-12)
    assert top[0].algbw_bytes_per_s == pytest.approx(180.71e9, rel=1e-4)
    assert top[0].busbw_bytes_per_s == pytest.approx(338.82e9, rel=1e-4)
    assert top[1].time_s == pytest.approx(47743e-6, rel=1e-12)
    assert (top[0].n_ranks, top[0].n_nodes, top[0].dtype, top[0].redop) == (16, 2, "float", "sum")
    assert summarize(ms) == "all-reduce, 16 ranks on 2 nodes, 8 B..8 GiB, 31 sizes"


def test_summary_of_a_file_that_names_its_nccl_version():
    ms = read_log(DATA / "raw" / "nccl_09_h200_2node_socket_ring.txt")
    assert summarize(ms) == "all-reduce, 16 ranks on 2 nodes, 8 B..16 GiB, 32 sizes, NCCL 2.27.3"
    assert ms.env["nccl_version"] == "2.27.3+cuda12.9"


def test_quirks_of_the_real_files():
    raw = DATA / "raw"
    # rccl-tests prints the nccl-tests layout; the tool is told apart by the text around it.
    assert {
        read_log(raw / f).tool
        for f in ("nccl_03_mi300x_1node.txt", "nccl_05_mi325x_multinode.txt", "nccl_06_mi355x_2node_pollara.txt")
    } == {"rccl-tests"}
    # Several tables in one file stay apart: run index and world size.
    ms = read_log(raw / "nccl_05_mi325x_multinode.txt")
    assert sorted({(s.run, s.n_ranks, s.n_nodes) for s in ms.samples}) == [
        (0, 8, 1),
        (1, 16, 2),
        (2, 32, 4),
        (3, 64, 8),
    ]
    ms = read_log(raw / "nccl_15_coreweave_gb200.txt")
    assert max(s.n_ranks for s in ms.samples) == 1440
    # Old nccl-tests layout (no root column, a float max-error instead of #wrong): '4e-07' is not a
    # wrong-element count, so those rows are kept; one excerpt row shows only out-of-place columns.
    ms = read_log(raw / "nccl_19_issue_excerpts.txt")
    assert len({s.run for s in ms.samples}) == 10
    first = [s for s in ms.samples if s.run == 0]
    assert [s.msg_bytes for s in first if not s.in_place] == [4, 8, 16, 32, 64, 128, 256, 512]
    assert any("only one set of time/algbw/busbw columns" in w for w in ms.warnings)
    # bfloat16 all-reduce starts at 2 bytes (one element).
    ms = read_log(raw / "nccl_20_h200_misc.txt")
    assert ms.samples[0].dtype == "bfloat16" and ms.samples[0].msg_bytes == 2


def test_read_logs_reads_each_path_in_order():
    sets = read_logs(RAW_FILES[:3])
    assert [m.source for m in sets] == [str(p) for p in RAW_FILES[:3]]


# --- synthetic logs: one per quirk of real output -------------------------------------------------

HEADER = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
LABELS = "#                                                              out-of-place                       in-place          "
UNITS = "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       "

# A 2-node all-reduce as nccl-tests 2.17 prints it under mpirun, with NCCL INFO/WARN lines between
# the rows. 16 ranks: busbw = size/time x 2*15/16.
FULL_LOG = f"""\
$ mpirun -np 16 -npernode 8 \\
    -x NCCL_DEBUG=INFO \\
    /opt/nccl-tests/build/all_reduce_perf -b 1M -e 4M -f 2 -g 1
# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22703
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   6899 on     node-a device  0 [0000:04:00] NVIDIA H100 80GB HBM3
#  Rank  7 Group  0 Pid   6906 on     node-a device  7 [0000:8c:00] NVIDIA H100 80GB HBM3
#  Rank  8 Group  0 Pid   6733 on     node-b device  0 [0000:04:00] NVIDIA H100 80GB HBM3
#  Rank 15 Group  0 Pid   6740 on     node-b device  7 [0000:8c:00] NVIDIA H100 80GB HBM3
node-a:6899:6899 [0] NCCL INFO NCCL version 2.27.3+cuda12.9
{LABELS}
{HEADER}
{UNITS}
     1048576        262144     float     sum      -1    200.0    5.24    9.83      0    201.0    5.22    9.78      0
node-b:6733:6790 [0] NCCL INFO Channel 00/0 : 8[0] -> 9[1] via P2P/IPC
node-a:6899:6911 [0] NCCL WARN NET/IB : Got async event : port error
     2097152        524288     float     sum      -1    250.0    8.39   15.73      0    250.0    8.39   15.73      0
     4194304       1048576     float     sum      -1    400.0   10.49   19.66      0    400.0   10.49   19.66      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 15.0573
#
# Collective test concluded: all_reduce_perf
"""


def _parse(text: str, **kw) -> MeasurementSet:
    return parse_log_text(text, source="log.txt", **kw)


def test_full_log_with_interleaved_nccl_lines():
    ms = _parse(FULL_LOG)
    assert ms.tool == "nccl-tests" and not ms.warnings
    assert len(ms.samples) == 6
    s = ms.samples[0]
    assert (s.op, s.n_ranks, s.n_nodes, s.graph, s.dtype, s.redop) == ("all-reduce", 16, 2, False, "float", "sum")
    assert s.time_s == pytest.approx(200e-6) and s.source == "log.txt:17"
    assert s.busbw_bytes_per_s == pytest.approx(1048576 / 200e-6 * 1.875)
    assert ms.env["nccl_version"] == "2.27.3+cuda12.9" and ms.env["nccl_tests_version"] == "2.17.6"
    assert ms.env["hostnames"] == ["node-a", "node-b"]
    assert ms.env["devices"] == ["NVIDIA H100 80GB HBM3"]
    assert "all_reduce_perf -b 1M" in ms.env["command"]
    assert ms.env["runs"][0]["avg_busbw_bytes_per_s"] == pytest.approx(15.0573e9)
    assert summarize(ms) == "all-reduce, 16 ranks on 2 nodes, 1 MiB..4 MiB, 3 sizes, NCCL 2.27.3"


def test_ranks_and_nodes_from_the_command_line_alone():
    cases = {
        "mpirun -np 16 -npernode 8 ./all_reduce_perf -b 8 -e 8M -g 1": (16, 2),
        "mpirun --hostfile hosts -n 2 all_reduce_perf -b 8 -e 16384M -f 2 -g 8 -n 30": (16, None),
        "srun -N 2 --ntasks-per-node=4 ./build/all_reduce_perf -b 8 -e 1G -g 1": (8, 2),
        "mpirun -np 8 --map-by ppr:4:node ./all_reduce_perf -g 1": (8, 2),
        "NCCL_ALGO=Ring ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4": (4, 1),
    }
    row = "     1048576        262144     float     sum      -1    200.0    5.24    9.83      0    201.0    5.22    9.78      0"
    for command, (ranks, nodes) in cases.items():
        s = _parse(f"{command}\n{row}\n").samples[0]
        assert (s.n_ranks, s.n_nodes) == (ranks, nodes), command


TRUNCATED = f"""\
./all_reduce_perf -b 1M -e 8M -f 2 -g 8
# nThread 1 nGpus 8 minBytes 1048576 maxBytes 8388608 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
{HEADER}
     1048576        262144     float     sum      -1    100.0   10.49   18.35      0    100.0   10.49   18.35      0
     2097152        524288     float     sum      -1    150.0   13.98   24.47      0    150.0   13.98   24.47      0
     4194304       1048576     float     sum      -1    250.0   16.78   29.36      0    250.0   16.78   29.36      0
     8388608       2097152     float     sum      -1    400.0   20."""


def test_truncated_file_keeps_earlier_rows_and_warns():
    ms = _parse(TRUNCATED)
    assert sorted({s.msg_bytes for s in ms.samples}) == [1048576, 2097152, 4194304]
    assert any("log.txt:7: the last row is cut mid-line" in w and "up to 4 MiB" in w for w in ms.warnings)
    assert any("no '# Avg bus bandwidth' footer" in w for w in ms.warnings)


# rccl-tests -O 0: only in-place columns; rank lines without 'Group'; rccl's asterisk on errors.
RCCL_IN_PLACE = """\
# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
rccl-tests: Version develop:a7809b3
# Using devices
#   Rank  0 Pid  78515 on   mi300-1 device  0 [0000:05:00.0] AMD Instinct MI300X
#   Rank  1 Pid  78516 on   mi300-1 device  1 [0000:27:00.0] AMD Instinct MI300X
RCCL version : 2.20.5-heads/drop/2024-07:c3b8de4
#
#                                                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)
        1024           256     float     sum      -1    13.67    0.07    0.07      0
        2048           512     float     sum      -1    13.67    0.15    0.15      0
        4096          1024     float     sum      -1    13.72    0.30    0.30     3*
# Errors with asterisks indicate errors that have exceeded the maximum threshold.
# Out of bounds values : 1 FAILED
# Avg bus bandwidth    : 0.173
"""


def test_rccl_in_place_only_table():
    ms = _parse(RCCL_IN_PLACE, default_op="all-reduce")
    assert ms.tool == "rccl-tests"
    assert [(s.msg_bytes, s.in_place, s.n_ranks) for s in ms.samples] == [(1024, True, 2), (2048, True, 2)]
    assert any("dropped 1 result(s) with '#wrong' != 0" in w for w in ms.warnings)
    assert any("does not name the collective" in w for w in ms.warnings)
    assert summarize(ms) == "all-reduce, 2 ranks on 1 node, 1 KiB..2 KiB, 2 sizes, RCCL 2.20.5"


def test_blank_out_of_place_columns_mean_in_place_only():
    # nccl-tests pads the out-of-place columns with spaces when it only runs in-place.
    row = "     1048576        262144     float     sum      -1" + " " * 32 + "    100.0   10.49   10.49      0"
    ms = _parse(f"./all_reduce_perf -g 2\n{row}\n")
    assert [(s.in_place, s.time_s) for s in ms.samples] == [(True, pytest.approx(100e-6))]


# Two runs pasted one after the other; the second one says less about itself.
TWO_TABLES = f"""\
./build/all_gather_perf -b 1M -e 2M -f 2 -g 4
{HEADER}
     1048576         65536     float    none      -1    100.0   10.49    7.86      0    100.0   10.49    7.86    N/A
     2097152        131072     float    none      -1    150.0   13.98   10.49      0    150.0   13.98   10.49    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 9.2
./build/alltoall_perf -b 1M -e 1M -g 8 -G 1
{HEADER}
     1048576         32768     float    none      -1    100.0   10.49    9.18      0    100.0   10.49    9.18      0
"""


def test_two_tables_in_one_file_stay_apart():
    ms = _parse(TWO_TABLES)
    assert [(s.run, s.op, s.n_ranks, s.graph, s.redop) for s in ms.samples if not s.in_place] == [
        (0, "all-gather", 4, False, None),
        (0, "all-gather", 4, False, None),
        (1, "all-to-all", 8, True, None),
    ]
    # all-gather busbw = size/time x (n-1)/n, the file's 7.86 GB/s for 1 MiB in 100 us on 4 ranks.
    assert ms.samples[0].busbw_bytes_per_s == pytest.approx(7.86e9, rel=2e-3)
    assert [r["op"] for r in ms.env["runs"]] == ["all-gather", "all-to-all"]
    assert summarize(ms).startswith("all-gather, all-to-all, 2 runs, 4..8 ranks on 1 node")


def test_second_table_without_header_inherits_and_says_so():
    row = "     1048576        262144     float     sum      -1    200.0    5.24    9.83      0    201.0    5.22    9.78      0"
    ms = _parse(FULL_LOG + f"\n{HEADER}\n{row}\n")
    assert {(s.run, s.n_ranks, s.n_nodes) for s in ms.samples} == {(0, 16, 2), (1, 16, 2)}
    assert any("assumed 16 ranks like the table before" in w for w in ms.warnings)


def test_sizes_out_of_order_are_sorted_with_a_warning():
    text = """./broadcast_perf -g 4
     4194304       1048576     float    none       0    250.0   16.78   16.78      0    250.0   16.78   16.78      0
     1048576        262144     float    none       0    100.0   10.49   10.49      0    100.0   10.49   10.49      0
"""
    ms = _parse(text)
    assert [s.msg_bytes for s in ms.samples] == [1048576, 1048576, 4194304, 4194304]
    assert [s.source for s in ms.samples[:2]] == ["log.txt:3", "log.txt:3"]
    assert any("sizes go down" in w for w in ms.warnings)


def test_graph_runs_are_flagged():
    row = "     1048576        262144     float     sum      -1    200.0    5.24    9.83      0    201.0    5.22    9.78      0"
    assert _parse(f"all_reduce_perf -b 8 -e 1M -g 16 -G 10\n{row}\n").samples[0].graph
    assert _parse(FULL_LOG.replace("graph: 0", "graph: 1")).samples[0].graph
    assert _parse(f"Using CUDA graphs\nall_reduce_perf -g 16\n{row}\n").samples[0].graph
    assert not _parse(f"all_reduce_perf -g 16\n{row}\n").samples[0].graph


def test_old_layout_without_root_and_with_error_column():
    text = """./all_gather_perf -g 8
#                                       out-of-place                    in-place
#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error
     1048576         16384   float    100.0   10.49    9.18  0e+00    100.0   10.49    9.18  4e-07
"""
    ms = _parse(text)
    assert [(s.op, s.n_ranks, s.redop, s.in_place) for s in ms.samples] == [
        ("all-gather", 8, None, False),
        ("all-gather", 8, None, True),
    ]
    assert not ms.warnings


def test_launcher_prefixes_timestamps_and_utf16():
    row = "     1048576        262144     float     sum      -1    200.0    5.24    9.83      0    201.0    5.22    9.78      0"
    tagged = f"[1,0]<stdout>:all_reduce_perf -g 16\n[1,0]<stdout>:{row}\n"
    assert len(_parse(tagged).samples) == 2
    labelled = f"0: all_reduce_perf -g 16\n0: {row}  2025-01-02 03:04:05\n"
    assert len(_parse(labelled).samples) == 2
    utf16 = f"all_reduce_perf -g 16\r\n{row}\r\n".encode("utf-16")
    assert len(parse_log_text(utf16, source="ps.txt").samples) == 2


def test_rank_count_from_busbw_ratio_when_nothing_else_says():
    # No command, no header: 16 ranks is the only n with 2(n-1)/n = 338.82/180.71 at 0.01 GB/s rounding.
    row = "  8589934592    2147483648     float     sum      -1    47535  180.71  338.82      0    47743  179.92  337.35      0"
    ms = _parse(row + "\n")
    assert ms.samples[0].n_ranks == 16 and ms.samples[0].n_nodes is None
    assert any("16 ranks inferred from the file's busbw/algbw ratio" in w for w in ms.warnings)
    assert any("assumed all-reduce" in w for w in ms.warnings)


def test_overrides_and_defaults():
    row = "     1048576        262144     float    none      -1    200.0    5.24    5.24      0    201.0    5.22    5.22      0"
    ms = _parse(row + "\n", default_op="broadcast", n_ranks=4)
    assert (ms.samples[0].op, ms.samples[0].n_ranks) == ("broadcast", 4)
    with pytest.raises(MeasureError, match="cannot tell how many ranks.*pass n_ranks="):
        _parse(row + "\n", default_op="broadcast")
    with pytest.raises(MeasureError, match="unknown collective"):
        _parse(row + "\n", default_op="allreduc")


def test_wrong_elements_are_dropped_and_not_applicable_is_kept():
    text = """./all_reduce_perf -g 2
     1048576        262144     float     sum      -1    100.0   10.49   10.49      5    100.0   10.49   10.49    N/A
"""
    ms = _parse(text)
    assert [s.in_place for s in ms.samples] == [True]
    assert any("dropped 1 result(s) with '#wrong' != 0" in w for w in ms.warnings)


def test_unsupported_collective_is_skipped():
    row = "     1048576        262144     float    none       0    200.0    5.24    5.24      0    201.0    5.22    5.22      0"
    with pytest.raises(MeasureError, match="'scatter' is not a collective"):
        _parse(f"./scatter_perf -g 4\n{row}\n")


# --- errors --------------------------------------------------------------------------------------


def test_missing_empty_binary_and_directory(tmp_path):
    with pytest.raises(MeasureError, match="nope.txt: no such file"):
        read_log(tmp_path / "nope.txt")
    (tmp_path / "empty.txt").write_text("  \n\n")
    with pytest.raises(MeasureError, match="empty.txt: the file is empty"):
        read_log(tmp_path / "empty.txt")
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(MeasureError, match="blob.bin: looks like a binary file"):
        read_log(tmp_path / "blob.bin")
    with pytest.raises(MeasureError, match="is a directory"):
        read_log(tmp_path)


def test_no_rows_message_names_file_and_expected_line(tmp_path):
    p = tmp_path / "results.txt"
    p.write_text("# nThread 1 nGpus 8\nNCCL INFO nothing to see\n")
    with pytest.raises(MeasureError) as e:
        read_log(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: no nccl-tests data rows found (expected lines like '  8  2  float")
    assert "\n" not in msg


# --- shardbudget JSON ----------------------------------------------------------------------------

HARNESS_JSON = {
    "tool": "shardbudget",
    "version": "0.1.0",
    "env": {"torch": "2.13.0", "hostname": "box"},
    "op": "all-reduce",
    "world_size": 2,
    "n_nodes": 1,
    "backend": "gloo",
    "dtype": "float32",
    "results": [
        {"bytes": 1024, "median_s": 2.0e-5, "min_s": 1.8e-5, "p99_s": 3e-5, "samples_s": [2e-5]},
        {"bytes": 8, "time_s": 1.2e-5, "algbw_bytes_per_s": 666666.7, "busbw_bytes_per_s": 666666.7},
        {"bytes": "lots", "time_s": 1.0},
        {"bytes": 2048, "time_s": 3e-5, "wrong": 2, "wrong_by_rank": [0, 2]},
    ],
    "complete": False,
    "error": "rank 1 exited at 4 KiB",
}


@pytest.mark.parametrize("dtype", ["float32", "fp32"])
def test_shardbudget_json_with_either_dtype_spelling(dtype):
    # the harness wrote torch's name (float32) before dtypes had one vocabulary, fp32 since
    ms = _parse(json.dumps({**HARNESS_JSON, "dtype": dtype}))
    assert [(s.msg_bytes, s.dtype) for s in ms.samples] == [(8, dtype), (1024, dtype)]
    assert ms.env["dtype"] == dtype


def test_shardbudget_json(tmp_path):
    p = tmp_path / "run.anything"  # detected by content, not extension
    p.write_text(json.dumps(HARNESS_JSON))
    ms = read_log(p)
    assert ms.tool == "shardbudget"
    assert [(s.msg_bytes, s.time_s) for s in ms.samples] == [(8, 1.2e-5), (1024, 2.0e-5)]
    s = ms.samples[1]
    assert (s.op, s.n_ranks, s.n_nodes, s.dtype) == ("all-reduce", 2, 1, "float32")
    assert s.busbw_bytes_per_s == pytest.approx(1024 / 2e-5)  # factor 1 on two ranks
    assert s.source == f"{p}:results[0]"
    assert ms.env["backend"] == "gloo" and ms.env["torch"] == "2.13.0"
    assert any("results[2]" in w for w in ms.warnings)
    assert any("results[3]: 2 wrong element(s)" in w for w in ms.warnings)
    assert any("did not complete (rank 1 exited at 4 KiB)" in w for w in ms.warnings)
    assert summarize(ms) == "all-reduce, 2 ranks on 1 node, 8 B..1 KiB, 2 sizes, gloo"


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('{"tool": "other", "results": []}', "JSON of another shape"),
        ("[1, 2, 3]", "JSON of another shape"),
        ('{"config": {}, "results": []}', "nccl-tests JSON without a usable config"),
        ('{"version": 3, "config": {"ngpus": 8}, "results": []}', "nccl-tests JSON with no usable results"),
        ('{"config": 1, "results": []}', "expected nccl-tests' -J output"),
        ('{"tool": "shardbudget", "results": [', "not valid JSON"),
        ('{"tool": "shardbudget", "world_size": 2, "results": []}', "no usable results"),
        ('{"tool": "shardbudget", "results": [{"bytes": 8, "time_s": 1e-5}]}', "world_size"),
        ('{"tool": "shardbudget", "op": "gather", "world_size": 2, "results": []}', "is not a collective"),
        ("[" * 100_000, "not valid JSON"),
    ],
)
def test_bad_json_is_a_measure_error(content, match):
    with pytest.raises(MeasureError, match=match):
        _parse(content)


# --- fuzzing: nothing but MeasureError escapes ---------------------------------------------------


def _must_parse_or_refuse(data: bytes | str) -> None:
    try:
        ms = parse_log_text(data, source="fuzz")
    except MeasureError as e:
        assert "\n" not in str(e)
        return
    assert ms.samples
    for s in ms.samples:
        assert isinstance(s, Sample) and s.op in OPS and s.n_ranks >= 1
        assert s.time_s > 0 and math.isfinite(s.busbw_bytes_per_s) and s.msg_bytes >= 0
    summarize(ms)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_fuzz_arbitrary_bytes(data):
    _must_parse_or_refuse(data)


_FRAGMENTS = (FULL_LOG + TWO_TABLES + RCCL_IN_PLACE + TRUNCATED).splitlines()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(_FRAGMENTS), st.integers(0, 200), st.text(max_size=6)), max_size=30))
def test_fuzz_mangled_real_lines(pieces):
    # Real lines, cut at random points and with random text spliced in: the shapes a damaged log takes.
    _must_parse_or_refuse("\n".join(line[:cut] + junk for line, cut, junk in pieces))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "tool",
                        "op",
                        "world_size",
                        "results",
                        "bytes",
                        "time_s",
                        "median_s",
                        "n_nodes",
                        "env",
                        "dtype",
                        "in_place",
                    ]
                ),
                inner,
                max_size=6,
            )
        ),
        max_leaves=20,
    )
)
def test_fuzz_json_shapes(doc):
    if isinstance(doc, dict):
        doc = {"tool": "shardbudget", **doc}
    _must_parse_or_refuse(json.dumps(doc))


def test_errors_are_shardbudget_errors():
    assert issubclass(MeasureError, ShardbudgetError)
