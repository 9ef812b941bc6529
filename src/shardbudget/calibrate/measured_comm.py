"""data/measured_comm.csv (NVIDIA aiconfigurator-core 0.12.0, Apache-2.0), mapped onto shardbudget's systems.

One loader for the calibration (`samples`), the held-out validation (`loso`) and the tests. What the file holds (its README):
NCCL all_reduce / all_gather / reduce_scatter / alltoall timed by an nccl-tests based collector
(out-of-place), and the inference engines' own all-reduce path (vLLM custom_all_reduce, SGLang's
custom all-reduce, TensorRT-LLM's) timed by each engine's kernel benchmark, under CUDA graphs
(`_graph`) or eagerly. Above their custom kernels' limits the engines call NCCL, so an engine row is
the engine's whole all-reduce path.

Choices, each deliberate:
- NCCL: the newest library version per system. An engine: the version its preset is pinned to
  (engines/<engine>.toml [engine] version), else the newest below it, else the oldest above it: the
  kernels' costs are fitted to the release whose rule the preset reads. A row of an older release
  with a preset of its own (`release_preset`: TensorRT-LLM 1.0.x -> trtllm-1.0, vLLM 0.19.0 -> vllm-0.19) is that preset's
  row (`library`), chosen among that preset's versions alike. Repeats of a size (several
  runs of one version) are reduced to their median.
- `bytes` is nccl-tests' size: checked on l40s, where 2-GPU all_gather at 512 MiB gives busbw 19.6 GB/s
  with bytes taken as the gathered output, against all_reduce's 20.1 GB/s on the same link.
- NCCL rows in `half` only (the int8 tables repeat the sizes).
- Eager engine rows are kept apart (`mode`): their 20-100 us floors are the engine's host-side
  launch path, not the kernel.
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..engines import load_engine
from ..engines.releases import preset_for
from .paths import data_file

SYSTEMS = {
    "a100_sxm": "hgx-a100",
    "h100_sxm": "hgx-h100",
    "b200_sxm": "hgx-b200",
    "b300_sxm": "hgx-b300",
    "gb300": "gb300-nvl72",
    "l40s": "l40s-pcie-nps1-degraded",
}
"""The file's system keys -> catalog systems (the README names the hardware only by device)."""
OPS = {
    "all_reduce": "all-reduce",
    "all_gather": "all-gather",
    "reduce_scatter": "reduce-scatter",
    "alltoall": "all-to-all",
}
ENGINES = {
    "vLLM_custom_graph": ("vllm", "graph"),
    "vLLM_custom_eager": ("vllm", "eager"),
    "SGLang_CustomAllReduce_graph": ("sglang", "graph"),
    "SGLang_CustomAllReduce_eager": ("sglang", "eager"),
    "TRTLLM": ("trtllm", "graph"),
    "TRTLLM_MNNVL_oneshot": ("trtllm", "graph"),
    "TRTLLM_MNNVL_twoshot": ("trtllm", "graph"),
}
"""library column -> (engine, mode). TensorRT-LLM's benchmark captures its all-reduce in a CUDA graph
(its 512 B times, 2.6-4.6 us on NVLink, have no host launch in them)."""


def release_preset(engine: str, version: str) -> str:
    """The preset that prices a row of `engine` at `version`: the oldest preset of the engine's line at
    or after that release (shardbudget.engines.releases.preset_for): TensorRT-LLM 1.0.0 -> trtllm-1.0,
    1.3.0rc20 -> trtllm; vLLM 0.14.0 / 0.19.0 -> vllm-0.19; SGLang 0.5.10 / 0.5.14 -> sglang-0.5.14."""
    return preset_for(engine, version).preset


@dataclass(frozen=True)
class CommRow:
    key: str
    """The file's system key (a100_sxm, ...)."""
    system: str
    """Catalog system."""
    library: str
    """"nccl" or the engine preset of the row's release: vllm-0.19, sglang-0.5.14, trtllm, trtllm-1.0."""
    mode: str
    """"graph" or "eager" for engine rows, "" for NCCL."""
    version: str
    op: str
    gpus: int
    size_bytes: float
    time_s: float
    """Median over the rows of this size."""
    repeats: int
    source: str

    @property
    def nodes(self) -> int:
        return 1  # every row is inside one NVLink domain or one PCIe box


def _version_key(v: str) -> tuple:
    parts = []
    for piece in v.replace("rc", ".").replace("+", ".").split("."):
        parts.append(int(piece) if piece.isdigit() else -1)
    return tuple(parts)


def pinned_version(library: str) -> str | None:
    """The release an engine's preset is pinned to (None for NCCL)."""
    if library == "nccl":
        return None
    return load_engine(library).version


def _chosen(library: str, versions: set[str]) -> str:
    """NCCL: the newest. An engine: its pinned release, else the newest below it, else the oldest above."""
    pin = pinned_version(library)
    ordered = sorted(versions, key=_version_key)
    if pin is None:
        return ordered[-1]
    below = [v for v in ordered if _version_key(v) <= _version_key(pin)]
    return below[-1] if below else ordered[0]


def find_file(data_dir: Path | str | None = None) -> Path:
    """data/measured_comm.csv (or the one in `data_dir`)."""
    return data_file("measured_comm.csv", data_dir)


@lru_cache(maxsize=4)
def _load(path: str) -> tuple[CommRow, ...]:
    groups: dict[tuple, list[float]] = defaultdict(list)
    sources: dict[tuple, str] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r["system"] not in SYSTEMS:
                continue
            if r["library"] == "NCCL":
                if r["dtype"] != "half" or r["op"] not in OPS:
                    continue
                lib, mode = "nccl", ""
            elif r["library"] in ENGINES and r["op"] == "all_reduce":
                lib, mode = ENGINES[r["library"]]
                lib = release_preset(lib, r["lib_version"])
            else:
                continue
            k = (r["system"], lib, mode, r["lib_version"], OPS[r["op"]], int(r["num_gpus"]), int(r["bytes"]))
            groups[k].append(float(r["time_us"]) * 1e-6)
            sources[k] = r["source"]
    versions: dict[tuple, set[str]] = defaultdict(set)
    for key, lib, mode, version, *_rest in groups:
        versions[(key, lib, mode)].add(version)
    newest = {k: _chosen(k[1], v) for k, v in versions.items()}
    out = []
    for k, times in sorted(groups.items()):
        key, lib, mode, version, op, gpus, size = k
        if newest[(key, lib, mode)] != version:
            continue
        out.append(
            CommRow(
                key=key,
                system=SYSTEMS[key],
                library=lib,
                mode=mode,
                version=version,
                op=op,
                gpus=gpus,
                size_bytes=float(size),
                time_s=statistics.median(times),
                repeats=len(times),
                source=sources[k],
            )
        )
    return tuple(out)


def load_rows(data_dir: Path | str | None = None) -> list[CommRow]:
    return list(_load(str(find_file(data_dir))))


def select(
    rows: Iterable[CommRow],
    *,
    library: str | None = None,
    mode: str | None = None,
    op: str | None = None,
    system: str | None = None,
    gpus: Sequence[int] | None = None,
    lo: float = 0.0,
    hi: float = float("inf"),
) -> list[CommRow]:
    return [
        r
        for r in rows
        if (library is None or r.library == library)
        and (mode is None or r.mode == mode)
        and (op is None or r.op == op)
        and (system is None or r.system == system)
        and (gpus is None or r.gpus in gpus)
        and lo <= r.size_bytes <= hi
    ]
