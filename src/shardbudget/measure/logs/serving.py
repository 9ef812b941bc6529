"""Serving benchmark results (issue 39): what `vllm bench serve --save-result`, SGLang's
`bench_serving --output-file`, NVIDIA AIPerf / genai-perf (`profile_export_*.json`) and
TensorRT-LLM's `trtllm-bench --report_json` write, read into one record, `ServingRun`, in SI units.

The formats are told apart by content, never by the file's name; their field names are each
tool's own (`serving_formats`: the readers, with the source each is read from). A file holds one
run (vLLM, AIPerf, genai-perf, trtllm-bench) or one run per line (SGLang's JSONL, vLLM's
`--append-result`).

What a run is: the configured load (`concurrency`: the client's cap on requests in flight, or
`request_rate`), the mean prompt and output lengths per request, the latencies (TTFT, TPOT, ITL,
end-to-end; mean, median, p99, as the tool states them), the output throughput, the measured mean
in flight (Little's law: request throughput x mean end-to-end latency, or the tool's own figure),
and the settings the file records about the server (`RunSettings`: TP/PP/EP, CUDA graphs, KV dtype,
the KV cache's capacity, speculative decoding). None everywhere the file says nothing.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from ...errors import MeasureError

METRICS = ("ttft", "tpot", "itl", "e2el")
"""time to first token; time per output token after the first (per request: (e2e - ttft) / (out - 1));
inter-token latency (every gap between two streamed chunks); end-to-end latency of a request."""
STATS = ("mean", "median", "p99")
TOOLS = ("vllm bench serve", "sglang bench_serving", "aiperf", "genai-perf", "trtllm-bench")
MAX_FILE_BYTES = 64 * 2**20
"""A result file with per-request details (--save-detailed) of 100k requests is tens of MB."""


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """What the file records about the server that ran it (None: not recorded)."""

    engine: str | None = None
    """vllm, sglang, trtllm, as far as the file tells (a benchmark client's backend name)."""
    tp: int | None = None
    pp: int | None = None
    ep: int | None = None
    dp_attention: bool | None = None
    cuda_graphs: bool | None = None
    kv_dtype: str | None = None
    kv_capacity_tokens: int | None = None
    """Tokens the server's KV cache holds (SGLang's max_total_num_tokens)."""
    max_batch: int | None = None
    speculative: str | None = None
    """The speculative method the file shows ('' when it shows none is used)."""
    gpu: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class ServingRun:
    """One serving benchmark run, seconds and tokens (module docstring)."""

    source: str
    index: int
    """1-based: the run's line (JSONL) or position in its file."""
    tool: str
    """One of TOOLS."""
    model: str | None
    concurrency: int | None
    """The client's cap on requests in flight (None: open loop at `request_rate`)."""
    request_rate: float | None
    """Requests per second offered (None: unlimited or not stated)."""
    input_len: float | None
    output_len: float | None
    completed: int | None = None
    failed: int | None = None
    latencies: tuple[tuple[str, str, float], ...] = ()
    """(metric, stat, seconds) for metric in METRICS, stat in STATS."""
    output_tok_per_s: float | None = None
    in_flight: float | None = None
    """Mean requests in flight over the run (Little's law, or the tool's own average)."""
    settings: RunSettings = field(default_factory=RunSettings)
    notes: tuple[str, ...] = ()

    def latency(self, metric: str, stat: str = "mean") -> float | None:
        return next((v for m, s, v in self.latencies if m == metric and s == stat), None)

    @property
    def label(self) -> str:
        return f"{self.source}" + (f" (run {self.index})" if self.index > 1 else "")

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k not in ("latencies", "settings", "notes")}
        d["latencies_s"] = {f"{s}_{m}": v for m, s, v in self.latencies}
        return {**d, "settings": self.settings.to_dict(), "notes": list(self.notes)}


# --- numbers a reader takes -------------------------------------------------------------------


def number(value, name: str, source: str, *, scale: float = 1.0) -> float | None:
    """A finite non-negative number times `scale`, None for null / absent / 'inf'; else one line."""
    if value is None or value == "inf" or (isinstance(value, float) and math.isinf(value) and value > 0):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise MeasureError(f"{source}: {name} is {value!r}, not a number") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise MeasureError(f"{source}: {name} is {value!r}, not a finite non-negative number")
    return float(value) * scale


def whole(value, name: str, source: str) -> int | None:
    v = number(value, name, source)
    if v is None:
        return None
    if v != int(v):
        raise MeasureError(f"{source}: {name} is {value!r}, not a whole number")
    return int(v)


def flag(value) -> bool | None:
    """A recorded switch: JSON true/false, or the text a --metadata KEY=VALUE carries."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "on", "false", "0", "no", "off"):
        return value.strip().lower() in ("true", "1", "yes", "on")
    return None


def per_request(total, count, name: str, source: str) -> float | None:
    t, n = number(total, name, source), number(count, "completed", source)
    return t / n if t is not None and n else None


def little(request_per_s: float | None, e2e_s: float | None) -> float | None:
    """Mean requests in flight: arrival rate x time in the system (Little's law)."""
    return request_per_s * e2e_s if request_per_s and e2e_s else None


__all__ = [
    "METRICS",
    "MAX_FILE_BYTES",
    "STATS",
    "TOOLS",
    "RunSettings",
    "ServingRun",
    "flag",
    "little",
    "number",
    "per_request",
    "whole",
]
