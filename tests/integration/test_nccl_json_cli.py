"""`fit` and `report --measured` read nccl-tests' -J JSON beside its text output, through the CLI.

The file is written as nccl-tests writes it (``tests/nccl_json_writer``, src/util.cu at a0b82b2):
8 ranks of hgx-h100 (one process, -g 8), every time ERROR_FACTOR x the model's, with -I 1 blocks.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from nccl_json_writer import document, dumps, per_iter_block, placement, result

from shardbudget.comm.collectives import sweep
from shardbudget.measure.logs.read import read_log

ERROR_FACTOR = 1.25


@pytest.fixture(scope="module")
def nccl_json(tmp_path_factory) -> Path:
    rng = np.random.default_rng(7)
    costs = sweep("all-reduce", [float(4**k) for k in range(2, 14)], "hgx-h100", gpus=8)
    results = []
    for c in costs:
        t_us = c.time_s * ERROR_FACTOR * 1e6
        alg = c.msg_bytes / t_us / 1e3  # GB/s
        times = list(t_us * (1 + rng.exponential(0.05, 40)))
        results.append(
            result(
                int(c.msg_bytes),
                int(c.msg_bytes) // 4,
                "float",
                "sum",
                out=placement(t_us, alg, alg * 1.75),
                out_iter=per_iter_block(times),
                inp=placement(t_us, alg, alg * 1.75),
                in_iter=per_iter_block(times),
            )
        )
    path = tmp_path_factory.mktemp("nccl-json") / "all_reduce_h100.json"
    path.write_text(dumps(document(op="all-reduce", processes=["node-1"], ngpus=8, per_iter=True, results=results)))
    return path


def test_fit_reads_nccl_tests_json(nccl_json, cli, tmp_path):
    out = tmp_path / "mine.toml"
    r = cli(
        "fit",
        str(nccl_json),
        "--name",
        "mine",
        "--base-system",
        "hgx-h100",
        "--no-holdout",
        "--out",
        str(out),
        "--json",
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert len(d["residuals"]) == 12 and d["warnings"] == []
    assert d["median_abs_error"] < 0.02  # the model's shape, 25% slower: the fit absorbs it
    assert out.exists()
    r = cli("fit", str(nccl_json), "--name", "mine", "--base-system", "hgx-h100", "--no-holdout")
    assert (
        "8 ranks on 1 node, 16 B..64 MiB, 12 sizes, per-iteration timing at 24 of 24 results, NCCL 2.27.3" in r.stdout
    )


def test_report_measured_reads_nccl_tests_json(nccl_json, cli, tmp_path):
    out = tmp_path / "r.html"
    r = cli(
        "report", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--batch", "1", "--measured", str(nccl_json), "-o", str(out)
    )
    assert r.returncode == 0, r.stderr
    assert 'id="fig-measured-0"' in out.read_text()


def test_measured_vs_predicted_on_nccl_tests_json(nccl_json):
    pytest.importorskip("matplotlib")
    from shardbudget.decide.measured import measured_entry
    from shardbudget.report import figures

    fig = figures.measured_vs_predicted(measured_entry(read_log(nccl_json), "hgx-h100"))
    errors = fig.axes[1].get_lines()[0].get_ydata()
    # %lf keeps 6 decimals of a microsecond: the -20% holds to 1e-3 of a percent
    assert np.allclose(errors, 100 * (1 / ERROR_FACTOR - 1), atol=1e-3)
