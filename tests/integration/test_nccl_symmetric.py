"""NCCL's symmetric kernels (2.27+) as an option, `--nccl VERSION`, and `allreduce --impl ENGINE`
following the engine's whole rule (comm/nccl_symmetric.py, comm/versions.py, engines/allreduce.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from shardbudget.comm.collectives import make_group, sweep
from shardbudget.comm.lines import times_and_latencies_s
from shardbudget.comm.collectives import candidates
from shardbudget.comm.nccl_algos import nvls
from shardbudget.comm.nccl_symmetric import symmetric_available
from shardbudget.comm.versions import at_nccl
from shardbudget.engines.allreduce import allreduce_ranges_for, engine_allreduce_s
from shardbudget.errors import CatalogError
from shardbudget.fabric.catalog import load_catalog

CAT = load_catalog()
SYM = at_nccl(CAT, symmetric=True)
KiB, MiB = 1024, 1 << 20


def test_default_catalog_is_unchanged_by_a_no_op():
    assert at_nccl(CAT) is CAT
    # naming the catalog's own release changes no price, only that it was named (an engine's
    # shipped release no longer replaces it: engines/release.py)
    named = at_nccl(CAT, "2.30")
    assert named.nccl.stated and named.nccl == replace(CAT.nccl, stated=True) and at_nccl(named, "2.30") is named


@pytest.mark.parametrize("system, floor_us", [("hgx-h200", 2.3), ("hgx-b200", 3.0)])
def test_symmetric_floor_is_nccl_1940s_measurement(system, floor_us):
    """NVIDIA/nccl#1940: 8 GPUs, 8 B, NCCL 2.27 symmetric memory: ~2.3 us (H200/H800), ~3 us (B200);
    the standard kernels' floor is 5-9x that (NVIDIA's blog: 'up to 9x')."""
    sym = sweep("all-reduce", [8], system, catalog=SYM)[0]
    plain = sweep("all-reduce", [8], system, catalog=CAT)[0]
    assert sym.algorithm.startswith("symmetric") and sym.time_s * 1e6 == pytest.approx(floor_us, rel=0.05)
    assert 4 <= plain.time_s / sym.time_s <= 10


def test_symmetric_multimem_is_no_faster_than_the_nvls_line():
    """NCCL's own peak (480 GiB/s on Hopper: 458 GB/s of algbw at 8 GPUs) is above what NVLS carries;
    the multimem kernel's line is capped by the NVLS line's algbw."""
    g = make_group("hgx-h100", catalog=SYM)
    mc = next(c for c in candidates(g, "all-reduce") if c.algorithm == "symmetric-RSxLDMC_AGxSTMC")
    assert mc.algbw_bytes_per_s == pytest.approx(nvls(g).algbw_bytes_per_s, rel=1e-12)
    assert mc.algbw_bytes_per_s < 480 * 2**30 / (1 / 8 + 1)
    assert symmetric_available(g) is None


def test_symmetric_needs_2_27_one_domain_and_direct_peers():
    assert "2.27" in symmetric_available(make_group("hgx-h100", catalog=at_nccl(CAT, "2.26", symmetric=True)))
    assert symmetric_available(make_group("hgx-h100", nodes=2, catalog=SYM)) is not None
    assert symmetric_available(make_group("l40s-pcie-nps1-degraded", gpus=4, catalog=SYM)) is not None
    assert not any(
        c.algorithm.startswith("symmetric")
        for c in candidates(make_group("hgx-h100", catalog=at_nccl(CAT, "2.26", symmetric=True)), "all-reduce")
    )


def test_symmetric_all_reduce_does_not_fall_with_size():
    sizes = 2.0 ** np.arange(3, 31, 0.125)
    for system in ("hgx-h100", "hgx-b200", "gb200-nvl72"):
        for g in (2, 4, 8):
            t, _ = times_and_latencies_s(candidates(make_group(system, gpus=g, catalog=SYM), "all-reduce"), sizes)
            assert np.all(np.diff(t) >= -1e-9 * t[1:]), (system, g)


def test_vllms_gate_for_nccl_symmetric_memory():
    """all_reduce_utils.py at 00d618aa (vllm-0.19: 0.34.0 runs FlashInfer's one-shot first, in the same place): 8 GPUs: NCCL symmetric at <= 16 KiB and >= 128 KiB, the custom
    one-shot between; 4 GPUs: <= 16 KiB and >= 512 KiB; 6 GPUs never (no range, not above 8)."""
    r8 = allreduce_ranges_for("vllm-0.19", make_group("hgx-h100", catalog=SYM), 16384.0)
    kinds = {
        n: r8.kinds[i] if i < len(r8.kinds) else r8.at_edge[i - len(r8.kinds)]
        for n, i in zip(
            (8 * KiB, 16 * KiB, 64 * KiB, 128 * KiB, MiB),
            r8.kind_index(np.array([8 * KiB, 16 * KiB, 64 * KiB, 128 * KiB, MiB], dtype=float)),
        )
    }
    assert kinds == {8 * KiB: "nccl", 16 * KiB: "nccl", 64 * KiB: "one-shot", 128 * KiB: "nccl", MiB: "nccl"}
    assert "symmetric" in r8.describe()
    r6 = allreduce_ranges_for("vllm-0.19", make_group("hgx-h100", gpus=6, catalog=SYM), 16384.0)
    assert r6.kinds == allreduce_ranges_for("vllm-0.19", make_group("hgx-h100", gpus=6, catalog=CAT), 16384.0).kinds


def test_nccl_version_changes_what_changed():
    """NVLSTree's network step is 14 us up to 2.28 and 20.9 us from 2.29 (tuning.cc hwLat)."""
    assert at_nccl(CAT, "2.28").nccl.hw_latency_s["net"]["nvls_tree"]["simple"] == pytest.approx(14e-6)
    assert at_nccl(CAT, "2.29.2").nccl.hw_latency_s["net"]["nvls_tree"]["simple"] == pytest.approx(20.9e-6)
    with pytest.raises(CatalogError, match="oldest"):
        at_nccl(CAT, "2.10")


def test_allreduce_impl_engine_follows_the_rule_plan_prices(cli):
    """vLLM on 8 H100 at 1 MiB runs torch symmetric memory (multimem): allreduce --impl vllm says so
    and prices what plan's engine rule prices."""
    out = cli("allreduce", "--system", "hgx-h100", "--impl", "vllm", "--size", "1MiB", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    row = data["rows"][0]
    r = allreduce_ranges_for("vllm", make_group("hgx-h100", catalog=CAT), 8192.0 * 2)
    t, _ = engine_allreduce_s(r, np.array([float(MiB)]))
    assert row["algorithm"] == "symm-mem" and row["time_s"] == pytest.approx(float(t[0]), rel=1e-12)
    assert "symmetric-memory multimem" in data["engine_rule"]


def test_cli_nccl_options(cli):
    out = cli("allreduce", "--system", "hgx-b200", "--size", "8B", "--nccl-symmetric", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["rows"][0]["algorithm"].startswith("symmetric")
    bad = cli("allreduce", "--system", "hgx-b200", "--nccl", "two")
    assert bad.returncode == 2 and "NCCL version" in bad.stderr
