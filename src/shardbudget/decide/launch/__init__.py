"""The commands that run a deployment option, for each engine at its pinned release.

    flags     each engine's flag tables (`[cli]` of engines/<engine>.toml) and the check that a line parses
    priced    what the option priced (sides, precision, graphs, speculation, all-reduce) and where engines run
    layout    steps on nodes, GPUs and ports; the text; the YAML writer
    builder_kit  what the builders build with (flags by role, memory fraction, image, NCCL's environment)
    vllm, sglang, trtllm   each engine's servers, multi-node launchers, disaggregation and router
    emit      `deploy --emit slurm|k8s DIR`: a Slurm batch script or Kubernetes manifests
    k8s       pods and names for `--emit k8s`; a disaggregated deployment's manifests (a StatefulSet per side)

Every flag a line prints comes from its engine's `[cli]` table, which cites the engine's source at
the pinned release; `check_launch` parses every step of a launch under those tables.
"""

from __future__ import annotations

import json
import re
from importlib import resources

from ...errors import PlanError
from ...fabric.hardware import Catalog, System
from ...model import ModelConfig, list_models, load_model
from . import sglang, trtllm, vllm
from .flags import LaunchError, check_argv, programs
from .layout import Launch
from .priced import (
    ENGINE_LABELS,
    Priced,
    check_names,
    check_request,
    engine_runs,
    make_side,
    quantize_to,
    speculation_runs,
)

LAUNCH_ENGINES = ("vllm", "sglang", "trtllm")
_BUILDERS = {"vllm": vllm.build, "sglang": sglang.build, "trtllm": trtllm.build}
_UNSUPPORTED = {"sglang": sglang.unsupported}


def hf_id(cfg: ModelConfig) -> str:
    """What the engine is given: a local checkpoint by its folder's absolute path (its name alone
    would be looked up on the Hub), the Hugging Face repository of a shipped model (from its config's
    `_source`), else the name (a Hub id)."""
    if cfg.folder:
        return cfg.folder
    if cfg.name in list_models():
        raw = json.loads((resources.files("shardbudget") / "catalog" / "models" / f"{cfg.name}.json").read_text())
        found = re.match(r"https://huggingface\.co/([^/]+/[^/]+)/", str(raw.get("_source", "")))
        if found:
            return found.group(1)
    return cfg.name


def _draft_id(spec) -> str | None:
    if spec is None or not spec.draft_model:
        return None
    if spec.method == "draft":
        return hf_id(load_model(spec.draft_model))
    return spec.draft_model


def priced(result, cfg: ModelConfig, system: System, catalog: Catalog) -> Priced:
    """What the best option of a deploy result priced (it must have one)."""
    o, pre, w = result.best, result.prefill, result.workload
    sides = []
    if pre is not None:
        sides.append(
            make_side(
                "prefill",
                replicas=pre["replicas"],
                tp=pre["tp"],
                pp=pre["pp"],
                ep=pre["ep"],
                dp=pre["dp"],
                max_batch=None,
                system=system,
                catalog=catalog,
                impl=getattr(result, "impl", None),
            )
        )
    sides.append(
        make_side(
            "decode" if pre is not None else "serve",
            replicas=o.replicas,
            tp=o.tp,
            pp=o.pp,
            ep=o.ep,
            dp=o.dp,
            max_batch=o.max_batch,
            system=system,
            catalog=catalog,
            impl=getattr(result, "impl", None),
        )
    )
    precision = result.precision
    draft = _draft_id(w.speculation)
    check_names(hf_id(cfg), draft)  # before a name becomes an engine's argument (deploy checks it first)
    kv = precision.kv if precision is not None and precision.kv not in (None, precision.activations) else None
    return Priced(
        model_id=hf_id(cfg),
        cfg=cfg,
        system=system,
        engine=result.engine,
        sides=tuple(sides),
        max_model_len=w.max_context,
        max_num_tokens=result.chunk_tokens,
        memory_fraction=result.memory_utilization,
        needed_fraction=o.memory_fraction,
        quantize_to=quantize_to(cfg, precision.weights) if precision is not None else None,
        kv_dtype=kv,
        eager=result.engine == "eager",
        speculation=w.speculation,
        draft_id=draft,
        load=(result.in_flight, result.load) if getattr(result, "load", None) else None,
        moe_a2a=result.moe_a2a,
    )


def why_not(engine: str, p: Priced) -> str | None:
    """Why an engine cannot run this option (None: it can)."""
    check = _UNSUPPORTED.get(engine)
    return (
        engine_runs(engine, p.system) or speculation_runs(engine, p.speculation, p.cfg) or (check(p) if check else None)
    )


def build_launches(result, cfg: ModelConfig, system: System, catalog: Catalog) -> tuple[dict, dict]:
    """({engine: Launch} for the engines that can run the best option, {engine: why not} for the rest)."""
    p = priced(result, cfg, system, catalog)
    launches, skipped = {}, {}
    for engine in LAUNCH_ENGINES:
        why = why_not(engine, p)
        if why:
            skipped[engine] = why
            continue
        try:
            launches[engine] = _BUILDERS[engine](p)
        except PlanError as err:  # a layout the builder cannot place (a server across a node's edge)
            skipped[engine] = str(err)
    return launches, skipped


def launch_lines(result, cfg: ModelConfig, system: System, catalog: Catalog) -> dict[str, str]:
    """Each engine's commands as text (or '# not run: why' where it cannot run the option)."""
    launches, skipped = build_launches(result, cfg, system, catalog)
    return {e: launches[e].text() if e in launches else f"# not run: {skipped[e]}" for e in LAUNCH_ENGINES}


def check_launch(launch: Launch) -> int:
    """Parse every step under its engine's flag tables (a `LaunchError` names the first that fails);
    the number of steps checked."""
    progs = programs(launch.engine)
    for step in launch.steps:
        check_argv(progs[step.program], step.argv, {k: v for k, v in step.environment().items()})
        if step.wrapper:
            check_argv(progs["mpirun"], step.wrapper[1:-1])
    return len(launch.steps)


__all__ = [
    "ENGINE_LABELS",
    "LAUNCH_ENGINES",
    "Launch",
    "LaunchError",
    "Priced",
    "build_launches",
    "check_launch",
    "check_request",
    "hf_id",
    "launch_lines",
    "priced",
    "why_not",
]
