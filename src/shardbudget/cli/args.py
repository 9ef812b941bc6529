"""What the `shardbudget` command's options share: their types, how their text is read, and the
JSON the commands print. Kept apart from the command modules so that they hold the commands alone."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import units
from ..errors import PlanError
from ..step.speculative import Speculation

CatalogOpt = Annotated[Optional[list[Path]], typer.Option("--catalog", help="Extra catalog TOML file(s) (fabrics, GPUs, systems, fitted profiles).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")]
NodesOpt = Annotated[int, typer.Option("--nodes", help="Number of nodes of the system.")]
GpuMemoryOpt = Annotated[Optional[float], typer.Option("--gpu-memory-utilization", help="Share of GPU memory the engine may use (default: the engine's, e.g. vLLM 0.9).")]
DownloadOpt = Annotated[bool, typer.Option("--download", help="Fetch a Hugging Face id's config.json (that file alone) when it is not in the local Hugging Face cache; needs huggingface_hub.")]


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


def cost_row(c) -> dict:
    return {"bytes": c.msg_bytes, "time_s": c.time_s, "latency_s": c.latency_s, "bandwidth_s": c.bandwidth_s,
            "algorithm": c.algorithm, "protocol": c.protocol, "impl": c.impl, "algbw_bytes_per_s": c.algbw_bytes_per_s,
            "busbw_bytes_per_s": c.busbw_bytes_per_s}


def sizes(size: Optional[list[str]]) -> list[float]:
    if not size:
        return units.parse_size_range("8B:1GiB")
    out: list[float] = []
    for s in size:
        out.extend(units.parse_size_range(s) if ":" in s else units.parse_list([s], units.parse_bytes))
    return out


def budget(text: str) -> float | None:
    """A time budget, or None for 'none'."""
    return None if text.strip().lower() == "none" else units.parse_seconds(text, what="--budget")


def speculation(method: str | None, draft_tokens: int | None, acceptance: float | None,
                 draft_model: str | None) -> Speculation | None:
    """The speculation asked for; its settings alone are a mistake, not something to ignore."""
    if method is None:
        given = [flag for flag, v in (("--draft-tokens", draft_tokens), ("--acceptance", acceptance),
                                      ("--draft-model", draft_model)) if v is not None]
        if given:
            raise PlanError(f"{' and '.join(given)} only apply with --speculative mtp | eagle | draft")
        return None
    return Speculation(method=method, draft_tokens=3 if draft_tokens is None else draft_tokens,
                       acceptance=0.7 if acceptance is None else acceptance, draft_model=draft_model)
