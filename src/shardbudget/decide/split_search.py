"""The prefill:decode split as part of `deploy`'s search (issue 38, build item 1).

Aggregated serving runs prompts and decode steps on the same replicas; disaggregated serving gives
P GPUs to prefill and D = N - P to decode, the KV cache handed over on the fabric (disagg.py). The
best split depends on the model, the rack and the budgets: DeepSeek-V3 on one GB200 NVL72 serves
twice the tokens per GPU disaggregated, with wide EP and data-parallel attention on the decode side,
while a dense 70B model on one HGX node is best aggregated. `search_splits` prices every split of
the GPUs in steps of `split_step` GPUs against the best uniform (aggregated) option and names the
winner and its gain.

The prefill side of P GPUs is chosen once per P (disagg.prefill_side: it does not depend on the
decode side it feeds) and each decode plan's curve once for every P (only the TTFT it carries and
the hand-off differ), so the search costs about one aggregated sweep per distinct side size.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import PlanError
from ..fabric.hardware import System
from ..model import Plan
from .deploy import DeployResult, Option, _curve, _fed_by, _option, _rank, deploy, splits
from .disagg import Prefill, prefill_side, with_handoff
from .request import Request

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
            "splits": [s.to_dict() for s in self.splits],
        }


def search_splits(req: Request, *, gpus: int, uniform: Option | None) -> SplitSearch | None:
    """Every prefill:decode split of `gpus` GPUs in steps of `split_step`, each side's best; None
    where the workload hands no prompt over (--context: decode only).

    A split cannot serve more than its prefill side feeds (prompts/s x output tokens): the splits
    are priced from the one that feeds most down, and a split whose feed is no more than the best
    found (or than the uniform option) is not priced further (`Split.pruned`)."""
    if req.served_workload.context:
        return None
    search = _Search(req, gpus)
    step = split_step(req.scenario.system)
    prefills = {n: search.prefill(n) for n in range(step, gpus - step + 1, step)}
    floor = uniform.tokens_per_s_per_gpu if uniform is not None and uniform.meets_budget else 0.0
    out: dict[int, Split] = {}
    for p_gpus in sorted(prefills, key=lambda n: search.feed(prefills[n]), reverse=True):
        side = prefills[p_gpus]
        if side is None or search.feed(side) <= max([s.tokens_per_s_per_gpu for s in out.values()] + [floor]):
            out[p_gpus] = Split(
                prefill_gpus=p_gpus, decode_gpus=gpus - p_gpus, option=None, prefill=None, pruned=side is not None
            )
        else:
            out[p_gpus] = search.decode(p_gpus, side)
    return SplitSearch(gpus=gpus, uniform=uniform, splits=tuple(out[k] for k in sorted(out)))


class _Search:
    """What the splits of one search share: each size's splits, each prefill plan's price, each
    decode plan's curve and KV hand-off (which depend on the decode plan alone)."""

    def __init__(self, req: Request, gpus: int):
        self.req, self.gpus = req, gpus
        self.sides: dict[int, list] = {}
        self.prefill_memo: dict = {}
        self.curves: dict[Plan, object] = {}
        self.handoffs: dict[Plan, Prefill] = {}

    def split_of(self, n: int) -> list:
        if n not in self.sides:
            sc = self.req.scenario
            self.sides[n] = splits(sc.model, sc.system, n)
        return self.sides[n]

    def prefill(self, p_gpus: int) -> tuple | None:
        """(replicas, plan, prefill seconds) of the best prefill side of `p_gpus` (None: none fits)."""
        try:
            return prefill_side(
                self.req.scenario,
                gpus=p_gpus,
                input_len=self.req.served_workload.input_len,
                candidates=self.split_of(p_gpus),
                memo=self.prefill_memo,
            )
        except PlanError:  # no plan of the model fits a prefill side this small
            return None

    def feed(self, side: tuple | None) -> float:
        """Tokens/s per GPU of all the GPUs that a prefill side can feed at most."""
        return 0.0 if side is None else side[0] / side[2] * self.req.served_workload.output_len / self.gpus

    def decode(self, p_gpus: int, side: tuple) -> Split:
        """The best decode option on the other GPUs, fed by `side`."""
        sc, work, d_gpus = self.req.scenario, self.req.served_workload, self.gpus - p_gpus
        replicas, pre_plan, pre_s = side
        best: tuple[Option, Prefill] | None = None
        for r, p in self.split_of(d_gpus):
            if p not in self.handoffs:
                self.handoffs[p] = with_handoff(
                    sc,
                    replicas,
                    pre_plan,
                    pre_s,
                    gpus=p_gpus,
                    input_len=work.input_len,
                    decode_plan=p,
                    decode_gpus=d_gpus,
                )
            pre = dataclasses.replace(self.handoffs[p], gpus=p_gpus, replicas=replicas, plan=pre_plan, prefill_s=pre_s)
            if p not in self.curves:
                self.curves[p] = _curve(sc, p, work=work, prefill=pre)
            c = dataclasses.replace(self.curves[p], ttft_s=np.full_like(self.curves[p].itl_s, pre.ttft_s))
            opt = _fed_by(_option(r, p, c, budgets=self.req.budgets), c, pre, work, self.gpus)
            if opt.meets_budget and (best is None or _rank(opt) < _rank(best[0])):
                best = (opt, pre)
        return Split(
            prefill_gpus=p_gpus, decode_gpus=d_gpus, option=best[0] if best else None, prefill=best[1] if best else None
        )


def deploy_searched(req: Request, *, gpus: int) -> DeployResult:
    """`deploy` with the prefill:decode splits searched beside the uniform options (`--disaggregate
    auto`): where a split serves more tokens/s per GPU, that split's deployment, its verdict naming
    the layout and its gain over the best uniform option; else the uniform answer, the search's line
    in its verdict."""
    if req.served_workload.context:
        raise PlanError(
            "--disaggregate auto searches prefill:decode splits of served prompts: give "
            "--input-len/--output-len (a prompt to hand over), not --context"
        )
    uniform = deploy(req, gpus=gpus)
    search = search_splits(req, gpus=gpus, uniform=uniform.best)
    if search.disaggregated_wins:
        best = search.best
        uniform = deploy(req, gpus=gpus, disaggregate=(best.prefill_gpus, best.decode_gpus))
    return dataclasses.replace(uniform, verdict=f"{search.words()}\n{uniform.verdict}")


__all__ = ["SPLIT_STEP_MAX", "Split", "SplitSearch", "deploy_searched", "search_splits", "split_step"]
