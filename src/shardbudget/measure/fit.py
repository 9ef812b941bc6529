"""Turn measurements into a calibrated profile: a system in catalog format with fitted constants.

The fitted parameters are the collective model's own physical ones (see `collectives`):

- the intra-node fabric's achievable bus bandwidth and a scale on its per-hop latencies;
- with multi-node samples, the same two for the NIC fabric;
- a scale on NCCL's per-call base latencies (the software stack: NCCL version, launch mode).

They are fitted by robust least squares (soft-L1 loss) on log(predicted / measured), so a 10% miss
at 8 B weighs as much as a 10% miss at 1 GiB and a few outliers do not drag the fit. A held-out
check fits on all GPU counts but one and predicts that one, for each count in turn.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import tomli_w

from ..atomic import check_output_path, write_atomic
from ..collectives import candidates, make_group, normalize_op, nvls_efficiency, pick
from ..errors import MeasureError
from ..hardware import Catalog, Fabric, System, load_catalog
from .logs import MeasurementSet, Sample


@dataclass(frozen=True)
class Params:
    intra_bytes_per_s: float
    intra_hop_scale: float
    base_scale: float
    nic_bytes_per_s: float | None = None
    nic_hop_scale: float | None = None
    at_bound: tuple[str, ...] = ()
    """Parameters the fit pushed to their physical limits: the data does not look like this system."""

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None and v != ()}


@dataclass(frozen=True)
class Residual:
    op: str
    msg_bytes: float
    ranks: int
    nodes: int
    measured_s: float
    predicted_s: float
    algorithm: str
    protocol: str

    @property
    def rel_error(self) -> float:
        return self.predicted_s / self.measured_s - 1

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["rel_error"] = self.rel_error
        return d


@dataclass(frozen=True)
class FitResult:
    name: str
    base_system: str
    params: Params
    residuals: tuple[Residual, ...]
    heldout: dict[int, float]
    """GPU count -> median |relative error| when that count was left out of the fit."""
    system: System
    sources: tuple[str, ...]

    @property
    def median_abs_error(self) -> float:
        return float(np.median([abs(r.rel_error) for r in self.residuals]))

    @property
    def worst_abs_error(self) -> float:
        return float(max(abs(r.rel_error) for r in self.residuals))

    def to_dict(self) -> dict:
        return {"name": self.name, "base_system": self.base_system, "params": self.params.to_dict(),
                "median_abs_error": self.median_abs_error, "worst_abs_error": self.worst_abs_error,
                "heldout_median_abs_error": self.heldout, "sources": list(self.sources),
                "residuals": [r.to_dict() for r in self.residuals]}


def _nodes_of(s: Sample, system: System) -> int:
    if s.n_nodes:
        return s.n_nodes
    return max(1, math.ceil(s.n_ranks / system.gpus_per_node))


def _usable(samples: Sequence[Sample], system: System) -> list[Sample]:
    out = []
    for s in samples:
        nodes = _nodes_of(s, system)
        if s.n_ranks < 2 or s.n_ranks % nodes or s.n_ranks // nodes > system.gpus_per_node:
            continue
        if s.in_place:  # out-of-place is nccl-tests' reference column; in-place would double count
            continue
        out.append(s)
    return out


def _variant(base: System, p: Params, *, name: str, sources: str, catalog: Catalog | None = None) -> System:
    # A fitted link is uniformly faster or slower: its peak (which NVLS uses) scales with its
    # achievable rate, and it keeps the base fabric's NVLS efficiency.
    ratio = p.intra_bytes_per_s / base.intra_fabric.achievable_bytes_per_s
    intra = replace(base.intra_fabric, name=f"{name}-intra",
                    achievable_bytes_per_s=p.intra_bytes_per_s,
                    bytes_per_s=base.intra_fabric.bytes_per_s * ratio,
                    nvls_efficiency=nvls_efficiency(base, catalog) if catalog else base.intra_fabric.nvls_efficiency,
                    hop_latency_s={k: v * p.intra_hop_scale for k, v in base.intra_fabric.hop_latency_s.items()},
                    figure="measured", achievable_source=f"fitted on {sources}")
    nic = base.nic_fabric
    if nic is not None and p.nic_bytes_per_s is not None:
        nic = replace(nic, name=f"{name}-nic", achievable_bytes_per_s=p.nic_bytes_per_s,
                      bytes_per_s=max(nic.bytes_per_s, p.nic_bytes_per_s),
                      hop_latency_s={k: v * p.nic_hop_scale for k, v in nic.hop_latency_s.items()},
                      figure="measured", achievable_source=f"fitted on {sources}")
    # the cross-socket / PCIe paths keep their catalog values: measurements rarely isolate them
    return replace(base, name=name, intra_fabric=intra, nic_fabric=nic, base_latency_scale=p.base_scale,
                   profile_source=sources, source=f"fitted profile of {base.name} on {sources}")


def _predict(system: System, catalog: Catalog, s: Sample) -> tuple[float, str, str]:
    nodes = _nodes_of(s, system)
    group = make_group(system, nodes=nodes, gpus=s.n_ranks, catalog=catalog)
    c = pick(candidates(group, normalize_op(s.op), "nccl"), s.msg_bytes)
    return c.time_s(s.msg_bytes), c.algorithm, c.protocol


def _unpack(x: np.ndarray, multi: bool) -> Params:
    e = np.exp(x)
    return Params(float(e[0]), float(e[1]), float(e[2]), *((float(e[3]), float(e[4])) if multi else (None, None)))


def _fit(base: System, catalog: Catalog, samples: Sequence[Sample], *, name: str, sources: str) -> Params:
    from scipy.optimize import least_squares
    multi = any(_nodes_of(s, base) > 1 for s in samples) and base.nic_fabric is not None
    x0 = [math.log(base.intra_fabric.achievable_bytes_per_s), 0.0, 0.0]
    if multi:
        x0 += [math.log(base.nic_fabric.achievable_bytes_per_s), 0.0]
    meas = np.log([s.time_s for s in samples])

    def residuals(x):
        system = _variant(base, _unpack(x, multi), name=name, sources=sources, catalog=catalog)
        pred = [_predict(system, catalog, s)[0] for s in samples]
        return np.log(pred) - meas

    # Bounds keep the parameters physical: latency scales within 1/20..20, bandwidth within 1e6..1e13 B/s.
    lo = [math.log(1e6), math.log(0.05), math.log(0.05)] + ([math.log(1e6), math.log(0.05)] if multi else [])
    hi = [math.log(1e13), math.log(20), math.log(20)] + ([math.log(1e13), math.log(20)] if multi else [])
    res = least_squares(residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.1, max_nfev=200)
    names = ["intra-node bandwidth", "intra-node hop latency scale", "base latency scale",
             "NIC bandwidth", "NIC hop latency scale"]
    at_bound = [names[i] for i, (x, a, b) in enumerate(zip(res.x, lo, hi)) if min(x - a, b - x) < 1e-3]
    return replace(_unpack(res.x, multi), at_bound=tuple(at_bound))


def fit_profile(sets: Sequence[MeasurementSet], *, name: str, base_system: str,
                catalog: Catalog | None = None, holdout: bool = True) -> FitResult:
    catalog = catalog or load_catalog()
    base = catalog.system(base_system)
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise MeasureError(f"profile name {name!r} must be letters, digits, '-' or '_'")
    if name in catalog.systems:
        raise MeasureError(f"profile name {name!r} is already a catalog system; choose another --name")
    samples = _usable([s for ms in sets for s in ms.samples], base)
    if len(samples) < 3:
        raise MeasureError(f"need at least 3 usable out-of-place samples with 2+ ranks that fit {base.name} "
                           f"({base.gpus_per_node} GPUs per node); got {len(samples)}")
    sources = ", ".join(os.path.basename(ms.source) for ms in sets)
    params = _fit(base, catalog, samples, name=name, sources=sources)
    system = _variant(base, params, name=name, sources=sources, catalog=catalog)
    residuals = []
    for s in samples:
        t, algo, proto = _predict(system, catalog, s)
        residuals.append(Residual(s.op, s.msg_bytes, s.n_ranks, _nodes_of(s, base), s.time_s, t, algo, proto))
    heldout = _heldout(base, catalog, samples, name=name, sources=sources) if holdout else {}
    return FitResult(name, base.name, params, tuple(residuals), heldout, system, tuple(ms.source for ms in sets))


def _heldout(base: System, catalog: Catalog, samples: Sequence[Sample], *, name: str,
             sources: str) -> dict[int, float]:
    counts = sorted({s.n_ranks for s in samples})
    out: dict[int, float] = {}
    if len(counts) < 2:
        return out
    for left_out in counts:
        train = [s for s in samples if s.n_ranks != left_out]
        test = [s for s in samples if s.n_ranks == left_out]
        if len(train) < 3:
            continue
        params = _fit(base, catalog, train, name=name, sources=sources)
        system = _variant(base, params, name=name, sources=sources, catalog=catalog)
        errs = [abs(_predict(system, catalog, s)[0] / s.time_s - 1) for s in test]
        out[left_out] = float(np.median(errs))
    return out


# --- writing the profile --------------------------------------------------------------------

def _fabric_table(f: Fabric) -> dict:
    t = {"kind": f.kind, "description": f"{f.description} (fitted)", "nccl_link": f.nccl_link,
         "bandwidth": f"{f.bytes_per_s / 1e9:.6g} GB/s", "achievable_bandwidth": f"{f.achievable_bytes_per_s / 1e9:.6g} GB/s",
         "hop_latency": {k: f"{v * 1e6:.6g} us" for k, v in f.hop_latency_s.items()},
         "in_switch_reduction": f.in_switch_reduction, "p2p": f.p2p, "links_per_gpu": f.links_per_gpu,
         **({"nvls_efficiency": f.nvls_efficiency} if f.nvls_efficiency is not None else {}),
         "figure": "measured", "source": f.source, "achievable_source": f.achievable_source}
    return t


def profile_toml(result: FitResult) -> dict:
    s = result.system
    doc = {"meta": {"tool": "shardbudget fit", "base_system": result.base_system,
                    "median_abs_error": result.median_abs_error, "worst_abs_error": result.worst_abs_error,
                    "measurements": list(result.sources)},
           "fabrics": {s.intra_fabric.name: _fabric_table(s.intra_fabric)}, "systems": {}}
    if s.nic_fabric is not None and s.nic_fabric.name.startswith(result.name):
        doc["fabrics"][s.nic_fabric.name] = _fabric_table(s.nic_fabric)
    sys_t = {"description": f"{s.description} -- fitted profile", "gpu": s.gpu.name, "gpus_per_node": s.gpus_per_node,
             "topology": s.topology, "intra_fabric": s.intra_fabric.name, "gpus_per_socket": s.gpus_per_socket,
             "nics_per_node": s.nics_per_node, "rail_optimized": s.rail_optimized, "domain_gpus": s.domain_gpus,
             "base_latency_scale": s.base_latency_scale, "profile_source": s.profile_source, "source": s.source}
    for key, fab in (("fallback_fabric", s.fallback_fabric), ("socket_fabric", s.socket_fabric), ("nic_fabric", s.nic_fabric)):
        if fab is not None:
            sys_t[key] = fab.name
    doc["systems"][s.name] = sys_t
    return doc


def check_profile_path(path: str | os.PathLike, *, force: bool = False) -> Path:
    """Where a profile may be written, checked before any work is done (and again when writing)."""
    return check_output_path(path, what="the profile", force=force, error=MeasureError)


def write_profile(result: FitResult, path: str | os.PathLike, *, force: bool = False) -> Path:
    path = check_profile_path(path, force=force)
    text = tomli_w.dumps(profile_toml(result))
    header = f"# shardbudget profile {result.name}: {result.base_system} with constants fitted on measurements\n"
    try:
        write_atomic(path, header + text)
    except OSError as err:
        raise MeasureError(f"cannot write {path}: {err.strerror or err}") from None
    return path
