"""Dollars and joules per token (issue 39): what a deploy option costs to rent and draws from the
wall, from the catalog's prices.toml (or the user's overrides), and the objective deploy ranks by.

Per GPU of an option, over its tokens/s per GPU (deploy.Option):

    $ per million output tokens = usd_per_gpu_hour / 3600 / (tokens/s/GPU) x 1e6
    tokens per joule            = (tokens/s/GPU) / (W per GPU)
    W per GPU                   = board power under load
                                + the node's GPU switches / GPUs per node      (NVLink switch trays)
                                + NICs per node x W per link / GPUs per node   (only where a replica
                                                                                 spans nodes)

A cloud's GPU-hour covers the node around the GPU, so the price has no other term. The power counts
only what prices.toml gives with a source; what it lacks (the HGX board's NVSwitch chips, PCIe
switches, CPUs, fans) is named in `OptionCost.uncounted`, so tokens per joule is an upper bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import PlanError

OBJECTIVES = ("throughput", "cost", "energy")
"""What deploy ranks its options by: tokens/s per GPU (the default), $ per million output tokens
(fewest first), output tokens per joule (most first)."""


def _positive(flag: str, value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise PlanError(f"{flag} must be a finite number above 0, got {value!r}")
    return float(value)


@dataclass(frozen=True, kw_only=True)
class Pricing:
    """The objective and what the user gives over the catalog's prices (None: the catalog's)."""

    objective: str = "throughput"
    gpu_hour_usd: float | None = None
    """--gpu-hour-usd: US dollars for one GPU for one hour."""
    gpu_watts: float | None = None
    """--gpu-watts: one board's power under load, W."""

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise PlanError(f"--objective must be one of {', '.join(OBJECTIVES)}, got {self.objective!r}")
        object.__setattr__(self, "gpu_hour_usd", _positive("--gpu-hour-usd", self.gpu_hour_usd))
        object.__setattr__(self, "gpu_watts", _positive("--gpu-watts", self.gpu_watts))


@dataclass(frozen=True, kw_only=True)
class Rates:
    """One system's prices and powers as a request prices them, each with where it comes from."""

    usd_per_gpu_hour: float | None
    gpu_watts: float | None
    switch_watts_per_node: float
    watts_per_nic: float | None
    gpus_per_node: int
    nics_per_node: int
    price_source: str
    power_source: str
    uncounted: tuple[str, ...]
    objective: str = "throughput"

    def to_dict(self) -> dict:
        """What the costs were priced with, for the JSON ("prices") and the table's header."""
        return {
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "price_source": self.price_source,
            "gpu_watts": self.gpu_watts,
            "power_source": self.power_source,
            "uncounted": list(self.uncounted),
        }


@dataclass(frozen=True, kw_only=True)
class CostView:
    """What a deployment was ranked by and priced with (DeployResult.costs): the objective, the
    prices (Rates.to_dict) and the figure's curves on the other axes (`cost_curves`)."""

    objective: str = "throughput"
    prices: dict = field(default_factory=dict)
    curves: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"objective": self.objective, "prices": dict(self.prices)}


@dataclass(frozen=True, kw_only=True)
class OptionCost:
    """What one deploy option costs per token and draws (None: its price or power is not known)."""

    usd_per_mtok: float | None
    """US dollars per million output tokens (inf where the option makes none)."""
    tokens_per_joule: float | None
    watts_per_gpu: float | None
    """What one GPU of the option and its share of the node's counted parts draw, W."""
    usd_per_gpu_hour: float | None
    nics_counted: bool
    """Whether the option's replicas span nodes, so that its NICs' links are counted."""
    uncounted: tuple[str, ...] = ()
    """The parts of a node whose power no source gives (not in watts_per_gpu)."""


def rates(catalog, system, pricing: Pricing | None) -> Rates:
    """`system`'s prices and powers from `catalog` (prices.toml and --catalog), the user's
    --gpu-hour-usd / --gpu-watts over them (None: the catalog's, by throughput)."""
    pricing = pricing or Pricing()
    cost = catalog.system_costs.get(system.name)
    power = catalog.gpu_power.get(system.gpu.name)
    nic = catalog.nic_power.get(system.nic_fabric.name) if system.nic_fabric is not None else None
    price = pricing.gpu_hour_usd if pricing.gpu_hour_usd is not None else cost.usd_per_gpu_hour if cost else None
    watts = pricing.gpu_watts if pricing.gpu_watts is not None else power.load_watts if power else None
    switches = cost.switch_watts_per_node if cost and cost.switch_watts_per_node else 0.0
    uncounted = ("CPUs and fans",) + (() if switches else _switches(system))
    return Rates(
        usd_per_gpu_hour=price,
        gpu_watts=watts,
        switch_watts_per_node=switches,
        watts_per_nic=nic.watts_per_nic if nic else None,
        gpus_per_node=system.gpus_per_node,
        nics_per_node=system.nics_per_node,
        price_source="--gpu-hour-usd"
        if pricing.gpu_hour_usd is not None
        else cost.source
        if cost and cost.usd_per_gpu_hour
        else "",
        power_source="--gpu-watts" if pricing.gpu_watts is not None else power.source if power else "",
        uncounted=uncounted,
        objective=pricing.objective,
    )


def _switches(system) -> tuple[str, ...]:
    """The node's GPU switches no source gives a power for: the NVSwitch chips of a switched node,
    the PCIe switches of a tree with several GPUs under one (none where each GPU has its own root
    port, nor on a direct mesh)."""
    if system.topology == "switch":
        return (f"the {system.intra_fabric.name} switch chips",)
    if system.topology == "mesh":  # GPU to GPU directly; the catalog does not say what else the board holds
        return ()
    tree = system.pcie
    return ("the PCIe switches",) if tree is not None and tree.gpus_per_switch > 1 else ()


def check_rates(r: Rates, pricing: Pricing, system: str) -> None:
    """Refuse an objective the request cannot price: no GPU-hour price for cost, no board power for energy."""
    if pricing.objective == "cost" and r.usd_per_gpu_hour is None:
        raise PlanError(
            f"--objective cost: no GPU-hour price for {system} in the catalog; give --gpu-hour-usd, or a "
            f"[system_costs.{system}] table with usd_per_gpu_hour in a --catalog file"
        )
    if pricing.objective == "energy" and r.gpu_watts is None:
        raise PlanError(
            f"--objective energy: no board power for {system}'s GPU in the catalog; give --gpu-watts, or "
            f"a [gpu_power.<gpu>] table with load_watts in a --catalog file"
        )


def checked_rates(catalog, system, pricing: Pricing | None) -> Rates:
    """`rates`, refused where the objective needs a figure the request lacks (`check_rates`)."""
    r = rates(catalog, system, pricing)
    check_rates(r, pricing or Pricing(), system.name)
    return r


def with_costs(options: list, r: Rates, rank) -> list:
    """deploy's options (deploy.Option), each with its OptionCost, sorted by `rank(option, objective)`."""
    return sorted(
        (
            replace(
                o, cost=option_cost(r, tokens_per_s_per_gpu=o.tokens_per_s_per_gpu, gpus_per_replica=o.gpus_per_replica)
            )
            for o in options
        ),
        key=lambda o: rank(o, r.objective),
    )


def cost_view(r: Rates, curves: dict, options) -> CostView:
    """The deployment's CostView: its objective, prices, and `curves` on the cost and energy axes."""
    return CostView(
        objective=r.objective, prices=r.to_dict(), curves=cost_curves(curves, {o.label(): o.cost for o in options})
    )


def option_cost(r: Rates, *, tokens_per_s_per_gpu: float, gpus_per_replica: int) -> OptionCost:
    """One option's $ per million output tokens and tokens per joule (module docstring)."""
    spans = gpus_per_replica > r.gpus_per_node
    watts = None
    if r.gpu_watts is not None:
        nics = r.nics_per_node * (r.watts_per_nic or 0.0) if spans else 0.0
        watts = r.gpu_watts + (r.switch_watts_per_node + nics) / r.gpus_per_node
    rate = tokens_per_s_per_gpu
    usd = None if r.usd_per_gpu_hour is None else (r.usd_per_gpu_hour / 3600 / rate * 1e6 if rate > 0 else math.inf)
    return OptionCost(
        usd_per_mtok=usd,
        tokens_per_joule=None if watts is None else rate / watts,
        watts_per_gpu=watts,
        usd_per_gpu_hour=r.usd_per_gpu_hour,
        nics_counted=spans,
        uncounted=r.uncounted + (("the NICs' links",) if spans and r.watts_per_nic is None else ()),
    )


def objective_key(objective: str, o) -> float:
    """The number deploy sorts the options that meet the budgets by, smallest first (o: deploy.Option).
    Throughput: tokens/s per GPU given (the GPUs an option leaves idle count: used / given is 1.0
    exactly where it leaves none); cost: $ per million tokens, paid for every GPU given; energy:
    tokens per joule of the GPUs it runs on (an idle GPU's draw has no source)."""
    used = o.replicas * o.gpus_per_replica
    given = used / (used + o.gpus_left)
    if objective == "throughput" or o.cost is None:
        return -o.tokens_per_s_per_gpu * given
    if objective == "cost":
        return o.cost.usd_per_mtok / given if o.cost.usd_per_mtok is not None else math.inf
    return -o.cost.tokens_per_joule if o.cost.tokens_per_joule is not None else math.inf


def cost_curves(curves: dict, costs: dict[str, OptionCost]) -> dict:
    """deploy's figure curves (label -> tokens/s/user, tokens/s/GPU arrays) on the other axes: label ->
    ($ per million tokens, tokens per joule) arrays along the same batches (None where not priced)."""
    out = {}
    for label, (_, per_gpu) in curves.items():
        c, g = costs[label], np.asarray(per_gpu, dtype=float)
        with np.errstate(divide="ignore"):
            usd = None if c.usd_per_gpu_hour is None else c.usd_per_gpu_hour / 3600 / g * 1e6
        out[label] = (usd, None if c.watts_per_gpu is None else g / c.watts_per_gpu)
    return out


__all__ = [
    "OBJECTIVES",
    "CostView",
    "OptionCost",
    "Pricing",
    "Rates",
    "check_rates",
    "checked_rates",
    "cost_curves",
    "cost_view",
    "objective_key",
    "option_cost",
    "rates",
    "with_costs",
]


def usd_text(usd: float) -> str:
    """Dollars as explain prints them: three significant digits, whole dollars from $100."""
    return f"${usd:,.0f}" if usd >= 100 else f"${usd:.3g}"


def fabric_cost_view(
    cases: list[tuple[str, object, float, float, int]], catalog
) -> tuple[list[OptionCost | None], str]:
    """explain's cost view of its first answer: per case (label, system, ITL s, sequences in flight
    per replica (pp micro-batches of the batch), GPUs of the replica) the $ per million tokens and
    tokens per joule of that replica at that batch (None where the
    catalog prices not the system: a what-if fabric has no price), and in words what the fastest
    fabric costs per million tokens and where a cheaper one wins on cost while losing on latency."""
    costs = []
    for _, system, itl_s, seqs, gpus in cases:
        r = rates(catalog, system, Pricing())
        priced = r.usd_per_gpu_hour is not None or r.gpu_watts is not None
        costs.append(
            option_cost(r, tokens_per_s_per_gpu=seqs / itl_s / gpus, gpus_per_replica=gpus) if priced else None
        )
    usd = [(c.usd_per_mtok, case) for c, case in zip(costs, cases) if c is not None and c.usd_per_mtok is not None]
    if not usd:
        return costs, ""
    fast = min(cases, key=lambda c: c[2])
    fast_usd = next((u for u, c in usd if c is fast), None)
    text = (
        f"Priced at the catalog's GPU-hour (prices.toml), {fast[0]} costs {usd_text(fast_usd)} per million output "
        f"tokens at this batch."
        if fast_usd is not None
        else f"The fastest, {fast[0]}, has no GPU-hour price in the catalog."
    )
    cheap_usd, cheap = min(usd, key=lambda uc: uc[0])
    if fast_usd is not None and cheap is not fast and cheap_usd < fast_usd:
        text += (
            f" {cheap[0]} wins on cost at {usd_text(cheap_usd)} per million tokens ({fast_usd / cheap_usd:.2f}x "
            f"cheaper) while losing on latency (ITL {cheap[2] * 1e3:.2f} ms against {fast[2] * 1e3:.2f} ms)."
        )
    elif fast_usd is not None and len(usd) > 1:
        text += " It is also the cheapest per token: the faster fabric pays for itself."
    return costs, text


__all__ += ["fabric_cost_view", "usd_text"]
