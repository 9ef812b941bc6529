"""`--moe-a2a` and `allreduce --op all-to-all --algo deepep-*` as a user runs them."""

from __future__ import annotations

import json


def _itl(cli, *extra: str) -> dict[str, float]:
    r = cli("plan", "-m", "deepseek-v3", "-s", "hgx-h200", "--nodes", "2", "--batch", "64", "--json", *extra)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["results"][0]["rows"]
    return {(row["tp"], row["ep"], row["dp"]): row["itl_s"] for row in rows}


def test_plan_prices_the_moe_all_to_all_by_backend(cli):
    """TP16 EP16 DP16 over two nodes dispatches by all-to-all: DeepEP's low-latency line (a 35 us floor
    per call, FP8 dispatch) prices it differently from NCCL's; a TP-only plan is untouched."""
    nccl, deepep = _itl(cli), _itl(cli, "--moe-a2a", "deepep-ll")
    assert deepep[(16, 16, 16)] != nccl[(16, 16, 16)]
    assert deepep[(16, 1, 1)] == nccl[(16, 1, 1)]
    r = cli("plan", "-m", "deepseek-v3", "-s", "hgx-h200", "--nodes", "2", "--batch", "64", "--moe-a2a", "deepep")
    assert r.returncode == 0, r.stderr
    assert "# MoE dispatch and combine: DeepEP, normal kernels in prefill, low-latency in decode" in r.stdout


def test_allreduce_prints_deepeps_line(cli):
    r = cli(
        "allreduce",
        "-s",
        "hgx-h800",
        "--nodes",
        "2",
        "--op",
        "all-to-all",
        "--algo",
        "deepep-ll",
        "--size",
        "1MiB",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)["rows"][0]
    assert (row["algorithm"], row["impl"]) == ("deepep-ll", "deepep")
    # 35 us floor + the mean of the FP8 dispatch and BF16 combine: half the copies over the 46 GB/s NIC
    assert abs(row["time_s"] - (35e-6 + (1 + 4 / 128 + 2) / 4 * 2**20 * 0.5 / 46e9)) < 0.2e-6
