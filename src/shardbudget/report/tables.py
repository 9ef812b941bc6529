"""Terminal tables (rich). Only formatting lives here: every number comes from the library."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

from ..comm.op import nccl_tests_count
from ..fabric.hardware import Catalog, to_dict
from ..units import format_bytes, format_decimal_bytes, format_rate, format_seconds

import sys

# Piped output (tests, files) gets a wide console so columns are not folded.
console = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 220)


def fabrics_dict(cat: Catalog) -> dict:
    return {"fabrics": [to_dict(f) for f in cat.fabrics.values()],
            "gpus": [to_dict(g) for g in cat.gpus.values()],
            "systems": [_system_summary(s) for s in cat.systems.values()]}


def _system_summary(s) -> dict:
    return {"name": s.name, "description": s.description, "gpu": s.gpu.name, "gpus_per_node": s.gpus_per_node,
            "topology": s.topology, "intra_fabric": s.intra_fabric.name,
            "fallback_fabric": s.fallback_fabric.name if s.fallback_fabric else None,
            "socket_fabric": s.socket_fabric.name if s.socket_fabric else None,
            "gpus_per_socket": s.gpus_per_socket,
            "nic_fabric": s.nic_fabric.name if s.nic_fabric else None, "nics_per_node": s.nics_per_node,
            "rail_optimized": s.rail_optimized, "source": s.source}


def print_fabrics(cat: Catalog, systems: bool = False) -> None:
    t = Table(title="Fabrics (bandwidth per GPU or per NIC port, per direction)", show_lines=False)
    for col in ("name", "kind", "peak", "achievable", "hop LL", "hop Simple", "NVLS", "P2P", "source"):
        t.add_column(col, overflow="fold")
    for f in cat.fabrics.values():
        t.add_row(f.name, f.kind, format_rate(f.bytes_per_s), format_rate(f.achievable_bytes_per_s),
                  format_seconds(f.hop_latency_s["ll"]), format_seconds(f.hop_latency_s["simple"]),
                  "yes" if f.in_switch_reduction else "", "yes" if f.p2p else "no", f.source)
    console.print(t)
    if not systems:
        return
    s = Table(title="Systems (nodes)")
    for col in ("name", "GPUs", "GPU", "topology", "intra-node", "scale-out", "source"):
        s.add_column(col, overflow="fold")
    for sy in cat.systems.values():
        nic = f"{sy.nics_per_node}x {sy.nic_fabric.name}" if sy.nic_fabric else "-"
        intra = sy.intra_fabric.name + (f" / {sy.socket_fabric.name}" if sy.socket_fabric else "")
        s.add_row(sy.name, str(sy.gpus_per_node), sy.gpu.name, sy.topology, intra, nic, sy.source)
    console.print(s)
    g = Table(title="GPUs (dense tensor-core peaks)")
    for col in ("name", "memory", "mem bandwidth", "BF16", "FP8", "source"):
        g.add_column(col, overflow="fold")
    for gpu in cat.gpus.values():
        g.add_row(gpu.name, format_decimal_bytes(gpu.memory_bytes), format_rate(gpu.mem_bytes_per_s),
                  f"{gpu.bf16_flops_per_s / 1e12:.0f} TFLOP/s", f"{gpu.fp8_flops_per_s / 1e12:.0f} TFLOP/s", gpu.source)
    console.print(g)


def impl_words(requested: str, costs) -> str:
    """What ran, as the header says it: one library, or a mix (the engines' custom kernels where they
    can run, NCCL elsewhere), with the reason custom kernels were not used where they were not."""
    used = sorted({c.impl for c in costs})
    if requested == "nccl" or used == ["custom"]:
        return f"impl {used[0] if used else requested}"
    if used == ["nccl"]:
        return "impl custom requested, NCCL used: custom all-reduce kernels cannot run here"
    return "impl custom where its kernels accept the size, NCCL elsewhere"


def print_sweep(group, costs, *, op: str, impl: str, elem_bytes: float, crossover: float,
                why_not_custom: str | None = None) -> None:
    """nccl-tests' column layout (count per rank), plus algorithm, protocol, implementation and the
    latency share of each row."""
    s = group.system
    print(f"# shardbudget {op}: {s.name}, {group.ranks} GPUs on {group.nodes} node(s) "
          f"({s.gpu.name}, {s.intra_fabric.name}"
          + (f", {s.nics_per_node}x {s.nic_fabric.name}" if group.nodes > 1 and s.nic_fabric else "")
          + f"), {impl_words(impl, costs)}  [predicted]")
    if impl == "custom" and why_not_custom:
        print(f"# note: {why_not_custom}")
    print(f"# crossover (bandwidth term > latency term): "
          f"{format_bytes(crossover) if crossover != float('inf') else 'never'}")
    print(f"#{'size':>12} {'count':>12} {'time(µs)':>10} {'algbw(GB/s)':>12} {'busbw(GB/s)':>12}"
          f"  {'algorithm':<12} {'proto':<6} {'impl':<6} {'lat%':>5}")
    for c in costs:
        count = nccl_tests_count(op, c.msg_bytes, elem_bytes, group.ranks)
        print(f" {int(c.msg_bytes):>12d} {count:>12d} {c.time_s * 1e6:>10.2f} "
              f"{c.algbw_bytes_per_s / 1e9:>12.2f} {c.busbw_bytes_per_s / 1e9:>12.2f}  "
              f"{c.algorithm:<12} {c.protocol:<6} {c.impl:<6} {100 * c.latency_share:>5.0f}")


def print_compare(result) -> None:
    t = Table(title=f"{result.op} on {result.gpus_label}: predicted time per call")
    t.add_column("message", justify="right")
    t.add_column("why")
    for s in result.systems:
        t.add_column(s, justify="right")
    t.add_column("slowest / fastest", justify="right")
    for row in result.rows:
        cells = [f"{format_seconds(x.time_s)} ({x.algorithm}/{x.protocol})" for x in row.costs]
        t.add_row(format_bytes(row.msg_bytes), row.label, *cells, f"{row.ratio:.1f}x")
    console.print(t)
    for name, cross, note in zip(result.systems, result.crossovers, result.notes):
        print(f"  {name}: crossover {format_bytes(cross) if cross != float('inf') else 'never'}; {note}")


def print_plan(result) -> None:
    budget = format_seconds(result.budget_s) if result.budget_s else "none"
    a = result.assumptions
    ttft = f", TTFT budget {format_seconds(result.ttft_budget_s)}" if result.ttft_budget_s else ""
    experts = a.get("expert_dtype")
    weights = result.dtype + (f", {experts} experts" if experts and experts != result.dtype else "")
    print(f"# {result.model} on {result.nodes} x {result.system}, context {result.context}, budget {budget}{ttft}, "
          f"engine {a.get('engine')}, weights {weights}")
    for tp, words in (a.get("allreduce") or {}).items():
        print(f"# all-reduce at {tp}: {words}")
    for note in result.assumptions.get("notes", []):
        print(f"# note: {note}")
    if a.get("tail"):
        print(f"# {a['tail']}")
    for br in result.results:
        t = Table(title=f"batch {br.batch}")
        tail = any(r.itl_p99_s is not None for r in br.rows)  # a --jitter log measured the calls' spread
        ttft_col = ["TTFT ok"] if result.ttft_budget_s else []  # which rows the TTFT budget fails
        for col in ("tp", "pp", "ep", "dp", "ITL ms", *(["p99 ITL ms"] if tail else []), "compute ms", "comm ms",
                    "host ms", "comm %", "TTFT ms", *ttft_col, "GB/GPU", "fits", "verdict"):
            t.add_column(col, justify="right" if col != "verdict" else "left")
        for r in br.rows:
            verdict = r.verdict + (" (comm-bound)" if r.comm_bound and r.fits_memory else "")
            p99 = [f"{r.itl_p99_s * 1e3:.2f}" if r.itl_p99_s is not None else "-"] if tail else []
            t.add_row(str(r.tp), str(r.pp), str(r.ep), str(r.dp), f"{r.itl_s * 1e3:.2f}", *p99,
                      f"{r.compute_s * 1e3:.2f}", f"{r.comm_s * 1e3:.2f}", f"{r.other_s * 1e3:.2f}",
                      f"{100 * r.comm_share:.0f}", f"{r.ttft_s * 1e3:.0f}",
                      *(["yes" if r.ttft_s <= result.ttft_budget_s else "no"] if ttft_col else []),
                      f"{r.mem_bytes_per_gpu / 1e9:.1f}",
                      "yes" if r.fits_memory else "no", verdict)
        console.print(t)
        best = br.judgement.best.label() if br.judgement and br.judgement.best else None
        smallest = br.judgement.smallest.label() if br.judgement and br.judgement.smallest else None
        print(f"fewest GPUs that fit: {f'{br.min_gpus_memory} ({smallest})' if smallest else 'none'}   "
              f"max TP within budget: {f'TP{br.max_tp_budget}' if br.max_tp_budget else 'none'}   "
              f"latency-optimal: {best or 'none'}")
        print(br.verdict)
        print()


def print_memory(result) -> None:
    """Per batch and plan: what the engine allocates on the most loaded GPU, GB."""
    parts = ("weights", "kv_cache", "activations", "cuda_graphs", "comm_buffers", "cuda_context", "total")
    for br in result.results:
        t = Table(title=f"memory per GPU, GB (batch {br.batch}; engine {result.assumptions.get('engine')})")
        t.add_column("plan")
        for p in parts:
            t.add_column(p.replace("_", " "), justify="right")
        t.add_column("fits")
        for r in br.rows:
            m = r.memory or {}
            t.add_row(r.label(), *(f"{m.get(p, 0.0) / 1e9:.2f}" for p in parts), "yes" if r.fits_memory else "no")
        console.print(t)


DEPLOY_ROWS = 20
"""Options the deploy table shows by default: the best ones (the JSON and --all have every one)."""


def print_deploy(result, *, rows: int | None = DEPLOY_ROWS) -> None:
    """The options, best first (the first `rows`; None: all), then the choice in words and its
    launch lines."""
    budgets = ", ".join(w for w in (f"ITL budget {format_seconds(result.budget_s)}" if result.budget_s else "",
                                    f"TTFT budget {format_seconds(result.ttft_budget_s)}" if result.ttft_budget_s else "")
                        if w) or "no budget"
    w = result.workload
    load = f"context {w.context}" if w.context else f"input {w.input_len}, output {w.output_len} tokens"
    spec = f", speculative {w.speculation.method} k={w.speculation.draft_tokens} a={w.speculation.acceptance:g}" \
        if w.speculation else ""
    print(f"# {result.model} on {result.gpus} GPUs ({result.nodes} x {result.system}), engine {result.engine}, "
          f"{load}{spec}; {budgets}")
    shown = result.options if rows is None else result.options[:rows]
    left = len(result.options) - len(shown)
    t = Table(title="options (best first)", caption=f"{left} more options: --all shows every one, --json lists them"
              if left else None)
    itl = ["step ITL ms", "ms/token"] if w.speculation else ["ITL ms"]
    for col in ("option", "max batch", *itl, "TTFT ms", "tok/s", "tok/s/GPU", "tok/s/user", "GB/GPU", "comm %",
                "binding", "meets"):
        t.add_column(col, justify="left" if col in ("option", "binding") else "right")
    for o in shown:
        t.add_row(*deploy_cells(o, speculative=w.speculation is not None))
    console.print(t)
    for note in result.notes:
        if note.startswith("warning:"):
            print(f"# {note}")
    if w.context:
        print(f"# TTFT –: --context {w.context} prices decode only; no prompt is prefilled")
    print(result.verdict)
    for engine, line in result.launch.items():
        print(f"{engine:>7}: {line}")


def deploy_cells(o, *, speculative: bool = False) -> list[str]:
    """One deploy option as the table prints it: no throughput where no batch meets the budgets
    (max batch 0), no TTFT where nothing is prefilled (NaN), step and per-token times apart under
    speculation."""
    none = o.max_batch == 0
    itl = [f"{o.step_itl_s * 1e3:.2f}", f"{o.itl_s * 1e3:.2f}"] if speculative else [f"{o.itl_s * 1e3:.2f}"]
    return [o.label(), str(o.max_batch), *itl, "–" if math.isnan(o.ttft_s) else f"{o.ttft_s * 1e3:.0f}",
            "–" if none else f"{o.tokens_per_s:,.0f}", "–" if none else f"{o.tokens_per_s_per_gpu:,.0f}",
            "–" if none else f"{o.tokens_per_s_per_user:.1f}", f"{o.mem_bytes_per_gpu / 1e9:.1f}",
            f"{100 * o.comm_share:.0f}", o.binding, "yes" if o.meets_budget else "no"]


def print_fit(result) -> None:
    p = result.params
    print(result.headline())  # names each fitted bandwidth: which link, seen through which algorithm
    for note in getattr(result, "notes", ()):
        print(f"# {note}")
    print(f"#{'size':>12} {'ranks':>6} {'nodes':>6} {'measured(µs)':>13} {'predicted(µs)':>14} {'error':>8}  algorithm")
    for r in sorted(result.residuals, key=lambda r: (r.ranks, r.msg_bytes)):
        print(f" {int(r.msg_bytes):>12d} {r.ranks:>6d} {r.nodes:>6d} {r.measured_s * 1e6:>13.2f} "
              f"{r.predicted_s * 1e6:>14.2f} {100 * r.rel_error:>7.1f}%  {r.algorithm}/{r.protocol}")
    print(f"fit: median |error| {100 * result.median_abs_error:.1f}%, worst {100 * result.worst_abs_error:.1f}% "
          f"over {len(result.residuals)} samples")
    if p.at_bound:
        print(f"warning: {', '.join(p.at_bound)} hit the limit of what is physical for {result.base_system}: "
              f"these measurements do not look like that system (wrong --base-system, or not GPU collectives?)")
    if result.heldout:
        parts = ", ".join(f"{n} GPUs {100 * e:.1f}%" for n, e in sorted(result.heldout.items()))
        print(f"held out (fit without that GPU count, predict it): median |error| {parts}")
    else:
        print("held out: only one GPU count measured; measure another to see whether the profile extrapolates")
