"""The readers of the serving benchmarks' result files (issue 39), one per tool, each from the source
that writes the file; `serving.ServingRun` is what each returns.

vllm bench serve    vllm/benchmarks/serve.py (vllm-project/vllm, main of 2026): `result_json` = date,
                    backend, model_id, num_prompts, the --metadata KEY=VALUE pairs, request_rate ('inf'
                    unlimited), max_concurrency, then `benchmark()`'s result: completed, failed,
                    total_input_tokens, total_output_tokens, request_throughput, output_throughput, and
                    per metric of --percentile-metrics (default ttft,tpot,itl) mean_/median_/std_/p99_<m>_ms.
sglang bench_serving python/sglang/bench_serving.py (sgl-project/sglang): one JSON line per run, backend,
                    request_rate, max_concurrency, random_input_len/_output_len, server_info (the
                    server's /get_server_info: its ServerArgs, tp_size, disable_cuda_graph, kv_cache_dtype,
                    ..., and max_total_num_tokens), completed, totals, mean_/median_/p99_ttft_ms, _tpot_ms,
                    _itl_ms, mean_e2e_latency_ms, concurrency (sum of latencies / duration).
AIPerf, genai-perf  aiperf/common/models/export_models.py (ai-dynamo/aiperf), "designed to mimic the
                    GenAI-Perf JSON output": per metric {unit, avg, p50, p99, ...}; time_to_first_token,
                    inter_token_latency (per request (latency - ttft) / (osl - 1): vLLM's TPOT),
                    inter_chunk_latency (the gaps between chunks: vLLM's ITL), request_latency,
                    input_/output_sequence_length, output_token_throughput, request_throughput; and
                    input_config (genai-perf: model [..], concurrency, request_rate; AIPerf:
                    endpoint.model_names, loadgen.concurrency / request_rate, or as 0.10 writes it
                    models.items[].name and the profiling phase's concurrency / rate).
trtllm-bench        tensorrt_llm/bench/dataclasses/reporting.py (NVIDIA/TensorRT-LLM)
                    `get_statistics_dict`: engine (model, backend, kv_cache_dtype), machine (name),
                    world_info (tp_size, pp_size, ep_size, max_batch_size), request_info
                    (num_requests, avg_num_concurrent_requests, avg_input_length, avg_output_length),
                    performance (*_ms, *_tok_s), streaming_metrics (avg_ttft_ms, avg_tpot_ms,
                    tpot_percentiles / ttft_percentiles in ms under p50, p99, average).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace

from ...atomic import read_user_file
from ...errors import MeasureError
from .serving import MAX_FILE_BYTES, RunSettings, ServingRun, flag, little, number, per_request, whole

EXPECTED = "the JSON of vllm bench serve, SGLang bench_serving, AIPerf / genai-perf or trtllm-bench"
_MS = 1e-3
_UNITS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "us": 1e-6, "ns": 1e-9}
_VLLM_KEYS = ("mean_ttft_ms", "median_ttft_ms", "mean_tpot_ms", "mean_itl_ms")


# --- which tool -------------------------------------------------------------------------------


def detect(obj) -> str | None:
    """The tool that wrote this JSON object (serving.TOOLS), or None: told by the fields each writes."""
    if not isinstance(obj, dict):
        return None
    if all(isinstance(obj.get(k), dict) for k in ("world_info", "performance", "request_info")):
        return "trtllm-bench"
    if any(
        isinstance(obj.get(k), dict) and "unit" in obj[k]
        for k in ("time_to_first_token", "inter_token_latency", "request_latency")
    ):
        cfg = obj.get("input_config")
        return "aiperf" if isinstance(cfg, dict) and isinstance(cfg.get("endpoint"), dict) else "genai-perf"
    if not any(k in obj for k in _VLLM_KEYS):
        return None
    if any(k in obj for k in ("mean_e2e_latency_ms", "server_info", "total_output_tokens_retokenized")):
        return "sglang bench_serving"
    return "vllm bench serve"


# --- vLLM and SGLang: flat *_ms fields ------------------------------------------------------------


def _flat_latencies(obj: dict, source: str, names: dict[str, str]) -> tuple:
    out = []
    for metric, key in names.items():
        for stat in ("mean", "median", "p99"):
            v = number(obj.get(f"{stat}_{key}"), f"{stat}_{key}", source, scale=_MS)
            if v is not None:
                out.append((metric, stat, v))
    return tuple(out)


def hf_name(model) -> str | None:
    """A model id as the server was given it; a Hugging Face cache path read back as its id
    (.../models--openai--gpt-oss-120b/snapshots/<rev>/ -> openai/gpt-oss-120b)."""
    if not isinstance(model, str) or not model.strip():
        return None
    m = re.search(r"models--([^/]+?)--([^/]+)", model)
    return f"{m.group(1)}/{m.group(2)}" if m else model.strip().rstrip("/")


def _engine_of(backend) -> str | None:
    b = str(backend or "").lower()
    return (
        "sglang"
        if b.startswith("sglang")
        else "vllm"
        if b.startswith("vllm")
        else "trtllm"
        if b.startswith(("trt", "tensorrt"))
        else None
    )


def _metadata_settings(obj: dict, source: str) -> RunSettings:
    """vLLM's --metadata KEY=VALUE pairs land at the top level as text: the plan where a user put it."""

    def first(*keys):
        return next((obj[k] for k in keys if obj.get(k) not in (None, "")), None)

    eager = flag(first("enforce_eager", "eager"))
    graphs = flag(first("cuda_graphs", "cuda_graph"))
    spec = "on" if "spec_decode_acceptance_rate" in obj else first("speculative", "speculative_method")
    return RunSettings(
        engine=_engine_of(first("engine", "backend")),
        tp=whole(first("tensor_parallel_size", "tp", "tp_size"), "tensor_parallel_size", source),
        pp=whole(first("pipeline_parallel_size", "pp", "pp_size"), "pipeline_parallel_size", source),
        ep=whole(first("expert_parallel_size", "ep", "ep_size"), "expert_parallel_size", source),
        cuda_graphs=(not eager) if eager is not None else graphs,
        kv_dtype=first("kv_cache_dtype", "kv_dtype"),
        gpu=first("gpu", "hardware"),
        speculative=None if spec is None else str(spec),
    )


def read_vllm(obj: dict, *, source: str, index: int) -> ServingRun:
    completed = whole(obj.get("completed"), "completed", source)
    lat = _flat_latencies(obj, source, {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2el": "e2el_ms"})
    in_len = per_request(obj.get("total_input_tokens"), completed, "total_input_tokens", source) or number(
        obj.get("input_len") or obj.get("random_input_len"), "input_len", source
    )
    out_len = per_request(obj.get("total_output_tokens"), completed, "total_output_tokens", source) or number(
        obj.get("output_len") or obj.get("random_output_len"), "output_len", source
    )
    run = ServingRun(
        source=source,
        index=index,
        tool="vllm bench serve",
        model=hf_name(obj.get("model_id")),
        concurrency=whole(obj.get("max_concurrency"), "max_concurrency", source),
        request_rate=number(obj.get("request_rate"), "request_rate", source),
        input_len=in_len,
        output_len=out_len,
        completed=completed,
        failed=whole(obj.get("failed"), "failed", source),
        latencies=lat,
        output_tok_per_s=number(obj.get("output_throughput"), "output_throughput", source),
        settings=_metadata_settings(obj, source),
    )
    return _with_in_flight(run, number(obj.get("request_throughput"), "request_throughput", source))


def _with_in_flight(run: ServingRun, request_per_s: float | None, own: float | None = None) -> ServingRun:
    """The run with its mean requests in flight: the tool's own figure, else Little's law on the mean
    end-to-end latency (or ttft + (out - 1) x tpot where the file left e2e out, as vLLM's default does)."""
    if own is not None:
        return replace(run, in_flight=own)
    e2e = run.latency("e2el")
    if e2e is None and run.latency("ttft") is not None and run.latency("tpot") is not None and run.output_len:
        e2e = run.latency("ttft") + (run.output_len - 1) * run.latency("tpot")
    return replace(run, in_flight=little(request_per_s, e2e))


def _server_settings(info, backend, source: str) -> RunSettings:
    """SGLang's server_info: its ServerArgs, and the scheduler's max_total_num_tokens (top level in
    older releases, internal_states[0] in newer ones)."""
    if not isinstance(info, dict):
        return RunSettings(engine=_engine_of(backend))
    states = info.get("internal_states")
    inner = states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
    capacity = info.get("max_total_num_tokens", inner.get("max_total_num_tokens"))
    disable = flag(info.get("disable_cuda_graph"))
    spec = info.get("speculative_algorithm")
    return RunSettings(
        engine="sglang",
        tp=whole(info.get("tp_size"), "server_info.tp_size", source),
        pp=whole(info.get("pp_size"), "server_info.pp_size", source),
        ep=whole(info.get("ep_size"), "server_info.ep_size", source),
        dp_attention=flag(info.get("enable_dp_attention")),
        cuda_graphs=None if disable is None else not disable,
        kv_dtype=info.get("kv_cache_dtype") if isinstance(info.get("kv_cache_dtype"), str) else None,
        kv_capacity_tokens=whole(capacity, "max_total_num_tokens", source),
        max_batch=whole(info.get("max_running_requests"), "max_running_requests", source),
        speculative="" if "speculative_algorithm" in info and not spec else spec,
    )


def _request_rate(obj: dict, completed: int | None, source: str) -> float | None:
    """Requests completed per second: the file's request_throughput, else completed / duration (the
    lines of SGLang's bench_serving of late 2024 carry no request_throughput)."""
    rate = number(obj.get("request_throughput"), "request_throughput", source)
    duration = number(obj.get("duration"), "duration", source)
    return rate if rate is not None else completed / duration if completed and duration else None


def read_sglang(obj: dict, *, source: str, index: int) -> ServingRun:
    completed = whole(obj.get("completed"), "completed", source)
    lat = _flat_latencies(
        obj, source, {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2el": "e2e_latency_ms"}
    )
    random = str(obj.get("dataset_name", "")).startswith("random")
    in_len = per_request(obj.get("total_input_tokens"), completed, "total_input_tokens", source) or (
        number(obj.get("random_input_len"), "random_input_len", source) if random else None
    )
    out_len = per_request(obj.get("total_output_tokens"), completed, "total_output_tokens", source) or (
        number(obj.get("random_output_len"), "random_output_len", source) if random else None
    )
    info = obj.get("server_info")
    model = info.get("model_path") if isinstance(info, dict) else None
    run = ServingRun(
        source=source,
        index=index,
        tool="sglang bench_serving",
        model=hf_name(model),
        concurrency=whole(obj.get("max_concurrency"), "max_concurrency", source),
        request_rate=number(obj.get("request_rate"), "request_rate", source)
        if obj.get("request_rate") != "trace"
        else None,
        input_len=in_len,
        output_len=out_len,
        completed=completed,
        latencies=lat,
        output_tok_per_s=number(obj.get("output_throughput"), "output_throughput", source),
        settings=_server_settings(info, obj.get("backend"), source),
    )
    return _with_in_flight(
        run,
        _request_rate(obj, completed, source),
        own=number(obj.get("concurrency"), "concurrency", source),
    )


# --- AIPerf / genai-perf: {unit, avg, p50, p99} per metric ------------------------------------------


def _stat(obj: dict, key: str, stat: str, source: str, *, time: bool = True) -> float | None:
    m = obj.get(key)
    if not isinstance(m, dict):
        return None
    scale = 1.0
    if time:
        unit = str(m.get("unit", "ms")).strip().lower()
        if unit not in _UNITS:
            raise MeasureError(f"{source}: {key} is in {m.get('unit')!r}, expected one of {', '.join(_UNITS)}")
        scale = _UNITS[unit]
    return number(m.get(stat), f"{key}.{stat}", source, scale=scale)


def _perf_config(cfg, source: str) -> tuple:
    """(model, concurrency, request rate, engine) from genai-perf's or AIPerf's input_config."""
    if not isinstance(cfg, dict):
        return None, None, None, None
    if isinstance(cfg.get("endpoint"), dict):  # AIPerf's UserConfig
        return _aiperf_config(cfg, source)
    models = cfg.get("model")
    model = models[0] if isinstance(models, list) and models else models if isinstance(models, str) else None
    return (
        model,
        whole(cfg.get("concurrency"), "input_config.concurrency", source),
        number(cfg.get("request_rate"), "input_config.request_rate", source),
        _engine_of(cfg.get("backend")),
    )


def _aiperf_config(cfg: dict, source: str) -> tuple:
    """AIPerf's input_config: the model in endpoint.model_names and the load in loadgen (the schema
    the reader was first written from), or, as AIPerf 0.10 writes it (schema 1.3), the model in
    models.items[].name and the load in the profiling phase of `phases` (type concurrency with its
    `concurrency`, or an arrival pattern with its `rate`; the warm-up phase is excluded from results)."""
    names = cfg["endpoint"].get("model_names") or []
    items = (cfg.get("models") or {}).get("items") if isinstance(cfg.get("models"), dict) else None
    if not names and isinstance(items, list):
        names = [i.get("name") for i in items if isinstance(i, dict) and isinstance(i.get("name"), str)]
    model = names[0] if isinstance(names, list) and names else None
    load = cfg.get("loadgen") if isinstance(cfg.get("loadgen"), dict) else {}
    conc_key, rate_key = "loadgen.concurrency", "loadgen.request_rate"
    conc, rate = load.get("concurrency"), load.get("request_rate")
    phases = cfg.get("phases") if isinstance(cfg.get("phases"), list) else []
    measured = [ph for ph in phases if isinstance(ph, dict) and not ph.get("exclude_from_results")]
    if conc is None and rate is None and measured:
        ph = measured[0]
        conc, rate = ph.get("concurrency"), ph.get("rate")
        conc_key, rate_key = "phases.concurrency", "phases.rate"
    return model, whole(conc, conc_key, source), number(rate, rate_key, source), None


def read_perf(obj: dict, *, source: str, index: int) -> ServingRun:
    keys = {
        "ttft": "time_to_first_token",
        "tpot": "inter_token_latency",
        "itl": "inter_chunk_latency",
        "e2el": "request_latency",
    }
    lat = tuple(
        (metric, stat, v)
        for metric, key in keys.items()
        for stat, field in (("mean", "avg"), ("median", "p50"), ("p99", "p99"))
        if (v := _stat(obj, key, field, source)) is not None
    )
    model, conc, rate, engine = _perf_config(obj.get("input_config"), source)
    tool = detect(obj)
    run = ServingRun(
        source=source,
        index=index,
        tool=tool,
        model=hf_name(model),
        concurrency=conc,
        request_rate=rate,
        input_len=_stat(obj, "input_sequence_length", "avg", source, time=False),
        output_len=_stat(obj, "output_sequence_length", "avg", source, time=False),
        latencies=lat,
        output_tok_per_s=_stat(obj, "output_token_throughput", "avg", source, time=False),
        settings=RunSettings(engine=engine),
    )
    return _with_in_flight(run, _stat(obj, "request_throughput", "avg", source, time=False))


# --- trtllm-bench -------------------------------------------------------------------------------


def read_trtllm(obj: dict, *, source: str, index: int) -> ServingRun:
    eng, world, req = obj.get("engine") or {}, obj["world_info"], obj["request_info"]
    perf, stream = obj["performance"], obj.get("streaming_metrics") or {}
    lat = []
    for metric, avg_key, pct_key in (
        ("ttft", "avg_ttft_ms", "ttft_percentiles"),
        ("tpot", "avg_tpot_ms", "tpot_percentiles"),
    ):
        pct = stream.get(pct_key) if isinstance(stream.get(pct_key), dict) else {}
        for stat, v in (("mean", stream.get(avg_key)), ("median", pct.get("p50")), ("p99", pct.get("p99"))):
            if (s := number(v, f"streaming_metrics.{metric}", source, scale=_MS)) is not None:
                lat.append((metric, stat, s))
    e2e_pct = (
        perf.get("request_latency_percentiles_ms")
        if isinstance(perf.get("request_latency_percentiles_ms"), dict)
        else {}
    )
    for stat, v in (
        ("mean", perf.get("avg_request_latency_ms")),
        ("median", e2e_pct.get("p50")),
        ("p99", e2e_pct.get("p99")),
    ):
        if (s := number(v, "performance.request_latency", source, scale=_MS)) is not None:
            lat.append(("e2el", stat, s))
    machine = obj.get("machine") if isinstance(obj.get("machine"), dict) else {}
    decoding = obj.get("decoding_stats") if isinstance(obj.get("decoding_stats"), dict) else None
    kv = eng.get("kv_cache_dtype")
    settings = RunSettings(
        engine="trtllm",
        tp=whole(world.get("tp_size"), "world_info.tp_size", source),
        pp=whole(world.get("pp_size"), "world_info.pp_size", source),
        ep=whole(world.get("ep_size"), "world_info.ep_size", source),
        kv_dtype=kv.lower() if isinstance(kv, str) else None,
        max_batch=whole(world.get("max_batch_size"), "world_info.max_batch_size", source),
        speculative=str(decoding.get("mode")) if decoding else "",
        gpu=machine.get("name") if isinstance(machine.get("name"), str) else None,
    )
    return ServingRun(
        source=source,
        index=index,
        tool="trtllm-bench",
        model=hf_name(eng.get("model")),
        concurrency=None,
        request_rate=None,
        input_len=number(req.get("avg_input_length"), "request_info.avg_input_length", source),
        output_len=number(req.get("avg_output_length"), "request_info.avg_output_length", source),
        completed=whole(req.get("num_requests"), "request_info.num_requests", source),
        latencies=tuple(lat),
        settings=settings,
        output_tok_per_s=number(
            perf.get("system_output_throughput_tok_s"), "performance.system_output_throughput_tok_s", source
        ),
        in_flight=number(req.get("avg_num_concurrent_requests"), "request_info.avg_num_concurrent_requests", source),
    )


READERS = {
    "vllm bench serve": read_vllm,
    "sglang bench_serving": read_sglang,
    "aiperf": read_perf,
    "genai-perf": read_perf,
    "trtllm-bench": read_trtllm,
}


# --- files ----------------------------------------------------------------------------------------


def json_objects(text: str) -> list | None:
    """The JSON value(s) of a file: one document, or one per line (JSONL); None if it is not JSON
    (nested thousands deep included: check's dispatch then hands it to the nccl-tests reader, which
    says so in one line)."""
    try:
        doc = json.loads(text)
    except RecursionError:
        return None
    except ValueError:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        try:
            return [json.loads(ln) for ln in lines] if lines else None
        except (ValueError, RecursionError):
            return None
    return doc if isinstance(doc, list) else [doc]


def is_serving_text(text: str) -> bool:
    """Does this text hold a serving benchmark's result (check's dispatch: else an nccl-tests log)?"""
    if not text.lstrip().startswith(("{", "[")):
        return False
    objs = json_objects(text)
    return bool(objs) and detect(objs[0]) is not None


def parse_serving_text(text: str, source: str = "<text>") -> list[ServingRun]:
    """Every run in a serving benchmark's result text; a one-line MeasureError for anything else."""
    objs = json_objects(text)
    if not objs:
        raise MeasureError(f"{source}: not JSON (expected {EXPECTED})")
    return parse_serving_objects(objs, source)


def parse_serving_objects(objs: list, source: str) -> list[ServingRun]:
    """Every run of a file's JSON value(s), parsed once (`json_objects`); a one-line MeasureError
    for a record no reader knows or one without any latency."""
    runs = []
    for i, obj in enumerate(objs, start=1):
        tool = detect(obj)
        if tool is None:
            where = source + (f" (record {i})" if len(objs) > 1 else "")
            raise MeasureError(f"{where}: not a serving benchmark's result (expected {EXPECTED})")
        run = READERS[tool](obj, source=source, index=i)
        if not run.latencies:
            raise MeasureError(f"{source}: {tool} result without any latency (TTFT, TPOT, ITL) to check")
        runs.append(run)
    return runs


def read_serving_text(path: str | os.PathLike) -> str:
    data = read_user_file(path, what="a serving benchmark's JSON", limit=MAX_FILE_BYTES, error=MeasureError)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise MeasureError(f"{os.fspath(path)}: not UTF-8 text (expected {EXPECTED})") from None


def is_serving_file(path: str | os.PathLike) -> bool:
    """Does this file hold a serving benchmark's result? (A file that cannot be read, or is not one,
    is not; check itself dispatches with `serving_runs_or_none`, which parses the file once.)"""
    try:
        return is_serving_text(read_serving_text(path))
    except MeasureError:
        return False


def serving_runs_or_none(path: str | os.PathLike) -> list[ServingRun] | None:
    """check's dispatch, the file read and its JSON parsed once: the runs of a serving benchmark's
    result, or None where the file holds something else or cannot be read (the nccl-tests reader then
    says what is wrong with it). A serving result with a malformed record: a one-line MeasureError."""
    try:
        text = read_serving_text(path)
    except MeasureError:
        return None
    objs = json_objects(text) if text.lstrip().startswith(("{", "[")) else None
    if not objs or detect(objs[0]) is None:
        return None
    return parse_serving_objects(objs, os.fspath(path))


def read_serving(path: str | os.PathLike) -> list[ServingRun]:
    """The runs of one result file."""
    return parse_serving_text(read_serving_text(path), os.fspath(path))


__all__ = [
    "READERS",
    "detect",
    "hf_name",
    "is_serving_file",
    "is_serving_text",
    "parse_serving_objects",
    "parse_serving_text",
    "read_serving",
    "read_serving_text",
    "read_perf",
    "read_sglang",
    "read_trtllm",
    "read_vllm",
    "serving_runs_or_none",
]
