"""Turn measurements into a calibrated profile: a system in catalog format with fitted constants.

The fitted parameters are the collective model's own physical ones (see `collectives`):

- the intra-node fabric's achievable bus bandwidth and a scale on its per-hop latencies;
- with multi-node samples, the same two for the NIC fabric;
- a scale on NCCL's per-call base latencies (the software stack: NCCL version, launch mode).

Each link is blamed only by the data that can see it. The intra-node link is fitted on single-node
samples only: a multi-node run's time is set by whichever of its links is slowest, and a run that is
slower than the catalog says blames the link the run adds, the network, not the NVSwitch it shares
with every single-node run. So the fit runs in two stages, single-node samples first (intra-node
bandwidth, hop scale, base scale), then multi-node samples with the intra-node link held (NIC
bandwidth and hop scale, and the base scale if the first stage could not see it). Within a stage a
bandwidth is fitted only when some sample's predicted time is mostly its bandwidth term, a latency
scale only when some sample is mostly latency; whatever the data cannot see keeps its catalog value,
and the result says which were fitted (`Params.fitted`) and through which algorithm the bandwidth
was seen (ring link or NVLS).

Runs that force NCCL's choice (NCCL_ALGO / NCCL_PROTO in the command line or the log's notes) are
predicted with that algorithm; NCCL_IB_DISABLE=1 marks the network as NCCL's socket transport.

They are fitted by robust least squares (soft-L1 loss) on log(predicted / measured), so a 10% miss
at 8 B weighs as much as a 10% miss at 1 GiB and a few outliers do not drag the fit. A held-out
check fits on all GPU counts but one and predicts that one, for each count in turn; a held-out
median error above `HELDOUT_WARN` is a warning: the profile does not extrapolate.

A profile outside physical bounds is refused (`MeasureError`, the bound in the message) unless
forced (`fit --force`, then a warning): a fitted link faster than its fabric's datasheet rate per
direction (`DATASHEET_SLACK` for timing noise), or a collective predicted faster than
`LATENCY_FLOOR_S`. Such a profile is not this hardware: times of 0.01-0.16 us once fitted an
NVLink of 12,329 GB/s that loaded without a word (issue 33, item 12).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ...comm.op import busbw_factor
from ...comm.collectives import candidates, make_group, normalize_op, nvls_efficiency, pick
from ...datafile import find
from ...errors import MeasureError
from ...fabric.hardware import Catalog, System
from ...fabric.catalog import load_catalog
from ...fabric.ring_path import ring_path
from ...comm.nccl_algos import nic_bytes_per_s
from ...units import format_bytes, format_rate, format_seconds
from .fit_write import check_profile_path, profile_toml, scale_node, write_profile  # noqa: F401 (re-exported)
from ..logs.read import MeasurementSet, Sample

HELDOUT_WARN = 0.25
"""Held-out median |error| above which the fit warns (issue 12: 25%)."""
FIT_DIGITS = 4
"""Significant digits a fitted parameter keeps. The soft-L1 minimum is flat: its cost changes by a
rounding error where a parameter moves by ~1e-8 of itself, so the solver stops anywhere in that span
and another machine's arithmetic lands elsewhere in it (issue 35: an 8 GiB prediction printed as
48613.42 us on one machine and 48613.43 on another). Rounded to 4 digits (309.6 GB/s, x1.166), far
finer than the data's own scatter, the parameters, the profile written and every prediction printed
from them are the same on any machine (unless a fit lands within ~1e-8 of a rounding edge)."""
PARAMS = ("intra_bw", "intra_hop", "base", "nic_bw", "nic_hop")
_LABELS = {
    "intra_bw": "intra-node bandwidth",
    "intra_hop": "intra-node hop latency scale",
    "base": "base latency scale",
    "nic_bw": "NIC bandwidth",
    "nic_hop": "NIC hop latency scale",
}
# Bounds keep the parameters physical: latency scales within 1/20..20, bandwidth within 1e6..1e13 B/s.
_BOUNDS = {
    "intra_bw": (math.log(1e6), math.log(1e13)),
    "nic_bw": (math.log(1e6), math.log(1e13)),
    "intra_hop": (math.log(0.05), math.log(20)),
    "nic_hop": (math.log(0.05), math.log(20)),
    "base": (math.log(0.05), math.log(20)),
}
_ALGOS = {"ring": "ring", "tree": "tree", "nvls": "nvls", "nvlstree": "hierarchical", "pat": "ring"}
DATASHEET_SLACK = 1.05
"""A fitted bandwidth may pass its fabric's datasheet rate by timing noise (nccl-tests' clock, columns
rounded to 0.01): 5 %. Beyond, the data is not this link (NVL72 trays logged as nodes, a wrong --base-system)."""
LATENCY_FLOOR_S = 1e-6
"""No collective between GPUs completes in under 1 us: launching its kernel costs ~2-3 us from the host
and ~1 us per kernel node in a CUDA graph, and nccl-tests' fastest all-reduce on NVLink takes ~5 us
(NCCL's LL base latency alone is 6.8 us in tuning.cc). A profile that predicts less is not physical."""


@dataclass(frozen=True)
class Params:
    intra_bytes_per_s: float
    intra_hop_scale: float
    base_scale: float
    nic_bytes_per_s: float | None = None
    nic_hop_scale: float | None = None
    at_bound: tuple[str, ...] = ()
    """Parameters the fit pushed to their physical limits: the data does not look like this system."""
    fitted: tuple[str, ...] = ()
    """Which of PARAMS the data could see and the fit moved; the others keep their catalog values."""
    intra_seen: str = ""
    """How the data saw the intra-node bandwidth: "ring link", "NVLS", "ring link and NVLS", or "" (not seen)."""
    nic_seen: str = ""
    network: str = ""
    """How the runs crossed nodes where the logs say: "socket transport (NCCL_IB_DISABLE=1)"."""

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None and v != () and v != ""}


@dataclass(frozen=True)
class Obs:
    """One sample and what its run forced: the algorithms and protocols NCCL could choose from."""

    sample: Sample
    nodes: int
    algos: tuple[str, ...] = ()
    protos: tuple[str, ...] = ()
    socket: bool = False


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
    warnings: tuple[str, ...] = ()
    """One line each: a held-out error above HELDOUT_WARN, a forced algorithm the model lacks."""
    notes: tuple[str, ...] = ()
    """What the data could and could not see (a link kept at its catalog value, and why)."""
    base_intra_bytes_per_s: float = 0.0
    """The base system's intra-node achievable bandwidth, which the fitted one is a multiple of."""

    @property
    def median_abs_error(self) -> float:
        return float(np.median([abs(r.rel_error) for r in self.residuals]))

    @property
    def worst_abs_error(self) -> float:
        return float(max(abs(r.rel_error) for r in self.residuals))

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "base_system": self.base_system,
            "params": self.params.to_dict(),
            "median_abs_error": self.median_abs_error,
            "worst_abs_error": self.worst_abs_error,
            "heldout_median_abs_error": self.heldout,
            "sources": list(self.sources),
            "headline": self.headline(),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "residuals": [r.to_dict() for r in self.residuals],
        }

    def headline(self) -> str:
        """One line naming each fitted bandwidth: which link, seen through which algorithm."""
        p, s = self.params, self.system
        intra = f"intra-node {s.intra_fabric.kind} ring-link busbw {format_rate(p.intra_bytes_per_s)}" + (
            f" (seen through {p.intra_seen})" if p.intra_seen else " (not seen by the data: catalog value)"
        )
        rings = _off_link_rings(self)
        if rings:  # the rings measured ran on other links than intra_fabric (a PCIe tree): say what they reach
            ratio = p.intra_bytes_per_s / self.base_intra_bytes_per_s
            intra = f"intra-node ring busbw {rings}" + (
                f"(every intra-node link and host path x{ratio:.3g} of {self.base_system}'s)"
                if p.intra_seen
                else "(not seen by the data: catalog values)"
            )
        nvls = _nvls_busbw(self)
        if nvls:
            intra += f", NVLS busbw {format_rate(nvls[1])} at {nvls[0]} GPUs"
        parts = [
            f"# profile {self.name} (from {self.base_system}): {intra}",
            f"hop latency x{p.intra_hop_scale:.2f}",
            f"base latency x{p.base_scale:.2f}",
        ]
        if p.nic_bytes_per_s:
            per_node = _per_node(self)
            net = f"network {format_rate(per_node)} per node ({s.nics_per_node} NICs x {format_rate(p.nic_bytes_per_s)}"
            net += f", seen through {p.nic_seen})" if p.nic_seen else ", not seen by the data: catalog value)"
            parts += [
                net + (f" over NCCL's {p.network}" if p.network else ""),
                f"NIC hop latency x{p.nic_hop_scale:.2f}",
            ]
        return ", ".join(parts)


def _off_link_rings(result: FitResult) -> str:
    """'2.35 GB/s at 2 GPUs (shm), ...' for the single-node rings measured, where some run on links
    other than the intra-node fabric (PCIe P2P through the host, SHM, across sockets); '' otherwise."""
    s = result.system
    counts = sorted({r.ranks for r in result.residuals if r.nodes == 1})
    paths = {g: ring_path(s, g) for g in counts}
    if all(set(path.name.split("+")) == {s.intra_fabric.name} for path in paths.values()):
        return ""
    return (
        ", ".join(
            f"{format_rate(path.busbw_bytes_per_s)} at {g} GPUs ({'/'.join(sorted(set(path.transports)))})"
            for g, path in paths.items()
        )
        + " "
    )


def counts_trays(ranks: int, logged: int, system: System) -> bool:
    """The log counts the system's hosts as nodes: NVL72's 4-GPU compute trays, where the catalog's
    node is the whole NVLink domain (mpirun and Slurm see hosts; the trays of a rack share its NVLink
    switches, and NCCL runs them as one NVLink domain)."""
    return bool(logged) and ranks % logged == 0 and ranks // logged == system.host_gpus < system.gpus_per_node


def _nodes_of(s: Sample, system: System) -> int:
    """The nodes a logged sample is priced on (fit and check alike): the log's own count, except
    where its nodes are the system's trays (counts_trays): then the NVLink domains they fill."""
    if s.n_nodes and not counts_trays(s.n_ranks, s.n_nodes, system):
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
    # achievable rate, and it keeps the base fabric's NVLS efficiency. The node's other intra-node
    # links scale with it (fit_write.scale_node): on a PCIe box the ring may never touch `intra_fabric`.
    ratio = p.intra_bytes_per_s / base.intra_fabric.achievable_bytes_per_s
    intra = replace(
        base.intra_fabric,
        name=f"{name}-intra",
        achievable_bytes_per_s=p.intra_bytes_per_s,
        bytes_per_s=base.intra_fabric.bytes_per_s * ratio,
        nvls_efficiency=nvls_efficiency(base, catalog) if catalog else base.intra_fabric.nvls_efficiency,
        hop_latency_s={k: v * p.intra_hop_scale for k, v in base.intra_fabric.hop_latency_s.items()},
        figure="measured",
        achievable_source=f"fitted on {sources}",
    )
    nic = base.nic_fabric
    if nic is not None and p.nic_bytes_per_s is not None:
        nic = replace(
            nic,
            name=f"{name}-nic",
            achievable_bytes_per_s=p.nic_bytes_per_s,
            bytes_per_s=max(nic.bytes_per_s, p.nic_bytes_per_s),
            hop_latency_s={k: v * p.nic_hop_scale for k, v in nic.hop_latency_s.items()},
            figure="measured",
            achievable_source=f"fitted on {sources}",
        )
    node = scale_node(base, ratio, name=name, sources=sources, intra=intra)
    return replace(
        node,
        name=name,
        nic_fabric=nic,
        base_latency_scale=p.base_scale,
        profile_source=sources,
        source=f"fitted profile of {base.name} on {sources}",
    )


def nccl_line(
    system: System,
    catalog: Catalog,
    op: str,
    msg_bytes: float,
    *,
    ranks: int,
    nodes: int,
    algos: Sequence[str] = (),
    protos: Sequence[str] = (),
):
    """The line NCCL runs for one sample: among the algorithms and protocols a run forced
    (NCCL_ALGO / NCCL_PROTO), else among all. `fit` and `check` price a sample with it alone."""
    group = make_group(system, nodes=nodes, gpus=ranks, catalog=catalog)
    pool = candidates(group, normalize_op(op), "nccl")
    forced = [c for c in pool if (not algos or c.algorithm in algos) and (not protos or c.protocol in protos)]
    return pick(forced or pool, msg_bytes)


def forced_by(ms: MeasurementSet, run: int) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """What a run of the log forced: (NCCL_ALGO's algorithms, NCCL_PROTO's protocols, NCCL_IB_DISABLE=1)."""
    runs = {r.get("run"): r for r in ms.env.get("runs", []) if isinstance(r, dict)}
    return _forced(runs.get(run, {}), ms.env)


def _predict(system: System, catalog: Catalog, o: Obs):
    """(time, algorithm, protocol, latency share) of the line NCCL runs for this sample; a run that forced
    NCCL_ALGO / NCCL_PROTO chooses among those lines only."""
    s = o.sample
    c = nccl_line(system, catalog, s.op, s.msg_bytes, ranks=s.n_ranks, nodes=o.nodes, algos=o.algos, protos=o.protos)
    t = c.time_s(s.msg_bytes)
    return t, c.algorithm, c.protocol, (c.latency_s / t if t > 0 else 1.0)


def _observations(sets: Sequence[MeasurementSet], base: System) -> list[Obs]:
    """Usable samples with what their run forced (NCCL_ALGO, NCCL_PROTO, NCCL_IB_DISABLE)."""
    out = []
    for ms in sets:
        for s in _usable(ms.samples, base):
            out.append(Obs(s, _nodes_of(s, base), *forced_by(ms, s.run)))
    return out


def _forced(run: dict, env: dict) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    # A text log says it in its command line or notes; a -J document in its env list.
    exported = [f"{k}={v}" for k, v in (env.get("nccl_env") or {}).items()]
    text = " ".join(
        str(v)
        for v in [run.get("command"), env.get("command"), *(run.get("annotations") or {}).values(), *exported]
        if v
    )
    algos = protos = ()
    if m := re.search(r"\bNCCL_ALGO=([\w,^]+)", text):
        names = [a.strip().lower() for a in m.group(1).lstrip("^").split(",")]
        algos = () if m.group(1).startswith("^") else tuple(_ALGOS[a] for a in names if a in _ALGOS)
    if m := re.search(r"\bNCCL_PROTO=([\w,^]+)", text):
        names = [p.strip().lower() for p in m.group(1).split(",")]
        protos = () if m.group(1).startswith("^") else tuple(p for p in names if p in ("ll", "ll128", "simple"))
    return algos, protos, bool(re.search(r"\bNCCL_IB_DISABLE=1\b", text))


def _start(base: System) -> dict[str, float]:
    x = {"intra_bw": math.log(base.intra_fabric.achievable_bytes_per_s), "intra_hop": 0.0, "base": 0.0}
    if base.nic_fabric is not None:
        x.update(nic_bw=math.log(base.nic_fabric.achievable_bytes_per_s), nic_hop=0.0)
    return x


def _params(x: dict[str, float], **extra) -> Params:
    """The parameters at x; those `extra["fitted"]` names rounded to FIT_DIGITS (the fit's result)."""
    fitted = extra.get("fitted", ())
    e = {k: float(f"{math.exp(v):.{FIT_DIGITS}g}") if k in fitted else math.exp(v) for k, v in x.items()}
    return Params(e["intra_bw"], e["intra_hop"], e["base"], e.get("nic_bw"), e.get("nic_hop"), **extra)


def _visible(
    base: System,
    catalog: Catalog,
    obs: Sequence[Obs],
    x: dict,
    *,
    name: str,
    sources: str,
    bw: str,
    hops: tuple[str, ...],
) -> list[str]:
    """Parameters these samples can see at x: a bandwidth where some sample is mostly bandwidth term,
    latency scales where some sample is mostly latency term."""
    system = _variant(base, _params(x), name=name, sources=sources, catalog=catalog)
    shares = [_predict(system, catalog, o)[3] for o in obs]
    free = [bw] if bw in x and any(sh < 0.5 for sh in shares) else []
    return free + ([h for h in hops if h in x] if any(sh >= 0.5 for sh in shares) else [])


def _solve(
    base: System, catalog: Catalog, obs: Sequence[Obs], x: dict, free: Sequence[str], *, name: str, sources: str
) -> tuple[dict, list[str]]:
    from scipy.optimize import least_squares

    if not free or not obs:
        return x, []
    meas = np.log([o.sample.time_s for o in obs])

    def residuals(v):
        y = {**x, **dict(zip(free, v))}
        system = _variant(base, _params(y), name=name, sources=sources, catalog=catalog)
        return np.log([_predict(system, catalog, o)[0] for o in obs]) - meas

    lo, hi = [_BOUNDS[k][0] for k in free], [_BOUNDS[k][1] for k in free]
    start = [x[k] for k in free]
    if free[0].endswith("_bw"):
        # A link the catalog rates faster than another on the path is hidden by the model's min(): no
        # gradient moves it. Start the bandwidth at the best of a coarse scan, 1/256 .. 4 x the catalog's.
        # Where the cost is flat (the data cannot see the link) the catalog's value stays.
        def cost(k: int) -> tuple[float, int]:
            r = residuals([start[0] + math.log(2.0) * k, *start[1:]])
            return round(float(np.sum(np.log1p(np.square(r / 0.1)))), 9), abs(k)

        start[0] += math.log(2.0) * min(range(-8, 3), key=cost)
    res = least_squares(residuals, start, bounds=(lo, hi), loss="soft_l1", f_scale=0.1, max_nfev=200)
    at_bound = [_LABELS[k] for k, v, a, b in zip(free, res.x, lo, hi) if min(v - a, b - v) < 1e-3]
    return {**x, **dict(zip(free, res.x))}, at_bound


def _fit(base: System, catalog: Catalog, obs: Sequence[Obs], *, name: str, sources: str) -> Params:
    """Single-node samples fit the intra-node link, then multi-node samples the network (module docstring)."""
    x = _start(base)
    single = [o for o in obs if o.nodes == 1]
    multi = [o for o in obs if o.nodes > 1 and "nic_bw" in x]
    kw = dict(name=name, sources=sources)
    free1 = _visible(base, catalog, single, x, bw="intra_bw", hops=("intra_hop", "base"), **kw) if single else []
    x, bound1 = _solve(base, catalog, single, x, free1, **kw)
    hops = ("nic_hop",) + tuple(k for k in ("intra_hop", "base") if k not in free1)
    free2 = _visible(base, catalog, multi, x, bw="nic_bw", hops=hops, **kw) if multi else []
    x, bound2 = _solve(base, catalog, multi, x, free2, **kw)
    if not multi:  # single-node data says nothing of the NICs: the profile keeps the catalog's
        x = {k: v for k, v in x.items() if not k.startswith("nic")}
    system = _variant(base, _params(x, fitted=tuple(free1 + free2)), **kw, catalog=catalog)
    network = "socket transport (NCCL_IB_DISABLE=1)" if multi and all(o.socket for o in multi) else ""
    return _params(
        x,
        at_bound=tuple(bound1 + bound2),
        fitted=tuple(free1 + free2),
        network=network,
        intra_seen=_seen_through(system, catalog, single) if "intra_bw" in free1 else "",
        nic_seen=_seen_through(system, catalog, multi) if "nic_bw" in free2 else "",
    )


def _seen_through(system: System, catalog: Catalog, obs: Sequence[Obs]) -> str:
    """The algorithms of the bandwidth-bound samples: what a fitted bandwidth was seen through."""
    algos = {_predict(system, catalog, o)[1] for o in obs if _predict(system, catalog, o)[3] < 0.5}
    words = sorted(
        {
            "NVLS" if a == "nvls" else "NVLSTree" if a == "hierarchical" else "ring link" if a == "ring" else a
            for a in algos
        }
    )
    return " and ".join(words)


def _nvls_busbw(result: FitResult) -> tuple[int, float] | None:
    """(GPUs, NVLS bus bandwidth) of the fitted profile where the data saw the link through NVLS."""
    if "NVLS" not in result.params.intra_seen:
        return None
    g = max((r.ranks for r in result.residuals if r.nodes == 1 and r.algorithm == "nvls"), default=0)
    if not g:
        return None
    catalog = load_catalog()
    eff = nvls_efficiency(result.system, catalog, g) or 0.0
    algbw = result.system.intra_fabric.bytes_per_s * eff * g / (g + 1)
    return g, algbw * busbw_factor("all-reduce", g)


def _per_node(result: FitResult) -> float:
    group = make_group(result.system, nodes=2, catalog=load_catalog())
    return nic_bytes_per_s(group)


def fit_profile(
    sets: Sequence[MeasurementSet],
    *,
    name: str,
    base_system: str,
    catalog: Catalog | None = None,
    holdout: bool = True,
    force: bool = False,
) -> FitResult:
    """The profile fitted on `sets` (module docstring); one outside physical bounds is a MeasureError
    naming the bound, or with `force` a warning."""
    catalog = catalog or load_catalog()
    base = catalog.system(base_system)
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise MeasureError(f"profile name {name!r} must be letters, digits, '-' or '_'")
    if (same := find(name, catalog.systems)) is not None:  # names are one ignoring case (datafile)
        was = "" if same == name else f" ({same!r}: names are compared ignoring case)"
        raise MeasureError(f"profile name {name!r} is already a catalog system{was}; choose another --name")
    obs = _observations(sets, base)
    if len(obs) < 3:
        raise MeasureError(
            f"need at least 3 usable out-of-place samples with 2+ ranks that fit {base.name} "
            f"({base.gpus_per_node} GPUs per node); got {len(obs)}"
        )
    sources = ", ".join(os.path.basename(ms.source) for ms in sets)
    params = _fit(base, catalog, obs, name=name, sources=sources)
    system = _variant(base, params, name=name, sources=sources, catalog=catalog)
    residuals = []
    for o in obs:
        t, algo, proto, _ = _predict(system, catalog, o)
        s = o.sample
        residuals.append(Residual(s.op, s.msg_bytes, s.n_ranks, o.nodes, s.time_s, t, algo, proto))
    unphysical = _unphysical(params, base, residuals)
    if unphysical and not force:
        raise MeasureError(f"{unphysical[0]}; pass --force to keep the profile anyway")
    heldout = _heldout(base, catalog, obs, name=name, sources=sources) if holdout else {}
    return FitResult(
        name,
        base.name,
        params,
        tuple(residuals),
        heldout,
        system,
        tuple(ms.source for ms in sets),
        warnings=tuple(unphysical) + _warnings(heldout, obs, system, catalog),
        notes=_notes(params, obs, base),
        base_intra_bytes_per_s=base.intra_fabric.achievable_bytes_per_s,
    )


def _unphysical(p: Params, base: System, residuals: Sequence[Residual]) -> list[str]:
    """Where the fitted profile leaves physics (DATASHEET_SLACK, LATENCY_FLOOR_S), one line each."""
    out = []
    for key, fitted, fabric, what in (
        ("intra_bw", p.intra_bytes_per_s, base.intra_fabric, "intra-node"),
        ("nic_bw", p.nic_bytes_per_s, base.nic_fabric, "NIC"),
    ):
        if key in p.fitted and fabric is not None and fitted > fabric.bytes_per_s * DATASHEET_SLACK:
            out.append(
                f"not physical: the fitted {what} bandwidth {format_rate(fitted)} is above {fabric.name}'s "
                f"datasheet {format_rate(fabric.bytes_per_s)} per direction (bound: x{DATASHEET_SLACK:g} of it): "
                f"the data is not {base.name}'s {what} link"
            )
    fastest = min(residuals, key=lambda r: r.predicted_s)
    if fastest.predicted_s < LATENCY_FLOOR_S:
        out.append(
            f"not physical: the fitted profile predicts {fastest.op} of {format_bytes(fastest.msg_bytes)} on "
            f"{fastest.ranks} GPUs in {format_seconds(fastest.predicted_s)} (measured "
            f"{format_seconds(fastest.measured_s)}), below the physical floor of "
            f"{format_seconds(LATENCY_FLOOR_S)} for one collective between GPUs"
        )
    return out


def _warnings(heldout: dict[int, float], obs: Sequence[Obs], system: System, catalog: Catalog) -> tuple[str, ...]:
    out = [
        f"held out: {n} GPUs predicted with median |error| {100 * e:.0f}% (above {100 * HELDOUT_WARN:.0f}%) "
        f"by a fit without them: the profile does not extrapolate to {n} GPUs"
        for n, e in sorted(heldout.items())
        if e > HELDOUT_WARN
    ]
    forced = sorted({(o.sample.n_ranks, a) for o in obs for a in o.algos})
    for ranks, algo in forced:
        group = make_group(
            system, nodes=next(o.nodes for o in obs if o.sample.n_ranks == ranks), gpus=ranks, catalog=catalog
        )
        if not any(c.algorithm == algo for c in candidates(group, "all-reduce", "nccl")):
            out.append(
                f"the log forces NCCL_ALGO={algo} at {ranks} ranks, which the model has no line for there: "
                f"priced with NCCL's own choice"
            )
    return tuple(out)


def _notes(p: Params, obs: Sequence[Obs], base: System) -> tuple[str, ...]:
    single = any(o.nodes == 1 for o in obs)
    out = []
    if "intra_bw" not in p.fitted:
        why = (
            "the samples are all multi-node: their time is set by the network, which the fit blames instead"
            if not single
            else "no single-node sample is bandwidth-bound"
        )
        out.append(
            f"intra-node bandwidth kept at {base.intra_fabric.name}'s "
            f"{format_rate(base.intra_fabric.achievable_bytes_per_s)}: {why}"
        )
    if base.nic_fabric is not None and any(o.nodes > 1 for o in obs) and "nic_bw" not in p.fitted:
        out.append(f"NIC bandwidth kept at {base.nic_fabric.name}'s: no multi-node sample is bandwidth-bound")
    return tuple(out)


def _heldout(base: System, catalog: Catalog, obs: Sequence[Obs], *, name: str, sources: str) -> dict[int, float]:
    counts = sorted({o.sample.n_ranks for o in obs})
    out: dict[int, float] = {}
    if len(counts) < 2:
        return out
    for left_out in counts:
        train = [o for o in obs if o.sample.n_ranks != left_out]
        test = [o for o in obs if o.sample.n_ranks == left_out]
        if len(train) < 3:
            continue
        params = _fit(base, catalog, train, name=name, sources=sources)
        system = _variant(base, params, name=name, sources=sources, catalog=catalog)
        errs = [abs(_predict(system, catalog, o)[0] / o.sample.time_s - 1) for o in test]
        out[left_out] = float(np.median(errs))
    return out
