"""The inverse of `deploy`: the fewest GPUs that serve a load within the budgets.

`deploy --gpus N` spends N GPUs; `deploy --rate R` (requests per second) or `--users U` (concurrent
users, one request in flight each) asks how many GPUs it takes. A replica of a plan at batch b
holds b sequences (pp x b under pipelining) and gives each a token every `cycle_s` (the served
cycle with its own prompt's share, deploy's Option.cycle_s), so a request of `output_len` tokens
holds its slot for output_len x cycle_s and

    requests/s = replicas x batch / (output_len x cycle_s)         users served = replicas x batch

The batch grows only while the budgets hold (deploy's largest batch per plan, with its binding:
memory, TPOT, TTFT or the sweep's end), so each plan serves at most `capacity` per replica and needs
ceil(load / capacity) replicas. The fewest GPUs is the least replicas x GPUs-per-replica over every
plan deploy would consider (a replica inside a node, or over up to MAX_REPLICA_NODES whole nodes);
`deploy` on that many GPUs then prices the split that serves the load (for a rate its best option,
whose tokens/s is the most any split of those GPUs gives), and the answer names the smallest batch
per replica that still serves it. The budget that binds is the one that stops a replica at its
largest batch: it is why more replicas, hence GPUs, are needed.

Would a faster fabric save GPUs? The same GPU is priced on the catalog's better fabric as explain's
what-ifs build it (whatif.py): off a switch, on the NVSwitch system of its generation, or on PCIe with
P2P where its node has none; on a switch, in a larger NVLink domain of its generation (NVL72) where
the catalog has one.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..errors import PlanError
from ..fabric.hardware import Catalog, System
from ..model import ModelConfig, Plan
from ..step.scenario import Scenario
from ..units import format_seconds
from . import deploy as deploying
from .deploy import DeployResult, Option, deploy
from .planner import valid_plans
from .request import Budgets, Request, Workload
from .whatif import fabric_cases

MAX_REPLICA_NODES = 8
"""The widest replica searched, in nodes (64 GPUs of an HGX system): past it no engine's published
deployment runs one model instance."""
MAX_LOAD_GPUS = 131_072
"""The most GPUs an answer may take (cli.args.MAX_GPUS: about the largest clusters built)."""


@dataclass(frozen=True, kw_only=True)
class Load:
    """What must be served: `rate_per_s` requests per second or `users` concurrent users."""

    rate_per_s: float | None = None
    users: int | None = None

    def __post_init__(self) -> None:
        if (self.rate_per_s is None) == (self.users is None):
            raise PlanError("give --rate (requests per second) or --users (concurrent users), not both")
        if self.rate_per_s is not None and (
            isinstance(self.rate_per_s, bool) or not self.rate_per_s > 0 or not math.isfinite(self.rate_per_s)
        ):
            raise PlanError(f"--rate must be a number of requests per second above 0, got {self.rate_per_s!r}")
        if self.users is not None and (
            isinstance(self.users, bool) or not isinstance(self.users, int) or self.users < 1
        ):
            raise PlanError(f"--users must be a whole number of at least 1, got {self.users!r}")

    def words(self) -> str:
        return f"{self.rate_per_s:g} requests/s" if self.rate_per_s is not None else f"{self.users} concurrent users"

    def served(self, replicas: int, seqs: float, cycle_s: float, output_len: int) -> float:
        """What `replicas` replicas of `seqs` sequences each serve, in this load's unit."""
        if self.users is not None:
            return replicas * seqs
        return replicas * seqs / (output_len * cycle_s)

    @property
    def amount(self) -> float:
        return float(self.rate_per_s if self.rate_per_s is not None else self.users)


@dataclass(frozen=True, kw_only=True)
class PlanCapacity:
    """One plan at its largest batch within the budgets: what one replica serves, the replicas the
    load needs and the GPUs they take."""

    plan: Plan
    option: Option
    """deploy's option for one replica (max_batch, cycle_s, binding)."""
    per_replica: float
    replicas: int
    gpus: int


@dataclass(frozen=True, kw_only=True)
class LoadAnswer:
    load: Load
    gpus: int | None
    """The fewest GPUs that serve the load (None: no plan meets the budgets at any size)."""
    result: DeployResult | None
    """`deploy` on those GPUs, its best option the split that serves the load."""
    batch: int
    """Sequences in flight per replica at this load (at most the option's batch cap, max_batch)."""
    tpot_s: float
    """The TPOT at that batch (what the budget judges; the ITL under a decode-only --context)."""
    itl_s: float
    """One decode step at that batch."""
    ttft_s: float
    served: float
    """What the option serves at its batch cap, in the load's unit (>= the load)."""
    binding: str
    """The constraint that caps a replica's batch: memory, tpot (itl), ttft or max-batch."""
    fabric: dict | None
    """The better-fabric what-if: label, gpus (None: it serves nothing), saves."""
    closest: PlanCapacity | None = None
    """Where nothing meets the budgets: the plan with the lowest TPOT at batch 1."""
    text: str = ""

    def to_dict(self) -> dict:
        return {
            "rate_per_s": self.load.rate_per_s,
            "users": self.load.users,
            "gpus": self.gpus,
            "in_flight_per_replica": self.batch,
            "batch_cap_per_replica": self.result.best.max_batch if self.result and self.result.best else None,
            "tpot_s": self.tpot_s,
            "itl_s": self.itl_s,
            "ttft_s": self.ttft_s,
            "served_at_batch_cap": self.served,
            "binding": self.binding,
            "fabric": self.fabric,
            "verdict": self.text,
            "deploy": self.result.to_dict() if self.result else None,
        }


def plan_sizes(system: System) -> list[int]:
    """GPUs per replica deploy places: any count inside a node, or whole nodes (NICs between them)."""
    gpn = system.gpus_per_node
    wide = range(2, MAX_REPLICA_NODES + 1) if system.nic_fabric is not None else ()
    return list(range(1, gpn + 1)) + [n * gpn for n in wide]


def capacities(sc: Scenario, load: Load, *, budgets: Budgets, work: Workload) -> list[PlanCapacity]:
    """Every plan that meets the budgets at some batch, with the replicas and GPUs the load needs."""
    cfg, system = sc.model, sc.system
    out = []
    by_nodes: dict[int, list[Plan]] = {}
    for size in plan_sizes(system):
        nodes = max(1, size // system.gpus_per_node)
        if nodes not in by_nodes:
            try:
                by_nodes[nodes] = valid_plans(cfg, system, nodes, pp_all=True)
            except PlanError:
                by_nodes[nodes] = []
        for p in (p for p in by_nodes[nodes] if p.gpus == size):
            c = deploying._curve(sc, p, work=work)
            o = deploying._option(1, p, c, budgets=budgets)
            per = load.served(1, o.max_batch, o.cycle_s, work.output_len) if o.meets_budget else 0.0
            replicas = math.ceil(load.amount / per - 1e-9) if per > 0 else 0
            out.append(PlanCapacity(plan=p, option=o, per_replica=per, replicas=replicas, gpus=replicas * size))
    return out


def fewest(caps: list[PlanCapacity]) -> PlanCapacity | None:
    """The plan that serves the load on the fewest GPUs (ties: the most left over per GPU)."""
    serving = [c for c in caps if c.replicas > 0 and c.gpus <= MAX_LOAD_GPUS]
    return min(serving, key=lambda c: (c.gpus, -c.per_replica * c.replicas), default=None)


def better_fabric(system: System, catalog: Catalog) -> tuple[str, System] | None:
    """The same GPU on the catalog's better fabric (module doc), or None where the catalog has none:
    off a switch, explain's what-ifs (whatif.fabric_cases) on NVSwitch, else on PCIe with P2P where
    the node has none; on a switch, the widest NVLink domain of the generation."""
    if system.topology != "switch":
        cases = [c for c in fabric_cases(system, catalog, system.gpus_per_node) if c.whatif and c.nodes == 1]
        faster = [c for c in cases if c.system.topology == "switch"] or [c for c in cases if "no P2P" not in c.label]
        return (faster[0].label, faster[0].system) if faster else None
    wider = [
        s
        for s in catalog.systems.values()
        if s.gpu.arch == system.gpu.arch and s.topology == "switch" and s.domain_gpus > system.domain_gpus
    ]
    if not wider:
        return None
    t = max(wider, key=lambda s: (s.domain_gpus, s.intra_fabric.achievable_bytes_per_s))  # ties: catalog order
    if t.gpu is system.gpu:
        return f"{t.name} ({t.intra_fabric.name}, {t.domain_gpus} GPUs in one NVLink domain)", t
    label = f"{system.gpu.name} in the {t.intra_fabric.name} domain of {t.name} (what-if, {t.domain_gpus} GPUs)"
    return label, dataclasses.replace(
        t,
        name=f"{system.gpu.name} on {t.intra_fabric.name}",
        gpu=system.gpu,
        description=f"what-if: {t.name} with {system.gpu.name} GPUs",
    )


def deploy_for_load(req: Request, load: Load) -> LoadAnswer:
    """The fewest GPUs of the request's system that serve `load` within its budgets (module doc);
    its scenario's forced all-reduce and its jitter apply as deploy's do."""
    sc, workload = req.scenario, req.served_workload
    cfg, sysm, catalog = sc.model, sc.system, sc.catalog
    deploying._check_request(req, workload)
    search = dict(budgets=req.budgets, work=workload)
    caps = capacities(sc, load, **search)
    best = fewest(caps)
    if best is None:
        _check_within_bound(sysm, load, caps)
        return _none_serves(cfg, sysm, load, caps, req.budgets, workload.judged)
    result = deploy(dataclasses.replace(req, scenario=dataclasses.replace(sc, nodes=None)), gpus=best.gpus)
    result = _serving(result, load, cfg, sysm, catalog)
    o = result.best
    batch, tpot, itl, ttft = _batch_for(sc, o, load, **search)
    result = _at_load(result, load, batch, cfg, sysm, catalog)
    fabric = _fabric(sc, load, best.gpus, search)
    answer = LoadAnswer(
        load=load,
        gpus=best.gpus,
        result=result,
        batch=batch,
        tpot_s=tpot,
        itl_s=itl,
        ttft_s=ttft,
        served=load.served(o.replicas, o.max_batch, o.cycle_s, workload.output_len),
        binding=o.binding,
        fabric=fabric,
    )
    return dataclasses.replace(answer, text=answer_text(answer))


def _serving(result: DeployResult, load: Load, cfg: ModelConfig, system: System, catalog: Catalog) -> DeployResult:
    """The deploy result with its best option the best-ranked one that serves the load (for a rate
    that is deploy's own best: the most tokens/s; for users, the most seats may be another)."""
    out = result.workload.output_len
    o = next(
        (
            o
            for o in result.options
            if o.meets_budget and load.served(o.replicas, o.max_batch, o.cycle_s, out) >= load.amount * (1 - 1e-9)
        ),
        None,
    )
    if o is None:  # the search and deploy price the same curves: this cannot happen
        raise PlanError(f"deploy on {result.gpus} GPUs serves less than {load.words()}; please report it")
    if o is result.best:
        return result
    chosen = dataclasses.replace(result, best=o)
    return deploying._with_words(chosen, *deploying.build_launches(chosen, cfg, system, catalog))


def _at_load(
    result: DeployResult, load: Load, batch: int, cfg: ModelConfig, system: System, catalog: Catalog
) -> DeployResult:
    """The result that names the load and its best option's sequences in flight per replica, with
    launch lines that say both beside the batch cap they set."""
    at = dataclasses.replace(result, load=load.words(), in_flight=batch)
    return deploying._with_words(at, *deploying.build_launches(at, cfg, system, catalog))


def _batch_for(
    sc: Scenario, o: Option, load: Load, *, budgets: Budgets, work: Workload
) -> tuple[int, float, float, float]:
    """The smallest batch per replica of option `o` that serves the load, with its TPOT, ITL and TTFT."""
    p = Plan(o.tp, o.pp, o.ep, o.dp)
    c = deploying._curve(sc, p, work=work)
    n = int(c.seqs.searchsorted(o.max_batch, side="right"))  # entries up to the largest good batch
    for i in range(n):
        if load.served(o.replicas, c.seqs[i], c.cycle_s[i], work.output_len) >= load.amount * (1 - 1e-9):
            return int(c.seqs[i]), float(c.tpot_s[i]), float(c.itl_s[i]), float(c.ttft_s[i])
    return o.max_batch, o.tpot_s, o.itl_s, o.ttft_s


def _fabric(sc: Scenario, load: Load, gpus: int, search: dict) -> dict | None:
    better = better_fabric(sc.system, sc.catalog)
    if better is None:
        return None
    label, fast = better
    best = fewest(capacities(sc.on(fast), load, **search))
    fast_gpus = best.gpus if best else None
    return {
        "label": label,
        "system": fast.name,
        "gpus": fast_gpus,
        "saves": gpus - fast_gpus if fast_gpus is not None else 0,
        "split": f"{best.replicas}x{best.plan.label().replace(' ', '/')}" if best else None,
    }


def _check_within_bound(system: System, load: Load, caps: list[PlanCapacity]) -> None:
    """A load that replicas meeting the budgets serve, but only on more than MAX_LOAD_GPUS: refused
    with the bound (not 'nothing meets the budgets', which would be false)."""
    serving = [c for c in caps if c.replicas > 0]
    if not serving:
        return
    c = min(serving, key=lambda c: (c.gpus, -c.per_replica))
    flag = "--rate" if load.rate_per_s is not None else "--users"
    raise PlanError(
        f"{flag}: {load.words()} take {c.gpus:,} GPUs of {system.name} at the fewest "
        f"({c.replicas:,} x {c.plan.label().replace(' ', '/')} replicas at batch {c.option.max_batch}), past "
        f"the {MAX_LOAD_GPUS:,} an answer may take (about the largest clusters built)"
    )


def _none_serves(
    cfg: ModelConfig, system: System, load: Load, caps: list[PlanCapacity], budgets: Budgets, token: str
) -> LoadAnswer:
    fitting = [c for c in caps if not (c.option.binding == "memory" and c.option.max_batch == 0)]
    closest = min(fitting, key=lambda c: c.option.tpot_s, default=None)
    answer = LoadAnswer(
        load=load,
        gpus=None,
        result=None,
        batch=0,
        tpot_s=math.nan,
        itl_s=math.nan,
        ttft_s=math.nan,
        served=0.0,
        binding=closest.option.binding if closest else "memory",
        fabric=None,
        closest=closest,
    )
    return dataclasses.replace(answer, text=_none_text(cfg, system, answer, budgets, token))


def _none_text(cfg: ModelConfig, system: System, a: LoadAnswer, budgets: Budgets, token: str) -> str:
    within = (
        " and ".join(
            w
            for w in (
                f"{format_seconds(budgets.budget_s)} {token}" if budgets.budget_s else "",
                f"{format_seconds(budgets.ttft_budget_s)} TTFT" if budgets.ttft_budget_s else "",
            )
            if w
        )
        or "the budgets"
    )
    c = a.closest
    if c is None:
        return (
            f"No replica of {cfg.name} up to {MAX_REPLICA_NODES} x {system.name} fits in memory, even at batch 1: "
            f"no number of GPUs serves {a.load.words()}."
        )
    o = c.option
    ttft = "" if math.isnan(o.ttft_s) else f", TTFT {format_seconds(o.ttft_s)}"
    return (
        f"No replica of {cfg.name} on {system.name} meets {within} even at batch 1, so no number of GPUs serves "
        f"{a.load.words()}: the closest is one {c.plan.label().replace(' ', '/')} replica at "
        f"{format_seconds(o.tpot_s)} {token}{ttft} (binding: {o.binding})."
    )


CAP_WORDS = {
    "itl": "the most the ITL budget allows",
    "tpot": "the most the TPOT budget allows",
    "ttft": "the most the TTFT budget allows",
    "memory": "the most memory (the KV cache) holds",
    "max-batch": "the batch sweep's end (no budget binds)",
    "prefill": "the most the prefill side feeds",
}
"""What sets a replica's batch cap, by the binding constraint."""


def _cap(words: str) -> str:
    return words[:1].upper() + words[1:]


def answer_text(a: LoadAnswer) -> str:
    """One paragraph, with numbers: GPUs, split, batch, which budget binds, the fabric what-if."""
    r, o = a.result, a.result.best
    unit = "requests/s" if a.load.rate_per_s is not None else "users"
    times = f"{r.judged} {format_seconds(a.tpot_s)}" + (
        f", ITL {format_seconds(a.itl_s)}" if format_seconds(a.itl_s) != format_seconds(a.tpot_s) else ""
    )
    # the load and the cap in the words the table ('in flight', 'batch cap') and the launch lines' note use
    text = (
        f"{_cap(a.load.words())} take {a.gpus} GPU{'s' if a.gpus > 1 else ''} of {r.system} ({r.nodes} node"
        f"{'s' if r.nodes > 1 else ''}): {o.label()}, with {a.batch} sequences in flight per replica at {a.load.words()} "
        f"({times}" + ("" if math.isnan(a.ttft_s) else f", TTFT {format_seconds(a.ttft_s)}") + f") and a batch "
        f"cap of {o.max_batch} sequences per replica, {CAP_WORDS.get(a.binding, a.binding)}, which the launch lines set as "
        f"each engine's largest batch. {o.replicas} replica{'s' if o.replicas > 1 else ''} at that cap serve"
        f"{'' if o.replicas > 1 else 's'} up to {a.served:,.4g} {unit}; one fewer GPU does not serve the load."
    )
    f = a.fabric
    if f is None:
        text += f" The catalog has no faster fabric for {r.system}'s GPUs to price."
    elif f["gpus"] is None:
        text += f" On {f['label']} no replica meets the budgets either."
    elif f["saves"] > 0:
        text += f" A faster fabric would save {f['saves']} GPUs: on {f['label']} it takes {f['gpus']} ({f['split']})."
    else:
        text += f" A faster fabric would not save GPUs: on {f['label']} it takes {f['gpus']} ({f['split']})."
    return text


__all__ = [
    "Load",
    "LoadAnswer",
    "MAX_REPLICA_NODES",
    "PlanCapacity",
    "answer_text",
    "better_fabric",
    "capacities",
    "deploy_for_load",
    "fewest",
    "plan_sizes",
]
