"""Disaggregated prefill / decode (`--disaggregate P:D`): P GPUs prefill prompts, D GPUs decode.

Decode replicas then run pure decode steps (no prefill chunks mixed in). A prompt's TTFT is its
prefill on a prefill replica plus the hand-off of its KV cache to the decode replica: each decode
GPU receives its own shard (the KV of its heads and its pipeline stage's layers) from the prefill
side in parallel, priced as a send/recv over the path between them: inside the node when both
sides fit in one, else over the scale-out network (collectives' send/recv, the NIC's rate and hop
latency). The decode side's throughput is capped by what the prefill side can feed it: prefill
replicas / prefill time prompts per second, output_len tokens each.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..comm.collectives import collective_cost
from ..errors import PlanError
from ..fabric.hardware import Catalog, System
from ..step.memory import fits as memory_fits
from ..step.memory import memory_need
from ..model import ModelConfig, Plan, kv_cache_bytes_per_gpu
from ..step.scenario import Scenario


@dataclass(frozen=True, kw_only=True)
class Prefill:
    """The prefill side: its plan, how many replicas, and one prompt's time and KV hand-off."""

    gpus: int
    replicas: int
    plan: Plan
    prefill_s: float
    transfer_s: float
    """The KV hand-off of one prompt to a decode replica."""

    @property
    def ttft_s(self) -> float:
        return self.prefill_s + self.transfer_s

    @property
    def prompts_per_s(self) -> float:
        return self.replicas / self.prefill_s

    def to_dict(self) -> dict:
        return {
            "gpus": self.gpus,
            "replicas": self.replicas,
            "tp": self.plan.tp,
            "pp": self.plan.pp,
            "ep": self.plan.ep,
            "dp": self.plan.dp,
            "prefill_s": self.prefill_s,
            "kv_transfer_s": self.transfer_s,
            "ttft_s": self.ttft_s,
            "kv_transfer_share_of_ttft": self.transfer_s / self.ttft_s,
            "prompts_per_s": self.prompts_per_s,
        }


def parse_split(text: str) -> tuple[int, int]:
    """'2:6' -> (2, 6): prefill GPUs : decode GPUs."""
    left, sep, right = str(text).partition(":")
    if not sep or not left.strip().isdigit() or not right.strip().isdigit() or int(left) < 1 or int(right) < 1:
        raise PlanError(f"--disaggregate {text!r} must be P:D, GPUs for prefill and for decode, e.g. 2:6")
    return int(left), int(right)


def with_handoff(
    sc: Scenario,
    replicas: int,
    p: Plan,
    t: float,
    *,
    gpus: int,
    input_len: int,
    decode_plan: Plan,
    decode_gpus: int,
    memo: dict | None = None,
) -> Prefill:
    """The prefill side `prefill_side` chose, with its KV hand-off to `decode_plan`'s GPUs. `memo`
    ((decode plan, same node) -> seconds) keeps each hand-off's price across the splits of a search:
    it depends on the decode plan and the path alone, not on the prefill side."""
    system = sc.system
    same_node = gpus + decode_gpus <= system.gpus_per_node
    key = (decode_plan, same_node)
    if memo is None or key not in memo:
        transfer = kv_handoff_s(
            sc.model,
            system,
            sc.catalog,
            input_len=input_len,
            decode_plan=decode_plan,
            kv_dtype=sc.precision.kv_dtype,
            same_node=same_node,
        )
        if memo is None:
            return Prefill(gpus=gpus, replicas=replicas, plan=p, prefill_s=t, transfer_s=transfer)
        memo[key] = transfer
    return Prefill(gpus=gpus, replicas=replicas, plan=p, prefill_s=t, transfer_s=memo[key])


def prefill_side(
    sc: Scenario, *, gpus: int, input_len: int, candidates: list[tuple[int, Plan]], memo: dict | None = None
) -> tuple[int, Plan, float]:
    """(replicas, plan, one prompt's prefill seconds) of the split of `gpus` GPUs that fits one prompt
    in memory and prefills the most prompts per second: the same for every decode side it feeds.
    `memo` (plan -> prefill seconds, or None where one prompt does not fit) keeps each plan's price
    across the prefill sides of a search."""
    cfg, system, settings, precision, engine = sc.model, sc.system, sc.settings, sc.precision, sc.engine
    memo = {} if memo is None else memo
    for _, p in candidates:
        if p not in memo:
            fit = memory_fits(
                memory_need(
                    cfg,
                    p,
                    precision=precision,
                    engine=engine,
                    batch=1,
                    context=float(input_len),
                    workspace_bytes=settings.workspace_bytes,
                ),
                system.gpu,
                engine=engine,
                plan=p,
                utilization=settings.memory_utilization,
            )
            memo[p] = float(sc.step(p, "prefill").evaluate(1.0, float(input_len)).total_s) if fit else None
    fitting = [(r, p) for r, p in candidates if memo[p] is not None]
    if not fitting:
        raise PlanError(
            f"no plan of {cfg.name} fits a prefill side of {gpus} GPUs of {system.name} in memory; "
            f"give prefill more GPUs (--disaggregate P:D)"
        )
    best = None
    for replicas, p in fitting:
        t = memo[p]
        if best is None or replicas / t > best[0] / best[2]:
            best = (replicas, p, t)
    return best


def kv_handoff_s(
    cfg: ModelConfig,
    system: System,
    catalog: Catalog,
    *,
    input_len: int,
    decode_plan: Plan,
    kv_dtype: str,
    same_node: bool,
) -> float:
    """One prompt's KV cache, each decode GPU's shard received in parallel over its own path."""
    shard = kv_cache_bytes_per_gpu(
        cfg,
        batch=1,
        context=float(input_len),
        tp=decode_plan.tp,
        pp=decode_plan.pp,
        kv_dtype=kv_dtype,
        attn_dp=decode_plan.dp,
    )
    if not same_node and system.nic_fabric is None:
        raise PlanError(f"{system.name} has no scale-out network to hand the KV cache to another node")
    return collective_cost(
        "send/recv", max(float(shard), 1.0), system, nodes=1 if same_node else 2, gpus=2, catalog=catalog
    ).time_s


__all__ = ["Prefill", "kv_handoff_s", "parse_split", "prefill_side", "with_handoff"]
