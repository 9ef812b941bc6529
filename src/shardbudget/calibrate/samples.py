"""The measured rows the fits read, reduced to what the estimators need (`Sample`).

NCCL all-reduce rows of data/measured_comm.csv and data/nccl_tests.csv (`samples`), XLA's GB200
NVL72 all-reduce and all-gather tables (`xla_samples`, `xla_all_gather_samples`), and the engines'
own all-reduce rows under CUDA graphs (`engine_samples`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..comm.custom_kernels import KERNEL_OF
from . import measured_comm as mc
from . import nccl_tests, xla_nvl72


@dataclass(frozen=True)
class Sample:
    """One measured NCCL all-reduce (either table), reduced to what the estimators need."""

    system: str
    gpus: int
    nodes: int
    size_bytes: float
    time_s: float
    algo: str = "auto"
    source: str = ""
    nccl: str | None = None
    """The NCCL release the row was measured with, where its table says (measured_comm.csv, or the
    release a nccl_tests.csv row states)."""


def samples(data_dir: Path | None = None) -> list[Sample]:
    """Single- and multi-node NCCL all-reduce rows of measured_comm.csv and nccl_tests.csv."""
    out = [
        Sample(r.system, r.gpus, 1, r.size_bytes, r.time_s, source="measured_comm", nccl=r.version)
        for r in mc.select(mc.load_rows(data_dir), library="nccl", op="all-reduce")
    ]
    for r in nccl_tests.load_rows(data_dir):
        if r.kept and r.op == "all-reduce" and r.variant is None:
            out.append(Sample(r.system, r.gpus, r.nodes, r.size_bytes, r.time_s, r.algo, r.source_id, nccl=r.nccl))
    return out


def xla_samples(data_dir: Path | None = None) -> list[Sample]:
    """XLA's GB200 NVL72 all-reduce rows (8-72 GPUs), less XLA's launch: only fit_nvls_small reads
    them (their large sizes are whole-executable times of replica groups side by side)."""
    xla = xla_nvl72
    return [Sample(xla.SYSTEM, r.gpus, 1, r.size_bytes, r.time_s, source="xla") for r in xla.load_rows(data_dir)]


def xla_all_gather_samples(data_dir: Path | None = None) -> list[Sample]:
    """XLA's GB200 NVL72 all-gather rows of 33-72 GPUs, less XLA's launch: rings only (NCCL offers
    NVLS for an all-gather of at most 32 local ranks, xla_nvl72.NVLS_ALL_GATHER_MAX_GPUS); only
    fit_ll128_hop reads them."""
    xla = xla_nvl72
    return [
        Sample(xla.SYSTEM, r.gpus, 1, r.size_bytes, r.time_s, source="xla-all-gather")
        for r in xla.load_rows(data_dir, min_gpus=xla.NVLS_ALL_GATHER_MAX_GPUS + 1, op="all-gather")
    ]


PRICED_NOT_FITTED = frozenset({"vllm"})
"""Presets whose rows are scored but do not enter the kernels' fit: vllm is vLLM 0.34.0, whose custom
kernel's costs are 0.19.0's (engines/vllm.toml: the kernel's source is not in the wheel), fitted on
vllm-0.19's rows; the rows of the releases between (0.24.0, 0.27.0), which vllm prices, are LOSO's and
the validation's, not the fit's (the catalog stays the fixed point of the fit it was)."""


def engine_samples(data_dir: Path | None = None) -> list[tuple[str, Sample]]:
    """(engine preset, row) for measured_comm.csv's engine all-reduce rows under CUDA graphs; the preset
    is the row's release's (measured_comm.release_preset: TensorRT-LLM 1.0.0 rows are trtllm-1.0's)."""
    return [
        (r.library, Sample(r.system, r.gpus, 1, r.size_bytes, r.time_s, source="measured_comm"))
        for r in mc.load_rows(data_dir)
        if r.library != "nccl"
        and r.mode == "graph"
        and not _older_kernel_nccl(r)
        and r.library not in PRICED_NOT_FITTED
    ]


def _older_kernel_nccl(r: mc.CommRow) -> bool:
    """A row NCCL ran in a release older than the preset's rule: SGLang before 0.5.12 (A100's newest
    rows are 0.5.10) ran sgl-kernel's kernel to 8 MiB and NCCL above, where 0.5.14's CustomAllReduceV2
    (sgl-project/sglang#24363, default from 0.5.12) runs its two-shot to 16 MiB: such rows are
    not the kernel's, and its 0.5.14 limits would fit them as two-shot rows."""
    # r.library is the preset of the row's release (sglang-0.5.14 for 0.5.10's rows): its kernel's engine
    return (
        KERNEL_OF.get(r.library, r.library) == "sglang"
        and mc._version_key(r.version) < (0, 5, 12)
        and r.size_bytes > 8 * 2**20
    )
