"""Decode ITL cases from published measurements, predicted by the step model: one table for the
validation tests (tests/validation/test_decode_tp.py, test_decode_measurements.py, test_decode_hybrid.py)
and for `make bench` (benchmarks/decode_accuracy.py).

Two sources. data/decode_tp.csv, decode latency versus TP degree (`TP_CASES`): each case names its
CSV rows (source, tp, batch, metric), the catalog system and engine preset that match the run, and
what is compared. Rows deliberately not used: Llama/LLaMA-1 13B/33B and T4/A30 rows of vllm#2192 (no
shipped config or system), the gpt-oss / Qwen3.6 / unnamed 1B / sglang TP16 rows (batch or lengths
not stated, or speculative decoding), Mistral-7B throughput rows (request throughput, not step latency).

And data/decode_measurements.csv, the measurements added with the engine presets (data/README.md
says what each source timed; `measurement_cases`). A row is used where its model and system are in
the catalog, its batch is known (1 here) and no speculative decoding ran; each case names the row it
reads. Rows left out: hardware not named (SGLang PR #2643), workload not stated (SGLang #3196, #3656),
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

from ..fabric.catalog import load_catalog
from ..model import Plan, Precision, load_model
from ..step.scenario import decode_step, precision_for
from .paths import DATA, data_file


@dataclass(frozen=True)
class TpCase:
    source: str  # substring of the CSV `source`
    model_csv: str  # substring of the CSV `model`
    hardware: str  # substring of the CSV `hardware`
    metric: str
    tp: int
    batch: int
    model: str
    system: str
    engine: str
    impl: str | None
    context: int
    to_itl_s: float  # factor turning the CSV value into seconds per token
    tolerance: float
    note: str = ""


V = "vllm-project/vllm/issues/16300"
T = "huggingface/text-generation-inf"
TP_CASES = [
    # vLLM 0.7.2 benchmark_latency, input 1, output 200: ITL = end-to-end / 200; vLLM uses its custom
    # all-reduce on NVLink; mean context ~100 tokens.
    *[
        TpCase(
            V,
            "QwQ-32B",
            "A100",
            "end_to_end_latency",
            tp,
            b,
            "qwq-32b",
            "hgx-a100",
            "vllm-v0",
            None,
            100,
            1 / 200,
            0.25,
        )
        for tp in (2, 4, 8)
        for b in (1, 16)
    ],
    TpCase(
        V, "QwQ-32B", "A100", "end_to_end_latency", 2, 128, "qwq-32b", "hgx-a100", "vllm-v0", None, 100, 1 / 200, 0.25
    ),
    # TGI per-token latency, eager PyTorch (no CUDA graphs), prompt length not stated: ~300 context.
    *[
        TpCase(
            T, "CodeLlama-34", hw, "latency_per_token_avg", tp, 1, "codellama-34b", system, "tgi", None, 300, 1e-3, 0.20
        )
        for hw, system in (("A100", "hgx-a100"), ("H100", "hgx-h100"))
        for tp in (1, 2, 4)
    ],
    # SGLang, concurrency 1, 1000 in / 1000 out: ITL = 1 / output throughput; custom all-reduce. Measured
    # before SGLang 0.5.23 (release not stated): priced at sglang-0.5.14, the release current then.
    TpCase(
        "sgl-project/sglang/issues/28224",
        "Llama-3.3-70B",
        "GB200",
        "output_throughput",
        4,
        1,
        "llama-3.1-70b",
        "gb200-nvl72",
        "sglang-0.5.14",
        None,
        1500,
        -1.0,
        0.20,
        "before the regression",
    ),
    # vLLM V1 serving at QPS 1 on B200: TPOT of steps that also carry other requests' prefill chunks.
    # A 2025 pull request's numbers: priced at vllm-0.19, the oldest preset released after them.
    TpCase(
        "vllm-project/vllm/pull/20759",
        "Llama-3.1-7",
        "B200",
        "median_TPOT",
        4,
        2,
        "llama-3.1-70b",
        "hgx-b200",
        "vllm-0.19",
        None,
        700,
        1e-3,
        0.40,
        "~2 requests in flight and prefill chunks mixed into decode steps",
    ),
]


def tp_rows(data_dir: Path | None = None) -> list[dict]:
    """Every row of data/decode_tp.csv."""
    with data_file("decode_tp.csv", data_dir).open(newline="") as fh:
        return list(csv.DictReader(fh))


def tp_measured(rows: list[dict], case: TpCase) -> float:
    """The case's one CSV row as seconds per token."""
    hits = [
        r
        for r in rows
        if case.source in r["source"]
        and case.model_csv in r["model"]
        and case.hardware in r["hardware"]
        and r["metric"] == case.metric
        and r["tp"] == str(case.tp)
        and (r["batch"] == str(case.batch) or not r["batch"].isdigit())
    ]
    if case.metric == "median_TPOT":
        hits = [r for r in hits if r["batch"] == "QPS=1"]
    if case.model_csv == "Llama-3.3-70B":
        hits = [r for r in hits if "before" in r["note"]]
    assert len(hits) == 1, f"{case}: expected one CSV row, found {len(hits)}"
    value = float(hits[0]["value"])
    return 1 / value if case.to_itl_s < 0 else value * case.to_itl_s


def tp_predicted(case: TpCase) -> float:
    return decode_step(
        case.model,
        case.system,
        Plan(case.tp),
        batch=case.batch,
        context=case.context,
        impl=case.impl,
        engine=case.engine,
    ).total_s


MEASUREMENTS = DATA / "decode_measurements.csv"


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
    rows = [
        r
        for r in csv.DictReader(MEASUREMENTS.open(newline=""))
        if source in r["source"]
        and note in r["note"]
        and (not model or r["model"] == model)
        and (not input_len or r["input_len"] == input_len)
        and (not output_len or r["output_len"] == output_len)
    ]
    assert len(rows) == 1, f"{source} / {note} / {input_len}/{output_len}: {len(rows)} rows"
    r = rows[0]
    value = float(r["value"])
    return {"tpot_ms": value * 1e-3, "itl_ms": value * 1e-3, "tokens_per_s_per_user": 1 / value}[r["metric"]]


def measurement_cases() -> list[Case]:
    """The rows of decode_measurements.csv this validation uses."""
    out = []
    for inp, outp in (
        ("128", "128"),
        ("128", "1024"),
        ("1024", "128"),
        ("2048", "128"),
        ("3072", "128"),
        ("4096", "128"),
        ("8192", "128"),
    ):
        out.append(
            Case(
                f"qwen3-30b-a3b a100 TP1 {inp}/{outp}",
                "tt-inference-server#340",
                "qwen3-30b-a3b",
                "hgx-a100",
                Plan(1),
                1,
                int(inp) + int(outp) // 2,
                "vllm-0.19",
                _measurement("issues/340", "", model="qwen3-30b-a3b", input_len=inp, output_len=outp),
                True,
            )
        )
    out.append(
        Case(
            "deepseek-v3 b200 TRT-LLM EP8 TP8 nvfp4",
            "TensorRT-LLM blog1",
            "deepseek-v3",
            "hgx-b200",
            Plan(8, 1, 8),
            1,
            2048,
            "trtllm",
            _measurement("blog1", "Baseline: CUDA Graph"),
            True,
            precision=Precision(weights="bf16", expert_weights="nvfp4"),
        )
    )
    # the 2025-07-09 table of #356 names its engine (SGLang over InfiniBand); the 2025-07-08 one does not.
    # July 2025 is before SGLang 0.5.0 (August 2025): the release line of the sglang-0.4 preset
    out.append(
        Case(
            "deepseek-v3 2x h100 TP16 sglang-0.4",
            "tt-inference-server#356",
            "deepseek-v3",
            "hgx-h100",
            Plan(16),
            1,
            192,
            "sglang-0.4",
            _measurement("issues/356", "names SGLang", input_len="128", output_len="128"),
            True,
            nodes=2,
        )
    )
    # vLLM's 2024 V0 engine under its own releases' presets (issue 36): vllm-0.5's round trip is fitted on
    # #6913's batch-1 row and vllm-0.6's on #9856's; #6913's batch-32 row is held out
    fp8 = Precision(weights="fp8")  # --dtype fp8: FP8 weights and GEMMs, as the checkpoint ran
    for batch in (1, 32):
        out.append(
            Case(
                f"llama-3.1-70b fp8 h100 TP4 b{batch} vllm-0.5" + (" (fit)" if batch == 1 else ""),
                "vllm#6913",
                "llama-3.1-70b",
                "hgx-h100",
                Plan(4),
                batch,
                192,
                "vllm-0.5",
                _measurement("issues/6913", f"batch size {batch};"),
                False,
                precision=fp8,
            )
        )
    out.append(
        Case(
            "llama-3.1-8b a100 TP2 b8 vllm-0.6 (fit)",
            "vllm#9856",
            "llama-3.1-8b",
            "hgx-a100",
            Plan(2),
            8,
            256,
            "vllm-0.6",
            _measurement("pull/9856", "--batch-size 8"),
            False,
        )
    )
    return out


def predicted_s(case: Case) -> float:
    cat = load_catalog()
    cfg, system = load_model(case.model), cat.system(case.system)
    precision = case.precision or precision_for(cfg, system)[0]
    return decode_step(
        cfg,
        system,
        case.plan,
        batch=case.batch,
        context=case.context,
        engine=case.engine,
        precision=precision,
        nodes=case.nodes,
    ).total_s


def summary(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    """(median, p90) of |predicted / measured - 1|."""
    errs = sorted(abs(p / m - 1) for p, m in pairs)
    return statistics.median(errs), errs[min(len(errs) - 1, int(round(0.9 * (len(errs) - 1))))]
