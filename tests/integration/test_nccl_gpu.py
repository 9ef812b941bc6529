"""NCCL on real GPUs: skipped unless this machine has two or more CUDA GPUs."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs 2 or more CUDA GPUs"
    ),
]


def test_nccl_all_reduce_two_gpus(tmp_path):
    from shardbudget.measure.harness.run import run_measure

    out = tmp_path / "nccl.json"
    r = run_measure(
        backend="nccl",
        nproc=2,
        op="all-reduce",
        sizes_bytes=[8, 1 << 20, 64 << 20],
        iters=10,
        warmup=3,
        check=True,
        out=str(out),
        progress=False,
    )
    assert r.complete and [row.wrong for row in r.results] == [0, 0, 0]
    big = r.results[-1]
    assert big.busbw_bytes_per_s == pytest.approx(big.algbw_bytes_per_s)  # 2(n-1)/n = 1 at n = 2
    assert big.busbw_bytes_per_s > 1e9  # any GPU link moves 64 MiB faster than 1 GB/s
