"""The option groups of the commands that answer a planning question, each defined once, and the one
function that builds a request from them.

A command asks for its groups with `@groups(FABRIC, STEP, BUDGETS)`: the decorator adds every option
of each group to the command's signature (so typer parses them with one name, type, default and
help) and hands the command one record per group instead. So `plan`, `deploy`, `explain` and
`report` take the same pricing options, and `compare` the collective ones, by construction;
tests/integration/test_cli_options.py holds it.

    FABRIC   what prices a collective: the engine (and the NCCL it ships), --impl, the catalog,
             --nccl, --nccl-symmetric, --download
    STEP     what prices a step: --dtype, --kv-dtype, --overlap, --sequence-parallel,
             --gpu-memory-utilization
    BUDGETS  what a plan is judged by: --budget, --ttft-budget

The library is imported when a command runs, not when this module is (start-up).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Optional, get_type_hints

from ..defaults import BATCHES, COMM_THRESHOLD, DEFAULT_ENGINE, KNEE_THRESHOLD, MOE_A2A
from . import args
from .command_io import load_catalogs, model_name


@dataclass(frozen=True, kw_only=True)
class FabricArgs:
    """What prices a collective, as the user gave it."""

    engine: args.EngineOpt = DEFAULT_ENGINE
    impl: args.ImplOpt = None
    catalog: args.CatalogOpt = None
    nccl: args.NcclOpt = None
    nccl_symmetric: args.NcclSymmetricOpt = False
    download: args.DownloadOpt = False

    def load_catalog(self):
        """The built-in catalog with the user's files, priced as the NCCL --nccl names."""
        return load_catalogs(self.catalog, self.nccl, self.nccl_symmetric)

    def model(self, name: str) -> str:
        """A model name, its config.json fetched first with --download."""
        return model_name(name, self.download)


@dataclass(frozen=True, kw_only=True)
class StepArgs:
    """What prices a step beyond the fabric, as the user gave it."""

    dtype: args.WeightDtypeOpt = None
    kv_dtype: args.KvDtypeOpt = None
    overlap: args.OverlapOpt = "none"
    sequence_parallel: args.SequenceParallelOpt = False
    gpu_memory_utilization: args.GpuMemoryOpt = None
    moe_a2a: args.MoeA2AOpt = MOE_A2A
    scheduler_steps: args.SchedulerStepsOpt = 1

    def settings(self):
        from ..step.settings import PlanSettings

        return PlanSettings(
            overlap=self.overlap,
            sequence_parallel=self.sequence_parallel,
            memory_utilization=self.gpu_memory_utilization,
            moe_a2a=self.moe_a2a,
            scheduler_steps=self.scheduler_steps,
        )


@dataclass(frozen=True, kw_only=True)
class BudgetArgs:
    """The budgets a plan must meet, as the user gave them."""

    budget: args.BudgetOpt = "30ms"
    ttft_budget: args.TtftBudgetOpt = None

    def seconds(self) -> tuple[float | None, float | None]:
        return args.budget(self.budget), args.ttft_budget(self.ttft_budget)


FABRIC, STEP, BUDGETS = FabricArgs, StepArgs, BudgetArgs
_KEYWORD = {FabricArgs: "fabric", StepArgs: "step", BudgetArgs: "budgets"}


def groups(*kinds: type):
    """A decorator: the command takes every option of `kinds` (FABRIC, STEP, BUDGETS), and receives
    them as one record per group (keywords fabric=, step=, budgets=)."""

    def wrap(command):
        sig = inspect.signature(command, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name not in {_KEYWORD[k] for k in kinds}]
        added = [
            inspect.Parameter(
                f.name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=get_type_hints(k, include_extras=True)[f.name],
                default=f.default,
            )
            for k in kinds
            for f in fields(k)
        ]

        @functools.wraps(command)
        def run(**kwargs):
            records = {_KEYWORD[k]: k(**{f.name: kwargs.pop(f.name) for f in fields(k)}) for k in kinds}
            return command(**kwargs, **records)

        del run.__wrapped__  # typer reads the signature below, not the command's own
        params = own + added
        run.__signature__ = sig.replace(parameters=params)
        run.__annotations__ = {p.name: p.annotation for p in params} | {"return": sig.return_annotation}
        return run

    return wrap


def build_request(
    model: str,
    system: str,
    *,
    fabric: FabricArgs,
    step: StepArgs | None = None,
    budgets: BudgetArgs | None = None,
    nodes: Optional[int] = None,
    batches=BATCHES,
    context: Optional[int] = None,
    input_len: Optional[int] = None,
    output_len: Optional[int] = None,
    speculation=None,
    jitter: Optional[list[Path]] = None,
    pp_all: bool = False,
    comm_threshold: float = COMM_THRESHOLD,
    knee_threshold: float = KNEE_THRESHOLD,
    pricing=None,
):
    """The request a command's options describe (decide.request.Request), every value checked."""
    from ..decide.request import Budgets, Request, workload
    from ..step.scenario import scenario

    step = step or StepArgs()
    budget_s, ttft_s = budgets.seconds() if budgets else (None, None)
    limits = Budgets(
        budget_s=budget_s, ttft_budget_s=ttft_s, comm_threshold=comm_threshold, knee_threshold=knee_threshold
    )
    work = workload(
        context=args.tokens("--context", context),
        input_len=args.tokens("--input-len", input_len),
        output_len=args.tokens("--output-len", output_len),
        speculation=speculation,
    )
    sc = scenario(
        fabric.model(model),
        system,
        nodes=nodes,
        engine=fabric.engine,
        dtype=step.dtype,
        kv_dtype=step.kv_dtype,
        impl=fabric.impl,
        settings=step.settings(),
        catalog=fabric.load_catalog(),
    )
    return Request(
        scenario=sc,
        budgets=limits,
        workload=work,
        batches=tuple(batches),
        jitter=args.jitter(jitter),
        pp_all=pp_all,
        pricing=pricing,
    )


__all__ = ["BUDGETS", "BudgetArgs", "FABRIC", "FabricArgs", "STEP", "StepArgs", "build_request", "groups"]
