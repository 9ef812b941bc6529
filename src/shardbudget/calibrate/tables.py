"""Which catalog entries the calibration writes, in the files' own units and digits (`FIELDS`), and the
values of a fit for each of them (`fitted_values`).

Every number below is fitted, never typed: `python -m shardbudget.calibrate` writes them and
`--check` compares them (check.py). The digits a field is written with are its tolerance: a value
agrees with a fresh fit when they differ by at most one unit of its last written digit (a fit that
lands on a rounding boundary may round either way on another machine).

  catalog/nccl.toml            [nccl.calibrated] nvls_link_efficiency (the fabrics' keys; the generation
                               keys are kept as written), nvls_decay_per_rank,
                               nvls_small_latency_per_doubling_us, ring_efficiency, shm_ll_bandwidth_fraction;
                               [nccl.calibrated.arch.<generation>] base_offset_us, nvlink_hop_scale,
                               nvls_small_latency_us
  catalog/custom_allreduce.toml [engines.<engine>] launch_us, per_peer_us, two_shot_extra_us,
                               one_shot_efficiency, one_shot_efficiency_by_arch, two_shot_efficiency, and
                               the multi-node NVLink kernels' mnnvl_* where fitted
  catalog/fabrics.toml         [fabrics.<fabric>] achievable_bandwidth of the PCIe fabrics fit_pcie measures
  catalog/cpus.toml            [cpus.<cpu>] host_bandwidth, socket_stream_bandwidth
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .constants import US, Calibration

NUMBER, TABLE, NESTED, RATE = "number", "table", "nested", "rate"


@dataclass(frozen=True)
class Field:
    """One fitted catalog entry: `key` of `[table]` in catalog/`file`."""

    file: str
    table: str
    key: str
    kind: str
    """NUMBER, TABLE (an inline table of numbers), NESTED (an inline table of inline tables), or RATE
    (a string "<number> GB/s")."""
    digits: int
    """Decimals written, or significant digits where `significant` (a RATE always)."""
    significant: bool = False
    keep_other_keys: bool = False
    """A table whose keys the fit does not all produce keeps the others as written (nvls_link_efficiency's
    generation keys); otherwise a key the fit no longer produces is removed."""

    @property
    def where(self) -> str:
        return f"{self.file} [{self.table}] {self.key}"

    def unit(self, value: float) -> float:
        """One unit of the last written digit of `value`: the tolerance of the check."""
        if (self.significant or self.kind == RATE) and value:
            return 10.0 ** (math.floor(math.log10(abs(value))) - self.digits + 1)
        return 10.0**-self.digits

    def render_number(self, value: float) -> str:
        """`value` as the file writes it: fixed decimals (or significant digits), a whole number as N.0."""
        if self.kind == RATE:
            return f'"{value:.{self.digits}g} GB/s"'
        text = f"{value:.{self.digits}g}" if self.significant else f"{value:.{self.digits}f}"
        if float(text) == round(float(text)):
            return f"{round(float(text)):.1f}"
        return text


def _fields_of_arch(arch: str) -> list[Field]:
    t = f"nccl.calibrated.arch.{arch}"
    return [
        Field("nccl.toml", t, "base_offset_us", TABLE, 2),
        Field("nccl.toml", t, "nvlink_hop_scale", TABLE, 3, significant=True),
        Field("nccl.toml", t, "nvls_small_latency_us", NUMBER, 2),
    ]


_ENGINE_KEYS = (
    ("launch_us", TABLE, 2),
    ("per_peer_us", NUMBER, 3),
    ("two_shot_extra_us", TABLE, 2),
    ("one_shot_efficiency", TABLE, 3),
    ("one_shot_efficiency_by_arch", NESTED, 3),
    ("two_shot_efficiency", TABLE, 3),
    ("mnnvl_one_shot_efficiency", TABLE, 3),
    ("mnnvl_two_shot_efficiency", TABLE, 3),
    ("mnnvl_launch_us", NUMBER, 2),
    ("mnnvl_per_peer_us", NUMBER, 3),
)
_ENGINE_SCALE = {
    "launch_us": 1 / US,
    "per_peer_us": 1 / US,
    "two_shot_extra_us": 1 / US,
    "mnnvl_launch_us": 1 / US,
    "mnnvl_per_peer_us": 1 / US,
}
_ENGINE_FIT_KEY = {
    "launch_us": "launch_s",
    "per_peer_us": "per_peer_s",
    "two_shot_extra_us": "two_shot_extra_s",
    "mnnvl_launch_us": "mnnvl_launch_s",
    "mnnvl_per_peer_us": "mnnvl_per_peer_s",
}


def _scaled(value, scale: float):
    if isinstance(value, (int, float)):
        return float(value) * scale
    return {str(k): _scaled(v, scale) for k, v in value.items()}


def _nccl_values(cal: Calibration) -> dict[Field, object]:
    t = "nccl.calibrated"
    out: dict[Field, object] = {
        Field("nccl.toml", t, "nvls_link_efficiency", TABLE, 3, keep_other_keys=True): dict(cal.nvls_link_efficiency),
        Field("nccl.toml", t, "nvls_decay_per_rank", NUMBER, 3, significant=True): cal.nvls_decay_per_rank,
        Field("nccl.toml", t, "ring_efficiency", TABLE, 3): {str(g): v for g, v in sorted(cal.ring_efficiency.items())},
    }
    if cal.nvls_small_per_doubling_s is not None:
        out[Field("nccl.toml", t, "nvls_small_latency_per_doubling_us", NUMBER, 2)] = cal.nvls_small_per_doubling_s / US
    if cal.shm_ll_bandwidth_fraction is not None:
        out[Field("nccl.toml", t, "shm_ll_bandwidth_fraction", NUMBER, 2)] = cal.shm_ll_bandwidth_fraction
    for arch, floor in sorted(cal.arch.items()):
        offset, scale, small = _fields_of_arch(arch)
        out[offset] = {p: floor.base_offset_s[p] / US for p in ("ll", "ll128", "simple")}
        out[scale] = {p: floor.nvlink_hop_scale[p] for p in ("ll", "ll128", "simple")}
        if floor.nvls_small_latency_s:
            out[small] = floor.nvls_small_latency_s / US
    return out


def _engine_values(cal: Calibration) -> dict[Field, object]:
    out: dict[Field, object] = {}
    for engine, fit in sorted(cal.engines.items()):
        for key, kind, digits in _ENGINE_KEYS:
            value = fit.get(_ENGINE_FIT_KEY.get(key, key))
            if value is not None:
                out[Field("custom_allreduce.toml", f"engines.{engine}", key, kind, digits)] = _scaled(
                    value, _ENGINE_SCALE.get(key, 1.0)
                )
    return out


def _platform_values(cal: Calibration) -> dict[Field, object]:
    out: dict[Field, object] = {}
    for fabric, rate in sorted(cal.fabric_achievable.items()):
        out[Field("fabrics.toml", f"fabrics.{fabric}", "achievable_bandwidth", RATE, 3)] = rate / 1e9
    for cpu, rate in sorted(cal.cpu_host.items()):
        out[Field("cpus.toml", f"cpus.{cpu}", "host_bandwidth", RATE, 3)] = rate / 1e9
    for cpu, rate in sorted(cal.cpu_stream.items()):
        out[Field("cpus.toml", f"cpus.{cpu}", "socket_stream_bandwidth", RATE, 3)] = rate / 1e9
    return out


def fitted_values(cal: Calibration) -> dict[Field, object]:
    """Every fitted catalog entry and its value in the file's units (us, GB/s, shares): a number, a
    {key: number} table or a {key: {key: number}} table."""
    return {**_nccl_values(cal), **_engine_values(cal), **_platform_values(cal)}
