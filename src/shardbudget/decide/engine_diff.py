"""`shardbudget engines`: the engine presets as releases, and what changes between two of them.

`engine_releases` lists every preset (its release, date, the NCCL its torch pin installs, where its
rules were read, how far behind its line's newest it is). `engine_diff` puts two presets side by side:
the fields they state differently (engines.releases.diff), and, for a model on a system, the plan
under each (the same request but for the engine, priced as `plan` prices it): every plan's ITL, served
TPOT and memory, the memory the engine allows a GPU, and the latency-optimal plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import defaults
from ..engines.presets import engine_name, load_engine
from ..errors import PlanError
from ..model import Plan
from ..engines.releases import ENGINE_WORDS, LINES, FieldChange, ReleaseInfo, age_note, diff, line_of, release_info
from ..step.memory import usable_bytes
from .planner import plan
from .request import request


@dataclass(frozen=True, kw_only=True)
class EngineRelease:
    """One preset in `shardbudget engines`' list."""

    info: ReleaseInfo
    note: str | None
    """How far behind its line's newest it is (engines.releases.age_note), None for the newest."""
    behind: str | None
    """The same in a few words: 'vllm 0.34.0 is 15 minor releases newer', None for the newest."""

    def to_dict(self) -> dict:
        return {**self.info.to_dict(), "note": self.note}


def engine_releases() -> tuple[EngineRelease, ...]:
    """Every preset (defaults.ENGINE_NAMES' order: the engines users choose, then the older releases)."""
    return tuple(
        EngineRelease(info=release_info(n), note=age_note(n), behind=_behind(n)) for n in defaults.ENGINE_NAMES
    )


def _behind(name: str) -> str | None:
    note, line = age_note(name), line_of(name)
    if note is None:
        return None
    newest = load_engine(LINES[line][-1])
    return f"{LINES[line][-1]} {newest.version} is {note.rsplit(': ', 1)[1]}"


@dataclass(frozen=True, kw_only=True)
class PlanLine:
    """One plan under one preset: its ITL, served TPOT and memory per GPU."""

    plan: str
    itl_s: float
    tpot_s: float | None
    mem_bytes_per_gpu: float
    fits: bool
    allreduce: str | None
    """What runs its TP all-reduce (the engine's kernel, by the words plan prints)."""

    def to_dict(self) -> dict:
        return {
            "plan": self.plan,
            "itl_s": self.itl_s,
            "tpot_s": self.tpot_s,
            "mem_bytes_per_gpu": self.mem_bytes_per_gpu,
            "fits": self.fits,
            "allreduce": self.allreduce,
        }


@dataclass(frozen=True, kw_only=True)
class EnginePlan:
    """The plan under one preset: each plan's line, the latency-optimal one, the memory allowed."""

    preset: str
    version: str
    nccl: str
    batch: int
    lines: tuple[PlanLine, ...]
    best_plan: str | None
    verdict: str
    memory_fraction: float
    """The engine's default share of a GPU at the latency-optimal plan (or TP1), as plan judges it."""
    usable_bytes: float
    """That share of one GPU's memory, bytes."""

    def to_dict(self) -> dict:
        return {
            "preset": self.preset,
            "version": self.version,
            "nccl": self.nccl,
            "batch": self.batch,
            "lines": [x.to_dict() for x in self.lines],
            "best_plan": self.best_plan,
            "verdict": self.verdict,
            "memory_fraction": self.memory_fraction,
            "usable_bytes": self.usable_bytes,
        }


@dataclass(frozen=True, kw_only=True)
class EngineDiff:
    """Two presets side by side: the fields that differ, and (with a model and system) the plans."""

    a: ReleaseInfo
    b: ReleaseInfo
    changes: tuple[FieldChange, ...]
    model: str | None = None
    system: str | None = None
    plans: tuple[EnginePlan, EnginePlan] | None = None

    def to_dict(self) -> dict:
        return {
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "changes": [c.to_dict() for c in self.changes],
            "model": self.model,
            "system": self.system,
            "plans": [p.to_dict() for p in self.plans] if self.plans else None,
        }


def engine_diff(
    a: str,
    b: str,
    *,
    model: str | None = None,
    system: str | None = None,
    batch: int = 1,
    input_len: int = defaults.INPUT_TOKENS,
    output_len: int = defaults.OUTPUT_TOKENS,
) -> EngineDiff:
    """What changes from preset `a` to preset `b`; with `model` and `system`, the plan of one model on
    one system under each (decode at `batch`, the served TPOT of `input_len` / `output_len` requests)."""

    a, b = engine_name(a), engine_name(b)
    if (model is None) != (system is None):
        raise PlanError("engines --diff prices a plan with both --model and --system (or neither)")
    plans = None
    if model is not None:
        plans = tuple(_engine_plan(e, model, system, batch, input_len, output_len) for e in (a, b))
    return EngineDiff(a=release_info(a), b=release_info(b), changes=diff(a, b), model=model, system=system, plans=plans)


def _engine_plan(engine: str, model: str, system: str, batch: int, input_len: int, output_len: int) -> EnginePlan:
    req = request(model, system, engine=engine, batches=[batch], input_len=input_len, output_len=output_len)
    result = plan(req).results[0]
    lines = tuple(
        PlanLine(
            plan=r.label(),
            itl_s=r.itl_s,
            tpot_s=r.tpot_s,
            mem_bytes_per_gpu=r.mem_bytes_per_gpu,
            fits=r.fits_memory,
            allreduce=r.allreduce.words if r.allreduce else None,
        )
        for r in result.rows
    )
    best = result.best_plan
    tp = best["tp"] if best else 1
    gpu = req.scenario.system.gpu

    fraction = usable_bytes(gpu, engine=engine, plan=Plan(tp)) / gpu.memory_bytes
    preset = load_engine(engine)
    return EnginePlan(
        preset=engine,
        version=preset.version,
        nccl=preset.nccl,
        batch=batch,
        lines=lines,
        best_plan=_label(best),
        verdict=result.verdict,
        memory_fraction=fraction,
        usable_bytes=fraction * gpu.memory_bytes,
    )


def _label(best: dict | None) -> str | None:
    if not best:
        return None
    return (
        f"TP{best['tp']}"
        + (f" PP{best['pp']}" if best.get("pp", 1) > 1 else "")
        + (f" EP{best['ep']}" if best.get("ep", 1) > 1 else "")
    )


def release_header(engine: str) -> str:
    """'vLLM 0.34.0' or, for a preset behind its line's newest, '... (vllm-0.19 is vLLM 0.19.0 ...)'."""
    line = line_of(engine)
    words = f"{ENGINE_WORDS.get(line, engine)} {load_engine(engine).version}"
    note = age_note(engine)
    return f"{words}; {note}" if note else words


__all__ = ["EngineDiff", "EnginePlan", "EngineRelease", "PlanLine", "engine_diff", "engine_releases", "release_header"]
