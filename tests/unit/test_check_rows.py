"""`check` never certifies what the readers could not trust (issue 33, item 7): corrupted results
(nccl-tests' #wrong, its "Out of bounds values : N FAILED" footer, nwrong in its JSON, the harness's
wrong counts), impossible times (NaN, infinite, zero, negative, over an hour, faster than twice the
fastest link in the catalog), a truncated log (no closing footer, a cut row, a cut JSON, an unfinished
run) and dropped rows each fail the check (exit 1) with a line naming the sizes and the count, in the
text and in --json. Each log here is the model's own healthy curve (which passes) with one defect."""

from __future__ import annotations

import json

import pytest

from shardbudget import cli
from shardbudget.comm.collectives import explicit_candidates, make_group
from shardbudget.comm.lines import pick
from shardbudget.fabric.catalog import load_catalog
from shardbudget.measure.analysis.check import check_text
from shardbudget.measure.analysis.check_rows import busbw_ceiling
from shardbudget.measure.logs.read import parse_log_text

CAT = load_catalog()
SIZES = [8 * 4**k for k in range(16)]  # 8 B .. 8 GiB
HEADER = [
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0",
    "#",
]
FOOTER = ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.0", "#"]


def _rows(system="hgx-h100", ranks=8, *, time=None, wrong=None) -> list[str]:
    """all_reduce_perf rows at the model's times; `time(size, t_us)` and `wrong(size)` change a row's text."""
    cands = explicit_candidates(
        make_group(system, nodes=1, gpus=ranks, catalog=CAT), "all-reduce", "nccl", "auto", "auto"
    )
    out = []
    for size in SIZES:
        t = pick(cands, size).time_s(size) * 1e6
        alg = size / t / 1e3
        text = time(size, f"{t:.2f}") if time else f"{t:.2f}"
        w = wrong(size) if wrong else "0"
        half = f"{text:>10} {alg:7.2f} {alg * 2 * (ranks - 1) / ranks:7.2f} {w:>6}"
        out.append(f"{size:12d} {size // 4:13d}     float     sum      -1 {half} {half}")
    return out


def log(*, rows=None, footer=FOOTER, ranks=8) -> str:
    ranks_lines = [
        f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on     node-0 device {r:2d} [0x{r:02x}] NVIDIA H100 80GB HBM3"
        for r in range(ranks)
    ]
    cols = [
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
    ]
    cmd = [f"mpirun -np {ranks} ./build/all_reduce_perf -b 8 -e 8G -f 4 -g 1"]
    return (
        "\n".join(cmd + HEADER + ranks_lines + cols + (rows if rows is not None else _rows(ranks=ranks)) + footer)
        + "\n"
    )


def check(text, **kw):
    return check_text(text, system="hgx-h100", source="run.log", **kw)


def test_the_healthy_log_is_certified():
    result = check(log())
    assert result.ok and result.exit_code == 0 and not result.problems and not result.tables[0].problems
    assert result.outcome == "OK: every region within ±25 % of hgx-h100"


def test_wrong_results_fail_naming_the_sizes_and_the_count(tmp_path, capsys):
    text = log(rows=_rows(wrong=lambda s: "12" if s >= 2**20 else "0"))
    result = check(text)
    t = result.tables[0]
    assert result.exit_code == 1 and not t.ok
    (p,) = t.problems
    assert p.kind == "corrupted" and p.sizes == tuple(float(s) for s in SIZES if s >= 2**20)
    assert "dropped 14 result(s) with '#wrong' != 0" in p.text and "at 2 MiB, 8 MiB" in p.text
    # the sizes that remain are within tolerance: without the problem the check would have said OK
    assert all(r.verdict in ("ok", "no sizes") for r in t.regions) and t.regions[2].verdict == "no sizes"
    f = tmp_path / "run.log"
    f.write_text(text)
    assert cli.main(["check", str(f), "--system", "hgx-h100"]) == 1
    out = capsys.readouterr().out
    assert "problem: " in out and "OK" not in out.splitlines()[-1]
    assert out.rstrip().endswith(
        "check: FAIL: corrupted data (a GPU or link returned wrong values) in run.log (exit 1)"
    )
    assert cli.main(["check", str(f), "--system", "hgx-h100", "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["ok"] is False and d["exit_code"] == 1 and d["outcome"].startswith("FAIL: corrupted data")
    assert d["tables"][0]["ok"] is False and d["tables"][0]["problems"][0]["kind"] == "corrupted"
    assert d["tables"][0]["problems"][0]["sizes"][0] == 2**21


def test_a_log_whose_every_row_is_wrong_fails_check_and_is_refused_by_fit(tmp_path, capsys):
    f = tmp_path / "run.log"
    f.write_text(log(rows=_rows(wrong=lambda s: "3")))
    assert cli.main(["check", str(f), "--system", "hgx-h100"]) == 1  # a verdict on the hardware
    assert "dropped 32 result(s) with '#wrong' != 0" in capsys.readouterr().out
    assert cli.main(["fit", str(f), "--name", "x", "--base-system", "hgx-h100"]) == 2  # nothing to fit
    assert "'#wrong' != 0" in capsys.readouterr().err


def test_an_out_of_bounds_footer_fails_an_old_layout_without_a_wrong_column():
    # before #wrong, nccl-tests printed a max relative error per row; its footer still counts wrong values
    rows = [" ".join(r.split()[:8] + ["2e-07"] + r.split()[9:12] + ["2e-07"]) for r in _rows()]
    text = log(rows=rows, footer=["# Out of bounds values : 7 FAILED", "# Avg bus bandwidth    : 1.0"])
    text = text.replace("#wrong", " error")
    (p,) = check(text).tables[0].problems
    assert p.kind == "corrupted" and "Out of bounds values : 7 FAILED" in p.text


@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("nan", "time NaN"),
        ("-nan", "time NaN"),
        ("inf", "infinite time"),
        ("-5.00", "negative time -5 us"),
        ("0.00", "time 0 us"),
        ("1e308", "over 1 hour for one collective"),
        ("1e400", "infinite time"),
        ("3700000000", "over 1 hour for one collective"),
    ],
)
def test_impossible_times_fail_with_their_reason(token, why):
    result = check(log(rows=_rows(time=lambda s, t: token if s == 2048 else t)))
    (p,) = result.tables[0].problems
    assert p.kind == "impossible" and p.sizes == (2048.0,) and why in p.text and "2 impossible result(s)" in p.text
    assert result.exit_code == 1 and result.outcome == "FAIL: impossible rows in run.log"
    assert all(c.msg_bytes != 2048 for r in result.tables[0].regions for c in r.sizes)  # never priced


def test_a_busbw_no_hardware_reaches_is_impossible():
    ceiling, fastest = busbw_ceiling(CAT)
    assert (ceiling, fastest.name) == (1.8e12, "nvlink5")  # 2 x 900 GB/s per direction (NVLink 5)
    result = check(log(rows=_rows(time=lambda s, t: "0.10" if s >= 2**30 else t)))
    (p,) = result.tables[0].problems
    assert p.kind == "impossible" and p.sizes == (2.0 * 2**30, 8.0 * 2**30)
    assert "above 1.8 TB/s (2x 900 GB/s per direction, nvlink5, the fastest link in the catalog)" in p.text
    assert result.exit_code == 1


def test_a_truncated_log_is_not_certified():
    cut = log(rows=_rows()[:10], footer=[])  # the run stopped after 2 MiB: no footer
    result = check(cut)
    (p,) = result.tables[0].problems
    assert p.kind == "truncated" and "no '# Avg bus bandwidth' footer" in p.text and "last size 2 MiB" in p.text
    assert result.exit_code == 1 and "a truncated log" in result.outcome
    assert any("bandwidth was not checked" in n for n in result.tables[0].notes)
    mid_line = log(footer=[])[:-40]  # the file itself cut inside the last row
    kinds = {p.kind for p in check(mid_line).tables[0].problems}
    assert kinds == {"truncated"} and check(mid_line).exit_code == 1


def test_a_dropped_row_fails_the_check():
    rows = _rows()
    rows[5] = f"{SIZES[5]:12d} {SIZES[5] // 4:13d}     float     sum      -1   garbage here"
    (p,) = check(log(rows=rows)).tables[0].problems
    assert p.kind == "dropped" and "malformed data row of 8 KiB (skipped it)" in p.text


def test_a_problem_in_a_table_not_checked_still_fails():
    """--gpus 8 checks the 8-GPU table; corrupted data in the 4-GPU run of the same file is still reported."""
    four = log(rows=_rows(ranks=4, wrong=lambda s: "1" if s == 8 else "0"), ranks=4)
    result = check(log() + four, gpus=8)
    assert [t.ranks for t in result.tables] == [8] and result.tables[0].ok
    assert [p.kind for p in result.problems] == ["corrupted"] and result.exit_code == 1


def test_a_region_with_no_sizes_is_not_ok_and_a_table_needs_one_size():
    result = check(log(rows=_rows()[:3], footer=FOOTER))  # 8 B .. 128 B: the latency floor alone
    t = result.tables[0]
    assert [r.verdict for r in t.regions] == ["ok", "no sizes", "no sizes"]
    assert [r.ok for r in t.regions] == [True, False, False] and not any(r.off for r in t.regions)
    assert t.ok and any("bandwidth was not checked" in n for n in t.notes)  # what was measured is normal


def test_nccl_tests_json_wrong_impossible_and_cut():
    def doc(results):  # nccl-tests writes no spaces between items
        return json.dumps(
            separators=(",", ":"),
            obj={
                "version": 3,
                "args": ["./all_reduce_perf"],
                "config": {"ngpus": 1, "nthreads": 1, "devices": [{"hostname": "n0"}] * 8},
                "results": results,
            },
        )

    good = {"size": 1024, "type": "float", "redop": "sum", "out_of_place": {"time": 20.0, "nwrong": 0}}
    bad_time = {"size": 2048, "type": "float", "out_of_place": {"time": float("nan"), "nwrong": 0}}
    wrong = {"size": 4096, "type": "float", "out_of_place": {"time": 20.0, "nwrong": 5}}
    ms = parse_log_text(doc([good, bad_time, wrong]), source="run.json")
    assert sorted(p.kind for p in ms.problems) == ["corrupted", "impossible"]
    assert next(p for p in ms.problems if p.kind == "corrupted").sizes == (4096.0,)
    cut = doc([good, good | {"size": 2048}])[:-40]
    assert [p.kind for p in parse_log_text(cut, source="cut.json").problems] == ["truncated"]


def test_shardbudget_json_wrong_and_unfinished():
    d = {
        "tool": "shardbudget",
        "op": "all-reduce",
        "world_size": 2,
        "complete": False,
        "error": "rank 1 lost",
        "results": [
            {"bytes": 8, "time_s": 1e-5, "wrong": 0},
            {"bytes": 64, "time_s": 1e-5, "wrong": 3},
            {"bytes": 512, "time_s": -1.0},
        ],
    }
    ms = parse_log_text(json.dumps(d), source="m.json")
    assert sorted(p.kind for p in ms.problems) == ["corrupted", "impossible", "truncated"]
