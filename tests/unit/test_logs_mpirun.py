"""nccl-tests output as MPI launchers print it: every line behind the launcher's tag (Open MPI 4 and 5,
PRRTE, MPICH / Intel MPI). The fixture is a published 2-node run's rows under Open MPI 5's
`--output tag` (tests/fixtures/nccl_tests/README.md); read through any launcher's prefix it must give
the samples its plain transcription gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardbudget.calibrate.paths import DATA
from shardbudget.measure.analysis.check import check_text
from shardbudget.measure.logs.read import parse_log_text, read_log

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "nccl_tests" / "mpirun_prrte_tag_h100_2node.txt"
RAW = DATA / "raw" / "nccl_17_h100_2node_dgx0607.txt"
PRRTE_TAG = "[prterun-dgx-06-100629@1,0]<stdout>: "


def _key(ms):
    return [(s.msg_bytes, s.time_s, s.busbw_bytes_per_s, s.in_place, s.n_ranks, s.op) for s in ms.samples]


def test_open_mpi_5_tagged_run_reads_as_its_transcription():
    tagged, plain = read_log(FIXTURE), read_log(RAW)
    assert len(tagged.samples) == 64 and _key(tagged) == _key(plain)
    assert {s.n_ranks for s in tagged.samples} == {16}  # mpirun -n 2 x -g 8
    assert tagged.samples[0].source.endswith("mpirun_prrte_tag_h100_2node.txt:7")
    assert "all_reduce_perf -b 8 -e 16384M" in tagged.env["command"]
    # the source states no footer: the only warning says so
    assert [w for w in tagged.warnings if "footer" not in w] == []


@pytest.mark.parametrize(
    "prefix",
    [
        "[1,0]<stdout>:",  # Open MPI 4 --tag-output
        "Thu May  7 10:39:20 2020[1,0]<stdout>:",  # ... with --timestamp-output (open-mpi/ompi#7710)
        "[1,0][dgx-06:100629]<stdout>: ",  # PRRTE --output tag-detailed (openpmix/prrte#1406)
        "[prterun-dgx-06-100629@1,0][dgx-06:100629]<stdout>: ",  # tag-fullname + tag-detailed
        "[0]<stdout>",  # PRRTE --output rank
        "[0] ",  # MPICH / Intel MPI mpiexec -prepend-rank (-l) (pmodels/mpich#1114)
        "   3: ",  # srun --label
    ],
)
def test_every_launchers_prefix_reads_the_same(prefix):
    text = FIXTURE.read_text().replace(PRRTE_TAG, prefix)
    assert PRRTE_TAG not in text
    ms = parse_log_text(text, source="run.log")
    assert _key(ms) == _key(read_log(RAW))
    assert [w for w in ms.warnings if "footer" not in w] == []


def test_a_prefix_no_launcher_prints_is_not_stripped():
    # a bracket of words, or a rank in other brackets, is no launcher's tag: the rows stay unread
    for prefix in ("[rank0] ", "<0> ", "(1,0)<stdout>: "):
        text = FIXTURE.read_text().replace(PRRTE_TAG, prefix)
        with pytest.raises(Exception, match="no nccl-tests data rows"):
            parse_log_text(text, source="run.log")


def test_check_reads_a_tagged_log_end_to_end():
    plain = check_text(RAW.read_text(), system="hgx-h100", nodes=2, source="plain.log")
    tagged = check_text(FIXTURE.read_text(), system="hgx-h100", nodes=2, source="tagged.log")
    t, p = tagged.to_dict(), plain.to_dict()
    assert (t["ok"], t["exit_code"]) == (p["ok"], p["exit_code"])
    # the same table judged the same: 16 ranks on 2 nodes, the same regions (the tagged file alone
    # is called truncated: its source states no footer)
    assert len(t["tables"]) == len(p["tables"]) == 1
    keys = ("op", "ranks", "nodes", "column", "ok", "regions", "cause")
    assert {k: t["tables"][0][k] for k in keys} == {k: p["tables"][0][k] for k in keys}
    assert t["tables"][0]["ranks"] == 16 and t["tables"][0]["nodes"] == 2
    assert t["outcome"] == p["outcome"].replace("FAIL: ", "FAIL: a truncated log in tagged.log; ")
