"""The measured rows either side of a kernel switch (`measured_at_edge`): data/measured_comm.csv at
the release the model follows, nccl_tests.csv's RTX 4090 table, XLA's NVL72 all-gather table; and
whether they fall there too (`measured_fall`, by more than NOISE).
"""

from __future__ import annotations

import csv
from functools import lru_cache

from . import measured_comm as mc
from . import nccl_tests, xla_nvl72
from .switches import NVL72_XLA, Switch

NOISE = 0.01
"""A measured fall must exceed 1% to count (repeats of one size in measured_comm.csv differ by 1-5%)."""

MEASURED_COMM = {
    "hgx-a100": "a100_sxm",
    "hgx-h100": "h100_sxm",
    "hgx-b200": "b200_sxm",
    "hgx-b300": "b300_sxm",
    "gb300-nvl72": "gb300",
    "l40s-pcie-nps1-degraded": "l40s",
}


SAME_ENGINE_KERNELS = {"hgx-h200": "hgx-h100", "hgx-h20": "hgx-h100"}
"""Systems whose engine all-reduce (vLLM, SGLang, TensorRT-LLM kernels, and the NCCL they fall back
to) is measured on another: H200 and H20 are GH100 GPUs on the same NVLink 4 (18 links, 900 GB/s)
and third-generation NVSwitch as H100 (catalog/systems.toml), so the same kernels cross the same
rule edges at the same cost there (the model prices them alike: custom_allreduce.toml is keyed by
generation and the ring's busbw is the fabric's). Their steps are H100's rows (engines only; NCCL's
own choice is left to its own tables)."""

SAME_RELEASE = {("vllm-0.19", "a100_sxm"): "0.14.0", ("vllm-0.19", "l40s"): "0.14.0"}
"""Where vllm-0.19's release (0.19.0) runs the same kernels by the same rule as the release
measured: on SM 8.0 and 8.9 there is no symmetric-memory path (vllm.toml symm_mem archs 9.0, 10.0,
10.3), and custom_all_reduce's kernels and thresholds did not change from 0.14.0 to 0.19.0 (the
H100 rows of the two releases agree within 5% at every size the custom kernel runs in both:
tests/validation/test_engine_edges.py test_vllm_0_14_rows_stand_for_0_19)."""


@lru_cache(maxsize=None)
def series(system: str, gpus: int, impl: str, op: str = "all-reduce") -> tuple[str, dict[int, float]]:
    """(source, {bytes: us}) measured for this system, GPU count, library (at the release the model
    follows: an engine's preset version exactly; NCCL's newest table) and op; empty where there is none."""
    if system == "rtx4090-pcie" and impl == "nccl" and op == "all-reduce":
        rows = [
            r
            for r in nccl_tests.load_rows()
            if r.kept
            and r.source_id == "kalavai-4090"
            and r.op == "all-reduce"
            and r.catalog_system == system
            and r.gpus == gpus
            and r.time_s
        ]
        return (
            "nccl_tests.csv kalavai-client scripts/README.md (Kubernetes pod)",
            {int(r.size_bytes): r.time_s * 1e6 for r in rows},
        )
    stand_in = SAME_ENGINE_KERNELS.get(system) if impl != "nccl" else None
    if (stand_in or system) not in MEASURED_COMM:
        return xla_series(system, gpus, impl, op)
    key = MEASURED_COMM[stand_in or system]
    # eager: vLLM's kernel launched without graphs, measured at vllm-0.19's release (the rows' own preset)
    library, mode = ("vllm-0.19", "eager") if impl == "eager" else (impl, "" if impl == "nccl" else "graph")
    pin = mc.pinned_version(library)
    pin = SAME_RELEASE.get((library, key), pin)
    rows = [
        r
        for r in mc.load_rows()
        if r.key == key
        and r.library == library
        and r.mode == mode
        and r.op == op
        and r.gpus == gpus
        and (pin is None or r.version == pin)
    ]
    if not rows:
        return xla_series(system, gpus, impl, op)
    label = {
        "nccl": "NCCL",
        "vllm": "vLLM_custom_graph",
        "vllm-0.19": "vLLM_custom_graph",
        "sglang": "SGLang_CustomAllReduce_graph",
        "sglang-0.5.14": "SGLang_CustomAllReduce_graph",
        "trtllm": "TRTLLM",
        "trtllm-1.0": "TRTLLM",
        "eager": "vLLM_custom_eager",
    }[impl]
    what = "" if op == "all-reduce" else f" {op}"
    whose = f" (for {system}: SAME_ENGINE_KERNELS)" if stand_in else ""
    return (
        f"measured_comm.csv {key} {label} {rows[0].version}{what}{whose}",
        {int(r.size_bytes): r.time_s * 1e6 for r in rows},
    )


def xla_series(system: str, gpus: int, impl: str, op: str) -> tuple[str, dict[int, float]]:
    """An NVL72's NCCL all-gather in XLA's table (xla_nvl72: GB200 sm_100_GB200, GB300 sm_103), where
    measured_comm.csv has no rows (it stops at 4 GB300 GPUs): whole executables, the collective plus
    XLA's launch, the same few us on either side of a switch. Its reduce-scatter rows are no NCCL
    time (1.3-2 us at 72 GPUs) and are not read."""
    if system not in NVL72_XLA or impl != "nccl" or op != "all-gather":
        return ("", {})
    rows = [r for r in xla_nvl72.load_rows(min_gpus=gpus, op=op, system=system) if r.gpus == gpus]
    if not rows:
        return ("", {})
    return (
        f"xla_collective_perf_table.csv {xla_nvl72.DEVICES[system]} all-gather (NCCL + XLA launch)",
        {int(r.size_bytes): r.xla_time_s * 1e6 for r in rows},
    )


@lru_cache(maxsize=None)
def mnnvl_series(gpus: int, kernel: str) -> dict[int, float]:
    """TensorRT-LLM's MNNVL one-shot or two-shot rows on GB300 trays (measured_comm.csv times each
    kernel apart: TRTLLM_MNNVL_oneshot / _twoshot)."""
    with mc.find_file(None).open(newline="") as f:
        return {
            int(r["bytes"]): float(r["time_us"])
            for r in csv.DictReader(f)
            if r["library"] == f"TRTLLM_MNNVL_{kernel}"
            and int(r["num_gpus"]) == gpus
            and r["lib_version"] == mc.pinned_version("trtllm")
        }


def measured_at_edge(s: Switch) -> tuple[float, float, str] | None:
    """(lower kernel's rows at the edge, upper kernel's rows at the edge, the rows quoted), each side's
    two nearest rows extended along their line; None where the table has no two rows each side.
    Where the table times the two kernels apart (MNNVL), each side reads its own kernel's rows."""
    if s.impl == "trtllm" and s.before.startswith("one-shot/") and s.system == "gb300-nvl72":
        source = f"measured_comm.csv gb300 TRTLLM_MNNVL_oneshot / _twoshot {series(s.system, 2, 'trtllm')[0][-9:]}"
        lo_t, hi_t = mnnvl_series(s.gpus, "oneshot"), mnnvl_series(s.gpus, "twoshot")
        below = [n for n in sorted(lo_t) if n <= s.edge_bytes][-2:]
    else:
        source, lo_t = series(s.system, s.gpus, s.impl, s.op)
        hi_t = lo_t
        below = [n for n in sorted(lo_t) if n < s.edge_bytes][-2:]
    above = [n for n in sorted(hi_t) if n >= s.edge_bytes][:2]
    if len(below) < 2 or len(above) < 2:
        return None

    def at(t: dict[int, float], a: int, b: int) -> float:
        return t[a] + (t[b] - t[a]) * (s.edge_bytes - a) / (b - a)

    quoted = ", ".join([f"{lo_t[n]:.2f} us at {n} B" for n in below] + [f"{hi_t[n]:.2f} us at {n} B" for n in above])
    return at(lo_t, *below), at(hi_t, *above), f"{source}, {s.gpus} GPUs: {quoted}"


def measured_fall(s: Switch) -> bool:
    m = measured_at_edge(s)
    return m is not None and m[0] > m[1] * (1 + NOISE)
