"""nccl-tests' own JSON (-J) and per-iteration timing (-I), read by measure.logs (its `read`).

The format is nccl-tests' ``src/util.cu`` at commit a0b82b2260cf5152b9f8c061bbf7eaf0ba096432 (JSON
version 3). Evidence:

* every real text log in ``data/raw`` is written out as the JSON nccl-tests would have
  written for it (``nccl_json_writer``, same key order and number formats) and read back: the
  samples are the text's, number for number;
* a hand-checkable document with per-iteration times: percentiles follow nccl-tests'
  ``computeIterStats`` (nearest rank), seconds not microseconds, per-process rows kept;
* the -I text columns (i_min, i_max, i_p99, i_cv%) printed with nccl-tests' own format strings;
* damaged or foreign JSON: one-line MeasureErrors, or the completed sizes of a killed run.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nccl_json_writer import document, dumps, from_measurements, per_iter_block, placement, result
from shardbudget.calibrate.paths import RAW

from shardbudget.errors import MeasureError
from shardbudget.measure.logs.read import IterStats, parse_log_text, read_log, read_logs, summarize
from shardbudget.measure.logs.nccl_json import FORMAT_COMMIT, FORMAT_VERSION

RAW_FILES = sorted(RAW.glob("*.txt"))


def _parse(text: str, **kw):
    return parse_log_text(text, source="run.json", **kw)


def test_the_format_is_pinned_to_a_named_commit():
    assert FORMAT_COMMIT == "a0b82b2260cf5152b9f8c061bbf7eaf0ba096432" and FORMAT_VERSION == 3


# --- the real logs, through nccl-tests' schema -------------------------------------------------


@pytest.mark.parametrize("path", RAW_FILES, ids=lambda p: p.name)
def test_every_raw_log_reads_the_same_as_nccl_tests_json(path, tmp_path):
    text = read_log(path)
    docs = from_measurements(text)
    assert docs
    for run, doc in docs:
        out = tmp_path / f"run{run}.json"
        out.write_text(dumps(doc))
        ms = read_log(out)
        assert ms.tool == "nccl-tests"
        want = [s for s in text.samples if s.run == run]
        got = sorted(ms.samples, key=lambda s: (s.msg_bytes, s.dtype, s.redop or "", s.in_place))
        want = sorted(want, key=lambda s: (s.msg_bytes, s.dtype, s.redop or "", s.in_place))
        assert [(s.op, s.msg_bytes, s.n_ranks, s.in_place, s.dtype, s.redop, s.graph) for s in got] == [
            (s.op, s.msg_bytes, s.n_ranks, s.in_place, s.dtype, s.redop, s.graph) for s in want
        ]
        for g, w in zip(got, want):
            assert g.time_s == pytest.approx(w.time_s, rel=1e-12)  # %lf keeps the text's 2 decimals
            assert g.busbw_bytes_per_s == pytest.approx(w.busbw_bytes_per_s, rel=1e-12)
            if w.n_nodes is not None:
                assert g.n_nodes == w.n_nodes
        # the file's own alg_bw / bus_bw agree with size/time on that many ranks: no warnings
        assert not [x for x in ms.warnings if "GB/s in the file" in x]


def test_fit_reads_json_and_text_alike(tmp_path):
    from shardbudget.measure.analysis.fit import fit_profile

    path = next(p for p in RAW_FILES if p.name.startswith("nccl_09"))  # H200, 2 nodes
    text = read_log(path)
    files = []
    for run, doc in from_measurements(text):
        files.append(tmp_path / f"run{run}.json")
        files[-1].write_text(dumps(doc))
    a = fit_profile([text], name="t", base_system="hgx-h200", holdout=False)
    b = fit_profile(read_logs(files), name="t", base_system="hgx-h200", holdout=False)
    da, db = a.params.to_dict(), b.params.to_dict()
    numbers = {k for k, v in da.items() if isinstance(v, float)}
    assert {k: da[k] for k in numbers} == pytest.approx({k: db[k] for k in numbers}, rel=1e-9)
    assert {k: v for k, v in da.items() if k not in numbers} == {k: v for k, v in db.items() if k not in numbers}


# --- a document with per-iteration times, checked by hand --------------------------------------

# 20 iterations of one 1 MiB all-reduce on 2 processes x 8 GPUs; times in us.
TIMES_US = [
    50.0,
    21.0,
    22.0,
    20.0,
    23.0,
    20.5,
    21.5,
    22.5,
    20.0,
    24.0,
    21.0,
    22.0,
    20.0,
    23.0,
    20.5,
    21.5,
    22.5,
    20.0,
    30.0,
    21.0,
]
PROC0 = [t - 1.0 for t in TIMES_US]  # process 0's slowest GPU; process 1 is the straggler
PER_ITER_DOC = document(
    op="all-reduce",
    processes=["node-a", "node-b"],
    ngpus=8,
    per_iter=True,
    skip=1,
    env=["NCCL_ALGO=Ring", "NCCL_P2P_DISABLE=1", "HOME=/root", "SECRET_TOKEN=x"],
    results=[
        result(
            1048576,
            262144,
            "float",
            "sum",
            out=placement(22.0, 47.662545, 89.367273),
            out_iter=per_iter_block(TIMES_US, skip=1, per_process=[PROC0, TIMES_US]),
            inp=placement(22.5, 46.603378, 87.381333),
            in_iter=per_iter_block(TIMES_US, skip=1, per_process=[PROC0, TIMES_US]),
        )
    ],
)


def test_world_size_is_processes_times_gpus_and_nodes_are_hosts():
    ms = _parse(dumps(PER_ITER_DOC))
    assert not ms.warnings, ms.warnings
    out, inp = ms.samples
    assert (out.op, out.n_ranks, out.n_nodes, out.in_place, inp.in_place) == ("all-reduce", 16, 2, False, True)
    assert out.time_s == pytest.approx(22e-6)
    assert out.busbw_bytes_per_s == pytest.approx(1048576 / 22e-6 * 2 * 15 / 16)
    assert out.source == "run.json:results[0].out_of_place"
    assert ms.env["nccl_version"] == "2.27.3"  # nccl-tests writes the code, 22703
    assert ms.env["nccl_env"] == {"NCCL_ALGO": "Ring", "NCCL_P2P_DISABLE": "1"}  # NCCL_* only
    assert ms.env["command"].startswith("./build/all_reduce_perf")
    assert summarize(ms) == (
        "all-reduce, 16 ranks on 2 nodes, 1 MiB, 1 size, per-iteration timing at 2 of 2 results, NCCL 2.27.3"
    )


def test_per_iteration_statistics_follow_compute_iter_stats():
    stats = _parse(dumps(PER_ITER_DOC)).samples[0].per_iter
    assert isinstance(stats, IterStats)
    # Skipping the first (50 us), 19 remain; sorted: 20 x4, 20.5 x2, 21 x3, 21.5 x2, 22 x2, 22.5 x2,
    # 23 x2, 24, 30. p50 = sorted[19 // 2 = 9] = 21.5; p95 = sorted[ceil(19*0.95)-1 = 18] = 30;
    # p99 = sorted[min(18, ceil(18.81)-1)] = 30; mean = 416/19.
    assert (stats.n_iters, stats.skipped) == (19, 1)
    assert stats.min_s == pytest.approx(20e-6) and stats.max_s == pytest.approx(30e-6)
    assert stats.p50_s == pytest.approx(21.5e-6) and stats.p95_s == pytest.approx(30e-6)
    assert stats.p99_s == pytest.approx(30e-6)
    assert stats.mean_s == pytest.approx(416 / 19 * 1e-6, rel=1e-6)
    assert stats.cv == pytest.approx(stats.stddev_s / stats.mean_s, rel=1e-5)
    assert len(stats.times_s) == 20 and stats.times_s[0] == pytest.approx(50e-6)  # skipped one kept
    assert [len(r) for r in stats.per_process_max_s] == [20, 20]
    assert stats.per_process_max_s[0][0] == pytest.approx(49e-6)
    assert json.loads(json.dumps(stats.to_dict()))["p99_s"] == pytest.approx(30e-6)


def test_file_statistics_that_disagree_with_its_times_are_flagged():
    doc = json.loads(dumps(PER_ITER_DOC))
    doc["results"][0]["out_of_place_per_iter"]["p99_us"] = 99.0
    ms = _parse(json.dumps(doc))
    assert ms.samples[0].per_iter.p99_s == pytest.approx(99e-6)  # the file's value is kept ...
    assert any("p99_us 99 differs from the p99 of times_us (30)" in w for w in ms.warnings)  # ... and flagged


def test_version_1_has_no_per_iteration_objects_and_later_versions_warn():
    doc = json.loads(dumps(PER_ITER_DOC))
    for key in ("out_of_place_per_iter", "in_place_per_iter"):
        del doc["results"][0][key]
    ms = _parse(json.dumps({**doc, "version": 1}))
    assert not ms.warnings and all(s.per_iter is None for s in ms.samples)
    ms = _parse(json.dumps({**doc, "version": 4}))
    assert any("JSON version 4 is newer than 3" in w for w in ms.warnings)


def test_nan_inf_null_and_wrong_results():
    doc = document(
        op="all-gather",
        processes=["h"],
        ngpus=4,
        results=[
            result(8, 2, "float", "none", out=None, inp=placement(10.0, 0.0, 0.0)),  # trace replay: in-place only
            result(16, 4, "float", "none", out=placement(float("nan"), 0, 0), inp=None),  # "nan"
            result(32, 8, "float", "none", out=placement(12.0, 0.0, 0.0, wrong=3.0), inp=None),
            result(64, 16, "float", "none", out=placement(12.0, 0.0, 0.0, wrong=None), inp=None),
        ],
    )
    text = dumps(doc).replace('"alg_bw":0.000000', '"alg_bw":inf', 1)  # nccl-tests' %lf of an infinity
    ms = _parse(text)
    assert [(s.msg_bytes, s.in_place) for s in ms.samples] == [(8, True), (64, False)]
    assert ms.samples[0].n_ranks == 4 and ms.samples[0].redop is None
    assert any("inf" in w for w in ms.warnings)
    assert any('results[1].out_of_place: needs "time" > 0' in w for w in ms.warnings)
    assert any("results[2].out_of_place: nwrong 3" in w for w in ms.warnings)


def test_a_killed_run_keeps_every_size_written_in_full():
    doc = document(
        op="all-reduce",
        processes=["a", "b"],
        results=[
            result(8 << k, 2 << k, "float", "sum", out=placement(10.0 + k, 0.0, 0.0), inp=placement(10.0 + k, 0.0, 0.0))
            for k in range(5)
        ],
    )
    text = dumps(doc)
    cut = text.index('{"size":128')  # killed while the 5th size ran: its preamble was written
    ms = _parse(text[: cut + 40])
    assert sorted({s.msg_bytes for s in ms.samples}) == [8, 16, 32, 64]
    assert any("stops mid-way (the run was killed?); read the 4 sizes" in w for w in ms.warnings)
    assert ms.env["complete"] is False
    with pytest.raises(MeasureError, match="not valid JSON"):
        _parse(text[:60])  # cut inside the header: nothing to keep


def test_rank_count_asked_for_must_match():
    text = dumps(PER_ITER_DOC)
    assert _parse(text, expect_ranks=16).samples
    with pytest.raises(MeasureError, match=r"a log of 16 GPUs \(ranks\), but 8 were asked for \(--gpus 8\)"):
        _parse(text, expect_ranks=8)


def test_rank_count_asked_for_keeps_the_matching_tables_of_a_text_log():
    path = next(p for p in RAW_FILES if p.name.startswith("nccl_05"))  # 1, 2, 4, 8 nodes of 8 GPUs
    ms = read_log(path, expect_ranks=16)
    assert {s.n_ranks for s in ms.samples} == {16}
    assert any("dropped the tables of 8, 32, 64 ranks" in w for w in ms.warnings)
    with pytest.raises(MeasureError, match="but 3 were asked for"):
        read_log(path, expect_ranks=3)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('{"name": "resnet", "results": [1, 2]}', "JSON of another shape; expected nccl-tests' -J output"),
        (
            '{"version": 3, "args": ["./gather_perf"], "config": {"ngpus": 2}, "results": []}',
            "gather_perf is not a collective",
        ),
        ('{"version": 3, "config": {"ngpus": "eight"}, "results": []}', "without a usable config"),
    ],
)
def test_json_that_is_not_nccl_tests_is_one_line_error(content, match):
    with pytest.raises(MeasureError, match=match) as e:
        _parse(content)
    assert "\n" not in str(e.value)


# --- the -I text columns ---------------------------------------------------------------------


def _per_iter_text() -> str:
    # writeResultHeader / writeBenchmarkLine* / writePerIterReport's format strings (src/util.cu).
    names = (
        "size",
        "count",
        "type",
        "redop",
        "root",
        "time",
        "algbw",
        "busbw",
        "#wrong",
        "i_min",
        "i_max",
        "i_p99",
        "i_cv%",
        "time",
        "algbw",
        "busbw",
        "#wrong",
        "i_min",
        "i_max",
        "i_p99",
        "i_cv%",
    )
    fmt = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s %*s"
    lines = [
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 100 "
        "agg iters: 1 validation: 1 graph: 0",
        "# Per-Iteration Report: CUDA event timing; i_* uses max over process rows; summary skips first 5 iterations ",
        "#",
        "#  Rank  0 Group  0 Pid   6899 on     node-a device  0 [0000:04:00] NVIDIA H100 80GB HBM3",
        "#  Rank  7 Group  0 Pid   6906 on     node-a device  7 [0000:8c:00] NVIDIA H100 80GB HBM3",
        "#",
        "# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)"
        "                                in-place (+ per-iteration)" % ("", "", "", "", ""),
        fmt % (*names, 0, ""),
    ]
    for size, t in ((8, 10.5), (16, 11.25)):
        row = "%12li  %12li  %8s  %6s  %6s" % (size, size // 4, "float", "sum", "%6i" % -1)
        for half_t in (t, t + 0.5):
            row += "  %7s  %6s  %6s  %6g" % ("%.2f" % half_t, "0.00", "0.00", 0)
            row += "  %7s  %7s  %7s  %7s" % (
                "%.2f" % (half_t - 1),
                "%.2f" % (half_t + 9),
                "%.2f" % (half_t + 4),
                "6.50",
            )
        lines.append(row)
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 0.001", "#"]
    return "\n".join(["# Collective test starting: all_reduce_perf", *lines]) + "\n"


def test_per_iteration_text_columns():
    ms = parse_log_text(_per_iter_text(), source="i.txt")
    assert not ms.warnings, ms.warnings
    assert [(s.msg_bytes, s.in_place, round(s.time_s * 1e6, 2)) for s in ms.samples] == [
        (8, False, 10.5),
        (8, True, 11.0),
        (16, False, 11.25),
        (16, True, 11.75),
    ]
    s = ms.samples[0]
    assert s.n_ranks == 8
    stats = s.per_iter
    assert (stats.n_iters, stats.skipped) == (95, 5)
    assert stats.min_s == pytest.approx(9.5e-6) and stats.max_s == pytest.approx(19.5e-6)
    assert stats.p99_s == pytest.approx(14.5e-6) and stats.cv == pytest.approx(0.065)
    assert stats.mean_s is None and stats.p50_s is None  # the text does not print them


# --- the harness's JSON gets the same statistics from its samples -----------------------------


def test_shardbudget_json_samples_become_iteration_statistics():
    doc = {
        "tool": "shardbudget",
        "op": "all-reduce",
        "world_size": 2,
        "results": [{"bytes": 8, "time_s": 2e-5, "samples_s": [1e-5, 2e-5, 3e-5, 4e-5]}],
    }
    stats = _parse(json.dumps(doc)).samples[0].per_iter
    # nearest rank on 4 sorted times: p50 = sorted[2], p99 = sorted[min(3, ceil(3.96) - 1)] = sorted[3]
    assert (stats.n_iters, stats.p50_s, stats.p99_s, stats.min_s) == (4, 3e-5, 4e-5, 1e-5)
    assert stats.mean_s == pytest.approx(2.5e-5)


# --- fuzzing nccl-tests' shapes: nothing but MeasureError escapes ------------------------------

_KEYS = [
    "version",
    "args",
    "config",
    "results",
    "ngpus",
    "nthreads",
    "devices",
    "hostname",
    "size",
    "type",
    "redop",
    "out_of_place",
    "in_place",
    "out_of_place_per_iter",
    "time",
    "nwrong",
    "times_us",
    "p99_us",
    "skipped_iterations",
    "per_process_max_times_us",
    "nccl_version",
    "env",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=6),
        max_leaves=25,
    )
)
def test_fuzz_nccl_tests_shapes(doc):
    if isinstance(doc, dict):
        doc = {"config": {"ngpus": 2}, "results": [], **doc}
    try:
        ms = _parse(json.dumps(doc))
    except MeasureError as e:
        assert "\n" not in str(e)
        return
    assert ms.samples and all(s.time_s > 0 for s in ms.samples)
    summarize(ms)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 4000))
def test_fuzz_cut_files(cut):
    text = dumps(PER_ITER_DOC)
    try:
        ms = _parse(text[:cut])
    except MeasureError as e:
        assert "\n" not in str(e)
        return
    assert ms.samples
