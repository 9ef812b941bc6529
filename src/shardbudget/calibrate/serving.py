"""Served TPOT against public serving benchmarks, priced as `plan --input-len/--output-len` and
`deploy` price it (step.served): the rows, their prices and the fastest-plan cases that
benchmarks/serving_accuracy.py prints and tests/validation/test_fastest_plan.py holds (issue 21).

Every row of data/serving_measurements.csv (data/README.md: what each source timed), and the
concurrency-1 TPOT rows of data/decode_measurements.csv whose model, system and ISL/OSL are known,
priced at batch = concurrency under the row's engine release's preset (`release_engine`). A fastest-plan
case is one model on one GPU type under one engine and workload measured under two or more plans
(the plans of the same rows here; the TP degrees of data/decode_tp.csv), whose measured times differ
by more than TIE.
"""

from __future__ import annotations

import csv
import re
import statistics
from collections import defaultdict

from ..engines.releases import PresetChoice, preset_for
from ..model import Plan, load_model
from ..step.memory import fits, memory_need
from ..step.scenario import precision_for, scenario
from ..step.served import served_curve
from .decode import TP_CASES, tp_measured, tp_predicted, tp_rows
from .paths import DATA


TARGET_ARCHS = ("ampere", "hopper", "blackwell")
TIE = 0.05
FAMILIES = {"deepseek-v3": "DeepSeek-V3/R1 (MoE)", "llama-3.1-70b": "Llama-3 70B", "qwen3-30b-a3b": "Qwen3 MoE"}
ISSUE_EXAMPLE = dict(
    model="deepseek-v3",
    system="hgx-b200",
    tp=4,
    ep=1,
    engine="sglang",
    dtype="fp8",
    input_len=8192,
    output_len=1024,
    concurrency=16,
    source="shardbudget issue 21: 'DeepSeek-V3 FP8 at TP4 on B200 under SGLang with an 8k prompt', "
    "measured at concurrency <= 16 (output length not stated; 1024 assumed)",
)


def release_choice(r: dict):
    """The preset of the row's engine release (engines.releases.preset_for): the oldest preset at or
    after the release it states, or where it states none, the one current at its date (the row's date,
    else the first date in its source: vLLM rows of 2025-05..07 are vllm-0.9's, SGLang rows before
    2025-08 sglang-0.4's). TensorRT-LLM rows stating no release are main builds of 2025-03..05, before
    1.0's token rule (PR #5432) and so not trtllm-1.0's: trtllm."""
    when = r.get("date") or (re.search(r"20\d\d-\d\d(-\d\d)?", r["source"]) or [""])[0]
    choice = preset_for(r["engine"], r["engine_version"], date=when)
    if r["engine"] == "trtllm" and choice.preset == "trtllm-1.0" and "not stated" in choice.why:
        return PresetChoice(preset="trtllm", exact=False, why="TensorRT-LLM main before 1.0: priced by trtllm")
    return choice


def release_engine(r: dict) -> str:
    """The preset that prices the row (`release_choice`)."""
    return release_choice(r).preset


def release_records(table: list[dict]) -> list[dict]:
    """Rows and median |error| per preset, and the rows whose stated release the catalog has no
    preset of its own for (priced by the nearest, `why`)."""
    by = defaultdict(list)
    for t in table:
        by[(t["engine"], t["release"].exact, t["release"].why)].append(t["err"])
    return [
        {"preset": p, "exact": exact, "why": why, "rows": len(errs), "median": summary(errs)[0]}
        for (p, exact, why), errs in sorted(by.items())
    ]


def release_lines(table: list[dict]) -> str:
    lines = ["per release: preset, rows, median |error|; the rows whose release the catalog lacks say so"]
    for r in release_records(table):
        mark = "" if r["exact"] else "  [release not in the catalog] " + r["why"]
        lines.append(f"  {r['preset']:<14} {r['rows']:>3} rows  {100 * r['median']:5.1f}%{mark}")
    return "\n".join(lines)


BANDS = ((1, 16, "c1-16"), (17, 64, "c17-64"), (65, 10**9, "c65+"))
"""Concurrency bands of the served-TPOT tables (issue 36: up to 64, and above)."""


def band(concurrency: int) -> str:
    return next(name for low, high, name in BANDS if low <= concurrency <= high)


def source_name(source: str) -> str:
    """A row's source as one name per publisher: its GitHub repository (InferenceX's API snapshot and
    its issues are one source), else the web host; rows of one source are held out together."""
    repo = re.search(r"github\.com/([^/\s]+/[^/\s#]+)", source)
    if repo:
        name = repo.group(1)
        return "SemiAnalysisAI/InferenceX" if name.startswith("SemiAnalysisAI/InferenceX") else name
    host = re.search(r"https?://([^/\s]+)", source)
    return host.group(1) if host else source.split(" ")[0]


def _launches() -> list[dict]:
    """data/serving_launch.csv: how a source's runs were launched (KV-cache dtype, the benchmark
    client's random-range-ratio), each row with the launch script it was read from."""
    return list(csv.DictReader((DATA / "serving_launch.csv").open(newline="")))


def launch(r: dict, launches: list[dict] | None = None) -> tuple[str | None, float]:
    """(KV-cache dtype, mean / stated ISL and OSL) a serving row ran with: its source's launch line
    (serving_launch.csv: InferenceX runs an FP8 KV cache on B200 and under TensorRT-LLM, and draws
    each prompt's and output's length uniformly from [int(0.8 L), L], a mean of 0.9 L); (None, 1.0)
    where no launch line is known (the engine's 'auto' KV cache, the lengths as stated)."""
    for row in _launches() if launches is None else launches:
        if row["source_contains"] in r["source"] and (row["engine"], row["system"], row["dtype"]) == (
            r["engine"].split("-")[0],
            r["system"],
            r["dtype"].split(" ")[0],
        ):
            kv = None if row["kv_dtype"] == "auto" else row["kv_dtype"]
            return kv, (1.0 + float(row["random_range_ratio"])) / 2.0
    return None, 1.0


def _rows() -> list[dict]:
    """Serving rows, each with its launch line's KV cache and mean lengths (`launch`), then
    decode_measurements' concurrency-1 TPOT rows with a known workload (and their stated KV dtype);
    each priced under its engine release's preset (`release_engine`)."""
    out = [dict(r) for r in csv.DictReader((DATA / "serving_measurements.csv").open(newline=""))]
    launches = _launches()
    for r in out:
        r["kv_dtype"], r["length_scale"] = launch(r, launches)
    for r in csv.DictReader((DATA / "decode_measurements.csv").open(newline="")):
        if (
            r["metric"] == "tpot_ms"
            and r["engine"] != "unknown"
            and r["system"]
            and r["batch"] == "1"
            and r["model"] in FAMILIES
            and r["input_len"]
            and r["output_len"]
        ):
            out.append({**r, "concurrency": r["batch"], "value": r["value"], "ep": r["ep"] or "1"})
    return [{**r, "engine": release_engine(r), "release": release_choice(r)} for r in out]


def _precision(cfg, system, dtype: str, kv_dtype: str | None = None):
    """The checkpoint's own precision where it is the row's, else every weight in the row's dtype;
    the KV cache in `kv_dtype` (None: the engines' 'auto')."""
    if dtype.split(" ")[0] in ("bf16", "auto") or cfg.checkpoint.weight_dtype == dtype:
        return precision_for(cfg, system, kv_dtype=kv_dtype)[0]
    return precision_for(cfg, system, dtype, kv_dtype=kv_dtype)[0]


def predict(r: dict, cat) -> tuple[float, bool]:
    """(served TPOT in seconds, fits in memory) of one row."""
    cfg, system = load_model(r["model"]), cat.system(r["system"])
    plan = Plan(int(r["tp"]), 1, int(r["ep"] or 1))
    engine = r["engine"]
    kv = None if r.get("kv_dtype") in (None, "", "auto") else r["kv_dtype"]
    sc = scenario(cfg, system, engine=engine, catalog=cat, precision=_precision(cfg, system, r["dtype"], kv))
    scale = float(r.get("length_scale") or 1.0)  # the client's mean lengths (serving_launch.csv)
    i, o, b = round(int(r["input_len"]) * scale), round(int(r["output_len"]) * scale), float(r["concurrency"])
    tpot = float(served_curve(sc, plan, batch=b, input_len=i, output_len=o).tpot_s)
    need = memory_need(cfg, plan, precision=sc.precision, engine=engine, batch=b, context=float(i + o))
    return tpot, bool(fits(need, system.gpu, engine=engine, plan=plan))


def summary(errs: list[float]) -> tuple[float, float]:
    s = sorted(abs(e) for e in errs)
    return statistics.median(s), s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))]


def fastest_plan_cases(table: list[dict]) -> list[tuple[str, bool]]:
    """(case, priced fastest == measured fastest) for every group of measured alternatives whose
    measured times differ by more than TIE."""
    groups = defaultdict(list)
    for t in table:
        key = (t["model"], t["gpu"], t["engine"], t["dtype"], t["input_len"], t["output_len"], t["concurrency"])
        groups[key].append((t["plan"], t["pred"], t["meas"]))
    data = tp_rows()
    for c in TP_CASES:
        groups[(c.model, c.system, c.engine, "", "", "", c.batch)].append(
            (f"TP{c.tp}", tp_predicted(c), tp_measured(data, c))
        )
    out = []
    for key, alts in groups.items():
        if len({a[0] for a in alts}) < 2:
            continue
        meas = sorted(alts, key=lambda a: a[2])
        if meas[1][2] / meas[0][2] - 1 <= TIE:
            continue  # a tie: no fastest to agree on
        out.append(
            (
                " ".join(str(k) for k in key if k != "") + f": measured {meas[0][0]}, priced "
                f"{min(alts, key=lambda a: a[1])[0]}",
                min(alts, key=lambda a: a[1])[0] == meas[0][0],
            )
        )
    return out


def priced_table(cat, as_stated: bool = False) -> tuple[list[dict], list[str]]:
    """Every row priced: (table of rows with prediction, measurement, error and source; the
    configurations at concurrency <= 16 called 'does not fit'). `as_stated`: the serving rows without
    their launch lines (the engines' auto KV cache, the stated lengths), as before issue 36."""
    table, refused = [], []
    serving = {r["source"] for r in csv.DictReader((DATA / "serving_measurements.csv").open(newline=""))}
    for r in _rows():
        if as_stated:
            r = {**r, "kv_dtype": None if r["source"] in serving else r.get("kv_dtype"), "length_scale": 1.0}
        pred, ok = predict(r, cat)
        meas = float(r["value"]) * 1e-3
        t = {
            "model": r["model"],
            "gpu": r["system"],
            "engine": r["engine"],
            "dtype": r["dtype"],
            "family": FAMILIES.get(r["model"], r["model"]),
            "plan": f"TP{r['tp']} EP{r['ep'] or 1}",
            "input_len": r["input_len"],
            "output_len": r["output_len"],
            "concurrency": int(r["concurrency"]),
            "pred": pred,
            "meas": meas,
            "err": pred / meas - 1,
            "source": r["source"],
            "family_dtype": f"{FAMILIES.get(r['model'], r['model'])} x {r['dtype'].split(' ')[0]}",
            "band": band(int(r["concurrency"])),
            "source_name": source_name(r["source"]),
            "target": cat.system(r["system"]).gpu.arch in TARGET_ARCHS,
            "release": r["release"],
        }
        table.append(t)
        if not ok and t["concurrency"] <= 16:
            refused.append(f"{t['model']} {t['gpu']} {t['engine']} {t['plan']} c{t['concurrency']}")
    return table, refused
