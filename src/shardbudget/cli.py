"""The `shardbudget` command: a thin typer shell over the library. It parses, calls and prints."""

from __future__ import annotations

import json
import os
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from . import cli_args, units
from .cli_args import CatalogOpt, DownloadOpt, GpuMemoryOpt, JsonOpt, NodesOpt
from .collectives import crossover_bytes, custom_allreduce_allowed, make_group, normalize_op, sweep
from .compare import compare_systems
from .dtypes import dtype_bytes
from .errors import MeasureError, PlanError, ShardbudgetError
from .questions import DEFAULT_SYSTEMS
from .questions import explain as explain_questions
from .hardware import load_catalog
from .model import active_params, list_models, load_model, total_params
from .planner import check_impl, plan, required_fabric
from .report import figures, tables
from .report.grid import DEFAULT_BUDGET_STEPS
from .settings import CHECK_TOLERANCE, DEFAULT_ENGINE, PlanSettings, engine_efficiency

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="How far can a transformer be tensor-parallel sharded before the interconnect "
                       "sets its per-token latency?")


def _catalog(paths: Optional[list[Path]]):
    return load_catalog(tuple(str(p) for p in paths or ()))


def _model(name: str, download: bool) -> str:
    """With --download, an HF id missing from the local cache has its config.json fetched into the
    cache now; the name then resolves from there wherever the library loads it."""
    if download:
        load_model(name, download=True)
    return name


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(cli_args.jsonable(obj), indent=2, allow_nan=False) + "\n")


def _check_plot(plot: Optional[Path]) -> None:
    """Refuse a bad --plot path before any work (and before anything is printed)."""
    if plot is not None:
        figures.check_path(plot)


def _write_plot(make_figure, plot: Path) -> None:
    """Build and save a figure; matplotlib's layout warnings are not the user's problem."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        figures.save(make_figure(), plot)
    typer.echo(f"wrote {plot}", err=True)


# --- fabrics ---------------------------------------------------------------------------------

@app.command()
def fabrics(catalog: CatalogOpt = None, json_out: JsonOpt = False,
            systems: Annotated[bool, typer.Option("--systems", help="List systems and GPUs too.")] = False) -> None:
    """The fabric catalog: per-direction bandwidth, per-hop latency and the source of each number."""
    cat = _catalog(catalog)
    if json_out:
        _print_json(tables.fabrics_dict(cat))
        return
    tables.print_fabrics(cat, systems=systems)


# --- allreduce -------------------------------------------------------------------------------

@app.command()
def allreduce(
    *,
    system: Annotated[str, typer.Option("--system", "-s", help="System name, e.g. hgx-h100.")],
    nodes: NodesOpt = 1,
    gpus: Annotated[Optional[int], typer.Option("--gpus", help="GPUs taking part (default: all of the nodes).")] = None,
    op: Annotated[str, typer.Option("--op", help="all-reduce | reduce-scatter | all-gather | all-to-all | broadcast | send/recv")] = "all-reduce",
    size: Annotated[Optional[list[str]], typer.Option("--size", help="Message size(s) per rank, e.g. 16KiB (repeatable, or a range 8B:1GiB).")] = None,
    algo: Annotated[str, typer.Option("--algo", help="auto | ring | tree | nvls | one-shot | two-shot | hierarchical")] = "auto",
    protocol: Annotated[str, typer.Option("--protocol", help="auto | ll | ll128 | simple")] = "auto",
    impl: Annotated[str, typer.Option("--impl", help="nccl | custom (inference engines' one-/two-shot kernels)")] = "nccl",
    dtype: Annotated[str, typer.Option("--dtype", help="Element type, for the count column.")] = "bf16",
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write the figure (PNG or SVG).")] = None,
    catalog: CatalogOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """An nccl-tests-like table of predicted collective times on a system."""
    _check_plot(plot)
    cat = _catalog(catalog)
    sizes = cli_args.sizes(size)
    op = normalize_op(op)
    elem_bytes = dtype_bytes(dtype)
    costs = sweep(op, sizes, system, nodes=nodes, gpus=gpus, algo=algo, protocol=protocol, impl=impl, catalog=cat)
    group = make_group(system, nodes=nodes, gpus=gpus, catalog=cat)
    cross = crossover_bytes(group, op, impl, algo, protocol)
    if json_out:
        _print_json({"system": group.system.name, "nodes": nodes, "gpus": group.ranks, "op": op,
                     "impl": impl, "algo": algo, "protocol": protocol, "dtype": dtype,
                     "crossover_bytes": cross,
                     "rows": [cli_args.cost_row(c) for c in costs]})
    else:
        why = custom_allreduce_allowed(group) if op == "all-reduce" else "custom kernels are all-reduce only"
        tables.print_sweep(group, costs, op=op, impl=impl, elem_bytes=elem_bytes, crossover=cross, why_not_custom=why)
    if plot:
        _write_plot(lambda: figures.fabric_comparison([(f"{group.system.name} x{group.ranks}", costs, cross)], op=op), plot)


# --- compare ---------------------------------------------------------------------------------

@app.command()
def compare(
    *,
    system: Annotated[list[str], typer.Option("--system", "-s", help="Systems to compare (repeat).")],
    nodes: NodesOpt = 1,
    gpus: Annotated[Optional[int], typer.Option("--gpus")] = None,
    op: Annotated[str, typer.Option("--op")] = "all-reduce",
    model: Annotated[str, typer.Option("--model", help="Model whose decode message sizes are marked.")] = "llama-3.1-70b",
    batch: Annotated[Optional[list[int]], typer.Option("--batch", min=1, help="Decode batch sizes to mark.")] = None,
    impl: Annotated[str, typer.Option("--impl")] = "nccl",
    plot: Annotated[Optional[Path], typer.Option("--plot")] = None,
    catalog: CatalogOpt = None,
    download: DownloadOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Systems side by side: crossover sizes and the time ratio at the sizes decode really uses."""
    _check_plot(plot)
    result = compare_systems(system, nodes=nodes, gpus=gpus, op=op, model=_model(model, download), batches=batch or [1, 64],
                             impl=impl, catalog=_catalog(catalog))
    if json_out:
        _print_json(result.to_dict())
    else:
        tables.print_compare(result)
    if plot:
        _write_plot(lambda: figures.compare_figure(result), plot)


# --- plan ------------------------------------------------------------------------------------

@app.command("plan")
def plan_cmd(
    *,
    model: Annotated[str, typer.Option("--model", "-m", help="Model name (see `shardbudget models`), a config.json path or folder, or a Hugging Face id (ORG/NAME, from the local HF cache; --download fetches its config.json).")],
    system: Annotated[str, typer.Option("--system", "-s", help="System name, e.g. hgx-h100.")],
    nodes: NodesOpt = 1,
    batch: Annotated[Optional[list[int]], typer.Option("--batch", "-b", help="Decode batch size (repeatable).")] = None,
    context: Annotated[int, typer.Option("--context", help="Tokens in the KV cache per sequence (and the prompt length for TTFT).")] = 4096,
    budget: Annotated[str, typer.Option("--budget", help="Inter-token latency budget, e.g. 30ms ('none' to skip).")] = "30ms",
    ttft_budget: Annotated[Optional[str], typer.Option("--ttft-budget", help="Time-to-first-token budget, e.g. 2s.")] = None,
    impl: Annotated[Optional[str], typer.Option("--impl", help="Force every all-reduce to nccl | custom (default: the engine decides by size, as it does)")] = None,
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="Weight dtype: bf16 | fp8 | int8 | int4 | mxfp4 | nvfp4 (default: the checkpoint's own, from its config.json)")] = None,
    kv_dtype: Annotated[Optional[str], typer.Option("--kv-dtype", help="KV-cache dtype (default: auto, the activation dtype, as engines do).")] = None,
    comm_threshold: Annotated[float, typer.Option("--comm-threshold", help="Communication share of ITL that counts as 'sharded too far'.")] = 0.30,
    knee_threshold: Annotated[float, typer.Option("--knee-threshold", help="Gain below which the next TP is not worth it (latency-optimal TP).")] = 0.10,
    engine: Annotated[str, typer.Option("--engine", help="vllm | sglang | trtllm | eager (vLLM without CUDA graphs) | vllm-v0 | tgi: which all-reduce kernels, CUDA graphs and host costs a step has")] = DEFAULT_ENGINE,
    sequence_parallel: Annotated[bool, typer.Option("--sequence-parallel", help="TP all-reduces become reduce-scatter + all-gather.")] = False,
    overlap: Annotated[str, typer.Option("--overlap", help="How communication overlaps compute: none | tbo (two-batch overlap) | fused (GEMM + collective kernels).")] = "none",
    gpu_memory_utilization: GpuMemoryOpt = None,
    memory_table: Annotated[bool, typer.Option("--memory", help="Also print what each plan's bytes per GPU are made of.")] = False,
    pp_all: Annotated[bool, typer.Option("--pp-all", help="Sweep every PP degree, not only those that fill the nodes.")] = False,
    require_tp: Annotated[Optional[int], typer.Option("--require-tp", help="Also solve what the fabric would need for this TP to meet the budget.")] = None,
    jitter: Annotated[Optional[list[Path]], typer.Option("--jitter", help="Log with per-iteration times (nccl-tests -I 1, text or -J JSON; shardbudget measure JSON): adds the ITL's p99 beside its mean (repeat).")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write the 'where the token goes' figure (PNG/SVG).")] = None,
    catalog: CatalogOpt = None,
    download: DownloadOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Sweep TP x PP (x EP) and say how far the model can be sharded within the budget."""
    from .tail_plan import read_jitter  # command-only module (start-up)
    _check_plot(plot)
    model = _model(model, download)
    budget_s = cli_args.budget(budget)
    if require_tp is not None and budget_s is None:
        raise PlanError("--require-tp asks what the fabric needs to meet a budget: give --budget, not 'none'")
    ttft_s = units.parse_seconds(ttft_budget, what="--ttft-budget") if ttft_budget else None
    eff = engine_efficiency(engine)
    settings = PlanSettings(sequence_parallel=sequence_parallel, overlap=overlap,
                            memory_utilization=gpu_memory_utilization)
    cat = _catalog(catalog)
    result = plan(model, system, nodes=nodes, batches=batch or [1], context=context, budget_s=budget_s,
                  ttft_budget_s=ttft_s, impl=impl, engine=engine, dtype=dtype, kv_dtype=kv_dtype,
                  comm_threshold=comm_threshold, knee_threshold=knee_threshold, pp_all=pp_all, eff=eff,
                  settings=settings, jitter=read_jitter(jitter) if jitter else None, catalog=cat)
    req = None
    if require_tp is not None:  # --require-tp 0 is an error to report, not "unset"
        req = required_fabric(model, system, tp=require_tp, nodes=nodes, batch=(batch or [1])[0], context=context,
                              budget_s=budget_s, impl=impl, engine=engine, dtype=dtype, eff=eff, settings=settings,
                              catalog=cat)
    _print_plan(result, req, json_out=json_out, memory_table=memory_table)
    if plot:
        _write_plot(lambda: figures.where_the_token_goes([result]), plot)


def _print_plan(result, req, *, json_out: bool, memory_table: bool) -> None:
    if json_out:
        _print_json({**result.to_dict(), **({"requirement": req.to_dict()} if req else {})})
        return
    tables.print_plan(result)
    if memory_table:
        tables.print_memory(result)
    if req:
        print(f"\nWhat TP{req.tp} would need: {req.explanation}")


@app.command()
def deploy(
    *,
    model: Annotated[str, typer.Option("--model", "-m", help="Model name, config.json path or folder, or Hugging Face id (ORG/NAME).")],
    system: Annotated[str, typer.Option("--system", "-s", help="System name, e.g. hgx-h100.")],
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs to spend (split into identical replicas).")],
    nodes: Annotated[Optional[int], typer.Option("--nodes", help="Nodes (default: as many as --gpus needs).")] = None,
    budget: Annotated[str, typer.Option("--budget", help="Inter-token latency budget ('none' to skip).")] = "30ms",
    ttft_budget: Annotated[Optional[str], typer.Option("--ttft-budget", help="Time-to-first-token budget, e.g. 2s.")] = None,
    input_len: Annotated[Optional[int], typer.Option("--input-len", help="Prompt tokens per request (default 2048).")] = None,
    output_len: Annotated[Optional[int], typer.Option("--output-len", help="Generated tokens per request (default 256).")] = None,
    context: Annotated[Optional[int], typer.Option("--context", help="A fixed KV context instead (decode only, no prefill).")] = None,
    engine: Annotated[str, typer.Option("--engine", help="vllm | sglang | trtllm | eager")] = DEFAULT_ENGINE,
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="Weight dtype: bf16 | fp8 | int8 | int4 | mxfp4 | nvfp4 (default: the checkpoint's own, from its config.json)")] = None,
    kv_dtype: Annotated[Optional[str], typer.Option("--kv-dtype")] = None,
    speculative: Annotated[Optional[str], typer.Option("--speculative", help="mtp | eagle | draft")] = None,
    draft_tokens: Annotated[Optional[int], typer.Option("--draft-tokens", help="Tokens the draft proposes per step (default 3).")] = None,
    acceptance: Annotated[Optional[float], typer.Option("--acceptance", help="Probability each draft token is accepted (default 0.7).")] = None,
    draft_model: Annotated[Optional[str], typer.Option("--draft-model", help="The draft model for --speculative draft.")] = None,
    gpu_memory_utilization: GpuMemoryOpt = None,
    disaggregate: Annotated[Optional[str], typer.Option("--disaggregate", help="P:D GPUs for prefill and decode, e.g. 2:6.")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write the Pareto figure (PNG/SVG).")] = None,
    show_all: Annotated[bool, typer.Option("--all", help=f"Show every option (default: the best {tables.DEPLOY_ROWS}; --json has all).")] = False,
    catalog: CatalogOpt = None,
    download: DownloadOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """How to spend N GPUs: replicas x TP x PP at the largest batch within the budgets, tokens/s per GPU, launch lines."""
    from .deploy import Workload, deploy as run_deploy  # command-only modules (start-up)
    from .disagg import parse_split
    _check_plot(plot)
    model = _model(model, download)
    draft_model = _model(draft_model, download) if draft_model else draft_model
    if context is not None and (input_len is not None or output_len is not None):
        raise PlanError("give --context (decode only) or --input-len/--output-len, not both")
    spec = cli_args.speculation(speculative, draft_tokens, acceptance, draft_model)
    work = Workload(input_len=input_len or 2048, output_len=output_len or 256, context=context, speculation=spec)
    ttft_s = units.parse_seconds(ttft_budget, what="--ttft-budget") if ttft_budget else None
    result = run_deploy(model, system, gpus=gpus, nodes=nodes, budget_s=cli_args.budget(budget), ttft_budget_s=ttft_s,
                        workload=work, engine=engine, dtype=dtype, kv_dtype=kv_dtype,
                        disaggregate=parse_split(disaggregate) if disaggregate else None,
                        settings=PlanSettings(memory_utilization=gpu_memory_utilization), catalog=_catalog(catalog))
    if result.best is None:  # say so in one line, with the closest option, and exit 2
        raise PlanError(result.verdict)
    if json_out:
        _print_json(result.to_dict())
    else:
        tables.print_deploy(result, rows=None if show_all else tables.DEPLOY_ROWS)
    if plot:
        _write_plot(lambda: figures.pareto_figure(result), plot)


@app.command()
def explain(
    *,
    model: Annotated[str, typer.Option("--model", "-m")] = "llama-3.1-70b",
    batch: Annotated[int, typer.Option("--batch", "-b", min=1)] = 1,
    context: Annotated[int, typer.Option("--context", min=1)] = 4096,
    system: Annotated[Optional[list[str]], typer.Option("--system", "-s", help="The two systems to compare (give --system twice; default: hgx-h100 and h100-pcie, the same GPU on NVLink and on PCIe).")] = None,
    catalog: CatalogOpt = None,
    download: DownloadOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Fabric A vs fabric B, when all-reduce limits sharding, why the network is slow for decode: with numbers."""
    answers = explain_questions(_model(model, download), systems=system or DEFAULT_SYSTEMS, batch=batch, context=context,
                                catalog=_catalog(catalog))
    if json_out:
        _print_json([a.to_dict() for a in answers])
        return
    for a in answers:
        print(f"## {a.question}\n{a.text}\n-> {a.takeaway}\n")


@app.command()
def models(json_out: JsonOpt = False) -> None:
    """The model configs shipped with shardbudget."""
    rows = []
    for name in list_models():
        cfg = load_model(name)
        rows.append({"name": name, "layers": cfg.num_layers, "hidden": cfg.hidden_size, "heads": cfg.num_heads,
                     "kv_heads": cfg.num_kv_heads, "experts": cfg.num_experts if cfg.is_moe else 0,
                     "params": total_params(cfg), "active_params": active_params(cfg)})
    if json_out:
        _print_json(rows)
        return
    for r in rows:
        moe = f", {r['experts']} experts" if r["experts"] else ""
        print(f"{r['name']:<18} {r['params'] / 1e9:7.1f}B params ({r['active_params'] / 1e9:.1f}B active), "
              f"{r['layers']} layers, hidden {r['hidden']}, {r['heads']} heads / {r['kv_heads']} KV{moe}")


# --- measure and fit -------------------------------------------------------------------------

@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True}, add_help_option=False)
def measure(ctx: typer.Context) -> None:
    """Time real collectives with torch.distributed; nccl-tests columns on stdout, JSON with --out (--help: options)."""
    from .measure import command as measure_command  # the one option parser, shared with `python -m shardbudget.measure`
    measure_command.run(ctx.args, prog="shardbudget measure")


@app.command()
def fit(
    *,
    files: Annotated[list[Path], typer.Argument(help="nccl-tests / rccl-tests logs (text, or nccl-tests -J JSON) or shardbudget measure JSON.")],
    name: Annotated[str, typer.Option("--name", help="Name of the fitted system.")],
    base_system: Annotated[str, typer.Option("--base-system", help="The catalog system it is a measurement of.")],
    out: Annotated[Optional[Path], typer.Option("--out", help="Write the profile TOML here.")] = None,
    force: Annotated[bool, typer.Option("--force")] = False,
    no_holdout: Annotated[bool, typer.Option("--no-holdout", help="Skip the leave-one-GPU-count-out check.")] = False,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Measured vs predicted figure (PNG/SVG).")] = None,
    catalog: CatalogOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Fit the collective model's constants to measurements and write a profile usable as --catalog."""
    from .measure.fit import check_profile_path, fit_profile, write_profile  # command-only modules (start-up)
    from .measure.logs import read_logs, summarize
    _check_plot(plot)
    if out:  # before the fit: a refused --out must not cost the user a run
        check_profile_path(out, force=force)
    sets = read_logs(files)
    result = fit_profile(sets, name=name, base_system=base_system, catalog=_catalog(catalog), holdout=not no_holdout)
    if out:
        write_profile(result, out, force=force)
    for warning in result.warnings:  # a held-out error above 25%, a forced algorithm the model lacks
        typer.echo(f"warning: {warning}", err=True)
    if json_out:
        d = result.to_dict()
        d["warnings"] = list(result.warnings) + [w for ms in sets for w in ms.warnings]
        _print_json(d)
    else:
        for ms in sets:
            print(f"# {ms.source}: {summarize(ms)}")
            for w in ms.warnings:
                print(f"#   warning: {w}")
        tables.print_fit(result)
    if out:
        typer.echo(f"wrote {out}: use it with --catalog {out} --system {name}", err=True)
    if plot:
        _write_plot(lambda: figures.measured_vs_predicted(result), plot)


@app.command()
def check(
    *,
    files: Annotated[list[Path], typer.Argument(help="nccl-tests / rccl-tests logs (all_reduce_perf, ...) or shardbudget measure JSON.")],
    system: Annotated[str, typer.Option("--system", "-s", help="The catalog system the logs should look like, e.g. hgx-h200.")],
    nodes: Annotated[Optional[int], typer.Option("--nodes", help="Nodes to model (default: the log's own count, else NCCL's INFO lines, else as few as hold the ranks).")] = None,
    gpus: Annotated[Optional[int], typer.Option("--gpus", help="Check only the tables of this GPU count; a log with none is refused (exit 2).")] = None,
    tolerance: Annotated[float, typer.Option("--tolerance", help="Allowed deviation of each region's median time from the model: 0.25 = within x1.25 either way.")] = CHECK_TOLERANCE,
    catalog: CatalogOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Is this nccl-tests result normal for the system? Per size and per region, with the likely cause; exit 0 ok, 1 not, 2 bad input."""
    from .check import check_logs, format_check  # command-only module (start-up)
    result = check_logs(files, system=system, catalog=_catalog(catalog), nodes=nodes, gpus=gpus, tolerance=tolerance)
    if json_out:
        _print_json(result.to_dict())
    else:
        print(format_check(result))
    if result.exit_code:
        raise typer.Exit(code=result.exit_code)


@app.command()
def topo(
    *,
    files: Annotated[list[Path], typer.Argument(help="`nvidia-smi topo -m` output; optionally `nvidia-smi topo -p2p r` output and an NCCL topology XML (NCCL_TOPO_DUMP_FILE), in the same file or more files.")],
    name: Annotated[str, typer.Option("--name", help="Name of the new system.")],
    out: Annotated[Optional[Path], typer.Option("--out", help="Write the profile TOML here (default: print it).")] = None,
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="Catalog GPU; needed when the input does not name it (the topo -m header never does).")] = None,
    cpu: Annotated[Optional[str], typer.Option("--cpu", help="Catalog CPU, where the input does not say (lscpu or the NCCL XML do).")] = None,
    nic_fabric: Annotated[Optional[str], typer.Option("--nic-fabric", help="Catalog NIC fabric, e.g. ib-ndr, where the input gives no NIC speed.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --out if it exists.")] = False,
    catalog: CatalogOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """A system profile from a node's own topology, usable with --catalog in allreduce, plan, deploy and report."""
    from .topo import check_topo_path, topo_profile, write_topo_profile  # command-only module (start-up)
    if out:  # before reading: a refused --out must not cost the user the run
        check_topo_path(out, force=force)
    profile = topo_profile(files, name=name, gpu=gpu, cpu=cpu, nic_fabric=nic_fabric, catalog=_catalog(catalog))
    for warning in profile.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if out:
        write_topo_profile(profile, out, force=force)
    if json_out:
        _print_json(profile.to_dict())
    elif out:
        print("\n".join(f"# {note}" for note in profile.notes))
    else:
        sys.stdout.write(profile.toml())
    if out:
        typer.echo(f"wrote {out}: use it with --catalog {out} --system {name}", err=True)


@app.command()
def lab(
    *,
    ranks: Annotated[int, typer.Option("--ranks", help="Ranks, one per network namespace.")] = 2,
    rate: Annotated[Optional[list[str]], typer.Option("--rate", help="Link rates to emulate (repeatable), e.g. 10Gbit/s.")] = None,
    sizes: Annotated[str, typer.Option("--sizes")] = "8B:8MiB",
    iters: Annotated[int, typer.Option("--iters")] = 10,
    warmup: Annotated[int, typer.Option("--warmup")] = 3,
    repeats: Annotated[int, typer.Option("--repeats", help="Runs per rate, for the spread.")] = 3,
    delay: Annotated[str, typer.Option("--delay", help="Added one-way delay per link (netem, where the kernel has it).")] = "0ms",
    keep: Annotated[Optional[Path], typer.Option("--keep", help="Keep the raw JSON of every run in this folder.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Emulated fabric: ranks in network namespaces over shaped veth links, measured vs predicted."""
    from .measure.lab import format_lab, lab_unavailable, run_lab  # command-only module (start-up)
    why = lab_unavailable()
    if why:
        raise MeasureError(why)
    delay_ms = units.parse_seconds(delay, what="--delay", allow_zero=True) * 1e3
    log = (lambda m: typer.echo(m, err=True))
    result = run_lab(ranks=ranks, rates=tuple(rate or ("unshaped", "10Gbit/s", "1Gbit/s")), sizes=sizes,
                     iters=iters, warmup=warmup, repeats=repeats, delay_ms=delay_ms,
                     keep_dir=str(keep) if keep else None, log=log)
    if json_out:
        _print_json(result.to_dict())
    else:
        print(format_lab(result))


# --- report and demo -------------------------------------------------------------------------

@app.command()
def report(
    *,
    model: Annotated[str, typer.Option("--model", "-m", help="Model name (see `shardbudget models`), a config.json path or folder, or a Hugging Face id (ORG/NAME, from the local HF cache; --download fetches its config.json).")],
    system: Annotated[list[str], typer.Option("--system", "-s", help="System to compare (repeat); 'name:N' for N nodes, e.g. hgx-h100:2.")],
    nodes: Annotated[int, typer.Option("--nodes", help="Nodes of every system given without ':N'.")] = 1,
    batch: Annotated[Optional[list[int]], typer.Option("--batch", "-b", help="Decode batch size (repeat).")] = None,
    context: Annotated[int, typer.Option("--context", help="Tokens in the KV cache per sequence.")] = 4096,
    budget: Annotated[str, typer.Option("--budget", help="Inter-token latency budget, e.g. 50ms ('none' to skip).")] = "30ms",
    impl: Annotated[Optional[str], typer.Option("--impl", help="Force every all-reduce to nccl | custom (default: the engine decides)")] = None,
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="Weight dtype: bf16 | fp8 | int8 | int4 | mxfp4 | nvfp4 (default: the checkpoint's own, from its config.json)")] = None,
    measured: Annotated[Optional[list[Path]], typer.Option("--measured", help="nccl-tests log (text or -J JSON) or shardbudget measure JSON to lay over the model (repeat).")] = None,
    measured_system: Annotated[Optional[str], typer.Option("--measured-system", help="System the measurements are compared with (default: the first --system).")] = None,
    catalog: CatalogOpt = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write (overwritten, atomically).")] = Path("report.html"),
    budget_steps: Annotated[int, typer.Option("--budget-steps", help="Budgets the interactive section's slider offers (0: no interactive section, no script).")] = DEFAULT_BUDGET_STEPS,
    download: DownloadOpt = False,
) -> None:
    """One self-contained HTML file: verdict, figures, the tables behind them, sources and assumptions."""
    from .report import html as report_html  # command-only module (start-up)
    check_impl(impl)
    report_html.check_report_path(out)  # before the sweep, not after it
    model = _model(model, download)
    budget_s = cli_args.budget(budget)
    with _progress() as progress:
        data = report_html.collect(model, system, nodes=nodes, batches=batch or [1, 64], context=context,
                                   budget_s=budget_s, impl=impl, dtype=dtype, measured=measured or (),
                                   measured_system=measured_system, catalog=_catalog(catalog), progress=progress,
                                   budget_steps=budget_steps)
        text = report_html.render(data, progress)
    path = report_html.write_html(out, text)
    print(report_html.headline(data))
    print(f"report: {path.resolve()}")


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write (overwritten, atomically).")] = Path("report.html"),
) -> None:
    """Llama-3.1-70B, bf16, batch 1 and 64, 50 ms: HGX H100 vs 8x L40S on PCIe vs 2 HGX H100 over InfiniBand."""
    from .report import demo as demo_mod, html as report_html  # command-only modules (start-up)
    report_html.check_report_path(out)
    with _progress() as progress:
        data, path = demo_mod.run_demo(out, progress=progress)
    tables.console.print(demo_mod.verdict_table(data))
    print(report_html.headline(data))
    print(f"report: {path.resolve()}  (one self-contained file: open it in a browser)")


def _progress():
    """A transient progress bar on stderr while a report is computed; silent when stderr is not a terminal."""
    @contextmanager
    def cm():
        if not sys.stderr.isatty():
            yield None
            return
        with Progress(TextColumn("{task.description:<48}"), BarColumn(), TimeElapsedColumn(),
                      console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("starting", total=None)

            def update(what: str, done: int, total: int) -> None:
                bar.update(task, description=what, completed=done, total=total)

            yield update

    return cm()


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback."""
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        code = _app_for(argv)(args=argv, prog_name="shardbudget", standalone_mode=False)  # typer.Exit(code) comes back as the code (check: 1)
    except ShardbudgetError as err:
        typer.echo(f"error: {err}", err=True)
        return err.exit_code
    except _click_errors() as err:  # usage errors: unknown option, missing value, bad int
        if type(err).__name__ == "NoArgsIsHelpError":  # bare `shardbudget`: rich has printed the help
            if err.format_message().strip():  # (plain click puts it in the message instead)
                typer.echo(err.format_message(), err=True)
        else:
            typer.echo(f"error: {err.format_message()}", err=True)
        return 2
    except _click_exit() as err:
        return err.exit_code
    except _click_abort():
        return 130
    except (KeyboardInterrupt, BrokenPipeError):
        return 130
    except Exception as err:  # a bug: say so in one line; SHARDBUDGET_DEBUG=1 shows the traceback
        if os.environ.get("SHARDBUDGET_DEBUG"):
            raise
        typer.echo(f"internal error: {type(err).__name__}: {err} (set SHARDBUDGET_DEBUG=1 for details)", err=True)
        return 1
    return code if isinstance(code, int) else 0


def _command_name(info) -> str:
    return info.name or info.callback.__name__.replace("_", "-")


def _app_for(argv: list[str]) -> typer.Typer:
    """The app with only the command `argv` names, when it names one: typer turns every command's
    signature into click parameters before it parses anything (~0.1 s for all of them), and a run
    needs one. A callback keeps it a group, so usage lines and errors read as with the full app."""
    wanted = [c for c in app.registered_commands if argv and _command_name(c) == argv[0]]
    if not wanted:
        return app  # --help, a typo'd command: the full app answers, with every command listed
    one = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, help=app.info.help)
    one.registered_commands = wanted
    one.callback()(lambda: None)
    return one


def _click_errors():
    try:  # typer >= 0.2x vendors click as typer._click; `import click` may then fail or be another copy
        from typer._click.exceptions import UsageError
    except ImportError:
        from click.exceptions import UsageError
    return UsageError  # BadParameter, NoSuchOption, missing option ... all derive from it


def _click_exit():
    return typer.Exit  # click's Exit on older typer, typer's own on newer


def _click_abort():
    return typer.Abort


def console_main() -> None:
    code = main()
    sys.exit(code)
