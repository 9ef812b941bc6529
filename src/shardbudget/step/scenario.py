"""What every step of one request is priced under (`Scenario`), and the one place that turns the
names a user gives (a model, a system, an engine, a dtype) into the objects that price it.

A scenario is the model on `nodes` nodes of a system, the engine that runs it with the NCCL release
that engine installs, the precision the weights and the KV cache are held in, the engine's
efficiencies and the user's settings, and an all-reduce implementation forced for every call (or the
engine's own rule). Every view of one request (plan, deploy, explain, the report) prices its steps
through `Scenario.step`, so none can price with other settings than the others.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import defaults
from ..comm.collectives import IMPLS
from ..dtypes import canonical
from ..engines.presets import load_engine
from ..engines.release import engine_catalog
from ..engines.releases import age_note
from ..errors import PlanError, UnknownNameError
from ..fabric.catalog import load_catalog
from ..fabric.hardware import DEGRADED_WORDS, Catalog, System
from ..model import ModelConfig, Plan, Precision, default_precision, load_model
from .compose import StepModel, StepTime, compile_step
from .settings import Efficiency, PlanSettings, engine_efficiency


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """One model on one system under one engine and precision: what a step is priced under."""

    model: ModelConfig
    system: System
    catalog: Catalog
    """The catalog priced at the engine's NCCL release (engines.release), or the release --nccl named."""
    nodes: int | None = None
    """Nodes of the system the request spans; None: as few as the question needs (plan: 1; deploy:
    the fewest that hold its GPUs)."""
    engine: str = defaults.DEFAULT_ENGINE
    dtype: str | None = None
    """The weight dtype asked for (--dtype), canonical; None: the checkpoint's own."""
    kv_dtype: str | None = None
    """The KV-cache dtype asked for (--kv-dtype); None: the activation dtype (the engines' 'auto')."""
    precision: Precision
    """What the weights, activations and KV cache are priced in on this system's GPU."""
    precision_notes: tuple[str, ...] = ()
    """What was decided about the precision and why, one line each; and, first, that the system is a
    degraded node profile where it is one (`degraded_note`), so that every header says so; and where the
    engine is an older release than its line's newest, how old (`engine_notes`)."""
    eff: Efficiency
    settings: PlanSettings = PlanSettings()
    impl: str | None = None
    """nccl or custom forced for every all-reduce; None: the engine's rule by size."""

    @property
    def node_count(self) -> int:
        return self.nodes or 1

    def step(self, plan: Plan, phase: str = "decode") -> StepModel:
        """The (cached) step model of `plan` in this scenario."""
        return compile_step(
            self.model,
            self.system,
            plan,
            self.catalog,
            impl=self.impl,
            engine=self.engine,
            precision=self.precision,
            phase=phase,
            eff=self.eff,
            settings=self.settings,
        )

    def prompt_alone_s(self, plan: Plan, tokens: int) -> float:
        """The TTFT of a decode-only request (no served workload): one prompt of `tokens` tokens
        prefilled alone by `plan`, no decode step sharing its steps. plan's rows and deploy --context's
        options both take it, so a TTFT budget judges the same number in both."""
        return float(self.step(plan, "prefill").evaluate(1.0, float(tokens)).total_s)

    def step_of(self, model: ModelConfig, plan: Plan, phase: str = "decode") -> StepModel:
        """Another model's step in this scenario (a speculative draft model beside its target)."""
        return compile_step(
            model,
            self.system,
            plan,
            self.catalog,
            impl=self.impl,
            engine=self.engine,
            precision=self.precision,
            phase=phase,
            eff=self.eff,
            settings=self.settings,
        )

    def on(self, system: System, nodes: int | None = None) -> Scenario:
        """The same request on another system (a what-if, another system of the report): the same
        choices, the precision decided again for that system's GPU."""
        if system is self.system and nodes == self.nodes:
            return self
        precision, notes = precision_for(self.model, system, self.dtype, self.kv_dtype)
        check_nodes(system, nodes or 1)
        return replace(
            self,
            system=system,
            nodes=nodes,
            precision=precision,
            precision_notes=degraded_note(system) + tuple(notes) + engine_notes(self.engine),
        )

    def with_engine(self, engine: str) -> Scenario:
        """The same request under another engine: its NCCL release, its efficiencies."""
        if engine == self.engine:
            return self
        load_engine(engine)
        old = engine_notes(self.engine) + steps_notes(self.engine, self.settings.scheduler_steps)
        # another release runs its own scheduler: one decode step per call unless it has multi-step
        steps = self.settings.scheduler_steps if load_engine(engine).host.multi_step else 1
        notes = tuple(n for n in self.precision_notes if n not in old) + engine_notes(engine)
        return replace(
            self,
            engine=engine,
            catalog=engine_catalog(self.catalog, engine),
            eff=engine_efficiency(engine),
            settings=replace(self.settings, scheduler_steps=steps),
            precision_notes=notes + steps_notes(engine, steps),
        )


def engine_notes(engine: str) -> tuple[str, ...]:
    """('engine: vllm-0.19 is vLLM 0.19.0 (2026-04-03); the newest preset, vllm, is 0.34.0 ...',) where
    `engine` is an older release than its line's newest (engines.releases.age_note), else ()."""
    note = age_note(engine)
    return (f"engine: {note}",) if note else ()


def steps_notes(engine: str, steps: int) -> tuple[str, ...]:
    """('multi-step scheduling: 8 decode steps per scheduler call; the host's 2.5 ms round trip is paid
    once per 8',) where more than one step runs per call, else ()."""
    if steps == 1:
        return ()
    per_step_ms = load_engine(engine).host.per_step_s * 1e3
    return (
        f"multi-step scheduling: {steps} decode steps per scheduler call; the host's {per_step_ms:g} ms "
        f"round trip is paid once per {steps}",
    )


def check_scheduler_steps(engine: str, steps: int) -> None:
    """More than one decode step per scheduler call only under a release that runs them ([host]
    multi_step: vLLM 0.6); a one-line error naming the presets that do, else."""
    if steps > 1 and not load_engine(engine).host.multi_step:
        able = ", ".join(n for n in defaults.ENGINE_NAMES if load_engine(n).host.multi_step)
        raise PlanError(
            f"--scheduler-steps {steps}: engine {engine!r} runs one decode step per scheduler call "
            f"(multi-step scheduling: {able})"
        )


def scenario(
    model: str | ModelConfig,
    system: str | System,
    *,
    nodes: int | None = None,
    engine: str = defaults.DEFAULT_ENGINE,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    impl: str | None = None,
    settings: PlanSettings = PlanSettings(),
    catalog: Catalog | None = None,
    eff: Efficiency | None = None,
    precision: Precision | None = None,
) -> Scenario:
    """The scenario these names describe, every name checked (unknown ones fail with "did you mean").

    `catalog` is priced at `engine`'s NCCL release unless a release was stated (--nccl); `eff`
    defaults to the engine preset's; `precision` (a library caller's own) replaces the one the
    checkpoint, --dtype and --kv-dtype give."""
    load_engine(engine)  # an unknown engine fails first, with "did you mean"
    catalog = engine_catalog(catalog or load_catalog(), engine)
    cfg = load_model(model) if isinstance(model, str) else model
    sysm = catalog.system(system) if isinstance(system, str) else system
    if nodes is not None:
        check_nodes(sysm, nodes)
    if not isinstance(settings, PlanSettings):
        raise PlanError(f"settings must be a PlanSettings, got {type(settings).__name__}")
    check_scheduler_steps(engine, settings.scheduler_steps)
    dtype = canonical(dtype) if dtype is not None else None
    if precision is None:
        precision, notes = precision_for(cfg, sysm, dtype, kv_dtype)
    else:
        notes = ()
    notes = degraded_note(sysm) + tuple(notes)
    return Scenario(
        model=cfg,
        system=sysm,
        catalog=catalog,
        nodes=nodes,
        engine=engine,
        dtype=dtype,
        kv_dtype=kv_dtype,
        precision=precision,
        precision_notes=tuple(notes) + engine_notes(engine) + steps_notes(engine, settings.scheduler_steps),
        eff=eff or engine_efficiency(engine),
        settings=settings,
        impl=check_impl(impl),
    )


def decode_step(
    model: str | ModelConfig,
    system: str | System,
    plan: Plan = Plan(),
    *,
    batch: int = 1,
    context: float = defaults.CONTEXT_TOKENS,
    nodes: int = 1,
    impl: str | None = None,
    engine: str = defaults.DEFAULT_ENGINE,
    precision: Precision = Precision(),
    eff: Efficiency | None = None,
    settings: PlanSettings = PlanSettings(),
    catalog: Catalog | None = None,
    phase: str = "decode",
) -> StepTime:
    """One decode (or prefill) step's time: the library entry point for a single configuration
    (`precision` as given: bf16 throughout by default, not the checkpoint's)."""
    sc = scenario(
        model,
        system,
        nodes=nodes,
        engine=engine,
        impl=impl,
        settings=settings,
        catalog=catalog,
        eff=eff,
        precision=precision,
    )
    if plan.gpus > nodes * sc.system.gpus_per_node:
        raise PlanError(
            f"{plan.label()} needs {plan.gpus} GPUs but {nodes} x {sc.system.name} has "
            f"{nodes * sc.system.gpus_per_node}"
        )
    return sc.step(plan, phase).step(batch, context)


def precision_for(
    cfg: ModelConfig, system: System, dtype: str | None = None, kv_dtype: str | None = None
) -> tuple[Precision, tuple[str, ...]]:
    """The checkpoint's own precision (its quantization_config and torch_dtype), or every weight in
    `dtype`; the KV cache in `kv_dtype` or else the activation dtype (engines' 'auto'); formats the
    GPU has no tensor cores for priced weight-only. With notes that say what was chosen and why."""
    precision, notes = default_precision(cfg, system.gpu, dtype_override=dtype, kv_override=kv_dtype)
    return precision, tuple(notes)


def degraded_note(system: System) -> tuple[str, ...]:
    """One line saying that the system is a degraded node profile, and why (issue 34: the demo's PCIe
    box was one and no header said so); () for a healthy one."""
    if not system.degraded:
        return ()
    return (f"warning: {system.name} {DEGRADED_WORDS}: {system.degraded}",)


def check_nodes(system: System, nodes: int) -> None:
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise PlanError(f"nodes must be a whole number of at least 1, got {nodes!r}")
    if nodes > 1 and system.nic_fabric is None:
        raise PlanError(f"system {system.name!r} has no scale-out network; it cannot span {nodes} nodes")


def check_impl(impl: str | None) -> str | None:
    """nccl or custom (forced for every all-reduce), or None: the engine decides."""
    if impl is not None and impl not in IMPLS:
        raise UnknownNameError("implementation", impl, IMPLS)
    return impl


__all__ = ["Scenario", "check_impl", "check_nodes", "decode_step", "precision_for", "scenario"]
