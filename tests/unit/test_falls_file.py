"""data/falls.csv, the model's kernel-switch falls held as data (issue 36): read by
calibrate/falls.py, written by `python -m shardbudget.calibrate --falls`, refused line by line
where a row is malformed."""

from __future__ import annotations

import pytest

from shardbudget.calibrate import falls
from shardbudget.calibrate.__main__ import main
from shardbudget.calibrate.paths import DATA

HEADER = ",".join(falls.COLUMNS) + "\n"


def test_the_file_reads_back_as_written(tmp_path):
    """Every row of the repository's file is one key of one list, and writing the lists back gives
    the same text: NCCL rows without bytes (all-reduce keyed without its op), engine rows with their edge."""
    text = (DATA / falls.FILE).read_text(encoding="utf-8")
    lists = falls.load()
    assert text.count("\n") - 1 == len(lists.measured) + len(lists.known)
    assert falls.to_csv(lists) == text
    falls.write(lists, tmp_path)
    assert falls.load(tmp_path) == lists
    assert ("hgx-h800", 8, "vllm-0.19", "one-shot", "symm-mem-multimem", 262144) in lists.known
    assert ("hgx-b200", 8, "vllm-0.19", "two-shot", "symm-mem-multimem", 1048576) in lists.measured


@pytest.mark.parametrize(
    "row, says",
    [
        ("known,s,2,nccl,all-reduce,ring/ll,ring/simple,4096,x", "keyed without its bytes"),
        ("known,s,2,vllm,all-gather,one-shot,nccl,4096,x", "all-reduce"),
        ("maybe,s,2,vllm,all-reduce,one-shot,nccl,4096,x", "list must be one of"),
        ("known,s,2,vllm,all-reduce,one-shot,nccl,4096,", "needs its source"),
        ("known,s,two,vllm,all-reduce,one-shot,nccl,4096,x", "invalid literal"),
        ("known,s,2,vllm,all-reduce,one-shot,nccl,4096,x\nmeasured,s,2,vllm,all-reduce,one-shot,nccl,4096,y", "twice"),
    ],
)
def test_a_malformed_row_is_named_by_its_line(tmp_path, row, says):
    (tmp_path / falls.FILE).write_text(HEADER + row + "\n", encoding="utf-8")
    with pytest.raises(falls.FallsFileError, match=says) as err:
        falls.load(tmp_path)
    assert f"{falls.FILE}:" in str(err.value)


def test_the_columns_are_checked(tmp_path):
    (tmp_path / falls.FILE).write_text("list,system\nknown,s\n", encoding="utf-8")
    with pytest.raises(falls.FallsFileError, match="the columns must be"):
        falls.load(tmp_path)


def test_falls_writes_the_repositorys_data_only(capsys):
    """`--falls` reads the rows at each switch from the repository's data/ and writes beside them: a
    --data folder is refused in one line (argparse's exit 2), nothing written."""
    with pytest.raises(SystemExit) as err:
        main(["--falls", "--data", "elsewhere"])
    assert err.value.code == 2
    assert "--falls reads and writes the repository's data/" in capsys.readouterr().err
