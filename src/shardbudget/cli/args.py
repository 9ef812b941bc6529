"""The `shardbudget` command's one vocabulary of options: every option two commands share is defined
here once, with its name, type, help and bounds, and `tests/integration/test_cli_options.py` holds
that every command spells, types and explains it the same way. The spellings replaced in 0.2
(`--sizes`, `--nproc`, `--ranks`, `report --system NAME:N`) still work for one release, hidden from
`--help`, with a warning (`renamed`).

This module is imported by every command at start-up, so it imports typer and the ground floor's
`defaults` alone (no copies of the library's defaults: they are read from there); what reads the
options' text (units, speculation) is imported when a command runs. The shared groups of the
planning commands are built from these options in `options.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

# --- the library's defaults, read from the one module that holds them ------------------------------
from ..defaults import (
    BUDGET_STEPS as DEFAULT_BUDGET_STEPS,
    CHECK_TOLERANCE as DEFAULT_TOLERANCE,  # noqa: E402
    COMM_THRESHOLD,
    CONTEXT_TOKENS,
    DEFAULT_ENGINE,
    DEPLOY_MAX_BATCH,
    DEPLOY_ROWS,
    ENGINE_NAMES as ENGINES,
    ACCEPTANCE,
    DRAFT_TOKENS,
    EXPLAIN_MODEL,
    EXPLAIN_SYSTEM,
    INPUT_TOKENS,
    REPORT_BATCHES,
    KNEE_THRESHOLD,
    OUTPUT_TOKENS,
)

# --- bounds: what the tool can mean ---------------------------------------------------------------
MAX_GPUS = 131_072
"""GPUs: about the largest clusters built (xAI's Colossus, ~100k H100 in 2024, 2^17 here)."""
MAX_NODES = MAX_GPUS
MAX_BATCH = 16_384
"""Sequences one replica decodes together: engines schedule hundreds to a few thousand (vLLM's
max_num_seqs defaults to 256 or 1024, SGLang's max_running_requests is set from memory); 16384 is
well past any of them."""
MAX_TOKENS = 10_000_000
"""Prompt, output or context tokens of one sequence: past any model's context window (1-10M)."""
MAX_ITL_BUDGET_S = 10.0
"""An inter-token latency budget above 10 s per token is not a latency budget."""
MAX_TTFT_BUDGET_S = 3600.0


def _bounded(flag: str, lo: int, hi: int, what: str):
    """A click callback: `flag`'s whole number(s) within [lo, hi], the bound and its reason in the message."""

    def check(value):
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if v is not None and not lo <= v <= hi:
                raise typer.BadParameter(f"{v} is outside {lo}..{hi:,} ({what})", param_hint=f"'{flag}'")
        return value

    return check


# --- the options ---------------------------------------------------------------------------------
MODEL_HELP = (
    "Model: a shipped name (`shardbudget models`), a config.json path or folder, or a Hugging Face id "
    "(ORG/NAME, from the local HF cache; --download fetches its config.json)."
)
ModelOpt = Annotated[str, typer.Option("--model", "-m", help=MODEL_HELP)]
MaybeModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help=MODEL_HELP)]
"""check: the model a serving benchmark's file names unless given."""
SystemOpt = Annotated[
    str,
    typer.Option(
        "--system", "-s", help="System (node type) name, e.g. hgx-h100: `shardbudget fabrics --systems` lists them."
    ),
]
OptSystemOpt = Annotated[
    Optional[str],
    typer.Option(
        "--system", "-s", help="System (node type) name, e.g. hgx-h100: `shardbudget fabrics --systems` lists them."
    ),
]
SystemsOpt = Annotated[
    list[str], typer.Option("--system", "-s", help="Systems to compare, e.g. -s hgx-h100 -s h100-pcie (repeat).")
]
NodesOpt = Annotated[
    Optional[int],
    typer.Option(
        "--nodes",
        callback=_bounded("--nodes", 1, MAX_NODES, "nodes of one deployment"),
        help="Nodes of the system (default 1; deploy: as few as --gpus needs; check: the log's own count).",
    ),
]
NodesListOpt = Annotated[
    Optional[list[int]],
    typer.Option(
        "--nodes",
        callback=_bounded("--nodes", 1, MAX_NODES, "nodes of one deployment"),
        help="Nodes of each --system: once for all, or once per --system in the same order (default 1).",
    ),
]
GpusOpt = Annotated[
    Optional[int],
    typer.Option(
        "--gpus",
        callback=_bounded("--gpus", 1, MAX_GPUS, "GPUs of a datacenter"),
        help="GPUs (ranks) taking part; deploy: the GPUs to spend; measure and lab on CPUs: gloo processes.",
    ),
]
BatchOpt = Annotated[
    Optional[list[int]],
    typer.Option(
        "--batch",
        "-b",
        callback=_bounded("--batch", 1, MAX_BATCH, "sequences any engine schedules at once"),
        help="Decode batch size, sequences per replica (repeat for several).",
    ),
]
DeployBatchOpt = Annotated[
    Optional[int],
    typer.Option(
        "--batch",
        "-b",
        callback=_bounded("--batch", 1, DEPLOY_MAX_BATCH, "sequences of one decode step, as far as deploy sweeps"),
        help="Every option at this decode batch (a PP replica keeps PP micro-batches of it in flight) instead of its "
        "largest within the budgets.",
    ),
]
ContextOpt = Annotated[
    Optional[int],
    typer.Option(
        "--context",
        callback=_bounded("--context", 1, MAX_TOKENS, "tokens of one sequence"),
        help=f"Tokens in the KV cache per sequence, and the prompt for TTFT (default {CONTEXT_TOKENS}; deploy: decode only at this context).",
    ),
]
InputLenOpt = Annotated[
    Optional[int],
    typer.Option(
        "--input-len",
        help=f"Prompt tokens per request of a served workload (default {INPUT_TOKENS}; plan: given with or "
        f"without --output-len, each row adds the served TPOT; deploy serves one always).",
    ),
]
OutputLenOpt = Annotated[
    Optional[int],
    typer.Option(
        "--output-len",
        help=f"Generated tokens per request of a served workload (default {OUTPUT_TOKENS}; plan: with or "
        f"without --input-len).",
    ),
]
BudgetOpt = Annotated[
    str,
    typer.Option(
        "--budget",
        help="Budget per output token, e.g. 30ms ('none': no budget): it judges the served TPOT (prompts mixed in) where the question serves prompts (--input-len/--output-len; deploy's default), else the ITL of one decode step.",
    ),
]
TtftBudgetOpt = Annotated[Optional[str], typer.Option("--ttft-budget", help="Time-to-first-token budget, e.g. 2s.")]
IMPL_HELP = (
    "Force every all-reduce to nccl | custom (the engines' one-/two-shot kernels); default: the engine "
    "chooses by size (allreduce, compare: nccl)."
)
ImplOpt = Annotated[Optional[str], typer.Option("--impl", help=IMPL_HELP)]
WeightDtypeOpt = Annotated[
    Optional[str],
    typer.Option(
        "--dtype",
        help="Weight dtype: bf16 | fp8 | int8 | int4 | mxfp4 | nvfp4 (default: the checkpoint's own, from its config.json).",
    ),
]
ElementDtypeOpt = Annotated[
    Optional[str],
    typer.Option(
        "--dtype",
        help="Element type of the message: bf16 | fp16 | fp32 | ... (nccl-tests' count column; measure: the tensor's).",
    ),
]
KvDtypeOpt = Annotated[
    Optional[str],
    typer.Option(
        "--kv-dtype", help="KV-cache dtype: bf16 | fp8 | ... (default auto: the activation dtype, as the engines do)."
    ),
]
ENGINE_HELP = (
    "vllm (vLLM 0.34.0) | sglang (SGLang 0.5.23) | trtllm (TensorRT-LLM 1.3.0rc20) | eager (vLLM "
    "without CUDA graphs) | older releases: vllm-0.19 | vllm-0.9 (vLLM 0.9.x) | vllm-0.6 | vllm-0.5 (vLLM 0.6.3 / 0.5.4, 2024) | sglang-0.5.14 | sglang-0.4 "
    "(SGLang's 2025 releases) | trtllm-1.0 (TensorRT-LLM 1.0.0) | vllm-v0 | tgi: the engine release whose "
    "all-reduce kernels, CUDA graphs and host costs a step has (`shardbudget engines` lists them)."
)
EngineOpt = Annotated[str, typer.Option("--engine", help=ENGINE_HELP)]
MaybeEngineOpt = Annotated[Optional[str], typer.Option("--engine", help=ENGINE_HELP)]
OpOpt = Annotated[
    str,
    typer.Option(
        "--op", help="Collective: all-reduce | reduce-scatter | all-gather | all-to-all | broadcast | send/recv."
    ),
]
SIZE_HELP = (
    "Message size(s) per rank: 16KiB, a list 8B,1KiB, or a range 8B:1GiB (powers of two; 8B:1GiB:4 for "
    "factor 4); repeatable."
)


def size_opt(default: str):
    """--size, one help for every command; the default each command sweeps is shown beside it."""
    return Annotated[Optional[list[str]], typer.Option("--size", help=SIZE_HELP, show_default=default)]


OverlapOpt = Annotated[
    str,
    typer.Option(
        "--overlap",
        help="How communication overlaps compute: none | tbo (two-batch overlap) | fused (GEMM + collective kernels).",
    ),
]
SequenceParallelOpt = Annotated[
    bool, typer.Option("--sequence-parallel", help="TP all-reduces become reduce-scatter + all-gather.")
]
MoeA2AOpt = Annotated[
    str,
    typer.Option(
        "--moe-a2a",
        help="What runs MoE dispatch and combine: nccl (the engine's default: vLLM and SGLang gather and "
        "reduce-scatter under DP attention) | deepep (normal for prefill, low-latency for decode) "
        "| deepep-normal | deepep-ll.",
    ),
]
SchedulerStepsOpt = Annotated[
    int,
    typer.Option(
        "--scheduler-steps",
        min=1,
        help="Decode steps per scheduler call (vLLM 0.6's --num-scheduler-steps, multi-step scheduling: "
        "the host's round trip paid once per N steps; --engine vllm-0.6). Default 1.",
    ),
]
GpuMemoryOpt = Annotated[
    Optional[float],
    typer.Option(
        "--gpu-memory-utilization",
        help="Share of GPU memory the engine may use (default: the engine's, e.g. vLLM 0.34.0: 1.0).",
    ),
]
CatalogOpt = Annotated[
    Optional[list[Path]],
    typer.Option(
        "--catalog",
        help="Extra catalog TOML file(s): fabrics, GPUs, systems, fitted profiles; their names may not reuse a built-in one.",
    ),
]
NcclOpt = Annotated[
    Optional[str],
    typer.Option(
        "--nccl",
        help="Price NCCL's rules of this release (2.18 up to the catalog's own, e.g. 2.26 or 2.27.3; a later "
        "one is refused) where they changed: "
        "symmetric kernels from 2.27, GPUDirect RDMA over Grace C2C from 2.27, NVLSTree network latency. "
        "Default: the release the engine's pinned version installs (vllm 2.27.5), else the catalog's.",
    ),
]
NcclSymmetricOpt = Annotated[
    bool,
    typer.Option(
        "--nccl-symmetric",
        help="Buffers registered as NCCL symmetric windows (NCCL 2.27+; vLLM VLLM_USE_NCCL_SYMM_MEM=1, "
        "SGLang --enable-symm-mem): NCCL runs its symmetric kernels where they exist.",
    ),
]
JitterOpt = Annotated[
    Optional[list[Path]],
    typer.Option(
        "--jitter",
        help="Log with per-iteration times (nccl-tests -I 1, text or -J JSON; shardbudget measure JSON): adds the "
        "ITL's p99 beside its mean (repeat).",
    ),
]
MemoryOpt = Annotated[
    bool,
    typer.Option(
        "--memory", help="Also print what each plan's bytes per GPU are made of (deploy: each option's, at its batch)."
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")]
DownloadOpt = Annotated[
    bool,
    typer.Option(
        "--download",
        help="Fetch a Hugging Face id's config.json (that file alone) when it is not in the local Hugging Face cache; needs huggingface_hub.",
    ),
]
PlotOpt = Annotated[
    Optional[Path],
    typer.Option("--plot", help="Also write this command's figure (PNG or SVG; an existing file needs --force)."),
]
OutOpt = Annotated[
    Optional[Path], typer.Option("--out", "-o", help="Write the command's file here (an existing file needs --force).")
]
ForceOpt = Annotated[
    bool, typer.Option("--force", help="Replace files this command writes (--out, --plot) where they exist.")
]
NameOpt = Annotated[
    str,
    typer.Option(
        "--name", help="Name of the system the profile defines (letters, digits, '-', '_'; not a catalog name)."
    ),
]
IterationsOpt = Annotated[int, typer.Option("--iters", help="Timed iterations per size (the median is reported).")]
WarmupOpt = Annotated[int, typer.Option("--warmup", help="Untimed iterations per size before the timed ones.")]


def hidden(flag: str, type_=Optional[str]):
    """An old spelling kept for one release: accepted, hidden from --help."""
    return Annotated[type_, typer.Option(flag, hidden=True)]


def renamed(new_value, old_value, old: str, new: str):
    """The value of an option given under its old name, with a warning; the new name wins if both."""
    if old_value is None or old_value == [] or old_value is False:
        return new_value
    typer.echo(f"warning: {old} is now {new}; {old} will be removed in the next release", err=True)
    return new_value if new_value not in (None, []) else old_value


# --- reading the options' text (imports at run time) ---------------------------------------------


def jsonable(o):
    """Plain JSON data: dataclasses via to_dict(), inf/NaN as null (JSON has no infinity)."""
    if hasattr(o, "to_dict"):
        o = o.to_dict()
    if isinstance(o, dict):
        return {str(k): jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [jsonable(v) for v in o]
    if isinstance(o, float) and (o != o or o in (float("inf"), float("-inf"))):
        return None
    return o


def jitter(paths: Optional[list[Path]]):
    """The calls' measured spread from --jitter logs (decide.tail_plan.Jitter), or None; plan and
    deploy read them alike (tail_plan reads logs: loaded only then)."""
    if not paths:
        return None
    from ..decide.tail_plan import read_jitter

    return read_jitter(paths)


def sizes(size: Optional[list[str]], default: str = "8B:1GiB") -> list[float]:
    from .. import units

    out: list[float] = []
    for s in size or [default]:
        out.extend(units.parse_size_range(s) if ":" in s else units.parse_list([s], units.parse_bytes))
    return out


def budget(text: str) -> float | None:
    """An inter-token latency budget, or None for 'none'; at most MAX_ITL_BUDGET_S."""
    from .. import units
    from ..errors import PlanError

    if text.strip().lower() == "none":
        return None
    t = units.parse_seconds(text, what="--budget")
    if t > MAX_ITL_BUDGET_S:
        raise PlanError(
            f"--budget {text}: at most {MAX_ITL_BUDGET_S:g} s per token (an inter-token latency "
            f"budget beyond that is not a latency budget); 'none' for no budget"
        )
    return t


def ttft_budget(text: str | None) -> float | None:
    """A time-to-first-token budget, at most MAX_TTFT_BUDGET_S."""
    if not text:
        return None
    from .. import units
    from ..errors import PlanError

    t = units.parse_seconds(text, what="--ttft-budget")
    if t > MAX_TTFT_BUDGET_S:
        raise PlanError(f"--ttft-budget {text}: at most {MAX_TTFT_BUDGET_S:g} s (an hour) to the first token")
    return t


def tokens(flag: str, value: int | None) -> int | None:
    """A token count within 1..MAX_TOKENS, or None."""
    from ..errors import PlanError

    if value is not None and not 1 <= value <= MAX_TOKENS:
        raise PlanError(f"{flag} {value}: must be 1..{MAX_TOKENS:,} tokens (past any model's context window)")
    return value


def speculation(method: str | None, draft_tokens: int | None, acceptance: float | None, draft_model: str | None):
    """The speculation asked for; its settings alone are a mistake, not something to ignore."""
    from ..errors import PlanError

    if method is None:
        given = [
            flag
            for flag, v in (
                ("--draft-tokens", draft_tokens),
                ("--acceptance", acceptance),
                ("--draft-model", draft_model),
            )
            if v is not None
        ]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise PlanError(f"{' and '.join(given)} only {verb} with --speculative mtp | eagle | draft")
        return None
    from ..step.speculative import Speculation

    return Speculation(
        method=method,
        draft_tokens=DRAFT_TOKENS if draft_tokens is None else draft_tokens,
        acceptance=ACCEPTANCE if acceptance is None else acceptance,
        draft_model=draft_model,
    )
