"""The engines' all-reduce at their rule edges (issue 20): what makes a kernel switch fall or not, each
checked against the engine's source or a measured row of measured_comm.csv, with its tolerance.

data/falls.csv (shardbudget/calibrate/falls.py) lists the switches at which the model's time falls; these are the facts behind
the entries it moved: which release's rows stand for the pinned one (SAME_RELEASE), at what rate a
one-shot reads its peer over PCIe, and that TensorRT-LLM's kernels never run on a GPU without CUDA.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

from shardbudget.comm.collectives import make_group
from shardbudget.comm.custom_kernels import custom_candidate, read_class
from shardbudget.engines.allreduce import allreduce_ranges_for, engine_allreduce_s
from shardbudget.fabric.catalog import load_catalog

from shardbudget.calibrate import measured_comm as mc
from shardbudget.calibrate.edge_rows import SAME_RELEASE

CAT = load_catalog()


def _rows(data_dir, system: str, library: str, version: str, gpus: int) -> dict[int, float]:
    """{bytes: median us} of one system, library column, release and GPU count."""
    out: dict[int, list[float]] = {}
    with mc.find_file(data_dir).open(newline="") as f:
        for r in csv.DictReader(f):
            if (r["system"], r["library"], r["lib_version"], int(r["num_gpus"])) == (
                system,
                library,
                version,
                gpus,
            ) and r["op"] == "all_reduce":
                out.setdefault(int(r["bytes"]), []).append(float(r["time_us"]))
    return {n: float(np.median(v)) for n, v in out.items()}


@pytest.mark.parametrize("gpus", [2, 4, 8])
def test_vllm_0_14_rows_stand_for_0_19(data_dir, gpus):
    """SAME_RELEASE: on 8 H100s measured_comm.csv times vLLM's custom all-reduce under both 0.14.0 and
    0.19.0. At every size where 0.19.0's rule runs the custom kernel (one-shot or two-shot, not
    symmetric memory: below 8 MiB at 2 and 4 GPUs, below 256 KiB at 8) the two releases agree within
    5% (at most 2.0, 2.5 and 4.0% at 2, 4 and 8 GPUs; widest 8 GPUs at 512 B, 4.77 vs 4.57 us), so
    the kernels and thresholds did not change.
    The rule is vllm-0.19's, the preset of those rows (vllm is 0.34.0, whose FlashInfer kernel they never ran).
    On SM 8.0 and 8.9 the 0.19.0 rule has no symmetric-memory range, so there it runs what 0.14.0 ran."""
    assert SAME_RELEASE == {("vllm-0.19", "a100_sxm"): "0.14.0", ("vllm-0.19", "l40s"): "0.14.0"}
    old = _rows(data_dir, "h100_sxm", "vLLM_custom_graph", "0.14.0", gpus)
    new = _rows(data_dir, "h100_sxm", "vLLM_custom_graph", "0.19.0", gpus)
    ranges = allreduce_ranges_for("vllm-0.19", make_group("hgx-h100", gpus=gpus), 8192.0)
    kinds = ranges.kinds + ranges.at_edge
    custom = [
        n for n in sorted(new) if kinds[int(ranges.kind_index(np.array([float(n)]))[0])] in ("one-shot", "two-shot")
    ]
    assert len(custom) >= 10, custom
    worst = max(abs(new[n] / old[n] - 1) for n in custom)
    assert worst < 0.05, worst
    for system in ("hgx-a100", "l40s-pcie-nps1-degraded"):
        r = allreduce_ranges_for("vllm-0.19", make_group(system, gpus=2), 8192.0)
        assert not any(k.startswith("symm-mem") for k in r.kinds + r.at_edge), (system, r.describe())


def test_a_one_shot_over_one_link_reads_at_the_links_rate(data_dir):
    """Two GPUs over one point-to-point link (PCIe P2P, an NVLink bridge): the one-shot reads its peer
    at the link's rate, whatever the generation, since every generation's kernel reads faster (2
    H100 SXMs through NVSwitch, vLLM 0.19.0: 2 MiB more from 2 to 4 MiB in 7.8 us, 269 GB/s, against
    the H100 PCIe bridge's 116). The link class's share (0.934 of the ring's busbw, fitted on L40S's
    rows) prices 2 RTX PRO 6000s on PCIe 5 at 0.934 x 48 = 44.8 GB/s (it was B200's NVSwitch share,
    0.244: 11.7 GB/s, and the one-shot at 8 MiB - 1 cost 723 us against NCCL's 207 us just above
    vLLM's limit) and the H100 PCIe bridge at 0.934 x 116 = 108 GB/s (was H100's 0.717: 83). Checked
    on the rows it is fitted on: 2 L40S, vLLM 0.14.0, 4 MiB one-shot 229.41 us, within 3%."""
    sxm = _rows(data_dir, "h100_sxm", "vLLM_custom_graph", "0.19.0", 2)
    assert 2 * 2**20 / ((sxm[4194304] - sxm[2097152]) * 1e-6) == pytest.approx(269e9, rel=0.01)
    bridge = custom_candidate(make_group("h100-pcie", gpus=2), 1, engine="vllm")
    assert bridge.algbw_bytes_per_s == pytest.approx(0.934 * 116e9, rel=0.01)
    pro = make_group("rtx-pro-6000-pcie", gpus=2)
    assert read_class(pro.system, 2) == "link" and read_class(make_group("hgx-b200", gpus=2).system, 2) == "blackwell"
    one = custom_candidate(pro, 1, engine="vllm")
    assert one.algbw_bytes_per_s == pytest.approx(0.934 * 48e9, rel=0.01)
    measured = _rows(data_dir, "l40s", "vLLM_custom_graph", "0.14.0", 2)[4194304]
    assert measured == pytest.approx(229.41, abs=0.01)
    l40s = custom_candidate(make_group("l40s-pcie-nps1-degraded", gpus=2), 1, engine="vllm")
    t, _ = engine_allreduce_s(
        allreduce_ranges_for("vllm", make_group("l40s-pcie-nps1-degraded", gpus=2), 8192.0), np.array([4194304.0])
    )
    assert l40s is not None and t[0] * 1e6 == pytest.approx(measured, rel=0.03)
    for system in ("rtx-pro-6000-pcie", "rtx-pro-6000-2s-epyc", "h100-pcie"):
        ranges = allreduce_ranges_for("vllm", make_group(system, gpus=2), 8192.0)
        below, at = engine_allreduce_s(ranges, np.array([8388607.0, 8388608.0]))[0]
        assert at >= below, (system, below, at)


@pytest.mark.parametrize("system", ["mi300x", "mi325x", "mi355x"])
def test_tensorrt_llm_runs_nccl_on_a_gpu_without_cuda(system):
    """TensorRT-LLM supports NVIDIA GPUs only (trtllm.toml [cli.support]: ampere, ada, hopper,
    blackwell) and its AUTO table is keyed by SM (customAllReduceUtils.h selectStrategyLookUpTable):
    on an AMD GPU its all-reduce is the collective library's at every size, at every group size,
    where it was priced as an SM 9.0 one-shot (8 MI300X at 1 MiB - 1: 32.7 us, then NCCL 31.5 us)."""
    for gpus in (2, 4, 8):
        r = allreduce_ranges_for("trtllm", make_group(system, gpus=gpus), 8192.0)
        assert r.describe() == "NCCL at every size", (gpus, r.describe())
    h100 = allreduce_ranges_for("trtllm", make_group("hgx-h100", gpus=8), 8192.0)
    assert h100.describe() == "< 1 MiB: one-shot; larger: NCCL", h100.describe()
