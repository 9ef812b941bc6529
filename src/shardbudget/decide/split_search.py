"""The prefill:decode split as part of `deploy`'s search (issue 38, build item 1).

Aggregated serving runs prompts and decode steps on the same replicas; disaggregated serving gives
P GPUs to prefill and D = N - P to decode, the KV cache handed over on the fabric (disagg.py). The
best split depends on the model, the rack and the budgets: DeepSeek-V3 on one GB200 NVL72 serves
twice the tokens per GPU disaggregated, with wide EP and data-parallel attention on the decode side,
while a dense 70B model on one HGX node is best aggregated. `search_splits` prices the splits of
the GPUs in steps of `split_step` GPUs, a coarse grid first and then finer ones around its best,
against the best uniform (aggregated) option and names the winner and its gain.

The prefill side of P GPUs is chosen once per P (disagg.prefill_side: it does not depend on the
decode side it feeds), each prefill plan's prompt, each decode plan's curve and KV hand-off once for
the whole search (only the TTFT it carries differs between splits: `PriceMemo`), and the winning
split's deployment is priced from that memo, so the search costs about one aggregated sweep per
distinct plan size, whatever the number of splits.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..errors import PlanError
from ..fabric.hardware import System
from .deploy import (
    DeployResult,
    Option,
    _decode_curve,
    _fed_by,
    _option,
    _rank,
    deploy,
    splits,
    with_launches,
)
from .disagg import Prefill, prefill_side, with_handoff
from .request import Request


@dataclass
class PriceMemo:
    """What repeats across the prefill:decode splits of one search, priced once:
    each node count's valid plans by GPUs, each prefill plan's prompt (disagg.prefill_side), each
    decode plan's KV hand-off (disagg.with_handoff) and decode-only curve, whose constant TTFT is
    set per split. `deploy(..., memo=)` prices the winning split from it, not again."""

    plans: dict = field(default_factory=dict)
    prefill: dict = field(default_factory=dict)
    handoffs: dict = field(default_factory=dict)
    curves: dict = field(default_factory=dict)


SPLIT_STEP_MAX = 8
"""Prefill sides are tried in steps of a node's GPUs, at most 8 (a tray pair of an NVL72; the TP
sizes the engines run are powers of two, so finer steps leave GPUs no plan divides)."""


def split_step(system: System) -> int:
    return min(system.gpus_per_node, SPLIT_STEP_MAX)


@dataclass(frozen=True, kw_only=True)
class Split:
    """One disaggregated split: P GPUs prefill, D decode, its best decode option (tokens/s per GPU
    over all P + D GPUs)."""

    prefill_gpus: int
    decode_gpus: int
    option: Option | None
    """The best decode option within the budgets, fed by the prefill side (None: none meets them)."""
    prefill: Prefill | None
    pruned: bool = False
    """Not priced: its prefill side cannot feed more than the best split found (or the uniform option)."""

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.option.tokens_per_s_per_gpu if self.option is not None else 0.0

    def to_dict(self) -> dict:
        return {
            "prefill_gpus": self.prefill_gpus,
            "decode_gpus": self.decode_gpus,
            "option": self.option.label() if self.option else None,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "prefill": self.prefill.to_dict() if self.prefill else None,
            "pruned": self.pruned,
        }


@dataclass(frozen=True, kw_only=True)
class SplitSearch:
    """Every split tried, the best of them and the best uniform (aggregated) option."""

    gpus: int
    uniform: Option | None
    splits: tuple[Split, ...]

    @property
    def best(self) -> Split | None:
        meeting = [s for s in self.splits if s.option is not None]
        return max(meeting, key=lambda s: s.tokens_per_s_per_gpu) if meeting else None

    @property
    def disaggregated_wins(self) -> bool:
        best = self.best
        if best is None:
            return False
        return self.uniform is None or best.tokens_per_s_per_gpu > self.uniform.tokens_per_s_per_gpu

    @property
    def gain(self) -> float | None:
        """The winner's tokens/s per GPU over the best uniform option's (None: no uniform option)."""
        best = self.best
        if self.uniform is None or best is None or self.uniform.tokens_per_s_per_gpu <= 0:
            return None
        return max(best.tokens_per_s_per_gpu, self.uniform.tokens_per_s_per_gpu) / self.uniform.tokens_per_s_per_gpu

    def words(self) -> str:
        """One line: which layout wins, and by how much over the best uniform one."""
        best, uniform = self.best, self.uniform
        n = len(self.splits)
        tried = f"{n} prefill:decode split{'s' if n != 1 else ''} searched"
        if not self.disaggregated_wins:
            if uniform is None:
                return f"Layout: {tried}; none meets the budgets."
            split = (
                f" (best split {best.prefill_gpus}:{best.decode_gpus} "
                f"{best.tokens_per_s_per_gpu:,.0f} tokens/s per GPU)"
                if best
                else ""
            )
            return f"Layout: aggregated {uniform.label()} wins; {tried}{split}."
        than = (
            f", {self.gain:.2f}x the best uniform {uniform.label()} ({uniform.tokens_per_s_per_gpu:,.0f})"
            if uniform is not None and self.gain
            else ", where no uniform option meets the budgets"
        )
        return (
            f"Layout: disaggregated {best.prefill_gpus}:{best.decode_gpus} wins, prefill "
            f"{best.prefill.replicas}x{best.prefill.plan.label().replace(' ', '/')} + decode {best.option.label()} "
            f"at {best.tokens_per_s_per_gpu:,.0f} tokens/s per GPU{than}; {tried}."
        )

    def to_dict(self) -> dict:
        return {
            "gpus": self.gpus,
            "uniform": self.uniform.label() if self.uniform else None,
            "uniform_tokens_per_s_per_gpu": self.uniform.tokens_per_s_per_gpu if self.uniform else None,
            "best": self.best.to_dict() if self.best else None,
            "gain": self.gain,
            "disaggregated_wins": self.disaggregated_wins,
            "words": self.words(),
            "splits": [s.to_dict() for s in self.splits],
        }


COARSE_SPLITS = 16
"""At most this many splits in the first, coarse grid; finer grids then refine around its best."""
REFINE_BEST = 2
"""The best splits of each grid whose neighbourhoods the next, finer grid searches."""


def search_splits(
    req: Request, *, gpus: int, uniform: Option | None, memo: PriceMemo | None = None, exhaustive: bool = False
) -> SplitSearch | None:
    """The prefill:decode splits of `gpus` GPUs in steps of `split_step`, each side's best; None
    where the workload hands no prompt over (--context: decode only).

    Coarse, then refined: the first grid takes every split in steps of `split_step` x 2^k, the
    fewest that give at most COARSE_SPLITS splits; each finer grid (a quarter of the step, down to
    `split_step`) takes the splits within one step of the REFINE_BEST best so far. Tokens/s per GPU
    rises with the prefill side until it feeds all the decode side serves, then falls with the
    decode side, so the best lies beside the coarse grid's best (`exhaustive`: every split, which
    tests/integration/test_deploy_splits.py holds the refined search to).

    A split cannot serve more than its prefill side feeds (prompts/s x output tokens): each grid's
    splits are priced from the one that feeds most down, and a split whose feed is no more than the
    best found (or than the uniform option) is not priced further (`Split.pruned`)."""
    if req.served_workload.context:
        return None
    search = _Search(req, gpus, memo if memo is not None else PriceMemo())
    fine = split_step(req.scenario.system)
    count = max(0, (gpus - fine) // fine)  # splits of both sides at least `fine`
    step = fine
    while not exhaustive and count * fine // step > COARSE_SPLITS:
        step *= 2
    floor = uniform.tokens_per_s_per_gpu if uniform is not None and uniform.meets_budget else 0.0
    out: dict[int, Split] = {}
    search.price(range(step, gpus - fine + 1, step), out, floor)
    while step > fine:
        wide, step = step, max(fine, step // 4)
        best = sorted((s for s in out.values() if s.option is not None), key=lambda s: -s.tokens_per_s_per_gpu)
        near = {
            n
            for s in best[:REFINE_BEST]
            for n in range(s.prefill_gpus - wide + step, s.prefill_gpus + wide, step)
            if fine <= n <= gpus - fine and n not in out
        }
        search.price(sorted(near), out, floor)
    return SplitSearch(gpus=gpus, uniform=uniform, splits=tuple(out[k] for k in sorted(out)))


class _Search:
    """What the splits of one search share: each size's splits, each prefill plan's price, each
    decode plan's curve and KV hand-off (which depend on the decode plan alone): a PriceMemo, which
    `deploy` then prices the winning split from."""

    def __init__(self, req: Request, gpus: int, memo: PriceMemo):
        self.req, self.gpus, self.memo = req, gpus, memo

    def split_of(self, n: int) -> list:
        sc = self.req.scenario
        return splits(sc.model, sc.system, n, self.memo.plans)

    def price(self, sizes, out: dict[int, Split], floor: float) -> None:
        """Each prefill side of `sizes` GPUs, from the one that feeds most down: a split whose feed
        is no more than the best found (or `floor`) is not priced further."""
        prefills = {n: self.prefill(n) for n in sizes}
        for p_gpus in sorted(prefills, key=lambda n: self.feed(prefills[n]), reverse=True):
            side = prefills[p_gpus]
            if side is None or self.feed(side) <= max([s.tokens_per_s_per_gpu for s in out.values()] + [floor]):
                out[p_gpus] = Split(
                    prefill_gpus=p_gpus,
                    decode_gpus=self.gpus - p_gpus,
                    option=None,
                    prefill=None,
                    pruned=side is not None,
                )
            else:
                out[p_gpus] = self.decode(p_gpus, side)

    def prefill(self, p_gpus: int) -> tuple | None:
        """(replicas, plan, prefill seconds) of the best prefill side of `p_gpus` (None: none fits)."""
        try:
            return prefill_side(
                self.req.scenario,
                gpus=p_gpus,
                input_len=self.req.served_workload.input_len,
                candidates=self.split_of(p_gpus),
                memo=self.memo.prefill,
            )
        except PlanError:  # no plan of the model fits a prefill side this small
            return None

    def feed(self, side: tuple | None) -> float:
        """Tokens/s per GPU of all the GPUs that a prefill side can feed at most."""
        return 0.0 if side is None else side[0] / side[2] * self.req.served_workload.output_len / self.gpus

    def decode(self, p_gpus: int, side: tuple) -> Split:
        """The best decode option on the other GPUs, fed by `side` (ranked as deploy ranks them; the
        options' memory parts, which the ranking never reads, left out)."""
        sc, work, d_gpus = self.req.scenario, self.req.served_workload, self.gpus - p_gpus
        best: tuple[Option, Prefill] | None = None
        for r, p in self.split_of(d_gpus):
            pre = with_handoff(
                sc,
                *side,
                gpus=p_gpus,
                input_len=work.input_len,
                decode_plan=p,
                decode_gpus=d_gpus,
                memo=self.memo.handoffs,
            )
            c = _decode_curve(sc, p, work=work, prefill=pre, memo=self.memo)
            opt = _fed_by(_option(r, p, c, budgets=self.req.budgets, memory=False), c, pre, work, self.gpus, False)
            if opt.meets_budget and (best is None or _rank(opt) < _rank(best[0])):
                best = (opt, pre)
        return Split(
            prefill_gpus=p_gpus, decode_gpus=d_gpus, option=best[0] if best else None, prefill=best[1] if best else None
        )


def deploy_searched(req: Request, *, gpus: int, quiet_uniform: bool = False, exhaustive: bool = False) -> DeployResult:
    """`deploy` with the prefill:decode splits searched beside the uniform options (`--disaggregate
    auto`, and deploy's default where it applies): where a split serves more tokens/s per GPU, that
    split's deployment, priced from what the search priced (its PriceMemo), its verdict naming the
    layout and its gain over the best uniform option; else the uniform answer, the search's line in
    its verdict (`quiet_uniform`: the uniform answer as `deploy` gives it, the search in its record
    alone). The search is the result's `split_search`."""
    if req.served_workload.context:
        raise PlanError(
            "--disaggregate auto searches prefill:decode splits of served prompts: give "
            "--input-len/--output-len (a prompt to hand over), not --context"
        )
    memo = PriceMemo()
    result = deploy(req, gpus=gpus, memo=memo, launches=False)
    search = search_splits(req, gpus=gpus, uniform=result.best, memo=memo, exhaustive=exhaustive)
    if search.disaggregated_wins:
        best = search.best
        result = deploy(req, gpus=gpus, disaggregate=(best.prefill_gpus, best.decode_gpus), memo=memo, launches=False)
    result = with_launches(req, result)
    if not search.disaggregated_wins and quiet_uniform:
        return dataclasses.replace(result, split_search=search)
    return dataclasses.replace(result, verdict=f"{search.words()}\n{result.verdict}", split_search=search)


__all__ = [
    "COARSE_SPLITS",
    "REFINE_BEST",
    "SPLIT_STEP_MAX",
    "Split",
    "SplitSearch",
    "deploy_searched",
    "search_splits",
    "split_step",
]
