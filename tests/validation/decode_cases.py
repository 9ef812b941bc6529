"""Decode ITL cases from published measurements, predicted by the step model: one table for the
validation tests and for `make bench` (benchmarks/decode_accuracy.py).

Two sources: ../shared/data/decode_tp.csv (the cases of test_decode_tp.py) and the measurements
added with the engine presets, tests/validation/data/decode_measurements.csv (README beside it says
what each source timed). A row of the second is used where its model and system are in the catalog,
its batch is known (1 here) and no speculative decoding ran; each case names the row it reads.
Rows left out: hardware not named (SGLang PR #2643), workload not stated (SGLang #3196, #3656),
engine not named (tt-inference-server #356's 2025-07-08 table; its 2025-07-09 SGLang table is used),
models not in the catalog (Qwen3-14B/1.7B/4B, Llama-3.2-90B-Vision), RTX 3090 Ti (no catalog
system), request-rate loads with prefill mixed in (vLLM PR #2979: Mixtral at 1-2 requests/s), and SGLang
PR #6111's B200 rows (one fits, the other checks the sglang-0.4 preset: test_engine_eras.py).
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import Plan, Precision, load_model
from shardbudget.step.scenario import precision_for
from shardbudget.step.scenario import decode_step

HERE = Path(__file__).resolve().parent
MEASUREMENTS = HERE / "data" / "decode_measurements.csv"


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    model: str
    system: str
    plan: Plan
    batch: int
    context: int
    engine: str
    measured_s: float
    moe: bool
    nodes: int = 1
    precision: Precision | None = None


def _measurement(source: str, note: str, *, model: str = "", input_len: str = "", output_len: str = "") -> float:
    rows = [r for r in csv.DictReader(MEASUREMENTS.open(newline="")) if source in r["source"] and note in r["note"]
            and (not model or r["model"] == model)
            and (not input_len or r["input_len"] == input_len) and (not output_len or r["output_len"] == output_len)]
    assert len(rows) == 1, f"{source} / {note} / {input_len}/{output_len}: {len(rows)} rows"
    r = rows[0]
    value = float(r["value"])
    return {"tpot_ms": value * 1e-3, "itl_ms": value * 1e-3, "tokens_per_s_per_user": 1 / value}[r["metric"]]


def measurement_cases() -> list[Case]:
    """The rows of decode_measurements.csv this validation uses."""
    out = []
    for inp, outp in (("128", "128"), ("128", "1024"), ("1024", "128"), ("2048", "128"), ("3072", "128"),
                      ("4096", "128"), ("8192", "128")):
        out.append(Case(f"qwen3-30b-a3b a100 TP1 {inp}/{outp}", "tt-inference-server#340", "qwen3-30b-a3b",
                        "hgx-a100", Plan(1), 1, int(inp) + int(outp) // 2, "vllm",
                        _measurement("issues/340", "", model="qwen3-30b-a3b", input_len=inp, output_len=outp), True))
    out.append(Case("deepseek-v3 b200 TRT-LLM EP8 TP8 nvfp4", "TensorRT-LLM blog1", "deepseek-v3", "hgx-b200",
                    Plan(8, 1, 8), 1, 2048, "trtllm", _measurement("blog1", "Baseline: CUDA Graph"), True,
                    precision=Precision(weights="bf16", expert_weights="nvfp4")))
    # the 2025-07-09 table of #356 names its engine (SGLang over InfiniBand); the 2025-07-08 one does not.
    # July 2025 is before SGLang 0.5.0 (August 2025): the release line of the sglang-0.4 preset
    out.append(Case("deepseek-v3 2x h100 TP16 sglang-0.4", "tt-inference-server#356", "deepseek-v3", "hgx-h100",
                    Plan(16), 1, 192, "sglang-0.4",
                    _measurement("issues/356", "names SGLang", input_len="128", output_len="128"), True, nodes=2))
    return out


def predicted_s(case: Case) -> float:
    cat = load_catalog()
    cfg, system = load_model(case.model), cat.system(case.system)
    precision = case.precision or precision_for(cfg, system)[0]
    return decode_step(cfg, system, case.plan, batch=case.batch, context=case.context, engine=case.engine,
                       precision=precision, nodes=case.nodes).total_s


def summary(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    """(median, p90) of |predicted / measured - 1|."""
    errs = sorted(abs(p / m - 1) for p, m in pairs)
    return statistics.median(errs), errs[min(len(errs) - 1, int(round(0.9 * (len(errs) - 1))))]
